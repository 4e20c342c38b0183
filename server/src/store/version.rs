//! Object versions: the bucket's versioning state, the versions table, version-aware writes
//! and deletes, lookups by version id, and ListObjectVersions.
//!
//! # Layout
//!
//! [`OBJECTS`] keeps each key's current version when it is an object, exactly as in a bucket
//! that was never versioned: reading the latest version is one lookup, and ListObjects (which
//! shows only current objects) is unchanged. [`VERSIONS`] keeps the rest, keyed
//! (`bucket\0key`, `!seq`) so that a key's versions sort newest first: its noncurrent versions,
//! and a current delete marker. So:
//!
//! - a key's entry in `OBJECTS`, if any, is newer than all of its entries in `VERSIONS`;
//! - a key without an entry in `OBJECTS` has a delete marker (or nothing) as its newest
//!   entry in `VERSIONS`: removing a version promotes the next one back when it is an object.
//!
//! Each record of a versioned bucket carries a [`VersionStamp`] (an extension: records of
//! buckets never versioned are byte for byte as before, and are the null version). Sequence
//! numbers come from one store-wide counter in `META` (microseconds since the epoch, and
//! always more than the last one), so version ids are unique in the store and sort by age.
//!
//! The versioning state is a bucket setting ([`BucketSetting::Versioning`]); writes read it in
//! their own transaction, so a write and a state change are ordered. A write in a bucket that
//! never had a state costs what it cost before, plus that one settings lookup.
//!
//! # Ids cannot run out
//!
//! A sequence is a `u64` of microseconds: the range lasts half a million years, unless
//! something jumps ahead in it. A version placed by id (`place`: moved from another node by
//! the rebalance) could: an id at the end of the range once raised the node's counter there,
//! after which every version of every bucket got the same id and overwrote the previous one in
//! its slot. So:
//!
//! - a placed id (or a placed null version's order, or a placed date, which orders a record
//!   without a stamp) may be at most [`CLOCK_MARGIN_MICROS`] ahead of this node's clock, which
//!   leaves the rest of the range above it; a placement never raises the counter (the key's
//!   own history keeps later versions of that key newer: `make_room` starts above it);
//! - a new sequence is made with checked arithmetic and never more than the margin ahead of the
//!   clock: when none can be made (the key's newest version, or the counter, is further ahead),
//!   the write fails with `InternalError` and a log line, and no id is given out twice;
//! - a version entering a slot of [`VERSIONS`] never replaces another (`insert_new_version`:
//!   the transaction is aborted instead);
//! - a store an older build let be poisoned (its counter beyond the clock and the margin) is
//!   repaired at open (`repair_sequence`): the counter goes back to the newest sequence that
//!   is not ahead (or the clock), and the versions carrying impossible ids are counted and
//!   named in the log. They are kept, ids and all: they are someone's data, possibly under
//!   object lock, and renumbering them would change ids that clients hold. That is safe
//!   because nothing relies on the counter being above them: every new version of a key starts
//!   above that key's newest version, so a key without an impossible id gets ids from the
//!   clock again, and a key whose newest version has one refuses new versions (the rule above)
//!   until that version is deleted by its id (object lock permitting); no slot can be reused,
//!   by the rule above that.
//!   An id given out before the repair is not given out again unless it was ahead of the clock
//!   at the repair, which only a poisoned or clock-stepped store had.
//!
//! A node whose clock is set back by more than the margin after giving out ids refuses
//! versioned writes until its clock catches up or it restarts (the repair), rather than give
//! out ids ahead of its clock.

use std::ops::Bound;
use std::sync::atomic::Ordering;

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;
use redb::{ReadableTable, Table, WriteTransaction};

use super::codec::{self, ObjectRecord, VersionStamp, stored_etag};
use super::fence::check_unfenced;
use super::files::FileId;
use super::list::{rolled_prefix, successor};
use super::types::{DeleteConditions, DeleteOutcome, VersionEntry, VersionsPage, VersionsQuery};
use super::{
    BUCKET_SETTINGS, BUCKETS, BucketSetting, MAX_LIST, META, OBJECTS, Store, VERSIONED_LAYOUT,
    VERSIONS, VersionId, Versioning, bucket_exists, bucket_prefix, check_bucket_name, check_key,
    db_err, now, object_key, raise_layout, require_bucket,
};

/// The `META` entry holding the last version sequence number given out.
const SEQ_KEY: &str = "version_seq";

/// How far ahead of this node's clock a version id (its sequence, in microseconds) may be:
/// one hour. A version moved from another node keeps that node's id, made from that node's
/// clock, so the nodes' clocks may disagree by this much; an id further ahead could only come
/// from a clock that is wrong, or from a caller aiming at the end of the id range (see the
/// module's comment). It is also all the room a new sequence has above the clock.
pub(crate) const CLOCK_MARGIN_MICROS: u64 = 3_600 * 1_000_000;

type Objects<'t> = Table<'t, &'static [u8], &'static [u8]>;
type Versions<'t> = Table<'t, (&'static [u8], u64), &'static [u8]>;

/// Where a version's record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The key's entry in `OBJECTS`.
    Current,
    /// The key's entry in `VERSIONS` under this (inverted) sequence.
    Old(u64),
}

