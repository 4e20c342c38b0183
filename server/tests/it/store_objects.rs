//! Buckets and objects on a real directory: round trips, errors, conditional writes, copies,
//! snapshot reads, concurrent writers, reopen and cleanup.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Barrier};

use ferry_core::md5::{ETag, md5};
use ferry_core::s3::S3ErrorCode;
use ferry_core::s3::xml::lock::{Retention, RetentionMode};
use ferry_server::store::{
    Checksum, CompleteOptions, CompletedPart, CopyOptions, CopySource, DeleteOptions, GetOptions,
    HeadOptions, ListQuery, MetadataDirective, ObjectMeta, PartOf, PutResult, ReadRange, Store,
    StoreConfig, WriteConditions,
};

use crate::support::store::{code, data_files, files_under, get, open, random_bytes, temp_files};

fn put(s: &Store, b: &str, k: &str, data: &[u8]) -> PutResult {
    let mut w = s.object_writer(b, k, None).unwrap();
    w.write(data).unwrap();
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap()
}

fn tmp_files(dir: &Path) -> usize {
    temp_files(dir)
}

#[test]
fn bucket_lifecycle_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert_eq!(code(s.head_bucket("b")), S3ErrorCode::NoSuchBucket);
    assert!(!s.bucket_exists("b").unwrap());
    let info = s.create_bucket("b").unwrap();
    assert_eq!(info.name, "b");
    assert_eq!(s.head_bucket("b").unwrap(), info);
    assert!(s.bucket_exists("b").unwrap());
    assert_eq!(
        code(s.create_bucket("b")),
        S3ErrorCode::BucketAlreadyOwnedByYou
    );
    assert_eq!(code(s.delete_bucket("nope")), S3ErrorCode::NoSuchBucket);

    // Not empty while an object or an in-progress upload is in it.
    put(&s, "b", "k", b"x");
    assert_eq!(code(s.delete_bucket("b")), S3ErrorCode::BucketNotEmpty);
    s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    let up = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    assert_eq!(code(s.delete_bucket("b")), S3ErrorCode::BucketNotEmpty);
    s.abort_multipart_upload("b", "k", &up).unwrap();
    // A neighbour bucket whose name extends this one's does not count.
    s.create_bucket("b-2").unwrap();
    put(&s, "b-2", "k", b"y");
    s.delete_bucket("b").unwrap();
    assert!(!s.bucket_exists("b").unwrap());
    assert_eq!(
        code(s.object_writer("b", "k", None)),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(
        code(s.get_object("b", "k", GetOptions::default())),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(
        code(s.head_object("b", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(
        code(s.delete_object("b", "k", DeleteOptions::default())),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(
        code(s.list_objects("b", &ListQuery::default())),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(get(&s, "b-2", "k", ReadRange::All), b"y");
    assert_eq!(
        code(s.create_bucket("a\0b")),
        S3ErrorCode::InvalidBucketName
    );
}

#[test]
fn list_buckets_sorted_and_paginated() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let names = ["delta", "alpha", "charlie", "bravo", "echo"];
    for n in names {
        s.create_bucket(n).unwrap();
    }
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    let all = s.list_buckets(None, 0).unwrap();
    assert!(!all.is_truncated);
    let got: Vec<_> = all.buckets.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(got, sorted);

    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = s.list_buckets(after.as_deref(), 2).unwrap();
        assert!(page.buckets.len() <= 2);
        seen.extend(page.buckets.iter().map(|b| b.name.clone()));
        if !page.is_truncated {
            break;
        }
        after = page.buckets.last().map(|b| b.name.clone());
    }
    assert_eq!(seen, sorted);
}

#[test]
fn put_get_head_round_trip_with_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let data = random_bytes(1, 700_000);
    let meta = ObjectMeta {
        content_type: Some("application/x-test".into()),
        content_encoding: Some("gzip".into()),
        content_disposition: Some("attachment".into()),
        content_language: Some("fr".into()),
        cache_control: Some("no-cache".into()),
        expires: Some("Thu, 01 Dec 1994 16:00:00 GMT".into()),
        // Order is kept, not sorted.
        user_metadata: vec![("zeta".into(), "1".into()), ("alpha".into(), "2".into())],
        checksums: vec![Checksum {
            algorithm: "SHA256".into(),
            value: "abc=".into(),
        }],
        tags: vec![("t".into(), "v".into())],
        multipart_checksum: None,
        acl: Some(b"<AccessControlPolicy/>".to_vec()),
        // Object lock: kept in the record's extensions, as tags and the ACL are.
        retention: Some(Retention {
            mode: RetentionMode::Compliance,
            until: 2_000_000_000,
        }),
        legal_hold: true,
    };
    let mut w = s.object_writer("b", "obj", None).unwrap();
    // Chunks smaller and larger than the 256 KiB buffer, and an empty one.
    let mut at = 0;
    for n in [1, 0, 100, 300_000, 4096, 262_144] {
        w.write(&data[at..at + n]).unwrap();
        at += n;
    }
    w.write_from(&mut &data[at..]).unwrap();
    assert_eq!(w.len(), data.len() as u64);
    assert_eq!(w.digest(), md5(&data));
    let put = w.commit(meta.clone(), WriteConditions::default()).unwrap();
    assert_eq!(put.etag, ETag::single(&md5(&data)));
    assert_eq!(put.size, data.len() as u64);

    let info = s.head_object("b", "obj", HeadOptions::default()).unwrap();
    assert_eq!(info.etag, put.etag);
    assert_eq!(info.size, put.size);
    assert_eq!(info.last_modified, put.last_modified);
    assert_eq!(info.meta, meta);
    assert_eq!(info.parts_count(), None);

    let mut r = s.get_object("b", "obj", GetOptions::default()).unwrap();
    assert_eq!(r.info(), &info);
    assert_eq!(r.range(), None);
    assert_eq!(r.remaining(), data.len() as u64);
    let mut back = Vec::new();
    r.read_to_end(&mut back).unwrap();
    assert_eq!(back, data);
    assert_eq!(tmp_files(dir.path()), 0);
    assert_eq!(data_files(dir.path()), 1);
}

#[test]
fn empty_object() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let put = put(&s, "b", "e", b"");
    // RFC 1321 test suite: MD5("") = d41d8cd98f00b204e9800998ecf8427e.
    assert_eq!(put.etag.as_str(), "\"d41d8cd98f00b204e9800998ecf8427e\"");
    assert_eq!(get(&s, "b", "e", ReadRange::All), b"");
    assert_eq!(
        code(s.get_object(
            "b",
            "e",
            GetOptions {
                range: ReadRange::From(0),
                ..GetOptions::default()
            }
        )),
        S3ErrorCode::InvalidRange
    );
    assert_eq!(
        code(s.get_object(
            "b",
            "e",
            GetOptions {
                range: ReadRange::Suffix(5),
                ..GetOptions::default()
            }
        )),
        S3ErrorCode::InvalidRange
    );
}

#[test]
fn byte_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let data = random_bytes(2, 1000);
    put(&s, "b", "k", &data);
    let cases: [(ReadRange, std::ops::Range<usize>); 7] = [
        (ReadRange::Inclusive(0, 0), 0..1),
        (ReadRange::Inclusive(10, 19), 10..20),
        (ReadRange::Inclusive(990, 5000), 990..1000),
        (ReadRange::From(999), 999..1000),
        (ReadRange::From(0), 0..1000),
        (ReadRange::Suffix(7), 993..1000),
        (ReadRange::Suffix(5000), 0..1000),
    ];
    for (range, want) in cases {
        let r = s
            .get_object(
                "b",
                "k",
                GetOptions {
                    range,
                    ..GetOptions::default()
                },
            )
            .unwrap();
        assert_eq!(
            r.range(),
            Some((want.start as u64, want.end as u64 - 1)),
            "{range:?}"
        );
        assert_eq!(get(&s, "b", "k", range), &data[want], "{range:?}");
    }
    for bad in [
        ReadRange::From(1000),
        ReadRange::Inclusive(1000, 1001),
        ReadRange::Inclusive(5, 4),
        ReadRange::Suffix(0),
    ] {
        assert_eq!(
            code(s.get_object(
                "b",
                "k",
                GetOptions {
                    range: bad,
                    ..GetOptions::default()
                }
            )),
            S3ErrorCode::InvalidRange,
            "{bad:?}"
        );
    }
    assert_eq!(
        code(s.get_object(
            "b",
            "k",
            GetOptions {
                range: ReadRange::Part(2),
                ..GetOptions::default()
            }
        )),
        S3ErrorCode::InvalidPartNumber
    );
    // Part 1 of a single-part object is all of it.
    assert_eq!(get(&s, "b", "k", ReadRange::Part(1)), data);
    assert_eq!(
        code(s.get_object(
            "b",
            "k",
            GetOptions {
                range: ReadRange::Part(0),
                ..GetOptions::default()
            }
        )),
        S3ErrorCode::InvalidArgument
    );
}

#[test]
fn keys_never_become_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let s = open(&root);
    s.create_bucket("b").unwrap();
    let long = "k/".repeat(512);
    assert_eq!(long.len(), 1024);
    let keys = [
        "a",
        "a/",
        "a/b",
        "a//b",
        "../x",
        "../../../../etc/passwd",
        "/abs",
        ".",
        "..",
        "a/./b",
        "nul\0inside",
        "ünï/cödé",
        "sp ace%20",
        long.as_str(),
    ];
    for (i, k) in keys.iter().enumerate() {
        put(&s, "b", k, &random_bytes(i as u64, 10 + i));
    }
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            get(&s, "b", k, ReadRange::All),
            random_bytes(i as u64, 10 + i),
            "{k:?}"
        );
    }
    let page = s
        .list_objects(
            "b",
            &ListQuery {
                max_keys: 1000,
                ..ListQuery::default()
            },
        )
        .unwrap();
    let mut want: Vec<&str> = keys.to_vec();
    want.sort_unstable();
    let got: Vec<&str> = page.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(got, want);
    assert!(page.objects.iter().all(|o| o.storage_class == "STANDARD"));
    // Nothing was created outside the store, and inside only the documented layout.
    let outside: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(outside.len(), 1);
    for f in files_under(&root) {
        let rel = f.strip_prefix(&root).unwrap();
        let ok = rel == Path::new("meta.redb")
            || (rel.starts_with("data") && rel.components().count() == 3);
        assert!(ok, "unexpected file {rel:?}");
    }
    // A NUL in a bucket name must not reach another bucket's keys ("b" + "nul\0inside").
    assert_eq!(
        code(s.get_object("b\0nul", "inside", GetOptions::default())),
        S3ErrorCode::InvalidBucketName
    );
    assert_eq!(
        code(s.delete_object("b\0nul", "inside", DeleteOptions::default())),
        S3ErrorCode::InvalidBucketName
    );
    assert_eq!(get(&s, "b", "nul\0inside", ReadRange::All).len(), 10 + 10);
    assert_eq!(
        code(s.object_writer("b", &"k".repeat(1025), None)),
        S3ErrorCode::KeyTooLongError
    );
    assert_eq!(
        code(s.object_writer("b", "", None)),
        S3ErrorCode::InvalidArgument
    );
}

