//! The frame-sharing protocol's messages and their bytes: a fixed
//! little-endian layout, versioned and length-checked (docs/sharing.md has the
//! table). Encoding writes into a stack buffer and decoding reads from one, so
//! neither side allocates per frame. A message that is not exactly what its
//! kind says — another magic or version, an unknown kind, a length that is not
//! the kind's, a value out of range — is a [`WireError`], never a panic.

use zerocam_tensor::{ColorSpec, Matrix, Range};

use crate::{FourCc, PlaneLayout, StreamFormat, Synthesized};

/// The first four bytes of every message.
pub(crate) const MAGIC: [u8; 4] = *b"ZCSH";
/// The protocol version this build speaks (both sides must agree).
pub(crate) const VERSION: u16 = 1;
/// Bytes of the header: magic, version (u16), kind (u16), body length (u32).
pub(crate) const HEADER_LEN: usize = 12;
/// The most memory planes a frame has (`NV12M`, `NV16M`: 2).
pub(crate) const MAX_PLANES: usize = 2;
/// The largest message of either side, header included.
pub(crate) const MAX_MESSAGE: usize = HEADER_LEN + FRAME_BODY;

const HELLO_BODY: usize = 4;
/// A whole `Hello`'s length on the wire, header included.
pub(crate) const HELLO_LEN: usize = HEADER_LEN + HELLO_BODY;
const RELEASE_BODY: usize = 8;
const WELCOME_BODY: usize = 8 + FORMAT_BODY;
const GOODBYE_BODY: usize = 4;
const FORMAT_BODY: usize = 20 + MAX_PLANES * 8;
const SPAN_BODY: usize = 16;
const FRAME_BODY: usize = 40 + FORMAT_BODY + MAX_PLANES * SPAN_BODY;

/// What was wrong with a message's bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The message does not start with `ZCSH`.
    #[error("not a zerocam sharing message (magic {found:02x?})")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// The peer speaks another version of the protocol.
    #[error("protocol version {found}, this build speaks {VERSION}")]
    Version {
        /// The peer's version.
        found: u16,
    },
    /// A kind this side never receives.
    #[error("unknown message kind {kind}")]
    UnknownKind {
        /// The kind number.
        kind: u16,
    },
    /// The body length is not the one the kind has.
    #[error("message kind {kind} has a {expected}-byte body, this one says {found}")]
    Length {
        /// The kind number.
        kind: u16,
        /// The length the kind has.
        expected: usize,
        /// The length the header gave.
        found: usize,
    },
    /// The header announces a body longer than any message has.
    #[error("a {found}-byte message body is longer than any message's ({max})")]
    TooLong {
        /// The length the header gave.
        found: usize,
        /// The longest body of any kind.
        max: usize,
    },
    /// A field holds a value the protocol does not allow.
    #[error("field {field} = {value} is out of range")]
    Field {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
}

/// Why the publisher ends a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum GoodbyeReason {
    /// The publisher is shutting down.
    Stopping = 1,
    /// The publisher's source failed or its camera disconnected.
    SourceGone = 2,
    /// The client's credentials are not allowed.
    NotAllowed = 3,
    /// The client broke the protocol (a malformed, oversized or out-of-order
    /// message, or a release of a frame it does not hold).
    ProtocolViolation = 4,
    /// The publisher has as many clients as it serves.
    Full = 5,
}

impl GoodbyeReason {
    fn from_u8(v: u8) -> Result<Self, WireError> {
        Ok(match v {
            1 => Self::Stopping,
            2 => Self::SourceGone,
            3 => Self::NotAllowed,
            4 => Self::ProtocolViolation,
            5 => Self::Full,
            _ => return Err(field("goodbye reason", v)),
        })
    }
}

/// A client's message to the publisher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientMessage {
    /// The first message of a connection: the client wants frames.
    Hello {
        /// The most frames the client holds at once (the publisher may lower it).
        max_leases: u16,
    },
    /// The client is done with frame `frame_id`.
    Release {
        /// The id from the [`FrameMessage`].
        frame_id: u64,
    },
}

/// A stream's format on the wire: what [`StreamFormat`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WireFormat {
    /// The V4L2 code of the format.
    pub fourcc: FourCc,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// How the YCbCr is to be read.
    pub color: ColorSpec,
    /// How many memory planes `planes` holds (1 or 2).
    pub plane_count: u8,
    /// Each memory plane's layout.
    pub planes: [PlaneLayout; MAX_PLANES],
}

