//! The GL thread and [`Gpu`], the handle that sends it work.
//!
//! GL contexts are bound to one thread, so every GL call runs on a thread the
//! handle owns; callers queue jobs for it and wait for the reply. A
//! conversion travels inline with a reply slot each calling thread reuses,
//! so a frame allocates nothing on either thread; other jobs are boxed
//! closures with a reply channel each. The thread ends when the last [`Gpu`]
//! handle drops. PBO tensors hold only a weak link to it, so they may outlive
//! it: their maps then fail with
//! [`Error::PboDisconnected`](zerocam_tensor::Error::PboDisconnected).
//!
//! A job that panics does not take the thread down, and the thread does not
//! carry on with the GL state the panic left half-set: it poisons the `Gpu`
//! (the `poison` module says why this and not a rebuilt context). The
//! panicking job's caller and every later call that would use the context get
//! [`GpuError::Poisoned`] naming the job and the panic's message; the cached
//! EGLImages and render targets are freed at once; what only frees or counts
//! (PBO unmaps and deletes, [`Gpu::stats`]) still runs.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::{JoinHandle, ThreadId};

use zerocam_cache::GpuCacheStats;
use zerocam_tensor::{Tensor, TensorDyn};

use crate::draw_plan::{plan, ConvertOptions, DrawPlan};
use crate::egl::{EglContext, EglDisplay};
use crate::poison::{self, Poison, PoisonCell, WhenPoisoned};
use crate::state::GlState;
use crate::{GpuError, GpuInfo, Result};

/// The queue's first capacity: this many waiting jobs fit before it grows
/// (once: it keeps what it grew to).
const QUEUE_CAPACITY: usize = 16;

/// Ids of GL threads, never reused (0 is `PboOps::owner`'s "unknown").
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Locks `m`, whatever a panic elsewhere left in it: every value these
/// mutexes guard is whole between statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the GL thread runs.
// A conversion is held inline (about 1.5 KB) on purpose: boxing it would be
// the allocation per frame this type exists to avoid, and the queue holds a
// few jobs at most.
#[allow(clippy::large_enum_variant)]
enum Job {
    /// Any closure (maps, frees, counters, interop): boxed, and answered
    /// through a channel of its own when it has a result.
    Run(Box<dyn FnOnce(&mut GlState) + Send>),
    /// A conversion (`Gpu::convert`, `Gpu::write_model`): the plan and the
    /// tensors inline and the caller's reusable reply slot, so a frame
    /// allocates nothing.
    Convert(ConvertJob),
}

/// A planned conversion waiting for the GL thread.
struct ConvertJob {
    plan: DrawPlan,
    src: Tensor<u8>,
    dst: TensorDyn,
    options: ConvertOptions,
    reply: ReplyTx,
}

impl Job {
    fn run(self, st: &mut GlState) {
        match self {
            Job::Run(f) => f(st),
            Job::Convert(ConvertJob {
                plan,
                src,
                dst,
                options,
                reply,
            }) => {
                // The tensors drop inside the job, before the caller hears.
                let r = st.run("convert", WhenPoisoned::Refuse, move |st| {
                    st.convert_dyn(&plan, &src, &dst, &options)
                });
                reply.send(r.and_then(|r| r));
            }
        }
    }
}

/// Where the GL thread leaves a conversion's result for its caller: one per
/// calling thread, made on its first conversion and reused by every later
/// one (a caller waits for each reply before it sends again).
struct ReplySlot {
    state: Mutex<Reply>,
    ready: Condvar,
}

enum Reply {
    Idle,
    Waiting,
    Done(Result<()>),
}

thread_local! {
    /// This thread's reply slot.
    static REPLY: Arc<ReplySlot> = Arc::new(ReplySlot {
        state: Mutex::new(Reply::Idle),
        ready: Condvar::new(),
    });
}

impl ReplySlot {
    /// This thread's slot, marked waiting (a new one while the thread's
    /// locals are being destroyed).
    fn this_thread() -> Arc<ReplySlot> {
        let slot = REPLY.try_with(Arc::clone).unwrap_or_else(|_| {
            Arc::new(ReplySlot {
                state: Mutex::new(Reply::Idle),
                ready: Condvar::new(),
            })
        });
        *lock(&slot.state) = Reply::Waiting;
        slot
    }

