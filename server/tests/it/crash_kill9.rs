//! Crash safety of `ferry node`: concurrent PUTs (new keys and overwrites), `kill -9` in the
//! middle of them, restart on the same data directory, then check that
//! - every acknowledged PUT is there with exactly its bytes (and its ETag),
//! - an unacknowledged PUT is either absent or there complete and correct (never partial),
//! - an overwritten key holds one whole version: the last acknowledged one or a later one,
//! - the same for multipart uploads (one write in four): a completion is all or nothing,
//! - the listing agrees (keys and sizes) with what GET returns,
//! - readers running during the PUTs never see a partial or foreign object,
//! - in a versioned bucket written meanwhile (PUTs and DELETEs of a few keys), every
//!   acknowledged version and delete marker is listed under its id after the restart, each
//!   version with exactly its bytes.
//!
//! Rounds alternate between the tokio and smol runtimes. The sizes and choices come from a seed
//! printed at the start (`FERRY_CRASH_SEED` replays them; the kill timing is not replayable);
//! `FERRY_CRASH_ROUNDS` changes the number of rounds (default 8; at least 1).
//!
//! Every request that fails while the node runs (before the kill begins) fails the test, and
//! each round is killed only after its own floor of acknowledged writes (three PUTs or
//! uploads, one versioned write).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::Client;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketVersioningStatus, CompletedMultipartUpload, CompletedPart, VersioningConfiguration,
};
use ferry_core::fill::ShardedFill;
use md5::{Digest, Md5};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::sdk::{self, show};
use crate::support::{ACCESS_KEY, SECRET_KEY};

/// Concurrent writers.
const WRITERS: usize = 8;
/// Concurrent readers of objects being written.
const READERS: usize = 2;
/// Largest object (exclusive).
const MAX_SIZE: u64 = 4 << 20;
const BUCKET: &str = "crash";
/// The versioned bucket.
const VERSIONED: &str = "crash-versions";
/// Keys of the versioned bucket (each gets many versions).
const VERSIONED_KEYS: u64 = 5;
/// Each round's floor: PUTs (and uploads) acknowledged before its kill.
const ROUND_ACKS: u64 = 3;
/// Each round's floor: versions and delete markers of the versioned bucket acknowledged
/// before its kill.
const ROUND_VERSIONED_ACKS: u64 = 1;

/// One version of a key: the fill id its bytes come from, its length, and how it was written
/// (0: one PUT; else a multipart upload of that many parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    id: u64,
    len: u64,
    parts: u64,
}

/// The node's minimum part size in this test (`--min-part-size`), so uploads stay small.
const MIN_PART: u64 = 64 * 1024;

impl Version {
    /// Byte ranges of the parts: equal thirds, the last one taking the remainder.
    fn part_ranges(&self) -> Vec<(u64, u64)> {
        let size = self.len / self.parts;
        (0..self.parts)
            .map(|i| {
                let end = if i + 1 == self.parts {
                    self.len
                } else {
                    (i + 1) * size
                };
                (i * size, end)
            })
            .collect()
    }

    /// The ETag S3 gives this version.
    fn etag(&self, fill: &ShardedFill) -> String {
        let obj = fill.object(self.id);
        if self.parts == 0 {
            return format!("\"{}\"", sdk::hex(&obj.md5(self.len)));
        }
        let mut all = Md5::new();
        for (start, end) in self.part_ranges() {
            let mut part = vec![0u8; (end - start) as usize];
            obj.fill_at(start, &mut part);
            all.update(Md5::digest(&part));
        }
        format!("\"{}-{}\"", sdk::hex(&all.finalize()), self.parts)
    }
}

/// What a key may hold: `settled` is known to be there (acknowledged, or seen after a restart);
/// `pending` were sent after it and not acknowledged (each may or may not have landed).
/// `history` is every version ever sent (what a concurrent reader may see).
#[derive(Debug, Default, Clone)]
struct KeyState {
    settled: Option<Version>,
    pending: Vec<Version>,
    history: Vec<Version>,
}

impl KeyState {
    fn candidates(&self) -> impl Iterator<Item = Version> + '_ {
        self.settled
            .iter()
            .copied()
            .chain(self.pending.iter().copied())
    }
}

#[derive(Debug, Default)]
struct Ledger {
    keys: BTreeMap<String, KeyState>,
    acked: u64,
    unacked: u64,
    overwrites: u64,
    multipart_acked: u64,
    /// The versioned bucket: acknowledged versions by id, with their key and (for an object)
    /// the version they hold; `None` for a delete marker.
    versions: BTreeMap<String, (String, Option<Version>)>,
}

