//! Multipart uploads on a real directory: parts, completion rules, reads across part
//! boundaries, part copies, abort, conditions, and a 10,000-part object.

use std::io::Read;

use ferry_core::md5::{ETag, md5};
use ferry_core::s3::S3ErrorCode;
use ferry_server::store::{
    CompleteOptions, CompletedPart, CopySource, DeleteOptions, GetOptions, HeadOptions, ListQuery,
    ObjectMeta, PartEntry, PartOf, ReadRange, Store, StoreConfig, WriteConditions,
};

use crate::support::store::{code, data_files, get, open_with, random_bytes};

const MIN: u64 = 64 << 10;

fn upload_part(s: &Store, key: &str, id: &str, n: u32, data: &[u8]) -> PartEntry {
    let mut w = s
        .part_writer(
            "b",
            key,
            PartOf {
                upload_id: id,
                part_number: n,
                customer: None,
            },
        )
        .unwrap();
    w.write(data).unwrap();
    w.commit().unwrap()
}

fn completed(parts: &[PartEntry]) -> Vec<CompletedPart> {
    parts
        .iter()
        .map(|p| CompletedPart {
            part_number: p.part_number,
            etag: p.etag,
            checksums: Vec::new(),
        })
        .collect()
}

#[test]
fn three_parts_complete_and_read_across_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let meta = ObjectMeta {
        content_type: Some("video/x-test".into()),
        user_metadata: vec![("who".into(), "mp".into())],
        ..ObjectMeta::default()
    };
    let id = s
        .create_multipart_upload("b", "big", meta.clone(), None)
        .unwrap();
    let sizes = [100_000usize, 70_000, 33_333];
    let datas: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| random_bytes(i as u64 + 10, n))
        .collect();
    // Upload out of order: completion orders by part number.
    let mut parts = vec![
        upload_part(&s, "big", &id, 3, &datas[2]),
        upload_part(&s, "big", &id, 1, &datas[0]),
        upload_part(&s, "big", &id, 2, &datas[1]),
    ];
    parts.sort_by_key(|p| p.part_number);
    for (p, d) in parts.iter().zip(&datas) {
        assert_eq!(p.etag, ETag::single(&md5(d)));
        assert_eq!(p.size, d.len() as u64);
    }
    let done = s
        .complete_multipart_upload(
            "b",
            "big",
            &id,
            &completed(&parts),
            CompleteOptions::default(),
        )
        .map(|r| r.put)
        .unwrap();
    let whole: Vec<u8> = datas.concat();
    let want_etag = ETag::multipart(datas.iter().map(|d| md5(d)).collect::<Vec<_>>().iter());
    assert_eq!(done.etag, want_etag);
    assert!(done.etag.as_str().ends_with("-3\""));
    assert_eq!(done.size, whole.len() as u64);
    // No data was copied: the three part files are the object's files.
    assert_eq!(data_files(dir.path()), 3);

    let info = s.head_object("b", "big", HeadOptions::default()).unwrap();
    assert_eq!(info.meta, meta);
    assert_eq!(info.parts_count(), Some(3));
    assert_eq!(info.part_sizes, sizes.map(|n| n as u64).to_vec());
    assert_eq!(get(&s, "b", "big", ReadRange::All), whole);

    // Ranges around every part boundary, across two and three parts.
    let b1 = sizes[0] as u64;
    let b2 = b1 + sizes[1] as u64;
    let end = whole.len() as u64 - 1;
    for (first, last) in [
        (0, 0),
        (b1 - 1, b1),
        (b1, b1),
        (b1 - 5, b2 + 5),
        (b2 - 1, b2),
        (10, end),
        (b1, b2 - 1),
        (end, end),
    ] {
        let got = get(&s, "b", "big", ReadRange::Inclusive(first, last));
        assert_eq!(
            got,
            &whole[first as usize..=last as usize],
            "{first}-{last}"
        );
    }
    assert_eq!(
        get(&s, "b", "big", ReadRange::Suffix(40_000)),
        &whole[whole.len() - 40_000..]
    );
    // Small reads that straddle a boundary return the right bytes too.
    let mut r = s
        .get_object(
            "b",
            "big",
            GetOptions {
                range: ReadRange::Inclusive(b1 - 3, b1 + 3),
                ..GetOptions::default()
            },
        )
        .unwrap();
    let mut small = Vec::new();
    let mut buf = [0u8; 2];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        small.extend_from_slice(&buf[..n]);
    }
    assert_eq!(small, &whole[b1 as usize - 3..=b1 as usize + 3]);
    drop(r);

    // partNumber reads: each part's range.
    for (i, d) in datas.iter().enumerate() {
        let n = i as u32 + 1;
        let r = s
            .get_object(
                "b",
                "big",
                GetOptions {
                    range: ReadRange::Part(n),
                    ..GetOptions::default()
                },
            )
            .unwrap();
        assert_eq!(r.range(), info.part_range(n));
        assert_eq!(get(&s, "b", "big", ReadRange::Part(n)), *d);
    }
    assert_eq!(
        code(s.get_object(
            "b",
            "big",
            GetOptions {
                range: ReadRange::Part(4),
                ..GetOptions::default()
            }
        )),
        S3ErrorCode::InvalidPartNumber
    );
    // Listings show the multipart ETag.
    let page = s
        .list_objects(
            "b",
            &ListQuery {
                max_keys: 10,
                ..ListQuery::default()
            },
        )
        .unwrap();
    assert_eq!(page.objects[0].etag, want_etag);
    assert_eq!(page.objects[0].size, whole.len() as u64);

    // Deleting the object deletes its part files.
    s.delete_object("b", "big", DeleteOptions::default())
        .unwrap();
    assert_eq!(data_files(dir.path()), 0);
}

