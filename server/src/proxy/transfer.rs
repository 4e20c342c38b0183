//! One object, or one part of one, copied from a backend to another by the proxy: a GET on
//! the backend it is on streamed into a PUT (or an UploadPart) on the other, one connection
//! buffer at a time (memory does not grow with the object). The client's cross-backend copies
//! (`copy`: CopyObject, UploadPartCopy) and the rebalance's moves (`rebalance::mover`) are
//! this one mechanism, [`transfer`]; what differs between them is data: what is read
//! ([`Read`]: the version, a range or a part, the read's own headers), what of the source goes
//! with the write ([`Keep`]), the write's own headers and framing ([`Write`]: the client's, or
//! placement, grants and `If-None-Match`), and what each chunk passes on its way ([`Meter`]).
//!
//! The rules, the same for both:
//! - a source that does not give the object answers the caller (its status, and at most
//!   64 KiB of its body: [`Transfer::Refused`]); a copy's source range must lie within the
//!   source (UploadPartCopy's rule, stricter than a GET's);
//! - the source's full-object checksum goes with the write, which the destination checks the
//!   bytes against and stores (a composite one describes the source's parts, not a copy); a
//!   part's goes with its UploadPart;
//! - a write that asks for object lock carries an integrity check, as S3 wants of a PUT that
//!   does: the source's checksum, and its MD5 when its ETag is one (a whole object, not SSE-C
//!   or SSE-KMS); the source's own lock, when kept, goes with the write only with such a
//!   check, else the caller sets it after ([`Written::lock_later`]);
//! - both requests are signed as the caller (`sign::sign_as`, which seals what carries the
//!   cluster's headers) and tell the backends who the caller is.

use std::borrow::Cow;

use ferry_core::http::body::BodyKind;
use ferry_core::http::client::ResponseBody;
use ferry_core::http::{EMPTY_HEADER, Header, find_header, find_header_str};
use ferry_core::md5::{Md5Digest, content_md5};
use ferry_core::pool::BufferPool;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{Reframer, VerifiedBody};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::header;
use ferry_core::s3::outbound::{OutHeader, OutboundRequest};
use ferry_core::s3::range::CopySourceRange;
use ferry_core::s3::sigv4::aws_chunked::AwsChunkedEncoder;
use ferry_core::s3::sigv4::{
    EMPTY_SHA256, STREAMING_UNSIGNED_PAYLOAD_TRAILER, StreamingMode, UNSIGNED_PAYLOAD,
};
use ferry_core::s3::uri;
use ferry_core::s3::validate::ContentHeaders;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;

use super::backend::Backend;
use super::client::{Client, object_path};
use super::forward::Reply;
use super::sign::sign_as;

/// Response header fields read per backend response.
const MAX_HEADERS: usize = 128;

/// The most of a source's error body kept.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Whether a header is one of an object's own, which travel with it (CopyObject with the COPY
/// directive keeps the source's, REPLACE takes the request's): its content headers and user
/// metadata.
pub(crate) fn is_object_header(name: &str) -> bool {
    ContentHeaders::NAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
        || starts_with_ignore_case(name, header::X_AMZ_META_PREFIX)
}

/// Whether a header is one of a request's encryption headers (`x-amz-server-side-encryption`
/// and its `-customer-*`, `-aws-kms-key-id`, `-context`, `-bucket-key-enabled`).
pub(crate) fn is_encryption_header(name: &str) -> bool {
    starts_with_ignore_case(name, header::X_AMZ_SSE)
}

