//! The node's S3 operations over real TCP, on both runtimes: buckets, objects, listings.

use ferry_core::md5::{ETag, content_md5, md5};
use ferry_server::RuntimeKind;

use crate::support::http::{self, Payload};
use crate::support::node::Node;

on_both_runtimes!(
    healthz_needs_no_auth,
    bucket_lifecycle,
    list_buckets_pages,
    put_get_head_delete,
    put_with_every_payload_framing,
    list_objects_v1_and_v2,
    large_objects_stream_both_ways,
    concurrent_clients,
);

fn healthz_needs_no_auth(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    c.send_raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.read_response(false);
    assert_eq!((r.status, r.text().as_str()), (200, "ok"));
    assert!(r.header("x-amz-request-id").is_some());
}

fn bucket_lifecycle(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    let r = c.put("/bucket-one", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("location"), Some("/bucket-one"));
    // Created again by its owner: 200 in us-east-1, as AWS answers there.
    assert_eq!(c.put("/bucket-one", b"").status, 200);
    assert_eq!(c.request("HEAD", "/bucket-one", &[], b"").status, 200);
    let r = c.request("HEAD", "/missing-bucket", &[], b"");
    assert_eq!(r.status, 404);
    assert!(r.body.is_empty());
    let r = c.get("/bucket-one?location");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<LocationConstraint"), "{}", r.text());
    let r = c.get("/bucket-one?versioning");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<VersioningConfiguration"));
    assert!(!r.text().contains("<Status>"));
    c.get("/missing-bucket?location")
        .expect_error(404, "NoSuchBucket");
    assert_eq!(c.put("/bucket-one/k", b"data").status, 200);
    c.request("DELETE", "/bucket-one", &[], b"")
        .expect_error(409, "BucketNotEmpty");
    assert_eq!(c.request("DELETE", "/bucket-one/k", &[], b"").status, 204);
    assert_eq!(c.request("DELETE", "/bucket-one", &[], b"").status, 204);
    c.request("DELETE", "/bucket-one", &[], b"")
        .expect_error(404, "NoSuchBucket");
}

fn list_buckets_pages(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    for b in ["alpha-1", "alpha-2", "beta-1", "gamma-1"] {
        assert_eq!(c.put(&format!("/{b}"), b"").status, 200);
    }
    let r = c.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.xml_values("Name"),
        ["alpha-1", "alpha-2", "beta-1", "gamma-1"]
    );
    assert!(r.xml_value("ContinuationToken").is_none());
    let r = c.get("/?max-buckets=3");
    assert_eq!(r.xml_values("Name"), ["alpha-1", "alpha-2", "beta-1"]);
    let token = r.xml_value("ContinuationToken").expect("truncated");
    let r = c.get(&format!("/?max-buckets=3&continuation-token={token}"));
    assert_eq!(r.xml_values("Name"), ["gamma-1"]);
    assert!(r.xml_value("ContinuationToken").is_none());
    let r = c.get("/?prefix=alpha");
    assert_eq!(r.xml_values("Name"), ["alpha-1", "alpha-2"]);
    assert_eq!(r.xml_value("Prefix").as_deref(), Some("alpha"));
}

