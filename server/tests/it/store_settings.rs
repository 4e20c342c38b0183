//! Bucket settings on a real directory: set, read, replace, remove, gone with the bucket,
//! kept across a reopen, created with the bucket in one commit.

use ferry_core::s3::S3ErrorCode;
use ferry_server::store::{BucketSetting, Store};

use crate::support::store::{code, open};

fn setting(s: &Store, b: &str, kind: BucketSetting) -> Option<Vec<u8>> {
    s.bucket_setting(b, kind).unwrap()
}

#[test]
fn settings_are_per_bucket_and_kind() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert_eq!(
        code(s.bucket_setting("b", BucketSetting::Policy)),
        S3ErrorCode::NoSuchBucket
    );
    assert_eq!(
        code(s.set_bucket_setting("b", BucketSetting::Policy, Some(b"{}"))),
        S3ErrorCode::NoSuchBucket
    );
    s.create_bucket("b").unwrap();
    s.create_bucket("c").unwrap();
    assert_eq!(setting(&s, "b", BucketSetting::Policy), None);
    s.set_bucket_setting("b", BucketSetting::Policy, Some(b"p1"))
        .unwrap();
    s.set_bucket_setting("b", BucketSetting::Cors, Some(b"c1"))
        .unwrap();
    s.set_bucket_setting("b", BucketSetting::Policy, Some(b"p2"))
        .unwrap();
    assert_eq!(
        setting(&s, "b", BucketSetting::Policy),
        Some(b"p2".to_vec())
    );
    assert_eq!(setting(&s, "b", BucketSetting::Cors), Some(b"c1".to_vec()));
    assert_eq!(setting(&s, "c", BucketSetting::Policy), None);
    s.set_bucket_setting("b", BucketSetting::Cors, None)
        .unwrap();
    assert_eq!(setting(&s, "b", BucketSetting::Cors), None);
    // Removing what is not there is not an error (DeleteBucketCors on a bucket without one).
    s.set_bucket_setting("b", BucketSetting::Cors, None)
        .unwrap();
}

#[test]
fn settings_go_with_the_bucket_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.create_bucket_with(
            "b",
            &[
                (BucketSetting::Owner, b"alice".as_slice()),
                (BucketSetting::Tagging, b"t".as_slice()),
            ],
        )
        .unwrap();
        // A second create changes nothing, settings included.
        assert_eq!(
            code(s.create_bucket_with("b", &[(BucketSetting::Owner, b"bob".as_slice())])),
            S3ErrorCode::BucketAlreadyOwnedByYou
        );
    }
    let s = open(dir.path());
    assert_eq!(
        setting(&s, "b", BucketSetting::Owner),
        Some(b"alice".to_vec())
    );
    assert_eq!(
        setting(&s, "b", BucketSetting::Tagging),
        Some(b"t".to_vec())
    );
    s.delete_bucket("b").unwrap();
    s.create_bucket("b").unwrap();
    for kind in BucketSetting::ALL {
        assert_eq!(setting(&s, "b", kind), None, "{kind:?} outlived its bucket");
    }
}
