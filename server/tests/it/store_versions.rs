//! Object versions in the store: the versioning state, versions kept beside the current
//! object, delete markers, the null version, permanent deletes, listings and their markers,
//! and the data files every version keeps across a reopen (open-time cleanup counts them).
//! A store written before versions (no versions table) opens and works.

use ferry_core::s3::{S3ErrorCode, S3Result};
use ferry_server::store::{
    DeleteConditions, DeleteOptions, GetOptions, HeadOptions, ObjectMeta, Placed, PutResult, Store,
    VersionId, Versioning, VersionsQuery, WriteConditions,
};

use redb::ReadableDatabase as _;

use crate::support::store::{code, data_files, open};

fn put(s: &Store, b: &str, k: &str, data: &[u8]) -> Option<VersionId> {
    let mut w = s.object_writer(b, k, None).unwrap();
    w.write(data).unwrap();
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap()
        .version_id
}

fn read(s: &Store, b: &str, k: &str, v: Option<VersionId>) -> Vec<u8> {
    use std::io::Read as _;
    let mut r = s
        .get_object(
            b,
            k,
            GetOptions {
                version: v,
                ..GetOptions::default()
            },
        )
        .unwrap();
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    out
}

/// (key, version, is latest, is a delete marker) of every version, in listing order.
fn listed(s: &Store, b: &str) -> Vec<(String, VersionId, bool, bool)> {
    let q = VersionsQuery {
        max_keys: 1000,
        ..VersionsQuery::default()
    };
    let page = s.list_versions(b, &q).unwrap();
    assert!(!page.is_truncated);
    page.entries
        .into_iter()
        .map(|e| (e.key, e.version_id, e.is_latest, e.delete_marker))
        .collect()
}

fn l(k: &str, v: VersionId, latest: bool, marker: bool) -> (String, VersionId, bool, bool) {
    (k.to_owned(), v, latest, marker)
}

