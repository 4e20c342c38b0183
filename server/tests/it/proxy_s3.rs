//! The proxy in front of three storage nodes, over real TCP: object operations (every body
//! framing, passthrough and re-signed), multipart, bucket fan-out, DeleteObjects across
//! backends, copies between backends (plaintext and encrypted), 100-continue and aborted
//! uploads.

use std::io::Write as _;

use ferry_core::md5::{ETag, md5};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_server::RuntimeKind;

use crate::support;
use crate::support::http::{self, Payload, plain_get};
use crate::support::proxy::{Auth, Setup};

on_both_runtimes!(
    objects_passthrough,
    objects_resigned,
    objects_with_node_keys,
    buckets_fan_out,
    delete_objects_across_backends,
    copy_across_backends,
    encrypted_with_node_keys,
);

fn body(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(31).wrapping_add(seed) % 251) as u8)
        .collect()
}

/// Every payload framing through the proxy; each object ends up on its placement's node,
/// byte for byte, with the trailer checksum stored there.
fn object_round_trips(s: &Setup) {
    let mut c = s.client();
    assert_eq!(c.put("/objs", b"").status, 200, "create bucket");
    let data = body(300_000, 7);
    for (i, payload) in [
        Payload::Signed,
        Payload::Unsigned,
        Payload::ChunkedUnsignedCrc32,
        Payload::ChunkedSigned,
        Payload::ChunkedSignedTrailer,
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("obj-{i}");
        let r = c.send(
            "PUT",
            &format!("/objs/{key}"),
            &[("x-amz-meta-n", "v")],
            &data,
            payload,
        );
        assert_eq!(r.status, 200, "{payload:?}: {}", r.text());
        assert_eq!(r.header("etag"), Some(ETag::single(&md5(&data)).as_str()));
        let r = c.get(&format!("/objs/{key}"));
        assert_eq!(r.status, 200);
        assert!(r.body == data, "{payload:?}: body differs");
        assert_eq!(r.header("x-amz-meta-n"), Some("v"));
        assert_eq!(r.header("content-encoding"), None, "{payload:?}");
        // Stored on the node placement picks, and only there.
        let home = s.node_of("objs", &key);
        for (n, node) in s.nodes.iter().enumerate() {
            let r = node.client().get(&format!("/objs/{key}"));
            let want = if n == home { 200 } else { 404 };
            assert_eq!(r.status, want, "{key} on node {n}");
        }
    }
    // Trailer checksums reach the node (the CRC32 one of obj-2, the CRC32C one of obj-4).
    for (key, alg, header) in [
        ("obj-2", ChecksumAlgorithm::Crc32, "x-amz-checksum-crc32"),
        ("obj-4", ChecksumAlgorithm::Crc32c, "x-amz-checksum-crc32c"),
    ] {
        let r = c.request(
            "GET",
            &format!("/objs/{key}"),
            &[("x-amz-checksum-mode", "ENABLED")],
            b"",
        );
        let want = alg.checksum(&data).to_base64();
        assert_eq!(r.header(header), Some(want.as_str()), "{key}");
    }
    // HEAD keeps the length; ranges and conditions pass through.
    let r = c.request("HEAD", "/objs/obj-0", &[], b"");
    assert_eq!(
        (r.status, r.header("content-length")),
        (200, Some("300000"))
    );
    let r = c.request("GET", "/objs/obj-1", &[("Range", "bytes=10-19")], b"");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, data[10..20]);
    let etag = ETag::single(&md5(&data));
    let r = c.request(
        "GET",
        "/objs/obj-1",
        &[("If-None-Match", etag.as_str())],
        b"",
    );
    assert_eq!(r.status, 304);
    c.get("/objs/missing").expect_error(404, "NoSuchKey");
    // A wrong body hash is refused and nothing is stored.
    let mut bad = c.encode("PUT", "/objs/bad", &[], &data, Payload::Signed);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    c.send_raw(&bad);
    let r = c.read_response(false);
    assert_eq!(r.status, 400, "{}", r.text());
    let mut c = s.client();
    c.get("/objs/bad").expect_error(404, "NoSuchKey");
    // Bad signatures never reach a node.
    let mut wrong = s.client();
    wrong.credentials =
        ferry_core::s3::sigv4::Credentials::new(support::ACCESS_KEY, "not-the-secret");
    wrong
        .get("/objs/obj-0")
        .expect_error(403, "SignatureDoesNotMatch");
    // An empty object keeps its Content-Length: 0 on the way.
    assert_eq!(c.put("/objs/empty", b"").status, 200);
    let r = c.get("/objs/empty");
    assert_eq!((r.status, r.body.len()), (200, 0));
    // Presigned URLs (SigV4), both ways.
    let r = c.presigned("PUT", "/objs/pre", b"presigned body");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.presigned("GET", "/objs/pre", b"");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"presigned body"[..]));
    // Delete.
    assert_eq!(c.request("DELETE", "/objs/obj-0", &[], b"").status, 204);
    c.get("/objs/obj-0").expect_error(404, "NoSuchKey");
}

