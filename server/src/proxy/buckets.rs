//! Operations that span backends: buckets exist on every backend, so creating and deleting
//! them fans out (DeleteBucket all or nothing, under fences), ListBuckets is the union, and
//! DeleteObjects is split by placement.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks, VerifiedBody};
use ferry_core::s3::bucket_config::{ConfigDocument, ConfigKind};
use ferry_core::s3::header;
use ferry_core::s3::listing::ListBucketsQuery;
use ferry_core::s3::request::S3Request;
use ferry_core::s3::xml::{
    BucketEntry, CreateBucketConfiguration, Delete, DeleteError, DeleteResult, DeletedEntry,
    ListAllMyBucketsResult, ListBucketResult, ListMultipartUploadsResult, MAX_CREATE_BUCKET_BODY,
    MAX_DELETE_BODY, ObjectIdentifier, Owner,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::client::Setting;
use super::config::BackendKind;
use super::context::Cx;
use super::forward::{Call, Reply, relay_reply};
use super::list::{bucket_token, read_bucket_token};
use super::reissue::Leave;
use crate::front::Headers;

/// The headers of the client's request a bucket is made or its ACL set with (`x-amz-acl`,
/// `x-amz-grant-*`, `x-amz-bucket-object-lock-enabled`), on `call`.
fn push_create_headers<R: Runtime>(cx: &Cx<'_, R>, call: &mut Call) {
    const NAMES: [&str; 8] = [
        // Not ACLs, but what the bucket is made with on every backend as well.
        header::X_AMZ_BUCKET_OBJECT_LOCK_ENABLED,
        header::X_AMZ_OBJECT_OWNERSHIP,
        header::X_AMZ_ACL,
        header::X_AMZ_GRANT_READ,
        header::X_AMZ_GRANT_WRITE,
        header::X_AMZ_GRANT_READ_ACP,
        header::X_AMZ_GRANT_WRITE_ACP,
        header::X_AMZ_GRANT_FULL_CONTROL,
    ];
    for h in cx.head.headers {
        if let Some(name) = NAMES.iter().find(|n| h.name.eq_ignore_ascii_case(n))
            && let Ok(v) = std::str::from_utf8(h.value)
        {
            call.header(*name, v.to_owned());
        }
    }
}

/// Every backend must be up for an operation that changes all of them.
pub(crate) fn require_all_up<R: Runtime>(cx: &Cx<'_, R>) -> S3Result<()> {
    match cx.p.backends.iter().find(|b| !b.is_up()) {
        Some(b) => Err(b.unavailable()),
        None => Ok(()),
    }
}

/// Send `call` to the backends `on` in parallel; the replies in that order (the first error,
/// if any).
async fn on_backends<R: Runtime>(
    cx: &Cx<'_, R>,
    on: &[usize],
    call: &Call,
) -> S3Result<Vec<Reply>> {
    let handles: Vec<_> = on
        .iter()
        .map(|&i| cx.client().spawn(i, call.clone()))
        .collect();
    join_all(handles).await
}

/// Send `call` to every backend in parallel; each backend's outcome, in backend order.
async fn each_backend<R: Runtime>(cx: &Cx<'_, R>, call: &Call) -> Vec<S3Result<Reply>> {
    let handles: Vec<_> = (0..cx.p.backends.len())
        .map(|i| cx.client().spawn(i, call.clone()))
        .collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await);
    }
    out
}

/// The results of spawned calls, in order.
async fn join_all(handles: Vec<impl Future<Output = S3Result<Reply>>>) -> S3Result<Vec<Reply>> {
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await?);
    }
    Ok(out)
}