    /// Waits for the reply and leaves the slot idle.
    fn wait(&self) -> Result<()> {
        let mut state = lock(&self.state);
        loop {
            match std::mem::replace(&mut *state, Reply::Idle) {
                Reply::Done(r) => return r,
                Reply::Idle => return Err(GpuError::Disconnected),
                Reply::Waiting => {
                    *state = Reply::Waiting;
                    state = self
                        .ready
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// The GL thread's end of a reply slot. Dropped unanswered (the job never
/// ran: the thread had gone), it answers [`GpuError::Disconnected`].
struct ReplyTx(Option<Arc<ReplySlot>>);

impl ReplyTx {
    /// Answers the caller, once: taken out first, so that this value's drop
    /// (later, when the caller may be waiting on its next call) does nothing.
    fn send(mut self, r: Result<()>) {
        if let Some(slot) = self.0.take() {
            slot.answer(r);
        }
    }
}

impl Drop for ReplyTx {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            slot.answer(Err(GpuError::Disconnected));
        }
    }
}

impl ReplySlot {
    fn answer(&self, r: Result<()>) {
        let mut state = lock(&self.state);
        if matches!(*state, Reply::Waiting) {
            *state = Reply::Done(r);
            self.ready.notify_one();
        }
    }
}

/// The jobs waiting for the GL thread: a deque that keeps its capacity, so
/// queueing allocates nothing once it has held the most jobs it will.
struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

struct QueueState {
    jobs: VecDeque<Job>,
    /// Cleared when the last handle drops: the thread drains and ends.
    open: bool,
    /// Cleared when the thread ends (or unwinds): nothing is taken any more.
    served: bool,
}

impl Queue {
    fn new() -> Queue {
        Queue {
            state: Mutex::new(QueueState {
                jobs: VecDeque::with_capacity(QUEUE_CAPACITY),
                open: true,
                served: true,
            }),
            ready: Condvar::new(),
        }
    }

    /// The next job, waiting for one; `None` once the queue is closed and
    /// drained.
    fn next(&self) -> Option<Job> {
        let mut state = lock(&self.state);
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            if !state.open {
                return None;
            }
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Held by the GL thread: when it ends, however it ends, the jobs still
/// queued are dropped (their callers hear [`GpuError::Disconnected`]) and
/// later ones are refused.
struct Served(Arc<Queue>);

impl Drop for Served {
    fn drop(&mut self) {
        let left = {
            let mut state = lock(&self.0.state);
            state.served = false;
            std::mem::take(&mut state.jobs)
        };
        drop(left); // outside the lock: a job's tensors may queue frees
    }
}

/// The channel to the GL thread; dropping the last one ends the thread.
pub(crate) struct Link {
    /// Process-unique: what this thread's PBOs report as `PboOps::owner`.
    pub id: usize,
    queue: Arc<Queue>,
    thread: Mutex<Option<JoinHandle<()>>>,
    gl_thread: ThreadId,
    poison: Arc<PoisonCell>,
}

impl Link {
    /// Runs job `job` (`f`) on the GL thread and returns its result;
    /// [`GpuError::Poisoned`] once a job has panicked (this one included).
    pub fn call<R: Send + 'static>(
        &self,
        job: &'static str,
        f: impl FnOnce(&mut GlState) -> R + Send + 'static,
    ) -> Result<R> {
        self.call_when(job, WhenPoisoned::Refuse, f)
    }

    /// As [`call`](Self::call) for a job that only frees or counts: it runs
    /// even on a poisoned thread (a panic in it is still caught).
    pub fn call_release<R: Send + 'static>(
        &self,
        job: &'static str,
        f: impl FnOnce(&mut GlState) -> R + Send + 'static,
    ) -> Result<R> {
        self.call_when(job, WhenPoisoned::Run, f)
    }

    /// Refuses a call that could not be answered (from the GL thread itself)
    /// or would be refused (on a poisoned thread), without a round trip.
    fn admit(&self, when: WhenPoisoned) -> Result<()> {
        if std::thread::current().id() == self.gl_thread {
            // A job waiting on its own thread would never be answered.
            return Err(GpuError::OnGlThread {
                call: "a GL thread call",
            });
        }
        if when == WhenPoisoned::Refuse {
            poison::check(&self.poison)?;
        }
        Ok(())
    }

    fn call_when<R: Send + 'static>(
        &self,
        job: &'static str,
        when: WhenPoisoned,
        f: impl FnOnce(&mut GlState) -> R + Send + 'static,
    ) -> Result<R> {
        self.admit(when)?;
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        self.queue(Job::Run(Box::new(move |st| {
            let _ = reply_tx.send(st.run(job, when, f));
        })))?;
        reply_rx.recv().map_err(|_| GpuError::Disconnected)?
    }

    /// Runs a planned conversion of `src` into `dst` on the GL thread. What
    /// a frame needs travels inline in the queue and the reply comes back
    /// through the calling thread's reused slot: no allocation once the
    /// thread has converted before.
    pub fn convert(
        &self,
        plan: DrawPlan,
        src: Tensor<u8>,
        dst: TensorDyn,
        options: ConvertOptions,
    ) -> Result<()> {
        self.admit(WhenPoisoned::Refuse)?;
        let slot = ReplySlot::this_thread();
        let job = Job::Convert(ConvertJob {
            plan,
            src,
            dst,
            options,
            reply: ReplyTx(Some(Arc::clone(&slot))),
        });
        if let Err(e) = self.queue(job) {
            *lock(&slot.state) = Reply::Idle;
            return Err(e);
        }
        slot.wait()
    }

    /// Queues job `job` (`f`, one that only frees) without waiting; it runs
    /// even on a poisoned thread.
    pub fn send(
        &self,
        job: &'static str,
        f: impl FnOnce(&mut GlState) + Send + 'static,
    ) -> Result<()> {
        self.queue(Job::Run(Box::new(move |st| {
            let _ = st.run(job, WhenPoisoned::Run, f);
        })))
    }

    fn queue(&self, job: Job) -> Result<()> {
        let refused = {
            let mut state = lock(&self.queue.state);
            if state.open && state.served {
                state.jobs.push_back(job);
                None
            } else {
                Some(job)
            }
        };
        match refused {
            None => {
                self.queue.ready.notify_one();
                Ok(())
            }
            Some(job) => {
                drop(job); // outside the lock: its tensors may queue frees
                Err(GpuError::Disconnected)
            }
        }
    }

    /// The panic that poisoned the thread, if one did.
    pub fn poisoned(&self) -> Option<&Poison> {
        self.poison.get()
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("id", &self.id).finish()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // Closing the queue ends the thread's loop once it is drained; the
        // thread then frees every GL object and the context.
        lock(&self.queue.state).open = false;
        self.queue.ready.notify_all();
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

/// Counters of the GL thread: what was imported, created and freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuStats {
    /// The EGLImage cache of sources (imports, hits, evictions, swept, live).
    pub images: GpuCacheStats,
    /// The render-target cache of destinations.
    pub targets: GpuCacheStats,
    /// EGLImages alive now (sources and imported destinations): the number
    /// of image handles in existence, so it cannot miscount or underflow.
    pub live_images: u64,
    /// EGLImages created since the GL thread started.
    pub images_created: u64,
    /// EGLImages destroyed (EGL accepted the destroy). Each image's destroy
    /// is called exactly once, so `images_created == live_images +
    /// images_destroyed` unless EGL refused a destroy (then the sum falls
    /// short by the refusals).
    pub images_destroyed: u64,
    /// PBOs alive now.
    pub live_pbos: u64,
    /// Conversions done.
    pub converts: u64,
    /// Sources uploaded through a CPU map (memory sources, or a failed import
    /// under [`ImportPolicy::Auto`](crate::ImportPolicy::Auto)).
    pub uploads: u64,
    /// Destinations read back into their memory (not rendered in place).
    pub readbacks: u64,
    /// Conversion programs compiled and linked (one per source kind and
    /// destination packing, on first use): flat once every kind has run.
    pub programs_linked: u64,
    /// Times an upload texture was given new storage (a source of another
    /// size or format than the last): flat while the uploads keep one size.
    pub upload_allocations: u64,
    /// Draw calls made by conversions: one per destination rectangle, plus
    /// one for a model write's sampling pass.
    pub draws: u64,
    /// Source samples (a bilinear fetch and colour conversion at one point)
    /// the conversions' draws made, counted from what each draw's shader
    /// does per fragment: per texel 1 for RGBA, 2 for packed RGB, 4 for
    /// planar RGB destinations; one per model pixel for a model write (its
    /// sampling pass; the packing pass only fetches the results), and with
    /// [`ModelResample::Area`](crate::ModelResample::Area) each target
    /// pixel's footprint's bilinear samples in luma texels instead.
    pub source_samples: u64,
    /// Times the model sampling pass's texture was made (the first model
    /// write, and each one of another size than the last).
    pub model_values_allocations: u64,
}

/// A handle to the GL thread: cheap to clone, shareable across threads.
///
/// ```no_run
/// use zerocam_gpu::{ConvertOptions, Gpu};
/// use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};
/// let gpu = Gpu::new()?; // a surfaceless EGL context on its own thread
/// let frame = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
/// let input = gpu.pbo_image(640, 640, PixelFormat::Rgb)?;
/// gpu.convert(&frame, &input, &ConvertOptions::default())?;
/// let rgb = input.map_read()?; // [640, 640, 3]
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Gpu {
    link: Arc<Link>,
    info: Arc<GpuInfo>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

impl Gpu {
    /// Starts the GL thread: loads EGL and GLES, opens the surfaceless display
    /// and makes a GLES 3 context current there.
    ///
    /// # Errors
    /// [`GpuError::EglUnavailable`] when the libraries are absent,
    /// [`GpuError::Egl`] when no display or context can be made.
    pub fn new() -> Result<Gpu> {
        Gpu::with_display(EglDisplay::Auto)
    }

    /// As [`Gpu::new`], on the display `which` names: an EGL device by
    /// index, or the one NVIDIA's EGL reports as a CUDA device (so CUDA's
    /// GL/EGL interop meets its own driver, whatever glvnd would pick).
    ///
    /// # Errors
    /// As [`Gpu::new`]; [`GpuError::MissingExtension`] where EGL cannot
    /// enumerate devices, [`GpuError::NoEglDevice`] (listing them) where
    /// none matches.
    pub fn with_display(which: EglDisplay) -> Result<Gpu> {
        let queue = Arc::new(Queue::new());
        let served = Served(Arc::clone(&queue));
        let (init_tx, init_rx) = mpsc::sync_channel::<Result<GpuInfo>>(1);
        let poison = Arc::new(PoisonCell::new());
        let thread_poison = Arc::clone(&poison);
        let thread = std::thread::Builder::new()
            .name("zerocam-gl".into())
            .spawn(move || {
                let served = served; // dropped last, however the thread ends
                let started = catch_unwind(AssertUnwindSafe(|| {
                    EglContext::new(which).map(|egl| GlState::new(egl, thread_poison))
                }));
                let mut state = match started {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        let _ = init_tx.send(Err(e));
                        return;
                    }
                    Err(payload) => {
                        let poison = Poison::new("Gpu::new", payload.as_ref());
                        let _ = init_tx.send(Err(poison.error()));
                        return;
                    }
                };
                let _ = init_tx.send(Ok(state.info().clone()));
                while let Some(job) = served.0.next() {
                    // Every job catches its own panic (`GlState::run`).
                    job.run(&mut state);
                }
            })
            .map_err(|e| GpuError::EglUnavailable {
                reason: format!("cannot start the GL thread: {e}"),
            })?;
        let gl_thread = thread.thread().id();
        let info = init_rx.recv().map_err(|_| GpuError::Disconnected)??;
        Ok(Gpu {
            link: Arc::new(Link {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                queue,
                thread: Mutex::new(Some(thread)),
                gl_thread,
                poison,
            }),
            info: Arc::new(info),
        })
    }

    /// What the EGL display and GL context offer.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    pub(crate) fn from_parts(link: Arc<Link>, info: Arc<GpuInfo>) -> Gpu {
        Gpu { link, info }
    }

    pub(crate) fn info_arc(&self) -> Arc<GpuInfo> {
        Arc::clone(&self.info)
    }

    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.link
    }

    pub(crate) fn weak_link(&self) -> Weak<Link> {
        Arc::downgrade(&self.link)
    }

    /// The value this handle's PBO tensors report as
    /// [`Tensor::pbo_owner`](zerocam_tensor::Tensor::pbo_owner) (`PboOps::owner`):
    /// which GL thread a PBO belongs to.
    pub fn owner_token(&self) -> usize {
        self.link.id
    }

    /// Refuses PBO tensors of another `Gpu`.
    pub(crate) fn check_own_pbo<T: zerocam_tensor::Element>(
        &self,
        t: &Tensor<T>,
        role: &'static str,
    ) -> Result<()> {
        match (t.pbo_buffer(), t.pbo_owner()) {
            (Some(buffer), Some(owner)) if owner != self.owner_token() => {
                Err(GpuError::ForeignPbo { role, buffer })
            }
            _ => Ok(()),
        }
    }

    /// Converts `src` into `dst` on the GPU: YUV (NV12, NV16, YUYV, UYVY), RGB,
    /// BGR, RGBA, BGRA or grey in; RGB, RGBA or planar RGB (`u8`) out. The
    /// source (or `options.crop` of it) is scaled to the destination's size
    /// with bilinear filtering.
    ///
    /// A dma-buf source is imported once as an EGLImage and cached on its
    /// [`BufferIdentity`](zerocam_tensor::BufferIdentity) and geometry (a view
    /// uses its parent's image, cropped); other memory is uploaded. A
    /// destination view draws into a viewport of its parent's render target:
    /// a dma-buf destination is rendered in place where EGL can import it,
    /// other destinations are read back into their memory (a PBO stays on the
    /// GPU). The call returns when `dst` holds the result.
    ///
    /// # Errors
    /// Typed [`GpuError`]s for unsupported formats, odd 4:2:0 sizes,
    /// unaligned RGB destination views, crops outside the source, failed
    /// imports (under [`ImportPolicy::Require`](crate::ImportPolicy::Require)),
    /// map conflicts, a GL thread that has exited, and
    /// [`GpuError::Poisoned`] once a job has panicked on it.
    pub fn convert(
        &self,
        src: &Tensor<u8>,
        dst: &Tensor<u8>,
        options: &ConvertOptions,
    ) -> Result<()> {
        let plan = plan(src, dst, options)?;
        self.check_own_pbo(src, "source")?;
        self.check_own_pbo(dst, "destination")?;
        self.link
            .convert(plan, src.clone(), TensorDyn::U8(dst.clone()), *options)
    }

    /// The counters. They stay readable after a panic has poisoned the GL
    /// thread (what was freed shows here).
    ///
    /// # Errors
    /// [`GpuError::Disconnected`] if the GL thread has exited.
    pub fn stats(&self) -> Result<GpuStats> {
        self.link.call_release("stats", |st| st.stats())
    }

    /// Drops every cached source import (EGLImage) now, keeping the render
    /// targets: the next conversion of each source imports it again.
    ///
    /// # Errors
    /// [`GpuError::Disconnected`] if the GL thread has exited,
    /// [`GpuError::Poisoned`] after a panic (which freed them already).
    pub fn clear_imports(&self) -> Result<()> {
        self.link.call("clear_imports", |st| st.clear_imports())
    }

    /// Drops every cached import and render target now (their EGLImages and
    /// textures are destroyed); the next conversion imports again.
    ///
    /// # Errors
    /// As [`clear_imports`](Gpu::clear_imports).
    pub fn clear_caches(&self) -> Result<()> {
        self.link.call("clear_caches", |st| st.clear_caches())
    }
}
