//! Rolling restarts and overload through the proxy: a backend that is down answers
//! `503 SlowDown` with `Retry-After`; a node restarted on the same address is waited for
//! within the retry window and kept-alive connections to its old process are replaced, so the
//! client sees no error; per-backend limits answer `503 SlowDown` beyond them.

use std::time::{Duration, Instant};

use ferry_server::RuntimeKind;

use crate::support::http::{Client, plain_get, wait_until};
use crate::support::proxy::{Auth, Setup};

/// A metric line's value, if present.
fn metric(admin: std::net::SocketAddr, line_start: &str) -> Option<u64> {
    plain_get(admin, "/metrics")
        .text()
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn down_backend_answers_slow_down(rt: RuntimeKind) {
    let mut s = Setup::start_with(rt, 2, Auth::Passthrough, |c| {
        c.retry_window = Duration::from_millis(300);
    });
    let mut c = s.client();
    assert_eq!(c.put("/sdown", b"").status, 200);
    let k = s.key_on("sdown", "k", 1);
    assert_eq!(c.put(&format!("/sdown/{k}"), b"v").status, 200);
    s.nodes[1].stop();
    for method in ["GET", "PUT", "HEAD", "DELETE"] {
        let r = c.request(method, &format!("/sdown/{k}"), &[], b"");
        assert_eq!(r.status, 503, "{method}: {}", r.text());
        assert_eq!(r.header("Retry-After"), Some("1"), "{method}");
        if method != "HEAD" {
            r.expect_error(503, "SlowDown");
        }
    }
    let down = metric(
        s.admin(),
        "ferry_proxy_backend_slow_down_total{backend=\"node-2\",reason=\"down\"}",
    );
    assert!(down.is_some_and(|n| n >= 4), "{down:?}");
    // The other node's keys are unaffected.
    let k0 = s.key_on("sdown", "k", 0);
    assert_eq!(c.put(&format!("/sdown/{k0}"), b"w").status, 200);
}

#[test]
fn down_backend_answers_slow_down_tokio() {
    down_backend_answers_slow_down(RuntimeKind::Tokio);
}

#[test]
fn down_backend_answers_slow_down_smol() {
    down_backend_answers_slow_down(RuntimeKind::Smol);
}

fn restart_is_invisible(rt: RuntimeKind) {
    // A generous window: the restarting node must be waited for even on a busy machine.
    let mut s = Setup::start_with(rt, 1, Auth::Passthrough, |c| {
        c.retry_window = Duration::from_secs(20);
    });
    let mut c = s.client();
    assert_eq!(c.put("/rstart", b"").status, 200);
    assert_eq!(c.put("/rstart/a", b"first").status, 200);
    assert_eq!(c.get("/rstart/a").body, b"first");

    // Restarted between two requests: the proxy's kept-alive connection is to the old
    // process. A GET goes again on a new connection.
    s.nodes[0].stop();
    s.nodes[0].restart();
    let r = c.get("/rstart/a");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"first"[..]),
        "{}",
        r.text()
    );
    // A PUT whose body waits for 100 Continue goes again too (no body byte was taken).
    s.nodes[0].stop();
    s.nodes[0].restart();
    let r = c.request("PUT", "/rstart/a", &[("Expect", "100-continue")], b"second");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/rstart/a").body, b"second");
    // A DELETE and a HEAD likewise.
    s.nodes[0].stop();
    s.nodes[0].restart();
    assert_eq!(c.request("HEAD", "/rstart/a", &[], b"").status, 200);
    s.nodes[0].stop();
    s.nodes[0].restart();
    assert_eq!(c.request("DELETE", "/rstart/a", &[], b"").status, 204);

    // Down when the request comes, back a moment later: the request waits for it. The proxy
    // has seen the node down before the request is sent, and the node starts again only once
    // the request is in flight to it (waiting: the node is stopped).
    let admin = s.admin();
    let up = "ferry_proxy_backend_up{backend=\"node-1\"}";
    let in_flight = "ferry_proxy_backend_in_flight{backend=\"node-1\"}";
    let retries = "ferry_proxy_backend_retries_total{backend=\"node-1\"}";
    s.nodes[0].stop();
    wait_until(
        "the proxy sees node-1 down",
        Duration::from_secs(20),
        || metric(admin, up) == Some(0),
    );
    wait_until(
        "no request in flight to node-1",
        Duration::from_secs(20),
        || metric(admin, in_flight) == Some(0),
    );
    let retries_before = metric(admin, retries).expect("retries counted");
    let writer = std::thread::spawn(move || {
        let r = c.request(
            "PUT",
            "/rstart/b",
            &[("Expect", "100-continue")],
            b"while restarting",
        );
        (c, r)
    });
    wait_until(
        "the PUT waits for node-1 while it is down",
        Duration::from_secs(20),
        || metric(admin, in_flight) == Some(1),
    );
    assert_eq!(metric(admin, up), Some(0), "node-1 is still down");
    s.nodes[0].restart();
    let (mut c, r) = writer.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/rstart/b").body, b"while restarting");
    // The wait is counted: this phase's retries alone.
    let retried = metric(admin, retries).expect("retries counted") - retries_before;
    assert!(
        retried >= 1,
        "the PUT that waited for node-1 was not counted as a retry"
    );
}

