//! `O_DIRECT` data-file writes submitted through `io_uring` from the task that has the bytes.
//!
//! Before this, each 256 KiB buffer of a PUT went to the runtime's blocking pool to be written
//! (a hand-off to a pool thread and back, with the thread asleep while the device took the
//! bytes): 37 context switches per 1 MiB object, a quarter of a PUT's CPU in sleeping and
//! waking threads (`benches/README.md`). Here the task that filled the buffer submits the write
//! itself and awaits a [`Completion`]; one reaper thread per store collects completions, many
//! per wake-up, and wakes the tasks. The buffer and the file stay owned by the ring until the
//! kernel is done with them, so a request dropped mid-write (a client gone) cannot free memory
//! the kernel still writes from.
//!
//! Why by hand over the `io-uring` crate rather than a runtime's `io_uring` support: tokio's
//! is unstable and for files only through `tokio-uring` (its own runtime), smol has none, and
//! the node runs on both. The crate gives the rings; what is here is the ownership of
//! in-flight buffers, which no crate of the field does for a runtime-agnostic waker.
//!
//! The only `unsafe` of the store is in this module, one block per ring access, each with
//! its reason.
#![allow(unsafe_code)]

use std::fs::File;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

use ferry_core::pool::PooledBuf;
use io_uring::{IoUring, opcode, types};

/// Submission queue entries: one write in flight per upload, so far more than connections.
const ENTRIES: u32 = 256;
/// The `user_data` of the poll that tells the reaper to stop.
const STOP: u64 = u64::MAX;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a write's awaiting task and the reaper share.
#[derive(Debug, Default)]
struct Op {
    state: Mutex<OpState>,
}

#[derive(Debug, Default)]
struct OpState {
    // The kernel's result (bytes written, or minus an errno), once it came.
    result: Option<i32>,
    waker: Option<Waker>,
}

