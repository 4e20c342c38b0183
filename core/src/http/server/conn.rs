//! One connection: read heads, run the handler, keep the connection or close it cleanly.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::net::SocketAddr;
use core::ops::Range;
use core::sync::atomic::Ordering;
use core::time::Duration;

use embedded_io::{Error as _, ErrorKind};
use event_listener::Event;
use httparse::EMPTY_HEADER;

use super::reader::BodyReader;
use super::response::{ReqInfo, RespState, ResponseWriter};
use super::{Handler, ServerConfig, Shared};
use crate::http::body::{BodyKind, request_framing};
use crate::http::chunked::ChunkedDecoder;
use crate::http::error::{HttpError, ProtocolError, ProtocolErrorKind};
use crate::http::head::{HeadParser, RequestHead, Status, Version};
use crate::http::incoming::{BodyState, Src};
use crate::http::timed::{ReadBudget, Timed};
use crate::pool::PooledBuf;
use crate::rt::{Clock, Either, Signal, Stream, TimedOut, now_or_never, race, timeout_at};

/// Header field storage per request; the effective cap is [`HeadLimits::max_headers`].
///
/// [`HeadLimits::max_headers`]: crate::http::head::HeadLimits::max_headers
const MAX_HEADERS: usize = 128;
/// A clean close discards at most this much late input before giving up.
const LINGER_BYTES: usize = 1 << 20;

/// What to do after one request.
#[derive(Debug)]
enum Next {
    /// Keep the connection; these buffer bytes (absolute) are the start of the next request.
    KeepAlive(Range<usize>),
    /// Close cleanly (shut down writing, discard late input).
    Close,
    /// Close at once: the transport is gone or the peer left.
    Drop,
    /// The head could not be read: answer this error, then close cleanly.
    Fail(HttpError),
}

/// What every request of one connection needs.
struct ConnCx<'a, C, H: ?Sized> {
    clock: &'a C,
    config: &'a ServerConfig,
    handler: &'a H,
    stop: Option<&'a Signal>,
    /// The accept loop's call for room: one idle connection listening here closes when it is
    /// notified (the one idle longest: listeners are notified in the order they started).
    idle: Option<&'a Event>,
    peer: Option<SocketAddr>,
    /// Whether the connection is TLS.
    secure: bool,
    /// Its TLS version, if TLS.
    tls_version: Option<&'static str>,
}

impl<C, H: ?Sized> ConnCx<'_, C, H> {
    /// The part of the read buffer a head may fill; the rest is for the body's first bytes.
    fn head_window(&self) -> usize {
        let config = self.config;
        config
            .head_limits
            .max_head_len
            .clamp(1, config.read_buffer_len())
    }
}

/// The connection's buffers: taken from the pool when bytes come, given back while it idles,
/// so that idle connections (a flood of them) hold no buffer.
#[derive(Debug, Default)]
struct Bufs {
    /// Heads and body bytes; `Some` whenever bytes of a request are buffered.
    read: Option<PooledBuf<'static>>,
    /// The response's head and small bodies (allocated by the first response that needs it).
    out: Vec<u8>,
}

impl Bufs {
    fn read(&mut self, config: &ServerConfig) -> &mut PooledBuf<'static> {
        self.read
            .get_or_insert_with(|| config.pool.get(config.read_buffer_len()))
    }

    fn release(&mut self) {
        self.read = None;
        self.out = Vec::new();
    }
}

/// Serve one connection until it closes; returns the number of requests answered.
///
/// `stop`, once set, makes the connection close after the current request (or at once if it
/// is idle).
pub async fn serve_connection<C, S, H>(
    clock: C,
    stream: S,
    config: &ServerConfig,
    handler: &H,
    stop: Option<&Signal>,
) -> u64
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    serve_connection_from(clock, stream, None, config, handler, stop).await
}

/// [`serve_connection`] for a client at `peer` (what [`ResponseWriter::peer`] tells handlers).
pub async fn serve_connection_from<C, S, H>(
    clock: C,
    stream: S,
    peer: Option<SocketAddr>,
    config: &ServerConfig,
    handler: &H,
    stop: Option<&Signal>,
) -> u64
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let cx = ConnCx {
        clock: &clock,
        config,
        handler,
        stop,
        idle: None,
        peer,
        secure: stream.is_secure(),
        tls_version: stream.tls_version(),
    };
    serve(&cx, stream).await
}