pub(crate) fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// Whether a GET's response says the object's ETag is its MD5: not for SSE-C or SSE-KMS
/// objects (AWS: their ETags are not MD5 digests).
pub(crate) fn etag_is_md5(headers: &[Header<'_>]) -> bool {
    find_header(headers, header::X_AMZ_SSE_CUSTOMER_ALGORITHM).is_none()
        && !find_header_str(headers, header::X_AMZ_SSE)
            .is_some_and(|v| starts_with_ignore_case(v.trim(), "aws:kms"))
}

/// The MD5 an ETag is, when it is one (32 hex digits, quoted or not: not a multipart ETag).
pub(crate) fn etag_md5(etag: &str) -> Option<Md5Digest> {
    let hex = etag.trim().trim_matches('"');
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The error of a transfer whose backend failed mid-way.
fn failed(backend: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::ServiceUnavailable,
        format!("Backend {backend} failed during the copy; please retry."),
    )
}

/// `Content-Range: bytes a-b/total` → total.
fn range_total(value: &str) -> Option<u64> {
    value.rsplit_once('/')?.1.trim().parse().ok()
}

/// A version's object lock, as a GET or HEAD of it says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lock {
    /// `GOVERNANCE` or `COMPLIANCE`, and the header value of the date.
    pub retention: Option<(String, String)>,
    pub legal_hold: bool,
}

impl Lock {
    pub fn of(headers: &[Header<'_>]) -> Self {
        let retention = match (
            find_header_str(headers, header::X_AMZ_OBJECT_LOCK_MODE),
            find_header_str(headers, header::X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE),
        ) {
            (Some(m), Some(u)) => Some((m.trim().to_owned(), u.trim().to_owned())),
            _ => None,
        };
        let legal_hold = find_header_str(headers, header::X_AMZ_OBJECT_LOCK_LEGAL_HOLD)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("ON"));
        Self {
            retention,
            legal_hold,
        }
    }

    pub fn is_some(&self) -> bool {
        self.retention.is_some() || self.legal_hold
    }

    /// Whether COMPLIANCE retention keeps the version at `now`.
    pub fn compliance_until_after(&self, now: i64) -> bool {
        self.retention.as_ref().is_some_and(|(mode, until)| {
            mode.eq_ignore_ascii_case("COMPLIANCE")
                && DateTime::parse_iso8601(until).is_none_or(|d| d.to_unix() > now)
        })
    }

    pub fn governance(&self) -> bool {
        self.retention
            .as_ref()
            .is_some_and(|(mode, _)| mode.eq_ignore_ascii_case("GOVERNANCE"))
    }

    /// Its headers on a write.
    fn headers(&self) -> impl Iterator<Item = (&'static str, Vec<u8>)> + '_ {
        let retention = self.retention.iter().flat_map(|(mode, until)| {
            [
                (header::X_AMZ_OBJECT_LOCK_MODE, mode.as_bytes().to_vec()),
                (
                    header::X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE,
                    until.as_bytes().to_vec(),
                ),
            ]
        });
        let hold = self
            .legal_hold
            .then(|| (header::X_AMZ_OBJECT_LOCK_LEGAL_HOLD, b"ON".to_vec()));
        retention.chain(hold)
    }
}

/// What is read of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extent {
    /// The object.
    Whole,
    /// A copy's source range, which the source must hold whole.
    Range(CopySourceRange),
    /// Part `number` of a multipart object, its `last` or not (an empty last part selects no
    /// bytes: a Ferry node answers its read 416).
    Part { number: u32, last: bool },
}

/// The read of the source.
#[derive(Debug, Clone)]
pub(crate) struct Read<'a> {
    pub bucket: &'a str,
    pub key: &'a str,
    pub version: Option<&'a str>,
    pub extent: Extent,
    /// Its own headers: conditions, an SSE-C key, the encryption context's mode, the
    /// client's headers that a node's policy conditions see.
    pub headers: Vec<OutHeader<'a>>,
}

impl<'a> Read<'a> {
    /// The whole of `key` (`version`), with no headers of its own.
    pub fn whole(bucket: &'a str, key: &'a str, version: Option<&'a str>) -> Self {
        Self {
            bucket,
            key,
            version,
            extent: Extent::Whole,
            headers: Vec::new(),
        }
    }
}

/// Which checksum of the source goes with the write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum KeepChecksum {
    /// None.
    #[default]
    No,
    /// The object's, unless it is composite (of the source's parts).
    Object,
    /// The part's of `algorithm`; `required` by the upload (a COMPOSITE one, made of them).
    Part {
        algorithm: ChecksumAlgorithm,
        required: bool,
    },
}

