//! Capture frames as CUDA device memory: [`Cuda::map_frame`] and its
//! method-call form, [`CudaFrameExt::cuda`].

use std::marker::PhantomData;
use std::ops::Deref;
use std::time::Duration;

use zerocam_capture::Frame;
use zerocam_tensor::Access;
#[cfg(feature = "gl")]
use zerocam_tensor::TensorMemory;

use crate::{Cuda, CudaMap, Result};

/// A capture frame's planes as device pointers. It borrows the [`Frame`], so
/// the buffer cannot go back to the driver while the device may read it;
/// [`synchronize`](CudaMap::synchronize) the work queued on it before it drops.
#[derive(Debug)]
pub struct CudaFrame<'f> {
    map: CudaMap,
    sequence: u32,
    timestamp: Duration,
    buffer_index: usize,
    _frame: PhantomData<&'f Frame>,
}

impl CudaFrame<'_> {
    /// The frame's sequence number.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// The frame's capture timestamp.
    pub fn timestamp(&self) -> Duration {
        self.timestamp
    }

    /// The capture buffer it lies in (the registration cached for it).
    pub fn buffer_index(&self) -> usize {
        self.buffer_index
    }

    /// The map itself.
    pub fn map(&self) -> &CudaMap {
        &self.map
    }
}

impl Deref for CudaFrame<'_> {
    type Target = CudaMap;

    fn deref(&self) -> &CudaMap {
        &self.map
    }
}

impl Cuda {
    /// Maps a frame for the device to read: through the attached GPU's
    /// EGLImage (path b) when the frame is a dma-buf, a GPU is attached and
    /// the device is integrated (Jetson); else by host registration of its
    /// mapping (path a). Each capture buffer is registered once, so N buffers
    /// cost N registrations over any number of frames.
    ///
    /// # Errors
    /// As [`Cuda::map`] (and `Cuda::map_egl` with the `gl` feature).
    pub fn map_frame<'f>(&self, frame: &'f Frame) -> Result<CudaFrame<'f>> {
        let tensor = frame.tensor();
        #[cfg(feature = "gl")]
        let map = if self.prefers_egl(tensor.memory()) {
            self.map_egl(tensor, Access::Read)?
        } else {
            self.map(tensor, Access::Read)?
        };
        #[cfg(not(feature = "gl"))]
        let map = self.map(tensor, Access::Read)?;
        Ok(CudaFrame {
            map,
            sequence: frame.sequence(),
            timestamp: frame.timestamp(),
            buffer_index: frame.buffer_index(),
            _frame: PhantomData,
        })
    }

    #[cfg(feature = "gl")]
    fn prefers_egl(&self, memory: TensorMemory) -> bool {
        memory == TensorMemory::Dma && self.info().integrated && self.gl_slot().has_egl()
    }
}

/// `frame.cuda(&cuda)`: [`Cuda::map_frame`] as a method of [`Frame`].
pub trait CudaFrameExt {
    /// The frame's planes as device pointers (see [`Cuda::map_frame`]).
    ///
    /// # Errors
    /// As [`Cuda::map_frame`].
    fn cuda(&self, cuda: &Cuda) -> Result<CudaFrame<'_>>;
}

impl CudaFrameExt for Frame {
    fn cuda(&self, cuda: &Cuda) -> Result<CudaFrame<'_>> {
        cuda.map_frame(self)
    }
}
