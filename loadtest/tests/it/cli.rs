//! The `ferry-load` binary end to end: an embedded run writing JSON and CSV, then compare,
//! plot and merge on its output (https endpoints: see `tls.rs`).

use std::path::Path;
use std::process::{Command, Output};

use ferry_loadtest::report::RunReport;
use ferry_loadtest::stats::OpKind;

fn ferry_load(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(args)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("FERRY_ACCESS_KEY")
        .output()
        .expect("run ferry-load")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn embedded_run(dir: &Path, name: &str, workload: &str) -> RunReport {
    let json = dir.join(format!("{name}.json"));
    let csv = dir.join(format!("{name}.csv"));
    let out = ferry_load(&[
        workload,
        "--embedded",
        "--ops",
        "30",
        "--size",
        "8KiB",
        "--objects",
        "5",
        "-c",
        "2",
        "--threads",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("p99.9"), "the summary table: {stdout}");
    let csv = std::fs::read_to_string(csv).unwrap();
    assert!(csv.starts_with("t_s,dt_s,op,ops,bytes"));
    assert!(csv.lines().count() >= 2, "{csv}");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn run_then_compare_plot_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let a = embedded_run(dir.path(), "a", "get");
    let get = a.op(OpKind::Get).unwrap();
    assert_eq!((get.ops, get.error_count()), (30, 0));
    assert!(a.run.embedded);
    embedded_run(dir.path(), "b", "put");
    let (ja, jb) = (dir.path().join("a.json"), dir.path().join("b.json"));

    let out = ferry_load(&["compare", ja.to_str().unwrap(), jb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.lines().any(|l| l.starts_with("get")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("put")), "{table}");

    let svg = dir.path().join("a.svg");
    let out = ferry_load(&["plot", ja.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = std::fs::read_to_string(&svg).unwrap();
    // A sub-second run has one point per series: drawn as a dot, not a line.
    assert!(
        doc.contains("<polyline") || doc.contains("<circle"),
        "{doc}"
    );

    let merged = dir.path().join("m.json");
    let out = ferry_load(&[
        "merge",
        ja.to_str().unwrap(),
        jb.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m: RunReport = serde_json::from_str(&std::fs::read_to_string(merged).unwrap()).unwrap();
    assert_eq!(m.merged_runs, 2);
    assert_eq!(m.total().ops, 60);
}

#[test]
fn compare_run_sets_with_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(format!("{n}.json")).display().to_string();
    for name in ["a1", "a2", "b1", "b2"] {
        let r = embedded_run(dir.path(), name, "get");
        let get = r.op(OpKind::Get).unwrap();
        assert!(
            get.costs.cpu_ns > 0,
            "the client's CPU per operation is measured"
        );
    }
    let (a1, a2, b1, b2) = (path("a1"), path("a2"), path("b1"), path("b2"));

    // A set against itself: no change, not significant.
    let out = ferry_load(&["compare", &a1, &a2, "--", &a1, &a2]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.starts_with("A: 2 runs: "), "{table}");
    let ops = table
        .lines()
        .find(|l| l.contains(" ops/s "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(ops.contains("+0.0%") && ops.contains(" ~ "), "{ops}");
    assert!(ops.contains(" ± "), "median ± spread: {ops}");

    // Two runs a side can never be significant: every change is marked, whatever it is.
    let out = ferry_load(&["compare", &a1, &a2, "--", &b1, &b2]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    for l in table
        .lines()
        .filter(|l| l.contains('%') && !l.starts_with("A and B"))
    {
        assert!(l.contains(" ~ "), "{l}\n{table}");
    }
    assert!(table.contains(" cpu/op "), "{table}");
    assert!(table.contains("fewer than 4 runs a side"), "{table}");

    // Three files without `--`: which side is which is not said.
    let out = ferry_load(&["compare", &a1, &a2, &b1]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--"), "{}", text(&out.stderr));
}

#[test]
fn presign_prints_a_signed_url() {
    let out = ferry_load(&[
        "presign",
        "--endpoint",
        "http://127.0.0.1:7001",
        "--access-key",
        "AKIDEXAMPLE",
        "--secret-key",
        "secret",
        "--bucket",
        "b",
        "--key",
        "k/1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let url = text(&out.stdout);
    assert!(url.starts_with("http://127.0.0.1:7001/b/k/1?"), "{url}");
    for part in [
        "X-Amz-Algorithm=AWS4-HMAC-SHA256",
        "X-Amz-Credential=AKIDEXAMPLE",
        "X-Amz-Signature=",
    ] {
        assert!(url.contains(part), "{url}");
    }
}
