//! Bucket versioning through the AWS SDK for Rust, on a node and through the proxy, both
//! runtimes: Put/GetBucketVersioning, versions of one key fetched by id, delete markers (404
//! with `x-amz-delete-marker`, 405 by id), permanent deletes, the null version under
//! `Suspended`, ListObjectVersions pages (prefix, delimiter, keys spread over the proxy's
//! nodes), CopyObject from a version, multipart and DeleteObjects with versions, tagging by
//! version, and boto3.

use std::collections::BTreeMap;

use aws_sdk_s3::Client;
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketVersioningStatus, CompletedMultipartUpload, CompletedPart, Delete, MfaDelete,
    ObjectIdentifier, Tag, Tagging, VersioningConfiguration,
};

use crate::support::sdk::{Target, TestNode, assert_code, assert_error, body_bytes, show};

on_every_target!(
    versioning_states,
    versions_of_one_key,
    delete_markers,
    permanent_deletes,
    suspended_writes_the_null_version,
    objects_before_versioning_are_null,
    list_versions_pages,
    copy_from_a_version,
    multipart_and_post_versions,
    delete_objects_with_versions,
    tagging_by_version,
    a_bucket_with_versions_is_not_empty,
    version_actions_in_policies,
    boto3_versions_and_delete_markers,
    object_attributes_of_a_version,
);

/// GetObjectAttributes of an older version, by `versionId`, and of a delete marker.
async fn object_attributes_of_a_version(target: Target) {
    let n = TestNode::start(target);
    versioned(&n, "attrs").await;
    let put = |body: &'static [u8]| {
        n.client
            .put_object()
            .bucket("attrs")
            .key("k")
            .body(ByteStream::from_static(body))
            .send()
    };
    let old = put(b"the first, longer version")
        .await
        .unwrap_or_else(|e| panic!("put old: {}", show(&e)));
    put(b"second")
        .await
        .unwrap_or_else(|e| panic!("put new: {}", show(&e)));
    let old_id = old.version_id().expect("a version id").to_owned();
    let attrs = |version: Option<String>| {
        n.client
            .get_object_attributes()
            .bucket("attrs")
            .key("k")
            .set_version_id(version)
            .object_attributes(aws_sdk_s3::types::ObjectAttributes::ObjectSize)
            .object_attributes(aws_sdk_s3::types::ObjectAttributes::Etag)
            .send()
    };
    let of_old = attrs(Some(old_id.clone()))
        .await
        .unwrap_or_else(|e| panic!("attributes of the old version: {}", show(&e)));
    assert_eq!(of_old.object_size(), Some(25));
    assert_eq!(of_old.e_tag(), old.e_tag().map(|e| e.trim_matches('"')));
    assert_eq!(of_old.version_id(), Some(old_id.as_str()));
    let current = attrs(None)
        .await
        .unwrap_or_else(|e| panic!("attributes of the current version: {}", show(&e)));
    assert_eq!(current.object_size(), Some(6));
    assert_code(
        attrs(Some("0000000000000001".to_owned())).await,
        404,
        "NoSuchVersion",
    );
}

async fn set_versioning(c: &Client, bucket: &str, status: BucketVersioningStatus) {
    c.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(VersioningConfiguration::builder().status(status).build())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put versioning {bucket}: {}", show(&e)));
}

async fn versioned(n: &TestNode, bucket: &str) {
    n.bucket(bucket).await;
    set_versioning(&n.client, bucket, BucketVersioningStatus::Enabled).await;
}

async fn state(c: &Client, bucket: &str) -> Option<BucketVersioningStatus> {
    c.get_bucket_versioning()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get versioning {bucket}: {}", show(&e)))
        .status()
        .cloned()
}

/// PUT `body`, returning the version id.
async fn put(c: &Client, bucket: &str, key: &str, body: &[u8]) -> String {
    c.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put {bucket}/{key}: {}", show(&e)))
        .version_id()
        .unwrap_or_else(|| panic!("put {bucket}/{key}: no version id"))
        .to_owned()
}

async fn get_version(c: &Client, bucket: &str, key: &str, version: &str) -> Vec<u8> {
    let out = c
        .get_object()
        .bucket(bucket)
        .key(key)
        .version_id(version)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get {bucket}/{key}?versionId={version}: {}", show(&e)));
    assert_eq!(out.version_id(), Some(version));
    body_bytes(out.body).await
}

async fn get(c: &Client, bucket: &str, key: &str) -> Vec<u8> {
    let out = c
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get {bucket}/{key}: {}", show(&e)));
    body_bytes(out.body).await
}

