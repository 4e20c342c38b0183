//! The HTTP engine suite over real TCP on 127.0.0.1, run on every runtime adapter: each
//! adapter's `tests/http.rs` includes this file and calls `run_suite!(its block_on_threads)`.
//!
//! Every test is generic over `Runtime` and bounded by an overall timeout, so a hang fails
//! instead of blocking the run.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferry_core::http::body::{BodyKind, response_framing};
use ferry_core::http::chunked::ChunkedDecoder;
use ferry_core::http::client::{ClientConfig, ClientPool, Continue, connect, connect_with};
use ferry_core::http::head::{HeadParser, RequestHead, Status};
use ferry_core::http::server::{
    BodyReader, Handler, ResponseWriter, ServerConfig, ServerHandle, serve, serve_listener,
};
use ferry_core::http::timed::Timed;
use ferry_core::http::{EMPTY_HEADER, Header};
use ferry_core::rt::{Listener, Runtime, Signal, Stream, timeout};
use ferry_core::s3::S3Error;
use ferry_net::{NetRuntime, TlsConnector};

/// Generates one `#[test]` per suite function, each run with `$block_on`.
macro_rules! run_suite {
    ($block_on:path) => {
        run_suite!(@tests $block_on,
            keep_alive_serves_several_requests_on_one_connection,
            pipelined_requests_are_answered_in_order,
            continue_is_sent_only_when_the_handler_reads,
            rejecting_before_reading_sends_no_continue,
            client_waits_for_continue,
            chunked_request_bodies_with_trailers,
            large_bodies_stream_through,
            silent_connections_time_out,
            malformed_and_smuggling_requests_get_400_and_close,
            oversized_heads_get_431,
            client_pool_reuses_connections,
            unblock_runs_off_the_reactor,
            graceful_stop_finishes_requests,
            connection_cap_makes_room_from_idle_connections,
            connection_cap_refuses_when_none_is_idle,
            tls_serves_and_survives_failed_handshakes,
            tls_streams_large_bodies_both_ways,
            relay_forwards_backend_bodies,
            splice_moves_bytes_between_sockets,
        );
    };
    (@tests $block_on:path, $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $block_on(0, |rt| suite::bounded(rt, suite::$name)).expect("runtime");
            }
        )*
    };
}

/// Run one test with a deadline.
pub async fn bounded<R, F, Fut>(rt: R, test: F)
where
    R: Runtime,
    F: FnOnce(R) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let clock = rt.clone();
    timeout(&clock, Duration::from_secs(120), test(rt))
        .await
        .expect("test timed out");
}

/// Poll `cond` every 5 ms until it holds; fail the test, saying `what` was awaited, once 20 s
/// have passed without it (a hang guard with a message, inside the whole test's bound).
async fn wait_until<R: Runtime>(rt: &R, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = rt.now() + Duration::from_secs(20);
    while !cond() {
        assert!(rt.now() < deadline, "not within 20 s: {what}");
        rt.sleep(Duration::from_millis(5)).await;
    }
}

/// A handler with one route per behaviour under test.
#[derive(Debug, Default)]
pub struct Suite {
    /// `/gated`: the handler waits for this before reading the body.
    gate: Signal,
    /// `/slow`: requests in progress.
    in_flight: AtomicU64,
}

impl Handler for Suite {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        let path = req.target.split('?').next().unwrap_or_default();
        match path {
            "/echo" | "/gated" => {
                if path == "/gated" {
                    self.gate.wait().await;
                }
                let mut got = Vec::new();
                while let Some(chunk) = body.next_chunk().await? {
                    got.extend_from_slice(chunk);
                }
                let mut hs = [EMPTY_HEADER; 8];
                let trailer = body.trailers(&mut hs)?.first().map(|h| h.value.to_vec());
                let trailer = trailer.unwrap_or_default();
                let hs = [Header {
                    name: "X-Trailer",
                    value: &trailer,
                }];
                res.send(200, &hs, &got).await?;
            }
            "/count" => {
                let mut n = 0u64;
                while let Some(chunk) = body.next_chunk().await? {
                    n += chunk.len() as u64;
                }
                res.send(200, &[], n.to_string().as_bytes()).await?;
            }
            "/reject" => res.send(403, &[], b"denied").await?,
            // `n` pattern bytes; `short`: the connection ends after half of them.
            "/blob" => {
                let q = req
                    .target
                    .split_once('?')
                    .map(|(_, q)| q)
                    .unwrap_or_default();
                let short = q.contains("short");
                let n: usize = q
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("n="))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                res.start(200, &[], BodyKind::Length(n as u64))?;
                let body = pattern(n);
                let end = if short { n / 2 } else { n };
                for chunk in body[..end].chunks(100_000) {
                    res.write(chunk).await?;
                }
                if !short {
                    res.finish().await?;
                }
            }
            "/slow" => {
                self.in_flight.fetch_add(1, Ordering::SeqCst);
                self.gate.wait().await;
                res.send(200, &[], b"done").await?;
            }
            _ => res.send(404, &[], b"").await?,
        }
        Ok(())
    }
}

