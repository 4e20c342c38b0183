//! Listings through the proxy over three nodes: thousands of keys spread by placement, read
//! back in small pages (v1 and v2, with and without delimiter) and compared with the global
//! order computed here; multipart upload listings; continuation tokens that resist tampering.

use std::collections::BTreeSet;

use ferry_core::s3::uri;
use ferry_core::s3::xml::{ListBucketResult, ListMultipartUploadsResult, ListVersion};
use ferry_server::RuntimeKind;

use crate::support::http::Client;
use crate::support::proxy::{Auth, Setup};

const KEYS: usize = 2000;

fn key(i: usize) -> String {
    match i % 4 {
        0 => format!("top-{i:04}"),
        1 => format!("dir{}/{i:04}", i % 7),
        2 => format!("dir{}/sub{}/{i:04}", i % 5, i % 3),
        _ => format!("z {i:04} ü"),
    }
}

/// What S3 lists for `prefix`/`delimiter` over sorted `keys`: keys and common prefixes in
/// order (the naive model the merge is checked against).
fn expected(keys: &BTreeSet<String>, prefix: &str, delimiter: Option<&str>) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for k in keys.iter().filter(|k| k.starts_with(prefix)) {
        let rest = &k[prefix.len()..];
        match delimiter.and_then(|d| rest.find(d).map(|i| i + d.len())) {
            Some(end) => {
                let cp = format!("{prefix}{}", &rest[..end]);
                if out.last().is_none_or(|(l, _)| *l != cp) {
                    out.push((cp, true));
                }
            }
            None => out.push((k.clone(), false)),
        }
    }
    out
}

fn populate(c: &mut Client, s: &Setup) -> BTreeSet<String> {
    assert_eq!(c.put("/many", b"").status, 200);
    let mut keys = BTreeSet::new();
    for i in 0..KEYS {
        let k = key(i);
        let r = c.put(&format!("/many/{}", uri::encode_path(&k)), k.as_bytes());
        assert_eq!(r.status, 200, "{k}: {}", r.text());
        keys.insert(k);
    }
    // Spread over every node.
    let per_node: BTreeSet<usize> = keys.iter().map(|k| s.node_of("many", k)).collect();
    assert_eq!(per_node.len(), 3);
    keys
}

