//! `ferry rebalance`: move every object whose owner changed to its owner under the current
//! layout, so that the previous layouts can be dropped from the configuration.
//!
//! # What it does
//!
//! It reads the proxy's configuration (the same file and options as `ferry proxy`), builds
//! the same backends (pooled connections, health probes, signing) and then:
//!
//! 1. creates the buckets some backend has on the backends that lack them, as the proxy does
//!    with their settings (`sync::check_all`), so every owner can take its keys;
//! 2. finds every bucket and its owner (each client key's ListBuckets on each backend) and
//!    counts, backend by backend, the objects (in a versioned bucket: the versions and delete
//!    markers) that are not on their owner under the current layout — the totals of the
//!    progress line and the whole of a `--dry-run`;
//! 3. lists again and moves them, a page (1,000 entries) at a time with `--concurrency` moves
//!    at once, each streamed from a GET on the backend it is on into a PUT on its owner through
//!    the proxy's pooled buffers (`transfer`, the cross-backend copy's own), within one
//!    bandwidth bound shared by all (`--max-bandwidth`, [`throttle`]); memory is bounded by the
//!    page and the buffers, never by an object;
//! 4. reports what it moved and what it had to leave, and says whether the previous layouts
//!    can go.
//!
//! A move keeps what the object is: its data, `Content-Type` and the other content headers,
//! user metadata, tags, its ACL (GetObjectAcl, given to the copy's write as grant headers when
//! it is not the default private one, so that the copy never exists without it), its checksum
//! (the new owner checks the bytes against a full-object one), its object lock retention and
//! legal hold, and its encryption mode: an SSE-S3 object is decrypted by the node it is on and
//! encrypted again by its owner as SSE-S3, an SSE-KMS one under the same key id and, from a
//! Ferry node, the same encryption context (which reads return only to the bucket owner asking
//! with `x-ferry-encryption-context-mode`; not on AWS). A multipart object is copied part by
//! part into a multipart upload (each part a GET of `partNumber` streamed into an UploadPart),
//! so it keeps its ETag and its checksum: the upload has the object's algorithm and type, each
//! part carries the checksum its read gave, and the completion's checksum must be the source's.
//! To a Ferry node it also keeps its `Last-Modified` and, in a versioned
//! bucket, every version with its version id in its place among the key's versions (the
//! node's placed writes, `x-ferry-version-id` and `x-ferry-last-modified`, the bucket owner's
//! alone). What it cannot keep: SSE-C objects cannot be read without their key, so they are
//! skipped, counted and reported (never moved to plaintext). To a backend of
//! `kind = "s3"` (not Ferry), `Last-Modified` and version ids are new, and the versions of a key
//! are written oldest first so that they keep their order.
//!
//! # Races with client traffic
//!
//! Clients go on reading and writing through proxies that have the new layout (reload every
//! proxy before a rebalance: one still on the old layout writes new keys to their old owners).
//! Those proxies write to the current owner and then delete the key's copies on its previous
//! owners, delete on every owner, and read the current owner first. Each race, and what a move
//! does about it:
//!
//! - **A client writes the key while it moves** (unversioned bucket): the move's PUT carries
//!   `If-None-Match: *`, judged by the owner at commit, so it never replaces the client's
//!   write; refused, it deletes the source if it is still the copy it read (`If-Match` on its
//!   ETag), which the client's proxy may have done already. Versioned bucket: the version is
//!   placed by its id below whatever was written since, so the client's version stays current.
//! - **A client deletes the key while it moves**: the proxy deletes the owner's copy (not there
//!   yet) and the source; the move's PUT may land after that and bring the object back. So a
//!   move deletes its source with `If-Match` on the ETag it read: a 404 there means a client
//!   deleted it meanwhile, and the move then deletes the copy it made, with `If-Match` on that
//!   copy's ETag, so that a newer write by a client is never removed. The object is readable on
//!   its owner between the two, a few milliseconds: the one window this leaves. Versioned
//!   bucket: a client's delete marker is newer than every moved version; a client deleting one
//!   version (or delete marker) by id deletes it on every owner, and one the move placed after
//!   that is found gone from the source when the source is deleted (`If-Match`, or a `HEAD` of
//!   a marker), and deleted from the owner too.
//! - **A proxy still on the old layout writes the source** after the move read it: deleting the
//!   source with `If-Match` fails (412); the move deletes its now older copy from the owner
//!   (`If-Match`) and counts an error: the next run moves the newer object.
//! - **The move is killed at any point**: before the PUT's commit, nothing changed; after it,
//!   the key has two copies, and the owner's is read first (it is the same object); after the
//!   source's delete, the move is done. Running again finishes the job: a copy already on its
//!   owner makes the PUT fail its `If-None-Match` (a placed version: "already in its place"),
//!   and the source is then deleted if it is what was copied. A second run moves nothing.
//! - **A multipart upload in progress** on a previous owner completes there (its id names the
//!   backend, `proxy::upload`), and the proxy then moves the object to its owner, whatever the
//!   layouts are by then: it is counted and its backend named, which must stay declared until
//!   the upload ends, but it does not keep the previous layouts.
//!
//! Objects that could not be moved (SSE-C, COMPLIANCE-locked versions, failed moves) are
//! counted as left behind; only when none is does the report say that the previous layouts can
//! be removed.

