//! The SDK's checksum behaviour against a node and through the proxy, on both runtimes: its default
//! CRC32 (as a header for in-memory bodies, as an aws-chunked trailer for streamed ones), explicit
//! SHA-256 and CRC32C, checksum mode on GET/HEAD, and mismatches refused (`BadDigest` for every
//! algorithm); multipart uploads with a checksum algorithm (composite and full-object), their
//! errors, and GetObjectAttributes; the same with boto3.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumMode, ChecksumType, CompletedMultipartUpload, CompletedPart,
    ObjectAttributes,
};
use ferry_core::s3::checksum::ChecksumAlgorithm as Algo;

use crate::support::sdk::{
    self, Options, Target, TestNode, assert_code, body_bytes, crc32_b64, crc32c_b64, pattern,
    recording_client, sha256_b64, show,
};

on_every_target!(
    default_crc32_streamed_as_aws_chunked_trailer,
    default_crc32_in_memory_as_header,
    explicit_sha256_and_crc32c,
    wrong_checksums_refused,
    ranged_get_with_checksum_mode,
    multipart_with_each_algorithm,
    multipart_checksum_errors,
    bad_digest_for_every_algorithm,
    object_attributes,
    copies_of_multipart_objects,
    boto3_multipart_checksums_and_attributes,
    boto3_computes_the_same_checksums,
    multipart_sums_are_the_sdks_own,
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
    // A single PUT's checksum is of the whole object.
    assert_eq!(put.checksum_type(), Some(&ChecksumType::FullObject));
    let get = client
        .get_object()
        .bucket("sums")
        .key("memory")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(get.checksum_crc32(), Some(crc.as_str()));
    assert_eq!(get.checksum_type(), Some(&ChecksumType::FullObject));
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

/// The algorithms and types of multipart checksums S3 allows, each once.
const MULTIPART_KINDS: [(ChecksumAlgorithm, ChecksumType); 7] = [
    (ChecksumAlgorithm::Crc32, ChecksumType::Composite),
    (ChecksumAlgorithm::Crc32C, ChecksumType::Composite),
    (ChecksumAlgorithm::Sha1, ChecksumType::Composite),
    (ChecksumAlgorithm::Sha256, ChecksumType::Composite),
    (ChecksumAlgorithm::Crc32, ChecksumType::FullObject),
    (ChecksumAlgorithm::Crc32C, ChecksumType::FullObject),
    (ChecksumAlgorithm::Crc64Nvme, ChecksumType::FullObject),
];

/// Ferry's own implementation of the algorithm the SDK names (checked against the SDK's
/// values in these tests and against the CRC catalogue in ferry-core).
fn core_algorithm(a: &ChecksumAlgorithm) -> Algo {
    match a {
        ChecksumAlgorithm::Crc32 => Algo::Crc32,
        ChecksumAlgorithm::Crc32C => Algo::Crc32c,
        ChecksumAlgorithm::Crc64Nvme => Algo::Crc64Nvme,
        ChecksumAlgorithm::Sha1 => Algo::Sha1,
        _ => Algo::Sha256,
    }
}

fn b64_of(a: &ChecksumAlgorithm, data: &[u8]) -> String {
    core_algorithm(a)
        .checksum(data)
        .to_base64()
        .as_str()
        .to_owned()
}

/// The composite checksum of `parts`: the checksum of their raw checksums, `-N` after it.
fn composite_of(a: &ChecksumAlgorithm, parts: &[&[u8]]) -> String {
    let algo = core_algorithm(a);
    let raw: Vec<u8> = parts
        .iter()
        .flat_map(|p| algo.checksum(p).as_bytes().to_vec())
        .collect();
    format!("{}-{}", b64_of(a, &raw), parts.len())
}

/// The checksum of `algorithm` an SDK output carries.
macro_rules! sum_of {
    ($out:expr, $algorithm:expr) => {
        match $algorithm {
            ChecksumAlgorithm::Crc32 => $out.checksum_crc32(),
            ChecksumAlgorithm::Crc32C => $out.checksum_crc32_c(),
            ChecksumAlgorithm::Crc64Nvme => $out.checksum_crc64_nvme(),
            ChecksumAlgorithm::Sha1 => $out.checksum_sha1(),
            _ => $out.checksum_sha256(),
        }
    };
}

fn small_parts(target: Target) -> TestNode {
    TestNode::start_with(
        target,
        Options {
            min_part_size: 1024,
            ..Options::default()
        },
    )
}

/// A completed part with its checksum of `algorithm`.
fn completed(
    n: i32,
    etag: &str,
    algorithm: &ChecksumAlgorithm,
    sum: Option<&str>,
) -> CompletedPart {
    let b = CompletedPart::builder().part_number(n).e_tag(etag);
    let sum = sum.map(str::to_owned);
    match algorithm {
        ChecksumAlgorithm::Crc32 => b.set_checksum_crc32(sum),
        ChecksumAlgorithm::Crc32C => b.set_checksum_crc32_c(sum),
        ChecksumAlgorithm::Crc64Nvme => b.set_checksum_crc64_nvme(sum),
        ChecksumAlgorithm::Sha1 => b.set_checksum_sha1(sum),
        _ => b.set_checksum_sha256(sum),
    }
    .build()
}

/// Upload `parts` into a new upload of `algorithm` and `kind`; returns the upload id and the
/// completed parts (ETags and checksums as UploadPart answered them).
async fn upload_parts(
    c: &Client,
    key: &str,
    algorithm: &ChecksumAlgorithm,
    kind: Option<&ChecksumType>,
    parts: &[&[u8]],
) -> (String, Vec<CompletedPart>) {
    let created = c
        .create_multipart_upload()
        .bucket("sums")
        .key(key)
        .checksum_algorithm(algorithm.clone())
        .set_checksum_type(kind.cloned())
        .send()
        .await
        .unwrap_or_else(|e| panic!("create {key}: {}", show(&e)));
    assert_eq!(created.checksum_algorithm(), Some(algorithm), "{key}");
    let id = created.upload_id().expect("UploadId").to_owned();
    let mut done = Vec::new();
    for (i, data) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        let up = c
            .upload_part()
            .bucket("sums")
            .key(key)
            .upload_id(&id)
            .part_number(n)
            .checksum_algorithm(algorithm.clone())
            .body(ByteStream::from(data.to_vec()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("part {n} of {key}: {}", show(&e)));
        let want = b64_of(algorithm, data);
        assert_eq!(
            sum_of!(up, algorithm),
            Some(want.as_str()),
            "{key} part {n}"
        );
        done.push(completed(
            n,
            up.e_tag().expect("ETag"),
            algorithm,
            Some(&want),
        ));
    }
    (id, done)
}

async fn multipart_with_each_algorithm(target: Target) {
    let n = small_parts(target);
    n.bucket("sums").await;
    let c = &n.client;
    let (p1, p2, p3) = (pattern(5000, 1), pattern(7001, 2), pattern(333, 3));
    let parts: [&[u8]; 3] = [&p1, &p2, &p3];
    let whole: Vec<u8> = parts.concat();
    for (algorithm, kind) in MULTIPART_KINDS {
        let key = format!("{}-{}", algorithm.as_str(), kind.as_str());
        // CRC64NVME is FULL_OBJECT without being asked; the others are COMPOSITE.
        let asked = (algorithm != ChecksumAlgorithm::Crc64Nvme).then_some(&kind);
        let (id, done) = upload_parts(c, &key, &algorithm, asked, &parts).await;

        let listed = c
            .list_parts()
            .bucket("sums")
            .key(&key)
            .upload_id(&id)
            .send()
            .await
            .unwrap_or_else(|e| panic!("list parts {key}: {}", show(&e)));
        assert_eq!(listed.checksum_algorithm(), Some(&algorithm), "{key}");
        assert_eq!(listed.checksum_type(), Some(&kind), "{key}");
        let sums: Vec<Option<&str>> = listed
            .parts()
            .iter()
            .map(|p| sum_of!(p, &algorithm))
            .collect();
        let want: Vec<String> = parts.iter().map(|p| b64_of(&algorithm, p)).collect();
        let want: Vec<Option<&str>> = want.iter().map(|s| Some(s.as_str())).collect();
        assert_eq!(sums, want, "{key}");

        let complete = c
            .complete_multipart_upload()
            .bucket("sums")
            .key(&key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap_or_else(|e| panic!("complete {key}: {}", show(&e)));
        let object_sum = match kind {
            ChecksumType::FullObject => b64_of(&algorithm, &whole),
            _ => composite_of(&algorithm, &parts),
        };
        assert_eq!(
            sum_of!(complete, &algorithm),
            Some(object_sum.as_str()),
            "{key}"
        );
        assert_eq!(complete.checksum_type(), Some(&kind), "{key}");

        let get = c
            .get_object()
            .bucket("sums")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("get {key}: {}", show(&e)));
        assert_eq!(sum_of!(get, &algorithm), Some(object_sum.as_str()), "{key}");
        assert_eq!(get.checksum_type(), Some(&kind), "{key}");
        // A full-object CRC was validated by the SDK against the bytes as they arrived.
        assert_eq!(body_bytes(get.body).await, whole, "{key}");
        let head = c
            .head_object()
            .bucket("sums")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("head {key}: {}", show(&e)));
        assert_eq!(
            sum_of!(head, &algorithm),
            Some(object_sum.as_str()),
            "{key}"
        );
        assert_eq!(head.checksum_type(), Some(&kind), "{key}");
        // A part read in checksum mode carries the part's own checksum (which the SDK checks
        // the part's bytes against).
        let part = c
            .get_object()
            .bucket("sums")
            .key(&key)
            .part_number(2)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("get part 2 of {key}: {}", show(&e)));
        let want = b64_of(&algorithm, &p2);
        assert_eq!(sum_of!(part, &algorithm), Some(want.as_str()), "{key}");
        assert_eq!(body_bytes(part.body).await, p2, "{key}");
    }
}

