//! [`Gpu::write_model`]: a frame into one batch element of a model's input
//! tensor (`u8`, `i8`, `f16` or `f32`, planes or interleaved, an affine per
//! channel, a fitted rectangle and pad) on the GPU.

use zerocam_tensor::{Element, Tensor, TensorDyn};

use super::ModelWrite;
use crate::draw_plan::ConvertOptions;
use crate::{Gpu, GpuError, Result};

impl Gpu {
    /// Renders `src` (any source [`convert`](Gpu::convert) takes, with
    /// `options`' crop, colour spec and import policy) into batch element
    /// `batch_index` of `dst`, a tensor of `write.shape()` and
    /// `write.dtype`, as [`ModelWrite`] says: `write.source` (relative to the
    /// crop, or to `src` without one) resampled bilinearly with half-pixel
    /// centres onto `write.target`, then `matrix * rgb + bias` per channel,
    /// rounded and clamped for `u8`/`i8`; the rest of the image holds
    /// `write.pad`. zerocam-preprocess makes a `ModelWrite` from a model's
    /// description and its fit (its `convert_model_gpu`).
    ///
    /// `dst` may live in memory, shared memory, a PBO ([`Gpu::pbo_tensor`],
    /// which stays on the GPU) or a dma-buf (rendered in place where EGL
    /// imports it). Its bytes are drawn as a grid of RGBA8 texels, each texel
    /// one `f32`, two `f16` or four `u8`/`i8` elements, so every GLES 3.0
    /// driver renders it; the batch elements are bands of one render target.
    /// Any size works: where a batch element begins or ends inside a texel
    /// (a `u8` 63x37, an `f16` 3x5), that texel's other bytes, its
    /// neighbour's, are left as they were.
    ///
    /// # Errors
    /// [`GpuError::ModelDestination`] for a destination that is not what
    /// `write` describes (element type, shape, batch index, packing) or
    /// whose elements do not start on a multiple of their size in the
    /// buffer; and the errors of [`convert`](Gpu::convert) for the source
    /// and the GPU.
    pub fn write_model<T: Element>(
        &self,
        src: &Tensor<u8>,
        dst: &Tensor<T>,
        write: &ModelWrite,
        options: &ConvertOptions,
        batch_index: usize,
    ) -> Result<()> {
        let plan = super::draw_plan::plan(src, dst, write, options, batch_index)?;
        self.check_own_pbo(src, "source")?;
        self.check_own_pbo(dst, "destination")?;
        let element = dst.batch(batch_index)?; // the readback maps this element only
        let (src, options) = (src.clone(), *options);
        self.link().call("convert", move |st| {
            st.convert(&plan, &src, &element, &options)
        })?
    }

    /// [`write_model`](Gpu::write_model) into a [`TensorDyn`] (its element
    /// type must be the write's).
    ///
    /// # Errors
    /// As [`write_model`](Gpu::write_model).
    pub fn write_model_dyn(
        &self,
        src: &Tensor<u8>,
        dst: &TensorDyn,
        write: &ModelWrite,
        options: &ConvertOptions,
        batch_index: usize,
    ) -> Result<()> {
        match dst {
            TensorDyn::U8(t) => self.write_model(src, t, write, options, batch_index),
            TensorDyn::I8(t) => self.write_model(src, t, write, options, batch_index),
            TensorDyn::F16(t) => self.write_model(src, t, write, options, batch_index),
            TensorDyn::F32(t) => self.write_model(src, t, write, options, batch_index),
            other => Err(GpuError::ModelDestination {
                shape: other.shape().to_vec(),
                dtype: other.dtype(),
                reason: "its element type is not one of u8, i8, f16, f32",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::ChannelLayout;
    use zerocam_tensor::DType;

    /// Every model writer compiles with every sampler, the external (dma-buf)
    /// one included where the host's GL has it: the host never imports, so
    /// only this test would see a shader that zink or a board would refuse.
    #[test]
    fn every_model_program_compiles() {
        let gpu = Gpu::new().unwrap();
        let external = gpu.info().image_external;
        let compiled = gpu
            .link()
            .call("compile", move |st| -> Result<usize> {
                let mut n = 0;
                for dtype in crate::WRITE_DTYPES {
                    for layout in [ChannelLayout::Planes, ChannelLayout::Interleaved] {
                        let code = crate::model::draw_plan::pack_code(dtype, layout).unwrap();
                        for kind in 0..5 {
                            st.program(false, kind, code)?;
                            n += 1;
                        }
                        if external {
                            for kind in 0..2 {
                                st.program(true, kind, code)?;
                                n += 1;
                            }
                        }
                    }
                }
                Ok(n)
            })
            .unwrap()
            .unwrap();
        assert_eq!(compiled, if external { 56 } else { 40 });
        assert!(crate::model::draw_plan::pack_code(DType::U16, ChannelLayout::Planes).is_none());
    }
}
