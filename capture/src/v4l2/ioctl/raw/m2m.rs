//! The structures and numbers a memory-to-memory codec adds to capture's:
//! encoder commands, events, extended controls, buffer flags and the codec
//! control ids (`<linux/videodev2.h>`, `<linux/v4l2-controls.h>`).

/// `V4L2_CAP_VIDEO_M2M_MPLANE`, `V4L2_CAP_VIDEO_M2M`: a memory-to-memory node.
pub const CAP_VIDEO_M2M_MPLANE: u32 = 0x0000_4000;
pub const CAP_VIDEO_M2M: u32 = 0x0000_8000;

/// `V4L2_BUF_FLAG_*` a codec reads or sets.
pub const BUF_FLAG_KEYFRAME: u32 = 0x0000_0008;
pub const BUF_FLAG_LAST: u32 = 0x0010_0000;

/// `V4L2_FMT_FLAG_COMPRESSED`: an `ENUM_FMT` entry that is a coded format.
pub const FMT_FLAG_COMPRESSED: u32 = 0x0001;

/// `V4L2_ENC_CMD_*`.
pub const ENC_CMD_START: u32 = 0;
pub const ENC_CMD_STOP: u32 = 1;

/// `V4L2_EVENT_*` types.
pub const EVENT_EOS: u32 = 2;
pub const EVENT_SOURCE_CHANGE: u32 = 5;

/// `V4L2_CTRL_WHICH_CUR_VAL`: `S_EXT_CTRLS` of the current values.
pub const CTRL_WHICH_CUR_VAL: u32 = 0;

/// `V4L2_CID_MPEG_VIDEO_GOP_SIZE` and `_BITRATE` (`V4L2_CID_CODEC_BASE` +
/// 203 and + 207), both settable while streaming on most encoders.
pub const CID_MPEG_VIDEO_GOP_SIZE: u32 = 0x0099_0900 + 203;
pub const CID_MPEG_VIDEO_BITRATE: u32 = 0x0099_0900 + 207;
/// `V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME` (`V4L2_CID_CODEC_BASE` + 229): a
/// button, the next frame queued is encoded as a keyframe.
pub const CID_MPEG_VIDEO_FORCE_KEY_FRAME: u32 = 0x0099_0900 + 229;

/// `V4L2_SEL_TGT_CROP`: the visible rectangle of an encoder's OUTPUT picture.
pub const SEL_TGT_CROP: u32 = 0;

/// `struct v4l2_rect`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Rect {
    pub left: i32,
    pub top: i32,
    pub width: u32,
    pub height: u32,
}

/// `struct v4l2_selection`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection {
    pub type_: u32,
    pub target: u32,
    pub flags: u32,
    pub r: Rect,
    pub reserved: [u32; 9],
}

/// `struct v4l2_encoder_cmd`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EncoderCmd {
    pub cmd: u32,
    pub flags: u32,
    pub raw: [u32; 8],
}

/// `struct v4l2_event_subscription`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EventSubscription {
    pub type_: u32,
    pub id: u32,
    pub flags: u32,
    pub reserved: [u32; 5],
}

/// `struct timespec` as the kernel lays it in `struct v4l2_event` (64-bit).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

/// `struct v4l2_event`: the payload union is 64 bytes, 8-aligned (it holds
/// `struct v4l2_event_ctrl`'s `__s64`); zerocam reads only its first `u32`
/// (`v4l2_event_src_change.changes`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Event {
    pub type_: u32,
    pub u: [u64; 8],
    pub pending: u32,
    pub sequence: u32,
    pub timestamp: Timespec,
    pub id: u32,
    pub reserved: [u32; 8],
}

/// `struct v4l2_ext_control` (packed in C: 20 bytes); only `value` of the
/// union is used.
#[repr(C, packed)]
#[derive(Clone, Copy, Default)]
pub struct ExtControl {
    pub id: u32,
    pub size: u32,
    pub reserved2: u32,
    pub value64: i64,
}

/// `struct v4l2_ext_controls`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExtControls {
    pub which: u32,
    pub count: u32,
    pub error_idx: u32,
    pub request_fd: i32,
    pub reserved: u32,
    pub controls: *mut ExtControl,
}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<EncoderCmd>() == 40);
    assert!(size_of::<Selection>() == 64);
    assert!(size_of::<EventSubscription>() == 32);
    assert!(size_of::<Event>() == 136);
    assert!(size_of::<ExtControl>() == 20);
    assert!(size_of::<ExtControls>() == 32);
};

nix::ioctl_readwrite!(vidioc_s_ext_ctrls, b'V', 72, ExtControls);
nix::ioctl_readwrite!(vidioc_s_selection, b'V', 95, Selection);
nix::ioctl_readwrite!(vidioc_encoder_cmd, b'V', 77, EncoderCmd);
nix::ioctl_read!(vidioc_dqevent, b'V', 89, Event);
nix::ioctl_write_ptr!(vidioc_subscribe_event, b'V', 90, EventSubscription);
