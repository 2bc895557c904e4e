//! The V4L2 source: a capture device (`device`: capabilities, formats,
//! controls), the format it agrees to (`negotiation`, `colorimetry`), the
//! buffers it streams (`plan`, `buffers`) and the stream itself
//! (`queue`, `stream`), what its queue supports (`support`), over our typed ioctl layer (`ioctl`). Its public types are re-exported
//! here; the ones every source shares ([`StreamFormat`], [`PlaneLayout`],
//! [`Colorimetry`]) and the common ones ([`Device`], [`Stream`]) at the
//! crate root too.

pub(crate) mod buffers;
pub(crate) mod colorimetry;
pub(crate) mod controls;
pub(crate) mod device;
pub(crate) mod ioctl;
pub mod m2m;
pub(crate) mod negotiation;
pub(crate) mod plan;
pub(crate) mod queue;
pub(crate) mod stream;
pub(crate) mod support;

pub use colorimetry::Colorimetry;
pub use controls::ControlInfo;
pub use device::{
    capture_devices, BufferApi, Device, DeviceInfo, FormatDesc, FrameSizes, Interval,
};
pub use negotiation::{FormatProblem, FormatReply, PlaneLayout, StreamFormat};
pub use plan::{BufferPlan, DriverMinimum, MAX_BUFFERS};
pub use stream::{BufferMode, IntoDeviceError, NewStreamError, Stream, StreamConfig};
pub use support::BufferSupport;