mod mover;
mod progress;
mod throttle;

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter, ServerConfig, serve};
use ferry_core::http::{Header, HttpError};
use ferry_core::rt::{Either, Runtime, Signal, race};
use ferry_core::s3::bucket_config::ConfigKind;
use ferry_core::s3::xml::{
    ListBucketResult, ListMultipartUploadsResult, ListVersionsResult, VersioningConfiguration,
};
use ferry_core::s3::{S3Error, S3Result};
use ferry_net::NetRuntime;
use ferry_runtime::OnRuntime;

pub use progress::{Progress, RebalanceReport};

use super::client::Client;
use super::config::BackendKind;
use super::context::Caller;
use super::forward::Call;
use super::health::{self, Schedule};
use super::{Proxy, ProxyConfig, resolve, shared, snapshot, sync};
use throttle::Throttle;

/// How a rebalance runs.
#[derive(Debug, Clone)]
pub struct RebalanceOptions {
    /// Bytes a second at most, all moves together (`None`: no bound).
    pub max_bandwidth: Option<u64>,
    /// Moves at once (at least 1).
    pub concurrency: usize,
    /// Count and list what would move (on stdout), and move nothing.
    pub dry_run: bool,
    /// Draw the progress line on stderr (`ferry rebalance` does when stderr is a terminal and
    /// not `--quiet`).
    pub progress_line: bool,
    /// Serve Prometheus `/metrics` here while it runs.
    pub metrics_listen: Option<SocketAddr>,
}

impl Default for RebalanceOptions {
    fn default() -> Self {
        Self {
            max_bandwidth: None,
            concurrency: DEFAULT_CONCURRENCY,
            dry_run: false,
            progress_line: false,
            metrics_listen: None,
        }
    }
}

/// Moves at once by default.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Most moves at once.
pub const MAX_CONCURRENCY: usize = 256;

/// Entries asked for per listing page (S3's most).
const PAGE: u32 = 1000;

/// The versions of one key kept in memory at most, to move them together (oldest first, to
/// a backend that cannot place them by id); a key with more is an error for that key.
const MAX_VERSIONS_PER_KEY: usize = 10_000;

/// Run a rebalance of the backends `cfg` configures (as `ferry proxy` reads them) until every
/// object is on its owner or could not be moved; blocks until done.
pub fn rebalance(cfg: ProxyConfig, opts: RebalanceOptions) -> io::Result<RebalanceReport> {
    rebalance_with(cfg, opts, Arc::new(Progress::default()))
}

/// [`rebalance`], counting into `progress` (which another thread may read as it goes).
pub fn rebalance_with(
    cfg: ProxyConfig,
    opts: RebalanceOptions,
    progress: Arc<Progress>,
) -> io::Result<RebalanceReport> {
    cfg.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if opts.concurrency == 0 || opts.concurrency > MAX_CONCURRENCY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("concurrency must be between 1 and {MAX_CONCURRENCY}"),
        ));
    }
    if opts.max_bandwidth == Some(0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "max bandwidth must be more than 0",
        ));
    }
    let resolved = resolve(&cfg)?;
    let (kind, threads) = (cfg.runtime, cfg.threads);
    let task = Task {
        cfg,
        resolved,
        opts,
        progress,
    };
    ferry_runtime::block_on(kind, threads, task)?
}

