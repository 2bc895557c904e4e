//! The host has no dma-buf source (no udmabuf, no DMA heap, no V4L2 device):
//! the C examples on real dma-bufs run in the kernel lab
//! (`capi/tests/lab_capi.rs`, compiled by `tests/lab/test-all` with
//! `capi/c-build`). This test names those tests and checks they are still
//! there and wired to the lab.
#![allow(clippy::unwrap_used)]

const LAB_CAPI: [&str; 4] = [
    "lab_c_import_dmabuf_by_two_fd_numbers_is_one_cached_tensor_on_udmabuf",
    "lab_c_import_dmabuf_on_a_dma_heap_buffer",
    "lab_c_import_dmabuf_on_vivids_exported_buffers",
    "lab_c_capture_on_vivid_imports_each_buffer_once",
];

#[test]
fn the_c_examples_on_real_dma_bufs_run_in_the_kernel_lab() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let decl = "name = \"lab_capi\"\npath = \"tests/lab_capi.rs\"\nrequired-features = [\"lab\"]";
    assert!(
        manifest.contains(decl),
        "lab_capi is not declared as a lab test target"
    );
    let src = std::fs::read_to_string(dir.join("tests/lab_capi.rs")).unwrap();
    for test in LAB_CAPI {
        assert!(
            src.contains(&format!("fn {test}()")),
            "lab test {test} missing"
        );
        println!("runs in the kernel lab (cargo lab-test): lab_capi::{test}");
    }
    let test_all = std::fs::read_to_string(dir.join("../tests/lab/test-all")).unwrap();
    assert!(
        test_all.contains("capi/c-build"),
        "tests/lab/test-all compiles the C examples before booting the lab"
    );
}
