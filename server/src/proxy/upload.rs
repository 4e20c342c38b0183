//! Multipart upload ids that carry their backend.
//!
//! Clients get the proxy's upload ids: the backend's own id behind a tag that names the backend
//! (`<tag>~<backend's id>`, the format of `ferry_core::s3::upload_id`, the tag 8 hex digits of a
//! hash of the backend's `id` in the configuration). So every step of an upload (UploadPart, UploadPartCopy, ListParts,
//! CompleteMultipartUpload, AbortMultipartUpload) goes to the backend it started on, whatever
//! the layouts say by then, even once the layout it started under is gone from the
//! configuration (as long as the backend is still declared):
//!
//! - the tag depends on the backend's configured id alone, not on its place in the list, so
//!   proxies with the same backends, and one proxy across reloads, read an id the same way;
//! - a tag that names no configured backend is `404 NoSuchUpload`: a client's id never sends a
//!   request to a backend the configuration does not have;
//! - an id without a tag (from a proxy from before tags) is found as it was then: with a
//!   `ListParts` on each of the key's owners, the current one first;
//! - a passthrough backend (a Ferry node sharing the clients' keys) gets the request as the
//!   client sent it, tagged id and signature (and aws-chunked body, presigned URL) untouched:
//!   a node takes tagged ids and uses the id after the tag. A node older than tagged ids does
//!   not, so nodes are upgraded before the proxies in front of them;
//! - a backend the proxy re-signs for (`kind = "s3"`, a node with keys of its own) gets its own
//!   id in place of the tagged one: it may be any S3 server;
//! - ids get their tag where they leave the proxy (once: a node answers with its own id):
//!   CreateMultipartUpload's and ListParts' answers here, read whole and relayed
//!   (`forward::forward_read`), ListMultipartUploads' merged listing in `list`.
//!
//! A CompleteMultipartUpload on a backend that is not the key's current owner (the layout
//! changed while the upload was in progress) writes the object there, and the proxy then
//! moves it to its owner before it answers, as `ferry rebalance` moves a multipart object
//! (part by part, so it keeps its ETag; as the bucket's owner, whose key the proxy has): a key
//! lives on its current owner once a write through the proxy is done, whatever layout the
//! upload started under.

use std::sync::Arc;

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::header;
use ferry_core::s3::request::{S3Request, UploadPartCopyQuery};
use ferry_core::s3::xml::{CompleteMultipartUploadResult, ErrorResponse, ListAllMyBucketsResult};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result, upload_id, uri};

use super::client::Client;
use super::context::{Caller, Cx};
use super::copy::CopyOf;
use super::forward::{self, Call, Reply, relay_reply};
use super::layout;
use super::rebalance::Rebalancer;
use super::upload_tag::{UploadId, parse};

/// `raw_query` with its `uploadId` parameter set to `id`.
fn with_upload_id(raw_query: &str, id: &str) -> String {
    raw_query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some(("uploadId", _)) => format!("uploadId={}", uri::encode(id)),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn no_such_upload() -> S3Error {
    S3Error::new(S3ErrorCode::NoSuchUpload)
}

/// Where upload `upload_id` of `(bucket, key)` is, and the request as that backend takes it:
/// as sent to a passthrough backend (a node takes tagged ids), with the backend's own id in
/// place of a tagged one for the others (re-signed: their ids are the backend's).
pub(crate) async fn locate<'a, R: Runtime>(
    cx: &Cx<'a, R>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> S3Result<(usize, Cx<'a, R>)> {
    match parse(cx.p, upload_id) {
        UploadId::At(i, _) if cx.backend(i)?.passthrough => Ok((i, cx.with_query(None))),
        UploadId::At(i, own) => {
            let query = with_upload_id(cx.raw_query(), own);
            Ok((i, cx.with_query(Some(query))))
        }
        UploadId::Unknown => Err(no_such_upload()),
        UploadId::Plain => {
            let at = probe(cx, bucket, key, upload_id).await?;
            Ok((at, cx.with_query(None)))
        }
    }
}

/// Where the untagged upload `upload_id` of `(bucket, key)` is: the first of the key's owners
/// that lists its parts, else the current owner.
async fn probe<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> S3Result<usize> {
    let owners = cx.p.owners(bucket, key);
    let current = owners.first().copied().unwrap_or_default();
    if owners.len() < 2 {
        return Ok(current);
    }
    let list = Call::list_parts(bucket, key, upload_id, 1);
    for &i in &owners {
        if cx.client().send(i, &list).await?.ok() {
            return Ok(i);
        }
    }
    Ok(current)
}