#[test]
fn reuploading_a_part_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    let first = upload_part(&s, "k", &id, 1, b"first");
    let second = upload_part(&s, "k", &id, 1, b"second!");
    assert_ne!(first.etag, second.etag);
    assert_eq!(data_files(dir.path()), 1);
    let parts = s.list_parts("b", "k", &id, 0, 100).unwrap();
    assert_eq!(parts.parts, vec![second.clone()]);
    // The old ETag no longer names the part.
    assert_eq!(
        code(
            s.complete_multipart_upload(
                "b",
                "k",
                &id,
                &completed(&[first]),
                CompleteOptions::default()
            )
            .map(|r| r.put)
        ),
        S3ErrorCode::InvalidPart
    );
    s.complete_multipart_upload(
        "b",
        "k",
        &id,
        &completed(&[second]),
        CompleteOptions::default(),
    )
    .map(|r| r.put)
    .unwrap();
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"second!");
}

#[test]
fn list_parts_paginates() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    for n in [7, 1, 3, 2, 6, 5, 4] {
        upload_part(
            &s,
            "k",
            &id,
            n,
            &random_bytes(u64::from(n), n as usize * 10),
        );
    }
    let mut marker = 0;
    let mut pages = Vec::new();
    loop {
        let page = s.list_parts("b", "k", &id, marker, 3).unwrap();
        let numbers: Vec<u32> = page.parts.iter().map(|p| p.part_number).collect();
        for p in &page.parts {
            assert_eq!(p.size, u64::from(p.part_number) * 10);
        }
        pages.push(numbers);
        if !page.is_truncated {
            assert_eq!(page.next_part_number_marker, None);
            break;
        }
        marker = page.next_part_number_marker.unwrap();
    }
    assert_eq!(pages, vec![vec![1, 2, 3], vec![4, 5, 6], vec![7]]);
    assert!(s.list_parts("b", "k", &id, 7, 3).unwrap().parts.is_empty());
    assert!(
        s.list_parts("b", "k", &id, u32::MAX, 3)
            .unwrap()
            .parts
            .is_empty()
    );
    assert_eq!(
        code(s.list_parts("b", "k", "no-such-upload", 0, 3)),
        S3ErrorCode::NoSuchUpload
    );
    // The id belongs to "k", not to another key.
    assert_eq!(
        code(s.list_parts("b", "other", &id, 0, 3)),
        S3ErrorCode::NoSuchUpload
    );
}

