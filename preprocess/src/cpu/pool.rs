//! The threads a conversion's bands run on: made once with the
//! [`CpuPreprocessor`](super::CpuPreprocessor), each waiting for the next
//! frame's work; the caller's thread takes band 0 and waits for the rest.
//!
//! Written here rather than taken from `rayon`: every call into a rayon pool
//! from outside it goes through the pool's injector queue, which allocates a
//! new block every 63 calls (measured: one allocation every 63rd frame), and
//! a frame must allocate nothing. This pool hands out a frame's work through
//! one `Mutex` and two `Condvar`s (futexes: no allocation), and its only
//! `unsafe` is the one every scoped pool has: the work is a borrowed closure
//! that the waiting threads call, which is sound because [`Pool::run`]
//! returns only after every thread is done with it.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// A borrowed `Fn(usize) + Sync` closure with its type erased.
#[derive(Clone, Copy)]
struct Work {
    closure: *const (),
    call: unsafe fn(*const (), usize),
}

// SAFETY: `Work` is only made by `Pool::run` from a `&F` where `F: Sync`,
// so calling it from other threads is what `Sync` allows; `run` keeps the
// closure alive until every thread is done with it.
unsafe impl Send for Work {}

/// Calls the `F` at `closure` with `i`.
///
/// # Safety
/// `closure` points to a live `F`.
unsafe fn call<F: Fn(usize) + Sync>(closure: *const (), i: usize) {
    // SAFETY: this fn's contract: a live `F`, shared (`F: Sync`).
    let f = unsafe { &*closure.cast::<F>() };
    f(i);
}

/// What the threads share.
struct State {
    /// Bumped for each frame's work.
    generation: u64,
    work: Option<Work>,
    /// Threads `1..active` take part in this generation.
    active: usize,
    /// Of those, how many are not done yet.
    pending: usize,
    /// A part of this generation's work panicked.
    panicked: bool,
    quit: bool,
}

struct Shared {
    state: Mutex<State>,
    start: Condvar,
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Threads made once that run a frame's parts (see the module docs).
pub(super) struct Pool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &(self.threads.len() + 1))
            .finish()
    }
}

impl Pool {
    /// A pool of `threads` threads counting the caller's (`threads - 1`
    /// made here); `None` when fewer than 2 or the threads cannot start.
    pub(super) fn new(threads: usize) -> Option<Pool> {
        if threads < 2 {
            return None;
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                generation: 0,
                work: None,
                active: 0,
                pending: 0,
                panicked: false,
                quit: false,
            }),
            start: Condvar::new(),
            done: Condvar::new(),
        });
        let mut pool = Pool {
            shared,
            threads: Vec::with_capacity(threads - 1),
        };
        for index in 1..threads {
            let shared = Arc::clone(&pool.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("zerocam-pre-{index}"))
                .spawn(move || worker(&shared, index));
            // Dropping the pool ends the threads already made.
            pool.threads.push(spawned.ok()?);
        }
        Some(pool)
    }

    /// Calls `f(i)` for every `i` in `0..n` (at most the pool's threads):
    /// `f(0)` on this thread, the others on the pool's, and returns when all
    /// are done. A panic in any of them is resumed here, after all are done.
    pub(super) fn run<F: Fn(usize) + Sync>(&self, n: usize, f: &F) {
        let n = n.min(self.threads.len() + 1);
        let work = Work {
            closure: std::ptr::from_ref(f).cast(),
            call: call::<F>,
        };
        {
            let mut s = self.shared.lock();
            s.generation = s.generation.wrapping_add(1);
            s.work = Some(work);
            s.active = n;
            s.pending = n.saturating_sub(1);
            s.panicked = false;
        }
        self.shared.start.notify_all();
        let mine = catch_unwind(AssertUnwindSafe(|| f(0)));
        let mut s = self.shared.lock();
        // `f` must outlive every call of it: wait for them all, panic or not.
        while s.pending > 0 {
            s = self
                .shared
                .done
                .wait(s)
                .unwrap_or_else(PoisonError::into_inner);
        }
        s.work = None;
        let panicked = s.panicked;
        drop(s);
        if let Err(payload) = mine {
            resume_unwind(payload);
        }
        if panicked {
            panic!("a thread of the model-input pool panicked");
        }
    }
}

/// Thread `index`'s loop: wait for a generation it takes part in, run its
/// part, say it is done.
fn worker(shared: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let work = {
            let mut s = shared.lock();
            while s.generation == seen && !s.quit {
                s = shared.start.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
            if s.quit {
                return;
            }
            seen = s.generation;
            match s.work {
                Some(work) if index < s.active => work,
                _ => continue,
            }
        };
        // SAFETY: `Pool::run` keeps the closure alive until `pending` is 0,
        // which it cannot be before this thread's decrement below.
        let result = catch_unwind(|| unsafe { (work.call)(work.closure, index) });
        let mut s = shared.lock();
        s.panicked |= result.is_err();
        s.pending -= 1;
        if s.pending == 0 {
            shared.done.notify_all();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().quit = true;
        self.shared.start.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_part_runs_once_on_its_own_thread_and_panics_come_back() {
        let pool = Pool::new(3).unwrap();
        let counts: [AtomicUsize; 3] = Default::default();
        for n in [3, 2, 1, 3] {
            pool.run(n, &|i| {
                counts[i].fetch_add(1, Ordering::SeqCst);
            });
        }
        let got = counts.each_ref().map(|c| c.load(Ordering::SeqCst));
        assert_eq!(got, [4, 3, 2]);
        let names = Mutex::new(Vec::new());
        pool.run(3, &|_| {
            let name = std::thread::current().name().map(str::to_owned);
            names.lock().unwrap().push(name);
        });
        assert_eq!(names.lock().unwrap().len(), 3);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(3, &|i| assert_ne!(i, 2, "part 2 fails"));
        }));
        assert!(r.is_err(), "a worker's panic is the caller's");
        pool.run(3, &|i| {
            counts[i].fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(counts[2].load(Ordering::SeqCst), 3, "the pool goes on");
        assert!(Pool::new(1).is_none());
    }
}
