//! CORS: Put/Get/DeleteBucketCors with the AWS SDK and boto3, preflights (`OPTIONS`) and the
//! CORS headers of actual requests over raw HTTP, on a node and through the proxy.

use aws_sdk_s3::types::{CorsConfiguration, CorsRule};

use crate::support::http::{Client as Raw, Response, http_request};
use crate::support::sdk::{Target, TestNode, assert_code, show};

on_every_target!(
    bucket_cors_round_trip,
    bucket_cors_refuses_bad_rules,
    preflight_answers_from_the_rules,
    actual_requests_carry_cors_headers,
    boto3_manages_bucket_cors,
);

fn rule(origins: &[&str], methods: &[&str]) -> aws_sdk_s3::types::builders::CorsRuleBuilder {
    let mut r = CorsRule::builder();
    for o in origins {
        r = r.allowed_origins(*o);
    }
    for m in methods {
        r = r.allowed_methods(*m);
    }
    r
}

/// An app's rule (its origin and subdomains, with headers, exposed headers and a max age),
/// then anyone may GET.
fn app_config() -> CorsConfiguration {
    let app = rule(
        &["https://app.example", "https://*.app.example"],
        &["GET", "PUT", "HEAD"],
    )
    .id("app")
    .allowed_headers("x-amz-*")
    .allowed_headers("Content-Type")
    .expose_headers("ETag")
    .expose_headers("x-amz-request-id")
    .max_age_seconds(600)
    .build()
    .expect("rule");
    let anyone = rule(&["*"], &["GET"]).build().expect("rule");
    CorsConfiguration::builder()
        .cors_rules(app)
        .cors_rules(anyone)
        .build()
        .expect("config")
}

async fn put_config(n: &TestNode, bucket: &str, config: CorsConfiguration) {
    n.client
        .put_bucket_cors()
        .bucket(bucket)
        .cors_configuration(config)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put bucket cors: {}", show(&e)));
}

async fn bucket_cors_round_trip(target: Target) {
    let n = TestNode::start(target);
    n.bucket("cors").await;
    let none = n.client.get_bucket_cors().bucket("cors").send().await;
    assert_code(none, 404, "NoSuchCORSConfiguration");
    put_config(&n, "cors", app_config()).await;
    let got = n
        .client
        .get_bucket_cors()
        .bucket("cors")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get bucket cors: {}", show(&e)));
    let rules = got.cors_rules();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].id(), Some("app"));
    assert_eq!(
        rules[0].allowed_origins(),
        ["https://app.example", "https://*.app.example"]
    );
    assert_eq!(rules[0].allowed_methods(), ["GET", "PUT", "HEAD"]);
    assert_eq!(rules[0].allowed_headers(), ["x-amz-*", "Content-Type"]);
    assert_eq!(rules[0].expose_headers(), ["ETag", "x-amz-request-id"]);
    assert_eq!(rules[0].max_age_seconds(), Some(600));
    assert_eq!(rules[1].allowed_origins(), ["*"]);
    assert_eq!(rules[1].id(), None);
    assert_eq!(rules[1].max_age_seconds(), None);

    // A new configuration replaces the old one whole.
    let only = CorsConfiguration::builder()
        .cors_rules(
            rule(&["http://x.example"], &["DELETE"])
                .build()
                .expect("rule"),
        )
        .build()
        .expect("config");
    put_config(&n, "cors", only).await;
    let got = n.client.get_bucket_cors().bucket("cors").send().await;
    let got = got.unwrap_or_else(|e| panic!("get bucket cors: {}", show(&e)));
    assert_eq!(got.cors_rules().len(), 1);
    assert_eq!(got.cors_rules()[0].allowed_methods(), ["DELETE"]);

    n.client
        .delete_bucket_cors()
        .bucket("cors")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket cors: {}", show(&e)));
    let gone = n.client.get_bucket_cors().bucket("cors").send().await;
    assert_code(gone, 404, "NoSuchCORSConfiguration");
    // Deleting what is not there is no error, as in S3.
    let again = n.client.delete_bucket_cors().bucket("cors").send().await;
    again.unwrap_or_else(|e| panic!("delete bucket cors again: {}", show(&e)));

    let missing = n.client.get_bucket_cors().bucket("nobucket").send().await;
    assert_code(missing, 404, "NoSuchBucket");
    let missing = n
        .client
        .put_bucket_cors()
        .bucket("nobucket")
        .cors_configuration(app_config())
        .send()
        .await;
    assert_code(missing, 404, "NoSuchBucket");
}