/// The versioning state of `bucket` in `txn`'s view (`None`: never versioned), looked up
/// only if `store` has had a versioned bucket. Call it inside the transaction (the flag is
/// set before a state's commit, and write transactions are serialised, so a state committed
/// before `txn` began is seen).
pub(crate) fn versioning_in(
    store: &Store,
    txn: &WriteTransaction,
    bucket: &str,
) -> S3Result<Option<Versioning>> {
    if !store.maybe_versioned() {
        return Ok(None);
    }
    let settings = txn.open_table(BUCKET_SETTINGS).map_err(db_err)?;
    let found = settings
        .get((bucket, BucketSetting::Versioning.name()))
        .map_err(db_err)?;
    Ok(found.and_then(|v| Versioning::parse(v.value())))
}

fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The newest sequence this node could have made or accepted at `now`.
fn seq_limit(now: u64) -> u64 {
    now.saturating_add(CLOCK_MARGIN_MICROS)
}

/// The sequence after `last` (the counter) and `floor` (the key's newest version) at `now`:
/// `None` when there is none, or none within the margin ahead of the clock.
fn seq_after(now: u64, last: u64, floor: u64) -> Option<u64> {
    let seq = now.max(last.checked_add(1)?).max(floor.checked_add(1)?);
    (seq <= seq_limit(now)).then_some(seq)
}

/// `bucket\0key` as (bucket, key), for log lines.
fn split_key(k: &[u8]) -> (String, String) {
    let at = k.iter().position(|&b| b == 0).unwrap_or(k.len());
    let key = k.get(at + 1..).unwrap_or_default();
    (
        String::from_utf8_lossy(&k[..at]).into_owned(),
        String::from_utf8_lossy(key).into_owned(),
    )
}

/// A new sequence number: after the last one given out and after `floor` (the newest version
/// of `k`), and marks the store as holding versions ([`VERSIONED_LAYOUT`]). `InternalError`
/// when no sequence is left for it (see the module's comment); nothing is written then.
fn next_seq(txn: &WriteTransaction, k: &[u8], floor: u64) -> S3Result<u64> {
    let mut meta = txn.open_table(META).map_err(db_err)?;
    let last = meta.get(SEQ_KEY).map_err(db_err)?.map_or(0, |v| v.value());
    let now = now_micros();
    let Some(seq) = seq_after(now, last, floor) else {
        let (bucket, key) = split_key(k);
        tracing::error!(
            %bucket, %key, newest = floor, counter = last, clock = now,
            "no version id left for a new version: the key's newest version or the node's \
             version counter is ahead of the clock by more than the margin; the write is refused"
        );
        return Err(S3Error::with_message(
            S3ErrorCode::InternalError,
            "No new version id can be made for this key: its newest version id, or the node's \
             version counter, is too far ahead of the node's clock.",
        ));
    };
    meta.insert(SEQ_KEY, seq).map_err(db_err)?;
    drop(meta);
    raise_layout(txn, VERSIONED_LAYOUT)?;
    Ok(seq)
}

/// Refuse a placed sequence (a version id, or a null version's order) or a placed date that
/// is ahead of this node's clock by more than [`CLOCK_MARGIN_MICROS`]: such a version would
/// sort above every version this node can make, so its key could take no new version.
pub(crate) fn check_placed(placed: &super::Placed) -> S3Result<()> {
    let limit = seq_limit(now_micros());
    let too_new = |what: &str| {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!(
                "The placed {what} is ahead of this node's clock by more than {} minutes: no \
                 node could have made it.",
                CLOCK_MARGIN_MICROS / 60_000_000
            ),
        )
    };
    if placed.seq.is_some_and(|seq| seq > limit) {
        return Err(too_new(if placed.null {
            "null version's order"
        } else {
            "version id"
        }));
    }
    // A record without a stamp sorts by its date (`ObjectRecord::order`).
    let date = placed
        .last_modified
        .map(|t| u64::try_from(t).unwrap_or(0).saturating_mul(1_000_000));
    if date.is_some_and(|d| d > limit) {
        return Err(too_new("modification date"));
    }
    Ok(())
}

/// Put `bytes`, a version that is not in [`VERSIONS`] yet, into its slot (`k`, `!seq`). A slot
/// holds one version: finding another there is an error (the caller's transaction is then
/// aborted, so nothing is written), never a version silently replaced. Every version entering
/// the table goes through here; rewriting a version's own record in place does not.
fn insert_new_version(
    versions: &mut Versions<'_>,
    k: &[u8],
    seq: u64,
    bytes: &[u8],
) -> S3Result<()> {
    if versions.insert((k, !seq), bytes).map_err(db_err)?.is_some() {
        let (bucket, key) = split_key(k);
        tracing::error!(
            %bucket, %key, seq,
            "a new version met another version in its slot; the write is refused"
        );
        return Err(S3Error::with_message(
            S3ErrorCode::InternalError,
            "Another version of this key already has this version id; nothing was written.",
        ));
    }
    Ok(())
}

/// Whether a new version of `k` could be made in `txn` now (what `make_room` would need).
pub(crate) fn new_version_possible(txn: &WriteTransaction, k: &[u8]) -> S3Result<bool> {
    let objects = txn.open_table(OBJECTS).map_err(db_err)?;
    let versions = txn.open_table(VERSIONS).map_err(db_err)?;
    let floor = match objects.get(k).map_err(db_err)? {
        Some(v) => codec::decode::<ObjectRecord>(v.value())?.order(),
        None => newest_old(&versions, k)?.map_or(0, |(inv, _)| !inv),
    };
    let meta = txn.open_table(META).map_err(db_err)?;
    let last = meta.get(SEQ_KEY).map_err(db_err)?.map_or(0, |v| v.value());
    Ok(seq_after(now_micros(), last, floor).is_some())
}

