//! Forwarding one request to one backend, streaming both bodies; and buffered calls for the
//! requests the proxy makes itself (fan-out, merges).
//!
//! Authentication towards the backend:
//! - *passthrough*: the client's request goes out unchanged (its `Host`, signature, body
//!   framing), for backends that share the proxy's keys and accept any `Host` (Ferry nodes,
//!   path-style). The proxy still checks every signature itself first. SigV2 and
//!   virtual-hosted requests are re-signed instead (below, with the client's own key, which
//!   such backends share): the backend then needs neither SigV2 nor the proxy's `--domain`s.
//! - *re-sign*: the proxy signs a new SigV4, path-style request with the backend's key (a
//!   virtual-hosted client request gets `/bucket` in front of its path). Plain bodies keep their
//!   payload hash (the client's hex SHA-256, or `UNSIGNED-PAYLOAD`). aws-chunked bodies are
//!   decoded (every chunk and trailer signature checked here) and sent on as
//!   `STREAMING-UNSIGNED-PAYLOAD-TRAILER` re-framed into fixed-size chunks when the client sent
//!   a checksum trailer, so the backend verifies and stores that checksum as it would have
//!   from the client; without a trailer they go on as a plain body of
//!   `x-amz-decoded-content-length` bytes, which any S3 server accepts. In both cases the
//!   `Content-Length` is known up front (fixed chunk size), so no chunked transfer coding is
//!   needed.
//!
//! A request body is never completed towards the backend before the proxy has verified it
//! (the rule lives in core's `s3::body`: [`BodyVerifier`] and [`Reframer`]): the bytes that
//! complete it (the last raw bytes, the last decoded bytes, or the final chunk) go out only
//! once the signature, hash or trailer checks out. If the client goes away or a check fails,
//! the backend connection is dropped mid-body and the backend discards the upload.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use ferry_core::http::body::BodyKind;
use ferry_core::http::client::{ClientConn, Continue, RequestWriter, Response};
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::http::{EMPTY_HEADER, Header, find_header_str};
use ferry_core::http::{HttpError, ProtocolError, ProtocolErrorKind, RelayError};
use ferry_core::md5::{content_md5, md5};
use ferry_core::pool::{BufferPool, PooledBuf};
use ferry_core::rt::{Clock, Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, BodyVerifier, Checks, Emit, Reframer};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::cluster;
use ferry_core::s3::header;
use ferry_core::s3::outbound::{OutboundRequest, is_auth_header, strip_presign};
use ferry_core::s3::post::{self, PostPolicy};
use ferry_core::s3::sigv4::CredentialStore as _;
use ferry_core::s3::sigv4::aws_chunked::AwsChunkedEncoder;
use ferry_core::s3::sigv4::{
    Hex64, PayloadHash, STREAMING_UNSIGNED_PAYLOAD_TRAILER, StreamingMode, UNSIGNED_PAYLOAD, sha256,
};
use ferry_core::s3::uri::origin_form;
use ferry_core::s3::xml::{ErrorResponse, MAX_RESPONSE_BODY};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;

use super::Proxy;
use super::backend::{Backend, BackendConn, SlowDownReason};
use super::context::{Caller, Cx};
use super::sign::{is_hop_by_hop, seal, sign_as};

/// Response header fields read per backend response.
const MAX_HEADERS: usize = 128;

