//! Buckets: create, delete, head, list, and their settings (owner, policy, ACL, CORS,
//! tagging, lifecycle, default encryption, public access block, ownership controls).

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ferry_core::s3::acl::Acl;
use ferry_core::s3::bucket_config::ConfigKind;
use ferry_core::s3::policy::Policy;
use ferry_core::s3::xml::{
    LifecycleConfiguration, ObjectOwnership, OwnershipControls, PublicAccessBlock,
    ServerSideEncryptionConfiguration,
};

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;
use redb::ReadableTable;

use super::codec::{self, BucketRecord};
use super::fence::{bucket_is_empty, take_fence_for_delete};
use super::types::{BucketInfo, BucketsPage};
use super::{
    BUCKET_SETTINGS, BUCKETS, FENCES, MAX_LIST, Store, bucket_exists, bucket_prefix,
    check_bucket_name, db_err, now,
};

/// A bucket-level setting, stored as one document per bucket and kind, as the operation that
/// sets it gave it (the store does not read it; the node parses and checks it before storing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketSetting {
    /// The owning user's canonical id.
    Owner,
    /// The bucket policy (JSON).
    Policy,
    /// The access control list.
    Acl,
    /// The CORS configuration.
    Cors,
    /// The bucket's tag set.
    Tagging,
    /// The versioning state (`Enabled` or `Suspended`; none: never versioned), read by the
    /// store itself (see `store::version`).
    Versioning,
    /// The object lock configuration (present: object lock is on), in
    /// `ObjectLockConfiguration::to_stored`'s form.
    ObjectLock,
    /// The lifecycle configuration.
    Lifecycle,
    /// The default encryption (`<ServerSideEncryptionConfiguration>`, as Ferry writes it).
    Encryption,
    /// The public access block (`<PublicAccessBlockConfiguration>`, as Ferry writes it).
    PublicAccessBlock,
    /// The ownership controls (`<OwnershipControls>`, as Ferry writes them; none: a bucket
    /// created before Ferry had them, which behaves as `BucketOwnerPreferred`).
    OwnershipControls,
}

impl BucketSetting {
    /// Every kind, for removing them all with the bucket.
    pub const ALL: [BucketSetting; 11] = [
        BucketSetting::Owner,
        BucketSetting::Policy,
        BucketSetting::Acl,
        BucketSetting::Cors,
        BucketSetting::Tagging,
        BucketSetting::Versioning,
        BucketSetting::ObjectLock,
        BucketSetting::Lifecycle,
        BucketSetting::Encryption,
        BucketSetting::PublicAccessBlock,
        BucketSetting::OwnershipControls,
    ];

    /// Its key in the settings table. Stored: never change one.
    pub fn name(self) -> &'static str {
        match self {
            BucketSetting::Owner => "owner",
            BucketSetting::Policy => "policy",
            BucketSetting::Acl => "acl",
            BucketSetting::Cors => "cors",
            BucketSetting::Tagging => "tagging",
            BucketSetting::Versioning => "versioning",
            BucketSetting::ObjectLock => "object-lock",
            BucketSetting::Lifecycle => "lifecycle",
            BucketSetting::Encryption => "encryption",
            BucketSetting::PublicAccessBlock => "public-access-block",
            BucketSetting::OwnershipControls => "ownership-controls",
        }
    }
}

impl From<ConfigKind> for BucketSetting {
    /// The setting a bucket configuration is stored as.
    fn from(kind: ConfigKind) -> Self {
        match kind {
            ConfigKind::Versioning => Self::Versioning,
            ConfigKind::ObjectLock => Self::ObjectLock,
            ConfigKind::Encryption => Self::Encryption,
            ConfigKind::Policy => Self::Policy,
            ConfigKind::Cors => Self::Cors,
            ConfigKind::Lifecycle => Self::Lifecycle,
            ConfigKind::Tagging => Self::Tagging,
            ConfigKind::Acl => Self::Acl,
            ConfigKind::PublicAccessBlock => Self::PublicAccessBlock,
            ConfigKind::OwnershipControls => Self::OwnershipControls,
        }
    }
}

