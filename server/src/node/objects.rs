//! Object operations: GET/HEAD (ranges, parts, conditions), PUT, DELETE, copy, DeleteObjects.

use std::borrow::Cow;
use std::io::Read as _;
use std::sync::atomic::Ordering;

use ferry_core::http::body::BodyKind;
use ferry_core::http::find_header;
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::md5::Md5Digest;
use ferry_core::pool::{BufferPool, PooledBuf};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::checksum;
use ferry_core::s3::conditions::Conditions;
use ferry_core::s3::header;
use ferry_core::s3::range::ByteRange;
use ferry_core::s3::request::{CopySource, MetadataDirective};
use ferry_core::s3::tagging::TaggingDirective;
use ferry_core::s3::validate::{self, ContentHeaders};
use ferry_core::s3::xml::{
    Checksums, CopyKind, CopyResult, Delete, DeleteError, DeleteResult, DeletedEntry,
    MAX_DELETE_BODY,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::body::stream_into;
use super::context::Cx;
use super::lock;
use super::request_headers::{checksum_mode, object_meta, object_tags, write_conditions};
use super::response_headers::{
    object_headers, push_checksum, push_part_checksum, push_validators, push_version,
};
use crate::front::Headers;
use crate::front::body::{read_small, require_length};
use crate::store::{
    self, COPY_BUF_SIZE, Checksum, CopyOptions, CustomerKey, DeleteOptions, DeleteOutcome,
    GetOptions, HeadOptions, ObjectInfo, ObjectReader, ReadRange, Store, VersionId,
};

/// `If-*` conditions owned, so they can be checked on a blocking thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnedConditions {
    if_match: Option<String>,
    if_none_match: Option<String>,
    if_modified_since: Option<i64>,
    if_unmodified_since: Option<i64>,
}

impl OwnedConditions {
    pub(crate) fn new(c: &Conditions<'_>) -> Self {
        Self {
            if_match: c.if_match.map(str::to_owned),
            if_none_match: c.if_none_match.map(str::to_owned),
            if_modified_since: c.if_modified_since,
            if_unmodified_since: c.if_unmodified_since,
        }
    }

    fn get(&self) -> Conditions<'_> {
        Conditions {
            if_match: self.if_match.as_deref(),
            if_none_match: self.if_none_match.as_deref(),
            if_modified_since: self.if_modified_since,
            if_unmodified_since: self.if_unmodified_since,
        }
    }

    /// GET/HEAD conditions: `NotModified` (304) or `PreconditionFailed` (412).
    fn check(&self, info: &ObjectInfo) -> S3Result<()> {
        self.get()
            .check(info.etag.as_str(), info.last_modified.to_unix())
    }

    /// `x-amz-copy-source-if-*`: any failure is 412.
    pub(crate) fn check_copy_source(&self, info: &ObjectInfo) -> S3Result<()> {
        self.get()
            .check_copy_source(info.etag.as_str(), info.last_modified.to_unix())
    }
}

/// The stored form of a checksum.
pub(crate) fn stored_checksum(c: &checksum::Checksum) -> Checksum {
    Checksum {
        algorithm: c.algorithm().as_str().to_owned(),
        value: c.to_base64().as_str().to_owned(),
    }
}

/// What a GET or HEAD asks for.
#[derive(Debug)]
pub(crate) struct Read<'a> {
    pub range: Option<ByteRange>,
    pub conditions: &'a Conditions<'a>,
    pub part_number: Option<u16>,
    pub overrides: Option<&'a ContentHeaders<'a>>,
    pub head: bool,
    /// `versionId`: the version to read (the current one if `None`).
    pub version: Option<VersionId>,
}

/// A read that was refused: the error, and the object's metadata when the response needs it
/// (validators of a 304, the length in a 416's `Content-Range`).
struct Refused {
    error: S3Error,
    info: Option<Box<ObjectInfo>>,
}

impl From<S3Error> for Refused {
    fn from(error: S3Error) -> Self {
        Self { error, info: None }
    }
}

/// Bodies at least this long go out with `sendfile(2)` when the connection can take it;
/// shorter ones are read and leave with their head in one write.
const SEND_FILE_MIN: u64 = 16 * 1024;