/// At open: if the version counter in `META` is ahead of the clock by more than the margin
/// (what a placement of an id at the end of the range did before placements were bounded),
/// set it back to the newest sequence of a version that is not that far ahead, or the clock,
/// and say in the log how many versions carry impossible ids, and where (the first few). The
/// versions stay as they are; why that is safe is in the module's comment.
pub(crate) fn repair_sequence(db: &redb::Database) -> std::io::Result<()> {
    /// How many versions with impossible ids the log names.
    const NAMED: usize = 10;
    let now = now_micros();
    let limit = seq_limit(now);
    let txn = db.begin_write().map_err(std::io::Error::other)?;
    let last = txn
        .open_table(META)
        .map_err(std::io::Error::other)?
        .get(SEQ_KEY)
        .map_err(std::io::Error::other)?
        .map(|v| v.value());
    let Some(last) = last.filter(|&l| l > limit) else {
        txn.abort().map_err(std::io::Error::other)?;
        return Ok(());
    };
    tracing::warn!(
        counter = last,
        clock = now,
        "the store's version counter is ahead of the clock by more than the margin (a version \
         placed at the end of the id range by an older build): setting it back"
    );
    let mut newest = now;
    let mut future = 0u64;
    let mut named: Vec<String> = Vec::new();
    let mut see = |k: &[u8], bytes: &[u8]| -> std::io::Result<()> {
        let rec: ObjectRecord =
            codec::decode(bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let order = rec.order();
        if order <= limit {
            newest = newest.max(order);
            return Ok(());
        }
        future += 1;
        if named.len() < NAMED {
            let (bucket, key) = split_key(k);
            named.push(format!("{bucket}/{key} version {}", rec.version_id()));
        }
        Ok(())
    };
    {
        let objects = txn.open_table(OBJECTS).map_err(std::io::Error::other)?;
        for item in objects.iter().map_err(std::io::Error::other)? {
            let (k, v) = item.map_err(std::io::Error::other)?;
            see(k.value(), v.value())?;
        }
        let versions = txn.open_table(VERSIONS).map_err(std::io::Error::other)?;
        for item in versions.iter().map_err(std::io::Error::other)? {
            let (k, v) = item.map_err(std::io::Error::other)?;
            see(k.value().0, v.value())?;
        }
    }
    txn.open_table(META)
        .map_err(std::io::Error::other)?
        .insert(SEQ_KEY, newest)
        .map_err(std::io::Error::other)?;
    txn.commit().map_err(std::io::Error::other)?;
    if future > 0 {
        tracing::warn!(
            versions = future,
            first = %named.join(", "),
            "versions carry ids ahead of the clock; they are kept, and their keys take no new \
             version until those versions are deleted by id"
        );
    }
    tracing::warn!(counter = newest, "the store's version counter was set back");
    Ok(())
}

impl Store {
    /// Test hook: set the store's version counter to `seq`, as a placement of an id at the end
    /// of the range did in builds before placements were bounded (a store poisoned that way).
    #[doc(hidden)]
    pub fn set_version_counter_for_tests(&self, seq: u64) -> S3Result<()> {
        self.update(None, |txn| {
            txn.open_table(META)
                .map_err(db_err)?
                .insert(SEQ_KEY, seq)
                .map(drop)
                .map_err(db_err)
        })
    }

    /// Test hook: give `bucket`/`key`'s current object the sequence `seq` in its record, in
    /// place, as builds before placements were bounded could leave one (a version id at the
    /// end of the range, or one equal to an older version's): what the store must cope with.
    #[doc(hidden)]
    pub fn restamp_current_for_tests(&self, bucket: &str, key: &str, seq: u64) -> S3Result<()> {
        let k = object_key(bucket, key)?;
        self.update(None, |txn| {
            let mut objects = txn.open_table(OBJECTS).map_err(db_err)?;
            let mut rec: ObjectRecord = match objects.get(k.as_slice()).map_err(db_err)? {
                Some(v) => codec::decode(v.value())?,
                None => return Err(S3Error::new(S3ErrorCode::NoSuchKey)),
            };
            let stamp = rec
                .version
                .as_mut()
                .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidRequest))?;
            stamp.seq = seq;
            objects
                .insert(k.as_slice(), codec::encode(&rec)?.as_slice())
                .map(drop)
                .map_err(db_err)
        })
    }
}

/// Mark the store as holding versions ([`VERSIONED_LAYOUT`]) in `txn`: a bucket made with
/// versioning on (object lock) before any version was written.
pub(crate) fn mark_versioned(txn: &WriteTransaction) -> S3Result<()> {
    raise_layout(txn, VERSIONED_LAYOUT)
}

/// The range of `k`'s entries in `VERSIONS`.
fn key_range(k: &[u8]) -> std::ops::RangeInclusive<(&[u8], u64)> {
    (k, 0)..=(k, u64::MAX)
}

