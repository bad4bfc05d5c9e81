//! Crash recovery (open_ctree's choice of superblock, fs/btrfs/disk_io.c, and
//! btrfs_recover_log_trees, fs/btrfs/tree-log.c) from the device's durable image, and the
//! S2 check that every returned fsync survives it.

use super::ctree::Btrfs;
use super::state::*;
use crate::device::DurableWrite;
use std::collections::{BTreeMap, BTreeSet};

/// Recovers the filesystem from `image` (what survives a power loss now) and checks every
/// fsync that returned: its data and one of its names must survive, and the superblock must
/// not point at blocks that are not durable.
pub fn check_recovery(st: &FsState, image: &BTreeMap<u64, DurableWrite>) -> Result<(), String> {
    let durable = |tok: u64| {
        st.write_kind(tok)
            .is_some_and(|(_, off)| image.get(&off).is_some_and(|w| w.token == tok))
    };
    let (base, log) = match image
        .get(&SUPER_OFFSET)
        .and_then(|w| st.write_kind(w.token))
    {
        None => (MKFS_GENERATION, None),
        Some((WriteKind::CommitSuper { transid }, _)) => (transid, None),
        Some((
            WriteKind::LogSuper {
                transid,
                log_transid,
                base,
            },
            _,
        )) => (base, Some((transid, log_transid))),
        Some((other, _)) => return Err(format!("superblock slot holds {other:?}")),
    };
    for (i, (kind, _)) in st.writes.iter().enumerate() {
        let tok = i as u64 + 1;
        match *kind {
            WriteKind::CommitBlocks { transid } if transid <= base && !durable(tok) => {
                return Err(format!(
                    "the durable superblock says generation {base}, but transaction {transid}'s tree blocks are not durable: the filesystem is corrupt"
                ));
            }
            WriteKind::LogBlocks {
                transid,
                log_transid,
            }
            | WriteKind::LogRoot {
                transid,
                log_transid,
            } if log.is_some_and(|(t, k)| t == transid && log_transid <= k) && !durable(tok) => {
                return Err(format!(
                    "the durable superblock points at the log of transaction {transid}, but its log blocks (sub-transaction {log_transid}) are not durable: log replay reads garbage"
                ));
            }
            _ => {}
        }
    }
    // The namespace and extents as of the committed generation.
    let mut names: BTreeMap<(Ino, String), Ino> = BTreeMap::new();
    for ((dir, name), versions) in st.all_dentries() {
        if let Some(d) = versions
            .iter()
            .rev()
            .find(|d| d.created <= base && d.removed.is_none_or(|r| r > base))
        {
            names.insert((dir, name.to_string()), d.ino);
        }
    }
    let mut extents: BTreeSet<u64> = st
        .inodes
        .values()
        .flat_map(|i| i.extents.iter())
        .filter(|e| e.generation <= base)
        .map(|e| e.id)
        .collect();
    // Log replay.
    if let Some((t, k)) = log {
        for (_, facts) in st.log_facts.range((t, 0)..=(t, k)) {
            for f in facts {
                match f {
                    LogFact::Inode { ino, names: ns, .. } => {
                        // Replaying an inode's refs makes its names exactly the logged set
                        // (add_inode_ref drops refs the log no longer has).
                        names.retain(|_, i| i != ino);
                        for n in ns {
                            names.insert(n.clone(), *ino);
                        }
                    }
                    LogFact::Extent { extent, .. } => {
                        extents.insert(*extent);
                    }
                    LogFact::DirEntries { dir, entries } => {
                        names.retain(|(d, _), _| d != dir);
                        for (n, i) in entries {
                            names.insert((*dir, n.clone()), *i);
                        }
                    }
                }
            }
        }
    }
    let reachable = |start: Ino| -> bool {
        let mut cur = start;
        for _ in 0..64 {
            if cur == ROOT_INO {
                return true;
            }
            match names.iter().find(|(_, &i)| i == cur) {
                Some(((dir, _), _)) => cur = *dir,
                None => return false,
            }
        }
        false
    };
    for rec in &st.fsyncs {
        // A directory's fsync keeps each entry it had, unless that entry is gone since.
        for (n, i) in &rec.entries {
            let live_now = st.live_entry(rec.ino, n) == Some(*i);
            if live_now && names.get(&(rec.ino, n.clone())) != Some(i) {
                return Err(format!(
                    "fsync of directory {} returned at t={}ns, but after a crash now its entry '{n}' is gone",
                    rec.path, rec.at
                ));
            }
        }
        let now_names = st.names_of(rec.ino);
        if now_names.is_empty() {
            continue; // unlinked since: nothing to keep
        }
        let named = rec
            .names
            .iter()
            .chain(now_names.iter())
            .any(|n| names.get(n) == Some(&rec.ino) && reachable(n.0));
        if !named {
            return Err(format!(
                "fsync of {} returned at t={}ns, but after a crash now the file has no name",
                rec.path, rec.at
            ));
        }
        let inode = &st.inodes[&rec.ino];
        for id in &rec.extents {
            let Some(e) = inode.extents.iter().find(|e| e.id == *id) else {
                continue;
            };
            if !extents.contains(id) {
                return Err(format!(
                    "fsync of {} returned at t={}ns, but after a crash now its extent {id} ({} bytes) is not in the tree",
                    rec.path, rec.at, e.len
                ));
            }
            if !durable(e.data_token) {
                return Err(format!(
                    "fsync of {} returned at t={}ns, but after a crash now the data of its extent {id} is lost",
                    rec.path, rec.at
                ));
            }
        }
    }
    Ok(())
}

impl Btrfs {
    /// Checks what a power loss now would leave (S2).
    pub fn check_crash(&self, when: &str) {
        if !self.inner.st.borrow().keep_history {
            return;
        }
        // Recovery is a pure function of the state and the durable image: reuse the last
        // verdict while neither changed.
        let key = (
            self.inner.st_version.get(),
            self.inner.dev.durable_version(),
        );
        let memo = self.inner.crash_memo.borrow().clone();
        let res = match memo {
            Some((k, res)) if k == key => res,
            _ => {
                let res = self.inner.dev.with_durable_image(|image| match image {
                    Some(image) => check_recovery(&self.inner.st.borrow(), image),
                    None => {
                        check_recovery(&self.inner.st.borrow(), &std::collections::BTreeMap::new())
                    }
                });
                *self.inner.crash_memo.borrow_mut() = Some((key, res.clone()));
                res
            }
        };
        if let Err(msg) = res {
            self.violation("S2", format!("crash when {when}: {msg}"));
        }
    }
}
