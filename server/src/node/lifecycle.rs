//! Bucket lifecycle configuration (Put/Get/DeleteBucketLifecycleConfiguration) and the
//! `x-amz-expiration` header of GET and HEAD. The rules are applied by the node's
//! [`lifecycle_worker`](super::lifecycle_worker).

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::xml::{
    EXPIRATION_HEADER, LifecycleConfiguration, MAX_LIFECYCLE_BODY, expiration_header,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::{BucketSetting, ObjectInfo};

/// GetBucketLifecycleConfiguration: the configuration as stored (normalised when it was put);
/// `NoSuchLifecycleConfiguration` when there is none.
pub(crate) async fn get<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    let doc = cx
        .unblock(move |store| store.bucket_setting(&b, BucketSetting::Lifecycle))
        .await?
        .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchLifecycleConfiguration))?;
    cx.req.send_xml(res, Headers::new(), &doc).await
}

/// PutBucketLifecycleConfiguration: the body (at most 512 KiB, with a `Content-MD5` or a
/// checksum, as S3 requires) parsed and checked, then stored normalised, replacing any
/// configuration.
pub(crate) async fn put<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    content_md5: Option<[u8; 16]>,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_LIFECYCLE_BODY as u64);
    let verifier = cx.req.body_verifier(body, Checks::All, limit)?;
    let (xml, done) = read_small(body, verifier).await?;
    crate::front::body::require_integrity(content_md5.is_some(), &done, cx.headers)?;
    let mut doc = Vec::with_capacity(xml.len());
    LifecycleConfiguration::parse_xml(&xml)?.write_xml(&mut doc);
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Lifecycle, Some(&doc)))
        .await?;
    cx.req.send(res, 200, Headers::new(), &[]).await
}

/// DeleteBucketLifecycle: 204, whether or not there was a configuration.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Lifecycle, None))
        .await?;
    cx.req.send(res, 204, Headers::new(), &[]).await
}

/// `x-amz-expiration` for an object of `bucket` an enabled Expiration rule will remove: from
/// the settings cache (no database read unless the bucket changed). A configuration that
/// cannot be read adds nothing (the worker logs it).
pub(crate) fn expiration<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    info: &ObjectInfo,
    h: &mut Headers,
) {
    let Ok(settings) = cx.node.store.bucket_settings(bucket) else {
        return;
    };
    let Ok(Some(config)) = settings.lifecycle() else {
        return;
    };
    let lm = info.last_modified.to_unix();
    if let Some((at, rule)) = config.expiry(key, info.size, &info.meta.tags, lm, cx.node.day_secs) {
        h.push(EXPIRATION_HEADER, expiration_header(at, rule.id()));
    }
}
