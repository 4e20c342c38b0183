//! Object semantics over real TCP, on both runtimes: ranges, conditions, overrides, metadata,
//! integrity checks, conditional writes, copy, DeleteObjects.

use ferry_core::md5::{ETag, content_md5, md5};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::sigv4::EMPTY_SHA256;
use ferry_core::time::DateTime;
use ferry_server::RuntimeKind;

use crate::support::http::{Client, Payload};
use crate::support::node::Node;

on_both_runtimes!(
    ranges,
    conditional_reads,
    response_overrides_and_metadata,
    integrity_checks,
    bad_digest_for_every_algorithm,
    conditional_writes,
    copy_object,
    delete_objects,
    internal_errors_say_nothing_inside,
);

fn setup(rt: RuntimeKind, bucket: &str) -> (Node, Client) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put(&format!("/{bucket}"), b"").status, 200);
    (node, c)
}

fn ranges(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "rng");
    let body: Vec<u8> = (0..600_000u32).map(|i| (i % 241) as u8).collect();
    assert_eq!(c.put("/rng/o", &body).status, 200);
    let cases: [(&str, usize, usize); 5] = [
        ("bytes=0-9", 0, 9),
        ("bytes=599990-", 599_990, 599_999),
        ("bytes=-5", 599_995, 599_999),
        ("bytes=100-999999", 100, 599_999),
        // Across the 256 KiB buffer boundary.
        ("bytes=262000-263000", 262_000, 263_000),
    ];
    for (range, first, last) in cases {
        let r = c.request("GET", "/rng/o", &[("Range", range)], b"");
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.body, body[first..=last], "{range}");
        let want = format!("bytes {first}-{last}/600000");
        assert_eq!(r.header("content-range"), Some(want.as_str()), "{range}");
        let h = c.request("HEAD", "/rng/o", &[("Range", range)], b"");
        assert_eq!(h.status, 206);
        let len = (last - first + 1).to_string();
        assert_eq!(h.header("content-length"), Some(len.as_str()));
    }
    // Unsatisfiable: 416 with the object's length.
    let r = c.request("GET", "/rng/o", &[("Range", "bytes=600000-")], b"");
    r.expect_error(416, "InvalidRange");
    assert_eq!(r.header("content-range"), Some("bytes */600000"));
    // Ignored as S3 does: malformed or multiple ranges give the whole object.
    for range in ["bytes=5-1", "items=0-1", "bytes=0-1,4-5"] {
        let r = c.request("GET", "/rng/o", &[("Range", range)], b"");
        assert_eq!((r.status, r.body.len()), (200, body.len()), "{range}");
    }
    // A single-part object is its own part 1.
    let r = c.get("/rng/o?partNumber=1");
    assert_eq!((r.status, r.body.len()), (206, body.len()));
    assert_eq!(r.header("x-amz-mp-parts-count"), None);
    c.get("/rng/o?partNumber=2")
        .expect_error(416, "InvalidPartNumber");
    // Range with partNumber is refused.
    c.request("GET", "/rng/o?partNumber=1", &[("Range", "bytes=0-1")], b"")
        .expect_error(400, "InvalidRequest");
}

fn conditional_reads(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "cond");
    let r = c.put("/cond/o", b"hello");
    let etag = r.header("etag").unwrap().to_owned();
    let r = c.get("/cond/o");
    let modified = r.header("last-modified").unwrap().to_owned();
    let t = DateTime::parse_http(&modified).unwrap().to_unix();
    let before = DateTime::from_unix(t - 3600).http().to_string();
    let after = DateTime::from_unix(t + 3600).http().to_string();
    let other = "\"00000000000000000000000000000000\"";
    let cases: [(&str, &str, u16); 8] = [
        ("If-Match", &etag, 200),
        ("If-Match", other, 412),
        ("If-None-Match", &etag, 304),
        ("If-None-Match", other, 200),
        ("If-Modified-Since", &after, 304),
        ("If-Modified-Since", &before, 200),
        ("If-Unmodified-Since", &before, 412),
        ("If-Unmodified-Since", &after, 200),
    ];
    for (name, value, status) in cases {
        for method in ["GET", "HEAD"] {
            let r = c.request(method, "/cond/o", &[(name, value)], b"");
            assert_eq!(r.status, status, "{method} {name}: {value}");
            match status {
                304 => {
                    assert!(r.body.is_empty());
                    assert_eq!(r.header("etag"), Some(etag.as_str()));
                }
                412 if method == "GET" => r.expect_error(412, "PreconditionFailed"),
                200 if method == "GET" => assert_eq!(r.body, b"hello"),
                _ => {}
            }
        }
    }
    // If-Match decides alone over If-Unmodified-Since (RFC 9110, as S3).
    let r = c.request(
        "GET",
        "/cond/o",
        &[("If-Match", &etag), ("If-Unmodified-Since", &before)],
        b"",
    );
    assert_eq!(r.status, 200);
}