/// How a GET's body goes out.
enum Body {
    /// To be read into pooled buffers and written (TLS, other systems, short bodies): its
    /// first block is not read yet.
    Unread(ObjectReader),
    /// Read into pooled buffers and written, its first block read.
    Copy(FirstBlock),
    /// Sent from the data files by the kernel.
    File(ObjectReader),
}

/// An object opened for a response: its metadata, the range the response describes, and for
/// GET how its body goes out (with the first block read, for a copy).
struct Opened {
    info: ObjectInfo,
    range: Option<(u64, u64)>,
    body: Option<Body>,
}

/// The first block of a GET body, and the reader of the rest (`None` once drained).
struct FirstBlock {
    reader: Option<ObjectReader>,
    buf: PooledBuf<'static>,
    len: usize,
}

fn refuse(error: S3Error, info: ObjectInfo) -> Refused {
    Refused {
        error,
        info: Some(Box::new(info)),
    }
}

/// On a blocking thread: read the first block of a body that is copied out.
fn read_first(opened: Opened) -> Result<Opened, Refused> {
    let Opened { info, range, body } = opened;
    let body = match body {
        Some(Body::Unread(reader)) => {
            let mut buf = BufferPool::global().get(COPY_BUF_SIZE);
            let (reader, len) = read_block(reader, &mut buf)?;
            Some(Body::Copy(FirstBlock { reader, buf, len }))
        }
        other => other,
    };
    Ok(Opened { info, range, body })
}

/// On a runtime thread: [`read_first`] from the page cache (`Ok(Err(opened))`, unchanged,
/// when its first bytes are not cached: for [`read_first`] on a blocking thread).
async fn read_first_cached<R: Runtime>(
    cx: &Cx<'_, R>,
    opened: Opened,
) -> Result<Result<Opened, Opened>, Refused> {
    let rt = cx.rt();
    let Opened { info, range, body } = opened;
    let Some(Body::Unread(mut reader)) = body else {
        return Ok(Ok(Opened { info, range, body }));
    };
    let mut buf = BufferPool::global().get(COPY_BUF_SIZE);
    match read_cached_block(&mut reader, &mut buf) {
        Ok(0) => Ok(Err(Opened {
            info,
            range,
            body: Some(Body::Unread(reader)),
        })),
        Ok(len) => {
            cx.node
                .cached_read_bytes
                .fetch_add(len as u64, Ordering::Relaxed);
            let reader = if reader.remaining() > 0 {
                Some(reader)
            } else {
                release(rt, reader).await;
                None
            };
            let first = FirstBlock { reader, buf, len };
            Ok(Ok(Opened {
                info,
                range,
                body: Some(Body::Copy(first)),
            }))
        }
        Err(e) => {
            release(rt, reader).await;
            Err(e.into())
        }
    }
}

/// Fill `buf` from `reader` with what the page cache holds, on a runtime thread: no file is
/// opened and no disk waited for (an encrypted object's chunks are decrypted here, as a
/// blocking thread would). The bytes read: 0 when the next ones are not cached, to be read on a
/// blocking thread ([`read_block`]); fewer than fit when the cache holds no more. A hand-off to
/// the blocking pool and back costs more than reading a cached block.
fn read_cached_block(reader: &mut ObjectReader, buf: &mut [u8]) -> S3Result<usize> {
    let mut filled = 0;
    while filled < buf.len() && reader.remaining() > 0 {
        if filled > 0 && !reader.read_fits(buf.len() - filled) {
            break;
        }
        let dst = buf.get_mut(filled..).unwrap_or_default();
        match reader.read_cached(dst) {
            Ok(0) => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InternalError,
                    "object data ended early",
                ));
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(read_failed(e)),
        }
    }
    Ok(filled)
}

/// Drop a reader on a runtime thread: the files it was the last to pin (the object was
/// replaced or deleted while it was read) are deleted on a blocking thread.
async fn release<R: Runtime>(rt: &R, reader: ObjectReader) {
    if let Some(unpinned) = reader.release() {
        rt.unblock(move || unpinned.remove()).await;
    }
}

/// Fill `buf` from `reader` (until full or the range ends); drop the reader when it is done,
/// here on the blocking thread, since that may delete files it pinned.
fn read_block(mut reader: ObjectReader, buf: &mut [u8]) -> S3Result<(Option<ObjectReader>, usize)> {
    let mut filled = 0;
    while filled < buf.len() && reader.remaining() > 0 {
        if filled > 0 && !reader.read_fits(buf.len() - filled) {
            // An encrypted object's next chunk starts the next block, decrypted in place.
            break;
        }
        let dst = buf.get_mut(filled..).unwrap_or_default();
        let n = reader.read(dst).map_err(read_failed)?;
        if n == 0 {
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                "object data ended early",
            ));
        }
        filled += n;
    }
    let reader = (reader.remaining() > 0).then_some(reader);
    Ok((reader, filled))
}