#[test]
fn versions_live_beside_the_current_object_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    assert_eq!(s.versioning("b").unwrap(), None);
    // Before versioning: no version ids, the null version.
    assert_eq!(put(&s, "b", "k", b"null one"), None);
    s.set_versioning("b", Versioning::Enabled).unwrap();
    assert_eq!(s.versioning("b").unwrap(), Some(Versioning::Enabled));
    let v1 = put(&s, "b", "k", b"one").unwrap();
    let v2 = put(&s, "b", "k", b"two").unwrap();
    let (VersionId::Seq(a), VersionId::Seq(b)) = (v1, v2) else {
        panic!("versions are not null: {v1:?} {v2:?}");
    };
    assert!(b > a);
    assert!(v2.to_string() < v1.to_string());
    assert_eq!(read(&s, "b", "k", None), b"two");
    assert_eq!(read(&s, "b", "k", Some(v1)), b"one");
    assert_eq!(read(&s, "b", "k", Some(VersionId::Null)), b"null one");
    assert_eq!(
        s.head_object(
            "b",
            "k",
            HeadOptions {
                version: Some(v1),
                ..HeadOptions::default()
            }
        )
        .unwrap()
        .version_id,
        Some(v1)
    );
    assert_eq!(
        listed(&s, "b"),
        [
            l("k", v2, true, false),
            l("k", v1, false, false),
            l("k", VersionId::Null, false, false),
        ]
    );
    // ListObjects sees the current object only.
    let page = s
        .list_objects(
            "b",
            &ferry_server::store::ListQuery {
                max_keys: 1000,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(page.objects.len(), 1);
    assert_eq!(page.objects[0].size, 3);
    // A delete marker: the key is gone for GET, its versions are not.
    let del = s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    assert!(del.delete_marker);
    let marker = del.version_id.unwrap();
    assert_eq!(
        code(s.head_object("b", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
    assert_eq!(s.current_delete_marker("b", "k").unwrap(), Some(marker));
    assert_eq!(
        code(s.head_object(
            "b",
            "k",
            HeadOptions {
                version: Some(marker),
                ..HeadOptions::default()
            }
        )),
        S3ErrorCode::MethodNotAllowed
    );
    assert_eq!(
        code(s.head_object(
            "b",
            "k",
            HeadOptions {
                version: Some(VersionId::Seq(1)),
                ..HeadOptions::default()
            }
        )),
        S3ErrorCode::NoSuchVersion
    );
    // Every version keeps its data file; a reopen's cleanup deletes none of them.
    assert_eq!(data_files(dir.path()), 3);
    assert_eq!(s.stats().objects, 3);
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.cleanup_report(), Default::default());
    assert_eq!(data_files(dir.path()), 3);
    assert_eq!(s.stats().objects, 3);
    assert_eq!(read(&s, "b", "k", Some(v2)), b"two");
    assert_eq!(read(&s, "b", "k", Some(VersionId::Null)), b"null one");
    assert_eq!(listed(&s, "b").first(), Some(&l("k", marker, true, true)));
    // The bucket is not empty while versions are left.
    assert_eq!(code(s.delete_bucket("b")), S3ErrorCode::BucketNotEmpty);

    // Removing the marker makes the newest version current again; removing versions for
    // good deletes their files.
    let out = s
        .delete_object(
            "b",
            "k",
            DeleteOptions {
                version: Some(marker),
                ..DeleteOptions::default()
            },
        )
        .unwrap();
    assert!(out.delete_marker);
    assert_eq!(read(&s, "b", "k", None), b"two");
    s.delete_object(
        "b",
        "k",
        DeleteOptions {
            version: Some(v2),
            ..DeleteOptions::default()
        },
    )
    .unwrap();
    assert_eq!(read(&s, "b", "k", None), b"one");
    assert_eq!(data_files(dir.path()), 2);
    s.delete_object(
        "b",
        "k",
        DeleteOptions {
            version: Some(VersionId::Null),
            ..DeleteOptions::default()
        },
    )
    .unwrap();
    s.delete_object(
        "b",
        "k",
        DeleteOptions {
            version: Some(v1),
            ..DeleteOptions::default()
        },
    )
    .unwrap();
    assert_eq!(data_files(dir.path()), 0);
    assert!(listed(&s, "b").is_empty());
    assert_eq!(s.stats().objects, 0);
    s.delete_bucket("b").unwrap();
}

#[test]
fn suspended_writes_replace_the_null_version_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.set_versioning("b", Versioning::Enabled).unwrap();
    let v1 = put(&s, "b", "k", b"one").unwrap();
    s.set_versioning("b", Versioning::Suspended).unwrap();
    assert_eq!(put(&s, "b", "k", b"two"), Some(VersionId::Null));
    assert_eq!(put(&s, "b", "k", b"three"), Some(VersionId::Null));
    assert_eq!(data_files(dir.path()), 2);
    assert_eq!(
        listed(&s, "b"),
        [
            l("k", VersionId::Null, true, false),
            l("k", v1, false, false)
        ]
    );
    // A delete: the null version becomes a delete marker, its data gone.
    let out = s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    assert_eq!(out.version_id, Some(VersionId::Null));
    assert!(out.delete_marker);
    assert_eq!(data_files(dir.path()), 1);
    assert_eq!(
        listed(&s, "b"),
        [
            l("k", VersionId::Null, true, true),
            l("k", v1, false, false)
        ]
    );
    // A write over it replaces the marker (it is the null version).
    assert_eq!(put(&s, "b", "k", b"four"), Some(VersionId::Null));
    assert_eq!(
        listed(&s, "b"),
        [
            l("k", VersionId::Null, true, false),
            l("k", v1, false, false)
        ]
    );
    // Enabled again: a new version on top, the null one kept below it.
    s.set_versioning("b", Versioning::Enabled).unwrap();
    let v5 = put(&s, "b", "k", b"five").unwrap();
    assert_eq!(
        listed(&s, "b"),
        [
            l("k", v5, true, false),
            l("k", VersionId::Null, false, false),
            l("k", v1, false, false)
        ]
    );
    assert_eq!(read(&s, "b", "k", Some(VersionId::Null)), b"four");
}

#[test]
fn version_listings_page_by_key_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.set_versioning("b", Versioning::Enabled).unwrap();
    let mut want = Vec::new();
    for k in ["a", "d/1", "d/2", "e"] {
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(put(&s, "b", k, format!("{k}{i}").as_bytes()).unwrap());
        }
        if k == "d/2" {
            ids.push(
                s.delete_object("b", k, DeleteOptions::default())
                    .unwrap()
                    .version_id
                    .unwrap(),
            );
        }
        for (i, v) in ids.iter().rev().enumerate() {
            want.push(l(k, *v, i == 0, k == "d/2" && i == 0));
        }
    }
    assert_eq!(listed(&s, "b"), want);
    for max in 1..=5 {
        let mut got = Vec::new();
        let (mut km, mut vm): (Option<String>, Option<VersionId>) = (None, None);
        loop {
            let q = VersionsQuery {
                key_marker: km.as_deref(),
                version_id_marker: vm,
                max_keys: max,
                ..VersionsQuery::default()
            };
            let page = s.list_versions("b", &q).unwrap();
            assert!(page.entries.len() <= max);
            got.extend(
                page.entries
                    .into_iter()
                    .map(|e| (e.key, e.version_id, e.is_latest, e.delete_marker)),
            );
            if !page.is_truncated {
                break;
            }
            km = page.next_key_marker;
            vm = page.next_version_id_marker;
        }
        assert_eq!(got, want, "pages of {max}");
    }
    // With a delimiter: d/ rolls up, once, and pages continue past it.
    for max in 1..=3 {
        let mut entries = Vec::new();
        let mut prefixes = Vec::new();
        let (mut km, mut vm): (Option<String>, Option<VersionId>) = (None, None);
        loop {
            let q = VersionsQuery {
                delimiter: Some("/"),
                key_marker: km.as_deref(),
                version_id_marker: vm,
                max_keys: max,
                ..VersionsQuery::default()
            };
            let page = s.list_versions("b", &q).unwrap();
            entries.extend(page.entries.into_iter().map(|e| e.key));
            prefixes.extend(page.common_prefixes);
            if !page.is_truncated {
                break;
            }
            km = page.next_key_marker;
            vm = page.next_version_id_marker;
        }
        assert_eq!(entries, ["a", "a", "a", "e", "e", "e"], "pages of {max}");
        assert_eq!(prefixes, ["d/"], "pages of {max}");
    }
    // A key marker alone skips that key's versions.
    let q = VersionsQuery {
        key_marker: Some("d/1"),
        max_keys: 1000,
        ..VersionsQuery::default()
    };
    let page = s.list_versions("b", &q).unwrap();
    assert_eq!(page.entries.first().map(|e| e.key.as_str()), Some("d/2"));
    assert_eq!(
        code(s.list_versions("missing", &q)),
        S3ErrorCode::NoSuchBucket
    );
}

