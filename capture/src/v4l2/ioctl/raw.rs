//! The kernel's V4L2 structures (`<linux/videodev2.h>`) and ioctl numbers, for
//! the 64-bit ABIs zerocam runs on (x86_64, aarch64). Sizes are checked at
//! compile time against the kernel's. Nothing here is public outside `v4l2`.
#![allow(missing_docs)]

#[cfg(not(target_pointer_width = "64"))]
compile_error!("zerocam-capture's V4L2 structures are laid out for 64-bit Linux (x86_64, aarch64)");

use std::ffi::c_ulong;

/// `enum v4l2_buf_type` values zerocam uses.
pub const BUF_TYPE_VIDEO_CAPTURE: u32 = 1;
pub const BUF_TYPE_VIDEO_CAPTURE_MPLANE: u32 = 9;
/// The OUTPUT (to the device) types of a memory-to-memory device.
pub const BUF_TYPE_VIDEO_OUTPUT: u32 = 2;
pub const BUF_TYPE_VIDEO_OUTPUT_MPLANE: u32 = 10;

/// Whether `type_` is a multi-planar buffer type (its buffers point at planes).
pub const fn is_mplane(type_: u32) -> bool {
    type_ == BUF_TYPE_VIDEO_CAPTURE_MPLANE || type_ == BUF_TYPE_VIDEO_OUTPUT_MPLANE
}

mod m2m;
pub use m2m::*;

/// `enum v4l2_memory`.
pub const MEMORY_MMAP: u32 = 1;
pub const MEMORY_DMABUF: u32 = 4;

/// `enum v4l2_field`.
pub const FIELD_NONE: u32 = 1;

/// `enum v4l2_colorspace` values zerocam's colour rules name.
#[cfg_attr(not(feature = "zenoh"), allow(dead_code))] // the H.264 source's default
pub const COLORSPACE_SMPTE170M: u32 = 1;
pub const COLORSPACE_SMPTE240M: u32 = 2;
pub const COLORSPACE_REC709: u32 = 3;
pub const COLORSPACE_JPEG: u32 = 7;
pub const COLORSPACE_SRGB: u32 = 8;
pub const COLORSPACE_BT2020: u32 = 10;
pub const COLORSPACE_DCI_P3: u32 = 12;

/// `enum v4l2_ycbcr_encoding`.
pub const YCBCR_ENC_DEFAULT: u32 = 0;
pub const YCBCR_ENC_601: u32 = 1;
pub const YCBCR_ENC_709: u32 = 2;
pub const YCBCR_ENC_XV601: u32 = 3;
pub const YCBCR_ENC_XV709: u32 = 4;
pub const YCBCR_ENC_SYCC: u32 = 5;
pub const YCBCR_ENC_BT2020: u32 = 6;
pub const YCBCR_ENC_BT2020_CONST_LUM: u32 = 7;
pub const YCBCR_ENC_SMPTE240M: u32 = 8;

/// `enum v4l2_quantization`.
pub const QUANTIZATION_DEFAULT: u32 = 0;
pub const QUANTIZATION_FULL_RANGE: u32 = 1;
pub const QUANTIZATION_LIM_RANGE: u32 = 2;

/// `VIDIOC_ENUM_FMT` flags: the driver converts capture to a requested
/// Y'CbCr encoding / quantization (`V4L2_FMT_FLAG_CSC_YCBCR_ENC`, `_QUANTIZATION`).
pub const FMT_FLAG_CSC_YCBCR_ENC: u32 = 0x0080;
pub const FMT_FLAG_CSC_QUANTIZATION: u32 = 0x0100;

/// `V4L2_PIX_FMT_FLAG_SET_CSC`: `flags` of an `S_FMT` asking for the
/// colorimetry fields it sets (those left 0 stay as the driver has them).
pub const PIX_FMT_FLAG_SET_CSC: u32 = 0x0002;

/// `V4L2_PIX_FMT_PRIV_MAGIC`: `priv` of a single-planar format whose
/// `ycbcr_enc`, `quantization` and `xfer_func` are valid (the V4L2 core sets
/// it on every `VIDIOC_G_FMT`/`S_FMT` reply of a capture format).
pub const PIX_FMT_PRIV_MAGIC: u32 = 0xfeed_cafe;

/// Capability bits (`V4L2_CAP_*`).
pub const CAP_VIDEO_CAPTURE: u32 = 0x0000_0001;
pub const CAP_VIDEO_CAPTURE_MPLANE: u32 = 0x0000_1000;
pub const CAP_STREAMING: u32 = 0x0400_0000;
pub const CAP_DEVICE_CAPS: u32 = 0x8000_0000;

/// `V4L2_FRMSIZE_TYPE_DISCRETE` / `V4L2_FRMIVAL_TYPE_DISCRETE` (others are ranges).
pub const FRM_TYPE_DISCRETE: u32 = 1;

/// `V4L2_BUF_FLAG_ERROR`: the buffer's data is corrupt.
pub const BUF_FLAG_ERROR: u32 = 0x0000_0040;

