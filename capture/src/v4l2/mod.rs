//! The V4L2 source: a capture device ([`device`]: capabilities, formats,
//! controls), the format it agrees to ([`negotiation`], [`colorimetry`]), the
//! buffers it streams ([`plan`], [`buffers`]) and the stream itself
//! ([`queue`], [`stream`]), over our typed ioctl layer ([`ioctl`]).

pub(crate) mod buffers;
pub(crate) mod colorimetry;
pub(crate) mod controls;
pub(crate) mod device;
pub(crate) mod ioctl;
pub(crate) mod negotiation;
pub(crate) mod plan;
pub(crate) mod queue;
pub(crate) mod stream;
