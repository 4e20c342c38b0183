//! Bucket ACLs through the AWS SDK for Rust and boto3, on a node and through the proxy, on
//! both runtimes: canned ACLs and grant headers on CreateBucket and PutBucketAcl,
//! AccessControlPolicy documents, GetBucketAcl, and what the grants let another user do.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    AccessControlPolicy, BucketCannedAcl, Grant, Grantee, Owner, Permission, Type,
};

use crate::support::sdk::{Target, assert_code, show, with_users};
use crate::support::{ALICE, BOB};

on_every_target!(
    bucket_acls_grant_access,
    acl_documents_and_errors,
    boto3_bucket_acls,
    object_acls,
    boto3_object_acls,
);

async fn grants(c: &Client, bucket: &str) -> Vec<(String, String)> {
    let out = c
        .get_bucket_acl()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get acl of {bucket}: {}", show(&e)));
    out.grants()
        .iter()
        .map(|g| {
            let who = g.grantee().map_or(String::new(), |w| {
                w.id().or(w.uri()).map(str::to_owned).unwrap_or_default()
            });
            let what = g
                .permission()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            (who, what)
        })
        .collect()
}

async fn bucket_acls_grant_access(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    let (a_id, b_id) = (ALICE.canonical_id(), BOB.canonical_id());
    // authenticated-read: any user may list.
    alice
        .create_bucket()
        .bucket("open")
        .acl(BucketCannedAcl::AuthenticatedRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    alice
        .put_object()
        .bucket("open")
        .key("k")
        .body(ByteStream::from_static(b"v"))
        .send()
        .await
        .expect("put");
    assert_eq!(
        grants(&alice, "open").await,
        [
            (a_id.clone(), "FULL_CONTROL".to_owned()),
            (
                "http://acs.amazonaws.com/groups/global/AuthenticatedUsers".to_owned(),
                "READ".to_owned()
            )
        ]
    );
    let listed = bob
        .list_objects_v2()
        .bucket("open")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob lists: {}", show(&e)));
    assert_eq!(listed.key_count(), Some(1));
    // READ on a bucket is not READ on its objects, nor WRITE, nor READ_ACP.
    assert_code(
        bob.get_object().bucket("open").key("k").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.put_object()
            .bucket("open")
            .key("x")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.get_bucket_acl().bucket("open").send().await,
        403,
        "AccessDenied",
    );

    // Grant headers: bob may write and read the ACL.
    alice
        .put_bucket_acl()
        .bucket("open")
        .grant_write(format!("id=\"{b_id}\""))
        .grant_read_acp(format!("id=\"{b_id}\""))
        .grant_full_control(format!("id=\"{a_id}\""))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put acl: {}", show(&e)));
    bob.put_object()
        .bucket("open")
        .key("from-bob")
        .body(ByteStream::from_static(b"b"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob writes: {}", show(&e)));
    assert_eq!(grants(&bob, "open").await.len(), 3);
    // No READ any more: listing is the owner's again.
    assert_code(
        bob.list_objects_v2().bucket("open").send().await,
        403,
        "AccessDenied",
    );
    // Nor WRITE_ACP.
    assert_code(
        bob.put_bucket_acl()
            .bucket("open")
            .acl(BucketCannedAcl::PublicReadWrite)
            .send()
            .await,
        403,
        "AccessDenied",
    );
    // Back to private.
    alice
        .put_bucket_acl()
        .bucket("open")
        .acl(BucketCannedAcl::Private)
        .send()
        .await
        .expect("private");
    assert_eq!(
        grants(&alice, "open").await,
        [(a_id, "FULL_CONTROL".to_owned())]
    );
    assert_code(
        bob.put_object()
            .bucket("open")
            .key("y")
            .body(ByteStream::from_static(b"y"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
}

async fn acl_documents_and_errors(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    let (a_id, b_id) = (ALICE.canonical_id(), BOB.canonical_id());
    alice
        .create_bucket()
        .bucket("docs")
        .send()
        .await
        .expect("create");
    let grant = |id: &str, p: Permission| {
        Grant::builder()
            .grantee(
                Grantee::builder()
                    .r#type(Type::CanonicalUser)
                    .id(id)
                    .build()
                    .expect("grantee"),
            )
            .permission(p)
            .build()
    };
    let policy = |owner: &str, grants: Vec<Grant>| {
        AccessControlPolicy::builder()
            .owner(Owner::builder().id(owner).build())
            .set_grants(Some(grants))
            .build()
    };
    alice
        .put_bucket_acl()
        .bucket("docs")
        .access_control_policy(policy(
            &a_id,
            vec![
                grant(&a_id, Permission::FullControl),
                grant(&b_id, Permission::Read),
            ],
        ))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put acl document: {}", show(&e)));
    let out = alice
        .get_bucket_acl()
        .bucket("docs")
        .send()
        .await
        .expect("get acl");
    assert_eq!(out.owner().and_then(|o| o.id()), Some(a_id.as_str()));
    assert_eq!(out.owner().and_then(|o| o.display_name()), Some("alice"));
    let bob_grant = out
        .grants()
        .iter()
        .find(|g| g.grantee().and_then(|w| w.id()) == Some(b_id.as_str()))
        .expect("bob's grant");
    assert_eq!(bob_grant.permission(), Some(&Permission::Read));
    assert_eq!(
        bob_grant.grantee().and_then(|w| w.display_name()),
        Some("bob")
    );
    bob.list_objects_v2()
        .bucket("docs")
        .send()
        .await
        .expect("bob lists");

    // Refused, and nothing changes: unknown users, another owner, not an ACL.
    let unknown = "0".repeat(64);
    assert_code(
        alice
            .put_bucket_acl()
            .bucket("docs")
            .access_control_policy(policy(&a_id, vec![grant(&unknown, Permission::Read)]))
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert_code(
        alice
            .put_bucket_acl()
            .bucket("docs")
            .access_control_policy(policy(&b_id, vec![grant(&b_id, Permission::FullControl)]))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        alice
            .put_bucket_acl()
            .bucket("docs")
            .grant_read("emailAddress=\"bob@example.com\"")
            .send()
            .await,
        501,
        "NotImplemented",
    );
    assert_eq!(grants(&alice, "docs").await.len(), 2);
    assert_code(
        alice
            .put_bucket_acl()
            .bucket("docs")
            .grant_read("uri=\"http://example.com/everyone\"")
            .send()
            .await,
        400,
        "InvalidArgument",
    );
}

/// The same through boto3 (the second client).
async fn boto3_bucket_acls(target: Target) {
    let n = with_users(target);
    let script = r#"
import sys
import boto3
from botocore.config import Config
ep = sys.argv[1]
def client(ak, sk):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
alice = client(sys.argv[2], sys.argv[3])
bob = client(sys.argv[4], sys.argv[5])
bob_id = sys.argv[6]
alice.create_bucket(Bucket="boto-acl")
def code(call):
    try:
        call()
    except alice.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"
assert code(lambda: bob.list_objects_v2(Bucket="boto-acl")) == "AccessDenied"
alice.put_bucket_acl(Bucket="boto-acl", ACL="authenticated-read")
acl = alice.get_bucket_acl(Bucket="boto-acl")
assert acl["Owner"]["DisplayName"] == "alice", acl
assert {g["Permission"] for g in acl["Grants"]} == {"FULL_CONTROL", "READ"}, acl
assert code(lambda: bob.list_objects_v2(Bucket="boto-acl")) == "ok"
alice.put_bucket_acl(Bucket="boto-acl", GrantWrite='id="%s"' % bob_id, GrantFullControl='id="%s"' % acl["Owner"]["ID"])
assert code(lambda: bob.put_object(Bucket="boto-acl", Key="k", Body=b"v")) == "ok"
assert code(lambda: bob.list_objects_v2(Bucket="boto-acl")) == "AccessDenied"
assert code(lambda: alice.put_bucket_acl(Bucket="boto-acl", ACL="no-such-acl")) == "InvalidArgument"
print("ok")
"#;
    let endpoint = n.endpoint();
    let bob_id = BOB.canonical_id();
    crate::support::sdk::run_python(
        script,
        vec![
            endpoint,
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
            BOB.access_key.to_owned(),
            BOB.secret_key.to_owned(),
            bob_id,
        ],
    )
    .await;
}

async fn object_grants(c: &Client, bucket: &str, key: &str) -> Vec<(String, String)> {
    let out = c
        .get_object_acl()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get acl of {bucket}/{key}: {}", show(&e)));
    out.grants()
        .iter()
        .map(|g| {
            let who = g.grantee().map_or(String::new(), |w| {
                w.id().or(w.uri()).map(str::to_owned).unwrap_or_default()
            });
            let what = g
                .permission()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            (who, what)
        })
        .collect()
}

/// Objects' own ACLs: canned ACLs and grants on PutObject, CopyObject (never the source's)
/// and CreateMultipartUpload, Get/PutObjectAcl (a metadata-only change), and what they let
/// another user and anonymous requests do.
async fn object_acls(target: Target) {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, ObjectCannedAcl};
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    let (a_id, b_id) = (ALICE.canonical_id(), BOB.canonical_id());
    alice
        .create_bucket()
        .bucket("objs")
        .send()
        .await
        .expect("create");
    let put = |key: &'static str| {
        alice
            .put_object()
            .bucket("objs")
            .key(key)
            .body(ByteStream::from(key.as_bytes().to_vec()))
    };
    put("private").send().await.expect("put private");
    put("public")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put public-read: {}", show(&e)));
    put("for-bob")
        .grant_read(format!("id=\"{b_id}\""))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put with grant: {}", show(&e)));
    assert_eq!(
        object_grants(&alice, "objs", "private").await,
        [(a_id.clone(), "FULL_CONTROL".to_owned())]
    );
    assert_eq!(
        object_grants(&alice, "objs", "public").await,
        [
            (a_id.clone(), "FULL_CONTROL".to_owned()),
            (
                "http://acs.amazonaws.com/groups/global/AllUsers".to_owned(),
                "READ".to_owned()
            )
        ]
    );
    let got = |c: Client, key: &'static str| async move {
        c.get_object()
            .bucket("objs")
            .key(key)
            .send()
            .await
            .map(|_| ())
    };
    assert!(got(bob.clone(), "public").await.is_ok());
    assert!(got(bob.clone(), "for-bob").await.is_ok());
    assert_code(got(bob.clone(), "private").await, 403, "AccessDenied");
    let anon = crate::support::http::plain_get(n.addr, "/objs/public");
    assert_eq!((anon.status, anon.body.as_slice()), (200, &b"public"[..]));
    crate::support::http::plain_get(n.addr, "/objs/for-bob").expect_error(403, "AccessDenied");
    // READ on an object is not its ACL.
    assert_code(
        bob.get_object_acl()
            .bucket("objs")
            .key("for-bob")
            .send()
            .await,
        403,
        "AccessDenied",
    );

    // PutObjectAcl: data, ETag and time stay; the grants change.
    let head = || alice.head_object().bucket("objs").key("private").send();
    let before = head().await.expect("head");
    alice
        .put_object_acl()
        .bucket("objs")
        .key("private")
        .acl(ObjectCannedAcl::AuthenticatedRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put object acl: {}", show(&e)));
    let after = head().await.expect("head");
    assert_eq!(after.e_tag(), before.e_tag());
    assert_eq!(after.last_modified(), before.last_modified());
    assert!(got(bob.clone(), "private").await.is_ok());
    crate::support::http::plain_get(n.addr, "/objs/private").expect_error(403, "AccessDenied");
    assert_code(
        bob.put_object_acl()
            .bucket("objs")
            .key("private")
            .acl(ObjectCannedAcl::PublicRead)
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        alice
            .put_object_acl()
            .bucket("objs")
            .key("missing")
            .acl(ObjectCannedAcl::PublicRead)
            .send()
            .await,
        404,
        "NoSuchKey",
    );

    // A copy gets its request's ACL, not its source's; a multipart object its upload's.
    alice
        .copy_object()
        .bucket("objs")
        .key("copied")
        .copy_source("objs/public")
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy: {}", show(&e)));
    assert_eq!(object_grants(&alice, "objs", "copied").await.len(), 1);
    alice
        .copy_object()
        .bucket("objs")
        .key("copied-public")
        .copy_source("objs/private")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy with acl: {}", show(&e)));
    assert_eq!(
        object_grants(&alice, "objs", "copied-public").await.len(),
        2
    );
    let up = alice
        .create_multipart_upload()
        .bucket("objs")
        .key("mp")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .expect("create upload");
    let id = up.upload_id().expect("upload id");
    let part = alice
        .upload_part()
        .bucket("objs")
        .key("mp")
        .upload_id(id)
        .part_number(1)
        .body(ByteStream::from_static(b"mp"))
        .send()
        .await
        .expect("part");
    alice
        .complete_multipart_upload()
        .bucket("objs")
        .key("mp")
        .upload_id(id)
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
    let anon = crate::support::http::plain_get(n.addr, "/objs/mp");
    assert_eq!((anon.status, anon.body.as_slice()), (200, &b"mp"[..]));
}

/// Object ACLs through boto3.
async fn boto3_object_acls(target: Target) {
    let n = with_users(target);
    let script = r#"
import sys
import boto3
from botocore import UNSIGNED
from botocore.config import Config
ep = sys.argv[1]
def client(ak, sk):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
alice = client(sys.argv[2], sys.argv[3])
anon = boto3.client("s3", endpoint_url=ep, region_name="us-east-1",
                    config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                  retries={"max_attempts": 1}))
alice.create_bucket(Bucket="boto-oacl")
alice.put_object(Bucket="boto-oacl", Key="k", Body=b"v", ACL="public-read")
acl = alice.get_object_acl(Bucket="boto-oacl", Key="k")
assert {g["Permission"] for g in acl["Grants"]} == {"FULL_CONTROL", "READ"}, acl
assert anon.get_object(Bucket="boto-oacl", Key="k")["Body"].read() == b"v"
alice.put_object_acl(Bucket="boto-oacl", Key="k", ACL="private")
try:
    anon.get_object(Bucket="boto-oacl", Key="k")
except anon.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "AccessDenied", e.response
else:
    raise SystemExit("private object served anonymously")
print("ok")
"#;
    let endpoint = n.endpoint();
    crate::support::sdk::run_python(
        script,
        vec![
            endpoint,
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
        ],
    )
    .await;
}