/// What a GET or HEAD looks up, owned, to run on the runtime thread or a blocking one.
struct Lookup {
    bucket: String,
    key: String,
    version: Option<VersionId>,
    range: ReadRange,
    conditions: OwnedConditions,
    head: bool,
    /// The body may go out with `sendfile(2)` (the connection can).
    send_file: bool,
    /// The SSE-C key the request came with.
    customer: Option<CustomerKey>,
}

/// Find the object, check conditions, and for GET open its data: [`Body::File`] when the body
/// can go out with `sendfile(2)` (`send_file`: the connection can), else [`Body::Unread`].
///
/// No data is read here: a lookup in the metadata database and an `open(2)`, which the page
/// cache answers once an object has been read or written ([`NodeConfig::open_inline`] runs it
/// on the runtime thread).
///
/// [`NodeConfig::open_inline`]: super::NodeConfig::open_inline
fn open(store: &Store, lookup: &Lookup) -> Result<Opened, Refused> {
    let Lookup {
        ref bucket,
        ref key,
        version,
        range,
        ref conditions,
        head,
        send_file,
        ref customer,
    } = *lookup;
    let customer = customer.as_ref();
    let head_options = HeadOptions {
        version,
        check_key: true,
        customer,
    };
    if head {
        let info = store.head_object(bucket, key, head_options)?;
        if let Err(e) = conditions.check(&info) {
            return Err(refuse(e, info));
        }
        return match range.resolve(&info) {
            Ok(range) => Ok(Opened {
                info,
                range,
                body: None,
            }),
            Err(e) => Err(refuse(e, info)),
        };
    }
    let get_options = GetOptions {
        version,
        range,
        customer,
    };
    match store.get_object(bucket, key, get_options) {
        Ok(reader) => {
            if let Err(e) = conditions.check(reader.info()) {
                return Err(refuse(e, reader.into_info()));
            }
            let info = reader.info().clone();
            let range = reader.range();
            let body = if send_file && reader.remaining() >= SEND_FILE_MIN && !reader.is_encrypted()
            {
                Body::File(reader)
            } else {
                Body::Unread(reader)
            };
            Ok(Opened {
                info,
                range,
                body: Some(body),
            })
        }
        Err(e)
            if matches!(
                e.code,
                S3ErrorCode::InvalidRange | S3ErrorCode::InvalidPartNumber
            ) =>
        {
            // Conditions come before the range (RFC 9110 section 13.2.2), and a 416 names
            // the object's length.
            let info = store.head_object(bucket, key, head_options)?;
            conditions
                .check(&info)
                .map_err(|c| refuse(c, info.clone()))?;
            Err(refuse(e, info))
        }
        Err(e) => Err(e.into()),
    }
}

fn read_range(range: Option<ByteRange>, part_number: Option<u16>) -> ReadRange {
    match (part_number, range) {
        (Some(n), _) => ReadRange::Part(u32::from(n)),
        (None, Some(ByteRange::FromTo(a, b))) => ReadRange::Inclusive(a, b),
        (None, Some(ByteRange::From(a))) => ReadRange::From(a),
        (None, Some(ByteRange::Suffix(n))) => ReadRange::Suffix(n),
        (None, None) => ReadRange::All,
    }
}

