//! Presigned URLs made by the AWS SDK for Rust (`presigned(PresigningConfig)`) and fetched by a
//! plain HTTP/1.1 client written in the test, on a node and through the proxy, on both runtimes:
//! GET and PUT, expiry honoured, tampering refused, and the seven-day limit enforced by the SDK and
//! by the server.

use std::time::{Duration, SystemTime};

use aws_sdk_s3::presigning::{PresignedRequest, PresigningConfig};

use crate::support;
use crate::support::http::{Response, http_request, target_of, wait_until};
use crate::support::sdk::{self, Target, TestNode, etag_of, pattern, show};

on_every_target!(
    presigned_get,
    presigned_put,
    presigned_expiry,
    seven_day_limit,
    tampered_urls_refused,
    unsigned_headers_refused,
);

const WEEK: u64 = 7 * 24 * 3600;

/// Fetch a presigned request with the raw client, sending the headers it was signed with.
async fn fetch(n: &TestNode, req: &PresignedRequest, body: &[u8]) -> Response {
    let headers: Vec<(&str, &str)> = req.headers().collect();
    http_request(n.addr, req.method(), target_of(req.uri()), &headers, body)
}

fn xml_code(r: &Response) -> String {
    let body = String::from_utf8_lossy(&r.body);
    body.split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map(|(code, _)| code.to_owned())
        .unwrap_or_else(|| panic!("no <Code> in {body}"))
}

async fn presigned_get(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pre").await;
    let key = "dir/some key ü+.bin";
    let data = pattern(123_456, 30);
    n.put("pre", key, data.clone()).await;
    let req = n
        .client
        .get_object()
        .bucket("pre")
        .key(key)
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .unwrap_or_else(|e| panic!("presign: {}", show(&e)));
    assert_eq!(req.method(), "GET");
    assert!(req.uri().starts_with(&n.endpoint()), "{}", req.uri());
    assert!(req.uri().contains("X-Amz-Signature="), "{}", req.uri());
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body, data);
    assert_eq!(r.header("etag"), Some(etag_of(&data).as_str()));
    // The URL can be used again until it expires.
    let again = fetch(&n, &req, b"").await;
    assert_eq!(again.status, 200);

    // Response overrides are part of the signed query.
    let req = n
        .client
        .get_object()
        .bucket("pre")
        .key(key)
        .response_content_type("application/x-presigned")
        .response_content_disposition("attachment")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .expect("presign with overrides");
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/x-presigned"));
    assert_eq!(r.header("content-disposition"), Some("attachment"));

    // A presigned Range GET (the Range header is not signed, so it may be added).
    let req = n
        .client
        .get_object()
        .bucket("pre")
        .key(key)
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .expect("presign");
    let r = http_request(
        n.addr,
        "GET",
        target_of(req.uri()),
        &[("Range", "bytes=100-199")],
        b"",
    );
    assert_eq!(r.status, 206, "{r:?}");
    assert_eq!(r.body, &data[100..200]);

    // A presigned HEAD.
    let req = n
        .client
        .head_object()
        .bucket("pre")
        .key(key)
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .expect("presign head");
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-length"), Some("123456"));
}

