//! What the lifecycle worker (`node::lifecycle`) asks of the store: objects in bounded
//! batches, with what its rules filter on, and a delete that removes an object only if it is
//! still the version the worker judged (an overwrite in between is not expired with it); and
//! the same for the versions kept besides the current objects (noncurrent versions and
//! delete markers, the `VERSIONS` table): each with what makes it due (since when it is
//! noncurrent, how many noncurrent versions are newer, whether it is a lone delete marker),
//! judged again in the deleting transaction.

use std::ops::Bound;
use std::sync::{Arc, Weak};

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use redb::ReadableTable;

use super::codec::{self, ListFields, ObjectRecord};
use super::list::successor;
use super::version::{delete_in, new_version_possible, promote, versioning_in};
use super::{
    BUCKETS, Inner, OBJECTS, Store, VERSIONS, VersionId, bucket_prefix, db_err, now, object_key,
    require_bucket,
};

/// An object as the lifecycle worker sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedObject {
    /// Its key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Its ETag as stored (with the last-modified time, what identifies this version).
    pub etag: String,
    /// Modification time, Unix seconds.
    pub last_modified: i64,
    /// Its tags, when asked for (empty otherwise).
    pub tags: Vec<(String, String)>,
}

/// A batch of [`Store::scan_objects`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanBatch {
    /// Objects sorted by key.
    pub objects: Vec<ScannedObject>,
    /// The key to continue after, when more objects may follow.
    pub next: Option<String>,
}

/// A version kept besides its key's current object (a noncurrent version, or a delete
/// marker) as the lifecycle worker sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedVersion {
    /// Its key.
    pub key: String,
    /// Its version id.
    pub version_id: VersionId,
    /// Where it sorts among its key's versions (what identifies it in the store).
    pub seq: u64,
    /// Whether it is a delete marker.
    pub delete_marker: bool,
    /// Size in bytes (0 for a delete marker).
    pub size: u64,
    /// Modification time, Unix seconds.
    pub last_modified: i64,
    /// Its tags, when asked for (empty otherwise).
    pub tags: Vec<(String, String)>,
    /// When it became noncurrent: the modification time of the next newer entry of its key
    /// (object or delete marker). `None`: it is the current version (a delete marker).
    pub noncurrent_since: Option<i64>,
    /// How many noncurrent versions of its key are newer, counted up to the `newer_cap`
    /// asked for.
    pub newer_noncurrent: u32,
    /// Whether it is all its key has (no object, no other version).
    pub only_version: bool,
}

/// A batch of [`Store::scan_versions`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionScanBatch {
    /// Versions sorted by key, newest first within a key.
    pub versions: Vec<ScannedVersion>,
    /// The key and `seq` to continue after, when more versions may follow.
    pub next: Option<(String, u64)>,
}

/// An entry of `VERSIONS`: `rec`, kept as (`k`, `inv`), of the object key `key`.
struct Kept<'k> {
    key: String,
    k: &'k [u8],
    inv: u64,
    rec: ObjectRecord,
}