/// How a request body goes to the backend.
enum Pump {
    /// No body.
    Empty,
    /// Nothing to verify: relayed as received (spliced where the sockets allow).
    Relay,
    /// The bytes as received, each passed on once the verifier has seen it (so the bytes that
    /// complete the body go only once it checked out).
    Checked(Box<BodyVerifier>),
    /// aws-chunked, decoded and re-framed: plain, or as unsigned chunks with the trailer.
    Reframe(Box<BodyVerifier>, Box<Reframer<PooledBuf<'static>>>),
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
    request: OutboundRequest<'a>,
    body: BodyKind,
    expect: bool,
    pump: Pump,
}

fn decoded_length(headers: &[Header<'_>]) -> S3Result<u64> {
    find_header_str(headers, header::X_AMZ_DECODED_CONTENT_LENGTH)
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

/// Build the outbound request (target, headers, framing) and the body plan, for a body framed
/// as `client_kind` (the client's, or as a rewritten start changes it).
fn prepare<'a, R: Runtime, S: Stream>(
    cx: &Cx<'a, R>,
    b: &Backend<R>,
    body: &BodyReader<'_, S>,
    client_kind: BodyKind,
) -> S3Result<Outbound<'a>> {
    let req = cx.head;
    // An empty body keeps its `Content-Length: 0` (S3 wants a length on writes).
    let has_body = has_content(client_kind);
    // An anonymous write waits for the backend's leave before its body goes: the backend refuses
    // most of them, and the proxy must not read (or wait for) a body that is refused.
    let expect = has_body && (expects_continue(req.headers) || cx.front.verified.is_anonymous());
    // The proxy checks what the signature covers; the backend gets the same checksum and
    // Content-MD5 headers and checks them itself. Objects too large are refused before their
    // body, as a node does: the backend's early answer would wait behind a body the client
    // may never send.
    let verifier = if has_body {
        Some(
            cx.front
                .body_verifier(body, Checks::Signature, BodyLimit::object())?,
        )
    } else {
        None
    };
    let origin = origin_form(req.target);
    let (path, raw_query) = origin.split_once('?').unwrap_or((origin, ""));
    if b.passthrough && cx.passes_through() {
        b.stats.passed_through.fetch_add(1, Ordering::Relaxed);
        let pump = match verifier {
            None => Pump::Empty,
            Some(v) if v.is_transparent() => Pump::Relay,
            Some(v) => Pump::Checked(Box::new(v)),
        };
        let mut request = OutboundRequest::new(req.method, path, raw_query);
        for h in req.headers.iter().filter(|h| !is_hop_by_hop(h.name)) {
            // A client's own are refused before this (`handler`); never forwarded.
            if !cluster::is_internal(h.name) {
                request.header(h.name, h.value);
            }
        }
        for (n, v) in cx.caller.origin.headers() {
            request.header(n, v.into_bytes());
        }
        seal(cx.p, b, origin, &mut request);
        return Ok(Outbound {
            target: Cow::Borrowed(origin),
            request,
            body: client_kind,
            expect,
            pump,
        });
    }

    // Re-sign.
    b.stats.resigned.fetch_add(1, Ordering::Relaxed);
    let trailer = find_header_str(req.headers, header::X_AMZ_TRAILER)
        .and_then(|t| ChecksumAlgorithm::from_header_name(t.trim()));
    // (pump, framing, payload hash, plain: aws-chunked headers removed)
    let (pump, kind, payload_hash, plain) = match verifier {
        None => (Pump::Empty, client_kind, UNSIGNED_PAYLOAD.to_owned(), false),
        Some(v) if v.is_aws_chunked() => {
            let decoded = decoded_length(req.headers)?;
            let buf = BufferPool::global().get(cx.p.shared.buffer_size);
            match trailer {
                Some(alg) => {
                    let len = AwsChunkedEncoder::encoded_len(
                        StreamingMode::UnsignedTrailer,
                        Some(alg),
                        decoded,
                        cx.p.shared.buffer_size as u64,
                    )
                    .ok_or_else(|| S3Error::new(S3ErrorCode::EntityTooLarge))?;
                    let encoder = AwsChunkedEncoder::unsigned(Some(alg));
                    let pump =
                        Pump::Reframe(Box::new(v), Box::new(Reframer::new(Some(encoder), buf)));
                    let hash = STREAMING_UNSIGNED_PAYLOAD_TRAILER.to_owned();
                    (pump, BodyKind::Length(len), hash, false)
                }
                None => {
                    let pump = Pump::Reframe(Box::new(v), Box::new(Reframer::new(None, buf)));
                    let kind = BodyKind::Length(decoded);
                    (pump, kind, UNSIGNED_PAYLOAD.to_owned(), true)
                }
            }
        }
        Some(v) => {
            let hash = match cx.front.verified.payload {
                PayloadHash::Sha256(want) => Hex64::of(&want).as_str().to_owned(),
                _ => UNSIGNED_PAYLOAD.to_owned(),
            };
            let pump = if v.is_transparent() {
                Pump::Relay
            } else {
                Pump::Checked(Box::new(v))
            };
            (pump, client_kind, hash, false)
        }
    };
    let path = cx.backend_path(path);
    let query = match &cx.query {
        Some(q) => Cow::Owned(strip_presign(q).into_owned()),
        None => strip_presign(raw_query),
    };
    let mut request = OutboundRequest::new(req.method, path, query);
    for h in req.headers {
        if is_hop_by_hop(h.name) || is_auth_header(h.name) || cluster::is_internal(h.name) {
            continue;
        }
        if plain {
            if h.name.eq_ignore_ascii_case(header::CONTENT_ENCODING) {
                if let Some(v) = without_aws_chunked(h.value) {
                    request.header(h.name, v);
                }
                continue;
            }
            if h.name
                .eq_ignore_ascii_case(header::X_AMZ_DECODED_CONTENT_LENGTH)
                || h.name.eq_ignore_ascii_case(header::X_AMZ_TRAILER)
            {
                continue;
            }
        }
        request.header(h.name, h.value);
    }
    for (n, v) in cx.caller.origin.headers() {
        request.header(n, v.into_bytes());
    }
    sign_as(cx.p, b, &cx.caller.key, &mut request, &payload_hash)?;
    let target = Cow::Owned(request.target().into_owned());
    Ok(Outbound {
        target,
        request,
        body: kind,
        expect: expect && has_content(kind),
        pump,
    })
}

/// A backend connection failed during a request that cannot go again: `503 SlowDown`, which
/// clients retry after a pause (never a 502).
fn backend_failed<R: Runtime>(b: &Backend<R>, e: &HttpError) -> S3Error {
    b.failed(e);
    tracing::warn!(backend = %b.id, addr = %b.addr, error = %e, "backend failed during a request");
    b.slow_down(SlowDownReason::Failed)
}

/// Whether a request may go to a backend again after its connection failed before any answer
/// came: GET, HEAD, PUT and DELETE are idempotent (a PUT or DELETE of a whole object, a part,
/// a configuration: sending it twice leaves what sending it once does). POST never goes again
/// (CreateMultipartUpload would start a second upload).
fn idempotent(method: &str) -> bool {
    matches!(method, "GET" | "HEAD" | "PUT" | "DELETE")
}

/// After `error` on `conn`, before any byte of an answer and with the whole request still at
/// hand (no body byte taken from the client): whether to send it again on the new connection
/// now in `conn`. Idempotent requests go again on a fresh connection until `deadline` (the
/// retry window: a restarting node is waited for); others only when core's rule says the
/// kept-alive connection had gone stale in the pool.
async fn again<R: Runtime>(
    b: &Backend<R>,
    conn: &mut BackendConn<R>,
    (method, for_check): (&str, bool),
    error: &HttpError,
    deadline: std::time::Duration,
) -> S3Result<bool> {
    if !idempotent(method) {
        return b.replace_stale(conn, error).await;
    }
    b.failed(error);
    tracing::debug!(backend = %b.id, error = %error, "backend connection failed before an answer; sending again");
    b.reconnect(conn, deadline, for_check).await?;
    Ok(true)
}

/// Forward the client's request to backend `idx` and relay the answer, streaming both bodies.
///
/// A backend that is down is waited for, and a failed connect tried again, within the retry
/// window (a node restarting). A request whose connection fails before any byte of the
/// answer, while no byte of the client's body has been taken (no body, or an
/// `Expect: 100-continue` not yet granted), goes again on a new connection: GET, HEAD, PUT
/// and DELETE within the retry window, others once and only on a stale kept-alive connection
/// (core's rule, `ClientPool::replace_stale`). A request whose body has started to flow, or
/// whose answer has started, is not sent again: it fails with `503 SlowDown`. A backend's
/// own `503` is answered as `503 SlowDown` too.
pub(crate) async fn forward<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    idx: usize,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    forward_after(cx, idx, (&[], 0), false, body, Answer::Relay(res))
        .await
        .map(|_| ())
}

