//! Server-side encryption of multipart uploads and copies, with the AWS SDK and boto3, on a
//! node and through the proxy in both auth modes (where copies cross backends, which the
//! nodes themselves confirm), both runtimes: encrypted uploads whose parts are encrypted each
//! with a key of its own and read back whole, in ranges across part and chunk boundaries and
//! by part number; SSE-C parts refused without the upload's key or with another, its
//! completion taken without; copies and part copies between every pair of modes (plaintext,
//! SSE-S3, SSE-C, SSE-KMS) from 1 B to 8 MiB, with the ETags AWS gives per mode; SSE-C
//! sources of copies and part copies refused without their key or with another.

use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, CompletedMultipartUpload, CompletedPart};
use md5::{Digest, Md5};

use super::sdk_sse::{
    CHUNK, Encrypt, Keyed, Mode, Said, SourceKeyed, body, key_md5, on_disk, shape,
};
use super::sdk_sse_kms::KMS;
use crate::support::sdk::{self, Target, TestNode};

on_every_target!(
    resign:
    encrypted_multipart_uploads,
    copies_between_modes,
    checksums_are_of_the_plaintext,
    boto3_copies_and_uploads_encrypted
);

const MIB: usize = 1 << 20;

async fn get(n: &TestNode, key: &str, mode: Mode, range: Option<(usize, usize)>) -> Vec<u8> {
    let mut g = n.client.get_object().bucket("sse").key(key).keyed(mode);
    if let Some((a, b)) = range {
        g = g.range(format!("bytes={a}-{b}"));
    }
    let r = g
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {key} {range:?}: {}", sdk::show(&e)));
    assert_eq!(r.said(), shape(mode), "{key}");
    r.body.collect().await.expect("body").into_bytes().to_vec()
}

async fn put(n: &TestNode, key: &str, mode: Mode, data: &[u8]) -> String {
    let r = n
        .client
        .put_object()
        .bucket("sse")
        .key(key)
        .encrypt(mode)
        .body(data.to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("PUT {key}: {}", sdk::show(&e)));
    r.e_tag().expect("etag").to_owned()
}

