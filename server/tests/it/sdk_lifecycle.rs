//! Bucket lifecycle: Put/Get/DeleteBucketLifecycleConfiguration with the AWS SDK and boto3,
//! the lifecycle worker expiring objects and aborting uploads (with short lifecycle days), and
//! `x-amz-expiration` on GET and HEAD, on a node and through the proxy.

use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::DateTime as SdkDateTime;
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, BucketVersioningStatus,
    CompletedMultipartUpload, CompletedPart, ExpirationStatus, LifecycleExpiration, LifecycleRule,
    LifecycleRuleAndOperator, LifecycleRuleFilter, NoncurrentVersionExpiration,
    ObjectLockLegalHoldStatus, ObjectLockMode, Tag, Transition, TransitionStorageClass,
    VersioningConfiguration,
};
use ferry_core::time::DateTime;

use crate::support::ALICE;
use crate::support::http::{Client as Raw, plain_get};
use crate::support::sdk::{Options, Target, TestNode, assert_code, run_python, show};

on_every_target!(
    lifecycle_round_trip,
    lifecycle_refuses_bad_rules,
    worker_expires_by_prefix_tag_and_size,
    worker_aborts_stale_uploads,
    expiration_header_on_get_and_head,
    expiration_header_on_writes,
    boto3_manages_bucket_lifecycle,
    policies_name_the_lifecycle_actions,
    the_worker_lets_the_node_restart,
    versioned_objects_expire_to_delete_markers,
    noncurrent_versions_expire_but_the_newest,
    expired_delete_markers_are_removed,
    object_lock_keeps_noncurrent_versions,
);

/// A lifecycle day of one second, a pass every second.
const FAST: Options = Options {
    lifecycle: Some((Duration::from_secs(1), 1)),
    ..crate::support::sdk::DEFAULT_OPTIONS
};

/// How long a test waits for the worker before failing.
const DEADLINE: Duration = Duration::from_secs(60);

fn filter_prefix(p: &str) -> LifecycleRuleFilter {
    LifecycleRuleFilter::builder().prefix(p).build()
}

fn tag(k: &str, v: &str) -> Tag {
    Tag::builder().key(k).value(v).build().expect("tag")
}

fn days(n: i32) -> LifecycleExpiration {
    LifecycleExpiration::builder().days(n).build()
}

fn rule(
    id: &str,
    filter: LifecycleRuleFilter,
) -> aws_sdk_s3::types::builders::LifecycleRuleBuilder {
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(filter)
}

fn config(rules: Vec<LifecycleRule>) -> BucketLifecycleConfiguration {
    BucketLifecycleConfiguration::builder()
        .set_rules(Some(rules))
        .build()
        .expect("config")
}

async fn put_config(n: &TestNode, bucket: &str, c: BucketLifecycleConfiguration) {
    n.client
        .put_bucket_lifecycle_configuration()
        .bucket(bucket)
        .lifecycle_configuration(c)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put lifecycle: {}", show(&e)));
}