/// What became of a request [`forward_status`] forwarded.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// The backend's answer went to the client, with this status.
    Relayed(u16),
    /// The backend answered 404 without a delete marker (or a 403 that says the object is
    /// absent: `header::X_FERRY_MISSING`), and `miss` was set: nothing was sent
    /// to the client (the object may live elsewhere: see [`Proxy::owners`]).
    Missed,
    /// The backend's answer, read whole ([`forward_read`]).
    Read(Reply),
}

/// Where the answer of a forwarded request goes.
enum Answer<'r, 'w, S: Stream> {
    /// Streamed to the client.
    Relay(&'r mut ResponseWriter<'w, S>),
    /// Read whole ([`Outcome::Read`]).
    Read,
}

/// [`forward`], saying what became of the request; with `miss`, a 404 (not a delete marker)
/// is not relayed but reported, so the caller may try another backend (body-less requests
/// only).
pub(crate) async fn forward_status<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    idx: usize,
    miss: bool,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<Outcome> {
    forward_after(cx, idx, (&[], 0), miss, body, Answer::Relay(res)).await
}

/// [`forward`], the answer read whole (at most `MAX_RESPONSE_BODY` bytes) rather than
/// relayed, for the caller to change before it goes: the request goes as `forward` sends it
/// (unchanged to a passthrough backend).
pub(crate) async fn forward_read<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    idx: usize,
    body: &mut BodyReader<'_, S>,
) -> S3Result<Reply> {
    match forward_after::<R, S>(cx, idx, (&[], 0), false, body, Answer::Read).await? {
        Outcome::Read(reply) => Ok(reply),
        _ => Err(S3Error::new(S3ErrorCode::InternalError)),
    }
}

