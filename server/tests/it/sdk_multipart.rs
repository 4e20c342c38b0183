//! Multipart uploads through the AWS SDK for Rust, on a node and through the proxy, on both
//! runtimes: create, upload (and replace) parts, list parts and uploads with pagination, complete
//! (ETag, GET by part number), abort, upload part copy, conditional complete, and every error S3
//! documents for them.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use md5::{Digest, Md5};

use crate::support::sdk::{
    self, MIB5, Options, Target, TestNode, assert_code, body_bytes, etag_of, pattern, show,
};

on_every_target!(
    three_parts_roundtrip,
    parts_replaced_and_listed_in_pages,
    list_uploads_paginated,
    abort_and_no_such_upload,
    complete_errors,
    upload_part_copy,
    complete_if_none_match,
    real_five_mib_minimum,
    multipart_object_ranges_and_copies,
    complete_retried_after_success,
);

/// The minimum part size of the small-part nodes.
const MIN: u64 = 64 * 1024;

fn small_parts(target: Target) -> TestNode {
    TestNode::start_with(
        target,
        Options {
            min_part_size: MIN,
            ..Options::default()
        },
    )
}

/// The ETag S3 gives a multipart object: the MD5 of the parts' MD5s, `-` the part count.
fn multipart_etag(parts: &[&[u8]]) -> String {
    let mut all = Md5::new();
    for p in parts {
        all.update(Md5::digest(p));
    }
    format!("\"{}-{}\"", sdk::hex(&all.finalize()), parts.len())
}

async fn create(c: &Client, bucket: &str, key: &str) -> String {
    c.create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload {key}: {}", show(&e)))
        .upload_id()
        .expect("UploadId")
        .to_owned()
}

async fn upload(c: &Client, bucket: &str, key: &str, id: &str, part: i32, data: &[u8]) -> String {
    let out = c
        .upload_part()
        .bucket(bucket)
        .key(key)
        .upload_id(id)
        .part_number(part)
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("upload part {part}: {}", show(&e)));
    let etag = out.e_tag().expect("part ETag").to_owned();
    assert_eq!(etag, etag_of(data), "a part's ETag is its MD5");
    etag
}

fn completed(parts: &[(i32, &str)]) -> CompletedMultipartUpload {
    CompletedMultipartUpload::builder()
        .set_parts(Some(
            parts
                .iter()
                .map(|(n, e)| CompletedPart::builder().part_number(*n).e_tag(*e).build())
                .collect(),
        ))
        .build()
}