#[test]
fn conditional_writes() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let none_match = WriteConditions {
        if_none_match_star: true,
        ..WriteConditions::default()
    };
    let if_match = |e: ETag| WriteConditions {
        if_match: Some(e),
        ..WriteConditions::default()
    };
    let try_put = |data: &[u8], c: WriteConditions| {
        let mut w = s.object_writer("b", "k", None).unwrap();
        w.write(data).unwrap();
        w.commit(ObjectMeta::default(), c)
    };
    // If-Match on a missing key: 404 NoSuchKey, as S3 answers.
    assert_eq!(
        code(try_put(b"0", if_match(ETag::single(&md5(b"0"))))),
        S3ErrorCode::NoSuchKey
    );
    let first = try_put(b"one", none_match).unwrap();
    assert_eq!(
        code(try_put(b"two", none_match)),
        S3ErrorCode::PreconditionFailed
    );
    assert_eq!(
        code(try_put(b"two", if_match(ETag::single(&md5(b"other"))))),
        S3ErrorCode::PreconditionFailed
    );
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"one");
    let second = try_put(b"two", if_match(first.etag)).unwrap();
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"two");
    assert_ne!(second.etag, first.etag);
    // Refused writes left no files behind.
    assert_eq!(data_files(dir.path()), 1);
    assert_eq!(tmp_files(dir.path()), 0);
}

