//! `fsyncsim list --ops/--points/--metrics/--policies`: the scenario vocabulary, generated
//! from the code so it cannot drift from what the parser accepts.

use models::btrfs::counters::{self as btrfs_counters, Counters};
use models::btrfs::Mutant;
use models::ext4::counters::JOURNAL_METRICS;
use models::kernel::PRESETS;
use models::scenario::{parse_op, points_of};
use models::vfs::op::OPS;

/// Operations: usage and what each models.
pub fn ops() -> String {
    let w = OPS.iter().map(|o| o.1.len()).max().unwrap_or(0);
    OPS.iter()
        .map(|(_, usage, what)| format!("{usage:<w$}  {what}\n"))
        .collect()
}

/// Named points each operation can reach.
pub fn points() -> String {
    let mut t = String::new();
    for (example, usage, _) in OPS {
        let op = parse_op(example).expect("every listed example parses");
        t.push_str(&format!("{usage}\n"));
        for p in points_of(models::mount::FsKind::Btrfs, &op) {
            t.push_str(&format!("  {p}\n"));
        }
    }
    t
}

/// The `[costs]` keys of a btrfs scenario: name, default and what each sets.
pub fn costs() -> String {
    let d = models::btrfs::Costs::default();
    let w = models::btrfs::Costs::FIELDS
        .iter()
        .map(|n| n.len())
        .max()
        .unwrap_or(0);
    models::btrfs::Costs::FIELDS
        .iter()
        .map(|n| {
            let v = d.get(n).expect("a field");
            let what = models::btrfs::costs::describe(n).unwrap_or("");
            format!("{n:<w$}  {v:>14}  {what}\n")
        })
        .collect()
}

/// Metrics for `[expect.*]`, with what each counts: btrfs's, then ext3/ext4's.
pub fn metrics() -> String {
    let names: Vec<&str> = Counters::default()
        .scalars()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut t: String = names
        .iter()
        .map(|n| format!("{n:<w$}  {}\n", btrfs_counters::describe(n).unwrap_or("")))
        .collect();
    t.push_str(
        "unnecessary_full_commits.CAUSE  per cause: last_unlink_trans, stale_log_full_commit_check, log_full_commit_flag\n",
    );
    t.push_str(
        "full_commits.RULE  all fallbacks per rule: last_unlink_trans.inode|parent|ancestor, stale_log_full_commit_check, log_full_commit_flag\n",
    );
    for c in btrfs_counters::WAIT_CLASSES {
        t.push_str(&format!(
            "{c}_count, {c}_ns  waits on {c} and their total time, all tasks\n"
        ));
    }
    t.push_str("ext3/ext4 (fs = \"ext3\" | \"ext4\"): device_bytes_written, flushes, transaction_commits and\n");
    for (n, what) in JOURNAL_METRICS {
        t.push_str(&format!("ext4.{n}  {what}\n"));
    }
    t
}

/// What a metric of either filesystem counts, as `list --metrics` says.
pub fn describe_metric(name: &str) -> Option<&'static str> {
    if let Some(n) = name.strip_prefix("ext4.") {
        return JOURNAL_METRICS.iter().find(|m| m.0 == n).map(|m| m.1);
    }
    if let Some(c) = name.strip_suffix("_ns") {
        if btrfs_counters::WAIT_CLASSES.contains(&c) {
            return Some("ns of waits on this, all tasks");
        }
    }
    btrfs_counters::describe(name)
}

/// Policy presets with their switches, then the switch registry, mutants and options.
pub fn policies() -> String {
    use models::btrfs::switches::SWITCHES;
    let mut t = String::from("presets (each release's btrfs switches and journal policy):\n");
    for preset in PRESETS {
        let p = models::kernel::Policy::preset(preset.name).expect("a listed preset exists");
        let on: Vec<&str> = SWITCHES
            .iter()
            .filter(|s| s.is_on(&p.btrfs))
            .map(|s| s.name())
            .collect();
        let j = p.journal;
        t.push_str(&format!(
            "  {:<12} btrfs {}; ext4 commits {}, ext3 commits {}{}\n",
            preset.name,
            on.join(","),
            j.jbd2.name(),
            j.jbd.name(),
            if j.ext4_fsync_waits_only_if_started {
                ", ext4 fsync waits only for a commit it started"
            } else {
                ""
            }
        ));
    }
    t.push_str(
        "btrfs switches (--fix/--without R, :+NAME/:-NAME after a preset; --super-committed):\n",
    );
    for s in &SWITCHES {
        t.push_str(&format!(
            "  {:<20} {:<6} {:<13} {:<28} {}\n    source: {}\n",
            s.name(),
            s.merged.split(',').next().unwrap_or(s.merged),
            s.commit.unwrap_or("-"),
            s.metric,
            s.title(),
            s.source
        ));
    }
    t.push_str("mutants (--mutant NAME, or :+NAME):\n");
    for m in Mutant::ALL {
        t.push_str(&format!("  {:<30} {}\n", m.name(), m.description()));
    }
    t
}

/// The built-in workloads: name, kind, filesystem, device and title.
pub fn workloads(specs: &[models::workload::spec::Spec]) -> String {
    let mut t = String::new();
    for s in specs {
        t.push_str(&format!(
            "{:<26} {:<16} {:<6} {:<14} {}\n",
            s.name,
            s.kind.name(),
            s.mount.fs.name(),
            s.device,
            s.title
        ));
    }
    t
}