/// A `ferry node` child process.
struct Node {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Node {
    async fn start(dir: &Path, runtime: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferry"))
            .arg("node")
            .arg("--data")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0", "--runtime", runtime])
            .args(["--min-part-size", &MIN_PART.to_string()])
            .env("FERRY_ACCESS_KEY", ACCESS_KEY)
            .env("FERRY_SECRET_KEY", SECRET_KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn ferry node");
        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(err_pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().expect("stderr lock");
                // Keep the tail only.
                if s.len() > 64 * 1024 {
                    s.drain(..32 * 1024);
                }
                s.push_str(&line);
                s.push('\n');
            }
        });
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let wait = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => {
                        if let Some(rest) = line.strip_prefix("ferry node listening on http://") {
                            return Some(rest.trim().parse::<SocketAddr>().expect("address"));
                        }
                    }
                    _ => return None,
                }
            }
        })
        .await;
        let addr = match wait {
            Ok(Some(addr)) => addr,
            other => panic!(
                "no 'listening on' line ({other:?}); stderr:\n{}",
                stderr.lock().expect("stderr lock")
            ),
        };
        assert!(addr.ip().is_loopback(), "{addr}");
        // Keep reading stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            addr,
            stderr,
        }
    }

    /// SIGKILL, and reap.
    async fn kill9(mut self) {
        self.child.start_kill().expect("kill -9");
        let status = self.child.wait().await.expect("wait");
        assert!(!status.success(), "killed node exited with {status}");
    }

    /// SIGTERM: the node must stop gracefully and exit 0.
    async fn terminate(mut self) {
        let pid = self.child.id().expect("pid");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("node exits after SIGTERM")
            .expect("wait");
        assert!(
            status.success(),
            "exit status {status} after SIGTERM; stderr:\n{}",
            self.stderr.lock().expect("stderr lock")
        );
    }

    fn client(&self) -> Client {
        let conf = sdk::config(self.addr)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(5))
                    .operation_attempt_timeout(Duration::from_secs(60))
                    .build(),
            )
            .build();
        Client::from_conf(conf)
    }
}

/// MD5 of a whole object body, read as a stream.
async fn read_md5(body: ByteStream) -> Result<(u64, [u8; 16]), String> {
    let mut body = body;
    let mut md5 = Md5::new();
    let mut len = 0u64;
    while let Some(chunk) = body.try_next().await.map_err(|e| e.to_string())? {
        md5.update(&chunk);
        len += chunk.len() as u64;
    }
    Ok((len, md5.finalize().into()))
}

/// Which candidate a body is, by length and MD5.
fn identify(
    fill: &ShardedFill,
    candidates: impl Iterator<Item = Version>,
    len: u64,
    digest: &[u8; 16],
) -> Option<Version> {
    candidates
        .filter(|v| v.len == len)
        .find(|v| fill.object(v.id).md5(v.len) == *digest)
}

struct Round {
    client: Client,
    fill: Arc<ShardedFill>,
    ledger: Arc<Mutex<Ledger>>,
    next_id: Arc<AtomicU64>,
    acks: Arc<AtomicU64>,
    /// Versions and delete markers of the versioned bucket acknowledged this round.
    versioned_acks: AtomicU64,
    /// Set just before the kill: a request that fails while it is not set failed on a node
    /// that was running.
    stop: Arc<AtomicBool>,
    overwrite_pool: Arc<Mutex<Vec<String>>>,
    /// Requests that failed before the kill, each a failure of the test.
    failures: Mutex<Vec<String>>,
}

impl Round {
    /// Whether the kill has begun: a request failing now may be its victim.
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// `what` failed: a failure of the test unless the kill has begun (the task that saw it
    /// stops either way: the node is gone, or the test has failed).
    fn failed(&self, what: String) {
        if !self.stopping() {
            self.failures.lock().expect("failures").push(what);
        }
    }
}

