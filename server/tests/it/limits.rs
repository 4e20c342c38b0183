//! Limits on client connections over real TCP, on a node and through the proxy: a trickling
//! head or body is cut off within its deadline, an anonymous body is not drained, an unread
//! body is drained within a deadline, idle connections close on time, and at the connection
//! cap a new client is served (an idle connection makes room) or refused at once — never left
//! hanging — and served once the connections holding the cap are gone.
//!
//! Limits are small (a 2 s grace, a cap of 4) so that the tests stay short; every wait is
//! bounded (socket read timeouts, bounded retries).

use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ferry_server::{ConnLimits, RuntimeKind};

use crate::support::http::{Client, Conn, Payload, Response, plain_get, request_head};
use crate::support::node::Node;
use crate::support::proxy::{Auth, Setup};

/// How often a trickling client sends a byte.
const TRICKLE_EVERY: Duration = Duration::from_secs(5);

/// The servers' limits here: 2 s for a head, 1 s idle, a body's reads may wait 2 s and must
/// then come at 1000 bytes/s.
fn small_limits(max_connections: Option<usize>) -> ConnLimits {
    ConnLimits {
        max_connections,
        header_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(2),
        min_body_rate: 1000,
    }
}

/// A server under test: a node, or the proxy in front of one.
struct Target {
    addr: SocketAddr,
    admin: SocketAddr,
    /// Metric names start with this.
    prefix: &'static str,
    _node: Option<Node>,
    _proxy: Option<Setup>,
}

impl Target {
    fn node(rt: RuntimeKind, limits: ConnLimits) -> Self {
        let node = Node::with_limits(rt, limits);
        let handle = node.handle.as_ref().expect("running");
        Self {
            addr: node.addr,
            admin: handle.admin_addr().expect("admin listener"),
            prefix: "ferry_node",
            _node: Some(node),
            _proxy: None,
        }
    }

    fn proxy(rt: RuntimeKind, limits: ConnLimits) -> Self {
        let setup = Setup::start_with(rt, 1, Auth::Passthrough, |cfg| cfg.limits = limits);
        Self {
            addr: setup.addr,
            admin: setup.admin(),
            prefix: "ferry_proxy",
            _node: None,
            _proxy: Some(setup),
        }
    }

    /// Both kinds, one after the other.
    fn both(rt: RuntimeKind, limits: ConnLimits) -> [Self; 2] {
        [Self::node(rt, limits), Self::proxy(rt, limits)]
    }

    fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// The value of the metric `{prefix}_{name}`.
    fn metric(&self, name: &str) -> u64 {
        let name = format!("{}_{name} ", self.prefix);
        let text = plain_get(self.admin, "/metrics").text();
        text.lines()
            .find_map(|l| l.strip_prefix(&name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name}in /metrics"))
    }

    /// Wait (bounded) until the server has `n` connections open.
    fn wait_open(&self, n: u64) {
        for _ in 0..500 {
            if self.metric("open_connections") == n {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("never {n} connections open");
    }
}

/// The signed head of a PUT whose `len` body bytes the caller sends (or not).
fn put_head(c: &Client, target: &str, len: usize) -> Vec<u8> {
    let body = vec![b'x'; len];
    let mut bytes = c.encode("PUT", target, &[], &body, Payload::Unsigned);
    bytes.truncate(bytes.len() - len);
    bytes
}

/// Send one byte every [`TRICKLE_EVERY`] (at most `max`) until the server answers or closes:
/// its answer, if any, and the bytes sent by then.
fn trickle(conn: &mut Conn, max: usize) -> (Option<Response>, usize) {
    let mut sent = 0;
    loop {
        // Wait for the server without taking its bytes: `read_response` parses them.
        conn.stream.set_read_timeout(Some(TRICKLE_EVERY)).unwrap();
        let peeked = conn.stream.peek(&mut [0u8; 1]);
        conn.stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        match peeked {
            Ok(0) => return (None, sent),
            Ok(_) => return (conn.try_read_response(false), sent),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return (None, sent),
        }
        assert!(sent < max, "still open after {sent} bytes, one every 5 s");
        if conn.stream.write_all(b"x").is_err() {
            return (None, sent);
        }
        sent += 1;
    }
}

/// A trickled body is answered `RequestTimeout` and closed once its 2 s of grace are used up,
/// before the client's first byte (due after 5 s), on a node and through the proxy (where the
/// body is spliced to the node, and the splice spends the same budget).
fn trickled_bodies_are_cut_off(rt: RuntimeKind) {
    for t in Target::both(rt, small_limits(None)) {
        let mut c = t.client();
        assert_eq!(c.put("/trickle", b"").status, 200);
        let head = put_head(&c, "/trickle/slow", 100);
        c.send_raw(&head);
        let (r, sent) = trickle(&mut c, 2);
        let r = r.expect("an answer before the close");
        r.expect_error(400, "RequestTimeout");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(c.is_closed());
        assert_eq!(
            sent, 0,
            "cut off within the grace, before the first 5 s byte"
        );
        // Nothing was stored.
        let mut c = t.client();
        assert_eq!(c.request("HEAD", "/trickle/slow", &[], b"").status, 404);
    }
}

/// A head trickled byte by byte is cut off by the 2 s head timeout.
fn trickled_heads_are_cut_off(rt: RuntimeKind) {
    for t in Target::both(rt, small_limits(None)) {
        let mut c = Conn::connect(t.addr);
        c.send_raw(b"GET / HTTP/1.1\r\nX-Slow: ");
        let (r, sent) = trickle(&mut c, 2);
        let r = r.expect("an answer before the close");
        // No head, so no resource in the error document.
        assert_eq!(r.status, 400);
        assert_eq!(r.error_code().as_deref(), Some("RequestTimeout"));
        assert!(c.is_closed());
        assert_eq!(sent, 0);
    }
}

/// An anonymous request refused before its body (here: no such bucket) gets its answer and the
/// connection closes: a body over 64 KiB (the unauthenticated drain limit) is not waited for,
/// through the proxy too (it asks the node with `Expect: 100-continue` first). A small one is
/// drained and the connection kept.
fn anonymous_bodies_are_not_drained(rt: RuntimeKind) {
    for t in Target::both(rt, small_limits(None)) {
        // 200 KB announced, none sent: under the 1 MiB drain limit of signed requests.
        let mut c = Conn::connect(t.addr);
        c.send_raw(&request_head(
            t.addr,
            "PUT",
            "/anon/big",
            &[("Content-Length", "200000")],
        ));
        // Anonymous, and no such bucket: refused before the body.
        let r = c.read_response(false);
        r.expect_error(404, "NoSuchBucket");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(c.is_closed());
        // A small body is read and the connection serves the next request.
        let mut c = Conn::connect(t.addr);
        let mut req = request_head(t.addr, "PUT", "/anon/small", &[("Content-Length", "1000")]);
        req.extend_from_slice(&[b'x'; 1000]);
        c.send_raw(&req);
        let r = c.read_response(false);
        r.expect_error(404, "NoSuchBucket");
        assert_eq!(r.header("connection"), None);
        c.send_raw(&request_head(t.addr, "GET", "/healthz", &[]));
        assert_eq!(c.read_response(false).status, 200);
    }
}

/// An early answer to a signed request (no such bucket) leaves its body unread: the node
/// discards it only within the drain deadline (5 s), then closes, though the client keeps the
/// connection and never sends the body.
fn unread_bodies_are_drained_within_a_deadline(rt: RuntimeKind) {
    let t = Target::node(rt, small_limits(None));
    let mut c = t.client();
    let head = put_head(&c, "/no-such-bucket/k", 1000);
    c.send_raw(&head);
    let (r, sent) = trickle(&mut c, 0);
    let r = r.expect("an answer");
    r.expect_error(404, "NoSuchBucket");
    assert_eq!(sent, 0);
    // Closed by the server within the 30 s read timeout, which a drain timed per read (30 s)
    // would not have been.
    assert!(c.is_closed());
}

/// A kept-alive connection closes once idle for 1 s; a silent new one after the 2 s head
/// timeout.
fn idle_connections_close_on_time(rt: RuntimeKind) {
    for t in Target::both(rt, small_limits(None)) {
        let mut c = Conn::connect(t.addr);
        c.send_raw(&request_head(t.addr, "GET", "/healthz", &[]));
        let r = c.read_response(false);
        assert_eq!((r.status, r.header("connection")), (200, None));
        assert!(c.is_closed(), "the idle connection closes");
        let mut silent = Conn::connect(t.addr);
        assert!(silent.is_closed(), "the silent connection closes");
    }
}

/// What a new client at the cap gets: an answer, or the connection closed without one.
fn try_list(t: &Target) -> Option<Response> {
    let mut c = t.client();
    let bytes = c.encode("GET", "/", &[], b"", Payload::Signed);
    if c.stream.write_all(&bytes).is_err() {
        return None;
    }
    c.try_read_response(false)
}

/// Retry [`try_list`] (bounded) until served.
fn list_when_admitted(t: &Target) -> Response {
    for _ in 0..200 {
        if let Some(r) = try_list(t) {
            return r;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("never served");
}

/// At the cap (4) held by idle anonymous sockets, an authenticated client on a new connection
/// is served: the socket idle longest is closed to make room. Once the idle ones are closed,
/// clients are served at once.
fn at_the_cap_idle_sockets_make_room(rt: RuntimeKind) {
    for t in Target::both(rt, small_limits(Some(4))) {
        let mut idle: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(t.addr).expect("connect"))
            .collect();
        t.wait_open(4);
        let r = list_when_admitted(&t);
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(t.metric("evicted_connections_total") >= 1);
        // The one that made room was closed by the server.
        let mut closed = 0;
        for s in &mut idle {
            s.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            closed += usize::from(matches!(s.peek(&mut [0u8; 1]), Ok(0) | Err(_)));
        }
        assert!(closed >= 1);
        drop(idle);
        let r = try_list(&t).expect("served at once with the cap free");
        assert_eq!(r.status, 200);
    }
}

/// At the cap held by connections in the middle of a request (busy, not idle), a new client is
/// refused at once — closed without an answer, not left waiting, and no busy one closed to
/// make room — and the busy ones go on: each finishes its request. Then clients are served.
fn at_the_cap_busy_connections_refuse_quickly(rt: RuntimeKind) {
    // Timeouts far above the test's length: the busy connections stay busy until they finish.
    let limits = ConnLimits {
        header_timeout: Duration::from_secs(60),
        body_timeout: Duration::from_secs(60),
        ..small_limits(Some(4))
    };
    let t = Target::node(rt, limits);
    assert_eq!(t.client().put("/busy", b"").status, 200);
    // Busy for certain: each has sent a PUT's head with `Expect: 100-continue` and read the
    // `100 Continue` the node sends once its handler reads the body, which is not sent.
    let mut busy: Vec<Client> = (0..4)
        .map(|i| {
            let mut c = t.client();
            let body = [b'x'; 10];
            let mut req = c.encode(
                "PUT",
                &format!("/busy/k{i}"),
                &[("Expect", "100-continue")],
                &body,
                Payload::Unsigned,
            );
            req.truncate(req.len() - body.len());
            c.send_raw(&req);
            assert_eq!(c.read_response(false).status, 100, "busy {i}");
            c
        })
        .collect();
    t.wait_open(4);
    let (refused, evicted) = (
        t.metric("refused_connections_total"),
        t.metric("evicted_connections_total"),
    );
    // Closed without an answer: a server that left it waiting would fail the read after 30 s.
    let r = try_list(&t);
    assert!(r.is_none(), "served at the cap of busy connections: {r:?}");
    assert_eq!(t.metric("refused_connections_total"), refused + 1);
    assert_eq!(t.metric("evicted_connections_total"), evicted);
    // The busy ones were kept: each finishes its PUT.
    for (i, c) in busy.iter_mut().enumerate() {
        c.send_raw(&[b'x'; 10]);
        let r = c.read_response(false);
        assert_eq!(r.status, 200, "busy {i}: {}", r.text());
    }
    drop(busy);
    let r = list_when_admitted(&t);
    assert_eq!(r.status, 200);
}

on_both_runtimes!(
    trickled_bodies_are_cut_off,
    trickled_heads_are_cut_off,
    anonymous_bodies_are_not_drained,
    unread_bodies_are_drained_within_a_deadline,
    idle_connections_close_on_time,
    at_the_cap_idle_sockets_make_room,
    at_the_cap_busy_connections_refuse_quickly,
);