/// Bytes of a 404 answer read to keep its connection (a longer one closes it).
const MAX_MISS_BODY: usize = 64 * 1024;

/// POST Object: the key is in the form. Read the leading fields (bounded as the node bounds
/// them: `ferry_core::s3::post::parse_fields`) to find it, with `${filename}` from the file
/// part's header, and check the form as a node does: its signature against the clients' keys
/// (`post::authenticate`) and its policy's conditions (`PostPolicy::check`; the file's
/// `content-length-range` is the backend's to enforce as the file streams). Then forward it to
/// the key's backend: the fields as sent to a backend that shares the clients' keys, signed
/// again for one that signs with its own ([`resign_form`]), then the rest of the body streamed.
pub(crate) async fn post_form<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    bucket: &str,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let boundary = find_header_str(cx.head.headers, header::CONTENT_TYPE)
        .and_then(post::form_boundary)
        .ok_or_else(|| S3Error::new(S3ErrorCode::MalformedPOSTRequest))?
        .to_owned();
    // Only a plain body can be read ahead and sent on as it came.
    let verifier = cx
        .front
        .body_verifier(body, Checks::Signature, BodyLimit::object())?;
    if !verifier.is_transparent() {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "POST Object takes a plain multipart/form-data body",
        ));
    }
    let mut head = Vec::new();
    let (form, spans) = loop {
        let Some(chunk) = body.next_chunk().await? else {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedPOSTRequest,
                "The body of your POST request ended before the file field.",
            ));
        };
        head.extend_from_slice(chunk);
        if let Some((form, spans, _)) = post::parse_fields_at(&head, &boundary)? {
            break (form, spans);
        }
    };
    let signer = post::authenticate(&form, &cx.p.shared.region, cx.p.shared.sigv2, |k| {
        cx.p.shared.credentials.secret_key(k)
    })?;
    let key = form.key()?;
    if let Some(policy) = &signer.policy {
        policy.check(&form, bucket, cx.p.shared.rt.unix_time())?;
    }
    let idx = cx.p.pick(bucket, &key);
    let b = cx.backend(idx)?;
    // A SigV2 form is always signed again, as SigV4 (a SigV2 request is too): the backend
    // then needs no SigV2.
    let resigned = match signer.access_key {
        Some(key) if !b.passthrough || form.is_sigv2() => {
            Some(resign_form(cx, b, key, &head, &form, &spans, &boundary)?)
        }
        _ => None,
    };
    let prefix = resigned.as_deref().unwrap_or(&head);
    forward_after(
        cx,
        idx,
        (prefix, head.len()),
        false,
        body,
        Answer::Relay(res),
    )
    .await
    .map(|_| ())
}

/// The start of a form `signer` signed (`head`, read into `form` at `spans`), signed again for
/// backend `b` with the key the proxy signs for it with (its own, or the signer's where it
/// shares the clients' keys) and for its region: new `x-amz-credential` and `x-amz-date`, the
/// `policy` with its conditions on them changed to match (the rest of it kept), and its new
/// `x-amz-signature`; every other byte as sent. The file's bytes are not touched. A SigV2 form
/// becomes a SigV4 one: its `AWSAccessKeyId` and `signature` fields (and the policy's
/// conditions on them) go, SigV4's fields (and conditions naming them) come.
fn resign_form<R: Runtime>(
    cx: &Cx<'_, R>,
    b: &Backend<R>,
    signer: &str,
    head: &[u8],
    form: &post::Form,
    spans: &[std::ops::Range<usize>],
    boundary: &str,
) -> S3Result<Vec<u8>> {
    let creds = cx.p.credentials_for(b, signer)?;
    let now = DateTime::from_unix(cx.p.shared.rt.unix_time());
    let (date, amz_date) = (now.date_stamp().to_string(), now.amz().to_string());
    let credential = format!(
        "{}/{date}/{}/s3/aws4_request",
        creds.access_key_id, b.region
    );
    let mut values = vec![
        (header::X_AMZ_CREDENTIAL, credential.as_str()),
        (header::X_AMZ_DATE, amz_date.as_str()),
    ];
    let v2 = form.is_sigv2();
    let (remove, algorithm): (&[&str], _) = if v2 {
        (
            &[post::AWS_ACCESS_KEY_ID, post::SIGNATURE],
            Some((header::X_AMZ_ALGORITHM, "AWS4-HMAC-SHA256")),
        )
    } else {
        (&[], None)
    };
    values.extend(algorithm);
    let policy = PostPolicy::rebind(form.get(post::POLICY).unwrap_or_default(), &values, remove)?;
    let signature =
        post::form_signature(&creds.secret_access_key, &date, &b.region, "s3", &policy).to_hex();
    values.push((post::POLICY, &policy));
    values.push((header::X_AMZ_SIGNATURE, signature.as_str()));
    if !v2 {
        return Ok(post::with_values(head, form, spans, &values));
    }
    // The fields the form has get their new values; the others are added.
    let (set, add): (Vec<_>, Vec<_>) = values
        .iter()
        .copied()
        .partition(|(n, _)| form.get(n).is_some());
    Ok(post::edit_fields(
        head, form, spans, boundary, &set, remove, &add,
    ))
}

