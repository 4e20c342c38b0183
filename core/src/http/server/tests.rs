//! The engine's unit tests, over in-memory connections.

use super::*;
use crate::http::body::BodyKind;
use crate::http::body::response_framing;
use crate::http::chunked::ChunkedDecoder;
use crate::http::head::RequestHead;
use crate::http::head::{HeadParser, Status};
use crate::http::testing::Duplex;
use crate::pool::PoolConfig;
use crate::rt::tests::{TestClock, block_on};
use crate::rt::{Clock, Signal, Stream};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::future::Future;
use core::net::SocketAddr;
use core::time::Duration;
use httparse::{EMPTY_HEADER, Header};

fn config() -> ServerConfig {
    let pool = BufferPool::leak(PoolConfig {
        max_class_log2: 17,
        max_per_class: 2,
        max_retained_bytes: 1 << 20,
        shards: 1,
    });
    ServerConfig::new(pool)
}

/// Routes by target; every route exercises one part of the engine.
#[derive(Default)]
struct TestHandler {
    stop: Option<Arc<Signal>>,
    /// What `/counted` saw after its response: peer, status, body bytes.
    counted: spin::Mutex<Vec<(Option<SocketAddr>, u16, u64)>>,
}

/// A handler's own error: just a status (the S3 layer's errors are tested with the S3 layer).
#[derive(Debug)]
struct TestError(u16);

impl From<HttpError> for TestError {
    fn from(e: HttpError) -> Self {
        Self(e.status())
    }
}

impl HandlerError for TestError {
    fn status(&self) -> u16 {
        self.0
    }
}