#[test]
fn delete_is_idempotent_and_frees_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    put(&s, "b", "k", b"data");
    assert_eq!(data_files(dir.path()), 1);
    s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    assert_eq!(
        code(s.head_object("b", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
    assert_eq!(
        code(s.get_object("b", "k", GetOptions::default())),
        S3ErrorCode::NoSuchKey
    );
    s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    s.delete_object("b", "never-existed", DeleteOptions::default())
        .unwrap();
    assert_eq!(data_files(dir.path()), 0);
}

#[test]
fn overwrite_replaces_and_deletes_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    put(&s, "b", "k", b"first");
    put(&s, "b", "k", b"second");
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"second");
    assert_eq!(data_files(dir.path()), 1);
}

#[test]
fn copy_object_directives() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("src").unwrap();
    s.create_bucket("dst").unwrap();
    let data = random_bytes(3, 600_000);
    let meta = ObjectMeta {
        content_type: Some("text/x-src".into()),
        user_metadata: vec![("m".into(), "v".into())],
        ..ObjectMeta::default()
    };
    let mut w = s.object_writer("src", "k", None).unwrap();
    w.write(&data).unwrap();
    let src_put = w.commit(meta.clone(), WriteConditions::default()).unwrap();
    let src = CopySource {
        bucket: "src",
        key: "k",
        range: None,
        version_id: None,
        customer: None,
    };
    let ok = |_: &_| Ok(());

    // COPY keeps the source's metadata.
    let c = s
        .copy_object(src, "dst", "c", CopyOptions::default(), ok)
        .unwrap();
    assert_eq!(c.etag, src_put.etag);
    assert_eq!(get(&s, "dst", "c", ReadRange::All), data);
    assert_eq!(
        s.head_object("dst", "c", HeadOptions::default())
            .unwrap()
            .meta,
        meta
    );

    // REPLACE takes the given metadata.
    let other = ObjectMeta {
        content_type: Some("text/x-new".into()),
        ..ObjectMeta::default()
    };
    s.copy_object(
        src,
        "dst",
        "r",
        CopyOptions {
            directive: MetadataDirective::Replace(other.clone()),
            ..CopyOptions::default()
        },
        ok,
    )
    .unwrap();
    assert_eq!(
        s.head_object("dst", "r", HeadOptions::default())
            .unwrap()
            .meta,
        other
    );

    // Onto itself: only with REPLACE.
    assert_eq!(
        code(s.copy_object(src, "src", "k", CopyOptions::default(), ok)),
        S3ErrorCode::InvalidRequest
    );
    s.copy_object(
        src,
        "src",
        "k",
        CopyOptions {
            directive: MetadataDirective::Replace(other.clone()),
            ..CopyOptions::default()
        },
        ok,
    )
    .unwrap();
    assert_eq!(get(&s, "src", "k", ReadRange::All), data);
    assert_eq!(
        s.head_object("src", "k", HeadOptions::default())
            .unwrap()
            .meta,
        other
    );

    // The source check sees the source and can refuse.
    let refused = s.copy_object(src, "dst", "x", CopyOptions::default(), |info| {
        assert_eq!(info.size, data.len() as u64);
        Err(S3ErrorCode::PreconditionFailed.into())
    });
    assert_eq!(code(refused), S3ErrorCode::PreconditionFailed);
    assert_eq!(
        code(s.head_object("dst", "x", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );

    // Destination conditions apply.
    let none_match = WriteConditions {
        if_none_match_star: true,
        ..WriteConditions::default()
    };
    assert_eq!(
        code(s.copy_object(
            src,
            "dst",
            "c",
            CopyOptions {
                conditions: none_match,
                ..CopyOptions::default()
            },
            ok
        )),
        S3ErrorCode::PreconditionFailed
    );

    let missing = CopySource {
        bucket: "src",
        key: "nope",
        range: None,
        version_id: None,
        customer: None,
    };
    assert_eq!(
        code(s.copy_object(missing, "dst", "y", CopyOptions::default(), ok)),
        S3ErrorCode::NoSuchKey
    );
    let ranged = CopySource {
        range: Some((0, 1)),
        version_id: None,
        ..src
    };
    assert_eq!(
        code(s.copy_object(ranged, "dst", "y", CopyOptions::default(), ok)),
        S3ErrorCode::InvalidArgument
    );
    // src/k, dst/c, dst/r: three files, no leftovers.
    assert_eq!(data_files(dir.path()), 3);
    assert_eq!(tmp_files(dir.path()), 0);
}

#[test]
fn reader_survives_overwrite_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let old = random_bytes(4, 900_000);
    put(&s, "b", "k", &old);
    let mut r = s.get_object("b", "k", GetOptions::default()).unwrap();
    let mut head = vec![0u8; 1000];
    r.read_exact(&mut head).unwrap();

    put(&s, "b", "k", &random_bytes(5, 10));
    assert_eq!(get(&s, "b", "k", ReadRange::All), random_bytes(5, 10));
    s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    assert_eq!(
        code(s.get_object("b", "k", GetOptions::default())),
        S3ErrorCode::NoSuchKey
    );

    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    head.extend_from_slice(&rest);
    assert_eq!(head, old);
    assert_eq!(r.info().etag, ETag::single(&md5(&old)));
    // The old file lives as long as its reader.
    assert_eq!(data_files(dir.path()), 1);
    drop(r);
    assert_eq!(data_files(dir.path()), 0);
}