async fn multipart_checksum_errors(target: Target) {
    let n = small_parts(target);
    n.bucket("sums").await;
    let c = &n.client;
    // Types the algorithm does not have.
    for (algorithm, kind) in [
        (ChecksumAlgorithm::Sha256, ChecksumType::FullObject),
        (ChecksumAlgorithm::Sha1, ChecksumType::FullObject),
        (ChecksumAlgorithm::Crc64Nvme, ChecksumType::Composite),
    ] {
        assert_code(
            c.create_multipart_upload()
                .bucket("sums")
                .key("k")
                .checksum_algorithm(algorithm)
                .checksum_type(kind)
                .send()
                .await,
            400,
            "InvalidRequest",
        );
    }
    let (p1, p2) = (pattern(2000, 4), pattern(100, 5));
    let sha = ChecksumAlgorithm::Sha256;
    let (id, done) = upload_parts(c, "k", &sha, None, &[&p1, &p2]).await;
    // A part with another algorithm's checksum, or with a wrong one.
    let other = c
        .upload_part()
        .bucket("sums")
        .key("k")
        .upload_id(&id)
        .part_number(3)
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .body(ByteStream::from_static(b"third"))
        .send()
        .await;
    assert_code(other, 400, "InvalidRequest");
    let wrong = c
        .upload_part()
        .bucket("sums")
        .key("k")
        .upload_id(&id)
        .part_number(3)
        .checksum_sha256(sha256_b64(b"not the body"))
        .body(ByteStream::from_static(b"third"))
        .send()
        .await;
    assert_code(wrong, 400, "BadDigest");
    let complete = |parts: Vec<CompletedPart>| {
        c.complete_multipart_upload()
            .bucket("sums")
            .key("k")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
    };
    // A part checksum that is not the part's: InvalidPart; none for a COMPOSITE upload:
    // InvalidRequest. The upload is still there after either.
    let mut bad = done.clone();
    bad[1] = completed(
        2,
        done[1].e_tag().unwrap(),
        &sha,
        Some(&sha256_b64(b"other")),
    );
    assert_code(complete(bad).await, 400, "InvalidPart");
    let mut missing = done.clone();
    missing[0] = completed(1, done[0].e_tag().unwrap(), &sha, None);
    assert_code(complete(missing).await, 400, "InvalidRequest");
    // The type named with the complete must be the upload's.
    let other_type = c
        .complete_multipart_upload()
        .bucket("sums")
        .key("k")
        .upload_id(&id)
        .checksum_type(ChecksumType::FullObject)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done.clone()))
                .build(),
        )
        .send()
        .await;
    assert_code(other_type, 400, "InvalidRequest");
    // The object's checksum given with the complete must be the one S3 makes.
    let composite = composite_of(&sha, &[&p1, &p2]);
    let with_sum = |sum: String| {
        c.complete_multipart_upload()
            .bucket("sums")
            .key("k")
            .upload_id(&id)
            .checksum_sha256(sum)
            .checksum_type(ChecksumType::Composite)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done.clone()))
                    .build(),
            )
            .send()
    };
    assert_code(
        with_sum(format!("{}-2", sha256_b64(b"other"))).await,
        400,
        "BadDigest",
    );
    let ok = with_sum(composite.clone())
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    assert_eq!(ok.checksum_sha256(), Some(composite.as_str()));
}