#[test]
fn tags_and_acls_change_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.set_versioning("b", Versioning::Enabled).unwrap();
    let v1 = put(&s, "b", "k", b"one").unwrap();
    let v2 = put(&s, "b", "k", b"two").unwrap();
    let tags = vec![("a".to_owned(), "1".to_owned())];
    s.put_object_tagging("b", "k", Some(v1), tags.clone())
        .unwrap();
    s.put_object_acl("b", "k", Some(v1), b"<acl/>".to_vec())
        .unwrap();
    let old = s
        .head_object(
            "b",
            "k",
            HeadOptions {
                version: Some(v1),
                ..HeadOptions::default()
            },
        )
        .unwrap();
    assert_eq!(old.meta.tags, tags);
    assert_eq!(old.meta.acl.as_deref(), Some(&b"<acl/>"[..]));
    let cur = s.head_object("b", "k", HeadOptions::default()).unwrap();
    assert!(cur.meta.tags.is_empty());
    assert_eq!(cur.version_id, Some(v2));
    let marker = s
        .delete_object("b", "k", DeleteOptions::default())
        .unwrap()
        .version_id
        .unwrap();
    assert_eq!(
        code(s.put_object_tagging("b", "k", Some(marker), tags.clone())),
        S3ErrorCode::MethodNotAllowed
    );
    assert_eq!(
        code(s.put_object_tagging("b", "k", Some(VersionId::Seq(3)), tags)),
        S3ErrorCode::NoSuchVersion
    );
    // The tags stay with their version when another goes.
    s.delete_object(
        "b",
        "k",
        DeleteOptions {
            version: Some(v2),
            ..DeleteOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        s.head_object(
            "b",
            "k",
            HeadOptions {
                version: Some(v1),
                ..HeadOptions::default()
            }
        )
        .unwrap()
        .meta
        .tags
        .len(),
        1
    );
}

