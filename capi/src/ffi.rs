//! The boundary itself: [`call`] runs every entry point's body, turns its
//! error (or a panic) into a status code and the thread's last error; the
//! pointer helpers are the only places that read or write C memory.
//!
//! Every `extern "C"` function is `unsafe`: its pointers are the caller's
//! promise (documented under `# Safety` on each) that they are NULL or
//! valid for what the function does with them. NULL is always checked.

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::status::{set_last_error, zerocam_status, CapiError, ZEROCAM_OK};

/// Runs `body` for entry point `name`: `ZEROCAM_OK`, or the error's status
/// with `"name: message"` as this thread's last error. A panic in `body` is
/// caught here (none crosses into C) and is `ZEROCAM_ERROR_PANIC`.
pub(crate) fn call(
    name: &'static str,
    body: impl FnOnce() -> Result<(), CapiError>,
) -> zerocam_status {
    let error = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return ZEROCAM_OK,
        Ok(Err(e)) => e,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            CapiError::Panic(what)
        }
    };
    set_last_error(format!("{name}: {error}"));
    error.status()
}

/// An `out` parameter, checked not NULL; written once, on success.
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// `ptr` as an out parameter named `what`.
    pub(crate) fn new(ptr: *mut T, what: &'static str) -> Result<Out<T>, CapiError> {
        NonNull::new(ptr).map(Out).ok_or(CapiError::Null { what })
    }

    /// Writes `value` (the old value is not read or dropped: C memory).
    ///
    /// # Safety
    /// The pointer is valid for a write of a `T` and aligned for it: the
    /// entry point's caller's promise.
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: valid and aligned for a write of T (this fn's contract).
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// The `len` values at `ptr` (`what` in errors): empty for `len` 0 whatever
/// `ptr` is.
///
/// # Safety
/// For `len` > 0, `ptr` is NULL or valid for reads of `len` `T`s that
/// nothing writes during the call.
pub(crate) unsafe fn slice<'a, T>(
    ptr: *const T,
    len: usize,
    what: &'static str,
) -> Result<&'a [T], CapiError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(CapiError::Null { what });
    }
    // SAFETY: not NULL, and valid for `len` reads while the call runs (this
    // fn's contract).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The struct at `ptr` (`what` in errors), copied.
///
/// # Safety
/// `ptr` is NULL or valid for a read of a `T`, aligned, holding a valid `T`
/// (every field of the C API's input structs is an integer, a float or a
/// pointer: any bits are valid).
pub(crate) unsafe fn read<T: Copy>(ptr: *const T, what: &'static str) -> Result<T, CapiError> {
    if ptr.is_null() {
        return Err(CapiError::Null { what });
    }
    // SAFETY: not NULL; valid, aligned and initialized (this fn's contract).
    Ok(unsafe { ptr.read() })
}

/// The NUL-terminated UTF-8 string at `ptr` (`what` in errors).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that nothing writes
/// during the call.
pub(crate) unsafe fn string<'a>(
    ptr: *const c_char,
    what: &'static str,
) -> Result<&'a str, CapiError> {
    if ptr.is_null() {
        return Err(CapiError::Null { what });
    }
    // SAFETY: not NULL and NUL-terminated (this fn's contract).
    let c = unsafe { CStr::from_ptr(ptr) };
    c.to_str()
        .map_err(|_| CapiError::InvalidArgument(format!("{what} is not UTF-8: {c:?}")))
}

/// The id a handle pointer carries (handles are ids, never dereferenced).
pub(crate) fn id<T>(handle: *const T) -> usize {
    handle.addr()
}

/// The handle pointer of id `id`.
pub(crate) fn handle<T>(id: usize) -> *mut T {
    std::ptr::without_provenance_mut(id)
}