#[test]
fn concurrent_writers_leave_one_complete_winner() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    const WRITERS: u64 = 6;
    let len = 300_000;
    let barrier = Arc::new(Barrier::new(WRITERS as usize));
    let handles: Vec<_> = (0..WRITERS)
        .map(|i| {
            let s = s.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let data = random_bytes(100 + i, len);
                let mut w = s.object_writer("b", "k", None).unwrap();
                barrier.wait();
                for chunk in data.chunks(10_000) {
                    w.write(chunk).unwrap();
                }
                w.commit(ObjectMeta::default(), WriteConditions::default())
                    .unwrap()
            })
        })
        .collect();
    let results: Vec<PutResult> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let got = get(&s, "b", "k", ReadRange::All);
    let winners: Vec<u64> = (0..WRITERS)
        .filter(|i| random_bytes(100 + i, len) == got)
        .collect();
    assert_eq!(winners.len(), 1, "the object is exactly one writer's bytes");
    let info = s.head_object("b", "k", HeadOptions::default()).unwrap();
    assert_eq!(info.etag, results[winners[0] as usize].etag);
    assert_eq!(data_files(dir.path()), 1);
    assert_eq!(tmp_files(dir.path()), 0);
}

#[test]
fn dropped_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let mut w = s.object_writer("b", "k", None).unwrap();
    w.write(&random_bytes(6, 400_000)).unwrap();
    assert_eq!(tmp_files(dir.path()), 1);
    drop(w);
    assert_eq!(tmp_files(dir.path()), 0);
    assert_eq!(data_files(dir.path()), 0);
    assert_eq!(
        code(s.head_object("b", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
}

#[test]
fn commit_into_a_deleted_bucket_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let mut w = s.object_writer("b", "k", None).unwrap();
    w.write(b"late").unwrap();
    s.delete_bucket("b").unwrap();
    assert_eq!(
        code(w.commit(ObjectMeta::default(), WriteConditions::default())),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(data_files(dir.path()), 0);
    assert_eq!(tmp_files(dir.path()), 0);
}

#[test]
fn reopen_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(7, 300_000);
    let upload;
    {
        // Durable settings, as in production.
        let s = Store::open(dir.path()).unwrap();
        s.create_bucket("b").unwrap();
        put(&s, "b", "k", &data);
        put(&s, "b", "gone", b"x");
        s.delete_object("b", "gone", DeleteOptions::default())
            .unwrap();
        upload = s
            .create_multipart_upload("b", "mp", ObjectMeta::default(), None)
            .unwrap();
        let mut p = s
            .part_writer(
                "b",
                "mp",
                PartOf {
                    upload_id: &upload,
                    part_number: 1,
                    customer: None,
                },
            )
            .unwrap();
        p.write(b"part one").unwrap();
        p.commit().unwrap();
    }
    let s = Store::open(dir.path()).unwrap();
    assert_eq!(s.cleanup_report().orphan_files, 0);
    assert_eq!(s.cleanup_report().temp_files, 0);
    assert!(s.bucket_exists("b").unwrap());
    assert_eq!(get(&s, "b", "k", ReadRange::All), data);
    assert_eq!(
        code(s.head_object("b", "gone", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );
    let parts = s.list_parts("b", "mp", &upload, 0, 1000).unwrap();
    assert_eq!(parts.parts.len(), 1);
    let done = s
        .complete_multipart_upload(
            "b",
            "mp",
            &upload,
            &[ferry_server::store::CompletedPart {
                part_number: 1,
                etag: parts.parts[0].etag,
                checksums: Vec::new(),
            }],
            CompleteOptions::default(),
        )
        .map(|r| r.put)
        .unwrap();
    assert_eq!(done.size, 8);
    assert_eq!(get(&s, "b", "mp", ReadRange::All), b"part one");
}

#[test]
fn open_cleans_up_interrupted_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.create_bucket("b").unwrap();
        put(&s, "b", "k", b"kept");
    }
    // The temp file of a writer whose process died, where versions before 2026-12 wrote them.
    fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let lost_tmp = dir.path().join("tmp/0000000000000000000000000000abcd.tmp");
    fs::write(&lost_tmp, b"partial").unwrap();
    // A data file renamed into place whose metadata commit never happened.
    let orphan = dir.path().join("data/ab/000000000000000000000000000000ab");
    fs::create_dir_all(orphan.parent().unwrap()).unwrap();
    fs::write(&orphan, b"orphan").unwrap();
    let stray_tmp = dir.path().join("tmp/whatever.tmp");
    fs::write(&stray_tmp, b"tmp").unwrap();
    // A data file being written beside its final name (where writes go now).
    let beside = dir
        .path()
        .join("data/ab/00000000000000000000000000000aab.tmp");
    fs::write(&beside, b"half").unwrap();
    assert_eq!(tmp_files(dir.path()), 3);
    assert_eq!(data_files(dir.path()), 2);

    let s = open(dir.path());
    assert_eq!(s.cleanup_report().temp_files, 3);
    assert_eq!(s.cleanup_report().orphan_files, 1);
    assert!(!orphan.exists());
    assert!(!stray_tmp.exists());
    assert!(!lost_tmp.exists());
    assert!(!beside.exists());
    assert_eq!(tmp_files(dir.path()), 0);
    assert_eq!(data_files(dir.path()), 1);
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"kept");
}