/// [`serve_connection_from`] for the accept loop, which may call on `idle` for room.
pub(super) async fn serve_accepted<C, S, H>(
    clock: C,
    stream: S,
    peer: SocketAddr,
    config: &ServerConfig,
    handler: &H,
    stop: &Signal,
    idle: &Event,
) -> u64
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let cx = ConnCx {
        clock: &clock,
        config,
        handler,
        stop: Some(stop),
        idle: Some(idle),
        peer: Some(peer),
        secure: stream.is_secure(),
        tls_version: stream.tls_version(),
    };
    serve(&cx, stream).await
}

async fn serve<C, S, H>(cx: &ConnCx<'_, C, H>, stream: S) -> u64
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let (clock, config, stop) = (cx.clock, cx.config, cx.stop);
    let head_window = cx.head_window();
    let timed = Timed::new(
        clock.clone(),
        stream,
        config.read_timeout,
        config.write_timeout,
    );
    let mut shared = Shared::new(timed);
    let mut bufs = Bufs::default();
    let mut decoder = ChunkedDecoder::new(config.chunked_limits);
    let mut parser = HeadParser::new(config.head_limits);
    let mut end = 0;
    let mut served = 0;
    // The first head is timed from the connection's start.
    let mut deadline = clock.now() + config.header_timeout;
    loop {
        let next = loop {
            if end > 0 {
                let Some(buf) = bufs.read.as_mut() else {
                    break Next::Drop; // buffered bytes live in the read buffer
                };
                let parts = Parts {
                    shared: &shared,
                    out: &mut bufs.out,
                    decoder: &mut decoder,
                };
                // Boxed: the handler's future is the largest part of a connection's state,
                // and a connection that waits for its next request should not carry it (every
                // idle connection would). One allocation per request, freed when it is done.
                let step = Box::pin(parse_and_exchange(cx, &mut parser, parts, buf, end)).await;
                shared.io.get_mut().set_budget(None);
                match step {
                    Step::Partial => {}
                    Step::Served(next) => {
                        served += 1;
                        break next;
                    }
                    Step::Failed(e) => break Next::Fail(e),
                }
            }
            let io = shared.io.get_mut();
            if end == 0 {
                // Nothing of the next request yet: idle (or the first request's wait), which
                // a shutdown may cut short.
                if stop.is_some_and(Signal::is_set) {
                    break Next::Drop;
                }
                let limit = if served == 0 {
                    deadline.saturating_sub(clock.now())
                } else {
                    config.idle_timeout
                };
                match first_bytes(cx, io, &mut bufs, limit).await {
                    Some(Ok(n)) if n > 0 => {
                        if served > 0 {
                            deadline = clock.now() + config.header_timeout;
                        }
                        end = n;
                        continue;
                    }
                    _ => break Next::Drop,
                }
            }
            let room = bufs
                .read
                .as_mut()
                .and_then(|b| b.get_mut(end..head_window))
                .filter(|r| !r.is_empty());
            let Some(room) = room else {
                // The parser refuses heads longer than the window before this can happen.
                break Next::Fail(HttpError::Protocol(ProtocolError::new(
                    ProtocolErrorKind::HeadTooLarge,
                    "HTTP head too large",
                )));
            };
            match io.read_until(deadline, room).await {
                Ok(0) => break Next::Drop,
                Ok(n) => end += n,
                Err(ErrorKind::TimedOut) => {
                    break Next::Fail(HttpError::TimedOut);
                }
                Err(_) => break Next::Drop,
            }
        };
        match next {
            Next::KeepAlive(rest) => {
                let Some(buf) = bufs.read.as_mut().filter(|b| rest.end <= b.len()) else {
                    break;
                };
                end = rest.len();
                buf.copy_within(rest, 0);
                deadline = clock.now() + config.header_timeout;
            }
            Next::Close => break,
            Next::Drop => return served,
            Next::Fail(e) => {
                let req = ReqInfo {
                    head_only: false,
                    http10: false,
                    keep_alive: false,
                };
                let mut res =
                    ResponseWriter::new(&shared, &mut bufs.out, req, stop, 0, clock.unix_time());
                // Boxed as the exchange is: rare, and the handler's future may be large.
                let e = H::Error::from(e);
                Box::pin(render(cx.handler, None, &e, &mut res)).await;
                if res.state == RespState::Failed {
                    return served;
                }
                break;
            }
        }
    }
    let buf = bufs.read(config);
    clean_close(clock, shared.io.get_mut(), buf, config.linger).await;
    served
}