/// CreateBucket on every backend. The client's location constraint must name the proxy's
/// region; each backend is asked for its own. Created anywhere (a retry completes a partial
/// create): 200; already owned everywhere: `BucketAlreadyOwnedByYou` (`200` in us-east-1, as
/// AWS answers there); any other error wins.
pub(crate) async fn create<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let bucket = s3.bucket_str();
    let (xml, _) = read_small(cx, body, MAX_CREATE_BUCKET_BODY).await?;
    CreateBucketConfiguration::check_region(&xml, &cx.p.shared.region)?;
    require_all_up(cx)?;
    let handles: Vec<_> =
        cx.p.backends
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut call = Call::create_bucket(bucket, &b.region);
                push_create_headers(cx, &mut call);
                cx.client().spawn(i, call)
            })
            .collect();
    let replies = join_all(handles).await?;
    if let Some(bad) = replies
        .iter()
        .find(|r| !r.ok() && r.error_code().as_deref() != Some("BucketAlreadyOwnedByYou"))
    {
        if bad.error_code().as_deref() == Some("BucketAlreadyExists") {
            // Another user has the name on some backend (or created it at the same moment
            // through another proxy): what this call created elsewhere is empty; remove it, so
            // that no bucket is owned by different users on different backends.
            let created: Vec<usize> = (0..replies.len()).filter(|&i| replies[i].ok()).collect();
            undo_create(cx, bucket, &created).await;
        }
        return Err(bad.to_error());
    }
    // Already owned everywhere: `409` but in us-east-1, where AWS answers `200` (as the nodes
    // of a proxy there do themselves).
    if let Some(owned) = replies
        .iter()
        .find(|r| !r.ok())
        .filter(|_| !replies.iter().any(Reply::ok))
        .filter(|_| cx.p.shared.region != ferry_core::s3::xml::LEGACY_CREATE_REGION)
    {
        return Err(owned.to_error());
    }
    let location = format!("/{bucket}");
    cx.front
        .send(res, 200, Headers::new().with("Location", location), &[])
        .await
}

/// Delete the empty `bucket` a CreateBucket just made on the backends `on` (best effort: a
/// backend that does not answer keeps it, as after any partial create, and a retry by its
/// owner completes it).
async fn undo_create<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, on: &[usize]) {
    let handles: Vec<_> = on
        .iter()
        .map(|&i| (i, cx.client().spawn(i, Call::delete_bucket(bucket))))
        .collect();
    for (i, h) in handles {
        if !h.await.is_ok_and(|r| r.ok()) {
            let backend = cx.backend(i).map_or("?", |b| b.id.as_str());
            tracing::warn!(
                backend,
                bucket,
                "CreateBucket lost to another owner and could not remove what it created here"
            );
        }
    }
}

/// The largest bucket setting document the proxy relays among those it knows (a policy is at
/// most 20 KB, an ACL document smaller; each backend applies its own limit).
pub(crate) const MAX_SETTING_BODY: usize = 64 * 1024;

/// The largest body of a bucket (or service) configuration write the proxy forwards without
/// understanding it (`Endpoint::Unknown`): replication, inventory or notification documents
/// may be larger than the settings Ferry keeps.
pub(crate) const MAX_FORWARDED_SETTING_BODY: usize = 1024 * 1024;

/// A bucket-level setting the proxy passes on unchanged (PutBucketPolicy, PutBucketAcl,
/// PutBucketVersioning, PutObjectLockConfiguration, DeleteBucketPolicy, and the
/// configurations it does not interpret at all) on every backend, all or nothing
/// ([`relay_everywhere`]): the client's request with its headers and query, its body (at most
/// `max` bytes) read and verified first. Every backend must be up; each checks and stores it
/// alike.
pub(crate) async fn set_everywhere<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    max: usize,
) -> S3Result<()> {
    let (doc, _) = read_small(cx, body, max).await?;
    require_all_up(cx)?;
    let call = Call::of_request(cx, doc)?;
    relay_everywhere(cx, &call, res).await
}

/// Put `doc` (a bucket configuration document, CORS, lifecycle or default encryption: a row of
/// core's table) on every backend: the document is checked here first (a bad one changes
/// nothing anywhere), then sent as Ferry writes it, all or nothing ([`relay_everywhere`]).
/// Every backend must be up.
pub(crate) async fn put_everywhere<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    md5_header: Option<[u8; 16]>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    doc: &ConfigDocument,
) -> S3Result<()> {
    let limit = BodyLimit::document(doc.max_body as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, done) = crate::front::body::read_small(body, verifier).await?;
    crate::front::body::require_integrity(md5_header.is_some(), &done, cx.head.headers)?;
    let stored = (doc.normalise)(&xml)?;
    require_all_up(cx)?;
    let mut call = Call::put_setting(s3.bucket_str(), doc.subresource(), &stored, None);
    call.carry(cx, Leave::Nothing);
    relay_everywhere(cx, &call, res).await
}

