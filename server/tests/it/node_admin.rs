//! The node's admin listener: health, readiness, Prometheus metrics with the store's figures,
//! and the CPU profile endpoint's errors.

use ferry_server::RuntimeKind;

use crate::support::http::{metrics_after, plain_get};
use crate::support::node::Node;

/// The value of the sample `name` (no labels) in a text exposition.
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{metrics}"))
}

fn admin_endpoints(rt: RuntimeKind) {
    let mut node = Node::start(rt);
    let admin = node
        .handle
        .as_ref()
        .and_then(|h| h.admin_addr())
        .expect("admin");
    assert!(admin.ip().is_loopback());
    let mut c = node.client();
    assert_eq!(c.put("/adm", b"").status, 200);
    assert_eq!(c.put("/adm/a", &[1; 1000]).status, 200);
    assert_eq!(c.put("/adm/b", &[2; 3000]).status, 200);
    assert_eq!(c.put("/adm/a", &[3; 2000]).status, 200);
    assert_eq!(c.request("DELETE", "/adm/b", &[], b"").status, 204);
    assert_eq!(c.get("/adm/a").body.len(), 2000);
    assert_eq!(c.get("/adm/missing").status, 404);

    let r = plain_get(admin, "/healthz");
    assert_eq!((r.status, r.text().as_str()), (200, "ok\n"));
    let r = plain_get(admin, "/readyz");
    assert_eq!(r.status, 200);
    assert!(r.text().contains(" ok"), "{}", r.text());

    assert_eq!(plain_get(admin, "/metrics").status, 200);
    let m = metrics_after(admin, "ferry_node", 7);
    for want in [
        "ferry_node_requests_total{operation=\"PutObject\",status=\"200\"} 3",
        "ferry_node_requests_total{operation=\"GetObject\",status=\"404\"} 1",
        "ferry_node_requests_total{operation=\"DeleteObject\",status=\"204\"} 1",
        "ferry_node_request_duration_seconds_count{operation=\"CreateBucket\"} 1",
        "ferry_node_bytes_in_total 6000",
    ] {
        assert!(m.contains(want), "{want} in\n{m}");
    }
    assert_eq!(sample(&m, "ferry_node_store_objects"), 1.0);
    assert_eq!(sample(&m, "ferry_node_store_object_bytes"), 2000.0);
    // The first `a` and `b`, no reader left.
    assert_eq!(sample(&m, "ferry_node_store_files_retired_total"), 2.0);
    assert_eq!(sample(&m, "ferry_node_store_files_deleted_total"), 2.0);
    assert_eq!(sample(&m, "ferry_node_store_files_pending_cleanup"), 0.0);
    // A bucket, three puts and a delete each committed once.
    assert!(sample(&m, "ferry_node_store_commit_duration_seconds_count") >= 5.0);
    assert!(sample(&m, "ferry_node_store_disk_free_bytes") > 0.0);
    assert!(sample(&m, "ferry_node_buffer_pool_hit_ratio") >= 0.0);
    assert!(sample(&m, "ferry_node_accepted_connections_total") >= 1.0);

    // The profile endpoint is there (its sampling is tested on the proxy's listener).
    assert_eq!(
        plain_get(admin, "/debug/pprof/profile?seconds=x").status,
        400
    );
    assert_eq!(plain_get(admin, "/nope").status, 404);
    // On the S3 listener there is no admin side: an anonymous request for a bucket that does
    // not exist.
    assert_eq!(plain_get(node.addr, "/metrics").status, 404);

    // Restarted: the store's figures come back from the committed records.
    node.stop();
    node.restart();
    let admin = node
        .handle
        .as_ref()
        .and_then(|h| h.admin_addr())
        .expect("admin");
    let m = plain_get(admin, "/metrics").text();
    assert_eq!(sample(&m, "ferry_node_store_objects"), 1.0);
    assert_eq!(sample(&m, "ferry_node_store_object_bytes"), 2000.0);
}

#[test]
fn admin_endpoints_tokio() {
    admin_endpoints(RuntimeKind::Tokio);
}

#[test]
fn admin_endpoints_smol() {
    admin_endpoints(RuntimeKind::Smol);
}