/// A step of a multipart upload, with the upload id it names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum UploadStep<'q> {
    /// CreateMultipartUpload.
    Create,
    /// UploadPart.
    Part(&'q str),
    /// ListParts.
    ListParts(&'q str),
    /// CompleteMultipartUpload.
    Complete(&'q str),
    /// AbortMultipartUpload.
    Abort(&'q str),
}

/// CreateMultipartUpload, UploadPart, ListParts, CompleteMultipartUpload or
/// AbortMultipartUpload.
pub(crate) async fn dispatch<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    step: UploadStep<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let (bucket, key) = (s3.bucket_str(), s3.key_str());
    let upload_id = match step {
        // A new upload starts on the key's current owner.
        UploadStep::Create => {
            let at = cx.p.pick(bucket, key);
            return tagged_answer(cx, at, body, res).await;
        }
        UploadStep::Part(id)
        | UploadStep::ListParts(id)
        | UploadStep::Complete(id)
        | UploadStep::Abort(id) => id,
    };
    let tagged = !matches!(parse(cx.p, upload_id), UploadId::Plain);
    let (at, cx) = locate(cx, bucket, key, upload_id).await?;
    match step {
        // Its answer names the upload: by the id the client knows.
        UploadStep::ListParts(_) if tagged => tagged_answer(&cx, at, body, res).await,
        UploadStep::Complete(_) => complete(&cx, at, bucket, key, body, res).await,
        UploadStep::Create
        | UploadStep::Part(_)
        | UploadStep::ListParts(_)
        | UploadStep::Abort(_) => forward::forward(&cx, at, body, res).await,
    }
}

/// The request forwarded to backend `at` (as [`forward::forward`] sends it), its answer
/// relayed with the upload id in it tagged.
async fn tagged_answer<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    at: usize,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let mut reply = forward::forward_read(cx, at, body).await?;
    if reply.ok() {
        tag_upload_id(&mut reply.body, &cx.backend(at)?.upload_tag);
    }
    relay_reply(res, &reply).await
}

/// Put `tag` (a backend's) on the upload id of a CreateMultipartUpload or ListParts answer
/// (the first `<UploadId>`), unless it is there already. The tag needs no XML escaping, and
/// the backend's id stays as it wrote it.
fn tag_upload_id(xml: &mut Vec<u8>, tag: &str) {
    const OPEN: &[u8] = b"<UploadId>";
    let Some(at) = xml
        .windows(OPEN.len())
        .position(|w| w == OPEN)
        .map(|i| i + OPEN.len())
    else {
        return;
    };
    let value = xml.get(at..).unwrap_or_default();
    let value = value.split(|&c| c == b'<').next().unwrap_or_default();
    let value = std::str::from_utf8(value).unwrap_or_default();
    let carried = upload_id::join(tag, value);
    if carried != value {
        xml.splice(at..at + value.len(), carried.bytes());
    }
}

/// CompleteMultipartUpload on backend `at`, where the upload is. On the key's current owner it
/// is forwarded (and the key's copies on earlier owners deleted); elsewhere the object is then
/// moved to the current owner before the answer (module comment).
async fn complete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    at: usize,
    bucket: &str,
    key: &str,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let owners = cx.p.owners(bucket, key);
    let current = owners.first().copied().unwrap_or_default();
    if at == current {
        return layout::write_then_clean_up(cx, (bucket, key), at, &owners, body, res).await;
    }
    let mut reply = forward::forward_read(cx, at, body).await?;
    // A CompleteMultipartUpload can fail with a 200 and an error document.
    // Only a moved object makes the earlier owners' copies stale: one left on `at` must not be
    // deleted there with them (the owner may hold an older copy, which the clean-up's check
    // would take for the new one).
    if reply.ok()
        && ErrorResponse::parse_xml(&reply.body).is_err()
        && move_to_owner(cx, bucket, key, at, current, &mut reply).await
    {
        layout::clean_up_after_write(cx, bucket, key, &owners).await;
    }
    relay_reply(res, &reply).await
}