async fn lifecycle_round_trip(target: Target) {
    let n = TestNode::start(target);
    n.bucket("lc-round").await;
    let none = n
        .client
        .get_bucket_lifecycle_configuration()
        .bucket("lc-round")
        .send()
        .await;
    assert_code(none, 404, "NoSuchLifecycleConfiguration");
    let rules = vec![
        rule("logs", filter_prefix("logs/"))
            .expiration(days(30))
            .abort_incomplete_multipart_upload(
                AbortIncompleteMultipartUpload::builder()
                    .days_after_initiation(7)
                    .build(),
            )
            .build()
            .expect("rule"),
        rule(
            "tagged",
            LifecycleRuleFilter::builder()
                .and(
                    LifecycleRuleAndOperator::builder()
                        .prefix("data/")
                        .tags(tag("class", "temp"))
                        .object_size_greater_than(100)
                        .object_size_less_than(5000)
                        .build(),
                )
                .build(),
        )
        .expiration(
            LifecycleExpiration::builder()
                .date(SdkDateTime::from_secs(1_893_456_000)) // 2030-01-01T00:00:00Z
                .build(),
        )
        .noncurrent_version_expiration(
            NoncurrentVersionExpiration::builder()
                .noncurrent_days(10)
                .newer_noncurrent_versions(3)
                .build(),
        )
        .build()
        .expect("rule"),
        LifecycleRule::builder()
            .id("off")
            .status(ExpirationStatus::Disabled)
            .filter(LifecycleRuleFilter::builder().tag(tag("k", "v")).build())
            .expiration(days(1))
            .build()
            .expect("rule"),
    ];
    put_config(&n, "lc-round", config(rules)).await;
    let got = n
        .client
        .get_bucket_lifecycle_configuration()
        .bucket("lc-round")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get lifecycle: {}", show(&e)));
    let rules = got.rules();
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[0].id(), Some("logs"));
    assert_eq!(rules[0].status(), &ExpirationStatus::Enabled);
    assert_eq!(rules[0].filter().and_then(|f| f.prefix()), Some("logs/"));
    assert_eq!(rules[0].expiration().and_then(|e| e.days()), Some(30));
    assert_eq!(
        rules[0]
            .abort_incomplete_multipart_upload()
            .and_then(|a| a.days_after_initiation()),
        Some(7)
    );
    let and = rules[1].filter().and_then(|f| f.and()).expect("and");
    assert_eq!(and.prefix(), Some("data/"));
    assert_eq!(and.tags(), [tag("class", "temp")]);
    assert_eq!(and.object_size_greater_than(), Some(100));
    assert_eq!(and.object_size_less_than(), Some(5000));
    assert_eq!(
        rules[1]
            .expiration()
            .and_then(|e| e.date())
            .map(|d| d.secs()),
        Some(1_893_456_000)
    );
    let nve = rules[1].noncurrent_version_expiration().expect("nve");
    assert_eq!(nve.noncurrent_days(), Some(10));
    assert_eq!(nve.newer_noncurrent_versions(), Some(3));
    assert_eq!(rules[2].status(), &ExpirationStatus::Disabled);
    assert_eq!(
        rules[2].filter().and_then(|f| f.tag()),
        Some(&tag("k", "v"))
    );
    // A new configuration replaces the old one whole.
    put_config(
        &n,
        "lc-round",
        config(vec![
            rule("only", filter_prefix(""))
                .expiration(days(2))
                .build()
                .expect("rule"),
            // Without an ID: the server gives one.
            LifecycleRule::builder()
                .status(ExpirationStatus::Enabled)
                .filter(filter_prefix("tmp/"))
                .expiration(days(1))
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    let got = n
        .client
        .get_bucket_lifecycle_configuration()
        .bucket("lc-round")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get lifecycle: {}", show(&e)));
    assert_eq!(got.rules().len(), 2);
    assert_eq!(got.rules()[0].id(), Some("only"));
    let given = got.rules()[1].id().expect("an ID given");
    assert_eq!(given.len(), 32, "{given}");
    n.client
        .delete_bucket_lifecycle()
        .bucket("lc-round")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete lifecycle: {}", show(&e)));
    let gone = n
        .client
        .get_bucket_lifecycle_configuration()
        .bucket("lc-round")
        .send()
        .await;
    assert_code(gone, 404, "NoSuchLifecycleConfiguration");
    // Deleting again is fine; a missing bucket is not.
    n.client
        .delete_bucket_lifecycle()
        .bucket("lc-round")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete lifecycle again: {}", show(&e)));
    let missing = n
        .client
        .get_bucket_lifecycle_configuration()
        .bucket("nope")
        .send()
        .await;
    assert_code(missing, 404, "NoSuchBucket");
}

async fn lifecycle_refuses_bad_rules(target: Target) {
    let n = TestNode::start(target);
    n.bucket("lcbad").await;
    let put = |c: BucketLifecycleConfiguration| {
        n.client
            .put_bucket_lifecycle_configuration()
            .bucket("lcbad")
            .lifecycle_configuration(c)
            .send()
    };
    let ok_rule = |id: &str| {
        rule(id, filter_prefix("a/"))
            .expiration(days(1))
            .build()
            .expect("rule")
    };
    // Days must be positive.
    let r = put(config(vec![
        rule("zero", filter_prefix(""))
            .expiration(days(0))
            .build()
            .expect("rule"),
    ]))
    .await;
    assert_code(r, 400, "InvalidArgument");
    // A Date must be at midnight UTC.
    let noon = LifecycleExpiration::builder()
        .date(SdkDateTime::from_secs(1_893_456_000 + 12 * 3600))
        .build();
    let r = put(config(vec![
        rule("noon", filter_prefix(""))
            .expiration(noon)
            .build()
            .expect("rule"),
    ]))
    .await;
    assert_code(r, 400, "InvalidArgument");
    // Days and Date together.
    let both = LifecycleExpiration::builder()
        .days(1)
        .date(SdkDateTime::from_secs(1_893_456_000))
        .build();
    let r = put(config(vec![
        rule("both", filter_prefix(""))
            .expiration(both)
            .build()
            .expect("rule"),
    ]))
    .await;
    assert_code(r, 400, "MalformedXML");
    // Two rules with one ID.
    let r = put(config(vec![ok_rule("twice"), ok_rule("twice")])).await;
    assert_code(r, 400, "InvalidRequest");
    // A rule with no action.
    let r = put(config(vec![
        rule("idle", filter_prefix("")).build().expect("rule"),
    ]))
    .await;
    assert_code(r, 400, "InvalidRequest");
    // An ID over 255 characters.
    let r = put(config(vec![ok_rule(&"i".repeat(256))])).await;
    assert_code(r, 400, "InvalidArgument");
    // AbortIncompleteMultipartUpload with a tag filter.
    let r = put(config(vec![
        rule(
            "abort",
            LifecycleRuleFilter::builder().tag(tag("k", "v")).build(),
        )
        .abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder()
                .days_after_initiation(1)
                .build(),
        )
        .build()
        .expect("rule"),
    ]))
    .await;
    assert_code(r, 400, "InvalidRequest");
    // Transitions to other storage classes are not implemented: refused, never ignored.
    let r = put(config(vec![
        rule("cold", filter_prefix(""))
            .transitions(
                Transition::builder()
                    .days(30)
                    .storage_class(TransitionStorageClass::Glacier)
                    .build(),
            )
            .build()
            .expect("rule"),
    ]))
    .await;
    assert_code(r, 501, "NotImplemented");
    // Nothing was stored.
    let none = n
        .client
        .get_bucket_lifecycle_configuration()
        .bucket("lcbad")
        .send()
        .await;
    assert_code(none, 404, "NoSuchLifecycleConfiguration");
    // Raw bodies: not XML, no rule, a top-level Prefix beside a Filter, and the Content-MD5
    // (or checksum) S3 requires.
    let mut raw = Raw::connect(n.addr);
    let md5 = |b: &[u8]| {
        use md5::Digest as _;
        crate::support::sdk::b64(&md5::Md5::digest(b))
    };
    let put_raw = |raw: &mut Raw, body: &[u8]| {
        raw.request(
            "PUT",
            "/lcbad?lifecycle",
            &[("Content-MD5", &md5(body))],
            body,
        )
    };
    put_raw(&mut raw, b"<LifecycleConfiguration><Rule>").expect_error(400, "MalformedXML");
    put_raw(
        &mut raw,
        b"<LifecycleConfiguration></LifecycleConfiguration>",
    )
    .expect_error(400, "MalformedXML");
    let both = b"<LifecycleConfiguration><Rule><Status>Enabled</Status><Prefix>a</Prefix>\
        <Filter/><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>";
    put_raw(&mut raw, both).expect_error(400, "MalformedXML");
    let legacy = b"<LifecycleConfiguration><Rule><ID>old</ID><Prefix>old/</Prefix>\
        <Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true\
        </ExpiredObjectDeleteMarker></Expiration></Rule></LifecycleConfiguration>";
    raw.request("PUT", "/lcbad?lifecycle", &[], legacy)
        .expect_error(400, "InvalidRequest");
    let r = put_raw(&mut raw, legacy);
    assert_eq!(r.status, 200, "{}", r.text());
    // The legacy form comes back as it was given.
    let r = raw.request("GET", "/lcbad?lifecycle", &[], b"");
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(
        text.contains("<ID>old</ID><Prefix>old/</Prefix><Status>Enabled</Status>")
            && text.contains("<ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>")
            && !text.contains("<Filter>"),
        "{text}"
    );
    let r = raw.request("DELETE", "/lcbad?lifecycle", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    // A missing bucket.
    let r = n
        .client
        .put_bucket_lifecycle_configuration()
        .bucket("nope")
        .lifecycle_configuration(config(vec![ok_rule("x")]))
        .send()
        .await;
    assert_code(r, 404, "NoSuchBucket");
}

/// Keys of `bucket` (at most 1000).
async fn keys(n: &TestNode, bucket: &str) -> Vec<String> {
    let out = n
        .client
        .list_objects_v2()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

/// For every key of `keepers`, a key under `prefix` that lives on the same node (the same
/// worker judges both): put after the keepers, so it expires no earlier than they would.
/// Keepers on one node share their sentinel.
fn sentinels(n: &TestNode, bucket: &str, prefix: &str, keepers: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = keepers
        .iter()
        .map(|k| {
            (0..)
                .map(|i| format!("{prefix}sentinel-{i}"))
                .find(|s| n.same_node((bucket, s), (bucket, k)))
                .expect("a key on every node")
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

async fn worker_expires_by_prefix_tag_and_size(target: Target) {
    let n = TestNode::start_with(target, FAST);
    let b = "lcexpire";
    n.bucket(b).await;
    let keepers = ["keep/a", "tagged/other", "data/small", "elsewhere/big"];
    for k in ["keep/a", "elsewhere/big"] {
        n.put(b, k, vec![b'x'; 200]).await;
    }
    n.client
        .put_object()
        .bucket(b)
        .key("tagged/other")
        .tagging("temp=no")
        .body(b"t".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    n.put(b, "data/small", vec![b's'; 10]).await;
    // What expires: by prefix, by tag, by prefix and size.
    let sentinels = sentinels(&n, b, "logs/", &keepers);
    for s in &sentinels {
        n.put(b, s, b"s".to_vec()).await;
    }
    n.put(b, "logs/a", b"log".to_vec()).await;
    n.client
        .put_object()
        .bucket(b)
        .key("tagged/temp")
        .tagging("temp=yes&other=1")
        .body(b"t".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    n.put(b, "data/big", vec![b'b'; 200]).await;
    let rules = vec![
        rule("logs", filter_prefix("logs/"))
            .expiration(days(1))
            .build()
            .expect("rule"),
        rule(
            "temp",
            LifecycleRuleFilter::builder()
                .tag(tag("temp", "yes"))
                .build(),
        )
        .expiration(days(1))
        .build()
        .expect("rule"),
        rule(
            "big",
            LifecycleRuleFilter::builder()
                .and(
                    LifecycleRuleAndOperator::builder()
                        .prefix("data/")
                        .object_size_greater_than(100)
                        .build(),
                )
                .build(),
        )
        .expiration(days(1))
        .build()
        .expect("rule"),
        // Disabled: would expire everything.
        LifecycleRule::builder()
            .id("off")
            .status(ExpirationStatus::Disabled)
            .filter(filter_prefix(""))
            .expiration(days(1))
            .build()
            .expect("rule"),
    ];
    put_config(&n, b, config(rules)).await;
    let start = Instant::now();
    let mut left = keys(&n, b).await;
    while left.len() > keepers.len() {
        assert!(
            start.elapsed() < DEADLINE,
            "lifecycle did not expire in time; left: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = keys(&n, b).await;
    }
    let mut want: Vec<String> = keepers.iter().map(|k| (*k).to_owned()).collect();
    want.sort();
    assert_eq!(
        left, want,
        "exactly the objects no enabled rule matches stay"
    );
    // The survivors still read whole.
    assert_eq!(n.get(b, "keep/a").await, vec![b'x'; 200]);
    if let Some(admin) = n.admin_addr() {
        let text = plain_get(admin, "/metrics").text();
        let expired = metric(&text, "ferry_node_lifecycle_expired_objects_total");
        assert_eq!(expired, (3 + sentinels.len()) as u64, "{text}");
        let bytes = metric(&text, "ferry_node_lifecycle_expired_bytes_total");
        assert_eq!(bytes, 3 + 1 + 200 + sentinels.len() as u64);
    }
}

/// In a versioned bucket (here one with object lock, whose versions must outlive any rule) an
/// expired object gets a delete marker and keeps its version, as on AWS.
async fn versioned_objects_expire_to_delete_markers(target: Target) {
    let n = TestNode::start_with(target, FAST);
    let b = "lcversioned";
    n.client
        .create_bucket()
        .bucket(b)
        .object_lock_enabled_for_bucket(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create lock bucket: {}", show(&e)));
    let until = SdkDateTime::from_secs(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
            + 86_400,
    );
    let put = n
        .client
        .put_object()
        .bucket(b)
        .key("locked")
        .object_lock_mode(aws_sdk_s3::types::ObjectLockMode::Compliance)
        .object_lock_retain_until_date(until)
        .body(b"kept".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put locked: {}", show(&e)));
    let locked = put.version_id().expect("a version id").to_owned();
    let plain = n
        .client
        .put_object()
        .bucket(b)
        .key("plain")
        .body(b"also kept".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put plain: {}", show(&e)))
        .version_id()
        .expect("a version id")
        .to_owned();
    put_config(
        &n,
        b,
        config(vec![
            rule("all", filter_prefix(""))
                .expiration(days(1))
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    let start = Instant::now();
    while !keys(&n, b).await.is_empty() {
        assert!(
            start.elapsed() < DEADLINE,
            "lifecycle did not expire in time"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let versions = n
        .client
        .list_object_versions()
        .bucket(b)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list versions: {}", show(&e)));
    let mut kept: Vec<(String, String)> = versions
        .versions()
        .iter()
        .map(|v| {
            (
                v.key().unwrap_or_default().to_owned(),
                v.version_id().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        vec![
            ("locked".to_owned(), locked.clone()),
            ("plain".to_owned(), plain)
        ]
    );
    let mut markers: Vec<&str> = versions
        .delete_markers()
        .iter()
        .filter(|m| m.is_latest() == Some(true))
        .filter_map(|m| m.key())
        .collect();
    markers.sort_unstable();
    assert_eq!(markers, ["locked", "plain"]);
    let got = n
        .client
        .get_object()
        .bucket(b)
        .key("locked")
        .version_id(&locked)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get the locked version: {}", show(&e)));
    assert_eq!(
        crate::support::sdk::body_bytes(got.body).await,
        b"kept".to_vec()
    );
}

/// A bucket with versioning enabled.
async fn versioned_bucket(n: &TestNode, b: &str) {
    n.bucket(b).await;
    n.client
        .put_bucket_versioning()
        .bucket(b)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("put versioning: {}", show(&e)));
}

/// Put a version: its id.
async fn put_version(n: &TestNode, b: &str, k: &str, body: &[u8]) -> String {
    n.client
        .put_object()
        .bucket(b)
        .key(k)
        .body(body.to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put {k}: {}", show(&e)))
        .version_id()
        .expect("a version id")
        .to_owned()
}

/// Delete `k` without a version: the delete marker's id.
async fn delete_marker(n: &TestNode, b: &str, k: &str) -> String {
    let out = n
        .client
        .delete_object()
        .bucket(b)
        .key(k)
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete {k}: {}", show(&e)));
    assert_eq!(out.delete_marker(), Some(true));
    out.version_id().expect("a version id").to_owned()
}

/// The versions and delete markers of exactly `k`, newest first: (version id, is a marker).
async fn versions_of(n: &TestNode, b: &str, k: &str) -> Vec<(String, bool)> {
    let out = n
        .client
        .list_object_versions()
        .bucket(b)
        .prefix(k)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list versions: {}", show(&e)));
    let mut all: Vec<(String, bool)> = out
        .versions()
        .iter()
        .filter(|v| v.key() == Some(k))
        .map(|v| (v.version_id().unwrap_or_default().to_owned(), false))
        .chain(
            out.delete_markers()
                .iter()
                .filter(|m| m.key() == Some(k))
                .map(|m| (m.version_id().unwrap_or_default().to_owned(), true)),
        )
        .collect();
    // Newest first: Ferry's version ids (no null version here) sort newest first.
    all.sort();
    all
}

/// Wait (up to [`DEADLINE`]) until `done` holds for the versions of every key of `keys`.
async fn wait_versions(
    n: &TestNode,
    b: &str,
    keys: &[String],
    done: impl Fn(&[(String, bool)]) -> bool,
) {
    let start = Instant::now();
    loop {
        let mut left = Vec::new();
        for k in keys {
            let v = versions_of(n, b, k).await;
            if !done(&v) {
                left.push((k.clone(), v));
            }
        }
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "lifecycle did not act in time; left: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn noncurrent(days: i32, newer: Option<i32>) -> NoncurrentVersionExpiration {
    NoncurrentVersionExpiration::builder()
        .noncurrent_days(days)
        .set_newer_noncurrent_versions(newer)
        .build()
}

/// NoncurrentVersionExpiration: versions noncurrent for NoncurrentDays go for good, but the
/// NewerNoncurrentVersions newest; versions outside the rule's filter stay.
async fn noncurrent_versions_expire_but_the_newest(target: Target) {
    let n = TestNode::start_with(target, FAST);
    let b = "lcnoncurrent";
    versioned_bucket(&n, b).await;
    let mut kept = Vec::new();
    for i in 0..2 {
        kept.push(put_version(&n, b, "keep/k", format!("keep {i}").as_bytes()).await);
    }
    kept.reverse();
    let sentinels = sentinels(&n, b, "logs/", &["keep/k"]);
    for s in &sentinels {
        for i in 0..4 {
            put_version(&n, b, s, format!("s{i}").as_bytes()).await;
        }
    }
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(put_version(&n, b, "logs/k", format!("version {i}").as_bytes()).await);
    }
    ids.reverse();
    put_config(
        &n,
        b,
        config(vec![
            rule("old", filter_prefix("logs/"))
                .noncurrent_version_expiration(noncurrent(1, Some(2)))
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    let mut watched = sentinels.clone();
    watched.push("logs/k".to_owned());
    // The current version and the two newest noncurrent ones stay.
    wait_versions(&n, b, &watched, |v| v.len() <= 3).await;
    let left: Vec<String> = versions_of(&n, b, "logs/k")
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(left, ids[..3], "the newest three stay");
    let gone = n
        .client
        .get_object()
        .bucket(b)
        .key("logs/k")
        .version_id(&ids[4])
        .send()
        .await;
    assert_code(gone, 404, "NoSuchVersion");
    assert_eq!(n.get(b, "logs/k").await, b"version 4".to_vec());
    let keep: Vec<String> = versions_of(&n, b, "keep/k")
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(keep, kept, "another prefix: its noncurrent version stays");
    if let Some(admin) = n.admin_addr() {
        let text = plain_get(admin, "/metrics").text();
        let expired = metric(&text, "ferry_node_lifecycle_expired_objects_total");
        assert_eq!(expired, 2 + sentinels.len() as u64, "{text}");
        let bytes = metric(&text, "ferry_node_lifecycle_expired_bytes_total");
        assert_eq!(bytes, 2 * 9 + 2 * sentinels.len() as u64, "{text}");
    }
}

/// ExpiredObjectDeleteMarker: a delete marker that is all its key has left goes; one with a
/// version behind it stays. With NoncurrentVersionExpiration, a deleted key goes entirely.
async fn expired_delete_markers_are_removed(target: Target) {
    let n = TestNode::start_with(target, FAST);
    let b = "lcmarkers";
    versioned_bucket(&n, b).await;
    // Backed: a marker with its version behind it.
    let backed_version = put_version(&n, b, "backed", b"b").await;
    let backed_marker = delete_marker(&n, b, "backed").await;
    // Lone markers: the version deleted for good, the marker left.
    let mut lone = sentinels(&n, b, "lone/", &["backed"]);
    lone.push("lone/k".to_owned());
    for k in &lone {
        let v = put_version(&n, b, k, b"l").await;
        delete_marker(&n, b, k).await;
        n.client
            .delete_object()
            .bucket(b)
            .key(k)
            .version_id(&v)
            .send()
            .await
            .unwrap_or_else(|e| panic!("delete version: {}", show(&e)));
        assert_eq!(versions_of(&n, b, k).await.len(), 1);
    }
    // Deleted under a NoncurrentVersionExpiration rule: its version expires, then its marker.
    put_version(&n, b, "chain/k", b"c").await;
    delete_marker(&n, b, "chain/k").await;
    let marker_rule = LifecycleExpiration::builder()
        .expired_object_delete_marker(true)
        .build();
    put_config(
        &n,
        b,
        config(vec![
            rule("markers", filter_prefix(""))
                .expiration(marker_rule)
                .build()
                .expect("rule"),
            rule("chain", filter_prefix("chain/"))
                .noncurrent_version_expiration(noncurrent(1, None))
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    lone.push("chain/k".to_owned());
    wait_versions(&n, b, &lone, <[_]>::is_empty).await;
    assert_eq!(
        versions_of(&n, b, "backed").await,
        [(backed_marker, true), (backed_version, false)],
        "a marker with a version behind it stays"
    );
    if let Some(admin) = n.admin_addr() {
        let text = plain_get(admin, "/metrics").text();
        let markers = metric(&text, "ferry_node_lifecycle_removed_delete_markers_total");
        assert_eq!(markers, lone.len() as u64, "{text}");
        assert_eq!(
            metric(&text, "ferry_node_lifecycle_expired_objects_total"),
            1,
            "{text}"
        );
    }
}

/// A noncurrent version under COMPLIANCE retention or a legal hold is never expired; its
/// neighbours are.
async fn object_lock_keeps_noncurrent_versions(target: Target) {
    let n = TestNode::start_with(target, FAST);
    let b = "lclocked";
    n.client
        .create_bucket()
        .bucket(b)
        .object_lock_enabled_for_bucket(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create lock bucket: {}", show(&e)));
    let until = SdkDateTime::from_secs(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
            + 86_400,
    );
    let retained = n
        .client
        .put_object()
        .bucket(b)
        .key("retained")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(until)
        .body(b"retained".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put retained: {}", show(&e)))
        .version_id()
        .expect("a version id")
        .to_owned();
    let held = n
        .client
        .put_object()
        .bucket(b)
        .key("held")
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .body(b"held".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put held: {}", show(&e)))
        .version_id()
        .expect("a version id")
        .to_owned();
    let mut newer = Vec::new();
    for k in ["retained", "held"] {
        newer.push(put_version(&n, b, k, b"newer").await);
    }
    // Unlocked noncurrent versions on the same nodes, written after: they expire no earlier.
    let plain = sentinels(&n, b, "plain/", &["retained", "held"]);
    for k in &plain {
        put_version(&n, b, k, b"old").await;
        put_version(&n, b, k, b"new").await;
    }
    put_config(
        &n,
        b,
        config(vec![
            rule("all", filter_prefix(""))
                .noncurrent_version_expiration(noncurrent(1, None))
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    wait_versions(&n, b, &plain, |v| v.len() == 1).await;
    for (k, old, new) in [
        ("retained", &retained, &newer[0]),
        ("held", &held, &newer[1]),
    ] {
        assert_eq!(
            versions_of(&n, b, k).await,
            [(new.clone(), false), (old.clone(), false)],
            "{k}: the locked noncurrent version stays"
        );
    }
    // The hold lifted, that version expires too.
    n.client
        .put_object_legal_hold()
        .bucket(b)
        .key("held")
        .version_id(&held)
        .legal_hold(
            aws_sdk_s3::types::ObjectLockLegalHold::builder()
                .status(ObjectLockLegalHoldStatus::Off)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("lift the hold: {}", show(&e)));
    wait_versions(&n, b, &["held".to_owned()], |v| v.len() == 1).await;
    assert_eq!(versions_of(&n, b, "retained").await.len(), 2);
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

async fn uploads(n: &TestNode, bucket: &str) -> Vec<String> {
    let out = n
        .client
        .list_multipart_uploads()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list uploads: {}", show(&e)));
    out.uploads()
        .iter()
        .filter_map(|u| u.key().map(str::to_owned))
        .collect()
}

async fn create_upload(n: &TestNode, bucket: &str, key: &str) -> String {
    let up = n
        .client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    let id = up.upload_id().expect("upload id").to_owned();
    n.client
        .upload_part()
        .bucket(bucket)
        .key(key)
        .upload_id(&id)
        .part_number(1)
        .body(b"part".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("upload part: {}", show(&e)));
    id
}

async fn worker_aborts_stale_uploads(target: Target) {
    let n = TestNode::start_with(target, FAST);
    let b = "lcabort";
    n.bucket(b).await;
    let keep_id = create_upload(&n, b, "keep/u").await;
    let sentinels = sentinels(&n, b, "tmp/", &["keep/u"]);
    for s in &sentinels {
        create_upload(&n, b, s).await;
    }
    let stale = create_upload(&n, b, "tmp/u").await;
    let rules = vec![
        rule("stale", filter_prefix("tmp/"))
            .abort_incomplete_multipart_upload(
                AbortIncompleteMultipartUpload::builder()
                    .days_after_initiation(1)
                    .build(),
            )
            .build()
            .expect("rule"),
    ];
    put_config(&n, b, config(rules)).await;
    let start = Instant::now();
    let mut left = uploads(&n, b).await;
    while left.len() > 1 {
        assert!(
            start.elapsed() < DEADLINE,
            "lifecycle did not abort in time; left: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = uploads(&n, b).await;
    }
    assert_eq!(left, ["keep/u"]);
    let gone = n
        .client
        .list_parts()
        .bucket(b)
        .key("tmp/u")
        .upload_id(&stale)
        .send()
        .await;
    assert_code(gone, 404, "NoSuchUpload");
    // The other upload still completes.
    let parts = n
        .client
        .list_parts()
        .bucket(b)
        .key("keep/u")
        .upload_id(&keep_id)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list parts: {}", show(&e)));
    assert_eq!(parts.parts().len(), 1);
    if let Some(admin) = n.admin_addr() {
        let text = plain_get(admin, "/metrics").text();
        let aborted = metric(&text, "ferry_node_lifecycle_aborted_uploads_total");
        assert_eq!(aborted, 1 + sentinels.len() as u64, "{text}");
    }
}

/// AWS's `x-amz-expiration`: creation time plus the rule's days, rounded up to the next
/// midnight UTC.
fn expected_expiration(last_modified: i64, days: i64, rule: &str) -> String {
    let at = (last_modified + (days + 1) * 86_400).div_euclid(86_400) * 86_400;
    format!(
        "expiry-date=\"{}\", rule-id=\"{rule}\"",
        DateTime::from_unix(at).http()
    )
}

async fn expiration_header_on_get_and_head(target: Target) {
    let n = TestNode::start(target);
    let b = "lcheader";
    n.bucket(b).await;
    n.put(b, "logs/a", b"log".to_vec()).await;
    n.put(b, "other/b", b"other".to_vec()).await;
    let head = n.head(b, "logs/a").await;
    assert_eq!(head.expiration(), None, "no configuration, no header");
    let rules = vec![
        rule("month", filter_prefix("logs/"))
            .expiration(days(30))
            .build()
            .expect("rule"),
        rule("week", filter_prefix("logs/"))
            .expiration(days(7))
            .build()
            .expect("rule"),
        LifecycleRule::builder()
            .id("off")
            .status(ExpirationStatus::Disabled)
            .filter(filter_prefix(""))
            .expiration(days(1))
            .build()
            .expect("rule"),
    ];
    put_config(&n, b, config(rules)).await;
    let head = n.head(b, "logs/a").await;
    let lm = head.last_modified().expect("last modified").secs();
    // The earliest enabled rule names the date.
    let want = expected_expiration(lm, 7, "week");
    assert_eq!(head.expiration(), Some(want.as_str()));
    let get = n
        .client
        .get_object()
        .bucket(b)
        .key("logs/a")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(get.expiration(), Some(want.as_str()));
    // No enabled rule matches the other object.
    assert_eq!(n.head(b, "other/b").await.expiration(), None);
    // A date rule names its date.
    put_config(
        &n,
        b,
        config(vec![
            rule("new-year", filter_prefix("other/"))
                .expiration(
                    LifecycleExpiration::builder()
                        .date(SdkDateTime::from_secs(1_893_456_000))
                        .build(),
                )
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    assert_eq!(
        n.head(b, "other/b").await.expiration(),
        Some("expiry-date=\"Tue, 01 Jan 2030 00:00:00 GMT\", rule-id=\"new-year\"")
    );
    assert_eq!(n.head(b, "logs/a").await.expiration(), None);
}

/// `x-amz-expiration` on the writes that make an object (PutObject, CopyObject, beside its
/// source and, behind a proxy, on another node, and CompleteMultipartUpload), as AWS answers
/// them: the rule that will expire the new object (by prefix, by tag), the same that its HEAD
/// names; none where no rule applies.
async fn expiration_header_on_writes(target: Target) {
    let n = TestNode::start(target);
    let b = "lcwrites";
    n.bucket(b).await;
    put_config(
        &n,
        b,
        config(vec![
            rule("logs", filter_prefix("logs/"))
                .expiration(days(7))
                .build()
                .expect("rule"),
            rule(
                "temp",
                LifecycleRuleFilter::builder()
                    .and(
                        LifecycleRuleAndOperator::builder()
                            .prefix("tmp/")
                            .tags(tag("class", "temp"))
                            .build(),
                    )
                    .build(),
            )
            .expiration(days(2))
            .build()
            .expect("rule"),
        ]),
    )
    .await;
    let head_says = |key: &'static str| {
        let n = &n;
        async move { n.head(b, key).await.expiration().map(str::to_owned) }
    };
    let put = |key: &'static str, tagging: Option<&'static str>| {
        n.client
            .put_object()
            .bucket(b)
            .key(key)
            .set_tagging(tagging.map(str::to_owned))
            .body(b"data".to_vec().into())
            .send()
    };
    let r = put("logs/a", None).await.expect("put");
    let lm = n
        .head(b, "logs/a")
        .await
        .last_modified()
        .expect("lm")
        .secs();
    let want = expected_expiration(lm, 7, "logs");
    assert_eq!(r.expiration(), Some(want.as_str()));
    assert_eq!(head_says("logs/a").await.as_deref(), Some(want.as_str()));
    // The tag filter sees the object's tags.
    let r = put("tmp/tagged", Some("class=temp")).await.expect("put");
    let lm = n
        .head(b, "tmp/tagged")
        .await
        .last_modified()
        .expect("lm")
        .secs();
    assert_eq!(
        r.expiration(),
        Some(expected_expiration(lm, 2, "temp").as_str())
    );
    let r = put("tmp/untagged", Some("class=kept")).await.expect("put");
    assert_eq!(r.expiration(), None);
    let r = put("other/a", None).await.expect("put");
    assert_eq!(r.expiration(), None);
    // Copies, beside their source and apart from it; one that no rule expires says nothing.
    for apart in [false, true] {
        let dst = n.key_placed(b, "logs/copy", (b, "other/a"), apart);
        let r = n
            .client
            .copy_object()
            .bucket(b)
            .key(&dst)
            .copy_source(format!("{b}/other/a"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy: {}", show(&e)));
        let head = n.head(b, &dst).await;
        assert!(head.expiration().is_some(), "{dst}");
        assert_eq!(r.expiration(), head.expiration(), "{dst}");
        let dst = n.key_placed(b, "other/copy", (b, "logs/a"), apart);
        let r = n
            .client
            .copy_object()
            .bucket(b)
            .key(&dst)
            .copy_source(format!("{b}/logs/a"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy: {}", show(&e)));
        assert_eq!(r.expiration(), None, "{dst}");
    }
    // A multipart upload's completion.
    let up = n
        .client
        .create_multipart_upload()
        .bucket(b)
        .key("logs/mp")
        .send()
        .await
        .expect("create");
    let id = up.upload_id().expect("id");
    let part = n
        .client
        .upload_part()
        .bucket(b)
        .key("logs/mp")
        .upload_id(id)
        .part_number(1)
        .body(b"part".to_vec().into())
        .send()
        .await
        .expect("part");
    let done = n
        .client
        .complete_multipart_upload()
        .bucket(b)
        .key("logs/mp")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(part.e_tag().expect("etag"))
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    let head = head_says("logs/mp").await;
    assert!(
        head.as_deref()
            .is_some_and(|h| h.ends_with("rule-id=\"logs\"")),
        "{head:?}"
    );
    assert_eq!(done.expiration(), head.as_deref());
}

async fn boto3_manages_bucket_lifecycle(target: Target) {
    let n = TestNode::start(target);
    n.bucket("lcboto").await;
    let script = r#"
import sys, boto3, botocore
from botocore.config import Config
endpoint, key, secret = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                  aws_secret_access_key=secret, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
try:
    s3.get_bucket_lifecycle_configuration(Bucket="lcboto")
    raise SystemExit("expected NoSuchLifecycleConfiguration")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchLifecycleConfiguration", e.response
s3.put_bucket_lifecycle_configuration(Bucket="lcboto", LifecycleConfiguration={"Rules": [
    {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
     "Expiration": {"Days": 10},
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}},
    {"ID": "tmp", "Status": "Disabled",
     "Filter": {"And": {"Prefix": "tmp/", "Tags": [{"Key": "a", "Value": "b"}],
                         "ObjectSizeLessThan": 1024}},
     "Expiration": {"Days": 1}},
]})
rules = s3.get_bucket_lifecycle_configuration(Bucket="lcboto")["Rules"]
assert len(rules) == 2, rules
assert rules[0]["ID"] == "logs" and rules[0]["Filter"] == {"Prefix": "logs/"}, rules[0]
assert rules[0]["Expiration"] == {"Days": 10}, rules[0]
assert rules[0]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}, rules[0]
assert rules[1]["Status"] == "Disabled", rules[1]
assert rules[1]["Filter"]["And"]["Tags"] == [{"Key": "a", "Value": "b"}], rules[1]
assert rules[1]["Filter"]["And"]["ObjectSizeLessThan"] == 1024, rules[1]
try:
    s3.put_bucket_lifecycle_configuration(Bucket="lcboto", LifecycleConfiguration={"Rules": [
        {"ID": "x", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 0}}]})
    raise SystemExit("expected InvalidArgument")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidArgument", e.response
s3.delete_bucket_lifecycle(Bucket="lcboto")
try:
    s3.get_bucket_lifecycle_configuration(Bucket="lcboto")
    raise SystemExit("expected NoSuchLifecycleConfiguration")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchLifecycleConfiguration", e.response
print("ok")
"#;
    run_python(
        script,
        vec![
            n.endpoint(),
            crate::support::ACCESS_KEY.to_owned(),
            crate::support::SECRET_KEY.to_owned(),
        ],
    )
    .await;
}

/// `s3:GetLifecycleConfiguration` lets another user read the configuration; writing it
/// (Put and Delete) needs `s3:PutLifecycleConfiguration`, which the owner alone has here.
async fn policies_name_the_lifecycle_actions(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            users: &[ALICE],
            ..Options::default()
        },
    );
    let b = "lc-policy";
    n.bucket(b).await;
    let c = config(vec![
        rule("r", filter_prefix("x/"))
            .expiration(days(1))
            .build()
            .expect("rule"),
    ]);
    put_config(&n, b, c.clone()).await;
    let alice = n.client_as(&ALICE);
    let read = alice
        .get_bucket_lifecycle_configuration()
        .bucket(b)
        .send()
        .await;
    assert_code(read, 403, "AccessDenied");
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
        "Principal":{"AWS":["arn:aws:iam::000000000000:user/alice"]},
        "Action":"s3:GetLifecycleConfiguration","Resource":"arn:aws:s3:::lc-policy"}]}"#;
    n.client
        .put_bucket_policy()
        .bucket(b)
        .policy(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put policy: {}", show(&e)));
    let read = alice
        .get_bucket_lifecycle_configuration()
        .bucket(b)
        .send()
        .await
        .unwrap_or_else(|e| panic!("alice reads: {}", show(&e)));
    assert_eq!(read.rules().len(), 1);
    let write = alice
        .put_bucket_lifecycle_configuration()
        .bucket(b)
        .lifecycle_configuration(c)
        .send()
        .await;
    assert_code(write, 403, "AccessDenied");
    let delete = alice.delete_bucket_lifecycle().bucket(b).send().await;
    assert_code(delete, 403, "AccessDenied");
}

/// A node with a pass every second stops and starts again on its directory at once (the pass
/// in progress ends with the node, which closes its store), and keeps its configuration.
async fn the_worker_lets_the_node_restart(target: Target) {
    let mut n = TestNode::start_with(target, FAST);
    let b = "lc-restart";
    n.bucket(b).await;
    put_config(
        &n,
        b,
        config(vec![
            rule("gone", filter_prefix("gone/"))
                .expiration(days(1))
                .build()
                .expect("rule"),
        ]),
    )
    .await;
    n.put(b, "stay/a", b"a".to_vec()).await;
    for _ in 0..3 {
        n.restart();
    }
    let sentinel = sentinels(&n, b, "gone/", &["stay/a"]);
    for s in &sentinel {
        n.put(b, s, b"s".to_vec()).await;
    }
    n.put(b, "gone/x", b"x".to_vec()).await;
    let start = Instant::now();
    let mut left = keys(&n, b).await;
    while left.len() > 1 {
        assert!(
            start.elapsed() < DEADLINE,
            "not expired in time; left: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = keys(&n, b).await;
    }
    assert_eq!(left, ["stay/a"]);
}