async fn writer(r: Arc<Round>, round: usize, task: usize, seed: u64) {
    let mut rng = Pcg64::seed_from_u64(seed ^ ((round as u64) << 32) ^ task as u64);
    while !r.stopping() {
        let id = r.next_id.fetch_add(1, Ordering::Relaxed);
        // A quarter of the objects are tiny (0..1000 bytes), the rest up to 4 MiB.
        let len = if rng.next_u64() % 4 == 0 {
            rng.next_u64() % 1000
        } else {
            rng.next_u64() % MAX_SIZE
        };
        // One in four writes is a three-part multipart upload.
        let multipart = rng.next_u64() % 4 == 0;
        let version = if multipart {
            Version {
                id,
                len: 3 * MIN_PART + rng.next_u64() % (MAX_SIZE - 3 * MIN_PART),
                parts: 3,
            }
        } else {
            Version { id, len, parts: 0 }
        };
        // One in four PUTs overwrites a key written in an earlier round (one writer per key).
        let overwrite = if rng.next_u64() % 4 == 0 {
            r.overwrite_pool.lock().expect("pool").pop()
        } else {
            None
        };
        let key = overwrite
            .clone()
            .unwrap_or_else(|| format!("r{round}/w{task}/o{id:06}"));
        {
            let mut l = r.ledger.lock().expect("ledger");
            let state = l.keys.entry(key.clone()).or_default();
            state.pending.push(version);
            state.history.push(version);
            if overwrite.is_some() {
                l.overwrites += 1;
            }
        }
        let sent = if multipart {
            multipart_upload(&r, &key, version).await
        } else {
            let data = r.fill.object(id).generate(len as usize);
            r.client
                .put_object()
                .bucket(BUCKET)
                .key(&key)
                .body(ByteStream::from(data))
                .send()
                .await
                .map(|out| out.e_tag().map(str::to_owned))
                .map_err(|e| show(&e))
        };
        match sent {
            Ok(etag) => {
                assert_eq!(etag, Some(version.etag(&r.fill)), "{key}");
                let mut l = r.ledger.lock().expect("ledger");
                let state = l.keys.get_mut(&key).expect("registered");
                state.settled = Some(version);
                state.pending.clear();
                l.acked += 1;
                if multipart {
                    l.multipart_acked += 1;
                }
                r.acks.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                // Unacknowledged: the node is gone (or going), or the test has failed.
                r.failed(format!("PUT {key} failed before the kill: {e}"));
                r.ledger.lock().expect("ledger").unacked += 1;
                return;
            }
        }
    }
}

/// Write the versioned bucket: PUTs of small objects to a few keys, one DELETE (a delete
/// marker) in five; each acknowledged version or marker goes in the ledger.
async fn versioned_writer(r: Arc<Round>, round: usize, seed: u64) {
    let mut rng = Pcg64::seed_from_u64(seed ^ ((round as u64) << 32) ^ 0x7665_7273);
    while !r.stopping() {
        let key = format!("v{}", rng.next_u64() % VERSIONED_KEYS);
        let (sent, version) = if rng.next_u64() % 5 == 0 {
            let sent = r
                .client
                .delete_object()
                .bucket(VERSIONED)
                .key(&key)
                .send()
                .await
                .map(|out| {
                    assert_eq!(out.delete_marker(), Some(true), "{key}");
                    out.version_id().map(str::to_owned)
                });
            (sent.map_err(|e| show(&e)), None)
        } else {
            let id = r.next_id.fetch_add(1, Ordering::Relaxed);
            let version = Version {
                id,
                len: rng.next_u64() % (64 << 10),
                parts: 0,
            };
            let data = r.fill.object(id).generate(version.len as usize);
            let sent = r
                .client
                .put_object()
                .bucket(VERSIONED)
                .key(&key)
                .body(ByteStream::from(data))
                .send()
                .await
                .map(|out| out.version_id().map(str::to_owned));
            (sent.map_err(|e| show(&e)), Some(version))
        };
        match sent {
            Ok(id) => {
                let id = id.unwrap_or_else(|| panic!("{key}: no version id"));
                let mut l = r.ledger.lock().expect("ledger");
                let old = l.versions.insert(id.clone(), (key, version));
                assert!(old.is_none(), "version id {id} given twice");
                r.versioned_acks.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let what = if version.is_some() { "PUT" } else { "DELETE" };
                r.failed(format!(
                    "{what} {VERSIONED}/{key} failed before the kill: {e}"
                ));
                return;
            }
        }
    }
}