/// What one look at the buffered bytes came to.
enum Step {
    /// The head is not complete yet.
    Partial,
    /// A request was answered; what to do next.
    Served(Next),
    /// The head is bad: answer this error and close.
    Failed(HttpError),
}

/// Parse the head in `buf[..end]`; once complete, run the exchange.
async fn parse_and_exchange<C, S, H>(
    cx: &ConnCx<'_, C, H>,
    parser: &mut HeadParser,
    parts: Parts<'_, Timed<C, S>>,
    buf: &mut [u8],
    end: usize,
) -> Step
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let mut hs = [EMPTY_HEADER; MAX_HEADERS];
    let (filled, spare) = buf.split_at_mut(end.min(buf.len()));
    let filled: &[u8] = filled;
    match parser.parse_request(filled, &mut hs) {
        Ok(Status::Complete(head)) => Step::Served(exchange(cx, parts, &head, filled, spare).await),
        Ok(Status::Partial) => Step::Partial,
        Err(e) => Step::Failed(e.into()),
    }
}

/// Wait up to `limit` for the first bytes of a request, holding no buffer while none come.
///
/// One read is tried at once with the read buffer (a pipelining client, bytes a TLS layer
/// already holds); if it would wait, both buffers go back to the pool and the connection
/// waits for readability, a stop, or the accept loop's call for room, and takes a buffer
/// again only to read. `None` when the wait ends without bytes.
async fn first_bytes<C, S, H>(
    cx: &ConnCx<'_, C, H>,
    io: &mut Timed<C, S>,
    bufs: &mut Bufs,
    limit: Duration,
) -> Option<Result<usize, ErrorKind>>
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let window = cx.head_window();
    let room = bufs.read(cx.config).get_mut(..window)?;
    if let Some(r) = now_or_never(io.inner_mut().read_send(room)).await {
        return Some(r.map_err(|e| e.kind()));
    }
    bufs.release();
    let until = cx.clock.now() + limit;
    let ready = race(
        io.inner_mut().readable(),
        race(wait(cx.stop), called(cx.idle)),
    );
    match timeout_at(cx.clock, until, ready).await {
        Ok(Either::Left(Ok(()))) => {}
        _ => return None,
    }
    let room = bufs.read(cx.config).get_mut(..window)?;
    match timeout_at(cx.clock, until, io.inner_mut().read_send(room)).await {
        Ok(r) => Some(r.map_err(|e| e.kind())),
        Err(TimedOut) => None,
    }
}

/// Wait until `idle` notifies this connection, or forever without one.
async fn called(idle: Option<&Event>) {
    match idle {
        Some(event) => {
            event_listener::listener!(event => listener);
            listener.await;
        }
        None => core::future::pending().await,
    }
}

/// The connection's reusable parts lent to one exchange.
struct Parts<'a, S> {
    shared: &'a Shared<S>,
    out: &'a mut Vec<u8>,
    decoder: &'a mut ChunkedDecoder,
}