/// The ETag AWS gives a multipart object of these parts (SSE-S3 and plaintext).
fn multipart_etag(parts: &[&[u8]]) -> String {
    let mut h = Md5::new();
    for p in parts {
        h.update(Md5::digest(p));
    }
    format!("\"{}-{}\"", hex(&h.finalize()), parts.len())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

async fn encrypted_multipart_uploads(target: Target) {
    let n = TestNode::start_with(target, KMS);
    n.bucket("sse").await;
    let key_a = [21u8; 32];
    for (i, mode) in [Mode::S3, Mode::C(key_a), Mode::Kms("k2")]
        .into_iter()
        .enumerate()
    {
        let name = format!("mp-{i}");
        let p1 = body(5 * MIB, 50 + i as u8);
        let p2 = body(3 * MIB + 5, 60 + i as u8);
        let up = n
            .client
            .create_multipart_upload()
            .bucket("sse")
            .key(&name)
            .encrypt(mode)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
        assert_eq!(up.said(), shape(mode));
        let id = up.upload_id().expect("upload id").to_owned();
        let part = |number: i32, data: &[u8], mode: Mode| {
            n.client
                .upload_part()
                .bucket("sse")
                .key(&name)
                .upload_id(&id)
                .part_number(number)
                .keyed(mode)
                .body(data.to_vec().into())
                .send()
        };
        // Part 1 is uploaded twice (other bytes first): the second replaces the first, under
        // a key of its own.
        part(1, &body(5 * MIB, 99), mode).await.expect("part 1");
        let r1 = part(1, &p1, mode).await.expect("part 1 again");
        let r2 = part(2, &p2, mode).await.expect("part 2");
        assert_eq!(r2.said(), shape(mode));
        if let Mode::C(k) = mode {
            // Not the MD5 of the part.
            assert_ne!(r1.e_tag(), Some(sdk::etag_of(&p1).as_str()));
            // Without the upload's key: 400; with another: 403; nothing replaced.
            sdk::assert_error(
                part(2, b"x", Mode::Plain).await,
                400,
                Some("InvalidRequest"),
            );
            let r = part(2, b"x", Mode::C([22; 32])).await;
            sdk::assert_error(r, 403, Some("AccessDenied"));
            assert_eq!(r1.sse_customer_key_md5(), Some(key_md5(&k).as_str()));
        } else {
            // SSE-S3 parts have the MD5 of their data as ETag, SSE-KMS ones do not.
            let md5 = r1.e_tag() == Some(sdk::etag_of(&p1).as_str());
            assert_eq!(md5, mode == Mode::S3);
            // An SSE-C key for a part of an upload that is not SSE-C: 400.
            let r = part(2, b"x", Mode::C([22; 32])).await;
            sdk::assert_error(r, 400, Some("InvalidRequest"));
        }
        let parts = CompletedMultipartUpload::builder()
            .parts(
                CompletedPart::builder()
                    .part_number(1)
                    .e_tag(r1.e_tag().expect("etag"))
                    .build(),
            )
            .parts(
                CompletedPart::builder()
                    .part_number(2)
                    .e_tag(r2.e_tag().expect("etag"))
                    .build(),
            )
            .build();
        // An SSE-C upload completes without its key (README; AWS asks for it only of uploads
        // with checksums); the other tests complete with it.
        let done = n
            .client
            .complete_multipart_upload()
            .bucket("sse")
            .key(&name)
            .upload_id(&id)
            .multipart_upload(parts)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
        let etag = done.e_tag().expect("etag").to_owned();
        assert!(etag.ends_with("-2\""), "{etag}");
        if mode == Mode::S3 {
            assert_eq!(etag, multipart_etag(&[&p1, &p2]));
        } else {
            assert_ne!(etag, multipart_etag(&[&p1, &p2]));
        }
        let data = [p1.as_slice(), p2.as_slice()].concat();
        assert!(get(&n, &name, mode, None).await == data, "{name}");
        let b = p1.len();
        for (a, z) in [
            (b - 1, b),
            (b - 3, b + 2),
            (b, b),
            (b + CHUNK - 1, b + CHUNK),
            (b - CHUNK - 1, b + 2 * CHUNK + 1),
            (0, data.len() - 1),
            (data.len() - 1, data.len() - 1),
        ] {
            assert!(
                get(&n, &name, mode, Some((a, z))).await == data[a..=z],
                "{name} {a}-{z}"
            );
        }
        // Part 2 by number.
        let r = n
            .client
            .get_object()
            .bucket("sse")
            .key(&name)
            .part_number(2)
            .keyed(mode)
            .send()
            .await
            .expect("part 2");
        assert!(r.body.collect().await.expect("body").into_bytes() == p2);
        let head = n
            .client
            .head_object()
            .bucket("sse")
            .key(&name)
            .keyed(mode)
            .send()
            .await
            .expect("head");
        assert_eq!(head.said(), shape(mode));
        assert_eq!(head.content_length(), Some(data.len() as i64));
        assert!(!on_disk(n.dir(), &p1[1000..1032]), "plaintext of {name}");
        assert!(!on_disk(n.dir(), &p2[1000..1032]), "plaintext of {name}");
        if let Mode::C(_) = mode {
            let r = n.client.get_object().bucket("sse").key(&name).send().await;
            sdk::assert_error(r, 400, Some("InvalidRequest"));
            // Its attributes need its key, as its HEAD does.
            let attrs = |mode: Mode| {
                n.client
                    .get_object_attributes()
                    .bucket("sse")
                    .key(&name)
                    .object_attributes(aws_sdk_s3::types::ObjectAttributes::ObjectSize)
                    .keyed(mode)
                    .send()
            };
            let a = attrs(mode)
                .await
                .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
            assert_eq!(a.object_size(), Some(data.len() as i64));
            sdk::assert_error(attrs(Mode::Plain).await, 400, Some("InvalidRequest"));
        }
    }
}

/// Behind a proxy, that `src` and its copy `dst` live on one node each (asked of the nodes
/// themselves): different ones when `apart`, so the copy went through the proxy, which read
/// the source from one node and wrote the copy to another; the same one otherwise.
async fn placed_as_asked(n: &TestNode, src: &str, dst: &str, apart: bool) {
    if !n.target.proxy {
        return;
    }
    let (from, to) = (n.holders("sse", src).await, n.holders("sse", dst).await);
    assert_eq!(
        (from.len(), to.len()),
        (1, 1),
        "{src} on {from:?}, {dst} on {to:?}"
    );
    assert_eq!(from != to, apart, "{src} on {from:?}, {dst} on {to:?}");
}

async fn copies_between_modes(target: Target) {
    let n = TestNode::start_with(target, KMS);
    n.bucket("sse").await;
    let (key_a, key_b) = ([31u8; 32], [32u8; 32]);
    let sources = [Mode::Plain, Mode::S3, Mode::C(key_a), Mode::Kms("k1")];
    let targets = [Mode::Plain, Mode::S3, Mode::C(key_b), Mode::Kms("k2")];
    for (s, size) in [1, 1024, MIB + 17, 8 * MIB].into_iter().enumerate() {
        for (i, &from) in sources.iter().enumerate() {
            let data = body(size, (10 * s + i) as u8);
            let src = format!("src-{size}-{i}");
            put(&n, &src, from, &data).await;
            for (j, &to) in targets.iter().enumerate() {
                // Behind a proxy, every other copy crosses backends.
                let apart = (s + i + j) % 2 == 0;
                let dst = n.key_placed("sse", &format!("dst-{size}-{i}-{j}"), ("sse", &src), apart);
                let r = n
                    .client
                    .copy_object()
                    .bucket("sse")
                    .key(&dst)
                    .copy_source(format!("sse/{src}"))
                    .source_keyed(from)
                    .encrypt(to)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{src} → {dst}: {}", sdk::show(&e)));
                assert_eq!(r.said(), shape(to), "{dst}");
                // Plaintext and SSE-S3 copies have the MD5 of the data as ETag; SSE-C's and
                // SSE-KMS's do not.
                let etag = r
                    .copy_object_result()
                    .and_then(|c| c.e_tag())
                    .expect("etag");
                let md5 = matches!(to, Mode::Plain | Mode::S3);
                assert_eq!(etag == sdk::etag_of(&data), md5, "{dst}");
                assert!(get(&n, &dst, to, None).await == data, "{dst}");
                placed_as_asked(&n, &src, &dst, apart).await;
                if size > CHUNK {
                    let (a, z) = (CHUNK - 2, CHUNK + 1);
                    assert!(
                        get(&n, &dst, to, Some((a, z))).await == data[a..=z],
                        "{dst}"
                    );
                }
            }
            // Part copies: a range of the source into an upload of each mode.
            for (j, &to) in targets.iter().enumerate() {
                let apart = (s + i + j) % 2 == 1;
                let dst =
                    n.key_placed("sse", &format!("part-{size}-{i}-{j}"), ("sse", &src), apart);
                let up = n
                    .client
                    .create_multipart_upload()
                    .bucket("sse")
                    .key(&dst)
                    .encrypt(to)
                    .send()
                    .await
                    .expect("create");
                let id = up.upload_id().expect("id");
                let first = size / 3;
                let r = n
                    .client
                    .upload_part_copy()
                    .bucket("sse")
                    .key(&dst)
                    .upload_id(id)
                    .part_number(1)
                    .copy_source(format!("sse/{src}"))
                    .copy_source_range(format!("bytes={first}-{}", size - 1))
                    .source_keyed(from)
                    .keyed(to)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{src} → part of {dst}: {}", sdk::show(&e)));
                assert_eq!(r.said(), shape(to), "{dst}");
                let etag = r.copy_part_result().and_then(|c| c.e_tag()).expect("etag");
                let parts = CompletedMultipartUpload::builder()
                    .parts(CompletedPart::builder().part_number(1).e_tag(etag).build())
                    .build();
                n.client
                    .complete_multipart_upload()
                    .bucket("sse")
                    .key(&dst)
                    .upload_id(id)
                    .keyed(to)
                    .multipart_upload(parts)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("complete {dst}: {}", sdk::show(&e)));
                assert!(get(&n, &dst, to, None).await == data[first..], "{dst}");
                placed_as_asked(&n, &src, &dst, apart).await;
            }
        }
    }
    // An SSE-C source needs its key, for CopyObject and UploadPartCopy, beside it or (behind
    // a proxy) on another backend: 400 without, 403 with another; nothing is written.
    let source = ("sse", "src-1024-2");
    for apart in [false, true] {
        let dst = n.key_placed("sse", "nothing", source, apart);
        let copy = |mode: Mode| {
            n.client
                .copy_object()
                .bucket("sse")
                .key(&dst)
                .copy_source("sse/src-1024-2")
                .source_keyed(mode)
                .send()
        };
        sdk::assert_error(copy(Mode::Plain).await, 400, Some("InvalidRequest"));
        sdk::assert_error(copy(Mode::C(key_b)).await, 403, Some("AccessDenied"));
        let r = n.client.head_object().bucket("sse").key(&dst).send().await;
        sdk::assert_error(r, 404, None);
        let up = n
            .client
            .create_multipart_upload()
            .bucket("sse")
            .key(&dst)
            .send()
            .await
            .expect("create");
        let id = up.upload_id().expect("id");
        let part_copy = |mode: Mode| {
            n.client
                .upload_part_copy()
                .bucket("sse")
                .key(&dst)
                .upload_id(id)
                .part_number(1)
                .copy_source("sse/src-1024-2")
                .source_keyed(mode)
                .send()
        };
        let r = part_copy(Mode::Plain).await;
        sdk::assert_error(r, 400, Some("InvalidRequest"));
        let r = part_copy(Mode::C(key_b)).await;
        sdk::assert_error(r, 403, Some("AccessDenied"));
        let parts = n
            .client
            .list_parts()
            .bucket("sse")
            .key(&dst)
            .upload_id(id)
            .send()
            .await
            .expect("list parts");
        assert!(parts.parts().is_empty(), "{dst}: {parts:?}");
        n.client
            .abort_multipart_upload()
            .bucket("sse")
            .key(&dst)
            .upload_id(id)
            .send()
            .await
            .expect("abort");
    }
    // An object copied onto itself to change only its encryption (AWS allows it).
    let data = body(70_000, 77);
    put(&n, "in-place", Mode::Plain, &data).await;
    let steps = [
        (Mode::Plain, Mode::S3),
        (Mode::S3, Mode::C(key_a)),
        (Mode::C(key_a), Mode::Kms("k2")),
        (Mode::Kms("k2"), Mode::Plain),
    ];
    for (from, to) in steps {
        let mut c = n
            .client
            .copy_object()
            .bucket("sse")
            .key("in-place")
            .copy_source("sse/in-place")
            .source_keyed(from)
            .encrypt(to);
        if to == Mode::Plain {
            // Without any encryption, only a metadata change makes it legal, as on AWS.
            c = c.metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace);
        }
        c.send()
            .await
            .unwrap_or_else(|e| panic!("in place to {to:?}: {}", sdk::show(&e)));
        assert!(get(&n, "in-place", to, None).await == data, "{to:?}");
    }
}

