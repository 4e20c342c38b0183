//! The S3 front that the storage node and the proxy share (in the spirit of Garage's
//! `ApiServer`/`ApiHandler`): everything about an S3 request that is not the operation itself
//! lives here, once.
//!
//! [`Front`] is the HTTP [`Handler`] of the S3 listener. For each request it answers health
//! checks (`GET /healthz`), gives the request its id, verifies its SigV4 signature, parses its
//! [`Endpoint`](ferry_core::s3::request::Endpoint), and hands it to the server's
//! [`S3Api::dispatch`] — the node's (a local store) or the proxy's (backends). Whatever
//! `dispatch` returns, the front renders errors as S3 XML with the request id, counts the
//! request in the [`metrics`], logs server errors and emits the [`access`] event.
//!
//! Also here: request bodies read whole and verified ([`body`]), the admin listener
//! ([`admin`]), and starting and draining both listeners ([`serve`]).

pub(crate) mod access;
pub(crate) mod admin;
pub(crate) mod body;
mod headers;
mod ids;
pub(crate) mod metrics;
pub(crate) mod origin;
pub(crate) mod serve;

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter, ServerHandle};
use ferry_core::http::{HttpError, find_header_str};
use ferry_core::rt::{Stream, system_unix_time};
use ferry_core::s3::address::{Address, AddressingConfig};
use ferry_core::s3::header;
use ferry_core::s3::request::{Endpoint, S3Request};
use ferry_core::s3::sigv2::{self, Scheme};
use ferry_core::s3::sigv4::{
    MemoryCredentials, RequestParts, SharedSigningKeyCache, VerifiedRequest, verify_request,
};
use ferry_core::s3::uri::{origin_form, resource};
use ferry_core::s3::xml::{CorsConfiguration, ErrorResponse, cors_headers};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use crate::cpu::CpuAccount;
use crate::waits::PoolStats;
use access::{Access, RequestLog};
use metrics::{Connections, RequestMetrics};

pub(crate) use headers::Headers;
pub(crate) use ids::RequestIds;

/// Signing keys cached (one per access key, region and day).
const KEY_CACHE: usize = 64;

/// The most of an unread body discarded to keep the connection of a request that failed to
/// authenticate (an anonymous flood's bodies are not read).
const UNAUTHENTICATED_DRAIN_LIMIT: u64 = 64 * 1024;

/// [`Request::set_backend`] value: no backend was asked.
pub(crate) const NO_BACKEND: usize = usize::MAX;
/// [`Request::set_backend`] value: every backend was asked (a fan-out).
pub(crate) const ALL_BACKENDS: usize = usize::MAX - 1;

