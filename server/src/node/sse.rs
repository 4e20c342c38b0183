//! Server-side encryption on the node: what a request asks for, and what responses say.
//!
//! The writes of an object's data (PutObject, CopyObject, CreateMultipartUpload, POST Object)
//! take SSE-S3 (`x-amz-server-side-encryption: AES256`), SSE-KMS (`aws:kms`, with the node's
//! keyring; its key id, context and bucket-key headers) and SSE-C
//! (`x-amz-server-side-encryption-customer-*`); the reads of an SSE-C object and the
//! additions to an SSE-C upload (GetObject, HeadObject, GetObjectAttributes, UploadPart,
//! CompleteMultipartUpload) its SSE-C key; the copies (CopyObject, UploadPartCopy) their
//! source's SSE-C key (`x-amz-copy-source-server-side-encryption-customer-*`). The store does
//! the encryption ([`crate::store::EncryptWith`]); the headers are parsed and checked by
//! [`ferry_core::s3::sse`]. DSSE-KMS (`aws:kms:dsse`) is `501 NotImplemented`, as is
//! everything about encryption that `ferry_core::s3::request` refuses before it gets here.
//! A bucket's default encryption (Put/Get/DeleteBucketEncryption, a bucket setting) is what
//! a write that asks for none gets ([`write_encryption`]).

use base64::Engine as _;
use ferry_core::http::Header;
use ferry_core::rt::Runtime;
use ferry_core::s3::header;
use ferry_core::s3::sse::{self as wire, Sse, SseRequest};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use crate::front::Headers;
use crate::store::{CustomerKey, EncryptWith, EncryptionInfo};

/// The SSE-C key of a request, if it has one: over TLS only (AWS refuses SSE-C over plain
/// HTTP), unless the node allows it for tests.
fn customer_key<R: Runtime>(cx: &Cx<'_, R>, key: &wire::CustomerKey) -> S3Result<CustomerKey> {
    if !cx.origin.secure && !cx.node.sse_c_over_http {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "Requests specifying Server Side Encryption with Customer provided keys must be \
             made over a secure connection.",
        ));
    }
    Ok(CustomerKey {
        key: *key.key(),
        key_md5: *key.key_md5(),
    })
}

/// The encryption a write into `bucket` gets (PutObject, CopyObject, CreateMultipartUpload,
/// POST Object with its form fields as `headers`) (`None`: plaintext): what its SSE `headers` ask
/// for, or, when they ask for nothing, the bucket's default encryption, taken exactly as if
/// the request had sent the headers it stands for (`x-amz-server-side-encryption` and, for
/// `aws:kms`, the key id and bucket key). The one place this is decided, for every write.
pub(crate) fn write_encryption<R: Runtime>(
    cx: &Cx<'_, R>,
    headers: &[Header<'_>],
    bucket: &str,
) -> S3Result<Option<EncryptWith>> {
    let mut req = wire::parse_request(headers)?;
    if req.is_empty() {
        req = bucket_default(cx, bucket)?;
    }
    if let Some(key) = &req.customer {
        return Ok(Some(EncryptWith::SseC(customer_key(cx, key)?)));
    }
    match req.sse {
        None => Ok(None),
        Some(Sse::Aes256) => Ok(Some(EncryptWith::SseS3)),
        // The key is found now (an unknown one refused before any data is read), so that
        // responses can name it.
        Some(Sse::AwsKms) => cx
            .node
            .store
            .resolve_encryption(EncryptWith::SseKms {
                key_id: req.kms_key_id,
                context: req.context,
                bucket_key: req.bucket_key_enabled.unwrap_or(false),
            })
            .map(Some),
        Some(Sse::AwsKmsDsse) => Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "DSSE-KMS (aws:kms:dsse) is not implemented",
        )),
    }
}

/// The request a bucket's default encryption stands for (empty: the bucket has none), from
/// the settings cache, which the access check has just filled (no database read unless the
/// bucket changed).
fn bucket_default<R: Runtime>(cx: &Cx<'_, R>, bucket: &str) -> S3Result<SseRequest> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let Some(config) = settings.encryption()? else {
        return Ok(SseRequest::default());
    };
    Ok(SseRequest {
        sse: Some(config.algorithm),
        kms_key_id: config.kms_master_key_id.clone(),
        bucket_key_enabled: config.bucket_key_enabled.then_some(true),
        ..SseRequest::default()
    })
}

/// The SSE-C key a read of an object (or an addition to an upload) came with.
pub(crate) fn read_key<R: Runtime>(cx: &Cx<'_, R>) -> S3Result<Option<CustomerKey>> {
    let req = wire::parse_request(cx.headers)?;
    req.customer
        .as_ref()
        .map(|k| customer_key(cx, k))
        .transpose()
}

/// The SSE-C key of a copy's source
/// (`x-amz-copy-source-server-side-encryption-customer-*`), if it came with one.
pub(crate) fn copy_source_key<R: Runtime>(cx: &Cx<'_, R>) -> S3Result<Option<CustomerKey>> {
    wire::parse_copy_source_key(cx.headers)?
        .as_ref()
        .map(|k| customer_key(cx, k))
        .transpose()
}

/// The response headers that say how an object is encrypted (none for plaintext). An SSE-KMS
/// object's key id is the keyring's id of its key (not an ARN: there is no AWS account).
pub(crate) fn push_encryption(h: &mut Headers, info: Option<&EncryptionInfo>) {
    match info {
        None => {}
        Some(EncryptionInfo::SseS3) => h.push(header::X_AMZ_SSE, Sse::Aes256.as_str()),
        Some(EncryptionInfo::SseC { key_md5 }) => {
            h.push(header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256");
            h.push(
                header::X_AMZ_SSE_CUSTOMER_KEY_MD5,
                base64::engine::general_purpose::STANDARD.encode(key_md5),
            );
        }
        Some(EncryptionInfo::SseKms {
            key_id, bucket_key, ..
        }) => {
            h.push(header::X_AMZ_SSE, Sse::AwsKms.as_str());
            if let Some(id) = key_id {
                h.push(header::X_AMZ_SSE_AWS_KMS_KEY_ID, id.clone());
            }
            if *bucket_key {
                h.push(header::X_AMZ_SSE_BUCKET_KEY_ENABLED, "true");
            }
        }
    }
}

/// The SSE-KMS encryption context a write's response echoes (PutObject, as S3 does; reads do
/// not return it, unless the bucket owner asks: `access::kms_context_mode`).
pub(crate) fn push_kms_context(h: &mut Headers, info: Option<&EncryptionInfo>) {
    if let Some(EncryptionInfo::SseKms {
        context: Some(c), ..
    }) = info
    {
        h.push(header::X_AMZ_SSE_CONTEXT, c.clone());
    }
}