/// `k`'s newest entry in `VERSIONS`: its inverted sequence and record bytes.
fn newest_old(
    versions: &impl ReadableTable<(&'static [u8], u64), &'static [u8]>,
    k: &[u8],
) -> S3Result<Option<(u64, Vec<u8>)>> {
    match versions.range(key_range(k)).map_err(db_err)?.next() {
        Some(item) => {
            let (key, v) = item.map_err(db_err)?;
            Ok(Some((key.value().1, v.value().to_vec())))
        }
        None => Ok(None),
    }
}

/// Find version `v` of `k`: in `OBJECTS` (the current one) or `VERSIONS`.
pub(crate) fn find_version(
    objects: &impl ReadableTable<&'static [u8], &'static [u8]>,
    versions: &impl ReadableTable<(&'static [u8], u64), &'static [u8]>,
    k: &[u8],
    v: VersionId,
) -> S3Result<Option<(Slot, ObjectRecord)>> {
    if let Some(cur) = objects.get(k).map_err(db_err)? {
        let rec: ObjectRecord = codec::decode(cur.value())?;
        if rec.version_id() == v {
            return Ok(Some((Slot::Current, rec)));
        }
    }
    match v {
        VersionId::Seq(seq) => match versions.get((k, !seq)).map_err(db_err)? {
            Some(found) => {
                let rec: ObjectRecord = codec::decode(found.value())?;
                // A null version sorts by a sequence too, but its id is `null`.
                Ok((rec.version_id() == v).then_some((Slot::Old(!seq), rec)))
            }
            None => Ok(None),
        },
        VersionId::Null => {
            for item in versions.range(key_range(k)).map_err(db_err)? {
                let (key, found) = item.map_err(db_err)?;
                let rec: ObjectRecord = codec::decode(found.value())?;
                if rec.is_null() {
                    return Ok(Some((Slot::Old(key.value().1), rec)));
                }
            }
            Ok(None)
        }
    }
}

/// Remove `k`'s null version from `VERSIONS`, if it has one there.
fn remove_old_null(versions: &mut Versions<'_>, k: &[u8]) -> S3Result<Option<ObjectRecord>> {
    let mut found = None;
    for item in versions.range(key_range(k)).map_err(db_err)? {
        let (key, v) = item.map_err(db_err)?;
        let rec: ObjectRecord = codec::decode(v.value())?;
        if rec.is_null() {
            found = Some((key.value().1, rec));
            break;
        }
    }
    let Some((inv, rec)) = found else {
        return Ok(None);
    };
    versions.remove((k, inv)).map_err(db_err)?;
    Ok(Some(rec))
}

/// If `k` has no current object, make its newest entry in `VERSIONS` current when it is an
/// object (not a delete marker).
pub(crate) fn promote(
    objects: &mut Objects<'_>,
    versions: &mut Versions<'_>,
    k: &[u8],
) -> S3Result<()> {
    if objects.get(k).map_err(db_err)?.is_some() {
        return Ok(());
    }
    let Some((inv, bytes)) = newest_old(versions, k)? else {
        return Ok(());
    };
    let rec: ObjectRecord = codec::decode(&bytes)?;
    if !rec.is_delete_marker() {
        versions.remove((k, inv)).map_err(db_err)?;
        objects.insert(k, bytes.as_slice()).map_err(db_err)?;
    }
    Ok(())
}

/// What a versioned write left to clean up: files of the version it replaced (the null
/// version, in a suspended bucket) and that version's size.
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    pub files: Vec<FileId>,
    pub size: Option<u64>,
}

impl Dropped {
    fn add(&mut self, rec: &ObjectRecord) {
        self.files.extend(rec.data.files());
        if !rec.is_delete_marker() {
            self.size = Some(rec.size);
        }
    }
}

/// In `txn`, with `objects` open: make room for a new current version of `k` in a bucket in
/// `state`. The current version `old` (its record and bytes, already taken out of `OBJECTS`
/// or about to be replaced there) moves to `VERSIONS` unless it is the null version being
/// replaced; in a suspended bucket the older null version goes too. Returns the new
/// version's stamp and what was dropped.
pub(crate) fn make_room(
    txn: &WriteTransaction,
    k: &[u8],
    state: Versioning,
    old: Option<(ObjectRecord, Vec<u8>)>,
    delete_marker: bool,
) -> S3Result<(VersionStamp, Dropped)> {
    let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
    let floor = match &old {
        Some((rec, _)) => rec.order(),
        None => newest_old(&versions, k)?.map_or(0, |(inv, _)| !inv),
    };
    let seq = next_seq(txn, k, floor)?;
    let null = state == Versioning::Suspended;
    let mut dropped = Dropped::default();
    if let Some((rec, bytes)) = old {
        if null && rec.is_null() {
            dropped.add(&rec);
        } else {
            insert_new_version(&mut versions, k, rec.order(), &bytes)?;
        }
    }
    if null && let Some(rec) = remove_old_null(&mut versions, k)? {
        dropped.add(&rec);
    }
    let stamp = VersionStamp {
        seq,
        null,
        delete_marker,
    };
    if delete_marker {
        let marker = ObjectRecord::delete_marker(stamp, now());
        insert_new_version(&mut versions, k, seq, &codec::encode(&marker)?)?;
    }
    Ok((stamp, dropped))
}

/// In `txn`, with `objects` open: put `rec` (an object or a delete marker; its stamp is set
/// here) into `k`'s history at `seq` instead of as a new newest version — a version moved from
/// another node keeps its id and place (`Placed`). Newer than every version the key has, it
/// becomes current (the current one going to `VERSIONS`); older, it goes to `VERSIONS` as a
/// noncurrent version, below whatever was written since. A key has one null version: of two,
/// the newer stays. Refused (`PreconditionFailed`) when the key has a version at `seq`
/// already (the move ran before) or a newer null version than this null one; nothing is
/// written then. `InvalidArgument` when `seq` is ahead of the node's clock by more than the
/// margin ([`check_placed`]). The store's sequence is left as it is: a later write of this key
/// starts above its newest version anyway, and no placement can move every key's ids.
pub(crate) fn place(
    txn: &WriteTransaction,
    objects: &mut Objects<'_>,
    k: &[u8],
    seq: u64,
    null: bool,
    mut rec: ObjectRecord,
    delete_marker: bool,
) -> S3Result<(VersionStamp, Dropped)> {
    let there = |why: &str| S3Error::with_message(S3ErrorCode::PreconditionFailed, why.to_owned());
    check_placed(&super::Placed {
        seq: Some(seq),
        null,
        last_modified: None,
    })?;
    let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
    let current = match objects.get(k).map_err(db_err)? {
        Some(v) => {
            let bytes = v.value().to_vec();
            Some((codec::decode::<ObjectRecord>(&bytes)?, bytes))
        }
        None => None,
    };
    let taken = current.as_ref().is_some_and(|(r, _)| r.order() == seq)
        || versions.get((k, !seq)).map_err(db_err)?.is_some();
    if taken {
        return Err(there("The key has a version in this place already."));
    }
    let newest = match &current {
        Some((r, _)) => r.order(),
        None => newest_old(&versions, k)?.map_or(0, |(inv, _)| !inv),
    };
    let mut dropped = Dropped::default();
    let mut current = current;
    if null {
        if let Some((r, _)) = current.as_ref().filter(|(r, _)| r.is_null()) {
            if r.order() > seq {
                return Err(there("A newer null version replaced this one."));
            }
            dropped.add(r);
            objects.remove(k).map_err(db_err)?;
            current = None;
        } else if let Some(old) = find_version(objects, &versions, k, VersionId::Null)? {
            if old.1.order() > seq {
                return Err(there("A newer null version replaced this one."));
            }
            if let (Slot::Old(inv), old) = old {
                versions.remove((k, inv)).map_err(db_err)?;
                dropped.add(&old);
            }
        }
    }
    let stamp = VersionStamp {
        seq,
        null,
        delete_marker,
    };
    rec.version = Some(stamp);
    let bytes = codec::encode(&rec)?;
    if seq > newest {
        if let Some((old, old_bytes)) = current {
            insert_new_version(&mut versions, k, old.order(), &old_bytes)?;
            objects.remove(k).map_err(db_err)?;
        }
        if delete_marker {
            insert_new_version(&mut versions, k, seq, &bytes)?;
        } else {
            objects.insert(k, bytes.as_slice()).map_err(db_err)?;
        }
    } else {
        insert_new_version(&mut versions, k, seq, &bytes)?;
    }
    // A null version taken out may have been the current one.
    promote(objects, &mut versions, k)?;
    drop(versions);
    raise_layout(txn, VERSIONED_LAYOUT)?;
    Ok((stamp, dropped))
}

/// The id a stamp gives its version.
pub(crate) fn stamp_id(stamp: VersionStamp) -> VersionId {
    if stamp.null {
        VersionId::Null
    } else {
        VersionId::Seq(stamp.seq)
    }
}

/// A version placed in a bucket that never had versions.
pub(crate) fn unversioned_placement() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "x-ferry-version-id needs a bucket with versioning.",
    )
}