/// What a server behind the front implements: its operations, and what it adds to the admin
/// listener.
pub(crate) trait S3Api: Send + Sync + 'static {
    /// The server's name in logs and metric names: `node` or `proxy`.
    const SERVER: &'static str;

    /// Whether requests with something the router refuses ([`S3Request::refused`]: a
    /// subresource Ferry does not serve, a header asking for a feature it lacks) reach
    /// [`S3Api::dispatch`], which may forward them to a server that has it (the proxy), or are
    /// answered with the refusal by the front (the node).
    const TAKES_REFUSED: bool = false;

    /// Ferry's own names (`x-ferry-*` headers and parameters: `ferry_core::s3::cluster`), asked
    /// right after routing, before anything else is answered: `Ok(true)` when the cluster
    /// sealed the request (a node takes its `x-ferry-*` names then: [`Request::sealed`]),
    /// `Ok(false)` when it has none, and the refusal otherwise (a node: no valid seal; the
    /// proxy: a client's, always).
    fn admit(&self, head: &RequestHead<'_, '_>, s3: &S3Request<'_>) -> S3Result<bool>;

    /// Run the operation `op.s3` names. An error returned before the response started is
    /// rendered by the front.
    fn dispatch<S: Stream>(
        &self,
        op: Op<'_, '_, '_, S>,
    ) -> impl Future<Output = S3Result<()>> + Send;

    /// The CORS configuration of `bucket`, `None` if it has none, `NoSuchBucket` if there is
    /// no such bucket: what the front answers preflights (`OPTIONS`) from and the CORS headers
    /// of every response come from. Asked without authentication, as S3 answers preflights.
    fn bucket_cors(
        &self,
        bucket: &str,
    ) -> impl Future<Output = S3Result<Option<Arc<CorsConfiguration>>>> + Send {
        let _ = bucket;
        async { Ok(None) }
    }

    /// The backend `idx` of [`Request::set_backend`] in logs (`-` when there are none).
    fn backend_name(&self, idx: usize) -> Cow<'_, str> {
        let _ = idx;
        Cow::Borrowed("-")
    }

    /// `POST /admin/reload` on the admin listener: load the configuration again and apply
    /// it; what changed, or why it was refused. `None`: this server does not reload.
    fn reload(&self) -> impl Future<Output = Option<Result<String, String>>> + Send {
        async { None }
    }

    /// Whether the server can serve now (`/readyz`), and a line per part saying why.
    fn readiness(&self) -> (bool, String) {
        (true, "ok\n".to_owned())
    }

    /// What the S3 listener's `GET /healthz` (a proxy's probe) answers: 200, or 503 with the
    /// reason (a node whose store cannot write). The admin listener's `/healthz` only says
    /// that the process runs.
    fn health(&self) -> Result<(), String> {
        Ok(())
    }

    /// Metrics of the server's own, appended after the front's (same prefix).
    fn render_metrics(&self, out: &mut String, prefix: &str) {
        let _ = (out, prefix);
    }
}

/// Who may sign requests, and where: the keys, the signing-key cache, the region, whether
/// SigV2 is accepted and the addressing style.
#[derive(Debug)]
pub(crate) struct Auth {
    credentials: MemoryCredentials,
    keys: SharedSigningKeyCache,
    region: String,
    sigv2: bool,
    addressing: AddressingConfig,
}

impl Auth {
    /// Requests signed with `credentials` for `region`, path-style addressing.
    pub(crate) fn new(credentials: MemoryCredentials, region: &str) -> Self {
        Self {
            credentials,
            keys: SharedSigningKeyCache::new(KEY_CACHE),
            region: region.to_owned(),
            sigv2: true,
            addressing: AddressingConfig::path_style(),
        }
    }

    /// Accept SigV2 (`Authorization: AWS ...`, `Signature=` URLs) or not (`--no-sigv2`).
    pub(crate) fn with_sigv2(mut self, on: bool) -> Self {
        self.sigv2 = on;
        self
    }

    /// Virtual-hosted-style under `domains` (`--domain`): `Host: BUCKET.DOMAIN` names BUCKET.
    pub(crate) fn with_domains(mut self, domains: &[String]) -> Self {
        self.addressing = AddressingConfig::with_base_domains(domains.iter().cloned());
        self
    }

    /// Check the request's signature (SigV4, or SigV2 unless turned off); a request without
    /// any is anonymous (what it may do is the server's to decide: a node evaluates its
    /// buckets' policies and ACLs).
    fn authenticate(&self, req: &RequestHead<'_, '_>, now: i64) -> S3Result<VerifiedRequest> {
        let origin = origin_form(req.target);
        let (path, query) = origin.split_once('?').unwrap_or((origin, ""));
        let parts = RequestParts {
            method: req.method,
            path,
            query,
            headers: req.headers,
        };
        if sigv2::scheme(&parts) == Scheme::V2 {
            if !self.sigv2 {
                return Err(S3Error::with_message(
                    S3ErrorCode::AccessDenied,
                    "Signature Version 2 is turned off on this server (--no-sigv2); sign with \
                     AWS4-HMAC-SHA256",
                ));
            }
            let host = find_header_str(req.headers, header::HOST);
            let bucket = self.addressing.virtual_bucket(req.target, host);
            return sigv2::verify_request(&parts, bucket, now, &self.credentials);
        }
        let mut keys = &self.keys;
        let verified = verify_request(
            &parts,
            now,
            Some(&self.region),
            &self.credentials,
            &mut keys,
        )?;
        match verified {
            Some(v) => Ok(v),
            None => VerifiedRequest::anonymous(req.headers),
        }
    }
}