async fn bucket_cors_refuses_bad_rules(target: Target) {
    let n = TestNode::start(target);
    n.bucket("strict").await;
    let one = |r: CorsRule| CorsConfiguration::builder().cors_rules(r).build();
    let put = |c: CorsConfiguration| {
        n.client
            .put_bucket_cors()
            .bucket("strict")
            .cors_configuration(c)
            .send()
    };
    let patch = rule(&["*"], &["PATCH"]).build().expect("rule");
    assert_code(
        put(one(patch).expect("config")).await,
        400,
        "InvalidRequest",
    );
    let two = rule(&["http://*.*.example"], &["GET"])
        .build()
        .expect("rule");
    assert_code(put(one(two).expect("config")).await, 400, "InvalidRequest");
    let header = rule(&["*"], &["GET"])
        .allowed_headers("x-*-*")
        .build()
        .expect("rule");
    assert_code(
        put(one(header).expect("config")).await,
        400,
        "InvalidRequest",
    );
    let many = (0..101).fold(CorsConfiguration::builder(), |c, _| {
        c.cors_rules(rule(&["*"], &["GET"]).build().expect("rule"))
    });
    assert_code(
        put(many.build().expect("config")).await,
        400,
        "MalformedXML",
    );
    // Nothing refused was stored.
    let none = n.client.get_bucket_cors().bucket("strict").send().await;
    assert_code(none, 404, "NoSuchCORSConfiguration");

    // Raw bodies: not XML, no rule, and the Content-MD5 S3 requires.
    let mut raw = Raw::connect(n.addr);
    let md5 = |b: &[u8]| {
        use md5::Digest as _;
        crate::support::sdk::b64(&md5::Md5::digest(b))
    };
    let junk = b"<CORSConfiguration><CORSRule>";
    let r = raw.request("PUT", "/strict?cors", &[("Content-MD5", &md5(junk))], junk);
    r.expect_error(400, "MalformedXML");
    let empty = b"<CORSConfiguration></CORSConfiguration>";
    let r = raw.request(
        "PUT",
        "/strict?cors",
        &[("Content-MD5", &md5(empty))],
        empty,
    );
    r.expect_error(400, "MalformedXML");
    let fine = b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>\
        <AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>";
    let r = raw.request("PUT", "/strict?cors", &[], fine);
    r.expect_error(400, "InvalidRequest");
    let big = vec![b' '; 64 * 1024 + 1];
    let r = raw.request("PUT", "/strict?cors", &[("Content-MD5", &md5(&big))], &big);
    assert_eq!(r.status, 400, "{}", r.text());
    let r = raw.request("PUT", "/strict?cors", &[("Content-MD5", &md5(fine))], fine);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// An anonymous preflight.
fn options(n: &TestNode, target: &str, headers: &[(&str, &str)]) -> Response {
    http_request(n.addr, "OPTIONS", target, headers, b"")
}

fn count(r: &Response, name: &str) -> usize {
    r.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .count()
}

const VARY: &str = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";

async fn preflight_answers_from_the_rules(target: Target) {
    let n = TestNode::start(target);
    n.bucket("web").await;
    n.bucket("plain").await;
    let app = [
        ("Origin", "https://app.example"),
        ("Access-Control-Request-Method", "PUT"),
    ];
    // No configuration yet (and, through the proxy, remembered as such for a while).
    options(&n, "/web/index.html", &app).expect_error(403, "AccessForbidden");
    put_config(&n, "web", app_config()).await;
    // A change through the proxy is seen by that proxy at once.
    let r = options(
        &n,
        "/web/index.html",
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "PUT"),
            ("Access-Control-Request-Headers", "Content-Type, X-Amz-Date"),
        ],
    );
    assert_eq!(r.status, 200, "{r:?} {}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    assert_eq!(r.header("Access-Control-Allow-Credentials"), Some("true"));
    assert_eq!(
        r.header("Access-Control-Allow-Methods"),
        Some("GET, PUT, HEAD")
    );
    assert_eq!(
        r.header("Access-Control-Allow-Headers"),
        Some("content-type, x-amz-date")
    );
    assert_eq!(
        r.header("Access-Control-Expose-Headers"),
        Some("ETag, x-amz-request-id")
    );
    assert_eq!(r.header("Access-Control-Max-Age"), Some("600"));
    assert_eq!(r.header("Vary"), Some(VARY));
    assert!(r.body.is_empty());

    // A subdomain through the wildcard; the bucket itself; a query the real request carries.
    let sub = [
        ("Origin", "https://a.b.app.example"),
        ("Access-Control-Request-Method", "HEAD"),
    ];
    for path in ["/web/k", "/web", "/web/", "/web/k?uploads"] {
        let r = options(&n, path, &sub);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(
            r.header("Access-Control-Allow-Origin"),
            Some("https://a.b.app.example")
        );
    }
    // Anyone may GET: the second rule answers `*`, no credentials, no max age.
    let r = options(
        &n,
        "/web/k",
        &[
            ("Origin", "http://elsewhere.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some("*"));
    assert_eq!(r.header("Access-Control-Allow-Methods"), Some("GET"));
    assert_eq!(r.header("Access-Control-Allow-Credentials"), None);
    assert_eq!(r.header("Access-Control-Max-Age"), None);

    // No rule: another origin's PUT, a header the app's rule does not allow, a method none
    // allows, the origin's case.
    let refused: [&[(&str, &str)]; 4] = [
        &[
            ("Origin", "http://elsewhere.example"),
            ("Access-Control-Request-Method", "PUT"),
        ],
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "PUT"),
            (
                "Access-Control-Request-Headers",
                "content-type, authorization",
            ),
        ],
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "DELETE"),
        ],
        &[
            ("Origin", "HTTPS://APP.EXAMPLE"),
            ("Access-Control-Request-Method", "PUT"),
        ],
    ];
    for hs in refused {
        let r = options(&n, "/web/k", hs);
        r.expect_error(403, "AccessForbidden");
        assert_eq!(r.header("Access-Control-Allow-Origin"), None, "{hs:?}");
    }
    // What a preflight must say, as S3 wants it.
    let r = options(&n, "/web/k", &[("Access-Control-Request-Method", "GET")]);
    r.expect_error(400, "BadRequest");
    let r = options(&n, "/web/k", &[("Origin", "https://app.example")]);
    r.expect_error(400, "BadRequest");
    // A bucket without CORS, one that does not exist.
    options(&n, "/plain/k", &app).expect_error(403, "AccessForbidden");
    options(&n, "/nobucket/k", &app).expect_error(403, "AccessForbidden");
    // The rules go with DeleteBucketCors.
    n.client
        .delete_bucket_cors()
        .bucket("web")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket cors: {}", show(&e)));
    options(&n, "/web/k", &app).expect_error(403, "AccessForbidden");
}

