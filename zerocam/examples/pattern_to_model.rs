//! Camera → model input → a model, with `zerocam` as the only zerocam
//! dependency: 10 frames of the built-in pattern camera (or the camera named
//! on the command line), each made into a 1x3x224x224 `f32` input
//! (ImageNet's mean and std, centre crop) by a `Preprocessor`, and handed to
//! "the model" — here, the mean of each channel, read through a map of the
//! input tensor.
//!
//! ```sh
//! cargo run --release -p zerocam --example pattern_to_model            # pattern
//! cargo run --release -p zerocam --example pattern_to_model /dev/video0
//! ```

use std::time::Duration;

use zerocam::prelude::*;

/// The stand-in model: the mean of each of the input's three channel planes.
fn model(input: &[f32]) -> [f32; 3] {
    let plane = input.len() / 3;
    let mut means = [0.0; 3];
    for (c, mean) in means.iter_mut().enumerate() {
        *mean = input[c * plane..(c + 1) * plane].iter().sum::<f32>() / plane as f32;
    }
    means
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let spec = std::env::args().nth(1).unwrap_or_else(|| "pattern".into());
    let mut camera = zerocam::open(&spec)?;
    let input = ModelInput::new(224, 224)?
        .dtype(DType::F32)?
        .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
        .fit(Fit::Crop);
    let mut preprocessor = Preprocessor::new(input, Backend::Auto)?;
    println!(
        "{}; model input {:?} f32 on the {} ({:?})",
        camera.description,
        preprocessor.input().shape(),
        preprocessor.backend().name(),
        preprocessor.reason(),
    );
    for _ in 0..10 {
        let frame = camera.next_frame(Duration::from_secs(2))?;
        let input = preprocessor.run(frame.tensor(), None, frame.color_spec())?;
        let TensorDyn::F32(tensor) = &input.tensor else {
            return Err(format!("the model input is {:?}, not f32", input.tensor.dtype()).into());
        };
        assert_eq!(tensor.shape(), &[1, 3, 224, 224]);
        let means = model(&tensor.map_read()?);
        println!("frame {}: channel means {means:.3?}", frame.sequence());
    }
    let stats = camera.stats();
    println!(
        "10 frames: imports {}, cache hits {}; {} model inputs allocated for the ring",
        stats.cache.misses,
        stats.cache.hits,
        preprocessor.stats().tensors_allocated
    );
    Ok(())
}