/// The S3 listener's handler: the front, and the server behind it.
pub(crate) struct Front<A> {
    api: A,
    auth: Auth,
    ids: RequestIds,
    metrics: RequestMetrics,
    /// The S3 listener, once started (its connection counts for the metrics).
    server: OnceLock<ServerHandle>,
    /// The runtime's blocking pool, measured (`waits::Metered`).
    blocking: Option<Arc<PoolStats>>,
}

impl<A> std::fmt::Debug for Front<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front")
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// One operation to run: the request, its parsed endpoint, its body and the response.
#[derive(Debug)]
pub(crate) struct Op<'r, 'b, 'w, S> {
    /// The request (head, signature, id).
    pub req: &'r Request<'r>,
    /// What it asks for.
    pub s3: &'r S3Request<'r>,
    /// Its body.
    pub body: &'r mut BodyReader<'b, S>,
    /// The response.
    pub res: &'r mut ResponseWriter<'w, S>,
}

/// A request as an operation sees it: the head, who signed it, its id; and how to answer.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// Method, target, headers.
    pub head: &'a RequestHead<'a, 'a>,
    /// The checked signature (who, how the body is signed).
    pub verified: &'a VerifiedRequest,
    /// The request id (`x-amz-request-id`).
    pub id: &'a str,
    /// Whether the Host named the bucket (virtual-hosted-style).
    pub virtual_hosted: bool,
    /// Whether the cluster sealed it ([`S3Api::admit`]): only then are its `x-ferry-*` names
    /// taken.
    pub sealed: bool,
    /// The backend asked, for the access log.
    backend: &'a AtomicUsize,
}

impl Request<'_> {
    /// The `Host` header (for `Location` values).
    pub(crate) fn host(&self) -> &str {
        find_header_str(self.head.headers, header::HOST).unwrap_or("localhost")
    }

    /// Remember the backend the request goes to ([`NO_BACKEND`], [`ALL_BACKENDS`] or an
    /// index), for the access log.
    pub(crate) fn set_backend(&self, idx: usize) {
        self.backend.store(idx, Ordering::Relaxed);
    }

    /// A response with the request id, `headers` and `body`.
    pub(crate) async fn send<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        status: u16,
        mut headers: Headers,
        body: &[u8],
    ) -> S3Result<()> {
        headers.push(header::X_AMZ_REQUEST_ID, self.id.to_owned());
        res.send(status, &headers.as_slice(), body).await?;
        Ok(())
    }

    /// A 200 response with an XML document.
    pub(crate) async fn send_xml<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        headers: Headers,
        xml: &[u8],
    ) -> S3Result<()> {
        let headers = headers.with("Content-Type", "application/xml");
        self.send(res, 200, headers, xml).await
    }

    /// An error response with `extra` headers (`Content-Range` of a 416), written by the
    /// operation instead of the front.
    pub(crate) async fn send_error<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        error: &S3Error,
        extra: Headers,
    ) -> S3Result<()> {
        send_error(Some(self.head.target), error, self.id, extra, res).await?;
        Ok(())
    }
}

/// Write `error` as S3 does: the XML document (no body for `HEAD`, which the engine drops),
/// `Resource` and the request id, `Retry-After` on a 503 (ServiceUnavailable, SlowDown); `extra` headers too.
async fn send_error<S: Stream>(
    target: Option<&str>,
    error: &S3Error,
    id: &str,
    extra: Headers,
    res: &mut ResponseWriter<'_, S>,
) -> Result<(), HttpError> {
    let mut h = extra;
    h.push(header::X_AMZ_REQUEST_ID, id.to_owned());
    if error.code == S3ErrorCode::NotModified {
        return res.send(304, &h.as_slice(), &[]).await;
    }
    // What went wrong inside (an OS or database error, a backend's words) is for the log, which
    // has it under the same request id; the client gets S3's generic message.
    let generic = S3Error::new(S3ErrorCode::InternalError);
    let error = if error.code == S3ErrorCode::InternalError {
        &generic
    } else {
        error
    };
    let resource = target.map(resource);
    let mut xml = Vec::with_capacity(256);
    ErrorResponse::from_error(error, resource.as_deref(), Some(id)).write_xml(&mut xml);
    h.push("Content-Type", "application/xml");
    if error.is_unavailable() {
        h.push("Retry-After", "1");
    }
    res.send(error.status(), &h.as_slice(), &xml).await
}

