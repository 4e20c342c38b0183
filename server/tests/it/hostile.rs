//! Hostile tenants (issue 30 §3), on a node and through the proxy, on both runtimes: one user
//! (or an anonymous client, or the holder of a presigned URL or a form) attacking another's
//! bucket, table by table. Each row is one request — who sends it, what it is, the exact
//! status and S3 code it must get — and each category ends by reading the victim's state back
//! (as its owner) and comparing it, byte for byte, with what it was before the attack.
//!
//! Categories, a test each: cross-user access to every operation, Ferry's internal headers and
//! parameters from clients, presigned URL tampering (SigV4 and SigV2), POST form tricks,
//! object-lock bypass attempts, and policy conditions that must deny. `hostile_case_count`
//! counts the rows of every table (built as each test builds them) and asserts at least 300
//! per target.
//!
//! Rows are plain HTTP/1.1 requests (`support::http`), signed with SigV4 by the user they name,
//! or unsigned: an anonymous client, or whoever holds a presigned URL or a form. With
//! `HOSTILE_DEBUG` set (and `--nocapture`), every row's answer is printed.

use std::net::SocketAddr;

use ferry_core::s3::sigv2;
use ferry_core::s3::sigv4::{Credentials, RequestParts};
use ferry_core::time::DateTime;
use md5::{Digest as _, Md5};
use serde_json::json;

use crate::support::http::{Client, Response, http_request, now, presign_target, xml_values};
use crate::support::sdk::{Options, Target, TestNode, b64, md5_hex};
use crate::support::{self, ACCESS_KEY, ALICE, BOB, SECRET_KEY, TestUser};

on_every_target!(
    cross_user_access,
    internal_headers_and_parameters,
    presigned_url_tampering,
    post_form_tricks,
    object_lock_bypass,
    policy_conditions_deny,
    hostile_case_count,
);

// ---------------------------------------------------------------------------------------------
// Rows and how they are run.

/// Who sends a row's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// The victim, the owner of the buckets attacked (where the row is about what even the
    /// owner may not do).
    Alice,
    /// Another user.
    Bob,
    /// The servers' primary user, a third account.
    Admin,
    /// No signature at all.
    Anonymous,
    /// Unsigned, but carrying a presigned URL's or a form's signature (alice's, unless the row
    /// says otherwise).
    Holder,
}

impl Who {
    fn key(self) -> Option<Credentials> {
        match self {
            Self::Alice => Some(Credentials::new(ALICE.access_key, ALICE.secret_key)),
            Self::Bob => Some(Credentials::new(BOB.access_key, BOB.secret_key)),
            Self::Admin => Some(Credentials::new(ACCESS_KEY, SECRET_KEY)),
            Self::Anonymous | Self::Holder => None,
        }
    }
}

/// A request of a row.
#[derive(Debug, Clone)]
struct Req {
    /// What it attempts, for failure messages.
    what: String,
    method: &'static str,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn req(what: impl Into<String>, method: &'static str, target: impl Into<String>) -> Req {
    Req {
        what: what.into(),
        method,
        target: target.into(),
        headers: Vec::new(),
        body: Vec::new(),
    }
}

impl Req {
    fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn headers(mut self, headers: &[(String, String)]) -> Self {
        self.headers.extend_from_slice(headers);
        self
    }

    fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// An XML (or JSON) body, with the `Content-MD5` S3 asks of some of them.
    fn xml(self, body: &str) -> Self {
        let md5 = content_md5(body.as_bytes());
        self.header("Content-MD5", &md5).body(body)
    }

    /// Named `what` in failure messages, and in the row's label.
    fn named(mut self, what: impl Into<String>) -> Self {
        self.what = what.into();
        self
    }
}

