//! Reloading the proxy's configuration while it runs: a backend and a previous layout added
//! (objects stay readable), the previous layout dropped once its keys have moved, a bad file
//! refused with the old configuration kept, and SIGHUP to a `ferry proxy` process.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use ferry_core::place::Placement;
use ferry_server::proxy::ReloadSource;
use ferry_server::{ProxyConfig, ProxyHandle, RuntimeKind, start_proxy};

use crate::support::http::{Client, http_request, plain_get};
use crate::support::node::Node;
use crate::support::process::{KEY_ENV, free_port, ready_addr, spawn_ferry, stop};
use crate::support::{ACCESS_KEY, SECRET_KEY};

on_both_runtimes!(
    a_reload_adds_a_backend_and_a_previous_layout,
    a_bad_configuration_is_refused_and_the_old_one_kept
);

/// The proxy's TOML over `nodes`: the backends `declared` (indices), and the layouts
/// `(version, indices)` (none: the declared backends' weights, 1 each).
pub fn proxy_toml(
    runtime: RuntimeKind,
    nodes: &[Node],
    declared: &[usize],
    layouts: &[(u64, &[usize])],
) -> String {
    let key_file = crate::support::cluster_key_file(nodes[0].dir.path());
    let mut t = format!(
        "listen = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nruntime = \"{runtime}\"\n\
         threads = 2\nhealth_interval_ms = 100\ncluster_key_file = {:?}\n\
         [[credentials]]\naccess_key = \"{ACCESS_KEY}\"\nsecret_key = \"{SECRET_KEY}\"\n",
        key_file.display().to_string()
    );
    for &i in declared {
        t.push_str(&format!(
            "[[backend]]\nid = \"{}\"\nurl = \"http://{}\"\n",
            nodes[i].id, nodes[i].addr
        ));
    }
    for (version, ids) in layouts {
        let w: Vec<String> = ids
            .iter()
            .map(|&i| format!("\"{}\" = 1", nodes[i].id))
            .collect();
        t.push_str(&format!(
            "[[layout]]\nversion = {version}\nbackends = {{ {} }}\n",
            w.join(", ")
        ));
    }
    t
}

/// A proxy started from the TOML file `path`, reloading from it.
fn start_from(path: &Path) -> ProxyHandle {
    let mut cfg = ProxyConfig::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap();
    cfg.reload = Some(ReloadSource::file(path));
    start_proxy(cfg).expect("proxy starts")
}

/// `POST /admin/reload`: status and body.
fn reload(admin: SocketAddr) -> (u16, String) {
    let r = http_request(admin, "POST", "/admin/reload", &[], b"");
    (r.status, r.text())
}

