//! The host's Mesa cannot import a dma-buf (no `EGL_EXT_image_dma_buf_import`)
//! and the host has no camera: the dma-buf import tests run in the kernel lab
//! under zink on lavapipe (`cargo lab -p zerocam-gpu --test lab_gpu`, and
//! `--test lab_gpu_panic` for a panic with dma-buf imports in flight,
//! `--test lab_model_gpu` for model inputs from and into dma-bufs). This
//! test names them and checks they are still there and still wired to the lab.
#![allow(clippy::unwrap_used)]

const LAB_ONLY: [&str; 7] = [
    "a_grey_dma_buf_source_comes_out_grey",
    "the_lab_renderer_is_zink_with_dma_buf_import",
    "vivid_frames_are_imported_once_per_buffer_and_converted",
    "a_view_of_a_frame_resolves_to_the_frame_image",
    "a_dma_buf_destination_is_rendered_in_place",
    "bad_dma_buf_inputs_are_typed_errors",
    "restarts_keep_every_egl_image",
];

const LAB_PANIC: [&str; 2] = [
    "a_panic_mid_convert_destroys_each_dma_buf_image_once",
    "capture_carries_on_after_a_panic_and_a_new_gpu_imports_again",
];

const LAB_MODEL: [&str; 3] = [
    "an_imported_nv12_dma_buf_matches_the_reference",
    "repeated_frames_of_the_same_buffers_are_not_imported_again",
    "a_dma_buf_model_tensor_is_rendered_in_place",
];

/// Checks that `binary` is declared as a lab test target and defines `tests`.
fn assert_lab_tests(binary: &str, tests: &[&str]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let decl = format!(
        "name = \"{binary}\"\npath = \"tests/{binary}.rs\"\nrequired-features = [\"lab\", \"gl\"]"
    );
    assert!(
        manifest.contains(&decl),
        "{binary} is not declared as a lab test target"
    );
    let src = std::fs::read_to_string(dir.join(format!("tests/{binary}.rs"))).unwrap();
    for test in tests {
        assert!(
            src.contains(&format!("fn {test}()")),
            "lab test {test} missing"
        );
        println!("runs in the kernel lab (cargo lab-test): {binary}::{test}");
    }
}

#[test]
fn dma_buf_import_tests_run_in_the_kernel_lab() {
    assert_lab_tests("lab_gpu", &LAB_ONLY);
}

#[test]
fn gl_thread_panic_tests_with_dma_buf_imports_run_in_the_kernel_lab() {
    assert_lab_tests("lab_gpu_panic", &LAB_PANIC);
}

#[test]
fn model_input_tests_on_dma_bufs_run_in_the_kernel_lab() {
    assert_lab_tests("lab_model_gpu", &LAB_MODEL);
}
