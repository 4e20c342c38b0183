//! The S3 operations a load test performs, over `ferry-core`'s HTTP client: requests built
//! and signed by core's `OutboundRequest`, one pooled connection per operation (sent once more
//! on a new one when core says a kept-alive connection was stale), GET bodies verified as
//! they stream.
//!
//! Request bodies are generated as they are sent (`body`); response bodies are compared with
//! the regenerated content chunk by chunk, as they arrive. Nothing is buffered whole and no
//! body allocates per request.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::fill::ShardedFill;
use ferry_core::http::body::BodyKind;
use ferry_core::http::client::{
    ClientConfig, ClientConn, ClientPool, Continue, Response, ResponseBody,
};
use ferry_core::http::{EMPTY_HEADER, Header, find_header_str};
use ferry_core::md5::{ETag, Md5Digest, Md5Sink, content_md5};
use ferry_core::pool::BufferPool;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::header;
use ferry_core::s3::outbound::OutboundRequest;
use ferry_core::s3::sigv4::{
    Credentials, RequestParts, SharedSigningKeyCache, UNSIGNED_PAYLOAD, presign,
};
use ferry_core::s3::uri::{encode, encode_path};
use ferry_core::s3::xml::{ErrorResponse, ListBucketResult, MAX_RESPONSE_BODY};
use ferry_net::rustls::ClientConfig as TlsConfig;
use ferry_net::{NetRuntime, TlsConnector};

use crate::body::Body;
use crate::digests::Digests;
use crate::endpoint::{Endpoint, EndpointPolicy, Endpoints};
use crate::error::{CallError, OpError, VerifyError};
use crate::payload::Payload;
use crate::size::SizeSpec;
use crate::stats::{Costs, CpuMark, MismatchReport, elapsed_ns};

/// Error documents are read up to this size.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// How requests are made.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Signing credentials.
    pub credentials: Credentials,
    /// The SigV4 region.
    pub region: String,
    /// Sign the SHA-256 of each body instead of `UNSIGNED-PAYLOAD`.
    pub payload_sha256: bool,
    /// Send `Content-MD5` and check single-part ETags against it.
    pub md5: bool,
    /// Compare received bodies with the regenerated content.
    pub verify: bool,
    /// Bodies of at least this many bytes are sent with `Expect: 100-continue`.
    pub expect_continue_from: Option<u64>,
    /// The fill seed: object `id` holds `Payload::new(&ShardedFill::new(seed), id)`.
    pub seed: u64,
    /// The size of each object `id` the run PUTs whole, when known: with `md5`, the digests
    /// of the next objects are then hashed ahead, many at a time.
    pub sizes: Option<SizeSpec>,
}

/// What one operation did.
#[derive(Debug, Clone, Default)]
pub struct OpResult {
    /// The endpoint it went to.
    pub endpoint: usize,
    /// Payload bytes moved (on success).
    pub bytes: u64,
    /// When the response head arrived (runtime clock).
    pub head_at: Option<Duration>,
    /// Why it failed, if it did.
    pub error: Option<OpError>,
    /// Client-side work it took.
    pub costs: Costs,
}

/// One page of a listing.
#[derive(Debug, Clone, Default)]
pub struct ListPage {
    /// The keys on the page.
    pub keys: Vec<String>,
    /// Where the next page starts, if the listing is truncated.
    pub next: Option<String>,
}

type Conn<R> = ClientConn<R, <R as Runtime>::Stream>;

/// Run `$body` with `$conn` a pooled connection to endpoint `$ep`, then give it back.
///
/// A macro rather than a function taking an async closure: such closures' futures cannot be
/// proven `Send` for every lifetime, and part uploads are spawned.
///
/// When core's rule says the failure only means the server closed the kept-alive connection
/// while it sat idle (`ClientPool::replace_stale`), the operation runs once more on a new
/// connection (S3's object operations are idempotent), instead of counting a transport error
/// the server did not make.
macro_rules! on_conn {
    ($self:ident, $ep:expr, $res:ident, |$conn:ident| -> $t:ty $body:block) => {{
        let lease = $self.endpoints.lease($ep);
        $res.endpoint = lease.index;
        match $self.pool.get(lease.ep.addr).await {
            Err(e) => Err($crate::error::OpError::from(e)),
            Ok(mut owned) => {
                let out = loop {
                    let out: Result<$t, $crate::error::CallError> = async {
                        let $conn = &mut owned;
                        $body
                    }
                    .await;
                    let Err($crate::error::CallError::Http(e)) = &out else {
                        break out.map_err($crate::error::OpError::from);
                    };
                    match $self.pool.replace_stale(&mut owned, e).await {
                        Ok(false) => break out.map_err($crate::error::OpError::from),
                        // Counted when tried, even if the new connection then fails.
                        replaced => {
                            $res.costs.reconnects += 1;
                            if let Err(e) = replaced {
                                break Err($crate::error::OpError::from(e));
                            }
                        }
                    }
                };
                $self.pool.put(owned);
                out
            }
        }
    }};
}
pub(crate) use on_conn;

