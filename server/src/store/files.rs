//! Data files: ids, paths, streaming writes into temp files, pinning against deletion, cleanup.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::future::Future;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};

use ferry_core::md5::Md5Digest;
use ferry_core::md5::scheduler::{SchedulerError, StreamId};
use ferry_core::md5::shared::Md5Lanes;
use ferry_core::pool::{ALIGN, BufferPool, PooledBuf};
use ferry_core::s3::S3Result;
use ferry_core::sse;

use super::ring::{self, Ring};
use super::{COPY_BUF_SIZE, Inner};

/// A data file's id: its name is the id in 32 hex digits.
pub(crate) type FileId = u128;

/// Fresh file ids: a random 64-bit seed per open, then a counter, so ids never repeat across
/// restarts and the low byte (the fan-out directory) cycles evenly.
#[derive(Debug)]
pub(crate) struct IdGen {
    seed: u64,
    next: AtomicU64,
}

impl IdGen {
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            seed: getrandom::u64().map_err(io::Error::other)?,
            next: AtomicU64::new(0),
        })
    }

    pub fn next(&self) -> FileId {
        (u128::from(self.seed) << 64) | u128::from(self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// The fan-out directory (`data/XY`) of a file id.
pub(crate) fn fan_dir(data: &Path, id: FileId) -> PathBuf {
    data.join(format!("{:02x}", id as u8))
}

/// Which fan-out directories exist, their entries in `data/` durable. They are made on first
/// use, so a store of few files has few directories (256 empty ones cost a node start and a
/// deletion of its data noticeable time on some file systems).
#[derive(Debug)]
pub(crate) struct FanDirs([AtomicBool; 256]);

impl FanDirs {
    /// None known yet.
    pub fn new() -> Self {
        Self(std::array::from_fn(|_| AtomicBool::new(false)))
    }

    /// Record `data/XY`, found at open (its entry was synced there).
    fn mark(&self, name: &str) {
        if name.len() == 2
            && let Ok(b) = u8::from_str_radix(name, 16)
            && let Some(slot) = self.0.get(usize::from(b))
        {
            slot.store(true, Ordering::Release);
        }
    }

    /// Make the fan-out directory of `id` exist, with `fsync` durably (its entry in `data/`
    /// synced), before a file is renamed into it.
    fn ensure(&self, data: &Path, id: FileId, fsync: bool) -> io::Result<()> {
        let Some(slot) = self.0.get(usize::from(id as u8)) else {
            return Ok(());
        };
        if slot.load(Ordering::Acquire) {
            return Ok(());
        }
        match super::perms::create_dir(&fan_dir(data, id)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        // Another writer may have just created it without syncing yet: sync whoever made it.
        if fsync {
            sync_dir(data)?;
        }
        slot.store(true, Ordering::Release);
        Ok(())
    }
}

/// Where a committed data file lives.
pub(crate) fn data_path(data: &Path, id: FileId) -> PathBuf {
    fan_dir(data, id).join(format!("{id:032x}"))
}

/// Where a data file is written before it is renamed to [`data_path`]: beside it, so creating
/// it locks only its fan-out directory (one `tmp/` for every writer was the most contended
/// lock of concurrent PUTs) and the rename stays within one directory.
fn tmp_path(data: &Path, id: FileId) -> PathBuf {
    fan_dir(data, id).join(format!("{id:032x}.tmp"))
}

/// Make every file written so far durable, with the directory entries naming them: one
/// `syncfs(2)` of the data directory's file system, for a whole group commit.
///
/// `syncfs` writes back everything dirty on that file system, so a data directory on a file
/// system that other programs write heavily to makes commits wait for their data too (give
/// the store its own file system, as for any database). It reports a write-back error that
/// happened since the last call (Linux 5.8 and later), which fails the group: nothing of it
/// is committed.
pub(crate) fn sync_data_files(inner: &Inner) -> io::Result<()> {
    rustix::fs::syncfs(&inner.data_dir)?;
    inner.counters.synced();
    Ok(())
}

/// fsync a directory, so a rename into it survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Create a temp file for writing, with `O_DIRECT` if `*direct`; a file system that refuses
/// `O_DIRECT` (tmpfs, some FUSE file systems) clears `*direct` and the store's `direct_ok`,
/// and the file is created without it.
fn create_file(inner: &Inner, path: &Path, direct: &mut bool) -> io::Result<File> {
    let open = |direct: bool| {
        let mut options = File::options();
        super::perms::private_file(options.write(true).create_new(true));
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        options.open(path)
    };
    if *direct {
        match open(true) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                inner.direct_ok.store(false, Ordering::Relaxed);
                *direct = false;
            }
            r => return r,
        }
    }
    open(false)
}

/// Turn `O_DIRECT` on or off for an open file (Linux lets `F_SETFL` change it).
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    use rustix::fs::OFlags;
    let mut flags = rustix::fs::fcntl_getfl(file)?;
    flags.set(OFlags::DIRECT, on);
    rustix::fs::fcntl_setfl(file, flags)?;
    Ok(())
}

