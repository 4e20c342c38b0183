//! Requests for what Ferry does not do are refused, never served with the feature ignored:
//! server-side encryption Ferry does not do (dual-layer SSE-KMS, an encryption of UploadPart's
//! own), website redirects and unknown subresources answer `501 NotImplemented`; encryption
//! Ferry does but cannot give here is refused as AWS refuses it (SSE-C over plain HTTP `400
//! InvalidRequest`, SSE-KMS on a node without a keyring `400 KMS.NotFoundException`; the
//! `sdk_sse*` tests cover both when they are given); object lock headers on a bucket without
//! object lock answer `400 InvalidRequest`; ACL headers on an operation that sets no ACL
//! answer `400 AccessControlListNotSupported`, grants by e-mail `501 NotImplemented`. Nothing
//! is stored. On a node and through the proxy, both runtimes; a raw signed client for every
//! header family and the AWS SDK for a few.

use aws_sdk_s3::types::{ObjectCannedAcl, ServerSideEncryption};

use crate::support::http::{Client, Response};
use crate::support::sdk::{self, Target, TestNode};

on_every_target!(feature_headers_refused, sdk_requests_refused);

/// A request and the answer it must get: method, target, headers, status, error code.
type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, u16, &'a str);

fn code(r: &Response) -> String {
    r.error_code()
        .unwrap_or_else(|| panic!("no error code in {r:?}"))
}