/// Delete the bucket's configuration `kind` on every backend, all or nothing: 204.
pub(crate) async fn delete_everywhere<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    res: &mut ResponseWriter<'_, S>,
    kind: ConfigKind,
) -> S3Result<()> {
    require_all_up(cx)?;
    let mut call = Call::delete_setting(s3.bucket_str(), kind.subresource());
    call.carry(cx, Leave::Nothing);
    relay_everywhere(cx, &call, res).await
}

/// The query that reads what a write of `query` sets: the same subresource and parameters
/// (`id=` of an analytics or inventory configuration, say), without the SDKs' `x-id`, which
/// names the write.
fn read_query(query: &str) -> String {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| {
            let name = p.split_once('=').map_or(*p, |(n, _)| n);
            !p.is_empty() && name != "x-id"
        })
        .collect();
    kept.join("&")
}

/// What every backend has of the setting `call` writes: a GET of the same subresource, as the
/// caller.
async fn read_before<R: Runtime>(cx: &Cx<'_, R>, call: &Call) -> Vec<Setting> {
    let get = Call::get(&call.path, &read_query(&call.query));
    each_backend(cx, &get)
        .await
        .into_iter()
        .map(Setting::of)
        .collect()
}

/// Put back what the backends `took` had before `call` (see [`relay_everywhere`]), in
/// parallel; what cannot be put back is logged at `warn`.
async fn undo<R: Runtime>(cx: &Cx<'_, R>, call: &Call, before: &[Setting], took: &[usize]) {
    let query = read_query(&call.query);
    let handles: Vec<_> = took
        .iter()
        .map(|&i| {
            let back = match before.get(i) {
                Some(Setting::Doc(doc, content_type)) => {
                    Some(Call::put(&call.path, &query, doc, content_type.as_deref()))
                }
                Some(Setting::Absent) if call.method != "DELETE" => {
                    Some(Call::delete(&call.path, &query))
                }
                Some(Setting::Absent) => None,
                Some(Setting::Unknown) | None => {
                    warn_not_undone(cx, i, call, "what it had could not be read");
                    None
                }
            };
            (i, back.map(|c| cx.client().spawn(i, c)))
        })
        .collect();
    for (i, h) in handles {
        let Some(h) = h else { continue };
        match h.await {
            Ok(r) if r.ok() => {
                tracing::info!(backend = cx.backend(i).map_or("?", |b| b.id.as_str()),
                    path = %call.path, query = %call.query,
                    "a bucket setting that failed elsewhere was undone here");
            }
            Ok(r) => warn_not_undone(cx, i, call, &r.to_error().to_string()),
            Err(e) => warn_not_undone(cx, i, call, &e.to_string()),
        }
    }
}

fn warn_not_undone<R: Runtime>(cx: &Cx<'_, R>, i: usize, call: &Call, why: &str) {
    let backend = cx.backend(i).map_or("?", |b| b.id.as_str());
    tracing::warn!(
        backend, path = %call.path, query = %call.query, method = call.method, why,
        "a bucket setting failed on another backend and could not be undone here: \
         the backends differ until it is written again"
    );
}

/// Send a bucket setting's `call` to every backend, all or nothing (as DeleteBucket is): for a
/// PUT or DELETE, what each backend has is read first (a GET of the same subresource); if any
/// backend refuses or fails, the backends that took the write get back what they had (a PUT
/// of the document read, or a DELETE where there was none), and the first refusal is the
/// answer, as the backend gave it (its error document and request id). Else the first
/// backend's answer. A POST, or a setting that could not be read, cannot be undone: that is
/// logged.
pub(crate) async fn relay_everywhere<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    call: &Call,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let before = match call.method {
        "PUT" | "DELETE" => read_before(cx, call).await,
        _ => Vec::new(),
    };
    let replies = each_backend(cx, call).await;
    let took: Vec<usize> = (0..replies.len())
        .filter(|&i| {
            replies
                .get(i)
                .is_some_and(|r| r.as_ref().is_ok_and(Reply::ok))
        })
        .collect();
    match replies.iter().find(|r| !r.as_ref().is_ok_and(Reply::ok)) {
        None => {
            let first = replies.first().and_then(|r| r.as_ref().ok());
            let status = first.map_or(204, |r| r.status);
            let body = first.map_or(&[][..], |r| &r.body);
            let mut headers = Headers::new();
            if let Some(ct) = first
                .and_then(|r| r.header(header::CONTENT_TYPE))
                .filter(|_| !body.is_empty())
            {
                headers.push("Content-Type", ct.to_owned());
            }
            cx.front.send(res, status, headers, body).await
        }
        Some(failed) => {
            undo(cx, call, &before, &took).await;
            match failed {
                Ok(r) if r.status != 503 => relay_reply(res, r).await,
                Ok(r) => Err(r.to_error()),
                Err(e) => Err(e.clone()),
            }
        }
    }
}

