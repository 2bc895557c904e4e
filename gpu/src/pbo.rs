//! PBO tensors: GL pixel buffer objects owned by the GL thread, mapped into
//! the caller's address space on demand through [`PboOps`].

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use zerocam_tensor::{Access, Element, Error, ImageLayout, PboOps, PixelFormat, Tensor};

use crate::glutil;
use crate::gpu::Link;
use crate::state::GlState;
use crate::{Gpu, GpuError, Result};

/// The GL side of one PBO tensor: a weak link to the GL thread, upgraded to a
/// strong one while the buffer is mapped — the thread (and the mapping) cannot
/// go away under a live CPU map.
#[derive(Debug)]
struct GlPbo {
    link: Weak<Link>,
    owner: usize,
    mapped: Mutex<Option<Arc<Link>>>,
}

fn pbo_error(buffer: u32, e: GpuError) -> Error {
    // Only `Disconnected` means the thread is gone; every other failure
    // (including a call from the GL thread itself) says what it was.
    match e {
        GpuError::Disconnected => Error::PboDisconnected { buffer },
        e => Error::Pbo {
            buffer,
            reason: e.to_string(),
        },
    }
}

// The edge of zerocam-tensor's unsafe `PboOps` trait: implementing it is the
// promise itself (no unsafe block here), and what keeps that promise is this
// file's own map/unmap logic (the strong link held from `map` to `unmap`), so
// the impl stays beside it rather than behind a GL wrapper.
#[allow(unsafe_code)]
// SAFETY: `map` returns glMapBufferRange's pointer, checked non-NULL and
// 64-byte aligned. It stays valid until `unmap`: GL keeps a mapped buffer's
// storage in place; the GL thread (which would delete the buffer and destroy
// the context on exit) is kept alive by the strong link held from map to
// unmap; and the GL side never uses a mapped buffer (`convert` refuses a mapped
// PBO with `PboMapped`, and GL itself refuses other uses of mapped buffers).
unsafe impl PboOps for GlPbo {
    fn map(&self, buffer: u32, len: usize, access: Access) -> zerocam_tensor::Result<NonNull<u8>> {
        let link = self
            .link
            .upgrade()
            .ok_or(Error::PboDisconnected { buffer })?;
        let addr = link
            .call("PBO map", move |st| st.map_pbo(buffer, len, access))
            .and_then(|r| r)
            .map_err(|e| pbo_error(buffer, e))?;
        let ptr = NonNull::new(addr as *mut u8).ok_or(Error::Pbo {
            buffer,
            reason: "glMapBufferRange returned NULL".into(),
        })?;
        *self.mapped.lock().unwrap_or_else(PoisonError::into_inner) = Some(link);
        Ok(ptr)
    }

    fn unmap(&self, buffer: u32) -> zerocam_tensor::Result<()> {
        let held = self
            .mapped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let link = held
            .or_else(|| self.link.upgrade())
            .ok_or(Error::PboDisconnected { buffer })?;
        // Runs on a poisoned thread too (it frees the mapping), then says so.
        let unmapped = link
            .call_release("PBO unmap", move |st| st.unmap_pbo(buffer))
            .and_then(|r| r)
            .and_then(|()| link.poisoned().map_or(Ok(()), |p| Err(p.error())))
            .map_err(|e| pbo_error(buffer, e));
        // Dropping the last strong link here (the `Gpu` handles are gone) ends
        // the GL thread, after the unmap above.
        drop(link);
        unmapped
    }

    fn owner(&self) -> usize {
        self.owner
    }

    fn delete(&self, buffer: u32) {
        if let Some(link) = self.link.upgrade() {
            // Not waited for: the last tensor may drop anywhere, even on the
            // GL thread itself.
            let _ = link.send("PBO delete", move |st| st.delete_pbo(buffer));
        }
    }
}

impl GlState {
    pub(crate) fn create_pbo(&mut self, len: usize) -> Result<u32> {
        isize::try_from(len).map_err(|_| GpuError::Gl {
            call: "glBufferData (size)",
            code: gl::OUT_OF_MEMORY,
        })?;
        let zeros = vec![0u8; len];
        let b = glutil::new_pack_buffer(&zeros, gl::DYNAMIC_READ);
        if let Err(e) = glutil::check("glBufferData (PBO)") {
            glutil::delete_buffers(&[b]);
            return Err(e);
        }
        self.pbos.push(b);
        Ok(b)
    }

