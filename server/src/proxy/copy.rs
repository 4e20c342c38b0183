//! CopyObject and UploadPartCopy between two backends: the proxy GETs the source from one and
//! streams it into a PUT to the other, one connection buffer at a time (bounded memory). The
//! streaming PUT ([`stream_put`]) and the header rules are the rebalance's too.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use ferry_core::http::body::BodyKind;
use ferry_core::http::client::ResponseBody;
use ferry_core::http::server::ResponseWriter;
use ferry_core::http::{EMPTY_HEADER, Header, find_header, find_header_str};
use ferry_core::pool::BufferPool;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{Reframer, VerifiedBody};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::outbound::{OutboundRequest, strip_presign};
use ferry_core::s3::request::{Endpoint, MetadataDirective, S3Request};
use ferry_core::s3::sigv4::aws_chunked::AwsChunkedEncoder;
use ferry_core::s3::sigv4::{
    EMPTY_SHA256, STREAMING_UNSIGNED_PAYLOAD_TRAILER, StreamingMode, UNSIGNED_PAYLOAD,
};
use ferry_core::s3::tagging::{
    self, TAGGING_COUNT_HEADER, TAGGING_DIRECTIVE_HEADER, TAGGING_HEADER, TaggingDirective,
};
use ferry_core::s3::uri::{self, origin_form};
use ferry_core::s3::xml::{Checksums, CopyKind, CopyResult};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::backend::Backend;
use super::context::Cx;
use super::forward::Reply;
use super::sign::sign_as;
use crate::front::Headers;

/// Response header fields read per backend response.
const MAX_HEADERS: usize = 128;

/// The copy's headers that go with its read of the source, and as what: what a node's policy
/// conditions see (`aws:UserAgent`, `aws:Referer`) and the source's expected owner.
const CARRIED_TO_SOURCE: [(&str, &str); 4] = [
    ("user-agent", "user-agent"),
    ("referer", "referer"),
    ("x-amz-request-payer", "x-amz-request-payer"),
    (
        "x-amz-source-expected-bucket-owner",
        "x-amz-expected-bucket-owner",
    ),
];

/// The copy's headers that go with its write of the destination, besides the object's own.
const CARRIED_TO_DESTINATION: [&str; 4] = [
    "user-agent",
    "referer",
    "x-amz-request-payer",
    "x-amz-expected-bucket-owner",
];

/// Object headers that travel with an object (CopyObject with the COPY directive keeps the
/// source's, REPLACE takes the request's).
const CONTENT_HEADERS: [&str; 6] = [
    "content-type",
    "content-encoding",
    "content-disposition",
    "content-language",
    "cache-control",
    "expires",
];

pub(crate) fn is_object_header(name: &str) -> bool {
    CONTENT_HEADERS.iter().any(|n| n.eq_ignore_ascii_case(name))
        || name
            .get(..11)
            .is_some_and(|p| p.eq_ignore_ascii_case("x-amz-meta-"))
}

/// Whether a header is one of a request's encryption headers (`x-amz-server-side-encryption`
/// and its `-customer-*`, `-aws-kms-key-id`, `-context`, `-bucket-key-enabled`).
pub(crate) fn is_encryption_header(name: &str) -> bool {
    starts_with_ignore_case(name, "x-amz-server-side-encryption")
}