async fn bad_digest_for_every_algorithm(target: Target) {
    let n = small_parts(target);
    n.bucket("sums").await;
    let c = &n.client;
    let data = pattern(3000, 6);
    for algorithm in [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32C,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
    ] {
        let wrong = Some(b64_of(&algorithm, b"other bytes"));
        let put = c
            .put_object()
            .bucket("sums")
            .key("bad")
            .body(ByteStream::from(data.clone()));
        let put = match algorithm {
            ChecksumAlgorithm::Crc32 => put.set_checksum_crc32(wrong.clone()),
            ChecksumAlgorithm::Crc32C => put.set_checksum_crc32_c(wrong.clone()),
            ChecksumAlgorithm::Crc64Nvme => put.set_checksum_crc64_nvme(wrong.clone()),
            ChecksumAlgorithm::Sha1 => put.set_checksum_sha1(wrong.clone()),
            _ => put.set_checksum_sha256(wrong.clone()),
        };
        assert_code(put.send().await, 400, "BadDigest");
        // The same as a part of an upload of that algorithm.
        let kind = match algorithm {
            ChecksumAlgorithm::Crc64Nvme => ChecksumType::FullObject,
            _ => ChecksumType::Composite,
        };
        let (id, _) = upload_parts(c, "bad-part", &algorithm, Some(&kind), &[]).await;
        let part = c
            .upload_part()
            .bucket("sums")
            .key("bad-part")
            .upload_id(&id)
            .part_number(1)
            .body(ByteStream::from(data.clone()));
        let part = match algorithm {
            ChecksumAlgorithm::Crc32 => part.set_checksum_crc32(wrong),
            ChecksumAlgorithm::Crc32C => part.set_checksum_crc32_c(wrong),
            ChecksumAlgorithm::Crc64Nvme => part.set_checksum_crc64_nvme(wrong),
            ChecksumAlgorithm::Sha1 => part.set_checksum_sha1(wrong),
            _ => part.set_checksum_sha256(wrong),
        };
        assert_code(part.send().await, 400, "BadDigest");
    }
    assert_code(
        c.get_object().bucket("sums").key("bad").send().await,
        404,
        "NoSuchKey",
    );
}