    fn map_pbo(&mut self, buffer: u32, len: usize, access: Access) -> Result<usize> {
        let bits = match access {
            Access::Read => gl::MAP_READ_BIT,
            Access::Write => gl::MAP_WRITE_BIT,
            Access::ReadWrite => gl::MAP_READ_BIT | gl::MAP_WRITE_BIT,
        };
        // `buffer` is one of this thread's PBOs and `len` its size (the
        // tensor's storage length).
        let p = glutil::map_pack_buffer(buffer, len, bits);
        glutil::check("glMapBufferRange")?;
        if p.is_null() || !(p as usize).is_multiple_of(64) {
            let _ = self.unmap_pbo(buffer);
            return Err(GpuError::Gl {
                call: "glMapBufferRange (NULL or not 64-byte aligned)",
                code: 0,
            });
        }
        Ok(p as usize)
    }

    fn unmap_pbo(&mut self, buffer: u32) -> Result<()> {
        let kept = glutil::unmap_pack_buffer(buffer);
        glutil::check("glUnmapBuffer")?;
        if !kept {
            return Err(GpuError::Gl {
                call: "glUnmapBuffer (contents lost)",
                code: 0,
            });
        }
        Ok(())
    }

    /// Fails with `PboMapped` if the CPU has `buffer` mapped.
    pub(crate) fn check_unmapped(&self, buffer: u32, role: &'static str) -> Result<()> {
        if glutil::pack_buffer_mapped(buffer) {
            return Err(GpuError::PboMapped { role, buffer });
        }
        Ok(())
    }

    pub(crate) fn delete_pbo(&mut self, buffer: u32) {
        if let Some(i) = self.pbos.iter().position(|&b| b == buffer) {
            self.pbos.swap_remove(i);
            glutil::delete_buffers(&[buffer]);
        }
    }
}

impl Gpu {
    /// A zeroed tensor of `shape` in a new PBO. Its maps go through the GL
    /// thread; it outlives the thread, but maps then fail with
    /// [`Error::PboDisconnected`].
    ///
    /// # Errors
    /// A tensor error for an empty or overflowing shape; [`GpuError::Gl`] if GL
    /// cannot allocate it; [`GpuError::Disconnected`]; [`GpuError::Poisoned`]
    /// after a panic on the GL thread.
    pub fn pbo_tensor<T: Element>(&self, shape: &[usize]) -> Result<Tensor<T>> {
        let len = shape
            .iter()
            .try_fold(T::DTYPE.size(), |a, &d| a.checked_mul(d))
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::EmptyShape {
                shape: shape.to_vec(),
            })?;
        let buffer = self
            .link()
            .call("PBO allocation", move |st| st.create_pbo(len))??;
        let ops = Arc::new(GlPbo {
            link: self.weak_link(),
            owner: self.owner_token(),
            mapped: Mutex::new(None),
        });
        Tensor::from_pbo(ops, buffer, shape, None).map_err(|e| {
            // Not wrapped: nothing else would ever delete the buffer.
            let _ = self
                .link()
                .send("PBO delete", move |st| st.delete_pbo(buffer));
            e.into()
        })
    }

    /// A `width`x`height` image of `format` in a new PBO (e.g. a model input
    /// for [`convert`](Gpu::convert) to fill without leaving the GPU).
    ///
    /// # Errors
    /// As [`pbo_tensor`](Gpu::pbo_tensor), and the layout's own errors.
    pub fn pbo_image(
        &self,
        width: usize,
        height: usize,
        format: PixelFormat,
    ) -> Result<Tensor<u8>> {
        self.pbo_layout(ImageLayout::new(width, height, format))
    }

    /// An image laid out as `layout` (padded rows, batches) in a new PBO.
    ///
    /// # Errors
    /// As [`pbo_image`](Gpu::pbo_image).
    pub fn pbo_layout(&self, layout: ImageLayout) -> Result<Tensor<u8>> {
        let bytes = layout.size_bytes(1)?;
        Ok(self.pbo_tensor::<u8>(&[bytes])?.with_image(layout)?)
    }
}