#[test]
fn completion_errors_leave_the_upload_intact() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    let big = random_bytes(1, MIN as usize);
    let p1 = upload_part(&s, "k", &id, 1, &big);
    let p2 = upload_part(&s, "k", &id, 2, b"small");
    let p3 = upload_part(&s, "k", &id, 3, b"tail");
    let complete = |parts: &[CompletedPart]| {
        s.complete_multipart_upload("b", "k", &id, parts, CompleteOptions::default())
            .map(|r| r.put)
    };
    let c = |p: &PartEntry| CompletedPart {
        part_number: p.part_number,
        etag: p.etag,
        checksums: Vec::new(),
    };
    assert_eq!(code(complete(&[])), S3ErrorCode::MalformedXML);
    assert_eq!(
        code(complete(&[c(&p2), c(&p1)])),
        S3ErrorCode::InvalidPartOrder
    );
    assert_eq!(
        code(complete(&[c(&p1), c(&p1)])),
        S3ErrorCode::InvalidPartOrder
    );
    let wrong = CompletedPart {
        part_number: 1,
        etag: p2.etag,
        checksums: Vec::new(),
    };
    assert_eq!(code(complete(&[wrong])), S3ErrorCode::InvalidPart);
    let missing = CompletedPart {
        part_number: 4,
        etag: p3.etag,
        checksums: Vec::new(),
    };
    assert_eq!(code(complete(&[c(&p1), missing])), S3ErrorCode::InvalidPart);
    // Part 2 is under the minimum and not last.
    assert_eq!(
        code(complete(&[c(&p1), c(&p2), c(&p3)])),
        S3ErrorCode::EntityTooSmall
    );
    assert_eq!(
        code(
            s.complete_multipart_upload("b", "k", "bogus", &[c(&p1)], CompleteOptions::default())
                .map(|r| r.put)
        ),
        S3ErrorCode::NoSuchUpload
    );
    // All refused: the upload and its parts are still there.
    assert_eq!(s.list_parts("b", "k", &id, 0, 10).unwrap().parts.len(), 3);
    assert_eq!(
        code(s.head_object("b", "k", HeadOptions::default())),
        S3ErrorCode::NoSuchKey
    );

    // Parts 1 and 3 (the small part is last but one no more): part 2 is deleted.
    let done = complete(&[c(&p1), c(&p3)]).unwrap();
    assert_eq!(done.size, MIN + 4);
    let mut whole = big.clone();
    whole.extend_from_slice(b"tail");
    assert_eq!(get(&s, "b", "k", ReadRange::All), whole);
    assert_eq!(data_files(dir.path()), 2);
    // A retry of the complete that succeeded (its answer lost) gets the same answer and
    // changes nothing; another part list does not.
    let objects = s.stats().objects;
    assert_eq!(complete(&[c(&p1), c(&p3)]).unwrap(), done);
    assert_eq!(s.stats().objects, objects);
    assert_eq!(get(&s, "b", "k", ReadRange::All), whole);
    assert_eq!(data_files(dir.path()), 2);
    assert_eq!(code(complete(&[c(&p1)])), S3ErrorCode::NoSuchUpload);
    assert_eq!(
        code(s.part_writer(
            "b",
            "k",
            PartOf {
                upload_id: &id,
                part_number: 1,
                customer: None
            }
        )),
        S3ErrorCode::NoSuchUpload
    );
}

#[test]
fn abort_deletes_parts() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    upload_part(&s, "k", &id, 1, b"one");
    upload_part(&s, "k", &id, 2, b"two");
    // A part still being written when the upload is aborted.
    let mut late = s
        .part_writer(
            "b",
            "k",
            PartOf {
                upload_id: &id,
                part_number: 3,
                customer: None,
            },
        )
        .unwrap();
    late.write(b"late").unwrap();
    assert_eq!(data_files(dir.path()), 2);
    s.abort_multipart_upload("b", "k", &id).unwrap();
    assert_eq!(data_files(dir.path()), 0);
    assert_eq!(code(late.commit()), S3ErrorCode::NoSuchUpload);
    assert_eq!(data_files(dir.path()), 0);
    assert_eq!(
        code(s.abort_multipart_upload("b", "k", &id)),
        S3ErrorCode::NoSuchUpload
    );
    assert_eq!(
        code(s.part_writer(
            "b",
            "k",
            PartOf {
                upload_id: &id,
                part_number: 1,
                customer: None
            }
        )),
        S3ErrorCode::NoSuchUpload
    );
    assert_eq!(crate::support::store::temp_files(dir.path()), 0);
    s.delete_bucket("b").unwrap();
}