#[test]
fn restart_is_invisible_tokio() {
    restart_is_invisible(RuntimeKind::Tokio);
}

#[test]
fn restart_is_invisible_smol() {
    restart_is_invisible(RuntimeKind::Smol);
}

/// A PUT to `target` whose head is sent (with a body of `len` bytes announced) and whose body
/// is not, on a connection of its own: the proxy holds a backend connection for it meanwhile.
fn hold_put(s: &Setup, target: &str, len: usize) -> Client {
    let mut held = s.client();
    let len = len.to_string();
    let (hs, _) = held.sign(
        "PUT",
        target,
        &[("Content-Length", len.as_str())],
        "UNSIGNED-PAYLOAD",
    );
    let mut head = format!("PUT {target} HTTP/1.1\r\n");
    for (n, v) in &hs {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    held.send_raw(head.as_bytes());
    held
}

fn limits_answer_slow_down(rt: RuntimeKind) {
    // One connection per backend: with one request in flight allowed, a second is refused at
    // once; with two, the second waits for the connection, within the retry window.
    for (max_in_flight, reason) in [(1, "in_flight"), (2, "busy")] {
        let s = Setup::start_with(rt, 1, Auth::Passthrough, |c| {
            c.backend_max_connections = 1;
            c.backend_max_in_flight = max_in_flight;
            c.retry_window = Duration::from_millis(300);
        });
        let mut c = s.client();
        assert_eq!(c.put("/lim", b"").status, 200);
        assert_eq!(c.put("/lim/x", b"x").status, 200);
        let requests = "ferry_proxy_backend_requests_total{backend=\"node-1\"}";
        let before = metric(s.admin(), requests).unwrap();
        let mut held = hold_put(&s, "/lim/held", 4);
        // Held once the backend saw its request and it alone is in flight (the previous
        // request leaves just after its answer).
        let in_flight = "ferry_proxy_backend_in_flight{backend=\"node-1\"}";
        let deadline = Instant::now() + Duration::from_secs(20);
        while metric(s.admin(), in_flight) != Some(1)
            || metric(s.admin(), requests) != Some(before + 1)
        {
            assert!(
                Instant::now() < deadline,
                "the held PUT never reached the backend"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let r = c.get("/lim/x");
        r.expect_error(503, "SlowDown");
        assert_eq!(r.header("Retry-After"), Some("1"));
        let counted = metric(
            s.admin(),
            &format!(
                "ferry_proxy_backend_slow_down_total{{backend=\"node-1\",reason=\"{reason}\"}}"
            ),
        );
        assert_eq!(counted, Some(1), "{reason}");
        // The held PUT completes; then requests are served again.
        held.send_raw(b"done");
        assert_eq!(held.read_response(false).status, 200);
        // Its connection is given back just after its answer.
        while metric(s.admin(), in_flight) != Some(0) {
            assert!(Instant::now() < deadline, "the held PUT never left");
            std::thread::sleep(Duration::from_millis(20));
        }
        let r = c.get("/lim/held");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"done"[..]));
    }
}

#[test]
fn limits_answer_slow_down_tokio() {
    limits_answer_slow_down(RuntimeKind::Tokio);
}

#[test]
fn limits_answer_slow_down_smol() {
    limits_answer_slow_down(RuntimeKind::Smol);
}
