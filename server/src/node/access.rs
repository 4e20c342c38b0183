//! Who may do what, as S3 decides it for one account's buckets: a bucket's policy first (an
//! explicit `Deny` refuses anyone, the owner too; an `Allow` admits whoever it names), then
//! ownership: the owner may do everything else with its bucket, others nothing. A bucket
//! records its owner (the user who created it); one without (created before users existed)
//! belongs to the primary user. The policy itself is the owner's alone, as it is the bucket
//! owner's account's on AWS: no policy lets anyone else read, replace or delete it (another
//! user it lets in gets `405 MethodNotAllowed`), and the owner may always, so that no policy
//! locks it out (as AWS lets the account's root user). The public access block and the
//! ownership controls are the owner's alone too. The block's `RestrictPublicBuckets` turns a
//! public policy's `Allow` into nothing for anyone but the owner, `IgnorePublicAcls` drops
//! public grants; under `ObjectWriter` the bucket's owner reads an object another wrote (or its
//! ACL) only as that object's ACL allows.

use std::borrow::Cow;

use ferry_core::http::head::RequestHead;
use ferry_core::http::{find_header, find_header_str};
use ferry_core::rt::Runtime;
use ferry_core::s3::acl::{Acl, Permission};
use ferry_core::s3::cluster::{self, ClusterKeys};
use ferry_core::s3::header;
use ferry_core::s3::listing::{
    ListObjectsQuery, ListObjectsV2Query, ListUploadsQuery, ListVersionsQuery,
};
use ferry_core::s3::policy::{Decision, PolicyRequest, Principal};
use ferry_core::s3::request::{CopySource, Endpoint, S3Request, UploadPartCopyQuery};
use ferry_core::s3::sigv4::AuthKind;
use ferry_core::s3::xml::ObjectOwnership;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::{Cx, NodeApi};
use super::owner;
use crate::front::Headers;
use crate::store::Placed;
use crate::store::{HeadOptions, ObjectMeta, VersionId};

/// The S3 action an endpoint is, as policies name it, and whether its resource is an object
/// (`arn:aws:s3:::bucket/key`) rather than the bucket. `None`: no policy applies (ListBuckets
/// and CreateBucket are the caller's own; the fence is the owner's alone).
fn action(endpoint: &Endpoint<'_>) -> Option<(&'static str, bool)> {
    Some(match endpoint {
        Endpoint::ListBuckets { .. } | Endpoint::CreateBucket | Endpoint::BucketFence { .. } => {
            return None;
        }
        Endpoint::DeleteBucket => ("s3:DeleteBucket", false),
        Endpoint::HeadBucket | Endpoint::ListObjects { .. } | Endpoint::ListObjectsV2 { .. } => {
            ("s3:ListBucket", false)
        }
        Endpoint::GetBucketLocation => ("s3:GetBucketLocation", false),
        Endpoint::GetBucketVersioning => ("s3:GetBucketVersioning", false),
        Endpoint::PutBucketVersioning { .. } => ("s3:PutBucketVersioning", false),
        Endpoint::ListObjectVersions { .. } => ("s3:ListBucketVersions", false),
        Endpoint::PutBucketPolicy => ("s3:PutBucketPolicy", false),
        Endpoint::GetBucketPolicy => ("s3:GetBucketPolicy", false),
        Endpoint::DeleteBucketPolicy => ("s3:DeleteBucketPolicy", false),
        Endpoint::GetBucketPolicyStatus => ("s3:GetBucketPolicyStatus", false),
        Endpoint::GetPublicAccessBlock => ("s3:GetBucketPublicAccessBlock", false),
        // AWS names no action of its own for DeletePublicAccessBlock.
        Endpoint::PutPublicAccessBlock { .. } | Endpoint::DeletePublicAccessBlock => {
            ("s3:PutBucketPublicAccessBlock", false)
        }
        Endpoint::GetBucketOwnershipControls => ("s3:GetBucketOwnershipControls", false),
        // AWS names no action of its own for DeleteBucketOwnershipControls.
        Endpoint::PutBucketOwnershipControls { .. } | Endpoint::DeleteBucketOwnershipControls => {
            ("s3:PutBucketOwnershipControls", false)
        }
        Endpoint::GetBucketAcl => ("s3:GetBucketAcl", false),
        Endpoint::GetObjectAcl { .. } => ("s3:GetObjectAcl", true),
        Endpoint::PutObjectAcl { .. } => ("s3:PutObjectAcl", true),
        Endpoint::GetBucketCors => ("s3:GetBucketCORS", false),
        Endpoint::GetBucketTagging => ("s3:GetBucketTagging", false),
        Endpoint::PutBucketTagging | Endpoint::DeleteBucketTagging => {
            ("s3:PutBucketTagging", false)
        }
        Endpoint::GetObjectTagging { .. } => ("s3:GetObjectTagging", true),
        Endpoint::PutObjectTagging { .. } => ("s3:PutObjectTagging", true),
        Endpoint::DeleteObjectTagging { .. } => ("s3:DeleteObjectTagging", true),
        Endpoint::PutBucketCors { .. } | Endpoint::DeleteBucketCors => ("s3:PutBucketCORS", false),
        Endpoint::PutBucketAcl => ("s3:PutBucketAcl", false),
        Endpoint::GetObjectLockConfiguration => ("s3:GetBucketObjectLockConfiguration", false),
        Endpoint::PutObjectLockConfiguration => ("s3:PutBucketObjectLockConfiguration", false),
        Endpoint::GetObjectRetention { .. } => ("s3:GetObjectRetention", true),
        Endpoint::PutObjectRetention { .. } => ("s3:PutObjectRetention", true),
        Endpoint::GetObjectLegalHold { .. } => ("s3:GetObjectLegalHold", true),
        Endpoint::PutObjectLegalHold { .. } => ("s3:PutObjectLegalHold", true),
        Endpoint::GetBucketLifecycleConfiguration => ("s3:GetLifecycleConfiguration", false),
        // AWS names no action of its own for DeleteBucketLifecycle.
        Endpoint::PutBucketLifecycleConfiguration { .. } | Endpoint::DeleteBucketLifecycle => {
            ("s3:PutLifecycleConfiguration", false)
        }
        Endpoint::GetBucketEncryption => ("s3:GetEncryptionConfiguration", false),
        // AWS names no action of its own for DeleteBucketEncryption.
        Endpoint::PutBucketEncryption { .. } | Endpoint::DeleteBucketEncryption => {
            ("s3:PutEncryptionConfiguration", false)
        }
        Endpoint::ListMultipartUploads { .. } => ("s3:ListBucketMultipartUploads", false),
        // Each key is checked as a DeleteObject by the operation (`may_delete`).
        Endpoint::DeleteObjects { .. } => return None,
        // The key and the signer are in the form: checked by the operation (`may_put`).
        Endpoint::PostObject => return None,
        Endpoint::GetObject { .. } | Endpoint::HeadObject { .. } => ("s3:GetObject", true),
        Endpoint::GetObjectAttributes { .. } => ("s3:GetObjectAttributes", true),
        Endpoint::PutObject { .. }
        | Endpoint::CopyObject { .. }
        | Endpoint::CreateMultipartUpload
        | Endpoint::UploadPart { .. }
        | Endpoint::UploadPartCopy { .. }
        | Endpoint::CompleteMultipartUpload { .. } => ("s3:PutObject", true),
        Endpoint::DeleteObject { .. } => ("s3:DeleteObject", true),
        Endpoint::AbortMultipartUpload { .. } => ("s3:AbortMultipartUpload", true),
        Endpoint::ListParts { .. } => ("s3:ListMultipartUploadParts", true),
        // Refused before anyone is asked (`NodeApi::dispatch`).
        Endpoint::Unknown { .. } => return None,
    })
}