/// The kernel identity `(st_dev, st_ino)` of the caller's fd `fd` and its
/// size (`st_size`: 0 for a dma-buf on kernels before 5.x), by one `fstat`
/// (a cache lookup's only syscall).
///
/// # Errors
/// `BadFd` with `fstat`'s errno (`EBADF` for a number that is not open).
pub(crate) fn fd_stat(
    fd: std::ffi::c_int,
) -> Result<(::zerocam_tensor::FdIdentity, u64), CapiError> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one `struct stat` into `st` and reads nothing from
    // the process; a number that is not an open fd is EBADF, not undefined.
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if rc != 0 {
        return Err(CapiError::Tensor(::zerocam_tensor::Error::BadFd {
            fd,
            op: "fstat",
            errno: nix::errno::Errno::last(),
        }));
    }
    // SAFETY: fstat returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    // `st_dev` and `st_ino` are 64-bit on the 64-bit targets; `from` keeps
    // 32-bit ones (where they may be narrower) building.
    #[allow(clippy::useless_conversion)]
    let identity = ::zerocam_tensor::FdIdentity {
        dev: u64::from(st.st_dev),
        ino: u64::from(st.st_ino),
    };
    Ok((identity, u64::try_from(st.st_size).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{zerocam_last_error, ZEROCAM_ERROR_INVALID_ARGUMENT, ZEROCAM_ERROR_PANIC};

    fn last_error() -> String {
        // SAFETY: zerocam_last_error returns this thread's NUL-terminated message.
        unsafe { CStr::from_ptr(zerocam_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_inside_a_call_is_a_status_code_and_a_message_not_an_unwind() {
        let status = call("zerocam_test_entry", || panic!("boom {}", 7));
        assert_eq!(status, ZEROCAM_ERROR_PANIC);
        let message = last_error();
        assert!(
            message.starts_with("zerocam_test_entry: internal error"),
            "{message}"
        );
        assert!(message.contains("boom 7"), "{message}");
    }

    #[test]
    fn an_error_sets_the_threads_message_and_a_success_keeps_it() {
        let status = call("zerocam_test_entry", || {
            Err(CapiError::InvalidArgument("value 3 is wrong".into()))
        });
        assert_eq!(status, ZEROCAM_ERROR_INVALID_ARGUMENT);
        assert_eq!(last_error(), "zerocam_test_entry: value 3 is wrong");
        assert_eq!(call("zerocam_other", || Ok(())), ZEROCAM_OK);
        assert_eq!(last_error(), "zerocam_test_entry: value 3 is wrong");
        let other = std::thread::spawn(last_error).join().expect("thread");
        assert_eq!(other, "", "another thread has its own (empty) message");
    }

    #[test]
    fn a_message_with_a_nul_still_reaches_c() {
        call("zerocam_test_entry", || {
            Err(CapiError::InvalidArgument("a\0b".into()))
        });
        assert_eq!(last_error(), "zerocam_test_entry: a b");
    }

    #[test]
    fn null_pointers_are_errors_before_anything_is_read() {
        assert!(matches!(
            Out::<u32>::new(std::ptr::null_mut(), "out"),
            Err(CapiError::Null { what: "out" })
        ));
        // SAFETY: NULL with a length is refused before any read.
        let s = unsafe { slice::<usize>(std::ptr::null(), 2, "shape") };
        assert!(matches!(s, Err(CapiError::Null { what: "shape" })));
        // SAFETY: a length of 0 reads nothing.
        let empty = unsafe { slice::<usize>(std::ptr::null(), 0, "shape") };
        assert_eq!(empty.map(<[usize]>::len).ok(), Some(0));
        // SAFETY: NULL is refused before any read.
        assert!(unsafe { string(std::ptr::null(), "spec") }.is_err());
    }

    #[test]
    fn fstat_of_a_number_that_is_not_open_is_bad_fd_naming_it() {
        let e = fd_stat(-1).expect_err("-1 is no fd");
        assert_eq!(e.status(), crate::status::ZEROCAM_ERROR_BAD_FD);
        assert!(e.to_string().contains("-1"), "{e}");
    }
}
