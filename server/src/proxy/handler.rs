//! The proxy's dispatch: each operation forwarded to the backend that holds its key, fanned
//! out to every backend, or merged from all of them.

use std::borrow::Cow;
use std::sync::Arc;

use ferry_core::http::find_header;
use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::bucket_config::{
    CORS, ConfigDocument, ConfigKind, ENCRYPTION, LIFECYCLE, OWNERSHIP_CONTROLS,
    PUBLIC_ACCESS_BLOCK,
};
use ferry_core::s3::cluster;
use ferry_core::s3::header;
use ferry_core::s3::listing::{
    ListBucketsQuery, ListUploadsQuery, ListVersionsQuery, ObjectListing,
};
use ferry_core::s3::request::{Endpoint, S3Request, Scope};
use ferry_core::s3::xml::CorsConfiguration;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::{Caller, Cx};
use super::copy::CopyOf;
use super::reload::{Live, Reloader, Requests};
use super::upload::UploadStep;
use super::{buckets, copy, cors, forward, layout, list, tagging, upload};
use crate::front::origin::Origin;
use crate::front::{ALL_BACKENDS, Op, S3Api};

/// The proxy behind the S3 front.
pub struct ProxyApi<R: Runtime> {
    /// The configuration in use: each request takes it once (see `reload`).
    live: Arc<Live<R>>,
    reloader: Arc<Reloader<R>>,
    reloads: Arc<Requests>,
}

impl<R: Runtime> std::fmt::Debug for ProxyApi<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyApi")
            .field("proxy", &self.live.load())
            .finish()
    }
}

impl<R: Runtime> ProxyApi<R> {
    pub(crate) fn new(
        live: Arc<Live<R>>,
        reloader: Arc<Reloader<R>>,
        reloads: Arc<Requests>,
    ) -> Self {
        Self {
            live,
            reloader,
            reloads,
        }
    }
}

impl<R: Runtime> S3Api for ProxyApi<R> {
    const SERVER: &'static str = "proxy";
    // What the router refuses may be served by a backend (see `refusal`).
    const TAKES_REFUSED: bool = true;

    /// Ferry's own headers and parameters are the cluster's: the proxy adds (and seals) those
    /// its nodes need; a client's would be refused by them anyway, and are refused here before
    /// anything is sent or read.
    fn admit(&self, head: &RequestHead<'_, '_>, s3: &S3Request<'_>) -> S3Result<bool> {
        if head.headers.iter().any(|h| cluster::is_internal(h.name))
            || s3.query.iter().any(|(n, _)| cluster::is_internal(n))
            || matches!(s3.endpoint, Endpoint::BucketFence { .. })
        {
            return Err(S3Error::with_message(
                S3ErrorCode::AccessDenied,
                "x-ferry-* headers and parameters are the cluster's own: clients may not send \
                 them",
            ));
        }
        Ok(false)
    }

    async fn dispatch<S: Stream>(&self, op: Op<'_, '_, '_, S>) -> S3Result<()> {
        let Op { req, s3, body, res } = op;
        let p = self.live.load();
        let cx = Cx {
            p: &p,
            front: req,
            head: req.head,
            caller: Caller {
                key: req.verified.access_key_id.clone(),
                origin: Origin {
                    ip: res.peer().map(|a| a.ip()),
                    secure: res.is_secure(),
                    tls_version: res.tls_version(),
                    // The client's own signature time (SigV4), for the nodes' s3:signatureAge
                    // when the proxy signs again; a SigV2 signature's age is 0 (AWS), so now.
                    signed_at: match &req.verified.signing {
                        Some(s) => Some(s.time.to_unix()),
                        None if req.verified.kind.is_sigv2() => Some(p.shared.rt.unix_time()),
                        None => None,
                    },
                },
            },
            virtual_bucket: s3.virtual_hosted.then(|| s3.bucket_str()),
            query: None,
        };
        dispatch(&cx, s3, body, res).await
    }

    /// From the proxy's short-lived cache of each bucket's rules (see `proxy::cors`).
    async fn bucket_cors(&self, bucket: &str) -> S3Result<Option<Arc<CorsConfiguration>>> {
        let p = self.live.load();
        p.settle().await;
        cors::bucket_cors(&p, bucket).await
    }

