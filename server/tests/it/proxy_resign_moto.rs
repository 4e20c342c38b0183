//! Re-signing against an S3 server that is not Ferry: moto's server mode (`pip install
//! 'moto[server]'`). The proxy checks the client's signature with its own key and signs anew
//! with the backend's; every body framing a client may send must come out right.
//!
//! In front of two motos, what the proxy does not interpret (bucket website, ownership
//! controls, public access block, transfer acceleration, object restores) is forwarded by
//! scope and reaches moto, which serves it; browser POST uploads, CORS and lifecycle go
//! through to it too.
//!
//! moto accepts any signature: what checks the proxy's is a recording relay between the proxy
//! and each moto, whose every signed request is signed again with `aws-sigv4` (AWS's own
//! signer) and must come out the same ([`sigv4_oracle`]).
//!
//! They need `moto_server` on the PATH and fail, saying so, without it.

use ferry_core::md5::{ETag, content_md5, md5};
use ferry_core::place::Placement;
use ferry_server::{ProxyConfig, RuntimeKind, start_proxy};

use crate::support::http::{Client, Payload};
use crate::support::moto::{MOTO_KEY, Moto};
use crate::support::relay::Relay;
use crate::support::sigv4_oracle::{self, Checked};
use crate::support::{ACCESS_KEY, REGION, SECRET_KEY};

/// Every request that reached moto through `relay` signed as aws-sigv4 signs it, with moto's
/// key; those without a signature are health probes (`HEAD /`) or a browser upload as its
/// anonymous client sent it.
fn signatures_checked(relay: &Relay) -> Checked {
    let recorded = relay.recorded();
    let checked = sigv4_oracle::check(&recorded, &[MOTO_KEY], REGION);
    assert!(checked.signed > 0, "no signed request reached moto");
    for r in &checked.unsigned {
        let probe = r.method == "HEAD" && r.target == "/";
        assert!(
            probe || sigv4_oracle::anonymous_form(r),
            "an unsigned request reached moto: {r:?}"
        );
    }
    assert_eq!(
        checked.signed + checked.unsigned.len(),
        recorded.len(),
        "every request was judged"
    );
    checked
}

/// [`ProxyConfig`] for these motos, each behind a relay.
fn relayed(backends: &[(&Moto, &Relay, &str)], rt: RuntimeKind) -> ProxyConfig {
    let backends = backends
        .iter()
        .map(|(m, r, id)| {
            let mut b = m.backend(id, None);
            b.url = r.url();
            b
        })
        .collect();
    let mut cfg = ProxyConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        backends,
        ACCESS_KEY,
        SECRET_KEY,
    );
    cfg.cluster_keys = Some(crate::support::cluster_keys());
    cfg.runtime = rt;
    cfg.threads = 2;
    cfg
}