/// A bucket's settings, read together.
#[derive(Debug, Clone, Default)]
pub struct BucketSettings {
    bucket: String,
    /// By the index of the kind in [`BucketSetting::ALL`].
    values: [Option<Vec<u8>>; BucketSetting::ALL.len()],
    /// The policy, parsed once (settings are cached: see [`SettingsCache`]).
    policy: OnceLock<Result<Option<Arc<Policy>>, S3Error>>,
    /// The ACL, parsed once.
    acl: OnceLock<Result<Option<Arc<Acl>>, S3Error>>,
    /// The lifecycle configuration, parsed once (GET and HEAD ask it for `x-amz-expiration`).
    lifecycle: OnceLock<Result<Option<Arc<LifecycleConfiguration>>, S3Error>>,
    /// The default encryption, parsed once (every PutObject asks it).
    encryption: OnceLock<Result<Option<Arc<ServerSideEncryptionConfiguration>>, S3Error>>,
    /// The public access block, parsed once (every authorization asks it).
    public_access_block: OnceLock<Result<PublicAccessBlock, S3Error>>,
    /// The object ownership, parsed once (authorization and every ACL ask it).
    object_ownership: OnceLock<Result<ObjectOwnership, S3Error>>,
}

impl BucketSettings {
    /// The setting `kind`, if the bucket has it.
    pub fn get(&self, kind: BucketSetting) -> Option<&[u8]> {
        let i = BucketSetting::ALL.iter().position(|k| *k == kind)?;
        self.values[i].as_deref()
    }