    /// `idx` is the backend's slot (`Cx::set_backend`), valid across reloads.
    fn backend_name(&self, idx: usize) -> Cow<'_, str> {
        let p = self.live.load();
        match p.shared.name_of(idx) {
            Some(name) => Cow::Owned(name.to_string()),
            None => Cow::Borrowed("-"),
        }
    }

    /// Ready while a backend is up; a line per backend.
    fn readiness(&self) -> (bool, String) {
        let p = self.live.load();
        let mut body = String::new();
        for b in &p.backends {
            body.push_str(&format!("{} {} {}\n", b.id, b.addr, b.state_name()));
        }
        (p.backends.iter().any(|b| b.is_up()), body)
    }

    fn render_metrics(&self, out: &mut String, prefix: &str) {
        super::metrics::render(&self.live.load(), &self.reloader.stats, out, prefix);
    }

    /// Queued with SIGHUP's reloads: one at a time.
    async fn reload(&self) -> Option<Result<String, String>> {
        Some(self.reloads.request().done().await)
    }
}

/// Where an operation goes: the proxy's routing table.
#[derive(Debug, Clone, Copy)]
enum Route<'q, 'a> {
    /// To the backend that holds the key.
    Key,
    /// A multipart upload's step: to the backend its upload id names (`upload::dispatch`).
    Upload(UploadStep<'q>),
    /// To any healthy backend: every backend knows every bucket.
    AnyBackend,
    /// A copy: forwarded when source and destination share a backend, done by the proxy when
    /// not.
    Copy(CopyOf<'q, 'a>),
    /// To every backend as the proxy makes it (its own requests, its own answer: merged
    /// listings, a checked document sent normalised, DeleteObjects split by key).
    FanOut(FanOut<'q, 'a>),
    /// To every backend as the client sent it (headers, query, the body read and verified
    /// first), all or nothing (`buckets::set_everywhere`): bucket settings the proxy passes on
    /// unchanged, and the configurations it does not interpret.
    Everywhere,
    /// POST Object: to the backend that holds the key the form names (`forward::post_form`).
    Form,
}

/// The operations the proxy makes itself on every backend ([`Route::FanOut`]).
#[derive(Debug, Clone, Copy)]
enum FanOut<'q, 'a> {
    ListBuckets(&'q ListBucketsQuery<'a>),
    CreateBucket,
    DeleteBucket,
    /// Ferry's own: refused (see `buckets::delete`).
    BucketFence,
    ListObjects(ObjectListing<'q, 'a>),
    ListUploads(&'q ListUploadsQuery<'a>),
    ListVersions(&'q ListVersionsQuery<'a>),
    DeleteObjects(Option<[u8; 16]>),
    /// A configuration document kept whole: put (with its `Content-MD5`) or deleted.
    PutConfig(&'static ConfigDocument, Option<[u8; 16]>),
    DeleteConfig(ConfigKind),
    PutBucketTagging,
}

fn route<'q, 'a>(endpoint: &'q Endpoint<'a>, method: &str) -> Route<'q, 'a> {
    let fan_out = |f| Route::FanOut(f);
    match endpoint {
        Endpoint::ListBuckets(q) => fan_out(FanOut::ListBuckets(q)),
        Endpoint::CreateBucket => fan_out(FanOut::CreateBucket),
        Endpoint::DeleteBucket => fan_out(FanOut::DeleteBucket),
        Endpoint::BucketFence { .. } => fan_out(FanOut::BucketFence),
        Endpoint::ListObjects(q) => fan_out(FanOut::ListObjects(ObjectListing::V1(q))),
        Endpoint::ListObjectsV2(q) => fan_out(FanOut::ListObjects(ObjectListing::V2(q))),
        Endpoint::ListMultipartUploads(q) => fan_out(FanOut::ListUploads(q)),
        Endpoint::ListObjectVersions(q) => fan_out(FanOut::ListVersions(q)),
        Endpoint::DeleteObjects { content_md5 } => fan_out(FanOut::DeleteObjects(*content_md5)),
        Endpoint::PutBucketCors { content_md5 } => fan_out(FanOut::PutConfig(&CORS, *content_md5)),
        Endpoint::DeleteBucketCors => fan_out(FanOut::DeleteConfig(ConfigKind::Cors)),
        Endpoint::PutBucketTagging => fan_out(FanOut::PutBucketTagging),
        Endpoint::DeleteBucketTagging => fan_out(FanOut::DeleteConfig(ConfigKind::Tagging)),
        Endpoint::PutBucketLifecycleConfiguration { content_md5 } => {
            fan_out(FanOut::PutConfig(&LIFECYCLE, *content_md5))
        }
        Endpoint::DeleteBucketLifecycle => fan_out(FanOut::DeleteConfig(ConfigKind::Lifecycle)),
        Endpoint::PutBucketEncryption { content_md5 } => {
            fan_out(FanOut::PutConfig(&ENCRYPTION, *content_md5))
        }
        Endpoint::DeleteBucketEncryption => fan_out(FanOut::DeleteConfig(ConfigKind::Encryption)),
        Endpoint::PutPublicAccessBlock { content_md5 } => {
            fan_out(FanOut::PutConfig(&PUBLIC_ACCESS_BLOCK, *content_md5))
        }
        Endpoint::DeletePublicAccessBlock => {
            fan_out(FanOut::DeleteConfig(ConfigKind::PublicAccessBlock))
        }
        Endpoint::PutBucketOwnershipControls { content_md5 } => {
            fan_out(FanOut::PutConfig(&OWNERSHIP_CONTROLS, *content_md5))
        }
        Endpoint::DeleteBucketOwnershipControls => {
            fan_out(FanOut::DeleteConfig(ConfigKind::OwnershipControls))
        }
        Endpoint::PutBucketPolicy
        | Endpoint::DeleteBucketPolicy
        | Endpoint::PutBucketAcl
        | Endpoint::PutBucketVersioning { .. }
        | Endpoint::PutObjectLockConfiguration => Route::Everywhere,
        Endpoint::PostObject => Route::Form,
        Endpoint::HeadBucket
        | Endpoint::GetBucketLocation
        | Endpoint::GetBucketVersioning
        | Endpoint::GetBucketPolicy
        | Endpoint::GetBucketPolicyStatus
        | Endpoint::GetBucketAcl
        | Endpoint::GetBucketCors
        | Endpoint::GetBucketTagging
        | Endpoint::GetObjectLockConfiguration
        | Endpoint::GetBucketLifecycleConfiguration
        | Endpoint::GetBucketEncryption
        | Endpoint::GetPublicAccessBlock
        | Endpoint::GetBucketOwnershipControls => Route::AnyBackend,
        Endpoint::CopyObject {
            source,
            metadata_directive,
            ..
        } => Route::Copy(CopyOf::Object {
            source,
            metadata_directive: *metadata_directive,
        }),
        Endpoint::UploadPartCopy(q) => Route::Copy(CopyOf::Part(q)),
        // Upload ids carry their backend.
        Endpoint::CreateMultipartUpload => Route::Upload(UploadStep::Create),
        Endpoint::UploadPart(q) => Route::Upload(UploadStep::Part(&q.upload_id)),
        Endpoint::ListParts(q) => Route::Upload(UploadStep::ListParts(&q.upload_id)),
        Endpoint::CompleteMultipartUpload { upload_id } => {
            Route::Upload(UploadStep::Complete(upload_id))
        }
        Endpoint::AbortMultipartUpload { upload_id } => Route::Upload(UploadStep::Abort(upload_id)),
        Endpoint::GetObject { .. }
        | Endpoint::GetObjectAttributes { .. }
        | Endpoint::HeadObject { .. }
        | Endpoint::PutObject { .. }
        | Endpoint::DeleteObject { .. }
        | Endpoint::GetObjectTagging { .. }
        | Endpoint::PutObjectTagging { .. }
        | Endpoint::DeleteObjectTagging { .. }
        | Endpoint::GetObjectAcl { .. }
        | Endpoint::PutObjectAcl { .. }
        | Endpoint::GetObjectRetention { .. }
        | Endpoint::PutObjectRetention { .. }
        | Endpoint::GetObjectLegalHold { .. }
        | Endpoint::PutObjectLegalHold { .. } => Route::Key,
        // What the proxy does not interpret goes where what it touches lives.
        Endpoint::Unknown {
            scope: Scope::Object,
            ..
        } => Route::Key,
        Endpoint::Unknown { .. } if matches!(method, "GET" | "HEAD") => Route::AnyBackend,
        Endpoint::Unknown { .. } => Route::Everywhere,
    }
}

/// Subresources the proxy refuses to forward, though a backend may serve them: it would change
/// their meaning.
fn refused_subresource(subresource: &str) -> Option<S3Error> {
    let why = match subresource {
        "renameObject" => {
            "RenameObject is not implemented through the proxy: the new key may belong to \
             another backend than the one holding the object."
        }
        "session" => {
            "CreateSession is not implemented through the proxy: a backend's session \
             credentials would not be the proxy's."
        }
        _ => return None,
    };
    Some(S3Error::with_message(S3ErrorCode::NotImplemented, why))
}

/// What the proxy answers itself of a request `route` would send on: the router's refusal
/// ([`S3Request::refused`]) where the proxy makes the backends' requests itself (a fan-out; a
/// copy between backends answers it in `copy::copy_across`), since it would drop or change
/// what was refused; and what the proxy cannot pass on faithfully (see the README's table,
/// "What the proxy interprets and what it forwards"). A request forwarded whole to its
/// backends (by key, to any backend, to every backend as sent) leaves the refusal to them.
fn refusal<R: Runtime>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    route: &Route<'_, '_>,
) -> Option<S3Error> {
    if let Endpoint::Unknown { subresource, .. } = &s3.endpoint
        && let Some(e) = refused_subresource(subresource)
    {
        return Some(e);
    }
    let refused = s3.refused.as_ref()?;
    match route {
        Route::FanOut(_) => Some(refused.clone()),
        // An append would go to the key's current owner, which may not hold the object.
        Route::Key
            if layout::draining(cx.p)
                && matches!(s3.endpoint, Endpoint::PutObject { .. })
                && find_header(cx.head.headers, header::X_AMZ_WRITE_OFFSET_BYTES).is_some() =>
        {
            Some(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "Appending to objects is not implemented through a proxy draining a layout.",
            ))
        }
        Route::Key
        | Route::Upload(_)
        | Route::AnyBackend
        | Route::Copy(_)
        | Route::Everywhere
        | Route::Form => None,
    }
}

