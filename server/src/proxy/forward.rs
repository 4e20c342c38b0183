//! Forwarding one request to one backend, streaming both bodies; and buffered calls for the
//! requests the proxy makes itself (fan-out, merges).
//!
//! Authentication towards the backend:
//! - *passthrough*: the client's request goes out unchanged (its `Host`, signature, body
//!   framing), for backends that share the proxy's keys and accept any `Host` (Ferry nodes,
//!   path-style). The proxy still checks every signature itself first.
//! - *re-sign*: the proxy signs a new request with the backend's key. Plain bodies keep their
//!   payload hash (the client's hex SHA-256, or `UNSIGNED-PAYLOAD`). aws-chunked bodies are
//!   decoded (every chunk and trailer signature checked here) and sent on as
//!   `STREAMING-UNSIGNED-PAYLOAD-TRAILER` re-framed into fixed-size chunks when the client sent
//!   a checksum trailer, so the backend verifies and stores that checksum as it would have
//!   from the client; without a trailer they go on as a plain body of
//!   `x-amz-decoded-content-length` bytes, which any S3 server accepts. In both cases the
//!   `Content-Length` is known up front (fixed chunk size), so no chunked transfer coding is
//!   needed.
//!
//! A request body is never completed towards the backend before the proxy has verified it:
//! the bytes that complete it (the last raw bytes, the last decoded bytes, or the final chunk)
//! are held back until the signature, hash or trailer checks out. If the client goes away or a
//! check fails, the backend connection is dropped mid-body and the backend discards the upload.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ferry_core::http::body::BodyKind;
use ferry_core::http::client::{Continue, RequestWriter, Response};
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::http::{EMPTY_HEADER, Header, find_header_str};
use ferry_core::http::{HttpError, ProtocolError, ProtocolErrorKind, RelayError};
use ferry_core::pool::BufferPool;
use ferry_core::rt::{Clock, Runtime, Stream};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::sigv4::aws_chunked::{AwsChunkedDecoder, AwsChunkedEncoder};
use ferry_core::s3::sigv4::{
    Hex64, PayloadHash, STREAMING_UNSIGNED_PAYLOAD_TRAILER, StreamingMode, UNSIGNED_PAYLOAD, sha256,
};
use ferry_core::s3::xml::{ErrorResponse, MAX_RESPONSE_BODY};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use sha2::Digest as _;

use super::Proxy;
use super::backend::Backend;
use super::handler::Cx;
use super::sign::{OutHeaders, is_auth_header, is_hop_by_hop, sign_into, strip_presign, views};
use crate::node::body::MAX_OBJECT_SIZE;
use crate::node::handler::origin_form;

/// Response header fields read per backend response.
const MAX_HEADERS: usize = 128;

/// How a request body goes to the backend.
enum Pump {
    /// No body.
    Empty,
    /// The bytes as received; optionally hashed or decoded alongside to verify them.
    Raw {
        sha: Option<Box<(sha2::Sha256, [u8; 32])>>,
        check: Option<Box<AwsChunkedDecoder>>,
    },
    /// aws-chunked, decoded; plain out (`encoder: None`) or re-framed unsigned-trailer.
    Decode {
        decoder: Box<AwsChunkedDecoder>,
        encoder: Option<Box<AwsChunkedEncoder>>,
    },
}

/// Why a body pump stopped.
enum PumpError {
    /// The client's side: bad body, check failed, client gone. Answered to the client.
    Client(S3Error),
    /// The backend connection failed.
    Backend(HttpError),
}

/// The outbound request for a client request to backend `b`, and how to move its body.
struct Outbound<'a> {
    target: Cow<'a, str>,
    headers: OutHeaders<'a>,
    body: BodyKind,
    expect: bool,
    pump: Pump,
}

