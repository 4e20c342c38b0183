//! SSE-KMS with the node's local keyring, with the AWS SDK and boto3, on a node and through
//! the proxy (every node given the same keyring), both runtimes: PUTs under the default key
//! and a named one (by id and by key ARN) read back whole and in ranges across the
//! encryption's chunk boundaries, the key id, encryption context and bucket key echoed, no
//! plaintext in the data files, and S3's errors for an unknown key (on PUT, CopyObject and
//! CreateMultipartUpload), a key id without `aws:kms`, a malformed context, DSSE-KMS and a
//! node without a keyring. Multipart uploads under SSE-KMS with a named key, an encryption
//! context and a bucket key (UploadPart, UploadPartCopy, Complete, and the reads answering the
//! KMS headers), and a GET or HEAD that names an encryption refused with `400 InvalidArgument`,
//! as AWS answers, both with boto3 too.

use std::fs;

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, ServerSideEncryption};
use base64::Engine as _;
use md5::{Digest, Md5};

use crate::support::sdk::{self, Options, Target, TestNode};
use crate::support::store::files_under;

on_every_target!(
    resign:
    sse_kms_round_trips,
    sse_kms_refusals,
    boto3_encrypts_with_kms,
    kms_multipart_with_context_and_bucket_key,
    kms_headers_on_reads_are_refused,
    boto3_kms_multipart
);

/// Two keys, `k1` the default.
const KEYRING: &str = "default = \"k1\"\n[keys]\n\
    k1 = \"1111111111111111111111111111111111111111111111111111111111111111\"\n\
    k2 = \"2222222222222222222222222222222222222222222222222222222222222222\"\n";

pub(crate) const KMS: Options = Options {
    sse_c_over_http: true,
    sse_kms_keyring: Some(KEYRING),
    ..sdk::DEFAULT_OPTIONS
};

/// Plaintext bytes in one encryption chunk (`ferry_core::sse::PLAIN_CHUNK`).
const CHUNK: usize = 65_520;

