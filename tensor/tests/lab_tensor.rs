//! Tests that need a real kernel: run inside the kernel lab (`cargo lab-test`).
#![cfg(feature = "lab")]

#[test]
fn lab_dma_heap_is_present() {
    assert!(std::path::Path::new("/dev/dma_heap/system").exists());
}
