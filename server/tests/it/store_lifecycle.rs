//! What the lifecycle worker asks of the store, on a real directory: objects scanned in
//! bounded batches under a prefix (with their tags when asked), and an expiry that removes an
//! object (and its data file) only while it is the version that was judged; and the same for
//! noncurrent versions and delete markers, which object lock keeps.

use ferry_core::s3::S3ErrorCode;
use ferry_core::s3::xml::lock::{Retention, RetentionMode};
use ferry_server::store::{
    DeleteOptions, HeadOptions, ObjectMeta, ScannedVersion, Store, Versioning, WriteConditions,
};

use crate::support::store::{code, data_files, open};

fn put(s: &Store, b: &str, k: &str, data: &[u8], tags: &[(&str, &str)]) {
    let mut w = s.object_writer(b, k, None).unwrap();
    w.write(data).unwrap();
    let meta = ObjectMeta {
        tags: tags
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..ObjectMeta::default()
    };
    w.commit(meta, WriteConditions::default()).unwrap();
}

#[test]
fn scans_go_in_batches_under_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.create_bucket("c").unwrap();
    for i in 0..5 {
        put(&s, "b", &format!("logs/{i}"), b"x", &[("t", "v")]);
    }
    put(&s, "b", "other", b"yy", &[]);
    put(&s, "c", "logs/9", b"z", &[]);
    let first = s.scan_objects("b", "logs/", None, 2, true).unwrap();
    let keys: Vec<&str> = first.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["logs/0", "logs/1"]);
    assert_eq!(first.objects[0].tags, [("t".to_owned(), "v".to_owned())]);
    assert_eq!(first.next.as_deref(), Some("logs/1"));
    let rest = s
        .scan_objects("b", "logs/", first.next.as_deref(), 10, false)
        .unwrap();
    let keys: Vec<&str> = rest.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["logs/2", "logs/3", "logs/4"]);
    assert!(rest.objects[0].tags.is_empty(), "tags only when asked");
    assert_eq!(rest.next, None);
    let all = s.scan_objects("b", "", None, 100, false).unwrap();
    assert_eq!(all.objects.len(), 6);
    assert_eq!(all.objects[5].size, 2);
    assert_eq!(
        code(s.scan_objects("nope", "", None, 10, false)),
        S3ErrorCode::NoSuchBucket
    );
}

#[test]
fn expiry_removes_only_the_version_judged() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    put(&s, "b", "k", b"old", &[]);
    let judged = s
        .scan_objects("b", "", None, 10, false)
        .unwrap()
        .objects
        .remove(0);
    // Overwritten since: the new version stays.
    put(&s, "b", "k", b"new!", &[]);
    let now = s
        .scan_objects("b", "", None, 10, false)
        .unwrap()
        .objects
        .remove(0);
    assert_ne!(now.etag, judged.etag);
    assert_eq!(
        s.expire_object("b", "k", &judged.etag, judged.last_modified)
            .unwrap(),
        None
    );
    assert_eq!(
        s.head_object("b", "k", HeadOptions::default())
            .unwrap()
            .size,
        4
    );
    assert_eq!(data_files(dir.path()), 1);
    let before = s.stats().objects;
    assert_eq!(
        s.expire_object("b", "k", &now.etag, now.last_modified)
            .unwrap(),
        Some(4)
    );
    assert_eq!(
        code(s.head_object("b", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
    assert_eq!(s.stats().objects, before - 1);
    assert_eq!(
        data_files(dir.path()),
        0,
        "the data file goes with the object"
    );
    // Gone already: nothing to do.
    assert_eq!(
        s.expire_object("b", "k", &now.etag, now.last_modified)
            .unwrap(),
        None
    );
}

#[test]
fn a_batch_expires_in_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    for k in ["a", "b", "c"] {
        put(&s, "b", k, k.as_bytes(), &[]);
    }
    let judged = s.scan_objects("b", "", None, 10, false).unwrap().objects;
    put(&s, "b", "b", b"replaced", &[]);
    let commits = s.stats().commits_attempted;
    let removed = s.expire_objects("b", &judged).unwrap();
    assert_eq!(removed, [Some(1), None, Some(1)]);
    assert_eq!(s.stats().commits_attempted, commits + 1);
    let left = s.scan_objects("b", "", None, 10, false).unwrap().objects;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].key, "b");
    assert_eq!(left[0].size, 8);
    assert_eq!(data_files(dir.path()), 1);
}

/// The ids of `b`'s versions scanned in one batch, with what makes each due.
fn scan(s: &Store, b: &str, newer_cap: u32) -> Vec<ScannedVersion> {
    let batch = s.scan_versions(b, "", None, 100, true, newer_cap).unwrap();
    assert_eq!(batch.next, None);
    batch.versions
}