/// A pooled buffer lent to the store's MD5 lanes: its first `len` bytes are hashed there.
/// Shared with the writer, which writes it to the file while it waits in the queue; it goes
/// back to the pool when both are done with it.
pub(crate) struct Chunk {
    buf: Arc<PooledBuf<'static>>,
    len: usize,
}

impl AsRef<[u8]> for Chunk {
    fn as_ref(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

/// The store's MD5 lane scheduler: every data file's digest is computed there, so concurrent
/// writes (PUTs, parts, copies) are hashed together in SIMD lanes.
pub(crate) type Lanes = Md5Lanes<Chunk>;

fn lanes_err(e: SchedulerError) -> io::Error {
    io::Error::other(e)
}

/// Run `wait` (a wait for this write's chunks to be hashed) and count the part of it spent
/// off the CPU (wall time less this thread's CPU time: hashing a batch itself is work, not a
/// wait) in the store's MD5 wait histogram.
fn off_cpu<T>(inner: &Inner, wait: impl FnOnce() -> T) -> T {
    let (wall, cpu) = (std::time::Instant::now(), crate::cpu::thread_cpu());
    let out = wait();
    let on_cpu = crate::cpu::thread_cpu().saturating_sub(cpu);
    inner
        .counters
        .md5_wait
        .observe(wall.elapsed().saturating_sub(on_cpu));
    out
}

/// Chunks a stream lets wait in the lanes before its writer hashes ([`Spool::start_ring`]):
/// 1 MiB of 256 KiB buffers.
const DEFER: usize = 4;
/// Chunks a stream may have waiting at most (4 MiB) while others' batches are out.
const BACKLOG: usize = 16;

/// How far ahead of the writes a file's space is allocated at most: a body that declares
/// gigabytes and sends nothing holds no more than this of the disk.
const RESERVE: u64 = 16 << 20;

/// Allocate the file up to `end` (and further, [`RESERVE`] at a time, never past `*hint`)
/// before an `O_DIRECT` write ends there. A write that extends a file must hold the inode
/// exclusively, so the kernel cannot start it without blocking and hands it from the ring
/// to a worker thread of its own: a thread switch per write, which is what the ring is
/// there to avoid. Within allocated space the write is started by the submitting thread and
/// completes without any thread of this process. A file system that cannot allocate ahead
/// (or a body of unknown length: `*hint` 0) only costs those switches.
fn reserve(file: &File, hint: &mut u64, reserved: &mut u64, end: u64) -> io::Result<()> {
    if end <= *reserved || *hint < end {
        return Ok(());
    }
    let to = end.max(*reserved + RESERVE).min(*hint);
    match rustix::fs::fallocate(
        file,
        rustix::fs::FallocateFlags::empty(),
        *reserved,
        to - *reserved,
    ) {
        Ok(()) => {
            *reserved = to;
            Ok(())
        }
        Err(e) if e == rustix::io::Errno::NOSPC => Err(e.into()),
        // Not supported here: write without allocating ahead from now on.
        Err(_) => {
            *hint = 0;
            Ok(())
        }
    }
}

/// A write submitted through the ring ([`Spool::start_ring`]): ready when the kernel has the
/// bytes; an I/O error (a full disk included) as [`Inner::io_failed`] reports it.
#[derive(Debug)]
pub(crate) struct RingWrite {
    inner: Arc<Inner>,
    /// `None`: nothing was submitted (an encrypting spool whose chunk buffer is not full yet).
    completion: Option<ring::Completion>,
    len: usize,
}

impl Future for RingWrite {
    type Output = S3Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<S3Result<()>> {
        let Some(completion) = self.completion.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let written = ready!(Pin::new(completion).poll(cx));
        let inner = &self.inner;
        Poll::Ready(match written {
            Ok(n) if n == self.len => {
                inner.counters.ring_written(n);
                Ok(())
            }
            // O_DIRECT writes to a file system are whole unless the disk filled up.
            Ok(_) => Err(inner.io_failed(io::Error::from_raw_os_error(libc::ENOSPC))),
            Err(e) => Err(inner.io_failed(e)),
        })
    }
}

/// A temp file being written: bytes go out through pooled buffers, each written to the file
/// and then hashed (MD5) in the store's lanes ([`Lanes`]) with other writers' buffers.
/// Dropped without [`Spool::finish`], it deletes its temp file.
pub(crate) struct Spool {
    inner: Arc<Inner>,
    id: FileId,
    // Shared with the ring while a write is in flight there.
    file: Option<Arc<File>>,
    // The file's stream in the lanes; `None` once its digest is taken.
    stream: Option<StreamId>,
    md5: Option<Md5Digest>,
    // Bytes handed off (written and hashed).
    len: u64,
    // Small writes and `write_from` gather here (taken from the pool on first use).
    buf: Option<PooledBuf<'static>>,
    filled: usize,
    // A write that failed while [`Spool::digest`] flushed, reported by `finish`.
    failed: Option<io::Error>,
    // Whether the file is open with `O_DIRECT` (cleared for good at the first unaligned write).
    direct: bool,
    // The body's declared length (0: unknown), and how much of the file is allocated ahead
    // of the writes (see [`reserve`]).
    hint: u64,
    reserved: u64,
    // Encrypting: the file holds ciphertext chunks ([`ferry_core::sse`]), `len` counts them.
    crypt: Option<Box<Crypt>>,
}

/// The encryption stage of a [`Spool`]: plaintext gathers in a buffer laid out as the file
/// (chunks of [`sse::PLAIN_CHUNK`] bytes, each followed by room for its tag); a full buffer is
/// sealed and written once more plaintext shows it does not hold the last chunk.
struct Crypt {
    cipher: sse::ObjectCipher,
    /// The buffer being filled, and its plaintext bytes.
    out: Option<PooledBuf<'static>>,
    plain_in_out: usize,
    /// Index of the first chunk in `out`.
    first_chunk: u64,
    /// Plaintext bytes taken so far.
    plain_len: u64,
}

/// Plaintext bytes one [`COPY_BUF_SIZE`] buffer of chunks holds.
const CRYPT_BUF_PLAIN: usize = COPY_BUF_SIZE / sse::DISK_CHUNK * sse::PLAIN_CHUNK;

impl Crypt {
    /// Copy `plain` (at most one pooled buffer's worth) into the chunk buffer; a full buffer
    /// is sealed once more plaintext shows it does not hold the last chunk, and returned with
    /// its length on disk, to be written next. At most one is, for at most
    /// [`COPY_BUF_SIZE`] bytes of plaintext.
    fn absorb(&mut self, mut plain: &[u8]) -> io::Result<Option<(PooledBuf<'static>, usize)>> {
        let mut sealed = None;
        while !plain.is_empty() {
            if self.plain_in_out == CRYPT_BUF_PLAIN {
                if sealed.is_some() {
                    return Err(io::Error::other("more plaintext than one buffer at once"));
                }
                sealed = self.seal(false)?;
                continue;
            }
            let out = self
                .out
                .get_or_insert_with(|| BufferPool::global().get(COPY_BUF_SIZE));
            // Up to the end of the current chunk's plaintext.
            let at = self.plain_in_out;
            let n = (sse::PLAIN_CHUNK - at % sse::PLAIN_CHUNK).min(plain.len());
            let dst = Self::slot(at);
            out.get_mut(dst..dst + n)
                .ok_or_else(|| io::Error::other("encryption buffer too small"))?
                .copy_from_slice(&plain[..n]);
            self.plain_in_out += n;
            self.plain_len += n as u64;
            plain = &plain[n..];
        }
        Ok(sealed)
    }

    /// Where plaintext byte `at` of the buffer goes: its chunk's slot, then its offset there.
    fn slot(at: usize) -> usize {
        at / sse::PLAIN_CHUNK * sse::DISK_CHUNK + at % sse::PLAIN_CHUNK
    }

    /// Seal the chunks in `out` (the last of them as the object's last chunk if `last`);
    /// the buffer and its length on disk, or `None` if there is nothing to write.
    fn seal(&mut self, last: bool) -> io::Result<Option<(PooledBuf<'static>, usize)>> {
        let plain = std::mem::take(&mut self.plain_in_out);
        let mut buf = match self.out.take() {
            Some(b) => b,
            // An empty object is one empty chunk: its tag proves the file was not emptied.
            None if last && self.first_chunk == 0 => BufferPool::global().get(COPY_BUF_SIZE),
            None => return Ok(None),
        };
        let chunks = plain.div_ceil(sse::PLAIN_CHUNK).max(1);
        let mut disk = 0;
        for c in 0..chunks {
            let n = (plain - c * sse::PLAIN_CHUNK).min(sse::PLAIN_CHUNK);
            let at = c * sse::DISK_CHUNK;
            let chunk = buf
                .get_mut(at..at + n + sse::TAG_LEN)
                .ok_or_else(|| io::Error::other("encryption buffer too small"))?;
            let index = self.first_chunk + c as u64;
            self.cipher
                .seal(index, last && c + 1 == chunks, chunk)
                .map_err(io::Error::other)?;
            disk = at + n + sse::TAG_LEN;
        }
        self.first_chunk += chunks as u64;
        Ok(Some((buf, disk)))
    }
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("id", &format_args!("{:032x}", self.id))
            .field("len", &self.len)
            .finish()
    }
}

impl Spool {
    pub fn create(inner: &Arc<Inner>) -> io::Result<Self> {
        let id = inner.ids.next();
        let mut direct = inner.direct_ok.load(Ordering::Relaxed);
        inner.fans.ensure(&inner.data, id, inner.config.fsync)?;
        let file = create_file(inner, &tmp_path(&inner.data, id), &mut direct)?;
        Ok(Self {
            inner: inner.clone(),
            id,
            file: Some(Arc::new(file)),
            stream: Some(inner.lanes.open()),
            md5: None,
            len: 0,
            buf: None,
            filled: 0,
            failed: None,
            direct,
            hint: 0,
            reserved: 0,
            crypt: None,
        })
    }

