//! The host has no dma-buf source and no EGL dma-buf import: CUDA on real
//! dma-bufs (host registration of vivid's buffers, EGLImage interop on
//! zink's imports) runs in the kernel lab (`cargo lab -p zerocam-cuda --test
//! lab_cuda`). This test names those tests and checks they are still there
//! and wired to the lab.
#![allow(clippy::unwrap_used)]

const LAB_CUDA: [&str; 6] = [
    "dma_buf_frames_register_once_per_buffer_and_read_back_the_cpus_bytes",
    "the_gpus_egl_images_are_registered_once_and_outlive_their_registration",
    "an_egl_image_outlives_a_cuda_map_of_it_whatever_drops_first",
    "an_egl_frame_that_is_not_the_tensors_is_a_typed_error",
    "heap_dma_bufs_the_driver_cannot_pin_are_staged",
    "probe_says_which_path_a_heap_buffer_takes",
];

#[test]
fn cuda_on_dma_bufs_runs_in_the_kernel_lab() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let decl = "name = \"lab_cuda\"\npath = \"tests/lab_cuda.rs\"\nrequired-features = [\"lab\", \"gl\", \"capture\"]";
    assert!(
        manifest.contains(decl),
        "lab_cuda is not declared as a lab test target"
    );
    let src = std::fs::read_to_string(dir.join("tests/lab_cuda.rs")).unwrap();
    for test in LAB_CUDA {
        assert!(
            src.contains(&format!("fn {test}()")),
            "lab test {test} missing"
        );
        println!("runs in the kernel lab (cargo lab-test): lab_cuda::{test}");
    }
}
