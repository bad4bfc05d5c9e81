//! Event-queue benchmark: the classic "hold" model (pop the earliest event, push one at
//! now + Exp(mean 50 µs)) at several queue sizes: the engine's `TimerQueue` (packed u64
//! keys with FIFO ties and long-timer handling), its 4-ary `EventQueue` alone on the same
//! keys, and `std`'s `BinaryHeap` as the reference.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use sim::queue::{EventQueue, TimerQueue};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

const HOLDS: usize = 100_000;

fn increments(n: usize) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    (0..n)
        .map(|_| {
            let x: f64 = Exp1.sample(&mut rng);
            1 + (x * 50_000.0) as u64
        })
        .collect()
}

fn hold(c: &mut Criterion) {
    product_speed();
    let inc = increments(HOLDS + 16_384);
    let mut g = c.benchmark_group("hold");
    g.throughput(Throughput::Elements(HOLDS as u64));
    for size in [64usize, 1024, 16_384] {
        g.bench_with_input(BenchmarkId::new("TimerQueue", size), &size, |b, &size| {
            b.iter(|| {
                let mut q = TimerQueue::new();
                for (task, &d) in inc.iter().take(size).enumerate() {
                    q.push(0, d, task as u32);
                }
                for &d in inc.iter().skip(size).take(HOLDS) {
                    let (now, task) = q.pop().unwrap();
                    q.push(now, now + d, task.unwrap());
                }
                black_box(q.len())
            })
        });
        g.bench_with_input(BenchmarkId::new("EventQueue", size), &size, |b, &size| {
            b.iter(|| {
                let mut q = EventQueue::new();
                for &d in inc.iter().take(size) {
                    q.push(d);
                }
                for &d in inc.iter().skip(size).take(HOLDS) {
                    let now = q.pop().unwrap();
                    q.push(now + d);
                }
                black_box(q.len())
            })
        });
        g.bench_with_input(
            BenchmarkId::new("std BinaryHeap", size),
            &size,
            |b, &size| {
                b.iter(|| {
                    let mut q = BinaryHeap::new();
                    for &d in inc.iter().take(size) {
                        q.push(Reverse(d));
                    }
                    for &d in inc.iter().skip(size).take(HOLDS) {
                        let Reverse(now) = q.pop().unwrap();
                        q.push(Reverse(now + d));
                    }
                    black_box(q.len())
                })
            },
        );
    }
    g.finish();
}

/// Time the product as it ships: without the invariant checks `.cargo/config.toml` turns on
/// for everything cargo runs (set before the first check reads it).
fn product_speed() {
    std::env::set_var("FSYNCSIM_INVARIANTS", "0");
}

criterion_group!(benches, hold);
criterion_main!(benches);
