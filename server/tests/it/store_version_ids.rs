//! Version ids in the store cannot be exhausted or repeated, whatever a placed write asks: a
//! placed id ahead of the node's clock (beyond its margin) is refused and raises nothing, the
//! sequence never saturates, a new version never lands on another's slot, and a store that an
//! older build let be poisoned is repaired at open.

use std::collections::HashSet;

use ferry_core::s3::xml::lock::{Retention, RetentionMode};
use ferry_core::s3::{S3ErrorCode, S3Result};
use ferry_server::store::{
    BucketSetting, DeleteOptions, GetOptions, HeadOptions, ObjectMeta, Placed, PutResult, Store,
    VersionId, VersionsQuery, WriteConditions,
};

use crate::support::store::{code, open};

/// Now, in microseconds since the epoch (what version sequences count).
fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

const DAY_MICROS: u64 = 86_400 * 1_000_000;

fn write(
    s: &Store,
    b: &str,
    k: &str,
    data: &[u8],
    meta: ObjectMeta,
    placed: Placed,
) -> S3Result<PutResult> {
    let mut w = s.object_writer(b, k, None)?;
    w.write(data)?;
    w.commit(
        meta,
        WriteConditions {
            placed,
            ..WriteConditions::default()
        },
    )
}

fn put(s: &Store, b: &str, k: &str, data: &[u8]) -> S3Result<PutResult> {
    write(s, b, k, data, ObjectMeta::default(), Placed::default())
}

fn placed(s: &Store, b: &str, k: &str, data: &[u8], seq: u64) -> S3Result<PutResult> {
    let at = Placed {
        seq: Some(seq),
        ..Placed::default()
    };
    write(s, b, k, data, ObjectMeta::default(), at)
}

fn read(s: &Store, b: &str, k: &str, v: VersionId) -> Vec<u8> {
    use std::io::Read as _;
    let mut r = s
        .get_object(
            b,
            k,
            GetOptions {
                version: Some(v),
                ..GetOptions::default()
            },
        )
        .unwrap();
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    out
}

/// (key, version id) of every version of `b`, newest first within a key.
fn versions(s: &Store, b: &str) -> Vec<(String, VersionId)> {
    let q = VersionsQuery {
        max_keys: 1000,
        ..VersionsQuery::default()
    };
    let page = s.list_versions(b, &q).unwrap();
    assert!(!page.is_truncated);
    page.entries
        .into_iter()
        .map(|e| (e.key, e.version_id))
        .collect()
}

/// A versioned bucket `b` owned by `owner`; with object lock when `locked`.
fn bucket(s: &Store, b: &str, owner: &str, locked: bool) {
    let mut settings: Vec<(BucketSetting, &[u8])> = vec![
        (BucketSetting::Owner, owner.as_bytes()),
        (BucketSetting::Versioning, b"Enabled"),
    ];
    if locked {
        settings.push((BucketSetting::ObjectLock, b"COMPLIANCE:D1"));
    }
    s.create_bucket_with(b, &settings).unwrap();
}

/// The audit's reproduction: one user places versions with id `0000000000000001` (the
/// sequence's next to last value) in a bucket of their own; another owner's COMPLIANCE-locked
/// bucket, written afterwards, must keep every version under its own id, and the node's next
/// ids stay near its clock. Before the fix the placement raised the node's sequence to the end
/// of its range, every later version got id `0000000000000000`, and each one overwrote the
/// last noncurrent version.
#[test]
fn placed_ids_at_the_end_of_the_range_take_nothing_from_other_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    bucket(&s, "mallory", "mallory", false);
    bucket(&s, "vault", "alice", true);
    bucket(&s, "plain", "bob", false);
    let top = VersionId::parse("0000000000000001").unwrap().seq().unwrap();
    assert_eq!(top, u64::MAX - 1);
    let placements: Vec<_> = ["a", "a", "b"]
        .into_iter()
        .map(|k| placed(&s, "mallory", k, b"mine", top))
        .collect();

    let until = i64::try_from(now_micros() / 1_000_000).unwrap() + 86_400;
    let locked = ObjectMeta {
        retention: Some(Retention {
            mode: RetentionMode::Compliance,
            until,
        }),
        ..ObjectMeta::default()
    };
    let bodies: Vec<Vec<u8>> = (0..5).map(|i| format!("record {i}").into_bytes()).collect();
    let ids: Vec<VersionId> = bodies
        .iter()
        .map(|d| {
            write(&s, "vault", "ledger", d, locked.clone(), Placed::default())
                .unwrap()
                .version_id
                .unwrap()
        })
        .collect();
    let unique: HashSet<VersionId> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "every version its own id: {ids:?}");
    // Every version stays, newest first, each with its own bytes.
    let listed: Vec<VersionId> = versions(&s, "vault").into_iter().map(|(_, v)| v).collect();
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    for (id, body) in ids.iter().zip(&bodies) {
        assert_eq!(&read(&s, "vault", "ledger", *id), body);
    }
    // The node's sequence was not raised: its next id is its clock's.
    let next = put(&s, "plain", "k", b"x").unwrap().version_id.unwrap();
    let seq = next.seq().unwrap();
    assert!(
        seq.abs_diff(now_micros()) < DAY_MICROS,
        "next id {next} (seq {seq}) is not near the clock"
    );
    // The placements themselves were refused, and wrote nothing.
    for p in placements {
        assert_eq!(code(p), S3ErrorCode::InvalidArgument);
    }
    assert_eq!(versions(&s, "mallory"), []);
}

