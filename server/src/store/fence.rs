//! Bucket fences: a bucket closed to writes for a while, under a token.
//!
//! The proxy's DeleteBucket must delete a bucket on every node or on none. It fences the
//! bucket on every node, checks that it is empty everywhere, deletes it with the token, and
//! lifts the fences if anything failed. A fence refuses every write that would add to the
//! bucket (PUT, copy, CreateMultipartUpload, UploadPart, CompleteMultipartUpload) with
//! `OperationAborted`, checked in the transaction that commits, so a write either committed
//! before the fence (and the emptiness check sees it) or is refused; reads, deletes and aborts
//! go on. A fence lapses after its lease, so a proxy that dies mid-delete leaves the bucket
//! writable again soon; it is stored in the metadata, so it holds across a restart.

use std::time::Duration;

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use redb::{ReadableTable, WriteTransaction};

use super::codec::{self, FenceRecord};
use super::{
    BUCKETS, FENCES, OBJECTS, Store, UPLOADS, VERSIONS, bucket_prefix, check_bucket_name, db_err,
    require_bucket,
};

/// The longest lease of a fence.
pub const MAX_FENCE_LEASE: Duration = Duration::from_secs(300);

/// Now, Unix milliseconds.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The token of `bucket`'s fence in `table`, if one holds at `now` (milliseconds).
pub(crate) fn live_fence(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    bucket: &str,
    now: u64,
) -> S3Result<Option<String>> {
    let Some(v) = table.get(bucket).map_err(db_err)? else {
        return Ok(None);
    };
    let rec: FenceRecord = codec::decode(v.value())?;
    Ok((rec.expires_ms > now).then_some(rec.token))
}

/// The answer to a write into a fenced bucket.
pub(crate) fn fenced() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::OperationAborted,
        "A conflicting operation (DeleteBucket) is in progress on this bucket; retry.",
    )
}

/// In `txn`: `OperationAborted` while a fence holds `bucket`.
pub(crate) fn check_unfenced(txn: &WriteTransaction, bucket: &str) -> S3Result<()> {
    let fences = txn.open_table(FENCES).map_err(db_err)?;
    match live_fence(&fences, bucket, now_ms())? {
        Some(_) => Err(fenced()),
        None => Ok(()),
    }
}

/// In `txn`: whether a DeleteBucket holding `token` (none for a client's own) may go on:
/// `OperationAborted` if another token's fence holds the bucket, or if `token`'s fence lapsed
/// or was lifted. The fence goes with the bucket.
pub(crate) fn take_fence_for_delete(
    txn: &WriteTransaction,
    bucket: &str,
    token: Option<&str>,
) -> S3Result<()> {
    let mut fences = txn.open_table(FENCES).map_err(db_err)?;
    match (live_fence(&fences, bucket, now_ms())?.as_deref(), token) {
        (None, None) => {}
        (Some(held), Some(t)) if held == t => {}
        (Some(_), _) => return Err(fenced()),
        (None, Some(_)) => {
            return Err(S3Error::with_message(
                S3ErrorCode::OperationAborted,
                "The bucket's fence lapsed or was lifted before the delete; retry.",
            ));
        }
    }
    fences.remove(bucket).map_err(db_err)?;
    Ok(())
}

/// Whether the bucket of `prefix` (`bucket_prefix`) holds nothing in `txn`'s view: no object,
/// no noncurrent version or delete marker (they count, as in S3), no upload in progress.
pub(crate) fn bucket_is_empty(txn: &WriteTransaction, prefix: &[u8]) -> S3Result<bool> {
    let objects = txn.open_table(OBJECTS).map_err(db_err)?;
    let has_object = match objects.range::<&[u8]>(prefix..).map_err(db_err)?.next() {
        Some(item) => item.map_err(db_err)?.0.value().starts_with(prefix),
        None => false,
    };
    let uploads = txn.open_table(UPLOADS).map_err(db_err)?;
    let has_upload = match uploads
        .range::<(&[u8], &str)>((prefix, "")..)
        .map_err(db_err)?
        .next()
    {
        Some(item) => item.map_err(db_err)?.0.value().0.starts_with(prefix),
        None => false,
    };
    let versions = txn.open_table(VERSIONS).map_err(db_err)?;
    let has_version = match versions
        .range::<(&[u8], u64)>((prefix, 0)..)
        .map_err(db_err)?
        .next()
    {
        Some(item) => item.map_err(db_err)?.0.value().0.starts_with(prefix),
        None => false,
    };
    Ok(!(has_object || has_upload || has_version))
}

impl Store {
    /// Close `bucket` to writes for `lease` (at most [`MAX_FENCE_LEASE`]) under `token`,
    /// renewing the fence if `token` holds it already, and say whether the bucket is empty
    /// (no object, version or upload: what DeleteBucket asks, stable while the fence holds).
    /// `NoSuchBucket`; `OperationAborted` while another token's fence holds.
    pub fn fence_bucket(&self, bucket: &str, token: &str, lease: Duration) -> S3Result<bool> {
        check_bucket_name(bucket)?;
        if lease.is_zero() || lease > MAX_FENCE_LEASE {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "A fence's lease must be 1 to 300 seconds",
            ));
        }
        let now = now_ms();
        let rec = codec::encode(&FenceRecord {
            token: token.to_owned(),
            expires_ms: now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX)),
        })?;
        self.update(None, |txn| {
            require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
            let mut fences = txn.open_table(FENCES).map_err(db_err)?;
            if live_fence(&fences, bucket, now)?.is_some_and(|held| held != token) {
                return Err(S3Error::with_message(
                    S3ErrorCode::OperationAborted,
                    "Another operation holds a fence on this bucket; retry.",
                ));
            }
            fences.insert(bucket, rec.as_slice()).map_err(db_err)?;
            drop(fences);
            bucket_is_empty(txn, &bucket_prefix(bucket))
        })
    }

    /// Lift `token`'s fence on `bucket` (a lapsed fence of any token goes too); nothing to do
    /// is no error.
    pub fn unfence_bucket(&self, bucket: &str, token: &str) -> S3Result<()> {
        check_bucket_name(bucket)?;
        let now = now_ms();
        self.update(None, |txn| {
            let mut fences = txn.open_table(FENCES).map_err(db_err)?;
            let lift = match fences.get(bucket).map_err(db_err)? {
                Some(v) => {
                    let rec: FenceRecord = codec::decode(v.value())?;
                    rec.token == token || rec.expires_ms <= now
                }
                None => false,
            };
            if lift {
                fences.remove(bucket).map_err(db_err)?;
            }
            Ok(())
        })
    }

    /// The token of the fence holding `bucket` now, if any.
    pub fn bucket_fence(&self, bucket: &str) -> S3Result<Option<String>> {
        let txn = self.read_txn()?;
        live_fence(&txn.open_table(FENCES).map_err(db_err)?, bucket, now_ms())
    }

    /// Before an upload takes its body: `NoSuchBucket`, or `OperationAborted` while a fence
    /// holds the bucket (checked again at commit).
    pub(crate) fn check_bucket_writable(&self, bucket: &str) -> S3Result<()> {
        let txn = self.read_txn()?;
        require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
        match live_fence(&txn.open_table(FENCES).map_err(db_err)?, bucket, now_ms())? {
            Some(_) => Err(fenced()),
            None => Ok(()),
        }
    }
}
