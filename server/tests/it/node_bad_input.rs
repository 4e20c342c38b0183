//! Bad input over real TCP, on both runtimes: every case gets its S3 error with an XML body,
//! broken framing closes the connection, and the node keeps serving afterwards.

use ferry_core::http::Header;
use ferry_core::s3::sigv4::{Credentials, NoKeyCache, RequestParts, UNSIGNED_PAYLOAD, presign};
use ferry_core::s3::xml::ErrorResponse;
use ferry_server::RuntimeKind;

use crate::support;
use crate::support::REGION;
use crate::support::http::{Payload, Response, now};
use crate::support::node::Node;

on_both_runtimes!(
    malformed_heads_get_400_and_close,
    oversized_heads_get_431,
    smuggling_shapes_get_400_and_close,
    bad_chunk_sizes_get_400_and_close,
    authentication_failures,
    presigned_urls,
    invalid_names_and_keys,
    unsupported_operations,
);

/// An error response with an XML body carrying the code and the request id.
fn assert_xml_error(r: &Response, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.text());
    let e = ErrorResponse::parse_xml(&r.body)
        .unwrap_or_else(|e| panic!("not an S3 error document ({e}): {}", r.text()));
    assert_eq!(e.code, code);
    let id = r.header("x-amz-request-id").expect("request id");
    assert_eq!(e.request_id.as_deref(), Some(id));
}

/// The node still answers a valid signed request, on a new connection.
fn still_serving(node: &Node) {
    let mut c = node.client();
    let r = c.get("/");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<ListAllMyBucketsResult"));
}

/// Send `bytes` on a new connection: the one response, which must close the connection.
fn one_response_then_close(node: &Node, bytes: &[u8]) -> Response {
    let mut c = node.client();
    c.send_raw(bytes);
    let r = c.read_response(false);
    assert_eq!(
        r.header("connection"),
        Some("close"),
        "{:?}",
        String::from_utf8_lossy(bytes)
    );
    assert!(c.is_closed(), "connection left open after {r:?}");
    r
}

fn malformed_heads_get_400_and_close(rt: RuntimeKind) {
    let node = Node::start(rt);
    let cases: [&[u8]; 6] = [
        b"GET / HTTP/1.1\nHost: a\r\n\r\n",
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
        b"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
    ];
    for bytes in cases {
        let r = one_response_then_close(&node, bytes);
        assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(bytes));
        assert!(r.error_code().is_some(), "{}", r.text());
        assert!(r.header("x-amz-request-id").is_some());
    }
    still_serving(&node);
}

fn oversized_heads_get_431(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut head = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    while head.len() < 70_000 {
        head.extend_from_slice(
            b"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    head.extend_from_slice(b"\r\n");
    let r = one_response_then_close(&node, &head);
    assert_xml_error(&r, 431, "RequestHeaderSectionTooLarge");
    // A target longer than the limit.
    let long = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(9000));
    let r = one_response_then_close(&node, long.as_bytes());
    assert_eq!(r.status, 414);
    still_serving(&node);
}

fn smuggling_shapes_get_400_and_close(rt: RuntimeKind) {
    let node = Node::start(rt);
    let cases: [&[u8]; 5] = [
        b"PUT /b/k HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        b"PUT /b/k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ];
    for bytes in cases {
        // A request smuggled behind the first one must never be answered.
        let mut all = bytes.to_vec();
        all.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
        let r = one_response_then_close(&node, &all);
        assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(bytes));
        assert!(r.error_code().is_some(), "{}", r.text());
    }
    still_serving(&node);
}

