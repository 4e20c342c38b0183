//! The proxy's S3 [`Handler`]: authentication, routing to backends, error responses.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::time::Instant;

use ferry_core::http::HttpError;
use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter};
use ferry_core::http::{Header, find_header};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::request::{Endpoint, S3Request};
use ferry_core::s3::sigv4::{RequestParts, VerifiedRequest, verify_request};
use ferry_core::s3::xml::ErrorResponse;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::Proxy;
use super::backend::Backend;
use super::{buckets, copy, forward, list};
use crate::logging::{self, Access, RequestLog};
use crate::node::handler::{origin_form, resource};

/// [`Cx::backend`] value: no backend was asked.
const NO_BACKEND: usize = usize::MAX;
/// [`Cx::backend`] value: every backend was asked (fan-out).
const ALL_BACKENDS: usize = usize::MAX - 1;

/// The proxy's request handler, written once over any [`Runtime`].
pub struct ProxyHandler<R: Runtime> {
    p: Arc<Proxy<R>>,
}

impl<R: Runtime> std::fmt::Debug for ProxyHandler<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyHandler")
            .field("proxy", &self.p)
            .finish()
    }
}

/// What every operation needs besides its parameters.
pub(crate) struct Cx<'a, R: Runtime> {
    pub p: &'a Arc<Proxy<R>>,
    pub req: &'a RequestHead<'a, 'a>,
    pub verified: &'a VerifiedRequest,
    pub id: &'a str,
    /// The status sent, for metrics (0 until a response starts).
    status: AtomicU16,
    /// The backend the request went to, for the access log ([`NO_BACKEND`], [`ALL_BACKENDS`]).
    backend: AtomicUsize,
}

impl<R: Runtime> Cx<'_, R> {
    /// Backend `idx`.
    pub fn backend(&self, idx: usize) -> S3Result<&Backend<R>> {
        self.p
            .backends
            .get(idx)
            .ok_or_else(|| S3Error::with_message(S3ErrorCode::InternalError, "no such backend"))
    }

    /// Remember the status of the response being sent.
    pub fn set_status(&self, status: u16) {
        self.status.store(status, Ordering::Relaxed);
    }

    /// Remember the backend the request goes to.
    pub fn set_backend(&self, idx: usize) {
        self.backend.store(idx, Ordering::Relaxed);
    }

    /// The access key the client signed with.
    pub fn client_key(&self) -> &str {
        &self.verified.access_key_id
    }

    /// A response of the proxy's own with the request id and `headers`.
    pub async fn send<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> S3Result<()> {
        let mut h: Vec<Header<'_>> = headers
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect();
        h.push(Header {
            name: "x-amz-request-id",
            value: self.id.as_bytes(),
        });
        self.set_status(status);
        res.send(status, &h, body).await?;
        Ok(())
    }

    /// A 200 response with an XML document.
    pub async fn send_xml<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        xml: &[u8],
    ) -> S3Result<()> {
        self.send(res, 200, &[("Content-Type", "application/xml")], xml)
            .await
    }
}

impl<R: Runtime> ProxyHandler<R> {
    pub(crate) fn new(p: Arc<Proxy<R>>) -> Self {
        Self { p }
    }

