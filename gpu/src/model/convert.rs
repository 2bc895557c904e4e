//! [`Gpu::convert_model`]: a frame into a model's input tensor (`u8`, `i8`,
//! `f16` or `f32`, NCHW or NHWC, normalized or quantized, fitted) on the GPU.

use zerocam_tensor::{Element, Tensor, TensorDyn};

use crate::model::{FitPlacement, ModelInput, ModelInputError};
use crate::plan::ConvertOptions;
use crate::{Gpu, Result};

impl Gpu {
    /// Converts `src` (any source [`convert`](Gpu::convert) takes, with
    /// `options`' crop, colour spec and import policy) into batch element
    /// `batch_index` of `dst`, a tensor of `input.shape()` and
    /// `input.element_type()`, as [`ModelInput`] says: fitted by its
    /// [`Fit`](crate::Fit) (letterbox bars hold its pad values), resampled
    /// bilinearly with half-pixel centres, then `p * gain + bias` per channel
    /// ([`ModelInput::affine`], channel order included), rounded and clamped
    /// for `u8`/`i8`.
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
    /// Returns where the source landed, in the source tensor's pixels: the
    /// letterbox's scale and offsets and the way back from model boxes.
    ///
    /// ```no_run
    /// use zerocam_gpu::{ConvertOptions, Fit, Gpu, ModelInput};
    /// use zerocam_tensor::{DType, PixelFormat, Tensor, TensorMemory};
    /// let gpu = Gpu::new()?;
    /// let frame = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
    /// let input = ModelInput::new(640, 640)?
    ///     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
    ///     .fit(Fit::Crop);
    /// let tensor = gpu.pbo_tensor::<f32>(&input.shape())?; // 1x3x640x640
    /// let placed = gpu.convert_model(&frame, &tensor, &input, &ConvertOptions::default(), 0)?;
    /// assert_eq!(placed.source.x, 280.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`GpuError::ModelInput`](crate::GpuError::ModelInput) with the error of
    /// [`ModelInput::check_destination`] for a destination that is not what
    /// `input` describes (element type, shape, batch index, packing), or
    /// with [`LetterboxTooSmall`](crate::ModelInputError::LetterboxTooSmall);
    /// [`GpuError::ModelDestination`](crate::GpuError::ModelDestination) for one whose elements do not start on
    /// a multiple of their size in the buffer; and the errors of
    /// [`convert`](Gpu::convert) for the source and the GPU.
    pub fn convert_model<T: Element>(
        &self,
        src: &Tensor<u8>,
        dst: &Tensor<T>,
        input: &ModelInput,
        options: &ConvertOptions,
        batch_index: usize,
    ) -> Result<FitPlacement> {
        let (plan, placement) = crate::model_plan::plan(src, dst, input, options, batch_index)?;
        self.check_own_pbo(src, "source")?;
        self.check_own_pbo(dst, "destination")?;
        let element = dst.batch(batch_index)?; // the readback maps this element only
        let (src, options) = (src.clone(), *options);
        self.link().call("convert", move |st| {
            st.convert(&plan, &src, &element, &options)
        })??;
        Ok(placement)
    }

    /// [`convert_model`](Gpu::convert_model) into a [`TensorDyn`] (its
    /// element type must be the input's).
    ///
    /// # Errors
    /// As [`convert_model`](Gpu::convert_model).
    pub fn convert_model_dyn(
        &self,
        src: &Tensor<u8>,
        dst: &TensorDyn,
        input: &ModelInput,
        options: &ConvertOptions,
        batch_index: usize,
    ) -> Result<FitPlacement> {
        match dst {
            TensorDyn::U8(t) => self.convert_model(src, t, input, options, batch_index),
            TensorDyn::I8(t) => self.convert_model(src, t, input, options, batch_index),
            TensorDyn::F16(t) => self.convert_model(src, t, input, options, batch_index),
            TensorDyn::F32(t) => self.convert_model(src, t, input, options, batch_index),
            other => Err(ModelInputError::DestinationDType {
                expected: input.element_type(),
                actual: other.dtype(),
            }
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::ModelLayout;
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
                for dtype in crate::MODEL_DTYPES {
                    for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
                        let code = crate::model_plan::pack_code(dtype, layout).unwrap();
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
        assert!(crate::model_plan::pack_code(DType::U16, ModelLayout::Nchw).is_none());
    }
}