async fn three_parts_roundtrip(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let id = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("big/object")
        .content_type("application/x-multi")
        .metadata("kind", "multipart")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    assert_eq!(id.bucket(), Some("mpu"));
    assert_eq!(id.key(), Some("big/object"));
    let id = id.upload_id().expect("UploadId").to_owned();
    let parts = [
        pattern(100_000, 1),
        pattern(MIN as usize, 2),
        pattern(30_001, 3),
    ];
    let mut etags = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        etags.push(upload(c, "mpu", "big/object", &id, i as i32 + 1, p).await);
    }

    let listed = c
        .list_parts()
        .bucket("mpu")
        .key("big/object")
        .upload_id(&id)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list parts: {}", show(&e)));
    assert_eq!(listed.upload_id(), Some(id.as_str()));
    assert_eq!(listed.is_truncated(), Some(false));
    let got: Vec<(i32, i64, String)> = listed
        .parts()
        .iter()
        .map(|p| {
            (
                p.part_number().expect("PartNumber"),
                p.size().expect("Size"),
                p.e_tag().expect("ETag").to_owned(),
            )
        })
        .collect();
    let want: Vec<(i32, i64, String)> = parts
        .iter()
        .zip(&etags)
        .enumerate()
        .map(|(i, (p, e))| (i as i32 + 1, p.len() as i64, e.clone()))
        .collect();
    assert_eq!(got, want);
    assert!(listed.parts().iter().all(|p| p.last_modified().is_some()));

    let uploads = c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list uploads: {}", show(&e)));
    let found: Vec<(&str, &str)> = uploads
        .uploads()
        .iter()
        .map(|u| (u.key().expect("Key"), u.upload_id().expect("UploadId")))
        .collect();
    assert_eq!(found, [("big/object", id.as_str())]);
    assert!(uploads.uploads()[0].initiated().is_some());

    // Not visible as an object until completed.
    assert_code(
        c.get_object().bucket("mpu").key("big/object").send().await,
        404,
        "NoSuchKey",
    );

    let pairs: Vec<(i32, &str)> = etags
        .iter()
        .enumerate()
        .map(|(i, e)| (i as i32 + 1, e.as_str()))
        .collect();
    let done = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big/object")
        .upload_id(&id)
        .multipart_upload(completed(&pairs))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let etag = multipart_etag(&slices);
    assert_eq!(done.e_tag(), Some(etag.as_str()));
    assert_eq!(done.bucket(), Some("mpu"));
    assert_eq!(done.key(), Some("big/object"));
    let whole = parts.concat();

    let head = c
        .head_object()
        .bucket("mpu")
        .key("big/object")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_length(), Some(whole.len() as i64));
    assert_eq!(head.e_tag(), Some(etag.as_str()));
    assert_eq!(head.content_type(), Some("application/x-multi"));
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("kind"))
            .map(String::as_str),
        Some("multipart")
    );
    assert_eq!(n.get("mpu", "big/object").await, whole);

    // GET and HEAD by part number: that part's bytes, and the part count.
    let mut offset = 0usize;
    for (i, p) in parts.iter().enumerate() {
        let out = c
            .get_object()
            .bucket("mpu")
            .key("big/object")
            .part_number(i as i32 + 1)
            .send()
            .await
            .unwrap_or_else(|e| panic!("get part {}: {}", i + 1, show(&e)));
        assert_eq!(out.parts_count(), Some(3));
        assert_eq!(out.content_length(), Some(p.len() as i64));
        let range = format!("bytes {}-{}/{}", offset, offset + p.len() - 1, whole.len());
        assert_eq!(out.content_range(), Some(range.as_str()));
        assert_eq!(out.e_tag(), Some(etag.as_str()));
        assert_eq!(&body_bytes(out.body).await, p);
        offset += p.len();
    }
    let head2 = c
        .head_object()
        .bucket("mpu")
        .key("big/object")
        .part_number(2)
        .send()
        .await
        .expect("head part 2");
    assert_eq!(head2.parts_count(), Some(3));
    assert_eq!(head2.content_length(), Some(MIN as i64));
    assert_code(
        c.get_object()
            .bucket("mpu")
            .key("big/object")
            .part_number(4)
            .send()
            .await,
        416,
        "InvalidPartNumber",
    );

    // Listed with its total size and multipart ETag.
    let list = c
        .list_objects_v2()
        .bucket("mpu")
        .send()
        .await
        .expect("list");
    let o = &list.contents()[0];
    assert_eq!(o.key(), Some("big/object"));
    assert_eq!(o.size(), Some(whole.len() as i64));
    assert_eq!(o.e_tag(), Some(etag.as_str()));

    // The upload is gone.
    let uploads = c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .expect("list uploads");
    assert!(uploads.uploads().is_empty());
    assert_code(
        c.list_parts()
            .bucket("mpu")
            .key("big/object")
            .upload_id(&id)
            .send()
            .await,
        404,
        "NoSuchUpload",
    );

    // A simple object has one part: partNumber=1 is all of it.
    let data = pattern(5000, 4);
    n.put("mpu", "simple", data.clone()).await;
    let one = c
        .get_object()
        .bucket("mpu")
        .key("simple")
        .part_number(1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get part 1 of a simple object: {}", show(&e)));
    assert_eq!(body_bytes(one.body).await, data);
}