/// An S3 client for load: endpoints, a connection pool, credentials and the fill.
pub struct S3Client<R: Runtime> {
    rt: R,
    pub(crate) pool: ClientPool<R, TlsConnector>,
    pub(crate) endpoints: Endpoints,
    opts: ClientOptions,
    keys: SharedSigningKeyCache,
    pub(crate) fill: ShardedFill,
    pub(crate) digests: Digests,
}

impl<R: Runtime> fmt::Debug for S3Client<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Client")
            .field("endpoints", &self.endpoints.list())
            .field("policy", &self.endpoints.policy())
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl<R: NetRuntime> S3Client<R> {
    /// A client over `endpoints` (at least one); `tls` is used for the `https://` ones.
    pub fn new(
        rt: R,
        endpoints: Vec<Endpoint>,
        policy: EndpointPolicy,
        opts: ClientOptions,
        tls: Arc<TlsConfig>,
    ) -> Self {
        let mut config = ClientConfig::new(BufferPool::global());
        // One idle connection per worker and endpoint is what a load run needs.
        config.max_idle_per_addr = 4096;
        let mut connector = TlsConnector::new(tls);
        for ep in &endpoints {
            if let Some(name) = &ep.tls {
                connector.add(ep.addr, name.clone());
            }
        }
        Self {
            pool: ClientPool::with_connector(rt.clone(), connector, config),
            rt,
            endpoints: Endpoints::new(endpoints, policy),
            fill: ShardedFill::new(opts.seed),
            digests: Digests::new(opts.seed, opts.sizes.clone()),
            opts,
            keys: SharedSigningKeyCache::new(16),
        }
    }

    /// The endpoints, in the order given.
    pub fn endpoints(&self) -> &[Endpoint] {
        self.endpoints.list()
    }

    /// The runtime.
    pub fn runtime(&self) -> &R {
        &self.rt
    }

    /// The content of object `id`.
    pub fn payload(&self, id: u64) -> Payload<'_> {
        Payload::new(&self.fill, id)
    }

    /// The digests `--md5` sends and checks (hashed ahead in SIMD lanes).
    pub fn digests(&self) -> &Digests {
        &self.digests
    }

    /// The options.
    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// Sign and send a request to endpoint `ep` with its body; the body's MD5 when `--md5`
    /// computed one. A server that answers before the body is sent gets no body.
    pub(crate) async fn send(
        &self,
        conn: &mut Conn<R>,
        ep: usize,
        to: Target<'_>,
        body: Body<'_>,
        costs: &mut Costs,
    ) -> Result<Option<Md5Digest>, CallError> {
        let Target {
            method,
            path,
            query,
        } = to;
        let sha = self.opts.payload_sha256.then(|| body.sha256(costs));
        let md5 = match body {
            Body::Object { obj, offset, len } if self.opts.md5 => {
                let t = CpuMark::now();
                let d = if offset == 0 {
                    self.digests.for_put(&self.fill, obj.id(), len)
                } else {
                    self.digests.take(&self.fill, (obj.id(), offset, len))
                };
                costs.hash_ns += elapsed_ns(t);
                Some(d)
            }
            _ => None,
        };
        let md5_header = md5.as_ref().map(content_md5);
        let mut req = OutboundRequest::new(method, path, query);
        if let Some(m) = &md5_header {
            req.header(header::CONTENT_MD5, m.as_str().as_bytes());
        }
        let payload = sha.as_deref().unwrap_or(UNSIGNED_PAYLOAD);
        req.sign(
            &self.endpoints[ep].host,
            payload,
            &self.opts.credentials,
            &self.opts.region,
            self.rt.unix_time(),
            &mut &self.keys,
        )
        .map_err(|e| OpError::Transport(format!("signing: {}", e.message)))?;
        let len = body.len();
        // An empty object is still a body: S3 wants `Content-Length: 0` on its PUT.
        let kind = match body {
            Body::Empty => BodyKind::None,
            _ => BodyKind::Length(len),
        };
        let expect = self.opts.expect_continue_from.is_some_and(|min| len >= min);
        let mut w = conn.request(method, &req.target(), &req.views(), kind, expect)?;
        if w.wait_continue().await? == Continue::Final {
            w.finish().await?;
            return Ok(md5);
        }
        body.write(&mut w, costs).await?;
        w.finish().await?;
        Ok(md5)
    }

    /// Create `bucket`; an existing bucket we own is fine.
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), OpError> {
        let path = format!("/{}", encode_path(bucket));
        let (res, status) = self.simple("PUT", &path, "").await;
        match (res.error, status) {
            (None, _) => Ok(()),
            (Some(OpError::Http { code: Some(c), .. }), _)
                if c == "BucketAlreadyOwnedByYou" || c == "BucketAlreadyExists" =>
            {
                Ok(())
            }
            (Some(e), _) => Err(e),
        }
    }

    /// Delete `bucket` (it must be empty).
    pub async fn delete_bucket(&self, bucket: &str) -> Result<(), OpError> {
        let path = format!("/{}", encode_path(bucket));
        match self.simple("DELETE", &path, "").await.0.error {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// A bodiless request whose response body is discarded; the result and the status.
    pub(crate) async fn simple(&self, method: &str, path: &str, query: &str) -> (OpResult, u16) {
        let mut res = OpResult::default();
        let ep = self.endpoints.pick();
        let out = on_conn!(self, ep, res, |conn| -> u16 {
            self.send(
                conn,
                ep,
                Target {
                    method,
                    path,
                    query,
                },
                Body::Empty,
                &mut res.costs,
            )
            .await?;
            let mut hs = [EMPTY_HEADER; 32];
            let mut resp = success(conn.response(&mut hs).await?).await?;
            resp.body.discard().await?;
            Ok(resp.head.status)
        });
        match out {
            Ok(status) => (res, status),
            Err(e) => {
                res.error = Some(e);
                (res, 0)
            }
        }
    }

    /// Read a write's response: the S3 error of a non-2xx status, else its ETag, checked
    /// against `md5` (the body's digest, when `--md5` computed one).
    pub(crate) async fn write_response(
        &self,
        conn: &mut Conn<R>,
        res: &mut OpResult,
        key: &str,
        md5: Option<Md5Digest>,
    ) -> Result<Option<String>, CallError> {
        let mut hs = [EMPTY_HEADER; 32];
        let resp = conn.response(&mut hs).await?;
        res.head_at = Some(self.rt.now());
        let mut resp = success(resp).await?;
        let etag = find_header_str(resp.head.headers, header::ETAG).map(str::to_string);
        resp.body.discard().await?;
        if let Some(d) = md5 {
            check_etag(key, &ETag::single(&d), etag.as_deref())?;
        }
        Ok(etag)
    }

    /// PUT object `id` of `size` bytes as `key`.
    pub async fn put_object(&self, bucket: &str, key: &str, id: u64, size: u64) -> OpResult {
        let mut res = OpResult::default();
        let ep = self.endpoints.pick();
        let path = object_path(bucket, key);
        let out = on_conn!(self, ep, res, |conn| -> () {
            let obj = Payload::new(&self.fill, id);
            let body = Body::Object {
                obj,
                offset: 0,
                len: size,
            };
            let md5 = self
                .send(
                    conn,
                    ep,
                    Target {
                        method: "PUT",
                        path: &path,
                        query: "",
                    },
                    body,
                    &mut res.costs,
                )
                .await?;
            self.write_response(conn, &mut res, key, md5).await?;
            Ok(())
        });
        match out {
            Ok(()) => res.bytes = size,
            Err(e) => res.error = Some(e),
        }
        res
    }

    /// GET `key` (object `id` of `size` bytes), verifying the body as it streams.
    pub async fn get_object(&self, bucket: &str, key: &str, id: u64, size: u64) -> OpResult {
        let mut res = OpResult::default();
        let ep = self.endpoints.pick();
        let path = object_path(bucket, key);
        let out = on_conn!(self, ep, res, |conn| -> u64 {
            self.send(
                conn,
                ep,
                Target {
                    method: "GET",
                    path: &path,
                    query: "",
                },
                Body::Empty,
                &mut res.costs,
            )
            .await?;
            let mut hs = [EMPTY_HEADER; 32];
            let resp = conn.response(&mut hs).await?;
            res.head_at = Some(self.rt.now());
            let mut resp = success(resp).await?;
            let etag = find_header_str(resp.head.headers, header::ETAG).and_then(ETag::parse);
            Ok(self
                .read_verified(key, id, size, etag, &mut resp.body, &mut res.costs)
                .await?)
        });
        match out {
            Ok(n) => res.bytes = n,
            Err(e) => res.error = Some(e),
        }
        res
    }

    /// Read a GET body to its end, comparing each chunk with the object's bytes as it
    /// arrives; the bytes received.
    async fn read_verified<T: Stream>(
        &self,
        key: &str,
        id: u64,
        size: u64,
        etag: Option<ETag>,
        body: &mut ResponseBody<'_, T>,
        costs: &mut Costs,
    ) -> Result<u64, OpError> {
        let mut cursor = Payload::new(&self.fill, id).cursor(0);
        // Multipart ETags are digests of part digests: only single-part ones are checked.
        let etag = etag.filter(|e| self.opts.md5 && !e.unquoted().contains('-'));
        // A verified body is the expected bytes, so its MD5 is the expected one; an unverified
        // body is hashed as it arrives and must have that MD5 too.
        let mut md5 = (etag.is_some() && !self.opts.verify).then(Md5Sink::new);
        let mut mismatch = None;
        let mut got = 0u64;
        while let Some(chunk) = body.next_chunk().await? {
            got += chunk.len() as u64;
            if self.opts.verify && mismatch.is_none() {
                let t = CpuMark::now();
                // Past the object's end the comparison means nothing: the length check says it.
                let within = chunk.len().min(
                    usize::try_from(size.saturating_sub(cursor.position())).unwrap_or(usize::MAX),
                );
                if let Err(m) = cursor.verify(&chunk[..within]) {
                    mismatch = Some(m);
                }
                costs.verify_ns += elapsed_ns(t);
                costs.verified_bytes += within as u64;
            }
            if let Some(h) = md5.as_mut() {
                let t = CpuMark::now();
                h.update(chunk);
                costs.hash_ns += elapsed_ns(t);
            }
        }
        if let Some(m) = mismatch {
            return Err(OpError::Verify(VerifyError::Mismatch(MismatchReport {
                key: key.to_string(),
                offset: m.offset,
                expected: m.expected,
                found: m.found,
            })));
        }
        if got != size {
            return Err(OpError::Verify(VerifyError::Length {
                key: key.to_string(),
                expected: size,
                got,
            }));
        }
        if let Some(etag) = etag {
            let t = CpuMark::now();
            let want = ETag::single(&self.digests.for_read(&self.fill, id, size));
            costs.hash_ns += elapsed_ns(t);
            check_etag(key, &want, Some(etag.as_str()))?;
            if let Some(h) = md5 {
                check_etag(key, &want, Some(ETag::single(&h.finalize()).as_str()))?;
            }
        }
        Ok(got)
    }

    /// HEAD `key`, checking its length (and its ETag with `--md5`).
    pub async fn stat_object(&self, bucket: &str, key: &str, id: u64, size: u64) -> OpResult {
        let mut res = OpResult::default();
        let ep = self.endpoints.pick();
        let path = object_path(bucket, key);
        let out = on_conn!(self, ep, res, |conn| -> () {
            self.send(
                conn,
                ep,
                Target {
                    method: "HEAD",
                    path: &path,
                    query: "",
                },
                Body::Empty,
                &mut res.costs,
            )
            .await?;
            let mut hs = [EMPTY_HEADER; 32];
            let resp = conn.response(&mut hs).await?;
            res.head_at = Some(self.rt.now());
            let status = resp.head.status;
            if !(200..300).contains(&status) {
                return Err(OpError::Http { status, code: None }.into());
            }
            let len = find_header_str(resp.head.headers, header::CONTENT_LENGTH)
                .and_then(|v| v.trim().parse::<u64>().ok());
            let etag = find_header_str(resp.head.headers, header::ETAG).and_then(ETag::parse);
            if self.opts.verify && len != Some(size) {
                return Err(OpError::Verify(VerifyError::Length {
                    key: key.to_string(),
                    expected: size,
                    got: len.unwrap_or(0),
                })
                .into());
            }
            if let Some(etag) = etag.filter(|e| self.opts.md5 && !e.unquoted().contains('-')) {
                let t = CpuMark::now();
                let want = ETag::single(&self.digests.for_read(&self.fill, id, size));
                res.costs.hash_ns += elapsed_ns(t);
                check_etag(key, &want, Some(etag.as_str()))?;
            }
            Ok(())
        });
        if let Err(e) = out {
            res.error = Some(e);
        }
        res
    }

    /// DELETE `key`.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> OpResult {
        self.simple("DELETE", &object_path(bucket, key), "").await.0
    }

    /// One page of ListObjectsV2 under `prefix`.
    pub async fn list_page(
        &self,
        bucket: &str,
        prefix: &str,
        token: Option<&str>,
        max_keys: u32,
    ) -> (OpResult, ListPage) {
        let mut res = OpResult::default();
        let ep = self.endpoints.pick();
        let path = format!("/{}", encode_path(bucket));
        let mut query = format!("list-type=2&max-keys={max_keys}&prefix={}", encode(prefix));
        if let Some(t) = token {
            query = format!("continuation-token={}&{query}", encode(t));
        }
        let out = on_conn!(self, ep, res, |conn| -> (u64, ListPage) {
            self.send(
                conn,
                ep,
                Target {
                    method: "GET",
                    path: &path,
                    query: &query,
                },
                Body::Empty,
                &mut res.costs,
            )
            .await?;
            let mut hs = [EMPTY_HEADER; 32];
            let resp = conn.response(&mut hs).await?;
            res.head_at = Some(self.rt.now());
            let mut resp = success(resp).await?;
            let doc = read_all(&mut resp.body, MAX_RESPONSE_BODY).await?;
            let list = ListBucketResult::parse_xml(&doc)
                .map_err(|e| OpError::Verify(VerifyError::Document(e.message.to_string())))?;
            let next = match &list.version {
                ferry_core::s3::xml::ListVersion::V2 {
                    next_continuation_token,
                    ..
                } => next_continuation_token.as_deref().map(str::to_string),
                ferry_core::s3::xml::ListVersion::V1 { next_marker, .. } => {
                    next_marker.as_deref().map(str::to_string)
                }
            };
            let page = ListPage {
                keys: list.contents.iter().map(|e| e.key.to_string()).collect(),
                next: next.filter(|_| list.is_truncated),
            };
            Ok((doc.len() as u64, page))
        });
        match out {
            Ok((n, page)) => {
                res.bytes = n;
                (res, page)
            }
            Err(e) => {
                res.error = Some(e);
                (res, ListPage::default())
            }
        }
    }

    /// A presigned GET URL for `key`, valid for `expires` seconds (for `wrk` and friends).
    pub fn presign_get(&self, bucket: &str, key: &str, expires: u64) -> Result<String, String> {
        let ep = &self.endpoints[0];
        let path = object_path(bucket, key);
        let headers = [Header {
            name: header::HOST,
            value: ep.host.as_bytes(),
        }];
        let parts = RequestParts {
            method: "GET",
            path: &path,
            query: "",
            headers: &headers,
        };
        let query = presign(
            &parts,
            &self.opts.credentials,
            &self.opts.region,
            self.rt.unix_time(),
            expires,
            &mut &self.keys,
        )
        .map_err(|e| e.message.to_string())?;
        Ok(format!("{}{path}?{query}", ep.url))
    }
}