impl WireFormat {
    /// `format` on the wire; `None` when it has more memory planes than the
    /// protocol carries.
    pub fn of(format: &StreamFormat) -> Option<WireFormat> {
        let mut planes = [PlaneLayout {
            bytes_per_line: 0,
            size: 0,
        }; MAX_PLANES];
        for (to, from) in planes.iter_mut().zip(&format.planes) {
            *to = *from;
        }
        (format.planes.len() <= MAX_PLANES).then_some(WireFormat {
            fourcc: format.format.fourcc,
            width: format.width,
            height: format.height,
            color: format.color,
            plane_count: format.planes.len() as u8,
            planes,
        })
    }

    /// The memory planes in use.
    pub fn planes(&self) -> &[PlaneLayout] {
        &self.planes[..usize::from(self.plane_count).min(MAX_PLANES)]
    }

    /// The [`StreamFormat`], checked: a format zerocam captures, with as many
    /// planes as it has memory planes.
    #[cfg(test)]
    pub fn stream_format(&self) -> Result<StreamFormat, WireError> {
        let format = crate::CaptureFormat::from_fourcc(self.fourcc)
            .ok_or(field("fourcc", u64::from(self.fourcc.to_u32())))?;
        if format.memory_planes != self.planes().len() {
            return Err(field("plane count", u64::from(self.plane_count)));
        }
        Ok(StreamFormat {
            format,
            width: self.width,
            height: self.height,
            planes: self.planes().to_vec(),
            color: self.color,
        })
    }
}

/// Where a frame lies in one memory plane's file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PlaneSpan {
    /// Bytes of the plane's file (what the client maps).
    pub length: u64,
    /// Where the frame's data starts in the file (V4L2 `data_offset`).
    pub offset: u32,
}

/// A frame the publisher lends a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameMessage {
    /// The publisher's id of this frame (unique for its life), named by the release.
    pub frame_id: u64,
    /// The publisher's buffer the frame is in.
    pub buffer: u32,
    /// The source's sequence number.
    pub sequence: u32,
    /// The source's timestamp, nanoseconds of `CLOCK_MONOTONIC`.
    pub timestamp_ns: u64,
    /// Bytes the source filled, all planes.
    pub bytes_used: u64,
    /// Which metadata the source synthesized.
    pub synthesized: Synthesized,
    /// The frame's format.
    pub format: WireFormat,
    /// Where the chroma plane of a one-buffer two-plane format lies after the
    /// luma plane (`None`: right after it).
    pub chroma_offset: Option<u32>,
    /// Each memory plane's file length and data offset (`format.plane_count` of them).
    pub spans: [PlaneSpan; MAX_PLANES],
    /// Whether the buffer's fds ride with this message (`SCM_RIGHTS`, one per
    /// memory plane): the first time this connection sees the buffer.
    pub carries_fds: bool,
}

impl FrameMessage {
    /// The memory planes' spans in use.
    pub fn spans(&self) -> &[PlaneSpan] {
        &self.spans[..usize::from(self.format.plane_count).min(MAX_PLANES)]
    }
}

/// The publisher's message to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerMessage {
    /// The answer to `Hello`: the terms of the connection.
    Welcome {
        /// A lease's deadline, milliseconds after the frame was sent.
        lease_ms: u32,
        /// The most frames the client may hold at once.
        max_leases: u16,
        /// The publisher's buffers (the most distinct buffer indices).
        buffers: u16,
        /// The source's format (`StreamFormat` of the frames to come).
        format: WireFormat,
    },
    /// A frame, leased to the client until it releases it or the deadline passes.
    Frame(FrameMessage),
    /// The publisher ends the connection, and why.
    Goodbye(GoodbyeReason),
}

const KIND_HELLO: u16 = 1;
const KIND_RELEASE: u16 = 2;
const KIND_WELCOME: u16 = 0x101;
const KIND_FRAME: u16 = 0x102;
const KIND_GOODBYE: u16 = 0x103;

/// A message's bytes: a stack buffer and the length used.
pub(crate) struct Encoded {
    bytes: [u8; MAX_MESSAGE],
    len: usize,
}