    /// Encrypt what is written from now on (nothing may have been written yet) with the data
    /// key `key`, in [`ferry_core::sse`]'s chunks: the file holds ciphertext, [`len`]
    /// (Self::len) and the staged size count plaintext, and the MD5 is the plaintext's.
    pub fn encrypt(&mut self, key: &[u8; 32]) {
        debug_assert_eq!(self.len(), 0, "encryption starts with the file");
        self.crypt = Some(Box::new(Crypt {
            cipher: sse::ObjectCipher::new(key),
            out: None,
            plain_in_out: 0,
            first_chunk: 0,
            plain_len: 0,
        }));
    }

    /// Write `data` at the end of the file, which holds `offset` bytes (at that offset: writes
    /// through the ring do not move the file position): its aligned part with
    /// `O_DIRECT` while the file is still direct (the memory, the offset and the length on
    /// [`ALIGN`] boundaries: pooled buffers of 64 KiB and more start on one, and full buffers
    /// keep the offset on one), the rest through the page cache, after which the file stays
    /// buffered.
    fn write_data(&mut self, mut offset: u64, mut data: &[u8]) -> io::Result<()> {
        let Some(file) = self.file.as_deref() else {
            return Err(io::Error::other("spool already finished"));
        };
        let file: &File = file;
        let counters = &self.inner.counters;
        while self.direct && !data.is_empty() {
            let aligned = (data.as_ptr() as usize).is_multiple_of(ALIGN)
                && offset.is_multiple_of(ALIGN as u64);
            let n = if aligned {
                data.len() / ALIGN * ALIGN
            } else {
                0
            };
            if n == 0 {
                set_direct(file, false)?;
                self.direct = false;
                break;
            }
            match file.write_at(&data[..n], offset) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(w) => {
                    counters.written(w, true);
                    offset += w as u64;
                    data = &data[w..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The device wants a larger alignment than `ALIGN`: go on buffered.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    set_direct(file, false)?;
                    self.direct = false;
                }
                Err(e) => return Err(e),
            }
        }
        if !data.is_empty() {
            file.write_all_at(data, offset)?;
            counters.written(data.len(), false);
        }
        Ok(())
    }

