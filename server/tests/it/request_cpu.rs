//! CPU seconds per S3 operation, off-CPU waits and hit rates on `/metrics`: a `ferry node`
//! process under PUTs and GETs, whose per-operation CPU seconds are its process's CPU time
//! but for what runs outside requests; and a proxy in front of nodes with its connection
//! waits and pool reuse.

use std::collections::BTreeMap;

use ferry_server::RuntimeKind;

use crate::support::http::{Client, metrics_after, plain_get};
use crate::support::process::{KEY_ENV, node_with_admin, signal};
use crate::support::proxy::{Auth, Setup};

/// The samples of family `name` (`name{labels} value` or `name value`), by label text.
fn samples(metrics: &str, name: &str) -> BTreeMap<String, f64> {
    metrics
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(r) => r.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            Some((labels.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

fn one(metrics: &str, name: &str) -> f64 {
    *samples(metrics, name)
        .get("")
        .unwrap_or_else(|| panic!("{name} in\n{metrics}"))
}

#[test]
fn per_operation_cpu_is_counted_within_the_process_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, admin) = node_with_admin(dir.path(), &["--threads", "2"], &KEY_ENV);
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/cpu", b"").status, 200);
    let before = metrics_after(admin, "ferry_node", 1);

    // 16 MiB in and out: the requests' CPU time dwarfs what runs beside them.
    let body = vec![0xa5_u8; 1024 * 1024];
    for i in 0..16 {
        assert_eq!(c.put(&format!("/cpu/k{i}"), &body).status, 200);
    }
    for i in 0..16 {
        assert_eq!(c.get(&format!("/cpu/k{i}")).body.len(), body.len());
    }
    let after = metrics_after(admin, "ferry_node", 33);

    let cpu = |m: &str| samples(m, "ferry_node_request_cpu_seconds_total");
    let (b, a) = (cpu(&before), cpu(&after));
    let put = "operation=\"PutObject\"";
    let get = "operation=\"GetObject\"";
    // Every operation answered between the scrapes has its CPU time counted.
    let answered = |m: &str| -> BTreeMap<String, f64> {
        let mut by_op = BTreeMap::new();
        for (labels, n) in samples(m, "ferry_node_requests_total") {
            let op = labels
                .split(",status=")
                .next()
                .unwrap_or_default()
                .to_owned();
            *by_op.entry(op).or_default() += n;
        }
        by_op
    };
    let (answered_before, answered_after) = (answered(&before), answered(&after));
    let mut ops = Vec::new();
    for (op, n) in &answered_after {
        let n = n - answered_before.get(op).copied().unwrap_or(0.0);
        let spent = a.get(op).copied().unwrap_or(0.0) - b.get(op).copied().unwrap_or(0.0);
        if n > 0.0 {
            assert!(
                spent > 0.0,
                "{op}: {n} answered in {spent} s of CPU\n{after}"
            );
            ops.push(op.clone());
        }
    }
    assert_eq!(ops, [get, put], "{after}");
    // The requests' CPU is a part of the process's: never more than all of it. (The rest runs
    // outside requests: the runtime's polling, the io_uring reaper, the admin listener. How
    // much of the process the requests account for is a figure, not a property: measured by
    // `benches/profile/cpu_by_op.sh`, in benches/README.md.) The first PUT may claim its
    // connection's work since the bucket's answer, a few microseconds of it before the first
    // scrape: the 1% allows for that.
    let requests: f64 = a.values().sum::<f64>() - b.values().sum::<f64>();
    let process = one(&after, "ferry_node_process_cpu_seconds_total")
        - one(&before, "ferry_node_process_cpu_seconds_total");
    assert!(
        requests > 0.0 && requests <= process * 1.01,
        "requests {requests} s, process {process} s"
    );
    // What PUTs wrote on the blocking pool is in their seconds.
    let blocking = one(&after, "ferry_node_blocking_cpu_seconds_total")
        - one(&before, "ferry_node_blocking_cpu_seconds_total");
    assert!(
        blocking >= 0.0 && blocking <= requests,
        "{blocking} of {requests}"
    );
    assert!(one(&after, "ferry_node_blocking_jobs_total") > 0.0);
    assert_eq!(one(&after, "ferry_node_blocking_queued"), 0.0);
    let bytes_in = samples(&after, "ferry_node_request_bytes_in_total");
    assert_eq!(bytes_in.get(put).copied(), Some(16.0 * 1024.0 * 1024.0));

    // The off-CPU view and the caches.
    assert!(one(&after, "ferry_node_store_commit_wait_seconds_count") >= 16.0);
    assert_eq!(one(&after, "ferry_node_store_commit_queued"), 0.0);
    // Rendered, but not necessarily counted here: these 1 MiB bodies go through io_uring in
    // full buffers, where a write waits only for another thread's lane batch holding its last
    // chunks, and one client's PUTs one after another give no other batch. The count is tested
    // where every buffer waits for its hash: node_md5_lanes.rs, without io_uring.
    assert!(after.contains("ferry_node_md5_lane_wait_seconds_bucket{le=\"+Inf\"}"));
    assert_eq!(one(&after, "ferry_node_md5_lane_queued_chunks"), 0.0);
    let fill = one(&after, "ferry_node_md5_lane_fill_ratio");
    assert!(fill > 0.0 && fill <= 1.0, "{fill}");
    let reads = one(&after, "ferry_node_store_page_cache_read_hits_total")
        + one(&after, "ferry_node_store_page_cache_read_misses_total");
    assert!(reads > 0.0, "the GETs read records");
    let ratio = one(&after, "ferry_node_store_page_cache_hit_ratio");
    assert!(ratio > 0.0 && ratio <= 1.0, "{ratio}");
    assert!(one(&after, "ferry_node_buffer_pool_hits_total") > 0.0);

    signal(&child.0, "-TERM");
    assert!(child.0.wait().expect("wait").success());
}

#[test]
fn proxy_connection_waits_and_reuse() {
    let s = Setup::start(RuntimeKind::Tokio, 2, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/reuse", b"").status, 200);
    for i in 0..20 {
        assert_eq!(c.put(&format!("/reuse/k{i}"), b"0123456789").status, 200);
        assert_eq!(c.get(&format!("/reuse/k{i}")).body.len(), 10);
    }
    let m = metrics_after(s.admin(), "ferry_proxy", 41);
    let waits = samples(&m, "ferry_proxy_backend_conn_wait_seconds_count");
    assert_eq!(waits.len(), 2, "one per backend: {m}");
    // Every request to a node asked for a connection (the bucket on both).
    assert!(waits.values().sum::<f64>() >= 42.0, "{waits:?}");
    let reuses: f64 = samples(&m, "ferry_proxy_backend_reuses_total")
        .values()
        .sum();
    let connects: f64 = samples(&m, "ferry_proxy_backend_connects_total")
        .values()
        .sum();
    assert!(
        reuses > connects,
        "keep-alive: {reuses} reused, {connects} new"
    );
    for (backend, r) in samples(&m, "ferry_proxy_backend_pool_hit_ratio") {
        assert!(r > 0.5 && r <= 1.0, "{backend}: {r}");
    }
    assert!(
        samples(&m, "ferry_proxy_backend_waiting")
            .values()
            .all(|n| *n == 0.0)
    );
    let cpu = samples(&m, "ferry_proxy_request_cpu_seconds_total");
    assert!(
        cpu.get("operation=\"PutObject\"").is_some_and(|s| *s > 0.0),
        "{m}"
    );
    assert!(
        plain_get(s.admin(), "/metrics")
            .text()
            .contains("ferry_proxy_blocking_wait_seconds_count")
    );
}