/// GetObject and HeadObject.
pub(crate) async fn get<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    read: Read<'_>,
) -> S3Result<()> {
    let version = read.version;
    let kms_context = super::access::kms_context_mode(cx)?;
    let lookup = Lookup {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        version,
        range: read_range(read.range, read.part_number),
        conditions: OwnedConditions::new(read.conditions),
        head: read.head,
        send_file: cx.node.sendfile && res.can_send_file(),
        customer: super::sse::read_key(cx)?,
    };
    let opened = if cx.node.open_inline {
        // The lookup and the open on this thread (as nginx opens files on its event loop); a
        // body to copy is read on a blocking thread.
        match open(&cx.node.store, &lookup) {
            Ok(o) if matches!(o.body, Some(Body::Unread(_))) => {
                match read_first_cached(cx, o).await {
                    Ok(Ok(o)) => Ok(o),
                    Ok(Err(o)) => cx.rt().unblock(move || read_first(o)).await,
                    Err(refused) => Err(refused),
                }
            }
            other => other,
        }
    } else {
        cx.unblock(move |store| open(&store, &lookup).and_then(read_first))
            .await
    };
    let opened = match opened {
        Ok(o) => o,
        Err(Refused { error, info }) => {
            let mut extra = Headers::new();
            match (&info, error.code) {
                (Some(i), S3ErrorCode::NotModified) => {
                    push_validators(&mut extra, &i.etag, i.last_modified);
                }
                (Some(i), S3ErrorCode::InvalidRange) => {
                    extra.push("Content-Range", format!("bytes */{}", i.size));
                }
                // A delete marker named by its id.
                (None, S3ErrorCode::MethodNotAllowed) => {
                    extra.push(header::X_AMZ_DELETE_MARKER, "true".to_owned());
                    push_version(&mut extra, version);
                }
                (None, S3ErrorCode::NoSuchKey) if version.is_none() => {
                    if let Some(marker) = current_delete_marker(cx, bucket, key).await {
                        extra.push(header::X_AMZ_DELETE_MARKER, "true".to_owned());
                        push_version(&mut extra, Some(marker));
                    }
                }
                _ => {}
            }
            let mut error = error;
            super::access::hide_absence(cx, bucket, &mut error, &mut extra);
            return cx.front.send_error(res, &error, extra).await;
        }
    };
    let Opened { info, range, body } = opened;
    let whole = range.is_none();
    let mut h = object_headers(&info, read.overrides, whole && checksum_mode(cx.headers));
    if let Some(n) = read.part_number.filter(|_| checksum_mode(cx.headers)) {
        push_part_checksum(&mut h, &info.meta, n);
    }
    if kms_context {
        super::sse::push_kms_context(&mut h, info.encryption.as_ref());
    }
    super::lifecycle::expiration(cx, bucket, key, &info, &mut h);
    let (status, len) = match range {
        Some((first, last)) => {
            h.push(
                "Content-Range",
                format!("bytes {first}-{last}/{}", info.size),
            );
            (206, last - first + 1)
        }
        None => (200, info.size),
    };
    if read.part_number.is_some()
        && let Some(n) = info.parts_count()
    {
        h.push(header::X_AMZ_MP_PARTS_COUNT, n.to_string());
    }
    push_version(&mut h, info.version_id);
    h.push(header::X_AMZ_REQUEST_ID, cx.id.to_owned());
    res.start(status, &h.as_slice(), BodyKind::Length(len))?;
    drop(h);
    match body {
        Some(Body::Copy(first)) => {
            stream_out(cx, res, first.reader, first.buf, first.len).await?;
        }
        Some(Body::File(reader)) => send_out(cx, res, reader).await?,
        // `read_first` read every copied body's first block.
        Some(Body::Unread(_)) | None => {}
    }
    res.finish().await?;
    Ok(())
}

/// The delete marker that is `bucket`/`key`'s current version, if any: asked only of a
/// bucket that has a versioning state (from the settings cache), so a 404 of a bucket that
/// was never versioned costs no more than it did.
async fn current_delete_marker<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
) -> Option<VersionId> {
    cx.node.store.versioning(bucket).ok()??;
    let (b, k) = (bucket.to_owned(), key.to_owned());
    cx.unblock(move |store| store.current_delete_marker(&b, &k))
        .await
        .ok()
        .flatten()
}

