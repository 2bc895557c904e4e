//! The host's Mesa cannot import a dma-buf (no `EGL_EXT_image_dma_buf_import`)
//! and the host has no camera: the dma-buf import tests run in the kernel lab
//! under zink on lavapipe (`cargo lab -p zerocam-gpu --test lab_gpu`, and
//! `--test lab_gpu_panic` for a panic with dma-buf imports in flight;
//! zerocam-preprocess checks its own model-input lab tests). This test
//! names them and checks they are still there and still wired to the lab.
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

/// Checks that `binary` is declared as a lab test target and defines `tests`.
fn assert_lab_tests(binary: &str, tests: &[&str]) {
    zerocam_test_support::lab::assert_lab_tests(
        env!("CARGO_MANIFEST_DIR"),
        binary,
        &["lab", "gl"],
        tests,
    );
}

#[test]
fn dma_buf_import_tests_run_in_the_kernel_lab() {
    assert_lab_tests("lab_gpu", &LAB_ONLY);
}

#[test]
fn gl_thread_panic_tests_with_dma_buf_imports_run_in_the_kernel_lab() {
    assert_lab_tests("lab_gpu_panic", &LAB_PANIC);
}