/// What of the source goes with the write (read in checksum mode when a checksum does).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keep {
    /// Its content headers and user metadata.
    pub metadata: bool,
    pub checksum: KeepChecksum,
    /// Its mode of encryption and, for SSE-KMS, its key and context (never SSE-C's key,
    /// which the proxy does not have): the destination encrypts.
    pub encryption: bool,
    /// Its tags (GetObjectTagging, when the GET counts some).
    pub tags: bool,
    /// Its object lock.
    pub lock: bool,
}

/// What went of the source with a write ([`Keep::apply`]).
struct Kept {
    /// A part's checksum.
    checksum: Option<(ChecksumAlgorithm, String)>,
    /// The source's lock could not go (no integrity check).
    lock_later: bool,
}

impl Keep {
    /// The headers of a source's answer that go with a write of its copy, as `self` says:
    /// metadata and encryption (checksums, tags and the lock have their rules).
    pub fn headers<'h>(self, source: &'h [Header<'h>]) -> impl Iterator<Item = &'h Header<'h>> {
        source.iter().filter(move |h| {
            (self.metadata && is_object_header(h.name))
                || (self.encryption
                    && is_encryption_header(h.name)
                    && !h.name.to_ascii_lowercase().contains("-customer-"))
        })
    }

    /// The source's tags in the `x-amz-tagging` form, when they go with the write and its
    /// answer (`source`) counts some: GetObjectTagging on backend `from` (a GET carries only
    /// their count; tags changed since are the ones copied).
    pub async fn tags<R: Runtime>(
        self,
        client: &Client<'_, R>,
        from: usize,
        read: &Read<'_>,
        source: &[Header<'_>],
    ) -> S3Result<Option<String>> {
        let counted =
            find_header_str(source, header::X_AMZ_TAGGING_COUNT).is_some_and(|c| c.trim() != "0");
        if !(self.tags && counted) {
            return Ok(None);
        }
        let tags = client
            .tags(from, read.bucket, read.key, read.version)
            .await?;
        Ok(Some(tags))
    }

    /// Add to `put` what of the source (its answer's `headers`, read as `source`; an empty last
    /// part when `empty_part`; its `tags` when they go) goes with the write of `extent`, by the
    /// rules of the module comment.
    fn apply(
        self,
        put: &mut OutboundRequest<'_>,
        extent: Extent,
        (headers, source): (&[Header<'_>], &Source),
        empty_part: bool,
        tags: Option<String>,
    ) -> S3Result<Kept> {
        for h in self.headers(headers) {
            put.header(h.name.to_owned(), h.value.to_vec());
        }
        let composite = find_header_str(headers, header::X_AMZ_CHECKSUM_TYPE)
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("COMPOSITE"));
        let mut checksum_kept = false;
        let mut part_checksum = None;
        match self.checksum {
            KeepChecksum::No => {}
            KeepChecksum::Object if composite => {}
            KeepChecksum::Object => {
                let sums = headers
                    .iter()
                    .filter(|h| ChecksumAlgorithm::from_header_name(h.name).is_some());
                for h in sums {
                    put.header(h.name.to_owned(), h.value.to_vec());
                    checksum_kept = true;
                }
            }
            KeepChecksum::Part {
                algorithm,
                required,
            } => {
                let sum = if empty_part {
                    Some(algorithm.checksum(b"").to_base64().as_str().to_owned())
                } else {
                    find_header_str(headers, algorithm.header_name()).map(|v| v.trim().to_owned())
                };
                if required && sum.is_none() {
                    let n = match extent {
                        Extent::Part { number, .. } => number,
                        _ => 0,
                    };
                    return Err(S3Error::with_message(
                        S3ErrorCode::InternalError,
                        format!(
                            "part {n} of the source came without its {} checksum",
                            algorithm.as_str()
                        ),
                    ));
                }
                if let Some(v) = &sum {
                    put.header(algorithm.header_name(), v.as_bytes().to_vec());
                }
                part_checksum = sum.map(|v| (algorithm, v));
            }
        }
        if let Some(tags) = tags {
            put.header(header::X_AMZ_TAGGING, tags.into_bytes());
        }
        // The lock, with its integrity check.
        let mut asks_lock = put
            .headers
            .iter()
            .any(|(n, _)| starts_with_ignore_case(n, header::X_AMZ_OBJECT_LOCK_PREFIX));
        let mut lock_later = false;
        if self.lock && source.lock.is_some() {
            if source.md5.is_some() || checksum_kept {
                for (n, v) in source.lock.headers() {
                    put.header(n, v);
                }
                asks_lock = true;
            } else {
                lock_later = true;
            }
        }
        if asks_lock
            && extent == Extent::Whole
            && let Some(md5) = &source.md5
        {
            put.header("Content-MD5", content_md5(md5).as_str().as_bytes().to_vec());
        }
        Ok(Kept {
            checksum: part_checksum,
            lock_later,
        })
    }
}

/// The write of the copy.
#[derive(Debug, Clone)]
pub(crate) struct Write<'a> {
    /// Its path (encoded) and raw query.
    pub path: Cow<'a, str>,
    pub query: Cow<'a, str>,
    /// Its own headers (besides the source's that [`Keep`] says).
    pub headers: Vec<OutHeader<'a>>,
    pub framing: Framing,
}

impl<'a> Write<'a> {
    /// A PutObject of `key`, with `headers`, its body as it comes.
    pub fn object(bucket: &str, key: &str, headers: Vec<OutHeader<'a>>) -> Self {
        Self {
            path: object_path(bucket, key).into(),
            query: Cow::Borrowed(""),
            headers,
            framing: Framing::Plain,
        }
    }

