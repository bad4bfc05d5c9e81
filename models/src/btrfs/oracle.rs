//! The oracle: judges each logging or fallback decision from the simulated state of the data
//! (never by re-evaluating a fix's predicate), and recovers the filesystem from the device's
//! durable image after a simulated power loss.
//!
//! A logged entry is judged when its log's superblock is issued (or when the log is freed by
//! a commit): it was unnecessary when every version it carries — the inode item, its names,
//! the extent — belongs to a transaction whose commit superblock is already on disk, so
//! recovery finds it without the log. A new name (link, rename) is needed in the log only if
//! the inode or the directory it left already has entries in the running transaction's log.
//! A fallback to a full commit is necessary only if the running transaction holds an event a
//! log cannot express.

use super::state::*;
use crate::device::DurableWrite;
use std::collections::{BTreeMap, BTreeSet};

/// Whether the version changed in transaction `x` is captured on disk: the superblock write
/// of `x`'s commit has completed (its tree blocks were written before it), or `x` predates
/// the run.
pub fn captured(st: &FsState, x: TransId) -> bool {
    st.trans.get(&x).is_none_or(|tr| tr.super_done)
}

/// Transactions that created the live names of `ino`.
pub fn name_versions(st: &FsState, ino: Ino) -> Vec<TransId> {
    st.live.get(&ino).map_or_else(Vec::new, |names| {
        names
            .iter()
            .filter_map(|(d, n)| st.dentry(*d, n).and_then(|v| v.last()))
            .map(|d| d.created)
            .collect()
    })
}

/// Whether inode `ino` already has items in transaction `t`'s log (so a new name must be
/// logged to keep that log consistent).
pub fn in_current_log(st: &FsState, ino: Ino, t: TransId) -> bool {
    st.log_facts
        .range((t, 0)..=(t, u64::MAX))
        .any(|(_, facts)| {
            facts
                .iter()
                .any(|f| matches!(f, LogFact::Inode { ino: i, .. } if *i == ino))
        })
}

/// Whether a directory on the path lost a name in the running transaction `t` — the event
/// that a log cannot express and that makes a full commit necessary.
pub fn removal_in_current_trans(st: &FsState, dirs: &[Ino], t: TransId) -> bool {
    st.trans
        .get(&t)
        .is_some_and(|tr| dirs.iter().any(|d| tr.removals_in.contains(d)))
}

/// Whether transaction `t` is marked for full commits by a real event (a new block group,
/// or a necessary fallback earlier in `t`).
pub fn full_commit_flag_is_real(st: &FsState, t: TransId) -> bool {
    st.trans.get(&t).is_some_and(|tr| {
        tr.forced_by_event || (st.last_trans_log_full_commit == t && !tr.marked_unnecessarily)
    })
}

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
