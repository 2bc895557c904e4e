//! The ROS 2 messages zerocam publishes and reads, field for field as their
//! `.msg` files define them (`sensor_msgs`, `builtin_interfaces`,
//! `std_msgs`, `foxglove_msgs`). Decoding borrows strings and byte fields
//! from the payload; encoding writes into a reused buffer.

use std::time::Duration;

use super::cdr::{CdrError, CdrReader, CdrWriter};

/// A ROS 2 message type zerocam speaks.
pub trait Message<'a>: Sized {
    /// Its full type name, e.g. `sensor_msgs/msg/CompressedImage`.
    const TYPE: &'static str;

    /// Writes it as CDR into `buf` (cleared first).
    fn encode_into(&self, buf: &mut Vec<u8>);

    /// Reads it from a CDR `payload`, borrowing from it.
    ///
    /// # Errors
    /// [`CdrError`]: a truncated field, a bad header, an overlong or
    /// malformed string, bytes after the last field.
    fn decode(payload: &'a [u8]) -> Result<Self, CdrError>;

    /// Writes it as CDR into a new buffer.
    fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.encode_into(&mut buf);
        buf
    }
}

/// `builtin_interfaces/msg/Time`: seconds and nanoseconds (since the Unix
/// epoch for a stamp; ROS 2 uses the system clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time {
    /// Seconds.
    pub sec: i32,
    /// Nanoseconds, below 10⁹.
    pub nanosec: u32,
}

impl Time {
    /// A time since the epoch (seconds past `i32::MAX`, in 2038, saturate).
    pub fn from_duration(d: Duration) -> Time {
        Time {
            sec: i32::try_from(d.as_secs()).unwrap_or(i32::MAX),
            nanosec: d.subsec_nanos(),
        }
    }

    /// As a duration since the epoch; `None` before it, or with nanoseconds
    /// of a second or more (a malformed stamp).
    pub fn to_duration(self) -> Option<Duration> {
        let sec = u64::try_from(self.sec).ok()?;
        (self.nanosec < 1_000_000_000).then(|| Duration::new(sec, self.nanosec))
    }

    fn write(self, w: &mut CdrWriter<'_>) {
        w.i32(self.sec);
        w.u32(self.nanosec);
    }

    fn read(r: &mut CdrReader<'_>) -> Result<Time, CdrError> {
        Ok(Time {
            sec: r.i32("stamp.sec")?,
            nanosec: r.u32("stamp.nanosec")?,
        })
    }
}

/// `std_msgs/msg/Header`: the stamp and the frame of reference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Header<'a> {
    /// When the frame was captured.
    pub stamp: Time,
    /// The coordinate frame (e.g. `camera`).
    pub frame_id: &'a str,
}

impl<'a> Header<'a> {
    fn write(&self, w: &mut CdrWriter<'_>) {
        self.stamp.write(w);
        w.string(self.frame_id);
    }

    fn read(r: &mut CdrReader<'a>) -> Result<Header<'a>, CdrError> {
        Ok(Header {
            stamp: Time::read(r)?,
            frame_id: r.string("header.frame_id")?,
        })
    }
}

/// `sensor_msgs/msg/CompressedImage`: a JPEG (or PNG) image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedImage<'a> {
    /// Stamp and frame.
    pub header: Header<'a>,
    /// `jpeg`, `png`, or image_transport's `rgb8; jpeg compressed bgr8`.
    pub format: &'a str,
    /// The compressed image.
    pub data: &'a [u8],
}

impl<'a> Message<'a> for CompressedImage<'a> {
    const TYPE: &'static str = "sensor_msgs/msg/CompressedImage";

    fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut w = CdrWriter::new(buf);
        self.header.write(&mut w);
        w.string(self.format);
        w.bytes(self.data);
    }

    fn decode(payload: &'a [u8]) -> Result<Self, CdrError> {
        let mut r = CdrReader::new(payload)?;
        let m = CompressedImage {
            header: Header::read(&mut r)?,
            format: r.string("format")?,
            data: r.bytes("data")?,
        };
        r.finish(Self::TYPE)?;
        Ok(m)
    }
}

/// `foxglove_msgs/msg/CompressedVideo`: one access unit of a video stream
/// (H.264 in Annex B, each keyframe with its parameter sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedVideo<'a> {
    /// When the frame was captured.
    pub timestamp: Time,
    /// The coordinate frame.
    pub frame_id: &'a str,
    /// The access unit.
    pub data: &'a [u8],
    /// `h264`, `h265`, `vp9` or `av1`.
    pub format: &'a str,
}

impl<'a> Message<'a> for CompressedVideo<'a> {
    const TYPE: &'static str = "foxglove_msgs/msg/CompressedVideo";

    fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut w = CdrWriter::new(buf);
        self.timestamp.write(&mut w);
        w.string(self.frame_id);
        w.bytes(self.data);
        w.string(self.format);
    }

    fn decode(payload: &'a [u8]) -> Result<Self, CdrError> {
        let mut r = CdrReader::new(payload)?;
        let m = CompressedVideo {
            timestamp: Time::read(&mut r)?,
            frame_id: r.string("frame_id")?,
            data: r.bytes("data")?,
            format: r.string("format")?,
        };
        r.finish(Self::TYPE)?;
        Ok(m)
    }
}

