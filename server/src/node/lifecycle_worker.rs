//! The lifecycle worker: on every node, now and then (`NodeConfig::lifecycle_interval`), one
//! pass over the buckets applies their enabled lifecycle rules to what this node holds.
//!
//! A pass runs on the blocking pool (the store is blocking), one bucket at a time and within a
//! bucket in batches of [`BATCH`] objects or uploads, so memory stays bounded whatever a bucket
//! holds; it checks the stop signal between batches. Each action has its function:
//! [`expire_current`] (Expiration `Days` / `Date`), [`abort_incomplete`]
//! (AbortIncompleteMultipartUpload), [`noncurrent_due`] (NoncurrentVersionExpiration) and
//! [`expired_marker_due`] (ExpiredObjectDeleteMarker, and the removal of expired object delete
//! markers that an Expiration by `Days` or `Date` does too, as on S3) — the last two judge the
//! versions kept besides the current objects, walked once by [`expire_versions`]. Objects are
//! removed through the store's delete path ([`Store::expire_objects`],
//! [`Store::expire_versions`]: a batch in one commit, data files after it), and only if still
//! the version judged (judged again in the deleting transaction), so an object overwritten
//! meanwhile stays; a version object lock protects (legal hold, retention not yet past) is
//! never removed.
//!
//! The worker holds the store only during a pass ([`WeakStore`] between passes), and a node
//! going away waits for a pass in progress to stop at its next batch, so the store closes
//! with the node.
//!
//! A lifecycle "day" is 86,400 s, or `NodeConfig::lifecycle_day_secs` (a testing aid, as Ceph
//! RGW's `rgw_lc_debug_interval`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ferry_core::rt::{Either, Runtime, Signal, race, system_unix_time};
use ferry_core::s3::xml::{LifecycleConfiguration, expiry_after_days};
use ferry_core::s3::{S3ErrorCode, S3Result};

use crate::metrics::counter;
use crate::store::{MAX_LIST, ScannedObject, ScannedVersion, Store, UploadsQuery, WeakStore};

/// Objects (or uploads) read from the store at a time.
const BATCH: usize = MAX_LIST;

/// What the worker has done since the node started (`/metrics`), and what ties a pass to the
/// node: a pass holds `running` throughout and stops between batches once the node is
/// `closed`, so that a stopped node waits for it ([`LifecycleStats::close`]) and the store
/// is closed when the node is.
#[derive(Debug, Default)]
pub(crate) struct LifecycleStats {
    running: Mutex<()>,
    closed: AtomicBool,
    passes: AtomicU64,
    objects_expired: AtomicU64,
    bytes_expired: AtomicU64,
    uploads_aborted: AtomicU64,
    delete_markers_removed: AtomicU64,
}

impl LifecycleStats {
    /// The node is going: no new pass, and wait for one in progress (it stops at its next
    /// batch).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        drop(self.running.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Its counters, named `<prefix>_lifecycle_...`.
    pub(crate) fn render(&self, o: &mut String, prefix: &str) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        counter(
            o,
            &format!("{prefix}_lifecycle_passes_total"),
            "Lifecycle passes over the buckets completed.",
            get(&self.passes),
        );
        counter(
            o,
            &format!("{prefix}_lifecycle_expired_objects_total"),
            "Objects removed by lifecycle expiration rules.",
            get(&self.objects_expired),
        );
        counter(
            o,
            &format!("{prefix}_lifecycle_expired_bytes_total"),
            "Bytes of the objects removed by lifecycle expiration rules.",
            get(&self.bytes_expired),
        );
        counter(
            o,
            &format!("{prefix}_lifecycle_aborted_uploads_total"),
            "Incomplete multipart uploads aborted by lifecycle rules.",
            get(&self.uploads_aborted),
        );
        counter(
            o,
            &format!("{prefix}_lifecycle_removed_delete_markers_total"),
            "Delete markers removed by lifecycle rules (noncurrent, or expired object delete markers).",
            get(&self.delete_markers_removed),
        );
    }
}

/// Run a pass at once and then every `interval` until `stop` is set or the node is closed.
/// The store is held only during a pass (`store` does not keep it open).
pub(crate) async fn run<R: Runtime>(
    rt: R,
    store: WeakStore,
    stats: Arc<LifecycleStats>,
    stop: Arc<Signal>,
    interval: Duration,
    day_secs: u64,
) {
    loop {
        let (s, st, sp) = (store.clone(), stats.clone(), stop.clone());
        let went_on = rt
            .unblock(move || {
                // Held first, then the store: a closing node that got the lock first finds
                // no pass holding its store.
                let _running = st.running.lock().unwrap_or_else(PoisonError::into_inner);
                let halt = Halt {
                    stop: &sp,
                    stats: &st,
                };
                let Some(store) = s.upgrade().filter(|_| !halt.now()) else {
                    return false;
                };
                pass(&store, &st, &halt, day_secs);
                true
            })
            .await;
        if !went_on {
            break;
        }
        if let Either::Right(()) = race(rt.sleep(interval), stop.wait()).await {
            break;
        }
    }
}