    /// Check the request's signature against the proxy's keys; anonymous is `AccessDenied`.
    fn authenticate(&self, req: &RequestHead<'_, '_>) -> S3Result<VerifiedRequest> {
        let origin = origin_form(req.target);
        let (path, query) = origin.split_once('?').unwrap_or((origin, ""));
        let parts = RequestParts {
            method: req.method,
            path,
            query,
            headers: req.headers,
        };
        let mut keys = &self.p.keys;
        let verified = verify_request(
            &parts,
            self.p.rt.unix_time(),
            Some(&self.p.region),
            &self.p.credentials,
            &mut keys,
        )?;
        verified.ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied))
    }

    async fn serve<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
        id: &str,
        out: &mut Outcome,
    ) -> S3Result<()> {
        let verified = self.authenticate(req)?;
        let s3 = Endpoint::parse(req.method, req.target, req.headers, &self.p.addressing)?;
        out.log.parsed(&s3);
        let cx = Cx {
            p: &self.p,
            req,
            verified: &verified,
            id,
            status: AtomicU16::new(0),
            backend: AtomicUsize::new(NO_BACKEND),
        };
        let r = dispatch(&cx, &s3, body, res).await;
        out.status = cx.status.load(Ordering::Relaxed);
        out.backend = cx.backend.load(Ordering::Relaxed);
        r
    }

    /// The id of backend `idx` for logs (`*` for all, `-` for none).
    fn backend_name(&self, idx: usize) -> &str {
        match idx {
            ALL_BACKENDS => "*",
            i => self.p.backends.get(i).map_or("-", |b| b.id.as_str()),
        }
    }

    /// Log a 5xx answer: at `warn`, but at `debug` for the proxy's own 503s, whose cause (a
    /// backend down or failing) is logged once where it happens rather than per request.
    fn log_server_error(&self, out: &Outcome, id: &str, error: Option<&S3Error>) {
        let backend = self.backend_name(out.backend);
        match error {
            Some(e) if e.code == S3ErrorCode::ServiceUnavailable => tracing::debug!(
                op = %out.log.op, status = out.status, backend, request_id = %id, error = %e,
                "request answered 503"
            ),
            Some(e) => tracing::warn!(
                op = %out.log.op, status = out.status, backend, request_id = %id, error = %e,
                "request failed"
            ),
            None => tracing::warn!(
                op = %out.log.op, status = out.status, backend, request_id = %id,
                "backend answered with a server error"
            ),
        }
    }

    /// Write `error` as S3 does: the XML document (no body for HEAD), `Resource`, request id.
    async fn send_error<S: Stream>(
        &self,
        target: Option<&str>,
        error: &S3Error,
        id: &str,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let mut h = vec![Header {
            name: "x-amz-request-id",
            value: id.as_bytes(),
        }];
        if error.code == S3ErrorCode::NotModified {
            return res.send(304, &h, &[]).await;
        }
        let resource = target.map(resource);
        let mut xml = Vec::with_capacity(256);
        ErrorResponse::from_error(error, resource.as_deref(), Some(id)).write_xml(&mut xml);
        h.push(Header {
            name: "Content-Type",
            value: b"application/xml",
        });
        if error.code == S3ErrorCode::ServiceUnavailable {
            h.push(Header {
                name: "Retry-After",
                value: b"1",
            });
        }
        res.send(error.status(), &h, &xml).await
    }
}

impl<R: Runtime> Handler for ProxyHandler<R> {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        let started = Instant::now();
        let id = self.p.ids.next();
        if req.method == "GET" && req.target == "/healthz" {
            let h = [
                Header {
                    name: "x-amz-request-id",
                    value: id.as_bytes(),
                },
                Header {
                    name: "Content-Type",
                    value: b"text/plain",
                },
            ];
            res.send(200, &h, b"ok").await?;
            return Ok(());
        }
        let mut out = Outcome {
            log: RequestLog::new(logging::access_enabled()),
            status: 0,
            backend: NO_BACKEND,
        };
        let result = match self.serve(req, body, res, &id, &mut out).await {
            Err(e) if !res.is_started() => {
                out.status = if e.code == S3ErrorCode::NotModified {
                    304
                } else {
                    e.status()
                };
                if out.status >= 500 {
                    self.log_server_error(&out, &id, Some(&e));
                }
                self.send_error(Some(req.target), &e, &id, res)
                    .await
                    .map_err(S3Error::from)
            }
            Err(e) => {
                // The response had started: the connection closes mid-response.
                tracing::debug!(
                    op = %out.log.op, request_id = %id, error = %e, "response cut short"
                );
                Err(e)
            }
            Ok(()) => {
                if out.status >= 500 {
                    self.log_server_error(&out, &id, None);
                }
                Ok(())
            }
        };
        if result.is_err() && out.status == 0 {
            out.status = 500;
        }
        let elapsed = started.elapsed();
        self.p.metrics.record(out.log.op, out.status, elapsed);
        if out.log.access() {
            logging::access(&Access {
                server: "proxy",
                log: &out.log,
                status: out.status,
                bytes_in: body.received(),
                bytes_out: res.body_bytes(),
                duration: elapsed,
                backend: self.backend_name(out.backend),
                peer: res.peer(),
                request_id: &id,
            });
        }
        result
    }

    async fn render_error<S: Stream>(
        &self,
        req: Option<&RequestHead<'_, '_>>,
        error: &S3Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let id = self.p.ids.next();
        tracing::debug!(
            peer = %res.peer().map_or_else(|| "-".to_owned(), |a| a.to_string()),
            request_id = %id, error = %error, "bad request"
        );
        self.send_error(req.map(|r| r.target), error, &id, res)
            .await
    }
}