async fn actual_requests_carry_cors_headers(target: Target) {
    let n = TestNode::start(target);
    n.bucket("site").await;
    n.put("site", "page.html", b"<p>hi</p>".to_vec()).await;
    put_config(&n, "site", app_config()).await;
    let mut raw = Raw::connect(n.addr);
    let app = [("Origin", "https://app.example")];

    let r = raw.request("GET", "/site/page.html", &app, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, b"<p>hi</p>");
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    assert_eq!(
        r.header("Access-Control-Expose-Headers"),
        Some("ETag, x-amz-request-id")
    );
    assert_eq!(
        r.header("Access-Control-Allow-Methods"),
        Some("GET, PUT, HEAD")
    );
    assert_eq!(r.header("Vary"), Some(VARY));
    // Once each, even when a backend answered behind the proxy.
    for name in [
        "Access-Control-Allow-Origin",
        "Vary",
        "Access-Control-Max-Age",
    ] {
        assert_eq!(count(&r, name), 1, "{name}: {r:?}");
    }

    // Errors carry them too: a missing key, a listing's error, an unsigned request.
    let r = raw.request("GET", "/site/missing", &app, b"");
    r.expect_error(404, "NoSuchKey");
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    let r = raw.request("GET", "/site?list-type=2&max-keys=-1", &app, b"");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    let r = http_request(n.addr, "GET", "/site/page.html", &app, b"");
    r.expect_error(403, "AccessDenied");
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    assert_eq!(count(&r, "Vary"), 1);

    // A listing the proxy merges itself, a HEAD, a PUT: each method as its rule allows.
    let r = raw.request("GET", "/site?list-type=2", &app, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    let r = raw.request("HEAD", "/site/page.html", &app, b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    let r = raw.request("PUT", "/site/new.txt", &app, b"new");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    // Anyone's GET: `*` when anonymous, the origin itself (with credentials) when signed, as
    // S3 answers; anyone's DELETE: no rule, no headers (the request itself is served).
    let other = [("Origin", "http://elsewhere.example")];
    let r = http_request(n.addr, "GET", "/site/page.html", &other, b"");
    r.expect_error(403, "AccessDenied");
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some("*"));
    assert_eq!(r.header("Access-Control-Allow-Credentials"), None);
    let r = raw.request("GET", "/site/page.html", &other, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Access-Control-Allow-Origin"),
        Some("http://elsewhere.example")
    );
    assert_eq!(r.header("Access-Control-Allow-Credentials"), Some("true"));
    assert_eq!(r.header("Access-Control-Allow-Methods"), Some("GET"));
    let r = raw.request("DELETE", "/site/new.txt", &other, b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("Access-Control-Allow-Origin"), None);
    assert_eq!(r.header("Vary"), None);
    // Without an Origin: no CORS headers at all.
    let r = raw.get("/site/page.html");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Access-Control-Allow-Origin"), None);
    assert_eq!(r.header("Vary"), None);
    // A bucket without rules: none either.
    n.bucket("bare").await;
    let r = raw.request("GET", "/bare/none", &app, b"");
    r.expect_error(404, "NoSuchKey");
    assert_eq!(r.header("Access-Control-Allow-Origin"), None);
}

/// boto3, the second client: put, get and delete a configuration.
async fn boto3_manages_bucket_cors(target: Target) {
    let n = TestNode::start(target);
    let script = r#"
import sys
import boto3
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
c.create_bucket(Bucket="boto")
def code(f):
    try:
        f()
    except c.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    raise SystemExit("no error")
assert code(lambda: c.get_bucket_cors(Bucket="boto")) == "NoSuchCORSConfiguration"
rules = [
    {"ID": "one", "AllowedHeaders": ["*"], "AllowedMethods": ["PUT", "POST"],
     "AllowedOrigins": ["https://www.example.com"], "ExposeHeaders": ["x-amz-meta-a"],
     "MaxAgeSeconds": 3000},
    {"AllowedMethods": ["GET"], "AllowedOrigins": ["*"]},
]
c.put_bucket_cors(Bucket="boto", CORSConfiguration={"CORSRules": rules})
got = c.get_bucket_cors(Bucket="boto")["CORSRules"]
assert got == rules, got
bad = [{"AllowedMethods": ["TRACE"], "AllowedOrigins": ["*"]}]
assert code(lambda: c.put_bucket_cors(Bucket="boto", CORSConfiguration={"CORSRules": bad})) == "InvalidRequest"
c.delete_bucket_cors(Bucket="boto")
assert code(lambda: c.get_bucket_cors(Bucket="boto")) == "NoSuchCORSConfiguration"
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