/// [`forward`], with `(prefix, read)`: the start of the body to send, in place of the `read`
/// bytes already read from the client (the same bytes, or the proxy's rewrite of them).
async fn forward_after<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    idx: usize,
    (prefix, read): (&[u8], usize),
    miss: bool,
    body: &mut BodyReader<'_, S>,
    mut answer: Answer<'_, '_, S>,
) -> S3Result<Outcome> {
    let b = cx.backend(idx)?;
    cx.set_backend(idx);
    // Only a request without a body can go to another backend after a miss.
    let miss = miss && !has_content(body.kind());
    let kind = match body.kind() {
        BodyKind::Length(n) => {
            BodyKind::Length((n + prefix.len() as u64).saturating_sub(read as u64))
        }
        other => other,
    };
    let out = prepare(cx, b, body, kind)?;
    let Outbound {
        target,
        request,
        body: kind,
        expect,
        mut pump,
    } = out;
    let hs = request.views();
    let head_request = cx.head.method == "HEAD";
    let deadline = b.deadline();
    let mut conn = b.conn_until(deadline).await?;
    let method = cx.head.method;
    let outcome = loop {
        let mut w = conn
            .request(cx.head.method, &target, &hs, kind, expect)
            .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))?;
        let mut early = false;
        if expect {
            match w.wait_continue().await {
                Ok(Continue::Final) => early = true,
                Ok(_) => {}
                Err(e) => {
                    drop(w);
                    if again(b, &mut conn, (method, false), &e, deadline).await? {
                        continue;
                    }
                    return Err(backend_failed(b, &e));
                }
            }
        }
        let body_sent = has_content(kind) && !early;
        if early {
            drop(w);
        } else {
            if !prefix.is_empty() {
                w.write(prefix).await.map_err(|e| backend_failed(b, &e))?;
            }
            match run_pump(body, &mut w, &mut pump).await {
                Ok(()) => {}
                Err(PumpError::Client(e)) => return Err(e),
                Err(PumpError::Backend(e)) => return Err(backend_failed(b, &e)),
            }
            if let Err(e) = w.finish().await {
                if !body_sent && again(b, &mut conn, (method, false), &e, deadline).await? {
                    continue;
                }
                return Err(backend_failed(b, &e));
            }
        }
        let mut storage = [EMPTY_HEADER; MAX_HEADERS];
        let failed = match conn.response(&mut storage).await {
            // Overloaded or stopping: the client backs off and retries (the connection goes,
            // with the unread error body).
            Ok(resp) if resp.head.status == 503 => {
                return Err(b.slow_down(SlowDownReason::Answered503));
            }
            Ok(mut resp) => {
                let status = resp.head.status;
                // Absent: a 404 that is no delete marker, or the 403 a node answers a caller
                // that may not list the bucket (`header::X_FERRY_MISSING`).
                let absent = (status == 404
                    && find_header_str(resp.head.headers, header::X_AMZ_DELETE_MARKER).is_none())
                    || (status == 403
                        && find_header_str(resp.head.headers, header::X_FERRY_MISSING).is_some());
                if miss && absent {
                    let mut read = 0;
                    let clean = loop {
                        match resp.body.next_chunk().await {
                            Ok(Some(c)) if read + c.len() <= MAX_MISS_BODY => read += c.len(),
                            Ok(None) => break true,
                            _ => break false,
                        }
                    };
                    if clean {
                        b.put(conn);
                    }
                    return Ok(Outcome::Missed);
                }
                match &mut answer {
                    Answer::Relay(res) => {
                        relay(resp, res, head_request).await?;
                        break Outcome::Relayed(status);
                    }
                    // (The answer has started: it is not sent again.)
                    Answer::Read => match read_reply(resp).await {
                        Ok(reply) => break Outcome::Read(reply),
                        Err(e) => return Err(reply_failed(b, e)),
                    },
                }
            }
            Err(e) => e,
        };
        if body_sent || !again(b, &mut conn, (method, false), &failed, deadline).await? {
            return Err(backend_failed(b, &failed));
        }
    };
    b.put(conn);
    Ok(outcome)
}

