//! Versioning over raw HTTP, on a node and through a proxy with its own node keys (requests
//! re-signed), both runtimes: the documents as AWS writes them (`<Version>` and
//! `<DeleteMarker>` interleaved by key and age, which the SDKs split apart), the headers of
//! delete markers, and the errors of bad versioning requests.

use ferry_server::RuntimeKind;

use crate::support::http::{Client, Response};
use crate::support::node::Node;
use crate::support::proxy::{Auth, Setup};

on_both_runtimes!(node_documents_and_errors, proxy_documents_and_errors);

fn node_documents_and_errors(rt: RuntimeKind) {
    let node = Node::start(rt);
    documents_and_errors(&mut node.client());
}

fn proxy_documents_and_errors(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::OwnKeys);
    documents_and_errors(&mut s.client());
}

const ENABLED: &[u8] = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#;

/// The `<Version>` / `<DeleteMarker>` entries of a listing, in document order: (element, key,
/// version id, is latest).
fn entries(r: &Response) -> Vec<(String, String, String, String)> {
    let text = r.text();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    loop {
        let v = rest.find("<Version>");
        let m = rest.find("<DeleteMarker>");
        let (at, name) = match (v, m) {
            (Some(a), Some(b)) if a < b => (a, "Version"),
            (Some(_), Some(b)) => (b, "DeleteMarker"),
            (Some(a), None) => (a, "Version"),
            (None, Some(b)) => (b, "DeleteMarker"),
            (None, None) => return out,
        };
        let close = format!("</{name}>");
        let body_start = at + name.len() + 2;
        let end = rest[body_start..].find(&close).expect("closed") + body_start;
        let el = &rest[body_start..end];
        let value = |tag: &str| {
            crate::support::http::xml_values(el, tag)
                .into_iter()
                .next()
                .unwrap_or_default()
        };
        out.push((
            name.to_owned(),
            value("Key"),
            value("VersionId"),
            value("IsLatest"),
        ));
        rest = &rest[end + close.len()..];
    }
}

fn documents_and_errors(c: &mut Client) {
    assert_eq!(c.put("/raw", b"").status, 200);
    let r = c.get("/raw?versioning");
    assert_eq!(r.status, 200);
    assert!(!r.text().contains("<Status>"), "{}", r.text());
    let r = c.put("/raw?versioning", ENABLED);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("/raw?versioning");
    assert!(
        r.text()
            .contains("<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status></VersioningConfiguration>"),
        "{}",
        r.text()
    );

    let a1 = c.put("/raw/a", b"1");
    let a1 = a1
        .header("x-amz-version-id")
        .expect("version id")
        .to_owned();
    let a2 = c.put("/raw/a", b"2");
    let a2 = a2
        .header("x-amz-version-id")
        .expect("version id")
        .to_owned();
    let del = c.request("DELETE", "/raw/a", &[], b"");
    assert_eq!(del.status, 204);
    assert_eq!(del.header("x-amz-delete-marker"), Some("true"));
    let marker = del
        .header("x-amz-version-id")
        .expect("marker id")
        .to_owned();
    let b1 = c.put("/raw/b", b"b");
    let b1 = b1
        .header("x-amz-version-id")
        .expect("version id")
        .to_owned();

    let r = c.get("/raw?versions");
    assert_eq!(r.status, 200, "{}", r.text());
    let t = r.text();
    assert!(
        t.contains(
            "<ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>raw</Name>"
        ),
        "{t}"
    );
    assert_eq!(r.xml_value("IsTruncated").as_deref(), Some("false"));
    let s = |v: &str| v.to_owned();
    assert_eq!(
        entries(&r),
        [
            (s("DeleteMarker"), s("a"), marker.clone(), s("true")),
            (s("Version"), s("a"), a2.clone(), s("false")),
            (s("Version"), s("a"), a1.clone(), s("false")),
            (s("Version"), s("b"), b1.clone(), s("true")),
        ]
    );
    // A page ending inside a key continues with its next version.
    let r = c.get("/raw?versions&max-keys=2");
    assert_eq!(r.xml_value("IsTruncated").as_deref(), Some("true"));
    assert_eq!(r.xml_value("NextKeyMarker").as_deref(), Some("a"));
    assert_eq!(r.xml_value("NextVersionIdMarker"), Some(a2.clone()));
    let r = c.get(&format!(
        "/raw?versions&key-marker=a&version-id-marker={a2}&max-keys=2"
    ));
    assert_eq!(
        entries(&r),
        [
            (s("Version"), s("a"), a1.clone(), s("false")),
            (s("Version"), s("b"), b1.clone(), s("true")),
        ]
    );
    assert_eq!(r.xml_value("IsTruncated").as_deref(), Some("false"));
    assert_eq!(r.xml_value("VersionIdMarker"), Some(a2.clone()));

    // Delete markers answer GET and HEAD with their header.
    let r = c.get("/raw/a");
    r.expect_error(404, "NoSuchKey");
    assert_eq!(r.header("x-amz-delete-marker"), Some("true"));
    assert_eq!(r.header("x-amz-version-id"), Some(marker.as_str()));
    let r = c.get(&format!("/raw/a?versionId={marker}"));
    r.expect_error(405, "MethodNotAllowed");
    assert_eq!(r.header("x-amz-delete-marker"), Some("true"));
    let r = c.get(&format!("/raw/a?versionId={a1}"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"1"[..]));
    assert_eq!(r.header("x-amz-version-id"), Some(a1.as_str()));

    // Bad requests change nothing.
    c.put(
        "/raw?versioning",
        b"<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>",
    )
    .expect_error(501, "NotImplemented");
    c.put(
        "/raw?versioning",
        b"<VersioningConfiguration><Status>Off</Status></VersioningConfiguration>",
    )
    .expect_error(400, "MalformedXML");
    c.put("/raw?versioning", b"not xml")
        .expect_error(400, "MalformedXML");
    c.request("DELETE", "/raw/b", &[("x-amz-mfa", "123456 789")], b"")
        .expect_error(501, "NotImplemented");
    c.get("/raw/a?versionId=bogus")
        .expect_error(400, "InvalidArgument");
    c.get("/raw?versions&version-id-marker=null")
        .expect_error(400, "InvalidArgument");
    c.get("/raw?versions&max-keys=-1")
        .expect_error(400, "InvalidArgument");
    c.get("/missing?versions").expect_error(404, "NoSuchBucket");
    c.get("/raw/a?versionId=0000000000000001")
        .expect_error(404, "NoSuchVersion");
    assert_eq!(c.get("/raw/b").status, 200);
    assert_eq!(entries(&c.get("/raw?versions")).len(), 4);
}