/// Fan-out directories are made on a file's first use of them, with and without fsync, and
/// the ones there are at open are used again.
#[test]
fn fan_out_directories_made_on_first_use() {
    let fans = |dir: &Path| fs::read_dir(dir.join("data")).unwrap().count();
    for fsync in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let open = || {
            Store::open_with(
                dir.path(),
                StoreConfig {
                    fsync,
                    ..StoreConfig::default()
                },
            )
            .unwrap()
        };
        let s = open();
        s.create_bucket("b").unwrap();
        assert_eq!(fans(dir.path()), 0, "fsync {fsync}");
        put(&s, "b", "k0", b"zero");
        assert_eq!(fans(dir.path()), 1);
        drop(s);
        let s = open();
        // File ids cycle through the low byte: 8 writes use 8 directories.
        for i in 1..=8 {
            put(&s, "b", &format!("k{i}"), &random_bytes(i, 100));
        }
        let n = fans(dir.path());
        assert!((8..=9).contains(&n), "{n} directories");
        assert_eq!(data_files(dir.path()), 9);
        assert_eq!(get(&s, "b", "k0", ReadRange::All), b"zero");
        for i in 1..=8 {
            assert_eq!(
                get(&s, "b", &format!("k{i}"), ReadRange::All),
                random_bytes(i, 100)
            );
        }
    }
}

