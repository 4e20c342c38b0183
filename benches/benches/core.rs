//! Criterion benchmarks of the core data path: each case beside its baseline in one group.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_benches::{Case, Unit, all_cases};

fn bench_case(c: &mut Criterion, mut case: Case) {
    let mut group = c.benchmark_group(&case.name);
    group.throughput(match case.unit {
        Unit::Bytes(b) => Throughput::Bytes(b),
        Unit::Ops(o) => Throughput::Elements(o),
    });
    group
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    group.bench_function("ferry", |b| b.iter_custom(|iters| (case.ferry)(iters)));
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| (case.baseline)(iters))
    });
    group.finish();
}

fn core_data_path(c: &mut Criterion) {
    for case in all_cases() {
        bench_case(c, case);
    }
}

criterion_group!(benches, core_data_path);
criterion_main!(benches);