#[test]
fn the_state_alone_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.create_bucket("b").unwrap();
        s.create_bucket("plain").unwrap();
        assert_eq!(put(&s, "plain", "k", b"x"), None);
        s.set_versioning("b", Versioning::Suspended).unwrap();
        assert_eq!(
            code(s.set_versioning("missing", Versioning::Enabled)),
            S3ErrorCode::NoSuchBucket
        );
    }
    let s = open(dir.path());
    assert_eq!(s.versioning("b").unwrap(), Some(Versioning::Suspended));
    assert_eq!(put(&s, "b", "k", b"x"), Some(VersionId::Null));
    // A bucket that never had a state stays unversioned.
    assert_eq!(put(&s, "plain", "k", b"y"), None);
    assert_eq!(listed(&s, "plain"), [l("k", VersionId::Null, true, false)]);
    s.set_versioning("b", Versioning::Enabled).unwrap();
    assert!(matches!(put(&s, "b", "k", b"z"), Some(VersionId::Seq(_))));
    // The settings API takes the same way in, and nothing but the two states.
    s.set_bucket_setting(
        "plain",
        ferry_server::store::BucketSetting::Versioning,
        Some(b"Enabled"),
    )
    .unwrap();
    assert!(matches!(
        put(&s, "plain", "k", b"w"),
        Some(VersionId::Seq(_))
    ));
    assert_eq!(
        code(s.set_bucket_setting(
            "plain",
            ferry_server::store::BucketSetting::Versioning,
            None
        )),
        S3ErrorCode::InvalidArgument
    );
}

