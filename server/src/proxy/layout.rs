//! Layout changes: while earlier layouts (`[[layout]]` blocks older than the current one) are
//! being drained, a key may still live on the backend an earlier layout placed it on.
//!
//! - Object reads (GET, HEAD, tagging, ACL, attributes, retention, legal hold) that miss on
//!   the key's current owner (404 without a delete marker) try its owners under the earlier
//!   layouts, newest first, before the 404 is answered.
//! - Object-level writes of an existing object (tagging, ACL, retention, legal hold) go where
//!   the object is: found with a `HEAD` on each owner in turn. The steps of a multipart upload
//!   go where the upload is, which its id says (`upload`).
//! - PutObject, CompleteMultipartUpload and CopyObject write to the current owner; once the
//!   current owner has the object, the copies on earlier owners are deleted (best effort,
//!   logged), so a key never resolves to stale data.
//! - DeleteObject and DeleteObjects delete on every owner.
//! - Listings merge every backend already; of a key listed by several, the current owner's
//!   entry is the one kept (`list::merged`).
//! - Every bucket found on some backend is created, with its configuration, on a backend that
//!   lacks it before that backend takes traffic (`proxy::sync`, for every proxy, layouts or
//!   not, and for a backend a reload adds).
//!
//! Proxies with the same configuration compute the same owners, so they agree without
//! talking to each other.

use ferry_core::http::find_header;
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::header;
use ferry_core::s3::request::{Endpoint, S3Request};
use ferry_core::s3::uri;
use ferry_core::s3::xml::DeletedEntry;
use ferry_core::s3::{S3Error, S3Result};

use super::Proxy;
use super::client::object_path;
use super::context::Cx;
use super::copy::CopyOf;
use super::forward::{self, Call, Outcome, forward_status, relay_reply};
use super::reissue::Leave;

/// Whether earlier layouts are being drained (else every key lives on its current owner).
pub(crate) fn draining<R: Runtime>(p: &Proxy<R>) -> bool {
    !p.previous.is_empty()
}

/// An object-level operation while earlier layouts are drained (see the module comment).
pub(crate) async fn by_key<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let (bucket, key) = (s3.bucket_str(), s3.key_str());
    let owners = cx.p.owners(bucket, key);
    let current = owners.first().copied().unwrap_or_default();
    match &s3.endpoint {
        Endpoint::GetObject { .. }
        | Endpoint::HeadObject { .. }
        | Endpoint::GetObjectAttributes { .. }
        | Endpoint::GetObjectTagging { .. }
        | Endpoint::GetObjectAcl { .. }
        | Endpoint::GetObjectRetention { .. }
        | Endpoint::GetObjectLegalHold { .. } => read_from_owners(cx, &owners, body, res).await,
        // What the proxy does not interpret: a read like the reads above, anything else like
        // the writes of an existing object below (`?restore`, `?select`).
        Endpoint::Unknown { .. } if matches!(cx.head.method, "GET" | "HEAD") => {
            read_from_owners(cx, &owners, body, res).await
        }
        Endpoint::PutObjectTagging { .. }
        | Endpoint::DeleteObjectTagging { .. }
        | Endpoint::PutObjectAcl { .. }
        | Endpoint::PutObjectRetention { .. }
        | Endpoint::PutObjectLegalHold { .. }
        | Endpoint::Unknown { .. } => {
            let at = locate(cx, bucket, key, &owners).await?;
            forward::forward(cx, at, body, res).await
        }
        Endpoint::PutObject { .. } => {
            write_then_clean_up(cx, (bucket, key), current, &owners, body, res).await
        }
        Endpoint::DeleteObject { .. } => {
            // A conditional delete is judged where the object is.
            let at = if find_header(cx.head.headers, header::IF_MATCH).is_some() {
                locate(cx, bucket, key, &owners).await?
            } else {
                current
            };
            let out = forward_status(cx, at, false, body, res).await?;
            if ok(out) {
                let others: Vec<usize> = owners.iter().copied().filter(|&i| i != at).collect();
                delete_on(cx, bucket, key, &others, cx.raw_query(), true).await;
            }
            Ok(())
        }
        // Multipart uploads: `upload`.
        _ => forward::forward(cx, current, body, res).await,
    }
}

/// An object read from the first of `owners` that has the object (the last one's answer,
/// whatever it is, if none has).
async fn read_from_owners<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    owners: &[usize],
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    for (n, &i) in owners.iter().enumerate() {
        let last = n + 1 == owners.len();
        if let Outcome::Relayed(_) = forward_status(cx, i, !last, body, res).await? {
            break;
        }
    }
    Ok(())
}

/// CopyObject while earlier layouts are drained: from where the source is, to the
/// destination's current owner, then the destination's earlier copies deleted. (UploadPartCopy:
/// `upload::part_copy`.)
pub(crate) async fn copy<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    copy: CopyOf<'_, '_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let (bucket, key) = (s3.bucket_str(), s3.key_str());
    let source = copy.source();
    let owners = cx.p.owners(bucket, key);
    let src_owners = cx.p.owners(&source.bucket, &source.key);
    let src = locate(cx, &source.bucket, &source.key, &src_owners).await?;
    let dst = owners.first().copied().unwrap_or_default();
    if src == dst {
        return write_then_clean_up(cx, (bucket, key), dst, &owners, body, res).await;
    }
    cx.set_backend(dst);
    super::copy::copy_across(cx, res, s3, copy, src, dst).await?;
    clean_up_after_write(cx, bucket, key, &owners).await;
    Ok(())
}

