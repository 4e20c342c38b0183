//! Objects through the AWS SDK for Rust, on a node and through the proxy, on both runtimes:
//! PUT/GET/HEAD/DELETE with content headers and user metadata, ranges, conditional reads and
//! writes, response overrides, copy, DeleteObjects, awkward keys, Content-MD5.

use std::collections::HashMap;

use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    BucketVersioningStatus, Delete, MetadataDirective, ObjectIdentifier, VersioningConfiguration,
};

use crate::support::http;
use crate::support::sdk::{
    Target, TestNode, assert_code, assert_error, body_bytes, decode_rfc2047, encode_key, etag_of,
    pattern, show,
};

on_every_target!(
    put_get_head_with_headers_and_metadata,
    empty_object,
    overwrite_replaces_everything,
    range_gets,
    conditional_get_and_head,
    conditional_put,
    response_overrides,
    copy_with_copy_and_replace,
    copy_source_conditions_and_errors,
    delete_object_and_missing_keys,
    conditional_delete,
    delete_objects_verbose_and_quiet,
    awkward_keys,
    content_md5_checked,
    metadata_size_limit,
    delete_objects_limit,
);

async fn put_get_head_with_headers_and_metadata(target: Target) {
    let n = TestNode::start(target);
    n.bucket("objs").await;
    let data = pattern(10_000, 1);
    let expires = DateTime::from_secs(2_000_000_000);
    let before = crate::support::http::now();
    let put = n
        .client
        .put_object()
        .bucket("objs")
        .key("doc.txt")
        .body(ByteStream::from(data.clone()))
        .content_type("text/plain; charset=utf-8")
        .cache_control("max-age=60")
        .content_disposition("attachment; filename=\"doc.txt\"")
        .content_encoding("identity")
        .content_language("fr-CA")
        .expires(expires)
        .metadata("Color", "blue")
        .metadata("plain", "ASCII value with spaces")
        .metadata("cafe", "café ☕ 東京")
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(put.e_tag(), Some(etag_of(&data).as_str()));

    let expect_meta: HashMap<&str, &str> = [
        ("color", "blue"),
        ("plain", "ASCII value with spaces"),
        ("cafe", "café ☕ 東京"),
    ]
    .into_iter()
    .collect();
    let check_meta = |meta: Option<&HashMap<String, String>>| {
        let meta = meta.expect("metadata");
        assert_eq!(meta.len(), expect_meta.len(), "{meta:?}");
        for (k, v) in &expect_meta {
            let got = meta
                .get(*k)
                .unwrap_or_else(|| panic!("metadata {k}: {meta:?}"));
            if v.is_ascii() {
                assert_eq!(got, v);
            } else {
                // S3 returns non-ASCII values RFC 2047-encoded.
                assert!(got.is_ascii(), "{got:?}");
                assert_eq!(decode_rfc2047(got), *v, "{got:?}");
            }
        }
    };

    let get = n
        .client
        .get_object()
        .bucket("objs")
        .key("doc.txt")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(get.content_length(), Some(10_000));
    assert_eq!(get.content_type(), Some("text/plain; charset=utf-8"));
    assert_eq!(get.cache_control(), Some("max-age=60"));
    assert_eq!(
        get.content_disposition(),
        Some("attachment; filename=\"doc.txt\"")
    );
    assert_eq!(get.content_encoding(), Some("identity"));
    assert_eq!(get.content_language(), Some("fr-CA"));
    assert_eq!(get.expires_string(), Some("Wed, 18 May 2033 03:33:20 GMT"));
    assert_eq!(get.e_tag(), Some(etag_of(&data).as_str()));
    assert_eq!(get.accept_ranges(), Some("bytes"));
    // The second of the write, on the same machine's clock: between the second before the
    // PUT was sent and the second after its object was read.
    let modified = *get.last_modified().expect("Last-Modified");
    let after = crate::support::http::now();
    assert!(
        (before..=after).contains(&modified.secs()),
        "Last-Modified {modified:?}, PUT sent at {before}, read by {after}"
    );
    check_meta(get.metadata());
    assert_eq!(body_bytes(get.body).await, data);

    let head = n
        .client
        .head_object()
        .bucket("objs")
        .key("doc.txt")
        .send()
        .await
        .unwrap_or_else(|e| panic!("head: {}", show(&e)));
    assert_eq!(head.content_length(), Some(10_000));
    assert_eq!(head.content_type(), Some("text/plain; charset=utf-8"));
    assert_eq!(head.cache_control(), Some("max-age=60"));
    assert_eq!(head.content_language(), Some("fr-CA"));
    assert_eq!(head.e_tag(), Some(etag_of(&data).as_str()));
    assert_eq!(head.last_modified(), Some(&modified));
    check_meta(head.metadata());

    // A value sent already RFC 2047-encoded is stored decoded and comes back the same way.
    n.client
        .put_object()
        .bucket("objs")
        .key("encoded")
        .metadata("name", "=?UTF-8?B?w6lsw6h2ZQ==?=")
        .send()
        .await
        .unwrap_or_else(|e| panic!("put encoded: {}", show(&e)));
    let head = n
        .client
        .head_object()
        .bucket("objs")
        .key("encoded")
        .send()
        .await
        .expect("head encoded");
    let v = head.metadata().and_then(|m| m.get("name")).expect("name");
    assert_eq!(decode_rfc2047(v), "élève");

    assert_code(
        n.client
            .get_object()
            .bucket("objs")
            .key("nope")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    assert_code(
        n.client
            .head_object()
            .bucket("objs")
            .key("nope")
            .send()
            .await,
        404,
        "NotFound",
    );
}

async fn empty_object(target: Target) {
    let n = TestNode::start(target);
    n.bucket("empty").await;
    let etag = n.put("empty", "zero", Vec::new()).await;
    assert_eq!(etag, "\"d41d8cd98f00b204e9800998ecf8427e\"");
    assert_eq!(n.get("empty", "zero").await, b"");
    let head = n
        .client
        .head_object()
        .bucket("empty")
        .key("zero")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_length(), Some(0));
    // A range of an empty object cannot be satisfied.
    assert_code(
        n.client
            .get_object()
            .bucket("empty")
            .key("zero")
            .range("bytes=0-0")
            .send()
            .await,
        416,
        "InvalidRange",
    );
    // Copied (behind the proxy, to another node): still an empty object.
    assert_ne!(
        n.apart(("empty", "zero"), ("empty", "zero copy")),
        Some(false)
    );
    let out = n.copy("empty", "zero copy", "empty/zero").await;
    let copied = out.copy_object_result().and_then(|r| r.e_tag());
    assert_eq!(copied, Some(etag.as_str()));
    assert_eq!(n.get("empty", "zero copy").await, b"");
}