    /// UploadPart `number` of `upload`, its body as it comes.
    pub fn part(bucket: &str, key: &str, upload: &str, number: u32) -> Self {
        Self {
            path: object_path(bucket, key).into(),
            query: format!("partNumber={number}&uploadId={}", uri::encode(upload)).into(),
            headers: Vec::new(),
            framing: Framing::Plain,
        }
    }
}

/// How a streamed write's body goes: as it comes, or aws-chunked in chunks of `chunk` bytes
/// with a checksum of `algorithm`, computed on the way, as its trailer (which the destination
/// checks and stores).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Framing {
    Plain,
    Trailer {
        algorithm: ChecksumAlgorithm,
        chunk: usize,
    },
}

impl Framing {
    /// The write's `x-amz-content-sha256` (what it is signed with).
    pub fn payload_hash(self) -> &'static str {
        match self {
            Framing::Plain => UNSIGNED_PAYLOAD,
            Framing::Trailer { .. } => STREAMING_UNSIGNED_PAYLOAD_TRAILER,
        }
    }

    /// The headers that say it, on `req`, for a body of `len` bytes: aws-chunked's content
    /// coding comes before the object's own, the decoded length and the trailer's name.
    fn describe(self, req: &mut OutboundRequest<'_>, len: u64) {
        let Framing::Trailer { algorithm, .. } = self else {
            return;
        };
        let is_coding = |n: &str| n.eq_ignore_ascii_case(header::CONTENT_ENCODING);
        let stored = req
            .headers
            .iter()
            .find(|(n, _)| is_coding(n))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        req.headers.retain(|(n, _)| !is_coding(n));
        let value = match stored {
            Some(v) => format!("aws-chunked,{v}"),
            None => "aws-chunked".to_owned(),
        };
        req.header(header::CONTENT_ENCODING, value.into_bytes());
        req.header(
            header::X_AMZ_DECODED_CONTENT_LENGTH,
            len.to_string().into_bytes(),
        );
        req.header(
            header::X_AMZ_TRAILER,
            algorithm.header_name().as_bytes().to_vec(),
        );
    }
}

/// What passes each chunk of a streamed body on its way (the rebalance's bandwidth bound and
/// byte count; nothing for a client's copy).
pub(crate) trait Meter: Send {
    /// `n` more bytes are about to go.
    fn pass(&mut self, n: usize) -> impl Future<Output = ()> + Send;
}

/// No metering.
pub(crate) struct Unmetered;

impl Meter for Unmetered {
    async fn pass(&mut self, _n: usize) {}
}