#[test]
fn stats_count_objects_bytes_and_retired_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    put(&s, "b", "a", &[1; 1000]);
    put(&s, "b", "c", &[2; 3000]);
    let st = s.stats();
    assert_eq!((st.objects, st.object_bytes), (2, 4000));
    assert_eq!((st.files_retired, st.files_pending), (0, 0));
    // A reader keeps the file of the version it opened: retired, pending until it is done.
    let reader = s.get_object("b", "a", GetOptions::default()).unwrap();
    put(&s, "b", "a", &[3; 2000]);
    let st = s.stats();
    assert_eq!((st.objects, st.object_bytes), (2, 5000));
    assert_eq!(
        (st.files_retired, st.files_deleted, st.files_pending),
        (1, 0, 1)
    );
    drop(reader);
    let st = s.stats();
    assert_eq!((st.files_deleted, st.files_pending), (1, 0));
    s.delete_object("b", "c", DeleteOptions::default()).unwrap();
    // Deleting a missing key changes nothing.
    s.delete_object("b", "c", DeleteOptions::default()).unwrap();
    let st = s.stats();
    assert_eq!((st.objects, st.object_bytes), (1, 2000));
    assert_eq!((st.files_retired, st.files_deleted), (2, 2));
    assert!(st.commits >= 5, "{}", st.commits);
    let (free, total) = (st.disk_free_bytes.unwrap(), st.disk_total_bytes.unwrap());
    assert!(0 < free && free <= total);
    // A multipart object counts once, with its whole size; its parts are no objects.
    let up = s
        .create_multipart_upload("b", "m", ObjectMeta::default(), None)
        .unwrap();
    let mut parts = Vec::new();
    for n in 1..=2u32 {
        let mut w = s
            .part_writer(
                "b",
                "m",
                PartOf {
                    upload_id: &up,
                    part_number: n,
                    customer: None,
                },
            )
            .unwrap();
        w.write(&vec![n as u8; 5 << 20]).unwrap();
        parts.push(w.commit().unwrap());
    }
    let done: Vec<CompletedPart> = parts
        .iter()
        .map(|p| CompletedPart {
            part_number: p.part_number,
            etag: p.etag,
            checksums: Vec::new(),
        })
        .collect();
    s.complete_multipart_upload("b", "m", &up, &done, CompleteOptions::default())
        .map(|r| r.put)
        .unwrap();
    let st = s.stats();
    assert_eq!((st.objects, st.object_bytes), (2, 2000 + (10 << 20)));
    // Reopened: the figures come from the committed records.
    drop(s);
    let st = open(dir.path()).stats();
    assert_eq!((st.objects, st.object_bytes), (2, 2000 + (10 << 20)));
}