/// What a row must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// This status and S3 error code, in a well-formed error document.
    Error(u16, &'static str),
    /// This status, without a body (a HEAD).
    Status(u16),
    /// 403, `SignatureDoesNotMatch` or `AccessDenied` (a tampered presigned URL: which one
    /// depends on what was changed, and both refuse it).
    Denied,
    /// DeleteObjects: 200 with nothing deleted and every key refused with this code.
    KeyErrors(&'static str),
    /// 200, and the body does not name this (a listing that must not show another's bucket).
    OkWithout(&'static str),
}

const ACCESS_DENIED: Expect = Expect::Error(403, "AccessDenied");

/// `AccessDenied`, or a bare 403 for a HEAD.
fn refused(r: &Req) -> Expect {
    if r.method == "HEAD" {
        Expect::Status(403)
    } else {
        ACCESS_DENIED
    }
}

#[derive(Debug, Clone)]
struct Row {
    who: Who,
    req: Req,
    expect: Expect,
}

fn row(who: Who, req: Req, expect: Expect) -> Row {
    Row { who, req, expect }
}

/// Send `r` as `who`, on a connection of its own.
fn send(addr: SocketAddr, who: Who, r: &Req) -> Response {
    let headers: Vec<(&str, &str)> = r
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    match who.key() {
        Some(key) => {
            let mut c = Client::connect(addr);
            c.credentials = key;
            c.request(r.method, &r.target, &headers, &r.body)
        }
        None => http_request(addr, r.method, &r.target, &headers, &r.body),
    }
}

/// Whether `r` is what `e` says.
fn check(r: &Response, e: Expect) -> Result<(), String> {
    let code = r.error_code();
    let ok = match e {
        Expect::Error(status, want) => {
            r.status == status
                && code.as_deref() == Some(want)
                && r.header("x-amz-request-id").is_some()
        }
        Expect::Status(status) => r.status == status,
        Expect::Denied => {
            r.status == 403
                && matches!(
                    code.as_deref(),
                    Some("AccessDenied" | "SignatureDoesNotMatch")
                )
        }
        Expect::KeyErrors(want) => {
            let codes = r.xml_values("Code");
            r.status == 200
                && !r.text().contains("<Deleted>")
                && !codes.is_empty()
                && codes.iter().all(|c| c == want)
        }
        Expect::OkWithout(absent) => r.status == 200 && !r.text().contains(absent),
    };
    if ok {
        return Ok(());
    }
    let mut text = r.text();
    text.truncate(400);
    Err(format!("expected {e:?}, got {} {text}", r.status))
}

/// Run every row; the failures, each naming its category, row and request.
fn run(addr: SocketAddr, category: &str, rows: &[Row]) -> Vec<String> {
    let mut failures = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let r = send(addr, row.who, &row.req);
        if std::env::var_os("HOSTILE_DEBUG").is_some() {
            let msg = xml_values(&r.text(), "Message").join(" ");
            println!(
                "#{i} {:?} {}: {} {:?} {msg}",
                row.who,
                row.req.what,
                r.status,
                r.error_code()
            );
        }
        if let Err(e) = check(&r, row.expect) {
            failures.push(format!(
                "{category} #{i} {:?} {} ({} {}): {e}",
                row.who, row.req.what, row.req.method, row.req.target
            ));
        }
    }
    println!("{category}: {} hostile cases", rows.len());
    failures
}

/// Send `r` as `who` for a test's setup or a positive check: it must succeed.
fn ok(addr: SocketAddr, who: Who, r: Req) -> Response {
    let got = send(addr, who, &r);
    assert!(
        (200..300).contains(&got.status),
        "{who:?} {} ({} {}): {} {}",
        r.what,
        r.method,
        r.target,
        got.status,
        got.text()
    );
    got
}

/// Fail with every row that failed and, if the state changed, how.
fn finish(category: &str, mut failures: Vec<String>, before: &[String], after: &[String]) {
    if before != after {
        let gone: Vec<&String> = before.iter().filter(|l| !after.contains(l)).collect();
        let new: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
        failures.push(format!(
            "{category}: the victim's state changed:\n  before: {gone:#?}\n  after: {new:#?}"
        ));
    }
    assert!(
        failures.is_empty(),
        "{category}: {} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A read of the victim's state.
type Read = (Who, &'static str, String);

/// The answers to `reads`, one line each: the status, the headers that describe an object, and
/// the body (text as it is, bytes by their digest), or an error's code.
fn snapshot(addr: SocketAddr, reads: &[Read]) -> Vec<String> {
    const KEPT: &[&str] = &[
        "etag",
        "last-modified",
        "content-length",
        "content-type",
        "x-amz-version-id",
        "x-amz-delete-marker",
        "x-amz-tagging-count",
        "x-amz-server-side-encryption",
        "x-amz-object-lock-mode",
        "x-amz-object-lock-retain-until-date",
        "x-amz-object-lock-legal-hold",
        "x-amz-website-redirect-location",
    ];
    reads
        .iter()
        .map(|(who, method, target)| {
            let r = send(addr, *who, &req("read", method, target.as_str()));
            let mut line = format!("{who:?} {method} {target} -> {}", r.status);
            if r.status >= 300 {
                line.push_str(&format!(" {:?}", r.error_code()));
                return line;
            }
            let mut headers: Vec<String> = r
                .headers
                .iter()
                .map(|(n, v)| (n.to_ascii_lowercase(), v))
                .filter(|(n, _)| KEPT.contains(&n.as_str()) || n.starts_with("x-amz-meta-"))
                .map(|(n, v)| format!("{n}: {v}"))
                .collect();
            headers.sort();
            line.push_str(&format!(" {headers:?} "));
            match std::str::from_utf8(&r.body) {
                Ok(text) if text.len() < 16 * 1024 => line.push_str(text),
                _ => line.push_str(&format!("{} bytes md5 {}", r.body.len(), md5_hex(&r.body))),
            }
            line
        })
        .collect()
}

fn content_md5(body: &[u8]) -> String {
    b64(&Md5::digest(body))
}

/// A server with alice and bob, SigV2 on.
fn start(target: Target) -> TestNode {
    TestNode::start_with(
        target,
        Options {
            users: &[ALICE, BOB],
            sigv2: true,
            ..Options::default()
        },
    )
}

// Bodies.

const VERSIONING_ON: &str =
    "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
const VERSIONING_SUSPENDED: &str =
    "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>";
const CORS: &str = "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>\
    <AllowedOrigin>https://alice.example</AllowedOrigin></CORSRule></CORSConfiguration>";
const CORS_WIDE: &str = "<CORSConfiguration><CORSRule><AllowedMethod>PUT</AllowedMethod>\
    <AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>";
const LIFECYCLE: &str = "<LifecycleConfiguration><Rule><ID>old</ID><Filter><Prefix>old/</Prefix>\
    </Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>\
    </LifecycleConfiguration>";
const LIFECYCLE_ALL: &str = "<LifecycleConfiguration><Rule><ID>all</ID><Filter><Prefix></Prefix>\
    </Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>\
    </LifecycleConfiguration>";
const AES256: &str = "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>\
    <SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>\
    </ServerSideEncryptionConfiguration>";
const KMS: &str = "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>\
    <SSEAlgorithm>aws:kms</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>\
    </ServerSideEncryptionConfiguration>";
const TAGS: &str =
    "<Tagging><TagSet><Tag><Key>team</Key><Value>alice</Value></Tag></TagSet></Tagging>";
const TAGS_MALLORY: &str =
    "<Tagging><TagSet><Tag><Key>team</Key><Value>mallory</Value></Tag></TagSet></Tagging>";
const HOLD_ON: &str = "<LegalHold><Status>ON</Status></LegalHold>";
const HOLD_OFF: &str = "<LegalHold><Status>OFF</Status></LegalHold>";
const LOCK_ENABLED: &str = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>";

fn lock_default(mode: &str, days: u32) -> String {
    format!(
        "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>\
         <DefaultRetention><Mode>{mode}</Mode><Days>{days}</Days></DefaultRetention></Rule>\
         </ObjectLockConfiguration>"
    )
}

/// `secs` from now, as S3 writes dates in XML and lock headers.
fn date_in(secs: i64) -> String {
    DateTime::from_unix(now() + secs).iso8601().to_string()
}

fn retention(mode: &str, until: &str) -> String {
    format!("<Retention><Mode>{mode}</Mode><RetainUntilDate>{until}</RetainUntilDate></Retention>")
}

/// A DeleteObjects document of `(key, version)`s.
fn delete_doc(objects: &[(&str, Option<&str>)]) -> String {
    let mut s = String::from("<Delete>");
    for (key, version) in objects {
        s.push_str(&format!("<Object><Key>{key}</Key>"));
        if let Some(v) = version {
            s.push_str(&format!("<VersionId>{v}</VersionId>"));
        }
        s.push_str("</Object>");
    }
    s.push_str("</Delete>");
    s
}

fn complete_doc(parts: &[(u32, &str)]) -> String {
    let mut s = String::from("<CompleteMultipartUpload>");
    for (n, etag) in parts {
        s.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
        ));
    }
    s.push_str("</CompleteMultipartUpload>");
    s
}

fn arn_of(user: &TestUser) -> String {
    format!("arn:aws:iam::000000000000:user/{}", user.name)
}

// Setup steps (each must succeed).

fn create_bucket(addr: SocketAddr, who: Who, bucket: &str, headers: &[(String, String)]) {
    ok(
        addr,
        who,
        req("CreateBucket", "PUT", format!("/{bucket}")).headers(headers),
    );
}

fn enable_versioning(addr: SocketAddr, who: Who, bucket: &str) {
    let r = req(
        "PutBucketVersioning",
        "PUT",
        format!("/{bucket}?versioning"),
    );
    ok(addr, who, r.xml(VERSIONING_ON));
}

/// PUT `body` at `bucket/key`: its version id (`null` unversioned).
fn put_object(
    addr: SocketAddr,
    who: Who,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> String {
    // Content-MD5: what a PUT into a locked bucket needs.
    let mut r = req("PutObject", "PUT", path).xml(body);
    for (n, v) in headers {
        r = r.header(n, v);
    }
    let got = ok(addr, who, r);
    got.header("x-amz-version-id").unwrap_or("null").to_owned()
}

fn create_upload(addr: SocketAddr, who: Who, path: &str) -> String {
    let got = ok(
        addr,
        who,
        req("CreateMultipartUpload", "POST", format!("{path}?uploads")),
    );
    got.xml_value("UploadId").expect("an upload id")
}

/// UploadPart: the part's ETag.
fn upload_part(addr: SocketAddr, who: Who, path: &str, upload: &str, n: u32, body: &str) -> String {
    let r = req(
        "UploadPart",
        "PUT",
        format!("{path}?partNumber={n}&uploadId={upload}"),
    );
    let got = ok(addr, who, r.body(body));
    got.header("etag").expect("a part's ETag").to_owned()
}

fn put_policy(addr: SocketAddr, bucket: &str, policy: &serde_json::Value) {
    let r = req("PutBucketPolicy", "PUT", format!("/{bucket}?policy"));
    ok(addr, Who::Alice, r.xml(&policy.to_string()));
}

// ---------------------------------------------------------------------------------------------
// 1. Cross-user access to every operation.

/// Alice's versioned bucket.
const HERS: &str = "alice-data";
/// Bob's own bucket (copies out of hers would land there).
const HIS: &str = "bob-data";
/// An empty bucket of hers, which a DeleteBucket would delete.
const HERS_EMPTY: &str = "alice-empty";

/// What the cross-user rows name: alice's versions and uploads, bob's upload.
#[derive(Debug, Clone, Default)]
struct Tenancy {
    /// `doc`'s first version.
    v1: String,
    /// `tagged`'s version.
    tagged: String,
    /// Alice's upload of `mp`, and its part 1's ETag.
    upload: String,
    part1: String,
    /// Bob's upload of `bob-mp` in his bucket.
    bob_upload: String,
}

/// Every S3 operation Ferry serves, on alice's bucket, her objects, versions and upload, as
/// another user or an anonymous client would send it.
fn cross_user_rows(_target: Target, f: &Tenancy) -> Vec<Row> {
    let doc = format!("/{HERS}/doc");
    let v1 = format!("versionId={}", f.v1);
    let tagged = format!("/{HERS}/tagged");
    let mp = format!("/{HERS}/mp?uploadId={}", f.upload);
    let source = format!("/{HERS}/doc");
    let source_v1 = format!("/{HERS}/doc?{v1}");
    let bucket = format!("/{HERS}");
    let everyone = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": "*", "Action": "s3:*",
        "Resource": [format!("arn:aws:s3:::{HERS}"), format!("arn:aws:s3:::{HERS}/*")]}]});
    let ops = vec![
        req("GetObject", "GET", &doc),
        req("GetObject of a version", "GET", format!("{doc}?{v1}")),
        req("GetObject of a range", "GET", &doc).header("Range", "bytes=0-2"),
        req(
            "GetObject with response overrides",
            "GET",
            format!("{doc}?response-content-type=text/x-leak"),
        ),
        req("HeadObject", "HEAD", &doc),
        req("HeadObject of a version", "HEAD", format!("{doc}?{v1}")),
        req("GetObjectAttributes", "GET", format!("{doc}?attributes"))
            .header("x-amz-object-attributes", "ETag,ObjectSize"),
        req(
            "GetObjectAttributes of a version",
            "GET",
            format!("{doc}?attributes&{v1}"),
        )
        .header("x-amz-object-attributes", "ETag,ObjectSize"),
        req("PutObject over hers", "PUT", &doc).body("bob was here"),
        req("PutObject of a new key", "PUT", format!("/{HERS}/new")).body("new"),
        req(
            "PutObject with a public ACL",
            "PUT",
            format!("/{HERS}/public"),
        )
        .header("x-amz-acl", "public-read-write")
        .body("x"),
        req("DeleteObject", "DELETE", &doc),
        req("DeleteObject of a version", "DELETE", format!("{doc}?{v1}")),
        req("GetObjectTagging", "GET", format!("{tagged}?tagging")),
        req(
            "GetObjectTagging of a version",
            "GET",
            format!("{tagged}?tagging&versionId={}", f.tagged),
        ),
        req("PutObjectTagging", "PUT", format!("{tagged}?tagging")).xml(TAGS_MALLORY),
        req(
            "PutObjectTagging of a version",
            "PUT",
            format!("{tagged}?tagging&versionId={}", f.tagged),
        )
        .xml(TAGS_MALLORY),
        req("DeleteObjectTagging", "DELETE", format!("{tagged}?tagging")),
        req("GetObjectAcl", "GET", format!("{doc}?acl")),
        req(
            "GetObjectAcl of a version",
            "GET",
            format!("{doc}?acl&{v1}"),
        ),
        req("PutObjectAcl", "PUT", format!("{doc}?acl")).header("x-amz-acl", "public-read"),
        req(
            "PutObjectAcl of a version",
            "PUT",
            format!("{doc}?acl&{v1}"),
        )
        .header("x-amz-acl", "public-read"),
        req("GetObjectRetention", "GET", format!("{doc}?retention")),
        req("PutObjectRetention", "PUT", format!("{doc}?retention"))
            .xml(&retention("GOVERNANCE", &date_in(86_400))),
        req("GetObjectLegalHold", "GET", format!("{doc}?legal-hold")),
        req("PutObjectLegalHold", "PUT", format!("{doc}?legal-hold")).xml(HOLD_ON),
        req(
            "CopyObject within her bucket",
            "PUT",
            format!("/{HERS}/copied"),
        )
        .header("x-amz-copy-source", &source),
        req(
            "CopyObject out to bob's bucket",
            "PUT",
            format!("/{HIS}/stolen"),
        )
        .header("x-amz-copy-source", &source),
        req(
            "CopyObject of a version out",
            "PUT",
            format!("/{HIS}/stolen-v1"),
        )
        .header("x-amz-copy-source", &source_v1),
        req("CopyObject of bob's object over hers", "PUT", &doc)
            .header("x-amz-copy-source", &format!("/{HIS}/mine")),
        req("CopyObject in place, metadata replaced", "PUT", &doc)
            .header("x-amz-copy-source", &source)
            .header("x-amz-metadata-directive", "REPLACE")
            .header("x-amz-meta-owner", "mallory"),
        req(
            "UploadPartCopy out to bob's upload",
            "PUT",
            format!("/{HIS}/bob-mp?partNumber=1&uploadId={}", f.bob_upload),
        )
        .header("x-amz-copy-source", &source),
        req(
            "UploadPartCopy of a version out",
            "PUT",
            format!("/{HIS}/bob-mp?partNumber=2&uploadId={}", f.bob_upload),
        )
        .header("x-amz-copy-source", &source_v1),
        req(
            "UploadPartCopy into her upload",
            "PUT",
            format!("/{HERS}/mp?partNumber=2&uploadId={}", f.upload),
        )
        .header("x-amz-copy-source", &source),
        req(
            "CreateMultipartUpload",
            "POST",
            format!("/{HERS}/mp2?uploads"),
        ),
        req(
            "UploadPart into her upload",
            "PUT",
            format!("/{HERS}/mp?partNumber=2&uploadId={}", f.upload),
        )
        .body("bob's part"),
        req("CompleteMultipartUpload of her upload", "POST", &mp)
            .xml(&complete_doc(&[(1, &f.part1)])),
        req("AbortMultipartUpload of her upload", "DELETE", &mp),
        req("ListParts of her upload", "GET", &mp),
        req("GetBucketAcl", "GET", format!("{bucket}?acl")),
        req("PutBucketAcl", "PUT", format!("{bucket}?acl"))
            .header("x-amz-acl", "public-read-write"),
        req("GetBucketPolicy", "GET", format!("{bucket}?policy")),
        req("PutBucketPolicy", "PUT", format!("{bucket}?policy")).xml(&everyone.to_string()),
        req("DeleteBucketPolicy", "DELETE", format!("{bucket}?policy")),
        req(
            "GetBucketPolicyStatus",
            "GET",
            format!("{bucket}?policyStatus"),
        ),
        req("GetBucketVersioning", "GET", format!("{bucket}?versioning")),
        req("PutBucketVersioning", "PUT", format!("{bucket}?versioning")).xml(VERSIONING_SUSPENDED),
        req("GetBucketCors", "GET", format!("{bucket}?cors")),
        req("PutBucketCors", "PUT", format!("{bucket}?cors")).xml(CORS_WIDE),
        req("DeleteBucketCors", "DELETE", format!("{bucket}?cors")),
        req(
            "GetBucketLifecycleConfiguration",
            "GET",
            format!("{bucket}?lifecycle"),
        ),
        req(
            "PutBucketLifecycleConfiguration",
            "PUT",
            format!("{bucket}?lifecycle"),
        )
        .xml(LIFECYCLE_ALL),
        req(
            "DeleteBucketLifecycle",
            "DELETE",
            format!("{bucket}?lifecycle"),
        ),
        req("GetBucketEncryption", "GET", format!("{bucket}?encryption")),
        req("PutBucketEncryption", "PUT", format!("{bucket}?encryption")).xml(KMS),
        req(
            "DeleteBucketEncryption",
            "DELETE",
            format!("{bucket}?encryption"),
        ),
        req("GetBucketTagging", "GET", format!("{bucket}?tagging")),
        req("PutBucketTagging", "PUT", format!("{bucket}?tagging")).xml(TAGS_MALLORY),
        req("DeleteBucketTagging", "DELETE", format!("{bucket}?tagging")),
        req(
            "GetObjectLockConfiguration",
            "GET",
            format!("{bucket}?object-lock"),
        ),
        req(
            "PutObjectLockConfiguration",
            "PUT",
            format!("{bucket}?object-lock"),
        )
        .xml(LOCK_ENABLED),
        req("ListObjects", "GET", &bucket),
        req(
            "ListObjects with a prefix",
            "GET",
            format!("{bucket}?prefix=d"),
        ),
        req("ListObjectsV2", "GET", format!("{bucket}?list-type=2")),
        req(
            "ListObjectsV2 with a prefix",
            "GET",
            format!("{bucket}?list-type=2&prefix=doc"),
        ),
        req("ListObjectVersions", "GET", format!("{bucket}?versions")),
        req(
            "ListObjectVersions with a prefix",
            "GET",
            format!("{bucket}?versions&prefix=doc"),
        ),
        req("ListMultipartUploads", "GET", format!("{bucket}?uploads")),
        req("DeleteBucket", "DELETE", &bucket),
        req(
            "DeleteBucket of her empty bucket",
            "DELETE",
            format!("/{HERS_EMPTY}"),
        ),
        req("HeadBucket", "HEAD", &bucket),
        req("GetBucketLocation", "GET", format!("{bucket}?location")),
    ];
    let delete_objects = [
        req("DeleteObjects", "POST", format!("{bucket}?delete"))
            .xml(&delete_doc(&[("doc", None), ("tagged", None)])),
        req(
            "DeleteObjects of versions",
            "POST",
            format!("{bucket}?delete"),
        )
        .xml(&delete_doc(&[
            ("doc", Some(&f.v1)),
            ("tagged", Some(&f.tagged)),
        ])),
    ];
    let mut rows = Vec::new();
    // Bob, through his own bucket and uploads: her ids and keys reached sideways.
    let not_there = Expect::Error(404, "NoSuchKey");
    let no_upload = Expect::Error(404, "NoSuchUpload");
    for (r, expect) in [
        (
            req(
                "GetObject of a key not there (no 404 to tell)",
                "GET",
                format!("/{HERS}/nothing"),
            ),
            ACCESS_DENIED,
        ),
        (
            req(
                "HeadObject of a key not there",
                "HEAD",
                format!("/{HERS}/nothing"),
            ),
            Expect::Status(403),
        ),
        (
            req(
                "GetObject of a version not there",
                "GET",
                format!("{doc}?versionId=0000000000000007"),
            ),
            ACCESS_DENIED,
        ),
        (
            req(
                "GetObject through a dot segment",
                "GET",
                format!("/{HIS}/../{HERS}/doc"),
            ),
            not_there,
        ),
        (
            req(
                "GetObject through an encoded dot segment",
                "GET",
                format!("/{HIS}/%2E%2E/{HERS}/doc"),
            ),
            not_there,
        ),
        (
            req(
                "GetObject of her version id in his bucket",
                "GET",
                format!("/{HIS}/mine?{v1}"),
            ),
            Expect::Error(404, "NoSuchVersion"),
        ),
        (
            req(
                "CopyObject of an encoded source",
                "PUT",
                format!("/{HIS}/stolen-encoded"),
            )
            .header("x-amz-copy-source", "/alice%2Ddata/doc"),
            ACCESS_DENIED,
        ),
        (
            req(
                "UploadPart into his key with her upload id",
                "PUT",
                format!("/{HIS}/bob-mp?partNumber=3&uploadId={}", f.upload),
            )
            .body("bob's part"),
            no_upload,
        ),
        (
            req(
                "UploadPart into her key's name in his bucket with her upload id",
                "PUT",
                format!("/{HIS}/mp?partNumber=3&uploadId={}", f.upload),
            )
            .body("bob's part"),
            no_upload,
        ),
        (
            req(
                "ListParts of her upload id in his bucket",
                "GET",
                format!("/{HIS}/mp?uploadId={}", f.upload),
            ),
            no_upload,
        ),
        (
            req(
                "CompleteMultipartUpload of her upload id in his bucket",
                "POST",
                format!("/{HIS}/mp?uploadId={}", f.upload),
            )
            .xml(&complete_doc(&[(1, &f.part1)])),
            no_upload,
        ),
        (
            req(
                "AbortMultipartUpload of her upload id in his bucket",
                "DELETE",
                format!("/{HIS}/mp?uploadId={}", f.upload),
            ),
            no_upload,
        ),
    ] {
        rows.push(row(Who::Bob, r, expect));
    }
    for who in [Who::Bob, Who::Anonymous] {
        for r in &ops {
            rows.push(row(who, r.clone(), refused(r)));
        }
        for r in &delete_objects {
            rows.push(row(who, r.clone(), Expect::KeyErrors("AccessDenied")));
        }
        // CreateBucket of her bucket's name: another account's name (AWS: 409
        // BucketAlreadyExists); anonymous: refused.
        let create = req("CreateBucket of her bucket's name", "PUT", &bucket);
        let expect = match who {
            Who::Bob => Expect::Error(409, "BucketAlreadyExists"),
            _ => ACCESS_DENIED,
        };
        rows.push(row(who, create, expect));
        // ListBuckets lists one's own buckets only; anonymous has none to list.
        let list = req("ListBuckets", "GET", "/");
        let expect = match who {
            Who::Bob => Expect::OkWithout(HERS),
            _ => ACCESS_DENIED,
        };
        rows.push(row(who, list, expect));
    }
    rows
}