/// The value of the metric line starting with `line_start` (name and labels).
fn metric(admin: SocketAddr, line_start: &str) -> Option<u64> {
    plain_get(admin, "/metrics")
        .text()
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn placement(nodes: &[Node], ids: &[usize]) -> Placement {
    let w: Vec<(String, u32)> = ids.iter().map(|&i| (nodes[i].id.clone(), 1)).collect();
    Placement::new(&w).unwrap()
}

fn body_of(i: usize) -> Vec<u8> {
    format!("reloaded object {i} ")
        .repeat(i % 5 + 1)
        .into_bytes()
}

/// Wait (bounded) until node `n` has `bucket`.
fn wait_for_bucket(n: &Node, bucket: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut c = n.client();
    while c.request("HEAD", &format!("/{bucket}"), &[], b"").status != 200 {
        assert!(Instant::now() < deadline, "{} never got {bucket}", n.id);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Three nodes, then a fourth added by a reload under a new layout with the old one drained:
/// every object stays readable, new keys go to their new owner, the new node gets the bucket.
/// Once the moved keys are rewritten (so they live on their new owners), a second reload
/// drops the previous layout, and everything still reads.
fn a_reload_adds_a_backend_and_a_previous_layout(runtime: RuntimeKind) {
    let nodes: Vec<Node> = (1..=4)
        .map(|i| Node::backend(&format!("node-{i}"), runtime, (ACCESS_KEY, SECRET_KEY)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.toml");
    std::fs::write(&path, proxy_toml(runtime, &nodes, &[0, 1, 2], &[])).unwrap();
    let proxy = start_from(&path);
    let admin = proxy.admin_addr().unwrap();
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/grow", b"").status, 200);
    let keys: Vec<String> = (0..120).map(|i| format!("k/{i:03}")).collect();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(c.put(&format!("/grow/{k}"), &body_of(i)).status, 200);
    }
    assert_eq!(metric(admin, "ferry_proxy_layout_version "), Some(0));

    std::fs::write(
        &path,
        proxy_toml(
            runtime,
            &nodes,
            &[0, 1, 2, 3],
            &[(2, &[0, 1, 2, 3]), (1, &[0, 1, 2])],
        ),
    )
    .unwrap();
    let (status, text) = reload(admin);
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("layout: 0 -> 2 (1 previous layout being drained)"),
        "{text}"
    );
    assert!(text.contains("backends added: node-4"), "{text}");
    assert!(text.contains("backends removed: -"), "{text}");
    assert!(!text.contains("not applied"), "{text}");
    assert_eq!(metric(admin, "ferry_proxy_layout_version "), Some(2));
    assert_eq!(metric(admin, "ferry_proxy_layouts_draining "), Some(1));
    assert_eq!(
        metric(
            admin,
            "ferry_proxy_config_reloads_total{result=\"applied\"}"
        ),
        Some(1)
    );
    assert!(
        plain_get(admin, "/readyz").text().contains("node-4"),
        "the new backend is probed"
    );
    // The new backend gets the bucket, and nothing written before is lost.
    wait_for_bucket(&nodes[3], "grow");
    for (i, k) in keys.iter().enumerate() {
        let r = c.get(&format!("/grow/{k}"));
        assert_eq!((r.status, &r.body), (200, &body_of(i)), "{k}");
    }
    let (before, after) = (
        placement(&nodes, &[0, 1, 2]),
        placement(&nodes, &[0, 1, 2, 3]),
    );
    let moved: Vec<usize> = (0..keys.len())
        .filter(|&i| before.pick("grow", &keys[i]) != after.pick("grow", &keys[i]))
        .collect();
    assert!(moved.len() > 5, "only {} keys move", moved.len());
    // A new key goes where the new layout places it.
    let fresh = (0..)
        .map(|i| format!("fresh/{i}"))
        .find(|k| after.pick("grow", k) == 3)
        .unwrap();
    assert_eq!(c.put(&format!("/grow/{fresh}"), b"new").status, 200);
    assert_eq!(
        nodes[3].client().get(&format!("/grow/{fresh}")).body,
        b"new"
    );

    // Move the keys whose owner changed (an overwrite through the proxy moves one), then drop
    // the old layout.
    for &i in &moved {
        assert_eq!(
            c.put(&format!("/grow/{}", keys[i]), &body_of(i)).status,
            200
        );
        // The old copy goes after the answer, before the connection's next request.
        assert_eq!(c.get(&format!("/grow/{}", keys[i])).body, body_of(i));
        let old = before.pick("grow", &keys[i]);
        nodes[old]
            .client()
            .get(&format!("/grow/{}", keys[i]))
            .expect_error(404, "NoSuchKey");
    }
    std::fs::write(
        &path,
        proxy_toml(runtime, &nodes, &[0, 1, 2, 3], &[(2, &[0, 1, 2, 3])]),
    )
    .unwrap();
    let (status, text) = reload(admin);
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("layout: 2 -> 2 (0 previous layouts being drained)"),
        "{text}"
    );
    assert!(text.contains("backends added: -"), "{text}");
    assert_eq!(metric(admin, "ferry_proxy_layouts_draining "), Some(0));
    // Backends that did not change keep their state: their request counters went on.
    let m = plain_get(admin, "/metrics").text();
    assert!(
        m.lines().any(
            |l| l.starts_with("ferry_proxy_backend_requests_total{backend=\"node-1\"} ")
                && !l.ends_with(" 0")
        ),
        "{m}"
    );
    for (i, k) in keys.iter().enumerate() {
        let r = c.get(&format!("/grow/{k}"));
        assert_eq!((r.status, &r.body), (200, &body_of(i)), "{k}");
    }
    // Removing a backend: node-4 leaves the configuration (it holds keys, but the test only
    // checks that requests keep working and it is no longer probed).
    std::fs::write(&path, proxy_toml(runtime, &nodes, &[0, 1, 2], &[])).unwrap();
    let (status, text) = reload(admin);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("backends removed: node-4"), "{text}");
    assert!(!plain_get(admin, "/readyz").text().contains("node-4"));
    assert_eq!(c.get(&format!("/grow/{}", keys[0])).status, 200);
    proxy.stop();
}

/// A file that does not parse, a backend that does not resolve, a layout naming an unknown
/// backend and a `ca_cert` that cannot be read are refused: the admin endpoint says why, the
/// metrics count it, and requests keep being served as before.
fn a_bad_configuration_is_refused_and_the_old_one_kept(runtime: RuntimeKind) {
    let nodes: Vec<Node> = (1..=2)
        .map(|i| Node::backend(&format!("node-{i}"), runtime, (ACCESS_KEY, SECRET_KEY)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.toml");
    let good = proxy_toml(runtime, &nodes, &[0, 1], &[]);
    std::fs::write(&path, &good).unwrap();
    let proxy = start_from(&path);
    let admin = proxy.admin_addr().unwrap();
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/kept", b"").status, 200);
    assert_eq!(c.put("/kept/a", b"still here").status, 200);
    let unknown_layout = format!("{good}[[layout]]\nversion = 1\nbackends = {{ nobody = 1 }}\n");
    let unresolved =
        format!("{good}[[backend]]\nid = \"x\"\nurl = \"http://no-such-host.invalid:1\"\n");
    let missing_ca = format!(
        "{good}[[backend]]\nid = \"t\"\nurl = \"https://127.0.0.1:1\"\nca_cert = \"{}\"\n",
        dir.path().join("missing.pem").display()
    );
    let cases = [
        ("listen = [not toml", "proxy.toml"),
        (unknown_layout.as_str(), "\"nobody\" is not configured"),
        (unresolved.as_str(), "no-such-host.invalid"),
        (missing_ca.as_str(), "missing.pem"),
    ];
    for (n, (text, why)) in cases.iter().enumerate() {
        std::fs::write(&path, text).unwrap();
        let (status, body) = reload(admin);
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("the configuration in use is kept"), "{body}");
        assert!(body.contains(why), "{why} in {body}");
        assert_eq!(
            metric(
                admin,
                "ferry_proxy_config_reloads_total{result=\"refused\"}"
            ),
            Some(n as u64 + 1)
        );
        assert_eq!(
            metric(admin, "ferry_proxy_config_last_reload_successful "),
            Some(0)
        );
        // Requests go on as before.
        let r = c.get("/kept/a");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"still here"[..]));
        assert_eq!(c.put("/kept/b", b"written").status, 200);
        let ready = plain_get(admin, "/readyz").text();
        assert!(
            !ready.contains(" x ") && !ready.contains("t 127"),
            "{ready}"
        );
    }
    // A setting that needs a restart is named, the rest applied.
    std::fs::write(&path, good.replace("threads = 2", "threads = 3")).unwrap();
    let (status, body) = reload(admin);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("not applied until a restart: threads"),
        "{body}"
    );
    assert_eq!(
        metric(admin, "ferry_proxy_config_last_reload_successful "),
        Some(1)
    );
    // GET is not a reload; a node has none.
    assert_eq!(plain_get(admin, "/admin/reload").status, 405);
    let node_admin = nodes[0].handle.as_ref().unwrap().admin_addr().unwrap();
    assert_eq!(reload(node_admin).0, 404);
    proxy.stop();
    // A proxy started without a source to reload from says so, and keeps going.
    let mut cfg = ProxyConfig::from_toml(&good).unwrap();
    cfg.reload = None;
    let bare = start_proxy(cfg).unwrap();
    let err = bare.reload().unwrap_err();
    assert!(err.contains("no configuration source"), "{err}");
    bare.stop();
}

