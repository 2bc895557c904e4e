//! No fd growth with DMA tensors, on a real kernel (`cargo lab-test`). One test
//! in its own binary: other tests open fds concurrently.
#![cfg(feature = "lab")]
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use common::{dma, open_fds};
use zerocam_tensor::{Region, Tensor};

#[test]
fn lab_dma_no_fd_growth() {
    let churn = || {
        let t = dma(&[256, 256]);
        drop(t.view(Region::new(8, 8, 16, 16)).unwrap().map().unwrap());
        let b = Tensor::<u8>::from_fd(t.clone_fd().unwrap(), &[256 * 256], None).unwrap();
        drop(b.map_read().unwrap());
        let _ = Tensor::<u8>::from_fd(t.clone_fd().unwrap(), &[1 << 20], None).unwrap_err();
    };
    churn();
    let before = open_fds();
    for _ in 0..100 {
        churn();
    }
    assert_eq!(
        open_fds(),
        before,
        "fds leaked over 100 rounds of dma tensors"
    );
}
