//! Request bodies: decoding (plain or aws-chunked), integrity checks, and streaming into the
//! store through pooled buffers.
//!
//! A body is read with `next_chunk` (borrowed from the connection buffer), decoded into a
//! pooled 256 KiB buffer, and each full buffer is handed with the store writer to
//! [`Runtime::unblock`], which writes it and updates the running checksums off the reactor.
//! While one buffer is being written the next is filled from the network, so a request holds
//! two buffers at most, whatever the object's size.

use ferry_core::http::Header;
use ferry_core::http::body::BodyKind;
use ferry_core::http::find_header;
use ferry_core::http::server::BodyReader;
use ferry_core::pool::{BufferPool, PooledBuf};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::checksum::{
    Checksum, ChecksumAlgorithm, Checksummer, checksum_header, requested_algorithm,
};
use ferry_core::s3::sigv4::aws_chunked::AwsChunkedDecoder;
use ferry_core::s3::sigv4::{PayloadHash, VerifiedRequest};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use sha2::Digest as _;

use crate::store::{COPY_BUF_SIZE, ObjectWriter, PartWriter};

/// The largest object (and part) S3 accepts in one PUT: 5 GiB.
pub(crate) const MAX_OBJECT_SIZE: u64 = 5 << 30;

/// Where streamed body bytes go: the store's object and part writers.
pub(crate) trait Sink: Send + 'static {
    /// Append `data`.
    fn put(&mut self, data: &[u8]) -> S3Result<()>;
}

impl Sink for ObjectWriter {
    fn put(&mut self, data: &[u8]) -> S3Result<()> {
        self.write(data)
    }
}

impl Sink for PartWriter {
    fn put(&mut self, data: &[u8]) -> S3Result<()> {
        self.write(data)
    }
}

/// What to check and compute while a body streams, decided from the (verified) request.
#[derive(Debug)]
pub(crate) struct BodyPlan {
    /// The aws-chunked decoder, for `STREAMING-*` payloads (boxed: it holds a line buffer).
    decoder: Option<Box<AwsChunkedDecoder>>,
    /// Running digests, moved with each buffer to the blocking pool.
    digests: Digests,
    /// The `x-amz-checksum-*` header value the body must match.
    expected_checksum: Option<Checksum>,
}

/// Hashes over the decoded body.
#[derive(Debug)]
struct Digests {
    /// SHA-256, with the value `x-amz-content-sha256` promised.
    sha256: Option<(sha2::Sha256, [u8; 32])>,
    /// The checksum named by a header or requested by algorithm (not a trailer's: the
    /// aws-chunked decoder checks that one).
    checksum: Option<Checksummer>,
}

impl Digests {
    fn empty() -> Self {
        Self {
            sha256: None,
            checksum: None,
        }
    }

    fn update(&mut self, data: &[u8]) {
        if let Some((h, _)) = &mut self.sha256 {
            h.update(data);
        }
        if let Some(c) = &mut self.checksum {
            c.update(data);
        }
    }
}

/// A body that was read to its end and checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyDone {
    /// The checksum to store with the object: a verified header or trailer value, or one
    /// computed for `x-amz-checksum-algorithm`.
    pub checksum: Option<Checksum>,
}

