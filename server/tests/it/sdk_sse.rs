//! Server-side encryption with the AWS SDK and boto3, on a node and through the proxy (passing
//! requests through, and re-signing them with the nodes' own keys), both runtimes: SSE-S3 and
//! SSE-C PUTs read back whole and in ranges across the encryption's chunk boundaries, HEAD and
//! GET describing the encryption, SSE-C GET, HEAD and GetObjectAttributes refused without
//! their key (`400`) or with another (`403`), no plaintext in the data files, and a tampered
//! chunk failing the reads that touch it (in every mode) instead of returning altered bytes.
//! The SSE-S3 master key file (`--sse-master-key`) and its rotation, with the binary.

use std::fs;

use aws_sdk_s3::types::{ObjectAttributes, ServerSideEncryption};
use md5::{Digest, Md5};

use super::sdk_sse_kms::KMS;
use crate::support::sdk::{self, Options, Target, TestNode};
use crate::support::store::files_under;

on_every_target!(
    resign:
    sse_s3_round_trips,
    sse_c_needs_its_key,
    tampered_chunks_fail_their_reads,
    boto3_encrypts
);

/// How an object is (to be) stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    Plain,
    S3,
    C([u8; 32]),
    /// SSE-KMS under this key of the nodes' keyring (`sdk_sse_kms::KEYRING`).
    Kms(&'static str),
}