async fn parts_replaced_and_listed_in_pages(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let id = create(c, "mpu", "k").await;
    let data = |p: i32| pattern(MIN as usize + p as usize, p as u8);
    let mut etags = std::collections::BTreeMap::new();
    for p in [5, 3, 1, 2, 4] {
        etags.insert(p, upload(c, "mpu", "k", &id, p, &data(p)).await);
    }
    // Uploading a part number again replaces it.
    let new3 = pattern(MIN as usize + 99, 33);
    etags.insert(3, upload(c, "mpu", "k", &id, 3, &new3).await);

    let mut listed = Vec::new();
    let mut marker: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = c
            .list_parts()
            .bucket("mpu")
            .key("k")
            .upload_id(&id)
            .max_parts(2)
            .set_part_number_marker(marker.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list parts page: {}", show(&e)));
        pages += 1;
        assert_eq!(page.max_parts(), Some(2));
        listed.extend(page.parts().iter().map(|p| {
            (
                p.part_number().expect("n"),
                p.e_tag().expect("etag").to_owned(),
            )
        }));
        if page.is_truncated() == Some(true) {
            marker = Some(
                page.next_part_number_marker()
                    .expect("next marker")
                    .to_owned(),
            );
        } else {
            break;
        }
        assert!(pages < 10);
    }
    assert_eq!(pages, 3);
    let want: Vec<(i32, String)> = etags.iter().map(|(n, e)| (*n, e.clone())).collect();
    assert_eq!(listed, want);

    // Completing with a subset of the parts (numbers need not be consecutive).
    let done = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("k")
        .upload_id(&id)
        .multipart_upload(completed(&[
            (1, &etags[&1]),
            (3, &etags[&3]),
            (5, &etags[&5]),
        ]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete subset: {}", show(&e)));
    let (d1, d5) = (data(1), data(5));
    assert_eq!(
        done.e_tag(),
        Some(multipart_etag(&[&d1, &new3, &d5]).as_str())
    );
    assert_eq!(n.get("mpu", "k").await, [d1, new3, d5].concat());
    let part2 = c
        .get_object()
        .bucket("mpu")
        .key("k")
        .part_number(2)
        .send()
        .await
        .expect("part 2 of the object is the third uploaded one");
    assert_eq!(part2.parts_count(), Some(3));
    assert_eq!(body_bytes(part2.body).await, pattern(MIN as usize + 99, 33));
}

async fn list_uploads_paginated(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let mut all = Vec::new();
    for key in ["u/b", "v/c", "u/a", "w", "u/b"] {
        all.push((key.to_owned(), create(c, "mpu", key).await));
    }
    // S3 sorts uploads by key, then by initiation time (creation order here).
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let full = c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .expect("list uploads");
    let got: Vec<(String, String)> = full
        .uploads()
        .iter()
        .map(|u| {
            (
                u.key().expect("k").to_owned(),
                u.upload_id().expect("id").to_owned(),
            )
        })
        .collect();
    assert_eq!(got, all);

    // Pages of two, following NextKeyMarker / NextUploadIdMarker.
    let mut paged = Vec::new();
    let (mut km, mut um): (Option<String>, Option<String>) = (None, None);
    for _ in 0..10 {
        let page = c
            .list_multipart_uploads()
            .bucket("mpu")
            .max_uploads(2)
            .set_key_marker(km.clone())
            .set_upload_id_marker(um.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list uploads page: {}", show(&e)));
        assert!(page.uploads().len() <= 2);
        paged.extend(page.uploads().iter().map(|u| {
            (
                u.key().expect("k").to_owned(),
                u.upload_id().expect("id").to_owned(),
            )
        }));
        if page.is_truncated() != Some(true) {
            break;
        }
        km = page.next_key_marker().map(str::to_owned);
        um = page.next_upload_id_marker().map(str::to_owned);
    }
    assert_eq!(paged, all);

    // Prefix and delimiter.
    let u = c
        .list_multipart_uploads()
        .bucket("mpu")
        .prefix("u/")
        .send()
        .await
        .expect("prefix");
    assert_eq!(u.uploads().len(), 3);
    assert!(
        u.uploads()
            .iter()
            .all(|x| x.key().is_some_and(|k| k.starts_with("u/")))
    );
    let d = c
        .list_multipart_uploads()
        .bucket("mpu")
        .delimiter("/")
        .send()
        .await
        .expect("delimiter");
    let prefixes: Vec<&str> = d
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["u/", "v/"]);
    let keys: Vec<&str> = d.uploads().iter().filter_map(|x| x.key()).collect();
    assert_eq!(keys, ["w"]);
}

async fn abort_and_no_such_upload(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let id = create(c, "mpu", "aborted").await;
    let etag = upload(c, "mpu", "aborted", &id, 1, &pattern(1000, 5)).await;
    c.abort_multipart_upload()
        .bucket("mpu")
        .key("aborted")
        .upload_id(&id)
        .send()
        .await
        .unwrap_or_else(|e| panic!("abort: {}", show(&e)));
    assert_code(
        c.list_parts()
            .bucket("mpu")
            .key("aborted")
            .upload_id(&id)
            .send()
            .await,
        404,
        "NoSuchUpload",
    );
    assert_code(
        c.upload_part()
            .bucket("mpu")
            .key("aborted")
            .upload_id(&id)
            .part_number(2)
            .body(ByteStream::from(b"x".to_vec()))
            .send()
            .await,
        404,
        "NoSuchUpload",
    );
    assert_code(
        c.complete_multipart_upload()
            .bucket("mpu")
            .key("aborted")
            .upload_id(&id)
            .multipart_upload(completed(&[(1, &etag)]))
            .send()
            .await,
        404,
        "NoSuchUpload",
    );
    assert_code(
        c.abort_multipart_upload()
            .bucket("mpu")
            .key("aborted")
            .upload_id(&id)
            .send()
            .await,
        404,
        "NoSuchUpload",
    );
    assert_code(
        c.get_object().bucket("mpu").key("aborted").send().await,
        404,
        "NoSuchKey",
    );
    // Made-up ids, and a real id used with another key.
    assert_code(
        c.list_parts()
            .bucket("mpu")
            .key("aborted")
            .upload_id("no-such-upload-id")
            .send()
            .await,
        404,
        "NoSuchUpload",
    );
    let live = create(c, "mpu", "live").await;
    assert_code(
        c.list_parts()
            .bucket("mpu")
            .key("other-key")
            .upload_id(&live)
            .send()
            .await,
        404,
        "NoSuchUpload",
    );
    // Part numbers outside 1..=10000.
    for bad in [0, 10_001] {
        assert_code(
            c.upload_part()
                .bucket("mpu")
                .key("live")
                .upload_id(&live)
                .part_number(bad)
                .body(ByteStream::from(b"x".to_vec()))
                .send()
                .await,
            400,
            "InvalidArgument",
        );
    }
}

async fn complete_errors(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let id = create(c, "mpu", "k").await;
    let small = pattern(10, 6);
    let big = pattern(MIN as usize, 7);
    let e_small = upload(c, "mpu", "k", &id, 1, &small).await;
    let e_big = upload(c, "mpu", "k", &id, 2, &big).await;
    let e_last = upload(c, "mpu", "k", &id, 3, &small).await;
    let complete = |parts: CompletedMultipartUpload| {
        c.complete_multipart_upload()
            .bucket("mpu")
            .key("k")
            .upload_id(&id)
            .multipart_upload(parts)
            .send()
    };
    // A part that is not the last is smaller than the minimum.
    assert_code(
        complete(completed(&[(1, &e_small), (2, &e_big)])).await,
        400,
        "EntityTooSmall",
    );
    // An ETag that is not the part's, or a part never uploaded.
    assert_code(
        complete(completed(&[(2, &e_small), (3, &e_last)])).await,
        400,
        "InvalidPart",
    );
    assert_code(
        complete(completed(&[(2, &e_big), (7, &e_last)])).await,
        400,
        "InvalidPart",
    );
    // Parts out of order, or repeated.
    assert_code(
        complete(completed(&[(3, &e_last), (2, &e_big)])).await,
        400,
        "InvalidPartOrder",
    );
    assert_code(
        complete(completed(&[(2, &e_big), (2, &e_big)])).await,
        400,
        "InvalidPartOrder",
    );
    // A part whose Content-MD5 does not match its body is refused and not stored.
    use base64::Engine;
    let wrong_md5 = base64::engine::general_purpose::STANDARD.encode(Md5::digest(b"other"));
    assert_code(
        c.upload_part()
            .bucket("mpu")
            .key("k")
            .upload_id(&id)
            .part_number(4)
            .content_md5(wrong_md5)
            .body(ByteStream::from(small.clone()))
            .send()
            .await,
        400,
        "BadDigest",
    );
    let listed = c
        .list_parts()
        .bucket("mpu")
        .key("k")
        .upload_id(&id)
        .send()
        .await
        .expect("list parts");
    let numbers: Vec<i32> = listed
        .parts()
        .iter()
        .filter_map(|p| p.part_number())
        .collect();
    assert_eq!(numbers, [1, 2, 3]);
    // No parts at all.
    assert_code(
        complete(CompletedMultipartUpload::builder().build()).await,
        400,
        "MalformedXML",
    );
    // None of these consumed the upload: a valid list still completes it.
    let done = complete(completed(&[(2, &e_big), (3, &e_last)]))
        .await
        .unwrap_or_else(|e| panic!("complete after errors: {}", show(&e)));
    assert_eq!(done.e_tag(), Some(multipart_etag(&[&big, &small]).as_str()));
    assert_eq!(n.get("mpu", "k").await, [big, small].concat());
}

async fn upload_part_copy(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let src = pattern(250_000, 8);
    let src_etag = n.put("mpu", "source object", src.clone()).await;
    // Behind the proxy, the parts are copied from another node.
    assert_ne!(
        n.apart(("mpu", "source object"), ("mpu", "from copies")),
        Some(false)
    );
    let id = create(c, "mpu", "from copies").await;
    let source = format!("mpu/{}", sdk::encode_key("source object"));
    let copy = |part: i32, range: Option<&str>| {
        c.upload_part_copy()
            .bucket("mpu")
            .key("from copies")
            .upload_id(&id)
            .part_number(part)
            .copy_source(&source)
            .set_copy_source_range(range.map(str::to_owned))
    };
    let p1 = copy(1, Some("bytes=0-99999"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("part copy 1: {}", show(&e)));
    let e1 = p1
        .copy_part_result()
        .and_then(|r| r.e_tag())
        .expect("ETag")
        .to_owned();
    assert_eq!(e1, etag_of(&src[..100_000]));
    let p2 = copy(2, Some("bytes=100000-199999"))
        .copy_source_if_match(&src_etag)
        .send()
        .await
        .unwrap_or_else(|e| panic!("part copy 2: {}", show(&e)));
    let e2 = p2
        .copy_part_result()
        .and_then(|r| r.e_tag())
        .expect("ETag")
        .to_owned();
    assert_eq!(e2, etag_of(&src[100_000..200_000]));
    // No range: the whole source.
    let p3 = copy(3, None)
        .send()
        .await
        .unwrap_or_else(|e| panic!("part copy 3: {}", show(&e)));
    let e3 = p3
        .copy_part_result()
        .and_then(|r| r.e_tag())
        .expect("ETag")
        .to_owned();
    assert_eq!(e3, src_etag);
    // A normal part after the copies.
    let tail = pattern(77, 9);
    let e4 = upload(c, "mpu", "from copies", &id, 4, &tail).await;
    // Source conditions and a missing source.
    assert_code(
        copy(5, Some("bytes=250000-250009")).send().await,
        416,
        "InvalidRange",
    );
    assert_code(
        copy(5, None)
            .copy_source_if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        412,
        "PreconditionFailed",
    );
    assert_code(
        c.upload_part_copy()
            .bucket("mpu")
            .key("from copies")
            .upload_id(&id)
            .part_number(5)
            .copy_source("mpu/missing")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("from copies")
        .upload_id(&id)
        .multipart_upload(completed(&[(1, &e1), (2, &e2), (3, &e3), (4, &e4)]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let want = [&src[..200_000], &src[..], &tail[..]].concat();
    assert_eq!(n.get("mpu", "from copies").await, want);
}

async fn complete_if_none_match(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let existing = pattern(10, 10);
    n.put("mpu", "taken", existing.clone()).await;
    let id = create(c, "mpu", "taken").await;
    let part = pattern(1000, 11);
    let e = upload(c, "mpu", "taken", &id, 1, &part).await;
    assert_code(
        c.complete_multipart_upload()
            .bucket("mpu")
            .key("taken")
            .upload_id(&id)
            .if_none_match("*")
            .multipart_upload(completed(&[(1, &e)]))
            .send()
            .await,
        412,
        "PreconditionFailed",
    );
    assert_eq!(n.get("mpu", "taken").await, existing);
    // On a free key the same request completes.
    let id = create(c, "mpu", "free").await;
    let e = upload(c, "mpu", "free", &id, 1, &part).await;
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("free")
        .upload_id(&id)
        .if_none_match("*")
        .multipart_upload(completed(&[(1, &e)]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete If-None-Match on a free key: {}", show(&e)));
    assert_eq!(n.get("mpu", "free").await, part);
}

async fn real_five_mib_minimum(target: Target) {
    // The default node: S3's own 5 MiB minimum.
    let n = TestNode::start(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let five = MIB5 as usize;
    let parts = [pattern(five, 12), pattern(five, 13), pattern(1 << 20, 14)];
    let id = create(c, "mpu", "real").await;
    let mut pairs = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        pairs.push((
            i as i32 + 1,
            upload(c, "mpu", "real", &id, i as i32 + 1, p).await,
        ));
    }
    let refs: Vec<(i32, &str)> = pairs.iter().map(|(n, e)| (*n, e.as_str())).collect();
    let done = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("real")
        .upload_id(&id)
        .multipart_upload(completed(&refs))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    assert_eq!(done.e_tag(), Some(multipart_etag(&slices).as_str()));
    let got = n.get("mpu", "real").await;
    assert_eq!(got.len(), 11 << 20);
    assert_eq!(sdk::md5_hex(&got), sdk::md5_hex(&parts.concat()));

    // One byte under 5 MiB is too small for a part that is not the last.
    let id = create(c, "mpu", "short").await;
    let e1 = upload(c, "mpu", "short", &id, 1, &pattern(five - 1, 15)).await;
    let e2 = upload(c, "mpu", "short", &id, 2, &pattern(10, 16)).await;
    assert_code(
        c.complete_multipart_upload()
            .bucket("mpu")
            .key("short")
            .upload_id(&id)
            .multipart_upload(completed(&[(1, &e1), (2, &e2)]))
            .send()
            .await,
        400,
        "EntityTooSmall",
    );
}

async fn multipart_object_ranges_and_copies(target: Target) {
    use aws_sdk_s3::types::MetadataDirective;
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let parts = [
        pattern(MIN as usize + 5, 40),
        pattern(MIN as usize, 41),
        pattern(999, 42),
    ];
    let id = create(c, "mpu", "src").await;
    let mut pairs = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        pairs.push((
            i as i32 + 1,
            upload(c, "mpu", "src", &id, i as i32 + 1, p).await,
        ));
    }
    let refs: Vec<(i32, &str)> = pairs.iter().map(|(n, e)| (*n, e.as_str())).collect();
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("src")
        .upload_id(&id)
        .multipart_upload(completed(&refs))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let whole = parts.concat();
    let total = whole.len();

    // Ranges that cross part boundaries.
    let b1 = parts[0].len();
    let b2 = b1 + parts[1].len();
    for (first, last) in [
        (b1 - 10, b1 + 10),
        (b1 - 1, b2),
        (0, total - 1),
        (b2 - 3, total - 1),
    ] {
        let out = c
            .get_object()
            .bucket("mpu")
            .key("src")
            .range(format!("bytes={first}-{last}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("range {first}-{last}: {}", show(&e)));
        assert_eq!(
            out.content_range(),
            Some(format!("bytes {first}-{last}/{total}").as_str())
        );
        assert_eq!(body_bytes(out.body).await, &whole[first..=last]);
    }
    // partNumber and Range together are refused.
    assert_code(
        c.get_object()
            .bucket("mpu")
            .key("src")
            .part_number(1)
            .range("bytes=0-9")
            .send()
            .await,
        400,
        "InvalidRequest",
    );

    // CopyObject makes a new single-part object: its ETag is the MD5 of the data and it has
    // no parts.
    let out = n.copy("mpu", "copy", "mpu/src").await;
    assert_eq!(
        out.copy_object_result().and_then(|r| r.e_tag()),
        Some(etag_of(&whole).as_str())
    );
    assert_eq!(n.get("mpu", "copy").await, whole);
    let one = c
        .get_object()
        .bucket("mpu")
        .key("copy")
        .part_number(1)
        .send()
        .await
        .unwrap_or_else(|e| panic!("part 1 of the copy: {}", show(&e)));
    assert_eq!(one.parts_count(), None);
    assert_eq!(body_bytes(one.body).await, whole);
    // Rewriting a multipart object's metadata in place keeps its data.
    c.copy_object()
        .bucket("mpu")
        .key("src")
        .copy_source("mpu/src")
        .metadata_directive(MetadataDirective::Replace)
        .metadata("touched", "yes")
        .send()
        .await
        .unwrap_or_else(|e| panic!("self copy: {}", show(&e)));
    assert_eq!(n.get("mpu", "src").await, whole);

    // UploadPartCopy with a range across the source's part boundaries.
    let id = create(c, "mpu", "assembled").await;
    let range = (b1 - 100, b2 + 100);
    let p1 = c
        .upload_part_copy()
        .bucket("mpu")
        .key("assembled")
        .upload_id(&id)
        .part_number(1)
        .copy_source("mpu/copy")
        .copy_source_range(format!("bytes={}-{}", range.0, range.1))
        .send()
        .await
        .unwrap_or_else(|e| panic!("part copy across parts: {}", show(&e)));
    let e1 = p1
        .copy_part_result()
        .and_then(|r| r.e_tag())
        .expect("ETag")
        .to_owned();
    assert_eq!(e1, etag_of(&whole[range.0..=range.1]));
    // A source range past the end of the source is refused.
    let e = c
        .upload_part_copy()
        .bucket("mpu")
        .key("assembled")
        .upload_id(&id)
        .part_number(2)
        .copy_source("mpu/copy")
        .copy_source_range(format!("bytes={}-{}", total - 10, total + 10))
        .send()
        .await
        .expect_err("range past the end");
    // 416 InvalidRange, as AWS answers it.
    assert_eq!(sdk::status_of(&e), Some(416), "{}", show(&e));
    assert_eq!(
        aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
        Some("InvalidRange")
    );
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("assembled")
        .upload_id(&id)
        .multipart_upload(completed(&[(1, &e1)]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    assert_eq!(n.get("mpu", "assembled").await, &whole[range.0..=range.1]);
}

/// A CompleteMultipartUpload retried after it succeeded (its answer lost) answers 200 with the
/// same ETag for the same part list, and changes nothing; another part list, or another key,
/// is `NoSuchUpload`. The same through boto3.
async fn complete_retried_after_success(target: Target) {
    let n = small_parts(target);
    n.bucket("mpu").await;
    let c = &n.client;
    let (a, b) = (pattern(MIN as usize, 1), pattern(1000, 2));
    let id = create(c, "mpu", "retried").await;
    let e1 = upload(c, "mpu", "retried", &id, 1, &a).await;
    let e2 = upload(c, "mpu", "retried", &id, 2, &b).await;
    let complete = |parts: CompletedMultipartUpload, key: &'static str| {
        c.complete_multipart_upload()
            .bucket("mpu")
            .key(key)
            .upload_id(&id)
            .multipart_upload(parts)
            .send()
    };
    let first = complete(completed(&[(1, &e1), (2, &e2)]), "retried")
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let want = multipart_etag(&[&a, &b]);
    assert_eq!(first.e_tag(), Some(want.as_str()));
    let again = complete(completed(&[(1, &e1), (2, &e2)]), "retried")
        .await
        .unwrap_or_else(|e| panic!("complete again: {}", show(&e)));
    assert_eq!(again.e_tag(), Some(want.as_str()));
    assert_code(
        complete(completed(&[(1, &e1)]), "retried").await,
        404,
        "NoSuchUpload",
    );
    assert_code(
        complete(completed(&[(1, &e1), (2, &e2)]), "elsewhere").await,
        404,
        "NoSuchUpload",
    );
    // One object, whole.
    assert_eq!(n.get("mpu", "retried").await, [a, b].concat());
    let listed = c
        .list_objects_v2()
        .bucket("mpu")
        .send()
        .await
        .expect("list");
    assert_eq!(listed.key_count(), Some(1));

    let script = r#"
import sys
import boto3
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
up = c.create_multipart_upload(Bucket="mpu", Key="boto")["UploadId"]
etag = c.upload_part(Bucket="mpu", Key="boto", UploadId=up, PartNumber=1, Body=b"x" * 10)["ETag"]
parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
one = c.complete_multipart_upload(Bucket="mpu", Key="boto", UploadId=up, MultipartUpload=parts)
two = c.complete_multipart_upload(Bucket="mpu", Key="boto", UploadId=up, MultipartUpload=parts)
assert one["ETag"] == two["ETag"], (one, two)
assert c.get_object(Bucket="mpu", Key="boto")["Body"].read() == b"x" * 10
print("ok")
"#;
    let endpoint = n.endpoint();
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
