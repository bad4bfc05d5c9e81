//! Event-queue benchmark: the classic "hold" model (pop the earliest event, push one at
//! now + Exp(mean)) at several queue sizes, for the engine's 4-ary `EventQueue` and for
//! `std::collections::BinaryHeap` as the reference.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use sim::queue::EventQueue;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

const HOLDS: u64 = 100_000;

fn increments(n: usize) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    (0..n)
        .map(|_| {
            let x: f64 = Exp1.sample(&mut rng);
            (x * 50_000.0) as u64
        })
        .collect()
}

fn key(time: u64, seq: u64, task: u64) -> u128 {
    (u128::from(time) << 64) | (u128::from(seq) << 24) | u128::from(task)
}

fn hold(c: &mut Criterion) {
    let inc = increments(HOLDS as usize + 4096);
    let mut g = c.benchmark_group("hold");
    g.throughput(Throughput::Elements(HOLDS));
    for size in [64usize, 1024, 16384] {
        g.bench_with_input(
            BenchmarkId::new("EventQueue(4-ary)", size),
            &size,
            |b, &size| {
                b.iter(|| {
                    let mut q = EventQueue::new();
                    let mut seq = 0;
                    for (i, &d) in inc.iter().take(size).enumerate() {
                        q.push(key(d, seq, i as u64));
                        seq += 1;
                    }
                    for &d in inc.iter().skip(size).take(HOLDS as usize) {
                        let k = q.pop().unwrap();
                        let now = (k >> 64) as u64;
                        q.push(key(now + d, seq, (k as u64) & 0xff_ffff));
                        seq += 1;
                    }
                    black_box(q.len())
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("EventQueue u64 time-only", size),
            &size,
            |b, &size| {
                b.iter(|| {
                    let mut q: EventQueue<u64> = EventQueue::new();
                    for &d in inc.iter().take(size) {
                        q.push(d);
                    }
                    for &d in inc.iter().skip(size).take(HOLDS as usize) {
                        let now = q.pop().unwrap();
                        q.push(now + d);
                    }
                    black_box(q.len())
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("std BinaryHeap", size),
            &size,
            |b, &size| {
                b.iter(|| {
                    let mut q = BinaryHeap::new();
                    let mut seq = 0;
                    for (i, &d) in inc.iter().take(size).enumerate() {
                        q.push(Reverse(key(d, seq, i as u64)));
                        seq += 1;
                    }
                    for &d in inc.iter().skip(size).take(HOLDS as usize) {
                        let Reverse(k) = q.pop().unwrap();
                        let now = (k >> 64) as u64;
                        q.push(Reverse(key(now + d, seq, (k as u64) & 0xff_ffff)));
                        seq += 1;
                    }
                    black_box(q.len())
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