/// Whether the cluster sealed `req` (`ferry_core::s3::cluster`): `Ok(true)` for a valid seal,
/// `Ok(false)` for a request with nothing only the cluster may send, and `AccessDenied` with
/// the reason for one with `x-ferry-*` headers or parameters and no valid seal — never
/// ignored, never taken on a user's word, a bucket's ownership or a source address.
pub(crate) fn sealed<R: Runtime>(
    node: &NodeApi<R>,
    head: &RequestHead<'_, '_>,
    s3: &S3Request<'_>,
) -> S3Result<bool> {
    let internal_params = s3.query.iter().any(|(n, _)| cluster::is_internal(n))
        || matches!(s3.endpoint, Endpoint::BucketFence { .. });
    ClusterKeys::check(
        node.cluster.as_ref(),
        head.method,
        head.target,
        head.headers,
        internal_params,
        node.rt.unix_time(),
    )
    .map_err(|e| {
        tracing::debug!(reason = ?e, "x-ferry-* request refused");
        S3Error::with_message(S3ErrorCode::AccessDenied, e.message())
    })
}

/// Ferry's placement headers of a write or a delete (`request_headers::placed`): the
/// cluster's alone (a request it sealed), whoever signed the request — a bucket's owner
/// included. A version placed in a key's history or dated in the past is what moving a
/// bucket's objects between nodes needs, nothing more.
pub(crate) fn placement<R: Runtime>(cx: &Cx<'_, R>) -> S3Result<Placed> {
    let placed = super::request_headers::placed(cx.headers)?;
    if placed != Placed::default() {
        cluster_only(cx)?;
    }
    Ok(placed)
}

/// Whether a GetObject or HeadObject asks for the SSE-KMS encryption context
/// (`x-ferry-encryption-context-mode: ENABLED`, Ferry's own: reads do not return it on AWS):
/// the cluster's alone, as placement is, for a move to keep it on the copy.
pub(crate) fn kms_context_mode<R: Runtime>(cx: &Cx<'_, R>) -> S3Result<bool> {
    let asked = find_header_str(cx.headers, header::X_FERRY_ENCRYPTION_CONTEXT_MODE)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("ENABLED"));
    if asked {
        cluster_only(cx)?;
    }
    Ok(asked)
}