impl<A: S3Api> Front<A> {
    /// The front of `api`, checking signatures with `auth`.
    pub(crate) fn new(api: A, auth: Auth) -> Self {
        Self {
            api,
            auth,
            ids: RequestIds::new(),
            metrics: RequestMetrics::default(),
            server: OnceLock::new(),
            blocking: None,
        }
    }

    /// Show the figures of the blocking pool the server hands its blocking work to.
    pub(crate) fn with_blocking_pool(mut self, stats: Arc<PoolStats>) -> Self {
        self.blocking = Some(stats);
        self
    }

    /// The server behind the front.
    pub(crate) fn api(&self) -> &A {
        &self.api
    }

    /// Remember the S3 listener (for the connection metrics).
    pub(crate) fn listening(&self, server: ServerHandle) {
        let _ = self.server.set(server);
    }

    /// `/metrics`: the front's request metrics, then the server's own.
    pub(crate) fn render_metrics(&self) -> String {
        let prefix = format!("ferry_{}", A::SERVER);
        let conns = self
            .server
            .get()
            .map_or_else(Connections::default, |s| Connections {
                open: s.active(),
                accepted: s.accepted(),
                refused: s.refused(),
                evicted: s.evicted(),
            });
        let mut o = String::with_capacity(8192);
        self.metrics.render(&mut o, &prefix, conns);
        if let Some(b) = &self.blocking {
            b.render(&mut o, &prefix);
        }
        self.api.render_metrics(&mut o, &prefix);
        o
    }

    async fn serve<S: Stream>(
        &self,
        head: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
        id: &str,
        log: &mut RequestLog,
        backend: &AtomicUsize,
    ) -> S3Result<()> {
        // CORS comes before authentication, as in S3: preflights are anonymous, and the
        // answers to requests that fail to authenticate carry the headers too.
        if head.method == "OPTIONS" {
            log.op = "PreflightRequest";
            if log.access() {
                let host = find_header_str(head.headers, header::HOST);
                if let Ok(a) = Address::parse(head.target, host, &self.auth.addressing) {
                    let (b, k) = (a.bucket.unwrap_or_default(), a.key.unwrap_or_default());
                    log.names = Some((b.into_owned(), k.into_owned()));
                }
            }
            return self.preflight(head, res, id).await;
        }
        if let Some(origin) = find_header_str(head.headers, "origin") {
            self.add_cors_headers(head, origin.trim(), res).await;
        }
        // Every runtime's clock is the system's wall clock.
        let verified = match self.auth.authenticate(head, system_unix_time()) {
            Ok(v) => v,
            Err(e) => {
                // Not worth reading a large body for: past a little, the connection closes
                // after the answer instead of discarding it.
                res.set_drain_limit(UNAUTHENTICATED_DRAIN_LIMIT);
                return Err(e);
            }
        };
        if verified.is_anonymous() {
            // As for a request that failed to authenticate: a large body refused is not read.
            res.set_drain_limit(UNAUTHENTICATED_DRAIN_LIMIT);
        }
        let s3 = Endpoint::route(
            head.method,
            head.target,
            head.headers,
            &self.auth.addressing,
        )?;
        let sealed = self.api.admit(head, &s3)?;
        if let Some(e) = s3.refused.as_ref().filter(|_| !A::TAKES_REFUSED) {
            return Err(e.clone());
        }
        log.parsed(&s3);
        let req = Request {
            head,
            verified: &verified,
            id,
            virtual_hosted: s3.virtual_hosted,
            sealed,
            backend,
        };
        let op = Op {
            req: &req,
            s3: &s3,
            body,
            res,
        };
        self.api.dispatch(op).await
    }

