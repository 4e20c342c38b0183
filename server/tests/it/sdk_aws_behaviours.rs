//! AWS behaviours on a node and through the proxy, both runtimes, with the AWS SDK for Rust
//! and boto3: `x-amz-expected-bucket-owner` (and a copy's
//! `x-amz-source-expected-bucket-owner`), no `x-amz-version-id` from a bucket never versioned,
//! CreateBucket of a bucket its caller owns (`200` in us-east-1, `409` elsewhere), and the
//! error codes `InvalidRetentionPeriod`, `NoSuchUpload`, `InvalidRange` (UploadPartCopy) and
//! `InvalidPartNumber` as AWS answers them.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketCannedAcl, BucketVersioningStatus, CompletedMultipartUpload, CompletedPart,
    DefaultRetention, ObjectLockConfiguration, ObjectLockEnabled, ObjectLockRetentionMode,
    ObjectLockRule, Permission, VersioningConfiguration,
};

use crate::support::sdk::{Options, Target, TestNode, assert_code, assert_error, show};
use crate::support::{ALICE, TestUser};

on_every_target!(
    expected_bucket_owner,
    no_version_id_unversioned,
    create_owned_bucket_us_east_1,
    create_owned_bucket_elsewhere,
    error_codes,
    second_client,
);

const USERS: &[TestUser] = &[ALICE];
const MIN_PART: u64 = 5;

fn node(target: Target) -> TestNode {
    TestNode::start_with(
        target,
        Options {
            users: USERS,
            min_part_size: MIN_PART,
            ..Options::default()
        },
    )
}

async fn my_id(c: &Client) -> String {
    let out = c
        .list_buckets()
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    out.owner()
        .and_then(|o| o.id())
        .expect("Owner ID")
        .to_owned()
}

/// Every operation that takes `x-amz-expected-bucket-owner` goes ahead with the owner's
/// canonical id (the ListBuckets `Owner` `ID`) and is `403 AccessDenied` with another, nothing
/// changed; a copy's source is checked against `x-amz-source-expected-bucket-owner`. A tenant
/// allowed into another's bucket by its policy is refused when it names itself as the owner
/// (what the header is for: not writing into a bucket that is not the one it thinks).
async fn expected_bucket_owner(target: Target) {
    let n = node(target);
    let c = &n.client;
    let alice = n.client_as(&ALICE);
    n.bucket("owned").await;
    n.put("owned", "k", "v").await;
    let me = my_id(c).await;
    let other = ALICE.canonical_id();
    assert_ne!(me, other);

    for (owner, ok) in [(&me, true), (&other, false)] {
        let check = |r: Result<(), String>, what: &str| match (r, ok) {
            (Ok(()), true) => {}
            (Err(e), false) => assert!(e.contains("403"), "{what}: {e}"),
            (r, _) => panic!("{what} with owner {owner}: {r:?}"),
        };
        let r = c
            .head_bucket()
            .bucket("owned")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "head bucket");
        let r = c
            .list_objects_v2()
            .bucket("owned")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "list");
        let r = c
            .get_bucket_versioning()
            .bucket("owned")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "get versioning");
        let r = c
            .put_bucket_tagging()
            .bucket("owned")
            .tagging(
                aws_sdk_s3::types::Tagging::builder()
                    .tag_set(
                        aws_sdk_s3::types::Tag::builder()
                            .key("a")
                            .value("b")
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap(),
            )
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "put bucket tagging");
        let r = c
            .put_object()
            .bucket("owned")
            .key("new")
            .body(ByteStream::from_static(b"new"))
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "put");
        let r = c
            .get_object()
            .bucket("owned")
            .key("k")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "get");
        let r = c
            .head_object()
            .bucket("owned")
            .key("k")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "head");
        let r = c
            .copy_object()
            .bucket("owned")
            .key("copy")
            .copy_source("owned/k")
            .expected_source_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "copy (source owner)");
        let r = c
            .copy_object()
            .bucket("owned")
            .key("copy2")
            .copy_source("owned/k")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(
            r.map(drop).map_err(|e| show(&e)),
            "copy (destination owner)",
        );
        let up = c
            .create_multipart_upload()
            .bucket("owned")
            .key("mp")
            .send()
            .await
            .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
        let r = c
            .upload_part_copy()
            .bucket("owned")
            .key("mp")
            .upload_id(up.upload_id().unwrap())
            .part_number(1)
            .copy_source("owned/k")
            .expected_source_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "upload part copy");
        let r = c
            .delete_object()
            .bucket("owned")
            .key("gone")
            .expected_bucket_owner(owner)
            .send()
            .await;
        check(r.map(drop).map_err(|e| show(&e)), "delete");
    }
    // What the refused requests would have written is not there.
    let listed = c
        .list_objects_v2()
        .bucket("owned")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    let keys: Vec<_> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["copy", "copy2", "k", "new"]);

    // Alice may read the bucket by its policy; naming herself as its owner, she may not.
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"CanonicalUser":"{}"}},
        "Action":"s3:GetObject","Resource":"arn:aws:s3:::owned/*"}}]}}"#,
        ALICE.canonical_id()
    );
    c.put_bucket_policy()
        .bucket("owned")
        .policy(&policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("policy: {}", show(&e)));
    alice
        .get_object()
        .bucket("owned")
        .key("k")
        .expected_bucket_owner(&me)
        .send()
        .await
        .unwrap_or_else(|e| panic!("alice get: {}", show(&e)));
    assert_code(
        alice
            .get_object()
            .bucket("owned")
            .key("k")
            .expected_bucket_owner(&other)
            .send()
            .await,
        403,
        "AccessDenied",
    );
    // A bucket she may not read tells her nothing either way.
    n.bucket("private").await;
    for owner in [&me, &other] {
        assert_code(
            alice
                .list_objects_v2()
                .bucket("private")
                .expected_bucket_owner(owner)
                .send()
                .await,
            403,
            "AccessDenied",
        );
    }
}