impl Op {
    fn complete(&self, result: i32) {
        let waker = {
            let mut s = lock(&self.state);
            s.result = Some(result);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A write in flight: what the kernel reads from and writes to, kept until it says it is done.
struct Slot {
    _buf: Arc<PooledBuf<'static>>,
    _file: Arc<File>,
    op: Arc<Op>,
}

/// In-flight writes by `user_data` (their index), with a free list.
#[derive(Default)]
struct Slots {
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    live: usize,
}

impl Slots {
    fn insert(&mut self, slot: Slot) -> usize {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, i: usize) -> Option<Slot> {
        let slot = self.slots.get_mut(i)?.take()?;
        self.free.push(i);
        self.live -= 1;
        Some(slot)
    }
}

struct Shared {
    uring: IoUring,
    // Held to push submission entries (the queue has one producer at a time).
    sq: Mutex<()>,
    slots: Mutex<Slots>,
    // The ring failed in a way that strands completions: later writes take the blocking path.
    broken: AtomicBool,
    // Written once to stop the reaper, which polls it through the ring.
    stop: OwnedFd,
}

/// A store's ring and its reaper thread (see the [module](self) docs).
pub(crate) struct Ring {
    shared: Arc<Shared>,
    reaper: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").finish_non_exhaustive()
    }
}

/// A ring whose completions run their kernel-side work when the submitting thread next enters
/// the kernel rather than by interrupting it (`COOP_TASKRUN`, Linux 5.19), or a plain one.
fn new_uring() -> io::Result<IoUring> {
    IoUring::builder()
        .setup_coop_taskrun()
        .build(ENTRIES)
        .or_else(|_| IoUring::new(ENTRIES))
}

impl Ring {
    /// A ring and its reaper; an error where the kernel has no `io_uring` (or forbids it),
    /// and the store then writes through the blocking pool as before.
    ///
    /// The ring is made on the reaper thread, and only the reaper and the submitting tasks'
    /// threads ever enter it: when a ring is torn down, the kernel interrupts every thread
    /// that used it (a blocking call with a timeout there fails with `EINTR`), so the thread
    /// that opens or drops the store must not be one of them.
    pub fn new() -> io::Result<Ring> {
        let (tx, rx) = std::sync::mpsc::channel();
        let reaper = std::thread::Builder::new()
            .name("ferry-ring".into())
            .spawn(move || {
                let made = new_uring().and_then(|uring| {
                    let stop = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?;
                    Ok(Arc::new(Shared {
                        uring,
                        sq: Mutex::new(()),
                        slots: Mutex::new(Slots::default()),
                        broken: AtomicBool::new(false),
                        stop,
                    }))
                });
                let shared = match made {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let poll =
                    opcode::PollAdd::new(types::Fd(shared.stop.as_raw_fd()), libc::POLLIN as u32)
                        .build()
                        .user_data(STOP);
                let pushed = push(&shared, &poll);
                let ok = pushed.is_ok();
                let _ = tx.send(pushed.map(|()| shared.clone()));
                if ok {
                    reap(&shared);
                }
            })?;
        match rx.recv() {
            Ok(Ok(shared)) => Ok(Ring {
                shared,
                reaper: Some(reaper),
            }),
            Ok(Err(e)) => {
                let _ = reaper.join();
                Err(e)
            }
            Err(_) => Err(io::Error::other("io_uring reaper thread died")),
        }
    }

    /// Whether writes may be submitted (false after a failure that stranded the ring).
    pub fn usable(&self) -> bool {
        !self.shared.broken.load(Ordering::Relaxed)
    }

    /// Write `buf[..len]` at `offset` of `file` (opened with `O_DIRECT`; memory, offset and
    /// length aligned as it requires). The ring keeps `buf` and `file` until the kernel is
    /// done, whatever happens to the returned [`Completion`].
    pub fn write(
        &self,
        file: &Arc<File>,
        buf: Arc<PooledBuf<'static>>,
        len: usize,
        offset: u64,
    ) -> io::Result<Completion> {
        let len32 = u32::try_from(len.min(buf.len()))
            .map_err(|_| io::Error::other("ring write longer than 4 GiB"))?;
        let op = Arc::new(Op::default());
        let entry = opcode::Write::new(types::Fd(file.as_raw_fd()), buf.as_ptr(), len32)
            .offset(offset)
            .build();
        let index = lock(&self.shared.slots).insert(Slot {
            _buf: buf,
            _file: file.clone(),
            op: op.clone(),
        });
        push(&self.shared, &entry.user_data(index as u64)).inspect_err(|_| {
            // Never reached the kernel: the slot is ours to free.
            lock(&self.shared.slots).remove(index);
        })?;
        Ok(Completion { op })
    }
}

/// Push one entry and submit it (and whatever else is queued).
fn push(shared: &Shared, entry: &io_uring::squeue::Entry) -> io::Result<()> {
    let _sq = lock(&shared.sq);
    for _ in 0..2 {
        // SAFETY: `sq` is held, so this is the only producer of the submission queue; the
        // reaper only reads the kernel-visible tail. The entry's buffer and file are kept in
        // `slots` until the reaper sees its completion (the stop poll's eventfd lives in
        // `shared`, which the reaper holds).
        let pushed = unsafe { shared.uring.submission_shared().push(entry) };
        if pushed.is_ok() {
            submit(shared);
            return Ok(());
        }
        // Full: hand the queued entries to the kernel, then retry once.
        submit(shared);
    }
    Err(io::Error::other("io_uring submission queue full"))
}

fn submit(shared: &Shared) {
    loop {
        match shared.uring.submit() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Busy (completions to reap first) and the like: the reaper's next wait submits
            // what is queued.
            _ => return,
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // The reaper's poll of the eventfd completes: it stops once nothing is in flight.
        if rustix::io::write(&self.shared.stop, &1u64.to_ne_bytes()).is_err() {
            // It cannot be told: leave it (and the ring) be rather than hang here.
            return;
        }
        if let Some(r) = self.reaper.take() {
            // A task woken by the reaper may be dropped there (a runtime shut down) and take
            // the last reference to the store with it: the reaper then stops by itself.
            if r.thread().id() != std::thread::current().id() {
                let _ = r.join();
            }
        }
    }
}

/// The reaper: wait for completions, free their slots, wake their tasks; stop when told and
/// nothing is in flight.
fn reap(shared: &Shared) {
    let mut stopping = false;
    loop {
        match shared.uring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) => {}
            Err(e) => {
                tracing::error!(error = %e, "io_uring wait failed; writes go back to the blocking pool");
                shared.broken.store(true, Ordering::Relaxed);
                fail_all(shared);
                return;
            }
        }
        // SAFETY: this thread is the completion queue's only consumer.
        let done: Vec<(u64, i32)> = unsafe { shared.uring.completion_shared() }
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let mut slots = lock(&shared.slots);
        let mut wake = Vec::with_capacity(done.len());
        for (data, result) in done {
            if data == STOP {
                stopping = true;
            } else if let Some(slot) = usize::try_from(data).ok().and_then(|i| slots.remove(i)) {
                wake.push((slot, result));
            }
        }
        let idle = slots.live == 0;
        drop(slots);
        // Buffers and files go first, so a task that wakes finds its buffer released.
        for (slot, result) in wake {
            let Slot { _buf, _file, op } = slot;
            drop((_buf, _file));
            op.complete(result);
        }
        if stopping && idle {
            return;
        }
    }
}

/// After a failed wait: answer every task with an error. Their entries may still be in the
/// kernel, so their buffers and files are leaked rather than freed under it.
fn fail_all(shared: &Shared) {
    let mut slots = lock(&shared.slots);
    let all: Vec<Slot> = (0..slots.slots.len())
        .filter_map(|i| slots.remove(i))
        .collect();
    drop(slots);
    for slot in all {
        let Slot { _buf, _file, op } = slot;
        std::mem::forget((_buf, _file));
        op.complete(-libc::EIO);
    }
}

/// A submitted write's result: the bytes written.
#[derive(Debug)]
pub(crate) struct Completion {
    op: Arc<Op>,
}

impl Future for Completion {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = lock(&self.op.state);
        match s.result {
            Some(r) if r >= 0 => Poll::Ready(Ok(r as usize)),
            Some(r) => Poll::Ready(Err(io::Error::from_raw_os_error(-r))),
            None => {
                if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    s.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::pool::{ALIGN, BufferPool};
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    struct Unpark(std::thread::Thread);

    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    /// Poll on this thread, parked between wake-ups (the reaper wakes it).
    fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park();
        }
    }