/// What [`ProxyHandler::handle`] learns about a request while serving it.
struct Outcome {
    log: RequestLog,
    /// The status sent (0 if none).
    status: u16,
    /// The backend asked (or [`NO_BACKEND`], [`ALL_BACKENDS`]).
    backend: usize,
}

/// Run the operation `s3` names: forwarded to the key's backend, fanned out, or merged.
async fn dispatch<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let bucket = s3.bucket_str();
    let key = s3.key_str();
    if matches!(
        s3.endpoint,
        Endpoint::ListBuckets { .. }
            | Endpoint::CreateBucket
            | Endpoint::DeleteBucket
            | Endpoint::ListObjects { .. }
            | Endpoint::ListObjectsV2 { .. }
            | Endpoint::ListMultipartUploads { .. }
            | Endpoint::DeleteObjects { .. }
    ) {
        cx.set_backend(ALL_BACKENDS);
    }
    match &s3.endpoint {
        Endpoint::ListBuckets {
            prefix,
            continuation_token,
            max_buckets,
        } => {
            buckets::list_buckets(
                cx,
                res,
                prefix.as_deref(),
                continuation_token.as_deref(),
                *max_buckets,
            )
            .await
        }
        Endpoint::CreateBucket => buckets::create(cx, body, res, bucket).await,
        Endpoint::DeleteBucket => buckets::delete(cx, res, bucket).await,
        Endpoint::HeadBucket | Endpoint::GetBucketLocation | Endpoint::GetBucketVersioning => {
            // Any backend knows its buckets: on to the next healthy one if one fails to answer.
            let mut tries = cx.p.backends.len();
            loop {
                let idx = cx.p.any_healthy(bucket)?;
                match forward::forward(cx, idx, body, res).await {
                    Err(e)
                        if e.code == S3ErrorCode::ServiceUnavailable
                            && !res.is_started()
                            && tries > 1 =>
                    {
                        tries -= 1;
                    }
                    other => return other,
                }
            }
        }
        Endpoint::ListObjects { .. } | Endpoint::ListObjectsV2 { .. } => {
            list::list_objects(cx, res, bucket, &s3.endpoint).await
        }
        Endpoint::ListMultipartUploads { .. } => {
            list::list_uploads(cx, res, bucket, &s3.endpoint).await
        }
        Endpoint::DeleteObjects { content_md5 } => {
            buckets::delete_objects(cx, body, res, bucket, *content_md5).await
        }
        Endpoint::CopyObject { source, .. } | Endpoint::UploadPartCopy { source, .. } => {
            let dst = cx.p.pick(bucket, key);
            let src = cx.p.pick(&source.bucket, &source.key);
            if src == dst {
                forward::forward(cx, dst, body, res).await
            } else {
                cx.set_backend(dst);
                copy::copy_across(cx, res, s3, src, dst).await
            }
        }
        Endpoint::GetObject { .. }
        | Endpoint::HeadObject { .. }
        | Endpoint::PutObject { .. }
        | Endpoint::DeleteObject
        | Endpoint::CreateMultipartUpload
        | Endpoint::UploadPart { .. }
        | Endpoint::CompleteMultipartUpload { .. }
        | Endpoint::AbortMultipartUpload { .. }
        | Endpoint::ListParts { .. } => {
            let idx = cx.p.pick(bucket, key);
            forward::forward(cx, idx, body, res).await
        }
    }
}

/// The raw value of a client header, if valid UTF-8.
pub(crate) fn header_str<'a>(headers: &[Header<'a>], name: &str) -> Option<&'a str> {
    find_header(headers, name).and_then(|v| std::str::from_utf8(v).ok())
}