/// How long a DeleteBucket's fences hold on the nodes: a proxy that dies mid-delete leaves the
/// bucket writable again after this at most.
const FENCE_LEASE: Duration = Duration::from_secs(30);

/// DeleteBucket, all or nothing across the backends: the bucket ends deleted on every backend
/// or on none, whatever PUTs race it.
///
/// 1. Fence the bucket on every Ferry node (`Endpoint::BucketFence`, under a fresh token,
///    sealed as the cluster's and signed as the client, whom the node must find allowed to
///    delete the bucket — its owner, or a user its policy names): from then on no write lands
///    there (409 `OperationAborted`); a node fenced by another DeleteBucket refuses, and this
///    one gives up. Each says whether the bucket is empty there.
/// 2. Check that it is empty (objects, versions and uploads) on every backend: the fences'
///    answers, and listings as the client of the backends that were not fenced.
/// 3. Delete it on every backend, each node only while its fence still holds.
/// 4. If anything failed: re-create the bucket where it was deleted, and lift the fences.
///
/// Backends of `kind=s3` cannot be fenced: a PUT reaching one between steps 2 and 3 makes its
/// delete fail, and step 4 puts the bucket back on the others.
pub(crate) async fn delete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let bucket = s3.bucket_str();
    require_all_up(cx)?;
    let fences = Fences::set(cx, bucket).await?;
    match delete_fenced(cx, bucket, &fences).await {
        Ok(()) => cx.front.send(res, 204, Headers::new(), &[]).await,
        Err(e) => {
            fences.lift(cx).await;
            Err(e)
        }
    }
}

/// The fences one DeleteBucket holds.
struct Fences {
    bucket: String,
    token: String,
    /// The backends fenced.
    held: Vec<usize>,
    /// Whether a fenced backend said the bucket held something there.
    not_empty: bool,
    /// The fenced backends that did not say whether it is empty (an older node).
    unknown: Vec<usize>,
    /// When they were set.
    since: Instant,
}

impl Fences {
    /// Fence `bucket` on every Ferry node. A node without the bucket needs no fence; a node
    /// that does not know fences (an older Ferry) goes unfenced, as a `kind=s3` backend does;
    /// any other refusal (another DeleteBucket's fence) lifts those set and is the answer.
    async fn set<R: Runtime>(cx: &Cx<'_, R>, bucket: &str) -> S3Result<Self> {
        let token = format!("{:016x}{:016x}", random()?, random()?);
        let mut fences = Self {
            bucket: bucket.to_owned(),
            token,
            held: Vec::new(),
            not_empty: false,
            unknown: Vec::new(),
            since: Instant::now(),
        };
        let handles: Vec<_> = (0..cx.p.backends.len())
            .filter(|&i| cx.backend(i).is_ok_and(|b| b.kind == BackendKind::Ferry))
            .map(|i| {
                let fence = Call::fence(bucket, &fences.token, FENCE_LEASE);
                (i, cx.client().spawn(i, fence))
            })
            .collect();
        let mut refused = None;
        for (i, h) in handles {
            match h.await {
                Ok(r) if r.ok() => {
                    fences.held.push(i);
                    match r.header(header::X_FERRY_BUCKET_EMPTY) {
                        Some("true") => {}
                        Some(_) => fences.not_empty = true,
                        None => fences.unknown.push(i),
                    }
                }
                Ok(r)
                    if matches!(
                        r.error_code().as_deref(),
                        Some("NoSuchBucket" | "NotImplemented")
                    ) => {}
                Ok(r) => {
                    refused.get_or_insert(r.to_error());
                }
                Err(e) => {
                    refused.get_or_insert(e);
                }
            }
        }
        match refused {
            None => Ok(fences),
            Some(e) => {
                fences.lift(cx).await;
                Err(e)
            }
        }
    }