/// After a restart: every acknowledged version and delete marker of the versioned bucket is
/// listed under its id and key, each key's newest first; each version reads back whole.
async fn verify_versions(client: &Client, fill: &ShardedFill, ledger: &Mutex<Ledger>) -> usize {
    let mut listed: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let mut latest = BTreeSet::new();
    let (mut key_marker, mut version_marker): (Option<String>, Option<String>) = (None, None);
    loop {
        let page = client
            .list_object_versions()
            .bucket(VERSIONED)
            .max_keys(50)
            .set_key_marker(key_marker.clone())
            .set_version_id_marker(version_marker.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list versions: {}", show(&e)));
        let entries = page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id(), v.is_latest(), false))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id(), m.is_latest(), true)),
            );
        for (key, id, is_latest, marker) in entries {
            let (key, id) = (key.expect("key"), id.expect("version id"));
            if is_latest == Some(true) {
                assert!(latest.insert(key.to_owned()), "{key}: two latest versions");
            }
            listed.insert(id.to_owned(), (key.to_owned(), marker));
        }
        if page.is_truncated() != Some(true) {
            break;
        }
        key_marker = page.next_key_marker().map(str::to_owned);
        version_marker = page.next_version_id_marker().map(str::to_owned);
    }
    let acked = ledger.lock().expect("ledger").versions.clone();
    for (id, (key, version)) in &acked {
        let (k, marker) = listed
            .get(id)
            .unwrap_or_else(|| panic!("acknowledged version {id} of {key} is gone"));
        assert_eq!(k, key, "version {id}");
        assert_eq!(*marker, version.is_none(), "version {id} of {key}");
        let Some(v) = version else { continue };
        let out = client
            .get_object()
            .bucket(VERSIONED)
            .key(key)
            .version_id(id)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {key}?versionId={id}: {}", show(&e)));
        let (len, digest) = read_md5(out.body)
            .await
            .unwrap_or_else(|e| panic!("reading {key}@{id}: {e}"));
        assert_eq!(
            (len, digest),
            (v.len, fill.object(v.id).md5(v.len)),
            "{key}@{id}"
        );
    }
    acked.len()
}

/// Create, upload the parts of and complete `version` at `key`; the final ETag.
async fn multipart_upload(
    r: &Round,
    key: &str,
    version: Version,
) -> Result<Option<String>, String> {
    let c = &r.client;
    let created = c
        .create_multipart_upload()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await
        .map_err(|e| show(&e))?;
    let upload_id = created.upload_id().ok_or("no UploadId")?.to_owned();
    let obj = r.fill.object(version.id);
    let mut done = Vec::new();
    for (i, (start, end)) in version.part_ranges().into_iter().enumerate() {
        let mut part = vec![0u8; (end - start) as usize];
        obj.fill_at(start, &mut part);
        let n = i as i32 + 1;
        let out = c
            .upload_part()
            .bucket(BUCKET)
            .key(key)
            .upload_id(&upload_id)
            .part_number(n)
            .body(ByteStream::from(part))
            .send()
            .await
            .map_err(|e| show(&e))?;
        done.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(out.e_tag().ok_or("no part ETag")?)
                .build(),
        );
    }
    let out = c
        .complete_multipart_upload()
        .bucket(BUCKET)
        .key(key)
        .upload_id(&upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .map_err(|e| show(&e))?;
    Ok(out.e_tag().map(str::to_owned))
}

/// GET keys that are being written; anything readable must be one whole version.
async fn reader(r: Arc<Round>, round: usize, task: usize, seed: u64) -> u64 {
    let mut rng = Pcg64::seed_from_u64(!seed ^ ((round as u64) << 32) ^ task as u64);
    let mut checked = 0;
    while !r.stopping() {
        let key = {
            let l = r.ledger.lock().expect("ledger");
            let busy: Vec<&String> = l
                .keys
                .iter()
                .filter(|(_, s)| !s.pending.is_empty())
                .map(|(k, _)| k)
                .collect();
            if busy.is_empty() {
                None
            } else {
                Some(busy[(rng.next_u64() % busy.len() as u64) as usize].clone())
            }
        };
        let Some(key) = key else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let got = r.client.get_object().bucket(BUCKET).key(&key).send().await;
        let body = match got {
            Ok(out) => out.body,
            Err(e) => {
                if sdk::status_of(&e) == Some(404) {
                    continue;
                }
                // The node died under us, or the test has failed.
                r.failed(format!("GET {key} failed before the kill: {}", show(&e)));
                return checked;
            }
        };
        let (len, digest) = match read_md5(body).await {
            Ok(read) => read,
            Err(e) => {
                r.failed(format!("reading {key} failed before the kill: {e}"));
                return checked;
            }
        };
        let l = r.ledger.lock().expect("ledger");
        let state = &l.keys[&key];
        // The GET may have started before a later version was acknowledged: any whole
        // version ever sent is fine, anything else (partial, foreign) is not.
        assert!(
            identify(&r.fill, state.history.iter().copied(), len, &digest).is_some(),
            "reader saw {len} bytes under {key} that are none of its versions {state:?}"
        );
        checked += 1;
    }
    checked
}

