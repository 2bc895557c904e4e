//! The CUDA driver as it really behaves, against the test double taught
//! each behaviour (switchable per test through the double's controls, `double()`):
//!
//! - `ordering`: a copy to the host runs on the handle's non-blocking
//!   stream, after the work queued there; the legacy default stream does not
//!   wait for that work.
//! - `attributes`: a driver older than an attribute answers
//!   CUDA_ERROR_INVALID_VALUE (the handle still opens, the attribute reads
//!   as unsupported); HOST_REGISTER_SUPPORTED (99) 0 and
//!   READ_ONLY_HOST_REGISTER_SUPPORTED (113) 0 refuse registrations with
//!   typed errors before the driver is asked.
//! - `elsewhere`: memory another library registered
//!   (HOST_MEMORY_ALREADY_REGISTERED) is used through that registration when
//!   it covers the buffer, and never unregistered by us.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod attributes;
mod elsewhere;
mod ordering;

use common::double::{double, library};
use zerocam_cuda::Cuda;
use zerocam_tensor::{Tensor, TensorMemory};

fn cuda() -> Cuda {
    Cuda::with_library(library(), 0).unwrap()
}

/// A shared-memory tensor of `len` bytes, each `fill`.
fn shm(len: usize, fill: u8) -> Tensor<u8> {
    let t = Tensor::<u8>::new(&[len], Some(TensorMemory::Shm), None).unwrap();
    for b in t.map().unwrap().iter_mut() {
        *b = fill;
    }
    t
}

/// The CPU address and length of the buffer `t` lies in: what a host
/// registration of it covers.
fn buffer_of(t: &Tensor<u8>) -> (usize, usize) {
    let pin = t.pin_host().unwrap();
    (
        pin.ptr().as_ptr() as usize - pin.buffer_offset(),
        pin.buffer_len(),
    )
}

/// What must hold at the end of every test: nothing registered, nothing
/// unregistered after its memory went or behind its owner's back.
fn assert_clean() {
    let d = double();
    assert_eq!(d.violations(), Vec::<String>::new());
    assert_eq!(d.live_host_registrations(), 0, "{:?}", d.events());
}

mod fork;
mod old_driver;
mod staged;