impl Encoded {
    /// The message's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Writes fields little-endian into a stack buffer.
struct Writer {
    out: Encoded,
}

impl Writer {
    fn new(kind: u16, body: usize) -> Writer {
        let mut w = Writer {
            out: Encoded {
                bytes: [0; MAX_MESSAGE],
                len: 0,
            },
        };
        w.put(&MAGIC);
        w.put(&VERSION.to_le_bytes());
        w.put(&kind.to_le_bytes());
        w.put(&(body as u32).to_le_bytes());
        w
    }
    fn put(&mut self, b: &[u8]) {
        let end = self.out.len + b.len();
        self.out.bytes[self.out.len..end].copy_from_slice(b);
        self.out.len = end;
    }
    fn u8(&mut self, v: u8) -> &mut Self {
        self.put(&[v]);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.put(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.put(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.put(&v.to_le_bytes());
        self
    }
    fn format(&mut self, f: &WireFormat) -> &mut Self {
        self.u32(f.fourcc.to_u32())
            .u32(f.width)
            .u32(f.height)
            .u8(matrix_code(f.color.matrix))
            .u8(range_code(f.color.range))
            .u8(f.plane_count)
            .u8(0)
            .u32(0);
        for p in &f.planes {
            self.u32(p.bytes_per_line).u32(p.size);
        }
        self
    }
}

/// Reads fields little-endian from a body whose length was checked.
struct Reader<'a> {
    body: &'a [u8],
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0; N];
        let n = N.min(self.body.len());
        b[..n].copy_from_slice(&self.body[..n]);
        self.body = &self.body[n..];
        b
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn format(&mut self) -> Result<WireFormat, WireError> {
        let fourcc = FourCc(self.u32().to_le_bytes());
        let (width, height) = (self.u32(), self.u32());
        let color = color_from(self.u8(), self.u8())?;
        let plane_count = self.u8();
        if !(1..=MAX_PLANES as u8).contains(&plane_count) {
            return Err(field("plane count", plane_count));
        }
        let _reserved = (self.u8(), self.u32());
        let mut planes = [PlaneLayout {
            bytes_per_line: 0,
            size: 0,
        }; MAX_PLANES];
        for p in &mut planes {
            *p = PlaneLayout {
                bytes_per_line: self.u32(),
                size: self.u32(),
            };
        }
        Ok(WireFormat {
            fourcc,
            width,
            height,
            color,
            plane_count,
            planes,
        })
    }
}

fn field(field: &'static str, value: impl Into<u64>) -> WireError {
    WireError::Field {
        field,
        value: value.into(),
    }
}

/// A header's kind and body length, checked against the magic, the version
/// and `MAX_MESSAGE`.
pub(crate) fn decode_header(h: &[u8; HEADER_LEN]) -> Result<(u16, usize), WireError> {
    let found = [h[0], h[1], h[2], h[3]];
    if found != MAGIC {
        return Err(WireError::BadMagic { found });
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    if version != VERSION {
        return Err(WireError::Version { found: version });
    }
    let kind = u16::from_le_bytes([h[6], h[7]]);
    let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    if len > MAX_MESSAGE - HEADER_LEN {
        return Err(WireError::TooLong {
            found: len,
            max: MAX_MESSAGE - HEADER_LEN,
        });
    }
    Ok((kind, len))
}

fn check_len(kind: u16, body: &[u8], expected: usize) -> Result<Reader<'_>, WireError> {
    if body.len() != expected {
        return Err(WireError::Length {
            kind,
            expected,
            found: body.len(),
        });
    }
    Ok(Reader { body })
}

impl ClientMessage {
    /// The message's bytes.
    pub fn encode(&self) -> Encoded {
        match *self {
            ClientMessage::Hello { max_leases } => {
                let mut w = Writer::new(KIND_HELLO, HELLO_BODY);
                w.u16(max_leases).u16(0);
                w.out
            }
            ClientMessage::Release { frame_id } => {
                let mut w = Writer::new(KIND_RELEASE, RELEASE_BODY);
                w.u64(frame_id);
                w.out
            }
        }
    }