/// What alice's bucket holds, read as alice (and bob's side, as bob: nothing copied in).
fn tenancy_reads(f: &Tenancy) -> Vec<Read> {
    let mut reads: Vec<Read> = Vec::new();
    let a = Who::Alice;
    let mut read = |who: Who, method: &'static str, target: String| {
        reads.push((who, method, target));
    };
    read(a, "GET", format!("/{HERS}?versions"));
    read(a, "GET", format!("/{HERS}?list-type=2"));
    read(a, "GET", format!("/{HERS}/doc"));
    read(a, "HEAD", format!("/{HERS}/doc"));
    read(a, "GET", format!("/{HERS}/doc?versionId={}", f.v1));
    read(a, "GET", format!("/{HERS}/doc?acl"));
    read(a, "GET", format!("/{HERS}/doc?acl&versionId={}", f.v1));
    read(a, "GET", format!("/{HERS}/doc?tagging"));
    read(a, "GET", format!("/{HERS}/tagged"));
    read(a, "GET", format!("/{HERS}/tagged?tagging"));
    read(
        a,
        "GET",
        format!("/{HERS}/tagged?tagging&versionId={}", f.tagged),
    );
    read(a, "GET", format!("/{HERS}/tagged?acl"));
    read(a, "GET", format!("/{HERS}?uploads"));
    read(a, "GET", format!("/{HERS}/mp?uploadId={}", f.upload));
    for sub in [
        "acl",
        "policy",
        "policyStatus",
        "versioning",
        "cors",
        "lifecycle",
        "encryption",
        "tagging",
        "object-lock",
        "location",
    ] {
        read(a, "GET", format!("/{HERS}?{sub}"));
    }
    read(a, "HEAD", format!("/{HERS}"));
    read(a, "HEAD", format!("/{HERS_EMPTY}"));
    read(a, "GET", format!("/{HERS_EMPTY}?versions"));
    read(a, "GET", "/".to_owned());
    let b = Who::Bob;
    read(b, "GET", format!("/{HIS}?versions"));
    read(b, "GET", format!("/{HIS}/bob-mp?uploadId={}", f.bob_upload));
    read(b, "GET", format!("/{HIS}?uploads"));
    reads
}

async fn cross_user_access(target: Target) {
    let n = start(target);
    let addr = n.addr;
    let a = Who::Alice;
    create_bucket(addr, a, HERS, &[]);
    enable_versioning(addr, a, HERS);
    let v1 = put_object(addr, a, &format!("/{HERS}/doc"), "doc, first", &[]);
    put_object(
        addr,
        a,
        &format!("/{HERS}/doc"),
        "doc, second",
        &[("x-amz-meta-owner", "alice")],
    );
    let tagged = put_object(
        addr,
        a,
        &format!("/{HERS}/tagged"),
        "tagged",
        &[("x-amz-tagging", "team=alice&class=secret")],
    );
    let upload = create_upload(addr, a, &format!("/{HERS}/mp"));
    let part1 = upload_part(addr, a, &format!("/{HERS}/mp"), &upload, 1, "part one");
    for (sub, body) in [
        ("cors", CORS),
        ("lifecycle", LIFECYCLE),
        ("encryption", AES256),
        ("tagging", TAGS),
    ] {
        ok(
            addr,
            a,
            req("setting", "PUT", format!("/{HERS}?{sub}")).xml(body),
        );
    }
    create_bucket(addr, a, HERS_EMPTY, &[]);
    create_bucket(addr, Who::Bob, HIS, &[]);
    put_object(addr, Who::Bob, &format!("/{HIS}/mine"), "bob's", &[]);
    let bob_upload = create_upload(addr, Who::Bob, &format!("/{HIS}/bob-mp"));
    let f = Tenancy {
        v1,
        tagged,
        upload,
        part1,
        bob_upload,
    };

    let reads = tenancy_reads(&f);
    let before = snapshot(addr, &reads);
    let rows = cross_user_rows(target, &f);
    let mut failures = run(addr, "cross-user access", &rows);
    let after = snapshot(addr, &reads);
    // No refused DeleteBucket left a fence behind: she writes to both buckets at once.
    for bucket in [HERS, HERS_EMPTY] {
        let probe = req("PutObject after", "PUT", format!("/{bucket}/probe")).body("probe");
        let got = send(addr, a, &probe);
        if got.status != 200 {
            failures.push(format!(
                "{bucket} fenced? PUT: {} {}",
                got.status,
                got.text()
            ));
        }
    }
    finish("cross-user access", failures, &before, &after);
}

// ---------------------------------------------------------------------------------------------
// 2. Ferry's internal headers and parameters from clients.

/// Alice's versioned bucket, and an empty one of hers (which a DeleteBucket would delete).
const INSIDE: &str = "inside";
const INSIDE_EMPTY: &str = "inside-empty";
/// Finding 1's reproduction: alice's versioned bucket her placements go to, and bob's
/// COMPLIANCE-locked bucket whose versions they once made share an id.
const PLACED: &str = "placed";
const BOB_LOCKED: &str = "bob-locked";

/// A key no cluster uses.
const WRONG_CLUSTER_KEY: &str = "0badc1a5be1f00d00badc1a5be1f00d00badc1a5be1f00d00badc1a5be1f00d0";

#[derive(Debug, Clone, Default)]
struct Inside {
    v1: String,
    upload: String,
    part1: String,
}

/// The `x-ferry-*` headers a client might send with `method target`: each name alone, odd
/// spellings, and forged seals (garbage, another cluster's key, a seal of another request,
/// one too old), each a set of headers to add.
fn internal_header_sets(method: &str, target: &str) -> Vec<(String, Vec<(String, String)>)> {
    let id = support::recent_version_id();
    let place = [("x-ferry-version-id", id.as_str())];
    let wrong = ferry_server::ClusterKeys::parse(WRONG_CLUSTER_KEY).expect("a key");
    let hs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    };
    let with_seal = |seal: String| {
        let mut h = hs(&place);
        h.push(("x-ferry-cluster-auth".to_owned(), seal));
        h
    };
    let place_headers = place.iter().map(|(n, v)| (*n, v.as_bytes()));
    let zero_mac = format!("FERRY1 {} {}", now(), "0".repeat(64));
    vec![
        ("x-ferry-version-id".into(), hs(&place)),
        (
            "x-ferry-version-order".into(),
            hs(&[("x-ferry-version-order", "1")]),
        ),
        (
            "x-ferry-last-modified (2001)".into(),
            hs(&[("x-ferry-last-modified", "978307200")]),
        ),
        (
            "x-ferry-encryption-context-mode".into(),
            hs(&[("x-ferry-encryption-context-mode", "ENABLED")]),
        ),
        (
            "x-ferry-client-ip".into(),
            hs(&[("x-ferry-client-ip", "10.1.2.3")]),
        ),
        (
            "x-ferry-client-tls".into(),
            hs(&[("x-ferry-client-tls", "true")]),
        ),
        ("x-ferry-fence".into(), hs(&[("x-ferry-fence", "hostile")])),
        ("x-ferry-anything".into(), hs(&[("x-ferry-anything", "1")])),
        (
            "X-Ferry-Version-Id".into(),
            hs(&[("X-Ferry-Version-Id", &id)]),
        ),
        (
            "x-ferry-cluster-auth: garbage".into(),
            with_seal("garbage".to_owned()),
        ),
        (
            "x-ferry-cluster-auth: a well-formed zero MAC".into(),
            with_seal(zero_mac),
        ),
        (
            "sealed with another cluster's key".into(),
            with_seal(wrong.seal(method, target, place_headers.clone(), now())),
        ),
        (
            "a seal of another cluster's key alone".into(),
            hs(&[(
                "x-ferry-cluster-auth",
                &wrong.seal(method, target, std::iter::empty(), now()),
            )]),
        ),
        (
            "the cluster's seal of another request".into(),
            with_seal(support::seal("GET", &format!("/{INSIDE}/other"), &place)),
        ),
        (
            "the cluster's seal of this request without its x-ferry-* header".into(),
            with_seal(support::seal(method, target, &[])),
        ),
        (
            "the cluster's seal of this request, ten minutes old".into(),
            with_seal(support::cluster_keys().seal(method, target, place_headers, now() - 600)),
        ),
    ]
}

