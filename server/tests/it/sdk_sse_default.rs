//! Bucket default encryption (Put/Get/DeleteBucketEncryption) with the AWS SDK and boto3, on
//! a node and through the proxy, both runtimes: the configuration's round trip and its 404,
//! what S3 refuses, PUTs without encryption headers encrypted by the default (every backend of
//! the proxy holds it), explicit SSE-C winning over it, plaintext again once it is deleted, an
//! `aws:kms` default answering as an `aws:kms` PUT does, and who may read and write it.

use aws_sdk_s3::types::{
    ServerSideEncryption, ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration,
    ServerSideEncryptionRule,
};
use md5::{Digest, Md5};

use crate::sdk_sse::{body, on_disk};
use crate::support::ALICE;
use crate::support::http::Client as Raw;
use crate::support::sdk::{self, Options, Target, TestNode, assert_code, show};

on_every_target!(
    resign:
    encryption_configuration_round_trips,
    bad_configurations_change_nothing,
    default_encrypts_puts,
    kms_default_answers_as_a_kms_put,
    boto3_sets_default_encryption
);
// Through a proxy re-signing with the nodes' keys, every user is the proxy's: the nodes do
// not tell users apart, so policies naming one are for the two other targets.
on_every_target!(policies_name_the_encryption_actions);

/// The clients speak plain HTTP: nodes take SSE-C keys over it.
const SSE: Options = Options {
    sse_c_over_http: true,
    ..sdk::DEFAULT_OPTIONS
};

fn config(
    algorithm: ServerSideEncryption,
    key_id: Option<&str>,
    bucket_key: Option<bool>,
) -> ServerSideEncryptionConfiguration {
    let by_default = ServerSideEncryptionByDefault::builder()
        .sse_algorithm(algorithm)
        .set_kms_master_key_id(key_id.map(str::to_owned))
        .build()
        .expect("default");
    let rule = ServerSideEncryptionRule::builder()
        .apply_server_side_encryption_by_default(by_default)
        .set_bucket_key_enabled(bucket_key)
        .build();
    ServerSideEncryptionConfiguration::builder()
        .rules(rule)
        .build()
        .expect("configuration")
}

async fn put_config(n: &TestNode, bucket: &str, c: ServerSideEncryptionConfiguration) {
    n.client
        .put_bucket_encryption()
        .bucket(bucket)
        .server_side_encryption_configuration(c)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put encryption: {}", show(&e)));
}

/// The bucket's rule: (algorithm, key id, bucket key enabled).
async fn get_rule(n: &TestNode, bucket: &str) -> (ServerSideEncryption, Option<String>, bool) {
    let out = n
        .client
        .get_bucket_encryption()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get encryption: {}", show(&e)));
    let c = out
        .server_side_encryption_configuration()
        .expect("configuration");
    assert_eq!(c.rules().len(), 1);
    let rule = &c.rules()[0];
    let d = rule
        .apply_server_side_encryption_by_default()
        .expect("by default");
    (
        d.sse_algorithm().clone(),
        d.kms_master_key_id().map(str::to_owned),
        rule.bucket_key_enabled().unwrap_or(false),
    )
}

async fn assert_none(n: &TestNode, bucket: &str) {
    let r = n.client.get_bucket_encryption().bucket(bucket).send().await;
    assert_code(r, 404, "ServerSideEncryptionConfigurationNotFoundError");
}