/// A rebalance, to run on the runtime the configuration names.
struct Task {
    cfg: ProxyConfig,
    resolved: Vec<super::Resolved>,
    opts: RebalanceOptions,
    progress: Arc<Progress>,
}

impl OnRuntime for Task {
    type Output = io::Result<RebalanceReport>;

    async fn run<R: NetRuntime>(self, rt: R) -> io::Result<RebalanceReport> {
        let Self {
            cfg,
            resolved,
            opts,
            progress,
        } = self;
        let shared = Arc::new(shared(rt.clone(), &cfg));
        let p = snapshot(&shared, &cfg, &resolved, &[])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let p = Arc::new(p);
        let stop = Arc::new(Signal::new());
        let schedule = Schedule {
            interval: cfg.health_interval,
            jitter: cfg.health_jitter,
        };
        for b in &p.backends {
            let current = p.clone();
            health::spawn_probe(&rt, b.clone(), stop.clone(), schedule, move || {
                current.clone()
            });
        }
        let metrics = match opts.metrics_listen {
            Some(addr) => {
                let handler = Arc::new(MetricsHandler(progress.clone()));
                let config = ServerConfig {
                    max_connections: 16,
                    ..ServerConfig::default()
                };
                let server = serve(&rt, addr, config, handler).await.map_err(|k| {
                    io::Error::new(io::ErrorKind::from(k), format!("cannot listen on {addr}"))
                })?;
                tracing::info!(listen = %server.local_addr(), "rebalance metrics listening");
                Some(server)
            }
            None => None,
        };
        let throttle = opts
            .max_bandwidth
            .map(|rate| Throttle::new(rt.clone(), rate, cfg.buffer_size as u64));
        let started = rt.now();
        if opts.progress_line {
            drop(rt.spawn(draw(rt.clone(), progress.clone(), stop.clone(), started)));
        }
        let r = Arc::new(Rebalancer {
            p,
            opts: opts.clone(),
            progress: progress.clone(),
            throttle,
        });
        progress.running.store(true, Ordering::Relaxed);
        let done = r.run().await;
        progress.running.store(false, Ordering::Relaxed);
        stop.set();
        if opts.progress_line {
            eprintln!(
                "\r\x1b[2K{}",
                progress.line(rt.now().saturating_sub(started))
            );
        }
        if let Some(m) = metrics {
            m.shutdown();
        }
        done.map_err(|e| io::Error::other(e.to_string()))?;
        Ok(RebalanceReport::of(&progress, opts.dry_run))
    }
}

/// Redraw the progress line every half second until `stop`.
async fn draw<R: Runtime>(rt: R, progress: Arc<Progress>, stop: Arc<Signal>, started: Duration) {
    loop {
        if let Either::Right(()) = race(rt.sleep(Duration::from_millis(500)), stop.wait()).await {
            return;
        }
        let line = progress.line(rt.now().saturating_sub(started));
        eprint!("\r\x1b[2K{line}");
    }
}

/// `GET /metrics` of a running rebalance.
struct MetricsHandler(Arc<Progress>);

impl std::fmt::Debug for MetricsHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsHandler")
    }
}

impl Handler for MetricsHandler {
    type Error = HttpError;

    async fn handle<S: ferry_core::rt::Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        _body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let text = Header {
            name: "Content-Type",
            value: b"text/plain; version=0.0.4; charset=utf-8",
        };
        if req.target != "/metrics" || !matches!(req.method, "GET" | "HEAD") {
            return res.send(404, &[text], b"GET /metrics\n").await;
        }
        let mut body = String::new();
        self.0.render_metrics(&mut body);
        res.send(200, &[text], body.as_bytes()).await
    }
}

/// A bucket to rebalance: who owns it, where it is, whether it has versions.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    pub name: String,
    /// Requests for it are signed with its owner's key.
    pub caller: Caller,
    /// The backends that have it.
    pub on: Vec<usize>,
    /// It has a versioning state (Enabled or Suspended).
    pub versioned: bool,
}

/// One entry of a backend's listing that is not on its owner.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: String,
    pub size: u64,
    /// Quoted, as listed (empty for a delete marker).
    pub etag: String,
    pub last_modified: i64,
    /// In a versioned bucket: its version id (`null` for the null version).
    pub version_id: Option<String>,
    pub delete_marker: bool,
}

