//! Bucket policies: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus. The policy is checked
//! (`ferry_core::s3::policy::Policy::parse`) before it is stored, stored as sent, and evaluated
//! by [`super::access`] on every request to the bucket.

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::policy::{MAX_POLICY_LEN, Policy};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::BucketSetting;

/// PutBucketPolicy: 204 once stored; `MalformedPolicy` (nothing stored) if it does not parse,
/// names another bucket, or uses what Ferry does not evaluate; `AccessDenied` for a public
/// policy (`Policy::is_public`) under `BlockPublicPolicy`.
pub(crate) async fn put<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    // Twice the limit is read, so that a policy a little too large gets the policy's own
    // message; past that, the body limit's.
    let limit = BodyLimit::document(2 * MAX_POLICY_LEN as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (doc, _) = read_small(body, verifier).await?;
    let policy = Policy::parse(&doc, bucket)?;
    // BlockPublicPolicy: a public policy is refused (the owner's included), as on AWS.
    let settings = cx.node.store.bucket_settings(bucket)?;
    if settings.public_access_block()?.block_public_policy && policy.is_public() {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "Access Denied: the bucket's public access block refuses public policies",
        ));
    }
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Policy, Some(&doc)))
        .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}

fn no_policy() -> S3Error {
    S3Error::new(S3ErrorCode::NoSuchBucketPolicy)
}

/// GetBucketPolicy: the policy as it was put; `NoSuchBucketPolicy` without one.
pub(crate) async fn get<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let doc = settings.get(BucketSetting::Policy).ok_or_else(no_policy)?;
    let h = Headers::new().with("Content-Type", "application/json");
    cx.front.send(res, 200, h, doc).await
}

/// DeleteBucketPolicy: 204, with or without a policy before.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Policy, None))
        .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}

/// GetBucketPolicyStatus: whether the policy makes the bucket public; `NoSuchBucketPolicy`
/// without one (as S3 answers).
pub(crate) async fn status<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let policy = settings.policy()?.ok_or_else(no_policy)?;
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PolicyStatus xmlns=\"{}\"><IsPublic>{}</IsPublic></PolicyStatus>",
        ferry_core::s3::xml::S3_NS,
        policy.is_public()
    );
    cx.front.send_xml(res, Headers::new(), xml.as_bytes()).await
}