#[test]
fn a_store_from_before_versions_opens_and_versions() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.create_bucket("b").unwrap();
        put(&s, "b", "k", b"old");
    }
    // Remove the versions table, as a store written before versions lacks it.
    {
        let db = redb::Database::open(dir.path().join("meta.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let versions: redb::TableDefinition<'_, (&[u8], u64), &[u8]> =
            redb::TableDefinition::new("versions");
        assert!(txn.delete_table(versions).unwrap());
        txn.commit().unwrap();
    }
    let s = open(dir.path());
    assert_eq!(s.cleanup_report(), Default::default());
    assert_eq!(read(&s, "b", "k", None), b"old");
    assert_eq!(
        s.delete_object("b", "missing", DeleteOptions::default())
            .unwrap(),
        Default::default()
    );
    s.set_versioning("b", Versioning::Enabled).unwrap();
    let v = put(&s, "b", "k", b"new").unwrap();
    assert_eq!(
        listed(&s, "b"),
        [
            l("k", v, true, false),
            l("k", VersionId::Null, false, false)
        ]
    );
    drop(s);
    // Once it holds versions, the store says so in its layout (builds before versions,
    // whose cleanup would not count them, refuse it).
    {
        let db = redb::Database::open(dir.path().join("meta.redb")).unwrap();
        let txn = db.begin_read().unwrap();
        let meta: redb::TableDefinition<'_, &str, u64> = redb::TableDefinition::new("meta");
        let layout = txn
            .open_table(meta)
            .unwrap()
            .get("layout")
            .unwrap()
            .unwrap()
            .value();
        assert_eq!(layout, 2);
    }
    let s = open(dir.path());
    assert_eq!(read(&s, "b", "k", Some(VersionId::Null)), b"old");
}

fn put_placed(s: &Store, b: &str, k: &str, data: &[u8], placed: Placed) -> S3Result<PutResult> {
    let mut w = s.object_writer(b, k, None).unwrap();
    w.write(data).unwrap();
    w.commit(
        ObjectMeta::default(),
        WriteConditions {
            placed,
            ..WriteConditions::default()
        },
    )
}

fn at(seq: u64) -> Placed {
    Placed {
        seq: Some(seq),
        null: false,
        last_modified: Some(1_600_000_000 + i64::try_from(seq % 1000).unwrap()),
    }
}

/// Versions moved from another node keep their ids, places and dates: an older one goes below
/// what was written since, a newer one becomes current, the same one twice is refused, a null
/// version replaces an older null one only, and a delete marker takes its place too.
#[test]
fn placed_versions_keep_their_ids_places_and_dates() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    // Not in a bucket that never had versions.
    assert_eq!(
        code(put_placed(&s, "b", "k", b"x", at(5))),
        S3ErrorCode::InvalidRequest
    );
    // A date alone is fine anywhere.
    let dated = Placed {
        last_modified: Some(1_500_000_000),
        ..Placed::default()
    };
    put_placed(&s, "b", "plain", b"dated", dated).unwrap();
    let info = s.head_object("b", "plain", HeadOptions::default()).unwrap();
    assert_eq!(info.last_modified.to_unix(), 1_500_000_000);

    s.set_versioning("b", Versioning::Enabled).unwrap();
    let client = put(&s, "b", "k", b"written since").unwrap();
    let old_seq = client.seq().unwrap() - 1_000_000;
    let older = put_placed(&s, "b", "k", b"moved, older", at(old_seq))
        .unwrap()
        .version_id
        .unwrap();
    assert_eq!(older, VersionId::Seq(old_seq));
    // The client's write stays current; the moved one is found by its id, with its date.
    assert_eq!(read(&s, "b", "k", None), b"written since");
    assert_eq!(read(&s, "b", "k", Some(older)), b"moved, older");
    assert_eq!(
        listed(&s, "b")
            .into_iter()
            .filter(|e| e.0 == "k")
            .collect::<Vec<_>>(),
        [l("k", client, true, false), l("k", older, false, false)]
    );
    // Twice in one place: refused, nothing changes.
    assert_eq!(
        code(put_placed(&s, "b", "k", b"again", at(old_seq))),
        S3ErrorCode::PreconditionFailed
    );
    assert_eq!(read(&s, "b", "k", Some(older)), b"moved, older");
    // Newer than everything: current; the next write is newer still.
    let newer_seq = client.seq().unwrap() + 1_000_000;
    let newer = put_placed(&s, "b", "k", b"moved, newer", at(newer_seq))
        .unwrap()
        .version_id
        .unwrap();
    assert_eq!(read(&s, "b", "k", None), b"moved, newer");
    let next = put(&s, "b", "k", b"next").unwrap();
    assert!(next.seq().unwrap() > newer_seq);
    assert_eq!(read(&s, "b", "k", Some(newer)), b"moved, newer");

    // Null versions: one per key, the newer stays.
    let null_at = |seq: u64| Placed {
        seq: Some(seq),
        null: true,
        last_modified: None,
    };
    put_placed(&s, "b", "n", b"null, older", null_at(old_seq)).unwrap();
    put_placed(&s, "b", "n", b"null, newer", null_at(old_seq + 10)).unwrap();
    assert_eq!(read(&s, "b", "n", Some(VersionId::Null)), b"null, newer");
    assert_eq!(
        code(put_placed(
            &s,
            "b",
            "n",
            b"null, oldest",
            null_at(old_seq - 10)
        )),
        S3ErrorCode::PreconditionFailed
    );
    assert_eq!(listed(&s, "b").iter().filter(|e| e.0 == "n").count(), 1);

    // A delete marker in its place: above the moved version it hides.
    let m_seq = old_seq + 100;
    let placed_marker = DeleteConditions {
        placed: at(m_seq),
        ..DeleteConditions::default()
    };
    put_placed(&s, "b", "d", b"hidden", at(old_seq)).unwrap();
    let out = s
        .delete_object(
            "b",
            "d",
            DeleteOptions {
                conditions: placed_marker,
                guard: Some(&|_| Ok(())),
                ..DeleteOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        (out.version_id, out.delete_marker),
        (Some(VersionId::Seq(m_seq)), true)
    );
    assert_eq!(
        listed(&s, "b")
            .into_iter()
            .filter(|e| e.0 == "d")
            .collect::<Vec<_>>(),
        [
            l("d", VersionId::Seq(m_seq), true, true),
            l("d", VersionId::Seq(old_seq), false, false)
        ]
    );
    // A reopen keeps it all.
    drop(s);
    let s = open(dir.path());
    assert_eq!(read(&s, "b", "k", Some(older)), b"moved, older");
    assert_eq!(read(&s, "b", "n", Some(VersionId::Null)), b"null, newer");
}
