//! The storage node's engine: buckets, objects and multipart uploads on local disk.
//!
//! The API is synchronous and blocking (the HTTP layer calls it from a blocking thread pool) and
//! streaming: bodies go in through [`ObjectWriter`] / [`PartWriter`] chunk by chunk and come out
//! through [`ObjectReader`] (`std::io::Read`); no object is ever held in memory whole. Copy
//! buffers are 256 KiB buffers from [`BufferPool::global`](ferry_core::pool::BufferPool::global).
//!
//! # Layout
//!
//! ```text
//! DIR/meta.redb          metadata (redb, ACID): buckets, objects, object versions, uploads,
//!                        parts, fences
//! DIR/data/XY/<id>       immutable data files; <id> is 32 hex digits, XY its last two
//!                        (each XY made, and data/ fsynced, on its first file)
//! DIR/data/XY/<id>.tmp   data files being written (beside where they will be renamed)
//! DIR/tmp/               temp files of older versions (emptied at open)
//! ```
//!
//! Every directory and file the store makes is its owner's alone (0700, 0600: see [`perms`]).
//!
//! Keys never become paths: a data file is named by a fresh id (a random per-open seed and a
//! counter), and the metadata maps `bucket\0key` to its record. Keys such as `a`, `a/`, `a/b`,
//! `../x` or 1024-byte keys are just bytes in a B-tree.
//!
//! # Durability and atomicity
//!
//! A write streams into `data/XY/<id>.tmp` and renames it to `data/XY/<id>` when the body is
//! complete; then its commit joins a group commit ([`group`]), whose leader makes every file of
//! the group durable with one `syncfs(2)` of the data directory's file system (the files'
//! data and the directory entries naming them: one cache flush for the group, where an fsync
//! of each file and of its directory took two per object) before it commits the metadata
//! transaction (redb commits are durable when they return). The object is acknowledged after
//! that commit, so an acknowledged write survives `kill -9` or power loss, and a crash at any
//! earlier point leaves the old state: the new file is either a `.tmp` file or in `data/` but
//! unreferenced. Files a commit replaced (an overwritten object, aborted or unused parts) are
//! deleted after the commit. [`Store::open`] deletes every temp file and every data file that
//! no committed record references, so whatever an interruption leaves behind is collected at
//! the next start.
//!
//! # Versions
//!
//! A versioned bucket keeps every version of a key: the current one in the objects table (as
//! in an unversioned bucket, so the latest version is one lookup) and the others, with delete
//! markers, in a versions table (see [`version`]).
//!
//! Object, part and complete commits are group commits ([`group`]): those that queue while a
//! commit runs share the next write transaction and its fsync, each acknowledged after it.
//!
//! # Fences
//!
//! A bucket can be closed to writes for a while under a token ([`Store::fence_bucket`]): the
//! proxy's DeleteBucket fences every node so that no PUT lands between its emptiness check and
//! its deletes (see [`fence`]).
//!
//! # A full disk
//!
//! A data file that meets a full disk fails its write (`InsufficientStorage`); a metadata
//! commit that meets it leaves redb refusing writes until the database is reopened, which the
//! store does by itself once the disk has room (see [`meta`]). [`Store::writability`] says
//! which, for the node's readiness.
//!
//! # Concurrency
//!
//! redb serialises write transactions; conditions (`If-None-Match: *`, `If-Match`) and bucket
//! existence are checked inside the transaction that commits, so they are atomic. Concurrent
//! PUTs to one key each stream to their own file; the last commit wins and the others' files are
//! retired. Reads see a snapshot: an [`ObjectReader`] pins the data files of the version it
//! opened, and a file retired while pinned is deleted when its last reader is dropped, so a
//! reader streams the version it opened to the end even if the key is overwritten or deleted.
//! Listings read the committed B-tree, so an acknowledged PUT or DELETE is visible to the next
//! list.