/// `AccessDenied` unless the cluster sealed the request. (`sealed` refused any `x-ferry-*`
/// header without a seal already: this keeps each internal operation's own check beside it.)
fn cluster_only<R: Runtime>(cx: &Cx<'_, R>) -> S3Result<()> {
    if cx.front.sealed {
        Ok(())
    } else {
        Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            ferry_core::s3::cluster::SealError::Missing.message(),
        ))
    }
}

/// Whether the caller may run `s3` (and read a copy's source): `NoSuchBucket` for a bucket
/// that does not exist, `AccessDenied` for what the policy denies or, without its leave, for
/// another user's bucket. ListBuckets and CreateBucket are any user's (each sees its own
/// buckets; creating checks the name's owner itself); DeleteObjects checks each key.
///
/// Runs on the runtime thread: the settings (and the parsed policy) come from the store's
/// cache, read from the database only after a change to the bucket (as
/// `NodeConfig::open_inline` lookups do).
pub(crate) fn authorize<R: Runtime>(cx: &Cx<'_, R>, s3: &S3Request<'_>) -> S3Result<()> {
    match &s3.endpoint {
        Endpoint::ListBuckets { .. } | Endpoint::CreateBucket => return Ok(()),
        // The fence is the cluster's alone (a proxy's DeleteBucket: sealed), set for its
        // caller, who must be one who may delete the bucket: a fence closes it to writes and
        // says whether it is empty, neither of which anyone else may learn or do.
        Endpoint::BucketFence { .. } => {
            cluster_only(cx)?;
            return decide(cx, None, s3.bucket_str(), None, "s3:DeleteBucket");
        }
        Endpoint::DeleteObjects { .. } => {
            // Checked per key by the operation; here only that the bucket exists.
            cx.node.store.bucket_settings(s3.bucket_str())?;
            return Ok(());
        }
        _ => {}
    }
    let Some((action, on_object)) = action(&s3.endpoint) else {
        return Ok(());
    };
    // The version the operation names (the router has checked it); the current one if none.
    let version = s3.endpoint.version_id();
    let action = if on_object && version.is_some() {
        of_version(action)
    } else {
        action
    };
    let key = on_object.then(|| (s3.key_str(), version));
    // Tags, a retention or a hold in the request's document: judged once it is read
    // (`document_facts`), if the policy asks about them.
    let in_document = matches!(
        s3.endpoint,
        Endpoint::PutObjectTagging { .. }
            | Endpoint::PutObjectRetention { .. }
            | Endpoint::PutObjectLegalHold { .. }
    );
    if in_document && asks_about_documents(cx, s3.bucket_str())? {
        return Ok(());
    }
    decide(cx, Some(&s3.endpoint), s3.bucket_str(), key, action)?;
    // A copy reads its source.
    if let Endpoint::CopyObject { source, .. }
    | Endpoint::UploadPartCopy(UploadPartCopyQuery { source, .. }) = &s3.endpoint
    {
        let read = if source.version_id.is_some() {
            "s3:GetObjectVersion"
        } else {
            "s3:GetObject"
        };
        let src = (source.key.as_ref(), source.version_id);
        decide(cx, None, &source.bucket, Some(src), read)?;
    }
    Ok(())
}

/// The condition keys whose values a PutObjectTagging, PutObjectRetention or
/// PutObjectLegalHold has in its document rather than its head.
const DOCUMENT_KEYS: [&str; 2] = ["s3:RequestObjectTag", "s3:object-lock-"];

/// Whether `bucket`'s policy asks about what a request's document says (`DOCUMENT_KEYS`).
fn asks_about_documents<R: Runtime>(cx: &Cx<'_, R>, bucket: &str) -> S3Result<bool> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    Ok(settings
        .policy()?
        .is_some_and(|p| DOCUMENT_KEYS.iter().any(|k| p.uses_key_prefix(k))))
}

/// The rest of `authorize` for an operation whose document the policy asks about
/// (`action`: PutObjectTagging, PutObjectRetention, PutObjectLegalHold), once the document
/// is read: `facts` are its condition keys and values. Nothing to do (it was decided before
/// the document was read) when the policy does not ask.
pub(crate) fn document_facts<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
    action: &'static str,
    mut facts: Vec<(String, String)>,
) -> S3Result<()> {
    if !asks_about_documents(cx, bucket)? {
        return Ok(());
    }
    let action = match version {
        Some(v) => {
            facts.push(("s3:versionid".to_owned(), v.to_string()));
            of_version(action)
        }
        None => action,
    };
    decide_with(cx, None, bucket, Some((key, version)), action, &facts)
}

/// The condition keys of a request's tags (`x-amz-tagging`, or a PutObjectTagging's
/// document): `s3:RequestObjectTag/KEY` and `s3:RequestObjectTagKeys`.
pub(crate) fn tag_facts<'t>(
    tags: impl IntoIterator<Item = (&'t str, &'t str)>,
) -> Vec<(String, String)> {
    let mut facts = Vec::new();
    for (k, v) in tags {
        facts.push((format!("{REQUEST_OBJECT_TAG}{k}"), v.to_owned()));
        facts.push((REQUEST_OBJECT_TAG_KEYS.to_owned(), k.to_owned()));
    }
    facts
}

