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
//! returns only after every thread is done with it, and no other `run`
//! hands out work while one is under way (`State::busy`).

use std::any::Any;
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

/// A panic's payload, carried from a worker to the caller of `run`.
type Payload = Box<dyn Any + Send>;

/// What the threads share.
struct State {
    /// Bumped for each frame's work.
    generation: u64,
    work: Option<Work>,
    /// Threads `1..active` take part in this generation.
    active: usize,
    /// Of those, how many are not done yet.
    pending: usize,
    /// A `run` has handed out its work and not yet returned: another `run`
    /// (from inside a part, or from another thread) must not replace
    /// `work` and `pending` under the threads still counted in them.
    busy: bool,
    /// The first panic of this generation's parts on the pool's threads,
    /// resumed by `run`.
    payload: Option<Payload>,
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
                busy: false,
                payload: None,
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
    /// are done. A panic in any of them is resumed here, after all are done
    /// (this thread's own first, else the first of the pool's threads').
    ///
    /// A call while another is under way (from inside a part, or from
    /// another thread) runs its parts on this thread, one after another.
    pub(super) fn run<F: Fn(usize) + Sync>(&self, n: usize, f: &F) {
        let n = n.min(self.threads.len() + 1);
        if n < 2 {
            if n == 1 {
                f(0);
            }
            return;
        }
        let work = Work {
            closure: std::ptr::from_ref(f).cast(),
            call: call::<F>,
        };
        {
            let mut s = self.shared.lock();
            if s.busy {
                drop(s);
                return run_here(n, f);
            }
            s.busy = true;
            s.generation = s.generation.wrapping_add(1);
            s.work = Some(work);
            s.active = n;
            s.pending = n - 1;
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
        s.busy = false;
        let theirs = s.payload.take();
        drop(s);
        if let Err(payload) = mine {
            drop(theirs);
            resume_unwind(payload);
        }
        if let Some(payload) = theirs {
            resume_unwind(payload);
        }
    }
}

/// `f(i)` for every `i` in `0..n` on this thread, each run even when an
/// earlier one panicked; the first panic resumed after the last.
fn run_here<F: Fn(usize)>(n: usize, f: &F) {
    let mut first = None;
    for i in 0..n {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(i))) {
            first.get_or_insert(payload);
        }
    }
    if let Some(payload) = first {
        resume_unwind(payload);
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
        // SAFETY: `work` was read under the lock in a generation this thread
        // takes part in (`index < active`), so that generation's `run`
        // counted this thread in `pending` and keeps the closure alive until
        // this thread's decrement below; no other `run` replaces `work` or
        // `pending` before then (`busy`).
        let result = catch_unwind(|| unsafe { (work.call)(work.closure, index) });
        if let Err(payload) = result {
            // Carried to the caller: a payload's `Drop` that panics on this
            // thread, outside any `catch_unwind`, would end the thread, and
            // every later `run` would wait for it for ever.
            let spare = {
                let mut s = shared.lock();
                match s.payload {
                    None => s.payload.replace(payload),
                    Some(_) => Some(payload),
                }
            };
            if let Some(spare) = spare {
                drop_quietly(spare);
            }
        }
        let mut s = shared.lock();
        s.pending -= 1;
        if s.pending == 0 {
            shared.done.notify_all();
        }
    }
}

/// Drops a second panic's payload on a pool thread without letting a panic
/// in its `Drop` end the thread (that panic's own payload dropped the same
/// way, and so on).
fn drop_quietly(mut payload: Payload) {
    while let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
        payload = again;
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

    fn counts<const N: usize>(c: &[AtomicUsize; N]) -> [usize; N] {
        c.each_ref().map(|c| c.load(Ordering::SeqCst))
    }

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
        let payload = r.expect_err("a worker's panic is the caller's");
        let message = payload.downcast_ref::<String>().map(String::as_str);
        assert!(
            message.is_some_and(|m| m.contains("part 2 fails")),
            "{message:?}"
        );
        pool.run(3, &|i| {
            counts[i].fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(counts[2].load(Ordering::SeqCst), 3, "the pool goes on");
        assert!(Pool::new(1).is_none());
    }

    #[test]
    fn no_parts_calls_nothing() {
        let pool = Pool::new(2).unwrap();
        let calls = AtomicUsize::new(0);
        pool.run(0, &|_| {
            calls.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    /// A `run` inside a part, or beside another on a second thread, must not
    /// replace the work the pool's threads are counted in (it did: the outer
    /// call's parts went unrun, or ran after their closure was gone).
    #[test]
    fn a_run_inside_or_beside_another_runs_every_part_once() {
        let pool = Pool::new(3).unwrap();
        let outer: [AtomicUsize; 3] = Default::default();
        let inner: [AtomicUsize; 3] = Default::default();
        pool.run(3, &|i| {
            outer[i].fetch_add(1, Ordering::SeqCst);
            // From the caller's part and from a pool thread's.
            pool.run(3, &|j| {
                inner[j].fetch_add(1, Ordering::SeqCst);
            });
        });
        assert_eq!(counts(&outer), [1, 1, 1]);
        assert_eq!(counts(&inner), [3, 3, 3]);
        let beside: [AtomicUsize; 3] = Default::default();
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    for _ in 0..5 {
                        pool.run(3, &|i| {
                            beside[i].fetch_add(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        assert_eq!(counts(&beside), [10, 10, 10]);
    }

    /// A part's panic whose payload panics again when dropped must not end a
    /// pool thread (the next `run` would wait for it for ever).
    #[test]
    fn a_payload_that_panics_on_drop_leaves_the_threads() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("a payload's drop");
            }
        }
        let pool = Pool::new(3).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(3, &|i| {
                if i > 0 {
                    std::panic::panic_any(Bomb);
                }
            });
        }));
        let payload = r.expect_err("the parts' panic comes back");
        assert!(payload.is::<Bomb>());
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(payload)));
        assert!(dropped.is_err(), "the test's own drop of it panics");
        let calls: [AtomicUsize; 3] = Default::default();
        pool.run(3, &|i| {
            calls[i].fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(counts(&calls), [1, 1, 1]);
    }
}