/// Run the operation `s3` names: forwarded to the key's backend, fanned out, or merged.
pub(crate) async fn dispatch<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let (bucket, key) = (s3.bucket_str(), s3.key_str());
    let route = route(&s3.endpoint, cx.head.method);
    if let Some(e) = refusal(cx, s3, &route) {
        return Err(e);
    }
    // Requests for one backend wait for it as they connect.
    if !matches!(
        route,
        Route::Key | Route::Upload(_) | Route::Copy(_) | Route::Form
    ) {
        cx.p.settle().await;
    }
    match route {
        Route::Upload(step) => upload::dispatch(cx, s3, step, body, res).await,
        Route::Copy(CopyOf::Part(q)) => upload::part_copy(cx, s3, q, body, res).await,
        // Earlier layouts drained: the key may live on an earlier owner.
        Route::Key if layout::draining(cx.p) => layout::by_key(cx, s3, body, res).await,
        Route::Key => forward::forward(cx, cx.p.pick(bucket, key), body, res).await,
        Route::AnyBackend => any_backend(cx, bucket, body, res).await,
        Route::Copy(copy) if layout::draining(cx.p) => layout::copy(cx, s3, copy, body, res).await,
        Route::Copy(copy) => {
            let source = copy.source();
            let dst = cx.p.pick(bucket, key);
            let src = cx.p.pick(&source.bucket, &source.key);
            if src == dst {
                forward::forward(cx, dst, body, res).await
            } else {
                cx.set_backend(dst);
                copy::copy_across(cx, res, s3, copy, src, dst).await
            }
        }
        Route::Form => forward::post_form(cx, bucket, body, res).await,
        Route::Everywhere => {
            cx.set_backend(ALL_BACKENDS);
            let max = match s3.endpoint {
                Endpoint::Unknown { .. } => buckets::MAX_FORWARDED_SETTING_BODY,
                _ => buckets::MAX_SETTING_BODY,
            };
            buckets::set_everywhere(cx, body, res, max).await
        }
        Route::FanOut(op) => {
            cx.set_backend(ALL_BACKENDS);
            fan_out(cx, s3, op, body, res).await
        }
    }
}