    /// Bytes written so far (of plaintext, when encrypting).
    pub fn len(&self) -> u64 {
        let written = match &self.crypt {
            Some(c) => c.plain_len,
            None => self.len,
        };
        written + self.filled as u64
    }

    /// MD5 of everything written; no write may follow. A write that fails here (the last
    /// buffered bytes) is reported by [`finish`](Self::finish).
    pub fn digest(&mut self) -> Md5Digest {
        if let Some(d) = self.md5 {
            return d;
        }
        if let Err(e) = self.flush_buf() {
            self.failed.get_or_insert(e);
        }
        let lanes = &self.inner.lanes;
        let d = match self
            .stream
            .take()
            .map(|s| off_cpu(&self.inner, || lanes.digest(s)))
        {
            Some(Ok(d)) => d,
            Some(Err(e)) => {
                self.failed.get_or_insert(lanes_err(e));
                Md5Digest::default()
            }
            None => Md5Digest::default(),
        };
        self.md5 = Some(d);
        d
    }

    fn stream(&self) -> io::Result<StreamId> {
        self.stream
            .ok_or_else(|| io::Error::other("spool written after its digest was taken"))
    }

    /// Queue `buf[..len]` in the lanes, write it to the file, then wait until it is hashed;
    /// returns with the buffer back in the pool.
    ///
    /// Queued *before* the write: while this thread writes the buffer (and, with `O_DIRECT`,
    /// sleeps until the device has it), other writers' buffers queue beside it, and whoever
    /// hashes next takes them all in one batch of lanes. Queued after the write, a buffer almost always found the
    /// lanes empty and was hashed alone (the profile showed only the one-lane path).
    fn hand_off(&mut self, buf: PooledBuf<'static>, len: usize) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let stream = self.stream()?;
        let buf = Arc::new(buf);
        self.lend(stream, &buf, len)?;
        // Hashed even if the write fails, so a digest taken afterwards is still right.
        if self.crypt.is_some() {
            let written = self.encrypt_and_write(buf.get(..len).unwrap_or_default());
            drop(buf);
            // The ciphertext went out of another buffer: the plaintext one can wait in the
            // lanes for a wider batch, as a write through the ring does (a batch costs the
            // same whatever its width; waiting for each buffer hashed them nearly alone).
            if self.drive_backlog() {
                let lanes = &self.inner.lanes;
                off_cpu(&self.inner, || lanes.wait_hashed(stream)).map_err(lanes_err)?;
            }
            return written;
        }
        let offset = self.len;
        self.len += len as u64;
        let written = self.write_data(offset, buf.get(..len).unwrap_or_default());
        drop(buf);
        let lanes = &self.inner.lanes;
        off_cpu(&self.inner, || lanes.wait_hashed(stream)).map_err(lanes_err)?;
        written
    }

