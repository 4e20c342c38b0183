//! The SDK's checksum behaviour against a node and through the proxy, on both runtimes: its default
//! CRC32 (as a header for in-memory bodies, as an aws-chunked trailer for streamed ones), explicit
//! SHA-256 and CRC32C, checksum mode on GET/HEAD, and mismatches refused.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};

use crate::support::sdk::{
    self, Target, TestNode, assert_code, body_bytes, crc32_b64, crc32c_b64, pattern,
    recording_client, sha256_b64, show,
};

on_every_target!(
    default_crc32_streamed_as_aws_chunked_trailer,
    default_crc32_in_memory_as_header,
    explicit_sha256_and_crc32c,
    wrong_checksums_refused,
    ranged_get_with_checksum_mode,
);

/// Write `data` to a file in `dir` and open it as a streaming body (no length known upfront
/// to the checksum layer, so the SDK sends aws-chunked with a trailer).
async fn file_body(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> ByteStream {
    let path = dir.path().join(name);
    std::fs::write(&path, data).expect("write body file");
    ByteStream::from_path(&path).await.expect("file body")
}

async fn default_crc32_streamed_as_aws_chunked_trailer(target: Target) {
    let n = TestNode::start(target);
    n.bucket("sums").await;
    let (client, rec) = recording_client(n.addr);
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = pattern(1_500_017, 20);
    let put = client
        .put_object()
        .bucket("sums")
        .key("streamed")
        .content_type("application/x-streamed")
        .content_encoding("gzip")
        .body(file_body(&tmp, "streamed", &data).await)
        .send()
        .await
        .unwrap_or_else(|e| panic!("streamed put: {}", show(&e)));
    // What the SDK sent: aws-chunked, unsigned payload, a CRC32 trailer.
    let encoding = rec.header("content-encoding").unwrap_or_default();
    assert!(encoding.contains("aws-chunked"), "{encoding:?}");
    assert_eq!(
        rec.header("x-amz-content-sha256").as_deref(),
        Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    );
    assert_eq!(
        rec.header("x-amz-trailer").as_deref(),
        Some("x-amz-checksum-crc32")
    );
    assert_eq!(
        rec.header("x-amz-decoded-content-length").as_deref(),
        Some("1500017")
    );
    let crc = crc32_b64(&data);
    assert_eq!(put.checksum_crc32(), Some(crc.as_str()));
    assert_eq!(put.e_tag(), Some(sdk::etag_of(&data).as_str()));

    let get = client
        .get_object()
        .bucket("sums")
        .key("streamed")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(get.checksum_crc32(), Some(crc.as_str()));
    assert_eq!(get.content_length(), Some(1_500_017));
    assert_eq!(get.content_type(), Some("application/x-streamed"));
    // aws-chunked is a transfer detail: S3 keeps only the other codings.
    assert_eq!(get.content_encoding(), Some("gzip"));
    // The SDK validated the body against the CRC32 while reading it.
    assert_eq!(body_bytes(get.body).await, data);

    let head = client
        .head_object()
        .bucket("sums")
        .key("streamed")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap_or_else(|e| panic!("head: {}", show(&e)));
    assert_eq!(head.checksum_crc32(), Some(crc.as_str()));
}

async fn default_crc32_in_memory_as_header(target: Target) {
    let n = TestNode::start(target);
    n.bucket("sums").await;
    let (client, rec) = recording_client(n.addr);
    let data = pattern(70_000, 21);
    let crc = crc32_b64(&data);
    let put = client
        .put_object()
        .bucket("sums")
        .key("memory")
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(rec.header("x-amz-checksum-crc32"), Some(crc.clone()));
    assert_eq!(put.checksum_crc32(), Some(crc.as_str()));
    let get = client
        .get_object()
        .bucket("sums")
        .key("memory")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(get.checksum_crc32(), Some(crc.as_str()));
    assert_eq!(body_bytes(get.body).await, data);
}

async fn explicit_sha256_and_crc32c(target: Target) {
    let n = TestNode::start(target);
    n.bucket("sums").await;
    let (client, rec) = recording_client(n.addr);
    let tmp = tempfile::tempdir().expect("temp dir");
    for (algo, name) in [
        (ChecksumAlgorithm::Sha256, "sha256"),
        (ChecksumAlgorithm::Crc32C, "crc32c"),
    ] {
        let data = pattern(333_333, name.len() as u8);
        let expected = match algo {
            ChecksumAlgorithm::Sha256 => sha256_b64(&data),
            _ => crc32c_b64(&data),
        };
        let header = format!("x-amz-checksum-{name}");
        for streamed in [false, true] {
            let key = format!("{name}-{streamed}");
            let body = if streamed {
                file_body(&tmp, &key, &data).await
            } else {
                ByteStream::from(data.clone())
            };
            let put = client
                .put_object()
                .bucket("sums")
                .key(&key)
                .checksum_algorithm(algo.clone())
                .body(body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("put {key}: {}", show(&e)));
            if streamed {
                assert_eq!(rec.header("x-amz-trailer"), Some(header.clone()), "{key}");
            } else {
                assert_eq!(rec.header(&header), Some(expected.clone()), "{key}");
            }
            let returned = match algo {
                ChecksumAlgorithm::Sha256 => put.checksum_sha256(),
                _ => put.checksum_crc32_c(),
            };
            assert_eq!(returned, Some(expected.as_str()), "{key}");
            let get = client
                .get_object()
                .bucket("sums")
                .key(&key)
                .checksum_mode(ChecksumMode::Enabled)
                .send()
                .await
                .unwrap_or_else(|e| panic!("get {key}: {}", show(&e)));
            let returned = match algo {
                ChecksumAlgorithm::Sha256 => get.checksum_sha256(),
                _ => get.checksum_crc32_c(),
            };
            assert_eq!(returned, Some(expected.as_str()), "{key}");
            // Only the algorithm the object was written with.
            assert_eq!(get.checksum_crc32(), None, "{key}");
            assert_eq!(body_bytes(get.body).await, data, "{key}");
        }
    }
}

async fn wrong_checksums_refused(target: Target) {
    let n = TestNode::start(target);
    n.bucket("sums").await;
    let data = pattern(10_000, 22);
    // A CRC32 of other bytes, given explicitly: the SDK sends it as is.
    let wrong = crc32_b64(b"something else");
    assert_code(
        n.client
            .put_object()
            .bucket("sums")
            .key("bad-crc")
            .checksum_crc32(wrong)
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        400,
        "BadDigest",
    );
    let wrong = sha256_b64(b"something else");
    assert_code(
        n.client
            .put_object()
            .bucket("sums")
            .key("bad-sha")
            .checksum_sha256(wrong)
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        400,
        "BadDigest",
    );
    for key in ["bad-crc", "bad-sha"] {
        assert_code(
            n.client.get_object().bucket("sums").key(key).send().await,
            404,
            "NoSuchKey",
        );
    }
}

async fn ranged_get_with_checksum_mode(target: Target) {
    let n = TestNode::start(target);
    n.bucket("sums").await;
    let data = pattern(200_000, 23);
    n.put("sums", "r", data.clone()).await;
    // A range is not the whole object: its checksum must not be sent as the body's (the SDK
    // would fail validating the part against it).
    let get = n
        .client
        .get_object()
        .bucket("sums")
        .key("r")
        .range("bytes=1000-1999")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap_or_else(|e| panic!("ranged get: {}", show(&e)));
    assert_eq!(body_bytes(get.body).await, &data[1000..2000]);
}
