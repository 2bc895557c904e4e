//! Which capture buffers' files the frames of this process lent out: a weak
//! record, keyed by the file's kernel identity (`(st_dev, st_ino)`, which
//! every fd and import of the file shares).
//!
//! A tensor made by `Frame.tensor` knows its frame, so arrays of its maps
//! keep the frame — and the buffer out of the driver's queue — after their
//! `with` blocks. A tensor that reaches the same buffer another way
//! (`Tensor.from_zerocam(frame.tensor)`, `Tensor.from_fd(frame.tensor.clone_fd(), …)`)
//! is a new import with no link to the frame: its map would end with its
//! block, the frame's release would hand the buffer back, and the driver
//! would write into its arrays. Those ways all start with a frame's tensor
//! handing out its fd (`Tensor.fd`, `clone_fd()`, `__zerocam_tensor__`),
//! and that is when the frame is entered here ([`lent`]): never on the
//! capture path, so a frame whose fd nobody asks for costs nothing.
//!
//! A map of a tensor without a frame link asks [`lenders`]: for a file
//! entered here, the frames that lent it and are still held (their exports
//! keep them), or none (the buffer is the source's again: the map then keeps
//! its bracket until its last export, whose borrow keeps the buffer from
//! being queued, as a frame tensor mapped after its frame's release does).
//!
//! Nothing here keeps a frame or a buffer alive. An entry stays while the
//! capture layer's import of the buffer lives (its tensor's
//! `BufferIdentity`, the source's for the buffer's life) or one of its
//! frames is held, and is dropped at the next [`lent`] after that.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use zerocam_tensor::{FdIdentity, TensorDyn};

/// A captured frame (the capture crate's guard), type-erased as the exports
/// keep it.
pub type FrameRef = Arc<dyn Any + Send + Sync>;

/// One file's record.
struct File {
    /// The capture layer's import of the buffer: alive while its source
    /// keeps the buffer.
    capture: Weak<()>,
    /// The frames that lent the file's fd out (not kept alive).
    frames: Vec<Weak<dyn Any + Send + Sync>>,
}

impl File {
    fn current(&self) -> bool {
        self.capture.strong_count() > 0 || self.frames.iter().any(|f| f.strong_count() > 0)
    }
}

static FILES: Mutex<BTreeMap<FdIdentity, File>> = Mutex::new(BTreeMap::new());

fn files() -> MutexGuard<'static, BTreeMap<FdIdentity, File>> {
    FILES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records that `frame`'s tensor `tensor` (the frame's, or a view or plane
/// of it) hands out the fd of its buffer.
pub fn lent(tensor: &TensorDyn, frame: &Weak<dyn Any + Send + Sync>) {
    let Some(key) = tensor.fd_identity() else {
        return;
    };
    let capture = tensor.buffer_identity().weak();
    let mut files = files();
    files.retain(|_, f| f.current());
    let file = files.entry(key).or_insert_with(|| File {
        capture: Weak::new(),
        frames: Vec::new(),
    });
    file.capture = capture;
    file.frames.retain(|f| f.strong_count() > 0);
    if !file.frames.iter().any(|f| f.ptr_eq(frame)) {
        file.frames.push(frame.clone());
    }
}

/// For a tensor of a file some frame lent out (see the module docs): the
/// frames still holding it (empty when none does). `None` for any other
/// tensor.
pub fn lenders(tensor: &TensorDyn) -> Option<Vec<FrameRef>> {
    let key = tensor.fd_identity()?;
    let files = files();
    let file = files.get(&key).filter(|f| f.current())?;
    Some(file.frames.iter().filter_map(Weak::upgrade).collect())
}
