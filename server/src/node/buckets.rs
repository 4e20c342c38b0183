//! Bucket operations and object listings.

use std::borrow::Cow;
use std::time::Duration;

use base64::Engine as _;
use ferry_core::http::find_header_str;
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::listing::{ListBucketsQuery, ListCommon, ListVersionsQuery, ObjectListing};
use ferry_core::s3::version::Versioning;
use ferry_core::s3::xml::{
    BucketEntry, CreateBucketConfiguration, ListAllMyBucketsResult, ListBucketResult, ListVersion,
    ListVersionsResult, MAX_CREATE_BUCKET_BODY, MAX_VERSIONING_BODY, ObjectEntry, ObjectOwnership,
    Owner, OwnershipControls, VersionEntry, VersioningConfiguration, write_location_constraint,
    write_versioning_configuration,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use super::owner;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::{BucketInfo, BucketSetting, ListQuery, MAX_LIST, VersionsQuery};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::header;

/// Continuation tokens are the key (or bucket name) to continue after, base64url-encoded:
/// opaque to clients, and any key fits.
const TOKEN: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

pub(crate) fn encode_token(after: &str) -> String {
    TOKEN.encode(after)
}

pub(crate) fn decode_token(token: &str) -> S3Result<String> {
    TOKEN
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "The continuation token provided is incorrect",
            )
        })
}

/// The owner of `bucket` (objects and uploads in it are listed with it as their owner).
pub(crate) fn owner<R: Runtime>(cx: &Cx<'_, R>, bucket: &str) -> S3Result<Owner<'static>> {
    let settings = cx.node.store.bucket_settings(bucket)?;
    Ok(owner::owner_of(cx, owner::owner_id(cx, &settings)))
}

/// ListBuckets: the caller's buckets, or pages of `max_buckets` with a continuation token; `prefix`
/// filters names.
pub(crate) async fn list_buckets<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    q: &ListBucketsQuery<'_>,
) -> S3Result<()> {
    let ListBucketsQuery {
        prefix,
        continuation_token,
        max_buckets,
    } = q;
    let (prefix, token, max_buckets) = (
        prefix.as_deref(),
        continuation_token.as_deref(),
        *max_buckets,
    );
    let after = token.map(decode_token).transpose()?;
    let prefix_owned = prefix.unwrap_or_default().to_owned();
    let limit = max_buckets.map_or(usize::MAX, |n| n as usize);
    let me = cx.user()?.canonical_id.clone();
    let primary = cx.users().primary().canonical_id.clone();
    let (buckets, truncated) = cx
        .unblock(move |store| -> S3Result<(Vec<BucketInfo>, bool)> {
            let mut out = Vec::new();
            let mut start = after;
            loop {
                let page = store.list_buckets(start.as_deref(), MAX_LIST)?;
                start = page.buckets.last().map(|b| b.name.clone());
                for b in page.buckets {
                    if !b.name.starts_with(&prefix_owned) {
                        // Names are sorted: past the prefix, nothing else matches.
                        if b.name > prefix_owned {
                            return Ok((out, false));
                        }
                        continue;
                    }
                    let settings = match store.bucket_settings(&b.name) {
                        Ok(s) => s,
                        // Deleted since the page was read.
                        Err(e) if e.code == S3ErrorCode::NoSuchBucket => continue,
                        Err(e) => return Err(e),
                    };
                    if settings.owner().unwrap_or(&primary) != me {
                        continue;
                    }
                    if out.len() == limit {
                        return Ok((out, true));
                    }
                    out.push(b);
                }
                if !page.is_truncated {
                    return Ok((out, false));
                }
            }
        })
        .await?;
    let next = if truncated {
        buckets.last().map(|b| Cow::Owned(encode_token(&b.name)))
    } else {
        None
    };
    let doc = ListAllMyBucketsResult {
        owner: Some(owner::user_owner(cx.user()?)),
        buckets: buckets
            .iter()
            .map(|b| BucketEntry {
                name: Cow::Borrowed(&b.name),
                creation_date_unix: b.created.to_unix(),
                region: Some(Cow::Borrowed(cx.region())),
            })
            .collect(),
        continuation_token: next,
        prefix: prefix.map(Cow::Borrowed),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// CreateBucket: `BucketAlreadyOwnedByYou` if it exists (`200` in us-east-1); the
/// body is checked by `CreateBucketConfiguration::check_region`.
pub(crate) async fn create<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_CREATE_BUCKET_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, _) = read_small(body, verifier).await?;
    CreateBucketConfiguration::check_region(&xml, cx.region())?;
    let (b, me) = (bucket.to_owned(), cx.user()?.canonical_id.clone());
    let primary = cx.users().primary().canonical_id.clone();
    // The ACL the headers ask for, if any (private otherwise).
    let acl = ferry_core::s3::acl::Acl::from_headers(cx.headers, &me, &me)?
        .map(|acl| super::acl::stored(cx, &acl))
        .transpose()?;
    let lock = super::lock::requested_at_creation(cx.headers)?;
    // AWS's legacy answer in us-east-1: a bucket its owner creates again is `200`, its ACL
    // reset (to the one asked for, or private); elsewhere `409 BucketAlreadyOwnedByYou`.
    let legacy = cx.region() == ferry_core::s3::xml::LEGACY_CREATE_REGION;
    let ownership = ownership_at_creation(cx, &me)?;
    cx.unblock(move |store| {
        let mut settings = vec![(BucketSetting::Owner, me.as_bytes())];
        if let Some(acl) = &acl {
            settings.push((BucketSetting::Acl, acl.as_slice()));
        }
        if let Some(controls) = &ownership {
            settings.push((BucketSetting::OwnershipControls, controls.as_slice()));
        }
        // Object lock turns versioning on, in the same commit.
        if let Some(lock) = &lock {
            settings.push((BucketSetting::ObjectLock, lock.as_bytes()));
            settings.push((
                BucketSetting::Versioning,
                Versioning::Enabled.as_str().as_bytes(),
            ));
        }
        match store.create_bucket_with(&b, &settings) {
            Err(e) if e.code == S3ErrorCode::BucketAlreadyOwnedByYou => {
                // Someone else's: its name is taken (as AWS answers across accounts).
                let settings = store.bucket_settings(&b)?;
                let theirs = settings.owner().unwrap_or(&primary) != me;
                if theirs {
                    Err(S3Error::new(S3ErrorCode::BucketAlreadyExists))
                } else if legacy
                    && (lock.is_none() || settings.get(BucketSetting::ObjectLock).is_some())
                {
                    // (Object lock asked for a bucket without it: not pretended, 409.)
                    store.set_bucket_setting(&b, BucketSetting::Acl, acl.as_deref())
                } else {
                    Err(e)
                }
            }
            other => other.map(drop),
        }
    })
    .await?;
    let mut h = Headers::new();
    h.push("Location", format!("/{bucket}"));
    cx.front.send(res, 200, h, &[]).await
}