fn decoded_length(headers: &[Header<'_>]) -> S3Result<u64> {
    find_header_str(headers, "x-amz-decoded-content-length")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .ok_or_else(|| S3Error::new(S3ErrorCode::MissingContentLength))
}

/// `Content-Encoding` without `aws-chunked`; `None` if nothing else is left.
fn without_aws_chunked(value: &[u8]) -> Option<Vec<u8>> {
    let v = std::str::from_utf8(value).ok()?;
    let kept: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("aws-chunked"))
        .collect();
    (!kept.is_empty()).then(|| kept.join(",").into_bytes())
}

/// Whether a body has bytes to send.
fn has_content(kind: BodyKind) -> bool {
    matches!(kind, BodyKind::Chunked) || matches!(kind, BodyKind::Length(n) if n > 0)
}

fn expects_continue(headers: &[Header<'_>]) -> bool {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("expect"))
        .any(|h| h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue"))
}

/// Build the outbound request (target, headers, framing) and the body plan.
fn prepare<'a, R: Runtime, S: Stream>(
    cx: &Cx<'a, R>,
    b: &Backend<R>,
    body: &BodyReader<'_, S>,
) -> S3Result<Outbound<'a>> {
    let req = cx.req;
    // An empty body keeps its `Content-Length: 0` (S3 wants a length on writes).
    let client_kind = body.kind();
    let has_body = has_content(client_kind);
    let expect = has_body && expects_continue(req.headers);
    let streaming = cx.verified.payload.streaming().filter(|_| has_body);
    // Refused before the body, as a node does: the backend's early answer would wait behind a
    // body the client may never send.
    let object_len = match streaming {
        Some(_) => decoded_length(req.headers).ok(),
        None => body.content_length(),
    };
    if object_len.is_some_and(|n| n > MAX_OBJECT_SIZE) {
        return Err(S3Error::new(S3ErrorCode::EntityTooLarge));
    }
    let origin = origin_form(req.target);
    if b.passthrough {
        let pump = match (streaming, cx.verified.payload) {
            _ if !has_body => Pump::Empty,
            (Some(_), _) => Pump::Raw {
                sha: None,
                check: Some(Box::new(AwsChunkedDecoder::from_request(
                    req.headers,
                    Some(cx.verified),
                )?)),
            },
            (None, PayloadHash::Sha256(want)) => Pump::Raw {
                sha: Some(Box::new((sha2::Sha256::new(), want))),
                check: None,
            },
            (None, _) => Pump::Raw {
                sha: None,
                check: None,
            },
        };
        let headers = req
            .headers
            .iter()
            .filter(|h| !is_hop_by_hop(h.name))
            .map(|h| (Cow::Borrowed(h.name), Cow::Borrowed(h.value)))
            .collect();
        return Ok(Outbound {
            target: Cow::Borrowed(origin),
            headers,
            body: client_kind,
            expect,
            pump,
        });
    }

    // Re-sign.
    let (path, raw_query) = origin.split_once('?').unwrap_or((origin, ""));
    let query = strip_presign(raw_query);
    let trailer = find_header_str(req.headers, "x-amz-trailer")
        .and_then(|t| ChecksumAlgorithm::from_header_name(t.trim()));
    // (plan, framing, payload hash, plain: aws-chunked headers removed)
    let (pump, kind, payload_hash, plain) = match (streaming, cx.verified.payload) {
        (Some(_), _) => {
            let decoder = Box::new(AwsChunkedDecoder::from_request(
                req.headers,
                Some(cx.verified),
            )?);
            let decoded = decoded_length(req.headers)?;
            match trailer {
                Some(alg) => {
                    let len = AwsChunkedEncoder::encoded_len(
                        StreamingMode::UnsignedTrailer,
                        Some(alg),
                        decoded,
                        cx.p.buffer_size as u64,
                    )
                    .ok_or_else(|| S3Error::new(S3ErrorCode::EntityTooLarge))?;
                    let pump = Pump::Decode {
                        decoder,
                        encoder: Some(Box::new(AwsChunkedEncoder::unsigned(Some(alg)))),
                    };
                    let hash = STREAMING_UNSIGNED_PAYLOAD_TRAILER.to_owned();
                    (pump, BodyKind::Length(len), hash, false)
                }
                None => {
                    let pump = Pump::Decode {
                        decoder,
                        encoder: None,
                    };
                    let kind = BodyKind::Length(decoded);
                    (pump, kind, UNSIGNED_PAYLOAD.to_owned(), true)
                }
            }
        }
        (None, PayloadHash::Sha256(want)) => {
            let pump = if has_body {
                Pump::Raw {
                    sha: Some(Box::new((sha2::Sha256::new(), want))),
                    check: None,
                }
            } else {
                Pump::Empty
            };
            (
                pump,
                client_kind,
                Hex64::of(&want).as_str().to_owned(),
                false,
            )
        }
        (None, _) => {
            let pump = if has_body {
                Pump::Raw {
                    sha: None,
                    check: None,
                }
            } else {
                Pump::Empty
            };
            (pump, client_kind, UNSIGNED_PAYLOAD.to_owned(), false)
        }
    };
    let mut headers: OutHeaders<'a> = Vec::with_capacity(req.headers.len() + 4);
    for h in req.headers {
        if is_hop_by_hop(h.name) || is_auth_header(h.name) {
            continue;
        }
        if plain {
            if h.name.eq_ignore_ascii_case("content-encoding") {
                if let Some(v) = without_aws_chunked(h.value) {
                    headers.push((Cow::Borrowed(h.name), Cow::Owned(v)));
                }
                continue;
            }
            if h.name.eq_ignore_ascii_case("x-amz-decoded-content-length")
                || h.name.eq_ignore_ascii_case("x-amz-trailer")
            {
                continue;
            }
        }
        headers.push((Cow::Borrowed(h.name), Cow::Borrowed(h.value)));
    }
    let creds = cx.p.credentials_for(b, &cx.verified.access_key_id)?;
    sign_into(
        cx.p,
        b,
        &creds,
        req.method,
        path,
        &query,
        &mut headers,
        &payload_hash,
    )?;
    let target = if query.is_empty() {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(format!("{path}?{query}"))
    };
    Ok(Outbound {
        target,
        headers,
        body: kind,
        expect: expect && has_content(kind),
        pump,
    })
}

