//! The oracle: judges each logging or fallback decision from the simulated state of the data
//! (never by re-evaluating a fix's predicate), and recovers the filesystem from the device's
//! durable image after a simulated power loss.
//!
//! A logged entry is judged when its log's superblock is issued (or when the log is freed by
//! a commit): it was unnecessary when every version it carries — the inode item, its names,
//! the extent — belongs to a transaction whose commit superblock is already on disk, so
//! recovery finds it without the log. A new name (link, rename) is needed in the log only if
//! the inode or the directory it left already has entries in the running transaction's log.
//! A fallback to a full commit is necessary only if logging instead would lose an inode's
//! names after a crash (`log_would_lose_names`, replaying the log with what would have been
//! logged). Crash recovery itself is in `recovery.rs`.

use super::ctree::Btrfs;
use super::recovery;
use super::state::*;

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
            .filter_map(|&(d, n)| st.dentry_id(d, n).and_then(|v| v.last()))
            .map(|d| d.created)
            .collect()
    })
}

/// Whether inode `ino` already has items in transaction `t`'s log (so a new name must be
/// logged to keep that log consistent).
pub fn in_current_log(st: &FsState, ino: Ino, t: TransId) -> bool {
    // Every btrfs_log_inode puts the inode's item in the log and sets logged_trans.
    st.inodes.get(&ino).is_some_and(|i| i.logged_trans == t)
}

/// Whether logging `facts` (what btrfs_log_inode_parent would have logged for `ino`
/// instead of falling back to a full commit), on top of what transaction `t`'s log already
/// holds, would leave a namespace recovery cannot stand behind: an inode reachable in the
/// committed tree and still named now becomes unreachable (its old entry replaced by a log
/// that does not know where it went), or `ino` itself is unreachable. That is the event a
/// log cannot express; only then is the kernel's full commit necessary. Without the history
/// (long workload runs) the log's earlier content is not kept and only `facts` are replayed.
pub fn log_would_lose_names(st: &FsState, t: TransId, ino: Ino, facts: &[LogFact]) -> bool {
    let base = t.saturating_sub(1);
    let base_names = recovery::names_at(st, base);
    let logged = st
        .log_facts
        .range((t, 0)..=(t, u64::MAX))
        .flat_map(|(_, v)| v.iter());
    let (names, _) = recovery::replay_namespace(&base_names, logged.chain(facts));
    let before = recovery::reachable_set(&base_names);
    let after = recovery::reachable_set(&names);
    !after.contains(&ino)
        || before
            .iter()
            .any(|i| !after.contains(i) && st.live.contains_key(i))
}

/// Whether transaction `t` is marked for full commits by a real event (a new block group,
/// or a necessary fallback earlier in `t`).
pub fn full_commit_flag_is_real(st: &FsState, t: TransId) -> bool {
    st.trans.get(&t).is_some_and(|tr| {
        tr.forced_by_event || (st.last_trans_log_full_commit == t && !tr.marked_unnecessarily)
    })
}

impl Btrfs {
    /// Judges the logged entries of transaction `t` (up to log sub-transaction `upto`) by
    /// the state now: an entry was unnecessary when every version it carries belongs to a
    /// transaction whose commit superblock is already on disk. Returns whether any was
    /// necessary.
    pub(super) fn judge(&self, t: TransId, upto: Option<u64>) -> bool {
        let mut st = self.st_mut();
        let (now, later): (Vec<Judgment>, Vec<Judgment>) = std::mem::take(&mut st.judgments)
            .into_iter()
            .partition(|j| j.transid == t && upto.is_none_or(|k| j.log_transid <= k));
        st.judgments = later;
        let mut any = upto.is_some_and(|k| st.new_content_upto(t, k));
        let mut m = self.inner.m.borrow_mut();
        for j in now {
            let necessary = j.versions.iter().any(|&v| !captured(&st, v));
            any |= necessary;
            if necessary {
                continue;
            }
            match j.what {
                Judged::Inode => m.unnecessary_inode_logs += 1,
                Judged::Ancestor => m.unnecessary_ancestor_logs += 1,
                Judged::Extent { csum } => {
                    m.unnecessary_extent_logs += 1;
                    m.unnecessary_csum_bytes += csum;
                }
            }
        }
        any
    }

    /// Judges every entry still pending (at the end of a run).
    pub fn finish(&self) {
        self.judge_preempt(None);
        let ts: std::collections::BTreeSet<TransId> = self
            .inner
            .st
            .borrow()
            .judgments
            .iter()
            .map(|j| j.transid)
            .collect();
        for t in ts {
            self.judge(t, None);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The fsynced inode's item.
    Inode,
    /// A new ancestor directory.
    Ancestor,
    /// A file extent item with its checksum bytes.
    Extent {
        /// Checksum bytes logged with it.
        csum: u64,
    },
}

/// A logged entry waiting for the oracle's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgment {
    /// Transaction of the log.
    pub transid: TransId,
    /// Log sub-transaction it went into.
    pub log_transid: u64,
    /// What was logged.
    pub what: Judged,
    /// Transactions of the versions it carries.
    pub versions: Vec<TransId>,
}
