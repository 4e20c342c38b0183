//! Server-side encryption with the AWS SDK and boto3, on a node and through the proxy, both
//! runtimes: SSE-S3 and SSE-C PUTs read back whole and in ranges across the encryption's
//! chunk boundaries, HEAD and GET describing the encryption, SSE-C refused without its key or
//! with another, no plaintext in the data files, and a tampered data file failing the GET
//! instead of returning altered bytes.

use std::fs;

use aws_sdk_s3::types::ServerSideEncryption;
use md5::{Digest, Md5};

use crate::support::sdk::{self, Options, Target, TestNode};
use crate::support::store::files_under;

on_every_target!(sse_s3_round_trips, sse_c_needs_its_key, boto3_encrypts);

/// The SSE-C triple on any request builder that takes it.
trait SseC: Sized {
    fn sse_c(self, key: impl Into<String>, key_md5: impl Into<String>) -> Self;
}

macro_rules! sse_c_for {
    ($($builder:ty),*) => {$(
        impl SseC for $builder {
            fn sse_c(self, key: impl Into<String>, key_md5: impl Into<String>) -> Self {
                self.sse_customer_algorithm("AES256")
                    .sse_customer_key(key)
                    .sse_customer_key_md5(key_md5)
            }
        }
    )*};
}

sse_c_for!(
    aws_sdk_s3::operation::put_object::builders::PutObjectFluentBuilder,
    aws_sdk_s3::operation::get_object::builders::GetObjectFluentBuilder,
    aws_sdk_s3::operation::head_object::builders::HeadObjectFluentBuilder
);

/// Options of these tests: the clients speak plain HTTP, so nodes take SSE-C keys over it.
pub(crate) const SSE: Options = Options {
    sse_c_over_http: true,
    ..sdk::DEFAULT_OPTIONS
};

/// Plaintext bytes in one encryption chunk (`ferry_core::sse::PLAIN_CHUNK`).
pub(crate) const CHUNK: usize = 65_520;