    /// The bucket a request names, if any.
    fn bucket_of(&self, head: &RequestHead<'_, '_>) -> S3Result<Option<String>> {
        let host = find_header_str(head.headers, header::HOST);
        let addr = Address::parse(head.target, host, &self.auth.addressing)?;
        Ok(addr.bucket.map(|b| b.into_owned()))
    }

    /// Answer a CORS preflight (`OPTIONS`) from the bucket's rules, without authentication:
    /// 200 with the `Access-Control-*` headers of the first rule that allows the origin, the
    /// method and every requested header; `400 BadRequest` without `Origin` or
    /// `Access-Control-Request-Method`; `403 AccessForbidden` when no rule matches, the bucket
    /// has no CORS configuration or does not exist.
    async fn preflight<S: Stream>(
        &self,
        head: &RequestHead<'_, '_>,
        res: &mut ResponseWriter<'_, S>,
        id: &str,
    ) -> S3Result<()> {
        // Anonymous: a preflight has no body worth reading.
        res.set_drain_limit(UNAUTHENTICATED_DRAIN_LIMIT);
        let non_empty = |name| {
            find_header_str(head.headers, name)
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let origin = non_empty("origin").ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::BadRequest,
                "Insufficient information. Origin request header needed.",
            )
        })?;
        let method = non_empty("access-control-request-method").ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::BadRequest,
                "Invalid Access-Control-Request-Method: null",
            )
        })?;
        let forbidden =
            |why: &'static str| S3Error::with_message(S3ErrorCode::AccessForbidden, why);
        let Some(bucket) = self.bucket_of(head)? else {
            return Err(forbidden("CORSResponse: Bucket not found"));
        };
        let config = match self.api.bucket_cors(&bucket).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                return Err(forbidden(
                    "CORSResponse: CORS is not enabled for this bucket.",
                ));
            }
            Err(e)
                if matches!(
                    e.code,
                    S3ErrorCode::NoSuchBucket | S3ErrorCode::InvalidBucketName
                ) =>
            {
                return Err(forbidden("CORSResponse: Bucket not found"));
            }
            Err(e) => return Err(e),
        };
        let asked = find_header_str(head.headers, "access-control-request-headers").unwrap_or("");
        let rule = config
            .find(origin, method, Some(asked))
            .ok_or_else(|| S3Error::new(S3ErrorCode::AccessForbidden))?;
        let mut h = Headers::new();
        for (name, value) in cors_headers(rule, origin, Some(asked), false) {
            h.push(name, value);
        }
        h.push(header::X_AMZ_REQUEST_ID, id.to_owned());
        res.send(200, &h.as_slice(), &[]).await?;
        Ok(())
    }

    /// For a request with an `Origin`: the CORS headers of the bucket's first rule that allows
    /// the origin and the method, on whatever answers it (errors too). Nothing when no rule
    /// matches or the rules cannot be had (the request goes on; its own answer tells why).
    async fn add_cors_headers<S: Stream>(
        &self,
        head: &RequestHead<'_, '_>,
        origin: &str,
        res: &mut ResponseWriter<'_, S>,
    ) {
        let Ok(Some(bucket)) = self.bucket_of(head) else {
            return;
        };
        let config = match self.api.bucket_cors(&bucket).await {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(bucket = %bucket, error = %e, "no CORS rules for a request with an Origin");
                return;
            }
        };
        let Some(rule) = config.find(origin, head.method, None) else {
            return;
        };
        let signed = find_header_str(head.headers, header::AUTHORIZATION).is_some()
            || head.target.contains("X-Amz-Credential=");
        for (name, value) in cors_headers(rule, origin, None, signed) {
            // Values come from a parsed head and a checked configuration: they are valid.
            let _ = res.add_header(name, value.as_bytes());
        }
    }

    /// Log a 5xx answer: at `warn`, but at `debug` for 503s, whose cause (a backend down or
    /// failing) is logged once where it happens rather than per request.
    fn log_server_error(
        &self,
        op: &str,
        status: u16,
        backend: usize,
        id: &str,
        error: Option<&S3Error>,
    ) {
        let backend = self.backend_name(backend);
        let backend = &*backend;
        match error {
            Some(e) if e.is_unavailable() => {
                tracing::debug!(
                    op, status, backend, request_id = %id, error = %e, "request answered 503"
                )
            }
            Some(e) => tracing::warn!(
                op, status, backend, request_id = %id, error = %e, "request failed"
            ),
            None => tracing::warn!(
                op, status, backend, request_id = %id, "answered with a server error"
            ),
        }
    }

    fn backend_name(&self, idx: usize) -> Cow<'_, str> {
        match idx {
            NO_BACKEND => Cow::Borrowed("-"),
            ALL_BACKENDS => Cow::Borrowed("*"),
            i => self.api.backend_name(i),
        }
    }
}