/// Every entry of ListObjectVersions (one page of up to 1000): (key, version id, is latest,
/// is a delete marker), versions and markers merged in AWS's order (by key, newest first).
async fn all_versions(c: &Client, bucket: &str) -> Vec<(String, String, bool, bool)> {
    let out = c
        .list_object_versions()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list versions {bucket}: {}", show(&e)));
    assert_eq!(out.is_truncated(), Some(false));
    entries(&out)
}

fn entries(
    out: &aws_sdk_s3::operation::list_object_versions::ListObjectVersionsOutput,
) -> Vec<(String, String, bool, bool)> {
    let mut all: Vec<(String, String, bool, bool)> = out
        .versions()
        .iter()
        .map(|v| {
            (
                v.key().unwrap_or_default().to_owned(),
                v.version_id().unwrap_or_default().to_owned(),
                v.is_latest().unwrap_or(false),
                false,
            )
        })
        .chain(out.delete_markers().iter().map(|m| {
            (
                m.key().unwrap_or_default().to_owned(),
                m.version_id().unwrap_or_default().to_owned(),
                m.is_latest().unwrap_or(false),
                true,
            )
        }))
        .collect();
    // The SDK splits versions from markers: put them back in order. Ferry's ids sort newest
    // first, and `null` is placed by the caller's expectations, so sort by key only, keeping
    // each list's order, then by id with `null` compared by position.
    all.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| order_key(&a.1).cmp(&order_key(&b.1)))
    });
    all
}

/// Ferry version ids sort newest first as strings; a null version has no id to sort by, and
/// the tests that mix it place it themselves.
fn order_key(id: &str) -> String {
    if id == "null" {
        "~".to_owned()
    } else {
        id.to_owned()
    }
}

fn header<'a, E>(
    e: &'a SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    name: &str,
) -> Option<&'a str> {
    e.raw_response().and_then(|r| r.headers().get(name))
}

async fn versioning_states(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    n.bucket("states").await;
    // Never versioned: an empty configuration.
    assert_eq!(state(c, "states").await, None);
    set_versioning(c, "states", BucketVersioningStatus::Enabled).await;
    assert_eq!(
        state(c, "states").await,
        Some(BucketVersioningStatus::Enabled)
    );
    set_versioning(c, "states", BucketVersioningStatus::Suspended).await;
    assert_eq!(
        state(c, "states").await,
        Some(BucketVersioningStatus::Suspended)
    );
    // MFA delete is not implemented: refused, nothing changes.
    let r = c
        .put_bucket_versioning()
        .bucket("states")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .mfa_delete(MfaDelete::Enabled)
                .build(),
        )
        .send()
        .await;
    assert_code(r, 501, "NotImplemented");
    let r = c
        .put_bucket_versioning()
        .bucket("states")
        .mfa("arn:aws:iam::123456789012:mfa/user 123456")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await;
    assert_code(r, 501, "NotImplemented");
    // No way back to unversioned.
    let r = c
        .put_bucket_versioning()
        .bucket("states")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::from("Disabled"))
                .build(),
        )
        .send()
        .await;
    assert_code(r, 400, "MalformedXML");
    assert_eq!(
        state(c, "states").await,
        Some(BucketVersioningStatus::Suspended)
    );
    let r = c
        .put_bucket_versioning()
        .bucket("missing")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await;
    assert_code(r, 404, "NoSuchBucket");
    // Each node of a proxy knows it: a fresh proxy run answers the same.
    let mut n = n;
    n.restart();
    assert_eq!(
        state(&n.client, "states").await,
        Some(BucketVersioningStatus::Suspended)
    );
}

async fn versions_of_one_key(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "vers").await;
    let bodies: Vec<Vec<u8>> = (0..3).map(|i| format!("body {i}").into_bytes()).collect();
    let mut ids = Vec::new();
    for b in &bodies {
        ids.push(put(c, "vers", "k", b).await);
    }
    // Unique, and newer ones sort first.
    assert!(ids[2] < ids[1] && ids[1] < ids[0], "{ids:?}");
    for (id, b) in ids.iter().zip(&bodies) {
        assert_eq!(&get_version(c, "vers", "k", id).await, b);
        let head = c
            .head_object()
            .bucket("vers")
            .key("k")
            .version_id(id)
            .send()
            .await
            .unwrap_or_else(|e| panic!("head: {}", show(&e)));
        assert_eq!(head.content_length(), Some(b.len() as i64));
        assert_eq!(head.version_id(), Some(id.as_str()));
    }
    // The latest is the last written, and says which it is.
    let latest = c
        .get_object()
        .bucket("vers")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(latest.version_id(), Some(ids[2].as_str()));
    assert_eq!(body_bytes(latest.body).await, bodies[2]);
    let listed = all_versions(c, "vers").await;
    let want: Vec<(String, String, bool, bool)> = ids
        .iter()
        .rev()
        .enumerate()
        .map(|(i, id)| ("k".to_owned(), id.clone(), i == 0, false))
        .collect();
    assert_eq!(listed, want);
    // ListObjects shows the current version only.
    let objects = c
        .list_objects_v2()
        .bucket("vers")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    assert_eq!(objects.contents().len(), 1);
    assert_eq!(objects.contents()[0].size(), Some(bodies[2].len() as i64));
    // An unknown id is NoSuchVersion; a malformed one InvalidArgument.
    let r = c
        .get_object()
        .bucket("vers")
        .key("k")
        .version_id("0000000000000001")
        .send()
        .await;
    assert_code(r, 404, "NoSuchVersion");
    let r = c
        .get_object()
        .bucket("vers")
        .key("k")
        .version_id("3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY")
        .send()
        .await;
    assert_code(r, 400, "InvalidArgument");
}

