//! Object lock (WORM) through the AWS SDK for Rust, on a node and through the proxy, both
//! runtimes: buckets made with object lock, Put/GetObjectLockConfiguration with a default
//! retention, the `x-amz-object-lock-*` headers of PutObject, CopyObject and
//! CreateMultipartUpload and of GET/HEAD, Put/GetObjectRetention (extend, shorten with the
//! governance bypass, never a COMPLIANCE one), Put/GetObjectLegalHold, deletes refused while a
//! version is protected, AWS's errors, and boto3.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{
    BucketVersioningStatus, CompletedMultipartUpload, CompletedPart, DefaultRetention, Delete,
    ObjectIdentifier, ObjectLockConfiguration, ObjectLockEnabled, ObjectLockLegalHold,
    ObjectLockLegalHoldStatus, ObjectLockMode, ObjectLockRetention, ObjectLockRetentionMode,
    ObjectLockRule, VersioningConfiguration,
};

use crate::support::ALICE;
use crate::support::sdk::{Options, Target, TestNode, assert_code, show};

on_every_target!(
    lock_configuration_round_trip,
    lock_configuration_errors,
    retention_and_legal_hold_from_headers,
    retention_changes_follow_the_mode,
    default_retention_applies_to_new_versions,
    copies_and_uploads_get_their_own_lock,
    lock_needs_a_lock_bucket,
    protected_versions_are_not_deleted,
    boto3_locks_as_aws_does,
    delete_objects_bypasses_governance,
);

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A date `days` from now, to the second.
fn in_days(days: i64) -> DateTime {
    DateTime::from_secs(unix_now() + days * 86_400)
}

