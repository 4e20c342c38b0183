//! The proxy's S3 [`Handler`]: authentication, routing to backends, error responses.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

use ferry_core::http::head::RequestHead;
use ferry_core::http::io::HttpError;
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
use crate::node::handler::{origin_form, resource};

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
        op: &mut &'static str,
        status: &mut u16,
    ) -> S3Result<()> {
        let verified = self.authenticate(req)?;
        let s3 = Endpoint::parse(req.method, req.target, req.headers, &self.p.addressing)?;
        *op = s3.endpoint.name();
        let cx = Cx {
            p: &self.p,
            req,
            verified: &verified,
            id,
            status: AtomicU16::new(0),
        };
        let r = dispatch(&cx, &s3, body, res).await;
        *status = cx.status.load(Ordering::Relaxed);
        r
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
        let mut op = "unknown";
        let mut status = 0;
        let result = match self.serve(req, body, res, &id, &mut op, &mut status).await {
            Err(e) if !res.is_started() => {
                status = if e.code == S3ErrorCode::NotModified {
                    304
                } else {
                    e.status()
                };
                self.send_error(Some(req.target), &e, &id, res).await?;
                Ok(())
            }
            other => other,
        };
        if result.is_err() && status == 0 {
            status = 500;
        }
        self.p.metrics.record(op, status, started.elapsed());
        result
    }

    async fn render_error<S: Stream>(
        &self,
        req: Option<&RequestHead<'_, '_>>,
        error: &S3Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let id = self.p.ids.next();
        self.send_error(req.map(|r| r.target), error, &id, res)
            .await
    }
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
