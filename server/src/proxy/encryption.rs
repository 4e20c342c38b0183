//! Bucket default encryption through the proxy: every backend holds some of the bucket's
//! objects and encrypts the writes it takes, so Put and Delete go to all of them;
//! GetBucketEncryption reads any one (in `handler`).

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::md5::{content_md5, md5};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::S3Result;
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::request::S3Request;
use ferry_core::s3::xml::{MAX_ENCRYPTION_BODY, ServerSideEncryptionConfiguration};

use super::buckets::{bucket_path, relay_everywhere, require_all_up};
use super::context::Cx;
use super::forward::Call;

/// PutBucketEncryption on every backend: the document is checked here first (a bad one
/// changes nothing anywhere), then sent as Ferry writes it. Every backend must be up; the
/// first backend's refusal is the answer (a retry completes a partial put).
pub(crate) async fn put<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    md5_header: Option<[u8; 16]>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_ENCRYPTION_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, done) = crate::front::body::read_small(body, verifier).await?;
    crate::front::body::require_integrity(md5_header.is_some(), &done, cx.req.headers)?;
    let mut doc = Vec::with_capacity(xml.len());
    ServerSideEncryptionConfiguration::parse_xml(&xml)?.write_xml(&mut doc);
    require_all_up(cx)?;
    let mut call = Call::new("PUT", bucket_path(s3.bucket_str()), "encryption".into());
    call.headers
        .push(("Content-MD5", content_md5(&md5(&doc)).as_str().to_owned()));
    call.headers
        .push(("Content-Type", "application/xml".into()));
    call.body = doc;
    relay_everywhere(cx, &call, res).await
}

/// DeleteBucketEncryption on every backend: 204.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    require_all_up(cx)?;
    let call = Call::new("DELETE", bucket_path(s3.bucket_str()), "encryption".into());
    relay_everywhere(cx, &call, res).await
}
