//! Model inputs: the description of a model's input tensor ([`ModelInput`]),
//! how a frame is fitted into it ([`Fit`], [`FitPlacement`]), shared by the
//! GPU and CPU paths that make it.

mod cpu;
mod destination;
mod error;
mod fit;
mod input;
mod preprocessor;

pub use cpu::{convert_cpu, CpuConvertError, CpuPreprocessor};
pub use error::ModelInputError;
pub use fit::{Fit, FitPlacement, SourceRect};
pub use input::{ChannelOrder, ModelInput, ModelLayout, Quantization, MODEL_DTYPES};
pub use preprocessor::{
    is_software_renderer, ChosenDevice, Device, DeviceReason, PreprocessError, PreprocessStats,
    Preprocessed, Preprocessor, DEFAULT_RING_DEPTH,
};

use zerocam_tensor::Region;

impl ModelInput {
    /// Where `source` (a rectangle of the frame, in frame pixels) lands in
    /// this input, by its [`Fit`].
    ///
    /// # Errors
    /// As [`Fit::place`].
    pub fn place(&self, source: Region) -> Result<FitPlacement, ModelInputError> {
        self.fit_mode().place(source, self.width(), self.height())
    }
}