/// Send the rest of an object: each next block is read from the page cache on this thread
/// ([`read_cached_block`]) or, when it is not cached, on a blocking thread while the current one
/// is written to the client.
async fn stream_out<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    mut reader: Option<ObjectReader>,
    mut buf: PooledBuf<'static>,
    mut len: usize,
) -> S3Result<()> {
    let rt = cx.rt();
    let mut spare: Option<PooledBuf<'static>> = None;
    loop {
        // The next block: read here from the page cache (`ready`), or else on a blocking thread
        // while this one is written (`job`).
        let (mut ready, mut job) = (None, None);
        if let Some(mut r) = reader.take() {
            let mut b = spare
                .take()
                .unwrap_or_else(|| BufferPool::global().get(COPY_BUF_SIZE));
            match read_cached_block(&mut r, &mut b) {
                Ok(0) => {
                    job = Some(rt.unblock(move || {
                        let got = read_block(r, &mut b);
                        (got, b)
                    }));
                }
                Ok(n) => {
                    cx.node
                        .cached_read_bytes
                        .fetch_add(n as u64, Ordering::Relaxed);
                    if r.remaining() > 0 {
                        reader = Some(r);
                    } else {
                        release(rt, r).await;
                    }
                    ready = Some((b, n));
                }
                Err(e) => {
                    release(rt, r).await;
                    return Err(e);
                }
            }
        }
        if let Err(e) = res.write(buf.get(..len).unwrap_or_default()).await {
            if let Some(r) = reader.take() {
                release(rt, r).await;
            }
            return Err(e.into());
        }
        let (b, n) = match (ready, job) {
            (Some(ready), _) => ready,
            (None, Some(job)) => {
                let (got, b) = job.await;
                let (r, n) = got?;
                reader = r;
                (b, n)
            }
            (None, None) => return Ok(()),
        };
        spare = Some(std::mem::replace(&mut buf, b));
        len = n;
    }
}

/// Send an object with `sendfile(2)`, data file by data file (a multipart object has one per
/// part): the kernel moves the bytes from the page cache to the socket. Opening the next file,
/// and deleting files the reader was the last to pin, happen on a blocking thread.
async fn send_out<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    mut reader: ObjectReader,
) -> S3Result<()> {
    let sent = loop {
        if reader.remaining() == 0 {
            break Ok(());
        }
        let Some((file, offset, len)) = reader.segment() else {
            let (r, opened) = cx
                .rt()
                .unblock(move || {
                    let opened = reader.open_next();
                    (reader, opened)
                })
                .await;
            reader = r;
            match opened {
                Ok(()) => continue,
                Err(e) => break Err(read_failed(e)),
            }
        };
        let before = res.body_bytes();
        let r = res.send_file(file, offset, len).await;
        let moved = res.body_bytes() - before;
        cx.node.sendfile_bytes.fetch_add(moved, Ordering::Relaxed);
        match r {
            Ok(true) => reader.advance(len),
            // `can_send_file` said yes when the object was opened.
            Ok(false) => {
                break Err(S3Error::with_message(
                    S3ErrorCode::InternalError,
                    "the connection stopped taking sendfile",
                ));
            }
            Err(e) => break Err(e.into()),
        }
    };
    // Most readers pinned nothing that was retired meanwhile: no second trip to the blocking
    // pool for them (a sendfile GET then costs one, to open the object).
    if let Some(unpinned) = reader.release() {
        cx.rt().unblock(move || unpinned.remove()).await;
    }
    sent
}

fn read_failed(e: std::io::Error) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, format!("read failed: {e}"))
}

/// PutObject.
pub(crate) async fn put<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
) -> S3Result<()> {
    require_length(body)?;
    let verifier = cx
        .front
        .body_verifier(body, Checks::All, BodyLimit::object())?;
    let mut meta = object_meta(cx.headers)?;
    meta.acl = super::acl::request_object_acl(cx, bucket)?;
    lock::apply(&mut meta, lock::for_write(cx, bucket, cx.headers, true)?);
    let mut conditions = write_conditions(cx.headers)?;
    conditions.placed = super::access::placement(cx)?;
    let encrypt = super::sse::write_encryption(cx, cx.headers, bucket)?;
    let (b, k) = (bucket.to_owned(), key.to_owned());
    let writer = cx
        .unblock(move |store| store.object_writer(&b, &k, encrypt.as_ref()))
        .await?;
    // The store's word: an SSE-KMS write's default key is filled in.
    let encryption = writer.encryption_info();
    let (writer, done) = stream_into(cx.rt(), body, verifier, writer).await?;
    let stored = done.checksum.as_ref().map(stored_checksum);
    meta.checksums.extend(stored.clone());
    let put = cx.unblock(move |_| writer.commit(meta, conditions)).await?;
    let mut h = Headers::new();
    h.push("ETag", put.etag.as_str().to_owned());
    super::sse::push_encryption(&mut h, encryption.as_ref());
    super::sse::push_kms_context(&mut h, encryption.as_ref());
    if let Some(c) = &stored {
        push_checksum(&mut h, c);
        // A single PUT's checksum is of the whole object, as AWS says.
        h.push(
            header::X_AMZ_CHECKSUM_TYPE,
            checksum::ChecksumType::FullObject.as_str(),
        );
    }
    push_version(&mut h, put.version_id);
    super::lifecycle::expiration_of_write(cx, bucket, key, &put, &mut h);
    cx.front.send(res, 200, h, &[]).await
}