fn backend_failed<R: Runtime>(b: &Backend<R>, e: &HttpError) -> S3Error {
    b.failed(e);
    tracing::warn!(backend = %b.id, addr = %b.addr, error = %e, "backend failed during a request");
    S3Error::with_message(
        S3ErrorCode::ServiceUnavailable,
        format!("Backend {} failed during the request; please retry.", b.id),
    )
}

/// Whether a failure on a reused pooled connection may just mean the backend closed it while
/// idle (worth one retry on a fresh connection).
fn stale(e: &HttpError) -> bool {
    matches!(e, HttpError::UnexpectedEof | HttpError::Io(_))
}

/// Forward the client's request to backend `idx` and relay the answer, streaming both bodies.
pub(crate) async fn forward<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    idx: usize,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let b = cx.backend(idx)?;
    cx.set_backend(idx);
    let out = prepare(cx, b, body)?;
    let Outbound {
        target,
        headers,
        body: kind,
        expect,
        mut pump,
    } = out;
    let hs = views(&headers);
    let head_request = cx.req.method == "HEAD";
    let mut conn = b.conn().await?;
    let mut retried = false;
    loop {
        // A failure on a reused connection before any body byte was taken from the client may
        // just mean the backend closed it while it sat in the pool: retry once, fresh.
        let reused = conn.requests() > 0;
        let mut w = conn
            .request(cx.req.method, &target, &hs, kind, expect)
            .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))?;
        let mut early = false;
        if expect {
            match w.wait_continue().await {
                Ok(Continue::Final) => early = true,
                Ok(_) => {}
                Err(e) if !retried && reused && stale(&e) => {
                    drop(w);
                    conn = b.fresh_conn().await?;
                    retried = true;
                    continue;
                }
                Err(e) => return Err(backend_failed(b, &e)),
            }
        }
        let body_sent = has_content(kind) && !early;
        if early {
            drop(w);
        } else {
            match run_pump(cx, body, &mut w, &mut pump).await {
                Ok(()) => {}
                Err(PumpError::Client(e)) => return Err(e),
                Err(PumpError::Backend(e)) => return Err(backend_failed(b, &e)),
            }
            if let Err(e) = w.finish().await {
                if !retried && !body_sent && reused && stale(&e) {
                    conn = b.fresh_conn().await?;
                    retried = true;
                    continue;
                }
                return Err(backend_failed(b, &e));
            }
        }
        let mut storage = [EMPTY_HEADER; MAX_HEADERS];
        match conn.response(&mut storage).await {
            Ok(resp) => {
                relay(cx, resp, res, head_request).await?;
                break;
            }
            Err(e) if !retried && !body_sent && reused && stale(&e) => {
                conn = b.fresh_conn().await?;
                retried = true;
            }
            Err(e) => return Err(backend_failed(b, &e)),
        }
    }
    b.put(conn);
    Ok(())
}

