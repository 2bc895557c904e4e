//! [`StreamRef`]: the non-blocking `CUstream` of a [`Cuda`](crate::Cuda)
//! handle, and the driver calls made on it.

use std::sync::Arc;

use crate::device::Device;
use crate::driver::ffi::{self, CuHandle};
use crate::Result;

/// A non-blocking `CUstream`, destroyed with its last holder.
#[derive(Clone)]
pub(crate) struct StreamRef(Arc<Stream>);

struct Stream {
    device: Arc<Device>,
    handle: CuHandle,
}

// SAFETY: a stream handle may be used from any thread; it is only passed to
// driver calls.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl StreamRef {
    pub fn create(device: &Arc<Device>) -> Result<StreamRef> {
        let _current = device.enter()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the context is current.
        device.driver.check("cuStreamCreate", unsafe {
            (device.driver.api.cuStreamCreate)(&mut handle, ffi::STREAM_NON_BLOCKING)
        })?;
        Ok(StreamRef(Arc::new(Stream {
            device: Arc::clone(device),
            handle,
        })))
    }

    pub fn handle(&self) -> CuHandle {
        self.0.handle
    }

    pub fn synchronize(&self) -> Result<()> {
        let d = &self.0.device;
        let _current = d.enter()?;
        // SAFETY: a stream created on this context.
        d.driver.check("cuStreamSynchronize", unsafe {
            (d.driver.api.cuStreamSynchronize)(self.0.handle)
        })
    }

    /// Copies `dst.len()` bytes from `src` on this stream
    /// (`cuMemcpyDtoHAsync`) and waits for the stream (`cuStreamSynchronize`).
    ///
    /// On this stream, not on the legacy default stream (`cuMemcpyDtoH`): a
    /// `CU_STREAM_NON_BLOCKING` stream does not synchronize with the legacy
    /// stream, so a copy there could run before the kernels queued here, or
    /// before the GL→CUDA dependency `cuGraphicsMapResources` put here, and
    /// read older bytes.
    pub fn copy_to_host(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        let d = &self.0.device;
        let _current = d.enter()?;
        // SAFETY: `dst` is valid for `dst.len()` bytes of writes and stays
        // borrowed until the synchronize below has returned; the caller
        // checked `src..src+len` lies in a live map; a stream of this context.
        d.driver.check("cuMemcpyDtoHAsync_v2", unsafe {
            (d.driver.api.cuMemcpyDtoHAsync_v2)(
                dst.as_mut_ptr().cast(),
                src,
                dst.len(),
                self.0.handle,
            )
        })?;
        // SAFETY: a stream created on this context. When it fails (an earlier
        // kernel's fault) the context is in a sticky error state and runs no
        // more of the stream's work, the copy into `dst` included.
        d.driver.check("cuStreamSynchronize", unsafe {
            (d.driver.api.cuStreamSynchronize)(self.0.handle)
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Ok(_current) = self.device.enter() {
            // SAFETY: created in `create`, destroyed once here.
            let _ = unsafe { (self.device.driver.api.cuStreamDestroy_v2)(self.handle) };
        }
    }
}