fn internal_rows(_target: Target, f: &Inside) -> Vec<Row> {
    let doc = format!("/{INSIDE}/doc");
    let upload = format!("/{INSIDE}/mp?uploadId={}", f.upload);
    // Requests the owner may send: with the internal headers ignored, each would change
    // something (or read something it should not).
    let ops = vec![
        req("PutObject", "PUT", &doc).body("placed"),
        req("GetObject", "GET", &doc),
        req("HeadObject", "HEAD", &doc),
        req("DeleteObject", "DELETE", &doc),
        req(
            "DeleteObject of a version",
            "DELETE",
            format!("{doc}?versionId={}", f.v1),
        ),
        req("CopyObject", "PUT", format!("/{INSIDE}/copied")).header("x-amz-copy-source", &doc),
        req(
            "CreateMultipartUpload",
            "POST",
            format!("/{INSIDE}/mp2?uploads"),
        ),
        req(
            "UploadPart",
            "PUT",
            format!("/{INSIDE}/mp?partNumber=2&uploadId={}", f.upload),
        )
        .body("part two"),
        req("CompleteMultipartUpload", "POST", &upload).xml(&complete_doc(&[(1, &f.part1)])),
        req("DeleteObjects", "POST", format!("/{INSIDE}?delete"))
            .xml(&delete_doc(&[("doc", None), ("doc", Some(&f.v1))])),
        req("DeleteBucket", "DELETE", format!("/{INSIDE_EMPTY}")),
    ];
    let mut rows = Vec::new();
    for op in &ops {
        for (label, headers) in internal_header_sets(op.method, &op.target) {
            let r = op
                .clone()
                .headers(&headers)
                .named(format!("{} + {label}", op.what));
            for who in [Who::Alice, Who::Bob, Who::Anonymous] {
                rows.push(row(who, r.clone(), refused(&r)));
            }
        }
    }
    // The fence and other x-ferry-* names as query parameters.
    let fence = format!("/{INSIDE}?x-ferry-fence=t&lease-seconds=60");
    let wrong = ferry_server::ClusterKeys::parse(WRONG_CLUSTER_KEY).expect("a key");
    let params = vec![
        req("BucketFence", "POST", &fence),
        req(
            "BucketFence, name percent-encoded",
            "POST",
            format!("/{INSIDE}?x%2Dferry%2Dfence=t&lease-seconds=60"),
        ),
        req(
            "BucketFence of the empty bucket",
            "POST",
            format!("/{INSIDE_EMPTY}?x-ferry-fence=t&lease-seconds=300"),
        ),
        req(
            "BucketFence sealed with another cluster's key",
            "POST",
            &fence,
        )
        .header(
            "x-ferry-cluster-auth",
            &wrong.seal("POST", &fence, std::iter::empty(), now()),
        ),
        req(
            "BucketFence with the cluster's seal of another request",
            "POST",
            &fence,
        )
        .header(
            "x-ferry-cluster-auth",
            &support::seal(
                "POST",
                &format!("/{INSIDE_EMPTY}?x-ferry-fence=t&lease-seconds=60"),
                &[],
            ),
        ),
        req(
            "DeleteBucket with a fence header",
            "DELETE",
            format!("/{INSIDE_EMPTY}"),
        )
        .header("x-ferry-fence", "t"),
        req(
            "GetObject with an x-ferry-* parameter",
            "GET",
            format!("{doc}?x-ferry-anything=1"),
        ),
        req(
            "GetObject with X-Ferry-Version-Id as a parameter",
            "GET",
            format!("{doc}?X-Ferry-Version-Id=0000000000000001"),
        ),
        req(
            "PutObject with x-ferry-version-id as a parameter",
            "PUT",
            format!("{doc}?x-ferry-version-id=0000000000000001"),
        )
        .body("placed"),
        req(
            "DeleteObject with x-ferry-last-modified as a parameter",
            "DELETE",
            format!("{doc}?x-ferry-last-modified=978307200"),
        ),
        req(
            "ListObjectsV2 with x-ferry-client-ip as a parameter",
            "GET",
            format!("/{INSIDE}?list-type=2&x-ferry-client-ip=10.1.2.3"),
        ),
    ];
    for r in &params {
        for who in [Who::Alice, Who::Bob, Who::Anonymous] {
            rows.push(row(who, r.clone(), refused(r)));
        }
    }
    // Finding 1: placements of the smallest ids, refused (they once exhausted the ids).
    for i in 0..8 {
        let r = req(
            format!("PutObject placed at id 1, #{i}"),
            "PUT",
            format!("/{PLACED}/doc"),
        )
        .header("x-ferry-version-id", "0000000000000001")
        .body(format!("placed {i}"));
        rows.push(row(Who::Alice, r, ACCESS_DENIED));
    }
    rows
}

fn inside_reads(f: &Inside) -> Vec<Read> {
    let a = Who::Alice;
    vec![
        (a, "GET", format!("/{INSIDE}?versions")),
        (a, "GET", format!("/{INSIDE}/doc")),
        (a, "HEAD", format!("/{INSIDE}/doc")),
        (a, "GET", format!("/{INSIDE}/doc?versionId={}", f.v1)),
        (a, "HEAD", format!("/{INSIDE}/doc?versionId={}", f.v1)),
        (a, "GET", format!("/{INSIDE}/other")),
        (a, "GET", format!("/{INSIDE}?uploads")),
        (a, "GET", format!("/{INSIDE}/mp?uploadId={}", f.upload)),
        (a, "GET", format!("/{INSIDE}?versioning")),
        (a, "HEAD", format!("/{INSIDE_EMPTY}")),
        (a, "GET", format!("/{INSIDE_EMPTY}?versions")),
        (a, "GET", format!("/{PLACED}?versions")),
        (a, "GET", "/".to_owned()),
    ]
}

async fn internal_headers_and_parameters(target: Target) {
    let n = start(target);
    let addr = n.addr;
    let a = Who::Alice;
    create_bucket(addr, a, INSIDE, &[]);
    enable_versioning(addr, a, INSIDE);
    let v1 = put_object(addr, a, &format!("/{INSIDE}/doc"), "doc, first", &[]);
    put_object(addr, a, &format!("/{INSIDE}/doc"), "doc, second", &[]);
    put_object(addr, a, &format!("/{INSIDE}/other"), "other", &[]);
    let upload = create_upload(addr, a, &format!("/{INSIDE}/mp"));
    let part1 = upload_part(addr, a, &format!("/{INSIDE}/mp"), &upload, 1, "part one");
    create_bucket(addr, a, INSIDE_EMPTY, &[]);
    create_bucket(addr, a, PLACED, &[]);
    enable_versioning(addr, a, PLACED);
    put_object(addr, a, &format!("/{PLACED}/doc"), "doc", &[]);
    let f = Inside { v1, upload, part1 };

    let reads = inside_reads(&f);
    let before = snapshot(addr, &reads);
    let rows = internal_rows(target, &f);
    let mut failures = run(addr, "internal headers and parameters", &rows);
    let after = snapshot(addr, &reads);

    // Finding 1, then: a COMPLIANCE-locked bucket's writes of one key each get an id of
    // their own, every one kept and readable.
    let b = Who::Bob;
    let lock_on = [(
        "x-amz-bucket-object-lock-enabled".to_owned(),
        "true".to_owned(),
    )];
    create_bucket(addr, b, BOB_LOCKED, &lock_on);
    let lock = req(
        "PutObjectLockConfiguration",
        "PUT",
        format!("/{BOB_LOCKED}?object-lock"),
    );
    ok(addr, b, lock.xml(&lock_default("COMPLIANCE", 1)));
    // Behind a proxy, on the node that took (or refused) alice's placements.
    let key = n.key_placed(BOB_LOCKED, "k", (PLACED, "doc"), false);
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = put_object(
            addr,
            b,
            &format!("/{BOB_LOCKED}/{key}"),
            &format!("write {i}"),
            &[],
        );
        ids.push(id);
    }
    let listed = ok(
        addr,
        b,
        req("versions", "GET", format!("/{BOB_LOCKED}?versions")),
    );
    let mut listed_ids = listed.xml_values("VersionId");
    listed_ids.sort();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != ids.len() || listed_ids != unique {
        failures.push(format!(
            "finding 1: a locked bucket's versions are not all kept apart: written {ids:?}, \
             listed {listed_ids:?}"
        ));
    }
    for (i, id) in ids.iter().enumerate() {
        let got = send(
            addr,
            b,
            &req(
                "GetObject",
                "GET",
                format!("/{BOB_LOCKED}/{key}?versionId={id}"),
            ),
        );
        if got.status != 200 || got.body != format!("write {i}").as_bytes() {
            failures.push(format!(
                "finding 1: version {id} reads {} {}",
                got.status,
                got.text()
            ));
        }
    }

    // No fence was left: alice still writes to both buckets (and deletes what she wrote).
    for bucket in [INSIDE, INSIDE_EMPTY] {
        let probe = req("PutObject after", "PUT", format!("/{bucket}/probe")).body("probe");
        let got = send(addr, a, &probe);
        if got.status != 200 {
            failures.push(format!(
                "{bucket} fenced? PUT: {} {}",
                got.status,
                got.text()
            ));
        }
    }
    let probe = req(
        "DeleteObject after",
        "DELETE",
        format!("/{INSIDE_EMPTY}/probe"),
    );
    let got = send(addr, a, &probe);
    if got.status != 204 {
        failures.push(format!(
            "{INSIDE_EMPTY} fenced? DELETE: {} {}",
            got.status,
            got.text()
        ));
    }
    finish("internal headers and parameters", failures, &before, &after);
}

// ---------------------------------------------------------------------------------------------
// 3. Presigned URL tampering.

/// Alice's versioned bucket her URLs are for, another of hers (a URL moved there), and an
/// empty one with default encryption (a presigned DeleteBucket).
const SIGNED: &str = "signed";
const SIGNED_TWO: &str = "signed-two";
const SIGNED_EMPTY: &str = "signed-empty";

#[derive(Debug, Clone, Default)]
struct Presigned {
    /// `host:port` the URLs are signed for.
    host: String,
    v1: String,
    upload: String,
}

/// SigV2 query-string authentication of `target` by `user`, valid for 300 s.
fn presign_v2(user: &TestUser, method: &str, target: &str) -> String {
    let expires = (now() + 300).to_string();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts = RequestParts {
        method,
        path,
        query,
        headers: &[],
    };
    let sts = sigv2::string_to_sign(&parts, &expires, None).expect("a string to sign");
    let signature = sigv2::signature(user.secret_key, &sts);
    let signature: String =
        percent_encoding::utf8_percent_encode(&signature, percent_encoding::NON_ALPHANUMERIC)
            .collect();
    let sep = if query.is_empty() { '?' } else { '&' };
    format!(
        "{target}{sep}AWSAccessKeyId={}&Expires={expires}&Signature={signature}",
        user.access_key
    )
}

/// The headers a URL's holder adds, one at a time.
fn added_headers() -> Vec<(&'static str, String)> {
    vec![
        ("x-amz-meta-x", "1".into()),
        ("x-amz-acl", "public-read".into()),
        ("x-amz-server-side-encryption", "AES256".into()),
        ("x-amz-copy-source", format!("/{SIGNED}/secret")),
        ("x-amz-tagging", "owner=mallory".into()),
        (
            "x-amz-website-redirect-location",
            "https://evil.example/".into(),
        ),
        (
            "x-amz-grant-full-control",
            format!("id={}", BOB.canonical_id()),
        ),
        ("x-amz-object-lock-mode", "GOVERNANCE".into()),
        ("x-amz-bypass-governance-retention", "true".into()),
        ("x-ferry-version-id", "0000000000000001".into()),
        ("x-ferry-last-modified", "978307200".into()),
        ("x-ferry-encryption-context-mode", "ENABLED".into()),
        ("x-ferry-client-ip", "10.1.2.3".into()),
    ]
}

/// Another method for a URL signed for `method`, and a body for it.
fn other_method(method: &str) -> (&'static str, &'static str) {
    match method {
        "GET" => ("PUT", "written with a read URL"),
        "PUT" => ("DELETE", ""),
        _ => ("GET", ""),
    }
}