/// List every key with its size.
async fn list_all(client: &Client) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut pages = client
        .list_objects_v2()
        .bucket(BUCKET)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.unwrap_or_else(|e| panic!("list: {}", show(&e)));
        for o in page.contents() {
            out.insert(
                o.key().expect("key").to_owned(),
                o.size().expect("size") as u64,
            );
        }
    }
    out
}

/// After a restart: check every key touched this round (or every key when `all`), settle
/// what was found, and check the listing against it.
async fn verify(
    client: &Client,
    fill: &ShardedFill,
    ledger: &Mutex<Ledger>,
    touched: &BTreeSet<String>,
    all: bool,
) -> (u64, u64) {
    let keys: Vec<(String, KeyState)> = ledger
        .lock()
        .expect("ledger")
        .keys
        .iter()
        .filter(|(k, _)| all || touched.contains(*k))
        .map(|(k, s)| (k.clone(), s.clone()))
        .collect();
    let (mut present, mut absent) = (0, 0);
    for (key, state) in keys {
        let got = client.get_object().bucket(BUCKET).key(&key).send().await;
        let found = match got {
            Ok(out) => {
                let etag = out.e_tag().map(str::to_owned);
                let (len, digest) = read_md5(out.body)
                    .await
                    .unwrap_or_else(|e| panic!("reading {key}: {e}"));
                let v = identify(fill, state.candidates(), len, &digest).unwrap_or_else(|| {
                    panic!("{key} holds {len} bytes that are none of its versions {state:?}")
                });
                assert_eq!(etag, Some(v.etag(fill)), "{key} ETag");
                present += 1;
                Some(v)
            }
            Err(e) if sdk::status_of(&e) == Some(404) => {
                assert_eq!(
                    state.settled, None,
                    "{key}: an acknowledged object is gone ({state:?})"
                );
                absent += 1;
                None
            }
            Err(e) => panic!("GET {key} after restart: {}", show(&e)),
        };
        let mut l = ledger.lock().expect("ledger");
        let s = l.keys.get_mut(&key).expect("key");
        s.settled = found;
        s.pending.clear();
    }
    // The listing shows exactly the keys that exist, each with its settled size.
    let listed = list_all(client).await;
    let l = ledger.lock().expect("ledger");
    for (key, size) in &listed {
        let state = l
            .keys
            .get(key)
            .unwrap_or_else(|| panic!("listed key {key} was never written"));
        let v = state
            .settled
            .unwrap_or_else(|| panic!("listed key {key} is not readable"));
        assert_eq!(*size, v.len, "{key}: listed size");
    }
    for (key, state) in &l.keys {
        assert_eq!(
            listed.contains_key(key),
            state.settled.is_some(),
            "{key}: listing disagrees with GET ({state:?})"
        );
    }
    (present, absent)
}

#[test]
fn kill9_never_loses_acknowledged_puts() {
    let rounds: usize = match std::env::var("FERRY_CRASH_ROUNDS") {
        Err(std::env::VarError::NotPresent) => 8,
        Err(e) => panic!("FERRY_CRASH_ROUNDS: {e}"),
        Ok(v) => match v.parse() {
            Ok(0) => panic!("FERRY_CRASH_ROUNDS=0: the test needs at least one round"),
            Ok(n) => n,
            Err(e) => panic!("FERRY_CRASH_ROUNDS={v:?} is not a number of rounds: {e}"),
        },
    };
    let seed: u64 = std::env::var("FERRY_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_nanos() as u64
        });
    eprintln!("crash test: FERRY_CRASH_SEED={seed} FERRY_CRASH_ROUNDS={rounds}");
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run(rounds, seed));
}

