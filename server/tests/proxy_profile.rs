//! CPU profiles on the proxy's admin listener (`/debug/pprof/profile`): a gzipped pprof
//! protobuf that decodes with the pprof crate's own protos, a flamegraph SVG, 400 for bad
//! parameters and 409 while another profile runs.
//!
//! One test function: the profiler is process-wide (SIGPROF), so profiles run one after the
//! other, with a thread loading the proxy meanwhile so that there is CPU time to sample. For
//! the same reason it is a test binary of its own: a profile would sample, and its signals
//! interrupt, every other test running in the process.

// The integration tests' support tree; this binary uses a small part of it.
#[allow(dead_code, unused_macros)]
#[path = "it/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ferry_server::RuntimeKind;
use support::http::plain_get as admin_get;
use support::proxy::{Auth, Setup};

#[test]
fn cpu_profiles() {
    let s = Setup::start(RuntimeKind::Tokio, 2, Auth::Passthrough);
    let admin = s.admin();

    for bad in [
        "seconds=0",
        "seconds=301",
        "seconds=abc",
        "seconds=",
        "format=xml",
    ] {
        let r = admin_get(admin, &format!("/debug/pprof/profile?{bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(
            r.text().contains("seconds") || r.text().contains("format"),
            "{bad}: {}",
            r.text()
        );
    }

    // Load: PUTs and GETs of 256 KiB objects (signatures, hashes, copies) until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let stop = stop.clone();
        let mut c = s.client();
        std::thread::spawn(move || {
            assert_eq!(c.put("/prof", b"").status, 200);
            let body = vec![0x5a_u8; 256 * 1024];
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("/prof/k{}", n % 8);
                assert_eq!(c.put(&key, &body).status, 200);
                assert_eq!(c.get(&key).body.len(), body.len());
                n += 1;
            }
            n
        })
    };

    // pprof protobuf, gzipped.
    let profile = support::pprof::decode(&admin_get(admin, "/debug/pprof/profile?seconds=1"));
    let types = support::pprof::sample_types(&profile);
    assert!(
        types.contains(&("cpu".into(), "nanoseconds".into())),
        "{types:?}"
    );
    assert!(!profile.sample.is_empty(), "no samples while under load");
    assert!(
        profile.sample.iter().all(|s| s.value.len() == types.len()),
        "one value per sample type"
    );
    // Symbols were resolved: the proxy's and nodes' own functions are named.
    assert!(
        support::pprof::names_ferry(&profile),
        "no ferry function among {} strings",
        profile.string_table.len()
    );

    // Flamegraph.
    let r = admin_get(admin, "/debug/pprof/profile?seconds=1&format=svg");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("image/svg+xml"));
    let svg = r.text();
    assert!(
        svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );

    // One profile at a time: a second request while one runs is refused.
    let first =
        std::thread::spawn(move || admin_get(admin, "/debug/pprof/profile?seconds=3").status);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let index = admin_get(admin, "/debug/pprof/").text();
        if index.contains("a profile is being taken now") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first profile never started: {index}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = admin_get(admin, "/debug/pprof/profile?seconds=1");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("already"), "{}", r.text());
    assert_eq!(first.join().unwrap(), 200);
    // Done: the next one may run again (and the index says so).
    assert!(
        admin_get(admin, "/debug/pprof/")
            .text()
            .contains("no profile is being taken")
    );

    stop.store(true, Ordering::Relaxed);
    let requests = load.join().unwrap();
    assert!(requests > 0);
}
