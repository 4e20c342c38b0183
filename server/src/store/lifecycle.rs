//! What the lifecycle worker (`node::lifecycle`) asks of the store: objects in bounded
//! batches, with what its rules filter on, and a delete that removes an object only if it is
//! still the version the worker judged (an overwrite in between is not expired with it).

use std::ops::Bound;
use std::sync::{Arc, Weak};

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use redb::ReadableTable;

use super::codec::{self, ListFields, ObjectRecord};
use super::list::successor;
use super::version::{delete_in, versioning_in};
use super::{BUCKETS, Inner, OBJECTS, Store, bucket_exists, bucket_prefix, db_err, object_key};

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
        if !bucket_exists(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)? {
            return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
        }
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
                } else if versioned {
                    // Files only when a suspended bucket's marker replaces its null version.
                    let (_, files, size) = delete_in(self, txn, bucket, k, None, &|_| Ok(()))?;
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

fn borrow(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