/// What a delete removed: its outcome, files to retire, and the removed object's size.
pub(crate) type Deleted = (DeleteOutcome, Vec<FileId>, Option<u64>);

/// In `txn`: DeleteObject of `k` (of `bucket`), of `version` if named.
///
/// With `conditions.if_match` (DeleteObject's `If-Match`), the object the delete acts on — the current
/// one, or the version named — must have that ETag (`PreconditionFailed` otherwise, and
/// `NoSuchKey` when there is none), judged in this transaction.
pub(crate) fn delete_in(
    store: &Store,
    txn: &WriteTransaction,
    bucket: &str,
    k: &[u8],
    version: Option<VersionId>,
    conditions: DeleteConditions,
    guard: &dyn Fn(&ObjectRecord) -> S3Result<()>,
) -> S3Result<Deleted> {
    let DeleteConditions { if_match, placed } = conditions;
    let matches = |rec: Option<&ObjectRecord>| -> S3Result<()> {
        let Some(want) = if_match else {
            return Ok(());
        };
        match rec {
            None => Err(S3Error::new(S3ErrorCode::NoSuchKey)),
            Some(r) if r.is_delete_marker() || stored_etag(&r.etag)? != want => {
                Err(S3Error::new(S3ErrorCode::PreconditionFailed))
            }
            Some(_) => Ok(()),
        }
    };
    {
        let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
        if !bucket_exists(&buckets, bucket)? {
            return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
        }
    }
    let mut objects = txn.open_table(OBJECTS).map_err(db_err)?;
    let Some(v) = version else {
        let state = versioning_in(store, txn, bucket)?;
        if placed.seq.is_some() && state.is_none() {
            return Err(unversioned_placement());
        }
        let Some(state) = state else {
            // Never versioned: the key goes, as it always did.
            let old = match objects.remove(k).map_err(db_err)? {
                Some(v) => Some(codec::decode::<ObjectRecord>(v.value())?),
                None => None,
            };
            // A refusal aborts the transaction: nothing is removed.
            matches(old.as_ref())?;
            let (files, size) = old.map_or((Vec::new(), None), |o| (o.data.files(), Some(o.size)));
            return Ok((DeleteOutcome::default(), files, size));
        };
        // A delete marker is a write: not while a fence holds the bucket.
        check_unfenced(txn, bucket)?;
        check_placed(&placed)?;
        if let Some(seq) = placed.seq {
            // A delete marker moved from another node: in its place, with its date.
            let current = match objects.get(k).map_err(db_err)? {
                Some(v) => Some(codec::decode::<ObjectRecord>(v.value())?),
                None => None,
            };
            matches(current.as_ref())?;
            let marker = ObjectRecord::delete_marker(
                VersionStamp {
                    seq,
                    null: placed.null,
                    delete_marker: true,
                },
                placed.last_modified.unwrap_or_else(now),
            );
            let (stamp, dropped) = place(txn, &mut objects, k, seq, placed.null, marker, true)?;
            let outcome = DeleteOutcome {
                version_id: Some(stamp_id(stamp)),
                delete_marker: true,
            };
            return Ok((outcome, dropped.files, dropped.size));
        }
        let old = match objects.remove(k).map_err(db_err)? {
            Some(v) => {
                let bytes = v.value().to_vec();
                Some((codec::decode::<ObjectRecord>(&bytes)?, bytes))
            }
            None => None,
        };
        matches(old.as_ref().map(|(r, _)| r))?;
        let (stamp, dropped) = make_room(txn, k, state, old, true)?;
        let outcome = DeleteOutcome {
            version_id: Some(stamp_id(stamp)),
            delete_marker: true,
        };
        return Ok((outcome, dropped.files, dropped.size));
    };
    let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
    let found = find_version(&objects, &versions, k, v)?;
    matches(found.as_ref().map(|(_, r)| r))?;
    let Some((slot, rec)) = found else {
        // Deleting a version that does not exist succeeds, as in S3.
        return Ok((
            DeleteOutcome {
                version_id: Some(v),
                delete_marker: false,
            },
            Vec::new(),
            None,
        ));
    };
    // Object lock: judged against the version as this transaction sees it.
    if !rec.is_delete_marker() {
        guard(&rec)?;
    }
    match slot {
        Slot::Current => objects.remove(k).map_err(db_err).map(drop)?,
        Slot::Old(inv) => versions.remove((k, inv)).map_err(db_err).map(drop)?,
    }
    promote(&mut objects, &mut versions, k)?;
    let outcome = DeleteOutcome {
        version_id: Some(v),
        delete_marker: rec.is_delete_marker(),
    };
    let size = (!rec.is_delete_marker()).then_some(rec.size);
    Ok((outcome, rec.data.files(), size))
}

