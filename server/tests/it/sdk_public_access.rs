//! Public access blocks and object ownership through the AWS SDK for Rust and boto3, on a node
//! and through the proxy, on both runtimes: Put/Get/DeletePublicAccessBlock and what each flag
//! refuses or ignores, GetBucketPolicyStatus's `IsPublic`, Put/Get/DeleteBucketOwnershipControls
//! and `x-amz-object-ownership` on CreateBucket, and the hostile tenant's attempts on both.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketCannedAcl, ObjectCannedAcl, ObjectOwnership, OwnershipControls, OwnershipControlsRule,
    PublicAccessBlockConfiguration,
};

use crate::support::http::{http_request, plain_get};
use crate::support::sdk::{Target, assert_code, put_key, set_policy, show, with_users};
use crate::support::{ALICE, BOB};

on_every_target!(
    public_access_block_round_trip,
    block_public_acls_refuses_public_acls,
    ignore_public_acls_makes_public_grants_count_for_nothing,
    public_policies_blocked_and_restricted,
    others_cannot_touch_the_block_or_the_controls,
    boto3_public_access_block,
    ownership_controls_round_trip_and_default,
    bucket_owner_enforced_disables_acls,
    object_writer_owns_its_objects,
    boto3_ownership_controls,
);

const ALL_USERS: &str = "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"";

async fn create(c: &Client, bucket: &str) {
    c.create_bucket()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create {bucket}: {}", show(&e)));
}

fn block(acls: bool, ignore: bool, policy: bool, restrict: bool) -> PublicAccessBlockConfiguration {
    PublicAccessBlockConfiguration::builder()
        .block_public_acls(acls)
        .ignore_public_acls(ignore)
        .block_public_policy(policy)
        .restrict_public_buckets(restrict)
        .build()
}

async fn set_block(c: &Client, bucket: &str, config: PublicAccessBlockConfiguration) {
    c.put_public_access_block()
        .bucket(bucket)
        .public_access_block_configuration(config)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put public access block: {}", show(&e)));
}

