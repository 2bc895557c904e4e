//! The live-object table: every handle a C caller holds is an id in it, with
//! its type and its count of C references. A handle is never dereferenced:
//! a stale one (a double unref, a use after unref) or one zerocam never
//! made is not in the table and gets `ZEROCAM_ERROR_INVALID_HANDLE`; one of
//! another type gets `ZEROCAM_ERROR_WRONG_HANDLE_TYPE`. Ids are never
//! reused, so a stale handle cannot name a newer object.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use crate::status::CapiError;

/// The object behind a handle.
pub(crate) enum Object {
    /// A tensor.
    Tensor(::zerocam_tensor::TensorDyn),
    /// A live CPU map (`None` once unmapped).
    Map(Mutex<Option<::zerocam_tensor::DynMap>>),
    /// An import cache.
    Cache(Mutex<zerocam_cache::ImportCache>),
    /// A frame source.
    Source(crate::capture::SourceObject),
    /// A frame, and the source it came from (kept open while it lives).
    Frame(crate::capture::FrameObject),
    /// A model-input preprocessor (boxed: it is large, the others small).
    Preprocessor(Box<Mutex<zerocam_preprocess::Preprocessor>>),
}

/// The type of an [`Object`], named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tensor,
    Map,
    Cache,
    Source,
    Frame,
    Preprocessor,
}

impl Kind {
    /// The C type's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Tensor => "zerocam_tensor",
            Kind::Map => "zerocam_map",
            Kind::Cache => "zerocam_import_cache",
            Kind::Source => "zerocam_source",
            Kind::Frame => "zerocam_frame",
            Kind::Preprocessor => "zerocam_preprocessor",
        }
    }
}

impl Object {
    /// Its type.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Object::Tensor(_) => Kind::Tensor,
            Object::Map(_) => Kind::Map,
            Object::Cache(_) => Kind::Cache,
            Object::Source(_) => Kind::Source,
            Object::Frame(_) => Kind::Frame,
            Object::Preprocessor(_) => Kind::Preprocessor,
        }
    }
}

/// One live object: its C references and the object.
struct Entry {
    refs: usize,
    object: Arc<Object>,
}

/// The table.
struct Table {
    entries: HashMap<usize, Entry>,
    next: usize,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        entries: HashMap::new(),
        // Ids look like nothing C would make: not 0, not small, not aligned
        // like a pointer malloc returns, and never reused.
        next: 0x5a_0001,
    })
});

/// The table, locked. A panic caught while it was held leaves it consistent
/// (every change is one map operation), so a poisoned lock is taken as is.
fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locks object `what`'s mutex. One poisoned by a panic inside an earlier
/// call is refused: the object may be half updated (a ring slot, the LRU).
pub(crate) fn lock<'a, T>(
    mutex: &'a Mutex<T>,
    what: &'static str,
) -> Result<MutexGuard<'a, T>, CapiError> {
    mutex.lock().map_err(|_| CapiError::Poisoned { what })
}

/// Adds `object` with one C reference; its handle. Ids are never reused:
/// when they run out (2^63 handles on a 64-bit target, 2^31 on a 32-bit one)
/// this is an error, and `object` is dropped outside the table's lock.
pub(crate) fn insert(object: Object) -> Result<usize, CapiError> {
    let mut t = table();
    let id = t.next;
    let Some(next) = id.checked_add(2) else {
        drop(t);
        drop(object);
        return Err(CapiError::Unsupported(
            "every handle id has been used: this process has made too many handles".into(),
        ));
    };
    t.next = next; // odd ids only
    t.entries.insert(
        id,
        Entry {
            refs: 1,
            object: Arc::new(object),
        },
    );
    Ok(id)
}