/// One request: framing, handler, error rendering, drain; says what to do next.
async fn exchange<C, S, H>(
    cx: &ConnCx<'_, C, H>,
    parts: Parts<'_, Timed<C, S>>,
    head: &RequestHead<'_, '_>,
    filled: &[u8],
    spare: &mut [u8],
) -> Next
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let Parts {
        shared,
        out,
        decoder,
    } = parts;
    let config = cx.config;
    let pre = filled.get(head.len..).unwrap_or_default();
    let filled_len = filled.len();
    let mut info = ReqInfo {
        head_only: head.method == "HEAD",
        http10: head.version == Version::Http10,
        keep_alive: false,
    };
    let framing = request_framing(head).and_then(|f| match f.body {
        BodyKind::Length(n) if n > config.max_body_len => Err(ProtocolError::new(
            ProtocolErrorKind::BodyTooLarge,
            alloc::format!("body exceeds {} bytes", config.max_body_len),
        )),
        _ => Ok(f),
    });
    let framing = match framing {
        Ok(f) => f,
        Err(e) => {
            // The body cannot be delimited: answer, then close.
            shared.reset(false);
            let mut res = ResponseWriter::new(shared, out, info, cx.stop, 0, cx.clock.unix_time());
            res.peer = cx.peer;
            res.secure = cx.secure;
            res.tls_version = cx.tls_version;
            let e = H::Error::from(HttpError::Protocol(e));
            render(cx.handler, Some(head), &e, &mut res).await;
            return if res.state == RespState::Failed {
                Next::Drop
            } else {
                Next::Close
            };
        }
    };
    info.keep_alive = framing.keep_alive;
    // A body must come at the minimum rate (after a grace period), however its bytes are
    // spaced: the timeout per read alone would let one byte every few seconds hold the
    // connection for ever.
    set_budget(
        shared,
        ReadBudget::new(config.body_timeout, config.min_body_rate),
    );
    let state = BodyState::new(framing.body, decoder, pre, spare, config.max_body_len);
    shared.reset(framing.expect_continue);
    shared.publish(&state);
    let mut body = BodyReader { state, shared };
    let mut res = ResponseWriter::new(
        shared,
        out,
        info,
        cx.stop,
        config.drain_limit,
        cx.clock.unix_time(),
    );
    res.peer = cx.peer;
    res.secure = cx.secure;
    res.tls_version = cx.tls_version;
    let result = cx.handler.handle(head, &mut body, &mut res).await;
    match result {
        Ok(()) if res.is_started() => res.settle().await,
        Ok(()) => {
            let e = H::Error::from(HttpError::Usage("handler sent no response"));
            render(cx.handler, Some(head), &e, &mut res).await;
        }
        Err(e) if !res.is_started() && !shared.broken.load(Ordering::Relaxed) => {
            render(cx.handler, Some(head), &e, &mut res).await;
        }
        Err(_) => res.state = RespState::Failed,
    }
    if shared.broken.load(Ordering::Relaxed) {
        return Next::Drop;
    }
    let persist =
        res.persist && res.state == RespState::Done && !shared.body_failed.load(Ordering::Relaxed);
    if !persist {
        return Next::Close;
    }
    if !body.is_done() {
        if shared.continue_pending() {
            return Next::Close;
        }
        // Discarding what the handler left unread is bounded in bytes and in time as a whole.
        set_budget(shared, ReadBudget::new(config.drain_timeout, 0));
        if !body.drain(res.drain_limit).await {
            return Next::Close;
        }
    }
    let (src, r) = body.state.leftover();
    let base = match src {
        Src::Pre => head.len,
        Src::Spare => filled_len,
    };
    Next::KeepAlive(base + r.start..base + r.end)
}

/// Bound the reads from now on by `budget` (the stream is free between the handler's uses).
fn set_budget<C: Clock, S: Stream>(shared: &Shared<Timed<C, S>>, budget: ReadBudget) {
    if let Some(mut io) = shared.io.try_lock() {
        io.set_budget(Some(budget));
    }
}

/// Let the handler render `error`; on failure, give up on the response.
async fn render<S: Stream, H: Handler + ?Sized>(
    handler: &H,
    req: Option<&RequestHead<'_, '_>>,
    error: &H::Error,
    res: &mut ResponseWriter<'_, S>,
) {
    let rendered = handler.render_error(req, error, res).await;
    if rendered.is_err() || !res.is_started() {
        res.state = RespState::Failed;
        return;
    }
    res.settle().await;
}

/// Wait for `stop`, or forever without one.
async fn wait(stop: Option<&Signal>) {
    match stop {
        Some(s) => s.wait().await,
        None => core::future::pending().await,
    }
}

/// Close so that the peer reads the whole response: stop sending (FIN), then discard what it
/// still sends, bounded in time and bytes, instead of resetting a connection with unread input.
async fn clean_close<C: Clock, S: Stream>(
    clock: &C,
    io: &mut Timed<C, S>,
    buf: &mut [u8],
    linger: Duration,
) {
    if io.shutdown_write().await.is_err() {
        return;
    }
    let deadline = clock.now() + linger;
    let mut discarded = 0;
    while discarded < LINGER_BYTES {
        match io.read_until(deadline, buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => discarded += n,
        }
    }
}