#[test]
fn part_numbers_and_buckets_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    assert_eq!(
        code(s.create_multipart_upload("b", "k", ObjectMeta::default(), None)),
        S3ErrorCode::NoSuchBucket
    );
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    for n in [0, 10_001] {
        assert_eq!(
            code(s.part_writer(
                "b",
                "k",
                PartOf {
                    upload_id: &id,
                    part_number: n,
                    customer: None
                }
            )),
            S3ErrorCode::InvalidArgument
        );
    }
    assert_eq!(
        code(s.part_writer(
            "x",
            "k",
            PartOf {
                upload_id: &id,
                part_number: 1,
                customer: None
            }
        )),
        S3ErrorCode::NoSuchBucket
    );
    s.part_writer(
        "b",
        "k",
        PartOf {
            upload_id: &id,
            part_number: 10_000,
            customer: None,
        },
    )
    .unwrap();
}

#[test]
fn conditional_completion() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let mut w = s.object_writer("b", "k", None).unwrap();
    w.write(b"existing").unwrap();
    let existing = w
        .commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    let p = upload_part(&s, "k", &id, 1, b"new");
    let none_match = WriteConditions {
        if_none_match_star: true,
        ..WriteConditions::default()
    };
    assert_eq!(
        code(
            s.complete_multipart_upload(
                "b",
                "k",
                &id,
                &completed(std::slice::from_ref(&p)),
                CompleteOptions {
                    conditions: none_match,
                    ..CompleteOptions::default()
                }
            )
            .map(|r| r.put)
        ),
        S3ErrorCode::PreconditionFailed
    );
    let stale = WriteConditions {
        if_match: Some(ETag::single(&md5(b"stale"))),
        ..WriteConditions::default()
    };
    assert_eq!(
        code(
            s.complete_multipart_upload(
                "b",
                "k",
                &id,
                &completed(std::slice::from_ref(&p)),
                CompleteOptions {
                    conditions: stale,
                    ..CompleteOptions::default()
                }
            )
            .map(|r| r.put)
        ),
        S3ErrorCode::PreconditionFailed
    );
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"existing");
    let current = WriteConditions {
        if_match: Some(existing.etag),
        ..WriteConditions::default()
    };
    s.complete_multipart_upload(
        "b",
        "k",
        &id,
        &completed(&[p]),
        CompleteOptions {
            conditions: current,
            ..CompleteOptions::default()
        },
    )
    .map(|r| r.put)
    .unwrap();
    assert_eq!(get(&s, "b", "k", ReadRange::All), b"new");
    assert_eq!(data_files(dir.path()), 1);
}

#[test]
fn upload_part_copy_from_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let src_data = random_bytes(9, 500_000);
    let mut w = s.object_writer("b", "src", None).unwrap();
    w.write(&src_data).unwrap();
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap();
    let id = s
        .create_multipart_upload("b", "dst", ObjectMeta::default(), None)
        .unwrap();
    let src = |range| CopySource {
        bucket: "b",
        key: "src",
        range,
        version_id: None,
        customer: None,
    };
    let p1 = s
        .upload_part_copy(
            "b",
            "dst",
            PartOf {
                upload_id: &id,
                part_number: 1,
                customer: None,
            },
            src(Some((100, 100_099))),
            |_| Ok(()),
        )
        .map(|(part, _)| part)
        .unwrap();
    assert_eq!(p1.size, 100_000);
    assert_eq!(p1.etag, ETag::single(&md5(&src_data[100..100_100])));
    let p2 = s
        .upload_part_copy(
            "b",
            "dst",
            PartOf {
                upload_id: &id,
                part_number: 2,
                customer: None,
            },
            src(None),
            |_| Ok(()),
        )
        .map(|(part, _)| part)
        .unwrap();
    assert_eq!(p2.size, src_data.len() as u64);
    assert_eq!(
        code(
            s.upload_part_copy(
                "b",
                "dst",
                PartOf {
                    upload_id: &id,
                    part_number: 3,
                    customer: None
                },
                src(Some((0, 500_000))),
                |_| Ok(())
            )
            .map(|(part, _)| part)
        ),
        S3ErrorCode::InvalidRange
    );
    assert_eq!(
        code(
            s.upload_part_copy(
                "b",
                "dst",
                PartOf {
                    upload_id: &id,
                    part_number: 3,
                    customer: None
                },
                src(Some((10, 9))),
                |_| Ok(())
            )
            .map(|(part, _)| part)
        ),
        S3ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(
            s.upload_part_copy(
                "b",
                "dst",
                PartOf {
                    upload_id: &id,
                    part_number: 3,
                    customer: None
                },
                src(None),
                |_| Err(S3ErrorCode::PreconditionFailed.into())
            )
            .map(|(part, _)| part)
        ),
        S3ErrorCode::PreconditionFailed
    );
    s.complete_multipart_upload(
        "b",
        "dst",
        &id,
        &completed(&[p1, p2]),
        CompleteOptions::default(),
    )
    .map(|r| r.put)
    .unwrap();
    let mut want = src_data[100..100_100].to_vec();
    want.extend_from_slice(&src_data);
    assert_eq!(get(&s, "b", "dst", ReadRange::All), want);
    // Copying a multipart object reads across its parts.
    let id2 = s
        .create_multipart_upload("b", "dst2", ObjectMeta::default(), None)
        .unwrap();
    let from_mp = CopySource {
        bucket: "b",
        key: "dst",
        range: Some((99_990, 100_009)),
        version_id: None,
        customer: None,
    };
    let p = s
        .upload_part_copy(
            "b",
            "dst2",
            PartOf {
                upload_id: &id2,
                part_number: 1,
                customer: None,
            },
            from_mp,
            |_| Ok(()),
        )
        .map(|(part, _)| part)
        .unwrap();
    assert_eq!(p.etag, ETag::single(&md5(&want[99_990..100_010])));
}