mod bucket;
mod codec;
mod fence;
mod files;
mod group;
mod keyring;
mod lifecycle;
mod list;
mod meta;
mod multipart;
mod object;
pub(crate) mod perms;
mod ring;
mod sse;
mod stats;
mod types;
mod version;

pub(crate) use keyring::read_key_file;

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ferry_core::md5::shared::LaneStats;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};

pub use bucket::{BucketSetting, BucketSettings};
pub use fence::MAX_FENCE_LEASE;
pub use ferry_core::s3::version::{VersionId, Versioning};
pub use files::CleanupReport;
pub(crate) use files::{RingWrite, Spool};
pub use lifecycle::{ScanBatch, ScannedObject, ScannedVersion, VersionScanBatch, WeakStore};
pub use meta::{ROOM_TO_RECOVER, Writability};
pub use multipart::PartWriter;
pub use object::{ObjectReader, ObjectWriter};
pub use sse::{CustomerKey, EncryptWith, EncryptionInfo, Keyring, MasterKey};
pub use stats::StoreStats;
pub use types::{
    BucketInfo, BucketsPage, Checksum, CompleteOptions, CompleteResult, CompletedPart, CopyOptions,
    CopySource, DeleteConditions, DeleteOptions, DeleteOutcome, ExpectedChecksum, GetOptions,
    HeadOptions, ListQuery, MetadataDirective, MultipartChecksum, ObjectEntry, ObjectInfo,
    ObjectMeta, ObjectsPage, PartEntry, PartOf, PartsPage, Placed, PutResult, ReadRange,
    RequestOwned, UploadEntry, UploadsPage, UploadsQuery, VersionEntry, VersionsPage,
    VersionsQuery, WriteConditions,
};

use codec::{DataLayout, ObjectRecord, PartRecord};
use files::{FanDirs, FileId, IdGen, Pins};

/// Smallest size of every part but the last in CompleteMultipartUpload, as in S3 (5 MiB).
pub const DEFAULT_MIN_PART_SIZE: u64 = 5 << 20;
/// Highest part number.
pub const MAX_PARTS: u32 = 10_000;
/// Longest key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// Most entries a listing page returns.
pub const MAX_LIST: usize = 1000;
/// Size of the pooled buffers writes and copies go through.
pub const COPY_BUF_SIZE: usize = 256 << 10;

/// The storage engine's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// Minimum size of every part but the last of a multipart upload ([`DEFAULT_MIN_PART_SIZE`]);
    /// tests lower it.
    pub min_part_size: u64,
    /// fsync data files, directories and metadata commits (default `true`). `false` is for tests
    /// and benchmarks only: it gives up durability across a crash, not atomicity.
    pub fsync: bool,
    /// Write data files with `O_DIRECT` where the file system takes it (default `true`): the
    /// bytes go from the pooled buffers to the disk without a copy into the page cache, which
    /// was the largest cost of a PUT. A data file's unaligned tail (its last partial 4 KiB) is
    /// written through the page cache; a file system that refuses `O_DIRECT` (tmpfs) gets
    /// every byte that way. `false` writes everything through the page cache, so a GET right
    /// after a PUT is served from memory rather than from the disk.
    pub direct_io: bool,
    /// Submit the `O_DIRECT` writes of streamed bodies (PUT, UploadPart, POST) through
    /// `io_uring` from the task that received the bytes (default `true`), instead of handing
    /// each buffer to the runtime's blocking pool. Where the kernel has no `io_uring`, or
    /// forbids it, writes take the blocking pool whatever this says.
    pub io_uring: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            min_part_size: DEFAULT_MIN_PART_SIZE,
            fsync: true,
            direct_io: true,
            io_uring: true,
        }
    }
}