/// A multipart upload routed by key: parts and completion land on one node.
fn multipart(s: &Setup) {
    let mut c = s.client();
    assert_eq!(c.put("/mpu", b"").status, 200);
    let r = c.request("POST", "/mpu/big?uploads", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let upload = r.xml_value("UploadId").unwrap();
    let parts = [body(5000, 1), body(3000, 2)];
    let mut etags = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let r = c.send(
            "PUT",
            &format!("/mpu/big?partNumber={}&uploadId={upload}", i + 1),
            &[],
            p,
            Payload::ChunkedUnsignedCrc32,
        );
        assert_eq!(r.status, 200, "{}", r.text());
        etags.push(r.header("etag").unwrap().to_owned());
    }
    let r = c.get("/mpu?uploads");
    assert_eq!(r.xml_values("UploadId"), std::slice::from_ref(&upload));
    let r = c.get(&format!("/mpu/big?uploadId={upload}"));
    assert_eq!(r.xml_values("PartNumber"), ["1", "2"]);
    let mut xml = String::from("<CompleteMultipartUpload>");
    for (i, e) in etags.iter().enumerate() {
        xml.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{e}</ETag></Part>",
            i + 1
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    let r = c.request(
        "POST",
        &format!("/mpu/big?uploadId={upload}"),
        &[],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/mpu/big");
    assert_eq!(r.body, [parts[0].clone(), parts[1].clone()].concat());
}

fn objects_passthrough(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Passthrough);
    object_round_trips(&s);
    multipart(&s);
}

fn objects_resigned(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Resign);
    object_round_trips(&s);
    multipart(&s);
}

fn objects_with_node_keys(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::OwnKeys);
    object_round_trips(&s);
    // The nodes do not know the client's key.
    let mut direct = http::Client::connect(s.nodes[0].addr);
    direct
        .get("/objs/obj-1")
        .expect_error(403, "InvalidAccessKeyId");
}

fn buckets_fan_out(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/fan", b"").status, 200);
    // On every node.
    for n in &s.nodes {
        assert_eq!(n.client().request("HEAD", "/fan", &[], b"").status, 200);
    }
    // Created again by its owner: 200 in us-east-1, as AWS answers there.
    assert_eq!(c.put("/fan", b"").status, 200);
    assert_eq!(c.request("HEAD", "/fan", &[], b"").status, 200);
    assert_eq!(c.request("HEAD", "/nope", &[], b"").status, 404);
    assert!(c.get("/fan?location").text().contains("LocationConstraint"));
    // A bucket missing on one node (created before it joined) is repaired by a retry.
    assert_eq!(s.nodes[1].client().put("/partial", b"").status, 200);
    assert_eq!(c.put("/partial", b"").status, 200);
    for n in &s.nodes {
        assert_eq!(n.client().request("HEAD", "/partial", &[], b"").status, 200);
    }
    for b in ["/zeta", "/alpha"] {
        assert_eq!(c.put(b, b"").status, 200);
    }
    let r = c.get("/");
    assert_eq!(r.xml_values("Name"), ["alpha", "fan", "partial", "zeta"]);
    let r = c.get("/?max-buckets=2");
    assert_eq!(r.xml_values("Name"), ["alpha", "fan"]);
    let token = r.xml_value("ContinuationToken").unwrap();
    let r = c.get(&format!("/?max-buckets=2&continuation-token={token}"));
    assert_eq!(r.xml_values("Name"), ["partial", "zeta"]);
    assert!(r.xml_value("ContinuationToken").is_none());
    // Not empty on one node only: refused everywhere.
    let key = s.key_on("fan", "k", 2);
    assert_eq!(c.put(&format!("/fan/{key}"), b"x").status, 200);
    c.request("DELETE", "/fan", &[], b"")
        .expect_error(409, "BucketNotEmpty");
    for n in &s.nodes {
        assert_eq!(n.client().request("HEAD", "/fan", &[], b"").status, 200);
    }
    assert_eq!(
        c.request("DELETE", &format!("/fan/{key}"), &[], b"").status,
        204
    );
    assert_eq!(c.request("DELETE", "/fan", &[], b"").status, 204);
    for n in &s.nodes {
        assert_eq!(n.client().request("HEAD", "/fan", &[], b"").status, 404);
    }
    c.request("DELETE", "/fan", &[], b"")
        .expect_error(404, "NoSuchBucket");
}

