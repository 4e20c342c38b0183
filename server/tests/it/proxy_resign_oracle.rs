//! The proxy's re-signing checked by AWS's signer: a proxy re-signing for Ferry nodes (nodes
//! with keys of their own, and nodes sharing its key but re-signed all the same) reaches each
//! through a recording relay; after a workload of every body framing, keys that need encoding,
//! queries, presigned client requests, multipart uploads, copies within and across nodes,
//! tagging and batch deletes, every request a node received is signed again with `aws-sigv4`
//! and must carry the same signature (and a payload hash that is its body's). The nodes check
//! signatures with Ferry's own verifier; the relay's check is the one that is not Ferry's.

use ferry_core::md5::{content_md5, md5};
use ferry_server::RuntimeKind;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::support::REGION;
use crate::support::http::Payload;
use crate::support::proxy::{Auth, Setup, own_key};
use crate::support::sigv4_oracle;
use crate::support::{ACCESS_KEY, SECRET_KEY};

on_both_runtimes!(
    own_keys_resigned_as_aws_signs,
    shared_key_resigned_as_aws_signs
);

/// What an AWS SDK leaves unencoded in a key's path: `A-Z a-z 0-9 - _ . ~` and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// Keys whose paths need encoding, some of it unusual.
const KEYS: [&str; 6] = [
    "plain",
    "with space/and more",
    "ünïcödé/ключ/鍵",
    "sym!*'()+,;=&$@:",
    "tilde~dash-under_dot.",
    "percent%25literal",
];

fn path(bucket: &str, key: &str) -> String {
    format!("/{bucket}/{}", utf8_percent_encode(key, PATH))
}