/// `V4L2_CTRL_FLAG_NEXT_CTRL`, `V4L2_CTRL_FLAG_DISABLED`.
pub const CTRL_FLAG_NEXT_CTRL: u32 = 0x8000_0000;
pub const CTRL_FLAG_DISABLED: u32 = 0x0001;

/// Most planes a multi-planar format can have (`VIDEO_MAX_PLANES`).
pub const MAX_PLANES: usize = 8;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Capability {
    pub driver: [u8; 16],
    pub card: [u8; 32],
    pub bus_info: [u8; 32],
    pub version: u32,
    pub capabilities: u32,
    pub device_caps: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FmtDesc {
    pub index: u32,
    pub type_: u32,
    pub flags: u32,
    pub description: [u8; 32],
    pub pixelformat: u32,
    pub mbus_code: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FrmSizeEnum {
    pub index: u32,
    pub pixel_format: u32,
    pub type_: u32,
    /// Discrete: `[width, height, ..]`; stepwise: `[min_w, max_w, step_w, min_h, max_h, step_h]`.
    pub size: [u32; 6],
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fract {
    pub numerator: u32,
    pub denominator: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FrmIvalEnum {
    pub index: u32,
    pub pixel_format: u32,
    pub width: u32,
    pub height: u32,
    pub type_: u32,
    /// Discrete: `[ival, ..]`; stepwise: `[min, max, step]`.
    pub ival: [Fract; 3],
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PixFormat {
    pub width: u32,
    pub height: u32,
    pub pixelformat: u32,
    pub field: u32,
    pub bytesperline: u32,
    pub sizeimage: u32,
    pub colorspace: u32,
    pub priv_: u32,
    pub flags: u32,
    pub ycbcr_enc: u32,
    pub quantization: u32,
    pub xfer_func: u32,
}

/// `struct v4l2_plane_pix_format` (packed in C; naturally aligned here too).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanePixFormat {
    pub sizeimage: u32,
    pub bytesperline: u32,
    pub reserved: [u16; 6],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PixFormatMplane {
    pub width: u32,
    pub height: u32,
    pub pixelformat: u32,
    pub field: u32,
    pub colorspace: u32,
    pub plane_fmt: [PlanePixFormat; MAX_PLANES],
    pub num_planes: u8,
    pub flags: u8,
    pub ycbcr_enc: u8,
    pub quantization: u8,
    pub xfer_func: u8,
    pub reserved: [u8; 7],
}

/// The union inside `struct v4l2_format`; pointer-aligned like the kernel's
/// (it contains `struct v4l2_window`, which holds pointers).
#[repr(C)]
#[derive(Clone, Copy)]
pub union FormatUnion {
    pub pix: PixFormat,
    pub pix_mp: PixFormatMplane,
    pub raw: [u8; 200],
    _align: [usize; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Format {
    pub type_: u32,
    pub fmt: FormatUnion,
}

impl Format {
    pub fn new(type_: u32) -> Format {
        Format {
            type_,
            fmt: FormatUnion { raw: [0; 200] },
        }
    }

    /// The single-planar member, if that is the format's type.
    pub fn pix(&self) -> Option<PixFormat> {
        if self.type_ != BUF_TYPE_VIDEO_CAPTURE && self.type_ != BUF_TYPE_VIDEO_OUTPUT {
            return None;
        }
        // SAFETY: the kernel fills `pix` for the single-planar types, and
        // every bit pattern is a valid PixFormat (plain u32 fields) anyway.
        Some(unsafe { self.fmt.pix })
    }

    /// The multi-planar member, if that is the format's type.
    pub fn pix_mp(&self) -> Option<PixFormatMplane> {
        if !is_mplane(self.type_) {
            return None;
        }
        // SAFETY: the kernel fills `pix_mp` for the multi-planar types,
        // and every bit pattern is a valid PixFormatMplane (plain integers).
        Some(unsafe { self.fmt.pix_mp })
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestBuffers {
    pub count: u32,
    pub type_: u32,
    pub memory: u32,
    pub capabilities: u32,
    pub flags: u8,
    pub reserved: [u8; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Timecode {
    pub type_: u32,
    pub flags: u32,
    pub frames: u8,
    pub seconds: u8,
    pub minutes: u8,
    pub hours: u8,
    pub userbits: [u8; 4],
}

/// `union m` of `struct v4l2_plane`: offset, userptr or fd.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PlaneM {
    pub mem_offset: u32,
    pub userptr: c_ulong,
    pub fd: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Plane {
    pub bytesused: u32,
    pub length: u32,
    pub m: PlaneM,
    pub data_offset: u32,
    pub reserved: [u32; 11],
}

impl Default for PlaneM {
    fn default() -> PlaneM {
        PlaneM { userptr: 0 }
    }
}

/// `union m` of `struct v4l2_buffer`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union BufferM {
    pub offset: u32,
    pub userptr: c_ulong,
    pub planes: *mut Plane,
    pub fd: i32,
}

impl Default for BufferM {
    fn default() -> BufferM {
        BufferM { userptr: 0 }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Buffer {
    pub index: u32,
    pub type_: u32,
    pub bytesused: u32,
    pub flags: u32,
    pub field: u32,
    pub timestamp: Timeval,
    pub timecode: Timecode,
    pub sequence: u32,
    pub memory: u32,
    pub m: BufferM,
    pub length: u32,
    pub reserved2: u32,
    pub request_fd: i32,
}

impl Buffer {
    pub fn new(type_: u32, memory: u32, index: u32) -> Buffer {
        Buffer {
            index,
            type_,
            memory,
            ..Default::default()
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ExportBuffer {
    pub type_: u32,
    pub index: u32,
    pub plane: u32,
    pub flags: u32,
    pub fd: i32,
    pub reserved: [u32; 11],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CaptureParm {
    pub capability: u32,
    pub capturemode: u32,
    pub timeperframe: Fract,
    pub extendedmode: u32,
    pub readbuffers: u32,
    pub reserved: [u32; 4],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union StreamParmUnion {
    pub capture: CaptureParm,
    pub raw: [u8; 200],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct StreamParm {
    pub type_: u32,
    pub parm: StreamParmUnion,
}

impl StreamParm {
    /// The capture member (the only one for capture types).
    pub fn capture(&self) -> CaptureParm {
        // SAFETY: G_PARM/S_PARM of a capture type fill `capture`, and every bit
        // pattern is a valid CaptureParm (plain u32 fields).
        unsafe { self.parm.capture }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Control {
    pub id: u32,
    pub value: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct QueryCtrl {
    pub id: u32,
    pub type_: u32,
    pub name: [u8; 32],
    pub minimum: i32,
    pub maximum: i32,
    pub step: i32,
    pub default_value: i32,
    pub flags: u32,
    pub reserved: [u32; 2],
}

/// `struct v4l2_querymenu` (packed in C: 44 bytes).
#[repr(C, packed)]
#[derive(Clone, Copy)]
pub struct QueryMenu {
    pub id: u32,
    pub index: u32,
    /// `name[32]` for menus, `value` (s64) for integer menus.
    pub name: [u8; 32],
    pub reserved: u32,
}

// The kernel's sizes on 64-bit Linux: a wrong layout fails the build.
const _: () = {
    use std::mem::size_of;
    assert!(size_of::<Capability>() == 104);
    assert!(size_of::<FmtDesc>() == 64);
    assert!(size_of::<FrmSizeEnum>() == 44);
    assert!(size_of::<FrmIvalEnum>() == 52);
    assert!(size_of::<PixFormat>() == 48);
    assert!(size_of::<PlanePixFormat>() == 20);
    assert!(size_of::<PixFormatMplane>() == 192);
    assert!(size_of::<Format>() == 208);
    assert!(size_of::<RequestBuffers>() == 20);
    assert!(size_of::<Plane>() == 64);
    assert!(size_of::<Buffer>() == 88);
    assert!(size_of::<ExportBuffer>() == 64);
    assert!(size_of::<StreamParm>() == 204);
    assert!(size_of::<Control>() == 8);
    assert!(size_of::<QueryCtrl>() == 68);
    assert!(size_of::<QueryMenu>() == 44);
};

nix::ioctl_read!(vidioc_querycap, b'V', 0, Capability);
nix::ioctl_readwrite!(vidioc_enum_fmt, b'V', 2, FmtDesc);
nix::ioctl_readwrite!(vidioc_g_fmt, b'V', 4, Format);
nix::ioctl_readwrite!(vidioc_s_fmt, b'V', 5, Format);
nix::ioctl_readwrite!(vidioc_reqbufs, b'V', 8, RequestBuffers);
nix::ioctl_readwrite!(vidioc_querybuf, b'V', 9, Buffer);
nix::ioctl_readwrite!(vidioc_qbuf, b'V', 15, Buffer);
nix::ioctl_readwrite!(vidioc_expbuf, b'V', 16, ExportBuffer);
nix::ioctl_readwrite!(vidioc_dqbuf, b'V', 17, Buffer);
nix::ioctl_write_ptr!(vidioc_streamon, b'V', 18, i32);
nix::ioctl_write_ptr!(vidioc_streamoff, b'V', 19, i32);
nix::ioctl_readwrite!(vidioc_g_parm, b'V', 21, StreamParm);
nix::ioctl_readwrite!(vidioc_s_parm, b'V', 22, StreamParm);
nix::ioctl_readwrite!(vidioc_g_ctrl, b'V', 27, Control);
nix::ioctl_readwrite!(vidioc_s_ctrl, b'V', 28, Control);
nix::ioctl_readwrite!(vidioc_queryctrl, b'V', 36, QueryCtrl);
nix::ioctl_readwrite!(vidioc_querymenu, b'V', 37, QueryMenu);
nix::ioctl_readwrite!(vidioc_enum_framesizes, b'V', 74, FrmSizeEnum);
nix::ioctl_readwrite!(vidioc_enum_frameintervals, b'V', 75, FrmIvalEnum);
