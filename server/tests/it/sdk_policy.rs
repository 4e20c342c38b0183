//! Bucket policies through the AWS SDK for Rust and boto3, on a node and through the proxy, on
//! both runtimes: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus, malformed policies,
//! and their effect: another user let in by name and prefix, an explicit Deny that stops the
//! owner too (per key in DeleteObjects), and source-address conditions (the proxy tells its
//! nodes its client's address; a node believes only proxies it trusts). A missing key is `404`
//! only to a caller that may list the bucket, `403` to others, as on AWS.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use ferry_server::start_node;

use crate::support::http::Client as RawClient;
use crate::support::node::node_config;
use crate::support::sdk::{
    self, Target, TestNode, assert_code, put_key, set_policy, show, with_users,
};
use crate::support::{ALICE, BOB, TestUser};

on_every_target!(
    policy_round_trip_and_malformed_policies,
    a_policy_lets_another_user_in,
    deny_stops_the_owner_too,
    source_address_conditions,
    boto3_policies,
    anonymous_requests_are_evaluated,
    existing_object_tags_in_conditions,
    object_attributes_is_its_own_action,
    a_policy_lets_another_user_delete_the_bucket,
    a_prefix_condition_covers_version_listings,
    only_the_owner_manages_the_policy,
    bucket_settings_need_a_grant,
    conditions_see_the_client_headers_everywhere,
    a_missing_key_is_404_only_to_who_may_list,
    aws_example_deny_unencrypted_uploads,
    aws_example_copy_source_prefix,
    aws_example_bucket_owner_full_control,
    time_and_signature_age_conditions,
    request_tags_and_object_lock_documents,
    boto3_condition_keys,
    clients_cannot_claim_service_facts,
);