fn public_read(bucket: &str) -> String {
    format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::{bucket}/*"}}]}}"#
    )
}

async fn public_access_block_round_trip(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    create(&alice, "pab").await;
    assert_code(
        alice.get_public_access_block().bucket("pab").send().await,
        404,
        "NoSuchPublicAccessBlockConfiguration",
    );
    // Absent flags are false.
    let partial = PublicAccessBlockConfiguration::builder()
        .block_public_acls(true)
        .build();
    set_block(&alice, "pab", partial).await;
    let got = alice
        .get_public_access_block()
        .bucket("pab")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    let c = got
        .public_access_block_configuration()
        .expect("configuration");
    assert_eq!(
        (
            c.block_public_acls(),
            c.ignore_public_acls(),
            c.block_public_policy(),
            c.restrict_public_buckets()
        ),
        (Some(true), Some(false), Some(false), Some(false))
    );
    alice
        .delete_public_access_block()
        .bucket("pab")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_code(
        alice.get_public_access_block().bucket("pab").send().await,
        404,
        "NoSuchPublicAccessBlockConfiguration",
    );
    assert_code(
        alice
            .get_public_access_block()
            .bucket("nobucket")
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
}

async fn block_public_acls_refuses_public_acls(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    create(&alice, "blk").await;
    put_key(&alice, "blk", "k").await;
    set_block(&alice, "blk", block(true, false, false, false)).await;
    let denied = |r: Result<(), String>| assert_eq!(r.err().as_deref(), Some("AccessDenied"));
    let code =
        |e: &dyn aws_sdk_s3::error::ProvideErrorMetadata| e.code().unwrap_or_default().to_owned();
    denied(
        alice
            .put_bucket_acl()
            .bucket("blk")
            .acl(BucketCannedAcl::PublicRead)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| code(&e)),
    );
    denied(
        alice
            .put_object()
            .bucket("blk")
            .key("p")
            .acl(ObjectCannedAcl::AuthenticatedRead)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| code(&e)),
    );
    // A public grant slipped through a grant header.
    denied(
        alice
            .put_object()
            .bucket("blk")
            .key("p")
            .grant_read(ALL_USERS)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| code(&e)),
    );
    denied(
        alice
            .put_object_acl()
            .bucket("blk")
            .key("k")
            .acl(ObjectCannedAcl::PublicReadWrite)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| code(&e)),
    );
    denied(
        alice
            .create_multipart_upload()
            .bucket("blk")
            .key("m")
            .acl(ObjectCannedAcl::PublicRead)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| code(&e)),
    );
    denied(
        alice
            .copy_object()
            .bucket("blk")
            .key("c")
            .copy_source("blk/k")
            .acl(ObjectCannedAcl::PublicRead)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| code(&e)),
    );
    // Nothing was written, and the object stays private.
    assert_code(
        alice.head_object().bucket("blk").key("p").send().await,
        404,
        "NotFound",
    );
    plain_get(n.addr, "/blk/k").expect_error(403, "AccessDenied");
    // Private ACLs and grants to a user still go.
    alice
        .put_object()
        .bucket("blk")
        .key("q")
        .grant_read(format!("id=\"{}\"", BOB.canonical_id()))
        .body(ByteStream::from_static(b"q"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("grant to bob: {}", show(&e)));
    let bob = n.client_as(&BOB);
    bob.get_object()
        .bucket("blk")
        .key("q")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob reads q: {}", show(&e)));
    // Without the block, the same public ACL goes.
    alice
        .delete_public_access_block()
        .bucket("blk")
        .send()
        .await
        .expect("delete block");
    alice
        .put_object_acl()
        .bucket("blk")
        .key("k")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_or_else(|e| panic!("public-read: {}", show(&e)));
    assert_eq!(plain_get(n.addr, "/blk/k").body, b"k");
}

async fn ignore_public_acls_makes_public_grants_count_for_nothing(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "ign").await;
    put_key(&alice, "ign", "k").await;
    alice
        .put_bucket_acl()
        .bucket("ign")
        .acl(BucketCannedAcl::AuthenticatedRead)
        .send()
        .await
        .expect("authenticated-read");
    alice
        .put_object_acl()
        .bucket("ign")
        .key("k")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .expect("public-read");
    assert_eq!(plain_get(n.addr, "/ign/k").body, b"k");
    bob.list_objects_v2()
        .bucket("ign")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob lists: {}", show(&e)));
    set_block(&alice, "ign", block(false, true, false, false)).await;
    plain_get(n.addr, "/ign/k").expect_error(403, "AccessDenied");
    assert_code(
        bob.list_objects_v2().bucket("ign").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.get_object().bucket("ign").key("k").send().await,
        403,
        "AccessDenied",
    );
    // The owner keeps everything; the ACLs themselves are still there to read.
    alice
        .get_object()
        .bucket("ign")
        .key("k")
        .send()
        .await
        .expect("owner reads");
    let acl = alice
        .get_object_acl()
        .bucket("ign")
        .key("k")
        .send()
        .await
        .expect("acl");
    assert_eq!(acl.grants().len(), 2, "{acl:?}");
    alice
        .delete_public_access_block()
        .bucket("ign")
        .send()
        .await
        .expect("delete block");
    assert_eq!(plain_get(n.addr, "/ign/k").body, b"k");
}

async fn public_policies_blocked_and_restricted(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "pol").await;
    put_key(&alice, "pol", "k").await;
    set_block(&alice, "pol", block(false, false, true, false)).await;
    assert_code(
        alice
            .put_bucket_policy()
            .bucket("pol")
            .policy(public_read("pol"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        alice.get_bucket_policy().bucket("pol").send().await,
        404,
        "NoSuchBucketPolicy",
    );
    // Policies that fix who may use them go: a user, a set of CIDRs.
    let to_bob = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/*"}]}"#;
    set_policy(&alice, "pol", to_bob).await;
    let status = |c: &Client| {
        let c = c.clone();
        async move {
            c.get_bucket_policy_status()
                .bucket("pol")
                .send()
                .await
                .unwrap_or_else(|e| panic!("status: {}", show(&e)))
                .policy_status()
                .and_then(|s| s.is_public())
        }
    };
    assert_eq!(status(&alice).await, Some(false));
    let by_ip = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/*","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]}"#;
    set_policy(&alice, "pol", by_ip).await;
    assert_eq!(status(&alice).await, Some(false));
    assert_eq!(plain_get(n.addr, "/pol/k").body, b"k");
    // A public policy, with the block lifted: anyone reads.
    alice
        .delete_public_access_block()
        .bucket("pol")
        .send()
        .await
        .expect("delete block");
    set_policy(&alice, "pol", &public_read("pol")).await;
    assert_eq!(status(&alice).await, Some(true));
    assert_eq!(plain_get(n.addr, "/pol/k").body, b"k");
    bob.get_object()
        .bucket("pol")
        .key("k")
        .send()
        .await
        .expect("bob reads");
    // RestrictPublicBuckets: the public policy lets in the owner alone.
    set_block(&alice, "pol", block(false, false, false, true)).await;
    plain_get(n.addr, "/pol/k").expect_error(403, "AccessDenied");
    assert_code(
        bob.get_object().bucket("pol").key("k").send().await,
        403,
        "AccessDenied",
    );
    alice
        .get_object()
        .bucket("pol")
        .key("k")
        .send()
        .await
        .expect("owner reads");
    // A policy that is not public is not restricted.
    set_policy(&alice, "pol", to_bob).await;
    bob.get_object()
        .bucket("pol")
        .key("k")
        .send()
        .await
        .expect("bob reads under a fixed principal");
}

/// The hostile tenant: bob, or anyone, tries to lift alice's block or change her bucket's
/// ownership controls, with and without a policy that lets everyone do everything.
async fn others_cannot_touch_the_block_or_the_controls(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "mine").await;
    set_block(&alice, "mine", block(true, true, false, false)).await;
    let everything = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},"Action":"s3:*","Resource":["arn:aws:s3:::mine","arn:aws:s3:::mine/*"]}]}"#;
    for with_policy in [false, true] {
        if with_policy {
            set_policy(&alice, "mine", everything).await;
        }
        assert_code(
            bob.delete_public_access_block().bucket("mine").send().await,
            403,
            "AccessDenied",
        );
        assert_code(
            bob.put_public_access_block()
                .bucket("mine")
                .public_access_block_configuration(block(false, false, false, false))
                .send()
                .await,
            403,
            "AccessDenied",
        );
        let controls = OwnershipControls::builder()
            .rules(
                OwnershipControlsRule::builder()
                    .object_ownership(ObjectOwnership::ObjectWriter)
                    .build()
                    .expect("rule"),
            )
            .build()
            .expect("controls");
        assert_code(
            bob.put_bucket_ownership_controls()
                .bucket("mine")
                .ownership_controls(controls)
                .send()
                .await,
            403,
            "AccessDenied",
        );
        assert_code(
            bob.delete_bucket_ownership_controls()
                .bucket("mine")
                .send()
                .await,
            403,
            "AccessDenied",
        );
    }
    for (method, target) in [
        ("DELETE", "/mine?publicAccessBlock"),
        ("DELETE", "/mine?ownershipControls"),
        ("GET", "/mine?publicAccessBlock"),
    ] {
        http_request(n.addr, method, target, &[], b"").expect_error(403, "AccessDenied");
    }
    // Still alice's block.
    let got = alice
        .get_public_access_block()
        .bucket("mine")
        .send()
        .await
        .expect("get");
    let c = got
        .public_access_block_configuration()
        .expect("configuration");
    assert_eq!(c.block_public_acls(), Some(true));
    // An anonymous public ACL through a grant header is refused as the SDK's is.
    let r = http_request(
        n.addr,
        "PUT",
        "/mine/anon",
        &[("x-amz-grant-read", ALL_USERS)],
        b"x",
    );
    assert_eq!(r.status, 403, "{}", r.text());
}

async fn boto3_public_access_block(target: Target) {
    let n = with_users(target);
    let script = r#"
import json, sys, urllib.request, urllib.error
import boto3
from botocore.config import Config
ep = sys.argv[1]
def client(ak, sk):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
alice = client(sys.argv[2], sys.argv[3])
def code(call):
    try:
        call()
    except alice.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"
alice.create_bucket(Bucket="boto-pab")
alice.put_object(Bucket="boto-pab", Key="k", Body=b"v")
assert code(lambda: alice.get_public_access_block(Bucket="boto-pab")) == "NoSuchPublicAccessBlockConfiguration"
conf = {"BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": True,
        "RestrictPublicBuckets": False}
alice.put_public_access_block(Bucket="boto-pab", PublicAccessBlockConfiguration=conf)
assert alice.get_public_access_block(Bucket="boto-pab")["PublicAccessBlockConfiguration"] == conf
assert code(lambda: alice.put_object(Bucket="boto-pab", Key="p", Body=b"x", ACL="public-read")) == "AccessDenied"
assert code(lambda: alice.put_object(Bucket="boto-pab", Key="p", Body=b"x",
            GrantRead='uri="http://acs.amazonaws.com/groups/global/AllUsers"')) == "AccessDenied"
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
          "Action": "s3:GetObject", "Resource": "arn:aws:s3:::boto-pab/*"}]}
assert code(lambda: alice.put_bucket_policy(Bucket="boto-pab", Policy=json.dumps(policy))) == "AccessDenied"
# A browser form with a public acl field is refused as the header is.
v4 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=sys.argv[2],
                  aws_secret_access_key=sys.argv[3], region_name="us-east-1",
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
post = v4.generate_presigned_post("boto-pab", "form", Fields={"acl": "public-read"},
                                     Conditions=[{"acl": "public-read"}])
import urllib3
r = urllib3.PoolManager().request("POST", post["url"], fields=dict(post["fields"], file=("f", b"data")))
assert r.status == 403, (r.status, r.data)
assert code(lambda: alice.head_object(Bucket="boto-pab", Key="form")) == "404"
# ... and so is one that grants all users through an x-amz-grant-read field.
grant = 'uri="http://acs.amazonaws.com/groups/global/AllUsers"'
post = v4.generate_presigned_post("boto-pab", "form", Fields={"x-amz-grant-read": grant},
                                     Conditions=[{"x-amz-grant-read": grant}])
r = urllib3.PoolManager().request("POST", post["url"], fields=dict(post["fields"], file=("f", b"data")))
assert r.status == 403, (r.status, r.data)
assert code(lambda: alice.head_object(Bucket="boto-pab", Key="form")) == "404"
alice.delete_public_access_block(Bucket="boto-pab")
alice.put_bucket_policy(Bucket="boto-pab", Policy=json.dumps(policy))
assert alice.get_bucket_policy_status(Bucket="boto-pab")["PolicyStatus"]["IsPublic"] is True
assert urllib.request.urlopen(ep + "/boto-pab/k").read() == b"v"
print("ok")
"#;
    crate::support::sdk::run_python(
        script,
        vec![
            n.endpoint(),
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
        ],
    )
    .await;
}

fn controls(o: ObjectOwnership) -> OwnershipControls {
    OwnershipControls::builder()
        .rules(
            OwnershipControlsRule::builder()
                .object_ownership(o)
                .build()
                .expect("rule"),
        )
        .build()
        .expect("controls")
}

async fn ownership_of(c: &Client, bucket: &str) -> Option<ObjectOwnership> {
    c.get_bucket_ownership_controls()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get ownership controls: {}", show(&e)))
        .ownership_controls()
        .and_then(|c| c.rules().first())
        .map(|r| r.object_ownership().clone())
}

/// Ferry's default (no controls, behaving as `BucketOwnerPreferred`: ACLs work) and each value
/// put, read back and deleted; `x-amz-object-ownership` on CreateBucket.
async fn ownership_controls_round_trip_and_default(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    create(&alice, "dflt").await;
    assert_code(
        alice
            .get_bucket_ownership_controls()
            .bucket("dflt")
            .send()
            .await,
        404,
        "OwnershipControlsNotFoundError",
    );
    // The default takes ACLs, as Ferry always did.
    alice
        .put_object()
        .bucket("dflt")
        .key("k")
        .acl(ObjectCannedAcl::PublicRead)
        .body(ByteStream::from_static(b"k"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("public-read by default: {}", show(&e)));
    for o in [
        ObjectOwnership::BucketOwnerEnforced,
        ObjectOwnership::ObjectWriter,
        ObjectOwnership::BucketOwnerPreferred,
    ] {
        alice
            .put_bucket_ownership_controls()
            .bucket("dflt")
            .ownership_controls(controls(o.clone()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {o:?}: {}", show(&e)));
        assert_eq!(ownership_of(&alice, "dflt").await, Some(o));
    }
    alice
        .delete_bucket_ownership_controls()
        .bucket("dflt")
        .send()
        .await
        .expect("delete");
    assert_code(
        alice
            .get_bucket_ownership_controls()
            .bucket("dflt")
            .send()
            .await,
        404,
        "OwnershipControlsNotFoundError",
    );
    // At creation.
    for o in [
        ObjectOwnership::BucketOwnerEnforced,
        ObjectOwnership::ObjectWriter,
    ] {
        let name = format!("made-{}", o.as_str().to_ascii_lowercase());
        alice
            .create_bucket()
            .bucket(&name)
            .object_ownership(o.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("create {name}: {}", show(&e)));
        assert_eq!(ownership_of(&alice, &name).await, Some(o));
    }
    // ACLs disabled beside a public ACL is a contradiction; an unknown value is invalid.
    assert_code(
        alice
            .create_bucket()
            .bucket("contradiction")
            .object_ownership(ObjectOwnership::BucketOwnerEnforced)
            .acl(BucketCannedAcl::PublicRead)
            .send()
            .await,
        400,
        "InvalidBucketAclWithObjectOwnership",
    );
    assert_code(
        alice
            .create_bucket()
            .bucket("nonsense")
            .object_ownership(ObjectOwnership::from("Everyone"))
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    for bucket in ["contradiction", "nonsense"] {
        assert_code(
            alice.head_bucket().bucket(bucket).send().await,
            404,
            "NotFound",
        );
    }
}

async fn bucket_owner_enforced_disables_acls(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "enf").await;
    put_key(&alice, "enf", "k").await;
    alice
        .put_object_acl()
        .bucket("enf")
        .key("k")
        .grant_read(format!("id=\"{}\"", BOB.canonical_id()))
        .send()
        .await
        .expect("grant bob");
    bob.get_object()
        .bucket("enf")
        .key("k")
        .send()
        .await
        .expect("bob reads by grant");
    // A bucket ACL that grants others stands in the way.
    alice
        .put_bucket_acl()
        .bucket("enf")
        .acl(BucketCannedAcl::AuthenticatedRead)
        .send()
        .await
        .expect("authenticated-read");
    assert_code(
        alice
            .put_bucket_ownership_controls()
            .bucket("enf")
            .ownership_controls(controls(ObjectOwnership::BucketOwnerEnforced))
            .send()
            .await,
        400,
        "InvalidBucketAclWithObjectOwnership",
    );
    alice
        .put_bucket_acl()
        .bucket("enf")
        .acl(BucketCannedAcl::Private)
        .send()
        .await
        .expect("private");
    alice
        .put_bucket_ownership_controls()
        .bucket("enf")
        .ownership_controls(controls(ObjectOwnership::BucketOwnerEnforced))
        .send()
        .await
        .unwrap_or_else(|e| panic!("enforce: {}", show(&e)));
    // The old grant counts for nothing; the ACL reads as the owner's full control.
    assert_code(
        bob.get_object().bucket("enf").key("k").send().await,
        403,
        "AccessDenied",
    );
    let acl = alice
        .get_object_acl()
        .bucket("enf")
        .key("k")
        .send()
        .await
        .expect("get acl");
    assert_eq!(acl.grants().len(), 1, "{acl:?}");
    // ACL writes: only the owner's full control.
    assert_code(
        alice
            .put_object()
            .bucket("enf")
            .key("p")
            .acl(ObjectCannedAcl::PublicRead)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        400,
        "AccessControlListNotSupported",
    );
    assert_code(
        alice
            .put_object()
            .bucket("enf")
            .key("p")
            .grant_read(format!("id=\"{}\"", BOB.canonical_id()))
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        400,
        "AccessControlListNotSupported",
    );
    assert_code(
        alice
            .put_bucket_acl()
            .bucket("enf")
            .acl(BucketCannedAcl::PublicRead)
            .send()
            .await,
        400,
        "AccessControlListNotSupported",
    );
    assert_code(
        alice
            .put_object_acl()
            .bucket("enf")
            .key("k")
            .acl(ObjectCannedAcl::PublicRead)
            .send()
            .await,
        400,
        "AccessControlListNotSupported",
    );
    alice
        .put_object()
        .bucket("enf")
        .key("p")
        .acl(ObjectCannedAcl::BucketOwnerFullControl)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("bucket-owner-full-control: {}", show(&e)));
}

/// `ObjectWriter`: bob, allowed to write into alice's bucket, owns what he writes; alice reads
/// it only if he grants it. Under Ferry's default, alice owns it.
async fn object_writer_owns_its_objects(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    for (bucket, ownership) in [
        ("writer", Some(ObjectOwnership::ObjectWriter)),
        ("preferred", None),
    ] {
        let mut create = alice
            .create_bucket()
            .bucket(bucket)
            .grant_write(format!("id=\"{}\"", BOB.canonical_id()));
        if let Some(o) = ownership.clone() {
            create = create.object_ownership(o);
        }
        create
            .send()
            .await
            .unwrap_or_else(|e| panic!("create {bucket}: {}", show(&e)));
        put_key(&bob, bucket, "b").await;
        bob.put_object()
            .bucket(bucket)
            .key("shared")
            .acl(ObjectCannedAcl::BucketOwnerFullControl)
            .body(ByteStream::from_static(b"s"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("bob shares: {}", show(&e)));
        let alice_reads = alice.get_object().bucket(bucket).key("b").send().await;
        let bob_reads = bob.get_object().bucket(bucket).key("b").send().await;
        if ownership.is_some() {
            assert_code(alice_reads, 403, "AccessDenied");
            bob_reads.unwrap_or_else(|e| panic!("bob reads his own: {}", show(&e)));
            let acl = bob
                .get_object_acl()
                .bucket(bucket)
                .key("b")
                .send()
                .await
                .unwrap_or_else(|e| panic!("bob's acl: {}", show(&e)));
            assert_eq!(
                acl.owner().and_then(|o| o.id()),
                Some(BOB.canonical_id().as_str())
            );
        } else {
            alice_reads.unwrap_or_else(|e| panic!("alice owns it: {}", show(&e)));
            assert_code(bob_reads, 403, "AccessDenied");
        }
        // Shared with the bucket owner: alice reads it either way.
        alice
            .get_object()
            .bucket(bucket)
            .key("shared")
            .send()
            .await
            .unwrap_or_else(|e| panic!("alice reads shared: {}", show(&e)));
        // The bucket's owner still lists and deletes.
        let listed = alice
            .list_objects_v2()
            .bucket(bucket)
            .send()
            .await
            .expect("list");
        assert_eq!(listed.contents().len(), 2);
        alice
            .delete_object()
            .bucket(bucket)
            .key("b")
            .send()
            .await
            .expect("owner deletes");
    }
}

async fn boto3_ownership_controls(target: Target) {
    let n = with_users(target);
    let script = r#"
import sys
import boto3
from botocore.config import Config
ep = sys.argv[1]
alice = boto3.client("s3", endpoint_url=ep, aws_access_key_id=sys.argv[2],
                     aws_secret_access_key=sys.argv[3], region_name="us-east-1",
                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
def code(call):
    try:
        call()
    except alice.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"
alice.create_bucket(Bucket="boto-own", ObjectOwnership="BucketOwnerEnforced")
rules = alice.get_bucket_ownership_controls(Bucket="boto-own")["OwnershipControls"]["Rules"]
assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}], rules
assert code(lambda: alice.put_object(Bucket="boto-own", Key="k", Body=b"x", ACL="public-read")) == "AccessControlListNotSupported"
alice.put_object(Bucket="boto-own", Key="k", Body=b"x", ACL="bucket-owner-full-control")
alice.put_bucket_ownership_controls(Bucket="boto-own",
    OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
alice.put_object(Bucket="boto-own", Key="k", Body=b"x", ACL="public-read")
alice.delete_bucket_ownership_controls(Bucket="boto-own")
assert code(lambda: alice.get_bucket_ownership_controls(Bucket="boto-own")) == "OwnershipControlsNotFoundError"
assert code(lambda: alice.create_bucket(Bucket="boto-own2", ObjectOwnership="BucketOwnerEnforced",
                                        ACL="public-read")) == "InvalidBucketAclWithObjectOwnership"
print("ok")
"#;
    crate::support::sdk::run_python(
        script,
        vec![
            n.endpoint(),
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
        ],
    )
    .await;
}