/// The condition keys of an object lock retention (mode, date, days left at `now`) or hold.
pub(crate) fn lock_facts(
    mode: Option<&str>,
    until: Option<i64>,
    legal_hold: Option<&str>,
    now: i64,
) -> Vec<(String, String)> {
    let mut facts = Vec::new();
    if let Some(m) = mode {
        facts.push(("s3:object-lock-mode".to_owned(), m.to_owned()));
    }
    if let Some(until) = until {
        let date = ferry_core::time::DateTime::from_unix(until).iso8601();
        facts.push((
            "s3:object-lock-retain-until-date".to_owned(),
            date.to_string(),
        ));
        // Whole days left, a part of a day counting as one.
        let days = days_left(until, now);
        facts.push((
            "s3:object-lock-remaining-retention-days".to_owned(),
            days.to_string(),
        ));
    }
    if let Some(h) = legal_hold {
        facts.push(("s3:object-lock-legal-hold".to_owned(), h.to_owned()));
    }
    facts
}

/// Whole days from `now` to `until` (Unix seconds), a part of a day counting as one; 0 once
/// past.
fn days_left(until: i64, now: i64) -> i64 {
    let secs = until.saturating_sub(now).max(0);
    secs / 86_400 + i64::from(secs % 86_400 != 0)
}

/// The action of an object operation on a version named by `versionId`, as AWS names it
/// (GetObject of a version is `s3:GetObjectVersion`, ...); writes keep theirs.
fn of_version(action: &'static str) -> &'static str {
    match action {
        "s3:GetObject" => "s3:GetObjectVersion",
        "s3:DeleteObject" => "s3:DeleteObjectVersion",
        "s3:GetObjectTagging" => "s3:GetObjectVersionTagging",
        "s3:PutObjectTagging" => "s3:PutObjectVersionTagging",
        "s3:DeleteObjectTagging" => "s3:DeleteObjectVersionTagging",
        "s3:GetObjectAcl" => "s3:GetObjectVersionAcl",
        "s3:PutObjectAcl" => "s3:PutObjectVersionAcl",
        "s3:GetObjectAttributes" => "s3:GetObjectVersionAttributes",
        other => other,
    }
}

/// Whether the caller may delete `key` in `bucket` (each key of a DeleteObjects; of a
/// version if it names one).
pub(crate) fn may_delete<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let action = if version.is_some() {
        "s3:DeleteObjectVersion"
    } else {
        "s3:DeleteObject"
    };
    decide(cx, None, bucket, Some((key, version)), action)
}

/// A read of an object that is not there (GetObject, HeadObject, GetObjectAttributes: `error`
/// is `NoSuchKey` or `NoSuchVersion`), answered as AWS answers it: `404` to a caller that may
/// list the bucket (`s3:ListBucket`, by policy, ACL or ownership), which could learn the
/// absence by listing; `403 AccessDenied` to one that may not, with none of the `404`'s
/// headers (`extra`: a delete marker's), so that it learns nothing of which keys exist. In a
/// request the cluster sealed, such a `403` says for the proxy that the object is absent
/// ([`header::X_FERRY_MISSING`]), unless a delete marker stands for it.
pub(crate) fn hide_absence<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    error: &mut S3Error,
    extra: &mut Headers,
) {
    if !matches!(
        error.code,
        S3ErrorCode::NoSuchKey | S3ErrorCode::NoSuchVersion
    ) || decide(cx, None, bucket, None, "s3:ListBucket").is_ok()
    {
        return;
    }
    let absent = error.code;
    // A delete marker is no absence to look past: a proxy draining layouts stops at it, as at
    // its `404`, so no older copy shows.
    let marker = extra
        .as_slice()
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case(header::X_AMZ_DELETE_MARKER));
    *error = S3Error::new(S3ErrorCode::AccessDenied);
    *extra = Headers::new();
    if cx.front.sealed && !marker {
        extra.push(header::X_FERRY_MISSING, absent.as_str().to_owned());
    }
}

/// Whether the caller may write `key` in `bucket` (a POST Object, once its form is read:
/// `facts`, its fields' condition keys, [`form_facts`]).
pub(crate) fn may_put<R: Runtime>(
    cx: &Cx<'_, R>,
    bucket: &str,
    key: &str,
    facts: &[(String, String)],
) -> S3Result<()> {
    decide_with(cx, None, bucket, Some((key, None)), "s3:PutObject", facts)
}

/// Whether the caller may bypass GOVERNANCE retention on `key` in `bucket`
/// (`s3:BypassGovernanceRetention`; asked only of requests that send
/// `x-amz-bypass-governance-retention: true`).
pub(crate) fn may_bypass_governance<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, key: &str) -> bool {
    decide(
        cx,
        None,
        bucket,
        Some((key, None)),
        "s3:BypassGovernanceRetention",
    )
    .is_ok()
}