/// A placed id (or null version's order, or date) more than the margin ahead of the clock is
/// refused with nothing written; one within the margin is taken, and raises no other key's
/// ids.
#[test]
fn placed_ids_beyond_the_clock_margin_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    bucket(&s, "b", "bob", false);
    s.create_bucket("plain").unwrap();
    let hour = 3_600 * 1_000_000;
    let ahead = now_micros() + 2 * hour;
    assert_eq!(
        code(placed(&s, "b", "k", b"x", ahead)),
        S3ErrorCode::InvalidArgument
    );
    let null_ahead = Placed {
        seq: Some(ahead),
        null: true,
        last_modified: None,
    };
    assert_eq!(
        code(write(&s, "b", "k", b"x", ObjectMeta::default(), null_ahead)),
        S3ErrorCode::InvalidArgument
    );
    let marker_ahead = ferry_server::store::DeleteConditions {
        placed: Placed {
            seq: Some(ahead),
            ..Placed::default()
        },
        ..Default::default()
    };
    assert_eq!(
        code(s.delete_object(
            "b",
            "k",
            DeleteOptions {
                conditions: marker_ahead,
                guard: Some(&|_| Ok(())),
                ..DeleteOptions::default()
            }
        )),
        S3ErrorCode::InvalidArgument
    );
    // A date orders a record without a stamp: a far one is refused in any bucket.
    let dated = Placed {
        last_modified: Some(i64::try_from(ahead / 1_000_000).unwrap()),
        ..Placed::default()
    };
    for b in ["b", "plain"] {
        assert_eq!(
            code(write(&s, b, "k", b"x", ObjectMeta::default(), dated)),
            S3ErrorCode::InvalidArgument
        );
    }
    assert_eq!(versions(&s, "b"), []);
    assert_eq!(
        code(s.head_object("plain", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );

    // Within the margin (another node's clock a little ahead): taken, current.
    let near = now_micros() + hour / 2;
    let v = placed(&s, "b", "k", b"near", near).unwrap().version_id;
    assert_eq!(v, Some(VersionId::Seq(near)));
    assert_eq!(read(&s, "b", "k", VersionId::Seq(near)), b"near");
    // Another key's next version stays with the clock (the placement raised no counter);
    // this key's goes above the placed one (and so, within the margin, does the counter).
    let other = put(&s, "b", "other", b"o").unwrap().version_id.unwrap();
    assert!(other.seq().unwrap() < near, "placement raised the counter");
    let next = put(&s, "b", "k", b"next").unwrap().version_id.unwrap();
    assert!(next.seq().unwrap() > near);
}

/// A key whose newest version has an id at the end of the range (what builds before the
/// bound could leave) takes no new version: its writes and delete markers fail with
/// `InternalError`, every version stays, other keys are untouched, and the lifecycle passes
/// over it.
#[test]
fn a_key_at_the_end_of_the_range_refuses_new_versions_and_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    bucket(&s, "b", "bob", false);
    for (key, top) in [("max", u64::MAX), ("next-to-max", u64::MAX - 1)] {
        let v1 = put(&s, "b", key, b"one").unwrap().version_id.unwrap();
        put(&s, "b", key, b"two").unwrap();
        s.restamp_current_for_tests("b", key, top).unwrap();
        let before: Vec<_> = versions(&s, "b")
            .into_iter()
            .filter(|e| e.0 == key)
            .collect();
        assert_eq!(
            before.iter().map(|e| e.1).collect::<Vec<_>>(),
            [VersionId::Seq(top), v1]
        );
        assert_eq!(
            code(put(&s, "b", key, b"three")),
            S3ErrorCode::InternalError
        );
        assert_eq!(
            code(s.delete_object("b", key, DeleteOptions::default())),
            S3ErrorCode::InternalError
        );
        let after: Vec<_> = versions(&s, "b")
            .into_iter()
            .filter(|e| e.0 == key)
            .collect();
        assert_eq!(after, before);
        assert_eq!(read(&s, "b", key, VersionId::Seq(top)), b"two");
        assert_eq!(read(&s, "b", key, v1), b"one");
    }
    // The node's counter is untouched: another key's id is the clock's.
    let other = put(&s, "b", "other", b"o").unwrap().version_id.unwrap();
    assert!(other.seq().unwrap().abs_diff(now_micros()) < DAY_MICROS);
    // The lifecycle expires the rest of its batch and leaves those keys as they are.
    let scanned = s.scan_objects("b", "", None, 10, false).unwrap().objects;
    let keys: Vec<&str> = scanned.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["max", "next-to-max", "other"]);
    assert_eq!(
        s.expire_objects("b", &scanned).unwrap(),
        [None, None, Some(0)]
    );
    assert_eq!(
        code(s.head_object("b", "other", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
    assert_eq!(versions(&s, "b").len(), 2 + 2 + 2);
}

/// A new version never takes a slot another version holds: with the current version's id
/// made equal to an older one's (a state builds before the bound could reach), moving it
/// aside for a new version or a delete marker is refused and both stay.
#[test]
fn a_new_version_never_replaces_another_in_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    bucket(&s, "b", "bob", false);
    let v1 = put(&s, "b", "k", b"one").unwrap().version_id.unwrap();
    put(&s, "b", "k", b"two").unwrap();
    s.restamp_current_for_tests("b", "k", v1.seq().unwrap())
        .unwrap();
    let etags = |s: &Store| -> Vec<String> {
        let q = VersionsQuery {
            max_keys: 1000,
            ..VersionsQuery::default()
        };
        let page = s.list_versions("b", &q).unwrap();
        page.entries
            .iter()
            .map(|e| format!("{} {:?}", e.version_id, e.etag))
            .collect()
    };
    let before = etags(&s);
    assert_eq!(before.len(), 2);
    assert_ne!(before[0], before[1], "two versions, one id: {before:?}");
    assert_eq!(
        code(put(&s, "b", "k", b"three")),
        S3ErrorCode::InternalError
    );
    assert_eq!(etags(&s), before);
    assert_eq!(
        code(s.delete_object("b", "k", DeleteOptions::default())),
        S3ErrorCode::InternalError
    );
    assert_eq!(etags(&s), before);
}

/// A store whose version counter an older build raised to the end of the range refuses new
/// versions rather than repeat an id, and is repaired at its next open: the counter goes back
/// to the clock (above every version it holds that is not ahead of it), while a key whose
/// newest version has an impossible id still refuses new ones.
#[test]
fn a_poisoned_counter_is_repaired_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = {
        let s = open(dir.path());
        bucket(&s, "b", "bob", false);
        let v1 = put(&s, "b", "k", b"one").unwrap().version_id.unwrap();
        put(&s, "b", "stuck", b"s").unwrap();
        s.restamp_current_for_tests("b", "stuck", u64::MAX - 1)
            .unwrap();
        s.set_version_counter_for_tests(u64::MAX - 1).unwrap();
        // Poisoned: no id is given out twice or saturated; the write fails whole.
        assert_eq!(code(put(&s, "b", "k", b"two")), S3ErrorCode::InternalError);
        assert_eq!(versions(&s, "b").len(), 2);
        v1
    };
    let s = open(dir.path());
    let v2 = put(&s, "b", "k", b"two").unwrap().version_id.unwrap();
    let seq = v2.seq().unwrap();
    assert!(seq > v1.seq().unwrap());
    assert!(
        seq.abs_diff(now_micros()) < DAY_MICROS,
        "next id {v2} (seq {seq}) is not near the clock"
    );
    assert_eq!(read(&s, "b", "k", v1), b"one");
    assert_eq!(
        code(put(&s, "b", "stuck", b"t")),
        S3ErrorCode::InternalError
    );
    assert_eq!(read(&s, "b", "stuck", VersionId::Seq(u64::MAX - 1)), b"s");
    // Repaired for good: another open changes nothing, ids keep rising.
    drop(s);
    let s = open(dir.path());
    let v3 = put(&s, "b", "k", b"three").unwrap().version_id.unwrap();
    assert!(v3.seq().unwrap() > seq);
}
