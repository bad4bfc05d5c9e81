//! Kernel release presets: a preset is data — the release whose btrfs switches it takes
//! (`btrfs::switches`) and the journal policy of its jbd/jbd2 — composed here into the
//! `Policy` a run simulates. No block-layer default of the modelled device path changes
//! between the modelled releases, so a preset carries none.

use crate::btrfs::policy::{LogPatch, SpacePatch};
use crate::btrfs::{self, Fix, Mutant};
use crate::jbd2::{CommitWriteOp as W, JournalPolicy};

/// One release preset.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    /// `linux-5.11`, `jan-rfc`, …
    pub name: &'static str,
    /// The release whose btrfs switches it has (btrfs before 5.10 is not modelled: those
    /// presets carry 5.10's).
    pub btrfs: (u8, u8),
    /// jbd2 (ext4) and jbd (ext3) commit writes and ext4's fsync wait.
    pub journal: JournalPolicy,
}

/// The journal of 2.6.36–2.6.39 (the ext4 kbuild thread): commit write type per release;
/// ext4_sync_file waits only for a commit it started from 2.6.37 to 3.0
/// (fs/ext4/fsync.c@v2.6.37; "ext4: fix waiting and sending of a barrier in
/// ext4_sync_file", 3.0).
const fn old(jbd2: W, jbd: W) -> JournalPolicy {
    JournalPolicy {
        jbd2,
        jbd,
        ext4_fsync_waits_only_if_started: true,
    }
}

/// A preset of `name` with btrfs of release `btrfs` and journal policy `journal`.
const fn preset(name: &'static str, btrfs: (u8, u8), journal: JournalPolicy) -> Preset {
    Preset {
        name,
        btrfs,
        journal,
    }
}

/// Every preset, oldest first (the 2.6 ones matter for ext3/ext4 runs only).
pub const PRESETS: [Preset; 12] = [
    preset("linux-2.6.36", (2, 6), old(W::Write, W::Write)),
    // 749ef9f8423054e326f: jbd/jbd2 commit writes become WRITE_SYNC.
    preset("linux-2.6.37", (2, 6), old(W::WriteSync, W::WriteSync)),
    preset("linux-2.6.38", (2, 6), old(W::WriteSync, W::WriteSync)),
    // Jan Kara's RFC "refine commit writeout logic" (the ext4 kbuild thread), never merged.
    preset("jan-rfc", (2, 6), old(W::WaitedAtLock, W::WaitedAtLock)),
    // 2db938bee32e: the jbd refinement, ext3 only.
    preset("linux-2.6.39", (2, 6), old(W::WriteSync, W::WaitedAtFlush)),
    preset("linux-5.10", (5, 10), JournalPolicy::MODERN),
    preset("linux-5.11", (5, 11), JournalPolicy::MODERN),
    preset("linux-5.12", (5, 12), JournalPolicy::MODERN),
    preset("linux-5.13", (5, 13), JournalPolicy::MODERN),
    preset("linux-5.14", (5, 14), JournalPolicy::MODERN),
    preset("linux-5.15", (5, 15), JournalPolicy::MODERN),
    preset("linux-5.16", (5, 16), JournalPolicy::MODERN),
];

/// The preset names, oldest first.
pub fn preset_names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|p| p.name)
}

/// The kernel behaviour a run simulates: each subsystem's part of one policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Name shown in reports ("linux-5.11", "linux-5.11 without R1", …).
    pub name: String,
    /// btrfs's switches and mutants.
    pub btrfs: btrfs::Policy,
    /// ext3/ext4: how the journal writes its commits and how ext4's fsync waits.
    pub journal: JournalPolicy,
}

impl Policy {
    /// The shortest `PRESET:±SWITCH…` spelling that `parse_policy` reads back as this
    /// policy (its btrfs switches and journal policy), or None when no preset leads to it.
    pub fn spec(&self) -> Option<String> {
        let mut best: Option<String> = None;
        for name in preset_names() {
            let Some(m) = Policy::preset(name).and_then(|b| self.modifiers_from(&b)) else {
                continue;
            };
            let spec = std::iter::once(name.to_string())
                .chain(m)
                .collect::<Vec<_>>()
                .join(":");
            let same = parse_policy(&spec)
                .is_ok_and(|q| q.btrfs == self.btrfs && q.journal == self.journal);
            if same && best.as_ref().is_none_or(|b| spec.len() < b.len()) {
                best = Some(spec);
            }
        }
        best
    }