/// `entry` as the worker sees it in this view of the tables: its place among its key's
/// entries, newer noncurrent versions counted up to `newer_cap`.
fn scanned_version(
    objects: &impl ReadableTable<&'static [u8], &'static [u8]>,
    versions: &impl ReadableTable<(&'static [u8], u64), &'static [u8]>,
    entry: Kept<'_>,
    with_tags: bool,
    newer_cap: u32,
) -> S3Result<ScannedVersion> {
    let Kept { key, k, inv, rec } = entry;
    let current_object = match objects.get(k).map_err(db_err)? {
        Some(v) => Some(codec::decode::<ListFields<'_>>(v.value())?.last_modified),
        None => None,
    };
    let mut newer = versions
        .range::<(&[u8], u64)>((k, 0)..(k, inv))
        .map_err(db_err)?;
    let next_newer = match newer.next_back() {
        Some(item) => {
            let (_, v) = item.map_err(db_err)?;
            Some(codec::decode::<ListFields<'_>>(v.value())?.last_modified)
        }
        None => None,
    };
    let noncurrent_since = next_newer.or(current_object);
    let mut newer_noncurrent = 0;
    if newer_cap > 0 && noncurrent_since.is_some() {
        // The newer entries are noncurrent, but for a current delete marker (the newest,
        // when the key has no current object).
        let limit = newer_cap as usize + usize::from(current_object.is_none());
        let mut n = 0_usize;
        for item in versions
            .range::<(&[u8], u64)>((k, 0)..(k, inv))
            .map_err(db_err)?
            .take(limit)
        {
            item.map_err(db_err)?;
            n += 1;
        }
        newer_noncurrent = u32::try_from(n.saturating_sub(usize::from(current_object.is_none())))
            .unwrap_or(u32::MAX)
            .min(newer_cap);
    }
    let only_version = noncurrent_since.is_none()
        && versions
            .range::<(&[u8], u64)>((Bound::Excluded((k, inv)), Bound::Included((k, u64::MAX))))
            .map_err(db_err)?
            .next()
            .is_none();
    Ok(ScannedVersion {
        key,
        version_id: rec.version_id(),
        seq: rec.order(),
        delete_marker: rec.is_delete_marker(),
        size: if rec.is_delete_marker() { 0 } else { rec.size },
        last_modified: rec.last_modified,
        tags: if with_tags { rec.meta.tags } else { Vec::new() },
        noncurrent_since,
        newer_noncurrent,
        only_version,
    })
}

/// A handle on a [`Store`] that does not keep it open (the lifecycle worker's between passes):
/// a node's store closes with the node.
#[derive(Debug, Clone)]
pub struct WeakStore(Weak<Inner>);

impl WeakStore {
    /// The store, if it is still open.
    pub fn upgrade(&self) -> Option<Store> {
        self.0.upgrade().map(|inner| Store { inner })
    }
}

impl Store {
    /// A handle that does not keep the store open.
    pub fn downgrade(&self) -> WeakStore {
        WeakStore(Arc::downgrade(&self.inner))
    }

    /// Up to `limit` objects of `bucket` whose keys start with `prefix`, after the key `after`,
    /// with their tags if `with_tags` (which decodes whole records). `NoSuchBucket` if the
    /// bucket is gone.
    pub fn scan_objects(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
        with_tags: bool,
    ) -> S3Result<ScanBatch> {
        let txn = self.read_txn()?;
        require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
        let objects = txn.open_table(OBJECTS).map_err(db_err)?;
        let base = bucket_prefix(bucket);
        let mut full_prefix = base.clone();
        full_prefix.extend_from_slice(prefix.as_bytes());
        let from = match after {
            Some(a) if a.as_bytes() >= prefix.as_bytes() => {
                let mut k = base.clone();
                k.extend_from_slice(a.as_bytes());
                Bound::Excluded(k)
            }
            _ => Bound::Included(full_prefix.clone()),
        };
        let upper = successor(&full_prefix).map_or(Bound::Unbounded, Bound::Excluded);
        let range = objects
            .range::<&[u8]>((
                borrow(&from),
                match &upper {
                    Bound::Excluded(u) => Bound::Excluded(u.as_slice()),
                    _ => Bound::Unbounded,
                },
            ))
            .map_err(db_err)?;
        let mut batch = ScanBatch::default();
        for item in range {
            let (k, v) = item.map_err(db_err)?;
            let full = k.value();
            if !full.starts_with(&full_prefix) {
                break;
            }
            if batch.objects.len() == limit.max(1) {
                batch.next = batch.objects.last().map(|o| o.key.clone());
                break;
            }
            let key = String::from_utf8(full[base.len()..].to_vec()).map_err(|_| {
                S3Error::with_message(S3ErrorCode::InternalError, "stored key is not UTF-8")
            })?;
            let scanned = if with_tags {
                let rec: ObjectRecord = codec::decode(v.value())?;
                ScannedObject {
                    key,
                    size: rec.size,
                    etag: rec.etag,
                    last_modified: rec.last_modified,
                    tags: rec.meta.tags,
                }
            } else {
                let f: ListFields<'_> = codec::decode(v.value())?;
                ScannedObject {
                    key,
                    size: f.size,
                    etag: f.etag.to_owned(),
                    last_modified: f.last_modified,
                    tags: Vec::new(),
                }
            };
            batch.objects.push(scanned);
        }
        Ok(batch)
    }

    /// Delete `bucket`/`key` as DeleteObject does (its data files are removed after the
    /// commit), but only if it is still the version with `etag` and `last_modified`: the
    /// size removed, or `None` when the object is gone or was replaced since.
    pub fn expire_object(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
        last_modified: i64,
    ) -> S3Result<Option<u64>> {
        let judged = ScannedObject {
            key: key.to_owned(),
            size: 0,
            etag: etag.to_owned(),
            last_modified,
            tags: Vec::new(),
        };
        Ok(self
            .expire_objects(bucket, std::slice::from_ref(&judged))?
            .pop()
            .flatten())
    }

    /// [`Store::expire_object`] for each of `objects` (as [`Store::scan_objects`] gave them),
    /// in one commit: for each, the bytes expired, or `None` if it is no longer the version
    /// judged. In a versioned bucket an expired object gets a delete marker and keeps its
    /// version (and its bytes: 0 expired), as on AWS.
    pub fn expire_objects(
        &self,
        bucket: &str,
        objects: &[ScannedObject],
    ) -> S3Result<Vec<Option<u64>>> {
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        let keys = objects
            .iter()
            .map(|o| object_key(bucket, &o.key))
            .collect::<S3Result<Vec<_>>>()?;
        let removed = self.update(None, |txn| {
            // In a versioned bucket the expiry is a delete marker and the version stays, as
            // on AWS (object lock, which only versioned buckets have, never stops a marker).
            let versioned = versioning_in(self, txn, bucket)?.is_some();
            let mut removed = Vec::with_capacity(objects.len());
            for (o, k) in objects.iter().zip(&keys) {
                let current = {
                    let table = txn.open_table(OBJECTS).map_err(db_err)?;
                    match table.get(k.as_slice()).map_err(db_err)? {
                        Some(v) => {
                            let f: ListFields<'_> = codec::decode(v.value())?;
                            f.etag == o.etag && f.last_modified == o.last_modified
                        }
                        None => false,
                    }
                };
                if !current {
                    removed.push(None);
                } else if versioned && !new_version_possible(txn, k)? {
                    // Its delete marker would need a version id, and none is left for this
                    // key (an id ahead of the clock: see `store::version`); the rest of the
                    // batch still goes, and the key is judged again on the next pass.
                    tracing::warn!(bucket, key = %o.key, "lifecycle: no version id left for this key's delete marker; not expired");
                    removed.push(None);
                } else if versioned {
                    // Files only when a suspended bucket's marker replaces its null version.
                    let (_, files, size) = delete_in(
                        self,
                        txn,
                        bucket,
                        k,
                        None,
                        super::DeleteConditions::default(),
                        &|_| Ok(()),
                    )?;
                    removed.push(Some((files, size.unwrap_or(0), 0)));
                } else {
                    let mut table = txn.open_table(OBJECTS).map_err(db_err)?;
                    let old = match table.remove(k.as_slice()).map_err(db_err)? {
                        Some(v) => Some(codec::decode::<ObjectRecord>(v.value())?),
                        None => None,
                    };
                    removed.push(old.map(|old| (old.data.files(), old.size, old.size)));
                }
            }
            Ok(removed)
        })?;
        // For each: the files to retire, the bytes deleted, the bytes expired (a delete
        // marker expires an object without freeing its bytes).
        Ok(removed
            .into_iter()
            .map(|old| {
                old.map(|(files, deleted, expired)| {
                    if deleted > 0 || !files.is_empty() {
                        self.inner.counters.deleted(deleted);
                    }
                    self.inner.retire(&files);
                    expired
                })
            })
            .collect())
    }
}

impl Store {
    /// Up to `limit` versions of `bucket` kept besides the current objects (noncurrent
    /// versions and delete markers), of keys starting with `prefix`, after `after` (a key and
    /// `seq`), by key and newest first; with their tags if `with_tags`, their newer noncurrent
    /// versions counted up to `newer_cap`. `NoSuchBucket` if the bucket is gone.
    pub fn scan_versions(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, u64)>,
        limit: usize,
        with_tags: bool,
        newer_cap: u32,
    ) -> S3Result<VersionScanBatch> {
        let txn = self.read_txn()?;
        require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
        let objects = txn.open_table(OBJECTS).map_err(db_err)?;
        let versions = txn.open_table(VERSIONS).map_err(db_err)?;
        let base = bucket_prefix(bucket);
        let mut full_prefix = base.clone();
        full_prefix.extend_from_slice(prefix.as_bytes());
        let from = match after {
            Some((a, seq)) if a.as_bytes() >= prefix.as_bytes() => {
                let mut k = base.clone();
                k.extend_from_slice(a.as_bytes());
                (k, !seq, false)
            }
            _ => (full_prefix.clone(), 0, true),
        };
        let upper = successor(&full_prefix);
        let lower = if from.2 {
            Bound::Included((from.0.as_slice(), from.1))
        } else {
            Bound::Excluded((from.0.as_slice(), from.1))
        };
        let upper = match &upper {
            Some(u) => Bound::Excluded((u.as_slice(), 0)),
            None => Bound::Unbounded,
        };
        let mut batch = VersionScanBatch::default();
        for item in versions
            .range::<(&[u8], u64)>((lower, upper))
            .map_err(db_err)?
        {
            let (key, v) = item.map_err(db_err)?;
            let (full, inv) = key.value();
            if !full.starts_with(&full_prefix) {
                break;
            }
            if batch.versions.len() == limit.max(1) {
                batch.next = batch.versions.last().map(|v| (v.key.clone(), v.seq));
                break;
            }
            let name = String::from_utf8(full[base.len()..].to_vec()).map_err(|_| {
                S3Error::with_message(S3ErrorCode::InternalError, "stored key is not UTF-8")
            })?;
            let rec: ObjectRecord = codec::decode(v.value())?;
            let entry = Kept {
                key: name,
                k: full,
                inv,
                rec,
            };
            batch.versions.push(scanned_version(
                &objects, &versions, entry, with_tags, newer_cap,
            )?);
        }
        Ok(batch)
    }

    /// Remove for good each of `judged` (as [`Store::scan_versions`] gave them) that, as the
    /// deleting transaction sees it (newer noncurrent versions counted up to `newer_cap`), is
    /// still there and still `due`, and that object lock does not protect (a legal hold, or a
    /// retention not yet past: the check of a delete without bypass), in one commit; data
    /// files are removed after it. For each, the bytes removed (0 for a delete marker), or
    /// `None` if it was not removed.
    pub fn expire_versions(
        &self,
        bucket: &str,
        judged: &[ScannedVersion],
        newer_cap: u32,
        due: impl Fn(&ScannedVersion) -> bool,
    ) -> S3Result<Vec<Option<u64>>> {
        if judged.is_empty() {
            return Ok(Vec::new());
        }
        let keys = judged
            .iter()
            .map(|v| object_key(bucket, &v.key))
            .collect::<S3Result<Vec<_>>>()?;
        let at = now();
        let removed = self.update(None, |txn| {
            let mut objects = txn.open_table(OBJECTS).map_err(db_err)?;
            let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
            let mut removed = Vec::with_capacity(judged.len());
            for (j, k) in judged.iter().zip(&keys) {
                let inv = !j.seq;
                let rec: ObjectRecord = match versions.get((k.as_slice(), inv)).map_err(db_err)? {
                    Some(v) => codec::decode(v.value())?,
                    None => {
                        removed.push(None);
                        continue;
                    }
                };
                let locked = !rec.is_delete_marker()
                    && ferry_core::s3::xml::lock::check_delete(
                        rec.meta.retention.as_ref(),
                        rec.meta.legal_hold,
                        at,
                        false,
                    )
                    .is_err();
                let files = rec.data.files();
                let entry = Kept {
                    key: j.key.clone(),
                    k,
                    inv,
                    rec,
                };
                let view = scanned_version(&objects, &versions, entry, true, newer_cap)?;
                if locked || !due(&view) {
                    removed.push(None);
                    continue;
                }
                versions.remove((k.as_slice(), inv)).map_err(db_err)?;
                promote(&mut objects, &mut versions, k)?;
                removed.push(Some((files, view.size, view.delete_marker)));
            }
            Ok(removed)
        })?;
        Ok(removed
            .into_iter()
            .map(|r| {
                r.map(|(files, size, marker)| {
                    if !marker {
                        self.inner.counters.deleted(size);
                    }
                    self.inner.retire(&files);
                    size
                })
            })
            .collect())
    }
}

fn borrow(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
