//! ACLs of buckets and objects: Get/PutBucketAcl and Get/PutObjectAcl (an
//! `AccessControlPolicy` document, or a canned ACL or grant headers), and the ACLs that
//! CreateBucket, PutObject, CopyObject and CreateMultipartUpload ask for with headers. The
//! grants are checked (`ferry_core::s3::acl`) and stored as Ferry writes them; [`super::access`]
//! honours them, as the bucket's ownership controls and public access block say:
//! - `BucketOwnerPreferred` (and a bucket without ownership controls): objects belong to their
//!   bucket's owner (whoever wrote them); an object's ACL grants others access to it.
//! - `ObjectWriter`: an object belongs to its writer, who alone (with whom its ACL names) may
//!   read it and its ACL; the bucket's owner still lists and deletes it.
//! - `BucketOwnerEnforced`: ACLs are disabled. Objects are the bucket owner's, no ACL grants
//!   anything, reads of an ACL answer the owner's full control, and a write of any other ACL
//!   is `400 AccessControlListNotSupported`.
//! - `BlockPublicAcls` refuses a write of a public ACL (one granting to AllUsers or
//!   AuthenticatedUsers) with `403 AccessDenied`; `IgnorePublicAcls` makes public grants count
//!   for nothing ([`super::access`]).

use std::sync::Arc;

use ferry_core::http::Header;
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::acl::{Acl, Grantee, MAX_ACL_BODY};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::xml::{ObjectOwnership, OwnershipControls};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use super::owner;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::{BucketSetting, BucketSettings};

/// The bucket's ACL: the stored one, or `private` for its owner (always, with ACLs disabled).
pub(crate) fn bucket_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    settings: &BucketSettings,
) -> S3Result<Arc<Acl>> {
    match settings.acl()? {
        Some(acl) if !settings.object_ownership()?.acls_disabled() => Ok(acl),
        _ => Ok(Arc::new(Acl::private(owner::owner_id(cx, settings)))),
    }
}

/// Whether the bucket takes `acl` as one a request writes (of the bucket, or of an object):
/// `400 AccessControlListNotSupported` with ACLs disabled for anything but the owner's full
/// control (`bucket-owner-full-control`, or the same as a document), `403 AccessDenied` for a
/// public ACL under `BlockPublicAcls`.
pub(crate) fn admit<R: Runtime>(
    cx: &Cx<'_, R>,
    settings: &BucketSettings,
    acl: &Acl,
) -> S3Result<()> {
    // A move of an object between nodes (the cluster's, placed) keeps the ACL it has.
    if super::access::placement(cx)? != crate::store::Placed::default() {
        return Ok(());
    }
    if settings.object_ownership()?.acls_disabled()
        && !acl.is_owner_full_control(owner::owner_id(cx, settings))
    {
        return Err(S3Error::new(S3ErrorCode::AccessControlListNotSupported));
    }
    if acl.is_public() && settings.public_access_block()?.block_public_acls {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "Access Denied: the bucket's public access block refuses public ACLs",
        ));
    }
    Ok(())
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

/// Whether the bucket may take the ownership controls `doc` (normalised): ACLs are disabled
/// (`BucketOwnerEnforced`) only over a bucket ACL that grants its owner alone, else
/// `400 InvalidBucketAclWithObjectOwnership`, as on AWS.
pub(crate) fn check_ownership<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    doc: &[u8],
) -> S3Result<()> {
    let controls = OwnershipControls::parse_xml(doc)?;
    if !controls.object_ownership.acls_disabled() {
        return Ok(());
    }
    let settings = cx.node.store.bucket_settings(bucket)?;
    let owner = owner::owner_id(cx, &settings);
    match settings.acl()? {
        Some(acl) if !acl.is_owner_full_control(owner) => Err(S3Error::new(
            S3ErrorCode::InvalidBucketAclWithObjectOwnership,
        )),
        _ => Ok(()),
    }
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
    admit(cx, &settings, &acl)?;
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
    let acl = Acl::from_headers(
        cx.headers,
        &object_owner(cx, &settings)?,
        owner::owner_id(cx, &settings),
    )?;
    new_object_acl(cx, &settings, acl)
}

/// Who owns an object the caller writes: the writer with `ObjectWriter`, else the bucket's
/// owner.
fn object_owner<R: Runtime>(cx: &Cx<'_, R>, settings: &BucketSettings) -> S3Result<String> {
    let bucket_owner = owner::owner_id(cx, settings);
    Ok(match (settings.object_ownership()?, cx.caller_id()) {
        (ObjectOwnership::ObjectWriter, Some(writer)) => writer.to_owned(),
        _ => bucket_owner.to_owned(),
    })
}

/// The ACL a new object gets, as stored: `acl` (what the request asked, checked by
/// [`admit`]), or none (private to the bucket's owner) — but for an object of another's
/// under `ObjectWriter`, which records its owner in a `private` ACL of its own.
fn new_object_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    settings: &BucketSettings,
    acl: Option<Acl>,
) -> S3Result<Option<Vec<u8>>> {
    let object_owner = object_owner(cx, settings)?;
    let acl = match acl {
        Some(acl) => {
            admit(cx, settings, &acl)?;
            acl
        }
        None if object_owner != owner::owner_id(cx, settings) => Acl::private(&object_owner),
        None => return Ok(None),
    };
    stored(cx, &acl).map(Some)
}

/// The ACL a POST Object form asks for, as stored: its `acl` field (a canned ACL, as
/// `x-amz-acl`) or its `x-amz-grant-*` fields, read as PutObject reads those headers
/// (`fields`: the form's fields under their header names).
pub(crate) fn form_object_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    fields: &[Header<'_>],
) -> S3Result<Option<Vec<u8>>> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let acl = Acl::from_headers(
        fields,
        &object_owner(cx, &settings)?,
        owner::owner_id(cx, &settings),
    )?;
    new_object_acl(cx, &settings, acl)
}

/// An object's ACL: its own, or `private` for its bucket's owner (always, with ACLs
/// disabled).
pub(crate) fn object_acl<R: Runtime>(
    cx: &Cx<'_, R>,
    settings: &BucketSettings,
    doc: Option<&[u8]>,
) -> S3Result<Acl> {
    let doc = doc.filter(|_| !matches!(settings.object_ownership(), Ok(o) if o.acls_disabled()));
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
    // The object's owner: the bucket's, or under `ObjectWriter` its writer (its ACL's owner).
    let owner = match settings.object_ownership()? {
        ObjectOwnership::ObjectWriter => {
            let info = cx.head_version(bucket, key, version).await?;
            object_acl(cx, &settings, info.meta.acl.as_deref())?.owner
        }
        _ => owner::owner_id(cx, &settings).to_owned(),
    };
    let acl = acl_of_request(cx, &doc, &owner)?;
    admit(cx, &settings, &acl)?;
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