async fn lock_bucket(c: &Client, bucket: &str) {
    c.create_bucket()
        .bucket(bucket)
        .object_lock_enabled_for_bucket(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create lock bucket {bucket}: {}", show(&e)));
}

fn config(
    mode: ObjectLockRetentionMode,
    days: Option<i32>,
    years: Option<i32>,
) -> ObjectLockConfiguration {
    let retention = DefaultRetention::builder()
        .mode(mode)
        .set_days(days)
        .set_years(years)
        .build();
    ObjectLockConfiguration::builder()
        .object_lock_enabled(ObjectLockEnabled::Enabled)
        .rule(
            ObjectLockRule::builder()
                .default_retention(retention)
                .build(),
        )
        .build()
}

fn retention(mode: ObjectLockRetentionMode, until: DateTime) -> ObjectLockRetention {
    ObjectLockRetention::builder()
        .mode(mode)
        .retain_until_date(until)
        .build()
}

fn hold(status: ObjectLockLegalHoldStatus) -> ObjectLockLegalHold {
    ObjectLockLegalHold::builder().status(status).build()
}

async fn retention_of(c: &Client, bucket: &str, key: &str) -> (ObjectLockRetentionMode, i64) {
    let out = c
        .get_object_retention()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get retention {bucket}/{key}: {}", show(&e)));
    let r = out.retention().expect("a retention");
    (
        r.mode().expect("a mode").clone(),
        r.retain_until_date().expect("a date").secs(),
    )
}

async fn hold_of(c: &Client, bucket: &str, key: &str) -> ObjectLockLegalHoldStatus {
    c.get_object_legal_hold()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get legal hold {bucket}/{key}: {}", show(&e)))
        .legal_hold()
        .and_then(|h| h.status())
        .expect("a status")
        .clone()
}

async fn put_hold(c: &Client, bucket: &str, key: &str, status: ObjectLockLegalHoldStatus) {
    c.put_object_legal_hold()
        .bucket(bucket)
        .key(key)
        .legal_hold(hold(status))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put legal hold {bucket}/{key}: {}", show(&e)));
}

async fn lock_configuration_round_trip(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    lock_bucket(c, "locked").await;
    let out = c
        .get_object_lock_configuration()
        .bucket("locked")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get lock configuration: {}", show(&e)));
    let got = out.object_lock_configuration().expect("a configuration");
    assert_eq!(got.object_lock_enabled(), Some(&ObjectLockEnabled::Enabled));
    assert!(got.rule().is_none(), "no default retention yet: {got:?}");

    for (mode, days, years) in [
        (ObjectLockRetentionMode::Governance, Some(3), None),
        (ObjectLockRetentionMode::Compliance, None, Some(2)),
    ] {
        c.put_object_lock_configuration()
            .bucket("locked")
            .object_lock_configuration(config(mode.clone(), days, years))
            .send()
            .await
            .unwrap_or_else(|e| panic!("put lock configuration: {}", show(&e)));
        let out = c
            .get_object_lock_configuration()
            .bucket("locked")
            .send()
            .await
            .unwrap_or_else(|e| panic!("get lock configuration: {}", show(&e)));
        let d = out
            .object_lock_configuration()
            .and_then(|c| c.rule())
            .and_then(|r| r.default_retention())
            .expect("a default retention");
        assert_eq!(d.mode(), Some(&mode));
        assert_eq!((d.days(), d.years()), (days, years));
    }
    // Kept across a restart.
    let mut n = n;
    n.restart();
    let out = n
        .client
        .get_object_lock_configuration()
        .bucket("locked")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get lock configuration after restart: {}", show(&e)));
    let years = out
        .object_lock_configuration()
        .and_then(|c| c.rule())
        .and_then(|r| r.default_retention())
        .and_then(|d| d.years());
    assert_eq!(years, Some(2));
}

async fn lock_configuration_errors(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    n.bucket("plain").await;
    assert_code(
        c.get_object_lock_configuration()
            .bucket("plain")
            .send()
            .await,
        404,
        "ObjectLockConfigurationNotFoundError",
    );
    // Not on a bucket whose versioning is not enabled; once it is, object lock can be turned on.
    let lock_plain = || {
        c.put_object_lock_configuration()
            .bucket("plain")
            .object_lock_configuration(config(ObjectLockRetentionMode::Governance, Some(1), None))
            .send()
    };
    assert_code(lock_plain().await, 409, "InvalidBucketState");
    c.put_bucket_versioning()
        .bucket("plain")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("enable versioning: {}", show(&e)));
    lock_plain()
        .await
        .unwrap_or_else(|e| panic!("lock a versioned bucket: {}", show(&e)));
    let days = c
        .get_object_lock_configuration()
        .bucket("plain")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get lock configuration: {}", show(&e)))
        .object_lock_configuration()
        .and_then(|c| c.rule())
        .and_then(|r| r.default_retention())
        .and_then(|d| d.days());
    assert_eq!(days, Some(1));
    lock_bucket(c, "locked").await;
    assert_code(
        c.put_object_lock_configuration()
            .bucket("locked")
            .object_lock_configuration(config(ObjectLockRetentionMode::Governance, Some(0), None))
            .send()
            .await,
        400,
        "InvalidRetentionPeriod",
    );
    assert_code(
        c.put_object_lock_configuration()
            .bucket("locked")
            .object_lock_configuration(config(
                ObjectLockRetentionMode::Governance,
                Some(1),
                Some(1),
            ))
            .send()
            .await,
        400,
        "MalformedXML",
    );
    assert_code(
        c.put_object_lock_configuration()
            .bucket("locked")
            .object_lock_configuration(config(ObjectLockRetentionMode::Compliance, None, Some(101)))
            .send()
            .await,
        400,
        "InvalidRetentionPeriod",
    );
    assert_code(
        c.get_object_lock_configuration()
            .bucket("nobucket")
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
}

async fn retention_and_legal_hold_from_headers(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    lock_bucket(c, "worm").await;
    let until = in_days(2);
    c.put_object()
        .bucket("worm")
        .key("k")
        .object_lock_mode(ObjectLockMode::Governance)
        .object_lock_retain_until_date(until)
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .body(b"kept".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put locked: {}", show(&e)));
    let head = n.head("worm", "k").await;
    assert_eq!(head.object_lock_mode(), Some(&ObjectLockMode::Governance));
    assert_eq!(
        head.object_lock_retain_until_date().map(DateTime::secs),
        Some(until.secs())
    );
    assert_eq!(
        head.object_lock_legal_hold_status(),
        Some(&ObjectLockLegalHoldStatus::On)
    );
    let get = c
        .get_object()
        .bucket("worm")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get locked: {}", show(&e)));
    assert_eq!(get.object_lock_mode(), Some(&ObjectLockMode::Governance));
    assert_eq!(
        retention_of(c, "worm", "k").await,
        (ObjectLockRetentionMode::Governance, until.secs())
    );
    assert_eq!(hold_of(c, "worm", "k").await, ObjectLockLegalHoldStatus::On);
    put_hold(c, "worm", "k", ObjectLockLegalHoldStatus::Off).await;
    assert_eq!(
        hold_of(c, "worm", "k").await,
        ObjectLockLegalHoldStatus::Off
    );
    assert_eq!(
        n.head("worm", "k").await.object_lock_legal_hold_status(),
        None
    );

    // An object without a retention has none to show.
    n.put("worm", "free", b"x".to_vec()).await;
    assert_code(
        c.get_object_retention()
            .bucket("worm")
            .key("free")
            .send()
            .await,
        404,
        "NoSuchObjectLockConfiguration",
    );
    assert_code(
        c.get_object_retention()
            .bucket("worm")
            .key("missing")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    // Bad headers.
    assert_code(
        c.put_object()
            .bucket("worm")
            .key("bad")
            .object_lock_mode(ObjectLockMode::Governance)
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert_code(
        c.put_object()
            .bucket("worm")
            .key("bad")
            .object_lock_mode(ObjectLockMode::Compliance)
            .object_lock_retain_until_date(in_days(-1))
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert_code(
        c.head_object().bucket("worm").key("bad").send().await,
        404,
        "NotFound",
    );
}

async fn retention_changes_follow_the_mode(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    lock_bucket(c, "ret").await;
    for key in ["gov", "comp"] {
        n.put("ret", key, b"x".to_vec()).await;
    }
    let put = |key: &'static str, r: ObjectLockRetention, bypass: bool| {
        c.put_object_retention()
            .bucket("ret")
            .key(key)
            .retention(r)
            .set_bypass_governance_retention(bypass.then_some(true))
            .send()
    };
    let gov = ObjectLockRetentionMode::Governance;
    let comp = ObjectLockRetentionMode::Compliance;
    put("gov", retention(gov.clone(), in_days(10)), false)
        .await
        .unwrap_or_else(|e| panic!("set governance: {}", show(&e)));
    // Extended freely; shortened only with the bypass (the owner may bypass).
    let later = in_days(20);
    put("gov", retention(gov.clone(), later), false)
        .await
        .unwrap_or_else(|e| panic!("extend governance: {}", show(&e)));
    assert_eq!(retention_of(c, "ret", "gov").await.1, later.secs());
    assert_code(
        put("gov", retention(gov.clone(), in_days(5)), false).await,
        403,
        "AccessDenied",
    );
    let sooner = in_days(5);
    put("gov", retention(gov.clone(), sooner), true)
        .await
        .unwrap_or_else(|e| panic!("shorten governance with bypass: {}", show(&e)));
    assert_eq!(retention_of(c, "ret", "gov").await.1, sooner.secs());
    // Governance may become compliance; compliance may only grow.
    put("comp", retention(comp.clone(), in_days(10)), false)
        .await
        .unwrap_or_else(|e| panic!("set compliance: {}", show(&e)));
    assert_code(
        put("comp", retention(comp.clone(), in_days(5)), true).await,
        403,
        "AccessDenied",
    );
    assert_code(
        put("comp", retention(gov.clone(), in_days(30)), true).await,
        403,
        "AccessDenied",
    );
    let far = in_days(30);
    put("comp", retention(comp.clone(), far), false)
        .await
        .unwrap_or_else(|e| panic!("extend compliance: {}", show(&e)));
    assert_eq!(
        retention_of(c, "ret", "comp").await,
        (comp.clone(), far.secs())
    );
    // A date in the past is refused.
    assert_code(
        put("gov", retention(gov.clone(), in_days(-1)), true).await,
        400,
        "InvalidArgument",
    );
}

async fn default_retention_applies_to_new_versions(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    lock_bucket(c, "dflt").await;
    c.put_object_lock_configuration()
        .bucket("dflt")
        .object_lock_configuration(config(ObjectLockRetentionMode::Compliance, Some(1), None))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put lock configuration: {}", show(&e)));
    let before = unix_now();
    n.put("dflt", "k", b"defaulted".to_vec()).await;
    let after = unix_now();
    let (mode, until) = retention_of(c, "dflt", "k").await;
    assert_eq!(mode, ObjectLockRetentionMode::Compliance);
    assert!(
        (before + 86_400..=after + 86_400).contains(&until),
        "{until} not a day after {before}..{after}"
    );
    // The request's own retention wins over the default.
    let until = in_days(3);
    c.put_object()
        .bucket("dflt")
        .key("own")
        .object_lock_mode(ObjectLockMode::Governance)
        .object_lock_retain_until_date(until)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put with own retention: {}", show(&e)));
    assert_eq!(
        retention_of(c, "dflt", "own").await,
        (ObjectLockRetentionMode::Governance, until.secs())
    );
}

async fn copies_and_uploads_get_their_own_lock(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    lock_bucket(c, "copies").await;
    let until = in_days(4);
    c.put_object()
        .bucket("copies")
        .key("src")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(until)
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .body(b"source".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put source: {}", show(&e)));
    // A copy does not inherit its source's lock...
    n.copy("copies", "plain-copy", "copies/src").await;
    let head = n.head("copies", "plain-copy").await;
    assert_eq!(head.object_lock_mode(), None);
    assert_eq!(head.object_lock_legal_hold_status(), None);
    // ... but gets what its request asks for.
    let copy_until = in_days(6);
    c.copy_object()
        .bucket("copies")
        .key("locked-copy")
        .copy_source("copies/src")
        .object_lock_mode(ObjectLockMode::Governance)
        .object_lock_retain_until_date(copy_until)
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy with lock: {}", show(&e)));
    assert_eq!(
        retention_of(c, "copies", "locked-copy").await,
        (ObjectLockRetentionMode::Governance, copy_until.secs())
    );
    assert_eq!(
        hold_of(c, "copies", "locked-copy").await,
        ObjectLockLegalHoldStatus::Off
    );

    // A multipart upload's lock is the completed object's.
    let up = c
        .create_multipart_upload()
        .bucket("copies")
        .key("mp")
        .object_lock_mode(ObjectLockMode::Governance)
        .object_lock_retain_until_date(until)
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    let id = up.upload_id().expect("upload id");
    let part = c
        .upload_part()
        .bucket("copies")
        .key("mp")
        .upload_id(id)
        .part_number(1)
        .body(b"one part".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("upload part: {}", show(&e)));
    c.complete_multipart_upload()
        .bucket("copies")
        .key("mp")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .set_e_tag(part.e_tag().map(str::to_owned))
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    assert_eq!(
        retention_of(c, "copies", "mp").await,
        (ObjectLockRetentionMode::Governance, until.secs())
    );
    assert_eq!(
        hold_of(c, "copies", "mp").await,
        ObjectLockLegalHoldStatus::On
    );
}

async fn lock_needs_a_lock_bucket(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    n.bucket("plain").await;
    n.put("plain", "k", b"x".to_vec()).await;
    assert_code(
        c.put_object()
            .bucket("plain")
            .key("k2")
            .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "InvalidRequest",
    );
    assert_code(
        c.put_object_retention()
            .bucket("plain")
            .key("k")
            .retention(retention(ObjectLockRetentionMode::Governance, in_days(1)))
            .send()
            .await,
        400,
        "InvalidRequest",
    );
    assert_code(
        c.get_object_legal_hold()
            .bucket("plain")
            .key("k")
            .send()
            .await,
        400,
        "InvalidRequest",
    );
    // Nothing was written by the refused PUT.
    assert_code(
        c.head_object().bucket("plain").key("k2").send().await,
        404,
        "NotFound",
    );
}

async fn protected_versions_are_not_deleted(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            users: &[ALICE],
            ..Options::default()
        },
    );
    let c = &n.client;
    lock_bucket(c, "del").await;
    // Object lock turned versioning on, for good.
    let v = c
        .get_bucket_versioning()
        .bucket("del")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get versioning: {}", show(&e)));
    assert_eq!(v.status(), Some(&BucketVersioningStatus::Enabled));
    assert_code(
        c.put_bucket_versioning()
            .bucket("del")
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Suspended)
                    .build(),
            )
            .send()
            .await,
        409,
        "InvalidBucketState",
    );

    let put = c
        .put_object()
        .bucket("del")
        .key("held")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put held: {}", show(&e)));
    let held = put.version_id().expect("a version id").to_owned();
    c.put_object_legal_hold()
        .bucket("del")
        .key("held")
        .version_id(&held)
        .legal_hold(hold(ObjectLockLegalHoldStatus::On))
        .send()
        .await
        .unwrap_or_else(|e| panic!("hold: {}", show(&e)));
    let delete = |key: &'static str, version: Option<String>, bypass: bool| {
        c.delete_object()
            .bucket("del")
            .key(key)
            .set_version_id(version)
            .set_bypass_governance_retention(bypass.then_some(true))
            .send()
    };
    assert_code(
        delete("held", Some(held.clone()), true).await,
        403,
        "AccessDenied",
    );
    // DeleteObjects refuses that version alone.
    let out = c
        .delete_objects()
        .bucket("del")
        .delete(
            Delete::builder()
                .objects(
                    ObjectIdentifier::builder()
                        .key("held")
                        .version_id(&held)
                        .build()
                        .expect("identifier"),
                )
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    assert_eq!(out.errors().len(), 1, "{out:?}");
    assert_eq!(out.errors()[0].code(), Some("AccessDenied"));
    // A delete without a version id only adds a delete marker: allowed, and the version stays.
    let marker = delete("held", None, false)
        .await
        .unwrap_or_else(|e| panic!("delete marker: {}", show(&e)));
    assert_eq!(marker.delete_marker(), Some(true));
    let got = c
        .get_object()
        .bucket("del")
        .key("held")
        .version_id(&held)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get held version: {}", show(&e)));
    assert_eq!(
        crate::support::sdk::body_bytes(got.body).await,
        b"x".to_vec()
    );
    // Once the hold is lifted, the version can go.
    c.put_object_legal_hold()
        .bucket("del")
        .key("held")
        .version_id(&held)
        .legal_hold(hold(ObjectLockLegalHoldStatus::Off))
        .send()
        .await
        .unwrap_or_else(|e| panic!("lift hold: {}", show(&e)));
    delete("held", Some(held.clone()), false)
        .await
        .unwrap_or_else(|e| panic!("delete after the hold: {}", show(&e)));

    let mut ids = Vec::new();
    for (key, mode) in [
        ("gov", ObjectLockMode::Governance),
        ("comp", ObjectLockMode::Compliance),
    ] {
        let put = c
            .put_object()
            .bucket("del")
            .key(key)
            .object_lock_mode(mode)
            .object_lock_retain_until_date(in_days(1))
            .body(b"x".to_vec().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {key}: {}", show(&e)));
        let id = put.version_id().expect("a version id").to_owned();
        assert_code(
            delete(key, Some(id.clone()), false).await,
            403,
            "AccessDenied",
        );
        ids.push(id);
    }
    assert_code(
        delete("comp", Some(ids[1].clone()), true).await,
        403,
        "AccessDenied",
    );
    delete("gov", Some(ids[0].clone()), true)
        .await
        .unwrap_or_else(|e| panic!("delete governance with bypass: {}", show(&e)));
    assert_eq!(n.get("del", "comp").await, b"x");

    // Another user, allowed to delete but not to bypass, cannot delete a GOVERNANCE version.
    let put = c
        .put_object()
        .bucket("del")
        .key("gov2")
        .object_lock_mode(ObjectLockMode::Governance)
        .object_lock_retain_until_date(in_days(1))
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put gov2: {}", show(&e)));
    let id = put.version_id().expect("a version id").to_owned();
    let other = &ALICE;
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam::000000000000:user/{}"}},"Action":["s3:DeleteObjectVersion","s3:DeleteObject"],"Resource":"arn:aws:s3:::del/*"}}]}}"#,
        other.name
    );
    c.put_bucket_policy()
        .bucket("del")
        .policy(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put policy: {}", show(&e)));
    let theirs = n.client_as(other);
    assert_code(
        theirs
            .delete_object()
            .bucket("del")
            .key("gov2")
            .version_id(&id)
            .bypass_governance_retention(true)
            .send()
            .await,
        403,
        "AccessDenied",
    );
}

async fn boto3_locks_as_aws_does(target: Target) {
    let n = TestNode::start(target);
    let script = r#"
import datetime, sys
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
endpoint, key, secret = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                  aws_secret_access_key=secret, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="boto", ObjectLockEnabledForBucket=True)
s3.put_object_lock_configuration(Bucket="boto", ObjectLockConfiguration={
    "ObjectLockEnabled": "Enabled",
    "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 2}}})
conf = s3.get_object_lock_configuration(Bucket="boto")["ObjectLockConfiguration"]
assert conf["Rule"]["DefaultRetention"] == {"Mode": "GOVERNANCE", "Days": 2}, conf
until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)).replace(microsecond=0)
s3.put_object(Bucket="boto", Key="k", Body=b"data", ObjectLockMode="COMPLIANCE",
              ObjectLockRetainUntilDate=until, ObjectLockLegalHoldStatus="ON")
head = s3.head_object(Bucket="boto", Key="k")
assert head["ObjectLockMode"] == "COMPLIANCE", head
assert head["ObjectLockRetainUntilDate"] == until, (head["ObjectLockRetainUntilDate"], until)
assert head["ObjectLockLegalHoldStatus"] == "ON", head
ret = s3.get_object_retention(Bucket="boto", Key="k")["Retention"]
assert ret["Mode"] == "COMPLIANCE" and ret["RetainUntilDate"] == until, ret
try:
    s3.put_object_retention(Bucket="boto", Key="k", BypassGovernanceRetention=True,
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until - datetime.timedelta(days=1)})
    raise SystemExit("a compliance retention was shortened")
except ClientError as e:
    assert e.response["Error"]["Code"] == "AccessDenied", e.response
s3.put_object_legal_hold(Bucket="boto", Key="k", LegalHold={"Status": "OFF"})
assert s3.get_object_legal_hold(Bucket="boto", Key="k")["LegalHold"]["Status"] == "OFF"
s3.put_object(Bucket="boto", Key="d", Body=b"x")
assert s3.get_object_retention(Bucket="boto", Key="d")["Retention"]["Mode"] == "GOVERNANCE"
print("ok")
"#;
    let endpoint = format!("http://{}", n.addr);
    crate::support::sdk::run_python(
        script,
        vec![
            endpoint,
            crate::support::ACCESS_KEY.to_owned(),
            crate::support::SECRET_KEY.to_owned(),
        ],
    )
    .await;
}

/// DeleteObjects with `x-amz-bypass-governance-retention` deletes GOVERNANCE versions, wherever
/// their keys live (through the proxy: on several nodes, each asked with the client's
/// header), never a COMPLIANCE one; without it each is refused alone.
async fn delete_objects_bypasses_governance(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    lock_bucket(c, "bypass").await;
    let mut versions = Vec::new();
    for (key, mode) in [
        ("g0", ObjectLockMode::Governance),
        ("g1", ObjectLockMode::Governance),
        ("g2", ObjectLockMode::Governance),
        ("g3", ObjectLockMode::Governance),
        ("g4", ObjectLockMode::Governance),
        ("g5", ObjectLockMode::Governance),
        ("comp", ObjectLockMode::Compliance),
    ] {
        let put = c
            .put_object()
            .bucket("bypass")
            .key(key)
            .object_lock_mode(mode)
            .object_lock_retain_until_date(in_days(1))
            .body(b"x".to_vec().into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("put {key}: {}", show(&e)));
        let id = put.version_id().expect("a version id").to_owned();
        versions.push((key, id));
    }
    let ids: Vec<ObjectIdentifier> = versions
        .iter()
        .map(|(key, id)| {
            ObjectIdentifier::builder()
                .key(*key)
                .version_id(id)
                .build()
                .expect("identifier")
        })
        .collect();
    let delete = |bypass: bool| {
        c.delete_objects()
            .bucket("bypass")
            .set_bypass_governance_retention(bypass.then_some(true))
            .delete(
                Delete::builder()
                    .set_objects(Some(ids.clone()))
                    .build()
                    .expect("delete"),
            )
            .send()
    };
    let out = delete(false)
        .await
        .unwrap_or_else(|e| panic!("delete objects: {}", show(&e)));
    assert!(out.deleted().is_empty(), "{out:?}");
    let refused: Vec<(&str, &str)> = out
        .errors()
        .iter()
        .map(|e| (e.key().unwrap_or_default(), e.code().unwrap_or_default()))
        .collect();
    let all: Vec<(&str, &str)> = versions.iter().map(|(k, _)| (*k, "AccessDenied")).collect();
    assert_eq!(refused, all);

    let out = delete(true)
        .await
        .unwrap_or_else(|e| panic!("delete objects with bypass: {}", show(&e)));
    let deleted: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
    assert_eq!(deleted, ["g0", "g1", "g2", "g3", "g4", "g5"], "{out:?}");
    let refused: Vec<(&str, &str)> = out
        .errors()
        .iter()
        .map(|e| (e.key().unwrap_or_default(), e.code().unwrap_or_default()))
        .collect();
    assert_eq!(refused, [("comp", "AccessDenied")]);
    let left = c
        .list_object_versions()
        .bucket("bypass")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list versions: {}", show(&e)));
    let keys: Vec<&str> = left.versions().iter().filter_map(|v| v.key()).collect();
    assert_eq!(keys, ["comp"]);
}