/// What is to be moved next: an object, or a key's versions (newest first, as listed).
#[derive(Debug, Clone)]
pub(crate) enum Work {
    Object(Entry),
    Versions(Vec<Entry>),
}

/// Count or move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Count,
    Move,
}

/// A running rebalance.
pub(crate) struct Rebalancer<R: Runtime> {
    pub p: Arc<Proxy<R>>,
    pub opts: RebalanceOptions,
    pub progress: Arc<Progress>,
    pub throttle: Option<Throttle<R>>,
}

impl<R: Runtime> Rebalancer<R> {
    /// A mover for the proxy itself, unbounded and counting nothing anyone reads (see
    /// `upload`: an upload that completed away from its key's owner).
    pub(crate) fn for_proxy(p: Arc<Proxy<R>>) -> Self {
        Self {
            p,
            opts: RebalanceOptions::default(),
            progress: Arc::default(),
            throttle: None,
        }
    }
}

impl<R: Runtime> std::fmt::Debug for Rebalancer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rebalancer").finish_non_exhaustive()
    }
}

impl<R: Runtime> Rebalancer<R> {
    async fn run(self: &Arc<Self>) -> S3Result<()> {
        if !self.opts.dry_run
            && let Err(e) = sync::check_all(&self.p).await
        {
            tracing::warn!(error = %e, "rebalance: creating buckets on backends that lack them failed");
        }
        let buckets = self.buckets().await;
        for b in &buckets {
            for &i in &b.on {
                self.walk(b, i, Pass::Count).await;
            }
        }
        self.progress.planned.store(true, Ordering::Relaxed);
        if self.opts.dry_run {
            return Ok(());
        }
        for b in &buckets {
            self.uploads_elsewhere(b).await;
            for &i in &b.on {
                self.walk(b, i, Pass::Move).await;
            }
        }
        Ok(())
    }

    /// The id of backend `i`.
    pub(crate) fn id(&self, i: usize) -> &str {
        self.p.backends.get(i).map_or("?", |b| b.id.as_str())
    }

    /// Whether backend `i` is a Ferry node (places versions and dates).
    pub(crate) fn is_ferry(&self, i: usize) -> bool {
        self.p
            .backends
            .get(i)
            .is_some_and(|b| b.kind == BackendKind::Ferry)
    }

    /// Every bucket on any backend, with the key of the first client key that lists it (its
    /// owner), the backends that have it and whether it is versioned. A backend that cannot
    /// be listed is an error (its objects would be missed).
    async fn buckets(&self) -> Vec<Bucket> {
        let mut out: Vec<Bucket> = Vec::new();
        for key in &self.p.shared.client_keys {
            let caller = Caller::of_key(key);
            for i in 0..self.p.backends.len() {
                let names = match Client::new(&self.p, &caller).list_buckets(i).await {
                    Ok(n) => n,
                    Err(e) => {
                        self.progress.error(format!(
                            "listing the buckets of backend {}: {e}",
                            self.id(i)
                        ));
                        continue;
                    }
                };
                for name in names {
                    match out.iter_mut().find(|b| b.name == name) {
                        Some(b) if !b.on.contains(&i) => b.on.push(i),
                        Some(_) => {}
                        None => out.push(Bucket {
                            name,
                            caller: caller.clone(),
                            on: vec![i],
                            versioned: false,
                        }),
                    }
                }
            }
        }
        for b in &mut out {
            b.on.sort_unstable();
            let Some(&i) = b.on.first() else { continue };
            let versioning = ConfigKind::Versioning.subresource();
            let get = Call::get_setting(&b.name, versioning);
            match self.client(b).send(i, &get).await {
                Ok(r) if r.ok() => {
                    b.versioned = VersioningConfiguration::status_of(&r.body).is_some();
                }
                Ok(r) => {
                    self.progress
                        .error(format!("{}: versioning state: {}", b.name, r.to_error()))
                }
                Err(e) => self
                    .progress
                    .error(format!("{}: versioning state: {e}", b.name)),
            }
        }
        out
    }

    /// The requests for bucket `b`, as its owner.
    pub(crate) fn client<'a>(&'a self, b: &'a Bucket) -> Client<'a, R> {
        Client::new(&self.p, &b.caller)
    }

