//! Streaming a verified request body into the store through pooled buffers.
//!
//! A body is read with `next_chunk` (borrowed from the connection buffer), decoded by the
//! request's [`BodyVerifier`] into a pooled 256 KiB buffer, and each full buffer is handed
//! with the store writer to [`Runtime::unblock`]: on a blocking thread the buffer itself
//! (no copy) is written to the data file and hashed in the store's MD5 lanes, beside other
//! uploads' buffers, then goes back to the pool. While one buffer is being written the next
//! is filled from the network, so a request holds two buffers at most, whatever the object's
//! size.

use ferry_core::http::server::BodyReader;
use ferry_core::md5::Md5Digest;
use ferry_core::pool::{BufferPool, PooledBuf};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyDigests, BodyVerifier, VerifiedBody};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use crate::store::{COPY_BUF_SIZE, ObjectWriter, PartWriter};

/// Where streamed body bytes go: the store's object and part writers.
pub(crate) trait Sink: Send + 'static {
    /// Append `buf[..len]`; the buffer is the sink's (written, hashed, back to the pool).
    fn put(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()>;

    /// MD5 of everything appended (the store computes it for the ETag); ends the appending.
    fn md5(&mut self) -> Md5Digest;
}

impl Sink for ObjectWriter {
    fn put(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()> {
        self.write_buf(buf, len)
    }

    fn md5(&mut self) -> Md5Digest {
        self.digest()
    }
}

impl Sink for PartWriter {
    fn put(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()> {
        self.write_buf(buf, len)
    }

    fn md5(&mut self) -> Md5Digest {
        self.digest()
    }
}

/// The sink and the digests, travelling together to the blocking pool and back.
type Job<W> = (W, BodyDigests, S3Result<()>);

/// A full buffer on its way to the store: written and hashed on a blocking thread.
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

/// Start writing a buffer on the blocking pool (`None` in, `None` out: names the future's type
/// before the first buffer is full).
fn unblock_write<R: Runtime, W: Sink>(
    rt: &R,
    job: Option<(W, BodyDigests, PooledBuf<'static>, usize)>,
) -> Option<impl Future<Output = Job<W>> + Send + 'static> {
    job.map(|(w, d, b, n)| rt.unblock(write_job(w, d, b, n)))
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
    sink: W,
) -> S3Result<(W, VerifiedBody)> {
    let mut verifier = verifier.with_external_md5();
    let pool = BufferPool::global();
    let mut cur = pool.get(COPY_BUF_SIZE);
    let mut filled = 0usize;
    // The sink and digests are here or travelling with a buffer in `inflight`.
    let digests = verifier
        .take_digests()
        .ok_or_else(|| internal("body digests missing"))?;
    let mut idle = Some((sink, digests));
    let mut inflight = unblock_write::<R, W>(rt, None);

    // Hand the filled buffer to the blocking pool after the previous one came back.
    macro_rules! flush {
        () => {{
            if let Some(job) = inflight.take() {
                let (w, d, r) = job.await;
                r?;
                idle = Some((w, d));
            }
            if filled > 0 {
                let (w, d) = idle.take().ok_or_else(|| internal("body sink lost"))?;
                // The full buffer goes with the job; the pool has the one hashed before it.
                let full = std::mem::replace(&mut cur, pool.get(COPY_BUF_SIZE));
                inflight = unblock_write(rt, Some((w, d, full, filled)));
                filled = 0;
            }
        }};
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
    debug_assert_eq!(filled, 0, "every decoded byte was handed to the sink");
    // The last buffer: wait for it too.
    if let Some(job) = inflight {
        let (w, d, r) = job.await;
        r?;
        idle = Some((w, d));
    }
    let (mut sink, digests) = idle.ok_or_else(|| internal("body sink lost"))?;
    verifier.restore_digests(digests);
    // Every buffer was hashed in its job: this only finalizes (no wait, no hashing here).
    let done = verifier.finish_with_md5(&sink.md5())?;
    Ok((sink, done))
}
