//! The node's GETs with `sendfile(2)` over real TCP, on both runtimes: full, ranged,
//! conditional, large and multipart objects read back byte for byte, with
//! `ferry_node_sendfile_bytes_total` counting exactly the bodies the kernel sent (bodies under
//! 16 KiB and TLS connections are copied instead); a client that closes mid-body leaves the
//! node serving; the access log counts the bytes sent. Copied bodies (sendfile off, encrypted
//! objects) are read from the page cache on the runtime thread when it holds them
//! (`ferry_node_cached_read_bytes_total`). Lookups run on the runtime thread by
//! default and on the blocking pool with `open_inline: false`, with the same answers.

use std::io::Read as _;
use std::net::SocketAddr;

use aws_sdk_s3::primitives::ByteStream;
use ferry_core::md5::{ETag, md5};
use ferry_server::{RuntimeKind, start_node};
use serde_json::Value;

use crate::proxy_tls::{https_client, self_signed};
use crate::support::http::{Client, Payload, metrics_after};
use crate::support::node::{MIN_PART, Node, node_config};
use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry, stop};
use crate::support::sdk;

on_both_runtimes!(
    full_and_ranged_gets,
    conditional_gets,
    large_and_multipart_objects,
    client_closing_mid_body,
    tls_gets_are_copied,
    access_log_counts_sent_bytes,
    copies_with_sendfile_off,
    lookups_on_the_blocking_pool,
);

/// Below this a body is copied (the node's `SEND_FILE_MIN`).
const SEND_FILE_MIN: usize = 16 * 1024;

fn data(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(131).wrapping_add(seed) % 251) as u8)
        .collect()
}

fn admin(node: &Node) -> SocketAddr {
    node.handle
        .as_ref()
        .and_then(|h| h.admin_addr())
        .expect("admin")
}

/// The node counter `ferry_node_<name>_total` once the node has counted `requests` S3
/// requests (a request is counted after its body was sent).
fn counter(admin: SocketAddr, name: &str, requests: u64) -> u64 {
    let m = metrics_after(admin, "ferry_node", requests);
    let prefix = format!("ferry_node_{name}_total ");
    m.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix}in\n{m}"))
}

/// `ferry_node_sendfile_bytes_total` after `requests` requests.
fn sendfile_bytes(admin: SocketAddr, requests: u64) -> u64 {
    counter(admin, "sendfile_bytes", requests)
}

/// What the kernel sends of a body of `len` bytes.
fn sent_by_kernel(len: usize) -> u64 {
    if len >= SEND_FILE_MIN { len as u64 } else { 0 }
}

fn full_and_ranged_gets(rt: RuntimeKind) {
    let node = Node::start(rt);
    let admin = admin(&node);
    let mut c = node.client();
    assert_eq!(c.put("/sfx", b"").status, 200);
    let body = data(600_000, 1);
    assert_eq!(c.put("/sfx/o", &body).status, 200);
    let mut requests = 2;
    let mut want_sent = 0;
    assert_eq!(sendfile_bytes(admin, requests), 0);

    let r = c.get("/sfx/o");
    requests += 1;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("600000"));
    assert!(r.body == body, "full GET differs");
    want_sent += body.len() as u64;
    assert_eq!(sendfile_bytes(admin, requests), want_sent);

    let cases: [(&str, usize, usize); 9] = [
        ("bytes=0-0", 0, 0),
        ("bytes=0-99999", 0, 99_999),
        ("bytes=123457-423456", 123_457, 423_456),
        // Across the 256 KiB block of the copy path.
        ("bytes=262000-263000", 262_000, 263_000),
        ("bytes=-1", 599_999, 599_999),
        ("bytes=-200001", 399_999, 599_999),
        ("bytes=599999-", 599_999, 599_999),
        ("bytes=500000-", 500_000, 599_999),
        ("bytes=1-999999", 1, 599_999),
    ];
    for (range, first, last) in cases {
        let r = c.request("GET", "/sfx/o", &[("Range", range)], b"");
        requests += 1;
        assert_eq!(r.status, 206, "{range}");
        let want = format!("bytes {first}-{last}/600000");
        assert_eq!(r.header("content-range"), Some(want.as_str()), "{range}");
        let len = last - first + 1;
        assert_eq!(r.header("content-length"), Some(len.to_string().as_str()));
        assert!(r.body == body[first..=last], "{range} differs");
        want_sent += sent_by_kernel(len);
        assert_eq!(sendfile_bytes(admin, requests), want_sent, "{range}");
    }
    // HEAD sends no body; a 416 neither.
    let h = c.request("HEAD", "/sfx/o", &[], b"");
    assert_eq!(h.header("content-length"), Some("600000"));
    c.request("GET", "/sfx/o", &[("Range", "bytes=600000-")], b"")
        .expect_error(416, "InvalidRange");
    requests += 2;
    assert_eq!(sendfile_bytes(admin, requests), want_sent);
    // The connection is still in step: one more request on it.
    assert_eq!(c.get("/sfx/o").body.len(), body.len());
}