/// Deterministic, position-dependent bytes (a shifted copy would not compare equal).
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ (i >> 16) as u8).collect()
}

/// A proxy in miniature: `GET /x?..` fetches `/blob?..` from `backend` and relays the body
/// with [`ResponseWriter::relay`] (spliced between the sockets where the adapter can); `PUT`
/// relays the request body to the backend's `/echo` with `RequestWriter::relay`.
struct Relay<R: Runtime> {
    pool: ClientPool<R>,
    backend: SocketAddr,
    /// After each relay: whether the backend connection could be reused, and the body bytes
    /// the response writer counted.
    reusable: std::sync::Mutex<Vec<(bool, u64)>>,
}

impl<R: Runtime> Handler for Relay<R> {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        let q = req
            .target
            .split_once('?')
            .map(|(_, q)| q)
            .unwrap_or_default();
        let mut conn = self.pool.get(self.backend).await?;
        if req.method == "PUT" {
            // The body goes to the backend's echo, and comes back below.
            let mut w = conn.request("PUT", "/echo", &[], body.kind(), false)?;
            w.relay(body).await?;
            w.finish().await?;
        } else {
            conn.send_request("GET", &format!("/blob?{q}"), &[], b"")
                .await?;
        }
        let mut hs = [EMPTY_HEADER; 16];
        let mut r = conn.response(&mut hs).await?;
        res.start(r.head.status, &[], r.body.kind())?;
        let relayed = res.relay(&mut r.body).await;
        let seen = (conn.is_reusable(), res.body_bytes());
        self.reusable.lock().unwrap().push(seen);
        self.pool.put(conn);
        relayed?;
        res.finish().await?;
        Ok(())
    }
}

async fn start<R: Runtime>(rt: &R, config: ServerConfig) -> (ServerHandle, Arc<Suite>) {
    let handler = Arc::new(Suite::default());
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = serve(rt, addr, config, handler.clone())
        .await
        .expect("bind 127.0.0.1");
    (server, handler)
}

/// A raw connection to the server, for byte-exact requests.
struct Raw<R: Runtime> {
    io: Timed<R, R::Stream>,
    buf: Vec<u8>,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    fn closes(&self) -> bool {
        self.header("connection") == Some(b"close")
    }
}