/// The storage engine of one node; cheap to clone (all clones share one store).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    meta: meta::MetaDb,
    root: PathBuf,
    data: PathBuf,
    data_dir: std::fs::File,
    config: StoreConfig,
    ids: IdGen,
    pins: Mutex<Pins>,
    cleanup: CleanupReport,
    fans: FanDirs,
    counters: stats::Counters,
    committer: group::Committer,
    lanes: files::Lanes,
    /// Where streamed bodies' `O_DIRECT` writes go (see [`ring`]); `None` when
    /// [`StoreConfig::io_uring`] is off or the kernel refused a ring.
    ring: Option<ring::Ring>,
    /// Cleared when the file system refused an `O_DIRECT` open: later files do not try.
    direct_ok: std::sync::atomic::AtomicBool,
    /// Buckets' settings as last committed (see [`bucket::SettingsCache`]).
    settings: bucket::SettingsCache,
    /// Some bucket has (or had) a versioning state: writes read their bucket's state in
    /// their transaction. While no bucket ever had one, they skip that lookup (see
    /// [`version`]).
    versioned: std::sync::atomic::AtomicBool,
    /// The SSE-S3 master key, read (or made) on first use from `master_path` (default
    /// `DIR/sse-master.key`).
    master: std::sync::OnceLock<MasterKey>,
    master_path: std::sync::OnceLock<PathBuf>,
    /// The SSE-KMS keyring (`ferry node --sse-kms-keyring`), if the node has one.
    keyring: std::sync::OnceLock<Keyring>,
}

impl sse::KeySource for Inner {
    fn master_key(&self) -> S3Result<&MasterKey> {
        Inner::master_key(self)
    }

    fn keyring(&self) -> Option<&Keyring> {
        self.keyring.get()
    }
}

impl Inner {
    /// The SSE-S3 master key, read or made on first use.
    pub(crate) fn master_key(&self) -> S3Result<&MasterKey> {
        if let Some(k) = self.master.get() {
            return Ok(k);
        }
        let path = self
            .master_path
            .get()
            .cloned()
            .unwrap_or_else(|| sse::default_master_key_path(&self.root));
        let key = MasterKey::load_or_create(&path).map_err(|e| {
            tracing::error!(path = %path.display(), error = %e, "SSE master key unusable");
            S3Error::with_message(
                S3ErrorCode::InternalError,
                "the SSE-S3 master key is unusable",
            )
        })?;
        Ok(self.master.get_or_init(|| key))
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("config", &self.config)
            .finish()
    }
}

/// Metadata layout version, in [`META`]: bumped when tables change incompatibly.
const LAYOUT_VERSION: u64 = 1;
/// The layout once a bucket has had a versioning state: the versions table holds records that
/// builds before it would not count (their open-time cleanup would delete the files of old
/// versions), so they refuse such a store. Set by the first versioned write.
const VERSIONED_LAYOUT: u64 = 2;
/// The layout once an object has been written encrypted: its record's encryption extension
/// is one that builds before it would skip, serving the ciphertext as the object, so they
/// refuse such a store. It implies [`VERSIONED_LAYOUT`]. Set by the first encrypted write.
const ENCRYPTED_LAYOUT: u64 = 3;

/// Raise the store's layout to `to` in `txn` (never lower it).
pub(crate) fn raise_layout(txn: &WriteTransaction, to: u64) -> S3Result<()> {
    let mut meta = txn.open_table(META).map_err(db_err)?;
    let layout = meta.get("layout").map_err(db_err)?.map(|v| v.value());
    if layout.is_none_or(|v| v < to) {
        meta.insert("layout", to).map_err(db_err)?;
    }
    Ok(())
}