/// `endpoint`: for its parameters' condition keys (a listing's prefix).
fn decide<R: Runtime>(
    cx: &Cx<'_, R>,
    endpoint: Option<&Endpoint<'_>>,
    bucket: &str,
    key: Option<(&str, Option<VersionId>)>,
    action: &str,
) -> S3Result<()> {
    decide_with(cx, endpoint, bucket, key, action, &[])
}

/// [`decide`] with more condition keys than the request's head has (`facts`: a document's).
fn decide_with<R: Runtime>(
    cx: &Cx<'_, R>,
    endpoint: Option<&Endpoint<'_>>,
    bucket: &str,
    key: Option<(&str, Option<VersionId>)>,
    action: &str,
    facts: &[(String, String)],
) -> S3Result<()> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    let is_owner = Some(owner::owner_id(cx, &settings)) == cx.caller_id();
    // A proxy reads every bucket's CORS rules with its own key, the primary user's, to answer
    // preflights (which anyone may send, so the rules are no secret).
    if action == "s3:GetBucketCORS"
        && cx.caller_id() == Some(cx.users().primary().canonical_id.as_str())
    {
        return Ok(());
    }
    // The policy itself is the owner's account's alone, as on AWS (each user is an account of
    // its own here): the owner may always read, replace and delete it, whatever it says, so
    // that no policy locks it out; another user gets `405 MethodNotAllowed` if the policy lets
    // it in, else `403`; an anonymous request `403` always.
    let of_policy = matches!(
        action,
        "s3:GetBucketPolicy" | "s3:PutBucketPolicy" | "s3:DeleteBucketPolicy"
    );
    if of_policy && is_owner {
        return Ok(());
    }
    // The public access block and the ownership controls guard what a policy or an ACL may
    // open: they are the owner's alone, as the policy is (no policy hands them to another,
    // who could lift the block), though the owner's own policy may still deny them.
    let guards = matches!(
        action,
        "s3:PutBucketPublicAccessBlock" | "s3:PutBucketOwnershipControls"
    );
    if guards && !is_owner {
        return Err(S3Error::new(S3ErrorCode::AccessDenied));
    }
    let block = settings.public_access_block()?;
    let ownership = settings.object_ownership()?;
    // The object's metadata (its tags for the policy, its ACL for the grants), read at most
    // once and only if asked; `None` when there is no such object.
    let object = std::cell::OnceCell::new();
    let object_meta = || -> S3Result<Option<&ObjectMeta>> {
        let Some((key, version)) = key else {
            return Ok(None);
        };
        if let Some(found) = object.get() {
            return Ok(Option::as_ref(found));
        }
        let found = match cx.node.store.head_object(
            bucket,
            key,
            HeadOptions {
                version,
                ..HeadOptions::default()
            },
        ) {
            Ok(info) => Some(info.meta),
            Err(e)
                if matches!(
                    e.code,
                    S3ErrorCode::NoSuchKey
                        | S3ErrorCode::NoSuchVersion
                        | S3ErrorCode::MethodNotAllowed
                ) =>
            {
                None
            }
            Err(e) => return Err(e),
        };
        Ok(Option::as_ref(object.get_or_init(|| found)))
    };
    let decision = match settings.policy()? {
        Some(policy) => {
            let resource = match key {
                Some((key, _)) => format!("arn:aws:s3:::{bucket}/{key}"),
                None => format!("arn:aws:s3:::{bucket}"),
            };
            let request = context(cx, endpoint);
            // s3:ExistingObjectTag/<key>: the object's tags, read only for a policy that asks.
            let mut tags: Vec<(String, &str)> = Vec::new();
            if policy.uses_key_prefix(EXISTING_OBJECT_TAG)
                && let Some(meta) = object_meta()?
            {
                tags = meta
                    .tags
                    .iter()
                    .map(|(k, v)| (format!("{EXISTING_OBJECT_TAG}{k}"), v.as_str()))
                    .collect();
            }
            let context: Vec<(&str, &str)> = request
                .iter()
                .map(|(k, v)| (k.as_ref(), v.as_ref()))
                .chain(tags.iter().map(|(k, v)| (k.as_str(), *v)))
                .chain(facts.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .collect();
            let decision = policy.evaluate(&PolicyRequest {
                principal: cx.caller.map(|u| Principal {
                    name: &u.name,
                    canonical_id: &u.canonical_id,
                    account: account_id(u),
                }),
                // No client request is a service's (server access logs are delivered by the
                // node itself, not through this path).
                service: None,
                action,
                resource: &resource,
                context: &context,
            });
            // RestrictPublicBuckets: a public policy lets in no one but the owner's account
            // (here, the owner: each user is an account of its own).
            if decision == Decision::Allow
                && !is_owner
                && block.restrict_public_buckets
                && policy.is_public()
            {
                Decision::Default
            } else {
                decision
            }
        }
        None => Decision::Default,
    };
    // IgnorePublicAcls: public grants count for nothing. (With ACLs disabled, the ACLs read
    // are the owner's full control: they grant no one else anything.)
    let allows = |acl: &Acl, want| {
        if block.ignore_public_acls {
            acl.without_public().allows(cx.caller_id(), want)
        } else {
            acl.allows(cx.caller_id(), want)
        }
    };
    let granted = || -> S3Result<bool> {
        if let Some(want) = acl_permission(action) {
            let acl = super::acl::bucket_acl(cx, &settings)?;
            return Ok(allows(&acl, want));
        }
        // What an object's own ACL grants: read it, read or replace its ACL.
        let want = match action {
            "s3:GetObject"
            | "s3:GetObjectVersion"
            | "s3:GetObjectAttributes"
            | "s3:GetObjectVersionAttributes" => Permission::Read,
            "s3:GetObjectAcl" | "s3:GetObjectVersionAcl" => Permission::ReadAcp,
            "s3:PutObjectAcl" | "s3:PutObjectVersionAcl" => Permission::WriteAcp,
            _ => return Ok(false),
        };
        // No object: nothing to grant on, refused as any other (no hint that it is absent).
        let Some(meta) = object_meta()? else {
            return Ok(false);
        };
        let acl = super::acl::object_acl(cx, &settings, meta.acl.as_deref())?;
        Ok(allows(&acl, want))
    };
    // ObjectWriter: an object another wrote is its writer's; the bucket's owner reads it and
    // its ACL only as its ACL (or the policy) lets it.
    let foreign = || -> S3Result<bool> {
        if ownership != ObjectOwnership::ObjectWriter || !object_acl_action(action) {
            return Ok(false);
        }
        let Some(meta) = object_meta()? else {
            return Ok(false);
        };
        let acl = super::acl::object_acl(cx, &settings, meta.acl.as_deref())?;
        Ok(acl.owner != owner::owner_id(cx, &settings))
    };
    if of_policy {
        let code = if decision == Decision::Allow && cx.caller.is_some() {
            S3ErrorCode::MethodNotAllowed
        } else {
            S3ErrorCode::AccessDenied
        };
        return Err(S3Error::new(code));
    }
    match decision {
        Decision::Allow => Ok(()),
        Decision::Default if (is_owner && !foreign()?) || granted()? => Ok(()),
        Decision::Deny | Decision::Default => Err(S3Error::new(S3ErrorCode::AccessDenied)),
    }
}