/// Checksums describe the plaintext in every mode: a PUT's, read back by HEAD and GET in
/// checksum mode; a copy's into every mode (the source's algorithm, or the one the copy asks
/// for); an encrypted multipart upload's parts and its composite checksum.
async fn checksums_are_of_the_plaintext(target: Target) {
    let n = TestNode::start_with(target, KMS);
    n.bucket("sse").await;
    let modes = [Mode::Plain, Mode::S3, Mode::C([41; 32]), Mode::Kms("k1")];
    let data = body(MIB + 17, 5);
    let (sha, crc32c) = (sdk::sha256_b64(&data), sdk::crc32c_b64(&data));
    for (i, &from) in modes.iter().enumerate() {
        let src = format!("sum-{i}");
        let r = n
            .client
            .put_object()
            .bucket("sse")
            .key(&src)
            .encrypt(from)
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .body(data.clone().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("PUT {src}: {}", sdk::show(&e)));
        assert_eq!(r.checksum_sha256(), Some(sha.as_str()), "{src}");
        let h = n
            .client
            .head_object()
            .bucket("sse")
            .key(&src)
            .keyed(from)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("HEAD {src}: {}", sdk::show(&e)));
        assert_eq!(h.checksum_sha256(), Some(sha.as_str()), "{src}");
        // The SDK checks the body against the checksum it is given.
        let g = n
            .client
            .get_object()
            .bucket("sse")
            .key(&src)
            .keyed(from)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {src}: {}", sdk::show(&e)));
        assert_eq!(g.checksum_sha256(), Some(sha.as_str()), "{src}");
        assert!(sdk::body_bytes(g.body).await == data, "{src}");
        for (j, &to) in modes.iter().enumerate() {
            for ask in [None, Some(ChecksumAlgorithm::Crc32C)] {
                let dst = format!("sum-{i}-{j}-{}", ask.is_some());
                let mut c = n
                    .client
                    .copy_object()
                    .bucket("sse")
                    .key(&dst)
                    .copy_source(format!("sse/{src}"))
                    .source_keyed(from)
                    .encrypt(to);
                if let Some(a) = ask.clone() {
                    c = c.checksum_algorithm(a);
                }
                let r = c
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{src} → {dst}: {}", sdk::show(&e)));
                let result = r.copy_object_result().expect("result");
                let h = n
                    .client
                    .head_object()
                    .bucket("sse")
                    .key(&dst)
                    .keyed(to)
                    .checksum_mode(ChecksumMode::Enabled)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("HEAD {dst}: {}", sdk::show(&e)));
                if ask.is_some() {
                    assert_eq!(result.checksum_crc32_c(), Some(crc32c.as_str()), "{dst}");
                    assert_eq!(h.checksum_crc32_c(), Some(crc32c.as_str()), "{dst}");
                } else {
                    assert_eq!(result.checksum_sha256(), Some(sha.as_str()), "{dst}");
                    assert_eq!(h.checksum_sha256(), Some(sha.as_str()), "{dst}");
                }
            }
        }
    }
    // Encrypted multipart uploads with CRC32: each part's checksum is of its plaintext.
    let parts = [body(5 * MIB, 6), body(1024, 7)];
    for (i, &mode) in modes.iter().enumerate().skip(1) {
        let key = format!("mp-sum-{i}");
        let up = n
            .client
            .create_multipart_upload()
            .bucket("sse")
            .key(&key)
            .encrypt(mode)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .send()
            .await
            .unwrap_or_else(|e| panic!("create {key}: {}", sdk::show(&e)));
        let id = up.upload_id().expect("id");
        let mut done = Vec::new();
        for (p, part) in parts.iter().enumerate() {
            let r = n
                .client
                .upload_part()
                .bucket("sse")
                .key(&key)
                .upload_id(id)
                .part_number(p as i32 + 1)
                .keyed(mode)
                .checksum_algorithm(ChecksumAlgorithm::Crc32)
                .body(part.clone().into())
                .send()
                .await
                .unwrap_or_else(|e| panic!("part {p} of {key}: {}", sdk::show(&e)));
            let crc = sdk::crc32_b64(part);
            assert_eq!(r.checksum_crc32(), Some(crc.as_str()), "{key}");
            done.push(
                CompletedPart::builder()
                    .part_number(p as i32 + 1)
                    .e_tag(r.e_tag().expect("etag"))
                    .checksum_crc32(crc)
                    .build(),
            );
        }
        n.client
            .complete_multipart_upload()
            .bucket("sse")
            .key(&key)
            .upload_id(id)
            .keyed(mode)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap_or_else(|e| panic!("complete {key}: {}", sdk::show(&e)));
        let g = n
            .client
            .get_object()
            .bucket("sse")
            .key(&key)
            .keyed(mode)
            .part_number(2)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET part 2 of {key}: {}", sdk::show(&e)));
        assert_eq!(
            g.checksum_crc32(),
            Some(sdk::crc32_b64(&parts[1]).as_str()),
            "{key}"
        );
        assert!(sdk::body_bytes(g.body).await == parts[1], "{key}");
    }
}