fn conditional_gets(rt: RuntimeKind) {
    let node = Node::start(rt);
    let admin = admin(&node);
    let mut c = node.client();
    assert_eq!(c.put("/cgx", b"").status, 200);
    let body = data(300_000, 2);
    let etag = c.put("/cgx/o", &body).header("etag").unwrap().to_owned();
    assert_eq!(etag, ETag::single(&md5(&body)).as_str());

    let r = c.request("GET", "/cgx/o", &[("If-None-Match", &etag)], b"");
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    c.request("GET", "/cgx/o", &[("If-Match", "\"nope\"")], b"")
        .expect_error(412, "PreconditionFailed");
    assert_eq!(sendfile_bytes(admin, 4), 0);

    let r = c.request("GET", "/cgx/o", &[("If-Match", &etag)], b"");
    assert_eq!(r.status, 200);
    assert!(r.body == body);
    let r = c.request(
        "GET",
        "/cgx/o",
        &[
            ("If-None-Match", "\"other\""),
            ("Range", "bytes=1000-99999"),
        ],
        b"",
    );
    assert_eq!(r.status, 206);
    assert!(r.body == body[1000..100_000]);
    assert_eq!(sendfile_bytes(admin, 6), 300_000 + 99_000);
}

fn large_and_multipart_objects(rt: RuntimeKind) {
    let node = Node::start(rt);
    let admin = admin(&node);
    let mut c = node.client();
    assert_eq!(c.put("/lgx", b"").status, 200);
    let big = data(8 * 1024 * 1024 + 12_345, 3);
    assert_eq!(c.put("/lgx/big", &big).status, 200);
    let r = c.get("/lgx/big");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), big.len());
    assert!(r.body == big, "8 MiB + 12345 differs");
    let mut want_sent = big.len() as u64;

    // Three data files, the last of 10 bytes: sent file after file.
    let r = c.request("POST", "/lgx/mp?uploads", &[], b"");
    let upload = r.xml_value("UploadId").expect("UploadId");
    let parts = [
        data(300_000, 4),
        data(MIN_PART as usize + 50_000, 5),
        data(10, 6),
    ];
    let mut xml = String::from("<CompleteMultipartUpload>");
    for (i, p) in parts.iter().enumerate() {
        let target = format!("/lgx/mp?partNumber={}&uploadId={upload}", i + 1);
        let r = c.put(&target, p);
        assert_eq!(r.status, 200, "{}", r.text());
        let etag = r.header("etag").unwrap();
        xml.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>",
            i + 1
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    let r = c.request(
        "POST",
        &format!("/lgx/mp?uploadId={upload}"),
        &[],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let whole: Vec<u8> = parts.concat();
    let r = c.get("/lgx/mp");
    assert_eq!(r.status, 200);
    assert!(r.body == whole, "multipart object differs");
    want_sent += whole.len() as u64;
    // A range over all three files, and one part.
    let r = c.request("GET", "/lgx/mp", &[("Range", "bytes=299990-")], b"");
    assert!(r.body == whole[299_990..]);
    want_sent += (whole.len() - 299_990) as u64;
    let r = c.get("/lgx/mp?partNumber=2");
    assert_eq!(r.status, 206);
    assert!(r.body == parts[1]);
    want_sent += parts[1].len() as u64;
    // Requests: bucket, PUT, GET, create, 3 parts, complete, 3 GETs.
    assert_eq!(sendfile_bytes(admin, 11), want_sent);
}

fn client_closing_mid_body(rt: RuntimeKind) {
    let node = Node::start(rt);
    let admin = admin(&node);
    let mut c = node.client();
    assert_eq!(c.put("/clx", b"").status, 200);
    let big = data(8 * 1024 * 1024 + 7, 7);
    assert_eq!(c.put("/clx/big", &big).status, 200);
    for _ in 0..3 {
        let mut quitter = Client::connect(node.addr);
        let req = quitter.encode("GET", "/clx/big", &[], b"", Payload::Signed);
        quitter.send_raw(&req);
        let mut some = vec![0; 100_000];
        quitter
            .stream
            .read_exact(&mut some)
            .expect("the start of the body");
        // Closed with most of the body unread: the node's sendfile meets a reset.
        drop(quitter);
    }
    // Each aborted GET is counted once the node gave up on it.
    let m = metrics_after(admin, "ferry_node", 5);
    assert!(m.contains("ferry_node_sendfile_bytes_total "), "{m}");
    let r = c.get("/clx/big");
    assert_eq!(r.status, 200);
    assert!(r.body == big);
    let mut fresh = node.client();
    assert!(fresh.get("/clx/big").body == big);
}

fn tls_gets_are_copied(rt: RuntimeKind) {
    let cert = self_signed();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = node_config(dir.path(), rt);
    cfg.fsync = false;
    cfg.threads = 1;
    cfg.tls = Some(cert.files.clone());
    let node = start_node(cfg).expect("node starts");
    let admin = node.admin_addr().expect("admin");
    let body = data(1024 * 1024 + 3, 8);
    sdk::block_on(async {
        let c = https_client(node.local_addr(), Some(&cert.pem));
        c.create_bucket().bucket("tls").send().await.unwrap();
        c.put_object()
            .bucket("tls")
            .key("k")
            .body(ByteStream::from(body.clone()))
            .send()
            .await
            .unwrap();
        let out = c.get_object().bucket("tls").key("k").send().await.unwrap();
        let got = out.body.collect().await.unwrap().into_bytes();
        assert!(got.as_ref() == body.as_slice());
        let out = c
            .get_object()
            .bucket("tls")
            .key("k")
            .range("bytes=100-200099")
            .send()
            .await
            .unwrap();
        let got = out.body.collect().await.unwrap().into_bytes();
        assert!(got.as_ref() == &body[100..200_100]);
    });
    assert_eq!(sendfile_bytes(admin, 4), 0);
    node.stop();
}

/// The `ferry node` binary's access events of its GETs, as JSON.
fn access_log_counts_sent_bytes(rt: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let runtime = match rt {
        RuntimeKind::Tokio => "tokio",
        RuntimeKind::Smol => "smol",
    };
    let mut child = spawn_ferry(
        &[
            "node",
            "--listen",
            "127.0.0.1:0",
            "--data",
            dir.path().to_str().unwrap(),
            "--runtime",
            runtime,
            "--log-format",
            "json",
            "--access-log",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, "ferry node listening on http://");
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/alx", b"").status, 200);
    let body = data(1_000_003, 9);
    assert_eq!(c.put("/alx/o", &body).status, 200);
    assert!(c.get("/alx/o").body == body);
    let r = c.request("GET", "/alx/o", &[("Range", "bytes=10-50009")], b"");
    assert_eq!(r.body.len(), 50_000);
    let r = c.request("GET", "/alx/o", &[("Range", "bytes=-100")], b"");
    assert_eq!(r.body.len(), 100);
    let etag = ETag::single(&md5(&body));
    let r = c.request("GET", "/alx/o", &[("If-None-Match", etag.as_str())], b"");
    assert_eq!(r.status, 304);
    drop(c);
    let stderr = stop(child, "-TERM");
    let gets: Vec<(u64, u64)> = stderr
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|e| e["target"] == "ferry::access" && e["op"] == "GetObject")
        .map(|e| {
            (
                e["status"].as_u64().unwrap(),
                e["bytes_out"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        gets,
        [(200, 1_000_003), (206, 50_000), (206, 100), (304, 0)],
        "{stderr}"
    );
}

/// `sendfile: false` (`--no-sendfile`): every body is copied.
fn copies_with_sendfile_off(rt: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = node_config(dir.path(), rt);
    cfg.fsync = false;
    cfg.threads = 1;
    cfg.sendfile = false;
    let node = start_node(cfg).expect("node starts");
    let admin = node.admin_addr().expect("admin");
    let mut c = Client::connect(node.local_addr());
    assert_eq!(c.put("/off", b"").status, 200);
    let body = data(700_001, 10);
    assert_eq!(c.put("/off/o", &body).status, 200);
    assert!(c.get("/off/o").body == body);
    let r = c.request("GET", "/off/o", &[("Range", "bytes=-300000")], b"");
    assert!(r.body == body[400_001..]);
    assert_eq!(sendfile_bytes(admin, 4), 0);
    // The first GET read the object into the page cache (its PUT may have written around it,
    // with O_DIRECT); the ranged GET read all of its bytes from there on the runtime thread.
    let cached = cached_read_bytes(admin, 4);
    assert!((300_000..=1_000_001).contains(&cached), "{cached}");
    // So does an encrypted object's, decrypted there.
    let sse = [("x-amz-server-side-encryption", "AES256")];
    assert_eq!(c.request("PUT", "/off/sse", &sse, &body).status, 200);
    assert!(c.get("/off/sse").body == body);
    let before = cached_read_bytes(admin, 6);
    assert!(c.get("/off/sse").body == body);
    assert_eq!(cached_read_bytes(admin, 7) - before, body.len() as u64);
    node.stop();
}

/// `ferry_node_cached_read_bytes_total` after `requests` requests.
fn cached_read_bytes(admin: SocketAddr, requests: u64) -> u64 {
    counter(admin, "cached_read_bytes", requests)
}

/// `open_inline: false` (`--open-on-pool`): lookups on the blocking pool, the same answers.
fn lookups_on_the_blocking_pool(rt: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = node_config(dir.path(), rt);
    cfg.fsync = false;
    cfg.threads = 1;
    cfg.open_inline = false;
    let node = start_node(cfg).expect("node starts");
    let admin = node.admin_addr().expect("admin");
    let mut c = Client::connect(node.local_addr());
    assert_eq!(c.put("/pool", b"").status, 200);
    let body = data(300_000, 11);
    let small = data(1000, 12);
    let etag = c
        .put("/pool/o", &body)
        .header("etag")
        .expect("etag")
        .to_owned();
    assert_eq!(c.put("/pool/small", &small).status, 200);
    assert!(c.get("/pool/o").body == body);
    assert!(c.get("/pool/small").body == small);
    let r = c.request("GET", "/pool/o", &[("Range", "bytes=100-20099")], b"");
    assert_eq!(r.status, 206);
    assert!(r.body == body[100..20_100]);
    let r = c.request("GET", "/pool/o", &[("If-None-Match", etag.as_str())], b"");
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    let h = c.request("HEAD", "/pool/small", &[], b"");
    assert_eq!(h.header("content-length"), Some("1000"));
    c.get("/pool/missing").expect_error(404, "NoSuchKey");
    // The two bodies of 16 KiB and more went out with sendfile(2).
    assert_eq!(sendfile_bytes(admin, 9), 300_000 + 20_000);
    node.stop();
}