    /// Encrypting: take `plain` into the chunk buffer and write the sealed buffer it
    /// completes, if any (the last chunk is sealed as such by `finish`).
    fn encrypt_and_write(&mut self, plain: &[u8]) -> io::Result<()> {
        let crypt = self
            .crypt
            .as_deref_mut()
            .ok_or_else(|| io::Error::other("not encrypting"))?;
        if let Some((out, n)) = crypt.absorb(plain)? {
            self.write_sealed(out, n)?;
        }
        Ok(())
    }

    /// Write sealed chunks at the end of the file.
    fn write_sealed(&mut self, out: PooledBuf<'static>, n: usize) -> io::Result<()> {
        let offset = self.len;
        self.len += n as u64;
        self.write_data(offset, out.get(..n).unwrap_or_default())
    }

    /// Whether `buf[..len]` can go out through the store's ring ([`start_ring`]
    /// (Self::start_ring)): the store has a usable ring, the file is still `O_DIRECT`, nothing
    /// waits in the gathering buffer, and memory, offset and length are on [`ALIGN`]
    /// boundaries (full pooled buffers are). Otherwise the buffer takes the blocking path
    /// ([`write_buf`](Self::write_buf)).
    pub fn ring_ready(&self, buf: &PooledBuf<'static>, len: usize) -> bool {
        // Encrypting, the ring writes the chunk buffers, which are full and aligned.
        let aligned = self.crypt.is_some()
            || (len.is_multiple_of(ALIGN) && (buf.as_ptr() as usize).is_multiple_of(ALIGN));
        self.direct
            && self.filled == 0
            && self.stream.is_some()
            && self.file.is_some()
            && self.inner.ring.as_ref().is_some_and(Ring::usable)
            && len > 0
            && len <= buf.len()
            && aligned
            && self.len.is_multiple_of(ALIGN as u64)
    }