/// Whether the file system under `dir` takes `O_DIRECT` (tmpfs may not).
fn takes_o_direct(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join("o_direct_probe");
    let r = fs::File::options()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe);
    let _ = fs::remove_file(&probe);
    match r {
        Ok(_) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => false,
        Err(e) => panic!("probing O_DIRECT: {e}"),
    }
}

#[test]
fn data_files_are_written_with_o_direct_but_their_tails() {
    let sizes = [0usize, 1000, 4096, 256 << 10, (1 << 20) + 1000, 600_001];
    let total: u64 = sizes.iter().map(|&n| n as u64).sum();
    let aligned: u64 = sizes.iter().map(|&n| (n / 4096 * 4096) as u64).sum();
    for direct_io in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_with(
            dir.path(),
            StoreConfig {
                fsync: false,
                direct_io,
                ..StoreConfig::default()
            },
        )
        .unwrap();
        s.create_bucket("b").unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            let data = random_bytes(i as u64, n);
            // Odd pieces: the store gathers them into aligned pooled buffers.
            let mut w = s.object_writer("b", &format!("k{i}"), None).unwrap();
            for piece in data.chunks(7919) {
                w.write(piece).unwrap();
            }
            let put = w
                .commit(ObjectMeta::default(), WriteConditions::default())
                .unwrap();
            assert_eq!(put.etag, ETag::single(&md5(&data)), "{n}");
            assert!(
                get(&s, "b", &format!("k{i}"), ReadRange::All) == data,
                "{n}"
            );
        }
        let st = s.stats();
        assert_eq!(st.direct_write_bytes + st.cached_write_bytes, total);
        let want = if direct_io && takes_o_direct(dir.path()) {
            aligned
        } else {
            0
        };
        assert_eq!(st.direct_write_bytes, want, "direct_io {direct_io}");
    }
}