/// The ownership controls `x-amz-object-ownership` asks CreateBucket for, as stored: none
/// without the header (Ferry's default, `BucketOwnerPreferred`: see the README), `400
/// InvalidArgument` for a value AWS does not define, and `400
/// InvalidBucketAclWithObjectOwnership` for `BucketOwnerEnforced` beside an ACL that grants
/// anyone but `owner`.
fn ownership_at_creation<R: Runtime>(cx: &Cx<'_, R>, owner: &str) -> S3Result<Option<Vec<u8>>> {
    let Some(value) = find_header_str(cx.headers, header::X_AMZ_OBJECT_OWNERSHIP) else {
        return Ok(None);
    };
    let object_ownership = ObjectOwnership::parse(value.trim()).ok_or_else(|| {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "x-amz-object-ownership must be BucketOwnerEnforced, BucketOwnerPreferred or \
             ObjectWriter",
        )
    })?;
    if object_ownership.acls_disabled()
        && let Some(acl) = ferry_core::s3::acl::Acl::from_headers(cx.headers, owner, owner)?
        && !acl.is_owner_full_control(owner)
    {
        return Err(S3Error::new(
            S3ErrorCode::InvalidBucketAclWithObjectOwnership,
        ));
    }
    let mut doc = Vec::with_capacity(256);
    OwnershipControls { object_ownership }.write_xml(&mut doc);
    Ok(Some(doc))
}

/// DeleteBucket: `BucketNotEmpty` while it holds objects or uploads, `OperationAborted` while
/// a fence holds it. A proxy's DeleteBucket names its own fence in `x-ferry-fence`; it is
/// refused unless that fence still holds.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    let token = find_header_str(cx.headers, header::X_FERRY_FENCE).map(|t| t.trim().to_owned());
    cx.unblock(move |store| match token {
        Some(t) => store.delete_fenced_bucket(&b, &t),
        None => store.delete_bucket(&b),
    })
    .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}