/// Distinct bytes (no 16-byte window repeats early), so a plaintext window is findable.
pub(crate) fn body(n: usize, salt: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(salt);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

fn b64(bytes: &[u8]) -> String {
    sdk::b64(bytes)
}

/// Whether any file under `dir` holds `needle`.
pub(crate) fn on_disk(dir: &std::path::Path, needle: &[u8]) -> bool {
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

async fn get_range(
    n: &TestNode,
    key: &str,
    (a, b): (usize, usize),
    sse_c: Option<&[u8; 32]>,
) -> Vec<u8> {
    let mut g = n
        .client
        .get_object()
        .bucket("sse")
        .key(key)
        .range(format!("bytes={a}-{b}"));
    if let Some(k) = sse_c {
        g = g.sse_c(b64(k), b64(&Md5::digest(k)));
    }
    let r = g
        .send()
        .await
        .unwrap_or_else(|e| panic!("{key} {a}-{b}: {}", sdk::show(&e)));
    r.body.collect().await.expect("body").into_bytes().to_vec()
}

async fn sse_s3_round_trips(target: Target) {
    let mut n = TestNode::start_with(target, SSE);
    n.bucket("sse").await;
    for (i, size) in [1, 1024, CHUNK, CHUNK + 1, 1 << 20, 8 << 20]
        .into_iter()
        .enumerate()
    {
        let data = body(size, i as u8);
        let key = format!("s3-{size}");
        let put = n
            .client
            .put_object()
            .bucket("sse")
            .key(&key)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(data.clone().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        // SSE-S3 keeps the MD5 of the data as the ETag, as AWS does.
        assert_eq!(put.e_tag(), Some(sdk::etag_of(&data).as_str()), "{key}");
        let head = n
            .client
            .head_object()
            .bucket("sse")
            .key(&key)
            .send()
            .await
            .expect("head");
        assert_eq!(
            head.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert_eq!(head.content_length(), Some(size as i64));
        let got = n
            .client
            .get_object()
            .bucket("sse")
            .key(&key)
            .send()
            .await
            .expect("get");
        assert_eq!(
            got.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        let got = got.body.collect().await.expect("body").into_bytes();
        assert!(got == data, "{key}: bytes differ");
        if size > 1 {
            for r in ranges(size) {
                assert!(
                    get_range(&n, &key, r, None).await == data[r.0..=r.1],
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
    // An unencrypted object says nothing about encryption.
    n.put("sse", "plain", b"plain".to_vec()).await;
    let head = n
        .client
        .head_object()
        .bucket("sse")
        .key("plain")
        .send()
        .await
        .expect("head");
    assert_eq!(head.server_side_encryption(), None);
    // A GET whose data file was altered fails: no altered byte reaches the client.
    if !target.proxy {
        let data = body(300_000, 9);
        n.client
            .put_object()
            .bucket("sse")
            .key("tamper")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(data.clone().into())
            .send()
            .await
            .expect("put");
        let size = data.len() as u64 + 16 * 5; // 5 chunks, a tag each
        let file = files_under(&n.dir().join("data"))
            .into_iter()
            .find(|p| fs::metadata(p).is_ok_and(|m| m.len() == size))
            .expect("the data file");
        for at in [10, 70_000, 299_000] {
            let mut bytes = fs::read(&file).expect("read");
            let orig = fs::read(&file).expect("read");
            bytes[at] ^= 1;
            fs::write(&file, &bytes).expect("write");
            let r = n
                .client
                .get_object()
                .bucket("sse")
                .key("tamper")
                .send()
                .await;
            let failed = match r {
                Err(_) => true,
                Ok(o) => o.body.collect().await.is_err(),
            };
            assert!(failed, "a GET after byte {at} was flipped succeeded");
            fs::write(&file, &orig).expect("restore");
        }
        let got = n
            .client
            .get_object()
            .bucket("sse")
            .key("tamper")
            .send()
            .await
            .expect("get");
        assert!(got.body.collect().await.expect("body").into_bytes() == data);
    }
    // The master key outlives the process: objects read back after a restart.
    n.restart();
    let data = body(1 << 20, 4);
    let got = n
        .client
        .get_object()
        .bucket("sse")
        .key("s3-1048576")
        .send()
        .await
        .expect("get");
    assert!(got.body.collect().await.expect("body").into_bytes() == data);
}

async fn sse_c_needs_its_key(target: Target) {
    let n = TestNode::start_with(target, SSE);
    n.bucket("sse").await;
    let key = [7u8; 32];
    let other = [8u8; 32];
    let md5 = b64(&Md5::digest(key));
    for (i, size) in [1, 1024, 1 << 20, 8 << 20].into_iter().enumerate() {
        let data = body(size, 40 + i as u8);
        let name = format!("c-{size}");
        let put = n
            .client
            .put_object()
            .bucket("sse")
            .key(&name)
            .sse_c(b64(&key), &md5)
            .body(data.clone().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
        assert_eq!(put.sse_customer_algorithm(), Some("AES256"));
        assert_eq!(put.sse_customer_key_md5(), Some(md5.as_str()));
        // Not the MD5 of the data (AWS: SSE-C ETags are not).
        assert_ne!(put.e_tag(), Some(sdk::etag_of(&data).as_str()));
        let got = n
            .client
            .get_object()
            .bucket("sse")
            .key(&name)
            .sse_c(b64(&key), &md5)
            .send()
            .await
            .expect("get");
        assert_eq!(got.sse_customer_key_md5(), Some(md5.as_str()));
        assert_eq!(got.e_tag(), put.e_tag());
        assert!(
            got.body.collect().await.expect("body").into_bytes() == data,
            "{name}"
        );
        if size > 1 {
            for r in ranges(size) {
                assert!(
                    get_range(&n, &name, r, Some(&key)).await == data[r.0..=r.1],
                    "{name} {r:?}"
                );
            }
        }
        if size >= 1024 {
            assert!(
                !on_disk(n.dir(), &data[size / 2..size / 2 + 32]),
                "plaintext of {name}"
            );
        }
        // Without the key: 400; with another: 403; HEAD alike.
        let r = n.client.get_object().bucket("sse").key(&name).send().await;
        sdk::assert_error(r, 400, Some("InvalidRequest"));
        let r = n.client.head_object().bucket("sse").key(&name).send().await;
        sdk::assert_error(r, 400, None);
        let r = n
            .client
            .get_object()
            .bucket("sse")
            .key(&name)
            .sse_c(b64(&other), b64(&Md5::digest(other)))
            .send()
            .await;
        sdk::assert_error(r, 403, Some("AccessDenied"));
        let head = n
            .client
            .head_object()
            .bucket("sse")
            .key(&name)
            .sse_c(b64(&key), &md5)
            .send()
            .await
            .expect("head");
        assert_eq!(head.sse_customer_algorithm(), Some("AES256"));
        assert_eq!(head.content_length(), Some(size as i64));
    }
    // A key for an object that is not SSE-C: 400.
    n.put("sse", "plain", b"plain".to_vec()).await;
    let r = n
        .client
        .get_object()
        .bucket("sse")
        .key("plain")
        .sse_c(b64(&key), &md5)
        .send()
        .await;
    sdk::assert_error(r, 400, Some("InvalidRequest"));
    // A key whose MD5 does not match: 400, nothing stored.
    let r = n
        .client
        .put_object()
        .bucket("sse")
        .key("bad")
        .sse_c(b64(&key), b64(&Md5::digest(other)))
        .body(b"x".to_vec().into())
        .send()
        .await;
    sdk::assert_error(r, 400, Some("InvalidArgument"));
    let r = n.client.head_object().bucket("sse").key("bad").send().await;
    sdk::assert_error(r, 404, None);
}

async fn boto3_encrypts(target: Target) {
    let n = TestNode::start_with(target, SSE);
    let script = r#"
c.create_bucket(Bucket="boto")
data = bytes(range(256)) * 1000
r = c.put_object(Bucket="boto", Key="s3", Body=data, ServerSideEncryption="AES256")
assert r["ServerSideEncryption"] == "AES256", r
assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(), r
r = c.get_object(Bucket="boto", Key="s3", Range="bytes=65500-65600")
assert r["Body"].read() == data[65500:65601]
assert r["ServerSideEncryption"] == "AES256", r
key = b"k" * 32
r = c.put_object(Bucket="boto", Key="c", Body=data, SSECustomerAlgorithm="AES256", SSECustomerKey=key)
assert r["SSECustomerAlgorithm"] == "AES256", r
r = c.get_object(Bucket="boto", Key="c", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
assert r["Body"].read() == data
try:
    c.get_object(Bucket="boto", Key="c", SSECustomerAlgorithm="AES256", SSECustomerKey=b"x" * 32)
except c.exceptions.ClientError as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 403, e.response
else:
    raise SystemExit("read with another key")
print("ok")
"#;
    sdk::run_boto3(&n, script).await;
}