async fn presigned_put(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pre").await;
    let data = pattern(65_537, 31);
    let req = n
        .client
        .put_object()
        .bucket("pre")
        .key("uploaded via url")
        .content_type("text/x-presigned")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .unwrap_or_else(|e| panic!("presign put: {}", show(&e)));
    assert_eq!(req.method(), "PUT");
    // The content type was signed: the SDK asks for it as a header.
    assert!(
        req.headers()
            .any(|(n, v)| n.eq_ignore_ascii_case("content-type") && v == "text/x-presigned"),
        "{:?}",
        req.headers().collect::<Vec<_>>()
    );
    let r = fetch(&n, &req, &data).await;
    assert_eq!(r.status, 200, "{r:?} {}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("etag"), Some(etag_of(&data).as_str()));
    let got = n
        .client
        .get_object()
        .bucket("pre")
        .key("uploaded via url")
        .send()
        .await
        .expect("get");
    assert_eq!(got.content_type(), Some("text/x-presigned"));
    assert_eq!(sdk::body_bytes(got.body).await, data);

    // Another content type than the signed one breaks the signature.
    let target = target_of(req.uri()).to_owned();
    let r = http_request(
        n.addr,
        "PUT",
        &target,
        &[("Content-Type", "text/other")],
        b"x",
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(xml_code(&r), "SignatureDoesNotMatch");
    assert_eq!(n.get("pre", "uploaded via url").await, data);

    // A PUT with no Content-Type at all (the SDK always sends one; a URL need not) gets S3's
    // default, binary/octet-stream.
    let req = n
        .client
        .put_object()
        .bucket("pre")
        .key("untyped")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .expect("presign put");
    assert!(
        !req.headers()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type")),
        "{:?}",
        req.headers().collect::<Vec<_>>()
    );
    let r = fetch(&n, &req, b"untyped body").await;
    assert_eq!(r.status, 200, "{r:?}");
    let head = n
        .client
        .head_object()
        .bucket("pre")
        .key("untyped")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_type(), Some("binary/octet-stream"));
}

async fn presigned_expiry(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pre").await;
    n.put("pre", "k", b"value".to_vec()).await;
    let presign = |start: SystemTime, secs: u64| {
        n.client.get_object().bucket("pre").key("k").presigned(
            PresigningConfig::builder()
                .start_time(start)
                .expires_in(Duration::from_secs(secs))
                .build()
                .expect("config"),
        )
    };
    let now = SystemTime::now();
    // Signed two hours ago, valid for one minute: expired.
    let req = presign(now - Duration::from_secs(7200), 60)
        .await
        .expect("presign");
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(xml_code(&r), "AccessDenied");
    // Signed two hours ago, valid for three: fine (expiry counts from X-Amz-Date).
    let req = presign(now - Duration::from_secs(7200), 3 * 3600)
        .await
        .expect("presign");
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body, b"value");
    // Valid for one second: usable at once, refused once the second is over (served until
    // then; the 20 s bound a hang guard, when the expiry comes not asserted).
    let req = presign(SystemTime::now(), 1).await.expect("presign");
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    let headers: Vec<(&str, &str)> = req.headers().collect();
    let mut last = None;
    wait_until(
        "the 1 s presigned URL expires",
        Duration::from_secs(20),
        || {
            let r = http_request(n.addr, req.method(), target_of(req.uri()), &headers, b"");
            let expired = r.status != 200;
            last = Some(r);
            expired
        },
    );
    let r = last.expect("a response");
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(xml_code(&r), "AccessDenied");
}

/// Presign a GET with `aws-sigv4` directly, which (unlike the SDK) allows any expiry.
fn presign_with_sigv4(endpoint: &str, path: &str, expires: Duration) -> String {
    use aws_sigv4::http_request::{
        PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
        UriPathNormalizationMode, sign,
    };
    use aws_sigv4::sign::v4;
    let identity = aws_credential_types::Credentials::new(
        support::ACCESS_KEY,
        support::SECRET_KEY,
        None,
        None,
        "sigv4",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(expires);
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(support::REGION)
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let url = format!("{endpoint}{path}");
    let request = SignableRequest::new(
        "GET",
        url.as_str(),
        std::iter::empty(),
        SignableBody::UnsignedPayload,
    )
    .expect("signable request");
    let (instructions, _signature) = sign(request, &params).expect("sign").into_parts();
    let (headers, query) = instructions.into_parts();
    assert!(headers.is_empty(), "query signing adds no headers");
    let query: Vec<String> = query
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
            )
        })
        .collect();
    format!("{path}?{}", query.join("&"))
}

async fn seven_day_limit(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pre").await;
    n.put("pre", "k", b"week".to_vec()).await;
    // The SDK refuses to presign for more than seven days.
    assert!(PresigningConfig::expires_in(Duration::from_secs(WEEK + 1)).is_err());
    // Exactly seven days is allowed and works.
    let req = n
        .client
        .get_object()
        .bucket("pre")
        .key("k")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(WEEK)).expect("config"))
        .await
        .expect("presign a week");
    let r = fetch(&n, &req, b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body, b"week");

    // The same check with aws-sigv4 directly: a week passes, a week and a second does not.
    let ok = presign_with_sigv4(&n.endpoint(), "/pre/k", Duration::from_secs(WEEK));
    let r = http_request(n.addr, "GET", &ok, &[], b"");
    assert_eq!(r.status, 200, "{r:?} {}", String::from_utf8_lossy(&r.body));
    let too_long = presign_with_sigv4(&n.endpoint(), "/pre/k", Duration::from_secs(WEEK + 1));
    assert!(too_long.contains("X-Amz-Expires=604801"), "{too_long}");
    let r = http_request(n.addr, "GET", &too_long, &[], b"");
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(xml_code(&r), "AuthorizationQueryParametersError");
}