fn presigned_rows(_target: Target, f: &Presigned) -> Vec<Row> {
    let mut rows = Vec::new();
    let key = format!("/{SIGNED}/k");
    let alice = Credentials::new(ALICE.access_key, ALICE.secret_key);
    let tamper =
        |rows: &mut Vec<Row>, scheme: &str, method: &'static str, url: &str, params: &[String]| {
            let body: &[u8] = if method == "PUT" { b"tampered" } else { b"" };
            // (Parameters first: on a server that took one, what it did shows before a
            // header's change could hide it.)
            for p in params {
                let r = req(
                    format!("{scheme} {method} URL + &{p}"),
                    method,
                    format!("{url}&{p}"),
                )
                .body(body);
                rows.push(row(Who::Holder, r, Expect::Denied));
            }
            for (name, value) in added_headers() {
                let r = req(format!("{scheme} {method} URL + {name}"), method, url)
                    .header(name, &value)
                    .body(body);
                rows.push(row(Who::Holder, r, Expect::Denied));
            }
            let (other, other_body) = other_method(method);
            let r =
                req(format!("{scheme} {method} URL sent as {other}"), other, url).body(other_body);
            rows.push(row(Who::Holder, r, Expect::Denied));
            if url.starts_with(&format!("{key}?")) {
                let moved = url.replacen(&key, &format!("/{SIGNED}/secret"), 1);
                let r = req(
                    format!("{scheme} {method} URL for another key"),
                    method,
                    moved,
                )
                .body(body);
                rows.push(row(Who::Holder, r, Expect::Denied));
            }
            let moved = url.replacen(&format!("/{SIGNED}"), &format!("/{SIGNED_TWO}"), 1);
            let r = req(
                format!("{scheme} {method} URL for another bucket"),
                method,
                moved,
            )
            .body(body);
            rows.push(row(Who::Holder, r, Expect::Denied));
        };
    // SigV4: any change to the query breaks the signature; unsigned x-amz-* headers are
    // refused; x-ferry-* ones are the cluster's.
    let v4_params: Vec<String> = [
        format!("versionId={}", f.v1),
        "acl".into(),
        "tagging".into(),
        "policy".into(),
        "encryption".into(),
        "uploads".into(),
        "delete".into(),
        "retention".into(),
        "legal-hold".into(),
        "x-ferry-fence=t&lease-seconds=1".into(),
        "partNumber=1".into(),
    ]
    .to_vec();
    for method in ["GET", "PUT", "DELETE"] {
        let url = presign_target(&f.host, &alice, method, &key);
        tamper(&mut rows, "SigV4", method, &url, &v4_params);
    }
    // SigV2: every sub-resource the router knows is signed; so are x-amz-* headers.
    let v2_params: Vec<String> = ferry_core::s3::request::SUBRESOURCES
        .iter()
        .map(|s| match *s {
            "versionId" => format!("versionId={}", f.v1),
            "uploadId" => format!("uploadId={}", f.upload),
            "partNumber" => "partNumber=1".to_owned(),
            "x-ferry-fence" => "x-ferry-fence=t&lease-seconds=1".to_owned(),
            other => other.to_owned(),
        })
        .collect();
    // (A DeleteBucket URL first: `&encryption` once made it a DeleteBucketEncryption.)
    for (method, target) in [
        ("DELETE", format!("/{SIGNED_EMPTY}")),
        ("GET", key.clone()),
        ("PUT", key.clone()),
        ("DELETE", key.clone()),
    ] {
        let url = presign_v2(&ALICE, method, &target);
        tamper(&mut rows, "SigV2", method, &url, &v2_params);
    }
    rows
}

fn presigned_reads(f: &Presigned) -> Vec<Read> {
    let a = Who::Alice;
    let mut reads: Vec<Read> = vec![
        (a, "GET", format!("/{SIGNED}?versions")),
        (a, "GET", format!("/{SIGNED}/k")),
        (a, "GET", format!("/{SIGNED}/k?versionId={}", f.v1)),
        (a, "GET", format!("/{SIGNED}/k?tagging")),
        (a, "GET", format!("/{SIGNED}/k?acl")),
        (a, "GET", format!("/{SIGNED}/k?retention")),
        (a, "GET", format!("/{SIGNED}/k?legal-hold")),
        (a, "GET", format!("/{SIGNED}/secret")),
        (a, "GET", format!("/{SIGNED}?uploads")),
        (a, "GET", format!("/{SIGNED}/mp?uploadId={}", f.upload)),
        (a, "GET", format!("/{SIGNED_TWO}?versions")),
        (a, "GET", format!("/{SIGNED_TWO}/k")),
        (a, "HEAD", format!("/{SIGNED_EMPTY}")),
        (a, "GET", format!("/{SIGNED_EMPTY}?versions")),
    ];
    for bucket in [SIGNED, SIGNED_EMPTY] {
        for sub in [
            "acl",
            "policy",
            "versioning",
            "encryption",
            "tagging",
            "lifecycle",
            "cors",
            "object-lock",
        ] {
            reads.push((a, "GET", format!("/{bucket}?{sub}")));
        }
    }
    reads
}

async fn presigned_url_tampering(target: Target) {
    let n = start(target);
    let addr = n.addr;
    let a = Who::Alice;
    create_bucket(addr, a, SIGNED, &[]);
    enable_versioning(addr, a, SIGNED);
    let v1 = put_object(addr, a, &format!("/{SIGNED}/k"), "k, first", &[]);
    put_object(addr, a, &format!("/{SIGNED}/k"), "k, second", &[]);
    put_object(addr, a, &format!("/{SIGNED}/secret"), "secret", &[]);
    let upload = create_upload(addr, a, &format!("/{SIGNED}/mp"));
    create_bucket(addr, a, SIGNED_TWO, &[]);
    put_object(
        addr,
        a,
        &format!("/{SIGNED_TWO}/k"),
        "the other bucket's",
        &[],
    );
    create_bucket(addr, a, SIGNED_EMPTY, &[]);
    ok(
        addr,
        a,
        req("encryption", "PUT", format!("/{SIGNED_EMPTY}?encryption")).xml(AES256),
    );
    let f = Presigned {
        host: addr.to_string(),
        v1,
        upload,
    };

    let reads = presigned_reads(&f);
    let before = snapshot(addr, &reads);
    let rows = presigned_rows(target, &f);
    let mut failures = run(addr, "presigned URL tampering", &rows);
    let after = snapshot(addr, &reads);

    // The URLs as signed work (not counted: they are not attacks).
    let alice = Credentials::new(ALICE.access_key, ALICE.secret_key);
    let key = format!("/{SIGNED}/k");
    let positive =
        |method: &'static str, url: String, body: &str, want: u16, read: Option<&str>| {
            let got = send(
                addr,
                Who::Holder,
                &req("as signed", method, url.as_str()).body(body),
            );
            let read_ok = read.is_none_or(|b| got.body == b.as_bytes());
            (got.status == want && read_ok)
                .then_some(())
                .ok_or_else(|| format!("{method} {url} as signed: {} {}", got.status, got.text()))
        };
    let results = [
        positive(
            "GET",
            presign_target(&f.host, &alice, "GET", &key),
            "",
            200,
            Some("k, second"),
        ),
        positive(
            "GET",
            presign_v2(&ALICE, "GET", &key),
            "",
            200,
            Some("k, second"),
        ),
        positive(
            "PUT",
            presign_target(&f.host, &alice, "PUT", &key),
            "by URL",
            200,
            None,
        ),
        positive(
            "PUT",
            presign_v2(&ALICE, "PUT", &key),
            "by URL v2",
            200,
            None,
        ),
        positive(
            "DELETE",
            presign_target(&f.host, &alice, "DELETE", &key),
            "",
            204,
            None,
        ),
        positive("DELETE", presign_v2(&ALICE, "DELETE", &key), "", 204, None),
        positive(
            "DELETE",
            presign_v2(&ALICE, "DELETE", &format!("/{SIGNED_EMPTY}")),
            "",
            204,
            None,
        ),
    ];
    failures.extend(results.into_iter().filter_map(Result::err));
    finish("presigned URL tampering", failures, &before, &after);
}

// ---------------------------------------------------------------------------------------------
// 4. POST form tricks.

const FORMS: &str = "forms";
const FORMS_OTHER: &str = "forms-other";
const BOB_FORMS: &str = "bob-forms";