fn response_overrides_and_metadata(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "meta");
    let r = c.request(
        "PUT",
        "/meta/o",
        &[
            ("Content-Type", "text/plain"),
            ("Content-Disposition", "inline"),
            ("Content-Language", "en"),
            ("Expires", "Thu, 01 Dec 1994 16:00:00 GMT"),
            ("x-amz-meta-ascii", "plain"),
            ("x-amz-meta-encoded", "=?UTF-8?B?w6l0w6k=?="),
        ],
        b"x",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get(
        "/meta/o?response-content-type=application/json&response-cache-control=max-age%3D1\
         &response-content-disposition=attachment",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("cache-control"), Some("max-age=1"));
    assert_eq!(r.header("content-disposition"), Some("attachment"));
    assert_eq!(r.header("content-language"), Some("en"));
    assert_eq!(r.header("expires"), Some("Thu, 01 Dec 1994 16:00:00 GMT"));
    assert_eq!(r.header("x-amz-meta-ascii"), Some("plain"));
    // Stored decoded, returned RFC 2047-encoded, as S3 does for non-ASCII values.
    assert_eq!(r.header("x-amz-meta-encoded"), Some("=?UTF-8?B?w6l0w6k=?="));
    // Raw UTF-8 in a header value is accepted and comes back encoded too.
    let mut req = c.encode(
        "PUT",
        "/meta/raw",
        &[("x-amz-meta-raw", "café")],
        b"y",
        Payload::Signed,
    );
    assert!(String::from_utf8_lossy(&req).contains("café"));
    c.send_raw(&req);
    assert_eq!(c.read_response(false).status, 200);
    req.clear();
    let r = c.get("/meta/raw");
    assert_eq!(r.header("x-amz-meta-raw"), Some("=?UTF-8?B?Y2Fmw6k=?="));
    // 2 KB of user metadata at most.
    let big = "v".repeat(2100);
    c.request("PUT", "/meta/big", &[("x-amz-meta-big", &big)], b"z")
        .expect_error(400, "MetadataTooLarge");
}