async fn delete_markers(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "markers").await;
    let v1 = put(c, "markers", "k", b"one").await;
    let del = c
        .delete_object()
        .bucket("markers")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_eq!(del.delete_marker(), Some(true));
    let marker = del.version_id().expect("marker id").to_owned();
    assert!(marker < v1);
    // GET and HEAD: 404 NoSuchKey, saying it is a delete marker.
    let e = c
        .get_object()
        .bucket("markers")
        .key("k")
        .send()
        .await
        .expect_err("get of a deleted key");
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(404));
    assert_eq!(
        aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
        Some("NoSuchKey")
    );
    assert_eq!(header(&e, "x-amz-delete-marker"), Some("true"));
    assert_eq!(header(&e, "x-amz-version-id"), Some(marker.as_str()));
    let e = c
        .head_object()
        .bucket("markers")
        .key("k")
        .send()
        .await
        .expect_err("head of a deleted key");
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(404));
    assert_eq!(header(&e, "x-amz-delete-marker"), Some("true"));
    // The marker by id: 405 MethodNotAllowed.
    let e = c
        .get_object()
        .bucket("markers")
        .key("k")
        .version_id(&marker)
        .send()
        .await
        .expect_err("get of a marker");
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(405));
    assert_eq!(
        aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
        Some("MethodNotAllowed")
    );
    assert_eq!(header(&e, "x-amz-delete-marker"), Some("true"));
    let r = c
        .head_object()
        .bucket("markers")
        .key("k")
        .version_id(&marker)
        .send()
        .await;
    assert_error(r, 405, None);
    // The old version is still there, by id.
    assert_eq!(get_version(c, "markers", "k", &v1).await, b"one");
    assert_eq!(
        all_versions(c, "markers").await,
        [
            ("k".to_owned(), marker.clone(), true, true),
            ("k".to_owned(), v1.clone(), false, false),
        ]
    );
    let objects = c
        .list_objects_v2()
        .bucket("markers")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    assert!(objects.contents().is_empty());
    // Deleting the marker brings the object back.
    let del = c
        .delete_object()
        .bucket("markers")
        .key("k")
        .version_id(&marker)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete marker: {}", show(&e)));
    assert_eq!(del.delete_marker(), Some(true));
    assert_eq!(del.version_id(), Some(marker.as_str()));
    assert_eq!(get(c, "markers", "k").await, b"one");
    // A marker for a key that never existed is still a marker.
    let del = c
        .delete_object()
        .bucket("markers")
        .key("never")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_eq!(del.delete_marker(), Some(true));
    assert_eq!(all_versions(c, "markers").await.len(), 2);
}

async fn permanent_deletes(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "perm").await;
    let v1 = put(c, "perm", "k", b"one").await;
    let v2 = put(c, "perm", "k", b"two").await;
    let v3 = put(c, "perm", "k", b"three").await;
    // The middle one goes for good.
    let del = c
        .delete_object()
        .bucket("perm")
        .key("k")
        .version_id(&v2)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete v2: {}", show(&e)));
    assert_eq!(del.version_id(), Some(v2.as_str()));
    assert_ne!(del.delete_marker(), Some(true));
    let r = c
        .get_object()
        .bucket("perm")
        .key("k")
        .version_id(&v2)
        .send()
        .await;
    assert_code(r, 404, "NoSuchVersion");
    // The current one: the previous becomes current.
    c.delete_object()
        .bucket("perm")
        .key("k")
        .version_id(&v3)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete v3: {}", show(&e)));
    assert_eq!(get(c, "perm", "k").await, b"one");
    assert_eq!(
        all_versions(c, "perm").await,
        [("k".to_owned(), v1.clone(), true, false)]
    );
    // Deleting a version twice (or one that never was) succeeds.
    for id in [&v3, &"0000000000000007".to_owned()] {
        c.delete_object()
            .bucket("perm")
            .key("k")
            .version_id(id)
            .send()
            .await
            .unwrap_or_else(|e| panic!("delete again: {}", show(&e)));
    }
    let r = c
        .delete_object()
        .bucket("perm")
        .key("k")
        .version_id("not-a-version")
        .send()
        .await;
    assert_code(r, 400, "InvalidArgument");
    c.delete_object()
        .bucket("perm")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete v1: {}", show(&e)));
    assert!(all_versions(c, "perm").await.is_empty());
    // Nothing is left: the bucket can go.
    c.delete_bucket()
        .bucket("perm")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket: {}", show(&e)));
}