/// `/bucket/key`, percent-encoded for the request line.
pub fn object_path(bucket: &str, key: &str) -> String {
    format!("/{}/{}", encode_path(bucket), encode_path(key))
}

/// `Ok` if `got` is the ETag `want`, else the verification error that names `key`.
pub(crate) fn check_etag(key: &str, want: &ETag, got: Option<&str>) -> Result<(), OpError> {
    let got_etag = got.and_then(ETag::parse);
    if got_etag.as_ref() == Some(want) {
        return Ok(());
    }
    Err(OpError::Verify(VerifyError::ETag {
        key: key.to_string(),
        expected: want.as_str().to_string(),
        got: got.unwrap_or("(none)").to_string(),
    }))
}

/// Read a whole (small) body, up to `max` bytes.
pub(crate) async fn read_all<T: Stream>(
    body: &mut ResponseBody<'_, T>,
    max: usize,
) -> Result<Vec<u8>, OpError> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next_chunk().await? {
        if out.len() + chunk.len() > max {
            return Err(OpError::Verify(VerifyError::Document(format!(
                "response document over {max} bytes"
            ))));
        }
        out.extend_from_slice(chunk);
    }
    Ok(out)
}

/// `resp` if its status is a success, else the error it stands for, with the S3 code of its
/// error document when it has one.
pub(crate) async fn success<'a, 'h, T: Stream>(
    mut resp: Response<'a, 'h, T>,
) -> Result<Response<'a, 'h, T>, OpError> {
    let status = resp.head.status;
    if (200..300).contains(&status) {
        return Ok(resp);
    }
    let code = match read_all(&mut resp.body, MAX_ERROR_BODY).await {
        Ok(doc) => ErrorResponse::parse_xml(&doc)
            .ok()
            .map(|e| e.code.to_string()),
        Err(_) => None,
    };
    Err(OpError::Http { status, code })
}

/// What a request asks for: its method, path and query string (both encoded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The method.
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
    /// The query string, without its `?`.
    pub query: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_paths_are_encoded() {
        assert_eq!(object_path("b", "p/x y-1"), "/b/p/x%20y-1");
    }
}