fn resign_against_moto(rt: RuntimeKind) {
    let moto = Moto::start();
    let relay = Relay::start(moto.addr);
    let mut cfg = relayed(&[(&moto, &relay, "moto")], rt);
    cfg.buffer_size = 64 * 1024;
    let proxy = start_proxy(cfg).expect("proxy starts");
    let mut c = Client::connect(proxy.local_addr());

    let r = c.put("/moto-bucket", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
    let etag = ETag::single(&md5(&data));
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
        let key = format!("/moto-bucket/obj-{i}");
        let r = c.send("PUT", &key, &[("x-amz-meta-k", "v")], &data, payload);
        assert_eq!(r.status, 200, "{payload:?}: {}", r.text());
        assert_eq!(r.header("etag"), Some(etag.as_str()), "{payload:?}");
        let r = c.get(&key);
        assert_eq!(r.status, 200, "{payload:?}");
        assert!(r.body == data, "{payload:?}: body differs");
        assert_eq!(r.header("x-amz-meta-k"), Some("v"));
    }
    let r = c.request("GET", "/moto-bucket/obj-0", &[("Range", "bytes=5-9")], b"");
    assert_eq!((r.status, r.body.as_slice()), (206, &data[5..10]));
    // A presigned-style query never reaches moto; a listing is merged as with Ferry nodes.
    let r = c.get("/moto-bucket?list-type=2&max-keys=2");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("Key"), ["obj-0", "obj-1"]);
    let token = r.xml_value("NextContinuationToken").expect("truncated");
    let r = c.get(&format!(
        "/moto-bucket?list-type=2&continuation-token={token}"
    ));
    assert_eq!(r.xml_values("Key"), ["obj-2", "obj-3", "obj-4"]);
    // CORS on an S3 backend: set and read through the proxy, which answers preflights and
    // adds the headers from the rules it reads back from moto (moto's own headers dropped).
    let cors = b"<CORSConfiguration><CORSRule><AllowedOrigin>https://m.example</AllowedOrigin>\
        <AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader></CORSRule>\
        </CORSConfiguration>";
    let md5c = content_md5(&md5(cors)).to_string();
    let r = c.request("PUT", "/moto-bucket?cors", &[("Content-MD5", &md5c)], cors);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/moto-bucket?cors");
    assert_eq!(
        r.xml_values("AllowedOrigin"),
        ["https://m.example"],
        "{}",
        r.text()
    );
    let preflight = crate::support::http::http_request(
        proxy.local_addr(),
        "OPTIONS",
        "/moto-bucket/obj-0",
        &[
            ("Origin", "https://m.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
        b"",
    );
    assert_eq!(preflight.status, 200, "{}", preflight.text());
    assert_eq!(
        preflight.header("Access-Control-Allow-Origin"),
        Some("https://m.example")
    );
    let r = c.request(
        "GET",
        "/moto-bucket/obj-0",
        &[("Origin", "https://m.example")],
        b"",
    );
    assert_eq!(r.status, 200);
    let allow: Vec<_> = r
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("access-control-allow-origin"))
        .collect();
    assert_eq!(allow.len(), 1, "{:?}", r.headers);
    let r = c.request("DELETE", "/moto-bucket?cors", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    // DeleteObjects, then the bucket.
    let mut xml = String::from("<Delete>");
    for i in 0..5 {
        xml.push_str(&format!("<Object><Key>obj-{i}</Key></Object>"));
    }
    xml.push_str("</Delete>");
    let md5h = content_md5(&md5(xml.as_bytes())).to_string();
    let r = c.request(
        "POST",
        "/moto-bucket?delete",
        &[("Content-MD5", &md5h)],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("Key").len(), 5, "{}", r.text());
    // moto's error documents have no Resource: check the code only.
    let r = c.get("/moto-bucket/obj-1");
    assert_eq!(
        (r.status, r.error_code().as_deref()),
        (404, Some("NoSuchKey"))
    );
    let r = c.request("DELETE", "/moto-bucket", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    proxy.stop();
    let checked = signatures_checked(&relay);
    eprintln!("{checked:?}");
}

#[test]
fn resign_against_moto_tokio() {
    resign_against_moto(RuntimeKind::Tokio);
}

#[test]
fn resign_against_moto_smol() {
    resign_against_moto(RuntimeKind::Smol);
}

/// Send `doc` with its `Content-MD5`.
fn put_doc(c: &mut Client, target: &str, doc: &[u8]) -> crate::support::http::Response {
    let md5h = content_md5(&md5(doc)).to_string();
    c.request("PUT", target, &[("Content-MD5", &md5h)], doc)
}

/// The proxy in re-sign mode before two motos: what it does not interpret reaches them by
/// scope, bucket configuration on both (all or nothing), an object's on its owner only.
fn forwarded_to_two_motos(rt: RuntimeKind) {
    let (a, b) = (Moto::start(), Moto::start());
    let motos = [&a, &b];
    let relays = [Relay::start(a.addr), Relay::start(b.addr)];
    let cfg = relayed(
        &[(&a, &relays[0], "moto-a"), (&b, &relays[1], "moto-b")],
        rt,
    );
    let proxy = start_proxy(cfg).expect("proxy starts");
    let placement = Placement::new(&[("moto-a", 1), ("moto-b", 1)]).unwrap();
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/fwd-bucket", b"").status, 200);

    // Bucket website: set, read back and removed through the proxy, on both motos.
    let site = b"<WebsiteConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <IndexDocument><Suffix>index.html</Suffix></IndexDocument></WebsiteConfiguration>";
    let r = put_doc(&mut c, "/fwd-bucket?website", site);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/fwd-bucket?website");
    assert_eq!(r.xml_values("Suffix"), ["index.html"], "{}", r.text());
    for m in motos {
        let r = m.client().get("/fwd-bucket?website");
        assert_eq!(r.xml_values("Suffix"), ["index.html"], "{}", r.text());
    }
    // Ownership controls and transfer acceleration.
    let own = b"<OwnershipControls xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Rule>\
        <ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>";
    let r = put_doc(&mut c, "/fwd-bucket?ownershipControls", own);
    assert_eq!(r.status, 200, "{}", r.text());
    let accel = b"<AccelerateConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <Status>Enabled</Status></AccelerateConfiguration>";
    let r = put_doc(&mut c, "/fwd-bucket?accelerate", accel);
    assert_eq!(r.status, 200, "{}", r.text());
    for m in motos {
        let r = m.client().get("/fwd-bucket?ownershipControls");
        assert_eq!(
            r.xml_values("ObjectOwnership"),
            ["ObjectWriter"],
            "{}",
            r.text()
        );
        let r = m.client().get("/fwd-bucket?accelerate");
        assert_eq!(r.xml_values("Status"), ["Enabled"], "{}", r.text());
    }
    // A public access block, put and deleted.
    let pab = b"<PublicAccessBlockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>true</IgnorePublicAcls>\
        <BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>true\
        </RestrictPublicBuckets></PublicAccessBlockConfiguration>";
    let r = put_doc(&mut c, "/fwd-bucket?publicAccessBlock", pab);
    assert_eq!(r.status, 200, "{}", r.text());
    for m in motos {
        let r = m.client().get("/fwd-bucket?publicAccessBlock");
        assert_eq!(r.xml_values("BlockPublicAcls"), ["true"], "{}", r.text());
    }
    let r = c.request("DELETE", "/fwd-bucket?publicAccessBlock", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    for m in motos {
        let r = m.client().get("/fwd-bucket?publicAccessBlock");
        assert_eq!(r.status, 404, "{}", r.text());
    }

    // All or nothing: a bucket only moto-a has (made there directly). The write fails on
    // moto-b, whose refusal is the answer, and moto-a gets back what it had.
    assert_eq!(a.client().put("/half-bucket", b"").status, 200);
    let old = b"<WebsiteConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <IndexDocument><Suffix>old.html</Suffix></IndexDocument></WebsiteConfiguration>";
    assert_eq!(
        put_doc(&mut a.client(), "/half-bucket?website", old).status,
        200
    );
    let r = put_doc(&mut c, "/half-bucket?website", site);
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.error_code().as_deref(), Some("NoSuchBucket"));
    let r = a.client().get("/half-bucket?website");
    assert_eq!(r.xml_values("Suffix"), ["old.html"], "{}", r.text());
    let r = put_doc(&mut c, "/half-bucket?ownershipControls", own);
    assert_eq!(r.status, 404, "{}", r.text());
    let r = a.client().get("/half-bucket?ownershipControls");
    assert_eq!(
        r.status,
        404,
        "moto-a kept a write that failed elsewhere: {}",
        r.text()
    );

    // An object's operation reaches its owner: a restore of an archived object.
    let key = (0..)
        .map(|i| format!("archived-{i}"))
        .find(|k| placement.pick("fwd-bucket", k) == 1)
        .unwrap();
    let r = c.request(
        "PUT",
        &format!("/fwd-bucket/{key}"),
        &[("x-amz-storage-class", "GLACIER")],
        b"cold data",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let restore = b"<RestoreRequest xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <Days>1</Days></RestoreRequest>";
    let md5h = content_md5(&md5(restore)).to_string();
    let r = c.request(
        "POST",
        &format!("/fwd-bucket/{key}?restore"),
        &[("Content-MD5", &md5h)],
        restore,
    );
    assert!(matches!(r.status, 200 | 202), "{}: {}", r.status, r.text());
    let r = b
        .client()
        .request("HEAD", &format!("/fwd-bucket/{key}"), &[], b"");
    assert!(r.header("x-amz-restore").is_some(), "{:?}", r.headers);
    let r = a
        .client()
        .request("HEAD", &format!("/fwd-bucket/{key}"), &[], b"");
    assert_eq!(r.status, 404);

    // A browser upload: the proxy finds the key in the form and forwards it to its owner.
    let key = (0..)
        .map(|i| format!("posted-{i}"))
        .find(|k| placement.pick("fwd-bucket", k) == 0)
        .unwrap();
    let boundary = "ferryformboundary";
    let form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n{key}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\n\
         Content-Type: text/plain\r\n\r\nposted bytes\r\n--{boundary}--\r\n"
    );
    let ct = format!("multipart/form-data; boundary={boundary}");
    let r = crate::support::http::http_request(
        proxy.local_addr(),
        "POST",
        "/fwd-bucket",
        &[("Content-Type", &ct)],
        form.as_bytes(),
    );
    assert!(
        matches!(r.status, 200 | 201 | 204),
        "{}: {}",
        r.status,
        r.text()
    );
    assert_eq!(
        a.client().get(&format!("/fwd-bucket/{key}")).body,
        b"posted bytes"
    );
    assert_eq!(c.get(&format!("/fwd-bucket/{key}")).body, b"posted bytes");

    // CORS and lifecycle, which the proxy checks itself, reach both motos.
    let cors = b"<CORSConfiguration><CORSRule><AllowedOrigin>https://m.example</AllowedOrigin>\
        <AllowedMethod>PUT</AllowedMethod></CORSRule></CORSConfiguration>";
    let r = put_doc(&mut c, "/fwd-bucket?cors", cors);
    assert_eq!(r.status, 200, "{}", r.text());
    let lifecycle = b"<LifecycleConfiguration><Rule><ID>expire-logs</ID><Filter><Prefix>logs/\
        </Prefix></Filter><Status>Enabled</Status><Expiration><Days>7</Days></Expiration>\
        </Rule></LifecycleConfiguration>";
    let r = put_doc(&mut c, "/fwd-bucket?lifecycle", lifecycle);
    assert_eq!(r.status, 200, "{}", r.text());
    for m in motos {
        let r = m.client().get("/fwd-bucket?cors");
        assert_eq!(
            r.xml_values("AllowedOrigin"),
            ["https://m.example"],
            "{}",
            r.text()
        );
        let r = m.client().get("/fwd-bucket?lifecycle");
        assert_eq!(r.xml_values("ID"), ["expire-logs"], "{}", r.text());
    }
    proxy.stop();
    for relay in &relays {
        let checked = signatures_checked(relay);
        eprintln!("{checked:?}");
    }
}

#[test]
fn forwarded_to_two_motos_tokio() {
    forwarded_to_two_motos(RuntimeKind::Tokio);
}

#[test]
fn forwarded_to_two_motos_smol() {
    forwarded_to_two_motos(RuntimeKind::Smol);
}
