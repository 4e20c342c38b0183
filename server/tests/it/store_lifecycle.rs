//! What the lifecycle worker asks of the store, on a real directory: objects scanned in
//! bounded batches under a prefix (with their tags when asked), and an expiry that removes an
//! object (and its data file) only while it is the version that was judged.

use ferry_core::s3::S3ErrorCode;
use ferry_server::store::{ObjectMeta, Store, WriteConditions};

use crate::support::store::{code, data_files, open};

fn put(s: &Store, b: &str, k: &str, data: &[u8], tags: &[(&str, &str)]) {
    let mut w = s.object_writer(b, k).unwrap();
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
    assert_eq!(s.head_object("b", "k").unwrap().size, 4);
    assert_eq!(data_files(dir.path()), 1);
    let before = s.stats().objects;
    assert_eq!(
        s.expire_object("b", "k", &now.etag, now.last_modified)
            .unwrap(),
        Some(4)
    );
    assert_eq!(code(s.head_object("b", "k")), S3ErrorCode::NoSuchKey);
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