/// A write forwarded to the key's current owner `at` (`owners[0]`) and, while layouts are
/// drained (other owners), the copies on the other owners deleted ([`clean_up_after_write`])
/// before the client has the answer: a write it makes next — an upload completing on the
/// backend it started on — is never taken for one of those copies. Without other owners the
/// answer streams through as any other.
pub(crate) async fn write_then_clean_up<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    (bucket, key): (&str, &str),
    at: usize,
    owners: &[usize],
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    if owners.len() < 2 {
        return forward::forward(cx, at, body, res).await;
    }
    let reply = forward::forward_read(cx, at, body).await?;
    // A CompleteMultipartUpload (or a copy) can fail with a 200 and an error document: the
    // clean-up's HEAD of the owner tells.
    if reply.ok() {
        clean_up_after_write(cx, bucket, key, owners).await;
    }
    relay_reply(res, &reply).await
}

fn ok(out: Outcome) -> bool {
    matches!(out, Outcome::Relayed(s) if (200..300).contains(&s))
}

/// Where the object `(bucket, key)` is: the first of `owners` that has it (the current owner
/// if none has: its answer is the one the client gets).
pub(crate) async fn locate<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    owners: &[usize],
) -> S3Result<usize> {
    let current = owners.first().copied().unwrap_or_default();
    if owners.len() < 2 {
        return Ok(current);
    }
    for &i in owners {
        let head = Call::head_object(bucket, key, None);
        if cx.client().send(i, &head).await?.ok() {
            return Ok(i);
        }
    }
    Ok(current)
}

/// After a write to the current owner (`owners[0]`): once it has the object, delete the
/// copies on the other owners, so that none is read again.
pub(crate) async fn clean_up_after_write<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    owners: &[usize],
) {
    let Some((&current, old)) = owners.split_first() else {
        return;
    };
    if old.is_empty() {
        return;
    }
    // A CompleteMultipartUpload can fail with a 200: the object must be there.
    let head = Call::head_object(bucket, key, None);
    if !cx.client().send(current, &head).await.is_ok_and(|r| r.ok()) {
        return;
    }
    delete_on(cx, bucket, key, old, "", false).await;
}

/// After a DeleteObjects on the keys' current owners: delete the keys `deleted` there on their
/// owners under the layouts being drained too.
pub(crate) async fn delete_elsewhere<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    deleted: &[DeletedEntry<'_>],
) {
    for d in deleted {
        let owners = cx.p.owners(bucket, &d.key);
        let Some(old) = owners.get(1..).filter(|o| !o.is_empty()) else {
            continue;
        };
        let query = d
            .version_id
            .as_ref()
            .map(|v| format!("versionId={}", uri::encode(v)))
            .unwrap_or_default();
        delete_on(cx, bucket, &d.key, old, &query, true).await;
    }
}

/// Delete `(bucket, key)` on the backends `on`, best effort (logged). Without a version id,
/// only where a `HEAD` finds the object (a versioned bucket would get a delete marker where
/// there is nothing to hide). `for_delete`: the client's request is a delete, whose headers
/// (`x-amz-bypass-governance-retention`, ...; not its conditions, judged where the object
/// is) go with these (a write's do not).
async fn delete_on<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    on: &[usize],
    query: &str,
    for_delete: bool,
) {
    let path = object_path(bucket, key);
    let client = cx.client();
    for &i in on {
        if query.is_empty() {
            match client.send(i, &Call::head_object(bucket, key, None)).await {
                Ok(r) if r.ok() => {}
                // (A 403 that says it is absent: a caller that may not list the bucket.)
                Ok(r) if r.status == 404 || r.header(header::X_FERRY_MISSING).is_some() => {
                    continue;
                }
                Ok(r) => {
                    warn(cx.p, i, bucket, key, &r.to_error());
                    continue;
                }
                Err(e) => {
                    warn(cx.p, i, bucket, key, &e);
                    continue;
                }
            }
        }
        // The query as given: the client's own, reissued (its version id, ...).
        let mut delete = Call::delete(&path, query);
        if for_delete {
            delete.carry(cx, Leave::Conditions);
        }
        match client.send(i, &delete).await {
            Ok(r) if r.ok() || r.status == 404 => {}
            Ok(r) => warn(cx.p, i, bucket, key, &r.to_error()),
            Err(e) => warn(cx.p, i, bucket, key, &e),
        }
    }
}

fn warn<R: Runtime>(p: &Proxy<R>, i: usize, bucket: &str, key: &str, e: &S3Error) {
    let backend = p.backends.get(i).map_or("?", |b| b.id.as_str());
    tracing::warn!(
        backend,
        bucket,
        key,
        error = %e,
        "could not delete a key's copy under an earlier layout"
    );
}
