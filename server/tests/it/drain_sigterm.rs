//! SIGTERM drains the requests in flight, for a `ferry node` process and a `ferry proxy`
//! process on each runtime: a PUT whose body is still coming and a GET whose answer is still
//! being read when the signal comes both finish with 200 and the right bytes, while new
//! connections are refused; then the process exits cleanly, and the PUT's object is stored.
//!
//! Nothing waits on time: the requests are seen in flight on the admin listener's
//! `_requests_in_flight` gauge before the signal, the drain is seen starting on the server's
//! log, and the listener's end on connections being refused.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Child;
use std::time::Duration;

use ferry_core::md5::{ETag, md5};
use ferry_server::RuntimeKind;

use crate::support::http::{Client, Payload, metric_now, wait_until};
use crate::support::node::Node;
use crate::support::process::{
    KEY_ENV, Killed, StderrLines, free_port, node_with_admin, ready_addr, signal, spawn_ferry,
};

on_both_runtimes!(a_node_drains_on_sigterm, a_proxy_drains_on_sigterm);

/// The GET's object: larger than what the sockets between client and server can hold, so its
/// answer cannot have been written whole before the client reads it.
const BIG: usize = 32 << 20;
/// What the PUT sends before the signal, and what the GET reads before it.
const EARLY: usize = 64 << 10;

fn runtime_arg(rt: RuntimeKind) -> &'static str {
    match rt {
        RuntimeKind::Tokio => "tokio",
        RuntimeKind::Smol => "smol",
    }
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A GET's answer read by hand: status and length from its head, then the body as slowly as
/// the test likes.
struct SlowGet {
    stream: TcpStream,
    status: u16,
    len: usize,
    body: Vec<u8>,
}

impl SlowGet {
    /// Send the signed GET of `target` on a connection of its own and read its head and the
    /// first `early` bytes of its body.
    fn start(addr: SocketAddr, target: &str, early: usize) -> Self {
        let c = Client::connect(addr);
        let bytes = c.encode("GET", target, &[], b"", Payload::Signed);
        let mut stream = c.stream.try_clone().expect("clone");
        drop(c);
        stream.write_all(&bytes).expect("send GET");
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let (status, len, head_len) = loop {
            let n = stream.read(&mut chunk).expect("read head");
            assert!(n > 0, "closed before the answer's head");
            buf.extend_from_slice(&chunk[..n]);
            let mut hs = [httparse::EMPTY_HEADER; 32];
            let mut res = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(len) = res.parse(&buf).expect("head") {
                let cl = res
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                    .expect("content-length");
                break (res.code.expect("status"), cl, len);
            }
        };
        let mut get = Self {
            stream,
            status,
            len,
            body: buf.split_off(head_len),
        };
        get.read_to(early);
        get
    }

    /// Read until `n` body bytes came (or the connection ended).
    fn read_to(&mut self, n: usize) {
        let mut chunk = vec![0u8; 256 << 10];
        while self.body.len() < n.min(self.len) {
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(k) => self.body.extend_from_slice(&chunk[..k]),
            }
        }
    }
}

/// A signed PUT of `body` whose first `early` bytes are sent now, the rest by [`SlowPut::finish`].
struct SlowPut {
    conn: Client,
    rest: Vec<u8>,
}

impl SlowPut {
    fn start(addr: SocketAddr, target: &str, body: &[u8], early: usize) -> Self {
        let mut conn = Client::connect(addr);
        let mut bytes = conn.encode("PUT", target, &[], body, Payload::Signed);
        let at = bytes.len() - body.len() + early;
        let rest = bytes.split_off(at);
        conn.send_raw(&bytes);
        Self { conn, rest }
    }

    /// Send the rest of the body, a piece at a time, and read the answer.
    fn finish(mut self) -> crate::support::http::Response {
        for piece in self.rest.chunks(256 << 10) {
            self.conn.send_raw(piece);
        }
        self.conn.read_response(false)
    }
}

