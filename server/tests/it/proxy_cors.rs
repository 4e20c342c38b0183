//! CORS through the proxy: the configuration lands on every node (re-signed with the nodes'
//! own keys), a second proxy that shares nothing with the first answers preflights from the
//! nodes, and the proxy's own errors (a node down) carry the CORS headers.

use ferry_core::s3::sigv4::Credentials;
use ferry_server::{BackendConfig, ProxyConfig, RuntimeKind, start_proxy};

use crate::support::http::{Response, http_request};
use crate::support::proxy::{Auth, Setup};
use crate::support::sdk::b64;
use crate::support::{ACCESS_KEY, SECRET_KEY};

const RULES: &[u8] = b"<CORSConfiguration><CORSRule><ID>web</ID>\
    <AllowedOrigin>https://web.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod>\
    <AllowedMethod>PUT</AllowedMethod><AllowedHeader>*</AllowedHeader>\
    <MaxAgeSeconds>60</MaxAgeSeconds></CORSRule></CORSConfiguration>";

fn md5_b64(body: &[u8]) -> String {
    use md5::Digest as _;
    b64(&md5::Md5::digest(body))
}

fn preflight(addr: std::net::SocketAddr, path: &str) -> Response {
    http_request(
        addr,
        "OPTIONS",
        path,
        &[
            ("Origin", "https://web.example"),
            ("Access-Control-Request-Method", "PUT"),
            ("Access-Control-Request-Headers", "x-amz-date"),
        ],
        b"",
    )
}

fn cors_everywhere(rt: RuntimeKind) {
    let mut s = Setup::start(rt, 2, Auth::OwnKeys);
    let mut c = s.client();
    assert_eq!(c.put("/webb", b"").status, 200);
    let k0 = s.key_on("webb", "k", 0);
    let k1 = s.key_on("webb", "k", 1);
    for k in [&k0, &k1] {
        assert_eq!(c.put(&format!("/webb/{k}"), b"x").status, 200);
    }
    let r = c.request(
        "PUT",
        "/webb?cors",
        &[("Content-MD5", &md5_b64(RULES))],
        RULES,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // On every node, as the node stores it.
    for n in &s.nodes {
        let r = n.client().get("/webb?cors");
        assert_eq!(r.status, 200, "{}: {}", n.id, r.text());
        assert_eq!(r.xml_values("AllowedMethod"), ["GET", "PUT"], "{}", n.id);
    }
    // Through the proxy, which signs its own GetBucketCors with the nodes' keys.
    let r = preflight(s.addr, "/webb/any");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://web.example")
    );
    assert_eq!(r.header("Access-Control-Max-Age"), Some("60"));

    // A second proxy in front of the same nodes: nothing shared, the rules come from a node.
    let backends: Vec<BackendConfig> = s
        .nodes
        .iter()
        .map(|n| {
            let mut b = BackendConfig::new(&n.id, format!("http://{}", n.addr));
            b.credentials = Some(Credentials::new(&n.access_key, &n.secret_key));
            b
        })
        .collect();
    let mut cfg = ProxyConfig::new(
        "127.0.0.1:0".parse().expect("address"),
        backends,
        ACCESS_KEY,
        SECRET_KEY,
    );
    cfg.cluster_keys = Some(crate::support::cluster_keys());
    cfg.runtime = rt;
    cfg.threads = 1;
    let other = start_proxy(cfg).expect("second proxy");
    let r = preflight(other.local_addr(), "/webb/any");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = preflight(other.local_addr(), "/nothere/any");
    r.expect_error(403, "AccessForbidden");
    other.stop();

    // The proxy's own error, a node down: still with the headers (from the other node).
    s.nodes[1].stop();
    let origin = [("Origin", "https://web.example")];
    let r = c.request("GET", &format!("/webb/{k1}"), &origin, b"");
    r.expect_error(503, "SlowDown");
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://web.example")
    );
    let r = c.request("GET", &format!("/webb/{k0}"), &origin, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://web.example")
    );
    // A change needs every node: refused, and nothing changes.
    let r = c.request("DELETE", "/webb?cors", &[], b"");
    r.expect_error(503, "SlowDown");
    assert_eq!(s.nodes[0].client().get("/webb?cors").status, 200);
}

#[test]
fn cors_everywhere_tokio() {
    cors_everywhere(RuntimeKind::Tokio);
}

#[test]
fn cors_everywhere_smol() {
    cors_everywhere(RuntimeKind::Smol);
}
