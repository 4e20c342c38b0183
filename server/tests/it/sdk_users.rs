//! Several users (a users file beside the primary key), on a node and through the proxy, on
//! both runtimes: each owns the buckets it creates, lists only those, and is denied everyone
//! else's; owner fields name the real owner. Also through boto3, with `ferry user add`'s file
//! read by the `ferry` binary, and for buckets created before users existed.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use ferry_server::start_node;
use ferry_server::store::Store;

use crate::support::node::node_config;
use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry, stop};
use crate::support::sdk::{self, Target, assert_code, assert_error, show, with_users};
use crate::support::{ALICE, BOB};

on_every_target!(
    users_own_their_buckets,
    a_user_is_denied_another_users_bucket,
    boto3_users_are_apart,
    cors_of_another_users_bucket,
);

async fn bucket_names(c: &Client) -> (Vec<String>, Option<String>, Option<String>) {
    let out = c
        .list_buckets()
        .send()
        .await
        .unwrap_or_else(|e| panic!("list buckets: {}", show(&e)));
    let names = out
        .buckets()
        .iter()
        .filter_map(|b| b.name().map(str::to_owned))
        .collect();
    let owner = out.owner();
    (
        names,
        owner.and_then(|o| o.id().map(str::to_owned)),
        owner.and_then(|o| o.display_name().map(str::to_owned)),
    )
}

async fn create(c: &Client, bucket: &str) {
    c.create_bucket()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create {bucket}: {}", show(&e)));
}

