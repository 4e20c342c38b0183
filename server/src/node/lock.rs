//! Object lock (WORM) on the node: the bucket's configuration (a bucket setting), each
//! version's retention and legal hold (extensions of its record), the lock a write asks for
//! in its headers or gets from the bucket's default, and the lock headers of GET and HEAD.
//!
//! The rules themselves (what may be deleted, how a retention may change) are sans-IO in
//! `ferry_core::s3::xml::lock`; deletes check them where versions are deleted.

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::http::{Header, find_header};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::header;
use ferry_core::s3::version::VersionId;
use ferry_core::s3::xml::lock::{
    self, LockRequest, MAX_LOCK_BODY, ObjectLockConfiguration, Retention,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::access;
use super::context::Cx;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::{BucketSetting, BucketSettings, ObjectMeta};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The bucket's object lock configuration, `None` if object lock is off.
pub(crate) fn configuration(settings: &BucketSettings) -> Option<ObjectLockConfiguration> {
    settings
        .get(BucketSetting::ObjectLock)
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(ObjectLockConfiguration::from_stored)
}

/// The stored form of a new bucket's configuration when CreateBucket asked for object lock
/// (`x-amz-bucket-object-lock-enabled: true`); `None` when it did not.
pub(crate) fn requested_at_creation(headers: &[Header<'_>]) -> S3Result<Option<String>> {
    match find_header(headers, header::X_AMZ_BUCKET_OBJECT_LOCK_ENABLED).map(<[u8]>::trim_ascii) {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case(b"true") => {
            Ok(Some(ObjectLockConfiguration::default().to_stored()))
        }
        Some(v) if v.eq_ignore_ascii_case(b"false") => Ok(None),
        Some(_) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "x-amz-bucket-object-lock-enabled must be true or false",
        )),
    }
}

/// The lock a new version written to `bucket` by a request with `headers` gets: the one its
/// `x-amz-object-lock-*` headers ask for, else the bucket's default retention. Lock headers on
/// a bucket without object lock are `InvalidRequest`, as in S3. With `need_integrity`
/// (PutObject), a write that gets a retention must carry `Content-MD5` or a checksum.
pub(crate) fn for_write<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    headers: &[Header<'_>],
    need_integrity: bool,
) -> S3Result<(Option<Retention>, bool)> {
    let now = now();
    let asked = LockRequest::from_headers(
        find_header(headers, header::X_AMZ_OBJECT_LOCK_MODE),
        find_header(headers, header::X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE),
        find_header(headers, header::X_AMZ_OBJECT_LOCK_LEGAL_HOLD),
        now,
    )?;
    let settings = cx.node.store.bucket_settings(bucket)?;
    let Some(config) = configuration(&settings) else {
        if asked.is_empty() {
            return Ok((None, false));
        }
        return Err(lock::missing_lock_configuration());
    };
    let retention = asked.retention.or_else(|| config.default_for(now));
    if need_integrity && (retention.is_some() || asked.legal_hold.is_some()) {
        let has = |name: &str| find_header(headers, name).is_some();
        let checked = has(header::CONTENT_MD5)
            || has(header::X_AMZ_SDK_CHECKSUM_ALGORITHM)
            || has(header::X_AMZ_TRAILER)
            || headers.iter().any(|h| {
                h.name
                    .get(..15)
                    .is_some_and(|p| p.eq_ignore_ascii_case(header::X_AMZ_CHECKSUM_PREFIX))
            });
        if !checked {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests \
                 with Object Lock parameters",
            ));
        }
    }
    Ok((retention, asked.legal_hold.unwrap_or(false)))
}

/// Set the lock [`for_write`] decided on a new version's metadata.
pub(crate) fn apply(meta: &mut ObjectMeta, (retention, legal_hold): (Option<Retention>, bool)) {
    meta.retention = retention;
    meta.legal_hold = legal_hold;
}

/// The lock headers of GET and HEAD for a version's metadata.
pub(crate) fn push_headers(h: &mut Headers, meta: &ObjectMeta) {
    if let Some(r) = &meta.retention {
        h.push(header::X_AMZ_OBJECT_LOCK_MODE, r.mode.as_str().to_owned());
        h.push(
            header::X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE,
            r.until_header(),
        );
    }
    if meta.legal_hold {
        h.push(header::X_AMZ_OBJECT_LOCK_LEGAL_HOLD, "ON".to_owned());
    }
}

