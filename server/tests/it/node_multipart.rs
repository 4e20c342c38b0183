//! Multipart uploads over real TCP, on both runtimes.

use ferry_core::md5::{Md5Digest, MultipartETag, md5};
use ferry_core::s3::uri::encode;
use ferry_server::RuntimeKind;

use crate::support::http::{Client, Payload};
use crate::support::node::{MIN_PART, Node};

on_both_runtimes!(multipart_upload_round_trip, multipart_errors);

fn create(c: &mut Client, target: &str, headers: &[(&str, &str)]) -> String {
    let r = c.request("POST", &format!("{target}?uploads"), headers, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.xml_value("UploadId").expect("UploadId")
}

fn complete_xml(parts: &[(u16, &str)]) -> Vec<u8> {
    let mut x = String::from("<CompleteMultipartUpload>");
    for (n, etag) in parts {
        x.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
        ));
    }
    x.push_str("</CompleteMultipartUpload>");
    x.into_bytes()
}

fn multipart_upload_round_trip(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/mpu", b"").status, 200);
    let upload = create(
        &mut c,
        "/mpu/big/object",
        &[("Content-Type", "video/mp2t"), ("x-amz-meta-k", "v")],
    );
    let size = MIN_PART as usize;
    let parts: Vec<Vec<u8>> = vec![
        (0..size + 300_000).map(|i| (i % 7) as u8).collect(),
        vec![b'b'; size],
        vec![b'c'; 10],
    ];
    let payloads = [
        Payload::ChunkedUnsignedCrc32,
        Payload::Unsigned,
        Payload::Signed,
    ];
    let mut etags = Vec::new();
    for (i, (data, payload)) in parts.iter().zip(payloads).enumerate() {
        let target = format!("/mpu/big/object?partNumber={}&uploadId={upload}", i + 1);
        let r = c.send("PUT", &target, &[], data, payload);
        assert_eq!(r.status, 200, "{}", r.text());
        let etag = r.header("etag").unwrap().to_owned();
        assert_eq!(
            etag,
            ferry_core::md5::ETag::single(&md5(data)).as_str(),
            "part {}",
            i + 1
        );
        etags.push(etag);
    }
    // Re-uploading a part replaces it.
    let target = format!("/mpu/big/object?partNumber=3&uploadId={upload}");
    assert_eq!(c.put(&target, &parts[2]).status, 200);

    let r = c.get(&format!("/mpu/big/object?uploadId={upload}&max-parts=2"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("PartNumber"), ["1", "2"]);
    assert_eq!(r.xml_value("IsTruncated").as_deref(), Some("true"));
    assert_eq!(r.xml_value("NextPartNumberMarker").as_deref(), Some("2"));
    let r = c.get(&format!(
        "/mpu/big/object?uploadId={upload}&part-number-marker=2"
    ));
    assert_eq!(r.xml_values("PartNumber"), ["3"]);
    assert_eq!(r.xml_values("Size"), ["10"]);

    let r = c.get("/mpu?uploads");
    assert_eq!(r.status, 200);
    assert_eq!(r.xml_values("UploadId"), std::slice::from_ref(&upload));
    assert_eq!(r.xml_values("Key"), ["big/object"]);
    let r = c.get("/mpu?uploads&delimiter=/");
    assert!(r.xml_values("UploadId").is_empty());
    assert_eq!(r.xml_values("Prefix")[1..], ["big/".to_owned()]);

    let list: Vec<(u16, &str)> = etags
        .iter()
        .enumerate()
        .map(|(i, e)| (i as u16 + 1, e.as_str()))
        .collect();
    let r = c.request(
        "POST",
        &format!("/mpu/big/object?uploadId={upload}"),
        &[],
        &complete_xml(&list),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let digests: Vec<Md5Digest> = parts.iter().map(|p| md5(p)).collect();
    let mut want = MultipartETag::new();
    for d in &digests {
        want.push_part(d);
    }
    let want = want.finish();
    assert_eq!(
        r.xml_value("ETag").unwrap(),
        want.as_str().replace('"', "&quot;")
    );
    assert!(
        r.xml_value("Location")
            .unwrap()
            .ends_with("/mpu/big/object")
    );

    let whole: Vec<u8> = parts.concat();
    let r = c.get("/mpu/big/object");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, whole);
    assert_eq!(r.header("etag"), Some(want.as_str()));
    assert_eq!(r.header("content-type"), Some("video/mp2t"));
    assert_eq!(r.header("x-amz-meta-k"), Some("v"));
    let r = c.get("/mpu/big/object?partNumber=2");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, parts[1]);
    assert_eq!(r.header("x-amz-mp-parts-count"), Some("3"));
    let first = parts[0].len();
    let range = format!("bytes {}-{}/{}", first, first + size - 1, whole.len());
    assert_eq!(r.header("content-range"), Some(range.as_str()));
    let r = c.request("HEAD", "/mpu/big/object?partNumber=3", &[], b"");
    assert_eq!((r.status, r.header("content-length")), (206, Some("10")));
    c.get("/mpu/big/object?partNumber=4")
        .expect_error(416, "InvalidPartNumber");
    // The upload is gone.
    let r = c.get("/mpu?uploads");
    assert!(r.xml_values("UploadId").is_empty());
    c.get(&format!("/mpu/big/object?uploadId={upload}"))
        .expect_error(404, "NoSuchUpload");

    // UploadPartCopy: ranges of the completed object become parts of a new one.
    let upload = create(&mut c, "/mpu/copy", &[]);
    let src_range = format!("bytes=0-{}", size - 1);
    let r = c.request(
        "PUT",
        &format!("/mpu/copy?partNumber=1&uploadId={upload}"),
        &[
            ("x-amz-copy-source", "/mpu/big/object"),
            ("x-amz-copy-source-range", &src_range),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<CopyPartResult"));
    let e1 = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    let r = c.request(
        "PUT",
        &format!("/mpu/copy?partNumber=2&uploadId={upload}"),
        &[("x-amz-copy-source", "/mpu/big/object?versionId=null")],
        b"",
    );
    let e2 = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    let r = c.request(
        "POST",
        &format!("/mpu/copy?uploadId={upload}"),
        &[],
        &complete_xml(&[(1, &e1), (2, &e2)]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/mpu/copy");
    assert_eq!(r.body.len(), size + whole.len());
    assert_eq!(r.body[..size], whole[..size]);
    assert_eq!(r.body[size..], whole[..]);
}

fn multipart_errors(rt: RuntimeKind) {
    let node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/mpe", b"").status, 200);
    let upload = create(&mut c, "/mpe/o", &[]);
    let part = |n: u16| format!("/mpe/o?partNumber={n}&uploadId={upload}");
    let small = c.put(&part(1), b"tiny").header("etag").unwrap().to_owned();
    let last = c.put(&part(2), b"last").header("etag").unwrap().to_owned();
    let done = format!("/mpe/o?uploadId={upload}");
    c.request(
        "POST",
        &done,
        &[],
        &complete_xml(&[(2, &last), (1, &small)]),
    )
    .expect_error(400, "InvalidPartOrder");
    c.request("POST", &done, &[], &complete_xml(&[(3, &last)]))
        .expect_error(400, "InvalidPart");
    c.request(
        "POST",
        &done,
        &[],
        &complete_xml(&[(1, "\"00000000000000000000000000000000\"")]),
    )
    .expect_error(400, "InvalidPart");
    c.request(
        "POST",
        &done,
        &[],
        &complete_xml(&[(1, &small), (2, &last)]),
    )
    .expect_error(400, "EntityTooSmall");
    c.request(
        "POST",
        &done,
        &[],
        b"<CompleteMultipartUpload></CompleteMultipartUpload>",
    )
    .expect_error(400, "MalformedXML");
    c.request("POST", &done, &[], b"not xml")
        .expect_error(400, "MalformedXML");
    // Conditional completion: the key exists, If-None-Match: * fails.
    assert_eq!(c.put("/mpe/o", b"exists").status, 200);
    c.request(
        "POST",
        &done,
        &[("If-None-Match", "*")],
        &complete_xml(&[(2, &last)]),
    )
    .expect_error(412, "PreconditionFailed");
    // The upload survived every failed completion; a single last part completes it.
    let r = c.request("POST", &done, &[], &complete_xml(&[(2, &last)]));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/mpe/o").body, b"last");

    let upload = create(&mut c, "/mpe/p", &[]);
    let target = format!("/mpe/p?uploadId={upload}");
    assert_eq!(c.request("DELETE", &target, &[], b"").status, 204);
    c.request("DELETE", &target, &[], b"")
        .expect_error(404, "NoSuchUpload");
    c.put(&format!("/mpe/p?partNumber=1&uploadId={upload}"), b"x")
        .expect_error(404, "NoSuchUpload");
    c.put("/mpe/p?partNumber=1&uploadId=nosuch", b"x")
        .expect_error(404, "NoSuchUpload");
    c.put("/mpe/p?partNumber=10001&uploadId=nosuch", b"x")
        .expect_error(400, "InvalidArgument");
    c.request("POST", "/nobkt/o?uploads", &[], b"")
        .expect_error(404, "NoSuchBucket");
}

/// Upload ids tagged as a proxy gives them to its clients (`<8 hex>~<the node's id>`), which a
/// passthrough proxy forwards as they came: every step takes them, the answers carry the node's
/// own id, and an id whose tag has another shape is an id the node does not know. (The
/// handler, not the runtime: one runtime.)
#[test]
fn tagged_upload_ids() {
    let node = Node::start(RuntimeKind::Tokio);
    let mut c = node.client();
    assert_eq!(c.put("/mpu", b"").status, 200);
    assert_eq!(c.put("/mpu/src", &[b's'; 100]).status, 200);
    let own = create(&mut c, "/mpu/k", &[]);
    let later = create(&mut c, "/mpu/k", &[]);
    let tagged = |tag: &str, id: &str| encode(&format!("{tag}~{id}")).to_string();
    let id = tagged("0123abcd", &own);

    let first = vec![b'a'; MIN_PART as usize];
    let target = format!("/mpu/k?partNumber=1&uploadId={id}");
    let r = c.send("PUT", &target, &[], &first, Payload::ChunkedSigned);
    assert_eq!(r.status, 200, "{}", r.text());
    let etag1 = r.header("etag").unwrap().to_owned();
    let target = format!("/mpu/k?partNumber=2&uploadId={id}");
    let r = c.request("PUT", &target, &[("x-amz-copy-source", "/mpu/src")], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let etag2 = r.xml_value("ETag").unwrap().replace("&quot;", "\"");

    let r = c.get(&format!("/mpu/k?uploadId={id}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_value("UploadId").as_deref(), Some(own.as_str()));
    assert_eq!(r.xml_values("PartNumber"), ["1", "2"]);
    // (Node ids sort by their creation time.)
    let r = c.get(&format!("/mpu?uploads&key-marker=k&upload-id-marker={id}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("UploadId"), std::slice::from_ref(&later));
    assert_eq!(r.xml_value("UploadIdMarker").as_deref(), Some(own.as_str()));

    // Another shape is not a tag: the whole id is unknown.
    let parts = complete_xml(&[(1, &etag1), (2, &etag2)]);
    for bad in [
        tagged("0123ABCD", &own),
        tagged("0123abc", &own),
        tagged("0123abcd0", &own),
        encode(&format!("0123abcd-{own}")).to_string(),
        tagged("0123abcd", &format!("~{own}")),
        tagged("0123abcd", ""),
    ] {
        let part = format!("/mpu/k?partNumber=3&uploadId={bad}");
        // (Refused before its body: on a connection of its own.)
        node.client()
            .put(&part, b"x")
            .expect_error(404, "NoSuchUpload");
        let upload = format!("/mpu/k?uploadId={bad}");
        c.get(&upload).expect_error(404, "NoSuchUpload");
        c.request("POST", &upload, &[], &parts)
            .expect_error(404, "NoSuchUpload");
        c.request("DELETE", &upload, &[], b"")
            .expect_error(404, "NoSuchUpload");
    }

    // Any tag will do: the node does not know which its proxies give it.
    let target = format!("/mpu/k?uploadId={}", tagged("ffffffff", &later));
    assert_eq!(c.request("DELETE", &target, &[], b"").status, 204);
    let r = c.request("POST", &format!("/mpu/k?uploadId={id}"), &[], &parts);
    assert_eq!(r.status, 200, "{}", r.text());
    let got = c.get("/mpu/k");
    assert_eq!(got.body.len(), first.len() + 100);
    assert!(c.get("/mpu?uploads").xml_values("UploadId").is_empty());
}
