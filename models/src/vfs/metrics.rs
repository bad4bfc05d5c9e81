//! What a filesystem run counts, by name: the filesystem's scalar counters, counters split by
//! a key (`full_commits.<rule>`), waits on its locks and wait queues, and rows under its own
//! prefix (`ext4.<name>`); also invariant violations and per-operation latency. Each
//! filesystem declares its own counters (`btrfs::counters`, `ext4::counters`); this module
//! knows none of their names.

use crate::device::new_histogram;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Counters of one run by name, as the filesystem that ran reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Scalar counters in the filesystem's report order.
    pub scalars: Vec<(&'static str, u64)>,
    /// Counters split by a key, reported and looked up as `<family>.<key>`.
    pub families: Vec<Family>,
    /// Waits per lock and wait queue class the filesystem reports: (class, waits, ns),
    /// reported as `<class>_count` and `<class>_ns`.
    pub waits: Vec<(&'static str, u64, u64)>,
    /// Rows under the filesystem's own prefix (`ext4.<name>`), in report order.
    pub prefixed: Vec<(String, u64)>,
}

/// A counter split by a key (`full_commits` by rule, flush_space calls by state).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Family {
    /// The family's name: its rows are `<name>.<key>`.
    pub name: &'static str,
    /// The JSON object it is reported as (`<name>_by_cause`); None = looked up only.
    pub report: Option<&'static str>,
    /// The keys a lookup accepts (counted 0 when absent); None = any key.
    pub keys: Option<Vec<&'static str>>,
    /// Count per key.
    pub counts: BTreeMap<String, u64>,
}

impl Family {
    /// A reported family whose every key is a valid lookup.
    pub fn open(name: &'static str, report: &'static str, counts: &BTreeMap<String, u64>) -> Self {
        Family {
            name,
            report: Some(report),
            keys: None,
            counts: counts.clone(),
        }
    }

    /// A family looked up only, with a fixed key set.
    pub fn closed(
        name: &'static str,
        keys: Vec<&'static str>,
        counts: &BTreeMap<String, u64>,
    ) -> Self {
        Family {
            name,
            report: None,
            keys: Some(keys),
            counts: counts.clone(),
        }
    }

    fn get(&self, key: &str) -> Option<u64> {
        let known = self.keys.as_ref().is_none_or(|k| k.contains(&key));
        known.then(|| self.counts.get(key).copied().unwrap_or(0))
    }
}

impl Metrics {
    /// (name, value) of every scalar counter, in the filesystem's order.
    pub fn scalars(&self) -> &[(&'static str, u64)] {
        &self.scalars
    }

    /// The prefixed rows (`ext4.<name>`; empty for btrfs).
    pub fn prefixed_rows(&self) -> &[(String, u64)] {
        &self.prefixed
    }

    /// The wait metrics (`<class>_count`, `<class>_ns`) of every class the filesystem reports.
    pub fn wait_rows(&self) -> Vec<(String, u64)> {
        let mut v = Vec::with_capacity(self.waits.len() * 2);
        for &(c, n, ns) in &self.waits {
            v.push((format!("{c}_count"), n));
            v.push((format!("{c}_ns"), ns));
        }
        v
    }

    /// Every reported row in report order: scalars, reported families' keys, waits, prefixed.
    pub fn rows(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .scalars
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        for f in self.families.iter().filter(|f| f.report.is_some()) {
            v.extend(
                f.counts
                    .iter()
                    .map(|(k, n)| (format!("{}.{k}", f.name), *n)),
            );
        }
        v.extend(self.wait_rows());
        v.extend(self.prefixed.iter().cloned());
        v
    }

    /// Sets each reported class's waits from the engine's resource statistics of the run
    /// (resources of one class, e.g. every inode's lock, summed).
    pub fn fill_waits(&mut self, stats: &[sim::ResourceStats]) {
        for w in &mut self.waits {
            (w.1, w.2) = (0, 0);
        }
        for r in stats {
            if let Some(w) = self.waits.iter_mut().find(|w| w.0 == r.name) {
                w.1 += r.waits;
                w.2 += r.wait_ns;
            }
        }
    }

    /// A counter by name: a scalar, `<family>.<key>`, `<class>_count`, `<class>_ns` or a
    /// prefixed row. None: not one of this filesystem's counters.
    pub fn get(&self, name: &str) -> Option<u64> {
        for (suffix, ns) in [("_count", false), ("_ns", true)] {
            if let Some(c) = name.strip_suffix(suffix) {
                if let Some(&(_, n, t)) = self.waits.iter().find(|w| w.0 == c) {
                    return Some(if ns { t } else { n });
                }
            }
        }
        if let Some((_, v)) = self.prefixed.iter().find(|(k, _)| k == name) {
            return Some(*v);
        }
        if let Some((_, v)) = self.scalars.iter().find(|(k, _)| *k == name) {
            return Some(*v);
        }
        let (family, key) = name.split_once('.')?;
        self.families
            .iter()
            .find(|f| f.name == family)
            .and_then(|f| f.get(key))
    }
}

/// The invariants the crash check judges (S1 superblock order, S2 what a returned fsync
/// promised, S3 deadlock); `[expect.*]`, sweep and shrink targets name them.
pub const INVARIANTS: [&str; 3] = ["S1", "S2", "S3"];

/// An invariant violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// "S1", "S2" or "S3".
    pub invariant: String,
    /// Virtual time.
    pub at: sim::Nanos,
    /// What happened.
    pub message: String,
    /// The trace lines that led to it (last ones).
    pub timeline: Vec<String>,
}

/// Latency per operation kind.
#[derive(Clone, Debug, Default)]
pub struct OpLatency {
    /// Operation kind → latency histogram (ns).
    pub by_op: BTreeMap<String, Histogram<u64>>,
}

impl OpLatency {
    /// Records one operation.
    pub fn record(&mut self, op: &str, ns: u64) {
        self.by_op
            .entry(op.to_string())
            .or_insert_with(new_histogram)
            .saturating_record(ns);
    }
}
