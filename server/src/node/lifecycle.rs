//! Bucket lifecycle configuration (Put/Get/DeleteBucketLifecycleConfiguration) and the
//! `x-amz-expiration` header of GET and HEAD. The rules are applied by the node's
//! [`lifecycle_worker`](super::lifecycle_worker).

use ferry_core::rt::Runtime;
use ferry_core::s3::header;
use ferry_core::s3::xml::expiration_header;

use super::context::Cx;
use crate::front::Headers;
use crate::store::ObjectInfo;

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
        h.push(header::X_AMZ_EXPIRATION, expiration_header(at, rule.id()));
    }
}