async fn encryption_configuration_round_trips(target: Target) {
    let n = TestNode::start(target);
    let b = "enc";
    n.bucket(b).await;
    // Ferry does not encrypt unless asked: no default until one is put.
    assert_none(&n, b).await;
    put_config(&n, b, config(ServerSideEncryption::Aes256, None, None)).await;
    assert_eq!(
        get_rule(&n, b).await,
        (ServerSideEncryption::Aes256, None, false)
    );
    // A second put replaces the first.
    let arn = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab";
    put_config(
        &n,
        b,
        config(ServerSideEncryption::AwsKms, Some(arn), Some(true)),
    )
    .await;
    assert_eq!(
        get_rule(&n, b).await,
        (ServerSideEncryption::AwsKms, Some(arn.to_owned()), true)
    );
    n.client
        .delete_bucket_encryption()
        .bucket(b)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_none(&n, b).await;
    // Deleting what is not there succeeds, as in S3.
    n.client
        .delete_bucket_encryption()
        .bucket(b)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete again: {}", show(&e)));
    // No bucket: NoSuchBucket for all three.
    let r = n.client.get_bucket_encryption().bucket("nope").send().await;
    assert_code(r, 404, "NoSuchBucket");
    let r = n
        .client
        .put_bucket_encryption()
        .bucket("nope")
        .server_side_encryption_configuration(config(ServerSideEncryption::Aes256, None, None))
        .send()
        .await;
    assert_code(r, 404, "NoSuchBucket");
    let r = n
        .client
        .delete_bucket_encryption()
        .bucket("nope")
        .send()
        .await;
    assert_code(r, 404, "NoSuchBucket");
    // A bucket deleted and made again has no default.
    put_config(&n, b, config(ServerSideEncryption::Aes256, None, None)).await;
    n.client.delete_bucket().bucket(b).send().await.expect("rb");
    n.bucket(b).await;
    assert_none(&n, b).await;
}

async fn bad_configurations_change_nothing(target: Target) {
    let n = TestNode::start(target);
    let b = "encbad";
    n.bucket(b).await;
    let put = |c: ServerSideEncryptionConfiguration| {
        n.client
            .put_bucket_encryption()
            .bucket(b)
            .server_side_encryption_configuration(c)
            .send()
    };
    // A key id is for KMS only.
    let r = put(config(ServerSideEncryption::Aes256, Some("k"), None)).await;
    assert_code(r, 400, "InvalidArgument");
    // Dual-layer SSE-KMS is not implemented.
    let r = put(config(ServerSideEncryption::AwsKmsDsse, None, None)).await;
    assert_code(r, 501, "NotImplemented");
    // Exactly one rule, with its default.
    let one = config(ServerSideEncryption::Aes256, None, None).rules()[0].clone();
    let two = ServerSideEncryptionConfiguration::builder()
        .rules(one.clone())
        .rules(one)
        .build()
        .expect("two");
    assert_code(put(two).await, 400, "MalformedXML");
    let bare = ServerSideEncryptionConfiguration::builder()
        .rules(
            ServerSideEncryptionRule::builder()
                .bucket_key_enabled(true)
                .build(),
        )
        .build()
        .expect("bare");
    assert_code(put(bare).await, 400, "MalformedXML");
    assert_none(&n, b).await;
    // Raw bodies: not XML, an unknown algorithm, no rule, and the Content-MD5 (or checksum)
    // S3 requires.
    let mut raw = Raw::connect(n.addr);
    let md5 = |body: &[u8]| sdk::b64(&Md5::digest(body));
    let target = format!("/{b}?encryption");
    let mut put_raw = |body: &[u8], with_md5: bool| {
        let sum = md5(body);
        let headers: &[(&str, &str)] = if with_md5 {
            &[("Content-MD5", &sum)]
        } else {
            &[]
        };
        raw.request("PUT", &target, headers, body)
    };
    put_raw(b"<ServerSideEncryptionConfiguration><Rule>", true).expect_error(400, "MalformedXML");
    put_raw(b"<ServerSideEncryptionConfiguration/>", true).expect_error(400, "MalformedXML");
    let good = b"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>\
        <SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>\
        </ServerSideEncryptionConfiguration>";
    let unknown = String::from_utf8(good.to_vec())
        .expect("utf-8")
        .replace("AES256", "DES");
    put_raw(unknown.as_bytes(), true).expect_error(400, "MalformedXML");
    put_raw(good, false).expect_error(400, "InvalidRequest");
    assert_none(&n, b).await;
    let r = put_raw(good, true);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        get_rule(&n, b).await,
        (ServerSideEncryption::Aes256, None, false)
    );
}