/// The entry of `handle`, which must be a `kind`; `what` names the
/// parameter in errors.
fn lookup<'t>(
    t: &'t mut Table,
    handle: usize,
    kind: Kind,
    what: &'static str,
) -> Result<&'t mut Entry, CapiError> {
    if handle == 0 {
        return Err(CapiError::Null { what });
    }
    let entry = t
        .entries
        .get_mut(&handle)
        .ok_or(CapiError::InvalidHandle { what, handle })?;
    let found = entry.object.kind();
    if found != kind {
        return Err(CapiError::WrongType {
            what,
            handle,
            expected: kind.name(),
            found: found.name(),
        });
    }
    Ok(entry)
}

/// The object behind `handle`, which must be a `kind`; `what` names the
/// parameter in errors. The `Arc` keeps it alive for the call even if
/// another thread drops the last C reference meanwhile.
pub(crate) fn get(handle: usize, kind: Kind, what: &'static str) -> Result<Arc<Object>, CapiError> {
    let mut t = table();
    lookup(&mut t, handle, kind, what).map(|e| Arc::clone(&e.object))
}

/// Adds a C reference to `handle` (a `kind`).
pub(crate) fn add_ref(handle: usize, kind: Kind, what: &'static str) -> Result<(), CapiError> {
    let mut t = table();
    let entry = lookup(&mut t, handle, kind, what)?;
    entry.refs = entry.refs.checked_add(1).ok_or_else(|| {
        CapiError::InvalidArgument(format!(
            "{what} {handle:#x} has the most references it can count"
        ))
    })?;
    Ok(())
}

/// Drops a C reference to `handle` (a `kind`). After the last one the handle
/// is gone from the table, and the object is returned so that it drops
/// outside the table's lock (a source closing, a frame going back).
pub(crate) fn release(
    handle: usize,
    kind: Kind,
    what: &'static str,
) -> Result<Option<Arc<Object>>, CapiError> {
    let mut t = table();
    let entry = lookup(&mut t, handle, kind, what)?;
    entry.refs -= 1;
    if entry.refs > 0 {
        return Ok(None);
    }
    Ok(t.entries.remove(&handle).map(|e| e.object))
}

/// Live objects of `kind` (for the tests' leak checks).
pub(crate) fn live(kind: Kind) -> usize {
    table()
        .entries
        .values()
        .filter(|e| e.object.kind() == kind)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::zerocam_tensor::{DType, TensorDyn, TensorMemory};

    fn tensor() -> Object {
        Object::Tensor(
            TensorDyn::new(&[4], DType::U8, Some(TensorMemory::Mem), None).expect("tensor"),
        )
    }

    #[test]
    fn a_released_handle_is_never_found_again_even_after_new_objects() {
        let a = insert(tensor()).expect("an id");
        assert!(release(a, Kind::Tensor, "t").expect("live").is_some());
        let b = insert(tensor()).expect("an id");
        assert_ne!(a, b, "ids are never reused");
        assert!(matches!(
            get(a, Kind::Tensor, "t"),
            Err(CapiError::InvalidHandle { .. })
        ));
        assert!(matches!(
            release(a, Kind::Tensor, "t"),
            Err(CapiError::InvalidHandle { .. })
        ));
        assert!(release(b, Kind::Tensor, "t").expect("live").is_some());
    }

    #[test]
    fn references_count_and_the_type_is_checked() {
        let a = insert(tensor()).expect("an id");
        add_ref(a, Kind::Tensor, "t").expect("live");
        assert!(
            release(a, Kind::Tensor, "t").expect("live").is_none(),
            "one reference left"
        );
        let wrong = get(a, Kind::Frame, "frame");
        assert!(
            matches!(
                wrong,
                Err(CapiError::WrongType {
                    expected: "zerocam_frame",
                    found: "zerocam_tensor",
                    ..
                })
            ),
            "a tensor is not a frame"
        );
        assert!(
            release(a, Kind::Tensor, "t").expect("live").is_some(),
            "the last one"
        );
        assert!(matches!(
            get(0, Kind::Tensor, "t"),
            Err(CapiError::Null { .. })
        ));
    }
}