impl Mode {
    /// Its SSE-C key.
    pub(crate) fn key(self) -> Option<[u8; 32]> {
        match self {
            Mode::C(k) => Some(k),
            _ => None,
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    sdk::b64(bytes)
}

/// The base64 MD5 of an SSE-C key, as `x-amz-server-side-encryption-customer-key-MD5`.
pub(crate) fn key_md5(key: &[u8; 32]) -> String {
    b64(&Md5::digest(key))
}

/// Builders that write an object's data: they take an encryption.
pub(crate) trait Encrypt: Sized {
    fn encrypt(self, mode: Mode) -> Self;
}

/// Builders that read an object or add to an upload: they take an SSE-C key.
pub(crate) trait Keyed: Sized {
    fn keyed(self, mode: Mode) -> Self;
}

/// Copies: they take their source's SSE-C key.
pub(crate) trait SourceKeyed: Sized {
    fn source_keyed(self, mode: Mode) -> Self;
}

macro_rules! keyed {
    ($($builder:ty),*) => {$(
        impl Keyed for $builder {
            fn keyed(self, mode: Mode) -> Self {
                match mode.key() {
                    Some(k) => self
                        .sse_customer_algorithm("AES256")
                        .sse_customer_key(b64(&k))
                        .sse_customer_key_md5(key_md5(&k)),
                    None => self,
                }
            }
        }
    )*};
}

macro_rules! encrypt {
    ($($builder:ty),*) => {$(
        impl Encrypt for $builder {
            fn encrypt(self, mode: Mode) -> Self {
                match mode {
                    Mode::Plain => self,
                    Mode::S3 => self.server_side_encryption(ServerSideEncryption::Aes256),
                    Mode::C(_) => self.keyed(mode),
                    Mode::Kms(id) => self
                        .server_side_encryption(ServerSideEncryption::AwsKms)
                        .ssekms_key_id(id),
                }
            }
        }
    )*};
}

macro_rules! source_keyed {
    ($($builder:ty),*) => {$(
        impl SourceKeyed for $builder {
            fn source_keyed(self, mode: Mode) -> Self {
                match mode.key() {
                    Some(k) => self
                        .copy_source_sse_customer_algorithm("AES256")
                        .copy_source_sse_customer_key(b64(&k))
                        .copy_source_sse_customer_key_md5(key_md5(&k)),
                    None => self,
                }
            }
        }
    )*};
}

use aws_sdk_s3::operation::{
    complete_multipart_upload::builders::CompleteMultipartUploadFluentBuilder as Complete,
    copy_object::builders::CopyObjectFluentBuilder as Copy,
    create_multipart_upload::builders::CreateMultipartUploadFluentBuilder as Create,
    get_object::builders::GetObjectFluentBuilder as Get,
    get_object_attributes::builders::GetObjectAttributesFluentBuilder as Attributes,
    head_object::builders::HeadObjectFluentBuilder as Head,
    put_object::builders::PutObjectFluentBuilder as Put,
    upload_part::builders::UploadPartFluentBuilder as Part,
    upload_part_copy::builders::UploadPartCopyFluentBuilder as PartCopy,
};

keyed!(
    Put, Copy, Create, Get, Attributes, Head, Part, PartCopy, Complete
);
encrypt!(Put, Copy, Create);
source_keyed!(Copy, PartCopy);

/// What a response says about encryption: `x-amz-server-side-encryption`, the SSE-C key's
/// MD5 and the SSE-KMS key id.
fn said(
    sse: Option<&ServerSideEncryption>,
    customer_md5: Option<&str>,
    kms_key: Option<&str>,
) -> Mode {
    match (sse, customer_md5, kms_key) {
        (Some(ServerSideEncryption::Aes256), None, None) => Mode::S3,
        (None, Some(_), None) => Mode::C([0; 32]),
        (None, None, None) => Mode::Plain,
        (Some(ServerSideEncryption::AwsKms), None, Some("k1")) => Mode::Kms("k1"),
        (Some(ServerSideEncryption::AwsKms), None, Some("k2")) => Mode::Kms("k2"),
        other => panic!("unexpected encryption headers {other:?}"),
    }
}

/// Responses that say how their object is encrypted.
pub(crate) trait Said {
    /// What [`said`] reads in it.
    fn said(&self) -> Mode;
}

macro_rules! said {
    ($($output:ty),*) => {$(
        impl Said for $output {
            fn said(&self) -> Mode {
                said(
                    self.server_side_encryption(),
                    self.sse_customer_key_md5(),
                    self.ssekms_key_id(),
                )
            }
        }
    )*};
}

said!(
    aws_sdk_s3::operation::put_object::PutObjectOutput,
    aws_sdk_s3::operation::get_object::GetObjectOutput,
    aws_sdk_s3::operation::head_object::HeadObjectOutput,
    aws_sdk_s3::operation::copy_object::CopyObjectOutput,
    aws_sdk_s3::operation::create_multipart_upload::CreateMultipartUploadOutput,
    aws_sdk_s3::operation::upload_part::UploadPartOutput,
    aws_sdk_s3::operation::upload_part_copy::UploadPartCopyOutput
);

/// `mode`, with an SSE-C key replaced by zeros (responses show only its MD5, checked apart).
pub(crate) fn shape(mode: Mode) -> Mode {
    match mode {
        Mode::C(_) => Mode::C([0; 32]),
        m => m,
    }
}

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
        g = g.keyed(Mode::C(*k));
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
    let md5 = key_md5(&key);
    for (i, size) in [1, 1024, 1 << 20, 8 << 20].into_iter().enumerate() {
        let data = body(size, 40 + i as u8);
        let name = format!("c-{size}");
        let put = n
            .client
            .put_object()
            .bucket("sse")
            .key(&name)
            .keyed(Mode::C(key))
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
            .keyed(Mode::C(key))
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
        // Without the key: 400; with another: 403; HEAD and GetObjectAttributes alike.
        let get = |mode: Mode| n.client.get_object().bucket("sse").key(&name).keyed(mode);
        let head = |mode: Mode| n.client.head_object().bucket("sse").key(&name).keyed(mode);
        let attrs = |mode: Mode| {
            n.client
                .get_object_attributes()
                .bucket("sse")
                .key(&name)
                .object_attributes(ObjectAttributes::ObjectSize)
                .keyed(mode)
        };
        sdk::assert_error(get(Mode::Plain).send().await, 400, Some("InvalidRequest"));
        sdk::assert_error(head(Mode::Plain).send().await, 400, None);
        let r = attrs(Mode::Plain).send().await;
        sdk::assert_error(r, 400, Some("InvalidRequest"));
        let r = get(Mode::C(other)).send().await;
        sdk::assert_error(r, 403, Some("AccessDenied"));
        sdk::assert_error(head(Mode::C(other)).send().await, 403, None);
        let r = attrs(Mode::C(other)).send().await;
        sdk::assert_error(r, 403, Some("AccessDenied"));
        let a = attrs(Mode::C(key))
            .send()
            .await
            .unwrap_or_else(|e| panic!("attributes of {name}: {}", sdk::show(&e)));
        assert_eq!(a.object_size(), Some(size as i64));
        let head = n
            .client
            .head_object()
            .bucket("sse")
            .key(&name)
            .keyed(Mode::C(key))
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
        .keyed(Mode::C(key))
        .send()
        .await;
    sdk::assert_error(r, 400, Some("InvalidRequest"));
    // A key whose MD5 does not match: 400, nothing stored.
    let r = n
        .client
        .put_object()
        .bucket("sse")
        .key("bad")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(b64(&key))
        .sse_customer_key_md5(key_md5(&other))
        .body(b"x".to_vec().into())
        .send()
        .await;
    sdk::assert_error(r, 400, Some("InvalidArgument"));
    let r = n.client.head_object().bucket("sse").key("bad").send().await;
    sdk::assert_error(r, 404, None);
}

/// What a GET gave: `Ok` with its body, or `Err` with the bytes that came before it failed
/// (none when it failed before its body).
async fn read(
    n: &TestNode,
    key: &str,
    mode: Mode,
    range: Option<(usize, usize)>,
) -> Result<Vec<u8>, Vec<u8>> {
    let mut g = n.client.get_object().bucket("sse").key(key).keyed(mode);
    if let Some((a, b)) = range {
        g = g.range(format!("bytes={a}-{b}"));
    }
    let Ok(out) = g.send().await else {
        return Err(Vec::new());
    };
    let (mut body, mut got) = (out.body, Vec::new());
    loop {
        match body.next().await {
            None => return Ok(got),
            Some(Ok(bytes)) => got.extend_from_slice(&bytes),
            Some(Err(_)) => return Err(got),
        }
    }
}

/// One byte flipped in a chunk of an object's data file, in every mode: reads that touch the
/// chunk (whole, ranges in it and across its edge) fail, and whatever bytes came before the
/// failure are the object's own (never an altered one); reads of the other chunks still give
/// exact bytes.
async fn tampered_chunks_fail_their_reads(target: Target) {
    // On disk, each chunk is followed by its 16-byte tag.
    const DISK_CHUNK: usize = CHUNK + 16;
    let n = TestNode::start_with(target, KMS);
    n.bucket("sse").await;
    for (i, mode) in [Mode::S3, Mode::C([9; 32]), Mode::Kms("k2")]
        .into_iter()
        .enumerate()
    {
        // Five chunks, the last one short; a size of its own, to find its file by.
        let size = 4 * CHUNK + 20_000 + i;
        let data = body(size, 70 + i as u8);
        let name = format!("tamper-{i}");
        n.client
            .put_object()
            .bucket("sse")
            .key(&name)
            .encrypt(mode)
            .body(data.clone().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("PUT {name}: {}", sdk::show(&e)));
        let stored = (size + 5 * 16) as u64;
        let files: Vec<_> = files_under(n.dir())
            .into_iter()
            .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() == stored))
            .collect();
        assert_eq!(files.len(), 1, "the data file of {name}: {files:?}");
        let orig = fs::read(&files[0]).expect("read");
        // A chunk in the first 256 KiB (refused before the response starts) and the last one
        // (after the response has started).
        for chunk in [2, 4] {
            let mut bytes = orig.clone();
            bytes[chunk * DISK_CHUNK + 100] ^= 1;
            fs::write(&files[0], &bytes).expect("write");
            let first = chunk * CHUNK;
            let last = ((chunk + 1) * CHUNK).min(size) - 1;
            let touching = [
                None,
                Some((0, size - 1)),
                Some((first, last)),
                Some((first + 5, first + 5)),
                Some((first - 1, first)),
            ];
            for range in touching {
                let Err(got) = read(&n, &name, mode, range).await else {
                    panic!("{name}: a read of {range:?} with chunk {chunk} altered succeeded");
                };
                let start = range.map_or(0, |r| r.0);
                assert!(
                    data[start..].starts_with(&got),
                    "{name}: altered bytes in a read of {range:?}"
                );
            }
            let mut apart = vec![(0, first - 1), (CHUNK + 7, first - 1)];
            if last + 1 < size {
                apart.push((last + 1, size - 1));
            }
            for (a, z) in apart {
                let got = read(&n, &name, mode, Some((a, z))).await;
                assert!(
                    got.as_deref() == Ok(&data[a..=z]),
                    "{name}: {a}-{z} beside altered chunk {chunk}"
                );
            }
        }
        fs::write(&files[0], &orig).expect("restore");
        let got = read(&n, &name, mode, None).await;
        assert!(got.as_deref() == Ok(&data[..]), "{name} restored");
    }
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
r = c.head_object(Bucket="boto", Key="c", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
assert r["ContentLength"] == len(data) and r["SSECustomerAlgorithm"] == "AES256", r
# botocore encodes SSE-C keys for GET and HEAD, not for GetObjectAttributes: its caller does.
def encoded(k):
    return dict(SSECustomerAlgorithm="AES256", SSECustomerKey=base64.b64encode(k).decode(),
                SSECustomerKeyMD5=base64.b64encode(hashlib.md5(k).digest()).decode())
def attributes(**k):
    if "SSECustomerKey" in k:
        k = encoded(k["SSECustomerKey"])
    return c.get_object_attributes(Bucket="boto", Key="c", ObjectAttributes=["ObjectSize"], **k)
r = attributes(SSECustomerAlgorithm="AES256", SSECustomerKey=key)
assert r["ObjectSize"] == len(data), r
# Without the key: 400; with another: 403; for GET, HEAD and GetObjectAttributes alike.
other = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=b"x" * 32)
calls = {
    "get": lambda **k: c.get_object(Bucket="boto", Key="c", **k),
    "head": lambda **k: c.head_object(Bucket="boto", Key="c", **k),
    "attributes": attributes,
}
for name, call in calls.items():
    for args, status in (({}, 400), (other, 403)):
        try:
            call(**args)
        except c.exceptions.ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == status, (name, e.response)
        else:
            raise SystemExit(f"{name} with {args or 'no key'} succeeded")
print("ok")
"#;
    sdk::run_boto3(&n, script).await;
}

