//! Request bodies as the operations read them: every body goes through one
//! [`BodyVerifier`] (see `ferry_core::s3::body` for the rule "nothing completes before the body
//! is verified"); small documents are read whole here.

use ferry_core::http::body::BodyKind;
use ferry_core::http::server::BodyReader;
use ferry_core::rt::Stream;
use ferry_core::s3::body::{BodyLimit, BodyVerifier, Checks, VerifiedBody};
use ferry_core::s3::checksum::checksum_header;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::Request;

impl Request<'_> {
    /// The verifier of this request's body, from its headers and signature.
    pub(crate) fn body_verifier<S: Stream>(
        &self,
        body: &BodyReader<'_, S>,
        checks: Checks,
        limit: BodyLimit,
    ) -> S3Result<BodyVerifier> {
        BodyVerifier::new(
            self.head.headers,
            self.verified,
            body.content_length(),
            checks,
            limit,
        )
    }
}

/// `MissingContentLength` for a write that has no body framing at all (S3 wants a length).
pub(crate) fn require_length<S: Stream>(body: &BodyReader<'_, S>) -> S3Result<()> {
    if body.kind() == BodyKind::None {
        return Err(S3Error::new(S3ErrorCode::MissingContentLength));
    }
    Ok(())
}

/// S3's integrity requirement of some document bodies (DeleteObjects, PutBucketCors,
/// PutBucketLifecycleConfiguration): a `Content-MD5` (`has_md5`: the request carries one, which
/// the verifier checked), or an `x-amz-checksum-*` header or trailer; `InvalidRequest` otherwise.
pub(crate) fn require_integrity(
    has_md5: bool,
    done: &VerifiedBody,
    headers: &[ferry_core::http::Header<'_>],
) -> S3Result<()> {
    if has_md5 || done.checksum.is_some() || checksum_header(headers)?.is_some() {
        return Ok(());
    }
    Err(S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "Missing required header for this request: Content-MD5 or x-amz-checksum-*",
    ))
}

/// Read a small body (an XML document) whole, decoded and verified (within the verifier's
/// limit), for the operation to act on.
pub(crate) async fn read_small<S: Stream>(
    body: &mut BodyReader<'_, S>,
    mut verifier: BodyVerifier,
) -> S3Result<(Vec<u8>, VerifiedBody)> {
    let mut out = Vec::new();
    while let Some(mut chunk) = body.next_chunk().await? {
        while !chunk.is_empty() {
            let step = verifier.feed(chunk)?;
            out.extend_from_slice(step.data);
            chunk = chunk.get(step.consumed..).unwrap_or_default();
        }
    }
    let done = verifier.finish()?;
    Ok((out, done))
}