/// A form's fields signed by `signer` (SigV4, its credential) for `bucket`, with
/// `conditions`, every field the conditions do not name matched exactly, and the policy
/// expiring in `expires_in` seconds (as boto3's `generate_presigned_post` builds them).
fn signed_form(
    signer: (&str, &str),
    bucket: &str,
    conditions: &[serde_json::Value],
    fields: &[(&str, &str)],
    expires_in: i64,
) -> Vec<(String, String)> {
    let (access_key, secret) = signer;
    let t = DateTime::from_unix(now());
    let date = t.date_stamp().to_string();
    let mut out: Vec<(String, String)> = vec![
        ("x-amz-algorithm".into(), "AWS4-HMAC-SHA256".into()),
        (
            "x-amz-credential".into(),
            format!("{access_key}/{date}/{}/s3/aws4_request", support::REGION),
        ),
        ("x-amz-date".into(), t.amz().to_string()),
    ];
    out.extend(
        fields
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let named: Vec<String> = conditions
        .iter()
        .flat_map(|c| match c {
            serde_json::Value::Object(m) => m.keys().map(|k| k.to_ascii_lowercase()).collect(),
            serde_json::Value::Array(a) => a
                .get(1)
                .and_then(|v| v.as_str())
                .map(|s| vec![s.trim_start_matches('$').to_ascii_lowercase()])
                .unwrap_or_default(),
            _ => Vec::new(),
        })
        .collect();
    let mut all = vec![json!({ "bucket": bucket })];
    all.extend_from_slice(conditions);
    for (n, v) in &out {
        if !named.contains(&n.to_ascii_lowercase()) {
            all.push(json!({ n.as_str(): v }));
        }
    }
    let expiration = DateTime::from_unix(now() + expires_in)
        .iso8601()
        .to_string();
    let doc = json!({ "expiration": expiration, "conditions": all });
    let policy = b64(doc.to_string().as_bytes());
    let signature =
        ferry_core::s3::post::form_signature(secret, &date, support::REGION, "s3", &policy);
    out.push(("policy".into(), policy));
    out.push(("x-amz-signature".into(), signature.to_string()));
    out
}

/// A POST Object request of `fields` and a file of `content` to `bucket`.
fn form_post(what: &str, bucket: &str, fields: &[(String, String)], content: &[u8]) -> Req {
    let boundary = "hostileformboundary";
    let mut body = Vec::new();
    for (n, v) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    req(what, "POST", format!("/{bucket}"))
        .header(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
}

fn set_field(fields: &mut Vec<(String, String)>, name: &str, value: &str) {
    match fields.iter_mut().find(|(n, _)| n == name) {
        Some(f) => f.1 = value.to_owned(),
        None => fields.push((name.to_owned(), value.to_owned())),
    }
}

fn form_rows(_target: Target) -> Vec<Row> {
    let alice = (ALICE.access_key, ALICE.secret_key);
    let bob = (BOB.access_key, BOB.secret_key);
    let keep = [("key", "keep")];
    let mut rows = Vec::new();
    let mut add = |r: Req, expect: Expect| rows.push(row(Who::Holder, r, expect));

    let f = signed_form(
        alice,
        FORMS,
        &[json!(["starts-with", "$key", "uploads/"])],
        &keep,
        600,
    );
    add(
        form_post("a key outside the policy's starts-with", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    let f = signed_form(
        alice,
        FORMS,
        &[json!(["content-length-range", 1, 5])],
        &keep,
        600,
    );
    add(
        form_post("a body over content-length-range", FORMS, &f, b"0123456789"),
        Expect::Error(400, "EntityTooLarge"),
    );
    add(
        form_post("a body under content-length-range", FORMS, &f, b""),
        Expect::Error(400, "EntityTooSmall"),
    );
    let f = signed_form(alice, FORMS, &[], &keep, -60);
    add(
        form_post("an expired policy", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    let mut f = signed_form(alice, FORMS, &[], &keep, 600);
    f.push(("x-amz-meta-sneaky".into(), "1".into()));
    add(
        form_post("a field the policy does not cover", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    let mut f = signed_form(alice, FORMS, &[], &keep, 600);
    f.push(("x-amz-acl".into(), "public-read".into()));
    add(
        form_post("an ACL field the policy does not cover", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    // Ferry's own fields: refused, signed by the policy or not.
    let id = support::recent_version_id();
    for (name, value) in [
        ("x-ferry-version-id", id.as_str()),
        ("x-ferry-last-modified", "978307200"),
        ("x-ferry-client-ip", "10.1.2.3"),
        ("x-ferry-fence", "t"),
        ("x-ferry-anything", "1"),
        ("X-Ferry-Version-Id", id.as_str()),
        ("x-ferry-cluster-auth", "garbage"),
    ] {
        let f = signed_form(alice, FORMS, &[], &[("key", "keep"), (name, value)], 600);
        add(
            form_post(&format!("a signed {name} field"), FORMS, &f, b"x"),
            ACCESS_DENIED,
        );
        let mut f = signed_form(alice, FORMS, &[], &keep, 600);
        f.push((name.to_owned(), value.to_owned()));
        add(
            form_post(&format!("an unsigned {name} field"), FORMS, &f, b"x"),
            ACCESS_DENIED,
        );
    }
    let f = signed_form(alice, BOB_FORMS, &[], &keep, 600);
    add(
        form_post(
            "a form for bob's bucket signed by alice",
            BOB_FORMS,
            &f,
            b"x",
        ),
        ACCESS_DENIED,
    );
    let f = signed_form(bob, FORMS, &[], &keep, 600);
    add(
        form_post("a form for alice's bucket signed by bob", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    let f = signed_form(
        ("AKIANOSUCHKEY0000000", "no such secret"),
        FORMS,
        &[],
        &keep,
        600,
    );
    add(
        form_post("a signature by an unknown key", FORMS, &f, b"x"),
        Expect::Error(403, "InvalidAccessKeyId"),
    );
    let f = signed_form((ALICE.access_key, BOB.secret_key), FORMS, &[], &keep, 600);
    add(
        form_post("alice's credential, bob's signature", FORMS, &f, b"x"),
        Expect::Error(403, "SignatureDoesNotMatch"),
    );
    let f = signed_form(alice, FORMS_OTHER, &[], &keep, 600);
    add(
        form_post("a policy for another bucket", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    let f = signed_form(alice, FORMS, &[], &keep, 600);
    add(
        form_post(
            "alice's form for her bucket, posted to bob's",
            BOB_FORMS,
            &f,
            b"x",
        ),
        ACCESS_DENIED,
    );
    // A policy changed after it was signed, with alice's signature of the old one.
    let mut f = signed_form(
        alice,
        FORMS,
        &[json!(["content-length-range", 1, 5])],
        &keep,
        600,
    );
    let policy = f
        .iter()
        .find(|(n, _)| n == "policy")
        .expect("policy")
        .1
        .clone();
    let doc = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, policy).expect("base64"),
    )
    .expect("UTF-8");
    let wider = doc.replace(
        "[\"content-length-range\",1,5]",
        "[\"content-length-range\",1,1000]",
    );
    assert_ne!(doc, wider);
    set_field(&mut f, "policy", &b64(wider.as_bytes()));
    add(
        form_post(
            "a widened policy with the old signature",
            FORMS,
            &f,
            b"0123456789",
        ),
        Expect::Error(403, "SignatureDoesNotMatch"),
    );
    let mut f = signed_form(alice, FORMS_OTHER, &[], &keep, 600);
    let policy = f
        .iter()
        .find(|(n, _)| n == "policy")
        .expect("policy")
        .1
        .clone();
    let doc = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, policy).expect("base64"),
    )
    .expect("UTF-8");
    set_field(
        &mut f,
        "policy",
        &b64(doc.replace(FORMS_OTHER, FORMS).as_bytes()),
    );
    add(
        form_post(
            "a policy moved to another bucket with the old signature",
            FORMS,
            &f,
            b"x",
        ),
        Expect::Error(403, "SignatureDoesNotMatch"),
    );
    let f = signed_form(
        alice,
        FORMS,
        &[json!({"Content-Type": "text/plain"})],
        &[("key", "keep"), ("Content-Type", "text/plain")],
        600,
    );
    let mut f2 = f.clone();
    set_field(&mut f2, "Content-Type", "text/html");
    add(
        form_post(
            "a field changed from the policy's exact value",
            FORMS,
            &f2,
            b"x",
        ),
        ACCESS_DENIED,
    );
    let f = signed_form(
        alice,
        FORMS,
        &[json!({"acl": "private"})],
        &[("key", "keep"), ("acl", "private")],
        600,
    );
    let mut f2 = f.clone();
    set_field(&mut f2, "acl", "public-read-write");
    add(
        form_post("an ACL changed from the policy's", FORMS, &f2, b"x"),
        ACCESS_DENIED,
    );
    let mut f = signed_form(
        alice,
        FORMS,
        &[json!(["starts-with", "$key", "uploads/"])],
        &[("key", "uploads/x")],
        600,
    );
    set_field(&mut f, "key", "keep");
    add(
        form_post("a key changed outside starts-with", FORMS, &f, b"x"),
        ACCESS_DENIED,
    );
    // Unsigned forms: a private bucket takes none.
    add(
        form_post(
            "an anonymous form",
            FORMS,
            &[("key".into(), "keep".into())],
            b"x",
        ),
        ACCESS_DENIED,
    );
    add(
        form_post(
            "an anonymous form with a placement",
            FORMS,
            &[
                ("key".into(), "keep".into()),
                ("x-ferry-version-id".into(), id.clone()),
            ],
            b"x",
        ),
        ACCESS_DENIED,
    );
    rows
}

fn form_reads() -> Vec<Read> {
    let a = Who::Alice;
    vec![
        (a, "GET", format!("/{FORMS}?versions")),
        (a, "GET", format!("/{FORMS}/keep")),
        (a, "GET", format!("/{FORMS}/keep?acl")),
        (a, "GET", format!("/{FORMS_OTHER}?versions")),
        (Who::Bob, "GET", format!("/{BOB_FORMS}?versions")),
    ]
}

async fn post_form_tricks(target: Target) {
    let n = start(target);
    let addr = n.addr;
    let a = Who::Alice;
    create_bucket(addr, a, FORMS, &[]);
    put_object(addr, a, &format!("/{FORMS}/keep"), "kept", &[]);
    create_bucket(addr, a, FORMS_OTHER, &[]);
    create_bucket(addr, Who::Bob, BOB_FORMS, &[]);

    let reads = form_reads();
    let before = snapshot(addr, &reads);
    let rows = form_rows(target);
    let mut failures = run(addr, "POST form tricks", &rows);
    let after = snapshot(addr, &reads);

    // A form as signed works (not counted).
    let f = signed_form(
        (ALICE.access_key, ALICE.secret_key),
        FORMS,
        &[],
        &[("key", "by-form")],
        600,
    );
    let got = send(
        addr,
        Who::Holder,
        &form_post("as signed", FORMS, &f, b"posted"),
    );
    if got.status != 204 {
        failures.push(format!("a form as signed: {} {}", got.status, got.text()));
    }
    finish("POST form tricks", failures, &before, &after);
}

// ---------------------------------------------------------------------------------------------
// 5. Object-lock bypass attempts.

const VAULT: &str = "vault";

#[derive(Debug, Clone, Default)]
struct Vault {
    /// The COMPLIANCE, GOVERNANCE and legal-hold versions.
    compliance: String,
    governance: String,
    held: String,
}

fn lock_rows(_target: Target, f: &Vault) -> Vec<Row> {
    let c = format!("/{VAULT}/c?versionId={}", f.compliance);
    let g = format!("/{VAULT}/g?versionId={}", f.governance);
    let h = format!("/{VAULT}/h?versionId={}", f.held);
    let bypass = ("x-amz-bypass-governance-retention", "true");
    let shorter = retention("COMPLIANCE", &date_in(3_600));
    let same_governance = retention("GOVERNANCE", &date_in(86_400));
    let governance_shorter = retention("GOVERNANCE", &date_in(3_600));
    let in_c = |sub: &str| format!("/{VAULT}/c?{sub}&versionId={}", f.compliance);
    let delete_objects = |objects: &[(&str, Option<&str>)]| {
        req("DeleteObjects", "POST", format!("/{VAULT}?delete")).xml(&delete_doc(objects))
    };
    let place = [("x-ferry-version-id", f.compliance.as_str())];
    let wrong = ferry_server::ClusterKeys::parse(WRONG_CLUSTER_KEY).expect("a key");
    let over_c = format!("/{VAULT}/c");
    let forged = |label: &str, seal: Option<String>| {
        let mut r = req(
            format!("a placement over the COMPLIANCE version, {label}"),
            "PUT",
            &over_c,
        )
        .header("x-ferry-version-id", &f.compliance)
        .header("x-ferry-last-modified", "978307200")
        .body("overwritten");
        if let Some(s) = seal {
            r = r.header("x-ferry-cluster-auth", &s);
        }
        r
    };
    let placed_headers = || {
        [
            ("x-ferry-last-modified", "978307200"),
            ("x-ferry-version-id", f.compliance.as_str()),
        ]
    };
    let forgeries = vec![
        forged("unsealed", None),
        forged(
            "sealed with another cluster's key",
            Some(wrong.seal(
                "PUT",
                &over_c,
                placed_headers().iter().map(|(n, v)| (*n, v.as_bytes())),
                now(),
            )),
        ),
        forged(
            "with the cluster's seal of another request",
            Some(support::seal(
                "PUT",
                &format!("/{VAULT}/other"),
                &placed_headers(),
            )),
        ),
        forged(
            "with the cluster's seal of it without its headers",
            Some(support::seal("PUT", &over_c, &[])),
        ),
        forged(
            "with the cluster's seal, ten minutes old",
            Some(support::cluster_keys().seal(
                "PUT",
                &over_c,
                placed_headers().iter().map(|(n, v)| (*n, v.as_bytes())),
                now() - 600,
            )),
        ),
        req(
            "a placed delete marker over the COMPLIANCE version",
            "DELETE",
            &over_c,
        )
        .header("x-ferry-version-id", &f.compliance)
        .header(
            "x-ferry-cluster-auth",
            &wrong.seal(
                "DELETE",
                &over_c,
                place.iter().map(|(n, v)| (*n, v.as_bytes())),
                now(),
            ),
        ),
        req(
            "DeleteObject of the COMPLIANCE version, sealed with another key",
            "DELETE",
            &c,
        )
        .header(
            "x-ferry-cluster-auth",
            &wrong.seal("DELETE", &c, std::iter::empty(), now()),
        ),
    ];
    let mut rows = Vec::new();
    let a = Who::Alice;
    // The owner: COMPLIANCE holds against her too.
    for r in [
        req("DeleteObject of the COMPLIANCE version", "DELETE", &c),
        req(
            "DeleteObject of the COMPLIANCE version with bypass",
            "DELETE",
            &c,
        )
        .header(bypass.0, bypass.1),
        req(
            "PutObjectRetention shortening COMPLIANCE",
            "PUT",
            in_c("retention"),
        )
        .xml(&shorter),
        req(
            "PutObjectRetention shortening COMPLIANCE with bypass",
            "PUT",
            in_c("retention"),
        )
        .header(bypass.0, bypass.1)
        .xml(&shorter),
        req(
            "PutObjectRetention COMPLIANCE to GOVERNANCE",
            "PUT",
            in_c("retention"),
        )
        .xml(&same_governance),
        req(
            "PutObjectRetention COMPLIANCE to GOVERNANCE with bypass",
            "PUT",
            in_c("retention"),
        )
        .header(bypass.0, bypass.1)
        .xml(&same_governance),
        req(
            "PutObjectRetention of the latest, shortened",
            "PUT",
            format!("/{VAULT}/c?retention"),
        )
        .header(bypass.0, bypass.1)
        .xml(&shorter),
        req("DeleteObject of the held version", "DELETE", &h),
        req("DeleteObject of the held version with bypass", "DELETE", &h)
            .header(bypass.0, bypass.1),
    ] {
        rows.push(row(a, r, ACCESS_DENIED));
    }
    rows.push(row(
        a,
        delete_objects(&[("c", Some(&f.compliance)), ("h", Some(&f.held))])
            .header(bypass.0, bypass.1),
        Expect::KeyErrors("AccessDenied"),
    ));
    rows.push(row(
        a,
        delete_objects(&[("c", Some(&f.compliance))]),
        Expect::KeyErrors("AccessDenied"),
    ));
    rows.push(row(
        a,
        req(
            "PutBucketVersioning Suspended",
            "PUT",
            format!("/{VAULT}?versioning"),
        )
        .xml(VERSIONING_SUSPENDED),
        Expect::Error(409, "InvalidBucketState"),
    ));
    rows.push(row(
        a,
        req("DeleteBucket", "DELETE", format!("/{VAULT}")),
        Expect::Error(409, "BucketNotEmpty"),
    ));
    for r in &forgeries {
        rows.push(row(a, r.clone(), ACCESS_DENIED));
        rows.push(row(Who::Bob, r.clone(), ACCESS_DENIED));
    }
    // Bob: the policy lets him delete versions and set retention, not bypass governance.
    let b = Who::Bob;
    for r in [
        req("DeleteObject of the COMPLIANCE version", "DELETE", &c),
        req(
            "DeleteObject of the COMPLIANCE version with bypass",
            "DELETE",
            &c,
        )
        .header(bypass.0, bypass.1),
        req("DeleteObject of the GOVERNANCE version", "DELETE", &g),
        req(
            "DeleteObject of the GOVERNANCE version with bypass",
            "DELETE",
            &g,
        )
        .header(bypass.0, bypass.1),
        req(
            "PutObjectRetention shortening GOVERNANCE with bypass",
            "PUT",
            format!("{g}&retention"),
        )
        .header(bypass.0, bypass.1)
        .xml(&governance_shorter),
        req(
            "PutObjectRetention shortening COMPLIANCE with bypass",
            "PUT",
            in_c("retention"),
        )
        .header(bypass.0, bypass.1)
        .xml(&shorter),
        req("PutObjectLegalHold OFF", "PUT", format!("{h}&legal-hold")).xml(HOLD_OFF),
        req(
            "PutObjectLockConfiguration",
            "PUT",
            format!("/{VAULT}?object-lock"),
        )
        .xml(&lock_default("GOVERNANCE", 1)),
        req(
            "PutBucketVersioning Suspended",
            "PUT",
            format!("/{VAULT}?versioning"),
        )
        .xml(VERSIONING_SUSPENDED),
        req("DeleteBucket", "DELETE", format!("/{VAULT}")),
        req("DeleteObject of the held version with bypass", "DELETE", &h)
            .header(bypass.0, bypass.1),
    ] {
        rows.push(row(b, r, ACCESS_DENIED));
    }
    rows.push(row(
        b,
        delete_objects(&[("g", Some(&f.governance))]).header(bypass.0, bypass.1),
        Expect::KeyErrors("AccessDenied"),
    ));
    rows.push(row(
        b,
        delete_objects(&[("c", Some(&f.compliance)), ("h", Some(&f.held))])
            .header(bypass.0, bypass.1),
        Expect::KeyErrors("AccessDenied"),
    ));
    // Anonymous.
    let anon = Who::Anonymous;
    for r in [
        req(
            "DeleteObject of the GOVERNANCE version with bypass",
            "DELETE",
            &g,
        )
        .header(bypass.0, bypass.1),
        req("PutObjectLegalHold OFF", "PUT", format!("{h}&legal-hold")).xml(HOLD_OFF),
        req(
            "PutObjectRetention shortening GOVERNANCE with bypass",
            "PUT",
            format!("{g}&retention"),
        )
        .header(bypass.0, bypass.1)
        .xml(&governance_shorter),
    ] {
        rows.push(row(anon, r, ACCESS_DENIED));
    }
    rows.push(row(
        anon,
        delete_objects(&[("g", Some(&f.governance))]).header(bypass.0, bypass.1),
        Expect::KeyErrors("AccessDenied"),
    ));
    rows
}

fn vault_reads(f: &Vault) -> Vec<Read> {
    let a = Who::Alice;
    let mut reads: Vec<Read> = vec![
        (a, "GET", format!("/{VAULT}?versions")),
        (a, "GET", format!("/{VAULT}?versioning")),
        (a, "GET", format!("/{VAULT}?object-lock")),
        (a, "GET", format!("/{VAULT}?policy")),
        (a, "HEAD", format!("/{VAULT}")),
    ];
    for (key, v) in [("c", &f.compliance), ("g", &f.governance), ("h", &f.held)] {
        for sub in ["", "&retention", "&legal-hold"] {
            reads.push((a, "GET", format!("/{VAULT}/{key}?versionId={v}{sub}")));
        }
        reads.push((a, "HEAD", format!("/{VAULT}/{key}?versionId={v}")));
        reads.push((a, "GET", format!("/{VAULT}/{key}")));
    }
    reads
}

async fn object_lock_bypass(target: Target) {
    let n = start(target);
    let addr = n.addr;
    let a = Who::Alice;
    let lock_on = [(
        "x-amz-bucket-object-lock-enabled".to_owned(),
        "true".to_owned(),
    )];
    create_bucket(addr, a, VAULT, &lock_on);
    let until = date_in(86_400);
    let compliance = put_object(
        addr,
        a,
        &format!("/{VAULT}/c"),
        "compliance",
        &[
            ("x-amz-object-lock-mode", "COMPLIANCE"),
            ("x-amz-object-lock-retain-until-date", &until),
        ],
    );
    let governance = put_object(
        addr,
        a,
        &format!("/{VAULT}/g"),
        "governance",
        &[
            ("x-amz-object-lock-mode", "GOVERNANCE"),
            ("x-amz-object-lock-retain-until-date", &until),
        ],
    );
    let held = put_object(
        addr,
        a,
        &format!("/{VAULT}/h"),
        "held",
        &[("x-amz-object-lock-legal-hold", "ON")],
    );
    put_policy(
        addr,
        VAULT,
        &json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Principal": {"AWS": arn_of(&BOB)},
            "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectRetention",
                       "s3:GetObject", "s3:GetObjectVersion", "s3:ListBucketVersions"],
            "Resource": [format!("arn:aws:s3:::{VAULT}"), format!("arn:aws:s3:::{VAULT}/*")]}]}),
    );
    let f = Vault {
        compliance,
        governance,
        held,
    };

    let reads = vault_reads(&f);
    let before = snapshot(addr, &reads);
    let rows = lock_rows(target, &f);
    let mut failures = run(addr, "object-lock bypass", &rows);
    let after = snapshot(addr, &reads);

    // The owner may bypass GOVERNANCE (not counted): bob's refusal was his permission's. In a
    // DeleteObjects, which the proxy splits by node and sends on with the client's bypass.
    let r = req(
        "DeleteObjects of the GOVERNANCE version with bypass",
        "POST",
        format!("/{VAULT}?delete"),
    )
    .header("x-amz-bypass-governance-retention", "true")
    .xml(&delete_doc(&[("g", Some(&f.governance))]));
    let got = send(addr, a, &r);
    if got.status != 200 || !got.text().contains("<Deleted>") || got.text().contains("<Error>") {
        failures.push(format!(
            "the owner's bypass of GOVERNANCE: {} {}",
            got.status,
            got.text()
        ));
    }
    // The refused DeleteBucket left no fence: she writes at once.
    let probe = req("PutObject after", "PUT", format!("/{VAULT}/probe")).xml("probe");
    let got = send(addr, a, &probe);
    if got.status != 200 {
        failures.push(format!(
            "{VAULT} fenced? PUT: {} {}",
            got.status,
            got.text()
        ));
    }
    finish("object-lock bypass", failures, &before, &after);
}

// ---------------------------------------------------------------------------------------------
// 6. Policy conditions that must deny.

const POL: &str = "pol";
const POL_OPEN: &str = "pol-open";
/// Under AWS's "deny unencrypted uploads" policy (set apart: a server that refuses the policy
/// fails its rows, not the others').
const POL_ENC: &str = "pol-enc";

const POL_KEYS: &[&str] = &[
    "home/bob/a",
    "home/carol/c",
    "secret/d",
    "pub/x",
    "net/k",
    "tls/k",
    "keep/k",
];

fn pol_policy() -> serde_json::Value {
    let bucket = format!("arn:aws:s3:::{POL}");
    let objects = |p: &str| format!("arn:aws:s3:::{POL}/{p}");
    let bob = arn_of(&BOB);
    let admin = ferry_server::User::primary(ACCESS_KEY, SECRET_KEY).canonical_id;
    json!({"Version": "2012-10-17", "Statement": [
        {"Sid": "BobMayDoAnything", "Effect": "Allow", "Principal": {"AWS": bob},
         "Action": "s3:*", "Resource": [bucket, objects("*")]},
        {"Sid": "BobListsHisHomeOnly", "Effect": "Deny", "Principal": {"AWS": bob},
         "Action": ["s3:ListBucket", "s3:ListBucketVersions"], "Resource": bucket,
         "Condition": {"StringNotLike": {"s3:prefix": "home/bob/*"}}},
        {"Sid": "AdminMayList", "Effect": "Allow", "Principal": {"CanonicalUser": admin},
         "Action": ["s3:ListBucket", "s3:ListBucketVersions"], "Resource": bucket},
        {"Sid": "AdminNotSecrets", "Effect": "Deny", "Principal": {"CanonicalUser": admin},
         "Action": ["s3:ListBucket", "s3:ListBucketVersions"], "Resource": bucket,
         "Condition": {"StringLike": {"s3:prefix": "secret*"}}},
        {"Sid": "PublicRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": objects("pub/*")},
        {"Sid": "NotBob", "Effect": "Deny", "Principal": {"AWS": bob},
         "Action": ["s3:GetObject", "s3:GetObjectVersion"],
         "Resource": [objects("pub/*"), objects("secret/*")]},
        {"Sid": "OnlyFromTen", "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": objects("net/*"),
         "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}},
        {"Sid": "OnlyOverTls", "Effect": "Deny", "Principal": "*",
         "Action": ["s3:GetObject", "s3:PutObject"], "Resource": objects("tls/*"),
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
        {"Sid": "KeepIsAlices", "Effect": "Deny",
         "Principal": {"AWS": bob},
         "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObject"],
         "Resource": objects("keep/*")},
    ]})
}

fn pol_enc_policy() -> serde_json::Value {
    let arns = [
        format!("arn:aws:s3:::{POL_ENC}"),
        format!("arn:aws:s3:::{POL_ENC}/*"),
    ];
    json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": arn_of(&BOB)}, "Action": "s3:*", "Resource": arns},
        {"Sid": "OnlyEncrypted", "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": arns[1],
         "Condition": {"Null": {"s3:x-amz-server-side-encryption": "true"}}}]})
}

fn pol_open_policy() -> serde_json::Value {
    json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
        "Action": "s3:*",
        "Resource": [format!("arn:aws:s3:::{POL_OPEN}"), format!("arn:aws:s3:::{POL_OPEN}/*")]}]})
}