/// BucketFence (Ferry's own, the cluster's alone: see `Endpoint::BucketFence`): close the
/// bucket to writes for `lease_seconds` under `token`, or lift `token`'s fence when 0. 204;
/// a fence set says whether the bucket is empty (`x-ferry-bucket-empty: true|false`), so the
/// proxy's DeleteBucket needs no listing as its client.
pub(crate) async fn fence<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    token: &str,
    lease_seconds: u32,
) -> S3Result<()> {
    let (b, t) = (bucket.to_owned(), token.to_owned());
    let empty = cx
        .unblock(move |store| match lease_seconds {
            0 => store.unfence_bucket(&b, &t).map(|()| None),
            n => store
                .fence_bucket(&b, &t, Duration::from_secs(u64::from(n)))
                .map(Some),
        })
        .await?;
    let mut h = Headers::new();
    if let Some(empty) = empty {
        h.push(
            header::X_FERRY_BUCKET_EMPTY,
            if empty { "true" } else { "false" },
        );
    }
    cx.front.send(res, 204, h, &[]).await
}

fn region_header<R: Runtime>(cx: &Cx<'_, R>) -> Headers {
    let mut h = Headers::new();
    h.push(header::X_AMZ_BUCKET_REGION, cx.region().to_owned());
    h
}

async fn require_bucket<R: Runtime>(cx: &Cx<'_, R>, bucket: &str) -> S3Result<()> {
    let b = bucket.to_owned();
    cx.unblock(move |store| store.head_bucket(&b)).await?;
    Ok(())
}

/// HeadBucket.
pub(crate) async fn head<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    require_bucket(cx, bucket).await?;
    cx.front.send(res, 200, region_header(cx), &[]).await
}

/// GetBucketLocation: the node's region (empty for us-east-1, as S3 answers).
pub(crate) async fn location<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    require_bucket(cx, bucket).await?;
    let mut xml = Vec::new();
    write_location_constraint(&mut xml, cx.region());
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// GetBucketVersioning: `Enabled` or `Suspended`; an empty configuration for a bucket that was
/// never versioned.
pub(crate) async fn versioning<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    let state = cx.unblock(move |store| store.versioning(&b)).await?;
    let mut xml = Vec::new();
    write_versioning_configuration(&mut xml, state.map(|s| s.as_str()));
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutBucketVersioning: `Enabled` or `Suspended` (a bucket never goes back to unversioned).
/// MFA delete (`MfaDelete`, `x-amz-mfa`) is not implemented: such a request changes nothing.
pub(crate) async fn put_versioning<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let limit = BodyLimit::document(MAX_VERSIONING_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, _) = read_small(body, verifier).await?;
    let doc = VersioningConfiguration::parse_xml(&xml)?;
    // (`x-amz-mfa` is refused with every request: `request::unsupported_header`.)
    if doc.mfa_delete.is_some() {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "MFA delete is not implemented",
        ));
    }
    // A bucket with object lock cannot be suspended: the store refuses it in the commit.
    let (b, state) = (bucket.to_owned(), doc.status);
    cx.unblock(move |store| store.set_versioning(&b, state))
        .await?;
    cx.front.send(res, 200, Headers::new(), &[]).await
}