async fn suspended_writes_the_null_version(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "susp").await;
    let v1 = put(c, "susp", "k", b"one").await;
    set_versioning(c, "susp", BucketVersioningStatus::Suspended).await;
    assert_eq!(put(c, "susp", "k", b"two").await, "null");
    // Another write replaces the null version; the versioned one stays.
    assert_eq!(put(c, "susp", "k", b"three").await, "null");
    assert_eq!(get_version(c, "susp", "k", "null").await, b"three");
    assert_eq!(get_version(c, "susp", "k", &v1).await, b"one");
    let listed = all_versions(c, "susp").await;
    assert_eq!(
        listed,
        [
            ("k".to_owned(), v1.clone(), false, false),
            ("k".to_owned(), "null".to_owned(), true, false),
        ]
    );
    // A delete makes the null version a delete marker.
    let del = c
        .delete_object()
        .bucket("susp")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_eq!(del.delete_marker(), Some(true));
    assert_eq!(del.version_id(), Some("null"));
    assert_eq!(
        all_versions(c, "susp").await,
        [
            ("k".to_owned(), v1.clone(), false, false),
            ("k".to_owned(), "null".to_owned(), true, true),
        ]
    );
    // Enabled again: new versions, the null marker kept as an older version.
    set_versioning(c, "susp", BucketVersioningStatus::Enabled).await;
    let v4 = put(c, "susp", "k", b"four").await;
    assert_ne!(v4, "null");
    assert_eq!(get(c, "susp", "k").await, b"four");
    let listed = all_versions(c, "susp").await;
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0], ("k".to_owned(), v4, true, false));
}