impl Store {
    /// The versioning state of `bucket` (`None`: never versioned), from the settings cache:
    /// `NoSuchBucket` if it does not exist.
    pub fn versioning(&self, bucket: &str) -> S3Result<Option<Versioning>> {
        Ok(self
            .bucket_setting(bucket, BucketSetting::Versioning)?
            .and_then(|v| Versioning::parse(&v)))
    }

    /// Set the versioning state of `bucket` (PutBucketVersioning). A bucket never goes back to
    /// unversioned: `Enabled` and `Suspended` are the only states. The store's layout becomes
    /// [`VERSIONED_LAYOUT`] in the same commit.
    pub fn set_versioning(&self, bucket: &str, state: Versioning) -> S3Result<()> {
        check_bucket_name(bucket)?;
        // Before the commit: a write whose transaction runs after it reads the state (see
        // `Inner::versioned`; write transactions are serialised, and a write reads the flag
        // inside its own).
        self.inner.versioned.store(true, Ordering::SeqCst);
        self.update(None, |txn| {
            let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
            if !bucket_exists(&buckets, bucket)? {
                return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
            }
            let mut settings = txn.open_table(BUCKET_SETTINGS).map_err(db_err)?;
            // A bucket with object lock stays Enabled (judged here, in the same transaction as
            // the setting, against `set_bucket_setting`'s own check for object lock).
            if state == Versioning::Suspended
                && settings
                    .get((bucket, BucketSetting::ObjectLock.name()))
                    .map_err(db_err)?
                    .is_some()
            {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidBucketState,
                    "An Object Lock configuration is present on this bucket, so the versioning \
                     state cannot be changed.",
                ));
            }
            settings
                .insert(
                    (bucket, BucketSetting::Versioning.name()),
                    state.as_str().as_bytes(),
                )
                .map_err(db_err)?;
            raise_layout(txn, VERSIONED_LAYOUT)
        })?;
        self.inner.settings.invalidate(bucket);
        Ok(())
    }

    /// Whether writes must read their bucket's versioning state (some bucket has one).
    pub(crate) fn maybe_versioned(&self) -> bool {
        self.inner.versioned.load(Ordering::SeqCst)
    }

    /// DELETE: remove `bucket`/`key`; `NoSuchBucket` if the bucket does not exist. Without a
    /// `version` in `opts`, the key goes (never versioned), or a delete marker becomes its
    /// current version (`Enabled`; the null version when `Suspended`, replacing the null
    /// version); with one, that version goes for good (its data files after the commit) and
    /// the next newest object, if any, becomes current. Deleting a missing key or version
    /// succeeds, as in S3. The removal of a version for good (not a delete marker's) is first
    /// put to the `guard`, in the deleting transaction; `conditions`: see
    /// [`DeleteOptions`](super::DeleteOptions) and `delete_in`.
    pub fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        opts: super::DeleteOptions<'_>,
    ) -> S3Result<DeleteOutcome> {
        let super::DeleteOptions {
            version,
            conditions,
            guard,
        } = opts;
        let k = object_key(bucket, key)?;
        if version.is_none()
            && conditions == DeleteConditions::default()
            && self.versioning(bucket)?.is_none()
        {
            // Most deletes of missing keys need no write transaction (and no fsync).
            let txn = self.read_txn()?;
            let objects = txn.open_table(OBJECTS).map_err(db_err)?;
            if objects.get(k.as_slice()).map_err(db_err)?.is_none() {
                let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
                return if bucket_exists(&buckets, bucket)? {
                    Ok(DeleteOutcome::default())
                } else {
                    Err(S3Error::new(S3ErrorCode::NoSuchBucket))
                };
            }
        }
        let (outcome, files, size) = self.update(None, |txn| {
            delete_in(
                self,
                txn,
                bucket,
                &k,
                version,
                conditions,
                &|rec| match guard {
                    Some(guard) => guard(&rec.meta),
                    None => Ok(()),
                },
            )
        })?;
        if let Some(size) = size {
            self.inner.counters.deleted(size);
        }
        self.inner.retire(&files);
        Ok(outcome)
    }

    /// The version id of `bucket`/`key`'s delete marker if one is its current version (what a
    /// GET or HEAD that found no object answers with `x-amz-delete-marker`).
    pub fn current_delete_marker(&self, bucket: &str, key: &str) -> S3Result<Option<VersionId>> {
        let k = object_key(bucket, key)?;
        let txn = self.read_txn()?;
        let objects = txn.open_table(OBJECTS).map_err(db_err)?;
        if objects.get(k.as_slice()).map_err(db_err)?.is_some() {
            return Ok(None);
        }
        let versions = txn.open_table(VERSIONS).map_err(db_err)?;
        let Some((_, bytes)) = newest_old(&versions, &k)? else {
            return Ok(None);
        };
        let rec: ObjectRecord = codec::decode(&bytes)?;
        Ok(rec.is_delete_marker().then(|| rec.version_id()))
    }

    /// Change the metadata of version `version` of `bucket`/`key` (the current one if `None`)
    /// with `change`, in a metadata-only group commit: `NoSuchKey`, `NoSuchVersion`,
    /// `MethodNotAllowed` for a delete marker, `NoSuchBucket`, or `OperationAborted` while a
    /// fence holds the bucket.
    pub fn update_version_meta(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
        change: impl Fn(&mut super::ObjectMeta) -> S3Result<()> + Send + 'static,
    ) -> S3Result<()> {
        check_bucket_name(bucket)?;
        check_key(key)?;
        let k = object_key(bucket, key)?;
        let bucket = bucket.to_owned();
        self.update_grouped(None, move |txn| {
            let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
            if !bucket_exists(&buckets, &bucket)? {
                return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
            }
            check_unfenced(txn, &bucket)?;
            let mut objects = txn.open_table(OBJECTS).map_err(db_err)?;
            let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
            let (slot, mut rec) = match version {
                None => match objects.get(k.as_slice()).map_err(db_err)? {
                    Some(v) => (Slot::Current, codec::decode::<ObjectRecord>(v.value())?),
                    None => return Err(S3Error::new(S3ErrorCode::NoSuchKey)),
                },
                Some(v) => find_version(&objects, &versions, &k, v)?
                    .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchVersion))?,
            };
            if rec.is_delete_marker() {
                return Err(S3Error::new(S3ErrorCode::MethodNotAllowed));
            }
            change(&mut rec.meta)?;
            let bytes = codec::encode(&rec)?;
            match slot {
                Slot::Current => objects.insert(k.as_slice(), bytes.as_slice()).map(drop),
                Slot::Old(inv) => versions
                    .insert((k.as_slice(), inv), bytes.as_slice())
                    .map(drop),
            }
            .map_err(db_err)
        })
    }

    /// ListObjectVersions: the versions and delete markers of `bucket` matching `q`, by key
    /// and newest first within a key, with common prefixes.
    pub fn list_versions(&self, bucket: &str, q: &VersionsQuery<'_>) -> S3Result<VersionsPage> {
        let max = q.max_keys.min(MAX_LIST);
        let txn = self.read_txn()?;
        require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
        let mut page = VersionsPage::default();
        if max == 0 {
            return Ok(page);
        }
        let objects = txn.open_table(OBJECTS).map_err(db_err)?;
        let versions = txn.open_table(VERSIONS).map_err(db_err)?;
        let base = bucket_prefix(bucket);
        let prefix = q.prefix.as_bytes();
        let delim = q.delimiter.filter(|d| !d.is_empty()).map(str::as_bytes);
        let mut full_prefix = base.clone();
        full_prefix.extend_from_slice(prefix);

        // The next key to look at: (full key, inclusive).
        let mut from = (full_prefix.clone(), true);
        // Versions of the marker key to skip: those at or newer than this one.
        let mut skip: Option<(Vec<u8>, VersionId)> = None;
        if let Some(km) = q.key_marker.map(str::as_bytes) {
            let mut km_full = base.clone();
            km_full.extend_from_slice(km);
            if km_full >= full_prefix {
                from = match (
                    delim.and_then(|d| rolled_prefix(km, prefix, d)),
                    q.version_id_marker,
                ) {
                    (Some(n), _) if n == km.len() => match successor(&km_full) {
                        Some(s) => (s, true),
                        None => return Ok(page),
                    },
                    (_, Some(vm)) => {
                        skip = Some((km_full.clone(), vm));
                        (km_full, true)
                    }
                    (_, None) => (km_full, false),
                };
            }
        }

        let full_of = |k: &[u8]| k.starts_with(&full_prefix);
        let mut last_was_prefix = false;
        loop {
            let (at, inclusive) = (&from.0, from.1);
            let lower = if inclusive {
                Bound::Included(at.as_slice())
            } else {
                Bound::Excluded(at.as_slice())
            };
            let next_obj = match objects
                .range::<&[u8]>((lower, Bound::Unbounded))
                .map_err(db_err)?
                .next()
            {
                Some(item) => Some(item.map_err(db_err)?.0.value().to_vec()),
                None => None,
            };
            let vlower = if inclusive {
                Bound::Included((at.as_slice(), 0))
            } else {
                Bound::Excluded((at.as_slice(), u64::MAX))
            };
            let next_ver = match versions
                .range::<(&[u8], u64)>((vlower, Bound::Unbounded))
                .map_err(db_err)?
                .next()
            {
                Some(item) => Some(item.map_err(db_err)?.0.value().0.to_vec()),
                None => None,
            };
            let full = match (
                next_obj.filter(|k| full_of(k)),
                next_ver.filter(|k| full_of(k)),
            ) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            let key = &full[base.len()..];
            let taken = page.entries.len() + page.common_prefixes.len();
            if let Some(n) = delim.and_then(|d| rolled_prefix(key, prefix, d)) {
                if taken == max {
                    page.is_truncated = true;
                    break;
                }
                page.common_prefixes.push(utf8(&key[..n])?);
                last_was_prefix = true;
                match successor(&full[..base.len() + n]) {
                    Some(s) => from = (s, true),
                    None => break,
                }
                continue;
            }
            // The key's versions, newest first: the current object, then the others.
            let mut recs = Vec::new();
            if let Some(v) = objects.get(full.as_slice()).map_err(db_err)? {
                recs.push(codec::decode::<ObjectRecord>(v.value())?);
            }
            for item in versions.range(key_range(&full)).map_err(db_err)? {
                let (_, v) = item.map_err(db_err)?;
                recs.push(codec::decode::<ObjectRecord>(v.value())?);
            }
            let mut start = 0;
            if let Some((_, vm)) = skip.take().filter(|(sk, _)| *sk == full) {
                start = match vm {
                    VersionId::Seq(s) => recs.iter().take_while(|r| r.order() >= s).count(),
                    VersionId::Null => recs
                        .iter()
                        .position(ObjectRecord::is_null)
                        .map_or(0, |i| i + 1),
                };
            }
            let name = utf8(key)?;
            for (i, rec) in recs.iter().enumerate().skip(start) {
                if page.entries.len() + page.common_prefixes.len() == max {
                    page.is_truncated = true;
                    break;
                }
                page.entries.push(VersionEntry {
                    key: name.clone(),
                    version_id: rec.version_id(),
                    is_latest: i == 0,
                    delete_marker: rec.is_delete_marker(),
                    etag: if rec.is_delete_marker() {
                        None
                    } else {
                        Some(stored_etag(&rec.etag)?)
                    },
                    size: rec.size,
                    last_modified: DateTime::from_unix(rec.last_modified),
                });
                last_was_prefix = false;
            }
            if page.is_truncated {
                break;
            }
            from = (full, false);
        }
        if page.is_truncated {
            if last_was_prefix {
                page.next_key_marker = page.common_prefixes.last().cloned();
            } else if let Some(e) = page.entries.last() {
                page.next_key_marker = Some(e.key.clone());
                page.next_version_id_marker = Some(e.version_id);
            }
        }
        Ok(page)
    }
}

