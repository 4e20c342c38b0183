//! Re-signing against an S3 server that is not Ferry: moto's server mode (`pip install
//! 'moto[server]'`). The proxy checks the client's signature with its own key and signs anew
//! with the backend's; every body framing a client may send must come out right.
//!
//! Skipped, with a message, when `moto_server` is not on the PATH.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferry_core::md5::{ETag, content_md5, md5};
use ferry_core::s3::sigv4::Credentials;
use ferry_server::proxy::{AuthMode, BackendKind};
use ferry_server::{BackendConfig, ProxyConfig, RuntimeKind, start_proxy};

use crate::support::http::{Client, Payload};
use crate::support::{ACCESS_KEY, SECRET_KEY};

struct Moto {
    child: Child,
    addr: SocketAddr,
}

impl Moto {
    fn start() -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ok()?
            .port();
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut moto = Self { child, addr };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(addr).is_err() {
            if Instant::now() > deadline || moto.child.try_wait().ok().flatten().is_some() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(moto)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn resign_against_moto(rt: RuntimeKind) {
    let Some(moto) = Moto::start() else {
        eprintln!(
            "SKIPPED: moto_server is not installed or did not start \
             (pip install 'moto[server]' to run this test)"
        );
        return;
    };
    let mut b = BackendConfig::new("moto", format!("http://{}", moto.addr));
    b.kind = BackendKind::S3;
    b.auth = AuthMode::Resign;
    // moto accepts any key: what matters is that the proxy signs with this one, not the client's.
    b.credentials = Some(Credentials::new("moto-access", "moto-secret"));
    let mut cfg = ProxyConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![b],
        ACCESS_KEY,
        SECRET_KEY,
    );
    cfg.runtime = rt;
    cfg.threads = 2;
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
}

#[test]
fn resign_against_moto_tokio() {
    resign_against_moto(RuntimeKind::Tokio);
}

#[test]
fn resign_against_moto_smol() {
    resign_against_moto(RuntimeKind::Smol);
}