/// The SSE-C header of a GET that a copy's `x-amz-copy-source-server-side-encryption-customer-*`
/// header is, when it is one.
fn source_key_header(name: &str) -> Option<String> {
    const SOURCE: &str = "x-amz-copy-source-server-side-encryption-customer-";
    starts_with_ignore_case(name, SOURCE).then(|| {
        format!(
            "x-amz-server-side-encryption-customer-{}",
            &name[SOURCE.len()..]
        )
    })
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// Whether a GET's response says the object's ETag is its MD5: not for SSE-C or SSE-KMS
/// objects (AWS: their ETags are not MD5 digests).
pub(crate) fn etag_is_md5(headers: &[Header<'_>]) -> bool {
    find_header(headers, "x-amz-server-side-encryption-customer-algorithm").is_none()
        && !find_header_str(headers, "x-amz-server-side-encryption")
            .is_some_and(|v| starts_with_ignore_case(v.trim(), "aws:kms"))
}

/// The MD5 an ETag is, when it is one (32 hex digits, quoted or not: not a multipart ETag).
pub(crate) fn etag_md5(etag: &str) -> Option<ferry_core::md5::Md5Digest> {
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

pub(crate) fn failed(backend: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::ServiceUnavailable,
        format!("Backend {backend} failed during the copy; please retry."),
    )
}

/// `Content-Range: bytes a-b/total` → total.
fn range_total(value: &str) -> Option<u64> {
    value.rsplit_once('/')?.1.trim().parse().ok()
}

/// Copy from backend `src` to backend `dst` (they differ).
pub(crate) async fn copy_across<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    s3: &S3Request<'_>,
    src: usize,
    dst: usize,
) -> S3Result<()> {
    // The proxy writes the copy with the headers it knows: what the router refused would be
    // dropped on the way, not refused by the backend.
    if let Some(e) = &s3.refused {
        return Err(e.clone());
    }
    let (source, directive, range, kind) = match &s3.endpoint {
        Endpoint::CopyObject {
            source,
            metadata_directive,
            ..
        } => (source, *metadata_directive, None, CopyKind::Object),
        Endpoint::UploadPartCopy {
            source,
            source_range,
            ..
        } => (
            source,
            MetadataDirective::Replace,
            *source_range,
            CopyKind::Part,
        ),
        _ => return Err(S3Error::new(S3ErrorCode::InternalError)),
    };
    let (sb, db) = (cx.backend(src)?, cx.backend(dst)?);
    let client_headers = cx.req.headers;
    let tagging_directive = match kind {
        CopyKind::Object => {
            TaggingDirective::parse(find_header(client_headers, TAGGING_DIRECTIVE_HEADER))?
        }
        CopyKind::Part => TaggingDirective::Replace,
    };
    // Bad tags are refused before anything is read (the destination would refuse them too).
    if tagging_directive == TaggingDirective::Replace
        && let Some(v) = find_header(client_headers, TAGGING_HEADER)
    {
        tagging::parse_header(v)?;
    }

    // A checksum the copy asks for is computed by the proxy as it streams, and sent as the
    // PUT's aws-chunked trailer, which the destination checks and stores (as a node computes
    // it for a copy it makes itself).
    let requested = match kind {
        CopyKind::Object => ferry_core::s3::checksum::requested_algorithm(client_headers)?,
        CopyKind::Part => None,
    };

    // The source: a GET with the copy-source conditions as ordinary ones.
    let src_path = format!(
        "/{}/{}",
        uri::encode_path(&source.bucket),
        uri::encode_path(&source.key)
    );
    let src_query = source
        .version_id
        .map(|v| format!("versionId={v}"))
        .unwrap_or_default();
    let mut get = OutboundRequest::new("GET", src_path.as_str(), src_query.as_str());
    for (from, to) in [
        ("x-amz-copy-source-if-match", "If-Match"),
        ("x-amz-copy-source-if-none-match", "If-None-Match"),
        ("x-amz-copy-source-if-modified-since", "If-Modified-Since"),
        (
            "x-amz-copy-source-if-unmodified-since",
            "If-Unmodified-Since",
        ),
    ] {
        if let Some(v) = find_header_str(client_headers, from) {
            get.header(to, v.as_bytes());
        }
    }
    if let Some(r) = range {
        get.header(
            "Range",
            format!("bytes={}-{}", r.first, r.last).into_bytes(),
        );
    }
    // A copy with the COPY directive keeps the source's checksum, as on one node.
    let keep_checksum = kind == CopyKind::Object && directive == MetadataDirective::Copy;
    if keep_checksum {
        get.header("x-amz-checksum-mode", &b"ENABLED"[..]);
    }
    // An SSE-C source is read with its key, which the copy gives as the source's.
    for h in client_headers {
        if let Some(name) = source_key_header(h.name) {
            get.header(name, h.value.to_vec());
        }
    }
    // The read and the write are the client's, as the nodes' policies judge them.
    for (from, to) in CARRIED_TO_SOURCE {
        if let Some(v) = find_header(client_headers, from) {
            get.header(to, v.to_vec());
        }
    }
    for (n, v) in cx.caller().headers() {
        get.header(n, v.into_bytes());
    }
    sign_as(cx.p, sb, cx.client_key(), &mut get, EMPTY_SHA256)?;
    let get_views = get.views();
    let get_target = get.target();
    let mut src_conn = sb.conn().await?;
    src_conn
        .send_request("GET", &get_target, &get_views, &[])
        .await
        .map_err(|_| failed(&sb.id))?;
    let mut src_storage = [EMPTY_HEADER; MAX_HEADERS];
    let mut src_resp = src_conn
        .response(&mut src_storage)
        .await
        .map_err(|_| failed(&sb.id))?;
    let status = src_resp.head.status;
    if !matches!(status, 200 | 206) {
        if matches!(status, 304 | 412) {
            return Err(S3Error::new(S3ErrorCode::PreconditionFailed));
        }
        if status == 416 {
            // Worded as a node words it (the 416 names the source's size).
            let message = match find_header_str(src_resp.head.headers, "content-range")
                .and_then(range_total)
            {
                Some(total) => {
                    format!("Range specified is not valid for source object of size: {total}")
                }
                None => "The x-amz-copy-source-range is not valid for the source object".into(),
            };
            return Err(S3Error::with_message(S3ErrorCode::InvalidArgument, message));
        }
        let mut body = Vec::new();
        while let Some(c) = src_resp
            .body
            .next_chunk()
            .await
            .map_err(|_| failed(&sb.id))?
        {
            if body.len() < 64 * 1024 {
                body.extend_from_slice(c);
            }
        }
        return Err(Reply::of(status, body).to_error());
    }
    if let (Some(r), Some(total)) = (
        range,
        find_header_str(src_resp.head.headers, "content-range").and_then(range_total),
    ) {
        r.resolve(total)?;
    }
    // The version read, when the source's bucket has versions.
    let source_version =
        find_header_str(src_resp.head.headers, "x-amz-version-id").map(str::to_owned);
    let Some(len) = src_resp.body.content_length() else {
        return Err(S3Error::with_message(
            S3ErrorCode::InternalError,
            "the source backend sent no Content-Length",
        ));
    };

    // The destination: a PUT (object or part) with the chosen metadata.
    let origin = origin_form(cx.req.target);
    let dst_path = origin.split_once('?').map_or(origin, |(p, _)| p);
    let put_query = strip_presign(cx.raw_query());
    let mut put = OutboundRequest::new("PUT", cx.backend_path(dst_path), put_query);
    if kind == CopyKind::Object {
        let from: &[Header<'_>] = match directive {
            MetadataDirective::Copy => src_resp.head.headers,
            MetadataDirective::Replace => client_headers,
        };
        for h in from.iter().filter(|h| is_object_header(h.name)) {
            if requested.is_some() && h.name.eq_ignore_ascii_case("content-encoding") {
                continue;
            }
            put.header(h.name.to_owned(), h.value.to_vec());
        }
        if requested.is_some() {
            // The body goes aws-chunked: its content coding comes first, the object's after.
            let stored = find_header_str(from, "content-encoding")
                .map(str::trim)
                .filter(|v| !v.is_empty());
            let value = match stored {
                Some(v) => format!("aws-chunked,{v}"),
                None => "aws-chunked".to_owned(),
            };
            put.header("content-encoding", value.into_bytes());
            put.header("x-amz-decoded-content-length", len.to_string().into_bytes());
        }
        if let Some(alg) = requested {
            put.header("x-amz-trailer", alg.header_name().as_bytes().to_vec());
        }
        // The destination checks the copied bytes against it, and stores it; a composite
        // checksum (of the source's parts) does not describe the copy, as on one node.
        let composite = find_header_str(src_resp.head.headers, "x-amz-checksum-type")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("COMPOSITE"));
        if keep_checksum && !composite && requested.is_none() {
            let checksums = src_resp
                .head
                .headers
                .iter()
                .filter(|h| ChecksumAlgorithm::from_header_name(h.name).is_some());
            for h in checksums {
                put.header(h.name.to_owned(), h.value.to_vec());
            }
        }
        match tagging_directive {
            TaggingDirective::Replace => {
                if let Some(v) = find_header(client_headers, TAGGING_HEADER) {
                    put.header(TAGGING_HEADER, v.to_vec());
                }
            }
            TaggingDirective::Copy => {
                let count = find_header_str(src_resp.head.headers, TAGGING_COUNT_HEADER);
                if count.is_some_and(|c| c.trim() != "0") {
                    // GetObjectTagging (a GET carries only their count): tags changed
                    // since the GET are the ones copied.
                    let version = source.version_id.map(|v| v.to_string());
                    let tags = cx
                        .client()
                        .tags(src, &source.bucket, &source.key, version.as_deref())
                        .await?;
                    put.header(TAGGING_HEADER, tags.into_bytes());
                }
            }
        }
        for name in ["x-amz-storage-class", "if-match", "if-none-match"] {
            if let Some(v) = find_header_str(client_headers, name) {
                put.header(name, v.as_bytes().to_vec());
            }
        }
        // The copy's ACL is its request's (never its source's).
        let acl = client_headers.iter().filter(|h| {
            h.name.eq_ignore_ascii_case("x-amz-acl")
                || h.name
                    .get(..12)
                    .is_some_and(|p| p.eq_ignore_ascii_case("x-amz-grant-"))
        });
        for h in acl {
            put.header(h.name.to_owned(), h.value.to_vec());
        }
        // So is its object lock. A PUT asking for one must carry an integrity check: the
        // source's MD5 when its ETag is one (a whole source, not a multipart object), which the
        // destination checks the copied bytes against; a source's checksum, kept above,
        // serves as well.
        let mut lock = client_headers.iter().filter(|h| {
            h.name
                .get(..18)
                .is_some_and(|p| p.eq_ignore_ascii_case("x-amz-object-lock-"))
        });
        let asks_lock = lock.clone().next().is_some();
        for h in lock.by_ref() {
            put.header(h.name.to_owned(), h.value.to_vec());
        }
        if asks_lock
            && range.is_none()
            && etag_is_md5(src_resp.head.headers)
            && let Some(md5) = find_header_str(src_resp.head.headers, "etag").and_then(etag_md5)
        {
            let value = ferry_core::md5::content_md5(&md5);
            put.header("Content-MD5", value.as_str().as_bytes().to_vec());
        }
    }
    // The copy is encrypted as its request asks (the destination node decides, as for a PUT:
    // its own key, an SSE-C key in flight, or its bucket's default).
    for h in client_headers
        .iter()
        .filter(|h| is_encryption_header(h.name))
    {
        put.header(h.name.to_owned(), h.value.to_vec());
    }
    for name in CARRIED_TO_DESTINATION {
        if let Some(v) = find_header(client_headers, name) {
            put.header(name, v.to_vec());
        }
    }
    for (n, v) in cx.caller().headers() {
        put.header(n, v.into_bytes());
    }
    let framing = match requested {
        Some(algorithm) => Framing::Trailer {
            algorithm,
            chunk: cx.p.buffer_size,
        },
        None => Framing::Plain,
    };
    sign_as(cx.p, db, cx.client_key(), &mut put, framing.payload_hash())?;
    let body = &mut src_resp.body;
    let answer = stream_put(db, &sb.id, &put, len, framing, body, &mut Unmetered).await?;
    sb.put(src_conn);
    let status = answer.status;
    let etag = answer.header("etag").map(str::to_owned);
    // The copy's checksum, as its backend stored it.
    let checksum = answer.headers.iter().find_map(|(n, v)| {
        let alg = ChecksumAlgorithm::from_header_name(n)?;
        Some((alg, v.trim().to_owned()))
    });
    // The versions of the source read and of the copy written, when their buckets have them.
    let mut h = Headers::new();
    if let Some(v) = source_version {
        h.push("x-amz-copy-source-version-id", v);
    }
    if let Some(v) = answer
        .header("x-amz-version-id")
        .filter(|_| kind == CopyKind::Object)
    {
        h.push("x-amz-version-id", v.to_owned());
    }
    // How the copy is encrypted, as its backend says.
    for (name, value) in answer
        .headers
        .iter()
        .filter(|(n, _)| is_encryption_header(n))
    {
        h.push(name.clone(), value.clone());
    }
    if !(200..300).contains(&status) {
        return Err(answer.to_error());
    }
    cx.p.copied.fetch_add(len, Ordering::Relaxed);
    let doc = CopyResult {
        kind,
        etag: Cow::Owned(etag.unwrap_or_default()),
        last_modified_unix: cx.p.rt.unix_time(),
        checksum_type: checksum
            .as_ref()
            .filter(|_| kind == CopyKind::Object)
            .map(|_| Cow::Borrowed("FULL_OBJECT")),
        checksums: checksum
            .map(|(alg, v)| Checksums::one(alg, v))
            .unwrap_or_default(),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, h, &xml).await
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

/// The answer to a PUT a body was streamed into: status, header fields, body (bounded).
#[derive(Debug, Clone)]
pub(crate) struct PutAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl PutAnswer {
    /// The first header field `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The backend's error, as [`Reply::to_error`] says it.
    pub fn to_error(&self) -> S3Error {
        Reply::of(self.status, self.body.clone()).to_error()
    }
}

/// How a streamed PUT's body goes: as it comes, or aws-chunked in chunks of `chunk` bytes
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
    /// The PUT's `x-amz-content-sha256` (what it is signed with).
    pub fn payload_hash(self) -> &'static str {
        match self {
            Framing::Plain => UNSIGNED_PAYLOAD,
            Framing::Trailer { .. } => STREAMING_UNSIGNED_PAYLOAD_TRAILER,
        }
    }
}

/// Stream `len` bytes of `src` (a response body from backend `source`, by id, for errors) into
/// the PUT `put`, signed for backend `db`, framed as `framing` says (its headers are the
/// caller's), each chunk through `meter` first; read its answer. One connection buffer at a
/// time: memory does not grow with the object. The connection to `db` goes back to its pool;
/// the caller gives back the source's once `src` is read.
pub(crate) async fn stream_put<R: Runtime, T: Stream>(
    db: &Backend<R>,
    source: &str,
    put: &OutboundRequest<'_>,
    len: u64,
    framing: Framing,
    src: &mut ResponseBody<'_, T>,
    meter: &mut impl Meter,
) -> S3Result<PutAnswer> {
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
    let status = resp.head.status;
    let headers = resp
        .head
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let mut body = Vec::new();
    while let Some(c) = resp.body.next_chunk().await.map_err(|_| failed(&db.id))? {
        if body.len() < 64 * 1024 {
            body.extend_from_slice(c);
        }
    }
    db.put(conn);
    Ok(PutAnswer {
        status,
        headers,
        body,
    })
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
}