/// Send the response head and stream its body to the client.
async fn relay<R: Runtime, S: Stream, T: Stream>(
    cx: &Cx<'_, R>,
    resp: Response<'_, '_, T>,
    res: &mut ResponseWriter<'_, S>,
    head_request: bool,
) -> S3Result<()> {
    let Response { head, mut body } = resp;
    let status = head.status;
    let headers: Vec<Header<'_>> = head
        .headers
        .iter()
        .filter(|h| !is_hop_by_hop(h.name) && !h.name.eq_ignore_ascii_case("date"))
        .copied()
        .collect();
    let kind = if matches!(status, 204 | 304) {
        BodyKind::None
    } else if head_request {
        find_header_str(head.headers, "content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(BodyKind::None, BodyKind::Length)
    } else {
        match body.kind() {
            BodyKind::Length(n) => BodyKind::Length(n),
            BodyKind::None => BodyKind::None,
            BodyKind::Chunked | BodyKind::CloseDelimited => BodyKind::Chunked,
        }
    };
    cx.set_status(status);
    res.start(status, &headers, kind)?;
    // Spliced inside the kernel where both sockets allow it. On failure the response has
    // started: the client connection closes.
    let relayed = res.relay(&mut body).await;
    cx.p.metrics
        .bytes_out
        .fetch_add(body.received(), Ordering::Relaxed);
    relayed?;
    res.finish().await?;
    Ok(())
}

/// Feed raw aws-chunked bytes to a checking decoder (the bytes themselves are forwarded).
fn check_chunked(d: &mut AwsChunkedDecoder, mut input: &[u8]) -> S3Result<()> {
    while !input.is_empty() {
        if d.is_done() {
            return Err(trailing_data());
        }
        let step = d.decode(input)?;
        input = input.get(step.consumed..).unwrap_or_default();
        if step.consumed == 0 && step.data.is_empty() && !step.done {
            break;
        }
    }
    Ok(())
}

fn trailing_data() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "data after the end of the aws-chunked body",
    )
}

fn sha_check(sha: &mut Option<Box<(sha2::Sha256, [u8; 32])>>) -> S3Result<()> {
    if let Some((h, want)) = sha.take().map(|b| *b) {
        let got: [u8; 32] = h.finalize().into();
        if got != want {
            return Err(S3Error::new(S3ErrorCode::XAmzContentSHA256Mismatch));
        }
    }
    Ok(())
}

