//! One line per comparison: `name ferry baseline ratio`, so the ratios are visible at a glance.
//!
//! `cargo run --release -p ferry-benches --bin report [-- --seconds S] [--runs N] [FILTER]`
//!
//! With `--runs N` each side is measured in N alternating runs and shown as its median ± the
//! median absolute deviation, with the two-sided Mann-Whitney U p-value of Ferry's runs
//! against the baseline's; a ratio whose difference from the baseline is not significant at
//! 5% is marked `~` (fewer than 4 runs can never be significant: see `benches/README.md`).

use std::time::Duration;

use ferry_benches::{RunsRow, Unit, all_cases, measure, measure_rounds};

fn main() {
    let mut per_case = 2.0f64;
    let mut runs: Option<usize> = None;
    let mut filter = None;
    let mut args = std::env::args().skip(1);
    let number = |v: Option<String>, what: &str| -> f64 {
        v.and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            eprintln!("{what} takes a number");
            std::process::exit(2)
        })
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => per_case = number(args.next(), "--seconds"),
            "--runs" => {
                let n = number(args.next(), "--runs");
                if !(1.0..=1000.0).contains(&n) || n.fract() != 0.0 {
                    eprintln!("--runs takes a whole number from 1 to 1000");
                    std::process::exit(2)
                }
                runs = Some(n as usize);
            }
            "-h" | "--help" => {
                println!(
                    "usage: report [--seconds S] [--runs N] [FILTER]   (S per comparison, default 2; \
                     N runs a side with medians, spreads and p-values)"
                );
                return;
            }
            _ => filter = Some(a),
        }
    }
    // Half the time per side, split in alternating rounds so drift hits both alike.
    let rounds = runs.unwrap_or(5);
    let per_round = Duration::from_secs_f64(per_case / 2.0 / rounds as f64);
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; run with --release for real figures");
    }
    if runs.is_some() {
        println!(
            "{:<34} {:>17} {:>17} {:>8}   {:>6}  unit",
            "name", "ferry", "baseline", "ratio", "p"
        );
    } else {
        println!(
            "{:<34} {:>10} {:>10} {:>8}  unit",
            "name", "ferry", "baseline", "ratio"
        );
    }
    for mut case in all_cases() {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let unit = match case.unit {
            Unit::Bytes(_) => "GB/s",
            Unit::Ops(_) => "Mops/s",
        };
        if runs.is_some() {
            let (fr, br) = measure_rounds(&mut case, per_round, rounds);
            println!("{}", RunsRow::new(&fr, &br).line(&case.name, unit));
            continue;
        }
        let (f, b) = measure(&mut case, per_round, rounds);
        let per_op = match case.unit {
            Unit::Bytes(_) => String::new(),
            Unit::Ops(ops) => format!("  ({:.2} vs {:.2} us/op)", ops as f64 / f, ops as f64 / b),
        };
        println!(
            "{:<34} {f:>10.2} {b:>10.2} {:>7.2}x  {unit}{per_op}",
            case.name,
            f / b
        );
    }
    if runs.is_some_and(|n| n < 4) {
        println!("(fewer than 4 runs a side can never be significant: take 5 or more)");
    }
}