impl Handler for TestHandler {
    type Error = TestError;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), TestError> {
        match req.target {
            "/echo" => {
                let mut got = Vec::new();
                while let Some(c) = body.next_chunk().await? {
                    got.extend_from_slice(c);
                }
                let mut hs = [EMPTY_HEADER; 4];
                let trailer = body.trailers(&mut hs)?.first().map(|h| h.value.to_vec());
                let trailer = trailer.unwrap_or_default();
                let hs = [Header {
                    name: "X-Trailer",
                    value: &trailer,
                }];
                res.send(200, &hs, &got).await?;
            }
            "/read" => {
                // Small copying reads through the embedded-io trait.
                let mut got = Vec::new();
                let mut buf = [0u8; 3];
                loop {
                    let n = embedded_io_async::Read::read(body, &mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                res.send(200, &[], &got).await?;
            }
            "/direct" => {
                // Reads straight into the caller's buffer, 7 bytes at a time.
                let mut got = Vec::new();
                let mut buf = [0u8; 7];
                loop {
                    let n = body.read_direct(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                res.send(200, &[], &got).await?;
            }
            "/reject" => res.send(403, &[], b"no").await?,
            "/deny" => {
                // Not worth reading a body for: the connection closes rather than drain it.
                res.set_drain_limit(0);
                res.send(403, &[], b"no").await?;
            }
            "/ignore" => res.send(200, &[], b"ok").await?,
            "/chunked" => {
                res.start(200, &[], BodyKind::Chunked)?;
                res.write(b"hello").await?;
                res.write(b" world").await?;
                let t = [Header {
                    name: "X-T",
                    value: b"v",
                }];
                res.finish_with_trailers(&t).await?;
            }
            "/big" => {
                res.start(200, &[], BodyKind::Length(40_000))?;
                for _ in 0..4 {
                    res.write(&[b'x'; 10_000]).await?;
                }
            }
            "/counted" => {
                res.start(201, &[], BodyKind::Chunked)?;
                res.write(b"hello").await?;
                res.write(b" world").await?;
                res.finish().await?;
                let seen = (res.peer(), res.status(), res.body_bytes());
                self.counted.lock().push(seen);
            }
            "/err" => return Err(TestError(404)),
            "/added" | "/added-err" => {
                res.add_header("X-Added", b"1")?;
                assert!(res.add_header("Bad Name", b"x").is_err());
                if req.target == "/added-err" {
                    return Err(TestError(404));
                }
                res.send(200, &[], b"ok").await?;
                assert!(res.add_header("X-Late", b"1").is_err());
            }
            "/silent" => {}
            "/stopping" => {
                if let Some(s) = &self.stop {
                    s.set();
                }
                res.send(200, &[], b"bye").await?;
            }
            "/short" => {
                res.start(200, &[], BodyKind::Length(10))?;
                res.write(b"12345").await?;
            }
            "/framing" => {
                let hs = [Header {
                    name: "Content-Length",
                    value: b"3",
                }];
                res.send(200, &hs, b"abc").await?;
            }
            _ => res.send(404, &[], b"").await?,
        }
        Ok(())
    }
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

/// Split what the server wrote into responses (`methods` say which answer a HEAD).
fn responses(mut out: &[u8], methods: &[&str]) -> Vec<Resp> {
    let mut all = Vec::new();
    for method in methods.iter().chain(core::iter::repeat(&"GET")) {
        if out.is_empty() {
            break;
        }
        let mut hs = [EMPTY_HEADER; 32];
        let Ok(Status::Complete(h)) = HeadParser::default().parse_response(out, &mut hs) else {
            panic!("bad response head in {:?}", String::from_utf8_lossy(out));
        };
        let framing = response_framing(&h, method).unwrap();
        let headers = h
            .headers
            .iter()
            .map(|x| (String::from(x.name), x.value.to_vec()))
            .collect();
        let rest = &out[h.len..];
        let (body, used) = match framing.body {
            BodyKind::None => (Vec::new(), 0),
            BodyKind::Length(n) => {
                let n = (n as usize).min(rest.len());
                (rest[..n].to_vec(), n)
            }
            BodyKind::CloseDelimited => (rest.to_vec(), rest.len()),
            BodyKind::Chunked => {
                let mut d = ChunkedDecoder::default();
                let (mut body, mut at) = (Vec::new(), 0);
                while !d.is_done() {
                    let s = d.decode_borrowed(&rest[at..]).unwrap();
                    body.extend_from_slice(s.data);
                    at += s.consumed;
                }
                (body, at)
            }
        };
        all.push(Resp {
            status: h.status,
            headers,
            body,
        });
        out = &rest[used..];
    }
    all
}

/// Serve `input` (read `read_size` bytes at a time) to its end; the requests answered,
/// the responses and the raw writes.
fn serve_bytes(
    input: &[u8],
    read_size: usize,
    config: &ServerConfig,
    methods: &[&str],
) -> (u64, Vec<Resp>, Duplex) {
    let io = Duplex::new(input, read_size);
    let clock = TestClock::auto();
    let served = block_on(serve_connection(
        clock,
        io.clone(),
        config,
        &TestHandler::default(),
        None,
    ));
    let out = io.written();
    (served, responses(&out, methods), io)
}

#[test]
fn connection_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let cfg = config();
    let h = TestHandler::default();
    let f = serve_connection(TestClock::auto(), Duplex::default(), &cfg, &h, None);
    assert_send(&f);
}

#[test]
fn keep_alive_and_pipelining_in_order() {
    let input = b"GET /ignore HTTP/1.1\r\nHost: a\r\n\r\nPUT /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /chunked HTTP/1.1\r\n\r\nPOST /read HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n";
    for read_size in [0, 1, 7, 64] {
        let (served, rs, _) = serve_bytes(input, read_size, &config(), &[]);
        assert_eq!(served, 4, "read_size {read_size}");
        let got: Vec<_> = rs.iter().map(|r| (r.status, r.body.as_slice())).collect();
        assert_eq!(
            got,
            vec![
                (200, &b"ok"[..]),
                (200, b"hello"),
                (200, b"hello world"),
                (200, b"Wikipedia")
            ]
        );
        assert!(rs.iter().all(|r| !r.closes() && r.header("date").is_some()));
    }
}

#[test]
fn response_writer_reports_peer_status_and_body_bytes() {
    let input = b"GET /counted HTTP/1.1\r\n\r\nHEAD /counted HTTP/1.1\r\n\r\n";
    let peer: SocketAddr = "192.0.2.7:4242".parse().unwrap();
    let h = TestHandler::default();
    let cfg = config();
    let io = Duplex::new(input, 0);
    let served = block_on(serve_connection_from(
        TestClock::auto(),
        io.clone(),
        Some(peer),
        &cfg,
        &h,
        None,
    ));
    assert_eq!(served, 2);
    let rs = responses(&io.written(), &["GET", "HEAD"]);
    assert_eq!(rs[0].body, b"hello world");
    // Framing (chunk sizes) is not counted; nothing is sent for HEAD.
    let seen = h.counted.lock().clone();
    assert_eq!(seen, vec![(Some(peer), 201, 11), (Some(peer), 201, 0)]);
    // Without a peer (plain serve_connection), none is reported.
    let h = TestHandler::default();
    block_on(serve_connection(
        TestClock::auto(),
        Duplex::new(b"GET /counted HTTP/1.1\r\n\r\n", 0),
        &cfg,
        &h,
        None,
    ));
    assert_eq!(h.counted.lock()[0].0, None);
}

#[test]
fn added_headers_go_on_whichever_response_starts() {
    let input =
        b"GET /added HTTP/1.1\r\n\r\nGET /added-err HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n";
    let (served, rs, _) = serve_bytes(input, 0, &config(), &[]);
    assert_eq!(served, 3);
    assert_eq!(
        (rs[0].status, rs[0].header("x-added")),
        (200, Some(&b"1"[..]))
    );
    assert_eq!(rs[0].body, b"ok");
    assert_eq!(
        (rs[1].status, rs[1].header("x-added")),
        (404, Some(&b"1"[..]))
    );
    // One request's headers are not the next one's.
    assert_eq!((rs[2].status, rs[2].header("x-added")), (200, None));
}

#[test]
fn small_responses_are_one_write() {
    let (_, rs, io) = serve_bytes(b"GET /ignore HTTP/1.1\r\n\r\n", 0, &config(), &[]);
    assert_eq!(rs.len(), 1);
    assert_eq!(io.0.lock().writes.len(), 1);
    let (_, rs, _) = serve_bytes(b"GET /big HTTP/1.1\r\n\r\n", 0, &config(), &[]);
    assert_eq!(rs[0].body.len(), 40_000);
}

#[test]
fn continue_is_sent_when_the_body_is_first_read() {
    let head = b"PUT /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    let mut input = head.to_vec();
    input.extend_from_slice(b"hello");
    // Reads of exactly the head: the body is not buffered when the handler starts.
    let (served, _, io) = serve_bytes(&input, head.len(), &config(), &[]);
    assert_eq!(served, 1);
    let out = io.written();
    assert!(out.starts_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    let rs = responses(&out[CONTINUE.len()..], &[]);
    assert_eq!(rs[0].body, b"hello");
    assert!(!rs[0].closes());
    // Body bytes that came without waiting (all, or the first two): no 100 at all.
    for read_size in [0, head.len() + 2] {
        let (_, rs, io) = serve_bytes(&input, read_size, &config(), &[]);
        assert!(
            io.written().starts_with(b"HTTP/1.1 200 OK\r\n"),
            "{read_size}"
        );
        assert_eq!(rs[0].body, b"hello");
    }
}

#[test]
fn direct_reads_take_the_buffered_bytes_then_the_socket_and_stop_at_the_length() {
    let body: Vec<u8> = (0..40u8).collect();
    let head = b"PUT /direct HTTP/1.1\r\nContent-Length: 40\r\n\r\n";
    let mut input = head.to_vec();
    input.extend_from_slice(&body);
    input.extend_from_slice(b"GET /ignore HTTP/1.1\r\n\r\n");
    // The whole input at once (the body and the next request buffered with the head), the
    // head alone, the head and part of the body, and small reads throughout.
    for read_size in [0, head.len(), head.len() + 10, 5] {
        let (served, rs, io) = serve_bytes(&input, read_size, &config(), &[]);
        assert_eq!(served, 2, "{read_size}");
        assert_eq!(rs[0].body, body, "{read_size}");
        assert_eq!((rs[1].status, &rs[1].body[..]), (200, &b"ok"[..]));
        assert!(!io.0.lock().shut, "kept alive");
    }
    // Expect: 100-continue: sent before the first direct read.
    let head = b"PUT /direct HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 40\r\n\r\n";
    let mut input = head.to_vec();
    input.extend_from_slice(&body);
    let (_, _, io) = serve_bytes(&input, head.len(), &config(), &[]);
    let out = io.written();
    assert!(out.starts_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    assert_eq!(responses(&out[CONTINUE.len()..], &[])[0].body, body);
    // A body that ends before its length: the read fails as a copying read does, and the
    // connection closes.
    for path in ["/direct", "/echo"] {
        let mut input =
            alloc::format!("PUT {path} HTTP/1.1\r\nContent-Length: 40\r\n\r\n").into_bytes();
        input.extend_from_slice(&body[..25]);
        let (_, rs, io) = serve_bytes(&input, 10, &config(), &[]);
        assert_eq!(rs.len(), 1, "{path}");
        assert_eq!(rs[0].status, 400, "{path}");
        assert!(rs[0].closes(), "{path}");
        assert!(io.0.lock().shut, "{path}");
    }
}

#[test]
fn rejecting_without_reading_sends_no_continue_and_closes() {
    let head = b"PUT /reject HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    let mut input = head.to_vec();
    input.extend_from_slice(b"helloGET /ignore HTTP/1.1\r\n\r\n");
    let (served, rs, io) = serve_bytes(&input, head.len(), &config(), &[]);
    assert_eq!(served, 1);
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].status, 403);
    assert!(rs[0].closes());
    assert!(io.0.lock().shut, "closed cleanly with a FIN");
}

#[test]
fn unread_bodies_are_drained_up_to_the_limit() {
    let input =
        b"PUT /ignore HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789GET /ignore HTTP/1.1\r\n\r\n";
    let (served, rs, _) = serve_bytes(input, 4, &config(), &[]);
    assert_eq!(served, 2);
    assert!(!rs[0].closes());
    let mut small = config();
    small.drain_limit = 4;
    let (served, rs, _) = serve_bytes(input, 4, &small, &[]);
    assert_eq!(served, 1);
    assert!(rs[0].closes());
    // Chunked bodies left unread are drained too (when the response starts after the
    // body has arrived the connection is kept).
    let chunked = b"PUT /ignore HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n";
    let (_, rs, _) = serve_bytes(chunked, 0, &config(), &[]);
    assert!(rs[0].closes(), "unknown remaining length: close");
}

#[test]
fn chunked_body_with_trailers() {
    let input = b"PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Checksum: abc\r\n\r\n";
    for read_size in [0, 1, 5] {
        let (_, rs, _) = serve_bytes(input, read_size, &config(), &[]);
        assert_eq!(rs[0].body, b"Wikipedia");
        assert_eq!(rs[0].header("x-trailer"), Some(&b"abc"[..]));
    }
}

#[test]
fn chunked_responses_and_http10() {
    let (_, rs, _) = serve_bytes(b"GET /chunked HTTP/1.1\r\n\r\n", 0, &config(), &[]);
    assert_eq!(rs[0].header("transfer-encoding"), Some(&b"chunked"[..]));
    assert_eq!(rs[0].body, b"hello world");
    // HTTP/1.0 has no chunked coding: the body is close-delimited.
    let (served, rs, _) = serve_bytes(
        b"GET /chunked HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /ignore HTTP/1.0\r\n\r\n",
        0,
        &config(),
        &[],
    );
    assert_eq!(served, 1);
    assert!(rs[0].closes());
    assert_eq!(rs[0].header("transfer-encoding"), None);
    assert_eq!(rs[0].body, b"hello world");
    let (served, rs, _) = serve_bytes(
        b"GET /ignore HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /ignore HTTP/1.0\r\n\r\n",
        0,
        &config(),
        &[],
    );
    assert_eq!(served, 2);
    assert_eq!(rs[0].header("connection"), Some(&b"keep-alive"[..]));
    assert!(rs[1].closes());
}

#[test]
fn head_requests_get_no_body() {
    let (served, rs, _) = serve_bytes(
        b"HEAD /big HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
        0,
        &config(),
        &["HEAD"],
    );
    assert_eq!(served, 2);
    assert_eq!(rs[0].header("content-length"), Some(&b"40000"[..]));
    assert!(rs[0].body.is_empty());
    assert_eq!(rs[1].body, b"ok");
}

#[test]
fn handler_errors_are_rendered_and_keep_the_connection() {
    let (served, rs, _) = serve_bytes(
        b"GET /err HTTP/1.1\r\n\r\nGET /silent HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
        0,
        &config(),
        &[],
    );
    assert_eq!(served, 3);
    let got: Vec<_> = rs.iter().map(|r| r.status).collect();
    assert_eq!(got, vec![404, 500, 200]);
}

#[test]
fn broken_responses_close_the_connection() {
    let (served, _, io) = serve_bytes(
        b"GET /short HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
        0,
        &config(),
        &[],
    );
    assert_eq!(served, 1);
    let out = io.written();
    assert!(
        out.ends_with(b"\r\n\r\n12345"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    // A handler passing its own framing header gets an error, rendered as a 500.
    let (_, rs, _) = serve_bytes(b"GET /framing HTTP/1.1\r\n\r\n", 0, &config(), &[]);
    assert_eq!(rs[0].status, 500);
    assert_eq!(rs[0].header("content-length"), Some(&b"0"[..]));
}

#[test]
fn protocol_errors_answer_and_close() {
    let cases: &[(&[u8], u16)] = &[
        (
            b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            400,
        ),
        (b"GET / HTTP/1.1\nHost: a\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\n\r\n", 400),
        (
            b"PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            400,
        ),
        (
            b"PUT /echo HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
            413,
        ),
    ];
    for (input, status) in cases {
        let mut input = input.to_vec();
        input.extend_from_slice(b"GET /ignore HTTP/1.1\r\n\r\n");
        let (_, rs, io) = serve_bytes(&input, 0, &config(), &[]);
        assert_eq!(rs.len(), 1, "{:?}", String::from_utf8_lossy(&input));
        assert_eq!(
            rs[0].status,
            *status,
            "{:?}",
            String::from_utf8_lossy(&input)
        );
        assert!(rs[0].closes());
        assert!(io.0.lock().shut);
    }
    let mut huge = b"GET / HTTP/1.1\r\n".to_vec();
    while huge.len() < 70_000 {
        huge.extend_from_slice(b"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    let (_, rs, _) = serve_bytes(&huge, 0, &config(), &[]);
    assert_eq!(rs[0].status, 431);
    assert!(rs[0].closes());
}

#[test]
fn head_timeouts_close() {
    // Silent peer: closed without a response.
    let io = Duplex::new(b"", 0);
    io.0.lock().hang = true;
    let cfg = config();
    let served = block_on(serve_connection(
        TestClock::auto(),
        io.clone(),
        &cfg,
        &TestHandler::default(),
        None,
    ));
    assert_eq!(served, 0);
    assert!(io.written().is_empty());
    // Half a head, then silence: 408 Request Timeout, then close.
    let io = Duplex::new(b"GET / HTTP/1.1\r\nHost:", 0);
    io.0.lock().hang = true;
    block_on(serve_connection(
        TestClock::auto(),
        io.clone(),
        &cfg,
        &TestHandler::default(),
        None,
    ));
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs[0].status, 408);
    assert!(rs[0].closes());
    // A body that stops arriving: the handler's read times out.
    let io = Duplex::new(b"PUT /echo HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc", 0);
    io.0.lock().hang = true;
    let served = block_on(serve_connection(
        TestClock::auto(),
        io.clone(),
        &cfg,
        &TestHandler::default(),
        None,
    ));
    assert_eq!(served, 1);
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs[0].status, 408);
    assert!(rs[0].closes());
}

#[test]
fn stop_closes_after_the_current_request() {
    let stop = Arc::new(Signal::new());
    let handler = TestHandler {
        stop: Some(stop.clone()),
        ..TestHandler::default()
    };
    let io = Duplex::new(
        b"GET /stopping HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
        0,
    );
    let cfg = config();
    let served = block_on(serve_connection(
        TestClock::auto(),
        io.clone(),
        &cfg,
        &handler,
        Some(&*stop),
    ));
    assert_eq!(served, 1);
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs[0].body, b"bye");
    assert!(rs[0].closes());
    // A connection with nothing buffered closes at once while stopping.
    let io = Duplex::new(b"", 0);
    io.0.lock().hang = true;
    let served = block_on(serve_connection(
        TestClock::auto(),
        io.clone(),
        &cfg,
        &handler,
        Some(&*stop),
    ));
    assert_eq!(served, 0);
    assert!(io.written().is_empty());
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Drive `f` on `clock` (a manual one), moving it `step` ahead whenever `f` waits, and
/// calling `each` with the time then; panics if it runs for more than an hour.
fn run_stepped<F: Future>(
    clock: &TestClock,
    step: Duration,
    f: F,
    mut each: impl FnMut(Duration),
) -> F::Output {
    let mut f = core::pin::pin!(f);
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    while clock.now() < secs(3600) {
        if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        clock.advance(step);
        each(clock.now());
    }
    panic!("connection still running after an hour");
}

/// `n` single bytes, one every `every`, starting after `every`.
fn trickle(n: u64, every: Duration) -> Vec<(Duration, Vec<u8>)> {
    (1..=n).map(|i| (every * i as u32, vec![b'x'])).collect()
}

fn timed_duplex(first: &[u8], later: Vec<(Duration, Vec<u8>)>, clock: &TestClock) -> Duplex {
    let io = Duplex::timed(first, &[], clock);
    io.0.lock().later = later.into();
    io
}

#[test]
fn idle_connections_hold_no_buffers() {
    let pool = BufferPool::leak(PoolConfig {
        max_class_log2: 17,
        max_per_class: 4,
        max_retained_bytes: 1 << 20,
        shards: 1,
    });
    let on_loan = || {
        let s = pool.stats();
        s.gets - s.returns - s.dropped_full
    };
    let cfg = ServerConfig::new(pool);
    let clock = TestClock::default();
    let get: &[u8] = b"GET /ignore HTTP/1.1\r\n\r\n";
    let last: &[u8] = b"PUT /echo HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
    let io = Duplex::timed(get, &[(secs(5), get), (secs(9), last)], &clock);
    let mut idle_looks = 0;
    let served = run_stepped(
        &clock,
        Duration::from_millis(100),
        serve_connection(
            clock.clone(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ),
        |now| {
            // Between the responses and the next requests nothing is on loan.
            if (secs(1)..secs(5)).contains(&now) || (secs(6)..secs(9)).contains(&now) {
                assert_eq!(on_loan(), 0, "a buffer held while idle at {now:?}");
                idle_looks += 1;
            }
        },
    );
    assert_eq!(served, 3);
    assert!(idle_looks > 50);
    assert_eq!(on_loan(), 0);
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs.len(), 3);
    assert_eq!(rs[2].body, b"abc");
    // The first request's buffer served the later ones: taken again, not allocated again.
    assert_eq!(pool.stats().misses, 1);
}

#[test]
fn a_body_below_the_minimum_rate_is_cut_off() {
    let mut cfg = config();
    cfg.body_timeout = secs(10);
    cfg.min_body_rate = 100;
    let clock = TestClock::default();
    // One byte every 5 s: each read is well within the 30 s read timeout.
    let head = b"PUT /echo HTTP/1.1\r\nContent-Length: 1000\r\n\r\n";
    let io = timed_duplex(head, trickle(1000, secs(5)), &clock);
    let mut answered_at = None;
    let served = run_stepped(
        &clock,
        Duration::from_millis(100),
        serve_connection(
            clock.clone(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ),
        |now| {
            if answered_at.is_none() && !io.written().is_empty() {
                answered_at = Some(now);
            }
        },
    );
    assert_eq!(served, 1);
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs[0].status, 408);
    assert!(rs[0].closes());
    // 10 s of waiting allowed, plus 10 ms per byte received (two of them by then).
    let at = answered_at.unwrap();
    assert!(at >= secs(10) && at <= secs(11), "answered at {at:?}");
    assert!(io.0.lock().shut);
}

#[test]
fn a_slow_body_at_the_minimum_rate_goes_through() {
    let mut cfg = config();
    cfg.body_timeout = secs(5);
    cfg.min_body_rate = 50;
    let clock = TestClock::default();
    // 100 bytes a second for 30 s: far longer than the grace, faster than the rate.
    let later = (1..=30u32)
        .map(|i| (secs(1) * i, vec![b'y'; 100]))
        .collect();
    let head = b"PUT /echo HTTP/1.1\r\nContent-Length: 3000\r\nConnection: close\r\n\r\n";
    let io = timed_duplex(head, later, &clock);
    let served = run_stepped(
        &clock,
        Duration::from_millis(100),
        serve_connection(
            clock.clone(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ),
        |_| {},
    );
    assert_eq!(served, 1);
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs[0].status, 200);
    assert_eq!(rs[0].body.len(), 3000);
}

#[test]
fn draining_an_unread_body_has_a_deadline() {
    let mut cfg = config();
    cfg.drain_timeout = secs(5);
    let clock = TestClock::default();
    // Small enough to drain, but it trickles: one byte a second.
    let head = b"PUT /ignore HTTP/1.1\r\nContent-Length: 100\r\n\r\n";
    let mut later = trickle(100, secs(1));
    later.push((secs(101), b"GET /ignore HTTP/1.1\r\n\r\n".to_vec()));
    let io = timed_duplex(head, later, &clock);
    let served = run_stepped(
        &clock,
        Duration::from_millis(100),
        serve_connection(
            clock.clone(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ),
        |_| {},
    );
    assert_eq!(served, 1, "the next request is never read");
    let rs = responses(&io.written(), &[]);
    assert_eq!(rs[0].status, 200);
    // Closed after 5 s of draining and the 2 s linger, long before the body would end.
    assert!(clock.now() <= secs(8), "closed at {:?}", clock.now());
    assert!(io.0.lock().shut);
}

#[test]
fn a_lowered_drain_limit_closes_instead_of_draining() {
    let input =
        b"PUT /deny HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789GET /ignore HTTP/1.1\r\n\r\n";
    let (served, rs, io) = serve_bytes(input, 4, &config(), &[]);
    assert_eq!(served, 1);
    assert_eq!(rs[0].status, 403);
    assert!(rs[0].closes());
    assert!(io.0.lock().shut);
    // No body: nothing to drain, the connection stays.
    let input = b"GET /deny HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n";
    let (served, rs, _) = serve_bytes(input, 0, &config(), &[]);
    assert_eq!(served, 2);
    assert!(!rs[0].closes());
}

#[test]
fn idle_connections_close_when_called_longest_idle_first() {
    let cfg = config();
    let idle = event_listener::Event::new();
    let stop = Signal::new();
    let clock = TestClock::default();
    let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let handler = TestHandler::default();
    let silent = || {
        let io = Duplex::new(b"", 0);
        io.0.lock().hang = true;
        io
    };
    // A connection in the middle of a head is busy, not idle.
    let busy = Duplex::new(b"GET /ignore HTTP/1.1\r\n", 0);
    busy.0.lock().hang = true;
    let conn =
        |io| super::conn::serve_accepted(clock.clone(), io, peer, &cfg, &handler, &stop, &idle);
    let mut busy = core::pin::pin!(conn(busy));
    let mut first = core::pin::pin!(conn(silent()));
    let mut second = core::pin::pin!(conn(silent()));
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    assert!(busy.as_mut().poll(&mut cx).is_pending());
    assert!(first.as_mut().poll(&mut cx).is_pending());
    assert!(second.as_mut().poll(&mut cx).is_pending());
    use event_listener::IntoNotification as _;
    assert_eq!(idle.notify(1.additional()), 1);
    assert_eq!(first.as_mut().poll(&mut cx), core::task::Poll::Ready(0));
    assert!(second.as_mut().poll(&mut cx).is_pending());
    assert_eq!(idle.notify(1.additional()), 1);
    assert_eq!(second.as_mut().poll(&mut cx), core::task::Poll::Ready(0));
    assert_eq!(idle.notify(1.additional()), 0, "nobody else is idle");
    assert!(busy.as_mut().poll(&mut cx).is_pending());
}