/// Move the client's body to the backend as `pump` says.
async fn run_pump<R: Runtime, S: Stream, C: Clock, T: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    w: &mut RequestWriter<'_, C, T>,
    pump: &mut Pump,
) -> Result<(), PumpError> {
    let counter = &cx.p.metrics.bytes_in;
    let client = PumpError::Client;
    match pump {
        Pump::Empty => Ok(()),
        // Nothing to verify: spliced inside the kernel where both sockets allow it.
        Pump::Raw {
            sha: None,
            check: None,
        } => {
            let relayed = w.relay(body).await;
            counter.fetch_add(body.received(), Ordering::Relaxed);
            match relayed {
                Ok(_) => Ok(()),
                Err(RelayError::Source(e)) => Err(client(S3Error::from(e))),
                Err(RelayError::Sink(e)) => Err(PumpError::Backend(e)),
            }
        }
        Pump::Raw { sha, check } => {
            let total = body.content_length();
            let mut seen = 0u64;
            while let Some(chunk) = body
                .next_chunk()
                .await
                .map_err(|e| client(S3Error::from(e)))?
            {
                seen = seen.saturating_add(chunk.len() as u64);
                counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                let last = total == Some(seen);
                if let Some(d) = check.as_deref_mut() {
                    check_chunked(d, chunk).map_err(client)?;
                    if last && !d.is_done() {
                        d.finish().map_err(client)?;
                    }
                }
                if let Some(hw) = sha.as_mut() {
                    hw.0.update(chunk);
                }
                if last {
                    // These bytes complete the body: only once they check out.
                    sha_check(sha).map_err(client)?;
                }
                w.write(chunk).await.map_err(PumpError::Backend)?;
            }
            if let Some(d) = check.as_deref_mut()
                && !d.is_done()
            {
                d.finish().map_err(client)?;
            }
            sha_check(sha).map_err(client)
        }
        Pump::Decode { decoder, encoder } => {
            let size = cx.p.buffer_size;
            let mut acc = BufferPool::global().get(size);
            let mut filled = 0usize;
            let mut line = Vec::with_capacity(64);
            while let Some(chunk) = body
                .next_chunk()
                .await
                .map_err(|e| client(S3Error::from(e)))?
            {
                counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                let mut input = chunk;
                while !input.is_empty() {
                    if decoder.is_done() {
                        return Err(client(trailing_data()));
                    }
                    let step = decoder.decode(input).map_err(client)?;
                    input = input.get(step.consumed..).unwrap_or_default();
                    let mut data = step.data;
                    while !data.is_empty() {
                        if filled == size {
                            // Full, and more data follows: these are not the final bytes.
                            emit(w, encoder.as_deref_mut(), &acc[..filled], &mut line).await?;
                            filled = 0;
                        }
                        let n = data.len().min(size - filled);
                        let (now, rest) = data.split_at(n);
                        acc[filled..filled + n].copy_from_slice(now);
                        filled += n;
                        data = rest;
                    }
                    if step.consumed == 0 && step.data.is_empty() && !step.done {
                        break;
                    }
                }
            }
            if !decoder.is_done() {
                decoder.finish().map_err(client)?;
            }
            // Everything checked out: the held-back tail completes the body.
            if filled > 0 {
                emit(w, encoder.as_deref_mut(), &acc[..filled], &mut line).await?;
            }
            if let Some(enc) = encoder.take() {
                line.clear();
                enc.finish(&mut line);
                w.write(&line).await.map_err(PumpError::Backend)?;
            }
            Ok(())
        }
    }
}

/// Send decoded bytes: as they are, or as one aws-chunked chunk.
async fn emit<C: Clock, T: Stream>(
    w: &mut RequestWriter<'_, C, T>,
    encoder: Option<&mut AwsChunkedEncoder>,
    data: &[u8],
    line: &mut Vec<u8>,
) -> Result<(), PumpError> {
    let backend = PumpError::Backend;
    match encoder {
        None => w.write(data).await.map_err(backend),
        Some(enc) => {
            line.clear();
            if enc.chunk_header(data, line) {
                w.write(line).await.map_err(backend)?;
                w.write(data).await.map_err(backend)?;
                w.write(b"\r\n").await.map_err(backend)?;
            }
            Ok(())
        }
    }
}

