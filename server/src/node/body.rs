//! Streaming a verified request body into the store through pooled buffers.
//!
//! A body is read with `next_chunk` (borrowed from the connection buffer), decoded by the
//! request's [`BodyVerifier`] into a pooled 256 KiB buffer, and each full buffer goes to the
//! data file without a copy:
//! - through the store's `io_uring` ([`Spool::start_ring`]): this task submits the `O_DIRECT`
//!   write and queues the buffer in the store's MD5 lanes, where it waits for other uploads'
//!   buffers to be hashed beside them; no thread hand-off;
//! - otherwise (no ring, a file system without `O_DIRECT`, an unaligned tail) on a blocking
//!   thread ([`Runtime::unblock`]), written and hashed there.
//!
//! While one buffer is being written the next is filled from the network. A request holds
//! at most the buffer it fills, the one being written, and the ones waiting in the lanes
//! (a bounded number: see `Spool::drive_backlog`), whatever the object's size.

use std::future::poll_fn;
use std::task::Poll;

use ferry_core::http::server::BodyReader;
use ferry_core::pool::{BufferPool, PooledBuf};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyDigests, BodyVerifier, VerifiedBody};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use crate::store::{COPY_BUF_SIZE, ObjectWriter, PartWriter, RingWrite, Spool};

/// Where streamed body bytes go: the store's object and part writers.
pub(crate) trait Sink: Send + 'static {
    /// Append `buf[..len]` on a blocking thread; the buffer is the sink's (written, hashed,
    /// back to the pool).
    fn put(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()>;

    /// The temp file being written (for writes through the ring and the digest).
    fn spool(&mut self) -> &mut Spool;
}

impl Sink for ObjectWriter {
    fn put(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()> {
        self.write_buf(buf, len)
    }

    fn spool(&mut self) -> &mut Spool {
        ObjectWriter::spool(self)
    }
}

impl Sink for PartWriter {
    fn put(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()> {
        self.write_buf(buf, len)
    }

    fn spool(&mut self) -> &mut Spool {
        PartWriter::spool(self)
    }
}

/// The sink and the digests, travelling together to the blocking pool and back.
type Job<W> = (W, BodyDigests, S3Result<()>);

/// A full buffer on its way to the store on a blocking thread: written and hashed there.
fn write_job<W: Sink>(
    mut sink: W,
    mut digests: BodyDigests,
    buf: PooledBuf<'static>,
    len: usize,
) -> impl FnOnce() -> Job<W> + Send + 'static {
    move || {
        digests.update(buf.get(..len).unwrap_or_default());
        let r = sink.put(buf, len);
        (sink, digests, r)
    }
}

/// The write of the previous buffer, being done.
enum Inflight<F> {
    /// On a blocking thread, which has the sink and digests meanwhile.
    Pool(F),
    /// In the ring; the sink and digests stayed here.
    Ring(RingWrite),
}

/// Let the runtime run other tasks once (another thread is hashing this upload's chunks).
async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

fn internal(what: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, what)
}

/// Stream the whole body into `sink` through `verifier`; returns the sink for commit, with
/// the proof that the body checked out (`Content-MD5` is checked against the sink's MD5).
///
/// Nothing is committed here: the caller commits only with the [`VerifiedBody`], so a body
/// that fails a check (signature, checksum, length) leaves no object behind.
pub(crate) async fn stream_into<R: Runtime, S: Stream, W: Sink>(
    rt: &R,
    body: &mut BodyReader<'_, S>,
    verifier: BodyVerifier,
    mut sink: W,
) -> S3Result<(W, VerifiedBody)> {
    let mut verifier = verifier.with_external_md5();
    let pool = BufferPool::global();
    let mut cur = pool.get(COPY_BUF_SIZE);
    let mut filled = 0usize;
    // The sink and digests are here or travelling with a buffer in `inflight`.
    let digests = verifier
        .take_digests()
        .ok_or_else(|| internal("body digests missing"))?;
    if let Some(n) = verifier.declared_len() {
        sink.spool().set_size_hint(n);
    }
    let mut idle = Some((sink, digests));
    let mut inflight = None;

    // Wait for the previous buffer's write, then start the filled one's (through the ring if
    // it can go there, else on the blocking pool).
    macro_rules! wait_inflight {
        () => {{
            match inflight.take() {
                Some(Inflight::Pool(job)) => {
                    let (w, d, r) = job.await;
                    r?;
                    idle = Some((w, d));
                }
                Some(Inflight::Ring(write)) => write.await?,
                None => {}
            }
        }};
    }
    macro_rules! flush {
        () => {{
            wait_inflight!();
            if filled > 0 {
                let (mut w, mut d) = idle.take().ok_or_else(|| internal("body sink lost"))?;
                let n = std::mem::take(&mut filled);
                // The full buffer goes to the file; the pool has the one written before it.
                let full = std::mem::replace(&mut cur, pool.get(COPY_BUF_SIZE));
                if w.spool().ring_ready(&full, n) {
                    d.update(full.get(..n).unwrap_or_default());
                    inflight = Some(Inflight::Ring(w.spool().start_ring(full, n)?));
                    // Hash once four chunks wait; receive no more while too many do.
                    while w.spool().drive_backlog() {
                        yield_now().await;
                    }
                    idle = Some((w, d));
                } else {
                    inflight = Some(Inflight::Pool(rt.unblock(write_job(w, d, full, n))));
                }
            }
        }};
    }

    // A plain body is read from the socket straight into the buffer, with nothing to decode.
    while !verifier.is_aws_chunked() {
        if filled == cur.len() {
            flush!();
        }
        let n = body
            .read_direct(cur.get_mut(filled..).unwrap_or_default())
            .await?;
        if n == 0 {
            break;
        }
        let step = verifier.feed(cur.get(filled..filled + n).unwrap_or_default())?;
        if (step.consumed, step.data.len()) != (n, n) {
            return Err(internal("a plain body decoded to other bytes"));
        }
        filled += n;
    }
    while let Some(chunk) = body.next_chunk().await? {
        let mut pos = 0;
        while pos < chunk.len() {
            let room = cur.len() - filled;
            if room == 0 {
                flush!();
                continue;
            }
            // Decoded data is a slice of the input: at most `room` bytes of input never
            // decode to more than fit.
            let rest = chunk.get(pos..).unwrap_or_default();
            let input = rest.get(..rest.len().min(room)).unwrap_or_default();
            let step = verifier.feed(input)?;
            let dst = cur
                .get_mut(filled..filled + step.data.len())
                .ok_or_else(|| internal("decoded chunk larger than the buffer"))?;
            dst.copy_from_slice(step.data);
            filled += step.data.len();
            pos += step.consumed;
        }
    }
    flush!();
    // The last buffer: wait for it too.
    wait_inflight!();
    debug_assert_eq!(filled, 0, "every decoded byte was handed to the sink");
    let (mut sink, digests) = idle.ok_or_else(|| internal("body sink lost"))?;
    verifier.restore_digests(digests);
    // Chunks still waiting in the lanes are hashed here, unless another thread's batch holds
    // them: that batch is back within a few milliseconds.
    let mut waiting = None;
    let md5 = loop {
        if let Some(d) = sink.spool().try_digest() {
            if let Some(since) = waiting {
                sink.spool().md5_waited(std::time::Instant::elapsed(&since));
            }
            break d;
        }
        waiting.get_or_insert_with(std::time::Instant::now);
        yield_now().await;
    };
    let done = verifier.finish_with_md5(&md5)?;
    Ok((sink, done))
}
