//! The S3 [`Handler`] of the node: authentication, routing, error responses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ferry_core::http::HttpError;
use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter};
use ferry_core::http::{Header, find_header_str};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::request::{AddressingConfig, Endpoint, S3Request};
use ferry_core::s3::sigv4::{
    Hex64, MemoryCredentials, RequestParts, SharedSigningKeyCache, VerifiedRequest, sha256,
    verify_request,
};
use ferry_core::s3::uri;
use ferry_core::s3::xml::ErrorResponse;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::headers::Headers;
use super::{NodeConfig, buckets, multipart, objects};
use crate::logging::{self, Access, RequestLog};
use crate::store::Store;

/// Signing keys cached (one per access key, region and day).
const KEY_CACHE: usize = 64;

/// The storage node's request handler, written once over any [`Runtime`].
pub struct NodeHandler<R> {
    rt: R,
    store: Store,
    credentials: MemoryCredentials,
    keys: SharedSigningKeyCache,
    region: String,
    addressing: AddressingConfig,
    owner_id: String,
    ids: RequestIds,
}

impl<R> std::fmt::Debug for NodeHandler<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeHandler")
            .field("store", &self.store)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// Request ids: unique in the process (a counter, scrambled by a bijection so ids do not look
/// sequential), different across restarts (a random seed).
#[derive(Debug)]
pub(crate) struct RequestIds {
    seed: u64,
    next: AtomicU64,
}

impl RequestIds {
    pub(crate) fn new() -> Self {
        Self {
            seed: getrandom::u64().unwrap_or(0x5eed_f00d_cafe_d00d),
            next: AtomicU64::new(1),
        }
    }

