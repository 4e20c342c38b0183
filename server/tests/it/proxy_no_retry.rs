//! What the proxy sends again after its backend connection failed, and what it does not
//! (`forward::again`): a recording relay stands between the proxy and its node, fails one
//! request's connection on purpose, and counts the attempts that reached it.
//!
//! - A PUT whose body had started to flow when the backend went away cannot be replayed (the
//!   proxy keeps no copy): one attempt, `503 SlowDown`, nothing stored.
//! - A POST (CreateMultipartUpload) whose fresh connection closes before any answer is not
//!   sent again: one attempt, `503 SlowDown`, no upload.
//! - A GET in the same place is idempotent: sent again on a new connection, answered 200.
//!
//! The POST and the GET meet their failure on a fresh connection: the relay first closes the
//! connections the proxy keeps, so their only other exception (a kept-alive connection found
//! stale in the pool, on which a request is sent once more) is not what is shown.

use std::io::Write as _;

use ferry_server::RuntimeKind;

use crate::support::http::{Payload, Response, metric_now};
use crate::support::proxy::{Auth, Setup};
use crate::support::relay::Fault;

on_both_runtimes!(
    a_body_that_started_is_not_sent_again,
    a_post_is_not_sent_again_a_get_is,
);

/// The proxy's count of requests sent again or waiting for their backend
/// (`ferry_proxy_backend_retries_total`). (Only where no connection is severed: a health probe
/// caught by [`Relay::sever_all`](crate::support::relay::Relay::sever_all) would mark the
/// backend down, and the next request's wait for it counts too.)
fn retries(s: &Setup) -> u64 {
    metric_now(s.admin(), "ferry_proxy_backend_retries_total")
}

fn a_body_that_started_is_not_sent_again(rt: RuntimeKind) {
    let s = Setup::start_relayed(rt, 1, Auth::Passthrough, |_| {});
    let relay = &s.relays[0];
    let mut c = s.client();
    assert_eq!(c.put("/noretry", b"").status, 200);
    let before = retries(&s);
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    relay.fault(Fault::CutBody {
        method: "PUT".into(),
        prefix: "/noretry/cut".into(),
        after: 100_000,
    });
    // The body is written on a thread: the proxy may answer before it has read it all.
    let bytes = c.encode("PUT", "/noretry/cut", &[], &data, Payload::Signed);
    let mut w = c.stream.try_clone().expect("clone");
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&bytes);
    });
    let r: Response = c.read_response(false);
    r.expect_error(503, "SlowDown");
    writer.join().expect("writer");

    let attempts = relay.requests("PUT", "/noretry/cut");
    assert_eq!(attempts.len(), 1, "attempts: {attempts:?}");
    assert!(
        attempts[0].fault.is_some() && !attempts[0].complete && attempts[0].body_len >= 100_000,
        "{:?}",
        attempts[0]
    );
    assert_eq!(retries(&s), before, "the proxy counted a retry");
    // Nothing was stored, on the node or through the proxy.
    let r = s.nodes[0].client().get("/noretry/cut");
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s.client().get("/noretry/cut");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(relay.requests("PUT", "/noretry/cut").len(), 1);
}

fn a_post_is_not_sent_again_a_get_is(rt: RuntimeKind) {
    let s = Setup::start_relayed(rt, 1, Auth::Passthrough, |_| {});
    let relay = &s.relays[0];
    let mut c = s.client();
    assert_eq!(c.put("/noretry", b"").status, 200);
    assert_eq!(c.put("/noretry/obj", b"object bytes").status, 200);

    // CreateMultipartUpload, its connection closed at its head.
    relay.sever_all();
    relay.fault(Fault::CloseAtHead {
        method: "POST".into(),
        prefix: "/noretry/mp".into(),
    });
    let r = c.request("POST", "/noretry/mp?uploads", &[], b"");
    r.expect_error(503, "SlowDown");
    let attempts = relay.requests("POST", "/noretry/mp");
    assert_eq!(attempts.len(), 1, "attempts: {attempts:?}");
    assert!(attempts[0].fault.is_some());
    let r = s.nodes[0].client().get("/noretry?uploads");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.xml_values("UploadId").is_empty(), "{}", r.text());

    // A GET in the same place goes again, on a new connection.
    relay.sever_all();
    relay.fault(Fault::CloseAtHead {
        method: "GET".into(),
        prefix: "/noretry/obj".into(),
    });
    let r = c.get("/noretry/obj");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"object bytes"[..]));
    let attempts = relay.requests("GET", "/noretry/obj");
    assert_eq!(attempts.len(), 2, "attempts: {attempts:?}");
    assert!(attempts[0].fault.is_some() && attempts[1].fault.is_none());
    // Without a failure, a POST goes once and succeeds (the relay itself is no obstacle).
    let r = c.request("POST", "/noretry/mp?uploads", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(relay.requests("POST", "/noretry/mp").len(), 2);
}
