//! Tagging through the proxy in front of three nodes with keys of their own (every request
//! re-signed): bucket tags reach every node, a refused document reaches none, object tags land
//! on the key's node only, and a PutBucketTagging with a node down fails.

use ferry_server::RuntimeKind;

use crate::support::proxy::{Auth, Setup};

on_both_runtimes!(bucket_tags_on_every_node, object_tags_on_the_keys_node);

const DOC: &[u8] = b"<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>\
    <Tag><Key>team</Key><Value>storage</Value></Tag></TagSet></Tagging>";

fn bucket_tags_on_every_node(rt: RuntimeKind) {
    let mut s = Setup::start(rt, 3, Auth::OwnKeys);
    let mut c = s.client();
    assert_eq!(c.put("/tagged", b"").status, 200);
    let r = c.request("PUT", "/tagged?tagging", &[], DOC);
    assert_eq!(r.status, 204, "{}", r.text());
    for n in &s.nodes {
        let r = n.client().get("/tagged?tagging");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.xml_values("Key"), ["team"]);
        assert_eq!(r.xml_values("Value"), ["storage"]);
    }
    // Checked by the proxy: a bad document reaches no node.
    let duplicate = b"<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>\
        <Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>";
    c.request("PUT", "/tagged?tagging", &[], duplicate)
        .expect_error(400, "InvalidTag");
    c.request("PUT", "/tagged?tagging", &[], b"<Tagging>")
        .expect_error(400, "MalformedXML");
    for n in &s.nodes {
        assert_eq!(
            n.client().get("/tagged?tagging").xml_values("Value"),
            ["storage"]
        );
    }
    let r = c.request("DELETE", "/tagged?tagging", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    for n in &s.nodes {
        n.client()
            .get("/tagged?tagging")
            .expect_error(404, "NoSuchTagSet");
    }
    c.get("/tagged?tagging").expect_error(404, "NoSuchTagSet");
    c.get("/missing?tagging").expect_error(404, "NoSuchBucket");
    // Every node must take part: with one down, the put fails.
    s.nodes[2].stop();
    let r = c.request("PUT", "/tagged?tagging", &[], DOC);
    r.expect_error(503, "SlowDown");
}

fn object_tags_on_the_keys_node(rt: RuntimeKind) {
    let s = Setup::start(rt, 3, Auth::OwnKeys);
    let mut c = s.client();
    assert_eq!(c.put("/objtags", b"").status, 200);
    for want in 0..3 {
        let key = s.key_on("objtags", "k", want);
        let path = format!("/objtags/{key}");
        let r = c.request("PUT", &path, &[("x-amz-tagging", "a=1&b=2")], b"body");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(c.get(&path).header("x-amz-tagging-count"), Some("2"));
        let r = c.request("PUT", &format!("{path}?tagging"), &[], DOC);
        assert_eq!(r.status, 200, "{}", r.text());
        for (i, n) in s.nodes.iter().enumerate() {
            let r = n.client().get(&format!("{path}?tagging"));
            if i == want {
                assert_eq!(r.xml_values("Key"), ["team"]);
            } else {
                r.expect_error(404, "NoSuchKey");
            }
        }
        let r = c.request("DELETE", &format!("{path}?tagging"), &[], b"");
        assert_eq!(r.status, 204, "{}", r.text());
        assert!(
            c.get(&format!("{path}?tagging"))
                .xml_values("Key")
                .is_empty()
        );
        assert_eq!(c.get(&path).header("x-amz-tagging-count"), None);
    }
}