    /// The message of kind `kind` whose body is `body` (after
    /// [`decode_header`]).
    pub fn decode(kind: u16, body: &[u8]) -> Result<ClientMessage, WireError> {
        match kind {
            KIND_HELLO => {
                let mut r = check_len(kind, body, HELLO_BODY)?;
                let max_leases = r.u16();
                match r.u16() {
                    0 => Ok(ClientMessage::Hello { max_leases }),
                    v => Err(field("hello reserved", v)),
                }
            }
            KIND_RELEASE => {
                let mut r = check_len(kind, body, RELEASE_BODY)?;
                Ok(ClientMessage::Release { frame_id: r.u64() })
            }
            _ => Err(WireError::UnknownKind { kind }),
        }
    }
}

fn matrix_code(m: Matrix) -> u8 {
    match m {
        Matrix::Bt601 => 1,
        Matrix::Bt709 => 2,
    }
}

fn range_code(r: Range) -> u8 {
    match r {
        Range::Limited => 1,
        Range::Full => 2,
    }
}

fn color_from(matrix: u8, range: u8) -> Result<ColorSpec, WireError> {
    let matrix = match matrix {
        1 => Matrix::Bt601,
        2 => Matrix::Bt709,
        v => return Err(field("matrix", v)),
    };
    let range = match range {
        1 => Range::Limited,
        2 => Range::Full,
        v => return Err(field("range", v)),
    };
    Ok(ColorSpec::new(matrix, range))
}

const SYNTH_SEQUENCE: u8 = 1;
const SYNTH_TIMESTAMP: u8 = 2;
const SYNTH_BYTES_USED: u8 = 4;
const FLAG_CARRIES_FDS: u8 = 1;
const FLAG_CHROMA_OFFSET: u8 = 2;

impl ServerMessage {
    /// The message's bytes.
    pub fn encode(&self) -> Encoded {
        match self {
            ServerMessage::Welcome {
                lease_ms,
                max_leases,
                buffers,
                format,
            } => {
                let mut w = Writer::new(KIND_WELCOME, WELCOME_BODY);
                w.u32(*lease_ms).u16(*max_leases).u16(*buffers);
                w.format(format);
                w.out
            }
            ServerMessage::Goodbye(reason) => {
                let mut w = Writer::new(KIND_GOODBYE, GOODBYE_BODY);
                w.u8(*reason as u8).u8(0).u16(0);
                w.out
            }
            ServerMessage::Frame(f) => {
                let mut w = Writer::new(KIND_FRAME, FRAME_BODY);
                let s = f.synthesized;
                let bit = |on: bool, bit: u8| if on { bit } else { 0 };
                let synthesized = bit(s.sequence, SYNTH_SEQUENCE)
                    | bit(s.timestamp, SYNTH_TIMESTAMP)
                    | bit(s.bytes_used, SYNTH_BYTES_USED);
                let flags = bit(f.carries_fds, FLAG_CARRIES_FDS)
                    | bit(f.chroma_offset.is_some(), FLAG_CHROMA_OFFSET);
                w.u64(f.frame_id)
                    .u32(f.buffer)
                    .u32(f.sequence)
                    .u64(f.timestamp_ns)
                    .u64(f.bytes_used)
                    .u32(f.chroma_offset.unwrap_or(0))
                    .u8(synthesized)
                    .u8(flags)
                    .u16(0);
                w.format(&f.format);
                for p in &f.spans {
                    w.u64(p.length).u32(p.offset).u32(0);
                }
                w.out
            }
        }
    }

    /// The message of kind `kind` whose body is `body` (after
    /// [`decode_header`]).
    pub fn decode(kind: u16, body: &[u8]) -> Result<ServerMessage, WireError> {
        match kind {
            KIND_WELCOME => {
                let mut r = check_len(kind, body, WELCOME_BODY)?;
                let (lease_ms, max_leases, buffers) = (r.u32(), r.u16(), r.u16());
                Ok(ServerMessage::Welcome {
                    lease_ms,
                    max_leases,
                    buffers,
                    format: r.format()?,
                })
            }
            KIND_GOODBYE => {
                let mut r = check_len(kind, body, GOODBYE_BODY)?;
                Ok(ServerMessage::Goodbye(GoodbyeReason::from_u8(r.u8())?))
            }
            KIND_FRAME => {
                decode_frame(check_len(kind, body, FRAME_BODY)?).map(ServerMessage::Frame)
            }
            _ => Err(WireError::UnknownKind { kind }),
        }
    }
}

fn decode_frame(mut r: Reader<'_>) -> Result<FrameMessage, WireError> {
    let (frame_id, buffer, sequence) = (r.u64(), r.u32(), r.u32());
    let (timestamp_ns, bytes_used, chroma_offset) = (r.u64(), r.u64(), r.u32());
    let (synthesized, flags, _reserved) = (r.u8(), r.u8(), r.u16());
    if synthesized & !(SYNTH_SEQUENCE | SYNTH_TIMESTAMP | SYNTH_BYTES_USED) != 0 {
        return Err(field("synthesized", synthesized));
    }
    if flags & !(FLAG_CARRIES_FDS | FLAG_CHROMA_OFFSET) != 0 {
        return Err(field("flags", flags));
    }
    let format = r.format()?;
    let mut spans = [PlaneSpan::default(); MAX_PLANES];
    for p in &mut spans {
        *p = PlaneSpan {
            length: r.u64(),
            offset: r.u32(),
        };
        let _reserved = r.u32();
    }
    Ok(FrameMessage {
        frame_id,
        buffer,
        sequence,
        timestamp_ns,
        bytes_used,
        synthesized: Synthesized {
            sequence: synthesized & SYNTH_SEQUENCE != 0,
            timestamp: synthesized & SYNTH_TIMESTAMP != 0,
            bytes_used: synthesized & SYNTH_BYTES_USED != 0,
        },
        format,
        chroma_offset: (flags & FLAG_CHROMA_OFFSET != 0).then_some(chroma_offset),
        spans,
        carries_fds: flags & FLAG_CARRIES_FDS != 0,
    })
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