impl<R: Runtime> Raw<R> {
    async fn connect(rt: &R, addr: SocketAddr) -> Self {
        let s = rt.connect(addr).await.expect("connect");
        let t = Duration::from_secs(20);
        Self {
            io: Timed::new(rt.clone(), s, t, t),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.io.write_all(bytes).await.expect("write");
    }

    /// Read once more; `false` at EOF.
    async fn fill(&mut self) -> bool {
        let mut tmp = vec![0u8; 64 * 1024];
        let n = Stream::read_send(&mut self.io, &mut tmp).await.unwrap_or(0);
        self.buf.extend_from_slice(&tmp[..n]);
        n > 0
    }

    /// Read with a short deadline; whether anything arrived.
    async fn anything_within(&mut self, d: Duration) -> bool {
        let clock = self.io.clock().clone();
        let mut tmp = [0u8; 1024];
        let got = timeout(&clock, d, Stream::read_send(&mut self.io, &mut tmp)).await;
        match got {
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&tmp[..n]);
                n > 0
            }
            _ => false,
        }
    }

    /// Read one response (to a request with `method`).
    async fn response(&mut self, method: &str) -> Resp {
        loop {
            let mut hs = [EMPTY_HEADER; 32];
            let parsed = HeadParser::default()
                .parse_response(&self.buf, &mut hs)
                .expect("valid response head");
            if let Status::Complete(h) = parsed {
                let framing = response_framing(&h, method).expect("valid framing");
                let headers = h
                    .headers
                    .iter()
                    .map(|x| (x.name.to_string(), x.value.to_vec()))
                    .collect();
                let (status, len) = (h.status, h.len);
                self.buf.drain(..len);
                let body = self.body(framing.body).await;
                return Resp {
                    status,
                    headers,
                    body,
                };
            }
            assert!(self.fill().await, "EOF before a response head");
        }
    }

    async fn body(&mut self, kind: BodyKind) -> Vec<u8> {
        match kind {
            BodyKind::None => Vec::new(),
            BodyKind::Length(n) => {
                while (self.buf.len() as u64) < n {
                    assert!(self.fill().await, "EOF in body");
                }
                self.buf.drain(..n as usize).collect()
            }
            BodyKind::Chunked => {
                let mut d = ChunkedDecoder::default();
                let mut body = Vec::new();
                loop {
                    let s = d.decode_borrowed(&self.buf).expect("valid chunks");
                    body.extend_from_slice(s.data);
                    let used = s.consumed;
                    let done = s.done;
                    self.buf.drain(..used);
                    if done {
                        return body;
                    }
                    if used == 0 {
                        assert!(self.fill().await, "EOF in chunked body");
                    }
                }
            }
            BodyKind::CloseDelimited => {
                while self.fill().await {}
                std::mem::take(&mut self.buf)
            }
        }
    }

    /// Whether the server closed the connection (EOF with nothing more buffered).
    async fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill().await
    }
}