/// An operation the proxy makes on every backend itself.
async fn fan_out<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    op: FanOut<'_, '_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let bucket = s3.bucket_str();
    match op {
        FanOut::ListBuckets(q) => buckets::list_buckets(cx, q, res).await,
        // A bucket made or gone through this proxy has no rules it knew of.
        FanOut::CreateBucket => {
            let done = buckets::create(cx, s3, body, res).await;
            cx.p.shared.cors.forget(bucket);
            done
        }
        FanOut::DeleteBucket => {
            let done = buckets::delete(cx, s3, res).await;
            cx.p.shared.cors.forget(bucket);
            done
        }
        // Between the proxy and its nodes only (see `buckets::delete`).
        FanOut::BucketFence => Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "Bucket fences are set by the proxy itself, not through it.",
        )),
        FanOut::ListObjects(listing) => list::list_objects(cx, bucket, listing, res).await,
        FanOut::ListUploads(q) => list::list_uploads(cx, bucket, q, res).await,
        FanOut::ListVersions(q) => list::list_versions(cx, bucket, q, res).await,
        FanOut::DeleteObjects(content_md5) => {
            buckets::delete_objects(cx, s3, content_md5, body, res).await
        }
        // This proxy forgets the rules it knew (`cors`).
        FanOut::PutConfig(doc, content_md5) => {
            let done = buckets::put_everywhere(cx, s3, content_md5, body, res, doc).await;
            if doc.kind == ConfigKind::Cors {
                cx.p.shared.cors.forget(bucket);
            }
            done
        }
        FanOut::DeleteConfig(kind) => {
            let done = buckets::delete_everywhere(cx, s3, res, kind).await;
            if kind == ConfigKind::Cors {
                cx.p.shared.cors.forget(bucket);
            }
            done
        }
        FanOut::PutBucketTagging => tagging::put_bucket(cx, s3, body, res).await,
    }
}