    /// Lift the fences still held (a node whose bucket went has none left). A fence that cannot
    /// be lifted lapses with its lease.
    async fn lift<R: Runtime>(&self, cx: &Cx<'_, R>) {
        let handles: Vec<_> = self
            .held
            .iter()
            .map(|&i| {
                let lift = Call::fence(&self.bucket, &self.token, Duration::ZERO);
                (i, cx.client().spawn(i, lift))
            })
            .collect();
        for (i, h) in handles {
            let lifted = h.await;
            if !lifted.as_ref().is_ok_and(Reply::ok) {
                let backend = cx.backend(i).map_or("?", |b| b.id.as_str());
                tracing::warn!(
                    backend, bucket = %self.bucket,
                    "could not lift a DeleteBucket's fence; it lapses in {FENCE_LEASE:?}"
                );
            }
        }
    }
}

/// 64 random bits (fence tokens).
fn random() -> S3Result<u64> {
    getrandom::u64().map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))
}

/// Steps 2 and 3 of [`delete`], under `fences`; on a failed delete, the bucket is re-created
/// where it may have gone.
async fn delete_fenced<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, fences: &Fences) -> S3Result<()> {
    if fences.not_empty {
        return Err(S3Error::new(S3ErrorCode::BucketNotEmpty));
    }
    // The backends whose fence did not say (no fence: `kind=s3`, an older node) are asked as
    // the client: their first object and upload (a version left there makes that backend's
    // own delete fail, and step 4 puts the bucket back on the others).
    let unfenced: Vec<usize> = (0..cx.p.backends.len())
        .filter(|i| !fences.held.contains(i) || fences.unknown.contains(i))
        .collect();
    let first_object = Call::list_objects(bucket, 1, None);
    let first_upload = Call::list_uploads(bucket, 1, None, None);
    let objects = on_backends(cx, &unfenced, &first_object).await?;
    let uploads = on_backends(cx, &unfenced, &first_upload).await?;
    let mut found = !fences.held.is_empty();
    for r in objects.iter().chain(&uploads) {
        if r.ok() {
            found = true;
        } else if r.error_code().as_deref() != Some("NoSuchBucket") {
            return Err(r.to_error());
        }
    }
    if !found {
        return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
    }
    for r in &objects {
        if r.ok() && !ListBucketResult::parse_xml(&r.body)?.contents.is_empty() {
            return Err(S3Error::new(S3ErrorCode::BucketNotEmpty));
        }
    }
    for r in &uploads {
        if r.ok()
            && !ListMultipartUploadsResult::parse_xml(&r.body)?
                .uploads
                .is_empty()
        {
            return Err(S3Error::new(S3ErrorCode::BucketNotEmpty));
        }
    }
    // The nodes delete only while the fence holds; leave it margin.
    if fences.since.elapsed() > FENCE_LEASE / 2 {
        return Err(S3Error::with_message(
            S3ErrorCode::ServiceUnavailable,
            "DeleteBucket took too long to check the backends; please retry.",
        ));
    }
    let handles: Vec<_> = (0..cx.p.backends.len())
        .map(|i| {
            let mut call = Call::delete_bucket(bucket);
            if fences.held.contains(&i) {
                call.header(header::X_FERRY_FENCE, fences.token.clone());
            }
            call.carry(cx, Leave::Nothing);
            cx.client().spawn(i, call)
        })
        .collect();
    let mut failed = None;
    // Backends that may have no bucket now: deleted, gone before, or no answer.
    let mut gone = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.await {
            Ok(r) if r.ok() => gone.push(i),
            Ok(r) if r.error_code().as_deref() == Some("NoSuchBucket") => gone.push(i),
            Ok(r) => {
                failed.get_or_insert(r.to_error());
            }
            Err(e) => {
                gone.push(i);
                failed.get_or_insert(e);
            }
        }
    }
    let Some(e) = failed else {
        return Ok(());
    };
    restore(cx, bucket, &gone).await;
    Err(e)
}