    /// The owner's canonical id, if the bucket records one (buckets created before users
    /// existed do not: they are the primary user's).
    pub fn owner(&self) -> Option<&str> {
        self.get(BucketSetting::Owner)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The bucket's versioning state (`None`: never versioned).
    pub fn versioning(&self) -> Option<ferry_core::s3::version::Versioning> {
        self.get(BucketSetting::Versioning)
            .and_then(ferry_core::s3::version::Versioning::parse)
    }

    /// The bucket's ACL, if it has one (it was checked before it was stored).
    pub fn acl(&self) -> S3Result<Option<Arc<Acl>>> {
        self.acl
            .get_or_init(|| {
                let Some(doc) = self.get(BucketSetting::Acl) else {
                    return Ok(None);
                };
                Acl::parse_xml(doc).map(|a| Some(Arc::new(a))).map_err(|e| {
                    S3Error::with_message(
                        S3ErrorCode::InternalError,
                        format!(
                            "stored ACL of {} does not parse: {}",
                            self.bucket, e.message
                        ),
                    )
                })
            })
            .clone()
    }

    /// The bucket's lifecycle configuration, if it has one (checked before it was stored).
    pub fn lifecycle(&self) -> S3Result<Option<Arc<LifecycleConfiguration>>> {
        self.lifecycle
            .get_or_init(|| {
                let Some(doc) = self.get(BucketSetting::Lifecycle) else {
                    return Ok(None);
                };
                LifecycleConfiguration::parse_xml(doc)
                    .map(|c| Some(Arc::new(c)))
                    .map_err(|e| {
                        S3Error::with_message(
                            S3ErrorCode::InternalError,
                            format!(
                                "stored lifecycle configuration of {} does not parse: {}",
                                self.bucket, e.message
                            ),
                        )
                    })
            })
            .clone()
    }

    /// The bucket's default encryption, if it has one (checked before it was stored).
    pub fn encryption(&self) -> S3Result<Option<Arc<ServerSideEncryptionConfiguration>>> {
        self.encryption
            .get_or_init(|| {
                let Some(doc) = self.get(BucketSetting::Encryption) else {
                    return Ok(None);
                };
                ServerSideEncryptionConfiguration::parse_xml(doc)
                    .map(|c| Some(Arc::new(c)))
                    .map_err(|e| {
                        S3Error::with_message(
                            S3ErrorCode::InternalError,
                            format!(
                                "stored encryption configuration of {} does not parse: {}",
                                self.bucket, e.message
                            ),
                        )
                    })
            })
            .clone()
    }

    /// The bucket's public access block (all false without one: nothing blocked). It was
    /// checked before it was stored; one this build cannot read is an `InternalError`.
    pub fn public_access_block(&self) -> S3Result<PublicAccessBlock> {
        self.public_access_block
            .get_or_init(|| match self.get(BucketSetting::PublicAccessBlock) {
                None => Ok(PublicAccessBlock::default()),
                Some(doc) => PublicAccessBlock::parse_xml(doc).map_err(|e| self.unreadable(e)),
            })
            .clone()
    }

    /// The bucket's object ownership: its ownership controls', or `BucketOwnerPreferred` for a
    /// bucket without (one created before Ferry had them, which behaved so).
    pub fn object_ownership(&self) -> S3Result<ObjectOwnership> {
        self.object_ownership
            .get_or_init(|| match self.get(BucketSetting::OwnershipControls) {
                None => Ok(ObjectOwnership::BucketOwnerPreferred),
                Some(doc) => OwnershipControls::parse_xml(doc)
                    .map(|c| c.object_ownership)
                    .map_err(|e| self.unreadable(e)),
            })
            .clone()
    }

    fn unreadable(&self, e: S3Error) -> S3Error {
        S3Error::with_message(
            S3ErrorCode::InternalError,
            format!(
                "stored setting of {} does not parse: {}",
                self.bucket, e.message
            ),
        )
    }

    /// The bucket's policy, if it has one. It was checked before it was stored; one this
    /// build cannot read (stored by another version) is an `InternalError`.
    pub fn policy(&self) -> S3Result<Option<Arc<Policy>>> {
        self.policy
            .get_or_init(|| {
                let Some(doc) = self.get(BucketSetting::Policy) else {
                    return Ok(None);
                };
                Policy::parse(doc, &self.bucket)
                    .map(|p| Some(Arc::new(p)))
                    .map_err(|e| {
                        S3Error::with_message(
                            S3ErrorCode::InternalError,
                            format!(
                                "stored policy of {} does not parse: {}",
                                self.bucket, e.message
                            ),
                        )
                    })
            })
            .clone()
    }
}

/// Most buckets whose settings are kept in memory; past it the cache starts over.
const SETTINGS_CACHE_MAX: usize = 4096;

/// Buckets' settings (or their absence) as last read, so that the node's per-request access
/// check costs no database read. Every change to a bucket removes its entry after its commit
/// and bumps the generation; a reader offers what it read only if the generation did not move
/// meanwhile, so an entry read before a change never outlives it.
#[derive(Debug, Default)]
pub(crate) struct SettingsCache {
    map: Mutex<HashMap<String, Option<Arc<BucketSettings>>>>,
    generation: AtomicU64,
}

impl SettingsCache {
    fn get(&self, name: &str) -> Option<Option<Arc<BucketSettings>>> {
        self.lock().get(name).cloned()
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn offer(&self, name: &str, generation: u64, value: Option<Arc<BucketSettings>>) {
        let mut map = self.lock();
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        if map.len() >= SETTINGS_CACHE_MAX {
            map.clear();
        }
        map.insert(name.to_owned(), value);
    }

    pub(crate) fn invalidate(&self, name: &str) {
        let mut map = self.lock();
        self.generation.fetch_add(1, Ordering::AcqRel);
        map.remove(name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Arc<BucketSettings>>>> {
        // A panic while holding it cannot leave the map inconsistent: use it as is.
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Store {
    /// Create bucket `name`: `BucketAlreadyOwnedByYou` if it exists.
    pub fn create_bucket(&self, name: &str) -> S3Result<BucketInfo> {
        self.create_bucket_with(name, &[])
    }

    /// Create bucket `name` with `settings` in the same commit: `BucketAlreadyOwnedByYou` if it
    /// exists (and nothing changes).
    pub fn create_bucket_with(
        &self,
        name: &str,
        settings: &[(BucketSetting, &[u8])],
    ) -> S3Result<BucketInfo> {
        check_bucket_name(name)?;
        let created = now();
        let rec = codec::encode(&BucketRecord { created })?;
        // A bucket made versioned (with object lock) marks the store as holding versions, as
        // `Store::set_versioning` does: before the commit, and in it.
        let versioned = settings
            .iter()
            .any(|(kind, _)| *kind == BucketSetting::Versioning);
        if versioned {
            self.inner
                .versioned
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.update(None, |txn| {
            let mut buckets = txn.open_table(BUCKETS).map_err(db_err)?;
            if bucket_exists(&buckets, name)? {
                return Err(S3Error::new(S3ErrorCode::BucketAlreadyOwnedByYou));
            }
            buckets.insert(name, rec.as_slice()).map_err(db_err)?;
            let mut table = txn.open_table(BUCKET_SETTINGS).map_err(db_err)?;
            for (kind, value) in settings {
                table.insert((name, kind.name()), *value).map_err(db_err)?;
            }
            if versioned {
                super::version::mark_versioned(txn)?;
            }
            // A lapsed fence of an earlier bucket of that name means nothing to this one.
            txn.open_table(FENCES)
                .map_err(db_err)?
                .remove(name)
                .map_err(db_err)?;
            Ok(())
        })?;
        self.inner.settings.invalidate(name);
        Ok(BucketInfo {
            name: name.to_owned(),
            created: DateTime::from_unix(created),
        })
    }

    /// Delete bucket `name`: `NoSuchBucket` if it does not exist, `BucketNotEmpty` if it holds
    /// objects or in-progress multipart uploads, `OperationAborted` while a fence holds it.
    pub fn delete_bucket(&self, name: &str) -> S3Result<()> {
        self.delete_bucket_as(name, None)
    }

    /// Delete bucket `name` under the fence `token` holds (the proxy's DeleteBucket): as
    /// [`Store::delete_bucket`], and `OperationAborted` unless that fence still holds.
    pub fn delete_fenced_bucket(&self, name: &str, token: &str) -> S3Result<()> {
        self.delete_bucket_as(name, Some(token))
    }

    fn delete_bucket_as(&self, name: &str, token: Option<&str>) -> S3Result<()> {
        let prefix = bucket_prefix(name);
        self.update(None, |txn| {
            let mut buckets = txn.open_table(BUCKETS).map_err(db_err)?;
            if !bucket_exists(&buckets, name)? {
                return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
            }
            take_fence_for_delete(txn, name, token)?;
            if !bucket_is_empty(txn, &prefix)? {
                return Err(S3Error::new(S3ErrorCode::BucketNotEmpty));
            }
            buckets.remove(name).map_err(db_err)?;
            let mut settings = txn.open_table(BUCKET_SETTINGS).map_err(db_err)?;
            for kind in BucketSetting::ALL {
                settings.remove((name, kind.name())).map_err(db_err)?;
            }
            Ok(())
        })?;
        self.inner.settings.invalidate(name);
        Ok(())
    }

    /// Bucket `name`'s setting `kind`, `None` if it has none: `NoSuchBucket` if the bucket does
    /// not exist.
    pub fn bucket_setting(&self, name: &str, kind: BucketSetting) -> S3Result<Option<Vec<u8>>> {
        Ok(self.bucket_settings(name)?.get(kind).map(<[u8]>::to_vec))
    }

    /// Every setting of bucket `name`: `NoSuchBucket` if the bucket does not exist. Served from
    /// memory after the first read (what the node asks on every request), and read again
    /// after any change to the bucket.
    pub fn bucket_settings(&self, name: &str) -> S3Result<Arc<BucketSettings>> {
        let cache = &self.inner.settings;
        let found = match cache.get(name) {
            Some(found) => found,
            None => {
                let generation = cache.generation();
                let found = self.read_settings(name)?.map(Arc::new);
                cache.offer(name, generation, found.clone());
                found
            }
        };
        found.ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchBucket))
    }

    fn read_settings(&self, name: &str) -> S3Result<Option<BucketSettings>> {
        let txn = self.read_txn()?;
        let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
        if !bucket_exists(&buckets, name)? {
            return Ok(None);
        }
        let table = txn.open_table(BUCKET_SETTINGS).map_err(db_err)?;
        let mut out = BucketSettings {
            bucket: name.to_owned(),
            ..BucketSettings::default()
        };
        for (i, kind) in BucketSetting::ALL.into_iter().enumerate() {
            out.values[i] = table
                .get((name, kind.name()))
                .map_err(db_err)?
                .map(|v| v.value().to_vec());
        }
        Ok(Some(out))
    }

    /// Set bucket `name`'s setting `kind` to `value` (`None` removes it): `NoSuchBucket` if the
    /// bucket does not exist.
    pub fn set_bucket_setting(
        &self,
        name: &str,
        kind: BucketSetting,
        value: Option<&[u8]>,
    ) -> S3Result<()> {
        if kind == BucketSetting::Versioning {
            // Never removed, and the store must know it has versions: one way in.
            let state = value.and_then(ferry_core::s3::version::Versioning::parse);
            return match state {
                Some(state) => self.set_versioning(name, state),
                None => Err(S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "The versioning state is Enabled or Suspended",
                )),
            };
        }
        self.update(None, |txn| {
            let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
            if !bucket_exists(&buckets, name)? {
                return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
            }
            let mut settings = txn.open_table(BUCKET_SETTINGS).map_err(db_err)?;
            if kind == BucketSetting::ObjectLock {
                // Object lock is turned on only while versioning is enabled, and never off;
                // judged here, against PutBucketVersioning's own check (`set_versioning`).
                let has = |k: BucketSetting| -> S3Result<Option<Vec<u8>>> {
                    Ok(settings
                        .get((name, k.name()))
                        .map_err(db_err)?
                        .map(|v| v.value().to_vec()))
                };
                let locked = has(BucketSetting::ObjectLock)?.is_some();
                let enabled = has(BucketSetting::Versioning)?.as_deref()
                    == Some(
                        ferry_core::s3::version::Versioning::Enabled
                            .as_str()
                            .as_bytes(),
                    );
                if value.is_none() || (!locked && !enabled) {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidBucketState,
                        "Versioning must be 'Enabled' on the bucket to apply a Object Lock \
                         configuration",
                    ));
                }
            }
            match value {
                Some(v) => settings.insert((name, kind.name()), v).map(drop),
                None => settings.remove((name, kind.name())).map(drop),
            }
            .map_err(db_err)
        })?;
        self.inner.settings.invalidate(name);
        Ok(())
    }

    /// Bucket `name`'s info: `NoSuchBucket` if it does not exist.
    pub fn head_bucket(&self, name: &str) -> S3Result<BucketInfo> {
        let txn = self.read_txn()?;
        let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
        let rec: BucketRecord = match buckets.get(name).map_err(db_err)? {
            Some(v) => codec::decode(v.value())?,
            None => return Err(S3Error::new(S3ErrorCode::NoSuchBucket)),
        };
        Ok(BucketInfo {
            name: name.to_owned(),
            created: DateTime::from_unix(rec.created),
        })
    }

    /// Whether bucket `name` exists.
    pub fn bucket_exists(&self, name: &str) -> S3Result<bool> {
        let txn = self.read_txn()?;
        let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
        bucket_exists(&buckets, name)
    }

    /// Buckets sorted by name, after `start_after`, at most `limit` (0 or more than 1000 mean
    /// 1000).
    pub fn list_buckets(&self, start_after: Option<&str>, limit: usize) -> S3Result<BucketsPage> {
        let limit = if limit == 0 {
            MAX_LIST
        } else {
            limit.min(MAX_LIST)
        };
        let txn = self.read_txn()?;
        let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
        let lower = match start_after {
            Some(s) => Bound::Excluded(s),
            None => Bound::Unbounded,
        };
        let mut page = BucketsPage::default();
        for item in buckets
            .range::<&str>((lower, Bound::Unbounded))
            .map_err(db_err)?
        {
            let (k, v) = item.map_err(db_err)?;
            if page.buckets.len() == limit {
                page.is_truncated = true;
                break;
            }
            let rec: BucketRecord = codec::decode(v.value())?;
            page.buckets.push(BucketInfo {
                name: k.value().to_owned(),
                created: DateTime::from_unix(rec.created),
            });
        }
        Ok(page)
    }
}
