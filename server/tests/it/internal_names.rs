//! Every name of Ferry's own (`x-ferry-*`) in the code is the cluster's alone: this finds each
//! one in the sources of `ferry-core` and `ferry-server` (outside their unit tests), so that a
//! name added later cannot be missed, and sends each, unsealed, to a node and through a proxy,
//! as the bucket's owner and anonymously: every one is refused (`403 AccessDenied`) and changes
//! nothing. (hostile.rs has the cases in depth; this is the inventory.)

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::http::{Client, Response, http_request};
use crate::support::sdk::{Target, TestNode};

on_every_target!(every_internal_name_is_refused_unsealed);

/// The request names (headers, and the fence's query parameter), each with a value it takes.
const REQUEST_NAMES: [(&str, &str); 12] = [
    ("x-ferry-client-ip", "10.9.8.7"),
    ("x-ferry-client-signed-at", "0"),
    ("x-ferry-client-tls", "true"),
    ("x-ferry-client-tls-version", "TLSv1.3"),
    ("x-ferry-cluster-auth", "FERRY1 0 00"),
    ("x-ferry-copy-source", "b/k"),
    ("x-ferry-encryption-context-mode", "ENABLED"),
    ("x-ferry-fence", "t"),
    ("x-ferry-last-modified", "1"),
    ("x-ferry-metadata-directive", "REPLACE"),
    ("x-ferry-version-id", "null"),
    ("x-ferry-version-order", "1"),
];

/// Names that a node only answers with, never takes.
const RESPONSE_NAMES: [&str; 2] = ["x-ferry-bucket-empty", "x-ferry-missing"];

/// The `x-ferry-*` names in the `.rs` files under `dir`, their unit tests left out (a file's
/// `#[cfg(test)]` module is its last part, by the house's convention).
fn names_in(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("source dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            names_in(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("x-ferry-") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            rest = &rest[at + name.len()..];
            // The prefix alone (`x-ferry-*` in prose, the prefix constant) names nothing.
            if name.len() > "x-ferry-".len() {
                out.insert(name.trim_end_matches('-').to_owned());
            }
        }
    }
}

#[test]
fn the_inventory_is_every_name_in_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = BTreeSet::new();
    names_in(&root.join("core/src"), &mut found);
    names_in(&root.join("server/src"), &mut found);
    let known: BTreeSet<String> = REQUEST_NAMES
        .iter()
        .map(|(n, _)| (*n).to_owned())
        .chain(RESPONSE_NAMES.iter().map(|n| (*n).to_owned()))
        .collect();
    assert_eq!(
        found, known,
        "a name of Ferry's own was added or removed: list it here (and in README's threat model)"
    );
}

/// The status of `method target` with `headers` as `who` (`None`: anonymous).
fn send(
    n: &TestNode,
    who: Option<&mut Client>,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    match who {
        Some(c) => c.request(method, target, headers, body),
        None => http_request(n.addr, method, target, headers, body),
    }
}

async fn every_internal_name_is_refused_unsealed(target: Target) {
    let n = TestNode::start(target);
    let mut owner = Client::connect(n.addr);
    assert_eq!(owner.put("/names", b"").status, 200);
    assert_eq!(owner.put("/names/kept", b"kept").status, 200);
    let public = r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::names","arn:aws:s3:::names/*"]}]}"#;
    assert_eq!(owner.put("/names?policy", public.as_bytes()).status, 204);
    let mut cases = 0;
    for (name, value) in REQUEST_NAMES {
        for who in ["owner", "anonymous"] {
            let requests: [(&str, String, &[u8]); 5] = [
                ("PUT", format!("/names/new-{name}"), b"x"),
                ("GET", "/names/kept".into(), b""),
                ("HEAD", "/names/kept".into(), b""),
                ("DELETE", "/names/kept".into(), b""),
                ("POST", "/names/up?uploads".into(), b""),
            ];
            for (method, path, body) in requests {
                let c = (who == "owner").then_some(&mut owner);
                let r = send(&n, c, method, &path, &[(name, value)], body);
                assert_eq!(
                    r.status,
                    403,
                    "{who} {method} {path} with {name}: {}",
                    r.text()
                );
                if method != "HEAD" {
                    assert_eq!(r.error_code().as_deref(), Some("AccessDenied"), "{name}");
                }
                cases += 1;
            }
        }
        // Nothing changed: no object made, the kept one there and writable (no fence).
        owner
            .get(&format!("/names/new-{name}"))
            .expect_error(404, "NoSuchKey");
        assert_eq!(owner.get("/names/kept").body, b"kept");
    }
    // The fence as a query parameter, as named and percent-encoded: refused. (Query names are
    // case-sensitive: `X-Ferry-Fence` is no parameter of Ferry's, and an unknown bucket POST
    // answers `501 NotImplemented`, also changing nothing.)
    for query in [
        "x-ferry-fence=t&lease-seconds=60",
        "x%2Dferry%2Dfence=t&lease-seconds=60",
        "X-Ferry-Fence=t&lease-seconds=60",
    ] {
        for who in ["owner", "anonymous"] {
            let c = (who == "owner").then_some(&mut owner);
            let r = send(&n, c, "POST", &format!("/names?{query}"), &[], b"");
            if query.starts_with('X') {
                r.expect_error(501, "NotImplemented");
            } else {
                r.expect_error(403, "AccessDenied");
            }
            cases += 1;
        }
    }
    assert_eq!(owner.put("/names/after", b"writable").status, 200);
    assert_eq!(owner.get("/names/after").body, b"writable");
    assert_eq!(cases, REQUEST_NAMES.len() * 10 + 6);
}