async fn objects_before_versioning_are_null(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    n.bucket("before").await;
    let etag = n.put("before", "k", b"old".to_vec()).await;
    // An unversioned bucket's write says no version.
    let out = c
        .put_object()
        .bucket("before")
        .key("other")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(out.version_id(), None);
    assert_eq!(get_version(c, "before", "k", "null").await, b"old");
    set_versioning(c, "before", BucketVersioningStatus::Enabled).await;
    let v = put(c, "before", "k", b"new").await;
    assert_eq!(get_version(c, "before", "k", "null").await, b"old");
    let listed = all_versions(c, "before").await;
    assert_eq!(
        listed,
        [
            ("k".to_owned(), v, true, false),
            ("k".to_owned(), "null".to_owned(), false, false),
            ("other".to_owned(), "null".to_owned(), true, false),
        ]
    );
    let out = c
        .list_object_versions()
        .bucket("before")
        .prefix("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    let null = out
        .versions()
        .iter()
        .find(|v| v.version_id() == Some("null"))
        .expect("null version listed");
    assert_eq!(null.e_tag(), Some(etag.as_str()));
    assert_eq!(null.size(), Some(3));
}

/// Every entry of a listing of `bucket` by pages of `page` (prefix, delimiter): entries and
/// common prefixes in the order they came, and the number of pages.
async fn paged(
    c: &Client,
    bucket: &str,
    prefix: Option<&str>,
    delimiter: Option<&str>,
    page: i32,
) -> (Vec<(String, String, bool, bool)>, Vec<String>, usize) {
    let mut key_marker: Option<String> = None;
    let mut version_marker: Option<String> = None;
    let mut out = Vec::new();
    let mut prefixes = Vec::new();
    let mut pages = 0;
    loop {
        let r = c
            .list_object_versions()
            .bucket(bucket)
            .max_keys(page)
            .set_prefix(prefix.map(str::to_owned))
            .set_delimiter(delimiter.map(str::to_owned))
            .set_key_marker(key_marker.clone())
            .set_version_id_marker(version_marker.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list page: {}", show(&e)));
        pages += 1;
        let got = entries(&r);
        let n = got.len() + r.common_prefixes().len();
        assert!(n <= page as usize, "page of {n} > {page}");
        out.extend(got);
        prefixes.extend(
            r.common_prefixes()
                .iter()
                .map(|p| p.prefix().unwrap_or_default().to_owned()),
        );
        if r.is_truncated() != Some(true) {
            assert!(r.next_key_marker().is_none());
            break;
        }
        assert!(n > 0, "a truncated page with nothing in it");
        key_marker = r.next_key_marker().map(str::to_owned);
        version_marker = r.next_version_id_marker().map(str::to_owned);
        assert!(key_marker.is_some());
        assert!(pages < 100, "pagination does not end");
    }
    (out, prefixes, pages)
}

async fn list_versions_pages(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "pages").await;
    // Keys spread over the proxy's nodes, each with a few versions and some with markers.
    let keys = [
        "a/1", "a/2", "a/3/x", "b", "c/d/e", "c/f", "d", "e/1", "e/2", "f", "g/h", "z",
    ];
    let mut want: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        for j in 0..(1 + i % 3) {
            let id = put(c, "pages", k, format!("{k} {j}").as_bytes()).await;
            want.entry((*k).to_owned())
                .or_default()
                .insert(0, (id, false));
        }
        if i % 4 == 1 {
            let del = c
                .delete_object()
                .bucket("pages")
                .key(*k)
                .send()
                .await
                .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
            let id = del.version_id().expect("marker id").to_owned();
            want.entry((*k).to_owned())
                .or_default()
                .insert(0, (id, true));
        }
    }
    if n.target.proxy {
        // The keys are spread over the proxy's nodes.
        assert!(
            keys.iter()
                .any(|k| n.apart(("pages", "a/1"), ("pages", k)) == Some(true)),
            "every key on one node"
        );
    }
    let flat: Vec<(String, String, bool, bool)> = want
        .iter()
        .flat_map(|(k, vs)| {
            vs.iter()
                .enumerate()
                .map(move |(i, (id, m))| (k.clone(), id.clone(), i == 0, *m))
        })
        .collect();
    assert_eq!(all_versions(c, "pages").await, flat);
    for page in [1, 2, 3, 7] {
        let (got, prefixes, pages) = paged(c, "pages", None, None, page).await;
        assert_eq!(got, flat, "page size {page}");
        assert!(prefixes.is_empty());
        assert!(pages > 1);
    }
    // With a delimiter: keys at the top, prefixes rolled up.
    let top: Vec<_> = flat
        .iter()
        .filter(|e| !e.0.contains('/'))
        .cloned()
        .collect();
    for page in [1, 2, 5] {
        let (got, prefixes, _) = paged(c, "pages", None, Some("/"), page).await;
        assert_eq!(got, top, "page size {page}");
        assert_eq!(prefixes, ["a/", "c/", "e/", "g/"], "page size {page}");
    }
    // A prefix and a delimiter below it.
    let under_a: Vec<_> = flat
        .iter()
        .filter(|e| e.0.starts_with("a/") && e.0.matches('/').count() == 1)
        .cloned()
        .collect();
    for page in [1, 2] {
        let (got, prefixes, _) = paged(c, "pages", Some("a/"), Some("/"), page).await;
        assert_eq!(got, under_a, "page size {page}");
        assert_eq!(prefixes, ["a/3/"]);
    }
    // A version-id marker without a key marker is refused.
    let r = c
        .list_object_versions()
        .bucket("pages")
        .version_id_marker("null")
        .send()
        .await;
    assert_code(r, 400, "InvalidArgument");
}