/// Reading an SSE-S3 object in 256 KiB blocks, as a GET does: every block holds whole chunks
/// (each decrypted in the block's buffer, none aside and copied), and the bytes come back.
#[test]
fn encrypted_reads_fill_blocks_with_whole_chunks() {
    use ferry_core::sse::PLAIN_CHUNK;
    use ferry_server::store::EncryptWith;
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let data = random_bytes(9, 3 * 1024 * 1024 + 5);
    let mut w = s
        .object_writer("b", "k", Some(&EncryptWith::SseS3))
        .unwrap();
    w.write(&data).unwrap();
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap();
    let mut r = s.get_object("b", "k", GetOptions::default()).unwrap();
    assert!(r.is_encrypted());
    let mut back = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    while r.remaining() > 0 {
        let mut filled = 0;
        while filled < buf.len() && r.remaining() > 0 {
            if filled > 0 && !r.read_fits(buf.len() - filled) {
                break;
            }
            let n = r.read(&mut buf[filled..]).unwrap();
            assert!(n > 0);
            filled += n;
        }
        if r.remaining() > 0 {
            // Four whole chunks: the fifth would not fit with its tag.
            assert_eq!(filled, 4 * PLAIN_CHUNK);
        }
        back.extend_from_slice(&buf[..filled]);
    }
    assert!(back == data);
    // A plain object's reads always fit.
    put(&s, "b", "plain", &data);
    let r = s.get_object("b", "plain", GetOptions::default()).unwrap();
    assert!(!r.is_encrypted() && r.read_fits(1));
}