/// Store-wide settings (`"layout"` → [`LAYOUT_VERSION`]).
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
/// Bucket name → `BucketRecord`.
const BUCKETS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("buckets");
/// `bucket ++ \0 ++ key` → `ObjectRecord`. Bucket names hold no NUL, so a bucket's objects are
/// exactly the keys starting with `bucket\0`, in key byte order.
const OBJECTS: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("objects");
/// (`bucket ++ \0 ++ key`, upload id) → `UploadRecord`. Upload ids sort by creation time.
const UPLOADS: TableDefinition<'_, (&[u8], &str), &[u8]> = TableDefinition::new("uploads");
/// (`bucket ++ \0 ++ key`, `!seq`) → `ObjectRecord`: the versions of keys of versioned buckets
/// that are not in [`OBJECTS`] (noncurrent ones, and a current delete marker), newest first
/// (see [`version`]).
const VERSIONS: TableDefinition<'_, (&[u8], u64), &[u8]> = TableDefinition::new("versions");
/// (upload id, part number) → `PartRecord`.
const PARTS: TableDefinition<'_, (&str, u32), &[u8]> = TableDefinition::new("parts");
/// Bucket name → `FenceRecord`: buckets closed to writes for a while (see [`fence`]).
const FENCES: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("fences");
/// Upload id → `CompletedRecord`: uploads completed in the last [`COMPLETED_TTL_SECS`], so
/// that a CompleteMultipartUpload retried after its answer was lost gets the same answer.
const COMPLETED: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("completed_uploads");
/// How long a completed upload answers a retried CompleteMultipartUpload (seconds).
pub const COMPLETED_TTL_SECS: i64 = 15 * 60;
/// (bucket name, [`BucketSetting::name`]) → the setting's document, stored as given (see
/// [`BucketSetting`]). Kept apart from `BucketRecord` so a new kind of setting needs no new
/// record format; removed with the bucket.
const BUCKET_SETTINGS: TableDefinition<'_, (&str, &str), &[u8]> =
    TableDefinition::new("bucket_settings");

/// The store's ring, if it is to have one and the kernel grants it.
fn open_ring(config: &StoreConfig) -> Option<ring::Ring> {
    if !(config.io_uring && config.direct_io) {
        return None;
    }
    ring::Ring::new()
        .inspect_err(|e| {
            tracing::warn!(error = %e, "no io_uring: data files are written through the blocking pool");
        })
        .ok()
}

impl Store {
    /// Open (or create) the store in `dir` with default settings.
    ///
    /// Cleans up after interrupted writes: deletes every temp file and every data file that
    /// committed metadata does not reference.
    pub fn open(dir: impl AsRef<Path>) -> io::Result<Store> {
        Self::open_with(dir, StoreConfig::default())
    }

    /// Open (or create) the store in `dir` with `config`.
    pub fn open_with(dir: impl AsRef<Path>, config: StoreConfig) -> io::Result<Store> {
        let root = dir.as_ref().to_path_buf();
        let data = root.join("data");
        // Where versions before 2026-12 wrote temp files: emptied at open if it exists.
        let tmp = root.join("tmp");
        // Owner-only, whatever the umask (see `perms`).
        perms::create_dir_all(&data)?;
        if config.fsync {
            // Whatever directories there are (from an earlier run too) are durable from here.
            files::sync_dir(&root)?;
            files::sync_dir(&data)?;
        }
        let path = root.join("meta.redb");
        // redb would create the file with the default mode: it gets an empty 0600 one.
        perms::precreate_file(&path)?;
        for p in [&root, &data, &path] {
            perms::warn_if_shared(p);
        }
        let db = Database::create(&path).map_err(io::Error::other)?;
        let layout = init_tables(&db)?;
        version::repair_sequence(&db)?;
        let (referenced, objects, bytes) = referenced_files(&db)?;
        let fans = FanDirs::new();
        let cleanup = files::cleanup(&tmp, &data, &referenced, &fans)?;
        Ok(Store {
            inner: Arc::new(Inner {
                meta: meta::MetaDb::new(path, db),
                root,
                data_dir: std::fs::File::open(&data)?,
                data,
                config,
                ids: IdGen::new()?,
                pins: Mutex::new(Pins::default()),
                cleanup,
                fans,
                counters: stats::Counters::new(objects, bytes),
                committer: group::Committer::default(),
                lanes: files::Lanes::new(),
                ring: open_ring(&config),
                direct_ok: std::sync::atomic::AtomicBool::new(config.direct_io),
                settings: bucket::SettingsCache::default(),
                versioned: std::sync::atomic::AtomicBool::new(layout >= VERSIONED_LAYOUT),
                master: std::sync::OnceLock::new(),
                master_path: std::sync::OnceLock::new(),
                keyring: std::sync::OnceLock::new(),
            }),
        })
    }

