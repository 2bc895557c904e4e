//! The host's Mesa cannot import a dma-buf (no `EGL_EXT_image_dma_buf_import`)
//! and the host has no camera: the dma-buf import tests run in the kernel lab
//! under zink on lavapipe (`cargo lab -p zerocam-gpu --test lab_gpu`). This
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

#[test]
fn dma_buf_import_tests_run_in_the_kernel_lab() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let decl =
        "name = \"lab_gpu\"\npath = \"tests/lab_gpu.rs\"\nrequired-features = [\"lab\", \"gl\"]";
    assert!(
        manifest.contains(decl),
        "lab_gpu is not declared as a lab test target"
    );
    let src = std::fs::read_to_string(dir.join("tests/lab_gpu.rs")).unwrap();
    for test in LAB_ONLY {
        assert!(
            src.contains(&format!("fn {test}()")),
            "lab test {test} missing"
        );
        println!("runs in the kernel lab (cargo lab-test): lab_gpu::{test}");
    }
}