/// SIGHUP makes a `ferry proxy --config FILE` process read its file again: a backend it adds
/// takes the keys the new layout gives it, and the log says what changed; a bad file then is
/// refused and logged.
#[test]
fn sighup_reloads_a_ferry_proxy_process() {
    let runtime = RuntimeKind::Tokio;
    let nodes: Vec<Node> = (1..=2)
        .map(|i| Node::backend(&format!("node-{i}"), runtime, (ACCESS_KEY, SECRET_KEY)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.toml");
    let admin = free_port();
    let toml = |declared: &[usize], layouts: &[(u64, &[usize])]| {
        proxy_toml(runtime, &nodes, declared, layouts).replace(
            "admin_listen = \"127.0.0.1:0\"",
            &format!("admin_listen = \"{admin}\""),
        )
    };
    std::fs::write(&path, toml(&[0], &[])).unwrap();
    let mut child = spawn_ferry(
        &[
            "proxy",
            "--config",
            path.to_str().unwrap(),
            "--log-format",
            "json",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, "ferry proxy listening on http://");
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/hup", b"").status, 200);
    assert_eq!(metric(admin, "ferry_proxy_layout_version "), Some(0));

    std::fs::write(&path, toml(&[0, 1], &[(2, &[0, 1]), (1, &[0])])).unwrap();
    crate::support::process::signal(&child, "-HUP");
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(admin, "ferry_proxy_layout_version ") != Some(2) {
        assert!(Instant::now() < deadline, "SIGHUP did not reload");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_for_bucket(&nodes[1], "hup");
    let after = placement(&nodes, &[0, 1]);
    let key = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| after.pick("hup", k) == 1)
        .unwrap();
    assert_eq!(c.put(&format!("/hup/{key}"), b"on node-2").status, 200);
    assert_eq!(
        nodes[1].client().get(&format!("/hup/{key}")).body,
        b"on node-2"
    );

    std::fs::write(&path, "this is not TOML").unwrap();
    crate::support::process::signal(&child, "-HUP");
    while metric(
        admin,
        "ferry_proxy_config_reloads_total{result=\"refused\"}",
    ) != Some(1)
    {
        assert!(Instant::now() < deadline, "the bad file was not seen");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.get(&format!("/hup/{key}")).body, b"on node-2");
    drop(c);
    let stderr = stop(child, "-TERM");
    assert!(stderr.contains("\"configuration reloaded\""), "{stderr}");
    assert!(stderr.contains("backends added: node-2"), "{stderr}");
    assert!(stderr.contains("configuration reload refused"), "{stderr}");
}