/// ListObjectVersions: versions and delete markers by key, newest first within a key.
pub(crate) async fn list_versions<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    q: &ListVersionsQuery<'_>,
) -> S3Result<()> {
    let ListVersionsQuery {
        common:
            ListCommon {
                prefix,
                delimiter,
                max_keys,
                encoding_type_url,
            },
        key_marker,
        version_id_marker,
    } = q;
    let (b, p, d, km, vm, max) = (
        bucket.to_owned(),
        prefix.to_string(),
        delimiter.as_deref().map(str::to_owned),
        key_marker.as_deref().map(str::to_owned),
        *version_id_marker,
        *max_keys,
    );
    let page = cx
        .unblock(move |store| {
            let q = VersionsQuery {
                prefix: &p,
                delimiter: d.as_deref(),
                key_marker: km.as_deref(),
                version_id_marker: vm,
                max_keys: max as usize,
            };
            store.list_versions(&b, &q)
        })
        .await?;
    let owner = owner(cx, bucket)?;
    let doc = ListVersionsResult {
        name: Cow::Borrowed(bucket),
        prefix: Cow::Borrowed(prefix),
        key_marker: Cow::Borrowed(key_marker.as_deref().unwrap_or_default()),
        version_id_marker: Cow::Owned(version_id_marker.map(|v| v.to_string()).unwrap_or_default()),
        next_key_marker: page.next_key_marker.as_deref().map(Cow::Borrowed),
        next_version_id_marker: page
            .next_version_id_marker
            .map(|v| Cow::Owned(v.to_string())),
        delimiter: delimiter.as_deref().map(Cow::Borrowed),
        max_keys: *max_keys,
        is_truncated: page.is_truncated,
        encoding_type_url: *encoding_type_url,
        entries: page
            .entries
            .iter()
            .map(|e| VersionEntry {
                key: Cow::Borrowed(&e.key),
                version_id: Cow::Owned(e.version_id.to_string()),
                is_latest: e.is_latest,
                last_modified_unix: e.last_modified.to_unix(),
                delete_marker: e.delete_marker,
                etag: Cow::Owned(e.etag.map(|t| t.as_str().to_owned()).unwrap_or_default()),
                size: e.size,
                storage_class: Cow::Borrowed("STANDARD"),
                owner: Some(owner.clone()),
            })
            .collect(),
        common_prefixes: page
            .common_prefixes
            .iter()
            .map(|p| Cow::Borrowed(p.as_str()))
            .collect(),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// ListObjects (v1) and ListObjectsV2.
pub(crate) async fn list_objects<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    listing: ObjectListing<'_, '_>,
) -> S3Result<()> {
    let ListCommon {
        prefix,
        delimiter,
        max_keys,
        encoding_type_url: url,
    } = listing.common();
    let (max_keys, url, fetch_owner) = (*max_keys, *url, listing.fetch_owner());
    let start_after = match listing {
        ObjectListing::V1(q) => q.marker.as_deref().map(str::to_owned),
        ObjectListing::V2(q) => match &q.continuation_token {
            Some(t) => Some(decode_token(t)?),
            None => q.start_after.as_deref().map(str::to_owned),
        },
    };
    let (b, p, d) = (
        bucket.to_owned(),
        prefix.to_string(),
        delimiter.as_deref().map(str::to_owned),
    );
    let page = cx
        .unblock(move |store| {
            let q = ListQuery {
                prefix: &p,
                delimiter: d.as_deref(),
                start_after: start_after.as_deref(),
                max_keys: max_keys as usize,
            };
            store.list_objects(&b, &q)
        })
        .await?;
    let owner = if fetch_owner {
        Some(owner(cx, bucket)?)
    } else {
        None
    };
    let version = match listing {
        ObjectListing::V1(q) => ListVersion::V1 {
            marker: Cow::Borrowed(q.marker.as_deref().unwrap_or_default()),
            // S3 sends NextMarker only with a delimiter (without one, the last key is it).
            next_marker: delimiter
                .as_ref()
                .and(page.next_start_after.as_deref())
                .map(Cow::Borrowed),
        },
        ObjectListing::V2(q) => ListVersion::V2 {
            continuation_token: q.continuation_token.as_deref().map(Cow::Borrowed),
            next_continuation_token: page
                .next_start_after
                .as_deref()
                .map(|k| Cow::Owned(encode_token(k))),
            start_after: q.start_after.as_deref().map(Cow::Borrowed),
        },
    };
    let doc = ListBucketResult {
        name: Cow::Borrowed(bucket),
        prefix: Cow::Borrowed(prefix),
        delimiter: delimiter.as_deref().map(Cow::Borrowed),
        max_keys,
        is_truncated: page.is_truncated,
        encoding_type_url: url,
        contents: page
            .objects
            .iter()
            .map(|o| ObjectEntry {
                key: Cow::Borrowed(&o.key),
                last_modified_unix: o.last_modified.to_unix(),
                etag: Cow::Borrowed(o.etag.as_str()),
                size: o.size,
                storage_class: Cow::Borrowed(o.storage_class),
                owner: owner.clone(),
            })
            .collect(),
        common_prefixes: page
            .common_prefixes
            .iter()
            .map(|p| Cow::Borrowed(p.as_str()))
            .collect(),
        version,
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_any_key() {
        for key in ["", "a", "dir/sub/ü €", "x\u{1}y", &"k".repeat(1024)] {
            let t = encode_token(key);
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
            assert_eq!(decode_token(&t).unwrap(), key);
        }
        assert_eq!(
            decode_token("not base64!").unwrap_err().code,
            S3ErrorCode::InvalidArgument
        );
        // Valid base64 that is not UTF-8.
        assert!(decode_token(&TOKEN.encode([0xff, 0xfe])).is_err());
    }
}
