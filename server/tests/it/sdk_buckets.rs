//! Buckets through the AWS SDK for Rust, on a node and through the proxy, on both runtimes: create,
//! head, list (with pagination), location, versioning, delete, and their errors; authentication
//! failures, error documents, `/healthz`, and persistence across a restart.

use aws_credential_types::Credentials;
use aws_sdk_s3::Client;

use crate::support;
use crate::support::http::http_request;
use crate::support::sdk::{self, Target, TestNode, assert_code, assert_error, show, status_of};

on_every_target!(
    create_head_and_recreate,
    invalid_bucket_names,
    list_buckets_paginated,
    location_and_versioning,
    delete_bucket_and_errors,
    operations_on_missing_bucket,
    bad_credentials,
    error_documents_and_request_ids,
    healthz_without_auth,
    state_survives_restart,
    another_region,
    clock_skew,
);

async fn create_head_and_recreate(target: Target) {
    let n = TestNode::start(target);
    let out = n
        .client
        .create_bucket()
        .bucket("alpha")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    // S3 answers with the bucket's path in `Location`.
    assert_eq!(out.location(), Some("/alpha"));
    n.client
        .head_bucket()
        .bucket("alpha")
        .send()
        .await
        .unwrap_or_else(|e| panic!("head: {}", show(&e)));
    // Created again by its owner: 200 in us-east-1, as AWS answers there (409 elsewhere:
    // `sdk_aws_behaviours`).
    n.client
        .create_bucket()
        .bucket("alpha")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create again: {}", show(&e)));
    // HEAD errors have no body: the SDK names a 404 `NotFound` from the status alone.
    assert_code(
        n.client.head_bucket().bucket("missing").send().await,
        404,
        "NotFound",
    );
}

async fn invalid_bucket_names(target: Target) {
    let n = TestNode::start(target);
    for name in [
        "ab",
        "Upper",
        "under_score",
        "-dash",
        "dash-",
        "two..dots",
        "192.168.1.1",
        &"x".repeat(64),
    ] {
        let r = n.client.create_bucket().bucket(name).send().await;
        assert_code(r, 400, "InvalidBucketName");
    }
    // The longest and shortest legal names are fine.
    n.bucket(&"y".repeat(63)).await;
    n.bucket("abc").await;
    n.bucket("a.b-c.9").await;
}

async fn list_buckets_paginated(target: Target) {
    let n = TestNode::start(target);
    let names = [
        "bkt-07", "bkt-01", "zeta", "bkt-03", "alpha", "bkt-10", "bkt-02",
    ];
    for b in names {
        n.bucket(b).await;
    }
    let mut sorted: Vec<&str> = names.to_vec();
    sorted.sort_unstable();

    let all = n
        .client
        .list_buckets()
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    let got: Vec<&str> = all.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(got, sorted);
    assert!(all.buckets().iter().all(|b| b.creation_date().is_some()));
    assert!(all.owner().and_then(|o| o.id()).is_some(), "owner id");
    assert_eq!(all.continuation_token(), None);

    // Pages of 3 with continuation tokens, concatenated, give the same list.
    let mut paged = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = n
            .client
            .list_buckets()
            .max_buckets(3)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list page: {}", show(&e)));
        pages += 1;
        assert!(page.buckets().len() <= 3);
        paged.extend(
            page.buckets()
                .iter()
                .filter_map(|b| b.name().map(str::to_owned)),
        );
        match page.continuation_token() {
            Some(t) => {
                assert!(!t.is_empty());
                token = Some(t.to_owned());
            }
            None => break,
        }
        assert!(pages < 10, "pagination does not end");
    }
    assert_eq!(paged, sorted);
    assert_eq!(pages, 3);

    // The SDK's own paginator agrees.
    let mut stream = n
        .client
        .list_buckets()
        .max_buckets(2)
        .into_paginator()
        .send();
    let mut via_paginator = Vec::new();
    while let Some(page) = stream.next().await {
        let page = page.unwrap_or_else(|e| panic!("paginator: {}", show(&e)));
        via_paginator.extend(
            page.buckets()
                .iter()
                .filter_map(|b| b.name().map(str::to_owned)),
        );
    }
    assert_eq!(via_paginator, sorted);

    // Prefix filter.
    let p = n
        .client
        .list_buckets()
        .prefix("bkt-0")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list prefix: {}", show(&e)));
    let got: Vec<&str> = p.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(got, ["bkt-01", "bkt-02", "bkt-03", "bkt-07"]);
    assert_eq!(p.prefix(), Some("bkt-0"));
}

