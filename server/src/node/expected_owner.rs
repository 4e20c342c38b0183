//! `x-amz-expected-bucket-owner` and, on a copy, `x-amz-source-expected-bucket-owner`: the
//! request goes ahead only if the bucket is the named owner's, else `403 AccessDenied`, as on
//! AWS. Ferry has no AWS accounts: each user owns its buckets, so a bucket owner's "account
//! id" is its canonical id, the `Owner` `ID` ListBuckets and the ACLs show.

use ferry_core::http::find_header_str;
use ferry_core::rt::Runtime;
use ferry_core::s3::header;
use ferry_core::s3::request::{Endpoint, S3Request, UploadPartCopyQuery};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use super::owner;

/// Check the request's expected owners (once it is authorized, so a caller who may not know
/// the bucket learns nothing more from it).
pub(crate) fn check<R: Runtime>(cx: &Cx<'_, R>, s3: &S3Request<'_>) -> S3Result<()> {
    if matches!(
        s3.endpoint,
        Endpoint::ListBuckets(_) | Endpoint::CreateBucket
    ) {
        return Ok(());
    }
    if let Some(expected) = find_header_str(cx.headers, header::X_AMZ_EXPECTED_BUCKET_OWNER) {
        owned_by(cx, s3.bucket_str(), expected)?;
    }
    if let Endpoint::CopyObject { source, .. }
    | Endpoint::UploadPartCopy(UploadPartCopyQuery { source, .. }) = &s3.endpoint
        && let Some(expected) =
            find_header_str(cx.headers, header::X_AMZ_SOURCE_EXPECTED_BUCKET_OWNER)
    {
        owned_by(cx, &source.bucket, expected)?;
    }
    Ok(())
}

/// `403 AccessDenied` unless `bucket` is `expected`'s.
fn owned_by<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, expected: &str) -> S3Result<()> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    if owner::owner_id(cx, &settings) == expected.trim() {
        Ok(())
    } else {
        Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "Access Denied: the bucket is not the expected owner's",
        ))
    }
}