/// A backend's CORS headers: the front adds the proxy's own (see `proxy::cors`), which must
/// not come twice.
fn is_cors_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("vary")
        || name
            .get(..15)
            .is_some_and(|p| p.eq_ignore_ascii_case("access-control-"))
}

/// Whether a backend's response header goes on to the client: not hop-by-hop or framing ones,
/// nor `Date` (the engine writes its own) or CORS ones (the front's replace them).
fn is_relayed(name: &str) -> bool {
    !is_hop_by_hop(name) && !name.eq_ignore_ascii_case(header::DATE) && !is_cors_header(name)
}

/// Send the response head and stream its body to the client.
async fn relay<S: Stream, T: Stream>(
    resp: Response<'_, '_, T>,
    res: &mut ResponseWriter<'_, S>,
    head_request: bool,
) -> S3Result<()> {
    let Response { head, mut body } = resp;
    let status = head.status;
    // (A node's word to the cluster, `x-ferry-*`, is never the client's.)
    let headers: Vec<Header<'_>> = head
        .headers
        .iter()
        .filter(|h| is_relayed(h.name) && !cluster::is_internal(h.name))
        .copied()
        .collect();
    let kind = if matches!(status, 204 | 304) {
        BodyKind::None
    } else if head_request {
        find_header_str(head.headers, header::CONTENT_LENGTH)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(BodyKind::None, BodyKind::Length)
    } else {
        match body.kind() {
            BodyKind::Length(n) => BodyKind::Length(n),
            BodyKind::None => BodyKind::None,
            BodyKind::Chunked | BodyKind::CloseDelimited => BodyKind::Chunked,
        }
    };
    res.start(status, &headers, kind)?;
    // Spliced inside the kernel where both sockets allow it. On failure the response has
    // started: the client connection closes.
    res.relay(&mut body).await?;
    res.finish().await?;
    Ok(())
}

/// Move the client's body to the backend as `pump` says.
async fn run_pump<S: Stream, C: Clock, T: Stream>(
    body: &mut BodyReader<'_, S>,
    w: &mut RequestWriter<'_, C, T>,
    pump: &mut Pump,
) -> Result<(), PumpError> {
    let client = |e: S3Error| PumpError::Client(e);
    let backend = PumpError::Backend;
    match pump {
        Pump::Empty => Ok(()),
        Pump::Relay => match w.relay(body).await {
            Ok(_) => Ok(()),
            Err(RelayError::Source(e)) => Err(client(S3Error::from(e))),
            Err(RelayError::Sink(e)) => Err(backend(e)),
        },
        Pump::Checked(v) => {
            while let Some(chunk) = body.next_chunk().await.map_err(|e| client(e.into()))? {
                let mut rest = chunk;
                while !rest.is_empty() {
                    let step = v.feed(rest).map_err(client)?;
                    let (checked, after) = rest.split_at(step.consumed.min(rest.len()));
                    w.write(checked).await.map_err(backend)?;
                    rest = after;
                }
            }
            v.finish().map(|_| ()).map_err(client)
        }
        Pump::Reframe(v, r) => {
            while let Some(chunk) = body.next_chunk().await.map_err(|e| client(e.into()))? {
                let mut rest = chunk;
                while !rest.is_empty() {
                    let step = v.feed(rest).map_err(client)?;
                    let mut data = step.data;
                    while !data.is_empty() {
                        let (n, emit) = r.push(data);
                        if let Some(e) = emit {
                            emit_all(w, e).await?;
                        }
                        data = data.get(n..).unwrap_or_default();
                    }
                    rest = rest.get(step.consumed..).unwrap_or_default();
                }
            }
            // Everything checked out: the held-back tail completes the body.
            let proof = v.finish().map_err(client)?;
            emit_all(w, r.finish(&proof)).await
        }
    }
}