async fn location_and_versioning(target: Target) {
    let n = TestNode::start(target);
    n.bucket("loc").await;
    let loc = n
        .client
        .get_bucket_location()
        .bucket("loc")
        .send()
        .await
        .unwrap_or_else(|e| panic!("location: {}", show(&e)));
    // S3 documents a null (empty) LocationConstraint for us-east-1.
    let constraint = loc.location_constraint().map(|c| c.as_str().to_owned());
    assert!(
        constraint.as_deref().is_none_or(str::is_empty),
        "us-east-1 has an empty constraint, got {constraint:?}"
    );
    let v = n
        .client
        .get_bucket_versioning()
        .bucket("loc")
        .send()
        .await
        .unwrap_or_else(|e| panic!("versioning: {}", show(&e)));
    // Never enabled: neither Status nor MfaDelete.
    assert_eq!(v.status(), None);
    assert_eq!(v.mfa_delete(), None);

    assert_code(
        n.client.get_bucket_location().bucket("nope").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        n.client.get_bucket_versioning().bucket("nope").send().await,
        404,
        "NoSuchBucket",
    );
}

async fn delete_bucket_and_errors(target: Target) {
    let n = TestNode::start(target);
    n.bucket("full").await;
    n.put("full", "k", b"x".to_vec()).await;
    assert_code(
        n.client.delete_bucket().bucket("full").send().await,
        409,
        "BucketNotEmpty",
    );
    n.client
        .delete_object()
        .bucket("full")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete object: {}", show(&e)));
    n.client
        .delete_bucket()
        .bucket("full")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket: {}", show(&e)));
    assert_error(
        n.client.head_bucket().bucket("full").send().await,
        404,
        None,
    );
    assert_code(
        n.client.delete_bucket().bucket("full").send().await,
        404,
        "NoSuchBucket",
    );
    let listed = n
        .client
        .list_buckets()
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    assert!(listed.buckets().is_empty());
    // The name is free again.
    n.bucket("full").await;
    let objects = n
        .client
        .list_objects_v2()
        .bucket("full")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list objects: {}", show(&e)));
    assert_eq!(objects.key_count(), Some(0));
    assert!(objects.contents().is_empty());
}

async fn operations_on_missing_bucket(target: Target) {
    let n = TestNode::start(target);
    let c = &n.client;
    assert_code(
        c.put_object().bucket("ghost").key("k").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.get_object().bucket("ghost").key("k").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.delete_object().bucket("ghost").key("k").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.list_objects_v2().bucket("ghost").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.list_objects().bucket("ghost").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.create_multipart_upload()
            .bucket("ghost")
            .key("k")
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.list_multipart_uploads().bucket("ghost").send().await,
        404,
        "NoSuchBucket",
    );
    assert_error(
        c.head_object().bucket("ghost").key("k").send().await,
        404,
        None,
    );
}

async fn bad_credentials(target: Target) {
    let n = TestNode::start(target);
    n.bucket("auth").await;
    let with = |ak: &str, sk: &str| {
        let conf = sdk::config(n.addr)
            .credentials_provider(Credentials::new(ak, sk, None, None, "wrong"))
            .build();
        Client::from_conf(conf)
    };
    let wrong_secret = with(support::ACCESS_KEY, "not-the-secret");
    assert_code(
        wrong_secret.list_buckets().send().await,
        403,
        "SignatureDoesNotMatch",
    );
    assert_code(
        wrong_secret
            .put_object()
            .bucket("auth")
            .key("k")
            .body(b"data".to_vec().into())
            .send()
            .await,
        403,
        "SignatureDoesNotMatch",
    );
    let unknown = with("AKIAUNKNOWNKEY000000", support::SECRET_KEY);
    assert_code(
        unknown.list_objects_v2().bucket("auth").send().await,
        403,
        "InvalidAccessKeyId",
    );
    // Signed for another region.
    let conf = sdk::config(n.addr)
        .region(aws_sdk_s3::config::Region::new("eu-west-1"))
        .build();
    let other_region = Client::from_conf(conf);
    assert_code(
        other_region.list_buckets().send().await,
        400,
        "AuthorizationHeaderMalformed",
    );
    // Nothing was written by the refused PUT.
    assert_code(
        n.client.get_object().bucket("auth").key("k").send().await,
        404,
        "NoSuchKey",
    );
}