async fn users_own_their_buckets(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "alice-1").await;
    create(&alice, "alice-2").await;
    create(&bob, "bob-1").await;
    n.bucket("primary-1").await;

    let (names, id, display) = bucket_names(&alice).await;
    assert_eq!(names, ["alice-1", "alice-2"]);
    assert_eq!(id, Some(ALICE.canonical_id()));
    assert_eq!(display.as_deref(), Some("alice"));
    let (names, id, _) = bucket_names(&bob).await;
    assert_eq!(names, ["bob-1"]);
    assert_eq!(id, Some(BOB.canonical_id()));
    let (names, _, display) = bucket_names(&n.client).await;
    assert_eq!(names, ["primary-1"]);
    assert_eq!(display.as_deref(), Some("ferry"));

    // A name is the first owner's: another user gets BucketAlreadyExists, the owner 200 (in
    // us-east-1, as AWS answers there); neither changes the owner.
    assert_code(
        bob.create_bucket().bucket("alice-1").send().await,
        409,
        "BucketAlreadyExists",
    );
    assert_code(
        n.client.create_bucket().bucket("alice-1").send().await,
        409,
        "BucketAlreadyExists",
    );
    alice
        .create_bucket()
        .bucket("alice-1")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create again: {}", show(&e)));
    assert_eq!(bucket_names(&alice).await.0, ["alice-1", "alice-2"]);
    assert_eq!(bucket_names(&bob).await.0, ["bob-1"]);

    // Owner fields in listings are the bucket's owner.
    alice
        .put_object()
        .bucket("alice-1")
        .key("k")
        .body(ByteStream::from_static(b"hello"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    let listed = alice
        .list_objects_v2()
        .bucket("alice-1")
        .fetch_owner(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    let owner = listed.contents()[0]
        .owner()
        .expect("owner with fetch-owner");
    assert_eq!(owner.id(), Some(ALICE.canonical_id().as_str()));
    assert_eq!(owner.display_name(), Some("alice"));
    let upload = alice
        .create_multipart_upload()
        .bucket("alice-1")
        .key("mp")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    let uploads = alice
        .list_multipart_uploads()
        .bucket("alice-1")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list uploads: {}", show(&e)));
    let u = &uploads.uploads()[0];
    assert_eq!(
        u.owner().and_then(|o| o.id()),
        Some(ALICE.canonical_id().as_str())
    );
    assert_eq!(
        u.initiator().and_then(|o| o.id()),
        Some(ALICE.canonical_id().as_str())
    );
    let parts = alice
        .list_parts()
        .bucket("alice-1")
        .key("mp")
        .upload_id(upload.upload_id().unwrap_or_default())
        .send()
        .await
        .unwrap_or_else(|e| panic!("list parts: {}", show(&e)));
    assert_eq!(parts.owner().and_then(|o| o.display_name()), Some("alice"));

    // Deleted, the name is free for anyone.
    alice
        .delete_bucket()
        .bucket("alice-2")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    create(&bob, "alice-2").await;
    assert_eq!(bucket_names(&bob).await.0, ["alice-2", "bob-1"]);
}

async fn a_user_is_denied_another_users_bucket(target: Target) {
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "mine").await;
    alice
        .put_object()
        .bucket("mine")
        .key("secret.txt")
        .body(ByteStream::from_static(b"alice's"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_code(
        bob.get_object()
            .bucket("mine")
            .key("secret.txt")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_error(
        bob.head_object()
            .bucket("mine")
            .key("secret.txt")
            .send()
            .await,
        403,
        None,
    );
    assert_error(bob.head_bucket().bucket("mine").send().await, 403, None);
    assert_code(
        bob.put_object()
            .bucket("mine")
            .key("secret.txt")
            .body(ByteStream::from_static(b"bob's"))
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.delete_object()
            .bucket("mine")
            .key("secret.txt")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.list_objects_v2().bucket("mine").send().await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.create_multipart_upload()
            .bucket("mine")
            .key("x")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    assert_code(
        bob.delete_bucket().bucket("mine").send().await,
        403,
        "AccessDenied",
    );
    // Copying out of it is a read of it.
    create(&bob, "bobs").await;
    assert_code(
        bob.copy_object()
            .bucket("bobs")
            .key("stolen")
            .copy_source("mine/secret.txt")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    // The primary user is a user like the others.
    assert_code(
        n.client
            .get_object()
            .bucket("mine")
            .key("secret.txt")
            .send()
            .await,
        403,
        "AccessDenied",
    );
    // A bucket nobody has is missing for everyone.
    assert_code(
        bob.get_object().bucket("nobodys").key("k").send().await,
        404,
        "NoSuchBucket",
    );
    // Nothing changed.
    assert_eq!(n_get(&alice, "mine", "secret.txt").await, b"alice's");
    assert_eq!(bucket_names(&alice).await.0, ["mine"]);
}

async fn n_get(c: &Client, bucket: &str, key: &str) -> Vec<u8> {
    let out = c
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get {bucket}/{key}: {}", show(&e)));
    sdk::body_bytes(out.body).await
}

/// The same through boto3 (the second client).
async fn boto3_users_are_apart(target: Target) {
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
alice.create_bucket(Bucket="boto-alice")
alice.put_object(Bucket="boto-alice", Key="k", Body=b"v")
bob.create_bucket(Bucket="boto-bob")
r = alice.list_buckets()
assert [b["Name"] for b in r["Buckets"]] == ["boto-alice"], r
assert r["Owner"]["DisplayName"] == "alice", r
assert [b["Name"] for b in bob.list_buckets()["Buckets"]] == ["boto-bob"]
for call in [lambda: bob.get_object(Bucket="boto-alice", Key="k"),
             lambda: bob.put_object(Bucket="boto-alice", Key="k", Body=b"x"),
             lambda: bob.list_objects_v2(Bucket="boto-alice"),
             lambda: bob.delete_bucket(Bucket="boto-alice")]:
    try:
        call()
    except bob.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "AccessDenied", e.response
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 403, e.response
    else:
        raise SystemExit("bob was let in")
try:
    bob.create_bucket(Bucket="boto-alice")
except bob.exceptions.BucketAlreadyExists:
    pass
else:
    raise SystemExit("bob took alice's bucket name")
assert alice.get_object(Bucket="boto-alice", Key="k")["Body"].read() == b"v"
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

/// `ferry user add` writes a file that `ferry node --users` reads: the new user signs in with
/// the printed keys and owns what it creates; a second add of the same name is refused.
#[test]
fn user_add_then_node_with_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let users = dir.path().join("users.toml");
    let users_arg = users.to_str().expect("utf-8 path");
    let add = std::process::Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args(["user", "add", "carol", "--users", users_arg])
        .output()
        .expect("ferry user add");
    assert!(add.status.success(), "{add:?}");
    let text = String::from_utf8_lossy(&add.stdout).into_owned();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let (ak, sk) = (field("access key:"), field("secret key:"));
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args(["user", "add", "carol", "--users", users_arg])
        .output()
        .expect("ferry user add");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    let data = dir.path().join("data");
    let data_arg = data.to_str().expect("utf-8 path");
    let mut child = spawn_ferry(
        &[
            "node",
            "--data",
            data_arg,
            "--listen",
            "127.0.0.1:0",
            "--users",
            users_arg,
            "--no-fsync",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, "ferry node listening on http://");
    sdk::block_on(async move {
        let creds = aws_credential_types::Credentials::new(&ak, &sk, None, None, "carol");
        let carol = Client::from_conf(sdk::config(addr).credentials_provider(creds).build());
        create(&carol, "carols").await;
        let (names, _, display) = bucket_names(&carol).await;
        assert_eq!(names, ["carols"]);
        assert_eq!(display.as_deref(), Some("carol"));
        let primary = sdk::client(addr);
        assert!(bucket_names(&primary).await.0.is_empty());
        assert_code(
            primary.list_objects_v2().bucket("carols").send().await,
            403,
            "AccessDenied",
        );
    });
    stop(child, "-TERM");
}

/// A bucket created before users existed (no owner recorded) is the primary user's.
#[test]
fn buckets_from_before_users_belong_to_the_primary_user() {
    let dir = tempfile::tempdir().expect("temp dir");
    Store::open(dir.path())
        .expect("store")
        .create_bucket("old")
        .expect("create");
    let mut cfg = node_config(dir.path(), ferry_server::RuntimeKind::Tokio);
    cfg.users = vec![ALICE.user()];
    cfg.fsync = false;
    let node = start_node(cfg).expect("node");
    let addr = node.local_addr();
    sdk::block_on(async move {
        let primary = sdk::client(addr);
        assert_eq!(bucket_names(&primary).await.0, ["old"]);
        primary
            .head_bucket()
            .bucket("old")
            .send()
            .await
            .unwrap_or_else(|e| panic!("head: {}", show(&e)));
        let creds = aws_credential_types::Credentials::new(
            ALICE.access_key,
            ALICE.secret_key,
            None,
            None,
            "a",
        );
        let alice = Client::from_conf(sdk::config(addr).credentials_provider(creds).build());
        assert!(bucket_names(&alice).await.0.is_empty());
        assert_code(
            alice.create_bucket().bucket("old").send().await,
            409,
            "BucketAlreadyExists",
        );
        assert_error(alice.head_bucket().bucket("old").send().await, 403, None);
    });
    node.stop();
}

/// A bucket of a user other than the primary one answers preflights from its CORS rules (the
/// proxy reads them with its own key, the primary user's), and its owner alone manages them.
async fn cors_of_another_users_bucket(target: Target) {
    use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
    let n = with_users(target);
    let (alice, bob) = (n.client_as(&ALICE), n.client_as(&BOB));
    create(&alice, "web").await;
    let rules = CorsConfiguration::builder()
        .cors_rules(
            CorsRule::builder()
                .allowed_origins("https://app.example")
                .allowed_methods("GET")
                .build()
                .expect("rule"),
        )
        .build()
        .expect("config");
    assert_code(
        bob.put_bucket_cors()
            .bucket("web")
            .cors_configuration(rules.clone())
            .send()
            .await,
        403,
        "AccessDenied",
    );
    alice
        .put_bucket_cors()
        .bucket("web")
        .cors_configuration(rules)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put cors: {}", show(&e)));
    assert_code(
        bob.get_bucket_cors().bucket("web").send().await,
        403,
        "AccessDenied",
    );
    let r = crate::support::http::http_request(
        n.addr,
        "OPTIONS",
        "/web/index.html",
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{r:?} {}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
}