/// When a pass stops (between batches): the server stops, or the node is closed.
struct Halt<'a> {
    stop: &'a Signal,
    stats: &'a LifecycleStats,
}

impl Halt<'_> {
    fn now(&self) -> bool {
        self.stop.is_set() || self.stats.closed.load(Ordering::Acquire)
    }
}

/// One pass over every bucket, a page of buckets at a time.
fn pass(store: &Store, stats: &LifecycleStats, stop: &Halt<'_>, day_secs: u64) {
    let mut after: Option<String> = None;
    loop {
        let page = match store.list_buckets(after.as_deref(), MAX_LIST) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e.message, "lifecycle pass: cannot list buckets");
                return;
            }
        };
        for b in &page.buckets {
            if stop.now() {
                return;
            }
            match apply(store, stats, stop, &b.name, day_secs) {
                Ok(()) => {}
                // Deleted meanwhile: nothing left to do.
                Err(e) if e.code == S3ErrorCode::NoSuchBucket => {}
                Err(e) => {
                    tracing::warn!(bucket = %b.name, error = %e.message, "lifecycle pass failed");
                }
            }
        }
        if !page.is_truncated {
            break;
        }
        after = page.buckets.last().map(|b| b.name.clone());
    }
    stats.passes.fetch_add(1, Ordering::Relaxed);
}

/// Every action of `bucket`'s configuration, if it has one.
fn apply(
    store: &Store,
    stats: &LifecycleStats,
    stop: &Halt<'_>,
    bucket: &str,
    day_secs: u64,
) -> S3Result<()> {
    let Some(config) = store.bucket_settings(bucket)?.lifecycle()? else {
        return Ok(());
    };
    let run = Run {
        store,
        stats,
        stop,
        bucket,
        config: &config,
        day_secs,
    };
    expire_current(&run)?;
    abort_incomplete(&run)?;
    expire_versions(&run)
}

/// One bucket's pass.
struct Run<'a> {
    store: &'a Store,
    stats: &'a LifecycleStats,
    stop: &'a Halt<'a>,
    bucket: &'a str,
    config: &'a LifecycleConfiguration,
    day_secs: u64,
}

/// The longest prefix shared by the prefixes of `prefixes` (all keys when there is none).
fn common_prefix<'p>(mut prefixes: impl Iterator<Item = &'p str>) -> &'p str {
    let Some(mut common) = prefixes.next() else {
        return "";
    };
    for p in prefixes {
        let n = common
            .char_indices()
            .zip(p.chars())
            .find(|((_, a), b)| a != b)
            .map_or(common.len().min(p.len()), |((i, _), _)| i);
        common = &common[..n];
    }
    common
}

/// Expiration `Days` / `Date`: remove the current objects whose expiry has come.
fn expire_current(run: &Run<'_>) -> S3Result<()> {
    if !run.config.expires_objects() {
        return Ok(());
    }
    let prefix = common_prefix(
        run.config
            .rules
            .iter()
            .filter(|r| r.enabled && r.expiration.is_some())
            .map(|r| r.filter.prefix()),
    );
    let with_tags = run.config.expiration_needs_tags();
    let mut after: Option<String> = None;
    loop {
        if run.stop.now() {
            return Ok(());
        }
        let batch =
            run.store
                .scan_objects(run.bucket, prefix, after.as_deref(), BATCH, with_tags)?;
        let now = system_unix_time();
        let due: Vec<ScannedObject> = batch
            .objects
            .into_iter()
            .filter(|o| {
                run.config
                    .expiry(&o.key, o.size, &o.tags, o.last_modified, run.day_secs)
                    .is_some_and(|(at, _)| at <= now)
            })
            .collect();
        // One commit for the batch; an object replaced since it was read stays.
        for size in run
            .store
            .expire_objects(run.bucket, &due)?
            .into_iter()
            .flatten()
        {
            run.stats.objects_expired.fetch_add(1, Ordering::Relaxed);
            run.stats.bytes_expired.fetch_add(size, Ordering::Relaxed);
        }
        if !due.is_empty() {
            tracing::debug!(bucket = %run.bucket, objects = due.len(), "lifecycle expiring objects due");
        }
        match batch.next {
            Some(next) => after = Some(next),
            None => return Ok(()),
        }
    }
}