fn bad_chunk_sizes_get_400_and_close(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/chunky", b"").status, 200);
    for chunks in [
        &b"zz\r\nhello\r\n0\r\n\r\n"[..],
        b"5\r\nhelloXX0\r\n\r\n",
        b"ffffffffffffffffff\r\n",
        b"5;\x01\r\nhello\r\n0\r\n\r\n",
    ] {
        let mut c = node.client();
        let (hs, _) = c.sign("PUT", "/chunky/k", &[], UNSIGNED_PAYLOAD);
        let mut raw = b"PUT /chunky/k HTTP/1.1\r\n".to_vec();
        for (n, v) in &hs {
            raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
        raw.extend_from_slice(chunks);
        c.send_raw(&raw);
        let r = c.read_response(false);
        assert_eq!(
            r.status,
            400,
            "{:?}: {}",
            String::from_utf8_lossy(chunks),
            r.text()
        );
        assert!(r.error_code().is_some());
        assert_eq!(r.header("connection"), Some("close"));
        assert!(c.is_closed());
    }
    // Nothing was stored, and a well-formed chunked upload works.
    let mut c = node.client();
    c.get("/chunky/k").expect_error(404, "NoSuchKey");
    let (hs, _) = c.sign("PUT", "/chunky/k", &[], UNSIGNED_PAYLOAD);
    let mut raw = b"PUT /chunky/k HTTP/1.1\r\n".to_vec();
    for (n, v) in &hs {
        raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    raw.extend_from_slice(
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    );
    c.send_raw(&raw);
    assert_eq!(c.read_response(false).status, 200);
    assert_eq!(c.get("/chunky/k").body, b"hello world");
}

fn authentication_failures(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/authz", b"").status, 200);
    // No authentication at all.
    let host = c.host();
    c.send_raw(format!("GET /authz/k HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
    c.read_response(false).expect_error(403, "AccessDenied");
    // Wrong secret.
    c.credentials = Credentials::new(support::ACCESS_KEY, "not the secret");
    c.get("/authz").expect_error(403, "SignatureDoesNotMatch");
    // Unknown key id.
    c.credentials = Credentials::new("AKIDUNKNOWN", "whatever");
    c.get("/authz").expect_error(403, "InvalidAccessKeyId");
    // A signature that does not cover what is sent: a tampered header.
    c.credentials = Credentials::new(support::ACCESS_KEY, support::SECRET_KEY);
    let signed = c.encode(
        "GET",
        "/authz",
        &[("x-amz-meta-x", "a")],
        b"",
        Payload::Signed,
    );
    let tampered = String::from_utf8(signed)
        .unwrap()
        .replace("x-amz-meta-x: a", "x-amz-meta-x: b");
    c.send_raw(tampered.as_bytes());
    c.read_response(false)
        .expect_error(403, "SignatureDoesNotMatch");
    // A body that is not the one signed for a signed aws-chunked upload.
    let mut req = c.encode("PUT", "/authz/k", &[], b"payload!", Payload::ChunkedSigned);
    let at = req
        .windows(8)
        .position(|w| w == b"payload!")
        .expect("chunk data");
    req[at] = b'P';
    c.send_raw(&req);
    c.read_response(false)
        .expect_error(403, "SignatureDoesNotMatch");
    // The connection is still good after all of these.
    let mut c = node.client();
    c.get("/authz/k").expect_error(404, "NoSuchKey");
    // A clock too far off.
    let skewed = {
        let host = c.host();
        let hs = [Header {
            name: "Host",
            value: host.as_bytes(),
        }];
        let parts = RequestParts {
            method: "GET",
            path: "/authz",
            query: "",
            headers: &hs,
        };
        ferry_core::s3::sigv4::sign_request(
            &parts,
            ferry_core::s3::sigv4::EMPTY_SHA256,
            &c.credentials,
            REGION,
            now() - 3600,
            &mut NoKeyCache,
        )
        .unwrap()
    };
    let raw = format!(
        "GET /authz HTTP/1.1\r\nHost: {}\r\nx-amz-date: {}\r\nx-amz-content-sha256: {}\r\nAuthorization: {}\r\n\r\n",
        c.host(),
        skewed.x_amz_date,
        skewed.x_amz_content_sha256,
        skewed.authorization
    );
    c.send_raw(raw.as_bytes());
    c.read_response(false)
        .expect_error(403, "RequestTimeTooSkewed");
    // The wrong region.
    let wrong_region = c
        .encode("GET", "/authz", &[], b"", Payload::Signed)
        .iter()
        .map(|&b| b as char)
        .collect::<String>()
        .replace("/us-east-1/", "/eu-west-1/");
    c.send_raw(wrong_region.as_bytes());
    c.read_response(false)
        .expect_error(400, "AuthorizationHeaderMalformed");
    still_serving(&node);
}

fn presigned_urls(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/presg", b"").status, 200);
    assert_eq!(c.put("/presg/k", b"shared").status, 200);
    let host = c.host();
    let url = |method: &str, expires: u64, at: i64| {
        let hs = [Header {
            name: "host",
            value: host.as_bytes(),
        }];
        let parts = RequestParts {
            method,
            path: "/presg/k",
            query: "",
            headers: &hs,
        };
        let creds = Credentials::new(support::ACCESS_KEY, support::SECRET_KEY);
        let q = presign(&parts, &creds, REGION, at, expires, &mut NoKeyCache).unwrap();
        format!("/presg/k?{q}")
    };
    let get = url("GET", 300, now());
    c.send_raw(format!("GET {get} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
    let r = c.read_response(false);
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"shared"[..]),
        "{}",
        r.text()
    );
    // Expired.
    let old = url("GET", 60, now() - 3600);
    c.send_raw(format!("GET {old} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
    c.read_response(false).expect_error(403, "AccessDenied");
    // A presigned PUT carries an unsigned body.
    let put = url("PUT", 300, now());
    c.send_raw(
        format!("PUT {put} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 3\r\n\r\nnew").as_bytes(),
    );
    assert_eq!(c.read_response(false).status, 200);
    assert_eq!(c.get("/presg/k").body, b"new");
    // A presigned URL used for another method does not verify.
    c.send_raw(format!("DELETE {get} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
    c.read_response(false)
        .expect_error(403, "SignatureDoesNotMatch");
}

fn invalid_names_and_keys(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/names", b"").status, 200);
    for bucket in [
        "/Upper",
        "/ab",
        "/under_score",
        "/192.168.0.1",
        "/-dash",
        "/a..b",
    ] {
        c.put(bucket, b"").expect_error(400, "InvalidBucketName");
        c.get(&format!("{bucket}/key"))
            .expect_error(400, "InvalidBucketName");
    }
    let long = "k".repeat(1025);
    c.put(&format!("/names/{long}"), b"x")
        .expect_error(400, "KeyTooLongError");
    c.get(&format!("/names/{long}"))
        .expect_error(400, "KeyTooLongError");
    let max = "k".repeat(1024);
    assert_eq!(c.put(&format!("/names/{max}"), b"x").status, 200);
    // Bad percent-encoding: no signer produces it, so a signed request's target is swapped
    // for it (it fails before the signature is checked: there is no canonical form).
    let signed = c.encode("GET", "/names/okk", &[], b"", Payload::Signed);
    let raw = String::from_utf8(signed)
        .unwrap()
        .replacen("/names/okk", "/names/%zz", 1);
    c.send_raw(raw.as_bytes());
    c.read_response(false).expect_error(400, "InvalidArgument");
    // A key that is not UTF-8.
    c.get("/names/%ff%fe").expect_error(400, "InvalidArgument");
    // Bad query parameters.
    c.get("/names?list-type=3")
        .expect_error(400, "InvalidArgument");
    c.get("/names?max-keys=-1")
        .expect_error(400, "InvalidArgument");
    c.get("/names?list-type=2&continuation-token=%21%21")
        .expect_error(400, "InvalidArgument");
    c.get("/names/k?versionId=abc")
        .expect_error(400, "InvalidArgument");
    // The same connection still works.
    assert_eq!(c.get(&format!("/names/{max}")).body, b"x");
}

fn unsupported_operations(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/unsup", b"").status, 200);
    for (method, target) in [
        ("GET", "/unsup?notification"),
        ("POST", "/unsup?lifecycle"),
        ("GET", "/unsup?inventory"),
        ("POST", "/unsup/k?tagging"),
        // GetObjectAttributes is a GET on an object; nothing else takes ?attributes.
        ("PUT", "/unsup/k?attributes"),
        ("GET", "/unsup?attributes"),
        ("POST", "/unsup/k"),
        ("PATCH", "/unsup/k"),
        ("DELETE", "/"),
        ("BREW", "/unsup"),
    ] {
        let r = c.request(method, target, &[], b"");
        r.expect_error(501, "NotImplemented");
    }
    // HEAD errors carry the status and the request id, and no body.
    let r = c.request("HEAD", "/unsup?notification", &[], b"");
    assert_eq!(r.status, 501);
    assert!(r.header("x-amz-request-id").is_some());
    assert!(r.body.is_empty());
    assert_eq!(c.get("/unsup?list-type=2").status, 200);
}
