//! Object tags in the store on a real directory: stored with the object record (and the
//! multipart upload's), replaced by a metadata-only commit that keeps data, ETag and time,
//! chosen on copies, gone with the object, kept across a reopen. (The record format's
//! compatibility with records written before tags is tested in `store::codec`.)

use std::time::Duration;

use ferry_core::s3::S3ErrorCode;
use ferry_server::store::{
    CompleteOptions, CompletedPart, CopyOptions, CopySource, HeadOptions, MetadataDirective,
    ObjectMeta, PartOf, ReadRange, Store, WriteConditions,
};

use crate::support::store::{code, get, open};

fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn put(s: &Store, b: &str, k: &str, data: &[u8], t: &[(&str, &str)]) {
    let mut w = s.object_writer(b, k, None).unwrap();
    w.write(data).unwrap();
    let meta = ObjectMeta {
        content_type: Some("text/plain".into()),
        tags: tags(t),
        ..ObjectMeta::default()
    };
    w.commit(meta, WriteConditions::default()).unwrap();
}

fn tags_of(s: &Store, b: &str, k: &str) -> Vec<(String, String)> {
    s.head_object(b, k, HeadOptions::default())
        .unwrap()
        .meta
        .tags
}

#[test]
fn tags_live_in_the_record_and_change_without_the_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.create_bucket("b").unwrap();
        put(&s, "b", "k", b"data", &[("a", "1"), ("b", "2")]);
        assert_eq!(tags_of(&s, "b", "k"), tags(&[("a", "1"), ("b", "2")]));
        let before = s.head_object("b", "k", HeadOptions::default()).unwrap();
        let stats = s.stats();

        s.put_object_tagging("b", "k", None, tags(&[("c", "3")]))
            .unwrap();
        let after = s.head_object("b", "k", HeadOptions::default()).unwrap();
        assert_eq!(after.meta.tags, tags(&[("c", "3")]));
        assert_eq!(after.etag, before.etag);
        assert_eq!(after.last_modified, before.last_modified);
        assert_eq!(after.meta.content_type, before.meta.content_type);
        assert_eq!(get(&s, "b", "k", ReadRange::All), b"data");
        // No data file written or retired, object count and bytes unchanged.
        let now = s.stats();
        assert_eq!(now.objects, stats.objects);
        assert_eq!(now.files_retired, stats.files_retired);

        s.put_object_tagging("b", "k", None, Vec::new()).unwrap();
        assert!(tags_of(&s, "b", "k").is_empty());
        s.put_object_tagging("b", "k", None, tags(&[("kept", "yes")]))
            .unwrap();
    }
    let s = open(dir.path());
    assert_eq!(tags_of(&s, "b", "k"), tags(&[("kept", "yes")]));
    // A new object under the key has its own tags (none).
    put(&s, "b", "k", b"new", &[]);
    assert!(tags_of(&s, "b", "k").is_empty());
}

#[test]
fn tagging_errors_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert_eq!(
        code(s.put_object_tagging("nob", "k", None, tags(&[("a", "b")]))),
        S3ErrorCode::NoSuchBucket
    );
    s.create_bucket("b").unwrap();
    assert_eq!(
        code(s.put_object_tagging("b", "missing", None, tags(&[("a", "b")]))),
        S3ErrorCode::NoSuchKey
    );
    assert_eq!(
        code(s.head_object("b", "missing", HeadOptions::default())),
        S3ErrorCode::NoSuchKey,
        "tagging a missing key does not create it"
    );
    put(&s, "b", "k", b"x", &[("a", "1")]);
    s.fence_bucket("b", "t", Duration::from_secs(60)).unwrap();
    assert_eq!(
        code(s.put_object_tagging("b", "k", None, tags(&[("a", "2")]))),
        S3ErrorCode::OperationAborted
    );
    assert_eq!(tags_of(&s, "b", "k"), tags(&[("a", "1")]));
}

#[test]
fn copies_keep_or_replace_tags() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    put(&s, "b", "src", b"source", &[("from", "src")]);
    let src = CopySource {
        bucket: "b",
        key: "src",
        range: None,
        version_id: None,
        customer: None,
    };
    let ok = |_: &_| Ok(());
    let none = WriteConditions::default();
    s.copy_object(
        src,
        "b",
        "keep",
        CopyOptions {
            conditions: none,
            ..CopyOptions::default()
        },
        ok,
    )
    .unwrap();
    assert_eq!(tags_of(&s, "b", "keep"), tags(&[("from", "src")]));
    // Replaced metadata still keeps the source's tags unless the tags are replaced too.
    let meta = ObjectMeta {
        tags: tags(&[("ignored", "x")]),
        ..ObjectMeta::default()
    };
    s.copy_object(
        src,
        "b",
        "meta",
        CopyOptions {
            directive: MetadataDirective::Replace(meta.clone()),
            conditions: none,
            ..CopyOptions::default()
        },
        ok,
    )
    .unwrap();
    assert_eq!(tags_of(&s, "b", "meta"), tags(&[("from", "src")]));
    s.copy_object(
        src,
        "b",
        "new",
        CopyOptions {
            tags: Some(tags(&[("to", "new")])),
            conditions: none,
            ..CopyOptions::default()
        },
        ok,
    )
    .unwrap();
    assert_eq!(tags_of(&s, "b", "new"), tags(&[("to", "new")]));
    assert_eq!(
        s.head_object("b", "new", HeadOptions::default())
            .unwrap()
            .meta
            .content_type
            .as_deref(),
        Some("text/plain")
    );
    s.copy_object(
        src,
        "b",
        "bare",
        CopyOptions {
            directive: MetadataDirective::Replace(meta),
            tags: Some(Vec::new()),
            conditions: none,
            ..CopyOptions::default()
        },
        ok,
    )
    .unwrap();
    assert!(tags_of(&s, "b", "bare").is_empty());
}

#[test]
fn a_completed_upload_gets_the_tags_it_was_created_with() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let meta = ObjectMeta {
        tags: tags(&[("stage", "mp")]),
        ..ObjectMeta::default()
    };
    let id = s.create_multipart_upload("b", "k", meta, None).unwrap();
    let mut w = s
        .part_writer(
            "b",
            "k",
            PartOf {
                upload_id: &id,
                part_number: 1,
                customer: None,
            },
        )
        .unwrap();
    w.write(b"part one").unwrap();
    let part = w.commit().unwrap();
    // The upload's record survives a reopen with its tags.
    drop(s);
    let s = open(dir.path());
    s.complete_multipart_upload(
        "b",
        "k",
        &id,
        &[CompletedPart {
            part_number: 1,
            etag: part.etag,
            checksums: Vec::new(),
        }],
        CompleteOptions::default(),
    )
    .map(|r| r.put)
    .unwrap();
    assert_eq!(tags_of(&s, "b", "k"), tags(&[("stage", "mp")]));
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"part one");
}