/// AbortIncompleteMultipartUpload: abort uploads started `DaysAfterInitiation` days ago
/// (rounded up to the next day boundary, as expirations are).
fn abort_incomplete(run: &Run<'_>) -> S3Result<()> {
    if !run.config.aborts_uploads() {
        return Ok(());
    }
    let (mut key_marker, mut id_marker) = (None::<String>, None::<String>);
    loop {
        if run.stop.now() {
            return Ok(());
        }
        let q = UploadsQuery {
            prefix: "",
            delimiter: None,
            key_marker: key_marker.as_deref(),
            upload_id_marker: id_marker.as_deref(),
            max_uploads: BATCH,
        };
        let page = run.store.list_uploads(run.bucket, &q)?;
        let now = system_unix_time();
        for u in &page.uploads {
            let Some(days) = run.config.abort_after(&u.key) else {
                continue;
            };
            if expiry_after_days(u.initiated.to_unix(), days, run.day_secs) > now {
                continue;
            }
            match run
                .store
                .abort_multipart_upload(run.bucket, &u.key, &u.upload_id)
            {
                Ok(()) => {
                    run.stats.uploads_aborted.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(bucket = %run.bucket, key = %u.key, "lifecycle aborted an upload");
                }
                // Completed or aborted meanwhile.
                Err(e) if e.code == S3ErrorCode::NoSuchUpload => {}
                Err(e) if e.code == S3ErrorCode::NoSuchBucket => return Err(e),
                Err(e) => {
                    tracing::warn!(
                        bucket = %run.bucket, key = %u.key, error = %e.message,
                        "lifecycle could not abort an upload"
                    );
                }
            }
        }
        if !page.is_truncated {
            return Ok(());
        }
        key_marker = page.next_key_marker;
        id_marker = page.next_upload_id_marker;
        if key_marker.is_none() {
            return Ok(());
        }
    }
}

/// NoncurrentVersionExpiration and expired object delete markers: walk the versions kept
/// besides the current objects (noncurrent versions and delete markers), in batches, and
/// remove those due ([`noncurrent_due`], [`expired_marker_due`]), each batch in one commit.
fn expire_versions(run: &Run<'_>) -> S3Result<()> {
    if !run.config.expires_versions() {
        return Ok(());
    }
    let prefix = common_prefix(
        run.config
            .rules
            .iter()
            .filter(|r| {
                r.enabled && (r.expiration.is_some() || r.noncurrent_version_expiration.is_some())
            })
            .map(|r| r.filter.prefix()),
    );
    let with_tags = run.config.noncurrent_needs_tags();
    let newer_cap = run.config.newer_noncurrent_needed();
    let mut after: Option<(String, u64)> = None;
    loop {
        if run.stop.now() {
            return Ok(());
        }
        let batch = run.store.scan_versions(
            run.bucket,
            prefix,
            after.as_ref().map(|(k, s)| (k.as_str(), *s)),
            BATCH,
            with_tags,
            newer_cap,
        )?;
        let now = system_unix_time();
        let due =
            |v: &ScannedVersion| noncurrent_due(run, v, now) || expired_marker_due(run, v, now);
        let judged: Vec<ScannedVersion> = batch.versions.into_iter().filter(due).collect();
        // One commit for the batch; each judged again there (and object lock checked).
        let removed = run
            .store
            .expire_versions(run.bucket, &judged, newer_cap, due)?;
        for (v, size) in judged.iter().zip(removed) {
            let Some(size) = size else { continue };
            if v.delete_marker {
                run.stats
                    .delete_markers_removed
                    .fetch_add(1, Ordering::Relaxed);
            } else {
                run.stats.objects_expired.fetch_add(1, Ordering::Relaxed);
                run.stats.bytes_expired.fetch_add(size, Ordering::Relaxed);
            }
        }
        if !judged.is_empty() {
            tracing::debug!(bucket = %run.bucket, versions = judged.len(), "lifecycle expiring versions due");
        }
        match batch.next {
            Some(next) => after = Some(next),
            None => return Ok(()),
        }
    }
}

/// NoncurrentVersionExpiration: a noncurrent version (or delete marker) noncurrent for
/// `NoncurrentDays`, unless one of the `NewerNoncurrentVersions` newest.
fn noncurrent_due(run: &Run<'_>, v: &ScannedVersion, now: i64) -> bool {
    v.noncurrent_since.is_some_and(|since| {
        run.config.noncurrent_expired(
            &v.key,
            v.size,
            &v.tags,
            since,
            v.newer_noncurrent,
            now,
            run.day_secs,
        )
    })
}

/// ExpiredObjectDeleteMarker (or an Expiration by `Days` / `Date` past for the marker): a
/// delete marker that is its key's current version and all the key has left.
fn expired_marker_due(run: &Run<'_>, v: &ScannedVersion, now: i64) -> bool {
    v.delete_marker
        && v.noncurrent_since.is_none()
        && v.only_version
        && run
            .config
            .removes_delete_marker(&v.key, v.last_modified, now, run.day_secs)
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn common_prefix_of_rules() {
        assert_eq!(common_prefix(["logs/a", "logs/b"].into_iter()), "logs/");
        assert_eq!(common_prefix(["logs/", "tmp/"].into_iter()), "");
        assert_eq!(common_prefix(["x"].into_iter()), "x");
        assert_eq!(common_prefix([].into_iter()), "");
        assert_eq!(common_prefix(["é1", "é2"].into_iter()), "é");
    }
}
