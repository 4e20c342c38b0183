//! The proxy serving HTTPS (`tls` in its configuration) in front of two plain-HTTP nodes, on
//! both runtimes: the official SDK over https trusting a self-signed certificate made here
//! (PUT, GET, multipart, list); plain HTTP to the TLS port and a client that does not trust
//! the certificate both fail, and the proxy keeps serving. A node serves HTTPS the same
//! way (and takes SSE-C keys there, which it refuses over plain HTTP), and unusable
//! certificate files stop a start with an error naming them.

use std::net::SocketAddr;

use base64::Engine as _;

use aws_sdk_s3::Client;
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::{Provider, TlsContext, TrustStore};
use ferry_server::{BackendConfig, ProxyConfig, RuntimeKind, TlsFiles, start_node, start_proxy};

use crate::support::http::{Conn, plain_get};
use crate::support::node::node_config;
use crate::support::proxy::{Auth, Setup};
use crate::support::sdk;
use crate::support::{ACCESS_KEY, SECRET_KEY};

/// A self-signed certificate for `localhost` and 127.0.0.1, written to a temporary directory.
pub(crate) struct TestCert {
    pub(crate) pem: String,
    pub(crate) files: TlsFiles,
    _dir: tempfile::TempDir,
}

pub(crate) fn self_signed() -> TestCert {
    self_signed_for(&["localhost", "127.0.0.1"])
}

/// A self-signed certificate for `names` only.
pub(crate) fn self_signed_for(names: &[&str]) -> TestCert {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names).expect("certificate");
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    TestCert {
        pem: ck.cert.pem(),
        files: TlsFiles::new(cert, key),
        _dir: dir,
    }
}

/// An SDK client for `https://localhost:PORT` trusting only `ca` (nothing if `None`); rustls
/// on ring, like the proxy.
pub(crate) fn https_client(addr: SocketAddr, ca: Option<&str>) -> Client {
    let trust = match ca {
        Some(pem) => TrustStore::empty().with_pem_certificate(pem.as_bytes()),
        None => TrustStore::empty(),
    };
    let tls = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .expect("TLS context");
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .tls_context(tls)
        .build_https();
    let config = sdk::config(addr)
        .endpoint_url(format!("https://localhost:{}", addr.port()))
        .http_client(http)
        .build();
    Client::from_conf(config)
}

fn body(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(131).wrapping_add(seed) % 253) as u8)
        .collect()
}

async fn get(c: &Client, key: &str) -> Vec<u8> {
    let out = c.get_object().bucket("tls").key(key).send().await;
    let out = out.unwrap_or_else(|e| panic!("GET {key}: {e:?}"));
    out.body.collect().await.unwrap().into_bytes().to_vec()
}

/// PUT, GET, multipart and list through the TLS proxy.
pub(crate) async fn s3_round_trips(c: &Client) {
    c.create_bucket().bucket("tls").send().await.unwrap();
    let small = body(300_000, 1);
    c.put_object()
        .bucket("tls")
        .key("small")
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    assert!(get(c, "small").await == small, "GET small differs");

    let parts = [body(64 << 10, 2), body(64 << 10, 3), body(10_000, 4)];
    let id = c
        .create_multipart_upload()
        .bucket("tls")
        .key("multi")
        .send()
        .await
        .unwrap()
        .upload_id
        .unwrap();
    let mut done = Vec::new();
    for (n, data) in (1..).zip(&parts) {
        let out = c
            .upload_part()
            .bucket("tls")
            .key("multi")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        let etag = out.e_tag.unwrap();
        done.push(CompletedPart::builder().part_number(n).e_tag(etag).build());
    }
    c.complete_multipart_upload()
        .bucket("tls")
        .key("multi")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(get(c, "multi").await == parts.concat(), "GET multi differs");

    let list = c.list_objects_v2().bucket("tls").send().await.unwrap();
    let keys: Vec<&str> = list.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["multi", "small"]);
}

/// Plain HTTP to the TLS port: what comes back before the connection closes (an alert at
/// most, never an HTTP response).
/// (A reset, closing with our bytes unread, counts as a close; a read timing out fails.)
fn plain_http_to(addr: SocketAddr) -> Vec<u8> {
    let mut c = Conn::connect(addr);
    c.send_raw(b"GET /tls HTTP/1.1\r\nHost: localhost\r\n\r\n");
    c.read_to_end()
}

fn proxy_over_tls(rt: RuntimeKind) {
    let cert = self_signed();
    let s = Setup::start_with(rt, 2, Auth::Passthrough, |c| {
        c.tls = Some(cert.files.clone());
    });
    sdk::block_on(async {
        let trusting = https_client(s.addr, Some(&cert.pem));
        s3_round_trips(&trusting).await;

        let got = plain_http_to(s.addr);
        assert!(
            !got.starts_with(b"HTTP/"),
            "{:?}",
            String::from_utf8_lossy(&got)
        );
        let untrusting = https_client(s.addr, None);
        let err = untrusting.list_buckets().send().await.unwrap_err();
        assert!(matches!(err, SdkError::DispatchFailure(_)), "{err:?}");
        assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");

        // Still serving, over TLS; the admin listener speaks plain HTTP.
        assert!(get(&trusting, "small").await == body(300_000, 1));
        tls_version_conditions(&trusting).await;
        assert_eq!(plain_get(s.admin(), "/healthz").status, 200);
    });
}