fn integrity_checks(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "integ");
    let body = b"the quick brown fox";
    let good = content_md5(&md5(body)).to_string();
    let wrong = content_md5(&md5(b"other")).to_string();
    assert_eq!(
        c.request("PUT", "/integ/a", &[("Content-MD5", &good)], body)
            .status,
        200
    );
    c.request("PUT", "/integ/b", &[("Content-MD5", &wrong)], body)
        .expect_error(400, "BadDigest");
    c.request("PUT", "/integ/b", &[("Content-MD5", "not base64!")], body)
        .expect_error(400, "InvalidDigest");
    c.get("/integ/b").expect_error(404, "NoSuchKey");
    // x-amz-checksum-* headers are verified and stored.
    let crc = ChecksumAlgorithm::Crc32c.checksum(body).to_base64();
    let r = c.request(
        "PUT",
        "/integ/c",
        &[("x-amz-checksum-crc32c", crc.as_str())],
        body,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-checksum-crc32c"), Some(crc.as_str()));
    let r = c.request(
        "HEAD",
        "/integ/c",
        &[("x-amz-checksum-mode", "ENABLED")],
        b"",
    );
    assert_eq!(r.header("x-amz-checksum-crc32c"), Some(crc.as_str()));
    let bad = ChecksumAlgorithm::Crc32c.checksum(b"nope").to_base64();
    c.request(
        "PUT",
        "/integ/d",
        &[("x-amz-checksum-crc32c", bad.as_str())],
        body,
    )
    .expect_error(400, "BadDigest");
    // A checksum the client asks the server to compute.
    let r = c.request(
        "PUT",
        "/integ/e",
        &[("x-amz-checksum-algorithm", "SHA256")],
        body,
    );
    assert_eq!(r.status, 200);
    let sha = ChecksumAlgorithm::Sha256.checksum(body).to_base64();
    assert_eq!(r.header("x-amz-checksum-sha256"), Some(sha.as_str()));
    // x-amz-content-sha256 must match the body.
    let (mut hs, _) = c.sign(
        "PUT",
        "/integ/f",
        &[],
        "0000000000000000000000000000000000000000000000000000000000000000",
    );
    hs.push(("Content-Length".into(), body.len().to_string()));
    let mut raw = b"PUT /integ/f HTTP/1.1\r\n".to_vec();
    for (n, v) in &hs {
        raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    raw.extend_from_slice(body);
    c.send_raw(&raw);
    c.read_response(false)
        .expect_error(400, "XAmzContentSHA256Mismatch");
    c.get("/integ/f").expect_error(404, "NoSuchKey");
    // A corrupted aws-chunked trailer checksum.
    let mut req = c.encode("PUT", "/integ/g", &[], body, Payload::ChunkedUnsignedCrc32);
    // The fifth of eight base64 characters of the CRC32 (a full 6-bit digit).
    let at = req.len() - 8;
    req[at] = if req[at] == b'A' { b'B' } else { b'A' };
    c.send_raw(&req);
    c.read_response(false).expect_error(400, "BadDigest");
    let mut c = Client::connect(c.addr);
    c.get("/integ/g").expect_error(404, "NoSuchKey");
    // PUT without any length.
    let (hs, _) = c.sign("PUT", "/integ/h", &[], EMPTY_SHA256);
    let mut raw = b"PUT /integ/h HTTP/1.1\r\n".to_vec();
    for (n, v) in &hs {
        raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    c.send_raw(&raw);
    c.read_response(false)
        .expect_error(411, "MissingContentLength");
}

/// A well-formed checksum of other bytes is `BadDigest` for every algorithm, as a header (with
/// a signed or an unsigned payload) and as an aws-chunked trailer; nothing is stored.
fn bad_digest_for_every_algorithm(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "bad");
    let body = b"the bytes that were sent";
    for alg in ChecksumAlgorithm::ALL {
        let wrong = alg.checksum(b"other bytes").to_base64();
        let header = alg.header_name();
        for payload in [Payload::Signed, Payload::Unsigned] {
            let r = c.send("PUT", "/bad/h", &[(header, wrong.as_str())], body, payload);
            r.expect_error(400, "BadDigest");
        }
        let len = body.len().to_string();
        let (mut hs, _) = c.sign(
            "PUT",
            "/bad/t",
            &[
                ("content-encoding", "aws-chunked"),
                ("x-amz-decoded-content-length", len.as_str()),
                ("x-amz-trailer", header),
            ],
            "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        );
        let mut framed = format!("{:x}\r\n", body.len()).into_bytes();
        framed.extend_from_slice(body);
        framed.extend_from_slice(format!("\r\n0\r\n{header}:{wrong}\r\n\r\n").as_bytes());
        hs.push(("Content-Length".into(), framed.len().to_string()));
        let mut raw = b"PUT /bad/t HTTP/1.1\r\n".to_vec();
        for (n, v) in &hs {
            raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        raw.extend_from_slice(&framed);
        c.send_raw(&raw);
        c.read_response(false).expect_error(400, "BadDigest");
        c = Client::connect(c.addr);
    }
    c.get("/bad/h").expect_error(404, "NoSuchKey");
    c.get("/bad/t").expect_error(404, "NoSuchKey");
}

fn conditional_writes(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "cwr");
    assert_eq!(
        c.request("PUT", "/cwr/o", &[("If-None-Match", "*")], b"first")
            .status,
        200
    );
    c.request("PUT", "/cwr/o", &[("If-None-Match", "*")], b"second")
        .expect_error(412, "PreconditionFailed");
    let etag = ETag::single(&md5(b"first")).to_string();
    let r = c.request("PUT", "/cwr/o", &[("If-Match", &etag)], b"third");
    assert_eq!(r.status, 200);
    c.request("PUT", "/cwr/o", &[("If-Match", &etag)], b"fourth")
        .expect_error(412, "PreconditionFailed");
    c.request("PUT", "/cwr/missing", &[("If-Match", &etag)], b"x")
        .expect_error(404, "NoSuchKey");
    assert_eq!(c.get("/cwr/o").body, b"third");
}

fn copy_object(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "cpy");
    assert_eq!(c.put("/cpy2", b"").status, 200);
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 13) as u8).collect();
    let r = c.request(
        "PUT",
        "/cpy/src",
        &[("Content-Type", "text/x-src"), ("x-amz-meta-a", "1")],
        &body,
    );
    let etag = r.header("etag").unwrap().to_owned();
    let r = c.request(
        "PUT",
        "/cpy2/dst",
        &[("x-amz-copy-source", "/cpy/src")],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.xml_value("ETag").as_deref(),
        Some(etag.replace('"', "&quot;").as_str())
    );
    let r = c.get("/cpy2/dst");
    assert_eq!(r.body, body);
    assert_eq!(r.header("content-type"), Some("text/x-src"));
    assert_eq!(r.header("x-amz-meta-a"), Some("1"));
    let r = c.request(
        "PUT",
        "/cpy2/dst2",
        &[
            ("x-amz-copy-source", "cpy/src"),
            ("x-amz-metadata-directive", "REPLACE"),
            ("Content-Type", "text/x-new"),
        ],
        b"",
    );
    assert_eq!(r.status, 200);
    let r = c.get("/cpy2/dst2");
    assert_eq!(r.header("content-type"), Some("text/x-new"));
    assert_eq!(r.header("x-amz-meta-a"), None);
    // Copy conditions on the source.
    c.request(
        "PUT",
        "/cpy2/dst3",
        &[
            ("x-amz-copy-source", "/cpy/src"),
            ("x-amz-copy-source-if-none-match", &etag),
        ],
        b"",
    )
    .expect_error(412, "PreconditionFailed");
    c.request(
        "PUT",
        "/cpy2/dst3",
        &[("x-amz-copy-source", "/cpy/none")],
        b"",
    )
    .expect_error(404, "NoSuchKey");
    c.request("PUT", "/cpy/src", &[("x-amz-copy-source", "/cpy/src")], b"")
        .expect_error(400, "InvalidRequest");
}