/// Whether an object's own ACL governs `action` (reading the object, or its ACL).
fn object_acl_action(action: &str) -> bool {
    matches!(
        action,
        "s3:GetObject"
            | "s3:GetObjectVersion"
            | "s3:GetObjectAttributes"
            | "s3:GetObjectVersionAttributes"
            | "s3:GetObjectAcl"
            | "s3:GetObjectVersionAcl"
            | "s3:PutObjectAcl"
            | "s3:PutObjectVersionAcl"
    )
}

/// The bucket ACL permission that lets a non-owner do `action`, if one does: READ lists,
/// WRITE writes and deletes objects, READ_ACP and WRITE_ACP read and replace the ACL.
fn acl_permission(action: &str) -> Option<Permission> {
    Some(match action {
        "s3:ListBucket" | "s3:ListBucketMultipartUploads" | "s3:ListBucketVersions" => {
            Permission::Read
        }
        "s3:PutObject"
        | "s3:DeleteObject"
        | "s3:DeleteObjectVersion"
        | "s3:AbortMultipartUpload" => Permission::Write,
        "s3:GetBucketAcl" => Permission::ReadAcp,
        "s3:PutBucketAcl" => Permission::WriteAcp,
        _ => return None,
    })
}

/// The condition key prefix of an existing object's tags.
const EXISTING_OBJECT_TAG: &str = "s3:ExistingObjectTag/";
/// The condition key prefix of the tags a request sets.
const REQUEST_OBJECT_TAG: &str = "s3:RequestObjectTag/";
/// The condition key of the keys of the tags a request sets.
const REQUEST_OBJECT_TAG_KEYS: &str = "s3:RequestObjectTagKeys";

/// A user's account id, as policies name it (`arn:aws:iam::ACCOUNT:root`, a bare `ACCOUNT`,
/// `aws:PrincipalAccount`, `aws:SourceAccount`): its canonical id, each user being an account
/// of its own, as the owner ids of listings and ACLs show it.
pub(crate) fn account_id(user: &crate::users::User) -> &str {
    &user.canonical_id
}