/// `s3:TlsVersion` is the connection's (TLS 1.3 here, rustls' choice on both ends), on a
/// node and through the proxy, which tells its plain-HTTP nodes; AWS's "TLS 1.2 or later"
/// example denies nothing then.
async fn tls_version_conditions(c: &Client) {
    c.create_bucket()
        .bucket("tlsv")
        .send()
        .await
        .expect("create");
    for key in ["new/a", "old/a", "none/a", "aws/a"] {
        c.put_object()
            .bucket("tlsv")
            .key(key)
            .body(ByteStream::from_static(b"v"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
    }
    let deny = |prefix: &str, condition: serde_json::Value| {
        serde_json::json!({"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
            "Resource": format!("arn:aws:s3:::tlsv/{prefix}/*"), "Condition": condition})
    };
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [
        deny("new", serde_json::json!({"NumericGreaterThanEquals": {"s3:TlsVersion": 1.3}})),
        deny("old", serde_json::json!({"NumericLessThan": {"s3:TlsVersion": 1.3}})),
        deny("none", serde_json::json!({"Null": {"s3:TlsVersion": true}})),
        deny("aws", serde_json::json!({"NumericLessThan": {"s3:TlsVersion": 1.2}})),
    ]});
    c.put_bucket_policy()
        .bucket("tlsv")
        .policy(policy.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
    let r = c.get_object().bucket("tlsv").key("new/a").send().await;
    sdk::assert_error(r, 403, Some("AccessDenied"));
    for key in ["old/a", "none/a", "aws/a"] {
        c.get_object()
            .bucket("tlsv")
            .key(key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{key}: {}", sdk::show(&e)));
    }
}

#[test]
fn proxy_over_tls_on_tokio() {
    proxy_over_tls(RuntimeKind::Tokio);
}

#[test]
fn proxy_over_tls_on_smol() {
    proxy_over_tls(RuntimeKind::Smol);
}

/// `ferry node` takes the same options: an SDK client reaches it over https.
fn node_over_tls(rt: RuntimeKind) {
    let cert = self_signed();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = node_config(dir.path(), rt);
    cfg.fsync = false;
    cfg.threads = 1;
    cfg.tls = Some(cert.files.clone());
    let node = start_node(cfg).expect("node starts");
    sdk::block_on(async {
        let c = https_client(node.local_addr(), Some(&cert.pem));
        c.create_bucket().bucket("tls").send().await.unwrap();
        let data = body(100_000, 9);
        c.put_object()
            .bucket("tls")
            .key("k")
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        assert!(get(&c, "k").await == data);
        // SSE-C needs TLS, which this is: no testing option is needed.
        let key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
        let key_md5 = base64::engine::general_purpose::STANDARD
            .encode(<md5::Md5 as md5::Digest>::digest([5u8; 32]));
        c.put_object()
            .bucket("tls")
            .key("sse-c")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&key)
            .sse_customer_key_md5(&key_md5)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}", sdk::show(&e)));
        let got = c
            .get_object()
            .bucket("tls")
            .key("sse-c")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&key)
            .sse_customer_key_md5(&key_md5)
            .send()
            .await
            .expect("get with the key");
        assert!(got.body.collect().await.unwrap().into_bytes() == data);
        let r = c.get_object().bucket("tls").key("sse-c").send().await;
        sdk::assert_error(r, 400, Some("InvalidRequest"));
        tls_version_conditions(&c).await;
    });
    node.stop();
}

#[test]
fn node_over_tls_on_tokio() {
    node_over_tls(RuntimeKind::Tokio);
}

#[test]
fn node_over_tls_on_smol() {
    node_over_tls(RuntimeKind::Smol);
}

#[test]
fn unusable_certificate_files_stop_the_start() {
    let cert = self_signed();
    let backend = BackendConfig::new("n", "http://127.0.0.1:1");
    let start = |tls: TlsFiles| {
        let mut cfg = ProxyConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![backend.clone()],
            ACCESS_KEY,
            SECRET_KEY,
        );
        cfg.cluster_keys = Some(crate::support::cluster_keys());
        cfg.tls = Some(tls);
        start_proxy(cfg).map(|p| p.stop()).unwrap_err().to_string()
    };
    let missing = cert.files.cert.with_file_name("missing.pem");
    let err = start(TlsFiles::new(&missing, &cert.files.key));
    assert!(err.contains("missing.pem"), "{err}");
    // The certificate where the key should be.
    let err = start(TlsFiles::new(&cert.files.cert, &cert.files.cert));
    assert!(err.contains("private key"), "{err}");
}