impl BodyPlan {
    /// The plan for a request's body: aws-chunked for `STREAMING-*` payloads, a SHA-256 check
    /// for a hex `x-amz-content-sha256`, the `x-amz-checksum-*` header, and the checksum
    /// `x-amz-checksum-algorithm` asks the server to compute.
    pub(crate) fn new(headers: &[Header<'_>], verified: &VerifiedRequest) -> S3Result<Self> {
        let decoder = match verified.payload {
            PayloadHash::Streaming(_) => {
                let d = AwsChunkedDecoder::from_request(headers, Some(verified))?;
                let declared = find_header(headers, "x-amz-decoded-content-length")
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                if declared.is_some_and(|n| n > MAX_OBJECT_SIZE) {
                    return Err(S3Error::new(S3ErrorCode::EntityTooLarge));
                }
                Some(Box::new(d))
            }
            _ => None,
        };
        let sha256 = match verified.payload {
            PayloadHash::Sha256(want) => Some((sha2::Sha256::new(), want)),
            _ => None,
        };
        let expected_checksum = checksum_header(headers)?;
        let trailer = find_header(headers, "x-amz-trailer").is_some() && decoder.is_some();
        let algorithm = match (expected_checksum, trailer) {
            (Some(c), _) => Some(c.algorithm()),
            (None, true) => None,
            (None, false) => requested_algorithm(headers)?,
        };
        Ok(Self {
            decoder,
            digests: Digests {
                sha256,
                checksum: algorithm.map(ChecksumAlgorithm::hasher),
            },
            expected_checksum,
        })
    }

    /// Finish the checks once every byte went through [`Digests`].
    fn finish(self, digests: Digests) -> S3Result<BodyDone> {
        if let Some((h, want)) = digests.sha256 {
            let got: [u8; 32] = h.finalize().into();
            if got != want {
                return Err(S3Error::new(S3ErrorCode::XAmzContentSHA256Mismatch));
            }
        }
        let computed = digests.checksum.map(Checksummer::finalize);
        if let (Some(want), Some(got)) = (self.expected_checksum, computed)
            && want != got
        {
            return Err(S3Error::with_message(
                S3ErrorCode::BadDigest,
                format!(
                    "The {} you specified did not match the calculated checksum.",
                    want.algorithm().header_name()
                ),
            ));
        }
        let trailer = self.decoder.as_ref().and_then(|d| d.checksum());
        Ok(BodyDone {
            checksum: trailer.or(computed),
        })
    }
}

/// `MissingContentLength` for a write that has no body framing at all (S3 wants a length).
pub(crate) fn require_length<S: Stream>(body: &BodyReader<'_, S>) -> S3Result<()> {
    if body.kind() == BodyKind::None {
        return Err(S3Error::new(S3ErrorCode::MissingContentLength));
    }
    Ok(())
}

/// A full buffer on its way to the store: written and hashed on a blocking thread.
fn write_job<W: Sink>(
    mut sink: W,
    mut digests: Digests,
    buf: PooledBuf<'static>,
    len: usize,
) -> impl FnOnce() -> (W, Digests, PooledBuf<'static>, S3Result<()>) + Send + 'static {
    move || {
        let data = buf.get(..len).unwrap_or_default();
        digests.update(data);
        let r = sink.put(data);
        (sink, digests, buf, r)
    }
}

/// Start writing a buffer on the blocking pool (`None` in, `None` out: names the future's type
/// before the first buffer is full).
fn unblock_write<R: Runtime, W: Sink>(
    rt: &R,
    job: Option<(W, Digests, PooledBuf<'static>, usize)>,
) -> Option<impl Future<Output = (W, Digests, PooledBuf<'static>, S3Result<()>)> + Send + 'static> {
    job.map(|(w, d, b, n)| rt.unblock(write_job(w, d, b, n)))
}

fn internal(what: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, what)
}

fn trailing_data() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "data after the end of the aws-chunked body",
    )
}

/// Stream the whole body into `sink`, decoding and checking it; returns the sink for commit.
///
/// Nothing is committed here: the caller commits only after this returned `Ok`, so a body that
/// fails a check (signature, checksum, length) leaves no object behind.
pub(crate) async fn stream_into<R: Runtime, S: Stream, W: Sink>(
    rt: &R,
    body: &mut BodyReader<'_, S>,
    mut plan: BodyPlan,
    sink: W,
) -> S3Result<(W, BodyDone)> {
    if plan.decoder.is_none() && body.content_length().is_some_and(|n| n > MAX_OBJECT_SIZE) {
        return Err(S3Error::new(S3ErrorCode::EntityTooLarge));
    }
    let pool = BufferPool::global();
    let mut cur = pool.get(COPY_BUF_SIZE);
    let mut filled = 0usize;
    let mut total = 0u64;
    // The sink and digests are here or travelling with a buffer in `inflight`.
    let mut idle = Some((sink, std::mem::replace(&mut plan.digests, Digests::empty())));
    let mut spare: Option<PooledBuf<'static>> = None;
    let mut inflight = unblock_write::<R, W>(rt, None);
    let mut decoder = plan.decoder.take();

    // Hand the filled buffer to the blocking pool after the previous one came back.
    macro_rules! flush {
        () => {{
            if let Some(job) = inflight.take() {
                let (w, d, b, r) = job.await;
                r?;
                idle = Some((w, d));
                spare = Some(b);
            }
            if filled > 0 {
                let (w, d) = idle.take().ok_or_else(|| internal("body sink lost"))?;
                let next = spare.take().unwrap_or_else(|| pool.get(COPY_BUF_SIZE));
                let full = std::mem::replace(&mut cur, next);
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
            let rest = chunk.get(pos..).unwrap_or_default();
            let (data, used) = match decoder.as_deref_mut() {
                None => {
                    let n = rest.len().min(room);
                    (rest.get(..n).unwrap_or_default(), n)
                }
                Some(d) => {
                    if d.is_done() {
                        return Err(trailing_data());
                    }
                    // Decoded data is a slice of the input: at most `room` bytes of input
                    // never decode to more than fit.
                    let input = rest.get(..rest.len().min(room)).unwrap_or_default();
                    let step = d.decode(input)?;
                    if step.done && step.consumed < rest.len() {
                        return Err(trailing_data());
                    }
                    (step.data, step.consumed)
                }
            };
            if used == 0 && data.is_empty() {
                // The decoder always consumes non-empty input; never spin if it did not.
                return Err(internal("aws-chunked decoding made no progress"));
            }
            let dst = cur
                .get_mut(filled..filled + data.len())
                .ok_or_else(|| internal("decoded chunk larger than the buffer"))?;
            dst.copy_from_slice(data);
            filled += data.len();
            total += data.len() as u64;
            pos += used;
            if total > MAX_OBJECT_SIZE {
                return Err(S3Error::new(S3ErrorCode::EntityTooLarge));
            }
        }
    }
    if let Some(d) = decoder.as_deref_mut()
        && !d.is_done()
    {
        d.finish()?;
    }
    flush!();
    debug_assert_eq!(filled, 0, "every decoded byte was handed to the sink");
    // The last buffer: wait for it too.
    if let Some(job) = inflight {
        let (w, d, _, r) = job.await;
        r?;
        idle = Some((w, d));
    }
    let (sink, digests) = idle.ok_or_else(|| internal("body sink lost"))?;
    plan.decoder = decoder;
    let done = plan.finish(digests)?;
    Ok((sink, done))
}

/// Read a small body (an XML document) whole, decoded and checked, refusing more than `max`
/// bytes with `error`.
pub(crate) async fn read_small<S: Stream>(
    body: &mut BodyReader<'_, S>,
    mut plan: BodyPlan,
    max: usize,
    too_large: S3Error,
) -> S3Result<(Vec<u8>, BodyDone)> {
    let mut out = Vec::new();
    let mut decoder = plan.decoder.take();
    while let Some(chunk) = body.next_chunk().await? {
        match decoder.as_deref_mut() {
            None => out.extend_from_slice(chunk),
            Some(d) => {
                if d.is_done() {
                    return Err(trailing_data());
                }
                let used = d.decode_into(chunk, &mut out)?;
                if used < chunk.len() {
                    return Err(trailing_data());
                }
            }
        }
        if out.len() > max {
            return Err(too_large);
        }
    }
    if let Some(d) = decoder.as_deref_mut()
        && !d.is_done()
    {
        d.finish()?;
    }
    let mut digests = std::mem::replace(&mut plan.digests, Digests::empty());
    digests.update(&out);
    plan.decoder = decoder;
    let done = plan.finish(digests)?;
    Ok((out, done))
}