    /// The `±SWITCH` modifiers that turn `base` into this policy, if switches can.
    fn modifiers_from(&self, base: &Policy) -> Option<Vec<String>> {
        let (a, b) = (&base.btrfs, &self.btrfs);
        if base.journal != self.journal || a.kernel != b.kernel || !a.mutants.is_empty() {
            return None;
        }
        let sign = |on: bool| if on { "+" } else { "-" };
        let mut m: Vec<String> = a
            .fixes
            .difference(&b.fixes)
            .map(|f| format!("-{}", f.name()))
            .collect();
        m.extend(
            b.fixes
                .difference(&a.fixes)
                .map(|f| format!("+{}", f.name())),
        );
        m.extend(b.mutants.iter().map(|x| format!("+{}", x.name())));
        if a.super_committed != b.super_committed {
            m.push(format!("{}super_committed", sign(b.super_committed)));
        }
        match (&a.preempt, &b.preempt) {
            (Some(x), Some(y)) => {
                m.extend(
                    x.symmetric_difference(y)
                        .map(|sp| format!("{}{}", sign(y.contains(sp)), sp.name())),
                );
            }
            (None, None) => {}
            _ => return None,
        }
        m.extend(
            a.log
                .symmetric_difference(&b.log)
                .map(|l| format!("{}{}", sign(b.log.contains(l)), l.name())),
        );
        Some(m)
    }

    /// The preset called `name`.
    pub fn preset(name: &str) -> Option<Policy> {
        let p = PRESETS.iter().find(|p| p.name == name)?;
        Some(Policy {
            name: p.name.to_string(),
            btrfs: btrfs::switches::release(p.btrfs),
            journal: p.journal,
        })
    }

    /// Whether a btrfs fix is applied.
    pub fn has(&self, f: Fix) -> bool {
        self.btrfs.has(f)
    }

    /// Whether a btrfs mutant is enabled.
    pub fn mutant(&self, m: Mutant) -> bool {
        self.btrfs.mutant(m)
    }

    /// Whether a preemptive-flushing change is applied.
    pub fn space(&self, p: SpacePatch) -> bool {
        self.btrfs.space(p)
    }

    /// This policy with `f` removed, renamed "<name> without <f>".
    pub fn without(&self, f: Fix) -> Policy {
        let mut p = self.clone();
        if p.btrfs.fixes.remove(&f) {
            p.name = format!("{} without {}", p.name, f.name());
        }
        p
    }

    /// This policy with `f` added, renamed "<name> with <f>".
    pub fn with(&self, f: Fix) -> Policy {
        let mut p = self.clone();
        if p.btrfs.fixes.insert(f) {
            p.name = format!("{} with {}", p.name, f.name());
        }
        p
    }

    /// This policy with a mutant enabled.
    pub fn with_mutant(&self, m: Mutant) -> Policy {
        let mut p = self.clone();
        if p.btrfs.mutants.insert(m) {
            p.name = format!("{} +{}", p.name, m.name());
        }
        p
    }

    /// This policy with commit waiters released at SUPER_COMMITTED (5.12+).
    pub fn with_super_committed(&self) -> Policy {
        let mut p = self.clone();
        if !p.btrfs.super_committed {
            p.btrfs.super_committed = true;
            p.name = format!("{} +SUPER_COMMITTED", p.name);
        }
        p
    }

    /// This policy with a preemptive-flushing change added (`+`) or removed (`-`).
    pub fn with_space(&self, sp: SpacePatch, on: bool) -> Policy {
        let mut q = self.clone();
        let set = q.btrfs.preempt.get_or_insert_with(Default::default);
        let changed = if on { set.insert(sp) } else { set.remove(&sp) };
        if changed {
            q.name = format!("{} {}{}", q.name, if on { "+" } else { "-" }, sp.name());
        }
        q
    }

    /// This policy with a 5.12 tree-log change turned on or off, renamed "<name> ±<patch>".
    pub fn with_log(&self, lp: LogPatch, on: bool) -> Policy {
        let mut q = self.clone();
        let changed = if on {
            q.btrfs.log.insert(lp)
        } else {
            q.btrfs.log.remove(&lp)
        };
        if changed {
            q.name = format!("{} {}{}", q.name, if on { "+" } else { "-" }, lp.name());
        }
        q
    }

    /// "R1,R2,…" of the applied fixes.
    pub fn fix_list(&self) -> Vec<String> {
        self.btrfs
            .fixes
            .iter()
            .map(|f| f.name().to_string())
            .collect()
    }
}

