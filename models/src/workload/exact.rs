//! Exact latency statistics kept beside an HDR histogram: the histogram rounds a value to its
//! bucket (3 significant digits), fio reports min, max, mean and standard deviation of the
//! samples themselves and counts them in its fixed latency ranges (`latency_ns/us/ms`).

use sim::Nanos;

/// fio's latency ranges (stat.c `latency_ns`, `latency_us`, `latency_ms`): 10 + 10 + 12.
pub const LAT_BUCKETS: usize = 32;

/// Count, exact min/max, mean and variance (Welford) and fio's latency-range counts of a
/// set of latencies, ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exact {
    n: u64,
    min: Nanos,
    max: Nanos,
    mean: f64,
    m2: f64,
    /// Samples per fio latency range: 0..10 ns ranges, 10..20 µs ranges, 20..32 ms ranges.
    pub buckets: [u64; LAT_BUCKETS],
}

/// Index within one of fio's decade scales (io_u.c `io_u_mark_lat_*`): <2, <4, <10, <20,
/// <50, <100, <250, <500, <750, <1000, then (ms only) <2000 and the rest.
fn scale_index(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        750..=999 => 9,
        1000..=1999 => 10,
        _ => 11,
    }
}

/// The fio latency range of a latency of `ns` (an index into [`Exact::buckets`]).
pub fn lat_bucket(ns: Nanos) -> usize {
    if ns < 1_000 {
        scale_index(ns)
    } else if ns < 1_000_000 {
        10 + scale_index(ns / 1_000)
    } else {
        20 + scale_index(ns / 1_000_000)
    }
}

impl Exact {
    /// Adds `count` samples of value `v`.
    pub fn record_n(&mut self, v: Nanos, count: u64) {
        if count == 0 {
            return;
        }
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        // Chan et al.'s pairwise update with a batch of `count` equal values.
        let n = self.n as f64;
        let k = count as f64;
        let total = n + k;
        let delta = v as f64 - self.mean;
        self.mean += delta * k / total;
        self.m2 += delta * delta * n * k / total;
        self.n += count;
        self.buckets[lat_bucket(v)] += count;
    }

    /// Adds one sample.
    pub fn record(&mut self, v: Nanos) {
        self.record_n(v, 1);
    }

    /// Samples.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Smallest sample (0 when empty).
    pub fn min(&self) -> Nanos {
        self.min
    }

    /// Largest sample (0 when empty).
    pub fn max(&self) -> Nanos {
        self.max
    }

    /// Mean (0 when empty).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation (n − 1 in the denominator, as fio's `calc_lat`; 0 below two
    /// samples).
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / (self.n - 1) as f64).sqrt()
        }
    }

    /// Adds another set's samples.
    pub fn merge(&mut self, o: &Exact) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        let (n, k) = (self.n as f64, o.n as f64);
        let total = n + k;
        let delta = o.mean - self.mean;
        self.mean += delta * k / total;
        self.m2 += o.m2 + delta * delta * n * k / total;
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        for (a, b) in self.buckets.iter_mut().zip(o.buckets.iter()) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_mean_stddev_are_the_samples_own() {
        let mut e = Exact::default();
        let xs = [1_234_567u64, 7, 1_000_001, 999, 42];
        for &x in &xs {
            e.record(x);
        }
        assert_eq!((e.len(), e.min(), e.max()), (5, 7, 1_234_567));
        let mean = xs.iter().sum::<u64>() as f64 / 5.0;
        assert!((e.mean() - mean).abs() < 1e-6);
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / 4.0;
        assert!((e.stddev() - var.sqrt()).abs() < 1e-6);
        // Batched equal values give what one-by-one recording gives.
        let mut a = Exact::default();
        let mut b = Exact::default();
        a.record_n(500, 3);
        a.record(9);
        for _ in 0..3 {
            b.record(500);
        }
        b.record(9);
        assert_eq!((a.len(), a.min(), a.max()), (b.len(), b.min(), b.max()));
        assert!((a.stddev() - b.stddev()).abs() < 1e-9);
    }

    #[test]
    fn fio_latency_ranges() {
        assert_eq!(lat_bucket(1), 0);
        assert_eq!(lat_bucket(999), 9);
        assert_eq!(lat_bucket(1_000), 10);
        assert_eq!(lat_bucket(3_999), 11);
        assert_eq!(lat_bucket(999_999), 19);
        assert_eq!(lat_bucket(1_000_000), 20);
        assert_eq!(lat_bucket(1_999_999_999), 30);
        assert_eq!(lat_bucket(2_000_000_000), 31);
    }

    #[test]
    fn merge_equals_recording_both() {
        let mut a = Exact::default();
        let mut b = Exact::default();
        let mut both = Exact::default();
        for x in [5u64, 80, 3_000] {
            a.record(x);
            both.record(x);
        }
        for x in [1u64, 7_000_000] {
            b.record(x);
            both.record(x);
        }
        a.merge(&b);
        assert_eq!(
            (a.len(), a.min(), a.max()),
            (both.len(), both.min(), both.max())
        );
        assert_eq!(a.buckets, both.buckets);
        assert!((a.mean() - both.mean()).abs() < 1e-6);
        assert!((a.stddev() - both.stddev()).abs() < 1e-6);
    }
}