fn delete_objects(rt: RuntimeKind) {
    let (_node, mut c) = setup(rt, "del");
    for k in ["a", "b", "c"] {
        assert_eq!(c.put(&format!("/del/{k}"), b"x").status, 200);
    }
    let xml = b"<Delete><Object><Key>a</Key></Object><Object><Key>b</Key></Object>\
                <Object><Key>zzz</Key></Object></Delete>";
    let md5h = content_md5(&md5(xml)).to_string();
    let r = c.request("POST", "/del?delete", &[("Content-MD5", &md5h)], xml);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("Key"), ["a", "b", "zzz"]);
    let r = c.get("/del?list-type=2");
    assert_eq!(r.xml_values("Key"), ["c"]);
    // Quiet: only errors are reported.
    let xml = format!(
        "<Delete><Quiet>true</Quiet><Object><Key>c</Key></Object><Object><Key>{}</Key></Object></Delete>",
        "k".repeat(1025)
    );
    let crc = ChecksumAlgorithm::Crc32
        .checksum(xml.as_bytes())
        .to_base64();
    let r = c.request(
        "POST",
        "/del?delete",
        &[("x-amz-checksum-crc32", crc.as_str())],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("Code"), ["KeyTooLongError"]);
    assert!(!r.text().contains("<Deleted>"));
    // More than 1000 keys.
    let many = format!(
        "<Delete>{}</Delete>",
        "<Object><Key>k</Key></Object>".repeat(1001)
    );
    let md5h = content_md5(&md5(many.as_bytes())).to_string();
    c.request(
        "POST",
        "/del?delete",
        &[("Content-MD5", &md5h)],
        many.as_bytes(),
    )
    .expect_error(400, "MalformedXML");
    // No integrity header.
    c.request(
        "POST",
        "/del?delete",
        &[],
        b"<Delete><Object><Key>c</Key></Object></Delete>",
    )
    .expect_error(400, "InvalidRequest");
    let bad = content_md5(&md5(b"other")).to_string();
    c.request(
        "POST",
        "/del?delete",
        &[("Content-MD5", &bad)],
        xml.as_bytes(),
    )
    .expect_error(400, "BadDigest");
}

/// A 500 carries S3's generic message and the request id; what went wrong inside (here the OS
/// error of a data file gone from under the store) is for the log, not the client.
fn internal_errors_say_nothing_inside(rt: RuntimeKind) {
    let (node, mut c) = setup(rt, "int");
    assert_eq!(c.put("/int/k", b"some bytes").status, 200);
    let data = node.dir.path().join("data");
    for fan in std::fs::read_dir(&data).unwrap() {
        for file in std::fs::read_dir(fan.unwrap().path()).unwrap() {
            std::fs::remove_file(file.unwrap().path()).unwrap();
        }
    }
    let r = c.get("/int/k");
    assert_eq!(r.status, 500, "{r:?}");
    assert_eq!(r.error_code().as_deref(), Some("InternalError"));
    let body = r.text();
    assert!(
        body.contains("<Message>We encountered an internal error. Please try again.</Message>"),
        "{body}"
    );
    assert!(
        !body.contains("os error") && !body.contains("No such file"),
        "{body}"
    );
    let id = r.header("x-amz-request-id").expect("request id");
    assert!(
        body.contains(&format!("<RequestId>{id}</RequestId>")),
        "{body}"
    );
}