/// Write what a [`Reframer`] emits.
async fn emit_all<C: Clock, T: Stream>(
    w: &mut RequestWriter<'_, C, T>,
    emit: Emit<'_>,
) -> Result<(), PumpError> {
    for part in emit.parts {
        w.write(part).await.map_err(PumpError::Backend)?;
    }
    Ok(())
}

/// A whole backend response, for the requests the proxy makes itself.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: u16,
    /// Its end-to-end headers (not hop-by-hop, framing, `Date` or CORS ones), for an answer
    /// relayed as the backend gave it ([`relay_reply`]).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// An answer of `status` with the end-to-end fields of `headers`, its body to come.
    pub fn of_head(status: u16, headers: &[Header<'_>]) -> Self {
        let headers = headers
            .iter()
            .filter(|h| is_relayed(h.name))
            .map(|h| {
                let v = String::from_utf8_lossy(h.value).into_owned();
                (h.name.to_owned(), v)
            })
            .collect();
        Self {
            status,
            headers,
            body: Vec::new(),
        }
    }

    /// Its header fields as a head's (for what reads those).
    pub fn header_views(&self) -> Vec<Header<'_>> {
        self.headers
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect()
    }

    /// The first header field `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

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
        if self.status == 503 {
            return S3Error::with_message(
                S3ErrorCode::SlowDown,
                "A backend is overloaded; please reduce your request rate.",
            );
        }
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
    pub headers: Vec<(Cow<'static, str>, String)>,
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

    /// Add a header.
    pub fn header(&mut self, name: impl Into<Cow<'static, str>>, value: impl Into<String>) {
        self.headers.push((name.into(), value.into()));
    }

    /// Whether it has header `name`.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The client's request as a call with `body`, its body read whole and verified already:
    /// method, path (path-style) and query (without presigned-URL parameters) as the client
    /// sent them, and every header but those the call replaces (framing and hop-by-hop ones,
    /// the signature, the proxy's own, and those of an aws-chunked body, which is decoded
    /// now). A body whose checksum came in a trailer gets its `Content-MD5` instead.
    pub fn of_request<R: Runtime>(cx: &Cx<'_, R>, body: Vec<u8>) -> S3Result<Self> {
        let req = cx.head;
        let method = match req.method {
            "GET" => "GET",
            "HEAD" => "HEAD",
            "PUT" => "PUT",
            "POST" => "POST",
            "DELETE" => "DELETE",
            _ => return Err(S3Error::new(S3ErrorCode::MethodNotAllowed)),
        };
        let origin = origin_form(req.target);
        let path = origin.split_once('?').map_or(origin, |(p, _)| p);
        let mut call = Self::new(
            method,
            cx.backend_path(path).into_owned(),
            strip_presign(cx.raw_query()).into_owned(),
        );
        let chunked = find_header_str(req.headers, header::CONTENT_ENCODING).is_some_and(|v| {
            v.split(',')
                .any(|c| c.trim().eq_ignore_ascii_case("aws-chunked"))
        });
        let trailer = chunked && find_header_str(req.headers, header::X_AMZ_TRAILER).is_some();
        for h in req.headers {
            let n = h.name;
            if is_hop_by_hop(n)
                || is_auth_header(n)
                || cluster::is_internal(n)
                || n.eq_ignore_ascii_case(header::HOST)
            {
                continue;
            }
            if chunked
                && (n.eq_ignore_ascii_case(header::X_AMZ_DECODED_CONTENT_LENGTH)
                    || n.eq_ignore_ascii_case(header::X_AMZ_TRAILER)
                    || (trailer && n.eq_ignore_ascii_case(header::X_AMZ_SDK_CHECKSUM_ALGORITHM)))
            {
                continue;
            }
            let value = if chunked && n.eq_ignore_ascii_case(header::CONTENT_ENCODING) {
                match without_aws_chunked(h.value) {
                    Some(v) => v,
                    None => continue,
                }
            } else {
                h.value.to_vec()
            };
            // A head's values are visible ASCII (the parser checked them).
            let value = String::from_utf8_lossy(&value).into_owned();
            call.header(Cow::Owned(n.to_owned()), value);
        }
        if trailer && !body.is_empty() && !call.has_header(header::CONTENT_MD5) {
            call.header("Content-MD5", content_md5(&md5(&body)).as_str().to_owned());
        }
        call.body = body;
        Ok(call)
    }
}