async fn run(rounds: usize, seed: u64) {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let fill = Arc::new(ShardedFill::new(seed));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let next_id = Arc::new(AtomicU64::new(1));
    let mut rng = Pcg64::seed_from_u64(seed);
    let runtimes = ["tokio", "smol"];

    let mut node = Node::start(dir.path(), runtimes[0]).await;
    node.client()
        .create_bucket()
        .bucket(BUCKET)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create bucket: {}", show(&e)));
    let c = node.client();
    c.create_bucket()
        .bucket(VERSIONED)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create bucket: {}", show(&e)));
    c.put_bucket_versioning()
        .bucket(VERSIONED)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("put versioning: {}", show(&e)));

    for round in 0..rounds {
        let client = node.client();
        // Keys from earlier rounds that exist may be overwritten, each once.
        let mut pool: Vec<String> = ledger
            .lock()
            .expect("ledger")
            .keys
            .iter()
            .filter(|(_, s)| s.settled.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        for i in (1..pool.len()).rev() {
            pool.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let before: BTreeSet<String> = ledger
            .lock()
            .expect("ledger")
            .keys
            .keys()
            .cloned()
            .collect();
        let r = Arc::new(Round {
            client,
            fill: fill.clone(),
            ledger: ledger.clone(),
            next_id: next_id.clone(),
            acks: Arc::new(AtomicU64::new(0)),
            versioned_acks: AtomicU64::new(0),
            stop: Arc::new(AtomicBool::new(false)),
            overwrite_pool: Arc::new(Mutex::new(pool.clone())),
            failures: Mutex::new(Vec::new()),
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| tokio::spawn(writer(r.clone(), round, t, seed)))
            .collect();
        let readers: Vec<_> = (0..READERS)
            .map(|t| tokio::spawn(reader(r.clone(), round, t, seed)))
            .collect();
        let versioned = tokio::spawn(versioned_writer(r.clone(), round, seed));

        // Let a few PUTs and versioned writes be acknowledged (this round's floor), then kill
        // at a random moment in the traffic.
        let deadline = Instant::now() + Duration::from_secs(60);
        while r.acks.load(Ordering::Relaxed) < ROUND_ACKS
            || r.versioned_acks.load(Ordering::Relaxed) < ROUND_VERSIONED_ACKS
        {
            let failures = r.failures.lock().expect("failures").clone();
            assert!(failures.is_empty(), "round {round}: {failures:#?}");
            assert!(
                Instant::now() < deadline,
                "round {round}: {} PUTs and {} versioned writes acknowledged within 60 s",
                r.acks.load(Ordering::Relaxed),
                r.versioned_acks.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.next_u64() % 400)).await;
        r.stop.store(true, Ordering::SeqCst);
        node.kill9().await;
        for w in writers {
            w.await.expect("writer");
        }
        versioned.await.expect("versioned writer");
        let mut read_checks = 0;
        for t in readers {
            read_checks += t.await.expect("reader");
        }
        // Nothing failed while the node ran; the kill came after this round's floor.
        let failures = r.failures.lock().expect("failures").clone();
        assert!(failures.is_empty(), "round {round}: {failures:#?}");
        let (acks, versioned_acks) = (
            r.acks.load(Ordering::Relaxed),
            r.versioned_acks.load(Ordering::Relaxed),
        );
        assert!(
            acks >= ROUND_ACKS && versioned_acks >= ROUND_VERSIONED_ACKS,
            "round {round}: {acks} PUTs, {versioned_acks} versioned writes acknowledged"
        );

        let runtime = runtimes[(round + 1) % runtimes.len()];
        node = Node::start(dir.path(), runtime).await;
        let client = node.client();
        // Written this round: new keys, and the keys taken from the overwrite pool.
        let left: BTreeSet<String> = r
            .overwrite_pool
            .lock()
            .expect("pool")
            .iter()
            .cloned()
            .collect();
        let touched: BTreeSet<String> = {
            let l = ledger.lock().expect("ledger");
            l.keys
                .keys()
                .filter(|k| !before.contains(*k) || (pool.contains(k) && !left.contains(*k)))
                .cloned()
                .collect()
        };
        let last = round + 1 == rounds;
        let (present, absent) = verify(&client, &fill, &ledger, &touched, last).await;
        let versions = verify_versions(&client, &fill, &ledger).await;
        let l = ledger.lock().expect("ledger");
        eprintln!(
            "round {round}: {} acked ({} multipart), {} unacked so far ({} overwrites); checked {} keys \
             ({present} present, {absent} absent), {versions} versions, {read_checks} concurrent reads; \
             restarted on {runtime}; {:.1?}",
            l.acked,
            l.multipart_acked,
            l.unacked,
            l.overwrites,
            present + absent,
            started.elapsed()
        );
    }
    node.terminate().await;
}