/// `x-amz-delete-marker` and `x-amz-version-id` of a DELETE.
fn delete_headers(outcome: DeleteOutcome) -> Headers {
    let mut h = Headers::new();
    if outcome.delete_marker {
        h.push(header::X_AMZ_DELETE_MARKER, "true".to_owned());
    }
    push_version(&mut h, outcome.version_id);
    h
}

/// DeleteObject: 204 whether or not the key (or version) existed; in a versioned bucket,
/// without `versionId`, a delete marker.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let (b, k) = (bucket.to_owned(), key.to_owned());
    let guard = lock::delete_guard(cx, bucket, key);
    // `If-Match`: only if the object (the version) has that ETag, judged in the delete's own
    // transaction (what the proxy's rebalance uses to remove only a copy it made); a delete
    // marker placed in the key's history (moved from another node).
    let conditions = store::DeleteConditions {
        if_match: super::request_headers::if_match(cx.headers)?,
        placed: super::access::placement(cx)?,
    };
    let outcome = cx
        .unblock(move |store| {
            let opts = DeleteOptions {
                version,
                conditions,
                guard: Some(&guard),
            };
            store.delete_object(&b, &k, opts)
        })
        .await?;
    cx.front.send(res, 204, delete_headers(outcome), &[]).await
}

/// CopyObject: `COPY` keeps the source's metadata, `REPLACE` takes this request's; the same
/// for tags with `x-amz-tagging-directive`.
pub(crate) async fn copy<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    source: &CopySource<'_>,
    directive: MetadataDirective,
    source_conditions: &Conditions<'_>,
) -> S3Result<()> {
    let directive = match directive {
        MetadataDirective::Copy => store::MetadataDirective::Copy,
        MetadataDirective::Replace => store::MetadataDirective::Replace(object_meta(cx.headers)?),
    };
    let tagging_directive =
        TaggingDirective::parse(find_header(cx.headers, header::X_AMZ_TAGGING_DIRECTIVE))?;
    let tags = match tagging_directive {
        TaggingDirective::Copy => None,
        TaggingDirective::Replace => Some(object_tags(cx.headers)?),
    };
    let mut conditions = write_conditions(cx.headers)?;
    conditions.placed = super::access::placement(cx)?;
    let (retention, legal_hold) = lock::for_write(cx, bucket, cx.headers, false)?;
    let encryption = super::sse::write_encryption(cx, cx.headers, bucket)?;
    let info = encryption.as_ref().map(store::EncryptWith::info);
    let own = store::RequestOwned {
        acl: super::acl::request_object_acl(cx, bucket)?,
        retention,
        legal_hold,
        encryption,
        checksum: checksum::requested_algorithm(cx.headers)?,
    };
    let source_key = super::sse::copy_source_key(cx)?;
    let source_conditions = OwnedConditions::new(source_conditions);
    let (sb, sk, sv) = (
        source.bucket.to_string(),
        source.key.to_string(),
        source.version_id,
    );
    let (b, k) = (bucket.to_owned(), key.to_owned());
    let (put, source_version) = cx
        .unblock(move |store| {
            let src = store::CopySource {
                bucket: &sb,
                key: &sk,
                range: None,
                version_id: sv,
                customer: source_key.as_ref(),
            };
            let mut source_version = None;
            let opts = CopyOptions {
                directive,
                tags,
                own,
                conditions,
            };
            let put = store.copy_object(src, &b, &k, opts, |info| {
                source_version = info.version_id;
                source_conditions.check_copy_source(info)
            })?;
            Ok::<_, S3Error>((put, source_version))
        })
        .await?;
    let doc = CopyResult {
        kind: CopyKind::Object,
        etag: Cow::Borrowed(put.etag.as_str()),
        last_modified_unix: put.last_modified.to_unix(),
        checksum_type: put.checksum.as_ref().map(|_| Cow::Borrowed("FULL_OBJECT")),
        checksums: copy_checksums(put.checksum.as_ref()),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    let mut h = Headers::new();
    if let Some(v) = source_version {
        h.push(header::X_AMZ_COPY_SOURCE_VERSION_ID, v.to_string());
    }
    push_version(&mut h, put.version_id);
    super::sse::push_encryption(&mut h, info.as_ref());
    super::sse::push_kms_context(&mut h, info.as_ref());
    super::lifecycle::expiration_of_write(cx, bucket, key, &put, &mut h);
    cx.front.send_xml(res, h, &xml).await
}

/// A copy's (or a copied part's) checksum, as its result document gives it.
pub(crate) fn copy_checksums(c: Option<&Checksum>) -> Checksums<'_> {
    c.and_then(|c| {
        let algorithm = checksum::ChecksumAlgorithm::parse(&c.algorithm)?;
        Some(Checksums::one(algorithm, c.value.as_str()))
    })
    .unwrap_or_default()
}