/// Distinct bytes (no 16-byte window repeats early), so a plaintext window is findable.
fn body(n: usize, salt: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ u64::from(salt);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// Whether any file under `dir` holds `needle`.
fn on_disk(dir: &std::path::Path, needle: &[u8]) -> bool {
    files_under(dir)
        .iter()
        .any(|p| fs::read(p).is_ok_and(|data| data.windows(needle.len()).any(|w| w == needle)))
}

/// Inclusive ranges that start, end or cross at chunk boundaries of an object of `n` bytes.
fn ranges(n: usize) -> Vec<(usize, usize)> {
    let mut out = vec![(0, 0), (0, n - 1), (n - 1, n - 1)];
    for b in [CHUNK, 2 * CHUNK, 4 * CHUNK, 16 * CHUNK] {
        if b + 2 < n {
            out.extend([(b - 1, b), (b - 3, b + 2), (b, b), (b - 1, n - 1)]);
        }
    }
    out
}

fn context(json: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(json)
}

async fn get_range(n: &TestNode, key: &str, (a, b): (usize, usize)) -> Vec<u8> {
    let r = n
        .client
        .get_object()
        .bucket("kms")
        .key(key)
        .range(format!("bytes={a}-{b}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{key} {a}-{b}: {}", sdk::show(&e)));
    r.body.collect().await.expect("body").into_bytes().to_vec()
}

/// Size, the key id sent, the key id stored, the context and whether a bucket key is asked.
type Case<'a> = (usize, Option<&'a str>, &'a str, Option<String>, bool);

async fn sse_kms_round_trips(target: Target) {
    let mut n = TestNode::start_with(target, KMS);
    n.bucket("kms").await;
    let arn = "arn:aws:kms:us-east-1:111122223333:key/k2";
    let cases: [Case<'_>; 5] = [
        (1, None, "k1", None, false),
        (
            1024,
            Some("k2"),
            "k2",
            Some(context(r#"{"team":"a"}"#)),
            true,
        ),
        (1 << 20, Some(arn), "k2", None, false),
        (
            8 << 20,
            None,
            "k1",
            Some(context(r#"{"a":"1","b":"2"}"#)),
            false,
        ),
        (CHUNK + 1, Some("alias/aws/s3"), "k1", None, true),
    ];
    for (i, (size, key_id, stored_id, ctx, bucket_key)) in cases.into_iter().enumerate() {
        let data = body(size, i as u8);
        let key = format!("kms-{size}");
        let mut put = n
            .client
            .put_object()
            .bucket("kms")
            .key(&key)
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .body(data.clone().into());
        if let Some(id) = key_id {
            put = put.ssekms_key_id(id);
        }
        if let Some(c) = &ctx {
            put = put.ssekms_encryption_context(c);
        }
        if bucket_key {
            put = put.bucket_key_enabled(true);
        }
        let put = put
            .send()
            .await
            .unwrap_or_else(|e| panic!("{key}: {}", sdk::show(&e)));
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::AwsKms),
            "{key}"
        );
        assert_eq!(put.ssekms_key_id(), Some(stored_id), "{key}");
        assert_eq!(put.ssekms_encryption_context(), ctx.as_deref(), "{key}");
        assert_eq!(
            put.bucket_key_enabled(),
            bucket_key.then_some(true),
            "{key}"
        );
        // Not the MD5 of the data (AWS: SSE-KMS ETags are not).
        assert_ne!(put.e_tag(), Some(sdk::etag_of(&data).as_str()), "{key}");

        let head = n
            .client
            .head_object()
            .bucket("kms")
            .key(&key)
            .send()
            .await
            .expect("head");
        assert_eq!(
            head.server_side_encryption(),
            Some(&ServerSideEncryption::AwsKms)
        );
        assert_eq!(head.ssekms_key_id(), Some(stored_id), "{key}");
        assert_eq!(head.bucket_key_enabled(), bucket_key.then_some(true));
        assert_eq!(head.content_length(), Some(size as i64));
        assert_eq!(head.e_tag(), put.e_tag());

        let got = n
            .client
            .get_object()
            .bucket("kms")
            .key(&key)
            .send()
            .await
            .expect("get");
        assert_eq!(
            got.server_side_encryption(),
            Some(&ServerSideEncryption::AwsKms)
        );
        assert_eq!(got.ssekms_key_id(), Some(stored_id), "{key}");
        assert!(
            got.body.collect().await.expect("body").into_bytes() == data,
            "{key}: bytes differ"
        );
        if size > 1 {
            for r in ranges(size) {
                assert!(
                    get_range(&n, &key, r).await == data[r.0..=r.1],
                    "{key} {r:?}"
                );
            }
        }
        if size >= 1024 {
            assert!(
                !on_disk(n.dir(), &data[size / 2..size / 2 + 32]),
                "plaintext of {key} on disk"
            );
        }
    }
    // The keyring outlives the process: objects read back after a restart.
    n.restart();
    let got = n
        .client
        .get_object()
        .bucket("kms")
        .key(format!("kms-{}", 1 << 20))
        .send()
        .await
        .expect("get after restart");
    assert_eq!(got.ssekms_key_id(), Some("k2"));
    assert!(got.body.collect().await.expect("body").into_bytes() == body(1 << 20, 2));
}

async fn sse_kms_refusals(target: Target) {
    let n = TestNode::start_with(target, KMS);
    n.bucket("kms").await;
    let put = |key: &str| {
        n.client
            .put_object()
            .bucket("kms")
            .key(key)
            .body(b"secret".to_vec().into())
    };
    // A key the keyring does not have, by id or ARN: S3's 400 KMS.NotFoundException, and
    // nothing stored.
    for (key, id) in [
        ("unknown", "k3"),
        ("unknown-arn", "arn:aws:kms:us-east-1:111122223333:key/k3"),
        ("unknown-alias", "alias/mine"),
    ] {
        let r = put(key)
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id(id)
            .send()
            .await;
        sdk::assert_error(r, 400, Some("KMS.NotFoundException"));
        let r = n.client.head_object().bucket("kms").key(key).send().await;
        sdk::assert_error(r, 404, None);
    }
    // KMS headers without aws:kms: 400 InvalidArgument (with AES256 too).
    let r = put("no-kms").ssekms_key_id("k1").send().await;
    sdk::assert_error(r, 400, Some("InvalidArgument"));
    let r = put("no-kms")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .ssekms_key_id("k1")
        .send()
        .await;
    sdk::assert_error(r, 400, Some("InvalidArgument"));
    // A context that is not base64 of a JSON object of strings: 400 InvalidArgument.
    for bad in [
        "not base64!".to_owned(),
        context("[1,2]"),
        context(r#"{"a":1}"#),
        context("{"),
    ] {
        let r = put("bad-context")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_encryption_context(&bad)
            .send()
            .await;
        sdk::assert_error(r, 400, Some("InvalidArgument"));
    }
    // DSSE-KMS is not implemented.
    let r = put("dsse")
        .server_side_encryption(ServerSideEncryption::AwsKmsDsse)
        .send()
        .await;
    sdk::assert_error(r, 501, Some("NotImplemented"));
    for key in ["no-kms", "bad-context", "dsse"] {
        let r = n.client.head_object().bucket("kms").key(key).send().await;
        sdk::assert_error(r, 404, None);
    }
    // An SSE-C key for an SSE-KMS object: 400, as for SSE-S3.
    put("kms")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .send()
        .await
        .expect("put");
    let k = [5u8; 32];
    let r = n
        .client
        .get_object()
        .bucket("kms")
        .key("kms")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(sdk::b64(&k))
        .sse_customer_key_md5(sdk::b64(&Md5::digest(k)))
        .send()
        .await;
    sdk::assert_error(r, 400, Some("InvalidRequest"));
    // An unknown key for a copy (beside its source or, behind a proxy, on another backend) or
    // an upload: the same 400, and no copy, no upload.
    for apart in [false, true] {
        let dst = n.key_placed("kms", "copy-unknown", ("kms", "kms"), apart);
        let r = n
            .client
            .copy_object()
            .bucket("kms")
            .key(&dst)
            .copy_source("kms/kms")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("k3")
            .send()
            .await;
        sdk::assert_error(r, 400, Some("KMS.NotFoundException"));
        let r = n.client.head_object().bucket("kms").key(&dst).send().await;
        sdk::assert_error(r, 404, None);
    }
    let r = n
        .client
        .create_multipart_upload()
        .bucket("kms")
        .key("upload-unknown")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("alias/mine")
        .send()
        .await;
    sdk::assert_error(r, 400, Some("KMS.NotFoundException"));
    let uploads = n
        .client
        .list_multipart_uploads()
        .bucket("kms")
        .send()
        .await
        .expect("list uploads");
    assert!(uploads.uploads().is_empty(), "{uploads:?}");

    // A node without a keyring refuses aws:kms as S3 refuses a key that does not exist.
    let bare = TestNode::start(target);
    bare.bucket("kms").await;
    let r = bare
        .client
        .put_object()
        .bucket("kms")
        .key("k")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .body(b"x".to_vec().into())
        .send()
        .await;
    sdk::assert_error(r, 400, Some("KMS.NotFoundException"));
    let r = bare
        .client
        .head_object()
        .bucket("kms")
        .key("k")
        .send()
        .await;
    sdk::assert_error(r, 404, None);
}

async fn boto3_encrypts_with_kms(target: Target) {
    let n = TestNode::start_with(target, KMS);
    let script = r#"
c.create_bucket(Bucket="boto")
data = bytes(range(256)) * 1000
ctx = base64.b64encode(json.dumps({"app": "boto"}).encode()).decode()
r = c.put_object(Bucket="boto", Key="kms", Body=data, ServerSideEncryption="aws:kms",
                 SSEKMSKeyId="k2", SSEKMSEncryptionContext=ctx)
assert r["ServerSideEncryption"] == "aws:kms", r
assert r["SSEKMSKeyId"] == "k2", r
assert r["SSEKMSEncryptionContext"] == ctx, r
assert r["ETag"] != '"%s"' % hashlib.md5(data).hexdigest(), r
r = c.get_object(Bucket="boto", Key="kms")
assert r["Body"].read() == data
assert r["ServerSideEncryption"] == "aws:kms", r
assert r["SSEKMSKeyId"] == "k2", r
r = c.get_object(Bucket="boto", Key="kms", Range="bytes=65500-65600")
assert r["Body"].read() == data[65500:65601]
r = c.head_object(Bucket="boto", Key="kms")
assert r["SSEKMSKeyId"] == "k2", r
r = c.put_object(Bucket="boto", Key="default", Body=b"x", ServerSideEncryption="aws:kms")
assert r["SSEKMSKeyId"] == "k1", r
try:
    c.put_object(Bucket="boto", Key="missing", Body=b"x", ServerSideEncryption="aws:kms",
                 SSEKMSKeyId="nope")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "KMS.NotFoundException", e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
else:
    raise SystemExit("put under a missing key")
print("ok")
"#;
    sdk::run_boto3(&n, script).await;
}

/// A multipart upload under SSE-KMS with `k2`, an encryption context and a bucket key: each
/// step's answer names them (CreateMultipartUpload echoes the context, as AWS does), a part
/// copied from a plaintext object is encrypted too, the completed object reads back whole, in
/// ranges across its parts and chunks, and by part number, its HEAD and GET naming the key and
/// the bucket key; no plaintext on disk.
async fn kms_multipart_with_context_and_bucket_key(target: Target) {
    let n = TestNode::start_with(target, KMS);
    n.bucket("kms").await;
    let ctx = context(r#"{"app":"multipart"}"#);
    let p1 = body(5 << 20, 71);
    let p2 = body(2 * CHUNK + 7, 72);
    n.put("kms", "plain-source", p2.clone()).await;
    let up = n
        .client
        .create_multipart_upload()
        .bucket("kms")
        .key("mp")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("k2")
        .ssekms_encryption_context(&ctx)
        .bucket_key_enabled(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", sdk::show(&e)));
    assert_eq!(
        up.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(up.ssekms_key_id(), Some("k2"));
    assert_eq!(up.ssekms_encryption_context(), Some(ctx.as_str()));
    assert_eq!(up.bucket_key_enabled(), Some(true));
    let id = up.upload_id().expect("upload id").to_owned();
    let r1 = n
        .client
        .upload_part()
        .bucket("kms")
        .key("mp")
        .upload_id(&id)
        .part_number(1)
        .body(p1.clone().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("part 1: {}", sdk::show(&e)));
    assert_eq!(
        r1.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(r1.ssekms_key_id(), Some("k2"));
    assert_eq!(r1.bucket_key_enabled(), Some(true));
    assert_ne!(r1.e_tag(), Some(sdk::etag_of(&p1).as_str()));
    // Part 2 copied from a plaintext object (beside the upload or, behind a proxy, wherever
    // placement put it).
    let r2 = n
        .client
        .upload_part_copy()
        .bucket("kms")
        .key("mp")
        .upload_id(&id)
        .part_number(2)
        .copy_source("kms/plain-source")
        .send()
        .await
        .unwrap_or_else(|e| panic!("part copy: {}", sdk::show(&e)));
    assert_eq!(
        r2.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(r2.ssekms_key_id(), Some("k2"));
    let etag2 = r2
        .copy_part_result()
        .and_then(|c| c.e_tag())
        .expect("etag")
        .to_owned();
    let done = n
        .client
        .complete_multipart_upload()
        .bucket("kms")
        .key("mp")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(r1.e_tag().expect("etag"))
                        .build(),
                )
                .parts(CompletedPart::builder().part_number(2).e_tag(etag2).build())
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", sdk::show(&e)));
    assert_eq!(
        done.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(done.ssekms_key_id(), Some("k2"));
    assert_eq!(done.bucket_key_enabled(), Some(true));
    assert!(done.e_tag().expect("etag").ends_with("-2\""));
    let data = [p1.as_slice(), p2.as_slice()].concat();
    let head = n
        .client
        .head_object()
        .bucket("kms")
        .key("mp")
        .send()
        .await
        .expect("head");
    assert_eq!(
        head.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert_eq!(head.ssekms_key_id(), Some("k2"));
    assert_eq!(head.bucket_key_enabled(), Some(true));
    assert_eq!(head.content_length(), Some(data.len() as i64));
    assert_eq!(head.e_tag(), done.e_tag());
    let got = n
        .client
        .get_object()
        .bucket("kms")
        .key("mp")
        .send()
        .await
        .expect("get");
    assert_eq!(got.ssekms_key_id(), Some("k2"));
    assert_eq!(got.bucket_key_enabled(), Some(true));
    assert!(got.body.collect().await.expect("body").into_bytes() == data);
    let b = p1.len();
    for (a, z) in [
        (b - 1, b),
        (b - 3, b + 2),
        (b + CHUNK - 1, b + CHUNK),
        (b - CHUNK - 1, b + 2 * CHUNK + 1),
        (data.len() - 1, data.len() - 1),
    ] {
        assert!(get_range(&n, "mp", (a, z)).await == data[a..=z], "{a}-{z}");
    }
    let part = n
        .client
        .get_object()
        .bucket("kms")
        .key("mp")
        .part_number(2)
        .send()
        .await
        .expect("part 2");
    assert_eq!(part.ssekms_key_id(), Some("k2"));
    assert!(part.body.collect().await.expect("body").into_bytes() == p2);
    assert!(!on_disk(n.dir(), &p1[4096..4128]), "plaintext of part 1");
}

/// A GET or HEAD that names an encryption (SSE-S3, SSE-KMS, its key id, context or bucket
/// key) is S3's `400 InvalidArgument`, of an SSE-KMS object as of a plaintext one; the object
/// is still read without them.
async fn kms_headers_on_reads_are_refused(target: Target) {
    let n = TestNode::start_with(target, KMS);
    n.bucket("kms").await;
    n.client
        .put_object()
        .bucket("kms")
        .key("k")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .body(b"secret".to_vec().into())
        .send()
        .await
        .expect("put");
    n.put("kms", "plain", b"plain".to_vec()).await;
    for key in ["k", "plain"] {
        for (name, value) in [
            ("x-amz-server-side-encryption", "aws:kms"),
            ("x-amz-server-side-encryption", "AES256"),
            ("x-amz-server-side-encryption-aws-kms-key-id", "k1"),
            ("x-amz-server-side-encryption-context", "e30="),
            ("x-amz-server-side-encryption-bucket-key-enabled", "true"),
        ] {
            let r = n
                .client
                .get_object()
                .bucket("kms")
                .key(key)
                .customize()
                .mutate_request(move |r| {
                    r.headers_mut().insert(name, value);
                })
                .send()
                .await;
            sdk::assert_error(r, 400, Some("InvalidArgument"));
            let r = n
                .client
                .head_object()
                .bucket("kms")
                .key(key)
                .customize()
                .mutate_request(move |r| {
                    r.headers_mut().insert(name, value);
                })
                .send()
                .await;
            sdk::assert_error(r, 400, None);
        }
    }
    let got = n
        .client
        .get_object()
        .bucket("kms")
        .key("k")
        .send()
        .await
        .expect("get");
    assert!(got.body.collect().await.expect("body").into_bytes() == b"secret".as_slice());
}

/// boto3: a multipart upload under SSE-KMS with a context and a bucket key, read back with
/// its headers; a GET naming an encryption refused with `400 InvalidArgument`.
async fn boto3_kms_multipart(target: Target) {
    let n = TestNode::start_with(target, KMS);
    let script = r#"
c.create_bucket(Bucket="boto")
ctx = base64.b64encode(json.dumps({"app": "boto-mp"}).encode()).decode()
r = c.create_multipart_upload(Bucket="boto", Key="mp", ServerSideEncryption="aws:kms",
                              SSEKMSKeyId="k2", SSEKMSEncryptionContext=ctx,
                              BucketKeyEnabled=True)
assert r["ServerSideEncryption"] == "aws:kms", r
assert r["SSEKMSKeyId"] == "k2", r
assert r["SSEKMSEncryptionContext"] == ctx, r
assert r["BucketKeyEnabled"] is True, r
uid = r["UploadId"]
p1 = bytes(range(256)) * (5 * 4096)
p2 = b"tail" * 1000
parts = []
for i, p in enumerate([p1, p2], 1):
    r = c.upload_part(Bucket="boto", Key="mp", UploadId=uid, PartNumber=i, Body=p)
    assert r["ServerSideEncryption"] == "aws:kms", r
    assert r["SSEKMSKeyId"] == "k2", r
    parts.append({"PartNumber": i, "ETag": r["ETag"]})
r = c.complete_multipart_upload(Bucket="boto", Key="mp", UploadId=uid,
                                MultipartUpload={"Parts": parts})
assert r["ServerSideEncryption"] == "aws:kms", r
assert r["SSEKMSKeyId"] == "k2", r
assert r["BucketKeyEnabled"] is True, r
r = c.get_object(Bucket="boto", Key="mp")
assert r["Body"].read() == p1 + p2
assert r["SSEKMSKeyId"] == "k2" and r["BucketKeyEnabled"] is True, r
r = c.get_object(Bucket="boto", Key="mp", Range="bytes=%d-%d" % (len(p1) - 2, len(p1) + 1))
assert r["Body"].read() == (p1 + p2)[len(p1) - 2:len(p1) + 2]
r = c.head_object(Bucket="boto", Key="mp")
assert r["ServerSideEncryption"] == "aws:kms" and r["ContentLength"] == len(p1) + len(p2), r

def add_sse(request, **kwargs):
    request.headers["x-amz-server-side-encryption"] = "aws:kms"
c.meta.events.register("before-sign.s3.GetObject", add_sse)
try:
    c.get_object(Bucket="boto", Key="mp")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidArgument", e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
else:
    raise SystemExit("a GET naming aws:kms was served")
print("ok")
"#;
    sdk::run_boto3(&n, script).await;
}

/// A node refuses to start on a keyring others may read, or on one that is not a keyring.
#[test]
fn a_node_will_not_start_on_a_bad_keyring() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("keyring.toml");
    let start = |text: &str, mode: u32| {
        fs::write(&path, text).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
        let mut cfg =
            crate::support::node::node_config(&dir.path().join("data"), Default::default());
        cfg.sse_kms_keyring = Some(path.clone());
        ferry_server::start_node(cfg)
    };
    let e = start(KEYRING, 0o640).expect_err("group-readable keyring");
    assert!(e.to_string().contains("too open"), "{e}");
    let e = start("default = \"k1\"\n[keys]\nk1 = \"short\"\n", 0o600).expect_err("bad key");
    assert!(e.to_string().contains("64 hex digits"), "{e}");
    start(KEYRING, 0o600).expect("a good keyring").stop();
}

/// Rotation, as the README describes it: a new default key takes new writes while older
/// objects keep reading through theirs; removing a key (or the keyring) makes its objects
/// unreadable (`403 AccessDenied`).
#[test]
fn keys_rotate_and_removed_keys_lock_their_objects() {
    use std::os::unix::fs::PermissionsExt as _;
    const K1: &str = "k1 = \"1111111111111111111111111111111111111111111111111111111111111111\"\n";
    const K2: &str = "k2 = \"2222222222222222222222222222222222222222222222222222222222222222\"\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let path = dir.path().join("keyring.toml");
    let start = |keyring: Option<String>| {
        let mut cfg = crate::support::node::node_config(&data, Default::default());
        cfg.threads = 2;
        if let Some(text) = keyring {
            fs::write(&path, text).expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
            cfg.sse_kms_keyring = Some(path.clone());
        }
        let node = ferry_server::start_node(cfg).expect("start node");
        let client = sdk::client(node.local_addr());
        (node, client)
    };
    let put = |c: &aws_sdk_s3::Client, key: &'static str| {
        let c = c.clone();
        async move {
            c.put_object()
                .bucket("rot")
                .key(key)
                .server_side_encryption(ServerSideEncryption::AwsKms)
                .body(key.as_bytes().to_vec().into())
                .send()
                .await
                .expect("put")
                .ssekms_key_id()
                .map(str::to_owned)
        }
    };
    let get = |c: &aws_sdk_s3::Client, key: &'static str| {
        let c = c.clone();
        async move { c.get_object().bucket("rot").key(key).send().await }
    };
    sdk::block_on(async {
        let (node, c) = start(Some(format!("default = \"k1\"\n[keys]\n{K1}")));
        c.create_bucket()
            .bucket("rot")
            .send()
            .await
            .expect("bucket");
        assert_eq!(put(&c, "old").await.as_deref(), Some("k1"));
        node.stop();

        let (node, c) = start(Some(format!("default = \"k2\"\n[keys]\n{K1}{K2}")));
        assert_eq!(put(&c, "new").await.as_deref(), Some("k2"));
        let old = get(&c, "old").await.expect("old object under k1");
        assert_eq!(old.ssekms_key_id(), Some("k1"));
        assert_eq!(sdk::body_bytes(old.body).await, b"old");
        node.stop();

        let (node, c) = start(Some(format!("default = \"k2\"\n[keys]\n{K2}")));
        sdk::assert_error(get(&c, "old").await, 403, Some("AccessDenied"));
        let new = get(&c, "new").await.expect("new object under k2");
        assert_eq!(sdk::body_bytes(new.body).await, b"new");
        node.stop();

        let (node, c) = start(None);
        sdk::assert_error(get(&c, "new").await, 403, Some("AccessDenied"));
        node.stop();
    });
}
