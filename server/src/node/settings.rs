//! Bucket configuration documents kept whole as bucket settings (CORS, lifecycle, default
//! encryption, public access block, ownership controls): Get answers the stored document, Put checks and normalises its body and
//! stores it in place of any other, Delete removes it. What differs is a row of core's table,
//! a [`ConfigDocument`] (`ferry_core::s3::bucket_config`).

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::bucket_config::ConfigDocument;
use ferry_core::s3::{S3Error, S3Result};

use super::context::Cx;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::BucketSetting;

/// Get: the document as stored (normalised when it was put); `doc.missing` when there is none.
pub(crate) async fn get<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    doc: &ConfigDocument,
) -> S3Result<()> {
    let (b, kind) = (bucket.to_owned(), BucketSetting::from(doc.kind));
    let stored = cx
        .unblock(move |store| store.bucket_setting(&b, kind))
        .await?
        .ok_or_else(|| S3Error::new(doc.missing))?;
    cx.front.send_xml(res, Headers::new(), &stored).await
}

/// Put: the body (at most `doc.max_body` bytes, with a `Content-MD5` or a checksum, as S3
/// requires) parsed and checked, then stored normalised, replacing any document.
pub(crate) async fn put<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    content_md5: Option<[u8; 16]>,
    doc: &ConfigDocument,
) -> S3Result<()> {
    put_checked(cx, body, res, bucket, content_md5, doc, |_| Ok(())).await
}

/// [`put`], with `check` asked about the normalised document before it is stored (an error
/// stores nothing).
pub(crate) async fn put_checked<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    content_md5: Option<[u8; 16]>,
    doc: &ConfigDocument,
    check: impl FnOnce(&[u8]) -> S3Result<()>,
) -> S3Result<()> {
    let limit = BodyLimit::document(doc.max_body as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, done) = read_small(body, verifier).await?;
    crate::front::body::require_integrity(content_md5.is_some(), &done, cx.headers)?;
    let stored = (doc.normalise)(&xml)?;
    check(&stored)?;
    let (b, kind) = (bucket.to_owned(), BucketSetting::from(doc.kind));
    cx.unblock(move |store| store.set_bucket_setting(&b, kind, Some(&stored)))
        .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}

/// Delete: 204, whether or not there was a document.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    doc: &ConfigDocument,
) -> S3Result<()> {
    let (b, kind) = (bucket.to_owned(), BucketSetting::from(doc.kind));
    cx.unblock(move |store| store.set_bucket_setting(&b, kind, None))
        .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}