/// DeleteObjects: up to 1000 keys; errors per key; `Quiet` reports errors only.
///
/// S3 requires an integrity check on this request: `Content-MD5` or an `x-amz-checksum-*`
/// header or trailer.
pub(crate) async fn delete_objects<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    content_md5: Option<Md5Digest>,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_DELETE_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, done) = read_small(body, verifier).await?;
    crate::front::body::require_integrity(content_md5.is_some(), &done, cx.headers)?;
    let request = Delete::parse_xml(&xml)?;
    let keys: Vec<(String, Option<String>)> = request
        .objects
        .iter()
        .map(|o| {
            (
                o.key.to_string(),
                o.version_id.as_deref().map(str::to_owned),
            )
        })
        .collect();
    // Each key is a DeleteObject: one the policy denies fails alone, as in S3; so does one
    // whose version object lock protects.
    let permits: Vec<S3Result<_>> = keys
        .iter()
        .map(|(key, version)| {
            let version = version.as_deref().map(VersionId::parse).transpose()?;
            super::access::may_delete(cx, bucket, key, version)?;
            Ok(lock::delete_guard(cx, bucket, key))
        })
        .collect();
    let b = bucket.to_owned();
    let outcomes = cx
        .unblock(
            move |store| -> S3Result<Vec<Result<DeleteOutcome, S3Error>>> {
                store.head_bucket(&b)?;
                Ok(keys
                    .iter()
                    .zip(permits)
                    .map(|((key, version), permit)| {
                        permit.and_then(|guard| {
                            delete_one(&store, &b, key, version.as_deref(), guard)
                        })
                    })
                    .collect())
            },
        )
        .await?;
    let mut doc = DeleteResult::default();
    for (o, outcome) in request.objects.iter().zip(&outcomes) {
        match outcome {
            Ok(_) if request.quiet => {}
            // As S3: a named version echoes it, and says whether it was a delete marker; a
            // delete marker created says so with its id.
            Ok(d) => doc.deleted.push(match &o.version_id {
                Some(v) => DeletedEntry {
                    key: o.key.clone(),
                    version_id: Some(v.clone()),
                    delete_marker: d.delete_marker,
                    delete_marker_version_id: d.delete_marker.then(|| v.clone()),
                },
                None => DeletedEntry {
                    key: o.key.clone(),
                    version_id: None,
                    delete_marker: d.delete_marker,
                    delete_marker_version_id: d
                        .version_id
                        .filter(|_| d.delete_marker)
                        .map(|v| Cow::Owned(v.to_string())),
                },
            }),
            Err(e) => doc.errors.push(DeleteError {
                key: o.key.clone(),
                version_id: o.version_id.clone(),
                code: Cow::Borrowed(e.code.as_str()),
                message: e.message.clone(),
            }),
        }
    }
    let mut out = Vec::new();
    doc.write_xml(&mut out);
    cx.front.send_xml(res, Headers::new(), &out).await
}

/// One key of a DeleteObjects request.
fn delete_one(
    store: &Store,
    bucket: &str,
    key: &str,
    version: Option<&str>,
    guard: impl Fn(&store::ObjectMeta) -> S3Result<()>,
) -> S3Result<DeleteOutcome> {
    if key.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "The key must not be empty",
        ));
    }
    validate::object_key(key)?;
    let version = version.map(VersionId::parse).transpose()?;
    let opts = DeleteOptions {
        version,
        guard: Some(&guard),
        ..DeleteOptions::default()
    };
    store.delete_object(bucket, key, opts)
}
