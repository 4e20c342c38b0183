//! ACLs of buckets and objects: Get/PutBucketAcl and Get/PutObjectAcl (an
//! `AccessControlPolicy` document, or a canned ACL or grant headers), and the ACLs that
//! CreateBucket, PutObject, CopyObject and CreateMultipartUpload ask for with headers. The
//! grants are checked (`ferry_core::s3::acl`) and stored as Ferry writes them; [`super::access`]
//! honours them. Objects belong to their bucket's owner (whoever wrote them): an object's ACL
//! grants others access to it.

use std::sync::Arc;

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::acl::{Acl, Grantee, MAX_ACL_BODY};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use super::owner;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::{BucketSetting, BucketSettings};

/// The bucket's ACL: the stored one, or `private` for its owner.
pub(crate) fn bucket_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    settings: &BucketSettings,
) -> S3Result<Arc<Acl>> {
    match settings.acl()? {
        Some(acl) => Ok(acl),
        None => Ok(Arc::new(Acl::private(owner::owner_id(cx, settings)))),
    }
}

/// `acl` as stored: checked (every user it names exists) and written as a document.
pub(crate) fn stored<R: Runtime>(cx: &Cx<'_, R>, acl: &Acl) -> S3Result<Vec<u8>> {
    for g in &acl.grants {
        if let Grantee::User(id) = &g.grantee
            && cx.users().by_canonical_id(id).is_none()
        {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                format!("Invalid id: no user has the canonical id {id}"),
            ));
        }
    }
    let mut xml = Vec::new();
    acl.write_xml(&mut xml, &|_| None);
    Ok(xml)
}

/// GetBucketAcl.
pub(crate) async fn get_bucket<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let acl = bucket_acl(cx, &settings)?;
    let users = cx.users();
    let mut xml = Vec::new();
    acl.write_xml(&mut xml, &|id| {
        users.by_canonical_id(id).map(|u| u.display_name.clone())
    });
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutBucketAcl: a document, or headers, not both; the document's owner must be the bucket's.
pub(crate) async fn put_bucket<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_ACL_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (doc, _) = read_small(body, verifier).await?;
    let settings = cx.node.store.bucket_settings(bucket)?;
    let owner = owner::owner_id(cx, &settings).to_owned();
    let acl = acl_of_request(cx, &doc, &owner)?;
    let xml = stored(cx, &acl)?;
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Acl, Some(&xml)))
        .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}

/// The ACL a write's headers ask for its object (`x-amz-acl`, `x-amz-grant-*`), as stored;
/// `None` without such headers (private: the bucket owner's alone).
pub(crate) fn request_object_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
) -> S3Result<Option<Vec<u8>>> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let owner = owner::owner_id(cx, &settings).to_owned();
    match Acl::from_headers(cx.headers, &owner, &owner)? {
        Some(acl) => stored(cx, &acl).map(Some),
        None => Ok(None),
    }
}

/// An object's ACL: its own, or `private` for its bucket's owner.
pub(crate) fn object_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    settings: &BucketSettings,
    doc: Option<&[u8]>,
) -> S3Result<Acl> {
    match doc {
        Some(doc) => Acl::parse_xml(doc).map_err(|e| {
            S3Error::with_message(
                S3ErrorCode::InternalError,
                format!("stored object ACL does not parse: {}", e.message),
            )
        }),
        None => Ok(Acl::private(owner::owner_id(cx, settings))),
    }
}

/// GetObjectAcl.
pub(crate) async fn get_object<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<crate::store::VersionId>,
) -> S3Result<()> {
    let info = cx.head_version(bucket, key, version).await?;
    let settings = cx.node.store.bucket_settings(bucket)?;
    let acl = object_acl(cx, &settings, info.meta.acl.as_deref())?;
    let users = cx.users();
    let mut xml = Vec::new();
    acl.write_xml(&mut xml, &|id| {
        users.by_canonical_id(id).map(|u| u.display_name.clone())
    });
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutObjectAcl: a document or headers, as PutBucketAcl; the document's owner must be the
/// bucket's. A metadata-only change: data, ETag and modification time stay.
pub(crate) async fn put_object<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<crate::store::VersionId>,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_ACL_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (doc, _) = read_small(body, verifier).await?;
    let settings = cx.node.store.bucket_settings(bucket)?;
    let owner = owner::owner_id(cx, &settings).to_owned();
    let acl = acl_of_request(cx, &doc, &owner)?;
    let xml = stored(cx, &acl)?;
    let (b, k) = (bucket.to_owned(), key.to_owned());
    cx.unblock(move |store| store.put_object_acl(&b, &k, version, xml))
        .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}

/// The ACL of a Put*Acl request: its headers or its document (not both, not neither); a
/// document's owner must be `owner`.
fn acl_of_request<R: Runtime>(cx: &Cx<'_, R>, doc: &[u8], owner: &str) -> S3Result<Acl> {
    let from_headers = Acl::from_headers(cx.headers, owner, owner)?;
    match (from_headers, doc.trim_ascii().is_empty()) {
        (Some(_), false) => Err(S3Error::with_message(
            S3ErrorCode::UnexpectedContent,
            "This request does not support content when ACL headers are given",
        )),
        (Some(acl), true) => Ok(acl),
        (None, false) => {
            let acl = Acl::parse_xml(doc)?;
            if acl.owner != owner {
                return Err(S3Error::with_message(
                    S3ErrorCode::AccessDenied,
                    "The ACL's owner is not the bucket's owner",
                ));
            }
            Ok(acl)
        }
        (None, true) => Err(S3Error::with_message(
            S3ErrorCode::MissingSecurityHeader,
            "Your request was missing a required header: x-amz-acl, or an ACL document",
        )),
    }
}
