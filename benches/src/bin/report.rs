//! One line per comparison: `name ferry baseline ratio`, so the ratios are visible at a glance.
//!
//! `cargo run --release -p ferry-benches --bin report [-- --seconds S] [FILTER]`

use std::time::Duration;

use ferry_benches::{Unit, all_cases, measure};

fn main() {
    let mut per_case = 2.0f64;
    let mut filter = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => {
                per_case = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--seconds takes a number");
                    std::process::exit(2)
                })
            }
            "-h" | "--help" => {
                println!("usage: report [--seconds S] [FILTER]   (S per comparison, default 2)");
                return;
            }
            _ => filter = Some(a),
        }
    }
    const ROUNDS: usize = 5;
    // Half the time per side, split in alternating rounds so drift hits both alike.
    let per_round = Duration::from_secs_f64(per_case / 2.0 / ROUNDS as f64);
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; run with --release for real figures");
    }
    println!(
        "{:<34} {:>10} {:>10} {:>8}  unit",
        "name", "ferry", "baseline", "ratio"
    );
    for mut case in all_cases() {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let (f, b) = measure(&mut case, per_round, ROUNDS);
        let (unit, per_op) = match case.unit {
            Unit::Bytes(_) => ("GB/s", String::new()),
            Unit::Ops(ops) => (
                "Mops/s",
                format!("  ({:.2} vs {:.2} us/op)", ops as f64 / f, ops as f64 / b),
            ),
        };
        println!(
            "{:<34} {f:>10.2} {b:>10.2} {:>7.2}x  {unit}{per_op}",
            case.name,
            f / b
        );
    }
}