/// The source, as its GET said.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// Its ETag (quoted, as sent).
    pub etag: String,
    /// The version read, when its bucket has versions.
    pub version: Option<String>,
    /// The bytes read.
    pub len: u64,
    pub lock: Lock,
    /// Its ETag as an MD5, when it is one ([`etag_is_md5`], [`etag_md5`]).
    pub md5: Option<Md5Digest>,
}

/// A transfer that wrote.
#[derive(Debug)]
pub(crate) struct Written {
    pub source: Source,
    /// The checksum that went with the write, when a part's did ([`KeepChecksum::Part`]).
    pub checksum: Option<(ChecksumAlgorithm, String)>,
    /// The source's lock was to go with the write but could not (no integrity check): the
    /// caller sets it on the copy.
    pub lock_later: bool,
    /// The destination's answer.
    pub answer: Reply,
}

/// What became of a transfer.
#[derive(Debug)]
pub(crate) enum Transfer {
    /// The source did not give the object (its answer, with at most 64 KiB of its body):
    /// nothing was written.
    Refused(Reply),
    /// Written: the destination's answer, whatever it is.
    Written(Written),
}

/// Copy what `read` reads on backend `from` into `write` on backend `to`, with what `keep`
/// says of the source, each chunk through `meter` first, as `client`'s caller (see the module
/// comment). The connections go back to their pools once their answers are read.
pub(crate) async fn transfer<R: Runtime>(
    client: &Client<'_, R>,
    (from, to): (usize, usize),
    read: &Read<'_>,
    keep: Keep,
    write: Write<'_>,
    meter: &mut impl Meter,
) -> S3Result<Transfer> {
    let p = client.proxy();
    let backend = |i: usize| {
        p.backends
            .get(i)
            .ok_or_else(|| S3Error::with_message(S3ErrorCode::InternalError, "no such backend"))
    };
    let (sb, db) = (backend(from)?, backend(to)?);
    let caller = client.caller();

    // The read.
    let path = object_path(read.bucket, read.key);
    let mut query = match read.extent {
        Extent::Part { number, .. } => format!("partNumber={number}"),
        _ => String::new(),
    };
    if let Some(v) = read.version {
        let sep = if query.is_empty() { "" } else { "&" };
        query = format!("{query}{sep}versionId={}", uri::encode(v));
    }
    let mut get = OutboundRequest::new("GET", path.as_str(), query.as_str());
    if keep.checksum != KeepChecksum::No {
        get.header(header::X_AMZ_CHECKSUM_MODE, &b"ENABLED"[..]);
    }
    if let Extent::Range(r) = read.extent {
        let range = format!("bytes={}-{}", r.first, r.last);
        get.header("Range", range.into_bytes());
    }
    for (n, v) in &read.headers {
        get.header(n.as_ref(), v.as_ref());
    }
    for (n, v) in caller.origin.headers() {
        get.header(n, v.into_bytes());
    }
    sign_as(p, sb, &caller.key, &mut get, EMPTY_SHA256)?;
    let (get_views, get_target) = (get.views(), get.target());
    let mut src_conn = sb.conn().await?;
    src_conn
        .send_request("GET", &get_target, &get_views, &[])
        .await
        .map_err(|_| failed(&sb.id))?;
    let mut storage = [EMPTY_HEADER; MAX_HEADERS];
    let mut resp = src_conn
        .response(&mut storage)
        .await
        .map_err(|_| failed(&sb.id))?;
    let status = resp.head.status;
    let headers = resp.head.headers;
    let content_range = find_header_str(headers, header::CONTENT_RANGE);
    let empty_part = status == 416 && matches!(read.extent, Extent::Part { last: true, .. });
    if !matches!(status, 200 | 206) && !empty_part {
        if let (416, Extent::Range(_)) = (status, read.extent) {
            // Worded as a node words it (the 416 names the source's size).
            let message = match content_range.and_then(range_total) {
                Some(total) => {
                    format!("Range specified is not valid for source object of size: {total}")
                }
                None => "The x-amz-copy-source-range is not valid for the source object".into(),
            };
            return Err(S3Error::with_message(S3ErrorCode::InvalidRange, message));
        }
        let mut refusal = Reply::of_head(status, headers);
        refusal.body = read_capped(&mut resp.body, &sb.id).await?;
        return Ok(Transfer::Refused(refusal));
    }
    if let (Extent::Range(r), Some(total)) = (read.extent, content_range.and_then(range_total)) {
        r.resolve(total)?;
    }
    let len = if empty_part {
        while resp
            .body
            .next_chunk()
            .await
            .map_err(|_| failed(&sb.id))?
            .is_some()
        {}
        0
    } else {
        resp.body.content_length().ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InternalError,
                "the source backend sent no Content-Length",
            )
        })?
    };
    let etag = find_header_str(headers, header::ETAG)
        .unwrap_or_default()
        .to_owned();
    let source = Source {
        md5: etag_is_md5(headers).then(|| etag_md5(&etag)).flatten(),
        etag,
        version: find_header_str(headers, header::X_AMZ_VERSION_ID).map(str::to_owned),
        len,
        lock: Lock::of(headers),
    };

    // The write.
    let Write {
        path,
        query,
        headers: own,
        framing,
    } = write;
    let tags = keep.tags(client, from, read, headers).await?;
    let mut put = OutboundRequest::new("PUT", path.as_ref(), query.as_ref());
    for (n, v) in &own {
        put.header(n.as_ref(), v.as_ref());
    }
    let kept = keep.apply(&mut put, read.extent, (headers, &source), empty_part, tags)?;
    framing.describe(&mut put, len);
    for (n, v) in caller.origin.headers() {
        put.header(n, v.into_bytes());
    }
    sign_as(p, db, &caller.key, &mut put, framing.payload_hash())?;
    let answer = stream_put(db, &sb.id, &put, len, framing, &mut resp.body, meter).await?;
    sb.put(src_conn);
    Ok(Transfer::Written(Written {
        source,
        checksum: kept.checksum,
        lock_later: kept.lock_later,
        answer,
    }))
}