fn policy_rows(_target: Target) -> Vec<Row> {
    let mut rows = Vec::new();
    let b = Who::Bob;
    let a = Who::Alice;
    let anon = Who::Anonymous;
    // s3:prefix: bob lists under home/bob/ only, objects and versions alike.
    for prefix in [
        None,
        Some(""),
        Some("home/"),
        Some("home/carol/"),
        Some("secret/"),
        Some("home/bob"),
    ] {
        let p = prefix.map(|p| format!("&prefix={p}")).unwrap_or_default();
        let p1 = prefix.map(|p| format!("?prefix={p}")).unwrap_or_default();
        let label = format!("{prefix:?}");
        rows.push(row(
            b,
            req(
                format!("ListObjectVersions prefix {label}"),
                "GET",
                format!("/{POL}?versions{p}"),
            ),
            ACCESS_DENIED,
        ));
        rows.push(row(
            b,
            req(
                format!("ListObjectsV2 prefix {label}"),
                "GET",
                format!("/{POL}?list-type=2{p}"),
            ),
            ACCESS_DENIED,
        ));
        rows.push(row(
            b,
            req(
                format!("ListObjects prefix {label}"),
                "GET",
                format!("/{POL}{p1}"),
            ),
            ACCESS_DENIED,
        ));
    }
    // A prefix given twice: the policy judges the one the listing lists (the first in
    // order), never one while another is listed.
    for (what, target, expect) in [
        (
            "ListObjectsV2 with two prefixes",
            format!("/{POL}?list-type=2&prefix=home/bob/&prefix=secret/"),
            Expect::OkWithout("secret/d"),
        ),
        (
            "ListObjectVersions with two prefixes",
            format!("/{POL}?versions&prefix=secret/&prefix=home/bob/"),
            Expect::OkWithout("secret/d"),
        ),
        (
            "ListObjectsV2 with an empty prefix beside his",
            format!("/{POL}?list-type=2&prefix=home/bob/&prefix="),
            ACCESS_DENIED,
        ),
    ] {
        rows.push(row(b, req(what, "GET", target), expect));
    }
    // And a Deny on the prefixes it names (StringLike): the primary user lists all but
    // secret*, versions too.
    for prefix in ["secret", "secret/", "secret/d"] {
        for (what, target) in [
            (
                "ListObjectVersions",
                format!("/{POL}?versions&prefix={prefix}"),
            ),
            (
                "ListObjectsV2",
                format!("/{POL}?list-type=2&prefix={prefix}"),
            ),
            ("ListObjects", format!("/{POL}?prefix={prefix}")),
        ] {
            let r = req(format!("{what} of a denied prefix {prefix}"), "GET", target);
            rows.push(row(Who::Admin, r, ACCESS_DENIED));
        }
    }
    // aws:SourceIp: a client cannot claim another address.
    let net = format!("/{POL}/net/k");
    for who in [a, b] {
        for (label, headers) in [
            ("", vec![]),
            (
                "+ x-ferry-client-ip",
                vec![("x-ferry-client-ip", "10.1.2.3")],
            ),
            (
                "+ x-ferry-client-ip and tls",
                vec![
                    ("x-ferry-client-ip", "10.1.2.3"),
                    ("x-ferry-client-tls", "true"),
                ],
            ),
            ("+ X-Forwarded-For", vec![("X-Forwarded-For", "10.1.2.3")]),
            (
                "+ Forwarded",
                vec![("Forwarded", "for=10.1.2.3;proto=https")],
            ),
            ("+ X-Real-IP", vec![("X-Real-IP", "10.1.2.3")]),
        ] {
            let mut r = req(
                format!("PutObject under a SourceIp Deny {label}"),
                "PUT",
                &net,
            )
            .body("from afar");
            for (n, v) in headers {
                r = r.header(n, v);
            }
            rows.push(row(who, r, ACCESS_DENIED));
        }
    }
    // aws:SecureTransport over plain HTTP.
    let tls = format!("/{POL}/tls/k");
    for who in [a, b] {
        for (label, header) in [
            ("", None),
            ("+ x-ferry-client-tls", Some(("x-ferry-client-tls", "true"))),
            (
                "+ x-ferry-client-tls-version",
                Some(("x-ferry-client-tls-version", "1.3")),
            ),
            ("+ X-Forwarded-Proto", Some(("X-Forwarded-Proto", "https"))),
        ] {
            let mut get = req(
                format!("GetObject under a SecureTransport Deny {label}"),
                "GET",
                &tls,
            );
            let mut put = req(
                format!("PutObject under a SecureTransport Deny {label}"),
                "PUT",
                &tls,
            )
            .body("plain");
            if let Some((n, v)) = header {
                get = get.header(n, v);
                put = put.header(n, v);
            }
            rows.push(row(who, get, ACCESS_DENIED));
            rows.push(row(who, put, ACCESS_DENIED));
        }
        let head = req("HeadObject under a SecureTransport Deny", "HEAD", &tls);
        rows.push(row(who, head, Expect::Status(403)));
    }
    // A Deny on GetObject for bob beside an Allow for everyone.
    for (what, method, target) in [
        (
            "GetObject of a public object",
            "GET",
            format!("/{POL}/pub/x"),
        ),
        (
            "HeadObject of a public object",
            "HEAD",
            format!("/{POL}/pub/x"),
        ),
        ("GetObject of a secret", "GET", format!("/{POL}/secret/d")),
        (
            "GetObject of a public object, a range",
            "GET",
            format!("/{POL}/pub/x"),
        ),
    ] {
        let r = req(what, method, target);
        let r = if what.ends_with("range") {
            r.header("Range", "bytes=0-0")
        } else {
            r
        };
        let e = refused(&r);
        rows.push(row(b, r, e));
    }
    // Deny PutObject unless encrypted.
    for who in [a, b] {
        let r = req(
            "PutObject unencrypted under an encryption Deny",
            "PUT",
            format!("/{POL_ENC}/k"),
        )
        .body("plain");
        rows.push(row(who, r, ACCESS_DENIED));
        let r = req(
            "PutObject over it, unencrypted",
            "PUT",
            format!("/{POL_ENC}/kept"),
        )
        .body("plain");
        rows.push(row(who, r, ACCESS_DENIED));
        let r = req(
            "CopyObject unencrypted under an encryption Deny",
            "PUT",
            format!("/{POL_ENC}/copied"),
        )
        .header("x-amz-copy-source", &format!("/{POL_ENC}/kept"));
        rows.push(row(who, r, ACCESS_DENIED));
        let r = req(
            "CreateMultipartUpload unencrypted under an encryption Deny",
            "POST",
            format!("/{POL_ENC}/mp?uploads"),
        );
        rows.push(row(who, r, ACCESS_DENIED));
    }
    // A principal-scoped Deny (NotPrincipal is refused as a policy, below).
    // (Bob, named by the Deny beside his s3:*; the primary user, granted nothing.)
    for who in [b, Who::Admin] {
        rows.push(row(
            who,
            req(
                "DeleteObject under keep/",
                "DELETE",
                format!("/{POL}/keep/k"),
            ),
            ACCESS_DENIED,
        ));
        rows.push(row(
            who,
            req("PutObject under keep/", "PUT", format!("/{POL}/keep/k")).body("mine"),
            ACCESS_DENIED,
        ));
        rows.push(row(
            who,
            req(
                "DeleteObjects under keep/",
                "POST",
                format!("/{POL}?delete"),
            )
            .xml(&delete_doc(&[("keep/k", None)])),
            Expect::KeyErrors("AccessDenied"),
        ));
    }
    let not_principal = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Deny",
        "NotPrincipal": {"AWS": arn_of(&ALICE)}, "Action": "s3:*",
        "Resource": [format!("arn:aws:s3:::{POL}"), format!("arn:aws:s3:::{POL}/*")]}]});
    rows.push(row(
        a,
        req(
            "PutBucketPolicy with NotPrincipal (unsupported: refused, not half-read)",
            "PUT",
            format!("/{POL}?policy"),
        )
        .xml(&not_principal.to_string()),
        Expect::Error(400, "MalformedPolicy"),
    ));
    // An anonymous Allow on GetObject under pub/ lets nothing else through.
    for (what, method, target) in [
        ("ListObjects", "GET", format!("/{POL}")),
        ("ListObjects of pub/", "GET", format!("/{POL}?prefix=pub/")),
        ("ListObjectsV2", "GET", format!("/{POL}?list-type=2")),
        ("ListObjectVersions", "GET", format!("/{POL}?versions")),
        ("ListMultipartUploads", "GET", format!("/{POL}?uploads")),
        ("HeadBucket", "HEAD", format!("/{POL}")),
        ("GetBucketAcl", "GET", format!("/{POL}?acl")),
        ("GetBucketPolicy", "GET", format!("/{POL}?policy")),
        (
            "GetBucketPolicyStatus",
            "GET",
            format!("/{POL}?policyStatus"),
        ),
        ("GetBucketLocation", "GET", format!("/{POL}?location")),
        (
            "GetObject outside pub/",
            "GET",
            format!("/{POL}/home/bob/a"),
        ),
        (
            "GetObjectAcl of a public object",
            "GET",
            format!("/{POL}/pub/x?acl"),
        ),
        (
            "GetObjectTagging of a public object",
            "GET",
            format!("/{POL}/pub/x?tagging"),
        ),
        (
            "GetObjectAttributes of a public object",
            "GET",
            format!("/{POL}/pub/x?attributes"),
        ),
        ("PutObject under pub/", "PUT", format!("/{POL}/pub/y")),
        ("DeleteObject under pub/", "DELETE", format!("/{POL}/pub/x")),
        ("ListBuckets", "GET", "/".to_owned()),
    ] {
        let mut r = req(what, method, target);
        if what.starts_with("GetObjectAttributes") {
            r = r.header("x-amz-object-attributes", "ETag");
        }
        let e = refused(&r);
        rows.push(row(anon, r, e));
    }
    // The policy is the owner's: bob, whom it lets do s3:*, gets 405; anonymous, under a
    // policy letting everyone do s3:*, 403.
    let takeover = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": "*", "Action": "s3:*", "Resource": [format!("arn:aws:s3:::{POL}/*")]}]});
    for bucket in [POL, POL_OPEN] {
        let put = req("PutBucketPolicy", "PUT", format!("/{bucket}?policy"))
            .xml(&takeover.to_string().replace(POL, bucket));
        let get = req("GetBucketPolicy", "GET", format!("/{bucket}?policy"));
        let delete = req("DeleteBucketPolicy", "DELETE", format!("/{bucket}?policy"));
        for r in [put, get, delete] {
            rows.push(row(b, r.clone(), Expect::Error(405, "MethodNotAllowed")));
            rows.push(row(anon, r.clone(), ACCESS_DENIED));
            if bucket == POL {
                rows.push(row(Who::Admin, r, ACCESS_DENIED));
            }
        }
    }
    rows
}

fn policy_reads() -> Vec<Read> {
    let a = Who::Alice;
    let mut reads: Vec<Read> = vec![
        (a, "GET", format!("/{POL}?list-type=2")),
        (a, "GET", format!("/{POL}?versions")),
        (a, "GET", format!("/{POL}?uploads")),
        (a, "GET", format!("/{POL}?policy")),
        (a, "GET", format!("/{POL_OPEN}?policy")),
        (a, "GET", format!("/{POL_OPEN}?versions")),
        (a, "GET", format!("/{POL_ENC}?versions")),
        (a, "GET", format!("/{POL_ENC}?uploads")),
        (a, "GET", format!("/{POL_ENC}/kept")),
    ];
    for key in POL_KEYS {
        reads.push((a, "GET", format!("/{POL}/{key}")));
        reads.push((a, "GET", format!("/{POL}/{key}?acl")));
    }
    reads
}

async fn policy_conditions_deny(target: Target) {
    let n = start(target);
    let addr = n.addr;
    let a = Who::Alice;
    create_bucket(addr, a, POL, &[]);
    for key in POL_KEYS {
        put_object(addr, a, &format!("/{POL}/{key}"), key, &[]);
    }
    put_policy(addr, POL, &pol_policy());
    create_bucket(addr, a, POL_OPEN, &[]);
    put_policy(addr, POL_OPEN, &pol_open_policy());
    create_bucket(addr, a, POL_ENC, &[]);
    put_object(
        addr,
        a,
        &format!("/{POL_ENC}/kept"),
        "kept",
        &[("x-amz-server-side-encryption", "AES256")],
    );
    let r = req(
        "PutBucketPolicy denying unencrypted uploads",
        "PUT",
        format!("/{POL_ENC}?policy"),
    );
    let got = send(addr, a, &r.xml(&pol_enc_policy().to_string()));
    let mut failures = Vec::new();
    if got.status != 204 {
        failures.push(format!(
            "{POL_ENC}'s policy refused: {} {}",
            got.status,
            got.text()
        ));
    }

    let reads = policy_reads();
    let before = snapshot(addr, &reads);
    let rows = policy_rows(target);
    failures.extend(run(addr, "policy conditions", &rows));
    let after = snapshot(addr, &reads);

    // What the policy allows still works (not counted): bob lists his home, anyone reads
    // pub/, an encrypted PUT goes.
    let mut positive = |who: Who, r: Req, want: &str| {
        let got = send(addr, who, &r);
        if got.status != 200 || !got.text().contains(want) {
            failures.push(format!("{who:?} {}: {} {}", r.what, got.status, got.text()));
        }
    };
    positive(
        Who::Bob,
        req(
            "ListObjectVersions of home/bob/",
            "GET",
            format!("/{POL}?versions&prefix=home/bob/"),
        ),
        "home/bob/a",
    );
    positive(
        Who::Bob,
        req(
            "ListObjectsV2 of home/bob/",
            "GET",
            format!("/{POL}?list-type=2&prefix=home/bob/"),
        ),
        "home/bob/a",
    );
    positive(
        Who::Admin,
        req(
            "ListObjectVersions of home/",
            "GET",
            format!("/{POL}?versions&prefix=home/"),
        ),
        "home/carol/c",
    );
    positive(
        Who::Anonymous,
        req("GetObject of pub/", "GET", format!("/{POL}/pub/x")),
        "pub/x",
    );
    positive(
        a,
        req("PutObject encrypted", "PUT", format!("/{POL_ENC}/new"))
            .header("x-amz-server-side-encryption", "AES256")
            .body("sealed"),
        "",
    );
    finish("policy conditions", failures, &before, &after);
}

// ---------------------------------------------------------------------------------------------
// The count.

/// Every table's rows, built as the tests build them (with made-up ids): at least 300 hostile
/// cases per target.
async fn hostile_case_count(target: Target) {
    let host = "127.0.0.1:9";
    let counts = [
        (
            "cross-user access",
            cross_user_rows(target, &Tenancy::default()).len(),
        ),
        (
            "internal headers and parameters",
            internal_rows(target, &Inside::default()).len(),
        ),
        (
            "presigned URL tampering",
            presigned_rows(
                target,
                &Presigned {
                    host: host.to_owned(),
                    ..Presigned::default()
                },
            )
            .len(),
        ),
        ("POST form tricks", form_rows(target).len()),
        (
            "object-lock bypass",
            lock_rows(target, &Vault::default()).len(),
        ),
        ("policy conditions", policy_rows(target).len()),
    ];
    for (category, n) in counts {
        println!("{category}: {n} cases");
    }
    let cases: usize = counts.iter().map(|(_, n)| n).sum();
    println!("total: {cases} hostile cases");
    assert!(cases >= 300, "only {cases} hostile cases: {counts:?}");
    for (category, n) in counts {
        assert!(n > 0, "{category} has no cases");
    }
}