fn utf8(b: &[u8]) -> S3Result<String> {
    String::from_utf8(b.to_vec())
        .map_err(|_| S3Error::with_message(S3ErrorCode::InternalError, "stored key is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_sequence_is_above_both_and_within_the_margin_or_none() {
        let now = 1_700_000_000_000_000;
        assert_eq!(seq_after(now, 0, 0), Some(now));
        assert_eq!(seq_after(now, now + 5, 0), Some(now + 6));
        assert_eq!(seq_after(now, 0, now + 9), Some(now + 10));
        let limit = now + CLOCK_MARGIN_MICROS;
        assert_eq!(seq_after(now, limit - 1, 0), Some(limit));
        // Nothing beyond the margin, and no overflow or saturation at the end of the range.
        assert_eq!(seq_after(now, limit, 0), None);
        assert_eq!(seq_after(now, 0, limit), None);
        assert_eq!(seq_after(now, u64::MAX, 0), None);
        assert_eq!(seq_after(now, 0, u64::MAX), None);
        assert_eq!(seq_after(u64::MAX, 0, 0), Some(u64::MAX));
        assert_eq!(seq_after(u64::MAX, u64::MAX, 0), None);
    }

    #[test]
    fn placed_ids_and_dates_ahead_of_the_margin_are_refused() {
        let now = now_micros();
        let at = |seq: u64, null: bool| super::super::Placed {
            seq: Some(seq),
            null,
            last_modified: None,
        };
        assert!(check_placed(&at(now, false)).is_ok());
        assert!(check_placed(&at(now + CLOCK_MARGIN_MICROS / 2, true)).is_ok());
        for seq in [now + 2 * CLOCK_MARGIN_MICROS, u64::MAX - 1, u64::MAX] {
            for null in [false, true] {
                let e = check_placed(&at(seq, null)).unwrap_err();
                assert_eq!(e.code, S3ErrorCode::InvalidArgument);
            }
        }
        let dated = |secs: i64| super::super::Placed {
            last_modified: Some(secs),
            ..Default::default()
        };
        let secs = i64::try_from(now / 1_000_000).unwrap();
        assert!(check_placed(&dated(secs)).is_ok());
        assert!(check_placed(&dated(-1)).is_ok());
        assert!(check_placed(&dated(secs + 7_200)).is_err());
    }
}