async fn tampered_urls_refused(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pre").await;
    n.put("pre", "secret", b"s".to_vec()).await;
    n.put("pre", "other", b"o".to_vec()).await;
    let req = n
        .client
        .get_object()
        .bucket("pre")
        .key("secret")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).expect("config"))
        .await
        .expect("presign");
    let target = target_of(req.uri()).to_owned();
    // Another key with the same signature.
    let r = http_request(
        n.addr,
        "GET",
        &target.replace("/secret?", "/other?"),
        &[],
        b"",
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(xml_code(&r), "SignatureDoesNotMatch");
    // A flipped signature digit.
    let (head, sig) = target.split_once("X-Amz-Signature=").expect("signature");
    let flipped: String = sig
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                if c == '0' { '1' } else { '0' }
            } else {
                c
            }
        })
        .collect();
    let r = http_request(
        n.addr,
        "GET",
        &format!("{head}X-Amz-Signature={flipped}"),
        &[],
        b"",
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(xml_code(&r), "SignatureDoesNotMatch");
    // A longer expiry than signed.
    let longer = target.replace("X-Amz-Expires=300", "X-Amz-Expires=3000");
    assert_ne!(longer, target);
    let r = http_request(n.addr, "GET", &longer, &[], b"");
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(xml_code(&r), "SignatureDoesNotMatch");
    // A presigned GET does not authorise a PUT.
    let r = http_request(n.addr, "PUT", &target, &[], b"overwrite");
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(n.get("pre", "secret").await, b"s");
}

/// A presigned PUT or UploadPart URL with an added, unsigned `x-amz-*` header (a copy source,
/// metadata, a directive) is refused, and nothing is written or copied: the header would turn
/// the URL into a request its owner never signed.
async fn unsigned_headers_refused(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pre").await;
    let secret = pattern(4_000, 7);
    n.put("pre", "secret", secret.clone()).await;
    let config = || PresigningConfig::expires_in(Duration::from_secs(300)).expect("config");
    let put = n
        .client
        .put_object()
        .bucket("pre")
        .key("dst")
        .presigned(config())
        .await
        .expect("presign put");
    let target_put = target_of(put.uri()).to_owned();
    for extra in [
        ("x-amz-copy-source", "pre/secret"),
        ("x-amz-meta-owner", "mallory"),
        ("x-amz-metadata-directive", "REPLACE"),
        ("x-amz-server-side-encryption", "AES256"),
    ] {
        let r = http_request(n.addr, "PUT", &target_put, &[extra], b"");
        assert_eq!(r.status, 403, "{extra:?}: {r:?}");
        assert_eq!(xml_code(&r), "AccessDenied", "{extra:?}");
        assert!(
            String::from_utf8_lossy(&r.body).contains("not signed"),
            "{extra:?}: {r:?}"
        );
    }
    let missing = n.client.head_object().bucket("pre").key("dst").send().await;
    sdk::assert_error(missing, 404, None);

    // A presigned UploadPart URL does not become UploadPartCopy either.
    let up = n
        .client
        .create_multipart_upload()
        .bucket("pre")
        .key("mp")
        .send()
        .await
        .expect("create upload");
    let upload_id = up.upload_id().expect("upload id");
    let part = n
        .client
        .upload_part()
        .bucket("pre")
        .key("mp")
        .upload_id(upload_id)
        .part_number(1)
        .presigned(config())
        .await
        .expect("presign part");
    let r = http_request(
        n.addr,
        "PUT",
        target_of(part.uri()),
        &[("x-amz-copy-source", "pre/secret")],
        b"",
    );
    assert_eq!((r.status, xml_code(&r).as_str()), (403, "AccessDenied"));
    let parts = n
        .client
        .list_parts()
        .bucket("pre")
        .key("mp")
        .upload_id(upload_id)
        .send()
        .await
        .expect("list parts");
    assert!(parts.parts().is_empty(), "{parts:?}");
    // The URL itself still works as signed.
    let r = fetch(&n, &put, b"as signed").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(n.get("pre", "dst").await, b"as signed");
}