/// `ferry node --sse-master-key FILE` wraps SSE-S3 data keys under the file's key (and makes
/// no `DATA/sse-master.key`). Rotated as the README says (the new key on the first line, the
/// old one below) and restarted, it reads the older objects and wraps new ones under the new
/// key: once the old key has left the file, the new objects still read and the old ones no
/// longer do (`500`).
#[test]
fn master_key_file_rotates() {
    use std::os::unix::fs::PermissionsExt as _;

    use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry, stop};

    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let file = dir.path().join("master.key");
    let (old_key, new_key) = ("0f1e2d3c4b5a6978".repeat(4), "8796a5b4c3d2e1f0".repeat(4));
    let start = |keys: &str| {
        fs::write(&file, keys).expect("key file");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut child = spawn_ferry(
            &[
                "node",
                "--data",
                data.to_str().expect("path"),
                "--listen",
                "127.0.0.1:0",
                "--no-fsync",
                "--threads",
                "1",
                "--sse-master-key",
                file.to_str().expect("path"),
            ],
            &KEY_ENV,
        );
        let addr = ready_addr(&mut child, "ferry node listening on http://");
        (child, sdk::client(addr))
    };
    let put = |c: &aws_sdk_s3::Client, key: &'static str| {
        let c = c.clone();
        async move {
            let r = c
                .put_object()
                .bucket("mkey")
                .key(key)
                .server_side_encryption(ServerSideEncryption::Aes256)
                .body(body(100_000, key.as_bytes()[0]).into())
                .send()
                .await
                .unwrap_or_else(|e| panic!("PUT {key}: {}", sdk::show(&e)));
            assert_eq!(
                r.server_side_encryption(),
                Some(&ServerSideEncryption::Aes256)
            );
        }
    };
    let get = |c: &aws_sdk_s3::Client, key: &'static str| {
        let c = c.clone();
        async move {
            match c.get_object().bucket("mkey").key(key).send().await {
                Ok(o) => Ok(sdk::body_bytes(o.body).await),
                Err(e) => Err(sdk::status_of(&e)),
            }
        }
    };
    sdk::block_on(async {
        let (child, c) = start(&format!("{old_key}\n"));
        c.create_bucket()
            .bucket("mkey")
            .send()
            .await
            .expect("bucket");
        put(&c, "old").await;
        assert_eq!(get(&c, "old").await, Ok(body(100_000, b'o')));
        stop(child, "-TERM");
        assert!(!data.join("sse-master.key").exists(), "a key of its own");
        assert_eq!(
            fs::read_to_string(&file).expect("read"),
            format!("{old_key}\n")
        );

        let (child, c) = start(&format!("# rotated\n{new_key}\n\n{old_key}\n"));
        assert_eq!(get(&c, "old").await, Ok(body(100_000, b'o')));
        put(&c, "new").await;
        stop(child, "-TERM");

        let (child, c) = start(&format!("{new_key}\n"));
        assert_eq!(get(&c, "new").await, Ok(body(100_000, b'n')));
        assert_eq!(get(&c, "old").await, Err(Some(500)));
        stop(child, "-TERM");
    });
}

/// A master key file that is not keys, or that group or others may read, stops the node at
/// start naming the file (as a bad SSE-KMS keyring does), rather than failing its first SSE-S3
/// request; a missing one is made on first use, so it does not.
#[test]
fn a_node_will_not_start_on_a_bad_master_key_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("master.key");
    let start = |text: Option<&str>, mode: u32| {
        if let Some(text) = text {
            fs::write(&path, text).expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
        }
        let mut cfg =
            crate::support::node::node_config(&dir.path().join("data"), Default::default());
        cfg.sse_master_key = Some(path.clone());
        ferry_server::start_node(cfg)
    };
    let key = "0f1e2d3c4b5a6978".repeat(4);
    start(None, 0).expect("no file yet").stop();
    assert!(!path.exists(), "made on first use, not at start");
    let e = start(Some(&format!("{key}\n")), 0o640).expect_err("group-readable file");
    assert!(e.to_string().contains("too open"), "{e}");
    assert!(e.to_string().contains("master.key"), "{e}");
    let e = start(Some("not a key\n"), 0o600).expect_err("not keys");
    assert!(e.to_string().contains("not 256-bit keys"), "{e}");
    start(Some(&format!("{key}\n")), 0o600)
        .expect("a good file")
        .stop();
}
