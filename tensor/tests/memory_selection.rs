//! The allocation policy with no explicit memory: DMA → SHM → MEM, and
//! `ZEROCAM_TENSOR_FORCE_MEM=1`. One test in its own binary, because it sets
//! environment variables.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

use zerocam_tensor::{is_dma_available, is_shm_available, Tensor, TensorMemory, FORCE_MEM_ENV};

#[test]
fn fallback_order_and_force_mem() {
    std::env::remove_var(FORCE_MEM_ENV);
    let t = Tensor::<u8>::new(&[64], None, None).unwrap();
    let expected = if is_dma_available() {
        TensorMemory::Dma
    } else if is_shm_available() {
        TensorMemory::Shm
    } else {
        TensorMemory::Mem
    };
    assert_eq!(t.memory(), expected);

    std::env::set_var(FORCE_MEM_ENV, "1");
    assert_eq!(
        Tensor::<u8>::new(&[64], None, None).unwrap().memory(),
        TensorMemory::Mem
    );
    // An explicit kind wins over the variable.
    let shm = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None).unwrap();
    assert_eq!(shm.memory(), TensorMemory::Shm);

    std::env::set_var(FORCE_MEM_ENV, "0");
    assert_eq!(
        Tensor::<u8>::new(&[64], None, None).unwrap().memory(),
        expected
    );
    std::env::remove_var(FORCE_MEM_ENV);
}
