//! A global allocator that counts heap allocations (`alloc`, `alloc_zeroed`,
//! `realloc`) per thread and for the whole process, so a test or bench can
//! assert that a hot path allocates nothing. A binary has one global
//! allocator: each test binary, bench or unit-test build that counts
//! installs it once:
//!
//! ```
//! use zerocam_test_support::alloc::{allocations_during, Counting};
//!
//! #[global_allocator]
//! static ALLOC: Counting = Counting;
//!
//! let (v, n) = allocations_during(|| vec![1u8; 64]);
//! assert_eq!((v.len(), n), (64, 1));
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counting allocator: the system allocator, counted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

static ALL_THREADS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THIS_THREAD: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALL_THREADS.fetch_add(1, Ordering::Relaxed);
    // A const thread-local without a destructor: no allocation, no panic.
    let _ = THIS_THREAD.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations this thread has made so far.
pub fn this_thread() -> u64 {
    THIS_THREAD.with(Cell::get)
}

/// Allocations every thread of the process has made so far.
pub fn all_threads() -> u64 {
    ALL_THREADS.load(Ordering::Relaxed)
}

/// `f`'s result and the allocations this thread made while it ran.
pub fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = this_thread();
    let r = f();
    (r, this_thread() - before)
}