async fn object_attributes(target: Target) {
    let n = small_parts(target);
    n.bucket("sums").await;
    let c = &n.client;
    let parts: Vec<Vec<u8>> = (0..3).map(|i| pattern(1500 + i, 7 + i as u8)).collect();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let sha = ChecksumAlgorithm::Sha256;
    let (id, done) = upload_parts(c, "mp", &sha, None, &refs).await;
    let complete = c
        .complete_multipart_upload()
        .bucket("sums")
        .key("mp")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let all = [
        ObjectAttributes::Etag,
        ObjectAttributes::Checksum,
        ObjectAttributes::ObjectParts,
        ObjectAttributes::StorageClass,
        ObjectAttributes::ObjectSize,
    ];
    let attrs = |key: &'static str, wanted: &[ObjectAttributes]| {
        c.get_object_attributes()
            .bucket("sums")
            .key(key)
            .set_object_attributes(Some(wanted.to_vec()))
    };
    let got = attrs("mp", &all)
        .send()
        .await
        .unwrap_or_else(|e| panic!("attributes: {}", show(&e)));
    let etag = complete.e_tag().expect("ETag").trim_matches('"').to_owned();
    assert_eq!(got.e_tag(), Some(etag.as_str()));
    assert_eq!(got.object_size(), Some(4503));
    assert_eq!(got.storage_class().map(|s| s.as_str()), Some("STANDARD"));
    assert!(got.last_modified().is_some());
    let sum = got.checksum().expect("Checksum");
    let composite = composite_of(&sha, &refs);
    assert_eq!(
        sum.checksum_sha256(),
        composite.split_once('-').map(|(v, _)| v)
    );
    assert_eq!(sum.checksum_type(), Some(&ChecksumType::Composite));
    let op = got.object_parts().expect("ObjectParts");
    assert_eq!(op.total_parts_count(), Some(3));
    assert_eq!(op.is_truncated(), Some(false));
    let listed: Vec<(Option<i32>, Option<i64>, Option<String>)> = op
        .parts()
        .iter()
        .map(|p| {
            (
                p.part_number(),
                p.size(),
                p.checksum_sha256().map(str::to_owned),
            )
        })
        .collect();
    let want: Vec<(Option<i32>, Option<i64>, Option<String>)> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                Some(i as i32 + 1),
                Some(p.len() as i64),
                Some(sha256_b64(p)),
            )
        })
        .collect();
    assert_eq!(listed, want);

    // Pages of ObjectParts.
    let page = attrs("mp", &[ObjectAttributes::ObjectParts])
        .max_parts(2)
        .send()
        .await
        .unwrap_or_else(|e| panic!("page 1: {}", show(&e)));
    assert_eq!(
        (page.e_tag(), page.object_size(), page.checksum()),
        (None, None, None)
    );
    let op = page.object_parts().expect("ObjectParts");
    assert_eq!(op.is_truncated(), Some(true));
    assert_eq!(op.max_parts(), Some(2));
    assert_eq!(op.next_part_number_marker(), Some("2"));
    let numbers: Vec<Option<i32>> = op.parts().iter().map(|p| p.part_number()).collect();
    assert_eq!(numbers, [Some(1), Some(2)]);
    let page = attrs("mp", &[ObjectAttributes::ObjectParts])
        .max_parts(2)
        .part_number_marker("2")
        .send()
        .await
        .unwrap_or_else(|e| panic!("page 2: {}", show(&e)));
    let op = page.object_parts().expect("ObjectParts");
    assert_eq!(op.is_truncated(), Some(false));
    assert_eq!(op.part_number_marker(), Some("2"));
    let numbers: Vec<Option<i32>> = op.parts().iter().map(|p| p.part_number()).collect();
    assert_eq!(numbers, [Some(3)]);

    // A single-part object: its checksum, no ObjectParts; a multipart one without checksums:
    // only its part count.
    let data = pattern(999, 9);
    c.put_object()
        .bucket("sums")
        .key("single")
        .checksum_algorithm(ChecksumAlgorithm::Crc32C)
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    let got = attrs("single", &all)
        .send()
        .await
        .unwrap_or_else(|e| panic!("single: {}", show(&e)));
    assert_eq!(got.e_tag(), Some(sdk::md5_hex(&data).as_str()));
    let sum = got.checksum().expect("Checksum");
    assert_eq!(sum.checksum_crc32_c(), Some(crc32c_b64(&data).as_str()));
    assert_eq!(sum.checksum_type(), Some(&ChecksumType::FullObject));
    assert!(got.object_parts().is_none());
    let id = c
        .create_multipart_upload()
        .bucket("sums")
        .key("plain")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)))
        .upload_id()
        .expect("UploadId")
        .to_owned();
    let mut done = Vec::new();
    for (i, p) in refs.iter().take(2).enumerate() {
        let up = c
            .upload_part()
            .bucket("sums")
            .key("plain")
            .upload_id(&id)
            .part_number(i as i32 + 1)
            .body(ByteStream::from(p.to_vec()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("part: {}", show(&e)));
        done.push(
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(up.e_tag().expect("ETag"))
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("sums")
        .key("plain")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete plain: {}", show(&e)));
    let got = attrs("plain", &all)
        .send()
        .await
        .unwrap_or_else(|e| panic!("plain: {}", show(&e)));
    assert!(got.checksum().is_none());
    let op = got.object_parts().expect("ObjectParts");
    assert_eq!(op.total_parts_count(), Some(2));
    assert!(op.parts().is_empty());
    // No such key.
    assert_code(attrs("missing", &all).send().await, 404, "NoSuchKey");
}

/// A copy is one part: it keeps a full-object checksum and drops a composite one (on one node,
/// and through the proxy between nodes).
async fn copies_of_multipart_objects(target: Target) {
    let n = small_parts(target);
    n.bucket("sums").await;
    let c = &n.client;
    let (p1, p2) = (pattern(3000, 11), pattern(500, 12));
    let parts: [&[u8]; 2] = [&p1, &p2];
    let whole = parts.concat();
    for (algorithm, kind) in [
        (ChecksumAlgorithm::Sha256, ChecksumType::Composite),
        (ChecksumAlgorithm::Crc32, ChecksumType::FullObject),
    ] {
        let key = format!("src-{}", kind.as_str());
        let (id, done) = upload_parts(c, &key, &algorithm, Some(&kind), &parts).await;
        c.complete_multipart_upload()
            .bucket("sums")
            .key(&key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap_or_else(|e| panic!("complete {key}: {}", show(&e)));
        // A destination on another node than the source, when there are several.
        let dst = (0..64)
            .map(|i| format!("copy-{}-{i}", kind.as_str()))
            .find(|d| n.apart(("sums", &key), ("sums", d)) != Some(false))
            .expect("a destination on another node");
        n.copy("sums", &dst, &format!("sums/{key}")).await;
        let get = c
            .get_object()
            .bucket("sums")
            .key(&dst)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("get {dst}: {}", show(&e)));
        match kind {
            ChecksumType::FullObject => {
                assert_eq!(
                    get.checksum_crc32(),
                    Some(crc32_b64(&whole).as_str()),
                    "{dst}"
                );
                assert_eq!(
                    get.checksum_type(),
                    Some(&ChecksumType::FullObject),
                    "{dst}"
                );
            }
            _ => assert_eq!(get.checksum_sha256(), None, "{dst}"),
        }
        assert_eq!(body_bytes(get.body).await, whole, "{dst}");
    }
}

async fn boto3_multipart_checksums_and_attributes(target: Target) {
    let n = small_parts(target);
    let script = r#"
import base64, hashlib, sys
import boto3
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
c.create_bucket(Bucket="boto")
r = c.create_multipart_upload(Bucket="boto", Key="mp", ChecksumAlgorithm="SHA256")
assert r["ChecksumAlgorithm"] == "SHA256", r
uid = r["UploadId"]
parts = [b"a" * 3000, b"b" * 2000, b"c" * 10]
done = []
for i, data in enumerate(parts, 1):
    r = c.upload_part(Bucket="boto", Key="mp", UploadId=uid, PartNumber=i, Body=data,
                      ChecksumAlgorithm="SHA256")
    want = base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert r["ChecksumSHA256"] == want, (r, want)
    done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": want})
r = c.list_parts(Bucket="boto", Key="mp", UploadId=uid)
assert [p["ChecksumSHA256"] for p in r["Parts"]] == [d["ChecksumSHA256"] for d in done], r
r = c.complete_multipart_upload(Bucket="boto", Key="mp", UploadId=uid,
                                MultipartUpload={"Parts": done})
raw = b"".join(hashlib.sha256(p).digest() for p in parts)
composite = base64.b64encode(hashlib.sha256(raw).digest()).decode()
assert r["ChecksumSHA256"] == composite + "-3", r
r = c.get_object_attributes(Bucket="boto", Key="mp",
                            ObjectAttributes=["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"],
                            MaxParts=2)
assert r["ObjectSize"] == 5010, r
assert r["StorageClass"] == "STANDARD", r
assert r["Checksum"]["ChecksumSHA256"] == composite, r
assert r["Checksum"]["ChecksumType"] == "COMPOSITE", r
op = r["ObjectParts"]
assert op["TotalPartsCount"] == 3 and op["IsTruncated"] and op["MaxParts"] == 2, op
assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(1, 3000), (2, 2000)], op
assert op["PartNumberMarker"] == 0 and op["NextPartNumberMarker"] == 2, op
assert [p["ChecksumSHA256"] for p in op["Parts"]] == [d["ChecksumSHA256"] for d in done[:2]], op
r = c.get_object_attributes(Bucket="boto", Key="mp", ObjectAttributes=["ObjectParts"],
                            PartNumberMarker=2)
assert [p["PartNumber"] for p in r["ObjectParts"]["Parts"]] == [3], r
assert "ETag" not in r, r
r = c.head_object(Bucket="boto", Key="mp", ChecksumMode="ENABLED")
assert r["ChecksumSHA256"] == composite + "-3", r
assert r["ChecksumType"] == "COMPOSITE", r
r = c.get_object(Bucket="boto", Key="mp", ChecksumMode="ENABLED")
assert r["ChecksumSHA256"] == composite + "-3", r
assert r["ChecksumType"] == "COMPOSITE", r
assert r["Body"].read() == b"".join(parts)
# A single PUT's checksum is FULL_OBJECT; a mismatching one is 400 BadDigest, for a PUT and
# for a part, and nothing is stored.
r = c.put_object(Bucket="boto", Key="one", Body=b"one", ChecksumAlgorithm="SHA256")
assert r["ChecksumType"] == "FULL_OBJECT", r
wrong = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
def bad_digest(call):
    try:
        call()
    except c.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "BadDigest", e.response
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
    else:
        raise SystemExit("a wrong checksum was taken")
bad_digest(lambda: c.put_object(Bucket="boto", Key="bad", Body=b"one", ChecksumSHA256=wrong))
uid = c.create_multipart_upload(Bucket="boto", Key="bad-mp", ChecksumAlgorithm="SHA256")["UploadId"]
bad_digest(lambda: c.upload_part(Bucket="boto", Key="bad-mp", UploadId=uid, PartNumber=1,
                                 Body=b"part", ChecksumSHA256=wrong))
assert "Parts" not in c.list_parts(Bucket="boto", Key="bad-mp", UploadId=uid)
try:
    c.head_object(Bucket="boto", Key="bad")
except c.exceptions.ClientError as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
else:
    raise SystemExit("a PUT with a wrong checksum stored its object")
print("ok")
"#;
    let endpoint = format!("http://{}", n.addr);
    crate::support::sdk::run_python(
        script,
        vec![
            endpoint,
            crate::support::ACCESS_KEY.to_owned(),
            crate::support::SECRET_KEY.to_owned(),
        ],
    )
    .await;
}

/// The checksums of multipart uploads as botocore computes them itself (its own classes: zlib's
/// CRC32, the AWS CRT's CRC32C and CRC64NVME, hashlib's SHA-1 and SHA-256), not Ferry's: each
/// part's as UploadPart answers it, each composite (the checksum of the parts' raw checksums,
/// `-N`, as the S3 documentation defines it) and each full-object CRC (combined by Ferry from
/// the parts', computed by the CRT over the whole object) as CompleteMultipartUpload and
/// HeadObject answer them; a GET in checksum mode is validated by botocore as it reads.
async fn boto3_computes_the_same_checksums(target: Target) {
    let n = small_parts(target);
    let script = r#"
import zlib
from botocore.httpchecksum import _CHECKSUM_CLS
def mine(algo, data):
    return _CHECKSUM_CLS[algo.lower()]().handle(bytes(data))
# botocore's CRC32 is zlib's; CRC32C and CRC64NVME need the CRT, which must be there.
assert mine("crc32", b"123456789") == base64.b64encode(zlib.crc32(b"123456789").to_bytes(4, "big")).decode()
assert "crc32c" in _CHECKSUM_CLS and "crc64nvme" in _CHECKSUM_CLS, "botocore without awscrt"
c.create_bucket(Bucket="bsums")
parts = [bytes((i * 7 + 1) % 251 for i in range(5000)),
         bytes((i * 13 + 5) % 253 for i in range(7001)),
         bytes((i * 3) % 256 for i in range(333))]
whole = b"".join(parts)
kinds = [("CRC32", "COMPOSITE"), ("CRC32C", "COMPOSITE"), ("SHA1", "COMPOSITE"),
         ("SHA256", "COMPOSITE"), ("CRC32", "FULL_OBJECT"), ("CRC32C", "FULL_OBJECT"),
         ("CRC64NVME", "FULL_OBJECT")]
for algo, kind in kinds:
    key, field = f"{algo}-{kind}", "Checksum" + algo
    r = c.create_multipart_upload(Bucket="bsums", Key=key, ChecksumAlgorithm=algo,
                                  ChecksumType=kind)
    uid = r["UploadId"]
    done = []
    for i, data in enumerate(parts, 1):
        r = c.upload_part(Bucket="bsums", Key=key, UploadId=uid, PartNumber=i, Body=data,
                          ChecksumAlgorithm=algo)
        want = mine(algo, data)
        assert r[field] == want, (key, i, r.get(field), want)
        done.append({"PartNumber": i, "ETag": r["ETag"], field: want})
    extra = {}
    if kind == "COMPOSITE":
        raw = b"".join(base64.b64decode(d[field]) for d in done)
        want = mine(algo, raw) + "-3"
    else:
        want = mine(algo, whole)
        extra = {field: want, "ChecksumType": "FULL_OBJECT"}
    r = c.complete_multipart_upload(Bucket="bsums", Key=key, UploadId=uid,
                                    MultipartUpload={"Parts": done}, **extra)
    assert (r[field], r["ChecksumType"]) == (want, kind), (key, r, want)
    r = c.head_object(Bucket="bsums", Key=key, ChecksumMode="ENABLED")
    assert (r[field], r["ChecksumType"]) == (want, kind), (key, r, want)
    r = c.get_object(Bucket="bsums", Key=key, ChecksumMode="ENABLED")
    assert r["Body"].read() == whole, key
print("ok")
"#;
    crate::support::sdk::run_boto3(&n, script).await;
}

/// The checksum of `data` as the AWS SDK computes it itself (`aws-smithy-checksums`, what it
/// sends with a request), base64.
fn sdk_sum(a: &ChecksumAlgorithm, data: &[u8]) -> String {
    use base64::Engine as _;
    let algo: aws_smithy_checksums::ChecksumAlgorithm =
        a.as_str().parse().expect("an algorithm of the SDK");
    let mut sum = algo.into_impl();
    sum.update(data);
    base64::engine::general_purpose::STANDARD.encode(sum.finalize())
}

/// Multipart checksums against the AWS SDK for Rust's own: each part's as UploadPart answers it
/// must be the one the SDK computed and sent with the part (recorded from the request), and
/// the object's (CompleteMultipartUpload, HeadObject) the SDK's checksum of those parts' raw
/// checksums with `-3` (composite), or its checksum of the whole object (full-object). (The
/// SDK's CRCs come from crc-fast, as core's do: the implementation independent of Ferry's is
/// the AWS CRT's, in [`boto3_computes_the_same_checksums`].)
async fn multipart_sums_are_the_sdks_own(target: Target) {
    use base64::Engine as _;
    let n = small_parts(target);
    n.bucket("sums").await;
    let (c, sent) = recording_client(n.addr);
    let (p1, p2, p3) = (pattern(5000, 4), pattern(7001, 5), pattern(333, 6));
    let parts: [&[u8]; 3] = [&p1, &p2, &p3];
    let whole: Vec<u8> = parts.concat();
    for (algorithm, kind) in MULTIPART_KINDS {
        let key = format!("sdk-{}-{}", algorithm.as_str(), kind.as_str());
        let asked = (algorithm != ChecksumAlgorithm::Crc64Nvme).then_some(kind.clone());
        let created = c
            .create_multipart_upload()
            .bucket("sums")
            .key(&key)
            .checksum_algorithm(algorithm.clone())
            .set_checksum_type(asked)
            .send()
            .await
            .unwrap_or_else(|e| panic!("create {key}: {}", show(&e)));
        let id = created.upload_id().expect("UploadId").to_owned();
        let header = format!("x-amz-checksum-{}", algorithm.as_str().to_lowercase());
        let mut done = Vec::new();
        let mut raw = Vec::new();
        for (i, data) in parts.iter().enumerate() {
            let part = i as i32 + 1;
            let up = c
                .upload_part()
                .bucket("sums")
                .key(&key)
                .upload_id(&id)
                .part_number(part)
                .checksum_algorithm(algorithm.clone())
                .body(ByteStream::from(data.to_vec()))
                .send()
                .await
                .unwrap_or_else(|e| panic!("part {part} of {key}: {}", show(&e)));
            let theirs = sent
                .header(&header)
                .unwrap_or_else(|| panic!("{key}: the SDK sent no {header}"));
            assert_eq!(theirs, sdk_sum(&algorithm, data), "{key} part {part}");
            assert_eq!(sum_of!(up, &algorithm), Some(theirs.as_str()), "{key}");
            raw.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(&theirs)
                    .expect("base64"),
            );
            done.push(completed(
                part,
                up.e_tag().expect("ETag"),
                &algorithm,
                Some(&theirs),
            ));
        }
        let want = match kind {
            ChecksumType::FullObject => sdk_sum(&algorithm, &whole),
            _ => format!("{}-3", sdk_sum(&algorithm, &raw)),
        };
        let complete = c
            .complete_multipart_upload()
            .bucket("sums")
            .key(&key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap_or_else(|e| panic!("complete {key}: {}", show(&e)));
        assert_eq!(sum_of!(complete, &algorithm), Some(want.as_str()), "{key}");
        let head = c
            .head_object()
            .bucket("sums")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap_or_else(|e| panic!("head {key}: {}", show(&e)));
        assert_eq!(sum_of!(head, &algorithm), Some(want.as_str()), "{key}");
    }
}