/// `sensor_msgs/msg/Image`: raw pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image<'a> {
    /// Stamp and frame.
    pub header: Header<'a>,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// The pixel encoding (`rgb8`, `nv12`, `yuv422_yuy2`, `mono8`…).
    pub encoding: &'a str,
    /// Whether multi-byte samples are big-endian.
    pub is_bigendian: bool,
    /// Bytes per row.
    pub step: u32,
    /// `step × rows` bytes.
    pub data: &'a [u8],
}

impl<'a> Message<'a> for Image<'a> {
    const TYPE: &'static str = "sensor_msgs/msg/Image";

    fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut w = CdrWriter::new(buf);
        self.header.write(&mut w);
        w.u32(self.height);
        w.u32(self.width);
        w.string(self.encoding);
        w.u8(u8::from(self.is_bigendian));
        w.u32(self.step);
        w.bytes(self.data);
    }

    fn decode(payload: &'a [u8]) -> Result<Self, CdrError> {
        let mut r = CdrReader::new(payload)?;
        let m = Image {
            header: Header::read(&mut r)?,
            height: r.u32("height")?,
            width: r.u32("width")?,
            encoding: r.string("encoding")?,
            is_bigendian: r.u8("is_bigendian")? != 0,
            step: r.u32("step")?,
            data: r.bytes("data")?,
        };
        r.finish(Self::TYPE)?;
        Ok(m)
    }
}

/// `sensor_msgs/msg/RegionOfInterest`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionOfInterest {
    /// Left edge.
    pub x_offset: u32,
    /// Top edge.
    pub y_offset: u32,
    /// Rows (0: the full image).
    pub height: u32,
    /// Columns (0: the full image).
    pub width: u32,
    /// Whether the region is to be rectified.
    pub do_rectify: bool,
}

/// `sensor_msgs/msg/CameraInfo`: the image size and the calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraInfo<'a> {
    /// Stamp and frame.
    pub header: Header<'a>,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// `plumb_bob`, `rational_polynomial`… (empty: uncalibrated).
    pub distortion_model: &'a str,
    /// The distortion coefficients.
    pub d: Vec<f64>,
    /// The intrinsic matrix, row-major (all zero: uncalibrated).
    pub k: [f64; 9],
    /// The rectification rotation.
    pub r: [f64; 9],
    /// The projection matrix.
    pub p: [f64; 12],
    /// Horizontal binning.
    pub binning_x: u32,
    /// Vertical binning.
    pub binning_y: u32,
    /// The region of interest.
    pub roi: RegionOfInterest,
}

impl<'a> CameraInfo<'a> {
    /// The size only: an uncalibrated camera as ROS marks one (`K` all
    /// zero, no distortion model), binning 1.
    pub fn uncalibrated(header: Header<'a>, width: u32, height: u32) -> CameraInfo<'a> {
        CameraInfo {
            header,
            height,
            width,
            distortion_model: "",
            d: Vec::new(),
            k: [0.0; 9],
            r: [0.0; 9],
            p: [0.0; 12],
            binning_x: 1,
            binning_y: 1,
            roi: RegionOfInterest::default(),
        }
    }
}

impl<'a> Message<'a> for CameraInfo<'a> {
    const TYPE: &'static str = "sensor_msgs/msg/CameraInfo";

    fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut w = CdrWriter::new(buf);
        self.header.write(&mut w);
        w.u32(self.height);
        w.u32(self.width);
        w.string(self.distortion_model);
        w.f64_sequence(&self.d);
        w.f64_array(&self.k);
        w.f64_array(&self.r);
        w.f64_array(&self.p);
        w.u32(self.binning_x);
        w.u32(self.binning_y);
        let roi = &self.roi;
        for v in [roi.x_offset, roi.y_offset, roi.height, roi.width] {
            w.u32(v);
        }
        w.u8(u8::from(roi.do_rectify));
    }

    fn decode(payload: &'a [u8]) -> Result<Self, CdrError> {
        let mut r = CdrReader::new(payload)?;
        let m = CameraInfo {
            header: Header::read(&mut r)?,
            height: r.u32("height")?,
            width: r.u32("width")?,
            distortion_model: r.string("distortion_model")?,
            d: r.f64_sequence("d")?,
            k: r.f64_array("k")?,
            r: r.f64_array("r")?,
            p: r.f64_array("p")?,
            binning_x: r.u32("binning_x")?,
            binning_y: r.u32("binning_y")?,
            roi: RegionOfInterest {
                x_offset: r.u32("roi.x_offset")?,
                y_offset: r.u32("roi.y_offset")?,
                height: r.u32("roi.height")?,
                width: r.u32("roi.width")?,
                do_rectify: r.u8("roi.do_rectify")? != 0,
            },
        };
        r.finish(Self::TYPE)?;
        Ok(m)
    }
}