/// Move the object a CompleteMultipartUpload (`reply`) just made on backend `from` to the key's
/// current owner `to`; the answer then gives the copy's version id. Whether it moved: a move
/// that fails leaves the object where it was (logged at `warn`), readable there while a layout
/// that places the key there is configured (unless the owner holds an older copy, which is read
/// first), and moved by the next `ferry rebalance`.
async fn move_to_owner<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    from: usize,
    to: usize,
    reply: &mut Reply,
) -> bool {
    let Ok(done) = CompleteMultipartUploadResult::parse_xml(&reply.body) else {
        return false;
    };
    let etag = done.etag.into_owned();
    let version = reply.header(header::X_AMZ_VERSION_ID).map(str::to_owned);
    let owner = bucket_owner(cx, bucket, from).await;
    let mover = Rebalancer::for_proxy(Arc::clone(cx.p));
    let moved = mover
        .move_completed(
            bucket,
            owner.as_ref().unwrap_or(&cx.caller),
            key,
            &etag,
            version.as_deref(),
            (from, to),
        )
        .await;
    match moved {
        Ok(copy_version) => {
            reply
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case(header::X_AMZ_VERSION_ID));
            if let Some(v) = copy_version {
                reply.headers.push((header::X_AMZ_VERSION_ID.into(), v));
            }
            true
        }
        Err(e) => {
            let name = |i: usize| cx.p.backends.get(i).map_or("?", |b| b.id.as_str());
            tracing::warn!(
                bucket,
                key,
                backend = name(from),
                owner = name(to),
                error = %e,
                "a multipart upload completed away from its key's owner, and its object could not be moved there"
            );
            false
        }
    }
}

/// The client key that owns `bucket` on backend `at` (the first whose ListBuckets names it),
/// when `at` shares the clients' keys: the proxy moves a completed upload's object as the
/// bucket owner, as `ferry rebalance` does, since the client who uploaded it may not read it
/// (on S3 a bucket's objects are its owner's). `None` for a backend with keys of its own (every
/// call is signed with those) or when no key owns it (the move then goes as the client).
async fn bucket_owner<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, at: usize) -> Option<Caller> {
    if cx.backend(at).ok()?.credentials.is_some() {
        return None;
    }
    // The bucket itself sorts first among the names it prefixes.
    let list = Call::list_buckets(Some(bucket), Some(1), None);
    for key in &cx.p.shared.client_keys {
        let caller = Caller::of_key(key);
        let Ok(reply) = Client::new(cx.p, &caller).send(at, &list).await else {
            continue;
        };
        let owns = reply.ok()
            && ListAllMyBucketsResult::parse_xml(&reply.body)
                .is_ok_and(|l| l.buckets.first().is_some_and(|b| b.name == bucket));
        if owns {
            return Some(caller);
        }
    }
    None
}

/// UploadPartCopy: from where the source is to where the upload is (the proxy copies between
/// two backends itself).
pub(crate) async fn part_copy<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    copy: &UploadPartCopyQuery<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let (dst, cx) = locate(cx, s3.bucket_str(), s3.key_str(), &copy.upload_id).await?;
    let source = &copy.source;
    let src_owners = cx.p.owners(&source.bucket, &source.key);
    let src = layout::locate(&cx, &source.bucket, &source.key, &src_owners).await?;
    if src == dst {
        forward::forward(&cx, dst, body, res).await
    } else {
        cx.set_backend(dst);
        super::copy::copy_across(&cx, res, s3, CopyOf::Part(copy), src, dst).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_get_the_tag_once() {
        let tagged = |xml: &str| {
            let mut xml = xml.as_bytes().to_vec();
            tag_upload_id(&mut xml, "deadbeef");
            String::from_utf8(xml).unwrap()
        };
        let doc = |id: &str| format!("<R><Key>k</Key><UploadId>{id}</UploadId></R>");
        assert_eq!(tagged(&doc("a&amp;b")), doc("deadbeef~a&amp;b"));
        assert_eq!(tagged(&doc("deadbeef~x")), doc("deadbeef~x"));
        assert_eq!(
            tagged("<Error><Code>NoSuchUpload</Code></Error>"),
            "<Error><Code>NoSuchUpload</Code></Error>"
        );
    }

    #[test]
    fn the_upload_id_parameter_is_replaced() {
        assert_eq!(
            with_upload_id("partNumber=2&uploadId=abcd1234~x%2By", "x+y"),
            "partNumber=2&uploadId=x%2By"
        );
        assert_eq!(
            with_upload_id("uploadId=t~1&X-Amz-Signature=s", "1"),
            "uploadId=1&X-Amz-Signature=s"
        );
    }
}