/// A body of backend `backend`'s read to its end, at most its first 64 KiB kept (an error's:
/// enough for its document).
async fn read_capped<T: Stream>(
    body: &mut ResponseBody<'_, T>,
    backend: &str,
) -> S3Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(c) = body.next_chunk().await.map_err(|_| failed(backend))? {
        if out.len() < MAX_ERROR_BODY {
            out.extend_from_slice(c);
        }
    }
    Ok(out)
}

/// Stream `len` bytes of `src` (a response body from backend `source`, by id, for errors) into
/// the write `put`, signed for backend `db`, framed as `framing` says, each chunk through
/// `meter` first; read its answer. One connection buffer at a time: memory does not grow with
/// the object. The connection to `db` goes back to its pool; the caller gives back the
/// source's once `src` is read.
async fn stream_put<R: Runtime, T: Stream>(
    db: &Backend<R>,
    source: &str,
    put: &OutboundRequest<'_>,
    len: u64,
    framing: Framing,
    src: &mut ResponseBody<'_, T>,
    meter: &mut impl Meter,
) -> S3Result<Reply> {
    let views = put.views();
    let target = put.target();
    let (wire_len, mut chunker) = match framing {
        Framing::Plain => (len, None),
        Framing::Trailer { algorithm, chunk } => {
            let wire = AwsChunkedEncoder::encoded_len(
                StreamingMode::UnsignedTrailer,
                Some(algorithm),
                len,
                chunk as u64,
            )
            .ok_or_else(|| S3Error::new(S3ErrorCode::EntityTooLarge))?;
            let encoder = AwsChunkedEncoder::unsigned(Some(algorithm));
            let buf = BufferPool::global().get(chunk);
            (wire, Some(Reframer::new(Some(encoder), buf)))
        }
    };
    let mut conn = db.conn().await?;
    {
        // Even an empty body has its length: a write without one is `MissingContentLength`.
        let mut w = conn
            .request("PUT", &target, &views, BodyKind::Length(wire_len), false)
            .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))?;
        while let Some(chunk) = src.next_chunk().await.map_err(|_| failed(source))? {
            meter.pass(chunk.len()).await;
            let Some(r) = chunker.as_mut() else {
                w.write(chunk).await.map_err(|_| failed(&db.id))?;
                continue;
            };
            let mut data = chunk;
            while !data.is_empty() {
                let (n, emit) = r.push(data);
                if let Some(e) = emit {
                    for part in e.parts {
                        w.write(part).await.map_err(|_| failed(&db.id))?;
                    }
                }
                data = data.get(n..).unwrap_or_default();
            }
        }
        if let Some(r) = chunker.as_mut() {
            // The source's body came whole (its length was checked as it came).
            let whole = VerifiedBody {
                len,
                checksum: None,
                md5: None,
            };
            for part in r.finish(&whole).parts {
                w.write(part).await.map_err(|_| failed(&db.id))?;
            }
        }
        w.finish().await.map_err(|_| failed(&db.id))?;
    }
    let mut storage = [EMPTY_HEADER; MAX_HEADERS];
    let mut resp = conn
        .response(&mut storage)
        .await
        .map_err(|_| failed(&db.id))?;
    let mut answer = Reply::of_head(resp.head.status, resp.head.headers);
    answer.body = read_capped(&mut resp.body, &db.id).await?;
    db.put(conn);
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_md5_only_of_whole_objects() {
        let md5 = ferry_core::md5::md5(b"abc");
        let etag = ferry_core::md5::ETag::single(&md5);
        assert_eq!(etag_md5(etag.as_str()), Some(md5));
        assert_eq!(etag_md5(etag.unquoted()), Some(md5));
        let multipart = ferry_core::md5::ETag::multipart([&md5, &md5]);
        assert_eq!(etag_md5(multipart.as_str()), None);
        assert_eq!(etag_md5("\"zz0123456789abcdef0123456789abcd\""), None);
    }

    #[test]
    fn object_headers_and_ranges() {
        assert!(is_object_header("Content-Type"));
        assert!(is_object_header("X-Amz-Meta-Colour"));
        assert!(!is_object_header("x-amz-request-id"));
        assert!(!is_object_header("content-length"));
        assert_eq!(range_total("bytes 0-9/100"), Some(100));
        assert_eq!(range_total("bytes */100"), Some(100));
        assert_eq!(range_total("nonsense"), None);
    }

    #[test]
    fn what_of_a_source_goes_with_its_copy() {
        let h = |name, value: &'static str| Header {
            name,
            value: value.as_bytes(),
        };
        let source = [
            h("Content-Type", "text/plain"),
            h("x-amz-meta-a", "1"),
            h("x-amz-server-side-encryption", "aws:kms"),
            h("x-amz-server-side-encryption-customer-algorithm", "AES256"),
            h("ETag", "\"e\""),
        ];
        let names = |keep: Keep| -> Vec<&str> { keep.headers(&source).map(|h| h.name).collect() };
        let all = Keep {
            metadata: true,
            encryption: true,
            ..Keep::default()
        };
        assert_eq!(
            names(all),
            [
                "Content-Type",
                "x-amz-meta-a",
                "x-amz-server-side-encryption"
            ]
        );
        assert!(names(Keep::default()).is_empty());
    }

    #[test]
    fn an_aws_chunked_write_says_so_before_the_objects_coding() {
        let framing = Framing::Trailer {
            algorithm: ChecksumAlgorithm::Crc32,
            chunk: 64 * 1024,
        };
        let mut put = OutboundRequest::new("PUT", "/b/k", "");
        put.header("Content-Encoding", &b" gzip "[..]);
        framing.describe(&mut put, 10);
        let value = |name: &str| {
            put.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(value("content-encoding"), ["aws-chunked,gzip"]);
        assert_eq!(value("x-amz-decoded-content-length"), ["10"]);
        assert_eq!(value("x-amz-trailer"), ["x-amz-checksum-crc32"]);
        let mut plain = OutboundRequest::new("PUT", "/b/k", "");
        Framing::Plain.describe(&mut plain, 10);
        assert!(plain.headers.is_empty());
    }
}