/// Re-create `bucket` on the backends `on` after a DeleteBucket that failed elsewhere, so that
/// it is present on all of them again: as a backend's check does (`sync::check`), from the
/// backends that still have it — with its owner (not the client, who may be another user the
/// policy let delete it) and its settings (versioning, object lock, policy, ACL, ...).
async fn restore<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, on: &[usize]) {
    for &i in on {
        let restored = super::sync::check(cx.p, i).await;
        if let Err(e) = restored {
            let backend = cx.backend(i).map_or("?", |b| b.id.as_str());
            tracing::warn!(
                backend,
                bucket,
                error = %e,
                "DeleteBucket failed elsewhere and the bucket could not be re-created here: \
                 it is missing on this backend only until its next check"
            );
        }
    }
}

/// ListBuckets: the union over the healthy backends (buckets live on all of them), paged
/// with the proxy's own tokens.
pub(crate) async fn list_buckets<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    q: &ListBucketsQuery<'_>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let ListBucketsQuery {
        prefix,
        continuation_token,
        max_buckets,
    } = q;
    let (prefix, token, max_buckets) = (
        prefix.as_deref(),
        continuation_token.as_deref(),
        *max_buckets,
    );
    let after = token
        .map(|t| read_bucket_token(&cx.p.shared.token_key, t))
        .transpose()?;
    let up: Vec<usize> = (0..cx.p.backends.len())
        .filter(|&i| cx.p.backends.get(i).is_some_and(|b| b.is_up()))
        .collect();
    if up.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::ServiceUnavailable,
            "No backend is available.",
        ));
    }
    let handles: Vec<_> = up
        .iter()
        .map(|&i| cx.client().spawn(i, Call::list_buckets(None, None, None)))
        .collect();
    let mut names: BTreeMap<String, i64> = BTreeMap::new();
    let mut owner: Option<Owner<'static>> = None;
    for h in handles {
        let reply = h.await?;
        if !reply.ok() {
            return Err(reply.to_error());
        }
        let doc = ListAllMyBucketsResult::parse_xml(&reply.body)?;
        if owner.is_none() {
            owner = doc.owner.map(|o| Owner {
                id: Cow::Owned(o.id.into_owned()),
                display_name: o.display_name.map(|d| Cow::Owned(d.into_owned())),
            });
        }
        for b in doc.buckets {
            let created = names
                .entry(b.name.into_owned())
                .or_insert(b.creation_date_unix);
            *created = (*created).min(b.creation_date_unix);
        }
    }
    let limit = max_buckets.map_or(usize::MAX, |n| n as usize);
    let mut buckets = Vec::new();
    let mut truncated = false;
    for (name, created) in &names {
        if prefix.is_some_and(|p| !name.starts_with(p)) {
            continue;
        }
        if after.as_deref().is_some_and(|a| name.as_str() <= a) {
            continue;
        }
        if buckets.len() == limit {
            truncated = true;
            break;
        }
        buckets.push(BucketEntry {
            name: Cow::Borrowed(name.as_str()),
            creation_date_unix: *created,
            region: Some(Cow::Borrowed(cx.p.shared.region.as_str())),
        });
    }
    let next = buckets
        .last()
        .filter(|_| truncated)
        .map(|b| Cow::Owned(bucket_token(&cx.p.shared.token_key, &b.name)));
    let doc = ListAllMyBucketsResult {
        owner,
        buckets,
        continuation_token: next,
        prefix: prefix.map(Cow::Borrowed),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// Read a small request body whole, verified: every signature, hash and checksum (and
/// `Content-MD5`) checked.
pub(crate) async fn read_small<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    max: usize,
) -> S3Result<(Vec<u8>, VerifiedBody)> {
    let limit = BodyLimit::document(max as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    crate::front::body::read_small(body, verifier).await
}

/// One `ServiceUnavailable` error entry per object of a backend that is down.
fn unavailable(doc: &mut DeleteResult<'static>, group: &[&ObjectIdentifier<'_>], message: &str) {
    for o in group {
        doc.errors.push(DeleteError {
            key: Cow::Owned(o.key.to_string()),
            version_id: o.version_id.as_deref().map(|v| Cow::Owned(v.to_owned())),
            code: Cow::Borrowed(S3ErrorCode::ServiceUnavailable.as_str()),
            message: Cow::Owned(message.to_owned()),
        });
    }
}