async fn feature_headers_refused(target: Target) {
    let n = TestNode::start(target);
    n.bucket("feat").await;
    n.put("feat", "src", b"source bytes".to_vec()).await;
    let mut c = Client::connect(n.addr);
    let b64key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let key_md5 = "hRasmdxgYDKV3nvbahU1MA==";
    let sse_c: &[(&str, &str)] = &[
        ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
        ("x-amz-server-side-encryption-customer-key", b64key),
        ("x-amz-server-side-encryption-customer-key-MD5", key_md5),
    ];
    // (method, target, headers, status, code)
    let cases: Vec<Case<'_>> = vec![
        // SSE-C over plain HTTP, as AWS answers it (`sdk_sse` covers SSE-C over TLS).
        ("PUT", "/feat/k", sse_c.to_vec(), 400, "InvalidRequest"),
        (
            "PUT",
            "/feat/k?partNumber=1&uploadId=none",
            sse_c.to_vec(),
            400,
            "InvalidRequest",
        ),
        // UploadPart takes no encryption of its own: its upload's.
        (
            "PUT",
            "/feat/k?partNumber=1&uploadId=none",
            vec![("x-amz-server-side-encryption", "AES256")],
            501,
            "NotImplemented",
        ),
        (
            "PUT",
            "/feat/k",
            vec![("x-amz-server-side-encryption", "aws:kms:dsse")],
            501,
            "NotImplemented",
        ),
        // SSE-KMS on a node without a keyring (`sdk_sse_kms` covers it with one).
        (
            "PUT",
            "/feat/k",
            vec![("x-amz-server-side-encryption", "aws:kms")],
            400,
            "KMS.NotFoundException",
        ),
        (
            "PUT",
            "/feat/k",
            vec![
                ("x-amz-copy-source", "feat/src"),
                ("x-amz-server-side-encryption", "aws:kms:dsse"),
            ],
            501,
            "NotImplemented",
        ),
        (
            "POST",
            "/feat/k?uploads",
            vec![("x-amz-server-side-encryption", "aws:kms:dsse")],
            501,
            "NotImplemented",
        ),
        ("GET", "/feat/src", sse_c.to_vec(), 400, "InvalidRequest"),
        (
            "PUT",
            "/feat/k",
            vec![
                ("x-amz-object-lock-mode", "COMPLIANCE"),
                (
                    "x-amz-object-lock-retain-until-date",
                    "2030-01-01T00:00:00Z",
                ),
            ],
            400,
            "InvalidRequest",
        ),
        (
            "PUT",
            "/feat/k",
            vec![("x-amz-object-lock-legal-hold", "ON")],
            400,
            "InvalidRequest",
        ),
        (
            "PUT",
            "/feat/k",
            vec![("x-amz-website-redirect-location", "/elsewhere")],
            501,
            "NotImplemented",
        ),
        // An ACL on an operation that sets none (objects and buckets take them where they are
        // created or their ACL is set).
        (
            "PUT",
            "/feat/k?tagging",
            vec![("x-amz-acl", "public-read")],
            400,
            "AccessControlListNotSupported",
        ),
        (
            "DELETE",
            "/feat/k",
            vec![("x-amz-grant-read", "id=someone")],
            400,
            "AccessControlListNotSupported",
        ),
        // Grants to unknown users, or by e-mail address.
        (
            "PUT",
            "/feat/k",
            vec![("x-amz-grant-read", "id=someone")],
            400,
            "InvalidArgument",
        ),
        (
            "PUT",
            "/feat/k",
            vec![
                ("x-amz-copy-source", "feat/src"),
                ("x-amz-grant-full-control", "emailAddress=\"x@example.com\""),
            ],
            501,
            "NotImplemented",
        ),
        ("GET", "/feat/src?torrent", vec![], 501, "NotImplemented"),
        ("GET", "/feat?attributes", vec![], 501, "NotImplemented"),
        // GetObjectAttributes needs the attributes it is to answer.
        (
            "GET",
            "/feat/src?attributes",
            vec![],
            400,
            "InvalidArgument",
        ),
        ("PUT", "/feat/k?somethingnew", vec![], 501, "NotImplemented"),
    ];
    for (method, path, headers, status, want) in &cases {
        let r = c.request(method, path, headers, b"secret plaintext");
        assert_eq!(
            (r.status, code(&r).as_str()),
            (*status, *want),
            "{method} {path} {headers:?}"
        );
    }
    // Nothing was stored: no object, no upload.
    assert_eq!(c.request("HEAD", "/feat/k", &[], b"").status, 404);
    let uploads = c.get("/feat?uploads");
    assert_eq!(uploads.status, 200);
    assert!(uploads.xml_values("UploadId").is_empty(), "{uploads:?}");
    // Buckets have ACLs (objects do not): a canned ACL on CreateBucket is kept.
    let r = c.request("PUT", "/feat-public", &[("x-amz-acl", "public-read")], b"");
    assert_eq!(r.status, 200, "{r:?}");
    let acl = c.get("/feat-public?acl");
    assert_eq!(
        acl.xml_values("URI"),
        ["http://acs.amazonaws.com/groups/global/AllUsers"]
    );
    // What asks for nothing more than Ferry does still works.
    for headers in [
        vec![("x-amz-acl", "private")],
        vec![("x-amz-acl", "bucket-owner-full-control")],
        vec![("x-amz-tagging", "")],
    ] {
        assert_eq!(
            c.request("PUT", "/feat/k", &headers, b"ok").status,
            200,
            "{headers:?}"
        );
    }
    assert_eq!(n.get("feat", "k").await, b"ok");
}

async fn sdk_requests_refused(target: Target) {
    let n = TestNode::start(target);
    n.bucket("feat").await;
    let put = || {
        n.client
            .put_object()
            .bucket("feat")
            .key("sdk")
            .body(b"plain".to_vec().into())
    };
    let r = put()
        .server_side_encryption(ServerSideEncryption::AwsKmsDsse)
        .send()
        .await;
    sdk::assert_error(r, 501, Some("NotImplemented"));
    let r = n
        .client
        .head_object()
        .bucket("feat")
        .key("sdk")
        .send()
        .await;
    sdk::assert_error(r, 404, None);
    let r = n
        .client
        .create_multipart_upload()
        .bucket("feat")
        .key("sdk")
        .server_side_encryption(ServerSideEncryption::AwsKmsDsse)
        .send()
        .await;
    sdk::assert_error(r, 501, Some("NotImplemented"));
    let r = put().acl(ObjectCannedAcl::Private).send().await;
    assert!(r.is_ok(), "{r:?}");
}