#[test]
fn ten_thousand_parts() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open_with(
        dir.path(),
        StoreConfig {
            min_part_size: 1,
            fsync: false,
            ..StoreConfig::default()
        },
    )
    .unwrap();
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    let mut parts = Vec::new();
    let mut whole = Vec::new();
    for n in 1..=10_000u32 {
        let data = n.to_be_bytes();
        whole.extend_from_slice(&data);
        parts.push(upload_part(&s, "k", &id, n, &data));
    }
    let done = s
        .complete_multipart_upload(
            "b",
            "k",
            &id,
            &completed(&parts),
            CompleteOptions::default(),
        )
        .map(|r| r.put)
        .unwrap();
    assert!(done.etag.as_str().ends_with("-10000\""));
    assert_eq!(get(&s, "b", "k", ReadRange::All), whole);
    assert_eq!(
        get(&s, "b", "k", ReadRange::Part(10_000)),
        10_000u32.to_be_bytes()
    );
    assert_eq!(
        get(&s, "b", "k", ReadRange::Inclusive(5, 12)),
        &whole[5..=12]
    );
    assert_eq!(
        s.head_object("b", "k", HeadOptions::default())
            .unwrap()
            .parts_count(),
        Some(10_000)
    );
}

#[test]
fn reader_of_a_multipart_object_survives_delete() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_with(dir.path(), MIN);
    s.create_bucket("b").unwrap();
    let id = s
        .create_multipart_upload("b", "k", ObjectMeta::default(), None)
        .unwrap();
    let datas: Vec<Vec<u8>> = (0..3).map(|i| random_bytes(20 + i, MIN as usize)).collect();
    let parts: Vec<PartEntry> = datas
        .iter()
        .zip(1..)
        .map(|(d, n)| upload_part(&s, "k", &id, n, d))
        .collect();
    s.complete_multipart_upload(
        "b",
        "k",
        &id,
        &completed(&parts),
        CompleteOptions::default(),
    )
    .map(|r| r.put)
    .unwrap();
    let mut r = s.get_object("b", "k", GetOptions::default()).unwrap();
    let mut got = vec![0u8; 100];
    r.read_exact(&mut got).unwrap();
    // Later part files are opened only when reached: they must outlive the delete.
    s.delete_object("b", "k", DeleteOptions::default()).unwrap();
    let mut w = s.object_writer("b", "k", None).unwrap();
    w.write(b"new").unwrap();
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap();
    r.read_to_end(&mut got).unwrap();
    assert_eq!(got, datas.concat());
    assert_eq!(data_files(dir.path()), 4);
    drop(r);
    assert_eq!(data_files(dir.path()), 1);
}

