//! A `fork()` child inherits the loaded driver and every handle, which the
//! driver does not support there: zerocam calls nothing in the child (not
//! even to release the parent's registrations) and says why.

use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};
use zerocam_cuda::{Cuda, CudaError};
use zerocam_tensor::Access;

use crate::common::double::{double, library, serial};
use crate::{assert_clean, cuda, shm};

/// In the child: what a map, a new handle and dropping the parent's map give
/// (exit status 0 when each is `Forked` naming both processes and no driver
/// call was made).
fn in_child(parent: u32, cuda: &Cuda, map: zerocam_cuda::CudaMap) -> i32 {
    let calls = double().count("cuCtxPushCurrent_v2");
    let forked = |e: &CudaError| matches!(e, CudaError::Forked { parent: p, child } if *p == parent && *child == std::process::id());
    let t = shm(4096, 1);
    let checks = [
        cuda.map(&t, Access::Read)
            .map(drop)
            .err()
            .is_some_and(|e| forked(&e)),
        Cuda::with_library(library(), 0)
            .err()
            .is_some_and(|e| forked(&e)),
        cuda.driver()
            .check_process()
            .err()
            .is_some_and(|e| forked(&e)),
    ];
    drop(map); // the parent's: nothing is called to end it here
    drop(t);
    let quiet = double().count("cuCtxPushCurrent_v2") == calls;
    if checks.iter().all(|&c| c) && quiet {
        0
    } else {
        eprintln!("child: checks {checks:?}, no driver call {quiet}");
        1
    }
}

#[test]
fn a_fork_child_calls_nothing_and_says_why() {
    let _serial = serial();
    let cuda = cuda();
    let t = shm(4096, 7);
    let map = cuda.map(&t, Access::Read).unwrap();
    let parent = std::process::id();
    // SAFETY: the child only calls zerocam and the double (no locks other
    // threads of the test harness could hold: the double's lock is free while
    // this test holds `serial()`), then leaves with `_exit`.
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => {
            let code = in_child(parent, &cuda, map);
            // SAFETY: ends the child without running the parent's exit hooks.
            unsafe { nix::libc::_exit(code) };
        }
        ForkResult::Parent { child } => {
            assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
        }
    }
    // The parent's map and handle still work, and end cleanly.
    let mut back = vec![0u8; 16];
    map.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, [7; 16]);
    drop(map);
    cuda.clear();
    drop(t);
    assert_clean();
}