/// Parses a policy spec: a preset, then `:-R7`, `:+R1`, `:+MUTANT` or `:+super_committed`
/// modifiers, separated by `:` or spaces (`linux-5.11:-R7` and `linux-5.11 -R7` are
/// linux-5.11 without R7's fix).
pub fn parse_policy(s: &str) -> Result<Policy, String> {
    let norm = s.split_whitespace().collect::<Vec<_>>().join(":");
    let mut parts = norm.split(':');
    let base = parts.next().unwrap_or_default();
    let mut p = Policy::preset(base).ok_or_else(|| {
        format!(
            "unknown policy '{base}': expected one of {} optionally with :-R7, :+R1, :+MUTANT or :+super_committed",
            crate::kernel::preset_names().collect::<Vec<_>>().join(", ")
        )
    })?;
    for m in parts {
        // The first character, whatever its width (`:é` panicked at a byte index).
        let (sign, name) = m.split_at(m.chars().next().map_or(0, char::len_utf8));
        p = match (sign, Fix::parse(name), Mutant::parse(name)) {
            ("+", _, _) if name == "super_committed" => p.with_super_committed(),
            ("-", _, _) if name == "super_committed" => {
                p.btrfs.super_committed = false;
                p
            }
            ("-", Some(f), _) => p.without(f),
            ("+", Some(f), _) => p.with(f),
            ("+", None, Some(mu)) => p.with_mutant(mu),
            (sign @ ("+" | "-"), None, None) if SpacePatch::parse(name).is_some() => {
                p.with_space(SpacePatch::parse(name).expect("checked"), sign == "+")
            }
            (sign @ ("+" | "-"), None, None) if LogPatch::parse(name).is_some() => {
                p.with_log(LogPatch::parse(name).expect("checked"), sign == "+")
            }
            _ => {
                return Err(format!(
                    "invalid policy modifier ':{m}' in '{s}': expected :-R1..:-R7, :+R1..:+R7, :+MUTANT, :+super_committed, :±SPACE_PATCH or :±LOG_PATCH (fsyncsim list --policies)"
                ))
            }
        };
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_the_kernels() {
        let p10 = Policy::preset("linux-5.10").unwrap();
        assert!(p10.has(Fix::R7) && !p10.has(Fix::R1) && !p10.has(Fix::R6));
        assert!(p10.btrfs.preempt.is_none() && !p10.btrfs.super_committed);
        let p11 = Policy::preset("linux-5.11").unwrap();
        assert!(Fix::ALL.iter().all(|&f| p11.has(f)));
        let pre = p11.without(Fix::R4);
        assert_eq!(pre.name, "linux-5.11 without R4");
        assert!(!pre.has(Fix::R4) && pre.has(Fix::R5));
        assert!(LogPatch::ALL.iter().all(|&l| !p11.btrfs.log(l)));
        let p12 = Policy::preset("linux-5.12").unwrap();
        // The 5.12 series: in 5.12; bc0939fcfab0, 8318ba79eeeb and 885f46d87f29 from 5.13;
        // b590b839720c from 5.14; 8be2ba2e0e11 from 5.15; 88e221cdacc5, 4934a8150214 and
        // f6df27dd2707 from 5.16; d99478874355 in none.
        let later = [
            LogPatch::SkipUnchangedDirs,
            LogPatch::PreallocFullFsync,
            LogPatch::SubTransStamp,
            LogPatch::IMmapLock,
            LogPatch::MmapLockFsync,
            LogPatch::SkipUnchangedXattrs,
            LogPatch::FullSyncIfExtentsDropped,
            LogPatch::DropIfLogged,
            LogPatch::TruncateIfLogged,
            LogPatch::KeepDelayedInode,
            LogPatch::NewNameLoggedTrans,
        ];
        assert!(LogPatch::ALL
            .iter()
            .filter(|l| !later.contains(l))
            .all(|&l| p12.btrfs.log(l)));
        let p13 = Policy::preset("linux-5.13").unwrap();
        for l in [
            LogPatch::SubTransStamp,
            LogPatch::IMmapLock,
            LogPatch::MmapLockFsync,
        ] {
            assert!(!p12.btrfs.log(l) && p13.btrfs.log(l), "{l:?} is 5.13's");
        }
        assert!(!Policy::preset("linux-5.14").unwrap().btrfs.log(later[0]));
        let x = LogPatch::SkipUnchangedXattrs;
        assert!(!p13.btrfs.log(x) && Policy::preset("linux-5.14").unwrap().btrfs.log(x));
        assert!(Policy::preset("linux-5.15").unwrap().btrfs.log(later[0]));
        let off = parse_policy("linux-5.12:-skip-logged-parents").unwrap();
        assert!(!off.btrfs.log(LogPatch::SkipLoggedParents));
        assert_eq!(off.name, "linux-5.12 -skip-logged-parents");
        let p14 = Policy::preset("linux-5.14").unwrap();
        assert!(SpacePatch::SERIES.iter().all(|&s| p14.space(s)));
        assert!(!p14.space(SpacePatch::Full90));
        assert!(Policy::preset("linux-5.15")
            .unwrap()
            .space(SpacePatch::Full90));
        let old = Policy::preset("linux-2.6.37").unwrap();
        assert_eq!(old.btrfs, p10.btrfs);
        assert_eq!(old.journal.jbd2, W::WriteSync);
        assert_eq!(
            Policy::preset("linux-5.11").unwrap().journal,
            JournalPolicy::default()
        );
    }
}
