//! [`Gpu::write_model`]: a frame into one batch element of a model's input
//! tensor (`u8`, `i8`, `f16` or `f32`, planes or interleaved, an affine per
//! channel, a fitted rectangle and pad) on the GPU.

use std::any::Any;

use zerocam_tensor::{f16, Element, Tensor, TensorDyn};

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
    /// With [`ModelResample::Area`](super::ModelResample::Area), each model
    /// pixel averages its footprint instead (in each uploaded plane's own
    /// texels; in luma texels for an imported image, whose driver converts
    /// to RGB), as pairs of texels, each pair one bilinear sample.
    ///
    /// `dst` may live in memory, shared memory, a PBO ([`Gpu::pbo_tensor`],
    /// which stays on the GPU) or a dma-buf (rendered in place where EGL
    /// imports it). Its bytes are drawn as a grid of RGBA8 texels, each texel
    /// one `f32`, two `f16` or four `u8`/`i8` elements, so every GLES 3.0
    /// driver renders it; the batch elements are bands of one render target.
    /// Any size works: where a batch element begins or ends inside a texel
    /// (a `u8` 63x37, an `f16` 3x5), that texel's other bytes, its
    /// neighbour's, are left as they were. Each model pixel samples the
    /// source once: a first draw renders the model image's output values
    /// into an integer texture of the model's size, a second packs them
    /// into the texels ([`GpuStats::source_samples`](crate::GpuStats) and
    /// `draws` count both).
    ///
    /// # Errors
    /// [`GpuError::ModelDestination`] for a destination that is not what
    /// `write` describes (element type, shape, batch index, packing) or
    /// whose elements do not start on a multiple of their size in the
    /// buffer; [`GpuError::AreaFootprint`] for an Area write whose footprint
    /// needs more than [`AREA_MAX_SAMPLES`](crate::AREA_MAX_SAMPLES)
    /// bilinear samples across or down; and the errors of
    /// [`convert`](Gpu::convert) for the source and the GPU.
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
        let element = into_dyn(element).ok_or_else(|| GpuError::ModelDestination {
            shape: dst.shape().to_vec(),
            dtype: T::DTYPE,
            reason: "its element type is not one of u8, i8, f16, f32",
        })?;
        self.link().convert(plan, src.clone(), element, *options)
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

/// `t` as a [`TensorDyn`] when its element type is one a model write
/// renders (the plan has checked that it is), without allocating.
fn into_dyn<T: Element>(t: Tensor<T>) -> Option<TensorDyn> {
    let mut slot = Some(t);
    let any: &mut dyn Any = &mut slot;
    if let Some(t) = any.downcast_mut::<Option<Tensor<u8>>>() {
        return t.take().map(TensorDyn::U8);
    }
    if let Some(t) = any.downcast_mut::<Option<Tensor<i8>>>() {
        return t.take().map(TensorDyn::I8);
    }
    if let Some(t) = any.downcast_mut::<Option<Tensor<f16>>>() {
        return t.take().map(TensorDyn::F16);
    }
    if let Some(t) = any.downcast_mut::<Option<Tensor<f32>>>() {
        return t.take().map(TensorDyn::F32);
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::ChannelLayout;
    use zerocam_tensor::DType;

    /// Every model sampling pass (bilinear and area) compiles with every
    /// sampler, the external
    /// (dma-buf) one included where the host's GL has it (the host never
    /// imports, so only this test would see a shader that zink or a board
    /// would refuse), and every packing pass compiles.
    #[test]
    fn every_model_program_compiles() {
        use crate::model::draw_plan::{pack_code, SAMPLE_CODES};
        let gpu = Gpu::new().unwrap();
        let external = gpu.info().image_external;
        let compiled = gpu
            .link()
            .call("compile", move |st| -> Result<usize> {
                let mut n = 0;
                for sample in SAMPLE_CODES {
                    for kind in 0..5 {
                        st.program(false, kind, sample)?;
                        n += 1;
                    }
                    if external {
                        for kind in 0..2 {
                            st.program(true, kind, sample)?;
                            n += 1;
                        }
                    }
                }
                for dtype in crate::WRITE_DTYPES {
                    for layout in [ChannelLayout::Planes, ChannelLayout::Interleaved] {
                        let code = pack_code(dtype, layout).unwrap();
                        // One program, whatever source it follows.
                        st.program(false, 0, code)?;
                        st.program(external, 1, code)?;
                        n += 1;
                    }
                }
                Ok(n)
            })
            .unwrap()
            .unwrap();
        // 4 sampling passes (bilinear, area; float, rounded) for 5 plane
        // kinds and 2 external ones, 8 packing passes.
        assert_eq!(compiled, if external { 36 } else { 28 });
        let linked = gpu.stats().unwrap().programs_linked;
        assert_eq!(linked, compiled as u64);
        assert!(crate::model::draw_plan::pack_code(DType::U16, ChannelLayout::Planes).is_none());
    }
}