fn delete_objects_across_backends(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Resign);
    let mut c = s.client();
    assert_eq!(c.put("/del", b"").status, 200);
    let keys: Vec<String> = (0..30).map(|i| format!("d/{i:02} & <x>")).collect();
    for k in &keys {
        let target = format!(
            "/del/{}",
            k.replace(' ', "%20")
                .replace('&', "%26")
                .replace('<', "%3C")
                .replace('>', "%3E")
        );
        assert_eq!(c.put(&target, k.as_bytes()).status, 200);
    }
    let nodes: std::collections::BTreeSet<usize> =
        keys.iter().map(|k| s.node_of("del", k)).collect();
    assert_eq!(nodes.len(), 3, "the keys span every node");
    let escape = |k: &str| {
        k.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut xml = String::from("<Delete>");
    for k in keys.iter().take(20) {
        xml.push_str(&format!("<Object><Key>{}</Key></Object>", escape(k)));
    }
    xml.push_str("<Object><Key>never-existed</Key></Object></Delete>");
    let md5h = ferry_core::md5::content_md5(&md5(xml.as_bytes())).to_string();
    let r = c.request(
        "POST",
        "/del?delete",
        &[("Content-MD5", &md5h)],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mut deleted: Vec<String> = r
        .xml_values("Key")
        .into_iter()
        .map(|k| {
            k.replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
        })
        .collect();
    deleted.sort();
    let mut want: Vec<String> = keys.iter().take(20).cloned().collect();
    want.push("never-existed".into());
    want.sort();
    assert_eq!(deleted, want);
    let r = c.get("/del?list-type=2");
    let left: Vec<String> = r
        .xml_values("Key")
        .into_iter()
        .map(|k| {
            k.replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
        })
        .collect();
    assert_eq!(left, keys[20..]);
    // Quiet mode reports nothing; a wrong Content-MD5 is refused.
    let xml = format!(
        "<Delete><Quiet>true</Quiet><Object><Key>{}</Key></Object></Delete>",
        escape(&keys[25])
    );
    let md5h = ferry_core::md5::content_md5(&md5(xml.as_bytes())).to_string();
    let r = c.request(
        "POST",
        "/del?delete",
        &[("Content-MD5", &md5h)],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200);
    assert!(r.xml_values("Key").is_empty(), "{}", r.text());
    let r = c.request(
        "POST",
        "/del?delete",
        &[("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")],
        xml.as_bytes(),
    );
    r.expect_error(400, "BadDigest");
}

fn copy_across_backends(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/src", b"").status, 200);
    assert_eq!(c.put("/dst", b"").status, 200);
    let src_key = s.key_on("src", "from-", 0);
    let dst_key = s.key_on("dst", "to-", 1);
    let data = body(700_000, 3);
    let r = c.request(
        "PUT",
        &format!("/src/{src_key}"),
        &[("Content-Type", "text/x-src"), ("x-amz-meta-colour", "red")],
        &data,
    );
    assert_eq!(r.status, 200);
    let source = format!("/src/{src_key}");
    let r = c.request(
        "PUT",
        &format!("/dst/{dst_key}"),
        &[("x-amz-copy-source", &source)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = ETag::single(&md5(&data));
    assert_eq!(
        r.xml_value("ETag").map(|e| e.replace("&quot;", "\"")),
        Some(etag.as_str().to_owned())
    );
    // The copy lives on the destination's node, metadata copied.
    let r = s.nodes[1].client().get(&format!("/dst/{dst_key}"));
    assert_eq!(r.status, 200);
    assert!(r.body == data);
    assert_eq!(r.header("content-type"), Some("text/x-src"));
    assert_eq!(r.header("x-amz-meta-colour"), Some("red"));
    // REPLACE takes the request's metadata.
    let dst2 = s.key_on("dst", "to-", 2);
    let r = c.request(
        "PUT",
        &format!("/dst/{dst2}"),
        &[
            ("x-amz-copy-source", &source),
            ("x-amz-metadata-directive", "REPLACE"),
            ("Content-Type", "text/x-new"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.request("HEAD", &format!("/dst/{dst2}"), &[], b"");
    assert_eq!(r.header("content-type"), Some("text/x-new"));
    assert_eq!(r.header("x-amz-meta-colour"), None);
    // Source conditions.
    c.request(
        "PUT",
        &format!("/dst/{dst2}"),
        &[
            ("x-amz-copy-source", &source),
            ("x-amz-copy-source-if-match", "\"0123\""),
        ],
        b"",
    )
    .expect_error(412, "PreconditionFailed");
    c.request(
        "PUT",
        &format!("/dst/{dst2}"),
        &[("x-amz-copy-source", "/src/missing")],
        b"",
    )
    .expect_error(404, "NoSuchKey");
    // UploadPartCopy from another node, with a range.
    let mp_key = s.key_on("dst", "mp-", 2);
    let r = c.request("POST", &format!("/dst/{mp_key}?uploads"), &[], b"");
    let upload = r.xml_value("UploadId").unwrap();
    let r = c.request(
        "PUT",
        &format!("/dst/{mp_key}?partNumber=1&uploadId={upload}"),
        &[
            ("x-amz-copy-source", &source),
            ("x-amz-copy-source-range", "bytes=100-1099"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let part_etag = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    let xml = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{part_etag}</ETag></Part></CompleteMultipartUpload>"
    );
    let r = c.request(
        "POST",
        &format!("/dst/{mp_key}?uploadId={upload}"),
        &[],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get(&format!("/dst/{mp_key}")).body, data[100..1100]);
    // A same-node copy is the node's own.
    let near = s.key_on("src", "near-", 0);
    let r = c.request(
        "PUT",
        &format!("/src/{near}"),
        &[("x-amz-copy-source", &source)],
        b"",
    );
    assert_eq!(r.status, 200);
    // The proxy counted what it copied.
    let r = plain_get(s.admin(), "/metrics");
    let (status, metrics) = (r.status, r.text());
    assert_eq!(status, 200);
    assert!(
        metrics.contains("ferry_proxy_copied_bytes_total 1401000"),
        "{metrics}"
    );
}

/// SSE-S3 through a proxy that re-signs with the nodes' own keys (the encryption header is
/// signed again, not dropped): a PUT, a multipart upload and copies between backends in and
/// out of encryption, no plaintext in any node's data files.
fn encrypted_with_node_keys(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::OwnKeys);
    let mut c = s.client();
    assert_eq!(c.put("/enc", b"").status, 200);
    let sse = ("x-amz-server-side-encryption", "AES256");
    let data = body(300_000, 9);
    let src = s.key_on("enc", "src-", 0);
    let r = c.request("PUT", &format!("/enc/{src}"), &[sse], &data);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("AES256"));
    // Encrypted to encrypted, and encrypted to plaintext, on other nodes.
    let source = format!("/enc/{src}");
    for (want, to, headers) in [
        (
            Some("AES256"),
            1,
            vec![("x-amz-copy-source", source.as_str()), sse],
        ),
        (None, 2, vec![("x-amz-copy-source", source.as_str())]),
    ] {
        let dst = s.key_on("enc", "dst-", to);
        let r = c.request("PUT", &format!("/enc/{dst}"), &headers, b"");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("x-amz-server-side-encryption"), want, "{dst}");
        let etag = ETag::single(&md5(&data));
        assert_eq!(
            r.xml_value("ETag").map(|e| e.replace("&quot;", "\"")),
            Some(etag.as_str().to_owned())
        );
        let r = c.get(&format!("/enc/{dst}"));
        assert!(r.body == data);
        assert_eq!(r.header("x-amz-server-side-encryption"), want);
    }
    // A multipart upload encrypted, its part copied from another node.
    let mp = s.key_on("enc", "mp-", 1);
    let r = c.request("POST", &format!("/enc/{mp}?uploads"), &[sse], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("AES256"));
    let upload = r.xml_value("UploadId").unwrap();
    let r = c.request(
        "PUT",
        &format!("/enc/{mp}?partNumber=1&uploadId={upload}"),
        &[
            ("x-amz-copy-source", source.as_str()),
            ("x-amz-copy-source-range", "bytes=100-199999"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("AES256"));
    let part = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    let xml = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{part}</ETag></Part></CompleteMultipartUpload>"
    );
    let r = c.request(
        "POST",
        &format!("/enc/{mp}?uploadId={upload}"),
        &[],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("AES256"));
    let r = c.get(&format!("/enc/{mp}"));
    assert!(r.body == data[100..200_000]);
    // The plaintext is only in the plaintext copy's node.
    let needle = &data[150_000..150_032];
    let holding: Vec<usize> = (0..3)
        .filter(|&i| {
            support::store::files_under(s.nodes[i].dir.path())
                .iter()
                .any(|p| std::fs::read(p).is_ok_and(|d| d.windows(32).any(|w| w == needle)))
        })
        .collect();
    assert_eq!(holding, [2]);
}

/// `Expect: 100-continue` end to end: the client gets the proxy's 100 only after the node's,
/// and a request refused before its body never sends it.
#[test]
fn continue_end_to_end_and_aborted_uploads() {
    let s = Setup::start(RuntimeKind::Tokio, 3, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/cont", b"").status, 200);
    let data = body(200_000, 9);
    let req = c.encode(
        "PUT",
        "/cont/k",
        &[("Expect", "100-continue")],
        &data,
        Payload::Unsigned,
    );
    let split = req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    c.send_raw(&req[..split]);
    let interim = c.read_response(false);
    assert_eq!(interim.status, 100);
    c.send_raw(&req[split..]);
    assert_eq!(c.read_response(false).status, 200);
    assert_eq!(c.get("/cont/k").body, data);
    // Into a bucket that does not exist: the node refuses before the body, so does the proxy.
    let req = c.encode(
        "PUT",
        "/nobucket/k",
        &[("Expect", "100-continue")],
        &data,
        Payload::Unsigned,
    );
    let split = req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    c.send_raw(&req[..split]);
    c.read_response(false).expect_error(404, "NoSuchBucket");

    // A client that leaves mid-body: the proxy aborts the backend request, so the node sees
    // its body end short and answers it (a node left waiting would time the body out only
    // after its 30 s body timeout and the 1 KiB/s allowance of 150 KB, minutes later), and
    // nothing is stored anywhere.
    let home = s.node_of("cont", "partial");
    let admin = s.nodes[home]
        .handle
        .as_ref()
        .and_then(|h| h.admin_addr())
        .expect("the node's admin listener");
    let puts = "ferry_node_requests_total{operation=\"PutObject\"";
    let stored = "ferry_node_requests_total{operation=\"PutObject\",status=\"200\"}";
    let received = "ferry_node_request_bytes_in_total{operation=\"PutObject\"}";
    let (puts_before, stored_before) = (
        http::metric_now(admin, puts),
        http::metric_now(admin, stored),
    );
    let received_before = http::metric_now(admin, received);
    let mut gone = s.client();
    let req = gone.encode("PUT", "/cont/partial", &[], &data, Payload::Unsigned);
    gone.stream.write_all(&req[..req.len() - 50_000]).unwrap();
    drop(gone);
    http::wait_until(
        "the node answers the PUT the proxy aborted",
        std::time::Duration::from_secs(20),
        || http::metric_now(admin, puts) > puts_before,
    );
    assert_eq!(
        http::metric_now(admin, stored),
        stored_before,
        "the aborted PUT was not stored"
    );
    let got = http::metric_now(admin, received) - received_before;
    assert!(
        got < data.len() as u64,
        "the node got {got} of the body's {} bytes",
        data.len()
    );
    let mut c = s.client();
    c.get("/cont/partial").expect_error(404, "NoSuchKey");
    s.nodes[home]
        .client()
        .get("/cont/partial")
        .expect_error(404, "NoSuchKey");
    // The proxy is still fine.
    assert_eq!(c.put("/cont/after", b"ok").status, 200);
}