/// A bucket never versioned: no `x-amz-version-id` from PutObject, CopyObject,
/// CompleteMultipartUpload, DeleteObject, GetObject or HeadObject; once versioned, PutObject
/// has one (so the check can fail).
async fn no_version_id_unversioned(target: Target) {
    let n = node(target);
    let c = &n.client;
    n.bucket("plain").await;
    let put = c
        .put_object()
        .bucket("plain")
        .key("a")
        .body(ByteStream::from_static(b"a"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(put.version_id(), None);
    let copy = n.copy("plain", "b", "plain/a").await;
    assert_eq!(copy.version_id(), None);
    let up = c
        .create_multipart_upload()
        .bucket("plain")
        .key("m")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    let id = up.upload_id().unwrap();
    let part = c
        .upload_part()
        .bucket("plain")
        .key("m")
        .upload_id(id)
        .part_number(1)
        .body(ByteStream::from_static(b"part"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("part: {}", show(&e)));
    let done = c
        .complete_multipart_upload()
        .bucket("plain")
        .key("m")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(part.e_tag().unwrap())
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    assert_eq!(done.version_id(), None);
    assert_eq!(n.head("plain", "a").await.version_id(), None);
    let got = c
        .get_object()
        .bucket("plain")
        .key("m")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(got.version_id(), None);
    let del = c
        .delete_object()
        .bucket("plain")
        .key("a")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_eq!(del.version_id(), None);
    assert_eq!(del.delete_marker(), None);
    c.put_bucket_versioning()
        .bucket("plain")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("versioning: {}", show(&e)));
    let put = c
        .put_object()
        .bucket("plain")
        .key("a")
        .body(ByteStream::from_static(b"a"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert!(put.version_id().is_some());
}

async fn grants(c: &Client, bucket: &str) -> Vec<Permission> {
    let acl = c
        .get_bucket_acl()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("acl: {}", show(&e)));
    let mut p: Vec<_> = acl
        .grants()
        .iter()
        .filter_map(|g| g.permission().cloned())
        .collect();
    p.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    p
}

/// us-east-1: CreateBucket of a bucket its caller owns is `200`, its ACL reset (to the one
/// asked for, or private), its objects kept; another user's bucket is still `409
/// BucketAlreadyExists`, changing nothing.
async fn create_owned_bucket_us_east_1(target: Target) {
    let n = node(target);
    let c = &n.client;
    n.bucket("again").await;
    n.put("again", "k", "kept").await;
    c.put_bucket_acl()
        .bucket("again")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("acl: {}", show(&e)));
    assert_eq!(
        grants(c, "again").await,
        [Permission::FullControl, Permission::Read]
    );
    c.create_bucket()
        .bucket("again")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create again: {}", show(&e)));
    assert_eq!(grants(c, "again").await, [Permission::FullControl]);
    c.create_bucket()
        .bucket("again")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create again: {}", show(&e)));
    assert_eq!(
        grants(c, "again").await,
        [Permission::FullControl, Permission::Read]
    );
    assert_eq!(n.get("again", "k").await, b"kept");
    // Another user: the name is taken, the ACL unchanged.
    let alice = n.client_as(&ALICE);
    assert_code(
        alice
            .create_bucket()
            .bucket("again")
            .acl(BucketCannedAcl::Private)
            .send()
            .await,
        409,
        "BucketAlreadyExists",
    );
    assert_eq!(
        grants(c, "again").await,
        [Permission::FullControl, Permission::Read]
    );
}

/// Any other region: `409 BucketAlreadyOwnedByYou`, nothing changed.
async fn create_owned_bucket_elsewhere(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            region: "eu-west-1",
            ..Options::default()
        },
    );
    let c = &n.client;
    let create = || {
        c.create_bucket()
            .bucket("again")
            .create_bucket_configuration(
                aws_sdk_s3::types::CreateBucketConfiguration::builder()
                    .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::EuWest1)
                    .build(),
            )
            .send()
    };
    create()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    c.put_bucket_acl()
        .bucket("again")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("acl: {}", show(&e)));
    assert_code(create().await, 409, "BucketAlreadyOwnedByYou");
    assert_eq!(
        grants(c, "again").await,
        [Permission::FullControl, Permission::Read]
    );
}

