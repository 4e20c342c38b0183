//! Heap profiles on the admin listeners of a node and a proxy (`/debug/pprof/heap`): jemalloc's
//! sampled heap as a gzipped pprof protobuf that decodes with the pprof crate's protos and has
//! samples of bytes in use, a flamegraph SVG, 400 for a bad format; 503 saying why from a
//! `ferry` whose sampling is off. This test binary runs with jemalloc as its allocator
//! (`ferry_server::global_allocator!` in `main.rs`), as `ferry` does.

use ferry_server::RuntimeKind;

use crate::support::http::{Client, plain_get};
use crate::support::pprof::{decode, names_ferry, sample_types};
use crate::support::process::{KEY_ENV, node_with_admin, signal};
use crate::support::proxy::{Auth, Setup};

fn check(profile: &pprof::protos::Profile, server: &str) {
    let types = sample_types(profile);
    assert_eq!(
        types,
        [("inuse_space".to_owned(), "bytes".to_owned())],
        "{server}"
    );
    assert!(!profile.sample.is_empty(), "{server}: no heap samples");
    let bytes: i64 = profile.sample.iter().filter_map(|s| s.value.first()).sum();
    // The pooled 256 KiB buffers the requests left idle are live, sampled allocations.
    assert!(bytes >= 256 * 1024, "{server}: {bytes} bytes in use");
    assert!(
        profile.sample.iter().all(|s| !s.location_id.is_empty()),
        "{server}: a sample without a stack"
    );
    // Stacks were symbolized: Ferry's own functions are named.
    assert!(
        names_ferry(profile),
        "{server}: no ferry function among {} strings",
        profile.string_table.len()
    );
}

#[test]
fn heap_profiles_of_node_and_proxy() {
    let s = Setup::start(RuntimeKind::Tokio, 2, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/heap", b"").status, 200);
    // A few MiB through both servers: buffers taken and pooled, sampled along the way.
    let body = vec![0x5a_u8; 1024 * 1024];
    for i in 0..8 {
        assert_eq!(c.put(&format!("/heap/k{i}"), &body).status, 200);
        assert_eq!(c.get(&format!("/heap/k{i}")).body.len(), body.len());
    }
    let node_admin = s.nodes[0]
        .handle
        .as_ref()
        .and_then(|h| h.admin_addr())
        .expect("node admin");
    for (server, admin) in [("proxy", s.admin()), ("node", node_admin)] {
        check(&decode(&plain_get(admin, "/debug/pprof/heap")), server);

        let r = plain_get(admin, "/debug/pprof/heap?format=svg");
        assert_eq!(r.status, 200, "{server}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("image/svg+xml"));
        let svg = r.text();
        assert!(
            svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
            "{server}: {svg}"
        );
        assert!(svg.contains("bytes"), "{server}: the unit is named");

        let r = plain_get(admin, "/debug/pprof/heap?format=xml");
        assert_eq!(r.status, 400, "{server}");
        assert!(r.text().contains("format"), "{}", r.text());
        assert!(
            plain_get(admin, "/debug/pprof/")
                .text()
                .contains("/debug/pprof/heap")
        );
    }
}

/// A `ferry node` whose jemalloc starts with sampling off (`prof_active:false` in its
/// environment, read after the options compiled in): no profile, and a 503 that says why,
/// whatever the format; the S3 side is unaffected. (A `--no-default-features` build answers
/// the same way, naming the missing feature: `.ci/run` builds it.)
#[test]
fn heap_profile_unavailable_is_a_503_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = KEY_ENV.to_vec();
    env.push(("_RJEM_MALLOC_CONF", "prof_active:false"));
    let extra = ["--threads", "1", "--no-fsync"];
    let (mut child, addr, admin) = node_with_admin(dir.path(), &extra, &env);
    for target in ["/debug/pprof/heap", "/debug/pprof/heap?format=svg"] {
        let r = plain_get(admin, target);
        assert_eq!(r.status, 503, "{target}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(
            r.text(),
            "no heap profile: jemalloc's heap sampling is inactive (`prof_active:false`)\n"
        );
    }
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/still-serves", b"").status, 200);
    drop(c);
    signal(&child.0, "-TERM");
    assert!(child.0.wait().expect("wait").success());
}
