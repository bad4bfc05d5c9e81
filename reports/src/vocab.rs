//! `fsyncsim list --ops/--points/--metrics/--policies`: the scenario vocabulary, generated
//! from the code so it cannot drift from what the parser accepts.

use models::btrfs::policy::PRESETS;
use models::btrfs::{Fix, Mutant};
use models::scenario::{parse_op, points_of};
use models::vfs::{op::OPS, Metrics};

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
        for p in points_of(&op) {
            t.push_str(&format!("  {p}\n"));
        }
    }
    t
}

/// Metrics for `[expect.*]`, with what each counts.
pub fn metrics() -> String {
    let names: Vec<&str> = Metrics::default()
        .scalars()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut t: String = names
        .iter()
        .map(|n| format!("{n:<w$}  {}\n", Metrics::describe(n).unwrap_or("")))
        .collect();
    t.push_str(
        "unnecessary_full_commits.CAUSE  per cause: last_unlink_trans, stale_log_full_commit_check, log_full_commit_flag\n",
    );
    t.push_str(
        "full_commits.RULE  all fallbacks per rule: last_unlink_trans.inode|parent|ancestor, stale_log_full_commit_check, log_full_commit_flag\n",
    );
    for c in models::vfs::WAIT_CLASSES {
        t.push_str(&format!(
            "{c}_count, {c}_ns  waits on {c} and their total time, all tasks\n"
        ));
    }
    t.push_str("ext3/ext4 (fs = \"ext3\" | \"ext4\"):\n");
    for (n, what) in models::vfs::metrics::JOURNAL_METRICS {
        t.push_str(&format!("ext4.{n}  {what}\n"));
    }
    t
}

/// Policy presets, fixes, mutants and switches.
pub fn policies() -> String {
    let mut t = String::from("presets:\n");
    for p in PRESETS {
        let fixes: Vec<&str> = models::btrfs::Policy::preset(p)
            .map(|x| x.fixes.iter().map(|f| f.name()).collect())
            .unwrap_or_default();
        let space: Vec<&str> = models::btrfs::Policy::preset(p)
            .and_then(|x| x.preempt)
            .map(|s| s.iter().map(|q| q.name()).collect())
            .unwrap_or_default();
        let worker = match models::btrfs::Policy::preset(p).and_then(|x| x.preempt) {
            None => "no preemptive reclaim worker".to_string(),
            Some(_) if space.is_empty() => "preemptive reclaim worker".to_string(),
            Some(_) => format!("preemptive reclaim worker with {}", space.join(",")),
        };
        let j = models::btrfs::Policy::preset(p)
            .map(|x| x.journal)
            .unwrap_or_default();
        t.push_str(&format!(
            "  {p:<12} fixes {}; {worker}; ext4 commits {}, ext3 commits {}{}\n",
            fixes.join(","),
            j.jbd2.name(),
            j.jbd.name(),
            if j.ext4_fsync_waits_only_if_started {
                ", ext4 fsync waits only for a commit it started"
            } else {
                ""
            }
        ));
    }
    t.push_str("fixes (--fix/--without R, or :+R/:-R after a preset):\n");
    for f in Fix::ALL {
        t.push_str(&format!("  {:<4} {}\n", f.name(), f.title()));
    }
    t.push_str("mutants (--mutant NAME, or :+NAME):\n");
    for m in Mutant::ALL {
        t.push_str(&format!("  {:<30} {}\n", m.name(), m.description()));
    }
    t.push_str("preemptive flushing changes (seed 004; :+NAME/:-NAME after a preset):\n");
    for q in models::btrfs::policy::SpacePatch::ALL {
        t.push_str(&format!("  {:<20} {}\n", q.name(), q.title()));
    }
    t.push_str("switches:\n  --super-committed  waiters of another task's commit return at SUPER_COMMITTED (5.12)\n");
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
