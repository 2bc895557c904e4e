//! The host's Mesa cannot import a dma-buf (no `EGL_EXT_image_dma_buf_import`):
//! model inputs from and into dma-bufs are tested in the kernel lab under
//! zink on lavapipe (`cargo lab -p zerocam-preprocess --test lab_model_gpu`).
//! This test names them and checks they are still there and still wired to
//! the lab.

const LAB_MODEL: [&str; 3] = [
    "an_imported_nv12_dma_buf_matches_the_reference",
    "repeated_frames_of_the_same_buffers_are_not_imported_again",
    "a_dma_buf_model_tensor_is_rendered_in_place",
];

#[test]
fn model_input_tests_on_dma_bufs_run_in_the_kernel_lab() {
    zerocam_test_support::lab::assert_lab_tests(
        env!("CARGO_MANIFEST_DIR"),
        "lab_model_gpu",
        &["lab"],
        &LAB_MODEL,
    );
}