async fn overwrite_replaces_everything(target: Target) {
    let n = TestNode::start(target);
    n.bucket("over").await;
    n.client
        .put_object()
        .bucket("over")
        .key("k")
        .body(ByteStream::from(pattern(5000, 2)))
        .content_type("image/png")
        .metadata("old", "1")
        .send()
        .await
        .expect("first put");
    let second = pattern(321, 3);
    n.client
        .put_object()
        .bucket("over")
        .key("k")
        .body(ByteStream::from(second.clone()))
        .metadata("new", "2")
        .send()
        .await
        .expect("second put");
    let get = n
        .client
        .get_object()
        .bucket("over")
        .key("k")
        .send()
        .await
        .expect("get");
    assert_eq!(get.e_tag(), Some(etag_of(&second).as_str()));
    assert_ne!(get.content_type(), Some("image/png"));
    let meta = get.metadata().cloned().unwrap_or_default();
    assert_eq!(meta.get("new").map(String::as_str), Some("2"));
    assert!(!meta.contains_key("old"), "{meta:?}");
    assert_eq!(body_bytes(get.body).await, second);
}

async fn range_gets(target: Target) {
    let n = TestNode::start(target);
    n.bucket("ranges").await;
    let data = pattern(1000, 4);
    n.put("ranges", "r", data.clone()).await;
    let ranged = |range: &'static str| {
        n.client
            .get_object()
            .bucket("ranges")
            .key("r")
            .range(range)
            .send()
    };
    // (Range, first byte, last byte) as S3 resolves them.
    for (range, first, last) in [
        ("bytes=0-0", 0usize, 0usize),
        ("bytes=0-99", 0, 99),
        ("bytes=100-199", 100, 199),
        ("bytes=990-", 990, 999),
        ("bytes=0-", 0, 999),
        ("bytes=-10", 990, 999),
        ("bytes=-1", 999, 999),
        ("bytes=-5000", 0, 999),
        ("bytes=900-5000", 900, 999),
        ("bytes=999-999", 999, 999),
    ] {
        let out = ranged(range)
            .await
            .unwrap_or_else(|e| panic!("{range}: {}", show(&e)));
        let len = last - first + 1;
        assert_eq!(out.content_length(), Some(len as i64), "{range}");
        assert_eq!(
            out.content_range(),
            Some(format!("bytes {first}-{last}/1000").as_str()),
            "{range}"
        );
        assert_eq!(out.e_tag(), Some(etag_of(&data).as_str()));
        assert_eq!(body_bytes(out.body).await, &data[first..=last], "{range}");
    }
    // Unsatisfiable: 416 InvalidRange, with the object's length in Content-Range.
    for range in [
        "bytes=1000-",
        "bytes=1000-2000",
        "bytes=5000-6000",
        "bytes=-0",
    ] {
        let r = ranged(range).await;
        let e = r.as_ref().err().map(|e| {
            e.raw_response()
                .and_then(|r| r.headers().get("content-range"))
                .map(str::to_owned)
        });
        assert_code(r, 416, "InvalidRange");
        assert_eq!(e.flatten().as_deref(), Some("bytes */1000"), "{range}");
    }
    // Several ranges, or a malformed one: S3 ignores the header and sends everything.
    for range in ["bytes=0-1,5-6", "bytes=5-2", "lines=1-2", "bytes=x-y"] {
        let out = ranged(range)
            .await
            .unwrap_or_else(|e| panic!("{range}: {}", show(&e)));
        assert_eq!(out.content_range(), None, "{range}");
        assert_eq!(body_bytes(out.body).await, data, "{range}");
    }
    // HEAD honours a range the same way.
    let head = n
        .client
        .head_object()
        .bucket("ranges")
        .key("r")
        .range("bytes=10-19")
        .send()
        .await
        .expect("head range");
    assert_eq!(head.content_length(), Some(10));
    assert_eq!(head.content_range(), Some("bytes 10-19/1000"));
}