/// Send `reply` to the client as the backend gave it: its status, headers (its request id
/// among them) and body.
pub(crate) async fn relay_reply<S: Stream>(
    res: &mut ResponseWriter<'_, S>,
    reply: &Reply,
) -> S3Result<()> {
    let mut headers = reply.header_views();
    headers.retain(|h| !cluster::is_internal(h.name));
    res.send(reply.status, &headers, &reply.body).await?;
    Ok(())
}

/// Send `call` to backend `idx` for `caller` (signed with its key where the backend shares
/// it), and read the whole answer.
pub(crate) async fn call<R: Runtime>(
    p: &Proxy<R>,
    idx: usize,
    caller: &Caller,
    call: &Call,
) -> S3Result<Reply> {
    call_as(p, idx, caller, call, None).await
}

/// [`call`] for a backend's check (`proxy::sync`): it may go to a backend that answers but
/// does not take traffic yet (`Backend::conn_for_check`). Unless `patient`, it does not wait
/// for the backend or go again within the retry window: a check reading from another backend
/// that does not answer moves on rather than keep its own backend out of traffic.
pub(crate) async fn call_for_check<R: Runtime>(
    p: &Proxy<R>,
    idx: usize,
    caller: &Caller,
    call: &Call,
    patient: bool,
) -> S3Result<Reply> {
    call_as(p, idx, caller, call, Some(patient)).await
}

/// [`call`]; `check`: for a check (`Some`), patient or not (see [`call_for_check`]).
async fn call_as<R: Runtime>(
    p: &Proxy<R>,
    idx: usize,
    caller: &Caller,
    call: &Call,
    check: Option<bool>,
) -> S3Result<Reply> {
    let for_check = check.is_some();
    let b = p
        .backends
        .get(idx)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?;
    let mut request = OutboundRequest::new(call.method, call.path.as_str(), call.query.as_str());
    for (n, v) in &call.headers {
        request.header(n.as_ref(), v.as_bytes());
    }
    for (n, v) in caller.origin.headers() {
        request.header(n, v.into_bytes());
    }
    let hash = Hex64::of(&sha256(&call.body));
    sign_as(p, b, &caller.key, &mut request, hash.as_str())?;
    let hs = request.views();
    let target = request.target();
    let deadline = match check {
        Some(false) => p.shared.rt.now(),
        _ => b.deadline(),
    };
    let mut conn = if for_check {
        b.conn_for_check(deadline).await?
    } else {
        b.conn_until(deadline).await?
    };
    loop {
        let failed = match exchange(&mut conn, call.method, &target, &hs, &call.body).await {
            Ok(reply) => {
                b.put(conn);
                return Ok(reply);
            }
            Err(e) => e,
        };
        // The whole request is at hand: it can go again (see `again`).
        if !matches!(failed, HttpError::Protocol(_))
            && again(b, &mut conn, (call.method, for_check), &failed, deadline).await?
        {
            continue;
        }
        return Err(reply_failed(b, failed));
    }
}

async fn exchange<C: Clock, T: Stream>(
    conn: &mut ClientConn<C, T>,
    method: &str,
    target: &str,
    headers: &[Header<'_>],
    body: &[u8],
) -> Result<Reply, HttpError> {
    conn.send_request(method, target, headers, body).await?;
    let mut storage = [EMPTY_HEADER; MAX_HEADERS];
    let resp = conn.response(&mut storage).await?;
    read_reply(resp).await
}

/// A backend's answer read whole: its end-to-end headers and at most `MAX_RESPONSE_BODY`
/// bytes of body.
async fn read_reply<T: Stream>(resp: Response<'_, '_, T>) -> Result<Reply, HttpError> {
    let Response { head, mut body } = resp;
    let mut reply = Reply::of_head(head.status, head.headers);
    while let Some(c) = body.next_chunk().await? {
        reply.body.extend_from_slice(c);
        if reply.body.len() > MAX_RESPONSE_BODY {
            return Err(HttpError::Protocol(ProtocolError::new(
                ProtocolErrorKind::BodyTooLarge,
                "backend response too large",
            )));
        }
    }
    Ok(reply)
}

/// The error for an answer of backend `b` that could not be read: one that breaks HTTP (or
/// is too long) is the backend's fault, not the client's; others are a failed backend.
fn reply_failed<R: Runtime>(b: &Backend<R>, e: HttpError) -> S3Error {
    match e {
        HttpError::Protocol(e) => S3Error::with_message(
            S3ErrorCode::InternalError,
            format!("backend response: {}", e.message),
        ),
        e => backend_failed(b, &e),
    }
}