/// DeleteObjects: each backend deletes the keys placed on it; the results are merged in the
/// request's order. Keys of a backend that is down get a `ServiceUnavailable` error entry each.
pub(crate) async fn delete_objects<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    content_md5_header: Option<[u8; 16]>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let bucket = s3.bucket_str();
    let (xml, done) = read_small(cx, body, MAX_DELETE_BODY).await?;
    crate::front::body::require_integrity(content_md5_header.is_some(), &done, cx.head.headers)?;
    let request = Delete::parse_xml(&xml)?;
    let n = cx.p.backends.len();
    let mut groups: Vec<Vec<&ObjectIdentifier<'_>>> = vec![Vec::new(); n];
    for o in &request.objects {
        if let Some(g) = groups.get_mut(cx.p.pick(bucket, &o.key)) {
            g.push(o);
        }
    }
    let mut handles = Vec::with_capacity(n);
    for (i, group) in groups.iter().enumerate() {
        let up = cx.p.backends.get(i).is_some_and(|b| b.is_up());
        if group.is_empty() || !up {
            handles.push(None);
            continue;
        }
        let mut call = Call::delete_objects(bucket, request.quiet, group);
        // The client's other headers (`x-amz-bypass-governance-retention`, ...) go with it.
        call.carry(cx, Leave::Nothing);
        handles.push(Some(cx.client().spawn(i, call)));
    }
    let mut doc: DeleteResult<'static> = DeleteResult::default();
    for ((i, group), handle) in groups.iter().enumerate().zip(handles) {
        let Some(handle) = handle else {
            if let Some(b) =
                cx.p.backends
                    .get(i)
                    .filter(|b| !group.is_empty() && !b.is_up())
            {
                unavailable(&mut doc, group, &b.unavailable().message);
            }
            continue;
        };
        let reply = match handle.await {
            Ok(r) => r,
            Err(e) if e.is_unavailable() => {
                unavailable(&mut doc, group, &e.message);
                continue;
            }
            Err(e) => return Err(e),
        };
        if !reply.ok() {
            return Err(reply.to_error());
        }
        let part = DeleteResult::parse_xml(&reply.body)?;
        doc.deleted.extend(part.deleted.into_iter().map(|d| {
            DeletedEntry {
                key: Cow::Owned(d.key.into_owned()),
                version_id: d.version_id.map(|v| Cow::Owned(v.into_owned())),
                delete_marker: d.delete_marker,
                delete_marker_version_id: d
                    .delete_marker_version_id
                    .map(|v| Cow::Owned(v.into_owned())),
            }
        }));
        doc.errors
            .extend(part.errors.into_iter().map(|e| DeleteError {
                key: Cow::Owned(e.key.into_owned()),
                version_id: e.version_id.map(|v| Cow::Owned(v.into_owned())),
                code: Cow::Owned(e.code.into_owned()),
                message: Cow::Owned(e.message.into_owned()),
            }));
    }
    if super::layout::draining(cx.p) {
        // Keys may also live on their owners under the layouts being drained.
        super::layout::delete_elsewhere(cx, bucket, &doc.deleted).await;
    }
    // In the order of the request, as one node answers.
    let mut position: HashMap<&str, usize> = HashMap::with_capacity(request.objects.len());
    for (i, o) in request.objects.iter().enumerate() {
        position.entry(o.key.as_ref()).or_insert(i);
    }
    let at = |key: &str| position.get(key).copied().unwrap_or(usize::MAX);
    doc.deleted.sort_by_key(|d| at(&d.key));
    doc.errors.sort_by_key(|e| at(&e.key));
    let mut out = Vec::new();
    doc.write_xml(&mut out);
    cx.front.send_xml(res, Headers::new(), &out).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_read_back_with_the_query_that_wrote_it() {
        assert_eq!(read_query("policy&x-id=PutBucketPolicy"), "policy");
        assert_eq!(
            read_query("x-id=PutBucketAnalyticsConfiguration&analytics&id=a1"),
            "analytics&id=a1"
        );
        assert_eq!(read_query("website"), "website");
        assert_eq!(read_query(""), "");
    }
}