#[test]
fn versions_scan_with_what_makes_them_due() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.set_versioning("b", Versioning::Enabled).unwrap();
    for data in [&b"v1"[..], b"v22", b"v333", b"v4444"] {
        put(&s, "b", "k", data, &[("t", "v")]);
    }
    put(&s, "b", "only", b"x", &[]);
    // The current objects are not scanned: three noncurrent versions, newest first.
    let v = scan(&s, "b", 100);
    let sizes: Vec<u64> = v.iter().map(|v| v.size).collect();
    assert_eq!(sizes, [4, 3, 2]);
    let newer: Vec<u32> = v.iter().map(|v| v.newer_noncurrent).collect();
    assert_eq!(newer, [0, 1, 2]);
    assert!(
        v.iter()
            .all(|v| v.noncurrent_since.is_some() && !v.only_version)
    );
    assert_eq!(v[0].tags, [("t".to_owned(), "v".to_owned())]);
    // Counted only as far as asked.
    let capped: Vec<u32> = scan(&s, "b", 1)
        .iter()
        .map(|v| v.newer_noncurrent)
        .collect();
    assert_eq!(capped, [0, 1, 1]);
    // In batches: continue after a key and seq.
    let first = s.scan_versions("b", "", None, 2, false, 0).unwrap();
    assert_eq!(first.versions.len(), 2);
    assert!(first.versions[0].tags.is_empty(), "tags only when asked");
    let (k, seq) = first.next.clone().unwrap();
    let rest = s
        .scan_versions("b", "", Some((&k, seq)), 2, false, 0)
        .unwrap();
    assert_eq!(rest.versions.len(), 1);
    assert_eq!(rest.versions[0].size, 2);
    assert_eq!(rest.next, None);
    assert!(
        s.scan_versions("b", "other", None, 10, false, 0)
            .unwrap()
            .versions
            .is_empty()
    );

    // A delete marker on `only`: current, with a version behind it.
    s.delete_object("b", "only", DeleteOptions::default())
        .unwrap();
    let marker = scan(&s, "b", 0)
        .into_iter()
        .find(|v| v.key == "only" && v.delete_marker)
        .unwrap();
    assert_eq!(marker.noncurrent_since, None);
    assert!(!marker.only_version);
    let version = scan(&s, "b", 0)
        .into_iter()
        .find(|v| v.key == "only" && !v.delete_marker)
        .unwrap();
    assert_eq!(version.noncurrent_since, Some(marker.last_modified));
    // Its version removed: the marker is all the key has.
    let files = data_files(dir.path());
    let removed = s
        .expire_versions("b", std::slice::from_ref(&version), 0, |v| {
            v.noncurrent_since.is_some()
        })
        .unwrap();
    assert_eq!(removed, [Some(1)]);
    assert_eq!(data_files(dir.path()), files - 1, "its data file goes");
    let marker = scan(&s, "b", 0)
        .into_iter()
        .find(|v| v.key == "only")
        .unwrap();
    assert!(marker.delete_marker && marker.only_version);
    // A lone marker: removed while still lone; an object put since makes it noncurrent.
    let lone = |v: &ScannedVersion| v.delete_marker && v.only_version;
    put(&s, "b", "only", b"back", &[]);
    assert_eq!(
        s.expire_versions("b", std::slice::from_ref(&marker), 0, lone)
            .unwrap(),
        [None]
    );
    s.delete_object(
        "b",
        "only",
        DeleteOptions {
            version: Some(
                s.head_object("b", "only", HeadOptions::default())
                    .unwrap()
                    .version_id
                    .unwrap(),
            ),
            ..DeleteOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        s.expire_versions("b", std::slice::from_ref(&marker), 0, lone)
            .unwrap(),
        [Some(0)]
    );
    assert!(scan(&s, "b", 0).iter().all(|v| v.key != "only"));
    assert_eq!(
        code(s.head_object("b", "only", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
}

#[test]
fn object_lock_keeps_versions_from_expiring() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.set_versioning("b", Versioning::Enabled).unwrap();
    for data in [&b"held"[..], b"retained", b"current"] {
        put(&s, "b", "k", data, &[]);
    }
    let v = scan(&s, "b", 0);
    let (retained, held) = (&v[0], &v[1]);
    let future = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        + 3600;
    s.update_version_meta("b", "k", Some(held.version_id), |m| {
        m.legal_hold = true;
        Ok(())
    })
    .unwrap();
    s.update_version_meta("b", "k", Some(retained.version_id), move |m| {
        m.retention = Some(Retention {
            mode: RetentionMode::Compliance,
            until: future,
        });
        Ok(())
    })
    .unwrap();
    let all = |_: &ScannedVersion| true;
    assert_eq!(s.expire_versions("b", &v, 0, all).unwrap(), [None, None]);
    assert_eq!(scan(&s, "b", 0).len(), 2, "both kept");
    // The hold lifted: that one goes; a retention past its date no longer protects.
    s.update_version_meta("b", "k", Some(held.version_id), |m| {
        m.legal_hold = false;
        Ok(())
    })
    .unwrap();
    s.update_version_meta("b", "k", Some(retained.version_id), |m| {
        m.retention = Some(Retention {
            mode: RetentionMode::Governance,
            until: 1,
        });
        Ok(())
    })
    .unwrap();
    assert_eq!(
        s.expire_versions("b", &v, 0, all).unwrap(),
        [Some(8), Some(4)]
    );
    assert!(scan(&s, "b", 0).is_empty());
    assert_eq!(
        s.head_object("b", "k", HeadOptions::default())
            .unwrap()
            .size,
        7,
        "the current object stays"
    );
}