/// A whole backend response, for the requests the proxy makes itself.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    /// A 2xx answer.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The S3 error code of the body, if it is an error document.
    pub fn error_code(&self) -> Option<String> {
        ErrorResponse::parse_xml(&self.body)
            .ok()
            .map(|e| e.code.into_owned())
    }

    /// The backend's error as ours (same code and message; unknown codes are kept in the
    /// message of an `InternalError`).
    pub fn to_error(&self) -> S3Error {
        if let Ok(e) = ErrorResponse::parse_xml(&self.body) {
            return match S3ErrorCode::ALL.iter().find(|c| c.as_str() == e.code) {
                Some(&code) => S3Error::with_message(code, e.message.into_owned()),
                None => S3Error::with_message(
                    S3ErrorCode::InternalError,
                    format!("backend error {} {}: {}", self.status, e.code, e.message),
                ),
            };
        }
        let code = match self.status {
            403 => S3ErrorCode::AccessDenied,
            404 => S3ErrorCode::NoSuchKey,
            412 => S3ErrorCode::PreconditionFailed,
            503 => S3ErrorCode::ServiceUnavailable,
            _ => S3ErrorCode::InternalError,
        };
        S3Error::with_message(code, format!("backend answered {}", self.status))
    }
}

/// A request the proxy makes: method, path (encoded), raw query, extra headers, small body.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub method: &'static str,
    pub path: String,
    pub query: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Call {
    /// A body-less request.
    pub fn new(method: &'static str, path: String, query: String) -> Self {
        Self {
            method,
            path,
            query,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
}

/// Send `call` to backend `idx`, signed for `client_key`, and read the whole answer.
pub(crate) async fn call<R: Runtime>(
    p: &Proxy<R>,
    idx: usize,
    client_key: &str,
    call: &Call,
) -> S3Result<Reply> {
    let b = p
        .backends
        .get(idx)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?;
    let creds = p.credentials_for(b, client_key)?;
    let mut headers: OutHeaders<'_> = call
        .headers
        .iter()
        .map(|(n, v)| (Cow::Borrowed(*n), Cow::Borrowed(v.as_bytes())))
        .collect();
    let hash = Hex64::of(&sha256(&call.body));
    sign_into(
        p,
        b,
        &creds,
        call.method,
        &call.path,
        &call.query,
        &mut headers,
        hash.as_str(),
    )?;
    let hs = views(&headers);
    let target = if call.query.is_empty() {
        call.path.clone()
    } else {
        format!("{}?{}", call.path, call.query)
    };
    let mut conn = b.conn().await?;
    let mut retried = false;
    loop {
        match exchange(&mut conn, call.method, &target, &hs, &call.body).await {
            Ok(reply) => {
                b.put(conn);
                return Ok(reply);
            }
            Err(e) if !retried && stale(&e) && conn.requests() > 1 => {
                conn = b.fresh_conn().await?;
                retried = true;
            }
            // The backend broke HTTP (or sent too much): nothing the client did.
            Err(HttpError::Protocol(e)) => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InternalError,
                    format!("backend response: {}", e.message),
                ));
            }
            Err(e) => return Err(backend_failed(b, &e)),
        }
    }
}

async fn exchange<C: Clock, T: Stream>(
    conn: &mut ferry_core::http::client::ClientConn<C, T>,
    method: &str,
    target: &str,
    headers: &[Header<'_>],
    body: &[u8],
) -> Result<Reply, HttpError> {
    conn.send_request(method, target, headers, body).await?;
    let mut storage = [EMPTY_HEADER; MAX_HEADERS];
    let mut resp = conn.response(&mut storage).await?;
    let status = resp.head.status;
    let mut out = Vec::new();
    while let Some(c) = resp.body.next_chunk().await? {
        out.extend_from_slice(c);
        if out.len() > MAX_RESPONSE_BODY {
            return Err(HttpError::Protocol(ProtocolError::new(
                ProtocolErrorKind::BodyTooLarge,
                "backend response too large",
            )));
        }
    }
    Ok(Reply { status, body: out })
}

/// [`call`] on a task of its own, so that calls to several backends run in parallel.
pub(crate) fn spawn_call<R: Runtime>(
    p: &Arc<Proxy<R>>,
    idx: usize,
    client_key: &str,
    c: Call,
) -> impl Future<Output = S3Result<Reply>> + Send + 'static {
    let p2 = p.clone();
    let key = client_key.to_owned();
    p.rt.spawn(async move { call(&p2, idx, &key, &c).await })
}