fn put_get_head_delete(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/bkt", b"").status, 200);
    // Bigger than a buffer, not a multiple of it.
    let body: Vec<u8> = (0..700_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let md5_header = content_md5(&md5(&body)).to_string();
    let r = c.request(
        "PUT",
        "/bkt/dir/file.bin",
        &[
            ("Content-Type", "application/x-test"),
            ("Content-MD5", &md5_header),
            ("x-amz-meta-Colour", "blue"),
            ("Cache-Control", "no-cache"),
        ],
        &body,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = ETag::single(&md5(&body));
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    let r = c.get("/bkt/dir/file.bin");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, body);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(r.header("content-type"), Some("application/x-test"));
    assert_eq!(r.header("x-amz-meta-colour"), Some("blue"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert!(r.header("last-modified").is_some());
    let r = c.request("HEAD", "/bkt/dir/file.bin", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("700000"));
    assert!(r.body.is_empty());
    // An empty object.
    assert_eq!(c.put("/bkt/empty", b"").status, 200);
    let r = c.get("/bkt/empty");
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(r.header("content-type"), Some("binary/octet-stream"));
    // Delete, then it is gone; deleting again still succeeds.
    assert_eq!(
        c.request("DELETE", "/bkt/dir/file.bin", &[], b"").status,
        204
    );
    c.get("/bkt/dir/file.bin").expect_error(404, "NoSuchKey");
    let r = c.request("HEAD", "/bkt/dir/file.bin", &[], b"");
    assert_eq!((r.status, r.body.len()), (404, 0));
    assert_eq!(
        c.request("DELETE", "/bkt/dir/file.bin", &[], b"").status,
        204
    );
    c.put("/nobucket/k", b"x").expect_error(404, "NoSuchBucket");
}

fn put_with_every_payload_framing(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/frames", b"").status, 200);
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
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
        let key = format!("/frames/obj-{i}");
        let r = c.send("PUT", &key, &[], &body, payload);
        assert_eq!(r.status, 200, "{payload:?}: {}", r.text());
        let r = c.get(&key);
        assert_eq!(r.body, body, "{payload:?}");
        assert_eq!(r.header("content-encoding"), None, "{payload:?}");
    }
    // The CRC32 trailer is stored and returned when the client asks for checksums.
    let r = c.request(
        "GET",
        "/frames/obj-2",
        &[("x-amz-checksum-mode", "ENABLED")],
        b"",
    );
    let want = ferry_core::s3::checksum::ChecksumAlgorithm::Crc32
        .checksum(&body)
        .to_base64();
    assert_eq!(r.header("x-amz-checksum-crc32"), Some(want.as_str()));
    let r = c.get("/frames/obj-2");
    assert_eq!(r.header("x-amz-checksum-crc32"), None);
}

fn list_objects_v1_and_v2(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/lst", b"").status, 200);
    let keys = ["a", "b/1", "b/2", "c d", "c/x/y", "e"];
    for k in keys {
        let target = format!("/lst/{}", k.replace(' ', "%20"));
        assert_eq!(c.put(&target, k.as_bytes()).status, 200);
    }
    let r = c.get("/lst?list-type=2");
    assert_eq!(r.xml_values("Key"), keys);
    assert_eq!(r.xml_value("KeyCount").as_deref(), Some("6"));
    // Delimiter: common prefixes count toward max-keys; the token continues after one.
    let r = c.get("/lst?list-type=2&delimiter=/&max-keys=2");
    assert_eq!(r.xml_values("Key"), ["a"]);
    assert_eq!(r.xml_values("Prefix")[1..], ["b/".to_owned()]);
    assert_eq!(r.xml_value("IsTruncated").as_deref(), Some("true"));
    let token = r.xml_value("NextContinuationToken").expect("token");
    let r = c.get(&format!(
        "/lst?list-type=2&delimiter=/&max-keys=2&continuation-token={token}"
    ));
    assert_eq!(r.xml_values("Key"), ["c d"]);
    assert_eq!(r.xml_values("Prefix")[1..], ["c/".to_owned()]);
    let token = r.xml_value("NextContinuationToken").expect("token");
    let r = c.get(&format!(
        "/lst?list-type=2&delimiter=/&max-keys=2&continuation-token={token}"
    ));
    assert_eq!(r.xml_values("Key"), ["e"]);
    assert_eq!(r.xml_value("IsTruncated").as_deref(), Some("false"));
    assert!(r.xml_value("NextContinuationToken").is_none());
    // start-after, prefix, fetch-owner.
    let r = c.get("/lst?list-type=2&start-after=b/2&prefix=c&fetch-owner=true");
    assert_eq!(r.xml_values("Key"), ["c d", "c/x/y"]);
    assert_eq!(r.xml_value("StartAfter").as_deref(), Some("b/2"));
    assert_eq!(r.xml_values("ID").len(), 2);
    let r = c.get("/lst?list-type=2");
    assert!(
        r.xml_values("ID").is_empty(),
        "no owner without fetch-owner"
    );
    // v1: marker echoed, NextMarker only with a delimiter, owners always.
    let r = c.get("/lst?marker=b/1&max-keys=2");
    assert_eq!(r.xml_values("Key"), ["b/2", "c d"]);
    assert_eq!(r.xml_value("Marker").as_deref(), Some("b/1"));
    assert!(r.xml_value("NextMarker").is_none());
    assert_eq!(r.xml_values("ID").len(), 2);
    let r = c.get("/lst?delimiter=/&max-keys=2");
    assert_eq!(r.xml_value("NextMarker").as_deref(), Some("b/"));
    // encoding-type=url encodes keys and prefixes.
    let r = c.get("/lst?list-type=2&encoding-type=url&prefix=c%20");
    assert_eq!(r.xml_values("Key"), ["c%20d"]);
    assert_eq!(r.xml_value("EncodingType").as_deref(), Some("url"));
    c.get("/nolist?list-type=2")
        .expect_error(404, "NoSuchBucket");
}

fn large_objects_stream_both_ways(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/large", b"").status, 200);
    // 12 MiB + 1: many pooled buffers each way, and a last partial one.
    let body: Vec<u8> = (0..(12u32 << 20) + 1)
        .map(|i| (i ^ (i >> 9)) as u8)
        .collect();
    for (key, payload) in [
        ("/large/signed-chunks", Payload::ChunkedSigned),
        ("/large/plain", Payload::Signed),
    ] {
        let r = c.send("PUT", key, &[], &body, payload);
        assert_eq!(r.status, 200, "{}", r.text());
        let etag = ETag::single(&md5(&body));
        assert_eq!(r.header("etag"), Some(etag.as_str()));
        let r = c.get(key);
        assert_eq!(r.body.len(), body.len());
        assert!(r.body == body, "{key}: bytes differ");
    }
}

fn concurrent_clients(rt: RuntimeKind) {
    let node = Node::start(rt);
    assert_eq!(node.client().put("/conc", b"").status, 200);
    let addr = node.addr;
    let workers: Vec<_> = (0..8u8)
        .map(|w| {
            std::thread::spawn(move || {
                let mut c = http::Client::connect(addr);
                for i in 0..10u32 {
                    let key = format!("/conc/w{w}/o{i}");
                    let body = vec![w; 1000 + i as usize * 5000];
                    let r = c.send("PUT", &key, &[], &body, Payload::ChunkedUnsignedCrc32);
                    assert_eq!(r.status, 200, "{}", r.text());
                    assert_eq!(c.get(&key).body, body);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let r = node.client().get("/conc?list-type=2&delimiter=/");
    assert_eq!(r.xml_values("Prefix").len(), 1 + 8);
    let r = node.client().get("/conc?list-type=2&prefix=w3/");
    assert_eq!(r.xml_value("KeyCount").as_deref(), Some("10"));
}