/// A bucket-level read any backend answers: on to the next healthy one if one fails to (the
/// last one's error when none is left).
async fn any_backend<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    bucket: &str,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let mut tried = Vec::new();
    let mut idx = cx.p.any_healthy(bucket)?;
    loop {
        match forward::forward(cx, idx, body, res).await {
            Err(e) if e.is_unavailable() && !res.is_started() => {
                tried.push(idx);
                idx = cx.p.any_healthy_but(bucket, &tried).map_err(|_| e)?;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::s3::address::AddressingConfig;

    /// Where the requests the router does not serve go, and that the known ones keep theirs.
    #[test]
    fn unknown_requests_go_by_scope() {
        let cases = [
            ("GET", "/bkt/k?restore", "Key"),
            ("POST", "/bkt/k?restore", "Key"),
            ("POST", "/bkt/k?select&select-type=2", "Key"),
            ("GET", "/bkt?website", "AnyBackend"),
            ("HEAD", "/bkt?website", "AnyBackend"),
            ("PUT", "/bkt?website", "Everywhere"),
            ("DELETE", "/bkt?replication", "Everywhere"),
            (
                "DELETE",
                "/bkt?publicAccessBlock",
                "FanOut(DeleteConfig(PublicAccessBlock",
            ),
            ("PUT", "/bkt?ownershipControls", "FanOut(PutConfig"),
            ("GET", "/bkt?ownershipControls", "AnyBackend"),
            ("POST", "/bkt?metadataTable", "Everywhere"),
            ("GET", "/?foo", "AnyBackend"),
            ("PUT", "/?foo", "Everywhere"),
            ("PUT", "/bkt?policy", "Everywhere"),
            ("PUT", "/bkt?cors", "FanOut(PutConfig"),
            ("GET", "/bkt?list-type=2", "FanOut(ListObjects(V2"),
            ("PUT", "/bkt/k", "Key"),
            ("DELETE", "/bkt/k?uploadId=u", "Upload(Abort"),
        ];
        for (method, target, want) in cases {
            let s3 = Endpoint::route(method, target, &[], &AddressingConfig::path_style())
                .unwrap_or_else(|e| panic!("{method} {target}: {e}"));
            let got = format!("{:?}", route(&s3.endpoint, method));
            assert!(got.starts_with(want), "{method} {target}: {got}");
        }
        assert!(refused_subresource("renameObject").is_some());
        assert!(refused_subresource("session").is_some());
        assert!(refused_subresource("website").is_none());
    }
}