/// Whether this request asks to bypass GOVERNANCE retention and its caller may
/// (`s3:BypassGovernanceRetention`).
pub(crate) fn bypass<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, key: &str) -> bool {
    lock::bypass_requested(find_header(
        cx.headers,
        header::X_AMZ_BYPASS_GOVERNANCE_RETENTION,
    )) && super::access::may_bypass_governance(cx, bucket, key)
}

/// What decides, in the deleting transaction, whether this request may delete a version for
/// good: a legal hold or an active COMPLIANCE retention refuse it, an active GOVERNANCE one
/// unless the request asks for the bypass and may have it.
pub(crate) fn delete_guard<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
) -> impl Fn(&ObjectMeta) -> S3Result<()> + Send + 'static {
    let bypass = bypass(cx, bucket, key);
    let now = now();
    move |meta: &ObjectMeta| {
        lock::check_delete(meta.retention.as_ref(), meta.legal_hold, now, bypass)
    }
}

async fn read_body<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
) -> S3Result<Vec<u8>> {
    let limit = BodyLimit::document(MAX_LOCK_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    Ok(read_small(body, verifier).await?.0)
}

/// GetObjectLockConfiguration: 404 `ObjectLockConfigurationNotFoundError` when lock is off.
pub(crate) async fn get_configuration<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let config = configuration(&settings)
        .ok_or_else(|| S3Error::new(S3ErrorCode::ObjectLockConfigurationNotFoundError))?;
    let mut xml = Vec::new();
    config.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutObjectLockConfiguration: set the default retention (or none). Object lock can be turned
/// on for an existing bucket only while its versioning is enabled (`InvalidBucketState`
/// otherwise, as in S3), and never turned off.
pub(crate) async fn put_configuration<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let xml = read_body(cx, body).await?;
    let config = ObjectLockConfiguration::parse_xml(&xml)?;
    // Only while versioning is enabled: the store judges it in the commit.
    let stored = config.to_stored();
    let b = bucket.to_owned();
    cx.unblock(move |store| {
        store.set_bucket_setting(&b, BucketSetting::ObjectLock, Some(stored.as_bytes()))
    })
    .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}

/// The version's metadata, for the retention and legal hold calls: `InvalidRequest` on a
/// bucket without object lock, as S3 answers.
async fn locked_meta<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<ObjectMeta> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    if configuration(&settings).is_none() {
        return Err(lock::missing_lock_configuration());
    }
    Ok(cx.head_version(bucket, key, version).await?.meta)
}

/// GetObjectRetention: 404 `NoSuchObjectLockConfiguration` when the version has none.
pub(crate) async fn get_retention<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let meta = locked_meta(cx, bucket, key, version).await?;
    let retention = meta
        .retention
        .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchObjectLockConfiguration))?;
    let mut xml = Vec::new();
    lock::write_retention_xml(&retention, &mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutObjectRetention: extend freely; shorten or remove a GOVERNANCE retention with the bypass;
/// never a COMPLIANCE one (`AccessDenied`).
pub(crate) async fn put_retention<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let xml = read_body(cx, body).await?;
    let now = now();
    let retention = lock::parse_retention_xml(&xml, now)?;
    let facts = match &retention {
        Some(r) => access::lock_facts(Some(r.mode.as_str()), Some(r.until), None, now),
        None => Vec::new(),
    };
    access::document_facts(cx, bucket, key, version, "s3:PutObjectRetention", facts)?;
    locked_meta(cx, bucket, key, version).await?;
    let bypass = bypass(cx, bucket, key);
    let (b, k) = (bucket.to_owned(), key.to_owned());
    cx.unblock(move |store| store.put_object_retention(&b, &k, version, retention, now, bypass))
        .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}

/// GetObjectLegalHold: the version's hold, `ON` or `OFF`.
pub(crate) async fn get_legal_hold<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let meta = locked_meta(cx, bucket, key, version).await?;
    let mut xml = Vec::new();
    lock::write_legal_hold_xml(meta.legal_hold, &mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutObjectLegalHold: put a hold on the version, or lift it.
pub(crate) async fn put_legal_hold<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let xml = read_body(cx, body).await?;
    let on = lock::parse_legal_hold_xml(&xml)?;
    let hold = if on { "ON" } else { "OFF" };
    let facts = access::lock_facts(None, None, Some(hold), now());
    access::document_facts(cx, bucket, key, version, "s3:PutObjectLegalHold", facts)?;
    locked_meta(cx, bucket, key, version).await?;
    let (b, k) = (bucket.to_owned(), key.to_owned());
    cx.unblock(move |store| store.put_object_legal_hold(&b, &k, version, on))
        .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}