    /// Append `buf[..len]` without blocking: queue it in the lanes and submit its `O_DIRECT`
    /// write through the ring; await the returned [`RingWrite`] before the next write. Only
    /// when [`ring_ready`](Self::ring_ready) said so.
    ///
    /// The chunk is not hashed here: it waits in the lanes until the writer's
    /// [`drive_backlog`](Self::drive_backlog) finds [`DEFER`] chunks of the stream queued (or
    /// its digest is asked for), so that the batch which hashes it holds the chunks other
    /// uploads queued meanwhile. Hashing each buffer as soon as it
    /// came gave batches of 2.5 streams, and a batch costs the same whatever its width.
    pub fn start_ring(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<RingWrite> {
        self.submit_ring(buf, len)
            .map_err(|e| self.inner.io_failed(e))
    }

    fn submit_ring(&mut self, buf: PooledBuf<'static>, len: usize) -> io::Result<RingWrite> {
        let stream = self.stream()?;
        let inner = self.inner.clone();
        let (Some(ring), Some(file)) = (inner.ring.as_ref(), self.file.clone()) else {
            return Err(io::Error::other("no ring for this write"));
        };
        let buf = Arc::new(buf);
        // The ring writes the buffer itself, or, encrypting, the sealed chunk buffer this
        // plaintext completes (if it completes one); the lanes get the plaintext either way.
        let out = match self.crypt.as_deref_mut() {
            None => Some((buf.clone(), len)),
            Some(crypt) => crypt
                .absorb(buf.get(..len).unwrap_or_default())?
                .map(|(out, n)| (Arc::new(out), n)),
        };
        self.lend(stream, &buf, len)?;
        let Some((out, n)) = out else {
            return Ok(RingWrite {
                inner,
                completion: None,
                len: 0,
            });
        };
        let offset = self.len;
        reserve(&file, &mut self.hint, &mut self.reserved, offset + n as u64)?;
        self.len += n as u64;
        let completion = ring.write(&file, out, n, offset)?;
        Ok(RingWrite {
            inner,
            completion: Some(completion),
            len: n,
        })
    }

    /// The length the body declares (a hint): writes through the ring then go into space
    /// allocated ahead of them, [`RESERVE`] at a time (see [`reserve`]).
    pub fn set_size_hint(&mut self, len: u64) {
        // Encrypting, the file is longer than the body by a tag per chunk.
        self.hint = match self.crypt {
            Some(_) => sse::disk_len(len),
            None => len,
        };
    }

    /// Once the stream has [`DEFER`] chunks queued, hash a batch of what is queued if nobody
    /// else is (call after each [`start_ring`](Self::start_ring)); whether it still has more than
    /// [`BACKLOG`] chunks (pooled buffers) waiting, in which case its writer should not
    /// receive more before they are hashed.
    pub fn drive_backlog(&self) -> bool {
        let Some(stream) = self.stream else {
            return false;
        };
        let lanes = &self.inner.lanes;
        if lanes.queued(stream).is_ok_and(|n| n >= DEFER) {
            lanes.try_drive();
        }
        lanes.queued(stream).is_ok_and(|n| n > BACKLOG)
    }

    /// Count `waited`, the time this write's task yielded while another thread's lane batch
    /// held its last chunks ([`try_digest`](Self::try_digest) answering `None`), with the
    /// store's other MD5 waits.
    pub fn md5_waited(&self, waited: std::time::Duration) {
        self.inner.counters.md5_wait.observe(waited);
    }

    /// The digest if it can be had without waiting for another thread: the stream's last
    /// chunks are hashed here if nobody is hashing; `None` while another thread's batch holds
    /// some of them (ask again after yielding), or while bytes wait in the gathering buffer
    /// (take [`digest`](Self::digest) on a blocking thread). No write may follow a `Some`.
    pub fn try_digest(&mut self) -> Option<Md5Digest> {
        if let Some(d) = self.md5 {
            return Some(d);
        }
        if self.filled > 0 {
            return None;
        }
        let stream = self.stream?;
        let lanes = &self.inner.lanes;
        let ready = lanes.finish(stream).and_then(|()| {
            lanes.try_drive();
            lanes.try_digest(stream)
        });
        let d = match ready {
            Ok(None) => return None,
            Ok(Some(d)) => d,
            Err(e) => {
                self.failed.get_or_insert(lanes_err(e));
                Md5Digest::default()
            }
        };
        self.stream = None;
        self.md5 = Some(d);
        Some(d)
    }

    /// Queue `buf[..len]` in the lanes as the stream's next chunk (the buffer is shared until
    /// it is hashed).
    fn lend(&self, stream: StreamId, buf: &Arc<PooledBuf<'static>>, len: usize) -> io::Result<()> {
        let chunk = Chunk {
            buf: buf.clone(),
            len,
        };
        self.inner.lanes.submit(stream, chunk).map_err(lanes_err)
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        if self.filled > 0
            && let Some(buf) = self.buf.take()
        {
            let n = std::mem::take(&mut self.filled);
            self.hand_off(buf, n)?;
        }
        Ok(())
    }

    /// The gathering buffer, with room.
    fn room(&mut self) -> io::Result<&mut [u8]> {
        if self.filled == COPY_BUF_SIZE {
            self.flush_buf()?;
        }
        let filled = self.filled;
        let buf = self
            .buf
            .get_or_insert_with(|| BufferPool::global().get(COPY_BUF_SIZE));
        Ok(buf.get_mut(filled..).unwrap_or_default())
    }

    /// Append `data` (copied into the gathering buffer).
    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.stream()?;
        while !data.is_empty() {
            let room = self.room()?;
            let n = room.len().min(data.len());
            room[..n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
        }
        Ok(())
    }

    /// Append `buf[..len]`, handing the buffer itself on (no copy): it is written, hashed, and
    /// goes back to the pool.
    pub fn write_buf(&mut self, buf: PooledBuf<'static>, len: usize) -> io::Result<()> {
        self.stream()?;
        self.flush_buf()?;
        let len = len.min(buf.len());
        self.hand_off(buf, len)
    }

    /// Append everything `r` yields until end of input, reading straight into the buffer.
    pub fn write_from(&mut self, r: &mut dyn Read) -> io::Result<u64> {
        self.stream()?;
        let mut total = 0u64;
        loop {
            let n = match r.read(self.room()?) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.filled += n;
            total += n as u64;
        }
    }

    /// Close the file and move it into the data directory: flush, trim the space allocated
    /// ahead, rename. The group commit that takes the returned [`Staged`] makes it durable
    /// ([`sync_data_files`]) before its metadata commit, so a crash at any point leaves
    /// either no object or a complete one.
    pub fn finish(mut self) -> io::Result<Staged> {
        let md5 = self.digest();
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let size = self.len();
        if let Some(crypt) = self.crypt.as_deref_mut()
            && let Some((out, n)) = crypt.seal(true)?
        {
            self.write_sealed(out, n)?;
        }
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("spool already finished"))?;
        let tmp = tmp_path(&self.inner.data, self.id);
        let result = (|| {
            // Space allocated ahead past the end (a body shorter than it declared is refused
            // before its commit; this keeps the file exact whatever the caller does).
            if self.reserved > self.len {
                file.set_len(self.len)?;
            }
            drop(file);
            fs::rename(&tmp, data_path(&self.inner.data, self.id))?;
            Ok(())
        })();
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            let _ = fs::remove_file(data_path(&self.inner.data, self.id));
            return Err(e);
        }
        Ok(Staged {
            inner: self.inner.clone(),
            id: self.id,
            size,
            md5,
            keep: false,
        })
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            let _ = self.inner.lanes.cancel(stream);
        }
        if self.file.take().is_some() {
            let _ = fs::remove_file(tmp_path(&self.inner.data, self.id));
        }
    }
}