/// The condition keys whose value is a request header's.
const HEADER_KEYS: [(&str, &str); 12] = [
    ("aws:UserAgent", header::USER_AGENT),
    ("aws:Referer", header::REFERER),
    ("s3:x-amz-acl", header::X_AMZ_ACL),
    ("s3:x-amz-content-sha256", header::X_AMZ_CONTENT_SHA256),
    ("s3:x-amz-server-side-encryption", header::X_AMZ_SSE),
    (
        "s3:x-amz-server-side-encryption-aws-kms-key-id",
        header::X_AMZ_SSE_AWS_KMS_KEY_ID,
    ),
    (
        "s3:x-amz-server-side-encryption-customer-algorithm",
        header::X_AMZ_SSE_CUSTOMER_ALGORITHM,
    ),
    (
        "s3:x-amz-metadata-directive",
        header::X_AMZ_METADATA_DIRECTIVE,
    ),
    ("s3:x-amz-storage-class", header::X_AMZ_STORAGE_CLASS),
    ("s3:object-lock-mode", header::X_AMZ_OBJECT_LOCK_MODE),
    (
        "s3:object-lock-retain-until-date",
        header::X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE,
    ),
    (
        "s3:object-lock-legal-hold",
        header::X_AMZ_OBJECT_LOCK_LEGAL_HOLD,
    ),
];

/// The condition keys of a POST Object form's fields (which stand for PutObject's headers):
/// its `acl`, the header-named fields, and its `tagging` document's tags (a malformed one is
/// refused by the write).
pub(crate) fn form_facts(fields: &[(String, String)], now: i64) -> Vec<(String, String)> {
    let mut facts = Vec::new();
    for (name, value) in fields {
        let value = value.trim();
        if name == "acl" {
            facts.push(("s3:x-amz-acl".to_owned(), value.to_owned()));
        } else if name == "tagging" {
            if let Ok(doc) = ferry_core::s3::xml::Tagging::parse_xml(value.as_bytes()) {
                facts.extend(tag_facts(
                    doc.tags.iter().map(|t| (t.key.as_ref(), t.value.as_ref())),
                ));
            }
        } else if let Some((key, _)) = HEADER_KEYS[2..]
            .iter()
            .find(|(_, h)| h.eq_ignore_ascii_case(name))
        {
            facts.push(((*key).to_owned(), value.to_owned()));
            if *key == "s3:object-lock-retain-until-date"
                && let Some(until) = ferry_core::time::DateTime::parse_iso8601(value)
            {
                let days = days_left(until.to_unix(), now);
                facts.push((
                    "s3:object-lock-remaining-retention-days".to_owned(),
                    days.to_string(),
                ));
            }
        }
    }
    facts
}