async fn copy_from_a_version(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "copies").await;
    if n.target.proxy {
        // Some copies go between nodes, through the proxy.
        let apart = ["dst", "other-dst", "third/dst"]
            .iter()
            .filter(|d| n.apart(("copies", "src"), ("copies", d)) == Some(true))
            .count();
        assert!(apart >= 1, "no copy between nodes");
    }
    let v1 = put(c, "copies", "src", b"first").await;
    let _v2 = put(c, "copies", "src", b"second").await;
    for dst in ["dst", "other-dst", "third/dst"] {
        let out = c
            .copy_object()
            .bucket("copies")
            .key(dst)
            .copy_source(format!("copies/src?versionId={v1}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy to {dst}: {}", show(&e)));
        assert_eq!(out.copy_source_version_id(), Some(v1.as_str()), "{dst}");
        let new = out.version_id().expect("copy's version id").to_owned();
        assert_eq!(get_version(c, "copies", dst, &new).await, b"first");
    }
    // Restoring a version: copied onto its own key, it becomes the newest.
    let out = c
        .copy_object()
        .bucket("copies")
        .key("src")
        .copy_source(format!("copies/src?versionId={v1}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("restore: {}", show(&e)));
    assert_eq!(get(c, "copies", "src").await, b"first");
    assert_eq!(
        all_versions(c, "copies")
            .await
            .iter()
            .filter(|e| e.0 == "src")
            .count(),
        3
    );
    assert!(out.version_id().is_some());
    // An unknown or deleted version.
    let r = c
        .copy_object()
        .bucket("copies")
        .key("x")
        .copy_source("copies/src?versionId=0000000000000003")
        .send()
        .await;
    assert_code(r, 404, "NoSuchVersion");
    // A part from a version.
    let up = c
        .create_multipart_upload()
        .bucket("copies")
        .key("mp")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    let upload_id = up.upload_id().expect("upload id");
    let part = c
        .upload_part_copy()
        .bucket("copies")
        .key("mp")
        .upload_id(upload_id)
        .part_number(1)
        .copy_source(format!("copies/src?versionId={v1}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("part copy: {}", show(&e)));
    assert_eq!(part.copy_source_version_id(), Some(v1.as_str()));
    let etag = part
        .copy_part_result()
        .and_then(|r| r.e_tag())
        .expect("part etag")
        .to_owned();
    let done = c
        .complete_multipart_upload()
        .bucket("copies")
        .key("mp")
        .upload_id(upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(CompletedPart::builder().part_number(1).e_tag(etag).build())
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let id = done.version_id().expect("complete's version id");
    assert_eq!(get_version(c, "copies", "mp", id).await, b"first");
}

async fn multipart_and_post_versions(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "mpv").await;
    let first = put(c, "mpv", "big", b"small first").await;
    let up = c
        .create_multipart_upload()
        .bucket("mpv")
        .key("big")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    let upload_id = up.upload_id().expect("upload id");
    let body = vec![7u8; 1000];
    let part = c
        .upload_part()
        .bucket("mpv")
        .key("big")
        .upload_id(upload_id)
        .part_number(1)
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("part: {}", show(&e)));
    let done = c
        .complete_multipart_upload()
        .bucket("mpv")
        .key("big")
        .upload_id(upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(part.e_tag().expect("etag"))
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let id = done.version_id().expect("version id").to_owned();
    assert!(id < first);
    assert_eq!(get_version(c, "mpv", "big", &id).await, body);
    assert_eq!(get_version(c, "mpv", "big", &first).await, b"small first");
    let head = c
        .head_object()
        .bucket("mpv")
        .key("big")
        .version_id(&id)
        .part_number(1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("head part: {}", show(&e)));
    assert_eq!(head.parts_count(), Some(1));
}

async fn delete_objects_with_versions(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "multi").await;
    let a1 = put(c, "multi", "a", b"a1").await;
    let a2 = put(c, "multi", "a", b"a2").await;
    put(c, "multi", "b", b"b1").await;
    let id = |k: &str, v: Option<&str>| {
        ObjectIdentifier::builder()
            .key(k)
            .set_version_id(v.map(str::to_owned))
            .build()
            .expect("identifier")
    };
    let out = c
        .delete_objects()
        .bucket("multi")
        .delete(
            Delete::builder()
                .objects(id("a", Some(&a1)))
                .objects(id("b", None))
                .objects(id("c", Some("0000000000000009")))
                .objects(id("d", Some("bad id")))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    let deleted: Vec<_> = out
        .deleted()
        .iter()
        .map(|d| {
            (
                d.key().unwrap_or_default().to_owned(),
                d.version_id().map(str::to_owned),
                d.delete_marker(),
                d.delete_marker_version_id().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(deleted.len(), 3, "{deleted:?}");
    assert_eq!(deleted[0], ("a".to_owned(), Some(a1.clone()), None, None));
    assert_eq!(deleted[1].0, "b");
    assert_eq!(deleted[1].1, None);
    assert_eq!(deleted[1].2, Some(true));
    let b_marker = deleted[1].3.clone().expect("b's marker id");
    assert_eq!(deleted[2].0, "c");
    assert_eq!(out.errors().len(), 1);
    assert_eq!(out.errors()[0].code(), Some("InvalidArgument"));
    assert_eq!(get(c, "multi", "a").await, b"a2");
    let r = c
        .get_object()
        .bucket("multi")
        .key("a")
        .version_id(&a1)
        .send()
        .await;
    assert_code(r, 404, "NoSuchVersion");
    // Removing the marker by id says it was one.
    let out = c
        .delete_objects()
        .bucket("multi")
        .delete(
            Delete::builder()
                .objects(id("b", Some(&b_marker)))
                .objects(id("a", Some(&a2)))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    let b = out
        .deleted()
        .iter()
        .find(|d| d.key() == Some("b"))
        .expect("b deleted");
    assert_eq!(b.delete_marker(), Some(true));
    assert_eq!(b.delete_marker_version_id(), Some(b_marker.as_str()));
    assert_eq!(get(c, "multi", "b").await, b"b1");
    let r = c.get_object().bucket("multi").key("a").send().await;
    assert_code(r, 404, "NoSuchKey");
}

async fn tagging_by_version(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "tagv").await;
    let v1 = put(c, "tagv", "k", b"one").await;
    let v2 = put(c, "tagv", "k", b"two").await;
    let tags = Tagging::builder()
        .tag_set(Tag::builder().key("old").value("yes").build().expect("tag"))
        .build()
        .expect("tagging");
    let out = c
        .put_object_tagging()
        .bucket("tagv")
        .key("k")
        .version_id(&v1)
        .tagging(tags)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put tagging: {}", show(&e)));
    assert_eq!(out.version_id(), Some(v1.as_str()));
    let old = c
        .get_object_tagging()
        .bucket("tagv")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get tagging: {}", show(&e)));
    assert_eq!(old.tag_set().len(), 1);
    assert_eq!(old.version_id(), Some(v1.as_str()));
    let cur = c
        .get_object_tagging()
        .bucket("tagv")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get tagging: {}", show(&e)));
    assert!(cur.tag_set().is_empty());
    assert_eq!(cur.version_id(), Some(v2.as_str()));
    // Data and listing unchanged.
    assert_eq!(get_version(c, "tagv", "k", &v1).await, b"one");
    assert_eq!(all_versions(c, "tagv").await.len(), 2);
    let r = c
        .get_object_tagging()
        .bucket("tagv")
        .key("k")
        .version_id("0000000000000005")
        .send()
        .await;
    assert_code(r, 404, "NoSuchVersion");
    // The ACL of an old version.
    let acl = c
        .get_object_acl()
        .bucket("tagv")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get acl: {}", show(&e)));
    assert!(!acl.grants().is_empty());
    c.put_object_acl()
        .bucket("tagv")
        .key("k")
        .version_id(&v1)
        .acl(aws_sdk_s3::types::ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put acl: {}", show(&e)));
    let acl = c
        .get_object_acl()
        .bucket("tagv")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get acl: {}", show(&e)));
    assert_eq!(acl.grants().len(), 2);
    let acl = c
        .get_object_acl()
        .bucket("tagv")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get acl: {}", show(&e)));
    assert_eq!(acl.grants().len(), 1);
}

async fn a_bucket_with_versions_is_not_empty(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "full").await;
    put(c, "full", "k", b"x").await;
    c.delete_object()
        .bucket("full")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    // Only a noncurrent version and a marker are left: still not empty.
    let r = c.delete_bucket().bucket("full").send().await;
    assert_code(r, 409, "BucketNotEmpty");
    for (k, v, _, _) in all_versions(c, "full").await {
        c.delete_object()
            .bucket("full")
            .key(k)
            .version_id(v)
            .send()
            .await
            .unwrap_or_else(|e| panic!("delete version: {}", show(&e)));
    }
    c.delete_bucket()
        .bucket("full")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket: {}", show(&e)));
}

async fn version_actions_in_policies(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    versioned(&n, "guarded").await;
    let v1 = put(c, "guarded", "k", b"one").await;
    put(c, "guarded", "k", b"two").await;
    // Versions may be neither removed nor read by id, by anyone (the owner included).
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*",
        "Action":["s3:DeleteObjectVersion","s3:GetObjectVersion"],
        "Resource":"arn:aws:s3:::guarded/*"}]}"#;
    c.put_bucket_policy()
        .bucket("guarded")
        .policy(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put policy: {}", show(&e)));
    let r = c
        .delete_object()
        .bucket("guarded")
        .key("k")
        .version_id(&v1)
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    let r = c
        .get_object()
        .bucket("guarded")
        .key("k")
        .version_id(&v1)
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    let out = c
        .delete_objects()
        .bucket("guarded")
        .delete(
            Delete::builder()
                .objects(
                    ObjectIdentifier::builder()
                        .key("k")
                        .version_id(&v1)
                        .build()
                        .expect("identifier"),
                )
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    assert_eq!(out.errors().len(), 1);
    assert_eq!(out.errors()[0].code(), Some("AccessDenied"));
    // The current version and a delete marker are other actions.
    assert_eq!(get(c, "guarded", "k").await, b"two");
    let del = c
        .delete_object()
        .bucket("guarded")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_eq!(del.delete_marker(), Some(true));
    assert_eq!(all_versions(c, "guarded").await.len(), 3);
}

async fn boto3_versions_and_delete_markers(target: Target) {
    let n = TestNode::start(target);
    let script = r#"
import sys
import boto3
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                               retries={"max_attempts": 1}))
c.create_bucket(Bucket="boto")
assert "Status" not in c.get_bucket_versioning(Bucket="boto")
c.put_bucket_versioning(Bucket="boto", VersioningConfiguration={"Status": "Enabled"})
assert c.get_bucket_versioning(Bucket="boto")["Status"] == "Enabled"
ids = [c.put_object(Bucket="boto", Key="k", Body=b"v%d" % i)["VersionId"] for i in range(3)]
assert len(set(ids)) == 3, ids
for i, v in enumerate(ids):
    r = c.get_object(Bucket="boto", Key="k", VersionId=v)
    assert r["Body"].read() == b"v%d" % i and r["VersionId"] == v, r
d = c.delete_object(Bucket="boto", Key="k")
assert d["DeleteMarker"] is True, d
marker = d["VersionId"]
try:
    c.get_object(Bucket="boto", Key="k")
except c.exceptions.NoSuchKey as e:
    h = e.response["ResponseMetadata"]["HTTPHeaders"]
    assert h["x-amz-delete-marker"] == "true" and h["x-amz-version-id"] == marker, h
else:
    raise SystemExit("got a deleted key")
try:
    c.head_object(Bucket="boto", Key="k", VersionId=marker)
except c.exceptions.ClientError as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 405, e.response
else:
    raise SystemExit("headed a delete marker")
r = c.list_object_versions(Bucket="boto")
assert [v["VersionId"] for v in r["Versions"]] == ids[::-1], r
assert [v["IsLatest"] for v in r["Versions"]] == [False] * 3, r
assert [(m["Key"], m["VersionId"], m["IsLatest"]) for m in r["DeleteMarkers"]] == [("k", marker, True)], r
# Paginated by botocore's paginator, two at a time.
seen = []
for page in c.get_paginator("list_object_versions").paginate(Bucket="boto", PaginationConfig={"PageSize": 2}):
    seen += [v["VersionId"] for v in page.get("Versions", [])]
    seen += [m["VersionId"] for m in page.get("DeleteMarkers", [])]
assert sorted(seen) == sorted(ids + [marker]), seen
c.delete_object(Bucket="boto", Key="k", VersionId=marker)
assert c.get_object(Bucket="boto", Key="k")["Body"].read() == b"v2"
# A browser upload (POST Object) creates a version too.
import requests
p = c.generate_presigned_post("boto", "posted", ExpiresIn=600)
r = requests.post(p["url"], data=p["fields"], files={"file": ("f.txt", b"posted")})
assert r.status_code == 204, (r.status_code, r.text)
pv = r.headers["x-amz-version-id"]
assert pv != "null", r.headers
assert c.get_object(Bucket="boto", Key="posted", VersionId=pv)["Body"].read() == b"posted"
c.delete_object(Bucket="boto", Key="posted", VersionId=pv)
# Keys that need encoding list back whole (botocore asks for encoding-type=url).
odd = "a b+c/\u00fc&<x>"
ov = c.put_object(Bucket="boto", Key=odd, Body=b"odd")["VersionId"]
r = c.list_object_versions(Bucket="boto", Prefix="a b+c/")
assert [(v["Key"], v["VersionId"]) for v in r["Versions"]] == [(odd, ov)], r
r = c.list_object_versions(Bucket="boto", Delimiter="/")
assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a b+c/"], r
c.delete_object(Bucket="boto", Key=odd, VersionId=ov)
c.put_bucket_versioning(Bucket="boto", VersioningConfiguration={"Status": "Suspended"})
assert c.put_object(Bucket="boto", Key="k", Body=b"n").get("VersionId") == "null"
r = c.delete_objects(Bucket="boto", Delete={"Objects": [{"Key": "k", "VersionId": v} for v in ids] + [{"Key": "k", "VersionId": "null"}]})
assert len(r["Deleted"]) == 4 and "Errors" not in r, r
assert "Versions" not in c.list_object_versions(Bucket="boto"), "versions left"
c.delete_bucket(Bucket="boto")
print("ok")
"#;
    crate::support::sdk::run_python(
        script,
        vec![
            n.endpoint(),
            crate::support::ACCESS_KEY.to_owned(),
            crate::support::SECRET_KEY.to_owned(),
        ],
    )
    .await;
}