    /// What the store's MD5 lanes hashed: every byte written to a data file (PUTs, parts and
    /// copies) is hashed there, concurrent writes' buffers side by side.
    pub fn md5_lanes(&self) -> LaneStats {
        self.inner.lanes.stats()
    }

    /// Chunks waiting in the MD5 lanes now, not yet taken into a batch.
    pub fn md5_lane_queued(&self) -> usize {
        self.inner.lanes.queued_chunks()
    }

    /// Writes one batch of the MD5 lanes can hash side by side (16 with AVX-512, 8 with AVX2).
    pub fn md5_lane_width(&self) -> usize {
        self.inner.lanes.backend().lanes()
    }

    /// The settings this store was opened with.
    pub fn config(&self) -> StoreConfig {
        self.inner.config
    }

    /// The directory this store lives in.
    pub fn dir(&self) -> &Path {
        &self.inner.root
    }

    /// Read (or make) the SSE-S3 master key in `path` instead of `DIR/sse-master.key`; only
    /// before the key's first use. Whether it was set.
    pub fn use_master_key_file(&self, path: PathBuf) -> bool {
        self.inner.master_path.set(path).is_ok()
    }

    /// Read the SSE-S3 master key now if its file exists, so that a file that is unusable (not
    /// keys, or readable by group or others) stops the node at start rather than failing its
    /// first SSE-S3 request; a missing file is made on first use.
    pub fn check_master_key(&self) -> io::Result<()> {
        let path = self
            .inner
            .master_path
            .get()
            .cloned()
            .unwrap_or_else(|| sse::default_master_key_path(&self.inner.root));
        if let Some(key) = MasterKey::load(&path)? {
            let _ = self.inner.master.set(key);
        }
        Ok(())
    }

    /// Encrypt SSE-KMS writes with (and read SSE-KMS objects through) this keyring; only
    /// before its first use. Whether it was set.
    pub fn use_kms_keyring(&self, keyring: Keyring) -> bool {
        self.inner.keyring.set(keyring).is_ok()
    }

    /// What the cleanup at open removed.
    pub fn cleanup_report(&self) -> CleanupReport {
        self.inner.cleanup
    }

    /// The store's figures now (objects, bytes, commits, files, disk space, writability).
    pub fn stats(&self) -> StoreStats {
        let pending = Pins::lock(&self.inner.pins).pending();
        let mut s = self.inner.counters.snapshot(pending, &self.inner.root);
        s.writable = self.is_writable();
        s.commit_queued = self.inner.committer.queued() as u64;
        s.page_cache = self.inner.meta.page_cache();
        s
    }

    /// Whether the metadata store answers (a read transaction opens).
    pub fn is_readable(&self) -> bool {
        self.read_txn().is_ok()
    }

    /// Run `f` in a write transaction and commit it.
    ///
    /// `staged` is the data file the transaction will reference: if `f` refuses (an `Err`), the
    /// transaction is aborted and the file deleted; once the commit is attempted the file is kept
    /// (should the commit fail, its fate is unknown until the reopened metadata store, or
    /// open-time cleanup, looks). A commit that fails on an I/O error (a full disk) leaves the
    /// metadata store refusing writes until it is reopened, which [`meta`] does.
    fn update<T>(
        &self,
        staged: Option<files::Staged>,
        f: impl FnOnce(&WriteTransaction) -> S3Result<T>,
    ) -> S3Result<T> {
        let db = self.write_db()?;
        let mut txn = db.begin_write().map_err(|e| self.meta_failed(e.into()))?;
        if !self.inner.config.fsync {
            txn.set_durability(Durability::None).map_err(db_err)?;
        }
        let out = match f(&txn) {
            Ok(out) => out,
            Err(e) => {
                let _ = txn.abort();
                return Err(e);
            }
        };
        let staged = staged.map(files::Staged::keep);
        let started = std::time::Instant::now();
        let committed = txn.commit();
        self.inner.counters.attempted(1);
        if let Err(e) = committed {
            if let Some(id) = staged {
                self.inner.meta.commit_unknown(id);
            }
            return Err(self.meta_failed(e.into()));
        }
        self.inner.counters.commit(started.elapsed());
        Ok(out)
    }
}