    /// Count the multipart uploads in progress on a backend that is not their key's owner, and
    /// name the backend.
    async fn uploads_elsewhere(&self, b: &Bucket) {
        for &i in &b.on {
            let mut markers: Option<(String, String)> = None;
            loop {
                let (key, upload) = match &markers {
                    Some((k, u)) => (Some(k.as_str()), Some(u.as_str())),
                    None => (None, None),
                };
                let list = Call::list_uploads(&b.name, PAGE, key, upload);
                let reply = match self.client(b).send(i, &list).await {
                    Ok(r) if r.ok() => r,
                    Ok(r) => {
                        self.progress.error(format!(
                            "{}: uploads on {}: {}",
                            b.name,
                            self.id(i),
                            r.to_error()
                        ));
                        break;
                    }
                    Err(e) => {
                        self.progress
                            .error(format!("{}: uploads on {}: {e}", b.name, self.id(i)));
                        break;
                    }
                };
                let Ok(page) = ListMultipartUploadsResult::parse_xml(&reply.body) else {
                    break;
                };
                let away = page
                    .uploads
                    .iter()
                    .filter(|u| self.p.pick(&b.name, &u.key) != i)
                    .count();
                self.progress.uploads_on(self.id(i), away as u64);
                match (
                    page.is_truncated,
                    page.next_key_marker,
                    page.next_upload_id_marker,
                ) {
                    (true, Some(k), Some(u)) => {
                        markers = Some((k.into_owned(), u.into_owned()));
                    }
                    _ => break,
                }
            }
        }
    }

    /// Go through bucket `b`'s listing on backend `i`: count what is away from its owner, or
    /// move it, a page at a time.
    async fn walk(self: &Arc<Self>, b: &Bucket, i: usize, pass: Pass) {
        let mut pages = Pages::new(b, i);
        // A versioned key's versions may go on past a page: the last key's wait for the next.
        let mut carried: Vec<Entry> = Vec::new();
        loop {
            let page = match pages.next(self).await {
                Ok(Some(page)) => page,
                Ok(None) => break,
                Err(e) => {
                    self.progress
                        .error(format!("{}: listing on {}: {e}", b.name, self.id(i)));
                    return;
                }
            };
            let last = pages.done();
            let mut work = Vec::new();
            if b.versioned {
                carried.extend(page);
                let mut groups = group_by_key(std::mem::take(&mut carried));
                if !last && let Some(tail) = groups.pop() {
                    carried = tail;
                }
                for g in groups {
                    if g.len() > MAX_VERSIONS_PER_KEY {
                        self.progress.error(format!(
                            "{}/{}: more than {MAX_VERSIONS_PER_KEY} versions on {}",
                            b.name,
                            g[0].key,
                            self.id(i)
                        ));
                        continue;
                    }
                    work.push(Work::Versions(g));
                }
            } else {
                work.extend(page.into_iter().map(Work::Object));
            }
            let mut moves = Vec::new();
            for w in work {
                let key = match &w {
                    Work::Object(e) => e.key.as_str(),
                    Work::Versions(v) => v.first().map_or("", |e| e.key.as_str()),
                };
                let to = self.p.pick(&b.name, key);
                let (n, bytes) = match &w {
                    Work::Object(e) => (1, e.size),
                    Work::Versions(v) => (v.len() as u64, v.iter().map(|e| e.size).sum()),
                };
                if to == i {
                    if pass == Pass::Count {
                        self.progress.in_place.fetch_add(n, Ordering::Relaxed);
                    }
                    continue;
                }
                match pass {
                    Pass::Count => {
                        self.progress
                            .planned_objects
                            .fetch_add(n, Ordering::Relaxed);
                        self.progress
                            .planned_bytes
                            .fetch_add(bytes, Ordering::Relaxed);
                        if self.opts.dry_run {
                            println!(
                                "would move {}/{key} ({n} {}, {}) from {} to {}",
                                b.name,
                                if n == 1 { "object" } else { "versions" },
                                progress::bytes(bytes),
                                self.id(i),
                                self.id(to)
                            );
                        }
                    }
                    Pass::Move => moves.push((w, to)),
                }
            }
            if !moves.is_empty() {
                self.run_moves(b, i, moves).await;
            }
            if last {
                break;
            }
        }
    }

