//! Plain CDR as ROS 2 puts it on the wire (OMG XCDR1, little-endian): a
//! 4-byte encapsulation header (`00 01 00 00`), then each primitive at an
//! offset (counted from after the header) that is a multiple of its size;
//! strings as a `u32` length counting a closing NUL, the bytes and the NUL;
//! sequences as a `u32` count and the elements.
//!
//! Written here rather than taken from a serde-based CDR crate: the four
//! messages zerocam sends are fixed, a decoded message borrows its byte
//! fields from the received payload (a JPEG is not copied into a `Vec` byte
//! by byte), and every length read from the wire is checked against what
//! is left before anything is sliced or allocated.

use thiserror::Error;

/// The encapsulation header of little-endian plain CDR.
pub const HEADER_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// The longest string field [`CdrReader`] accepts (a `frame_id`, a format
/// name): longer ones are refused, not allocated.
pub const MAX_STRING: usize = 4096;

/// The most elements of a `float64[]` field [`CdrReader`] accepts.
pub const MAX_F64_SEQUENCE: usize = 64;

/// Why a payload is not the message it should be.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CdrError {
    /// The payload ends before a field does.
    #[error(
        "CDR payload truncated: field `{field}` needs {need} bytes at offset {offset}, {have} left"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// The bytes it needs.
        need: usize,
        /// Where it starts (after the encapsulation header).
        offset: usize,
        /// The bytes left.
        have: usize,
    },
    /// Not the encapsulation header of little-endian plain CDR.
    #[error(
        "not little-endian plain CDR: encapsulation header {found:02x?} (expected 00 01 00 00)"
    )]
    Header {
        /// The first bytes found (fewer than 4 when the payload is shorter).
        found: Vec<u8>,
    },
    /// A string field longer than [`MAX_STRING`], or a sequence longer than
    /// its bound.
    #[error("CDR field `{field}` has {len} elements, more than the {max} accepted")]
    TooLong {
        /// The field.
        field: &'static str,
        /// The length on the wire.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A string field without its closing NUL (or with a length of 0).
    #[error("CDR string `{field}` is not NUL-terminated")]
    NoNul {
        /// The field.
        field: &'static str,
    },
    /// A string field that is not UTF-8.
    #[error("CDR string `{field}` is not UTF-8")]
    NotUtf8 {
        /// The field.
        field: &'static str,
    },
    /// Bytes left over after the last field (more than CDR's padding).
    #[error("{extra} bytes after the last field of {message}")]
    Trailing {
        /// The message type.
        message: &'static str,
        /// The extra bytes.
        extra: usize,
    },
}