/// Page through a listing; the items of each page in order as (name, is_prefix).
fn pages(
    c: &mut Client,
    v2: bool,
    prefix: &str,
    delimiter: Option<&str>,
    max: u32,
) -> Vec<Vec<(String, bool)>> {
    let mut out = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let mut q = if v2 {
            "list-type=2".to_owned()
        } else {
            String::new()
        };
        let mut add = |n: &str, v: &str| {
            if !q.is_empty() {
                q.push('&');
            }
            q.push_str(&format!("{n}={}", uri::encode(v)));
        };
        add("max-keys", &max.to_string());
        if !prefix.is_empty() {
            add("prefix", prefix);
        }
        if let Some(d) = delimiter {
            add("delimiter", d);
        }
        if let Some(n) = &next {
            add(if v2 { "continuation-token" } else { "marker" }, n);
        }
        let r = c.get(&format!("/many?{q}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let doc = ListBucketResult::parse_xml(&r.body).unwrap();
        assert_eq!(doc.max_keys, max);
        let mut page: Vec<(String, bool)> = doc
            .contents
            .iter()
            .map(|o| (o.key.to_string(), false))
            .collect();
        page.extend(doc.common_prefixes.iter().map(|p| (p.to_string(), true)));
        // S3 lists contents first, then prefixes: put the page in key order.
        page.sort();
        assert!(page.len() <= max as usize);
        let truncated = doc.is_truncated;
        if truncated {
            assert_eq!(page.len(), max as usize, "a truncated page is full");
        }
        next = match doc.version {
            ListVersion::V2 {
                next_continuation_token,
                ..
            } => next_continuation_token.map(|t| t.into_owned()),
            ListVersion::V1 { next_marker, .. } => match (next_marker, delimiter) {
                (Some(m), Some(_)) => Some(m.into_owned()),
                (None, Some(_)) => None,
                (m, None) => {
                    assert!(m.is_none(), "NextMarker only with a delimiter");
                    page.last().map(|(k, _)| k.clone()).filter(|_| truncated)
                }
            },
        };
        out.push(page);
        assert_eq!(truncated, next.is_some());
        if !truncated {
            return out;
        }
        assert!(out.len() < 10_000, "listing does not end");
    }
}

fn check(
    c: &mut Client,
    keys: &BTreeSet<String>,
    v2: bool,
    prefix: &str,
    delimiter: Option<&str>,
    max: u32,
) {
    let want = expected(keys, prefix, delimiter);
    let got = pages(c, v2, prefix, delimiter, max);
    let want_pages: Vec<Vec<(String, bool)>> = if want.is_empty() {
        vec![Vec::new()]
    } else {
        want.chunks(max as usize).map(<[_]>::to_vec).collect()
    };
    assert_eq!(
        got.len(),
        want_pages.len(),
        "pages of v2={v2} {prefix:?} {delimiter:?} {max}"
    );
    assert!(
        got == want_pages,
        "listing v2={v2} prefix={prefix:?} delimiter={delimiter:?} max={max}"
    );
}

fn listings(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Passthrough);
    let mut c = s.client();
    let keys = populate(&mut c, &s);
    for v2 in [true, false] {
        check(&mut c, &keys, v2, "", None, 7);
        check(&mut c, &keys, v2, "", Some("/"), 3);
        check(&mut c, &keys, v2, "dir1", Some("/"), 2);
        check(&mut c, &keys, v2, "dir2/", Some("/"), 4);
        check(&mut c, &keys, v2, "dir3/sub", None, 50);
        check(&mut c, &keys, v2, "nothing-here", None, 5);
    }
    check(&mut c, &keys, true, "", None, 1000);

    // start-after, and encoding-type=url.
    let r = c.get("/many?list-type=2&start-after=top-1996&max-keys=2&encoding-type=url");
    let doc = ListBucketResult::parse_xml(&r.body).unwrap();
    let got: Vec<String> = doc.contents.iter().map(|o| o.key.to_string()).collect();
    let want: Vec<String> = keys
        .range("top-1997".to_owned()..)
        .take(2)
        .cloned()
        .collect();
    assert_eq!(got, want);
    // The page is the first two `z ... ü` keys, sent URL-encoded (and read back decoded).
    assert_eq!(want, ["z 0003 ü", "z 0007 ü"]);
    for k in ["z%200003%20%C3%BC", "z%200007%20%C3%BC"] {
        assert!(
            r.text().contains(&format!("<Key>{k}</Key>")),
            "{}",
            r.text()
        );
    }
    assert!(!r.text().contains(" ü"), "{}", r.text());
    assert!(
        r.text().contains("<EncodingType>url</EncodingType>"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("<StartAfter>top-1996</StartAfter>"));

    // Tokens are tamper-evident.
    let r = c.get("/many?list-type=2&max-keys=3");
    let doc = ListBucketResult::parse_xml(&r.body).unwrap();
    let ListVersion::V2 {
        next_continuation_token: Some(token),
        ..
    } = doc.version
    else {
        panic!("a token");
    };
    let mut forged = token.to_string().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    c.get(&format!("/many?list-type=2&continuation-token={forged}"))
        .expect_error(400, "InvalidArgument");
    c.get("/many?list-type=2&continuation-token=bm90LWEtdG9rZW4")
        .expect_error(400, "InvalidArgument");
    // The genuine one still works, and not on another bucket.
    assert_eq!(
        c.get(&format!("/many?list-type=2&continuation-token={token}"))
            .status,
        200
    );
    assert_eq!(c.put("/other", b"").status, 200);
    c.get(&format!("/other?list-type=2&continuation-token={token}"))
        .expect_error(400, "InvalidArgument");
    c.get("/missing-bucket?list-type=2")
        .expect_error(404, "NoSuchBucket");
}

fn upload_listings(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::Resign);
    let mut c = s.client();
    assert_eq!(c.put("/ups", b"").status, 200);
    let mut want: Vec<(String, String)> = Vec::new();
    for i in 0..12 {
        let k = if i % 3 == 0 {
            format!("p/{i:02}")
        } else {
            format!("u{i:02}")
        };
        for _ in 0..(1 + i % 2) {
            let r = c.request("POST", &format!("/ups/{k}?uploads"), &[], b"");
            assert_eq!(r.status, 200, "{}", r.text());
            want.push((k.clone(), r.xml_value("UploadId").unwrap()));
        }
    }
    let nodes: BTreeSet<usize> = want.iter().map(|(k, _)| s.node_of("ups", k)).collect();
    assert_eq!(nodes.len(), 3);
    // Uploads of one key keep their node's order; keys are in global order.
    let mut got: Vec<(String, String)> = Vec::new();
    let mut markers: Option<(String, Option<String>)> = None;
    loop {
        let mut target = "/ups?uploads&max-uploads=2".to_owned();
        if let Some((k, u)) = &markers {
            target.push_str(&format!("&key-marker={}", uri::encode(k)));
            if let Some(u) = u {
                target.push_str(&format!("&upload-id-marker={}", uri::encode(u)));
            }
        }
        let r = c.get(&target);
        assert_eq!(r.status, 200, "{}", r.text());
        let doc = ListMultipartUploadsResult::parse_xml(&r.body).unwrap();
        got.extend(
            doc.uploads
                .iter()
                .map(|u| (u.key.to_string(), u.upload_id.to_string())),
        );
        if !doc.is_truncated {
            break;
        }
        markers = Some((
            doc.next_key_marker.unwrap().into_owned(),
            doc.next_upload_id_marker.map(|u| u.into_owned()),
        ));
    }
    let mut sorted_keys: Vec<&String> = got.iter().map(|(k, _)| k).collect();
    sorted_keys.sort();
    assert_eq!(got.iter().map(|(k, _)| k).collect::<Vec<_>>(), sorted_keys);
    let mut a = got.clone();
    let mut b = want.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b, "every upload exactly once");
    // With a delimiter: the p/ uploads roll up into one prefix.
    let r = c.get("/ups?uploads&delimiter=/&max-uploads=3");
    let doc = ListMultipartUploadsResult::parse_xml(&r.body).unwrap();
    assert_eq!(doc.common_prefixes, ["p/"]);
    assert_eq!(doc.uploads.len(), 2);
    assert!(doc.is_truncated);
    let next = doc.next_key_marker.unwrap();
    let r = c.get(&format!(
        "/ups?uploads&delimiter=/&max-uploads=100&key-marker={}",
        uri::encode(&next)
    ));
    let doc = ListMultipartUploadsResult::parse_xml(&r.body).unwrap();
    assert!(doc.common_prefixes.is_empty(), "p/ is not listed twice");
    let total = want.iter().filter(|(k, _)| !k.starts_with("p/")).count();
    assert_eq!(doc.uploads.len() + 2, total);
}

#[test]
fn listings_tokio() {
    listings(RuntimeKind::Tokio);
}

#[test]
fn listings_smol() {
    listings(RuntimeKind::Smol);
}

#[test]
fn upload_listings_tokio() {
    upload_listings(RuntimeKind::Tokio);
}

#[test]
fn upload_listings_smol() {
    upload_listings(RuntimeKind::Smol);
}