/// The condition keys a request has, with their values.
fn context<'a, R: Runtime>(
    cx: &'a Cx<'_, R>,
    endpoint: Option<&'a Endpoint<'_>>,
) -> Vec<(Cow<'static, str>, Cow<'a, str>)> {
    let mut c: Vec<(Cow<'static, str>, Cow<'a, str>)> = Vec::with_capacity(24);
    let mut push = |k: &'static str, v: Cow<'a, str>| c.push((Cow::Borrowed(k), v));
    if let Some(ip) = cx.origin.ip {
        push("aws:SourceIp", Cow::Owned(ip.to_string()));
    }
    push(
        "aws:SecureTransport",
        Cow::Borrowed(if cx.origin.secure { "true" } else { "false" }),
    );
    if let Some(v) = cx.origin.tls_version {
        push("s3:TlsVersion", Cow::Borrowed(v));
    }
    match cx.caller {
        Some(u) => {
            push("aws:username", Cow::Borrowed(&u.name));
            push("aws:PrincipalType", Cow::Borrowed("User"));
            push("aws:PrincipalAccount", Cow::Borrowed(account_id(u)));
        }
        None => push("aws:PrincipalType", Cow::Borrowed("Anonymous")),
    }
    let now = cx.node.rt.unix_time();
    push(
        "aws:CurrentTime",
        Cow::Owned(
            ferry_core::time::DateTime::from_unix(now)
                .iso8601()
                .to_string(),
        ),
    );
    push("aws:EpochTime", Cow::Owned(now.to_string()));
    // (s3:authType, s3:signatureversion), as AWS names them.
    let auth = match cx.front.verified.kind {
        AuthKind::Header => Some(("REST-HEADER", "AWS4-HMAC-SHA256")),
        AuthKind::Presigned { .. } => Some(("REST-QUERY-STRING", "AWS4-HMAC-SHA256")),
        AuthKind::HeaderV2 => Some(("REST-HEADER", "AWS")),
        AuthKind::PresignedV2 { .. } => Some(("REST-QUERY-STRING", "AWS")),
        // A POST Object form's signer: the request is unsigned, the form is not.
        AuthKind::Anonymous if cx.caller.is_some() && cx.form_sigv2 => Some(("POST", "AWS")),
        AuthKind::Anonymous if cx.caller.is_some() => Some(("POST", "AWS4-HMAC-SHA256")),
        AuthKind::Anonymous => None,
    };
    if let Some((auth_type, version)) = auth {
        push("s3:authType", Cow::Borrowed(auth_type));
        push("s3:signatureversion", Cow::Borrowed(version));
    }
    // s3:signatureAge, in milliseconds: since the client signed (a proxy says when, in a
    // request it signed again), 0 for SigV2 (as AWS); none for an anonymous request.
    let signed_at = match (cx.origin.signed_at, &cx.front.verified.signing) {
        (Some(t), _) => Some(t),
        (None, Some(s)) => Some(s.time.to_unix()),
        (None, None) if cx.front.verified.kind.is_sigv2() => Some(now),
        (None, None) => None,
    };
    if let Some(t) = signed_at.filter(|_| cx.caller.is_some()) {
        let age = now.saturating_sub(t).max(0).saturating_mul(1000);
        push("s3:signatureAge", Cow::Owned(age.to_string()));
    }
    for (key, header) in HEADER_KEYS {
        if let Some(v) = find_header_str(cx.headers, header) {
            push(key, Cow::Borrowed(v.trim()));
        }
    }
    if let Some(until) = find_header_str(cx.headers, header::X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE)
        .and_then(|v| ferry_core::time::DateTime::parse_iso8601(v.trim()))
    {
        let days = days_left(until.to_unix(), now);
        push(
            "s3:object-lock-remaining-retention-days",
            Cow::Owned(days.to_string()),
        );
    }
    // Each grantee of an `x-amz-grant-*` header, as `id=...`, `uri=...` or
    // `emailAddress=...` (the quotes around the value left out, as AWS's examples write it).
    for (key, header) in [
        ("s3:x-amz-grant-read", header::X_AMZ_GRANT_READ),
        ("s3:x-amz-grant-write", header::X_AMZ_GRANT_WRITE),
        ("s3:x-amz-grant-read-acp", header::X_AMZ_GRANT_READ_ACP),
        ("s3:x-amz-grant-write-acp", header::X_AMZ_GRANT_WRITE_ACP),
        (
            "s3:x-amz-grant-full-control",
            header::X_AMZ_GRANT_FULL_CONTROL,
        ),
    ] {
        let Some(v) = find_header_str(cx.headers, header) else {
            continue;
        };
        for grantee in v.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            let value = match grantee.split_once('=') {
                Some((kind, value)) => {
                    let value = value.trim();
                    let value = value
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or(value);
                    Cow::Owned(format!("{}={value}", kind.trim()))
                }
                None => Cow::Borrowed(grantee),
            };
            push(key, value);
        }
    }
    // The version a request names (s3:versionid).
    if let Some(v) = endpoint.and_then(Endpoint::version_id) {
        push("s3:versionid", Cow::Owned(v.to_string()));
    }
    // A copy's source, as `bucket/key` (decoded, without the leading `/` the header may have,
    // as AWS's examples write it); of a copy a proxy makes between two nodes, what the proxy
    // says in the write it seals (a client's `x-ferry-*` never gets this far).
    let copy_source = match endpoint {
        Some(
            Endpoint::CopyObject { source, .. }
            | Endpoint::UploadPartCopy(UploadPartCopyQuery { source, .. }),
        ) => Some(format!("{}/{}", source.bucket, source.key)),
        _ if cx.front.sealed => find_header(cx.headers, header::X_FERRY_COPY_SOURCE)
            .and_then(|v| CopySource::parse(v).ok())
            .map(|s| format!("{}/{}", s.bucket, s.key)),
        _ => None,
    };
    if let Some(s) = copy_source {
        push("s3:x-amz-copy-source", Cow::Owned(s));
        if cx.front.sealed
            && let Some(d) = find_header_str(cx.headers, header::X_FERRY_METADATA_DIRECTIVE)
        {
            push(
                "s3:x-amz-metadata-directive",
                Cow::Owned(d.trim().to_owned()),
            );
        }
    }
    // The tags a write sets (`x-amz-tagging`; malformed: refused by the operation itself).
    if let Some(v) = find_header_str(cx.headers, header::X_AMZ_TAGGING)
        && let Ok(tags) = ferry_core::s3::tagging::parse_header(v.as_bytes())
    {
        for (k, v) in tag_facts(tags.iter().map(|t| (t.key.as_ref(), t.value.as_ref()))) {
            c.push((Cow::Owned(k), Cow::Owned(v)));
        }
    }
    // A listing's parameters, as AWS defines them for s3:ListBucket and s3:ListBucketVersions
    // (and, Ferry's addition, the prefix and delimiter of s3:ListBucketMultipartUploads). The
    // other listings are of one object's parts (its key is the resource).
    let listing = match endpoint {
        Some(
            Endpoint::ListObjects(ListObjectsQuery { common, .. })
            | Endpoint::ListObjectsV2(ListObjectsV2Query { common, .. })
            | Endpoint::ListObjectVersions(ListVersionsQuery { common, .. }),
        ) => Some((common, true)),
        Some(Endpoint::ListMultipartUploads(ListUploadsQuery { common, .. })) => {
            Some((common, false))
        }
        _ => None,
    };
    if let Some((common, with_max_keys)) = listing {
        c.push((
            Cow::Borrowed("s3:prefix"),
            Cow::Borrowed(common.prefix.as_ref()),
        ));
        if let Some(d) = &common.delimiter {
            c.push((Cow::Borrowed("s3:delimiter"), Cow::Borrowed(d.as_ref())));
        }
        if with_max_keys {
            c.push((
                Cow::Borrowed("s3:max-keys"),
                Cow::Owned(common.max_keys.to_string()),
            ));
        }
    }
    c
}