/// An upload with a checksum algorithm: the parts' checksums are kept and listed (also after
/// a reopen), the complete checks them and gives the object its checksum — composite, or the
/// parts' CRCs combined into the CRC of the whole object — and its parts' checksums; an upload
/// part copy gets its checksum computed.
#[test]
fn checksums_of_an_upload_with_an_algorithm() {
    use ferry_core::s3::checksum::ChecksumAlgorithm as A;
    use ferry_server::store::{Checksum, MultipartChecksum};
    let dir = tempfile::tempdir().unwrap();
    let mut s = open_with(dir.path(), 1);
    s.create_bucket("b").unwrap();
    let stored = |a: A, data: &[u8]| Checksum {
        algorithm: a.as_str().into(),
        value: a.checksum(data).to_base64().as_str().into(),
    };
    let datas = [random_bytes(1, 5000), random_bytes(2, 777)];
    let mut w = s.object_writer("b", "src", None).unwrap();
    w.write(&datas[1]).unwrap();
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap();
    for (a, full_object) in [(A::Sha256, false), (A::Crc64Nvme, true)] {
        let meta = ObjectMeta {
            multipart_checksum: Some(MultipartChecksum {
                algorithm: a.as_str().into(),
                full_object,
                parts: Vec::new(),
            }),
            ..ObjectMeta::default()
        };
        let key = a.as_str();
        let id = s.create_multipart_upload("b", key, meta, None).unwrap();
        let mut w = s
            .part_writer(
                "b",
                key,
                PartOf {
                    upload_id: &id,
                    part_number: 1,
                    customer: None,
                },
            )
            .unwrap();
        assert_eq!(
            w.upload_checksum().map(|c| c.full_object),
            Some(full_object)
        );
        w.write(&datas[0]).unwrap();
        // A part without its checksum is refused.
        assert_eq!(code(w.commit()), S3ErrorCode::InvalidRequest);
        let mut w = s
            .part_writer(
                "b",
                key,
                PartOf {
                    upload_id: &id,
                    part_number: 1,
                    customer: None,
                },
            )
            .unwrap();
        w.write(&datas[0]).unwrap();
        w.set_checksum(stored(a, &datas[0]));
        let p1 = w.commit().unwrap();
        let src = CopySource {
            bucket: "b",
            key: "src",
            range: None,
            version_id: None,
            customer: None,
        };
        let p2 = s
            .upload_part_copy(
                "b",
                key,
                PartOf {
                    upload_id: &id,
                    part_number: 2,
                    customer: None,
                },
                src,
                |_| Ok(()),
            )
            .map(|(part, _)| part)
            .unwrap();
        assert_eq!(p2.checksum, Some(stored(a, &datas[1])));
        drop(s);
        s = open_with(dir.path(), 1);
        let page = s.list_parts("b", key, &id, 0, 10).unwrap();
        assert_eq!(page.checksum.map(|c| c.algorithm), Some(a.as_str().into()));
        let listed: Vec<Option<Checksum>> = page.parts.iter().map(|p| p.checksum.clone()).collect();
        assert_eq!(
            listed,
            [Some(stored(a, &datas[0])), Some(stored(a, &datas[1]))]
        );
        let mut parts = completed(&[p1, p2]);
        for (p, d) in parts.iter_mut().zip(&datas) {
            p.checksums = vec![stored(a, d)];
        }
        // A part checksum that is not the part's.
        let mut wrong = parts.clone();
        wrong[0].checksums = vec![stored(a, b"other")];
        assert_eq!(
            code(
                s.complete_multipart_upload("b", key, &id, &wrong, CompleteOptions::default())
                    .map(|r| r.put)
            ),
            S3ErrorCode::InvalidPart
        );
        let done = s
            .complete_multipart_upload("b", key, &id, &parts, CompleteOptions::default())
            .unwrap();
        let whole = datas.concat();
        let want = if full_object {
            a.checksum(&whole).to_base64().as_str().to_owned()
        } else {
            let raw: Vec<u8> = datas
                .iter()
                .flat_map(|d| a.checksum(d).as_bytes().to_vec())
                .collect();
            format!("{}-2", a.checksum(&raw).to_base64())
        };
        assert_eq!(
            done.checksum.as_ref().map(|c| c.value.as_str()),
            Some(want.as_str())
        );
        assert_eq!(done.full_object, full_object);
        let info = s.head_object("b", key, HeadOptions::default()).unwrap();
        assert_eq!(
            info.meta.checksums,
            done.checksum.into_iter().collect::<Vec<_>>()
        );
        let mc = info.meta.multipart_checksum.expect("kept with the object");
        let part_sums: Vec<(u32, String)> = datas
            .iter()
            .enumerate()
            .map(|(i, d)| (i as u32 + 1, stored(a, d).value))
            .collect();
        assert_eq!(mc.parts, part_sums);
        assert_eq!(get(&s, "b", key, ReadRange::All), whole);
    }
}
