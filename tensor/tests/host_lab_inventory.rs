//! The host suite cannot reach a DMA heap, udmabuf or V4L2 device: those tests
//! run in the kernel lab (`cargo lab-test`, see tests/lab/README.md). This test
//! names them and checks they are still there and still wired to the lab.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

const LAB_ONLY: [(&str, &str); 7] = [
    ("lab_tensor.rs", "lab_dma_alloc_from_the_system_heap"),
    (
        "lab_tensor.rs",
        "lab_dma_unknown_heap_lists_the_heaps_present",
    ),
    (
        "lab_tensor.rs",
        "lab_dma_persistent_map_with_sync_round_trips_through_clone_fd",
    ),
    ("lab_tensor.rs", "lab_dma_views_share_the_buffer"),
    ("lab_tensor.rs", "lab_dma_from_fd_of_a_udmabuf"),
    ("lab_tensor.rs", "lab_dma_from_fd_of_a_vivid_expbuf"),
    ("lab_tensor_fds.rs", "lab_dma_no_fd_growth"),
];

#[test]
fn dma_backend_tests_run_in_the_kernel_lab() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    for (file, test) in LAB_ONLY {
        let src = std::fs::read_to_string(dir.join("tests").join(file)).unwrap();
        assert!(
            src.contains(&format!("fn {test}()")),
            "lab test {test} missing from {file}"
        );
        let target = file.trim_end_matches(".rs");
        let decl =
            format!("name = \"{target}\"\npath = \"tests/{file}\"\nrequired-features = [\"lab\"]");
        assert!(
            manifest.contains(&decl),
            "{file} is not declared as a lab test target"
        );
        println!("runs in the kernel lab (cargo lab-test): {target}::{test}");
    }
}