/// A durable data file not yet referenced by committed metadata. Dropped without
/// [`Staged::keep`] (the metadata commit was refused), it deletes the file.
#[derive(Debug)]
pub(crate) struct Staged {
    inner: Arc<Inner>,
    pub id: FileId,
    pub size: u64,
    pub md5: Md5Digest,
    keep: bool,
}

impl Staged {
    /// The file is referenced now (or its fate is unknown until the metadata says); its id.
    pub fn keep(mut self) -> FileId {
        self.keep = true;
        self.id
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(data_path(&self.inner.data, self.id));
        }
    }
}

/// Open readers' files, which must not be deleted until the readers are done.
///
/// A reader pins the files of the record it read while holding the lock across its metadata
/// read; a writer decides, under the same lock and after its commit, which retired files it may
/// delete now and which wait for their last reader. So a reader either sees the new record or
/// has pinned the old files before the writer looks.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    counts: HashMap<FileId, u32>,
    doomed: HashSet<FileId>,
}

impl Pins {
    pub fn lock(m: &Mutex<Pins>) -> MutexGuard<'_, Pins> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn pin(&mut self, ids: &[FileId]) {
        for &id in ids {
            *self.counts.entry(id).or_insert(0) += 1;
        }
    }

    /// Unpin `ids`; returns those that were retired meanwhile and are free to delete now.
    fn unpin(&mut self, ids: &[FileId]) -> Vec<FileId> {
        let mut free = Vec::new();
        for id in ids {
            if let Some(c) = self.counts.get_mut(id) {
                *c -= 1;
                if *c == 0 {
                    self.counts.remove(id);
                    if self.doomed.remove(id) {
                        free.push(*id);
                    }
                }
            }
        }
        free
    }

    /// Retire `ids`: returns those nobody reads (delete them now); the rest wait for their readers.
    fn retire(&mut self, ids: &[FileId]) -> Vec<FileId> {
        let mut free = Vec::with_capacity(ids.len());
        for &id in ids {
            if self.counts.contains_key(&id) {
                self.doomed.insert(id);
            } else {
                free.push(id);
            }
        }
        free
    }

    /// Retired files still waiting for their last reader.
    pub fn pending(&self) -> usize {
        self.doomed.len()
    }

    #[cfg(test)]
    pub fn is_idle(&self) -> bool {
        self.counts.is_empty() && self.doomed.is_empty()
    }
}

/// Keeps a reader's files from being deleted until dropped.
pub(crate) struct PinGuard {
    pub inner: Arc<Inner>,
    pub ids: Vec<FileId>,
}

impl PinGuard {
    /// Wrap ids already pinned (under the pins lock) by the caller.
    pub fn new(inner: Arc<Inner>, ids: Vec<FileId>) -> Self {
        Self { inner, ids }
    }
}