/// Create the tables a store lacks; the store's layout.
fn init_tables(db: &Database) -> io::Result<u64> {
    let txn = db.begin_write().map_err(io::Error::other)?;
    let found = {
        let mut meta = txn.open_table(META).map_err(io::Error::other)?;
        let layout = meta
            .get("layout")
            .map_err(io::Error::other)?
            .map(|v| v.value());
        let found = match layout {
            None => {
                meta.insert("layout", LAYOUT_VERSION)
                    .map_err(io::Error::other)?;
                LAYOUT_VERSION
            }
            Some(v @ (LAYOUT_VERSION | VERSIONED_LAYOUT | ENCRYPTED_LAYOUT)) => v,
            Some(v) => {
                return Err(io::Error::other(format!(
                    "store layout {v} is not supported (this build reads {LAYOUT_VERSION} to \
                     {ENCRYPTED_LAYOUT})"
                )));
            }
        };
        drop(meta);
        txn.open_table(BUCKETS).map_err(io::Error::other)?;
        txn.open_table(OBJECTS).map_err(io::Error::other)?;
        // Stores written before versions get the (empty) table here.
        txn.open_table(VERSIONS).map_err(io::Error::other)?;
        txn.open_table(UPLOADS).map_err(io::Error::other)?;
        txn.open_table(PARTS).map_err(io::Error::other)?;
        txn.open_table(FENCES).map_err(io::Error::other)?;
        txn.open_table(BUCKET_SETTINGS).map_err(io::Error::other)?;
        txn.open_table(COMPLETED).map_err(io::Error::other)?;
        found
    };
    txn.commit().map_err(io::Error::other)?;
    Ok(found)
}

/// Every data file committed metadata references (objects' files, every version's, and
/// uploaded parts), and the number of objects (every version but delete markers) and their
/// bytes.
fn referenced_files(db: &Database) -> io::Result<(HashSet<FileId>, u64, u64)> {
    let to_io = |e: S3Error| io::Error::other(e.to_string());
    let txn = db.begin_read().map_err(io::Error::other)?;
    let mut set = HashSet::new();
    let objects = txn.open_table(OBJECTS).map_err(io::Error::other)?;
    let (mut count, mut bytes) = (0u64, 0u64);
    for item in objects.iter().map_err(io::Error::other)? {
        let (_, v) = item.map_err(io::Error::other)?;
        let rec: ObjectRecord = codec::decode(v.value()).map_err(to_io)?;
        count += 1;
        bytes = bytes.saturating_add(rec.size);
        match rec.data {
            DataLayout::Single(f) => {
                set.insert(f);
            }
            DataLayout::Parts(parts) => set.extend(parts.iter().map(|p| p.file)),
        }
    }
    let versions = txn.open_table(VERSIONS).map_err(io::Error::other)?;
    for item in versions.iter().map_err(io::Error::other)? {
        let (_, v) = item.map_err(io::Error::other)?;
        let rec: ObjectRecord = codec::decode(v.value()).map_err(to_io)?;
        if !rec.is_delete_marker() {
            count += 1;
            bytes = bytes.saturating_add(rec.size);
        }
        set.extend(rec.data.files());
    }
    let parts = txn.open_table(PARTS).map_err(io::Error::other)?;
    for item in parts.iter().map_err(io::Error::other)? {
        let (_, v) = item.map_err(io::Error::other)?;
        let rec: PartRecord = codec::decode(v.value()).map_err(to_io)?;
        set.insert(rec.file);
    }
    Ok((set, count, bytes))
}