    /// Run `moves` (from backend `from`), `--concurrency` at a time.
    async fn run_moves(self: &Arc<Self>, b: &Bucket, from: usize, moves: Vec<(Work, usize)>) {
        let queue = Arc::new(Mutex::new(VecDeque::from(moves)));
        let workers: Vec<_> = (0..self.opts.concurrency)
            .map(|_| {
                let (r, queue, b) = (self.clone(), queue.clone(), b.clone());
                self.p.shared.rt.spawn(async move {
                    loop {
                        let next = queue
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .pop_front();
                        let Some((w, to)) = next else { break };
                        match w {
                            Work::Object(e) => r.move_object(&b, &e, from, to).await,
                            Work::Versions(v) => r.move_versions(&b, &v, from, to).await,
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.await;
        }
    }
}

/// Group entries by key, keeping their order (a key's versions are listed together).
fn group_by_key(entries: Vec<Entry>) -> Vec<Vec<Entry>> {
    let mut out: Vec<Vec<Entry>> = Vec::new();
    for e in entries {
        match out.last_mut() {
            Some(g) if g.first().is_some_and(|f| f.key == e.key) => g.push(e),
            _ => out.push(vec![e]),
        }
    }
    out
}

/// The pages of one bucket's listing on one backend: ListObjectsV2, or ListObjectVersions for
/// a versioned bucket.
struct Pages<'b> {
    bucket: &'b Bucket,
    backend: usize,
    /// Where the next page starts: after a key (`start-after`), or a key marker and a version
    /// marker.
    next: Option<(String, Option<String>)>,
    finished: bool,
}

impl<'b> Pages<'b> {
    fn new(bucket: &'b Bucket, backend: usize) -> Self {
        Self {
            bucket,
            backend,
            next: None,
            finished: false,
        }
    }

    /// Whether the last page has been read.
    fn done(&self) -> bool {
        self.finished
    }

    async fn next<R: Runtime>(&mut self, r: &Rebalancer<R>) -> S3Result<Option<Vec<Entry>>> {
        if self.finished {
            return Ok(None);
        }
        let b = self.bucket;
        let (key, version) = match &self.next {
            Some((k, v)) => (Some(k.as_str()), v.as_deref()),
            None => (None, None),
        };
        let list = if b.versioned {
            Call::list_versions(&b.name, PAGE, key, version)
        } else {
            Call::list_objects(&b.name, PAGE, key)
        };
        let reply = r.client(b).send(self.backend, &list).await?;
        if !reply.ok() {
            return Err(reply.to_error());
        }
        if b.versioned {
            let page = ListVersionsResult::parse_xml(&reply.body)?;
            self.next = match (&page.next_key_marker, &page.next_version_id_marker) {
                (Some(k), v) if page.is_truncated => {
                    Some((k.to_string(), v.as_deref().map(str::to_owned)))
                }
                _ => None,
            };
            self.finished = self.next.is_none() || page.entries.is_empty();
            Ok(Some(
                page.entries
                    .iter()
                    .map(|v| Entry {
                        key: v.key.to_string(),
                        size: v.size,
                        etag: v.etag.to_string(),
                        last_modified: v.last_modified_unix,
                        version_id: Some(v.version_id.to_string()),
                        delete_marker: v.delete_marker,
                    })
                    .collect(),
            ))
        } else {
            let page = ListBucketResult::parse_xml(&reply.body)?;
            // After the last key, not a token: the moves delete what was listed, and a key
            // is a position that deletes do not shift, on any S3 server.
            self.next = match page.contents.last() {
                Some(o) if page.is_truncated => Some((o.key.to_string(), None)),
                _ => None,
            };
            self.finished = self.next.is_none();
            Ok(Some(
                page.contents
                    .iter()
                    .map(|o| Entry {
                        key: o.key.to_string(),
                        size: o.size,
                        etag: o.etag.to_string(),
                        last_modified: o.last_modified_unix,
                        version_id: None,
                        delete_marker: false,
                    })
                    .collect(),
            ))
        }
    }
}

/// An error of a move, with what it was about.
pub(crate) fn about(bucket: &str, key: &str, e: &S3Error) -> String {
    format!("{bucket}/{key}: {e}")
}
