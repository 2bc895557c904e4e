//! What the GL thread does when a job panics: it marks the [`Gpu`](crate::Gpu)
//! poisoned, frees what it can, and answers every later call that would use
//! the context with [`GpuError::Poisoned`].
//!
//! Why poison rather than rebuild the context: GL objects belong to their
//! context, so a rebuilt one would leave every PBO tensor naming a buffer that
//! no longer exists (or, worse, one that a new allocation reused), and a CPU
//! map of a PBO taken before the panic would point at freed memory while safe
//! code still holds it. Poisoning keeps the old context (and with it every live
//! map's memory) until its last user is gone, never draws with it again, and
//! tells every caller why. A caller who wants to carry on makes a new `Gpu`.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use crate::state::GlState;
use crate::{GpuError, Result};

/// The first panic of a GL thread: which job, and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Poison {
    pub job: &'static str,
    pub message: String,
}

impl Poison {
    pub fn new(job: &'static str, payload: &(dyn Any + Send)) -> Poison {
        let message = match (
            payload.downcast_ref::<&str>(),
            payload.downcast_ref::<String>(),
        ) {
            (Some(s), _) => (*s).to_owned(),
            (_, Some(s)) => s.clone(),
            _ => "a panic without a message".to_owned(),
        };
        Poison { job, message }
    }

    pub fn error(&self) -> GpuError {
        GpuError::Poisoned {
            job: self.job,
            message: self.message.clone(),
        }
    }
}

/// Set once, by the GL thread, when a job panics; read by the handles (a
/// caller fails fast without a round trip) and by the thread (jobs queued
/// before the panic are refused when their turn comes).
pub(crate) type PoisonCell = OnceLock<Poison>;

/// What a job does on a poisoned GL thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhenPoisoned {
    /// It would use the context (convert, allocate, map): refused.
    Refuse,
    /// It frees or reads counters (delete, unmap, stats): runs anyway.
    Run,
}

/// The typed error of a poisoned cell, `Ok` if it is clean.
pub(crate) fn check(cell: &PoisonCell) -> Result<()> {
    cell.get().map_or(Ok(()), |p| Err(p.error()))
}

impl GlState {
    /// Runs job `job` on this (the GL) thread. A panic inside it is caught
    /// here: the state is poisoned (the first panic is the one remembered),
    /// everything cached is freed, and the caller gets
    /// [`GpuError::Poisoned`] — never a hang, never the panic itself.
    pub fn run<R>(
        &mut self,
        job: &'static str,
        when: WhenPoisoned,
        f: impl FnOnce(&mut GlState) -> R,
    ) -> Result<R> {
        if when == WhenPoisoned::Refuse {
            check(&self.poison)?;
        }
        let payload = match catch_unwind(AssertUnwindSafe(|| f(self))) {
            Ok(r) => return Ok(r),
            Err(payload) => payload,
        };
        let poison = self
            .poison
            .get_or_init(|| Poison::new(job, payload.as_ref()))
            .clone();
        // The GL state is whatever the job left half-set: nothing draws with
        // it again. Freeing only deletes objects, which any state allows; a
        // second panic while freeing must not leave the thread either (what
        // it misses goes with the context).
        let _ = catch_unwind(AssertUnwindSafe(|| self.release_all()));
        Err(poison.error())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_message_of_a_str_a_string_and_anything_else() {
        let of = |p: Box<dyn Any + Send>| Poison::new("job", p.as_ref()).message;
        assert_eq!(of(Box::new("static")), "static");
        assert_eq!(of(Box::new(format!("formatted {}", 7))), "formatted 7");
        assert_eq!(of(Box::new(42u8)), "a panic without a message");
    }

    #[test]
    fn a_clean_cell_checks_ok_and_a_set_one_names_job_and_message() {
        let cell = PoisonCell::new();
        assert!(check(&cell).is_ok());
        let _ = cell.set(Poison {
            job: "convert",
            message: "index out of bounds".into(),
        });
        let e = check(&cell).unwrap_err();
        assert!(
            matches!(&e, GpuError::Poisoned { job: "convert", message } if message == "index out of bounds"),
            "{e}"
        );
    }
}