/// A metadata-store failure: `InsufficientStorage` on a full disk, `ServiceUnavailable` on
/// another I/O error (a write transaction's commit says which, and starts the reopen: see
/// [`meta`]), `InternalError` otherwise.
fn db_err(e: impl Into<redb::Error>) -> S3Error {
    let e = e.into();
    match &e {
        redb::Error::Io(io) if meta::is_disk_full(io) => meta::insufficient_storage(),
        redb::Error::Io(_) | redb::Error::PreviousIo => {
            S3Error::with_message(S3ErrorCode::ServiceUnavailable, e.to_string())
        }
        _ => S3Error::with_message(S3ErrorCode::InternalError, e.to_string()),
    }
}

/// A data-file failure: the client sees `InternalError`.
fn io_err(e: io::Error) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, e.to_string())
}

/// Now, Unix seconds.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Bucket names must not contain NUL (it separates bucket and key in [`OBJECTS`]); S3's naming
/// rules are the HTTP layer's to enforce.
fn check_bucket_name(name: &str) -> S3Result<()> {
    if name.is_empty() || name.len() > 255 || name.contains('\0') {
        return Err(S3Error::new(S3ErrorCode::InvalidBucketName));
    }
    Ok(())
}

fn check_key(key: &str) -> S3Result<()> {
    if key.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "object keys must not be empty",
        ));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(S3Error::new(S3ErrorCode::KeyTooLongError));
    }
    Ok(())
}

/// `bucket ++ \0`: the prefix of every [`OBJECTS`] / [`UPLOADS`] key of a bucket.
fn bucket_prefix(bucket: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(bucket.len() + 1);
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k
}

/// `bucket ++ \0 ++ key`. Checks the bucket name: one with a NUL would alias another bucket's
/// keys (`"a\0x"`, `"y"` and `"a"`, `"x\0y"`).
fn object_key(bucket: &str, key: &str) -> S3Result<Vec<u8>> {
    check_bucket_name(bucket)?;
    let mut k = Vec::with_capacity(bucket.len() + 1 + key.len());
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k.extend_from_slice(key.as_bytes());
    Ok(k)
}

/// Whether `bucket` exists, in `txn`'s view.
fn bucket_exists(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    bucket: &str,
) -> S3Result<bool> {
    Ok(table.get(bucket).map_err(db_err)?.is_some())
}

/// `NoSuchBucket` unless `bucket` is in `table` (the buckets table of the caller's transaction).
fn require_bucket(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    bucket: &str,
) -> S3Result<()> {
    if bucket_exists(table, bucket)? {
        Ok(())
    } else {
        Err(S3Error::new(S3ErrorCode::NoSuchBucket))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_of_a_bucket_share_its_prefix_and_no_other() {
        let p = bucket_prefix("a");
        let k = |b, k| object_key(b, k).unwrap();
        assert!(k("a", "x").starts_with(&p));
        assert!(!k("ab", "x").starts_with(&p));
        assert!(!k("a-", "\0").starts_with(&p));
        // Bucket order then key order.
        assert!(k("a", "\u{10ffff}") < k("a-", ""));
        // A NUL in a bucket name would alias another bucket's keys.
        assert_eq!(
            object_key("a\0x", "y").unwrap_err().code,
            S3ErrorCode::InvalidBucketName
        );
    }

    #[test]
    fn names_and_keys_are_checked() {
        assert!(check_bucket_name("a\0b").is_err());
        assert!(check_bucket_name("").is_err());
        assert!(check_bucket_name("ok").is_ok());
        assert_eq!(
            check_key(&"k".repeat(1025)).unwrap_err().code,
            S3ErrorCode::KeyTooLongError
        );
        assert!(check_key(&"k".repeat(1024)).is_ok());
        assert!(check_key("").is_err());
    }
}
