//! What the proxy does not interpret, it forwards by scope to the Ferry nodes, which answer
//! `501 NotImplemented` themselves (their error document and request id reach the client);
//! what it would change on the way, it still refuses itself. Each node's `/metrics` tells
//! whether a request reached it.

use std::time::{Duration, Instant};

use ferry_core::md5::{content_md5, md5};
use ferry_server::RuntimeKind;

use crate::support::http::{Response, plain_get};
use crate::support::node::Node;
use crate::support::proxy::{Auth, Setup};

on_both_runtimes!(
    unknown_subresources_reach_the_nodes_passthrough,
    unknown_subresources_reach_the_nodes_resigned,
    refusals_the_proxy_keeps,
);

/// The node's count of requests it refused before any operation (its router's 501s).
fn refused_by(n: &Node) -> u64 {
    let admin = n.handle.as_ref().and_then(|h| h.admin_addr()).unwrap();
    let m = plain_get(admin, "/metrics").text();
    let line = "ferry_node_requests_total{operation=\"unknown\",status=\"501\"} ";
    m.lines()
        .find_map(|l| l.strip_prefix(line))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// Wait (bounded) until the nodes' counts of refusals are `want`: a request is counted just
/// after its answer went out.
fn expect_refused(s: &Setup, want: &[u64]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got: Vec<u64> = s.nodes.iter().map(refused_by).collect();
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "refusals per node {got:?}, want {want:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A 501 whose error document is a node's: its request id is the one in the header, both
/// relayed from the node.
fn node_501(r: &Response) {
    r.expect_error(501, "NotImplemented");
    let id = r.xml_value("RequestId").expect("a request id");
    assert_eq!(
        r.header("x-amz-request-id"),
        Some(id.as_str()),
        "{:?}",
        r.headers
    );
    assert_eq!(
        r.xml_value("Message").as_deref(),
        Some("This subresource is not implemented"),
        "{}",
        r.text()
    );
}

fn unknown_subresources_reach_the_nodes(s: &Setup) {
    let mut c = s.client();
    assert_eq!(c.put("/fwd", b"").status, 200);
    expect_refused(s, &[0, 0]);
    // A bucket configuration read: one backend answers.
    node_501(&c.get("/fwd?website"));
    let first = s.nodes.iter().map(refused_by).collect::<Vec<_>>();
    assert_eq!(first.iter().sum::<u64>(), 1, "{first:?}");
    // A write goes to every node as sent (each first asked what it has, for an undo).
    let site = b"<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix>\
        </IndexDocument></WebsiteConfiguration>";
    let md5h = content_md5(&md5(site)).to_string();
    let r = c.request("PUT", "/fwd?website", &[("Content-MD5", &md5h)], site);
    node_501(&r);
    expect_refused(s, &[first[0] + 2, first[1] + 2]);
    let r = c.request("DELETE", "/fwd?replication", &[], b"");
    node_501(&r);
    expect_refused(s, &[first[0] + 4, first[1] + 4]);
    // An object's: only the key's node.
    let before: Vec<u64> = s.nodes.iter().map(refused_by).collect();
    for owner in 0..2 {
        let key = s.key_on("fwd", "restore-", owner);
        let restore = b"<RestoreRequest><Days>1</Days></RestoreRequest>";
        let r = c.request("POST", &format!("/fwd/{key}?restore"), &[], restore);
        node_501(&r);
        let mut want = before.clone();
        for w in want.iter_mut().take(owner + 1) {
            *w += 1;
        }
        expect_refused(s, &want);
    }
    // A feature header on an operation forwarded whole: the node refuses it.
    let before: Vec<u64> = s.nodes.iter().map(refused_by).collect();
    let key = s.key_on("fwd", "redirect-", 1);
    let r = c.request(
        "PUT",
        &format!("/fwd/{key}"),
        &[("x-amz-website-redirect-location", "/elsewhere")],
        b"data",
    );
    r.expect_error(501, "NotImplemented");
    assert_eq!(
        r.xml_value("Message").as_deref(),
        Some("Website redirects are not implemented")
    );
    expect_refused(s, &[before[0], before[1] + 1]);
    c.get(&format!("/fwd/{key}")).expect_error(404, "NoSuchKey");
}

fn unknown_subresources_reach_the_nodes_passthrough(rt: RuntimeKind) {
    unknown_subresources_reach_the_nodes(&Setup::start(rt, 2, Auth::Passthrough));
}

fn unknown_subresources_reach_the_nodes_resigned(rt: RuntimeKind) {
    unknown_subresources_reach_the_nodes(&Setup::start(rt, 2, Auth::Resign));
}

/// What the proxy refuses without asking a node: what it would change by passing it on.
fn refusals_the_proxy_keeps(rt: RuntimeKind) {
    let s = Setup::start(rt, 2, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/keep", b"").status, 200);
    assert_eq!(c.put("/keep/src", b"source").status, 200);
    // A rename would leave the object where the new key does not belong.
    let r = c.request(
        "PUT",
        "/keep/dst?renameObject",
        &[("x-amz-rename-source", "/keep/src")],
        b"",
    );
    r.expect_error(501, "NotImplemented");
    assert!(r.text().contains("RenameObject"), "{}", r.text());
    // Session credentials would be a backend's, not the proxy's.
    c.get("/keep?session").expect_error(501, "NotImplemented");
    // A listing is the proxy's own: it would drop the header.
    let r = c.request(
        "GET",
        "/keep?list-type=2",
        &[("x-amz-server-side-encryption", "AES256")],
        b"",
    );
    r.expect_error(501, "NotImplemented");
    // A copy between two nodes is the proxy's too: it would not write the redirect.
    let src_node = s.node_of("keep", "src");
    let dst = s.key_on("keep", "copy-", 1 - src_node);
    let r = c.request(
        "PUT",
        &format!("/keep/{dst}"),
        &[
            ("x-amz-copy-source", "/keep/src"),
            ("x-amz-website-redirect-location", "/x"),
        ],
        b"",
    );
    r.expect_error(501, "NotImplemented");
    // Other methods are nobody's requests.
    c.request("PATCH", "/keep?website", &[], b"")
        .expect_error(501, "NotImplemented");
    expect_refused(&s, &[0, 0]);
    c.get(&format!("/keep/{dst}"))
        .expect_error(404, "NoSuchKey");
}