    pub(crate) fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // Multiplying by an odd constant is a bijection on u64: distinct counters, distinct ids.
        format!("{:016X}", self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

impl<R: Runtime> NodeHandler<R> {
    /// A handler serving `store` on `rt`, with the key, region and owner of `cfg`.
    pub fn new(rt: R, store: Store, cfg: &NodeConfig) -> Self {
        Self {
            rt,
            store,
            credentials: MemoryCredentials::new().with(&cfg.access_key, &cfg.secret_key),
            keys: SharedSigningKeyCache::new(KEY_CACHE),
            region: cfg.region.clone(),
            addressing: AddressingConfig::path_style(),
            owner_id: Hex64::of(&sha256(cfg.access_key.as_bytes()))
                .as_str()
                .to_owned(),
            ids: RequestIds::new(),
        }
    }

    /// Check the request's signature; anonymous requests are `AccessDenied`.
    fn authenticate(&self, req: &RequestHead<'_, '_>) -> S3Result<VerifiedRequest> {
        let origin = origin_form(req.target);
        let (path, query) = origin.split_once('?').unwrap_or((origin, ""));
        let parts = RequestParts {
            method: req.method,
            path,
            query,
            headers: req.headers,
        };
        let mut keys = &self.keys;
        let verified = verify_request(
            &parts,
            self.rt.unix_time(),
            Some(&self.region),
            &self.credentials,
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
        log: &mut RequestLog,
    ) -> S3Result<()> {
        let verified = self.authenticate(req)?;
        let s3 = Endpoint::parse(req.method, req.target, req.headers, &self.addressing)?;
        log.parsed(&s3);
        let cx = Cx {
            node: self,
            target: req.target,
            headers: req.headers,
            id,
            verified: &verified,
        };
        dispatch(&cx, &s3, body, res).await
    }

    /// Write `error` as S3 does: the XML document (no body for HEAD, which the engine drops),
    /// `Resource` and the request id; `extra` headers too (`Content-Range` of a 416).
    pub(crate) async fn send_error<S: Stream>(
        &self,
        target: Option<&str>,
        error: &S3Error,
        id: &str,
        extra: Headers,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let mut h = extra;
        h.push("x-amz-request-id", id.to_owned());
        if error.code == S3ErrorCode::NotModified {
            return res.send(304, &h.as_slice(), &[]).await;
        }
        let resource = target.map(resource);
        let mut xml = Vec::with_capacity(256);
        ErrorResponse::from_error(error, resource.as_deref(), Some(id)).write_xml(&mut xml);
        h.push("Content-Type", "application/xml");
        res.send(error.status(), &h.as_slice(), &xml).await
    }
}

impl<R: Runtime> Handler for NodeHandler<R> {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        let started = Instant::now();
        let id = self.ids.next();
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
        let mut log = RequestLog::new(logging::access_enabled());
        let result = match self.serve(req, body, res, &id, &mut log).await {
            Err(e) if !res.is_started() => {
                if e.status() >= 500 {
                    tracing::warn!(
                        op = %log.op, status = e.status(), request_id = %id, error = %e,
                        "request failed"
                    );
                }
                self.send_error(Some(req.target), &e, &id, Headers::new(), res)
                    .await
                    .map_err(S3Error::from)
            }
            Err(e) => {
                // The response had started: the connection closes mid-response.
                tracing::debug!(op = %log.op, request_id = %id, error = %e, "response cut short");
                Err(e)
            }
            Ok(()) => Ok(()),
        };
        if log.access() {
            let status = match res.status() {
                0 => 500,
                s => s,
            };
            logging::access(&Access {
                server: "node",
                log: &log,
                status,
                bytes_in: body.received(),
                bytes_out: res.body_bytes(),
                duration: started.elapsed(),
                backend: "-",
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
        let id = self.ids.next();
        self.send_error(req.map(|r| r.target), error, &id, Headers::new(), res)
            .await
    }
}

/// The target without `scheme://authority` (absolute-form targets).
pub(crate) fn origin_form(target: &str) -> &str {
    if target.starts_with('/') {
        return target;
    }
    let rest = target.split_once("://").map_or(target, |(_, r)| r);
    match rest.find(['/', '?']) {
        Some(i) => rest.get(i..).unwrap_or("/"),
        None => "/",
    }
}

/// `Resource` of an error: the decoded path (as sent if it does not decode).
pub(crate) fn resource(target: &str) -> String {
    let origin = origin_form(target);
    let path = origin.split_once('?').map_or(origin, |(p, _)| p);
    uri::decode(path, false).map_or_else(|_| path.to_owned(), |p| p.into_owned())
}

/// What every operation needs besides its parameters.
pub(crate) struct Cx<'a, R> {
    pub node: &'a NodeHandler<R>,
    pub target: &'a str,
    pub headers: &'a [Header<'a>],
    pub id: &'a str,
    pub verified: &'a VerifiedRequest,
}

impl<R: Runtime> Cx<'_, R> {
    pub(crate) fn rt(&self) -> &R {
        &self.node.rt
    }

    pub(crate) fn store(&self) -> Store {
        self.node.store.clone()
    }

    pub(crate) fn region(&self) -> &str {
        &self.node.region
    }

    pub(crate) fn owner_id(&self) -> &str {
        &self.node.owner_id
    }

    /// Run a blocking store call off the reactor.
    pub(crate) async fn unblock<T, F>(&self, f: F) -> T
    where
        F: FnOnce(Store) -> T + Send + 'static,
        T: Send + 'static,
    {
        let store = self.store();
        self.node.rt.unblock(move || f(store)).await
    }

    /// A response with the request id (and `headers`), body `body`.
    pub(crate) async fn send<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        status: u16,
        mut headers: Headers,
        body: &[u8],
    ) -> S3Result<()> {
        headers.push("x-amz-request-id", self.id.to_owned());
        res.send(status, &headers.as_slice(), body).await?;
        Ok(())
    }

    /// A 200 response with an XML document.
    pub(crate) async fn send_xml<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        mut headers: Headers,
        xml: &[u8],
    ) -> S3Result<()> {
        headers.push("Content-Type", "application/xml");
        self.send(res, 200, headers, xml).await
    }