impl std::fmt::Debug for PinGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinGuard")
            .field("files", &self.ids.len())
            .finish()
    }
}

/// Data files a released reader was the last to pin (retired while it read them): deleting
/// them is file-system work, for a blocking thread ([`Unpinned::remove`]).
pub(crate) struct Unpinned {
    inner: Arc<Inner>,
    free: Vec<FileId>,
}

impl Unpinned {
    /// Delete the files.
    pub fn remove(self) {
        remove_files(&self.inner.data, &self.free);
    }
}

impl PinGuard {
    /// Unpin now, without deleting anything here: what is left to delete, if anything, is
    /// returned. Unpinning is a short lock, fine on a runtime thread, so a reader that pinned
    /// nothing retired (nearly always) costs no trip to the blocking pool.
    pub fn release(mut self) -> Option<Unpinned> {
        let ids = std::mem::take(&mut self.ids);
        let free = Pins::lock(&self.inner.pins).unpin(&ids);
        self.inner.counters.files(0, free.len());
        (!free.is_empty()).then(|| Unpinned {
            inner: self.inner.clone(),
            free,
        })
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        if self.ids.is_empty() {
            // Released already (`release`): nothing left to unpin, no lock to take.
            return;
        }
        let free = Pins::lock(&self.inner.pins).unpin(&self.ids);
        self.inner.counters.files(0, free.len());
        remove_files(&self.inner.data, &free);
    }
}

impl Inner {
    /// Delete data files no committed record references any more (after the commit that
    /// dropped them), as soon as no reader has them open.
    pub(crate) fn retire(&self, ids: &[FileId]) {
        if ids.is_empty() {
            return;
        }
        let free = Pins::lock(&self.pins).retire(ids);
        self.counters.files(ids.len(), free.len());
        remove_files(&self.data, &free);
    }
}

/// Best effort: a file left behind (crash, I/O error) is unreferenced and goes at the next open.
pub(crate) fn remove_files(data: &Path, ids: &[FileId]) {
    for &id in ids {
        let _ = fs::remove_file(data_path(data, id));
    }
}

/// What [`cleanup`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanupReport {
    /// Temp files of interrupted writes.
    pub temp_files: u64,
    /// Data files no committed metadata referenced.
    pub orphan_files: u64,
}

/// Delete every temp file and every data file not in `referenced`; record the fan-out
/// directories there are in `fans`.
pub(crate) fn cleanup(
    tmp: &Path,
    data: &Path,
    referenced: &HashSet<FileId>,
    fans: &FanDirs,
) -> io::Result<CleanupReport> {
    let mut report = CleanupReport::default();
    let old_temps = match fs::read_dir(tmp) {
        Ok(entries) => Some(entries),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    for entry in old_temps.into_iter().flatten() {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::remove_file(entry.path())?;
            report.temp_files += 1;
        }
    }
    for fan in fs::read_dir(data)? {
        let fan = fan?;
        if !fan.file_type()?.is_dir() {
            continue;
        }
        if let Some(name) = fan.file_name().to_str() {
            fans.mark(name);
        }
        for entry in fs::read_dir(fan.path())? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            if entry.path().extension().is_some_and(|e| e == "tmp") {
                fs::remove_file(entry.path())?;
                report.temp_files += 1;
                continue;
            }
            let keep = entry
                .file_name()
                .to_str()
                .filter(|n| n.len() == 32)
                .and_then(|n| u128::from_str_radix(n, 16).ok())
                .is_some_and(|id| referenced.contains(&id));
            if !keep {
                fs::remove_file(entry.path())?;
                report.orphan_files += 1;
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retire_waits_for_the_last_reader() {
        let mut p = Pins::default();
        p.pin(&[1, 2]);
        p.pin(&[2]);
        // 1 and 2 are read; 3 is not.
        assert_eq!(p.retire(&[1, 2, 3]), vec![3]);
        assert_eq!(p.unpin(&[1, 2]), vec![1]);
        assert_eq!(p.unpin(&[2]), vec![2]);
        assert!(p.is_idle());
    }

    #[test]
    fn unpinning_a_live_file_frees_nothing() {
        let mut p = Pins::default();
        p.pin(&[7]);
        assert!(p.unpin(&[7]).is_empty());
        assert!(p.is_idle());
    }

    #[test]
    fn paths_fan_out_by_low_byte() {
        let id: FileId = (0xdead_beef << 64) | 0x1_2345;
        let p = data_path(Path::new("/d"), id);
        assert_eq!(
            p,
            Path::new("/d/45/00000000deadbeef0000000000012345").to_path_buf()
        );
    }
}
