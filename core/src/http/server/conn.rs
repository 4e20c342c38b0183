//! One connection: read heads, run the handler, keep the connection or close it cleanly.

use alloc::vec::Vec;
use core::net::SocketAddr;
use core::ops::Range;
use core::sync::atomic::Ordering;
use core::time::Duration;

use embedded_io::{Error as _, ErrorKind};
use httparse::EMPTY_HEADER;

use super::reader::BodyReader;
use super::response::{ReqInfo, RespState, ResponseWriter};
use super::{Handler, OUT_CAPACITY, ServerConfig, Shared};
use crate::http::body::{BodyKind, request_framing};
use crate::http::chunked::ChunkedDecoder;
use crate::http::error::{HttpError, ProtocolError, ProtocolErrorKind};
use crate::http::head::{HeadParser, RequestHead, Status, Version};
use crate::http::incoming::{BodyState, Src};
use crate::http::timed::Timed;
use crate::rt::{Clock, Either, Signal, Stream, TimedOut, race, timeout};

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
    peer: Option<SocketAddr>,
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
        peer,
    };
    let mut buf = config.pool.get(config.read_buffer_len());
    let head_window = config.head_limits.max_head_len.clamp(1, buf.len());
    let timed = Timed::new(
        clock.clone(),
        stream,
        config.read_timeout,
        config.write_timeout,
    );
    let mut shared = Shared::new(timed);
    let mut out = Vec::with_capacity(OUT_CAPACITY);
    let mut decoder = ChunkedDecoder::new(config.chunked_limits);
    let mut parser = HeadParser::new(config.head_limits);
    let mut end = 0;
    let mut served = 0;
    // The first head is timed from the connection's start.
    let mut deadline = clock.now() + config.header_timeout;
    loop {
        let next = loop {
            if end > 0 {
                let mut hs = [EMPTY_HEADER; MAX_HEADERS];
                let (filled, spare) = buf.split_at_mut(end);
                let filled: &[u8] = filled;
                match parser.parse_request(filled, &mut hs) {
                    Ok(Status::Complete(head)) => {
                        served += 1;
                        let parts = Parts {
                            shared: &shared,
                            out: &mut out,
                            decoder: &mut decoder,
                        };
                        break exchange(&cx, parts, &head, filled, spare).await;
                    }
                    Ok(Status::Partial) => {}
                    Err(e) => break Next::Fail(e.into()),
                }
            }
            let Some(room) = buf.get_mut(end..head_window).filter(|r| !r.is_empty()) else {
                // The parser refuses heads longer than the window before this can happen.
                break Next::Fail(HttpError::Protocol(ProtocolError::new(
                    ProtocolErrorKind::HeadTooLarge,
                    "HTTP head too large",
                )));
            };
            let io = shared.io.get_mut();
            let read = if end == 0 {
                // Nothing of the next request yet: idle (or the first request's wait), which
                // a shutdown may cut short.
                let limit = if served == 0 {
                    deadline.saturating_sub(clock.now())
                } else {
                    config.idle_timeout
                };
                if stop.is_some_and(Signal::is_set) {
                    break Next::Drop;
                }
                let first = race(io.inner_mut().read_send(room), wait(stop));
                match timeout(&clock, limit, first).await {
                    Ok(Either::Left(r)) => r.map_err(|e| e.kind()),
                    Ok(Either::Right(())) | Err(TimedOut) => break Next::Drop,
                }
            } else {
                io.read_until(deadline, room).await
            };
            match read {
                Ok(0) => break Next::Drop,
                Ok(n) => {
                    if end == 0 && served > 0 {
                        deadline = clock.now() + config.header_timeout;
                    }
                    end += n;
                }
                Err(ErrorKind::TimedOut) => {
                    break Next::Fail(HttpError::TimedOut);
                }
                Err(_) => break Next::Drop,
            }
        };
        match next {
            Next::KeepAlive(rest) if rest.end <= buf.len() => {
                end = rest.len();
                buf.copy_within(rest, 0);
                deadline = clock.now() + config.header_timeout;
            }
            Next::KeepAlive(_) | Next::Close => break,
            Next::Drop => return served,
            Next::Fail(e) => {
                let req = ReqInfo {
                    head_only: false,
                    http10: false,
                    keep_alive: false,
                };
                let mut res =
                    ResponseWriter::new(&shared, &mut out, req, stop, 0, clock.unix_time());
                render(handler, None, &H::Error::from(e), &mut res).await;
                if res.state == RespState::Failed {
                    return served;
                }
                break;
            }
        }
    }
    clean_close(&clock, shared.io.get_mut(), &mut buf, config.linger).await;
    served
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
    if !body.is_done() && (shared.continue_pending() || !body.drain(config.drain_limit).await) {
        return Next::Close;
    }
    let (src, r) = body.state.leftover();
    let base = match src {
        Src::Pre => head.len,
        Src::Spare => filled_len,
    };
    Next::KeepAlive(base + r.start..base + r.end)
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
