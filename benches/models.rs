//! Whole-model benchmarks (issue 15): the engine's closed-loop model (and the same model as a
//! hand-written loop), one race replay, a chunk of a seed sweep, and one virtual second of
//! dbench with 64 clients on 12 CPUs.
//! Results are deterministic; only the wall time varies.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use models::block::DiskConfig;
use models::kernel::Policy;
use models::scenario::{run, run_with_trace, Interleaving, Scenario};
use models::workload::bench::{run as bench_run, run_loop, BenchParams};
use models::workload::{fsload, spec::Spec};
use std::hint::black_box;

fn engine(c: &mut Criterion) {
    product_speed();
    let p = BenchParams {
        requests: 100_000,
        ..BenchParams::default()
    };
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(p.requests * 4));
    g.bench_function("closed_loop_100k_requests", |b| {
        b.iter(|| black_box(bench_run(&p).unwrap().trace_hash))
    });
    // The same model as a single-purpose hand-written loop (same results), for the ratio.
    g.bench_function("hand_written_loop_100k_requests", |b| {
        b.iter(|| black_box(run_loop(&p).unwrap().sim_ns))
    });
    g.finish();
}

fn races(c: &mut Criterion) {
    product_speed();
    let sc = Scenario::load("r6-log-start-blocked-on-tree-log-mutex").unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let pre = sc.pre_policy();
    c.bench_function("race/r6_scripted_run", |b| {
        b.iter(|| black_box(run(&sc, &pre, &dev, sc.seed, &Interleaving::Script).trace_hash))
    });
    let r1 = Scenario::load("r1-link-rename-logged-trans").unwrap();
    let p = r1.pre_policy();
    let mut g = c.benchmark_group("sweep");
    g.throughput(Throughput::Elements(256));
    g.bench_function("r1_256_seeds_one_thread", |b| {
        b.iter(|| {
            let mut h = 0u64;
            for seed in 0..256 {
                h ^= run_with_trace(&r1, &p, &dev, seed, &Interleaving::Random, false).trace_hash;
            }
            black_box(h)
        })
    });
    g.finish();
}

fn dbench(c: &mut Criterion) {
    product_speed();
    let mut s = Spec::load("dbench").unwrap();
    s.duration = sim::S;
    s.warmup = 0;
    let dev = DiskConfig::resolve(&s.device).unwrap();
    let p = Policy::preset("linux-5.11").unwrap();
    let mut g = c.benchmark_group("dbench");
    g.sample_size(10);
    g.bench_function("64_clients_1s_virtual", |b| {
        b.iter(|| black_box(fsload::run(&s, &p, &dev, 1, None).unwrap().trace_hash))
    });
    g.finish();
}

/// Time the product as it ships: without the invariant checks `.cargo/config.toml` turns on
/// for everything cargo runs (set before the first check reads it).
fn product_speed() {
    std::env::set_var("FSYNCSIM_INVARIANTS", "0");
}

criterion_group!(benches, engine, races, dbench);
criterion_main!(benches);