async fn conditional_get_and_head(target: Target) {
    let n = TestNode::start(target);
    n.bucket("cond").await;
    let data = pattern(777, 5);
    let etag = n.put("cond", "c", data.clone()).await;
    let lm = n
        .client
        .head_object()
        .bucket("cond")
        .key("c")
        .send()
        .await
        .expect("head")
        .last_modified()
        .copied()
        .expect("Last-Modified");
    let before = DateTime::from_secs(lm.secs() - 3600);
    let get = || n.client.get_object().bucket("cond").key("c");
    let head = || n.client.head_object().bucket("cond").key("c");

    // If-Match.
    let ok = get().if_match(&etag).send().await.expect("If-Match hit");
    assert_eq!(body_bytes(ok.body).await, data);
    get().if_match("*").send().await.expect("If-Match *");
    assert_code(
        get()
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        412,
        "PreconditionFailed",
    );
    assert_error(
        head()
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        412,
        None,
    );
    // If-None-Match: a match is 304 Not Modified (no body), for GET and HEAD.
    assert_error(get().if_none_match(&etag).send().await, 304, None);
    assert_error(head().if_none_match(&etag).send().await, 304, None);
    assert_error(get().if_none_match("*").send().await, 304, None);
    get()
        .if_none_match("\"0123456789abcdef0123456789abcdef\"")
        .send()
        .await
        .expect("If-None-Match miss");
    // If-Modified-Since / If-Unmodified-Since, to the second.
    assert_error(get().if_modified_since(lm).send().await, 304, None);
    get()
        .if_modified_since(before)
        .send()
        .await
        .expect("modified since an hour before");
    assert_code(
        get().if_unmodified_since(before).send().await,
        412,
        "PreconditionFailed",
    );
    assert_error(head().if_unmodified_since(before).send().await, 412, None);
    get()
        .if_unmodified_since(lm)
        .send()
        .await
        .expect("unmodified since its own time");
    // S3's documented precedence: If-Match true wins over If-Unmodified-Since false, and
    // If-None-Match false wins over If-Modified-Since true (304).
    get()
        .if_match(&etag)
        .if_unmodified_since(before)
        .send()
        .await
        .expect("If-Match beats If-Unmodified-Since");
    assert_error(
        get()
            .if_none_match(&etag)
            .if_modified_since(before)
            .send()
            .await,
        304,
        None,
    );
    // Conditions are checked before the range.
    assert_code(
        get()
            .range("bytes=5000-")
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await,
        412,
        "PreconditionFailed",
    );
    // A 304 carries the ETag.
    let e = get().if_none_match(&etag).send().await.expect_err("304");
    let etag_header = e
        .raw_response()
        .and_then(|r| r.headers().get("etag"))
        .map(str::to_owned);
    assert_eq!(etag_header.as_deref(), Some(etag.as_str()));
}