/// Ferry's placement headers over HTTP are the cluster's: placed in a request the cluster
/// sealed, a version keeps its id and date (and a delete marker its id); bad values are `400`;
/// unsealed, they are refused (`403`) whoever signs — the bucket's owner included — and nothing
/// is written.
#[test]
fn placement_headers_are_the_clusters() {
    use ferry_core::s3::sigv4::Credentials;
    use ferry_server::start_node;

    use crate::support::ALICE;
    use crate::support::node::node_config;

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = node_config(dir.path(), RuntimeKind::Tokio);
    cfg.users = vec![ALICE.user()];
    cfg.fsync = false;
    let node = start_node(cfg).expect("node");
    let mut c = Client::connect(node.local_addr());
    assert_eq!(c.put("/placed", b"").status, 200);
    assert_eq!(c.put("/placed?versioning", ENABLED).status, 200);
    let id = crate::support::recent_version_id();
    let placed = [
        ("x-ferry-version-id", id.as_str()),
        ("x-ferry-last-modified", "1500000000"),
    ];
    // The owner, unsealed: refused, and nothing written.
    c.request("PUT", "/placed/k", &placed, b"placed")
        .expect_error(403, "AccessDenied");
    c.get("/placed/k").expect_error(404, "NoSuchKey");
    let r = c.sealed("PUT", "/placed/k", &placed, b"placed");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-version-id"), Some(id.as_str()));
    let r = c.get(&format!("/placed/k?versionId={id}"));
    assert_eq!(r.body, b"placed");
    assert_eq!(
        r.header("last-modified"),
        Some("Fri, 14 Jul 2017 02:40:00 GMT")
    );
    // A delete marker placed above it (a smaller id is a newer version).
    let seq = !u64::from_str_radix(&id, 16).unwrap();
    let marker = format!("{:016x}", !(seq + 1));
    let named = [("x-ferry-version-id", marker.as_str())];
    c.request("DELETE", "/placed/k", &named, b"")
        .expect_error(403, "AccessDenied");
    assert_eq!(c.get("/placed/k").body, b"placed");
    let r = c.sealed("DELETE", "/placed/k", &named, b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("x-amz-version-id"), Some(marker.as_str()));
    assert_eq!(r.header("x-amz-delete-marker"), Some("true"));
    assert_eq!(c.get("/placed/k").status, 404);
    for bad in [
        [
            ("x-ferry-version-id", "null"),
            ("x-ferry-last-modified", "1"),
        ],
        [
            ("x-ferry-version-id", "nonsense"),
            ("x-ferry-last-modified", "1"),
        ],
        [
            ("x-ferry-version-order", "5"),
            ("x-ferry-last-modified", "1"),
        ],
        [
            ("x-ferry-version-id", id.as_str()),
            ("x-ferry-last-modified", "soon"),
        ],
    ] {
        let r = c.sealed("PUT", "/placed/bad", &bad, b"x");
        assert_eq!(r.status, 400, "{bad:?}: {}", r.text());
    }
    // Alice may write into the bucket, but not place or date what she writes.
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/alice"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::placed/*"}]}"#;
    assert_eq!(c.put("/placed?policy", policy.as_bytes()).status, 204);
    let mut alice = Client::connect(node.local_addr());
    alice.credentials = Credentials::new(ALICE.access_key, ALICE.secret_key);
    assert_eq!(alice.put("/placed/hers", b"fine").status, 200);
    let r = alice.request(
        "PUT",
        "/placed/hers",
        &[("x-ferry-last-modified", "1500000000")],
        b"dated",
    );
    r.expect_error(403, "AccessDenied");
    assert_eq!(c.get("/placed/hers").body, b"fine");
    node.stop();
}