/// One of AWS's example policies (`core/tests/fixtures/policies`) for `bucket`.
fn aws_example(name: &str, bucket: &str) -> String {
    let path = format!(
        "{}/../core/tests/fixtures/policies/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .replace("amzn-s3-demo-bucket", bucket)
}

fn body(b: &'static [u8]) -> ByteStream {
    ByteStream::from_static(b)
}

async fn policy_round_trip_and_malformed_policies(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    alice
        .create_bucket()
        .bucket("pol")
        .send()
        .await
        .expect("create");
    assert_code(
        alice.get_bucket_policy().bucket("pol").send().await,
        404,
        "NoSuchBucketPolicy",
    );
    assert_code(
        alice.get_bucket_policy_status().bucket("pol").send().await,
        404,
        "NoSuchBucketPolicy",
    );
    let public = r#"{"Version":"2012-10-17","Statement":[{"Sid":"Public","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/*"}]}"#;
    set_policy(&alice, "pol", public).await;
    let got = alice
        .get_bucket_policy()
        .bucket("pol")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get policy: {}", show(&e)));
    assert_eq!(got.policy(), Some(public), "stored as sent");
    let status = alice
        .get_bucket_policy_status()
        .bucket("pol")
        .send()
        .await
        .unwrap_or_else(|e| panic!("policy status: {}", show(&e)));
    assert_eq!(
        status.policy_status().and_then(|s| s.is_public()),
        Some(true)
    );

    // Refused policies change nothing.
    for bad in [
        "{not json",
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}"#,
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:Teleport","Resource":"arn:aws:s3:::pol/*"}]}"#,
        r#"{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/*"}]}"#,
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/*","Condition":{"StringEquals":{"s3:nonsense":"x"}}}]}"#,
    ] {
        assert_code(
            alice
                .put_bucket_policy()
                .bucket("pol")
                .policy(bad)
                .send()
                .await,
            400,
            "MalformedPolicy",
        );
    }
    let got = alice
        .get_bucket_policy()
        .bucket("pol")
        .send()
        .await
        .expect("get");
    assert_eq!(got.policy(), Some(public));

    // Someone else's bucket's policy is not theirs to read or change.
    let bob = n.client_as(&BOB);
    assert_code(
        bob.get_bucket_policy().bucket("pol").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.put_bucket_policy()
            .bucket("pol")
            .policy(public)
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.delete_bucket_policy().bucket("pol").send().await,
        403,
        "AccessDenied",
    );

    alice
        .delete_bucket_policy()
        .bucket("pol")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete policy: {}", show(&e)));
    assert_code(
        alice.get_bucket_policy().bucket("pol").send().await,
        404,
        "NoSuchBucketPolicy",
    );
    // Deleting what is not there is fine, as in S3.
    alice
        .delete_bucket_policy()
        .bucket("pol")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete policy again: {}", show(&e)));
    assert_code(
        alice
            .put_bucket_policy()
            .bucket("nope")
            .policy(public)
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
}

async fn a_policy_lets_another_user_in(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    alice
        .create_bucket()
        .bucket("shared")
        .send()
        .await
        .expect("create");
    for key in ["public/a", "public/b", "private/c"] {
        put_key(&alice, "shared", key).await;
    }
    assert_code(
        bob.get_object()
            .bucket("shared")
            .key("public/a")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    set_policy(
        &alice,
        "shared",
        r#"{"Version":"2012-10-17","Statement":[
          {"Sid":"ReadPublic","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::000000000000:user/bob"]},
           "Action":["s3:GetObject"],"Resource":["arn:aws:s3:::shared/public/*"]},
          {"Sid":"ListPublic","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":"s3:ListBucket","Resource":"arn:aws:s3:::shared",
           "Condition":{"StringLike":{"s3:prefix":"public/*"}}},
          {"Sid":"Drop","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":"s3:PutObject","Resource":"arn:aws:s3:::shared/dropbox/*"}]}"#,
    )
    .await;
    let got = bob
        .get_object()
        .bucket("shared")
        .key("public/a")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob get public/a: {}", show(&e)));
    assert_eq!(sdk::body_bytes(got.body).await, b"public/a");
    assert_code(
        bob.get_object()
            .bucket("shared")
            .key("private/c")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    let listed = bob
        .list_objects_v2()
        .bucket("shared")
        .prefix("public/")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob list public/: {}", show(&e)));
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["public/a", "public/b"]);
    assert_code(
        bob.list_objects_v2().bucket("shared").send().await,
        403,
        "AccessDenied",
    );
    put_key(&bob, "shared", "dropbox/from-bob").await;
    assert_code(
        bob.put_object()
            .bucket("shared")
            .key("public/a")
            .body(ByteStream::from_static(b"overwritten"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    // The bucket is still alice's alone to list whole, and in ListBuckets.
    let all = alice
        .list_objects_v2()
        .bucket("shared")
        .send()
        .await
        .expect("list");
    assert_eq!(all.key_count(), Some(4));
    let bobs = bob.list_buckets().send().await.expect("list buckets");
    assert!(bobs.buckets().is_empty());
}

async fn deny_stops_the_owner_too(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    alice
        .create_bucket()
        .bucket("vault")
        .send()
        .await
        .expect("create");
    for key in ["keep/1", "keep/2", "tmp/1"] {
        put_key(&alice, "vault", key).await;
    }
    set_policy(
        &alice,
        "vault",
        r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":["s3:DeleteObject","s3:PutObject"],
            "Resource":"arn:aws:s3:::vault/keep/*"}]}"#,
    )
    .await;
    assert_code(
        alice
            .delete_object()
            .bucket("vault")
            .key("keep/1")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        alice
            .put_object()
            .bucket("vault")
            .key("keep/3")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    // DeleteObjects: the denied keys fail alone.
    let ids = ["keep/2", "tmp/1"].map(|k| ObjectIdentifier::builder().key(k).build().expect("id"));
    let out = alice
        .delete_objects()
        .bucket("vault")
        .delete(
            Delete::builder()
                .set_objects(Some(ids.to_vec()))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    let deleted: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
    assert_eq!(deleted, ["tmp/1"]);
    let errors: Vec<(&str, &str)> = out
        .errors()
        .iter()
        .map(|e| (e.key().unwrap_or_default(), e.code().unwrap_or_default()))
        .collect();
    assert_eq!(errors, [("keep/2", "AccessDenied")]);
    let left = alice
        .list_objects_v2()
        .bucket("vault")
        .send()
        .await
        .expect("list");
    let keys: Vec<&str> = left.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["keep/1", "keep/2"]);
    // The owner can always take the policy away (a policy cannot lock it out).
    set_policy(
        &alice,
        "vault",
        r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::vault","arn:aws:s3:::vault/*"]}]}"#,
    )
    .await;
    assert_code(
        alice.list_objects_v2().bucket("vault").send().await,
        403,
        "AccessDenied",
    );
    alice
        .delete_bucket_policy()
        .bucket("vault")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete policy: {}", show(&e)));
    alice
        .delete_object()
        .bucket("vault")
        .key("keep/1")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete after the policy went: {}", show(&e)));
}

async fn source_address_conditions(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    alice
        .create_bucket()
        .bucket("net")
        .send()
        .await
        .expect("create");
    put_key(&alice, "net", "k").await;
    // Requests come from 127.0.0.1 (through the proxy as well: it tells its nodes).
    set_policy(
        &alice,
        "net",
        r#"{"Statement":[
          {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::1:user/bob"},"Action":"s3:GetObject",
           "Resource":"arn:aws:s3:::net/*","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}},
          {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::net/*",
           "Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}},
          {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::net/*",
           "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#,
    )
    .await;
    bob.get_object()
        .bucket("net")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob from 127.0.0.1: {}", show(&e)));
    assert_code(
        alice
            .put_object()
            .bucket("net")
            .key("k")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        alice.delete_object().bucket("net").key("k").send().await,
        403,
        "AccessDenied",
    );
    // A client cannot claim another address, at the proxy or at a node: both refuse the
    // cluster's headers from anyone but the cluster.
    let mut raw = RawClient::connect(n.addr);
    raw.credentials = key_of(&ALICE);
    let r = raw.request(
        "PUT",
        "/net/k",
        &[
            ("x-ferry-client-ip", "10.1.2.3"),
            ("x-ferry-client-tls", "true"),
        ],
        b"spoofed",
    );
    // Refused (AccessDenied), and nothing written.
    r.expect_error(403, "AccessDenied");
    let got = alice
        .get_object()
        .bucket("net")
        .key("k")
        .send()
        .await
        .expect("get");
    assert_eq!(sdk::body_bytes(got.body).await, b"k");
}

/// A user the bucket's policy lets delete it deletes it, on a node and through a proxy (whose
/// DeleteBucket fences every node as the cluster, not as the caller, whom a fence would refuse);
/// another user it does not name cannot, and the bucket is then gone everywhere.
async fn a_policy_lets_another_user_delete_the_bucket(target: Target) {
    let n = with_users(target);
    let (alice, bob, admin) = (n.client_as(&ALICE), n.client_as(&BOB), &n.client);
    alice
        .create_bucket()
        .bucket("handed-over")
        .send()
        .await
        .expect("create");
    // Not named by any policy: refused, and the bucket stays.
    assert_code(
        admin.delete_bucket().bucket("handed-over").send().await,
        403,
        "AccessDenied",
    );
    set_policy(
        &alice,
        "handed-over",
        r#"{"Version":"2012-10-17","Statement":[
          {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":"s3:DeleteBucket","Resource":"arn:aws:s3:::handed-over"}]}"#,
    )
    .await;
    assert_code(
        admin.delete_bucket().bucket("handed-over").send().await,
        403,
        "AccessDenied",
    );
    alice
        .head_bucket()
        .bucket("handed-over")
        .send()
        .await
        .expect("still there");
    bob.delete_bucket()
        .bucket("handed-over")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob's DeleteBucket: {}", show(&e)));
    assert_code(
        alice.head_bucket().bucket("handed-over").send().await,
        404,
        "NotFound",
    );
    // Gone from every node behind a proxy: alice can make it again, with nothing in it.
    alice
        .create_bucket()
        .bucket("handed-over")
        .send()
        .await
        .expect("create again");
    let listed = alice
        .list_objects_v2()
        .bucket("handed-over")
        .send()
        .await
        .expect("list");
    assert_eq!(listed.key_count(), Some(0));
}

/// `user`'s key, for the hand-written client.
fn key_of(user: &TestUser) -> ferry_core::s3::sigv4::Credentials {
    ferry_core::s3::sigv4::Credentials::new(user.access_key, user.secret_key)
}

/// A node believes what the cluster says of a request's client only when the cluster sealed it
/// (`ferry_core::s3::cluster`): unsealed, the same headers are refused, from any address.
#[test]
fn a_node_believes_what_the_cluster_seals() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = node_config(dir.path(), ferry_server::RuntimeKind::Tokio);
    cfg.users = vec![ALICE.user()];
    cfg.fsync = false;
    let node = start_node(cfg).expect("node");
    let mut raw = RawClient::connect(node.local_addr());
    raw.credentials = key_of(&ALICE);
    assert_eq!(raw.put("/trust", b"").status, 200);
    let policy = r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::trust/*","Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}"#;
    assert_eq!(raw.put("/trust?policy", policy.as_bytes()).status, 204);
    raw.put("/trust/k", b"x").expect_error(403, "AccessDenied");
    let said = [
        ("x-ferry-client-ip", "10.1.2.3"),
        ("x-ferry-client-tls", "false"),
    ];
    // Unsealed: refused outright, not merely unbelieved.
    raw.request("PUT", "/trust/k", &said, b"x")
        .expect_error(403, "AccessDenied");
    let seal = crate::support::seal("PUT", "/trust/k", &said);
    let sealed = [said[0], said[1], ("x-ferry-cluster-auth", seal.as_str())];
    assert_eq!(raw.request("PUT", "/trust/k", &sealed, b"x").status, 200);
    node.stop();
}

/// The same through boto3 (the second client).
async fn boto3_policies(target: Target) {
    let n = with_users(target);
    let script = r#"
import json, sys
import boto3
from botocore.config import Config
ep = sys.argv[1]
def client(ak, sk):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
alice = client(sys.argv[2], sys.argv[3])
bob = client(sys.argv[4], sys.argv[5])
alice.create_bucket(Bucket="boto-pol")
alice.put_object(Bucket="boto-pol", Key="doc", Body=b"v")
def code(call):
    try:
        call()
    except alice.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"
assert code(lambda: alice.get_bucket_policy(Bucket="boto-pol")) == "NoSuchBucketPolicy"
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
          "Principal": {"AWS": ["arn:aws:iam::000000000000:user/bob"]},
          "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::boto-pol/*"]}]}
assert code(lambda: bob.get_object(Bucket="boto-pol", Key="doc")) == "AccessDenied"
alice.put_bucket_policy(Bucket="boto-pol", Policy=json.dumps(policy))
assert json.loads(alice.get_bucket_policy(Bucket="boto-pol")["Policy"]) == policy
assert alice.get_bucket_policy_status(Bucket="boto-pol")["PolicyStatus"]["IsPublic"] is False
assert bob.get_object(Bucket="boto-pol", Key="doc")["Body"].read() == b"v"
assert code(lambda: bob.put_object(Bucket="boto-pol", Key="doc", Body=b"x")) == "AccessDenied"
assert code(lambda: alice.put_bucket_policy(Bucket="boto-pol", Policy="{")) == "MalformedPolicy"
alice.delete_bucket_policy(Bucket="boto-pol")
assert code(lambda: bob.get_object(Bucket="boto-pol", Key="doc")) == "AccessDenied"
print("ok")
"#;
    let endpoint = n.endpoint();
    crate::support::sdk::run_python(
        script,
        vec![
            endpoint,
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
            BOB.access_key.to_owned(),
            BOB.secret_key.to_owned(),
        ],
    )
    .await;
}

/// Unsigned requests are anonymous: a public-read policy (or a public ACL) lets them in for
/// what it grants, nothing else; without one they are refused. Through boto3's unsigned client
/// too.
async fn anonymous_requests_are_evaluated(target: Target) {
    use crate::support::http::{http_request, plain_get};
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    alice
        .create_bucket()
        .bucket("www")
        .send()
        .await
        .expect("create");
    put_key(&alice, "www", "index.html").await;
    put_key(&alice, "www", "private/notes").await;
    let anonymous_get = |target: &str| plain_get(n.addr, target);
    anonymous_get("/www/index.html").expect_error(403, "AccessDenied");
    set_policy(
        &alice,
        "www",
        r#"{"Version":"2012-10-17","Statement":[
          {"Sid":"PublicRead","Effect":"Allow","Principal":"*","Action":"s3:GetObject",
           "Resource":"arn:aws:s3:::www/*"},
          {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::www/private/*",
           "Condition":{"StringEquals":{"aws:PrincipalType":"Anonymous"}}}]}"#,
    )
    .await;
    let r = anonymous_get("/www/index.html");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, b"index.html");
    anonymous_get("/www/private/notes").expect_error(403, "AccessDenied");
    // The owner still reads it (the Deny names anonymous requests only).
    alice
        .get_object()
        .bucket("www")
        .key("private/notes")
        .send()
        .await
        .unwrap_or_else(|e| panic!("owner get: {}", show(&e)));
    // Only what the policy grants: no listing, no writes, no ListBuckets.
    anonymous_get("/www").expect_error(403, "AccessDenied");
    http_request(n.addr, "PUT", "/www/index.html", &[], b"defaced")
        .expect_error(403, "AccessDenied");
    anonymous_get("/").expect_error(403, "AccessDenied");
    http_request(n.addr, "PUT", "/anon-bucket", &[], b"").expect_error(403, "AccessDenied");
    assert_eq!(anonymous_get("/www/index.html").body, b"index.html");
    // A public-read ACL lets anyone list.
    alice
        .put_bucket_acl()
        .bucket("www")
        .acl(aws_sdk_s3::types::BucketCannedAcl::PublicRead)
        .send()
        .await
        .expect("public-read");
    let r = anonymous_get("/www?list-type=2");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("Key"), ["index.html", "private/notes"]);

    let script = r#"
import sys
import boto3
from botocore import UNSIGNED
from botocore.config import Config
c = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                 config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                               retries={"max_attempts": 1}))
assert c.get_object(Bucket="www", Key="index.html")["Body"].read() == b"index.html"
for call in [lambda: c.get_object(Bucket="www", Key="private/notes"),
             lambda: c.put_object(Bucket="www", Key="x", Body=b"x")]:
    try:
        call()
    except c.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "AccessDenied", e.response
    else:
        raise SystemExit("anonymous was let in")
print("ok")
"#;
    let endpoint = n.endpoint();
    crate::support::sdk::run_python(script, vec![endpoint]).await;
}

/// `s3:ExistingObjectTag/<key>`: a policy that lets bob read the objects tagged
/// `class=public`, and only those; retagging changes what he may read.
async fn existing_object_tags_in_conditions(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    alice
        .create_bucket()
        .bucket("tagged")
        .send()
        .await
        .expect("create");
    alice
        .put_object()
        .bucket("tagged")
        .key("open")
        .tagging("class=public")
        .body(ByteStream::from_static(b"open"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put tagged: {}", show(&e)));
    put_key(&alice, "tagged", "closed").await;
    set_policy(
        &alice,
        "tagged",
        r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::1:user/bob"},
          "Action":"s3:GetObject","Resource":"arn:aws:s3:::tagged/*",
          "Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"public"}}}]}"#,
    )
    .await;
    bob.get_object()
        .bucket("tagged")
        .key("open")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob reads the public object: {}", show(&e)));
    assert_code(
        bob.get_object().bucket("tagged").key("closed").send().await,
        403,
        "AccessDenied",
    );
    alice
        .delete_object_tagging()
        .bucket("tagged")
        .key("open")
        .send()
        .await
        .expect("untag");
    assert_code(
        bob.get_object().bucket("tagged").key("open").send().await,
        403,
        "AccessDenied",
    );
}

/// GetObjectAttributes is `s3:GetObjectAttributes`: a policy granting it lets another user read
/// an object's attributes, not its bytes; one granting `s3:GetObject` does not let them in.
async fn object_attributes_is_its_own_action(target: Target) {
    use aws_sdk_s3::types::ObjectAttributes;
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    alice
        .create_bucket()
        .bucket("attrs")
        .send()
        .await
        .expect("create");
    put_key(&alice, "attrs", "a").await;
    let attributes = || {
        bob.get_object_attributes()
            .bucket("attrs")
            .key("a")
            .object_attributes(ObjectAttributes::ObjectSize)
            .send()
    };
    assert_code(attributes().await, 403, "AccessDenied");
    let grant = |action: &str| {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow",
              "Principal":{{"AWS":"arn:aws:iam::000000000000:user/bob"}},
              "Action":"{action}","Resource":"arn:aws:s3:::attrs/*"}}]}}"#
        )
    };
    set_policy(&alice, "attrs", &grant("s3:GetObject")).await;
    assert_code(attributes().await, 403, "AccessDenied");
    set_policy(&alice, "attrs", &grant("s3:GetObjectAttributes")).await;
    let got = attributes()
        .await
        .unwrap_or_else(|e| panic!("bob's attributes: {}", show(&e)));
    assert_eq!(got.object_size(), Some(1));
    assert_code(
        bob.get_object().bucket("attrs").key("a").send().await,
        403,
        "AccessDenied",
    );
}

/// ListObjectVersions (`s3:ListBucketVersions`) has the listing's condition keys as
/// ListObjects has them (`s3:prefix`, `s3:delimiter`, `s3:max-keys`): a Deny outside bob's
/// prefix or above a page size refuses a versions listing, which never lists keys, version
/// ids, sizes or ETags outside it; inside it bob lists.
async fn a_prefix_condition_covers_version_listings(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    alice
        .create_bucket()
        .bucket("homes")
        .send()
        .await
        .expect("create");
    for key in ["home/bob/a", "home/bob/b", "home/carol/c", "secret/d"] {
        put_key(&alice, "homes", key).await;
    }
    set_policy(
        &alice,
        "homes",
        r#"{"Version":"2012-10-17","Statement":[
          {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":["s3:ListBucket","s3:ListBucketVersions"],"Resource":"arn:aws:s3:::homes"},
          {"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":["s3:ListBucket","s3:ListBucketVersions"],"Resource":"arn:aws:s3:::homes",
           "Condition":{"StringNotLike":{"s3:prefix":"home/bob/*"}}},
          {"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":["s3:ListBucket","s3:ListBucketVersions"],"Resource":"arn:aws:s3:::homes",
           "Condition":{"NumericGreaterThan":{"s3:max-keys":"100"}}}]}"#,
    )
    .await;
    let versions = |prefix: Option<&str>, max: i32| {
        bob.list_object_versions()
            .bucket("homes")
            .set_prefix(prefix.map(str::to_owned))
            .max_keys(max)
            .send()
    };
    let inside = versions(Some("home/bob/"), 10)
        .await
        .unwrap_or_else(|e| panic!("bob's versions under home/bob/: {}", show(&e)));
    let keys: Vec<&str> = inside.versions().iter().filter_map(|v| v.key()).collect();
    assert_eq!(keys, ["home/bob/a", "home/bob/b"]);
    for (prefix, max) in [
        (None, 10),
        (Some(""), 10),
        (Some("home/"), 10),
        (Some("secret/"), 10),
        (Some("home/bob/"), 1000),
    ] {
        assert_code(versions(prefix, max).await, 403, "AccessDenied");
    }
    // The same for ListObjectsV2 (as before).
    let listed = bob
        .list_objects_v2()
        .bucket("homes")
        .prefix("home/bob/")
        .max_keys(10)
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob's list under home/bob/: {}", show(&e)));
    assert_eq!(listed.key_count(), Some(2));
    assert_code(
        bob.list_objects_v2()
            .bucket("homes")
            .prefix("secret/")
            .send()
            .await,
        403,
        "AccessDenied",
    );
}

/// boto3 clients for the policy scripts: alice, bob and an unsigned one, and `err` (the
/// status and code of a refused call, `"ok"` else).
const BOTO3_USERS: &str = r#"
import json, sys
import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError
ep = sys.argv[1]
def client(ak=None, sk=None):
    extra = {} if ak else {"signature_version": UNSIGNED}
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}, **extra))
alice = client(sys.argv[2], sys.argv[3])
bob = client(sys.argv[4], sys.argv[5])
anon = client()
bob_id = sys.argv[6]
def err(call):
    try:
        call()
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
    return "ok"
"#;

/// Run `script` after [`BOTO3_USERS`] against `n`.
async fn run_as_users(n: &TestNode, script: &str) {
    crate::support::sdk::run_python(
        format!("{BOTO3_USERS}{script}"),
        vec![
            n.endpoint(),
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
            BOB.access_key.to_owned(),
            BOB.secret_key.to_owned(),
            BOB.canonical_id(),
        ],
    )
    .await;
}

/// Get, Put and DeleteBucketPolicy are the bucket owner's alone, as on AWS: another user
/// whom the policy lets in gets `405 MethodNotAllowed`, one it does not `403 AccessDenied`,
/// an anonymous request always `403`, and the policy stays; the owner may always read,
/// replace and delete it, even under a policy denying it everything.
async fn only_the_owner_manages_the_policy(target: Target) {
    let n = with_users(target);
    let script = r#"
alice.create_bucket(Bucket="owned")
arns = ["arn:aws:s3:::owned", "arn:aws:s3:::owned/*"]
def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})
everyone = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": arns})
takeover = policy({"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": arns})
def stored():
    return alice.get_bucket_policy(Bucket="owned")["Policy"]
def attempts(who):
    return [err(lambda: who.get_bucket_policy(Bucket="owned")),
            err(lambda: who.put_bucket_policy(Bucket="owned", Policy=takeover)),
            err(lambda: who.delete_bucket_policy(Bucket="owned"))]

alice.put_bucket_policy(Bucket="owned", Policy=everyone)
# The policy lets everyone do everything else...
bob.put_object(Bucket="owned", Key="from-bob", Body=b"b")
assert anon.get_object(Bucket="owned", Key="from-bob")["Body"].read() == b"b"
# ... but not manage the policy: bob is not of the owner's account, anonymous never.
got = attempts(bob)
assert got == [(405, "MethodNotAllowed")] * 3, (got, stored())
got = attempts(anon)
assert got == [(403, "AccessDenied")] * 3, (got, stored())
assert stored() == everyone

# A policy that does not let bob in, or denies him: 403.
bob_arn = "arn:aws:iam::000000000000:user/bob"
for other in [policy({"Effect": "Allow", "Principal": {"AWS": bob_arn}, "Action": "s3:GetObject",
                      "Resource": "arn:aws:s3:::owned/*"}),
              policy({"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": arns},
                     {"Effect": "Deny", "Principal": {"AWS": bob_arn}, "Action": "s3:*",
                      "Resource": arns})]:
    alice.put_bucket_policy(Bucket="owned", Policy=other)
    for who in [bob, anon]:
        got = attempts(who)
        assert got == [(403, "AccessDenied")] * 3, (got, stored())
    assert stored() == other

# The owner is never locked out of the policy.
alice.put_bucket_policy(Bucket="owned", Policy=takeover)
assert err(lambda: alice.list_objects_v2(Bucket="owned")) == (403, "AccessDenied")
assert stored() == takeover
alice.put_bucket_policy(Bucket="owned", Policy=takeover)
alice.delete_bucket_policy(Bucket="owned")
assert alice.list_objects_v2(Bucket="owned")["KeyCount"] == 1
print("ok")
"#;
    run_as_users(&n, script).await;
}

/// The other bucket configuration writes (ACL, object lock, versioning, default encryption,
/// lifecycle, CORS, tagging) are the owner's unless granted: another user and an anonymous
/// client are refused (403) each of them, under a policy that lets them read, and the setting
/// stays; a grant (a policy's Allow, WRITE_ACP for the ACL) lets another user in.
async fn bucket_settings_need_a_grant(target: Target) {
    let n = with_users(target);
    let script = r#"
alice.create_bucket(Bucket="conf")
alice.create_bucket(Bucket="conf-lock", ObjectLockEnabledForBucket=True)
for b in ["conf", "conf-lock"]:
    alice.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": ["arn:aws:s3:::" + b, "arn:aws:s3:::" + b + "/*"]}]}))
alice.put_bucket_versioning(Bucket="conf", VersioningConfiguration={"Status": "Enabled"})
aes = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
alice.put_bucket_encryption(Bucket="conf", ServerSideEncryptionConfiguration=aes)
expire = {"Rules": [{"ID": "old", "Status": "Enabled", "Filter": {"Prefix": "old/"},
                     "Expiration": {"Days": 30}}]}
alice.put_bucket_lifecycle_configuration(Bucket="conf", LifecycleConfiguration=expire)
cors = {"CORSRules": [{"AllowedMethods": ["GET"], "AllowedOrigins": ["https://alice.example"]}]}
alice.put_bucket_cors(Bucket="conf", CORSConfiguration=cors)
alice.put_bucket_tagging(Bucket="conf", Tagging={"TagSet": [{"Key": "team", "Value": "alice"}]})
lock = {"ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
alice.put_object_lock_configuration(Bucket="conf-lock", ObjectLockConfiguration=lock)

def settings():
    return {
        "acl": alice.get_bucket_acl(Bucket="conf")["Grants"],
        "versioning": alice.get_bucket_versioning(Bucket="conf").get("Status"),
        "encryption": alice.get_bucket_encryption(Bucket="conf")["ServerSideEncryptionConfiguration"],
        "lifecycle": alice.get_bucket_lifecycle_configuration(Bucket="conf")["Rules"],
        "cors": alice.get_bucket_cors(Bucket="conf")["CORSRules"],
        "tagging": alice.get_bucket_tagging(Bucket="conf")["TagSet"],
        "lock": alice.get_object_lock_configuration(Bucket="conf-lock")["ObjectLockConfiguration"],
    }
before = settings()
def writes(who):
    return {
        "PutBucketAcl": lambda: who.put_bucket_acl(Bucket="conf", ACL="public-read-write"),
        "PutObjectLockConfiguration": lambda: who.put_object_lock_configuration(
            Bucket="conf-lock", ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}),
        "PutBucketVersioning": lambda: who.put_bucket_versioning(
            Bucket="conf", VersioningConfiguration={"Status": "Suspended"}),
        "PutBucketEncryption": lambda: who.put_bucket_encryption(
            Bucket="conf", ServerSideEncryptionConfiguration={"Rules": [
                {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]}),
        "DeleteBucketEncryption": lambda: who.delete_bucket_encryption(Bucket="conf"),
        "PutBucketLifecycleConfiguration": lambda: who.put_bucket_lifecycle_configuration(
            Bucket="conf", LifecycleConfiguration={"Rules": [
                {"ID": "all", "Status": "Enabled", "Filter": {"Prefix": ""},
                 "Expiration": {"Days": 1}}]}),
        "DeleteBucketLifecycle": lambda: who.delete_bucket_lifecycle(Bucket="conf"),
        "PutBucketCors": lambda: who.put_bucket_cors(Bucket="conf", CORSConfiguration={
            "CORSRules": [{"AllowedMethods": ["PUT"], "AllowedOrigins": ["*"]}]}),
        "DeleteBucketCors": lambda: who.delete_bucket_cors(Bucket="conf"),
        "PutBucketTagging": lambda: who.put_bucket_tagging(
            Bucket="conf", Tagging={"TagSet": [{"Key": "team", "Value": "mallory"}]}),
        "DeleteBucketTagging": lambda: who.delete_bucket_tagging(Bucket="conf"),
    }
for name, who in [("bob", bob), ("anonymous", anon)]:
    for op, write in writes(who).items():
        got = err(write)
        assert got == (403, "AccessDenied"), (name, op, got)
    assert settings() == before, (name, settings(), before)
# What the policy grants they may do.
assert anon.list_objects_v2(Bucket="conf")["KeyCount"] == 0

# Granted, they are bob's to write too: by the policy, and the ACL by WRITE_ACP.
alice.put_bucket_policy(Bucket="conf", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:user/bob"},
     "Action": "s3:PutBucketTagging", "Resource": "arn:aws:s3:::conf"}]}))
bob.put_bucket_tagging(Bucket="conf", Tagging={"TagSet": [{"Key": "team", "Value": "bob"}]})
assert alice.get_bucket_tagging(Bucket="conf")["TagSet"] == [{"Key": "team", "Value": "bob"}]
assert err(lambda: anon.put_bucket_tagging(
    Bucket="conf", Tagging={"TagSet": [{"Key": "team", "Value": "anon"}]})) == (403, "AccessDenied")
assert err(writes(bob)["PutBucketCors"]) == (403, "AccessDenied")
owner = alice.get_bucket_acl(Bucket="conf")["Owner"]["ID"]
alice.put_bucket_acl(Bucket="conf", GrantFullControl="id=" + owner, GrantWriteACP="id=" + bob_id)
bob.put_bucket_acl(Bucket="conf", GrantFullControl="id=" + owner, GrantRead="id=" + bob_id)
grants = alice.get_bucket_acl(Bucket="conf")["Grants"]
assert sorted(g["Permission"] for g in grants) == ["FULL_CONTROL", "READ"], grants
print("ok")
"#;
    run_as_users(&n, script).await;
}

/// Adds `Referer` to every request of a client.
#[derive(Debug)]
struct WithReferer(&'static str);

impl aws_sdk_s3::config::Intercept for WithReferer {
    fn name(&self) -> &'static str {
        "WithReferer"
    }

    fn modify_before_signing(
        &self,
        context: &mut aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextMut<'_>,
        _components: &aws_sdk_s3::config::RuntimeComponents,
        _cfg: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        context
            .request_mut()
            .headers_mut()
            .insert("referer", self.0);
        Ok(())
    }
}

/// A policy's conditions on the client's headers (`aws:Referer` here) judge every request the
/// same way, on a node and through the proxy, including those the proxy splits, fans out or
/// re-issues for the client: a DeleteObjects split by node, a copy between nodes, a merged
/// listing, bucket settings written to every node, a DeleteBucket. From a denied Referer each
/// is refused and changes nothing; without it each goes through.
async fn conditions_see_the_client_headers_everywhere(target: Target) {
    use aws_sdk_s3::types::{
        BucketLifecycleConfiguration, CorsConfiguration, CorsRule, ExpirationStatus,
        LifecycleExpiration, LifecycleRule, LifecycleRuleFilter, Tag,
    };
    let n = TestNode::start(target);
    let c = &n.client;
    let blocked = Client::from_conf(
        sdk::config(n.addr)
            .interceptor(WithReferer("https://blocked.example/page"))
            .build(),
    );
    for b in ["refs", "refs-empty"] {
        n.bucket(b).await;
        set_policy(
            c,
            b,
            &format!(
                r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Deny","Principal":"*",
                  "Action":["s3:PutObject","s3:DeleteObject","s3:ListBucket","s3:ListBucketVersions",
                            "s3:PutBucketTagging","s3:PutLifecycleConfiguration","s3:PutBucketCORS",
                            "s3:DeleteBucket"],
                  "Resource":["arn:aws:s3:::{b}","arn:aws:s3:::{b}/*"],
                  "Condition":{{"StringLike":{{"aws:Referer":"https://blocked.example/*"}}}}}}]}}"#
            ),
        )
        .await;
    }
    n.put("refs", "src", b"source".to_vec()).await;
    // Through the proxy, a copy between two nodes (the proxy reads and writes itself).
    let dst = n.key_placed("refs", "dst", ("refs", "src"), true);
    let copy = |client: &Client| {
        client
            .copy_object()
            .bucket("refs")
            .key(&dst)
            .copy_source("refs/src")
            .send()
    };
    assert_code(copy(&blocked).await, 403, "AccessDenied");
    sdk::assert_error(
        c.head_object().bucket("refs").key(&dst).send().await,
        404,
        None,
    );
    let out = blocked
        .delete_objects()
        .bucket("refs")
        .delete(
            Delete::builder()
                .objects(ObjectIdentifier::builder().key("src").build().expect("id"))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    assert!(out.deleted().is_empty(), "{out:?}");
    assert_eq!(
        out.errors().first().and_then(|e| e.code()),
        Some("AccessDenied")
    );
    assert_eq!(n.get("refs", "src").await, b"source");
    assert_code(
        blocked.list_objects_v2().bucket("refs").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        blocked.list_objects().bucket("refs").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        blocked.list_object_versions().bucket("refs").send().await,
        403,
        "AccessDenied",
    );
    let tagging = aws_sdk_s3::types::Tagging::builder()
        .tag_set(Tag::builder().key("k").value("v").build().expect("tag"))
        .build()
        .expect("tagging");
    let lifecycle = BucketLifecycleConfiguration::builder()
        .rules(
            LifecycleRule::builder()
                .id("all")
                .status(ExpirationStatus::Enabled)
                .filter(LifecycleRuleFilter::builder().prefix("").build())
                .expiration(LifecycleExpiration::builder().days(1).build())
                .build()
                .expect("rule"),
        )
        .build()
        .expect("lifecycle");
    let cors = CorsConfiguration::builder()
        .cors_rules(
            CorsRule::builder()
                .allowed_methods("GET")
                .allowed_origins("*")
                .build()
                .expect("rule"),
        )
        .build()
        .expect("cors");
    assert_code(
        blocked
            .put_bucket_tagging()
            .bucket("refs")
            .tagging(tagging.clone())
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        blocked
            .put_bucket_lifecycle_configuration()
            .bucket("refs")
            .lifecycle_configuration(lifecycle.clone())
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        blocked
            .put_bucket_cors()
            .bucket("refs")
            .cors_configuration(cors.clone())
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        c.get_bucket_tagging().bucket("refs").send().await,
        404,
        "NoSuchTagSet",
    );
    assert_code(
        c.get_bucket_lifecycle_configuration()
            .bucket("refs")
            .send()
            .await,
        404,
        "NoSuchLifecycleConfiguration",
    );
    assert_code(
        c.get_bucket_cors().bucket("refs").send().await,
        404,
        "NoSuchCORSConfiguration",
    );
    assert_code(
        blocked.delete_bucket().bucket("refs-empty").send().await,
        403,
        "AccessDenied",
    );
    c.head_bucket()
        .bucket("refs-empty")
        .send()
        .await
        .unwrap_or_else(|e| panic!("refs-empty is gone: {}", show(&e)));

    // Without the Referer, all of it goes.
    copy(c)
        .await
        .unwrap_or_else(|e| panic!("copy: {}", show(&e)));
    c.put_bucket_tagging()
        .bucket("refs")
        .tagging(tagging)
        .send()
        .await
        .unwrap_or_else(|e| panic!("tagging: {}", show(&e)));
    c.put_bucket_lifecycle_configuration()
        .bucket("refs")
        .lifecycle_configuration(lifecycle)
        .send()
        .await
        .unwrap_or_else(|e| panic!("lifecycle: {}", show(&e)));
    c.put_bucket_cors()
        .bucket("refs")
        .cors_configuration(cors)
        .send()
        .await
        .unwrap_or_else(|e| panic!("cors: {}", show(&e)));
    // And the deletes of those settings are refused from the Referer, then go without it.
    assert_code(
        blocked.delete_bucket_tagging().bucket("refs").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        blocked
            .delete_bucket_lifecycle()
            .bucket("refs")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        blocked.delete_bucket_cors().bucket("refs").send().await,
        403,
        "AccessDenied",
    );
    c.get_bucket_tagging()
        .bucket("refs")
        .send()
        .await
        .unwrap_or_else(|e| panic!("tagging stays: {}", show(&e)));
    c.get_bucket_lifecycle_configuration()
        .bucket("refs")
        .send()
        .await
        .unwrap_or_else(|e| panic!("lifecycle stays: {}", show(&e)));
    c.get_bucket_cors()
        .bucket("refs")
        .send()
        .await
        .unwrap_or_else(|e| panic!("cors stays: {}", show(&e)));
    let listed = c
        .list_objects_v2()
        .bucket("refs")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    assert_eq!(listed.key_count(), Some(2));
    c.delete_bucket()
        .bucket("refs-empty")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete refs-empty: {}", show(&e)));
}

/// GetObject, HeadObject and GetObjectAttributes of a key that is not there: `404 NoSuchKey` to
/// a caller that may list the bucket (its owner, a user the policy or the ACL lets list),
/// `403 AccessDenied` to one that may only read objects, so that it cannot learn which keys
/// exist (nor, in a versioned bucket, that a key was deleted), as AWS answers; an anonymous
/// reader the same; boto3 sees the same.
async fn a_missing_key_is_404_only_to_who_may_list(target: Target) {
    use crate::support::http::{http_request, plain_get};
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    alice
        .create_bucket()
        .bucket("probe")
        .send()
        .await
        .expect("create");
    alice
        .put_bucket_versioning()
        .bucket("probe")
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .expect("versioning");
    put_key(&alice, "probe", "prefix/a").await;
    put_key(&alice, "probe", "prefix/deleted").await;
    alice
        .delete_object()
        .bucket("probe")
        .key("prefix/deleted")
        .send()
        .await
        .expect("delete");
    let read = r#"{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":["s3:GetObject","s3:GetObjectAttributes"],"Resource":"arn:aws:s3:::probe/prefix/*"},
          {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":"s3:PutObject","Resource":"arn:aws:s3:::probe/drop/*"},
          {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::probe/prefix/*"}"#;
    let list = r#"{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},
           "Action":"s3:ListBucket","Resource":"arn:aws:s3:::probe"}"#;
    // What each read of a missing key answers bob: (status, code) of GET, HEAD, attributes.
    let bobs_answers = || async {
        let get = bob
            .get_object()
            .bucket("probe")
            .key("prefix/missing")
            .send()
            .await;
        let head = bob
            .head_object()
            .bucket("probe")
            .key("prefix/missing")
            .send()
            .await;
        let attrs = bob
            .get_object_attributes()
            .bucket("probe")
            .key("prefix/missing")
            .object_attributes(aws_sdk_s3::types::ObjectAttributes::ObjectSize)
            .send()
            .await;
        let deleted = bob
            .get_object()
            .bucket("probe")
            .key("prefix/deleted")
            .send()
            .await;
        (get, head, attrs, deleted)
    };
    // bob may read objects under prefix/, not list: 403 for what is not there.
    set_policy(
        &alice,
        "probe",
        &format!(r#"{{"Version":"2012-10-17","Statement":[{read}]}}"#),
    )
    .await;
    let got = bob
        .get_object()
        .bucket("probe")
        .key("prefix/a")
        .send()
        .await
        .unwrap_or_else(|e| panic!("bob get prefix/a: {}", show(&e)));
    assert_eq!(sdk::body_bytes(got.body).await, b"prefix/a");
    let (get, head, attrs, deleted) = bobs_answers().await;
    assert_code(get, 403, "AccessDenied");
    sdk::assert_error(head, 403, None);
    assert_code(attrs, 403, "AccessDenied");
    assert_code(deleted, 403, "AccessDenied");
    // Nor does the 403 say that a delete marker is there.
    let anonymous = plain_get(n.addr, "/probe/prefix/deleted");
    anonymous.expect_error(403, "AccessDenied");
    assert_eq!(anonymous.header("x-amz-delete-marker"), None);
    assert!(
        anonymous
            .headers
            .iter()
            .all(|(h, _)| !h.starts_with("x-ferry-")),
        "{anonymous:?}"
    );
    plain_get(n.addr, "/probe/prefix/missing").expect_error(403, "AccessDenied");
    assert_eq!(
        http_request(n.addr, "HEAD", "/probe/prefix/missing", &[], b"").status,
        403
    );
    // A copy of a missing source answers the same beside its source as across nodes (where
    // the proxy reads the source as bob): 404, as the copy's own node answers.
    for apart in [false, true] {
        let dst = n.key_placed("probe", "drop/copy", ("probe", "prefix/missing"), apart);
        let r = bob
            .copy_object()
            .bucket("probe")
            .key(&dst)
            .copy_source("probe/prefix/missing")
            .send()
            .await;
        assert_code(r, 404, "NoSuchKey");
    }
    assert_eq!(plain_get(n.addr, "/probe/prefix/a").body, b"prefix/a");
    // The owner may list: 404.
    assert_code(
        alice
            .get_object()
            .bucket("probe")
            .key("prefix/missing")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    // bob allowed to list too: 404 NoSuchKey, the delete marker's header with it.
    set_policy(
        &alice,
        "probe",
        &format!(r#"{{"Version":"2012-10-17","Statement":[{read},{list}]}}"#),
    )
    .await;
    let (get, head, attrs, deleted) = bobs_answers().await;
    assert_code(get, 404, "NoSuchKey");
    sdk::assert_error(head, 404, None);
    assert_code(attrs, 404, "NoSuchKey");
    match deleted {
        Err(e) => {
            assert_eq!(sdk::status_of(&e), Some(404), "{}", show(&e));
            let raw = e.raw_response().expect("raw response");
            assert_eq!(raw.headers().get("x-amz-delete-marker"), Some("true"));
        }
        Ok(r) => panic!("a deleted key read: {r:?}"),
    }
    // Anonymous still may not list: 403; a public-read ACL lets anyone list: 404.
    plain_get(n.addr, "/probe/prefix/missing").expect_error(403, "AccessDenied");
    alice
        .put_bucket_acl()
        .bucket("probe")
        .acl(aws_sdk_s3::types::BucketCannedAcl::PublicRead)
        .send()
        .await
        .expect("public-read");
    plain_get(n.addr, "/probe/prefix/missing").expect_error(404, "NoSuchKey");

    // The same through boto3, as bob, with and without leave to list.
    set_policy(
        &alice,
        "probe",
        &format!(r#"{{"Version":"2012-10-17","Statement":[{read}]}}"#),
    )
    .await;
    alice
        .put_bucket_acl()
        .bucket("probe")
        .acl(aws_sdk_s3::types::BucketCannedAcl::Private)
        .send()
        .await
        .expect("private");
    let script = r#"
def status(call):
    try:
        call()
    except c.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
    raise SystemExit("a missing key was read")
want = sys.argv[4]
s, code = status(lambda: c.get_object(Bucket="probe", Key="prefix/missing"))
assert (str(s), code) == (want, {"403": "AccessDenied", "404": "NoSuchKey"}[want]), (s, code)
s, _ = status(lambda: c.head_object(Bucket="probe", Key="prefix/missing"))
assert str(s) == want, s
assert c.get_object(Bucket="probe", Key="prefix/a")["Body"].read() == b"prefix/a"
print("ok")
"#;
    let bob_runs = |want: &'static str| {
        crate::support::sdk::run_python(
            format!("{}{script}", sdk::BOTO3_PRELUDE),
            vec![
                n.endpoint(),
                BOB.access_key.to_owned(),
                BOB.secret_key.to_owned(),
                want.to_owned(),
            ],
        )
    };
    bob_runs("403").await;
    set_policy(
        &alice,
        "probe",
        &format!(r#"{{"Version":"2012-10-17","Statement":[{read},{list}]}}"#),
    )
    .await;
    bob_runs("404").await;
}

/// AWS's "deny unencrypted uploads" example: a PUT without `x-amz-server-side-encryption`, or
/// with another algorithm, is refused, the owner's too; with `AES256` it is stored.
async fn aws_example_deny_unencrypted_uploads(target: Target) {
    use aws_sdk_s3::types::ServerSideEncryption;
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    alice
        .create_bucket()
        .bucket("enc")
        .send()
        .await
        .expect("create");
    set_policy(
        &alice,
        "enc",
        &aws_example("deny-unencrypted-uploads", "enc"),
    )
    .await;
    let r = alice
        .put_object()
        .bucket("enc")
        .key("plain")
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    let r = alice
        .put_object()
        .bucket("enc")
        .key("kms")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    alice
        .put_object()
        .bucket("enc")
        .key("sealed")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(body(b"x"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("encrypted upload: {}", show(&e)));
    let got = alice
        .head_object()
        .bucket("enc")
        .key("sealed")
        .send()
        .await
        .expect("head");
    assert_eq!(
        got.server_side_encryption,
        Some(ServerSideEncryption::Aes256)
    );
    let r = alice.head_object().bucket("enc").key("plain").send().await;
    assert!(r.is_err(), "the refused upload stored nothing");

    // The SSE-KMS example (`Null` on the key id): the key id header is what it asks for.
    set_policy(&alice, "enc", &aws_example("require-sse-kms", "enc")).await;
    let r = alice
        .put_object()
        .bucket("enc")
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
}

/// AWS's copy-source example: bob may only copy, and only from `public/` (a copy through the
/// proxy between two nodes too: the proxy tells the destination the copy's source).
async fn aws_example_copy_source_prefix(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    let bob = n.client_as(&BOB);
    alice
        .create_bucket()
        .bucket("cpb")
        .send()
        .await
        .expect("create");
    for key in ["public/a", "public/b c", "private/s"] {
        put_key(&alice, "cpb", key).await;
    }
    let policy = aws_example("copy-source-prefix", "cpb")
        .replace("amzn-s3-demo-source-bucket", "cpb")
        .replace("user/Dave", "user/bob")
        .replace("\"Action\": \"s3:PutObject\",\n      \"Resource\": \"arn:aws:s3:::cpb/*\"\n    },",
                 "\"Action\": [\"s3:PutObject\", \"s3:GetObject\"],\n      \"Resource\": \"arn:aws:s3:::cpb/*\"\n    },");
    assert!(policy.contains("s3:GetObject"), "{policy}");
    set_policy(&alice, "cpb", &policy).await;
    for (i, source) in ["cpb/public/a", "/cpb/public/a", "cpb/public/b%20c"]
        .iter()
        .enumerate()
    {
        // Copies to many keys, so that some land on another node than their source.
        for j in 0..4 {
            bob.copy_object()
                .bucket("cpb")
                .key(format!("copies/{i}-{j}"))
                .copy_source(*source)
                .send()
                .await
                .unwrap_or_else(|e| panic!("copy of {source}: {}", show(&e)));
        }
    }
    for j in 0..4 {
        let r = bob
            .copy_object()
            .bucket("cpb")
            .key(format!("copies/s-{j}"))
            .copy_source("cpb/private/s")
            .send()
            .await;
        assert_code(r, 403, "AccessDenied");
    }
    let r = bob
        .put_object()
        .bucket("cpb")
        .key("copies/direct")
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    // Alice is not the statement's principal.
    put_key(&alice, "cpb", "copies/direct").await;
}

/// AWS's "require bucket-owner-full-control" example, with the principal an account's root
/// (`arn:aws:iam::ACCOUNT:root`, ACCOUNT a user's canonical id), and the
/// `x-amz-grant-full-control` variant.
async fn aws_example_bucket_owner_full_control(target: Target) {
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    let bob = n.client_as(&BOB);
    alice
        .create_bucket()
        .bucket("drop")
        .send()
        .await
        .expect("create");
    let policy = aws_example("bucket-owner-full-control", "drop")
        .replace("111122223333", &BOB.canonical_id());
    set_policy(&alice, "drop", &policy).await;
    let r = bob
        .put_object()
        .bucket("drop")
        .key("a")
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    let r = bob
        .put_object()
        .bucket("drop")
        .key("a")
        .acl(aws_sdk_s3::types::ObjectCannedAcl::Private)
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    bob.put_object()
        .bucket("drop")
        .key("a")
        .acl(aws_sdk_s3::types::ObjectCannedAcl::BucketOwnerFullControl)
        .body(body(b"x"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("with the ACL: {}", show(&e)));
    // Another account (alice's own root is not bob's) gets nothing from it.
    let r = n
        .client
        .put_object()
        .bucket("drop")
        .key("b")
        .acl(aws_sdk_s3::types::ObjectCannedAcl::BucketOwnerFullControl)
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");

    let alice_id = ALICE.canonical_id();
    let policy = aws_example("grant-full-control", "drop")
        .replace(
            "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be",
            &alice_id,
        )
        .replace("user/Dave", "user/bob");
    set_policy(&alice, "drop", &policy).await;
    let r = bob
        .put_object()
        .bucket("drop")
        .key("g")
        .acl(aws_sdk_s3::types::ObjectCannedAcl::BucketOwnerFullControl)
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
    bob.put_object()
        .bucket("drop")
        .key("g")
        .grant_full_control(format!("id=\"{alice_id}\""))
        .body(body(b"x"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("with the grant: {}", show(&e)));
    let r = bob
        .put_object()
        .bucket("drop")
        .key("g")
        .grant_full_control(format!("id=\"{}\"", BOB.canonical_id()))
        .body(body(b"x"))
        .send()
        .await;
    assert_code(r, 403, "AccessDenied");
}

/// `aws:CurrentTime` / `aws:EpochTime` are the server's clock, `s3:signatureAge` the age of
/// the client's signature (a presigned URL signed twenty minutes ago is older than AWS's
/// ten-minute example allows, through the proxy too, which signs again).
async fn time_and_signature_age_conditions(target: Target) {
    use crate::support::http::{http_request, target_of};
    use aws_sdk_s3::presigning::PresigningConfig;
    use std::time::{Duration, SystemTime};
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    let bob = n.client_as(&BOB);
    alice
        .create_bucket()
        .bucket("when")
        .send()
        .await
        .expect("create");
    put_key(&alice, "when", "past/a").await;
    put_key(&alice, "when", "now/a").await;
    let bob_arn = "arn:aws:iam::000000000000:user/bob";
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": bob_arn}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::when/past/*",
         "Condition": {"DateLessThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"}}},
        {"Effect": "Allow", "Principal": {"AWS": bob_arn}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::when/now/*",
         "Condition": {"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"},
                       "NumericLessThan": {"aws:EpochTime": 4102444800u64}}}]});
    set_policy(&alice, "when", &policy.to_string()).await;
    let r = bob.get_object().bucket("when").key("past/a").send().await;
    assert_code(r, 403, "AccessDenied");
    bob.get_object()
        .bucket("when")
        .key("now/a")
        .send()
        .await
        .unwrap_or_else(|e| panic!("within the dates: {}", show(&e)));

    set_policy(&alice, "when", &aws_example("signature-age", "when")).await;
    alice
        .get_object()
        .bucket("when")
        .key("now/a")
        .send()
        .await
        .expect("a fresh signature");
    let presign = |start: SystemTime| {
        PresigningConfig::builder()
            .start_time(start)
            .expires_in(Duration::from_secs(3600))
            .build()
            .expect("config")
    };
    let fresh = alice
        .get_object()
        .bucket("when")
        .key("now/a")
        .presigned(presign(SystemTime::now()))
        .await
        .expect("presign");
    let old = alice
        .get_object()
        .bucket("when")
        .key("now/a")
        .presigned(presign(SystemTime::now() - Duration::from_secs(20 * 60)))
        .await
        .expect("presign");
    let fetch = |req: &aws_sdk_s3::presigning::PresignedRequest| {
        let headers: Vec<(&str, &str)> = req.headers().collect();
        http_request(n.addr, req.method(), target_of(req.uri()), &headers, b"")
    };
    assert_eq!(fetch(&fresh).status, 200);
    let r = fetch(&old);
    assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(&r.body));
}

/// `s3:RequestObjectTag/KEY` and `s3:RequestObjectTagKeys` of a PUT's `x-amz-tagging` and of a
/// PutObjectTagging's document (judged once it is read), and the object lock keys of a
/// PutObjectRetention's.
async fn request_tags_and_object_lock_documents(target: Target) {
    use aws_sdk_s3::types::{ObjectLockRetention, ObjectLockRetentionMode, Tag, Tagging};
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    let bob = n.client_as(&BOB);
    alice
        .create_bucket()
        .bucket("tags")
        .object_lock_enabled_for_bucket(true)
        .send()
        .await
        .expect("create");
    put_key(&alice, "tags", "t").await;
    let bob_arn = "arn:aws:iam::000000000000:user/bob";
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": bob_arn},
         "Action": ["s3:PutObject", "s3:PutObjectTagging"], "Resource": "arn:aws:s3:::tags/*",
         "Condition": {"ForAllValues:StringLike": {"s3:RequestObjectTagKeys": ["team", "project"]}}},
        {"Effect": "Deny", "Principal": "*",
         "Action": ["s3:PutObject", "s3:PutObjectTagging"], "Resource": "arn:aws:s3:::tags/*",
         "Condition": {"StringEquals": {"s3:RequestObjectTag/team": "red"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObjectRetention",
         "Resource": "arn:aws:s3:::tags/*",
         "Condition": {"NumericGreaterThan": {"s3:object-lock-remaining-retention-days": "10"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObjectRetention",
         "Resource": "arn:aws:s3:::tags/*",
         "Condition": {"StringNotEqualsIfExists": {"s3:object-lock-mode": "GOVERNANCE"}}}]});
    set_policy(&alice, "tags", &policy.to_string()).await;
    let tagged = |tagging: &'static str| {
        bob.put_object()
            .bucket("tags")
            .key("b")
            .tagging(tagging)
            .body(body(b"x"))
            .send()
    };
    tagged("team=blue&project=x")
        .await
        .unwrap_or_else(|e| panic!("{}", show(&e)));
    assert_code(tagged("team=blue&secret=1").await, 403, "AccessDenied");
    assert_code(tagged("team=red").await, 403, "AccessDenied");
    let tagging = |pairs: &[(&str, &str)]| {
        let tags = pairs
            .iter()
            .map(|(k, v)| Tag::builder().key(*k).value(*v).build().unwrap())
            .collect::<Vec<_>>();
        Tagging::builder().set_tag_set(Some(tags)).build().unwrap()
    };
    bob.put_object_tagging()
        .bucket("tags")
        .key("t")
        .tagging(tagging(&[("team", "blue")]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}", show(&e)));
    for pairs in [&[("team", "red")][..], &[("owner", "bob")][..]] {
        let r = bob
            .put_object_tagging()
            .bucket("tags")
            .key("t")
            .tagging(tagging(pairs))
            .send()
            .await;
        assert_code(r, 403, "AccessDenied");
        // The owner too, for the Deny.
        let r = alice
            .put_object_tagging()
            .bucket("tags")
            .key("t")
            .tagging(tagging(pairs))
            .send()
            .await;
        if pairs[0].0 == "team" {
            assert_code(r, 403, "AccessDenied");
        } else {
            r.unwrap_or_else(|e| panic!("{}", show(&e)));
        }
    }
    let got = alice
        .get_object_tagging()
        .bucket("tags")
        .key("t")
        .send()
        .await
        .expect("tags");
    assert_eq!(got.tag_set.len(), 1);
    assert_eq!(
        got.tag_set[0].key, "owner",
        "the denied tagging changed nothing"
    );

    let days = |d: u64, mode: ObjectLockRetentionMode| {
        let until = std::time::SystemTime::now() + std::time::Duration::from_secs(d * 86_400);
        ObjectLockRetention::builder()
            .mode(mode)
            .retain_until_date(aws_sdk_s3::primitives::DateTime::from(until))
            .build()
    };
    let retain = |r| {
        alice
            .put_object_retention()
            .bucket("tags")
            .key("t")
            .retention(r)
            .send()
    };
    assert_code(
        retain(days(30, ObjectLockRetentionMode::Governance)).await,
        403,
        "AccessDenied",
    );
    assert_code(
        retain(days(2, ObjectLockRetentionMode::Compliance)).await,
        403,
        "AccessDenied",
    );
    retain(days(2, ObjectLockRetentionMode::Governance))
        .await
        .unwrap_or_else(|e| panic!("{}", show(&e)));
}

/// boto3: AWS's TLS and unencrypted-upload examples as a second client sees them, and a
/// `ForAnyValue:` tag requirement.
async fn boto3_condition_keys(target: Target) {
    let n = with_users(target);
    let script = r#"
import json, sys
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
alice.create_bucket(Bucket="boto-keys")
policy = json.loads(sys.argv[4])
policy["Statement"].append({"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
    "Resource": "arn:aws:s3:::boto-keys/*",
    "Condition": {"ForAllValues:StringNotEquals": {"s3:RequestObjectTagKeys": ["Project"]}}})
alice.put_bucket_policy(Bucket="boto-keys", Policy=json.dumps(policy))
assert code(lambda: alice.put_object(Bucket="boto-keys", Key="a", Body=b"x", Tagging="Project=x")) == "AccessDenied"
assert code(lambda: alice.put_object(Bucket="boto-keys", Key="a", Body=b"x", ServerSideEncryption="AES256")) == "AccessDenied"
alice.put_object(Bucket="boto-keys", Key="a", Body=b"x", ServerSideEncryption="AES256", Tagging="Project=x&Other=y")
assert alice.get_object_tagging(Bucket="boto-keys", Key="a")["TagSet"]
# Plain HTTP has no TLS version: AWS's TlsVersion example denies nothing here.
tls = json.loads(sys.argv[5])
alice.put_bucket_policy(Bucket="boto-keys", Policy=json.dumps(tls))
assert alice.get_object(Bucket="boto-keys", Key="a")["Body"].read() == b"x"
print("ok")
"#;
    crate::support::sdk::run_python(
        script,
        vec![
            n.endpoint(),
            ALICE.access_key.to_owned(),
            ALICE.secret_key.to_owned(),
            aws_example("deny-unencrypted-uploads", "boto-keys"),
            aws_example("tls-version", "boto-keys"),
        ],
    )
    .await;
}

/// The hostile tenant: a statement for the logging service, or conditioned on
/// `aws:SourceArn` / `aws:SourceAccount`, lets no client in, whatever it sends; a proxy's
/// words on the client (`x-ferry-client-tls-version`, `x-ferry-client-signed-at`,
/// `x-ferry-copy-source`) are refused from a client.
async fn clients_cannot_claim_service_facts(target: Target) {
    use crate::support::http::http_request;
    let n = with_users(target);
    let alice = n.client_as(&ALICE);
    let bob = n.client_as(&BOB);
    alice
        .create_bucket()
        .bucket("logs")
        .send()
        .await
        .expect("create");
    put_key(&alice, "logs", "x").await;
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"},
         "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::logs/*"},
        {"Effect": "Allow", "Principal": "*", "Action": ["s3:PutObject", "s3:GetObject"],
         "Resource": "arn:aws:s3:::logs/*",
         "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::*"},
                       "StringLike": {"aws:SourceAccount": "*"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::logs/pub/*"}]});
    set_policy(&alice, "logs", &policy.to_string()).await;
    put_key(&alice, "logs", "pub/p").await;
    let claims = [
        ("x-amz-source-arn", "arn:aws:s3:::src"),
        ("x-amz-source-account", "111122223333"),
        ("User-Agent", "logging.s3.amazonaws.com"),
    ];
    for (name, value) in claims {
        let r = bob
            .put_object()
            .bucket("logs")
            .key("y")
            .body(body(b"x"))
            .customize()
            .mutate_request(move |r| {
                r.headers_mut().insert(name, value);
            })
            .send()
            .await;
        assert_code(r, 403, "AccessDenied");
        let r = bob
            .get_object()
            .bucket("logs")
            .key("x")
            .customize()
            .mutate_request(move |r| {
                r.headers_mut().insert(name, value);
            })
            .send()
            .await;
        assert_code(r, 403, "AccessDenied");
    }
    // Anonymous, with the same claims.
    for (name, value) in claims {
        let r = http_request(n.addr, "GET", "/logs/x", &[(name, value)], b"");
        assert_eq!(r.status, 403, "{name}");
    }
    // The proxy's words, from a client: refused outright (never believed).
    assert_eq!(
        http_request(n.addr, "GET", "/logs/pub/p", &[], b"").status,
        200
    );
    for (name, value) in [
        ("x-ferry-client-tls-version", "1.3"),
        ("x-ferry-client-signed-at", "0"),
        ("x-ferry-copy-source", "logs/x"),
        ("x-ferry-metadata-directive", "COPY"),
    ] {
        let r = http_request(n.addr, "GET", "/logs/pub/p", &[(name, value)], b"");
        assert_eq!(r.status, 403, "{name}");
    }
}