fn lock_config(days: Option<i32>, years: Option<i32>) -> ObjectLockConfiguration {
    ObjectLockConfiguration::builder()
        .object_lock_enabled(ObjectLockEnabled::Enabled)
        .rule(
            ObjectLockRule::builder()
                .default_retention(
                    DefaultRetention::builder()
                        .mode(ObjectLockRetentionMode::Governance)
                        .set_days(days)
                        .set_years(years)
                        .build(),
                )
                .build(),
        )
        .build()
}

/// `400 InvalidRetentionPeriod` (Days or Years not positive, or over 100 years), `404
/// NoSuchUpload` (Complete of an upload id never given), `416 InvalidRange` (UploadPartCopy
/// of a range past the source's end), `416 InvalidPartNumber` (GET and HEAD of a part the
/// object does not have; AWS's status for it, not 400).
async fn error_codes(target: Target) {
    let n = node(target);
    let c = &n.client;
    c.create_bucket()
        .bucket("locked")
        .object_lock_enabled_for_bucket(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    for (days, years) in [
        (Some(0), None),
        (Some(-1), None),
        (None, Some(0)),
        (None, Some(101)),
    ] {
        assert_code(
            c.put_object_lock_configuration()
                .bucket("locked")
                .object_lock_configuration(lock_config(days, years))
                .send()
                .await,
            400,
            "InvalidRetentionPeriod",
        );
    }
    let cfg = c
        .get_object_lock_configuration()
        .bucket("locked")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get lock: {}", show(&e)));
    assert!(
        cfg.object_lock_configuration()
            .and_then(|c| c.rule())
            .is_none()
    );
    c.put_object_lock_configuration()
        .bucket("locked")
        .object_lock_configuration(lock_config(Some(1), None))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put lock: {}", show(&e)));

    n.bucket("codes").await;
    n.put("codes", "src", "0123456789").await;
    // Whatever the part list (an ETag that is not one among it).
    for etag in ["\"x\"", "\"0123456789abcdef0123456789abcdef\""] {
        assert_code(
            c.complete_multipart_upload()
                .bucket("codes")
                .key("k")
                .upload_id("no-such-upload")
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .parts(CompletedPart::builder().part_number(1).e_tag(etag).build())
                        .build(),
                )
                .send()
                .await,
            404,
            "NoSuchUpload",
        );
    }
    // A multipart object of two parts.
    let up = c
        .create_multipart_upload()
        .bucket("codes")
        .key("mp")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    let id = up.upload_id().unwrap();
    for range in ["bytes=5-10", "bytes=10-12", "bytes=100-200"] {
        assert_code(
            c.upload_part_copy()
                .bucket("codes")
                .key("mp")
                .upload_id(id)
                .part_number(1)
                .copy_source("codes/src")
                .copy_source_range(range)
                .send()
                .await,
            416,
            "InvalidRange",
        );
    }
    let mut parts = Vec::new();
    for (i, body) in [(1, "first"), (2, "second")] {
        let p = c
            .upload_part()
            .bucket("codes")
            .key("mp")
            .upload_id(id)
            .part_number(i)
            .body(ByteStream::from_static(body.as_bytes()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("part: {}", show(&e)));
        parts.push(
            CompletedPart::builder()
                .part_number(i)
                .e_tag(p.e_tag().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("codes")
        .key("mp")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let part2 = c
        .get_object()
        .bucket("codes")
        .key("mp")
        .part_number(2)
        .send()
        .await
        .unwrap_or_else(|e| panic!("part 2: {}", show(&e)));
    assert_eq!(part2.parts_count(), Some(2));
    for (key, part) in [("mp", 3), ("src", 2)] {
        assert_code(
            c.get_object()
                .bucket("codes")
                .key(key)
                .part_number(part)
                .send()
                .await,
            416,
            "InvalidPartNumber",
        );
        assert_error(
            c.head_object()
                .bucket("codes")
                .key(key)
                .part_number(part)
                .send()
                .await,
            416,
            None,
        );
    }
}

const SCRIPT: &str = r#"
import sys
import boto3
from botocore.config import Config
ep, ak, sk, other_id = sys.argv[1:5]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

def error(f, status, code):
    try:
        f()
    except c.exceptions.ClientError as e:
        got = (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
        assert got == (status, code), (got, status, code)
    else:
        raise SystemExit("expected %s %s" % (status, code))

c.create_bucket(Bucket="pyb")
me = c.list_buckets()["Owner"]["ID"]
# Created again by its owner in us-east-1: 200.
c.create_bucket(Bucket="pyb")
r = c.put_object(Bucket="pyb", Key="k", Body=b"0123456789")
assert "VersionId" not in r, r
assert "x-amz-version-id" not in r["ResponseMetadata"]["HTTPHeaders"], r
c.put_object(Bucket="pyb", Key="k2", Body=b"x", ExpectedBucketOwner=me)
error(lambda: c.put_object(Bucket="pyb", Key="k3", Body=b"x", ExpectedBucketOwner=other_id),
      403, "AccessDenied")
error(lambda: c.get_object(Bucket="pyb", Key="k", ExpectedBucketOwner=other_id), 403, "AccessDenied")
error(lambda: c.copy_object(Bucket="pyb", Key="k4", CopySource="pyb/k",
                            ExpectedSourceBucketOwner=other_id), 403, "AccessDenied")
error(lambda: c.head_object(Bucket="pyb", Key="k3"), 404, "404")
error(lambda: c.complete_multipart_upload(Bucket="pyb", Key="k", UploadId="nope",
      MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]}), 404, "NoSuchUpload")
up = c.create_multipart_upload(Bucket="pyb", Key="mp")["UploadId"]
error(lambda: c.upload_part_copy(Bucket="pyb", Key="mp", UploadId=up, PartNumber=1,
      CopySource="pyb/k", CopySourceRange="bytes=0-10"), 416, "InvalidRange")
error(lambda: c.get_object(Bucket="pyb", Key="k", PartNumber=2), 416, "InvalidPartNumber")
c.create_bucket(Bucket="pylock", ObjectLockEnabledForBucket=True)
error(lambda: c.put_object_lock_configuration(Bucket="pylock", ObjectLockConfiguration={
    "ObjectLockEnabled": "Enabled",
    "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}}), 400, "InvalidRetentionPeriod")
print("ok")
"#;

/// The same through boto3.
async fn second_client(target: Target) {
    let n = node(target);
    let args = [
        n.endpoint(),
        crate::support::ACCESS_KEY.to_owned(),
        crate::support::SECRET_KEY.to_owned(),
        ALICE.canonical_id(),
    ];
    crate::support::sdk::run_python(SCRIPT, args.to_vec()).await;
}