impl<A: S3Api> Handler for Front<A> {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        head: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        let started = Instant::now();
        let id = self.ids.next();
        if head.method == "GET" && head.target == "/healthz" {
            let h = Headers::new().with("Content-Type", "text/plain");
            let h = h.with(header::X_AMZ_REQUEST_ID, id);
            match self.api.health() {
                Ok(()) => res.send(200, &h.as_slice(), b"ok").await?,
                Err(why) => res.send(503, &h.as_slice(), why.as_bytes()).await?,
            }
            return Ok(());
        }
        // In flight until its answer (and its access event) is done.
        let _flight = self.metrics.enter();
        let mut log = RequestLog::new(access::access_enabled());
        let backend = AtomicUsize::new(NO_BACKEND);
        // The request's CPU time: each poll of its future on the thread CPU clock, and the
        // blocking work it hands off (`crate::cpu`).
        let cpu = CpuAccount::new();
        // What the connection spent since its last request (this head, say) is this one's.
        cpu.add(crate::cpu::claim_current());
        let served = cpu
            .measure(self.serve(head, body, res, &id, &mut log, &backend))
            .await;
        let result = match served {
            Err(e) if !res.is_started() => {
                if e.status() >= 500 {
                    let b = backend.load(Ordering::Relaxed);
                    self.log_server_error(log.op, e.status(), b, &id, Some(&e));
                }
                cpu.measure(send_error(Some(head.target), &e, &id, Headers::new(), res))
                    .await
                    .map_err(S3Error::from)
            }
            Err(e) => {
                // The response had started: the connection closes mid-response.
                tracing::debug!(op = %log.op, request_id = %id, error = %e, "response cut short");
                Err(e)
            }
            Ok(()) => {
                if res.status() >= 500 {
                    let b = backend.load(Ordering::Relaxed);
                    self.log_server_error(log.op, res.status(), b, &id, None);
                }
                Ok(())
            }
        };
        let status = match res.status() {
            0 => 500,
            s => s,
        };
        // This request's own polls (nested in the connection's) are in `cpu` already.
        crate::cpu::claim_current();
        let elapsed = started.elapsed();
        let (bytes_in, bytes_out) = (body.received(), res.body_bytes());
        self.metrics
            .record(log.op, status, elapsed, (bytes_in, bytes_out), cpu.total());
        if log.access() {
            access::access(&Access {
                server: A::SERVER,
                log: &log,
                status,
                bytes_in,
                bytes_out,
                duration: elapsed,
                backend: &self.backend_name(backend.load(Ordering::Relaxed)),
                peer: res.peer(),
                request_id: &id,
            });
        }
        result
    }

    async fn render_error<S: Stream>(
        &self,
        head: Option<&RequestHead<'_, '_>>,
        error: &S3Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let id = self.ids.next();
        let peer = res.peer().map_or_else(|| "-".to_owned(), |a| a.to_string());
        if error.status() >= 500 {
            tracing::warn!(server = A::SERVER, peer = %peer, request_id = %id, error = %error, "request failed");
        } else {
            tracing::debug!(server = A::SERVER, peer = %peer, request_id = %id, error = %error, "bad request");
        }
        send_error(head.map(|r| r.target), error, &id, Headers::new(), res).await
    }
}