/// Writes a CDR payload into a caller's buffer (reused frame after frame:
/// once it is big enough, writing allocates nothing).
#[derive(Debug)]
pub struct CdrWriter<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'b> CdrWriter<'b> {
    /// Clears `buf` and writes the encapsulation header.
    pub fn new(buf: &'b mut Vec<u8>) -> CdrWriter<'b> {
        buf.clear();
        buf.extend_from_slice(&HEADER_LE);
        CdrWriter { buf }
    }

    fn align(&mut self, n: usize) {
        let pos = self.buf.len() - HEADER_LE.len();
        let pad = pos.next_multiple_of(n) - pos;
        self.buf.resize(self.buf.len() + pad, 0);
    }

    /// A `uint8` (or `bool`).
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A `uint32`.
    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// An `int32`.
    pub fn i32(&mut self, v: i32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `float64`.
    pub fn f64(&mut self, v: f64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A length that must fit the wire's `u32` (a frame's bytes always do:
    /// capture buffers are under 4 GiB).
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }

    /// A `string`: length with the NUL, bytes, NUL.
    pub fn string(&mut self, s: &str) {
        self.len(s.len() + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// A `uint8[]`: count, bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.buf.extend_from_slice(b);
    }

    /// A `float64[]`: count, values.
    pub fn f64_sequence(&mut self, v: &[f64]) {
        self.len(v.len());
        self.f64_array(v);
    }

    /// A `float64[N]`: the values, no count.
    pub fn f64_array(&mut self, v: &[f64]) {
        for &x in v {
            self.f64(x);
        }
    }
}

/// Reads a CDR payload, borrowing strings and byte sequences from it.
#[derive(Debug)]
pub struct CdrReader<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> CdrReader<'a> {
    /// Checks the encapsulation header.
    ///
    /// # Errors
    /// [`CdrError::Header`] when `payload` does not start with little-endian
    /// plain CDR's representation id (`00 01`, [`HEADER_LE`]).
    pub fn new(payload: &'a [u8]) -> Result<CdrReader<'a>, CdrError> {
        match payload.split_first_chunk::<4>() {
            // The last two bytes are options (some RMWs put the padding
            // count there): only the representation is checked.
            Some((header, body)) if header[..2] == HEADER_LE[..2] => Ok(CdrReader { body, pos: 0 }),
            _ => Err(CdrError::Header {
                found: payload[..payload.len().min(4)].to_vec(),
            }),
        }
    }

    fn take(
        &mut self,
        field: &'static str,
        align: usize,
        need: usize,
    ) -> Result<&'a [u8], CdrError> {
        let start = self.pos.next_multiple_of(align);
        let have = self.body.len().saturating_sub(start);
        if need > have {
            return Err(CdrError::Truncated {
                field,
                need,
                offset: start,
                have,
            });
        }
        self.pos = start + need;
        Ok(&self.body[start..start + need])
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], CdrError> {
        let b = self.take(field, N, N)?;
        let mut out = [0; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// A `uint8`.
    ///
    /// # Errors
    /// [`CdrError::Truncated`].
    pub fn u8(&mut self, field: &'static str) -> Result<u8, CdrError> {
        Ok(self.array::<1>(field)?[0])
    }

    /// A `uint32`.
    ///
    /// # Errors
    /// [`CdrError::Truncated`].
    pub fn u32(&mut self, field: &'static str) -> Result<u32, CdrError> {
        self.array(field).map(u32::from_le_bytes)
    }

    /// An `int32`.
    ///
    /// # Errors
    /// [`CdrError::Truncated`].
    pub fn i32(&mut self, field: &'static str) -> Result<i32, CdrError> {
        self.array(field).map(i32::from_le_bytes)
    }

    /// A `float64`.
    ///
    /// # Errors
    /// [`CdrError::Truncated`].
    pub fn f64(&mut self, field: &'static str) -> Result<f64, CdrError> {
        self.array(field).map(f64::from_le_bytes)
    }

    /// A `string` of at most [`MAX_STRING`] bytes, borrowed.
    ///
    /// # Errors
    /// [`CdrError::Truncated`], [`CdrError::TooLong`], [`CdrError::NoNul`],
    /// [`CdrError::NotUtf8`].
    pub fn string(&mut self, field: &'static str) -> Result<&'a str, CdrError> {
        let len = self.u32(field)? as usize;
        if len > MAX_STRING + 1 {
            return Err(CdrError::TooLong {
                field,
                len,
                max: MAX_STRING,
            });
        }
        let b = self.take(field, 1, len)?;
        let Some((0, text)) = b.split_last() else {
            return Err(CdrError::NoNul { field });
        };
        std::str::from_utf8(text).map_err(|_| CdrError::NotUtf8 { field })
    }

    /// A `uint8[]`, borrowed (its length is checked against what is left).
    ///
    /// # Errors
    /// [`CdrError::Truncated`].
    pub fn bytes(&mut self, field: &'static str) -> Result<&'a [u8], CdrError> {
        let len = self.u32(field)? as usize;
        self.take(field, 1, len)
    }

    /// A `float64[]` of at most [`MAX_F64_SEQUENCE`] values.
    ///
    /// # Errors
    /// [`CdrError::Truncated`], [`CdrError::TooLong`].
    pub fn f64_sequence(&mut self, field: &'static str) -> Result<Vec<f64>, CdrError> {
        let len = self.u32(field)? as usize;
        if len > MAX_F64_SEQUENCE {
            return Err(CdrError::TooLong {
                field,
                len,
                max: MAX_F64_SEQUENCE,
            });
        }
        (0..len).map(|_| self.f64(field)).collect()
    }

    /// A `float64[N]`.
    ///
    /// # Errors
    /// [`CdrError::Truncated`].
    pub fn f64_array<const N: usize>(&mut self, field: &'static str) -> Result<[f64; N], CdrError> {
        let mut out = [0.0; N];
        for x in &mut out {
            *x = self.f64(field)?;
        }
        Ok(out)
    }

    /// Checks that nothing but CDR's padding (to 4 bytes, as RMW
    /// implementations send) follows the last field.
    ///
    /// # Errors
    /// [`CdrError::Trailing`].
    pub fn finish(self, message: &'static str) -> Result<(), CdrError> {
        let extra = self.body.len() - self.pos;
        if extra > 3 {
            return Err(CdrError::Trailing { message, extra });
        }
        Ok(())
    }
}