async fn error_documents_and_request_ids(target: Target) {
    let n = TestNode::start(target);
    n.bucket("docs").await;
    // Anonymous requests are refused with an S3 error document.
    let r = http_request(n.addr, "GET", "/docs?list-type=2", &[], b"");
    assert_eq!(r.status, 403, "{r:?}");
    let body = String::from_utf8(r.body.clone()).expect("UTF-8 error body");
    assert!(body.contains("<Error>"), "{body}");
    assert!(body.contains("<Code>AccessDenied</Code>"), "{body}");
    assert!(body.contains("<Message>"), "{body}");
    assert!(body.contains("<RequestId>"), "{body}");
    let id = r.header("x-amz-request-id").expect("x-amz-request-id");
    assert!(!id.is_empty());
    assert!(
        body.contains(&format!("<RequestId>{id}</RequestId>")),
        "{body}"
    );
    assert!(
        r.header("content-type").is_some_and(|t| t.contains("xml")),
        "{r:?}"
    );

    // Signed errors carry Resource and a request id the SDK sees.
    let e = n
        .client
        .get_object()
        .bucket("docs")
        .key("no/such key")
        .send()
        .await
        .expect_err("missing key");
    let raw = e.raw_response().expect("response");
    let xml = String::from_utf8(raw.body().bytes().expect("body").to_vec()).expect("UTF-8");
    assert!(xml.contains("<Code>NoSuchKey</Code>"), "{xml}");
    assert!(xml.contains("<Resource>"), "{xml}");
    assert!(raw.headers().get("x-amz-request-id").is_some());

    // Successful responses carry a request id too, each a different one.
    let a = n
        .client
        .head_bucket()
        .bucket("docs")
        .send()
        .await
        .expect("head");
    let b = n
        .client
        .head_bucket()
        .bucket("docs")
        .send()
        .await
        .expect("head");
    use aws_sdk_s3::operation::RequestId;
    let (ia, ib) = (a.request_id(), b.request_id());
    assert!(ia.is_some() && ib.is_some());
    assert_ne!(ia, ib);
}

async fn healthz_without_auth(target: Target) {
    let n = TestNode::start(target);
    let r = http_request(n.addr, "GET", "/healthz", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"ok");
    assert!(r.header("x-amz-request-id").is_some());
}

async fn state_survives_restart(target: Target) {
    let mut n = TestNode::start(target);
    n.bucket("durable").await;
    n.bucket("second").await;
    let data = sdk::pattern(300_000, 7);
    n.put("durable", "dir/obj", data.clone()).await;
    n.restart();
    let listed = n.client.list_buckets().send().await.expect("list");
    let got: Vec<&str> = listed.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(got, ["durable", "second"]);
    assert_eq!(n.get("durable", "dir/obj").await, data);
}

async fn another_region(target: Target) {
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
    let n = TestNode::start_with(
        target,
        sdk::Options {
            region: "eu-west-1",
            ..sdk::Options::default()
        },
    );
    // Outside us-east-1, S3 clients name the region in the request body.
    n.client
        .create_bucket()
        .bucket("euro")
        .create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::EuWest1)
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("create in eu-west-1: {}", show(&e)));
    let loc = n
        .client
        .get_bucket_location()
        .bucket("euro")
        .send()
        .await
        .expect("location");
    assert_eq!(
        loc.location_constraint(),
        Some(&BucketLocationConstraint::EuWest1)
    );
    let head = n
        .client
        .head_bucket()
        .bucket("euro")
        .send()
        .await
        .expect("head");
    assert_eq!(head.bucket_region(), Some("eu-west-1"));
    // Requests signed for us-east-1 do not authenticate here.
    let wrong = sdk::client(n.addr);
    let e = wrong
        .list_buckets()
        .send()
        .await
        .expect_err("signed for another region");
    assert_eq!(status_of(&e), Some(400), "{}", show(&e));
    assert_eq!(
        aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
        Some("AuthorizationHeaderMalformed"),
        "{}",
        show(&e)
    );
    // A constraint naming another region than the endpoint's is refused.
    assert_code(
        n.client
            .create_bucket()
            .bucket("elsewhere")
            .create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::ApSouth1)
                    .build(),
            )
            .send()
            .await,
        400,
        "IllegalLocationConstraintException",
    );
}

async fn clock_skew(target: Target) {
    use std::time::{Duration, SystemTime};
    let n = TestNode::start(target);
    n.bucket("skew").await;
    let url = format!("{}/skew?list-type=2", n.endpoint());
    let at = |offset: i64| {
        let now = SystemTime::now();
        let t = if offset < 0 {
            now - Duration::from_secs(offset.unsigned_abs())
        } else {
            now + Duration::from_secs(offset as u64)
        };
        sdk::sign_headers_at("GET", &url, t)
    };
    let get = |headers: Vec<(String, String)>| async move {
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        http_request(n.addr, "GET", "/skew?list-type=2", &h, b"")
    };
    // Within S3's 15 minutes either way: accepted.
    for offset in [0, -600, 600] {
        let r = get(at(offset)).await;
        assert_eq!(r.status, 200, "offset {offset}: {r:?}");
    }
    // Beyond them: RequestTimeTooSkewed.
    for offset in [-1200, 1200] {
        let r = get(at(offset)).await;
        assert_eq!(r.status, 403, "offset {offset}: {r:?}");
        assert!(
            String::from_utf8_lossy(&r.body).contains("<Code>RequestTimeTooSkewed</Code>"),
            "offset {offset}: {r:?}"
        );
    }
}