    fn direct_file(dir: &std::path::Path) -> Arc<File> {
        Arc::new(
            File::options()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_DIRECT)
                .open(dir.join("f"))
                .expect("O_DIRECT file (tests run on ext4)"),
        )
    }

    #[test]
    fn writes_land_at_their_offsets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ring = Ring::new().expect("io_uring");
        let file = direct_file(dir.path());
        let mut expect = Vec::new();
        for i in 0..4u8 {
            let mut buf = BufferPool::global().get(64 << 10);
            buf.fill(i + 1);
            assert_eq!((buf.as_ptr() as usize) % ALIGN, 0);
            expect.extend_from_slice(&buf[..]);
            let c = ring
                .write(&file, Arc::new(buf), 64 << 10, u64::from(i) * (64 << 10))
                .expect("submitted");
            assert_eq!(block_on(c).expect("written"), 64 << 10);
        }
        let mut got = Vec::new();
        File::open(dir.path().join("f"))
            .and_then(|mut f| f.read_to_end(&mut got))
            .expect("read back");
        assert!(got == expect, "file holds the four buffers in order");
    }

    #[test]
    fn an_unaligned_write_fails_and_the_ring_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ring = Ring::new().expect("io_uring");
        let file = direct_file(dir.path());
        let buf = Arc::new(BufferPool::global().get(64 << 10));
        // Offset 1 is not on a block boundary: O_DIRECT refuses it.
        let c = ring.write(&file, buf.clone(), 4096, 1).expect("submitted");
        let e = block_on(c).expect_err("unaligned O_DIRECT write");
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        let c = ring.write(&file, buf, 4096, 0).expect("submitted");
        assert_eq!(block_on(c).expect("written"), 4096);
        assert!(ring.usable());
    }

    #[test]
    fn a_dropped_completion_leaves_the_buffer_to_the_ring() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ring = Ring::new().expect("io_uring");
        let file = direct_file(dir.path());
        let buf = Arc::new(BufferPool::global().get(256 << 10));
        let weak = Arc::downgrade(&buf);
        drop(ring.write(&file, buf, 256 << 10, 0).expect("submitted"));
        // Dropping the ring waits for what is in flight; the buffer is then released.
        drop(ring);
        assert!(weak.upgrade().is_none(), "the ring released the buffer");
        assert_eq!(
            std::fs::metadata(dir.path().join("f")).expect("file").len(),
            256 << 10
        );
    }
}