    /// An error response with extra headers, written here instead of by the engine.
    pub(crate) async fn send_error<S: Stream>(
        &self,
        res: &mut ResponseWriter<'_, S>,
        error: &S3Error,
        extra: Headers,
    ) -> S3Result<()> {
        self.node
            .send_error(Some(self.target), error, self.id, extra, res)
            .await?;
        Ok(())
    }

    /// The request's `Host` header (for `Location` values).
    pub(crate) fn host(&self) -> &str {
        find_header_str(self.headers, "host").unwrap_or("localhost")
    }
}

/// Run the operation `s3` names.
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
        Endpoint::HeadBucket => buckets::head(cx, res, bucket).await,
        Endpoint::GetBucketLocation => buckets::location(cx, res, bucket).await,
        Endpoint::GetBucketVersioning => buckets::versioning(cx, res, bucket).await,
        Endpoint::ListObjects { .. } | Endpoint::ListObjectsV2 { .. } => {
            buckets::list_objects(cx, res, bucket, &s3.endpoint).await
        }
        Endpoint::ListMultipartUploads { .. } => {
            multipart::list_uploads(cx, res, bucket, &s3.endpoint).await
        }
        Endpoint::DeleteObjects { content_md5 } => {
            objects::delete_objects(cx, body, res, bucket, *content_md5).await
        }
        Endpoint::GetObject {
            range,
            conditions,
            part_number,
            response_overrides,
        } => {
            let read = objects::Read {
                range: *range,
                conditions,
                part_number: *part_number,
                overrides: Some(response_overrides),
                head: false,
            };
            objects::get(cx, res, bucket, key, read).await
        }
        Endpoint::HeadObject {
            range,
            conditions,
            part_number,
        } => {
            let read = objects::Read {
                range: *range,
                conditions,
                part_number: *part_number,
                overrides: None,
                head: true,
            };
            objects::get(cx, res, bucket, key, read).await
        }
        Endpoint::PutObject { content_md5 } => {
            objects::put(cx, body, res, bucket, key, *content_md5).await
        }
        Endpoint::CopyObject {
            source,
            metadata_directive,
            source_conditions,
        } => {
            objects::copy(
                cx,
                res,
                bucket,
                key,
                source,
                *metadata_directive,
                source_conditions,
            )
            .await
        }
        Endpoint::DeleteObject => objects::delete(cx, res, bucket, key).await,
        Endpoint::CreateMultipartUpload => multipart::create(cx, res, bucket, key).await,
        Endpoint::UploadPart {
            part_number,
            upload_id,
            content_md5,
        } => {
            multipart::upload_part(
                cx,
                body,
                res,
                bucket,
                key,
                upload_id,
                *part_number,
                *content_md5,
            )
            .await
        }
        Endpoint::UploadPartCopy {
            part_number,
            upload_id,
            source,
            source_range,
            source_conditions,
        } => {
            let copy = multipart::PartCopy {
                upload_id,
                part_number: *part_number,
                source,
                range: *source_range,
                conditions: source_conditions,
            };
            multipart::upload_part_copy(cx, res, bucket, key, copy).await
        }
        Endpoint::CompleteMultipartUpload { upload_id } => {
            multipart::complete(cx, body, res, bucket, key, upload_id).await
        }
        Endpoint::AbortMultipartUpload { upload_id } => {
            multipart::abort(cx, res, bucket, key, upload_id).await
        }
        Endpoint::ListParts { .. } => {
            multipart::list_parts(cx, res, bucket, key, &s3.endpoint).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_distinct_hex() {
        let ids = RequestIds::new();
        let a = ids.next();
        let b = ids.next();
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn origin_form_and_resource() {
        assert_eq!(origin_form("/b/k?x=1"), "/b/k?x=1");
        assert_eq!(origin_form("http://h:9000/b/k?x"), "/b/k?x");
        assert_eq!(origin_form("http://h"), "/");
        assert_eq!(resource("/b/my%20key?acl"), "/b/my key");
        assert_eq!(resource("/b/%zz"), "/b/%zz");
    }
}
