//! Backend failure and recovery: a stopped node's keys answer 503 at once while the others
//! keep working, and the node is served again after it restarts, without restarting the proxy;
//! bucket reads go on to another backend when theirs fails under them.
//! Also the admin endpoints.

use std::io::Write;
use std::time::{Duration, Instant};

use ferry_server::RuntimeKind;

use crate::support;
use crate::support::http::{self, Payload, metrics_after, plain_get};
use crate::support::proxy::{Auth, Setup};

fn node_down_and_back(rt: RuntimeKind) {
    let mut s = Setup::start(rt, 3, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/hbk", b"").status, 200);
    let keys: Vec<String> = (0..3).map(|n| s.key_on("hbk", "k", n)).collect();
    for k in &keys {
        assert_eq!(c.put(&format!("/hbk/{k}"), k.as_bytes()).status, 200);
    }
    let r = plain_get(s.admin(), "/readyz");
    let (status, body) = (r.status, r.text());
    assert_eq!(status, 200);
    assert_eq!(body.matches(" up").count(), 3, "{body}");

    s.nodes[1].stop();
    // Its keys: 503 SlowDown once the retry window has passed (refused connection, or
    // already marked down by a probe), with Retry-After.
    let r = c.get(&format!("/hbk/{}", keys[1]));
    r.expect_error(503, "SlowDown");
    assert_eq!(r.header("Retry-After"), Some("1"));
    let r = c.request("PUT", &format!("/hbk/{}", keys[1]), &[], b"new");
    r.expect_error(503, "SlowDown");
    // The others are unaffected.
    for n in [0, 2] {
        let r = c.get(&format!("/hbk/{}", keys[n]));
        assert_eq!((r.status, r.body.as_slice()), (200, keys[n].as_bytes()));
    }
    // A listing would miss its keys: refused; bucket reads go to a healthy node.
    c.get("/hbk?list-type=2").expect_error(503, "SlowDown");
    assert_eq!(c.request("HEAD", "/hbk", &[], b"").status, 200);
    // Health shows it.
    let r = plain_get(s.admin(), "/readyz");
    let (status, body) = (r.status, r.text());
    assert_eq!(status, 200, "the others are up");
    assert!(body.contains("node-2") && body.contains(" down"), "{body}");
    let metrics = plain_get(s.admin(), "/metrics").text();
    assert!(
        metrics.contains("ferry_proxy_backend_up{backend=\"node-2\"} 0"),
        "{metrics}"
    );
    assert!(metrics.contains("ferry_proxy_backend_up{backend=\"node-1\"} 1"));
    assert!(
        metrics.contains("operation=\"GetObject\",status=\"503\""),
        "{metrics}"
    );

    // Back on the same port and data: served again once a probe sees it.
    s.nodes[1].restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.get(&format!("/hbk/{}", keys[1]));
        if r.status == 200 {
            assert_eq!(r.body, keys[1].as_bytes());
            break;
        }
        assert_eq!(r.status, 503, "{}", r.text());
        assert!(Instant::now() < deadline, "node never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.put(&format!("/hbk/{}", keys[1]), b"again").status, 200);
    assert_eq!(c.get("/hbk?list-type=2").xml_values("Key").len(), 3);
}

#[test]
fn node_down_and_back_tokio() {
    node_down_and_back(RuntimeKind::Tokio);
}

#[test]
fn node_down_and_back_smol() {
    node_down_and_back(RuntimeKind::Smol);
}

/// A bucket-level read goes to the first healthy backend; when that one fails under it (it
/// stopped, and no probe has seen it yet) the read goes on to the next, as does the GetBucketCors
/// a preflight makes: the client sees the answer, not a 503.
fn bucket_reads_go_on_past_a_failing_backend(rt: RuntimeKind) {
    let rules = b"<CORSConfiguration><CORSRule><AllowedOrigin>https://web.example</AllowedOrigin>\
        <AllowedMethod>PUT</AllowedMethod><AllowedHeader>*</AllowedHeader></CORSRule>\
        </CORSConfiguration>";
    let md5h = ferry_core::md5::content_md5(&ferry_core::md5::md5(rules)).to_string();
    // Bucket `fbk`, versioned and with CORS rules, on two nodes; the one bucket reads try
    // first then stops, unseen by any probe: the request itself finds it gone.
    let failing = || {
        let mut s = Setup::start_with(rt, 2, Auth::Passthrough, |cfg| {
            cfg.health_interval = Duration::from_secs(3600);
            cfg.retry_window = Duration::from_millis(100);
        });
        let mut c = s.client();
        assert_eq!(c.put("/fbk", b"").status, 200);
        let on = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
        assert_eq!(c.put("/fbk?versioning", on).status, 200);
        let r = c.request("PUT", "/fbk?cors", &[("Content-MD5", &md5h)], rules);
        assert_eq!(r.status, 200, "{}", r.text());
        let mut order = Vec::new();
        s.placement.ranked("fbk", "", &mut order);
        s.nodes[order[0]].stop();
        let gone = s.nodes[order[0]].id.clone();
        (s, c, gone)
    };

    let (s, mut c, gone) = failing();
    let r = c.get("/fbk?versioning");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_value("Status").as_deref(), Some("Enabled"));
    let metrics = plain_get(s.admin(), "/metrics").text();
    assert!(
        metrics.contains(&format!("ferry_proxy_backend_up{{backend=\"{gone}\"}} 0")),
        "the failed backend is not marked down: {metrics}"
    );

    // The preflight's GetBucketCors, from a proxy whose CORS cache is empty.
    let (s, _, _) = failing();
    let r = http::http_request(
        s.addr,
        "OPTIONS",
        "/fbk/any",
        &[
            ("Origin", "https://web.example"),
            ("Access-Control-Request-Method", "PUT"),
        ],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://web.example")
    );

    // The first backend up but busy (its one connection taken by a PUT whose body has not all
    // come), so never marked down: the read goes on to the other.
    let s = Setup::start_with(rt, 2, Auth::Passthrough, |cfg| {
        cfg.health_interval = Duration::from_secs(3600);
        cfg.backend_max_connections = 1;
    });
    let mut c = s.client();
    assert_eq!(c.put("/fbk", b"").status, 200);
    let mut order = Vec::new();
    s.placement.ranked("fbk", "", &mut order);
    let busy = s.nodes[order[0]].id.clone();
    let key = s.key_on("fbk", "held", order[0]);
    let mut held = s.client();
    let put = held.encode(
        "PUT",
        &format!("/fbk/{key}"),
        &[],
        &[7; 4096],
        Payload::Unsigned,
    );
    held.stream.write_all(&put[..put.len() - 100]).unwrap();
    let in_flight = format!("ferry_proxy_backend_in_flight{{backend=\"{busy}\"}} 1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !plain_get(s.admin(), "/metrics").text().contains(&in_flight) {
        assert!(Instant::now() < deadline, "the PUT never reached {busy}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = c.get("/fbk?versioning");
    assert_eq!(r.status, 200, "{}", r.text());
    // (It was tried first, and found busy.)
    let refused =
        format!("ferry_proxy_backend_slow_down_total{{backend=\"{busy}\",reason=\"busy\"}} ");
    let metrics = plain_get(s.admin(), "/metrics").text();
    let count = metrics
        .lines()
        .find_map(|l| l.strip_prefix(&refused)?.trim().parse::<u64>().ok());
    assert!(count >= Some(1), "{refused}in {metrics}");
    held.stream.write_all(&put[put.len() - 100..]).unwrap();
    assert_eq!(held.read_response(false).status, 200);
}

#[test]
fn bucket_reads_go_on_past_a_failing_backend_tokio() {
    bucket_reads_go_on_past_a_failing_backend(RuntimeKind::Tokio);
}

#[test]
fn bucket_reads_go_on_past_a_failing_backend_smol() {
    bucket_reads_go_on_past_a_failing_backend(RuntimeKind::Smol);
}

#[test]
fn admin_endpoints() {
    let s = Setup::start(RuntimeKind::Tokio, 2, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/adm", b"").status, 200);
    assert_eq!(c.put("/adm/k", &[7u8; 1000]).status, 200);
    assert_eq!(c.get("/adm/k").body.len(), 1000);
    let r = plain_get(s.admin(), "/healthz");
    let (status, body) = (r.status, r.text());
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    assert_eq!(plain_get(s.admin(), "/metrics").status, 200);
    let m = metrics_after(s.admin(), "ferry_proxy", 3);
    for want in [
        "ferry_proxy_requests_total{operation=\"PutObject\",status=\"200\"} 1",
        "ferry_proxy_requests_total{operation=\"CreateBucket\",status=\"200\"} 1",
        "ferry_proxy_request_duration_seconds_count{operation=\"GetObject\"} 1",
        "ferry_proxy_bytes_in_total 1000",
        "ferry_proxy_bytes_out_total 1000",
        "ferry_proxy_buffer_pool_retained_bytes",
        "ferry_proxy_open_connections",
    ] {
        assert!(m.contains(want), "{want} in\n{m}");
    }
    let status = plain_get(s.admin(), "/nope").status;
    assert_eq!(status, 404);
    // The S3 listener answers /healthz too, without auth.
    let r = plain_get(s.addr, "/healthz");
    let (status, body) = (r.status, r.text());
    assert_eq!((status, body.as_str()), (200, "ok"));
}

/// `start_cluster`: two nodes behind a proxy in one process (what `ferry` alone runs).
#[test]
fn local_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg =
        ferry_server::ClusterConfig::new(dir.path(), support::ACCESS_KEY, support::SECRET_KEY);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.fsync = false;
    cfg.threads = 1;
    let cluster = ferry_server::start_cluster(cfg).expect("cluster starts");
    assert_eq!(cluster.node_addrs().len(), 2);
    let mut c = http::Client::connect(cluster.endpoint());
    assert_eq!(c.put("/local", b"").status, 200);
    for i in 0..20 {
        assert_eq!(c.put(&format!("/local/k{i}"), b"v").status, 200);
    }
    assert_eq!(c.get("/local?list-type=2").xml_values("Key").len(), 20);
    // Both nodes got some of the keys.
    for addr in cluster.node_addrs() {
        let mut n = http::Client::connect(addr);
        let keys = n.get("/local?list-type=2").xml_values("Key").len();
        assert!(keys > 0 && keys < 20, "{keys} keys on {addr}");
    }
    assert!(dir.path().join("node-1").is_dir() && dir.path().join("node-2").is_dir());
    cluster.stop();
}