async fn conditional_put(target: Target) {
    let n = TestNode::start(target);
    n.bucket("cput").await;
    let first = pattern(100, 6);
    // If-None-Match: * creates only when absent.
    n.client
        .put_object()
        .bucket("cput")
        .key("k")
        .if_none_match("*")
        .body(ByteStream::from(first.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("create-only put: {}", show(&e)));
    assert_code(
        n.client
            .put_object()
            .bucket("cput")
            .key("k")
            .if_none_match("*")
            .body(ByteStream::from(pattern(50, 7)))
            .send()
            .await,
        412,
        "PreconditionFailed",
    );
    assert_eq!(n.get("cput", "k").await, first);
    // If-Match: replaces only the version it names.
    assert_code(
        n.client
            .put_object()
            .bucket("cput")
            .key("k")
            .if_match("\"0123456789abcdef0123456789abcdef\"")
            .body(ByteStream::from(pattern(50, 8)))
            .send()
            .await,
        412,
        "PreconditionFailed",
    );
    assert_eq!(n.get("cput", "k").await, first);
    let second = pattern(60, 9);
    n.client
        .put_object()
        .bucket("cput")
        .key("k")
        .if_match(etag_of(&first))
        .body(ByteStream::from(second.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("If-Match put: {}", show(&e)));
    assert_eq!(n.get("cput", "k").await, second);
    // If-Match on a key that does not exist: 404 NoSuchKey, as S3 documents.
    assert_code(
        n.client
            .put_object()
            .bucket("cput")
            .key("absent")
            .if_match(etag_of(&first))
            .body(ByteStream::from(pattern(5, 1)))
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    assert_code(
        n.client
            .head_object()
            .bucket("cput")
            .key("absent")
            .send()
            .await,
        404,
        "NotFound",
    );
}

async fn response_overrides(target: Target) {
    let n = TestNode::start(target);
    n.bucket("ovr").await;
    let data = pattern(64, 10);
    n.client
        .put_object()
        .bucket("ovr")
        .key("o")
        .content_type("text/plain")
        .cache_control("no-cache")
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .expect("put");
    let out = n
        .client
        .get_object()
        .bucket("ovr")
        .key("o")
        .response_content_type("application/x-override")
        .response_content_disposition("attachment; filename*=UTF-8''%C3%BCber.bin")
        .response_cache_control("max-age=5")
        .response_content_encoding("x-custom")
        .response_content_language("de")
        .response_expires(DateTime::from_secs(1_700_000_000))
        .send()
        .await
        .unwrap_or_else(|e| panic!("get with overrides: {}", show(&e)));
    assert_eq!(out.content_type(), Some("application/x-override"));
    assert_eq!(
        out.content_disposition(),
        Some("attachment; filename*=UTF-8''%C3%BCber.bin")
    );
    assert_eq!(out.cache_control(), Some("max-age=5"));
    assert_eq!(out.content_encoding(), Some("x-custom"));
    assert_eq!(out.content_language(), Some("de"));
    assert_eq!(out.expires_string(), Some("Tue, 14 Nov 2023 22:13:20 GMT"));
    assert_eq!(body_bytes(out.body).await, data);
    // A non-ASCII override comes back as UTF-8 or RFC 2047-encoded, never mangled.
    let out = n
        .client
        .get_object()
        .bucket("ovr")
        .key("o")
        .response_content_disposition("inline; filename=\"über.bin\"")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get with a non-ASCII override: {}", show(&e)));
    let cd = out.content_disposition().expect("Content-Disposition");
    assert_eq!(
        decode_rfc2047(cd),
        "inline; filename=\"über.bin\"",
        "{cd:?}"
    );
    // Overrides do not change what is stored.
    let head = n
        .client
        .head_object()
        .bucket("ovr")
        .key("o")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_type(), Some("text/plain"));
    assert_eq!(head.cache_control(), Some("no-cache"));
}

async fn copy_with_copy_and_replace(target: Target) {
    let n = TestNode::start(target);
    n.bucket("src").await;
    n.bucket("dst").await;
    let data = pattern(40_000, 11);
    let src_key = "dir/source ü+1.bin";
    n.client
        .put_object()
        .bucket("src")
        .key(src_key)
        .content_type("application/x-src")
        .metadata("origin", "source")
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .expect("put source");
    let source = format!("src/{}", encode_key(src_key));

    let src_crc = n.crc32_of("src", src_key).await;
    // The SDK's default CRC32 was stored with the source.
    assert!(src_crc.is_some());

    // COPY (the default): data, content type, metadata and checksum come along. Behind the
    // proxy, "copied" is on the source's node and "copied elsewhere" is not.
    assert_ne!(n.apart(("src", src_key), ("dst", "copied")), Some(true));
    assert_ne!(
        n.apart(("src", src_key), ("dst", "copied elsewhere")),
        Some(false)
    );
    for key in ["copied", "copied elsewhere"] {
        let out = n
            .client
            .copy_object()
            .bucket("dst")
            .key(key)
            .copy_source(&source)
            .metadata("ignored", "yes")
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy to {key}: {}", show(&e)));
        let res = out.copy_object_result().expect("CopyObjectResult");
        assert_eq!(res.e_tag(), Some(etag_of(&data).as_str()));
        assert!(res.last_modified().is_some());
        assert_eq!(n.crc32_of("dst", key).await, src_crc, "{key}");
        let head = n.head("dst", key).await;
        assert_eq!(head.content_type(), Some("application/x-src"));
        let meta = head.metadata().cloned().unwrap_or_default();
        assert_eq!(meta.get("origin").map(String::as_str), Some("source"));
        assert!(!meta.contains_key("ignored"), "{meta:?}");
        assert_eq!(n.get("dst", key).await, data);
    }

    // REPLACE: metadata and content headers from the request.
    n.client
        .copy_object()
        .bucket("dst")
        .key("replaced")
        .copy_source(&source)
        .metadata_directive(MetadataDirective::Replace)
        .content_type("text/x-new")
        .metadata("fresh", "1")
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy replace: {}", show(&e)));
    let head = n.head("dst", "replaced").await;
    assert_eq!(head.content_type(), Some("text/x-new"));
    let meta = head.metadata().cloned().unwrap_or_default();
    assert_eq!(meta.get("fresh").map(String::as_str), Some("1"));
    assert!(!meta.contains_key("origin"), "{meta:?}");
    assert_eq!(head.content_length(), Some(40_000));
    assert_eq!(n.get("dst", "replaced").await, data);

    // Copying an object onto itself needs REPLACE.
    assert_code(
        n.client
            .copy_object()
            .bucket("src")
            .key(src_key)
            .copy_source(&source)
            .send()
            .await,
        400,
        "InvalidRequest",
    );
    n.client
        .copy_object()
        .bucket("src")
        .key(src_key)
        .copy_source(&source)
        .metadata_directive(MetadataDirective::Replace)
        .metadata("origin", "rewritten")
        .send()
        .await
        .unwrap_or_else(|e| panic!("self copy with REPLACE: {}", show(&e)));
    let head = n
        .client
        .head_object()
        .bucket("src")
        .key(src_key)
        .send()
        .await
        .expect("head self copy");
    let meta = head.metadata().cloned().unwrap_or_default();
    assert_eq!(meta.get("origin").map(String::as_str), Some("rewritten"));
    assert_eq!(n.get("src", src_key).await, data);

    // The source may be written with a leading slash; the copy is independent of it.
    n.client
        .copy_object()
        .bucket("dst")
        .key("slash")
        .copy_source(format!("/{source}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy with leading slash: {}", show(&e)));
    n.client
        .delete_object()
        .bucket("src")
        .key(src_key)
        .send()
        .await
        .expect("delete source");
    assert_eq!(n.get("dst", "slash").await, data);
}

async fn copy_source_conditions_and_errors(target: Target) {
    let n = TestNode::start(target);
    n.bucket("ccond").await;
    let data = pattern(500, 12);
    let etag = n.put("ccond", "s", data.clone()).await;
    let lm = n
        .client
        .head_object()
        .bucket("ccond")
        .key("s")
        .send()
        .await
        .expect("head")
        .last_modified()
        .copied()
        .expect("Last-Modified");
    let before = DateTime::from_secs(lm.secs() - 3600);
    let copy = || {
        n.client
            .copy_object()
            .bucket("ccond")
            .key("d")
            .copy_source("ccond/s")
    };
    let other = "\"0123456789abcdef0123456789abcdef\"";

    assert_code(
        copy().copy_source_if_match(other).send().await,
        412,
        "PreconditionFailed",
    );
    assert_code(
        copy().copy_source_if_none_match(&etag).send().await,
        412,
        "PreconditionFailed",
    );
    assert_code(
        copy().copy_source_if_modified_since(lm).send().await,
        412,
        "PreconditionFailed",
    );
    assert_code(
        copy().copy_source_if_unmodified_since(before).send().await,
        412,
        "PreconditionFailed",
    );
    // None of them wrote anything.
    assert_code(
        n.client.get_object().bucket("ccond").key("d").send().await,
        404,
        "NoSuchKey",
    );
    copy()
        .copy_source_if_match(&etag)
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy if match: {}", show(&e)));
    copy()
        .copy_source_if_none_match(other)
        .copy_source_if_modified_since(before)
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy if none match: {}", show(&e)));
    // S3's precedence for copies: If-Match true and If-Unmodified-Since false copies.
    copy()
        .copy_source_if_match(&etag)
        .copy_source_if_unmodified_since(before)
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy if match + unmodified: {}", show(&e)));
    assert_eq!(n.get("ccond", "d").await, data);

    assert_code(
        n.client
            .copy_object()
            .bucket("ccond")
            .key("d2")
            .copy_source("ccond/missing")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    assert_code(
        n.client
            .copy_object()
            .bucket("ccond")
            .key("d2")
            .copy_source("nobucket/s")
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        n.client
            .copy_object()
            .bucket("nobucket")
            .key("d2")
            .copy_source("ccond/s")
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
}

async fn delete_object_and_missing_keys(target: Target) {
    let n = TestNode::start(target);
    n.bucket("del").await;
    n.put("del", "gone", b"bye".to_vec()).await;
    n.client
        .delete_object()
        .bucket("del")
        .key("gone")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    assert_code(
        n.client.get_object().bucket("del").key("gone").send().await,
        404,
        "NoSuchKey",
    );
    // Deleting what is not there succeeds (204), as in S3.
    n.client
        .delete_object()
        .bucket("del")
        .key("never-was")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete missing: {}", show(&e)));
    let raw = http::http_request(n.addr, "DELETE", "/del/x", &[], b"");
    assert_eq!(raw.status, 403, "unsigned DELETE");
}

/// DeleteObject with `If-Match`: only the object with that ETag goes (412 otherwise, 404 for
/// no object), in a plain bucket and in a versioned one (where it makes the delete marker).
async fn conditional_delete(target: Target) {
    let n = TestNode::start(target);
    for bucket in ["cdel", "cdelv"] {
        n.bucket(bucket).await;
        if bucket == "cdelv" {
            let on = VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build();
            n.client
                .put_bucket_versioning()
                .bucket(bucket)
                .versioning_configuration(on)
                .send()
                .await
                .unwrap_or_else(|e| panic!("versioning: {}", show(&e)));
        }
        let data = pattern(300, 4);
        n.put(bucket, "k", data.clone()).await;
        assert_code(
            n.client
                .delete_object()
                .bucket(bucket)
                .key("k")
                .if_match("\"0123456789abcdef0123456789abcdef\"")
                .send()
                .await,
            412,
            "PreconditionFailed",
        );
        assert_eq!(n.get(bucket, "k").await, data);
        n.client
            .delete_object()
            .bucket(bucket)
            .key("k")
            .if_match(etag_of(&data))
            .send()
            .await
            .unwrap_or_else(|e| panic!("If-Match delete: {}", show(&e)));
        assert_code(
            n.client.get_object().bucket(bucket).key("k").send().await,
            404,
            "NoSuchKey",
        );
        assert_code(
            n.client
                .delete_object()
                .bucket(bucket)
                .key("k")
                .if_match(etag_of(&data))
                .send()
                .await,
            404,
            "NoSuchKey",
        );
    }
}

fn ids(keys: &[&str]) -> Vec<ObjectIdentifier> {
    keys.iter()
        .map(|k| {
            ObjectIdentifier::builder()
                .key(*k)
                .build()
                .expect("identifier")
        })
        .collect()
}

async fn delete_objects_verbose_and_quiet(target: Target) {
    let n = TestNode::start(target);
    n.bucket("multi").await;
    for k in ["a", "b", "c", "d/e", "f g&<h>", "keep"] {
        n.put("multi", k, k.as_bytes().to_vec()).await;
    }
    let out = n
        .client
        .delete_objects()
        .bucket("multi")
        .delete(
            Delete::builder()
                .set_objects(Some(ids(&["a", "b", "d/e", "missing", "f g&<h>"])))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    let deleted: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
    // A key that does not exist is reported deleted too; all in the request's order (behind
    // the proxy too, whose nodes each delete some of them).
    assert_eq!(deleted, ["a", "b", "d/e", "missing", "f g&<h>"]);
    assert!(out.errors().is_empty(), "{:?}", out.errors());

    let quiet = n
        .client
        .delete_objects()
        .bucket("multi")
        .delete(
            Delete::builder()
                .set_objects(Some(ids(&["c", "also-missing"])))
                .quiet(true)
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("quiet delete: {}", show(&e)));
    assert!(quiet.deleted().is_empty(), "{:?}", quiet.deleted());
    assert!(quiet.errors().is_empty(), "{:?}", quiet.errors());

    let left = n
        .client
        .list_objects_v2()
        .bucket("multi")
        .send()
        .await
        .expect("list");
    let keys: Vec<&str> = left.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["keep"]);

    assert_code(
        n.client
            .delete_objects()
            .bucket("nobucket")
            .delete(
                Delete::builder()
                    .set_objects(Some(ids(&["a"])))
                    .build()
                    .expect("delete"),
            )
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
}

async fn awkward_keys(target: Target) {
    let n = TestNode::start(target);
    n.bucket("keys").await;
    let keys = [
        "a",
        "a/",
        "a/b",
        "a/b/",
        "with space",
        " leading and trailing ",
        "plus+sign",
        "percent%20literal",
        "question?mark",
        "hash#tag",
        "amp&semi;=eq",
        "quote\"'apostrophe",
        "<angle>",
        "ключ/日本語/✓",
        "emoji 🚀",
        "dir//double",
        "tilde~star*(paren)!",
        "comma,colon:at@dollar$",
        "back\\slash",
    ];
    for (i, k) in keys.iter().enumerate() {
        let body = format!("{i}:{k}").into_bytes();
        n.client
            .put_object()
            .bucket("keys")
            .key(*k)
            .body(ByteStream::from(body))
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {k:?}: {}", show(&e)));
    }
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            n.get("keys", k).await,
            format!("{i}:{k}").into_bytes(),
            "{k:?}"
        );
        n.client
            .head_object()
            .bucket("keys")
            .key(*k)
            .send()
            .await
            .unwrap_or_else(|e| panic!("head {k:?}: {}", show(&e)));
    }
    let listed = n
        .client
        .list_objects_v2()
        .bucket("keys")
        .send()
        .await
        .expect("list");
    let got: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    let mut want: Vec<&str> = keys.to_vec();
    want.sort_unstable();
    assert_eq!(got, want);
    // `a`, `a/` and `a/b` are different objects.
    n.client
        .delete_object()
        .bucket("keys")
        .key("a/")
        .send()
        .await
        .expect("delete a/");
    assert_eq!(n.get("keys", "a").await, b"0:a");
    assert_eq!(n.get("keys", "a/b").await, b"2:a/b");
    assert_code(
        n.client.get_object().bucket("keys").key("a/").send().await,
        404,
        "NoSuchKey",
    );
    // Keys longer than 1024 bytes are refused.
    assert_code(
        n.client
            .put_object()
            .bucket("keys")
            .key("k".repeat(1025))
            .send()
            .await,
        400,
        "KeyTooLongError",
    );
    n.put("keys", &"k".repeat(1024), b"max".to_vec()).await;
}

async fn content_md5_checked(target: Target) {
    use base64::Engine;
    use md5::{Digest, Md5};
    let n = TestNode::start(target);
    n.bucket("md5").await;
    let data = pattern(4096, 13);
    let good = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&data));
    n.client
        .put_object()
        .bucket("md5")
        .key("ok")
        .content_md5(&good)
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put with Content-MD5: {}", show(&e)));
    let wrong = base64::engine::general_purpose::STANDARD.encode(Md5::digest(b"other"));
    assert_code(
        n.client
            .put_object()
            .bucket("md5")
            .key("bad")
            .content_md5(&wrong)
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        400,
        "BadDigest",
    );
    assert_code(
        n.client
            .put_object()
            .bucket("md5")
            .key("bad")
            .content_md5("not base64!")
            .body(ByteStream::from(data.clone()))
            .send()
            .await,
        400,
        "InvalidDigest",
    );
    // A refused body leaves nothing behind.
    assert_code(
        n.client.get_object().bucket("md5").key("bad").send().await,
        404,
        "NoSuchKey",
    );
    assert_eq!(n.get("md5", "ok").await, data);
}

async fn metadata_size_limit(target: Target) {
    let n = TestNode::start(target);
    n.bucket("meta").await;
    // S3 counts the UTF-8 bytes of names (without `x-amz-meta-`) and values: 2 KB at most.
    let fits = "v".repeat(2048 - "name".len());
    n.client
        .put_object()
        .bucket("meta")
        .key("fits")
        .metadata("name", &fits)
        .send()
        .await
        .unwrap_or_else(|e| panic!("2 KB of metadata: {}", show(&e)));
    let head = n
        .client
        .head_object()
        .bucket("meta")
        .key("fits")
        .send()
        .await
        .expect("head");
    assert_eq!(head.metadata().and_then(|m| m.get("name")), Some(&fits));
    assert_code(
        n.client
            .put_object()
            .bucket("meta")
            .key("too-big")
            .metadata("name", format!("{fits}x"))
            .send()
            .await,
        400,
        "MetadataTooLarge",
    );
    assert_code(
        n.client
            .head_object()
            .bucket("meta")
            .key("too-big")
            .send()
            .await,
        404,
        "NotFound",
    );
}

async fn delete_objects_limit(target: Target) {
    let n = TestNode::start(target);
    n.bucket("many").await;
    let keys: Vec<String> = (0..1001).map(|i| format!("k{i}")).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    // At most 1000 keys per request.
    assert_code(
        n.client
            .delete_objects()
            .bucket("many")
            .delete(
                Delete::builder()
                    .set_objects(Some(ids(&refs)))
                    .build()
                    .expect("delete"),
            )
            .send()
            .await,
        400,
        "MalformedXML",
    );
    let out = n
        .client
        .delete_objects()
        .bucket("many")
        .delete(
            Delete::builder()
                .set_objects(Some(ids(&refs[..1000])))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete 1000: {}", show(&e)));
    assert_eq!(out.deleted().len(), 1000);
}