async fn boto3_copies_and_uploads_encrypted(target: Target) {
    let n = TestNode::start_with(target, KMS);
    // 8 MiB pairs (64 copies and reads of 8 MiB) cost seconds: through one proxy, whose
    // copies cross backends (`copies_between_modes` copies 8 MiB on every target).
    // One byte (less than a block of any mode) and 1 MiB (many of the encrypted format's
    // chunks); `copies_between_modes` covers the sizes between with the Rust SDK.
    let sizes = if target == Target::PROXY_TOKIO {
        "1, 1 << 20, 8 << 20"
    } else {
        "1, 1 << 20"
    };
    let script = r#"
from boto3.s3.transfer import TransferConfig
c.create_bucket(Bucket="boto")
key = b"c" * 32
other = b"d" * 32
ssec = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=key)
data = bytes(range(256)) * 48 * 1024  # 12 MiB: three parts of 5 MiB at most
cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
c.upload_fileobj(io.BytesIO(data), "boto", "mp-c", ExtraArgs=ssec, Config=cfg)
c.upload_fileobj(io.BytesIO(data), "boto", "mp-s3", ExtraArgs={"ServerSideEncryption": "AES256"},
                 Config=cfg)
h = c.head_object(Bucket="boto", Key="mp-c", **ssec)
assert h["ContentLength"] == len(data) and h["ETag"].endswith('-3"'), h
assert h["SSECustomerAlgorithm"] == "AES256", h
assert c.head_object(Bucket="boto", Key="mp-s3")["ServerSideEncryption"] == "AES256"
r = c.get_object(Bucket="boto", Key="mp-c", Range="bytes=5242870-5242890", **ssec)
assert r["Body"].read() == data[5242870:5242891]
# SSE-C to SSE-C under another key, then to SSE-S3.
c.copy_object(Bucket="boto", Key="copy-c", CopySource={"Bucket": "boto", "Key": "mp-c"},
              CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=key,
              SSECustomerAlgorithm="AES256", SSECustomerKey=other)