/// Keys spread over every backend behind a proxy (and some keys on a node).
fn spread_keys(n: &TestNode) -> Vec<String> {
    let bucket = "encd";
    let mut keys: Vec<String> = Vec::new();
    for i in 0..64 {
        let k = format!("obj-{i}");
        if keys
            .iter()
            .all(|o| n.apart((bucket, o), (bucket, &k)) != Some(false))
        {
            keys.push(k);
        }
        if keys.len() == sdk::PROXY_NODES {
            break;
        }
    }
    if n.target.proxy {
        assert_eq!(keys.len(), sdk::PROXY_NODES, "keys on every backend");
    }
    keys
}

async fn default_encrypts_puts(target: Target) {
    let n = TestNode::start_with(target, SSE);
    let b = "encd";
    n.bucket(b).await;
    put_config(&n, b, config(ServerSideEncryption::Aes256, None, None)).await;
    for (i, key) in spread_keys(&n).iter().enumerate() {
        let data = body(200_000, 60 + i as u8);
        let put = n
            .client
            .put_object()
            .bucket(b)
            .key(key)
            .body(data.clone().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {key}: {}", show(&e)));
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256),
            "{key}"
        );
        // SSE-S3 keeps the MD5 of the data as the ETag.
        assert_eq!(put.e_tag(), Some(sdk::etag_of(&data).as_str()));
        let head = n.head(b, key).await;
        assert_eq!(
            head.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        let got = n
            .client
            .get_object()
            .bucket(b)
            .key(key)
            .send()
            .await
            .expect("get");
        assert_eq!(
            got.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert!(
            sdk::body_bytes(got.body).await == data,
            "{key}: bytes differ"
        );
        assert!(
            !on_disk(n.dir(), &data[100_000..100_032]),
            "plaintext of {key} on disk"
        );
    }
    // An explicit SSE-C PUT is SSE-C, not the default: it cannot be read without its key.
    let key = [3u8; 32];
    let key_md5 = sdk::b64(&Md5::digest(key));
    let data = body(50_000, 90);
    let put = n
        .client
        .put_object()
        .bucket(b)
        .key("customer")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(sdk::b64(&key))
        .sse_customer_key_md5(&key_md5)
        .body(data.clone().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put sse-c: {}", show(&e)));
    assert_eq!(put.sse_customer_algorithm(), Some("AES256"));
    assert_eq!(put.server_side_encryption(), None);
    let r = n.client.get_object().bucket(b).key("customer").send().await;
    sdk::assert_error(r, 400, Some("InvalidRequest"));
    let got = n
        .client
        .get_object()
        .bucket(b)
        .key("customer")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(sdk::b64(&key))
        .sse_customer_key_md5(&key_md5)
        .send()
        .await
        .expect("get sse-c");
    assert!(sdk::body_bytes(got.body).await == data);
    // Copies (beside their source or on another node, through the proxy) and multipart
    // uploads take the default too.
    let keys = spread_keys(&n);
    let src = &keys[0];
    let local = (0..64)
        .map(|i| format!("copy-{i}"))
        .find(|k| n.same_node((b, src), (b, k)))
        .expect("a key beside the source");
    let far = (0..64)
        .map(|i| format!("copy-{i}"))
        .find(|k| n.apart((b, src), (b, k)) == Some(true));
    for dst in std::iter::once(local).chain(far) {
        let r = n
            .client
            .copy_object()
            .bucket(b)
            .key(&dst)
            .copy_source(format!("{b}/{src}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy to {dst}: {}", show(&e)));
        assert_eq!(
            r.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert_eq!(
            n.head(b, &dst).await.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
    }
    let up = n
        .client
        .create_multipart_upload()
        .bucket(b)
        .key("mpu")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    assert_eq!(
        up.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    let id = up.upload_id().expect("upload id");
    let part_data = body(70_000, 92);
    let part = n
        .client
        .upload_part()
        .bucket(b)
        .key("mpu")
        .upload_id(id)
        .part_number(1)
        .body(part_data.clone().into())
        .send()
        .await
        .expect("part");
    let done = aws_sdk_s3::types::CompletedMultipartUpload::builder()
        .parts(
            aws_sdk_s3::types::CompletedPart::builder()
                .part_number(1)
                .e_tag(part.e_tag().expect("etag"))
                .build(),
        )
        .build();
    n.client
        .complete_multipart_upload()
        .bucket(b)
        .key("mpu")
        .upload_id(id)
        .multipart_upload(done)
        .send()
        .await
        .expect("complete");
    assert_eq!(
        n.head(b, "mpu").await.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(
        !on_disk(n.dir(), &part_data[20_000..20_032]),
        "plaintext of the upload"
    );
    // Once the default is gone, new PUTs are plaintext again; the older objects stay
    // encrypted.
    n.client
        .delete_bucket_encryption()
        .bucket(b)
        .send()
        .await
        .expect("delete");
    let data = body(50_000, 91);
    let put = n
        .client
        .put_object()
        .bucket(b)
        .key("plain")
        .body(data.clone().into())
        .send()
        .await
        .expect("put plain");
    assert_eq!(put.server_side_encryption(), None);
    assert_eq!(n.head(b, "plain").await.server_side_encryption(), None);
    assert!(on_disk(n.dir(), &data[20_000..20_032]), "plaintext stored");
    let up = n
        .client
        .create_multipart_upload()
        .bucket(b)
        .key("mpu")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    n.client
        .abort_multipart_upload()
        .bucket(b)
        .key("mpu")
        .upload_id(up.upload_id().expect("upload id"))
        .send()
        .await
        .expect("abort");
    let first = &spread_keys(&n)[0];
    assert_eq!(
        n.head(b, first).await.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
}

/// A bucket whose default is `aws:kms` treats a PUT without encryption headers exactly as a
/// PUT with `x-amz-server-side-encryption: aws:kms` and the default's key id: encrypted under
/// that key of the nodes' keyring, or, for a key the keyring does not have, refused with
/// `400 KMS.NotFoundException` and nothing stored.
async fn kms_default_answers_as_a_kms_put(target: Target) {
    let n = TestNode::start_with(target, super::sdk_sse_kms::KMS);
    let b = "enck";
    n.bucket(b).await;
    put_config(
        &n,
        b,
        config(ServerSideEncryption::AwsKms, Some("k2"), None),
    )
    .await;
    let put = n
        .client
        .put_object()
        .bucket(b)
        .key("k")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(put.ssekms_key_id(), Some("k2"));
    let head = n.head(b, "k").await;
    assert_eq!(head.ssekms_key_id(), Some("k2"));
    // An explicit aws:kms without a key id is the keyring's default key, not the bucket's.
    let explicit = n
        .client
        .put_object()
        .bucket(b)
        .key("e")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(explicit.ssekms_key_id(), Some("k1"));
    // A default naming a key the keyring does not have.
    put_config(
        &n,
        b,
        config(ServerSideEncryption::AwsKms, Some("alias/k"), None),
    )
    .await;
    let r = n
        .client
        .put_object()
        .bucket(b)
        .key("missing")
        .body(b"x".to_vec().into())
        .send()
        .await;
    assert_code(r, 400, "KMS.NotFoundException");
    let r = n.client.head_object().bucket(b).key("missing").send().await;
    sdk::assert_error(r, 404, None);
    // An explicit SSE-S3 PUT does not take the default.
    let put = n
        .client
        .put_object()
        .bucket(b)
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
}

/// `s3:GetEncryptionConfiguration` lets another user read the configuration; writing it (Put
/// and Delete) needs `s3:PutEncryptionConfiguration`, which the owner alone has here.
async fn policies_name_the_encryption_actions(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            users: &[ALICE],
            ..Options::default()
        },
    );
    let b = "enc-policy";
    n.bucket(b).await;
    put_config(&n, b, config(ServerSideEncryption::Aes256, None, None)).await;
    let alice = n.client_as(&ALICE);
    let read = alice.get_bucket_encryption().bucket(b).send().await;
    assert_code(read, 403, "AccessDenied");
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
        "Principal":{"AWS":["arn:aws:iam::000000000000:user/alice"]},
        "Action":"s3:GetEncryptionConfiguration","Resource":"arn:aws:s3:::enc-policy"}]}"#;
    n.client
        .put_bucket_policy()
        .bucket(b)
        .policy(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put policy: {}", show(&e)));
    let read = alice
        .get_bucket_encryption()
        .bucket(b)
        .send()
        .await
        .unwrap_or_else(|e| panic!("alice reads: {}", show(&e)));
    assert!(read.server_side_encryption_configuration().is_some());
    let write = alice
        .put_bucket_encryption()
        .bucket(b)
        .server_side_encryption_configuration(config(ServerSideEncryption::Aes256, None, None))
        .send()
        .await;
    assert_code(write, 403, "AccessDenied");
    let delete = alice.delete_bucket_encryption().bucket(b).send().await;
    assert_code(delete, 403, "AccessDenied");
    assert_eq!(
        get_rule(&n, b).await,
        (ServerSideEncryption::Aes256, None, false)
    );
}

/// boto3: put/get/delete_bucket_encryption, a plain put_object encrypted by the default, and a
/// POST Object (browser form) into the bucket encrypted too (through a proxy that re-signs with
/// the nodes' own keys as well: it signs the form again).
async fn boto3_sets_default_encryption(target: Target) {
    let n = TestNode::start(target);
    let script = r#"
import requests
c.create_bucket(Bucket="bdef")
try:
    c.get_bucket_encryption(Bucket="bdef")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "ServerSideEncryptionConfigurationNotFoundError", e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
else:
    raise SystemExit("a configuration before any was put")
c.put_bucket_encryption(Bucket="bdef", ServerSideEncryptionConfiguration={
    "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
r = c.get_bucket_encryption(Bucket="bdef")
rule = r["ServerSideEncryptionConfiguration"]["Rules"][0]
assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}, r
assert rule["BucketKeyEnabled"] is False, r
r = c.put_object(Bucket="bdef", Key="k", Body=b"hello default")
assert r["ServerSideEncryption"] == "AES256", r
r = c.get_object(Bucket="bdef", Key="k")
assert r["ServerSideEncryption"] == "AES256", r
assert r["Body"].read() == b"hello default"
p = c.generate_presigned_post("bdef", "form", ExpiresIn=600)
r = requests.post(p["url"], data=p["fields"], files={"file": ("f", b"posted")})
# Through a proxy that re-signs, the form reaches its node signed again with the node's key.
assert r.status_code == 204, (r.status_code, r.text)
assert r.headers["x-amz-server-side-encryption"] == "AES256", r.headers
assert c.head_object(Bucket="bdef", Key="form")["ServerSideEncryption"] == "AES256"
try:
    c.put_bucket_encryption(Bucket="bdef", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256",
                                                          "KMSMasterKeyID": "k"}}]})
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidArgument", e.response
else:
    raise SystemExit("a key id with AES256")
c.delete_bucket_encryption(Bucket="bdef")
r = c.put_object(Bucket="bdef", Key="p", Body=b"plain")
assert "ServerSideEncryption" not in r, r
print("ok")
"#;
    sdk::run_boto3(&n, script).await;
}