fn workload(s: &Setup) {
    let mut c = s.client();
    assert_eq!(c.put("/oracle", b"").status, 200);
    let data: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
    let payloads = [
        Payload::Signed,
        Payload::Unsigned,
        Payload::ChunkedUnsignedCrc32,
        Payload::ChunkedSigned,
        Payload::ChunkedSignedTrailer,
    ];
    for (i, key) in KEYS.iter().enumerate() {
        let target = path("oracle", key);
        let payload = payloads[i % payloads.len()];
        let r = c.send(
            "PUT",
            &target,
            &[("x-amz-meta-n", "v"), ("Content-Type", "text/plain")],
            &data,
            payload,
        );
        assert_eq!(r.status, 200, "{key} {payload:?}: {}", r.text());
        let r = c.get(&target);
        assert_eq!(r.status, 200, "{key}");
        assert!(r.body == data, "{key}: body differs");
        let r = c.request("GET", &target, &[("Range", "bytes=10-19")], b"");
        assert_eq!((r.status, r.body.as_slice()), (206, &data[10..20]));
        let r = c.request("HEAD", &target, &[], b"");
        assert_eq!(r.status, 200, "{key}");
        // A presigned request, which the proxy signs anew in headers.
        let r = c.presigned("GET", &target, b"");
        assert_eq!(r.status, 200, "{key}");
    }
    // Queries that need encoding.
    let r = c.get("/oracle?list-type=2&prefix=with%20space%2F&delimiter=%2F&max-keys=7");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/oracle?list-type=2&start-after=sym%21%2A");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/oracle?versions&prefix=%C3%BC");
    assert_eq!(r.status, 200, "{}", r.text());

    // Copies to keys on each node (within one node and across).
    let src = path("oracle", KEYS[2]);
    let source = src.trim_start_matches('/').to_owned();
    for owner in 0..s.nodes.len() {
        let dst = s.key_on("oracle", "copy é+", owner);
        let r = c.request(
            "PUT",
            &path("oracle", &dst),
            &[("x-amz-copy-source", &source)],
            b"",
        );
        assert_eq!(r.status, 200, "{dst}: {}", r.text());
    }

    // A multipart upload: a part streamed, a part copied, completed.
    let mp = path("oracle", "multi part/ü");
    let r = c.request("POST", &format!("{mp}?uploads"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.xml_value("UploadId").expect("UploadId");
    let uid = utf8_percent_encode(&id, NON_ALPHANUMERIC).to_string();
    let part: Vec<u8> = vec![7; 6000];
    let r = c.send(
        "PUT",
        &format!("{mp}?partNumber=1&uploadId={uid}"),
        &[],
        &part,
        Payload::ChunkedSignedTrailer,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let e1 = r.header("etag").expect("etag").to_owned();
    let r = c.request(
        "PUT",
        &format!("{mp}?partNumber=2&uploadId={uid}"),
        &[
            ("x-amz-copy-source", &source),
            ("x-amz-copy-source-range", "bytes=0-2047"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let e2 = r.xml_value("ETag").expect("etag").replace("&quot;", "\"");
    let r = c.get(&format!("{mp}?uploadId={uid}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let done = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{e1}</ETag></Part>\
         <Part><PartNumber>2</PartNumber><ETag>{e2}</ETag></Part></CompleteMultipartUpload>"
    );
    let r = c.request(
        "POST",
        &format!("{mp}?uploadId={uid}"),
        &[],
        done.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());

    // Tagging, then a batch delete of every key (split by node), then the bucket.
    let tags = b"<Tagging><TagSet><Tag><Key>k</Key><Value>v w</Value></Tag></TagSet></Tagging>";
    let r = c.request(
        "PUT",
        &format!("{}?tagging", path("oracle", KEYS[1])),
        &[],
        tags,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get(&format!("{}?tagging", path("oracle", KEYS[1])));
    assert_eq!(r.xml_values("Value"), ["v w"], "{}", r.text());
    let r = c.get("/oracle?list-type=2");
    let mut xml = String::from("<Delete>");
    for k in r.xml_values("Key") {
        xml.push_str(&format!("<Object><Key>{k}</Key></Object>"));
    }
    xml.push_str("</Delete>");
    let md5h = content_md5(&md5(xml.as_bytes())).to_string();
    let r = c.request(
        "POST",
        "/oracle?delete",
        &[("Content-MD5", &md5h)],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.xml_values("Error").is_empty(), "{}", r.text());
    let r = c.request("DELETE", "/oracle", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
}

/// Every request each node received carries aws-sigv4's signature with `key(i)` (node `i`
/// from 0), unsigned ones being health probes; the payload hashes seen, all nodes together.
fn check(s: &Setup, key: impl Fn(usize) -> (String, String)) -> std::collections::BTreeSet<String> {
    let mut payloads = std::collections::BTreeSet::new();
    let mut signed = 0;
    for (i, relay) in s.relays.iter().enumerate() {
        let (access, secret) = key(i);
        let recorded = relay.recorded();
        let checked = sigv4_oracle::check(&recorded, &[(&access, &secret)], REGION);
        for r in &checked.unsigned {
            assert_eq!(
                (r.method.as_str(), r.target.as_str()),
                ("GET", "/healthz"),
                "an unsigned request reached node {i}"
            );
        }
        assert_eq!(checked.signed + checked.unsigned.len(), recorded.len());
        assert!(checked.signed > 0, "no signed request reached node {i}");
        signed += checked.signed;
        payloads.extend(checked.payloads);
    }
    assert!(signed > 20, "{signed} signed requests");
    payloads
}

fn own_keys_resigned_as_aws_signs(rt: RuntimeKind) {
    let mut s = Setup::start_relayed(rt, 2, Auth::OwnKeys, |_| {});
    workload(&s);
    if let Some(p) = s.proxy.take() {
        p.stop();
    }
    let payloads = check(&s, |i| own_key(i + 1));
    for p in ["sha256", "UNSIGNED-PAYLOAD"] {
        assert!(payloads.contains(p), "{p} not among {payloads:?}");
    }
}

fn shared_key_resigned_as_aws_signs(rt: RuntimeKind) {
    let mut s = Setup::start_relayed(rt, 2, Auth::Resign, |_| {});
    workload(&s);
    if let Some(p) = s.proxy.take() {
        p.stop();
    }
    let payloads = check(&s, |_| (ACCESS_KEY.to_owned(), SECRET_KEY.to_owned()));
    for p in ["sha256", "UNSIGNED-PAYLOAD"] {
        assert!(payloads.contains(p), "{p} not among {payloads:?}");
    }
}