pub async fn keep_alive_serves_several_requests_on_one_connection<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    for i in 0..3 {
        let body = format!("request {i}");
        let req = format!(
            "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        c.send(req.as_bytes()).await;
        let r = c.response("PUT").await;
        assert_eq!((r.status, r.body.as_slice()), (200, body.as_bytes()));
        assert!(!r.closes());
        assert!(r.header("date").is_some());
    }
    assert_eq!(server.accepted(), 1);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn pipelined_requests_are_answered_in_order<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    c.send(b"PUT /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nfirstGET /missing HTTP/1.1\r\n\r\nPUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsecond\r\n0\r\n\r\n")
        .await;
    let a = c.response("PUT").await;
    let b = c.response("GET").await;
    let d = c.response("PUT").await;
    assert_eq!((a.status, a.body.as_slice()), (200, &b"first"[..]));
    assert_eq!(b.status, 404);
    assert_eq!((d.status, d.body.as_slice()), (200, &b"second"[..]));
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn continue_is_sent_only_when_the_handler_reads<R: Runtime>(rt: R) {
    let (server, handler) = start(&rt, ServerConfig::default()).await;
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    c.send(b"PUT /gated HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        .await;
    // The handler has not read yet: no 100 (a negative check, bounded by a short wait).
    assert!(!c.anything_within(Duration::from_millis(300)).await);
    handler.gate.set();
    let interim = c.response("PUT").await;
    assert_eq!(interim.status, 100);
    c.send(b"body").await;
    let r = c.response("PUT").await;
    assert_eq!((r.status, r.body.as_slice()), (200, &b"body"[..]));
    assert!(!r.closes());
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn rejecting_before_reading_sends_no_continue<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    c.send(b"PUT /reject HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n")
        .await;
    let r = c.response("PUT").await;
    assert_eq!((r.status, r.body.as_slice()), (403, &b"denied"[..]));
    // The body was never asked for, so the connection cannot be kept in sync: closed.
    assert!(r.closes());
    assert!(c.closed().await);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn client_waits_for_continue<R: Runtime>(rt: R) {
    let (server, handler) = start(&rt, ServerConfig::default()).await;
    handler.gate.set();
    let mut conn = connect(&rt, server.local_addr(), ClientConfig::default())
        .await
        .unwrap();
    let mut w = conn
        .request("PUT", "/echo", &[], BodyKind::Length(5), true)
        .unwrap();
    assert_eq!(w.wait_continue().await.unwrap(), Continue::Proceed);
    w.write(b"hello").await.unwrap();
    w.finish().await.unwrap();
    let mut hs = [EMPTY_HEADER; 16];
    let mut r = conn.response(&mut hs).await.unwrap();
    assert_eq!(r.head.status, 200);
    assert_eq!(r.body.next_chunk().await.unwrap(), Some(&b"hello"[..]));
    assert_eq!(r.body.next_chunk().await.unwrap(), None);
    assert!(conn.is_reusable());
    // A rejecting handler answers at once: the client sends no body.
    let mut w = conn
        .request("PUT", "/reject", &[], BodyKind::Length(5), true)
        .unwrap();
    assert_eq!(w.wait_continue().await.unwrap(), Continue::Final);
    w.finish().await.unwrap();
    let mut hs = [EMPTY_HEADER; 16];
    let mut r = conn.response(&mut hs).await.unwrap();
    assert_eq!(r.head.status, 403);
    assert_eq!(r.body.discard().await.unwrap(), 6);
    assert!(!conn.is_reusable());
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn chunked_request_bodies_with_trailers<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    c.send(b"PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n")
        .await;
    c.send(b"5\r\npedia\r\n0\r\nX-Checksum: abc\r\n\r\n").await;
    let r = c.response("PUT").await;
    assert_eq!(r.body, b"Wikipedia");
    assert_eq!(r.header("x-trailer"), Some(&b"abc"[..]));
    // The same through the client's chunked writer.
    let mut conn = connect(&rt, server.local_addr(), ClientConfig::default())
        .await
        .unwrap();
    let mut w = conn
        .request("PUT", "/echo", &[], BodyKind::Chunked, false)
        .unwrap();
    for part in [&b"one "[..], b"two ", b"three"] {
        w.write(part).await.unwrap();
    }
    let t = [Header {
        name: "X-Checksum",
        value: b"xyz",
    }];
    w.finish_with_trailers(&t).await.unwrap();
    let mut hs = [EMPTY_HEADER; 16];
    let mut r = conn.response(&mut hs).await.unwrap();
    let trailer = ferry_core::http::find_header(r.head.headers, "x-trailer").map(<[u8]>::to_vec);
    let mut body = Vec::new();
    while let Some(c) = r.body.next_chunk().await.unwrap() {
        body.extend_from_slice(c);
    }
    assert_eq!(body, b"one two three");
    assert_eq!(trailer.as_deref(), Some(&b"xyz"[..]));
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn large_bodies_stream_through<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let mut conn = connect(&rt, server.local_addr(), ClientConfig::default())
        .await
        .unwrap();
    let block = vec![0xA5u8; 256 * 1024];
    for (kind, total) in [
        (BodyKind::Length(64 << 20), 64u64 << 20),
        (BodyKind::Chunked, 16 << 20),
    ] {
        let mut w = conn.request("PUT", "/count", &[], kind, false).unwrap();
        let mut sent = 0;
        while sent < total {
            w.write(&block).await.unwrap();
            sent += block.len() as u64;
        }
        w.finish().await.unwrap();
        let mut hs = [EMPTY_HEADER; 16];
        let mut r = conn.response(&mut hs).await.unwrap();
        assert_eq!(r.head.status, 200);
        let mut body = [0u8; 32];
        let n = r.body.read(&mut body).await.unwrap();
        assert_eq!(&body[..n], total.to_string().as_bytes());
        assert_eq!(r.body.read(&mut body).await.unwrap(), 0);
    }
    assert!(conn.is_reusable());
    assert_eq!(server.accepted(), 1);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn silent_connections_time_out<R: Runtime>(rt: R) {
    let config = ServerConfig {
        header_timeout: Duration::from_millis(300),
        linger: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let (server, _) = start(&rt, config).await;
    // Nothing sent: closed without a response.
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    assert!(c.closed().await);
    // Half a head: 400 RequestTimeout, then closed.
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    c.send(b"GET / HTTP/1.1\r\nHost: slow").await;
    let r = c.response("GET").await;
    assert_eq!(r.status, 400);
    assert!(r.closes());
    assert!(c.closed().await);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn malformed_and_smuggling_requests_get_400_and_close<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let cases: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
        b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        b"GET / HTTP/1.1\nHost: a\n\n",
        b"GET /a b HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
        b"GET / HTTP/3.0\r\n\r\n",
    ];
    for case in cases {
        let mut c = Raw::connect(&rt, server.local_addr()).await;
        c.send(case).await;
        c.send(b"GET /echo HTTP/1.1\r\n\r\n").await;
        let r = c.response("GET").await;
        let shown = String::from_utf8_lossy(case);
        assert_eq!(r.status, 400, "{shown}");
        assert!(r.closes(), "{shown}");
        assert!(
            c.closed().await,
            "the smuggled request must not be answered: {shown}"
        );
    }
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn oversized_heads_get_431<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let mut c = Raw::connect(&rt, server.local_addr()).await;
    let mut req = b"GET / HTTP/1.1\r\n".to_vec();
    while req.len() < 80 * 1024 {
        req.extend_from_slice(b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    req.extend_from_slice(b"\r\n");
    c.send(&req).await;
    let r = c.response("GET").await;
    assert_eq!(r.status, 431);
    assert!(r.closes());
    assert!(c.closed().await);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn client_pool_reuses_connections<R: Runtime>(rt: R) {
    let (server, _) = start(&rt, ServerConfig::default()).await;
    let addr = server.local_addr();
    let pool = ClientPool::new(rt.clone(), ClientConfig::default());
    for i in 0..5 {
        let mut conn = pool.get(addr).await.unwrap();
        let body = format!("n{i}");
        conn.send_request("PUT", "/echo", &[], body.as_bytes())
            .await
            .unwrap();
        let mut hs = [EMPTY_HEADER; 16];
        let mut r = conn.response(&mut hs).await.unwrap();
        assert_eq!(r.body.next_chunk().await.unwrap(), Some(body.as_bytes()));
        assert_eq!(r.body.next_chunk().await.unwrap(), None);
        pool.put(conn);
    }
    assert_eq!(server.accepted(), 1);
    assert_eq!(pool.idle_count(), 1);
    // A response left unread does not go back: the next request needs a new connection.
    let mut conn = pool.get(addr).await.unwrap();
    conn.send_request("PUT", "/echo", &[], b"unread")
        .await
        .unwrap();
    {
        let mut hs = [EMPTY_HEADER; 16];
        let r = conn.response(&mut hs).await.unwrap();
        assert_eq!(r.head.status, 200);
    }
    pool.put(conn);
    assert_eq!(pool.idle_count(), 0);
    let mut conn = pool.get(addr).await.unwrap();
    conn.send_request("GET", "/missing", &[], b"")
        .await
        .unwrap();
    let mut hs = [EMPTY_HEADER; 16];
    assert_eq!(conn.response(&mut hs).await.unwrap().head.status, 404);
    assert_eq!(server.accepted(), 2);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn unblock_runs_off_the_reactor<R: Runtime>(rt: R) {
    let here = std::thread::current().id();
    let (there, value) = rt
        .unblock(|| {
            std::thread::sleep(Duration::from_millis(10));
            (std::thread::current().id(), 6 * 7)
        })
        .await;
    assert_eq!(value, 42);
    assert_ne!(there, here);
    // Spawned tasks run to completion and hand back their output.
    let task = rt.spawn(async { 5 + 5 });
    assert_eq!(task.await, 10);
}

pub async fn graceful_stop_finishes_requests<R: Runtime>(rt: R) {
    let (server, handler) = start(&rt, ServerConfig::default()).await;
    let addr = server.local_addr();
    // One idle connection, one with a request in progress.
    let mut idle = Raw::connect(&rt, addr).await;
    let mut busy = Raw::connect(&rt, addr).await;
    busy.send(b"GET /slow HTTP/1.1\r\n\r\n").await;
    wait_until(&rt, "the slow request is in the handler", || {
        handler.in_flight.load(Ordering::SeqCst) > 0
    })
    .await;
    server.shutdown();
    assert!(idle.closed().await, "idle connections close at once");
    handler.gate.set();
    let r = busy.response("GET").await;
    assert_eq!((r.status, r.body.as_slice()), (200, &b"done"[..]));
    assert!(r.closes());
    assert!(server.stop(&rt, Duration::from_secs(5)).await);
    assert_eq!(server.active(), 0);
    assert!(rt.connect(addr).await.is_err(), "the listener is closed");
}

/// A GET on a new connection at `addr`, tried until the server takes it (a connection the
/// cap turns away is closed without an answer); the attempts that were turned away.
async fn get_when_admitted<R: Runtime>(rt: &R, addr: std::net::SocketAddr) -> usize {
    for refused in 0..100 {
        let mut c = Raw::connect(rt, addr).await;
        c.send(b"GET /echo HTTP/1.1\r\nConnection: close\r\n\r\n")
            .await;
        if c.anything_within(Duration::from_secs(5)).await {
            let r = c.response("GET").await;
            assert_eq!(r.status, 200);
            return refused;
        }
        rt.sleep(Duration::from_millis(20)).await;
    }
    panic!("never admitted");
}

pub async fn connection_cap_makes_room_from_idle_connections<R: Runtime>(rt: R) {
    let config = ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    };
    let (server, _) = start(&rt, config).await;
    let addr = server.local_addr();
    let mut idle = [Raw::connect(&rt, addr).await, Raw::connect(&rt, addr).await];
    wait_until(&rt, "two connections open", || server.active() >= 2).await;
    // At the cap with both waiting for a request: a new client is served (once they are
    // seen waiting), and one of them makes room.
    get_when_admitted(&rt, addr).await;
    assert!(server.evicted() >= 1);
    let mut closed = 0;
    for c in &mut idle {
        // The other one stays open (until its head timeout): look briefly.
        let seen = timeout(&rt, Duration::from_millis(500), c.closed()).await;
        closed += usize::from(seen == Ok(true));
    }
    assert!(closed >= 1, "an idle connection was closed");
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn connection_cap_refuses_when_none_is_idle<R: Runtime>(rt: R) {
    let config = ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    };
    let (server, handler) = start(&rt, config).await;
    let addr = server.local_addr();
    let mut busy = [Raw::connect(&rt, addr).await, Raw::connect(&rt, addr).await];
    for c in &mut busy {
        c.send(b"GET /slow HTTP/1.1\r\n\r\n").await;
    }
    wait_until(&rt, "both slow requests in the handler", || {
        handler.in_flight.load(Ordering::SeqCst) >= 2
    })
    .await;
    // Both busy: a new connection is closed at once, without an answer.
    let mut refused = Raw::connect(&rt, addr).await;
    let got = read_to_close(&mut refused).await;
    assert_eq!(got, Some(Vec::new()), "closed at once, nothing sent");
    assert_eq!(server.refused(), 1);
    // Once they are done (and idle), new clients are served again.
    handler.gate.set();
    for c in &mut busy {
        assert_eq!(c.response("GET").await.status, 200);
    }
    get_when_admitted(&rt, addr).await;
    server.stop(&rt, Duration::from_secs(5)).await;
}

/// A self-signed certificate for `localhost` and 127.0.0.1: (certificate PEM, key PEM).
fn self_signed() -> (String, String) {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let ck = rcgen::generate_simple_self_signed(names).expect("certificate");
    (ck.cert.pem(), ck.signing_key.serialize_pem())
}

/// A TLS server with the suite handler; the certificate PEM for clients to trust.
async fn start_tls<R: NetRuntime>(rt: &R, config: ServerConfig) -> (ServerHandle, String) {
    let (cert, key) = self_signed();
    let tls = ferry_net::server_config(cert.as_bytes(), key.as_bytes()).expect("server config");
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let listener = ferry_net::bind(rt, addr, Some(tls)).await.expect("bind");
    let server = serve_listener(rt, listener, config, Arc::new(Suite::default())).expect("serve");
    (server, cert)
}

/// A connector that speaks TLS to `addr`, trusting `ca` (or anything, if `None`).
fn tls_connector(addr: SocketAddr, ca: Option<&str>) -> TlsConnector {
    let config = ferry_net::client_config(ca.map(str::as_bytes), ca.is_none()).unwrap();
    let mut c = TlsConnector::new(config);
    c.add(addr, ferry_net::server_name("localhost").unwrap());
    c
}

/// Read until the peer closes (EOF or reset): everything read, or `None` if it stays open
/// past the read timeout.
async fn read_to_close<R: Runtime>(c: &mut Raw<R>) -> Option<Vec<u8>> {
    let mut tmp = vec![0u8; 4096];
    loop {
        match Stream::read_send(&mut c.io, &mut tmp).await {
            Ok(0) => return Some(std::mem::take(&mut c.buf)),
            Ok(n) => c.buf.extend_from_slice(&tmp[..n]),
            Err(embedded_io::ErrorKind::TimedOut) => return None,
            Err(_) => return Some(std::mem::take(&mut c.buf)),
        }
    }
}

pub async fn tls_serves_and_survives_failed_handshakes<R: NetRuntime>(rt: R) {
    let config = ServerConfig {
        header_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let (server, cert) = start_tls(&rt, config).await;
    let addr = server.local_addr();
    let pool = ClientPool::with_connector(
        rt.clone(),
        tls_connector(addr, Some(&cert)),
        ClientConfig::default(),
    );
    let echo = |body: &'static [u8]| {
        let pool = &pool;
        async move {
            let mut conn = pool.get(addr).await.expect("TLS connection");
            conn.send_request("PUT", "/echo", &[], body).await.unwrap();
            let mut hs = [EMPTY_HEADER; 16];
            let mut r = conn.response(&mut hs).await.unwrap();
            assert_eq!(r.head.status, 200);
            let mut got = Vec::new();
            while let Some(c) = r.body.next_chunk().await.unwrap() {
                got.extend_from_slice(c);
            }
            assert_eq!(got, body);
            pool.put(conn);
        }
    };
    // Kept alive over TLS: two requests, one connection.
    echo(b"first").await;
    echo(b"second").await;
    assert_eq!((server.accepted(), pool.idle_count()), (1, 1));

    // Plain HTTP to the TLS port: no HTTP answer, the connection closes.
    let mut plain = Raw::connect(&rt, addr).await;
    plain.send(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let got = read_to_close(&mut plain).await.expect("closed");
    assert!(
        !got.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    // A peer that never starts its handshake is dropped after the head timeout.
    let mut silent = Raw::connect(&rt, addr).await;
    assert_eq!(read_to_close(&mut silent).await, Some(Vec::new()));
    // A client that does not trust the certificate fails the handshake, saying why.
    let untrusting = ferry_net::client_config(None, false).unwrap();
    let name = ferry_net::server_name("localhost").unwrap();
    let Err(err) = rt.connect_tls(addr, untrusting, name).await else {
        panic!("a client without the CA connected");
    };
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");
    let cfg = ClientConfig::default();
    let other = connect_with(&rt, &tls_connector(addr, None), addr, cfg).await;
    assert!(other.is_ok(), "an insecure client connects");
    // Nothing of that disturbed the server.
    drop(pool.get(addr).await.unwrap());
    echo(b"third").await;
    assert!(server.stop(&rt, Duration::from_secs(5)).await);
}

pub async fn tls_streams_large_bodies_both_ways<R: NetRuntime>(rt: R) {
    let (server, cert) = start_tls(&rt, ServerConfig::default()).await;
    let addr = server.local_addr();
    let connector = tls_connector(addr, Some(&cert));
    let mut conn = connect_with(&rt, &connector, addr, ClientConfig::default())
        .await
        .unwrap();
    // Larger than rustls' buffers and TLS records, with a pattern so order matters.
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    for _ in 0..2 {
        let mut w = conn
            .request(
                "PUT",
                "/echo",
                &[],
                BodyKind::Length(body.len() as u64),
                false,
            )
            .unwrap();
        for piece in body.chunks(100_000) {
            w.write(piece).await.unwrap();
        }
        w.finish().await.unwrap();
        let mut hs = [EMPTY_HEADER; 16];
        let mut r = conn.response(&mut hs).await.unwrap();
        assert_eq!(r.head.status, 200);
        let mut got = Vec::new();
        while let Some(c) = r.body.next_chunk().await.unwrap() {
            got.extend_from_slice(c);
        }
        assert!(got == body, "echoed body differs ({} bytes)", got.len());
    }
    assert!(conn.is_reusable());
    assert_eq!(server.accepted(), 1);
    server.stop(&rt, Duration::from_secs(5)).await;
}

pub async fn relay_forwards_backend_bodies<R: Runtime>(rt: R) {
    let (backend, _) = start(&rt, ServerConfig::default()).await;
    let relay = Arc::new(Relay {
        pool: ClientPool::new(rt.clone(), ClientConfig::default()),
        backend: backend.local_addr(),
        reusable: Default::default(),
    });
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let front = serve(&rt, addr, ServerConfig::default(), relay.clone())
        .await
        .expect("bind 127.0.0.1");
    let mut c = Raw::connect(&rt, front.local_addr()).await;
    // Empty, smaller than the first read, and many pipe-fulls; twice on one connection.
    for n in [0usize, 1000, 3 << 20, 3 << 20] {
        c.send(format!("GET /x?n={n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .await;
        let r = c.response("GET").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), n, "relayed length");
        assert!(r.body == pattern(n), "relayed bytes differ for n={n}");
    }
    // Request bodies the other way, with and without `Expect: 100-continue`.
    for (n, expect) in [(3usize << 20, false), (3 << 20, true), (10, true)] {
        let data = pattern(n);
        let e = if expect {
            "Expect: 100-continue\r\n"
        } else {
            ""
        };
        c.send(format!("PUT /x HTTP/1.1\r\nHost: t\r\n{e}Content-Length: {n}\r\n\r\n").as_bytes())
            .await;
        if expect {
            while !c.buf.windows(4).any(|w| w == b"\r\n\r\n") {
                assert!(c.fill().await, "EOF before 100 Continue");
            }
            assert!(c.buf.starts_with(b"HTTP/1.1 100 Continue\r\n\r\n"));
            c.buf.drain(..25);
        }
        c.send(&data).await;
        let r = c.response("PUT").await;
        assert_eq!(r.status, 200);
        assert!(
            r.body == data,
            "relayed request body differs (n={n}, expect={expect})"
        );
    }
    let sizes = [0u64, 1000, 3 << 20, 3 << 20, 3 << 20, 3 << 20, 10];
    // The handler records after its last write, which the client may see first.
    wait_until(&rt, "the relay recorded every body", || {
        relay.reusable.lock().unwrap().len() >= sizes.len()
    })
    .await;
    let expected: Vec<(bool, u64)> = sizes.iter().map(|&n| (true, n)).collect();
    assert_eq!(*relay.reusable.lock().unwrap(), expected);
    assert_eq!(backend.accepted(), 1, "one kept-alive backend connection");

    // The backend dies half way: the client's connection ends short, nothing hangs.
    let n = 2 << 20;
    c.send(format!("GET /x?n={n}&short HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .await;
    loop {
        if !c.fill().await {
            break;
        }
    }
    assert!(
        c.buf.len() < n,
        "a short backend body cannot complete the response"
    );
    assert_eq!(
        relay.reusable.lock().unwrap().last().map(|r| r.0),
        Some(false)
    );
    front.stop(&rt, Duration::from_secs(5)).await;
    backend.stop(&rt, Duration::from_secs(5)).await;
}

/// Where the adapter supports it (Linux), `splice_from` moves bytes between two of its sockets.
pub async fn splice_moves_bytes_between_sockets<R: Runtime>(rt: R) {
    let listener = rt.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = Listener::local_addr(&listener).unwrap();
    let accept = async || {
        let (accepted, _) = Listener::accept(&listener).await.unwrap();
        <R::Listener as Listener>::establish(accepted)
            .await
            .unwrap()
    };
    let mut a_out = rt.connect(addr).await.unwrap();
    let mut a_in = accept().await;
    let mut b_out = rt.connect(addr).await.unwrap();
    let mut b_in = accept().await;
    let n = 4 << 20;
    let data = pattern(n);
    let writer = rt.spawn(async move {
        let mut off = 0;
        while off < n {
            off += a_out.write_send(&data[off..]).await.unwrap();
        }
        a_out
    });
    let reader = rt.spawn(async move {
        let mut got = Vec::with_capacity(n);
        let mut buf = vec![0u8; 1 << 16];
        while got.len() < n {
            let k = b_in.read_send(&mut buf).await.unwrap();
            assert!(k > 0, "EOF after {} bytes", got.len());
            got.extend_from_slice(&buf[..k]);
        }
        got
    });
    let mut moved = 0u64;
    let mut rounds = 0;
    while moved < n as u64 {
        match b_out.splice_from(&mut a_in, n as u64 - moved).await {
            Some(r) => moved += r.expect("splice"),
            None if cfg!(target_os = "linux") => panic!("Linux adapters splice"),
            None => return,
        }
        rounds += 1;
    }
    assert_eq!(moved, n as u64);
    assert!(rounds > 1, "one round moves at most a pipe-full");
    let got = reader.await;
    assert!(got == pattern(n), "spliced bytes differ");
    drop(writer.await);
}
