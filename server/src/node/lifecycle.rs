//! Bucket lifecycle configuration (Put/Get/DeleteBucketLifecycleConfiguration) and the
//! `x-amz-expiration` header of GET and HEAD, and of the writes that make an object (PUT,
//! copy, multipart completion). The rules are applied by the node's
//! [`lifecycle_worker`](super::lifecycle_worker).

use ferry_core::rt::Runtime;
use ferry_core::s3::header;
use ferry_core::s3::xml::expiration_header;

use super::context::Cx;
use crate::front::Headers;
use crate::store::{ObjectInfo, PutResult};

/// `x-amz-expiration` for an object of `bucket` an enabled Expiration rule will remove
/// (GetObject, HeadObject).
pub(crate) fn expiration<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    info: &ObjectInfo,
    h: &mut Headers,
) {
    let lm = info.last_modified.to_unix();
    push_expiration(cx, bucket, (key, info.size, &info.meta.tags, lm), h);
}

/// `x-amz-expiration` for the object a write has just made (PutObject, CopyObject,
/// CompleteMultipartUpload), as AWS answers them.
pub(crate) fn expiration_of_write<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    put: &PutResult,
    h: &mut Headers,
) {
    let lm = put.last_modified.to_unix();
    push_expiration(cx, bucket, (key, put.size, &put.tags, lm), h);
}

/// The header for an object (its key, size, tags and modification time): from the settings
/// cache (no database read unless the bucket changed). A configuration that cannot be read
/// adds nothing (the worker logs it).
fn push_expiration<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    (key, size, tags, lm): (&str, u64, &[(String, String)], i64),
    h: &mut Headers,
) {
    let Ok(settings) = cx.node.store.bucket_settings(bucket) else {
        return;
    };
    let Ok(Some(config)) = settings.lifecycle() else {
        return;
    };
    if let Some((at, rule)) = config.expiry(key, size, tags, lm, cx.node.day_secs) {
        h.push(header::X_AMZ_EXPIRATION, expiration_header(at, rule.id()));
    }
}