r = c.get_object(Bucket="boto", Key="copy-c", SSECustomerAlgorithm="AES256", SSECustomerKey=other)
assert r["Body"].read() == data
r = c.copy_object(Bucket="boto", Key="copy-s3", CopySource={"Bucket": "boto", "Key": "copy-c"},
                  CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=other,
                  ServerSideEncryption="AES256")
assert r["ServerSideEncryption"] == "AES256", r
assert r["CopyObjectResult"]["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(), r
assert c.get_object(Bucket="boto", Key="copy-s3")["Body"].read() == data
# SSE-S3 to SSE-KMS; a KMS multipart upload.
r = c.copy_object(Bucket="boto", Key="copy-kms", CopySource={"Bucket": "boto", "Key": "copy-s3"},
                  ServerSideEncryption="aws:kms", SSEKMSKeyId="k2")
assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "k2", r
c.upload_fileobj(io.BytesIO(data), "boto", "mp-kms",
                 ExtraArgs={"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k2"}, Config=cfg)
for k in ("copy-kms", "mp-kms"):
    r = c.get_object(Bucket="boto", Key=k)
    assert r["SSEKMSKeyId"] == "k2" and r["Body"].read() == data, k
# Every pair of modes, single-part copies and part copies, at each size.
modes = {
    "plain": ({}, {}, {}),
    "s3": ({"ServerSideEncryption": "AES256"}, {}, {}),
    "c": (ssec, ssec, dict(CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=key)),
    "kms": ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k1"}, {}, {}),
}
for size in sizes:
    blob = (bytes(range(251)) * (size // 251 + 2))[size % 251:][:size]
    for src, (put_args, read_args, source_args) in modes.items():
        c.put_object(Bucket="boto", Key=f"pair-{size}-{src}", Body=blob, **put_args)
        for dst, (dst_args, dst_read, _) in modes.items():
            name = f"pair-{size}-{src}-{dst}"
            c.copy_object(Bucket="boto", Key=name,
                          CopySource={"Bucket": "boto", "Key": f"pair-{size}-{src}"},
                          **source_args, **dst_args)
            r = c.get_object(Bucket="boto", Key=name, **dst_read)
            assert r["Body"].read() == blob, name
            assert r.get("ServerSideEncryption") == dst_args.get("ServerSideEncryption"), (name, r)
            up = c.create_multipart_upload(Bucket="boto", Key=name + "-mp", **dst_args)
            part = c.upload_part_copy(Bucket="boto", Key=name + "-mp", UploadId=up["UploadId"],
                                      PartNumber=1,
                                      CopySource={"Bucket": "boto", "Key": f"pair-{size}-{src}"},
                                      **source_args, **dst_read)
            c.complete_multipart_upload(
                Bucket="boto", Key=name + "-mp", UploadId=up["UploadId"], **dst_read,
                MultipartUpload={"Parts": [{"PartNumber": 1,
                                            "ETag": part["CopyPartResult"]["ETag"]}]})
            assert c.get_object(Bucket="boto", Key=name + "-mp", **dst_read)["Body"].read() == blob, name
try:
    c.copy_object(Bucket="boto", Key="x", CopySource={"Bucket": "boto", "Key": "mp-c"})
except c.exceptions.ClientError as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
else:
    raise SystemExit("copied an SSE-C object without its key")
print("ok")
"#;
    sdk::run_boto3(&n, &format!("sizes = ({sizes})\n{script}")).await;
}