/// Signal `child` with SIGTERM while `want` requests are in flight on `admin` (its metrics'
/// `gauge`), and wait for its drain to start (`draining` on its log) and its S3 listener at
/// `addr` to refuse connections; the requests must still be in flight then.
fn sigterm_in_flight(
    child: &Child,
    log: &mut StderrLines,
    (addr, admin): (SocketAddr, SocketAddr),
    gauge: &str,
    want: u64,
) {
    wait_until(
        &format!("{want} requests in flight"),
        Duration::from_secs(20),
        || metric_now(admin, gauge) == want,
    );
    signal(child, "-TERM");
    log.wait_for("draining");
    wait_until(
        "new connections refused",
        Duration::from_secs(20),
        || match TcpStream::connect(addr) {
            Err(e) => e.kind() == ErrorKind::ConnectionRefused,
            Ok(_) => false,
        },
    );
    assert_eq!(
        metric_now(admin, gauge),
        want,
        "the requests in flight were cut at the signal"
    );
}

/// Finish both requests after the signal: 200 each, with the right bytes.
fn finish_both(put: SlowPut, mut get: SlowGet, put_data: &[u8], get_data: &[u8]) {
    let r = put.finish();
    assert_eq!(r.status, 200, "the PUT in flight: {}", r.text());
    let etag = ETag::single(&md5(put_data));
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(get.status, 200);
    get.read_to(get.len);
    assert_eq!(
        get.body.len(),
        get_data.len(),
        "the GET in flight was cut short"
    );
    assert!(get.body == get_data, "the GET in flight gave other bytes");
}

/// Wait (at most 40 s: the drain's grace is 30 s) for `child` to exit; it must exit 0.
fn exits_cleanly(child: &mut Child) {
    let mut status = None;
    wait_until("the process exits", Duration::from_secs(40), || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    assert!(status.unwrap().success(), "{status:?}");
}

fn a_node_drains_on_sigterm(rt: RuntimeKind) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut node, addr, admin) =
        node_with_admin(dir.path(), &["--runtime", runtime_arg(rt)], &KEY_ENV);
    let mut log = StderrLines::take(&mut node.0);
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/drain", b"").status, 200);
    let big = data(BIG, 1);
    assert_eq!(c.put("/drain/big", &big).status, 200);
    drop(c);

    let put_data = data(3 << 20, 7);
    let put = SlowPut::start(addr, "/drain/slow-put", &put_data, EARLY);
    let get = SlowGet::start(addr, "/drain/big", EARLY);
    sigterm_in_flight(
        &node.0,
        &mut log,
        (addr, admin),
        "ferry_node_requests_in_flight",
        2,
    );
    finish_both(put, get, &put_data, &big);
    exits_cleanly(&mut node.0);

    // The PUT's object was stored: a node on the same data serves it.
    let (_node, addr, _) = node_with_admin(dir.path(), &["--runtime", runtime_arg(rt)], &KEY_ENV);
    let r = Client::connect(addr).get("/drain/slow-put");
    assert_eq!(r.status, 200);
    assert!(r.body == put_data, "the stored object differs");
}

fn a_proxy_drains_on_sigterm(rt: RuntimeKind) {
    let node = Node::start(rt);
    let admin = free_port();
    let (backend, admin_arg) = (format!("n1=http://{}", node.addr), admin.to_string());
    let child = spawn_ferry(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            &admin_arg,
            "--backend",
            &backend,
            "--runtime",
            runtime_arg(rt),
            "--threads",
            "1",
        ],
        &KEY_ENV,
    );
    let mut proxy = Killed(child);
    let addr = ready_addr(&mut proxy.0, "ferry proxy listening on http://");
    let mut log = StderrLines::take(&mut proxy.0);
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/drain", b"").status, 200);
    let big = data(BIG, 2);
    assert_eq!(c.put("/drain/big", &big).status, 200);
    drop(c);

    let put_data = data(3 << 20, 9);
    let put = SlowPut::start(addr, "/drain/slow-put", &put_data, EARLY);
    let get = SlowGet::start(addr, "/drain/big", EARLY);
    sigterm_in_flight(
        &proxy.0,
        &mut log,
        (addr, admin),
        "ferry_proxy_requests_in_flight",
        2,
    );
    finish_both(put, get, &put_data, &big);
    exits_cleanly(&mut proxy.0);

    // The PUT reached the node whole.
    let r = node.client().get("/drain/slow-put");
    assert_eq!(r.status, 200);
    assert!(r.body == put_data, "the stored object differs");
}
