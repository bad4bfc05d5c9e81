//! fs/btrfs/tree-log.c: logging an inode and its parents into the log tree and syncing
//! the log (btrfs_log_inode_parent, start_log_trans, btrfs_log_inode, btrfs_log_new_name,
//! btrfs_sync_log).

use super::ctree::{Btrfs, LogResult};
use super::ctree_btree::LogCopy;
use super::oracle::{self, Judged, Judgment};
use super::policy::{Fix, Kernel, LogPatch, Mutant};
use super::state::*;
use crate::device::Request;

/// An inode's ancestors, parent first (inline for the usual shallow tree).
pub(super) type Ancestors = smallvec::SmallVec<[Ino; 8]>;

impl Btrfs {
    /// Ancestors of `ino` up to the top directory, nearest first.
    pub(super) fn ancestors(st: &FsState, ino: Ino) -> Ancestors {
        let mut out = Ancestors::new();
        let mut cur = ino;
        while let Some(p) = st.parent_of(cur) {
            out.push(p);
            if p == ROOT_INO || out.len() > 64 {
                break;
            }
            cur = p;
        }
        out
    }

    /// The directories log_all_new_ancestors walks (tree-log.c@v5.10..v5.16): with one link,
    /// the parent chain (log_new_ancestors_fast); with more, the chain of every inode ref's
    /// directory in turn (log_new_ancestors per ref), each directory once.
    pub(super) fn new_ancestor_walk(st: &FsState, ino: Ino) -> Ancestors {
        if st.name_count(ino) < 2 {
            return Self::ancestors(st, ino);
        }
        let mut out = Ancestors::new();
        for (dir, _) in st.names_of(ino) {
            for d in std::iter::once(dir).chain(Self::ancestors(st, dir)) {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        out
    }

    /// The first transaction id that counts as "recent" for `last_unlink_trans` and
    /// `generation`: `trans->transid` with R4 (5.11), `last_trans_committed + 1` before.
    pub(super) fn recent_bound(&self, t: TransId) -> TransId {
        if self.has(Fix::R4) {
            t
        } else {
            self.inner.st.borrow().last_trans_committed + 1
        }
    }

    /// check_parent_dirs_for_sync (tree-log.c@v5.10): a regular file neither created nor
    /// unlinked/renamed recently returns at once; otherwise each directory from the parent
    /// (or the inode itself, for a directory) up to the top is checked by
    /// btrfs_must_commit_transaction, which marks the whole transaction for a full commit
    /// (btrfs_set_log_full_commit) when its `last_unlink_trans` is recent. Returns the
    /// oracle's verdict on the mark (necessary or not) and which rule marked, when it marked.
    pub(super) fn check_parent_dirs_for_sync(
        &self,
        t: TransId,
        ino: Ino,
    ) -> Option<(bool, UnlinkRelation)> {
        let bound = self.recent_bound(t);
        let dirs: Vec<Ino> = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            if !i.is_dir && i.generation < bound && i.last_unlink_trans < bound {
                return None;
            }
            i.is_dir
                .then_some(ino)
                .into_iter()
                .chain(Self::ancestors(&st, ino))
                .collect()
        };
        // Which rule fired: the fsynced directory itself, the inode's parent, or an older
        // ancestor (the log holds the entries of the first two only).
        let relation = {
            let st = self.inner.st.borrow();
            let marked = dirs
                .iter()
                .copied()
                .find(|d| st.inodes[d].last_unlink_trans >= bound)?;
            if marked == ino {
                UnlinkRelation::Inode
            } else if st.parent_of(ino) == Some(marked) {
                UnlinkRelation::Parent
            } else {
                UnlinkRelation::Ancestor
            }
        };
        Some((self.mark_full_commit(t, ino), relation))
    }

    /// btrfs_set_log_full_commit for an fsync of `ino` in `t`: marks the transaction and
    /// returns the oracle's verdict (whether the log would have lost a name).
    fn mark_full_commit(&self, t: TransId, ino: Ino) -> bool {
        let necessary = {
            let st = self.inner.st.borrow();
            let facts = self.would_log(&st, t, ino);
            oracle::log_would_lose_names(&st, t, ino, &facts)
        };
        let mut st = self.st_mut();
        if st.last_trans_log_full_commit != t {
            st.last_trans_log_full_commit = t;
            st.trans.get_mut(&t).unwrap().marked_unnecessarily = !necessary;
        }
        necessary
    }

    /// The namespace facts btrfs_log_inode_parent would log for `ino` in transaction `t`
    /// had it not fallen back (the oracle's counterfactual): the inode with its names (and
    /// entries, for a directory), a directory's new children, all parents when it lost a
    /// name recently, and new ancestors.
    pub(super) fn would_log(&self, st: &FsState, t: TransId, ino: Ino) -> Vec<LogFact> {
        let bound = self.recent_bound(t);
        let inode_fact = |i: Ino| LogFact::Inode {
            ino: i,
            names: st.names_of(i),
            is_dir: st.inodes[&i].is_dir,
            size: None,
            xattrs: None,
            drops_logged: false,
        };
        let mut facts = vec![inode_fact(ino)];
        let me = &st.inodes[&ino];
        if me.is_dir {
            facts.push(LogFact::DirEntries {
                dir: ino,
                entries: st.entries_of(ino),
            });
            // log_new_dir_dentries: the inodes of entries added in this transaction.
            for (_, c) in st.entries_added_in(ino, t) {
                facts.push(inode_fact(c));
            }
        }
        if me.last_unlink_trans >= bound {
            for (d, _) in st.names_of(ino) {
                facts.push(inode_fact(d));
                facts.push(LogFact::DirEntries {
                    dir: d,
                    entries: st.entries_of(d),
                });
            }
        }
        for dir in Self::new_ancestor_walk(st, ino) {
            if dir != ROOT_INO && st.inodes[&dir].generation >= t {
                facts.push(inode_fact(dir));
            }
        }
        facts
    }

    /// btrfs_log_inode_parent.
    pub(super) async fn log_inode_parent(&self, t: TransId, ino: Ino) -> LogResult {
        let last_committed = self.inner.st.borrow().last_trans_committed;
        // The check R5 removes.
        if !self.has(Fix::R5) {
            let flagged = self.inner.st.borrow().last_trans_log_full_commit;
            if flagged > last_committed {
                let necessary = oracle::full_commit_flag_is_real(&self.inner.st.borrow(), t);
                self.count_full_commit(t, FullCommitCause::StaleFullCommitCheck, necessary);
                return LogResult::FullCommit;
            }
        }
        let bound = self.recent_bound(t);
        let ancestors = Self::new_ancestor_walk(&self.inner.st.borrow(), ino);
        let parent_dirs_check = !self.log_patch(LogPatch::NoParentDirsCheck);
        if let Some((necessary, relation)) = parent_dirs_check
            .then(|| self.check_parent_dirs_for_sync(t, ino))
            .flatten()
        {
            self.count_full_commit(t, FullCommitCause::UnlinkTrans(relation), necessary);
            return LogResult::FullCommit;
        }
        if !self.inner.st.borrow().has_names(ino) && ino != ROOT_INO {
            // btrfs_log_inode_parent (tree-log.c@v5.10..v5.16): "Skip ... inodes
            // corresponding to tmpfiles (since logging them is pointless, a link count of 0
            // means they will never be accessible)": i_nlink == 0 → BTRFS_NO_LOG_SYNC, before
            // start_log_trans (an unlinked file an open descriptor still holds).
            self.note(
                "btrfs_log_inode_parent: i_nlink == 0, nothing logged (BTRFS_NO_LOG_SYNC), ino",
                ino,
            );
            return LogResult::NoLogSync;
        }
        let log_transid = match self.start_log_trans(t).await {
            Some(x) => x,
            None => {
                let necessary = oracle::full_commit_flag_is_real(&self.inner.st.borrow(), t);
                self.count_full_commit(t, FullCommitCause::LogFullCommitFlag, necessary);
                return LogResult::FullCommit;
            }
        };
        if !parent_dirs_check {
            if let Some(necessary) = self.dir_forces_commit(t, ino, ino) {
                return self.fall_back_in_log(t, UnlinkRelation::Inode, necessary);
            }
        }
        self.log_inode(t, ino, log_transid, LogKind::Fsync).await;
        // log_new_dir_dentries for a fsynced directory (btrfs_log_inode_parent@v5.10..v5.16,
        // `if (log_dentries)`).
        let is_dir = self.inner.st.borrow().inodes[&ino].is_dir;
        if is_dir && !self.mutant(Mutant::DirFsyncLogsItemOnly) {
            if let Some(fell_back) = self.log_new_dir_dentries(t, ino, ino, log_transid).await {
                return fell_back;
            }
        }
        if let Some(fell_back) = self
            .log_all_parents(t, ino, log_transid, bound, parent_dirs_check)
            .await
        {
            return fell_back;
        }
        let since = (bound, last_committed);
        self.log_new_ancestors(t, ino, log_transid, &ancestors, since, LogKind::Ancestor)
            .await;
        self.end_log_trans();
        LogResult::Logged(log_transid)
    }

    /// btrfs_log_all_parents (tree-log.c@v5.10..v5.16) for an fsync of `ino` that lost or
    /// gained a name recently (R4 site 4): each parent directory logged in full, then its
    /// new entries (log_new_dir_dentries). Some(result): a parent made the fsync fall back.
    async fn log_all_parents(
        &self,
        t: TransId,
        ino: Ino,
        log_transid: u64,
        bound: TransId,
        parent_dirs_check: bool,
    ) -> Option<LogResult> {
        let skip_unchanged = self.log_patch(LogPatch::SkipUnchangedDirs);
        let parents: Vec<Ino> = {
            let st = self.inner.st.borrow();
            if st.inodes[&ino].last_unlink_trans >= bound {
                let mut p: Vec<Ino> = st.names_of(ino).into_iter().map(|(d, _)| d).collect();
                p.dedup();
                p
            } else {
                Vec::new()
            }
        };
        for dir in parents {
            if self.log_patch(LogPatch::SkipLoggedParents)
                && !Self::need_log_inode(&self.inner.st.borrow(), dir, t, skip_unchanged)
            {
                continue;
            }
            if !parent_dirs_check {
                if let Some(necessary) = self.dir_forces_commit(t, ino, dir) {
                    return Some(self.fall_back_in_log(t, UnlinkRelation::Parent, necessary));
                }
            }
            // The oracle: a parent none of whose entries changed since the last commit
            // (its item, which every entry added or removed rewrites, is older) brings
            // nothing to the log that the committed tree lacks.
            if self.inner.st.borrow().inodes[&dir].item_trans < t {
                self.inner.m.borrow_mut().unnecessary_dir_logs += 1;
            }
            self.log_inode(t, dir, log_transid, LogKind::Parent).await;
            // btrfs_log_all_parents@v5.10..v5.16: `if (!ret && ctx &&
            // ctx->log_new_dentries) ret = log_new_dir_dentries(trans, root, dir_inode, ctx)`.
            if let Some(fell_back) = self.log_new_dir_dentries(t, ino, dir, log_transid).await {
                return Some(fell_back);
            }
        }
        None
    }

    /// log_new_dir_dentries (tree-log.c@v5.10..v5.16) on directory `start`, logged in full
    /// for the fsync of `fsynced`: the inode of each entry added in this transaction is
    /// logged, a file LOG_INODE_EXISTS, a directory LOG_INODE_ALL whose own new entries are
    /// walked next. Some(result): a directory's last_unlink_trans made the fsync fall back.
    async fn log_new_dir_dentries(
        &self,
        t: TransId,
        fsynced: Ino,
        start: Ino,
        log_transid: u64,
    ) -> Option<LogResult> {
        let mut dirs = std::collections::VecDeque::from([start]);
        while let Some(dir) = dirs.pop_front() {
            for (c, is_dir) in self.new_dentry_inodes(t, dir) {
                if !is_dir {
                    // `if (type == BTRFS_FT_DIR || type == BTRFS_FT_SYMLINK) log_mode =
                    // LOG_INODE_ALL;` (log_new_dir_dentries@v5.10..v5.16): a symlink's
                    // inline extent is logged with it (special.rs).
                    let all = self.is_symlink(c) && !self.mutant(Mutant::SymlinkLoggedExists);
                    let kind = if all {
                        LogKind::DirDentryAll
                    } else {
                        LogKind::DirDentry
                    };
                    self.log_inode(t, c, log_transid, kind).await;
                    continue;
                }
                if let Some(necessary) = self.new_dir_forces_commit(t, fsynced, c, true) {
                    return Some(self.fall_back_in_log(t, UnlinkRelation::Parent, necessary));
                }
                self.log_inode(t, c, log_transid, LogKind::DirDentryAll)
                    .await;
                if let Some(necessary) = self.new_dir_forces_commit(t, fsynced, c, false) {
                    return Some(self.fall_back_in_log(t, UnlinkRelation::Parent, necessary));
                }
                dirs.push_back(c);
            }
        }
        None
    }

    /// The inodes log_new_dir_dentries@v5.10..v5.16 logs for `dir`'s entries, with whether
    /// each is a directory: the entries added in this transaction (it skips
    /// `btrfs_dir_transid(leaf, di) < trans->transid && type != BTRFS_FT_DIR`; older
    /// subdirectory entries, which it also visits when their leaf changed in the
    /// transaction, are not modelled), minus those need_log_inode skips (0e44cb3f9428,
    /// 5.12), before it those btrfs_inode_in_log skips (logged, and that log synced: within
    /// one log transaction an inode is logged again for each new entry).
    fn new_dentry_inodes(&self, t: TransId, dir: Ino) -> Vec<(Ino, bool)> {
        let skip_logged = self.log_patch(LogPatch::SkipLoggedNewEntries);
        let skip_unchanged = self.log_patch(LogPatch::SkipUnchangedDirs);
        let st = self.inner.st.borrow();
        st.entries_added_in(dir, t)
            .into_iter()
            .map(|(_, c)| c)
            .filter(|&c| {
                if skip_logged {
                    Self::need_log_inode(&st, c, t, skip_unchanged)
                } else {
                    !Self::inode_in_log(&st, c)
                }
            })
            .map(|c| (c, st.inodes[&c].is_dir))
            .collect()
    }

    /// Whether logging the new subdirectory `dir` in full makes the fsync of `fsynced` fall
    /// back: from 5.12 the check at the top of btrfs_log_inode (64d6b281ba4d, `before`),
    /// before it log_new_dir_dentries' `btrfs_must_commit_transaction(trans, di_inode)`
    /// after the copy (tree-log.c@v5.10). Some: the oracle's verdict on the mark.
    fn new_dir_forces_commit(
        &self,
        t: TransId,
        fsynced: Ino,
        dir: Ino,
        before: bool,
    ) -> Option<bool> {
        let top_check = self.log_patch(LogPatch::NoParentDirsCheck);
        if before != top_check {
            return None;
        }
        if top_check {
            return self.dir_forces_commit(t, fsynced, dir);
        }
        let recent = self.inner.st.borrow().inodes[&dir].last_unlink_trans >= self.recent_bound(t);
        recent.then(|| self.mark_full_commit(t, fsynced))
    }

    /// log_all_new_ancestors (log_new_ancestors(_fast), tree-log.c@v5.10..v5.16), after the
    /// regular-file early-out that precedes it in btrfs_log_inode_parent (R4 site 3): each
    /// ancestor directory new in this transaction is logged LOG_INODE_EXISTS, so a name
    /// logged under it has a directory to land in at replay. `bound` and `last_committed`
    /// are the caller's, read before it started the log transaction.
    async fn log_new_ancestors(
        &self,
        t: TransId,
        ino: Ino,
        log_transid: u64,
        ancestors: &[Ino],
        (bound, last_committed): (TransId, TransId),
        kind: LogKind,
    ) {
        let skip_unchanged = self.log_patch(LogPatch::SkipUnchangedDirs);
        let log_ancestors = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            !(!i.is_dir && i.generation < bound && i.last_unlink_trans < bound)
        };
        if !log_ancestors {
            return;
        }
        for &dir in ancestors {
            if dir == ROOT_INO {
                continue;
            }
            let gen = self.inner.st.borrow().inodes[&dir].generation;
            let new = if self.has(Fix::R3) {
                gen >= t
            } else {
                gen > last_committed
            };
            let new = new
                && (!self.log_patch(LogPatch::SkipLoggedAncestors)
                    || Self::need_log_inode(&self.inner.st.borrow(), dir, t, skip_unchanged));
            if new {
                self.log_inode(t, dir, log_transid, kind).await;
            }
        }
    }

    /// btrfs_log_inode returning 1 inside a joined log transaction: the log transaction
    /// ends and the fsync falls back to a full commit.
    fn fall_back_in_log(&self, t: TransId, relation: UnlinkRelation, necessary: bool) -> LogResult {
        self.end_log_trans();
        self.count_full_commit(t, FullCommitCause::UnlinkTrans(relation), necessary);
        LogResult::FullCommit
    }

    /// start_log_trans: returns the log sub-transaction joined, or None for -EAGAIN.
    pub(super) async fn start_log_trans(&self, t: TransId) -> Option<u64> {
        let h = &self.inner.h;
        let wait_class = h.class_static("tree_log_mutex");
        let me = h.current();
        let waited_before = h.account_of(me, wait_class);
        if self.has(Fix::R6) {
            // The log root tree is created under the tree root's log_mutex.
            let need = self.inner.st.borrow().log_root_tree_of != Some(t);
            if need {
                let _g = self.inner.tree_root_log_mutex.lock().await;
                let mut st = self.st_mut();
                if st.log_root_tree_of != Some(t) {
                    st.log_root_tree_of = Some(t);
                }
            }
        }
        let g = self.inner.log_mutex.lock().await;
        let has_log = self.inner.st.borrow().log_tree_of == Some(t);
        // btrfs_need_log_full_commit is checked only when the log tree already exists;
        // otherwise the log is created and btrfs_sync_log bails out later.
        if has_log && self.inner.st.borrow().last_trans_log_full_commit == t {
            drop(g);
            return None;
        }
        if !has_log {
            if !self.has(Fix::R6) {
                // Pre-6/6: tree_log_mutex around creating the log root tree, under log_mutex.
                let _tl = self.inner.tree_log_mutex.lock().await;
                let mut st = self.st_mut();
                if st.log_root_tree_of != Some(t) {
                    st.log_root_tree_of = Some(t);
                }
            }
            self.st_mut().log_tree_of = Some(t);
        }
        h.cpu(self.inner.costs.log_start).await;
        let log_transid = {
            let mut st = self.st_mut();
            // log_start_pid / MULTI_LOG_TASKS (start_log_trans@v5.10): a second task in
            // the same log transaction makes btrfs_sync_log batch on non-ssd mounts.
            match st.log_start_pid {
                None => {
                    st.multi_log_tasks = false;
                    st.log_start_pid = Some(me);
                }
                Some(pid) if pid != me => st.multi_log_tasks = true,
                Some(_) => {}
            }
            if self.inner.policy.kernel < Kernel::V5_11 {
                // 5.10's start_log_trans also bumps log_batch; 5.11's does not.
                st.log_batch += 1;
            }
            st.log_writers += 1;
            st.log_transid
        };
        drop(g);
        let waited = h.account_of(me, wait_class) - waited_before;
        if waited > 0 {
            let mut m = self.inner.m.borrow_mut();
            m.tree_log_mutex_waits += 1;
            m.tree_log_mutex_wait_ns += waited;
        }
        Some(log_transid)
    }

    /// btrfs_end_log_trans.
    pub(super) fn end_log_trans(&self) {
        self.st_mut().log_writers -= 1;
        self.inner.log_writers_wait.notify_all();
    }

    /// btrfs_log_inode: the inode item and its changed extents (R2) into the log, under the
    /// inode's log_mutex from before its items are read until they are in the log
    /// (tree-log.c:btrfs_log_inode@v5.10: mutex_lock(&inode->log_mutex) before copying,
    /// mutex_unlock at out_unlock), so two tasks logging one inode (two children's fsyncs
    /// logging their parent, a link's new name during an fsync) copy it one after the other.
    /// Taken after the root's log_mutex was released by start_log_trans, and no other lock
    /// is taken under it here.
    pub(super) async fn log_inode(&self, t: TransId, ino: Ino, log_transid: u64, kind: LogKind) {
        self.log_inode_items(t, ino, log_transid, kind).await;
        // copy_inode_items_to_log (tree-log.c@v5.10..v5.15): a ref of an inode created in
        // this transaction is checked with btrfs_check_ref_name_override unless the inode
        // is itself logged as a conflicting one (recursive_logging); btrfs_log_new_name
        // passes no log context (5.12+) and is left out here.
        let checked = matches!(
            kind,
            LogKind::Fsync
                | LogKind::Parent
                | LogKind::DirDentryAll
                | LogKind::Ancestor
                | LogKind::DirDentry
        );
        if checked && !self.mutant(Mutant::NoConflictingInodes) {
            let found = {
                let st = self.inner.st.borrow();
                if st.inodes[&ino].generation == t {
                    Self::ref_name_overrides(&st, ino)
                } else {
                    Vec::new()
                }
            };
            if !found.is_empty() {
                self.log_conflicting_inodes(t, log_transid, found).await;
            }
        }
    }

    /// btrfs_check_ref_name_override (tree-log.c@v5.10): for each name of `ino`, the
    /// commit root's entry of that name (search_commit_root = 1); one that names another
    /// inode is a conflict, returned as (other inode, directory).
    pub(super) fn ref_name_overrides(st: &FsState, ino: Ino) -> Vec<(Ino, Ino)> {
        let lc = st.last_trans_committed;
        let mut out = Vec::new();
        for (dir, name) in st.names_of(ino) {
            let committed = st.dentry(dir, &name).and_then(|v| {
                v.iter()
                    .rev()
                    .find(|d| d.created <= lc && d.removed.is_none_or(|r| r > lc))
            });
            if let Some(d) = committed.filter(|d| d.ino != ino) {
                out.push((d.ino, dir));
            }
        }
        out
    }

    /// log_conflicting_inodes (tree-log.c@v5.10..v5.15): each inode that held a logged
    /// name in the commit root is logged LOG_OTHER_INODE (item and refs, as
    /// LOG_INODE_EXISTS), or, when it no longer exists (btrfs_iget -ENOENT; here: no name
    /// left), its directory LOG_OTHER_INODE_ALL; an inode already logged in this
    /// transaction is skipped (the loop's termination: "If the inode was already logged
    /// skip it - otherwise we can hit an infinite loop"); the refs of each inode logged are
    /// checked in turn and their conflicts added to the list.
    async fn log_conflicting_inodes(&self, t: TransId, log_transid: u64, found: Vec<(Ino, Ino)>) {
        let mut list: std::collections::VecDeque<(Ino, Ino)> = found.into();
        while let Some((other, parent)) = list.pop_front() {
            let (exists, logged) = {
                let st = self.inner.st.borrow();
                let i = st.inodes.get(&other);
                (
                    i.is_some() && st.has_names(other),
                    i.is_some_and(|i| i.logged_trans == t),
                )
            };
            if !exists {
                if !self.inner.st.borrow().inodes.contains_key(&parent) {
                    continue;
                }
                // 5.12+: btrfs_log_inode's check of a directory logged LOG_INODE_ALL
                // (64d6b281ba4d) applies to LOG_OTHER_INODE_ALL too: it returns 1, the
                // error ends the loop and the transaction is marked, so the log sync
                // falls back to a full commit (the oracle judges the mark for `parent`).
                if self.log_patch(LogPatch::NoParentDirsCheck)
                    && self.dir_forces_commit(t, parent, parent).is_some()
                {
                    return;
                }
                self.log_inode_items(t, parent, log_transid, LogKind::OtherAll)
                    .await;
                continue;
            }
            if logged {
                continue;
            }
            self.log_inode_items(t, other, log_transid, LogKind::Other)
                .await;
            list.extend(Self::ref_name_overrides(&self.inner.st.borrow(), other));
        }
    }

    /// btrfs_log_inode's copy of one inode (see `log_inode`), without the conflicting
    /// inodes: under the inode's log_mutex, the mode and full-sync decision, the item copy
    /// (copy_inode_items_to_log, btrfs_log_all_xattrs), the changed extents, the holes and
    /// the inode's logged_trans / last_log_commit.
    async fn log_inode_items(&self, t: TransId, ino: Ino, log_transid: u64, kind: LogKind) {
        let log_mutex = self.inode_log_mutex(ino);
        let _held = log_mutex.lock().await;
        let full_sync = self.inner.st.borrow().inodes[&ino].needs_full_sync;
        self.commit_inode_delayed(t, ino, full_sync).await;
        let c = &self.inner.costs;
        let mut plan = self.log_inode_plan(t, ino, kind);
        let (size, xattrs, copy) = self.item_copy_mode(t, ino, kind, &plan);
        let mut acc = LogAcc {
            bytes: c.log_bytes_inode,
            ..LogAcc::default()
        };
        acc.bytes += copy.xattrs * c.item_bytes_per_dentry;
        self.note_log_mode(kind, &plan, &copy);
        if plan.keep {
            acc.facts.push(LogFact::Inode {
                ino,
                names: std::mem::take(&mut plan.names),
                is_dir: plan.is_dir,
                size,
                xattrs,
                drops_logged: plan.full_sync && kind.logs_all(),
            });
            let st = self.inner.st.borrow();
            acc.facts
                .extend(Self::special_fact(&st, t, ino, kind.logs_all()));
        }
        self.copy_inode_items(ino, kind, plan.is_dir, &copy, &mut acc);
        self.log_changed_extents(t, ino, log_transid, &mut plan, &mut acc);
        if kind == LogKind::Fsync && !plan.is_dir {
            let n = acc.judgments.len() as u64 + acc.forced_logs;
            self.note("  file extent items copied (with their csums)", n);
        }
        self.count_inode_log(kind, &plan, &acc);
        Self::judge_inode_log(t, log_transid, kind, &mut plan, &mut acc);
        // The items the full sync copied (its snapshot of the inode's extents), against
        // which btrfs_log_holes finds the ones that raced in after the copy.
        let items_at = (kind == LogKind::Fsync && plan.full_sync && !plan.is_dir)
            .then(|| plan.extents.iter().map(|e| e.id).collect::<Vec<_>>());
        let work = self.finish_log_copy(std::mem::take(&mut acc.tree));
        self.run_tree_work(work).await;
        if acc.cpu > 0 {
            self.inner.h.cpu(acc.cpu).await;
        }
        if let Some(mut items_at) = items_at {
            let holes = self.log_holes(ino, &mut items_at, &mut acc.facts).await;
            acc.add_unplaced(holes);
        }
        let mut st = self.st_mut();
        Self::add_to_log(&mut st, t, log_transid, plan.new_name_needed, acc);
        let marked = self.mark_inode_logged(&mut st, t, ino, kind, copy.all, plan.is_dir);
        drop(st);
        if let Some((last_sub, last_log)) = marked {
            self.note("  inode.logged_trans", t);
            self.note("  inode.last_sub_trans", last_sub);
            self.note("  inode.last_log_commit", last_log);
        }
    }

    /// btrfs_log_inode's decisions before the copy (tree-log.c:btrfs_log_inode@v5.10): the
    /// full sync (BTRFS_INODE_NEEDS_FULL_SYNC), the extents to copy and the oracle's view of
    /// the entry. The facts (names, xattr names, entries) are built only with the history
    /// crash recovery reads; the log's size needs their counts only.
    fn log_inode_plan(&self, t: TransId, ino: Ino, kind: LogKind) -> InodeLogPlan {
        let st = self.inner.st.borrow();
        let (last_committed, keep) = (st.last_trans_committed, st.keep_history);
        let i = &st.inodes[&ino];
        let (extents, past_eof) = self.extents_to_copy(i, kind);
        // The versions this log entry carries: the item (or, for an ancestor, its
        // creation) and its names.
        let mut versions = vec![match kind {
            LogKind::Ancestor | LogKind::NameAncestor => i.generation,
            _ => i.item_trans,
        }];
        versions.extend(oracle::name_versions(&st, ino));
        let new_name_needed = match kind {
            LogKind::NewName(old_dir) => {
                oracle::in_current_log(&st, ino, t)
                    || old_dir.is_some_and(|d| oracle::in_current_log(&st, d, t))
            }
            _ => false,
        };
        // The oracle's re-log check: already in this transaction's log in full, and
        // not changed since.
        // An inode of a directory's new entry (LOG_INODE_EXISTS) is judged against
        // what the log holds of it in any mode.
        let relogged = match kind {
            LogKind::NewName(_) => false,
            LogKind::DirDentry | LogKind::Other => i.logged_any == Some((t, i.change_seq)),
            _ => i.logged_full == Some((t, i.change_seq)),
        };
        InodeLogPlan {
            last_committed,
            keep,
            relogged,
            full_sync: i.needs_full_sync,
            extents,
            past_eof,
            is_dir: i.is_dir,
            names: if keep { st.names_of(ino) } else { Vec::new() },
            versions,
            new_name_needed,
        }
    }

    /// The file extent items btrfs_log_inode copies (tree-log.c@v5.10): every item in a full
    /// sync (copy_inode_items_to_log), the modified ones in a fast one
    /// (btrfs_log_changed_extents), and those past EOF (btrfs_log_prealloc_extents, whose
    /// ids are returned too).
    fn extents_to_copy(&self, i: &Inode, kind: LogKind) -> (Vec<Extent>, Vec<u64>) {
        // LOG_INODE_EXISTS (new names, ancestors, parents) copies the inode item and
        // its refs only; file extents go in with LOG_INODE_ALL, i.e. an fsync.
        let mut ext: Vec<Extent> = if kind != LogKind::Fsync {
            Vec::new()
        } else if i.needs_full_sync {
            // With NO_HOLES a hole has no item to copy: btrfs_log_holes logs it.
            i.extents
                .iter()
                .filter(|e| !(e.hole && self.inner.no_holes.get()))
                .cloned()
                .collect()
        } else {
            i.extents
                .iter()
                .filter(|e| i.modified_extents.contains(&e.id))
                .cloned()
                .collect()
        };
        let past_eof = if kind == LogKind::Fsync
            && (!i.needs_full_sync || self.log_patch(LogPatch::PreallocFullFsync))
        {
            self.prealloc_past_eof(i)
        } else {
            Vec::new()
        };
        ext.extend(
            i.extents
                .iter()
                .filter(|e| past_eof.contains(&e.id) && !ext.iter().any(|x| x.id == e.id))
                .cloned()
                .collect::<Vec<_>>(),
        );
        (ext, past_eof)
    }

    /// btrfs_log_inode's choice of copy (tree-log.c:btrfs_log_inode@v5.10): the fast path
    /// (log_inode_item) or copy_inode_items_to_log, whether btrfs_log_all_xattrs and
    /// btrfs_log_holes run; returns the logged i_size, the xattr names and the copy.
    fn item_copy_mode(
        &self,
        t: TransId,
        ino: Ino,
        kind: LogKind,
        plan: &InodeLogPlan,
    ) -> (Option<u64>, Option<Vec<String>>, LogCopy) {
        let (full_sync, keep) = (plan.full_sync, plan.keep);
        let st = self.inner.st.borrow();
        let i = &st.inodes[&ino];
        // LOG_INODE_ALL logs every xattr (btrfs_log_all_xattrs@v5.10: "we always log
        // all xattrs"); LOG_INODE_EXISTS copies the item and refs only.
        let fast = kind == LogKind::Fsync && !i.is_dir && !full_sync && !i.copy_everything;
        let all = kind.logs_all()
            && !self.mutant(Mutant::FsyncSkipsXattrs)
            && !(fast && self.skips_unchanged_xattrs(i, t));
        if all && i.xattrs_logged == Some((t, i.xattr_seq)) {
            // The oracle: this transaction's log holds every xattr as it is now.
            self.inner.m.borrow_mut().relogged_xattrs += i.xattrs.len() as u64;
        }
        if kind == LogKind::Fsync && full_sync && i.full_sync_needless {
            self.inner.m.borrow_mut().unneeded_full_syncs += 1;
        }
        // LOG_OTHER_INODE logs the item with generation 0: replay keeps the size it
        // finds (overwrite_item@v5.10, "save_old_i_size").
        let size = (!plan.is_dir && kind != LogKind::Other).then_some(i.disk_size);
        (
            size,
            all.then(|| {
                if keep {
                    i.xattrs.keys().cloned().collect::<Vec<_>>()
                } else {
                    Vec::new()
                }
            }),
            LogCopy {
                ino,
                fast,
                new_inode: i.generation == t,
                all,
                xattrs: if all { i.xattrs.len() as u64 } else { 0 },
                holes: all && full_sync && !i.is_dir,
                dir: false,
                skip_log_drop: !fast && self.skips_log_drop(&st, i, t, kind, full_sync),
            },
        )
    }

    /// The trace marks of btrfs_log_inode's mode and of btrfs_log_all_xattrs
    /// (tree-log.c:btrfs_log_inode@v5.10).
    fn note_log_mode(&self, kind: LogKind, plan: &InodeLogPlan, copy: &LogCopy) {
        self.note(log_mode_label(kind, plan.full_sync, plan.is_dir), copy.ino);
        if copy.all {
            self.note("  btrfs_log_all_xattrs: xattr items copied", copy.xattrs);
        } else if kind == LogKind::Fsync && self.mutant(Mutant::FsyncSkipsXattrs) {
            self.note(
                "  xattrs not copied (mutant fsync-skips-xattrs), ino",
                copy.ino,
            );
        } else if kind == LogKind::Fsync {
            self.note(
                "  xattrs not copied (in this log already, unchanged), ino",
                copy.ino,
            );
        }
    }

    /// copy_inode_items_to_log (tree-log.c@v5.10..v5.15): the CPU of the inode item, refs
    /// and xattrs copy, fill_inode_item's i_lock, and a directory's dir and index items.
    fn copy_inode_items(
        &self,
        ino: Ino,
        kind: LogKind,
        is_dir: bool,
        copy: &LogCopy,
        acc: &mut LogAcc,
    ) {
        let c = &self.inner.costs;
        let item_only = self.mutant(Mutant::DirFsyncLogsItemOnly) && kind == LogKind::Fsync;
        let dir_items = is_dir && kind.logs_all() && !item_only;
        self.log_inode_copy(
            &LogCopy {
                dir: dir_items,
                ..*copy
            },
            &mut acc.tree,
        );
        // fill_inode_item@v5.11 (called by log_inode_item and by copy_items for the inode
        // item, i.e. once per inode logged) sets nbytes from inode_get_bytes(), which takes
        // inode->i_lock (fs/stat.c@v5.11). e593e54ed1f6 (5.12) no longer sets it in the
        // log copy (replay does not use it). An uncontended spinlock: charged as CPU.
        if !self.log_patch(LogPatch::NoLogNbytes) {
            let ns = c.spinlock_ps.div_ceil(1000);
            let mut m = self.inner.m.borrow_mut();
            m.log_nbytes_i_lock_takes += 1;
            m.log_nbytes_i_lock_ns += ns;
            acc.cpu += ns;
        }
        if dir_items {
            // LOG_INODE_ALL of a directory copies its dir items and index items.
            let st = self.inner.st.borrow();
            let n = if st.keep_history {
                let entries = st.entries_of(ino);
                let n = entries.len();
                acc.facts.push(LogFact::DirEntries { dir: ino, entries });
                n
            } else {
                st.child_count(ino)
            };
            acc.add_unplaced(n as u64 * c.item_bytes_per_dentry);
        }
    }

    /// btrfs_log_changed_extents (tree-log.c@v5.10), or a full sync's copy_items of the file
    /// extent items: each extent copied with its csums, judged unless it is only past EOF.
    fn log_changed_extents(
        &self,
        t: TransId,
        ino: Ino,
        log_transid: u64,
        plan: &mut InodeLogPlan,
        acc: &mut LogAcc,
    ) {
        let c = &self.inner.costs;
        for e in &plan.extents {
            let old = if plan.full_sync {
                // copy_items: a full sync copies only items in leaves changed in the running
                // transaction (an extent trimmed in it has its item rewritten in it).
                e.item_trans < t
            } else if self.has(Fix::R2) {
                // btrfs_log_changed_extents, the generation test R2 changes.
                e.generation < t
            } else {
                e.generation <= plan.last_committed
            };
            // An item past EOF copied only by btrfs_log_prealloc_extents is needed whatever
            // its generation (replay truncates to the logged i_size first): not judged.
            let forced = old && plan.past_eof.contains(&e.id);
            if old && !forced {
                continue;
            }
            // A hole or a preallocated extent has no checksums (csum items cover written
            // data only).
            let csum = if e.hole || e.prealloc {
                0
            } else {
                e.len.div_ceil(c.sectorsize) * c.csum_per_block
            };
            self.log_extent_copy(ino, e, csum, &mut acc.tree);
            acc.bytes += c.log_bytes_extent + csum;
            if plan.keep {
                acc.facts.push(LogFact::Extent { ino, extent: e.id });
            }
            if forced {
                acc.forced_logs += 1;
                continue;
            }
            // The item as it is now (a trimmed piece's item is of the transaction that
            // trimmed it).
            plan.versions.push(e.item_trans);
            acc.judgments.push(Judgment {
                transid: t,
                log_transid,
                what: Judged::Extent { csum },
                versions: vec![e.item_trans],
            });
        }
    }

    /// The metrics of one btrfs_log_inode call (tree-log.c:btrfs_log_inode@v5.10): inodes
    /// and extents logged, csum bytes, and the oracle's re-logged and unneeded logs.
    fn count_inode_log(&self, kind: LogKind, plan: &InodeLogPlan, acc: &LogAcc) {
        let mut m = self.inner.m.borrow_mut();
        m.inode_logs += 1;
        m.extent_logs += acc.judgments.len() as u64 + acc.forced_logs;
        m.csum_bytes += acc
            .judgments
            .iter()
            .map(|j| match j.what {
                Judged::Extent { csum } => csum,
                _ => 0,
            })
            .sum::<u64>();
        if plan.relogged {
            match kind {
                LogKind::Fsync | LogKind::DirDentry | LogKind::Other => m.relogged_inodes += 1,
                LogKind::Ancestor | LogKind::NameAncestor => m.relogged_ancestors += 1,
                LogKind::Parent | LogKind::DirDentryAll | LogKind::OtherAll => {
                    m.relogged_dir_items += 1
                }
                LogKind::NewName(_) => {}
            }
        }
        match kind {
            LogKind::Ancestor | LogKind::NameAncestor => m.ancestor_logs += 1,
            // R1's oracle: a new name must go into the log only if the inode or the
            // directory it left is already in this transaction's log.
            LogKind::NewName(_) if !plan.new_name_needed => m.unnecessary_inode_logs += 1,
            _ => {}
        }
    }

    /// The oracle's judgment of the inode entry btrfs_log_inode logged (tree-log.c@v5.10):
    /// an ancestor's or an inode's, with the versions it carries; none for a new name.
    fn judge_inode_log(
        t: TransId,
        log_transid: u64,
        kind: LogKind,
        plan: &mut InodeLogPlan,
        acc: &mut LogAcc,
    ) {
        let what = match kind {
            LogKind::Ancestor | LogKind::NameAncestor => Judged::Ancestor,
            LogKind::Fsync
            | LogKind::Parent
            | LogKind::DirDentryAll
            | LogKind::DirDentry
            | LogKind::Other
            | LogKind::OtherAll => Judged::Inode,
            LogKind::NewName(_) => return,
        };
        acc.judgments.push(Judgment {
            transid: t,
            log_transid,
            what,
            versions: std::mem::take(&mut plan.versions),
        });
    }

    /// The log's share of btrfs_log_inode's copy (tree-log.c@v5.10): its judgments, dirty
    /// bytes and (with the history kept) crash-recovery facts.
    fn add_to_log(
        st: &mut FsState,
        t: TransId,
        log_transid: u64,
        new_name_needed: bool,
        acc: LogAcc,
    ) {
        if new_name_needed {
            st.note_new_content(t, log_transid);
        }
        st.judgments.extend(acc.judgments);
        st.log_dirty_bytes += acc.bytes;
        st.log_unplaced_bytes += acc.unplaced;
        if st.keep_history {
            // Facts are read only by crash recovery, which runs only with the history kept.
            st.log_facts
                .entry((t, log_transid))
                .or_default()
                .extend(acc.facts);
        }
    }

    /// The end of btrfs_log_inode (tree-log.c@v5.10..v5.16): the inode's logged_trans, the
    /// flags LOG_INODE_ALL clears and last_log_commit. Returns (last_sub_trans,
    /// last_log_commit), or None when the inode is left unmarked.
    fn mark_inode_logged(
        &self,
        st: &mut FsState,
        t: TransId,
        ino: Ino,
        kind: LogKind,
        all: bool,
        is_dir: bool,
    ) -> Option<(u64, u64)> {
        let i = st.inodes.get_mut(&ino).unwrap();
        // 75b463d2b47a (5.10) to 130341be7ffa (5.16): a directory logged as an ancestor of
        // a new name (not the renamed or linked inode itself) gets neither logged_trans
        // nor last_log_commit, so an explicit fsync of it still syncs the log
        // (btrfs_log_inode@v5.15: `!(S_ISDIR && ctx->logging_new_name && inode !=
        // ctx->inode)`).
        let marked = kind != LogKind::NameAncestor || self.log_patch(LogPatch::NewNameLoggedTrans);
        if marked {
            i.logged_trans = t;
        }
        i.logged_any = Some((t, i.change_seq));
        if all {
            i.xattrs_logged = Some((t, i.xattr_seq));
        }
        if !matches!(
            kind,
            LogKind::NewName(_) | LogKind::DirDentry | LogKind::Other
        ) {
            i.logged_full = Some((t, i.change_seq));
        }
        // LOG_INODE_ALL clears BTRFS_INODE_COPY_EVERYTHING; a directory has it cleared in any
        // mode (btrfs_log_inode@v5.12, from ab12313a9f56).
        if kind.logs_all() || (is_dir && self.log_patch(LogPatch::SkipLoggedAncestors)) {
            i.copy_everything = false;
        }
        let exists = !kind.logs_all();
        if kind == LogKind::Fsync {
            // LOG_INODE_ALL of a non-directory clears the full-sync flag and the
            // modified-extents list it logged (btrfs_log_inode@v5.10).
            i.needs_full_sync = false;
            i.full_sync_needless = false;
            i.modified_extents.clear();
        }
        // btrfs_log_inode@v5.10: "Don't update last_log_commit if we logged that an inode
        // exists after it was loaded to memory (full_sync bit set)"; from 9acc8103ab59
        // (5.12) LOG_INODE_EXISTS never updates it (btrfs_log_inode@v5.15).
        let keeps = exists && (i.needs_full_sync || self.log_patch(LogPatch::ExistsKeepsLogCommit));
        if marked && !keeps {
            i.last_log_commit = i.last_sub_trans;
        }
        marked.then_some((i.last_sub_trans, i.last_log_commit))
    }

    /// b590b839720c (5.14): a fast fsync skips btrfs_log_all_xattrs when the inode was
    /// logged before in this transaction (logged_trans = transid) and no xattr changed
    /// since (no BTRFS_INODE_COPY_EVERYTHING, which the caller checks): the log then holds
    /// its xattr items, which replay_xattr_deletes reads. The kernel's LOG_INODE_EXISTS logs
    /// xattrs too, so its logged_trans implies them; the model's LOG_INODE_EXISTS copies
    /// none, so it asks that they were copied in this transaction (`xattrs_logged`).
    fn skips_unchanged_xattrs(&self, i: &super::state::Inode, t: TransId) -> bool {
        self.log_patch(LogPatch::SkipUnchangedXattrs)
            && i.logged_trans == t
            && i.xattrs_logged.is_some_and(|(lt, _)| lt == t)
    }

    /// Whether btrfs_log_inode skips the deletion search of the inode's earlier log items
    /// (called only where the model's copy makes one: not the fast path). At v5.15 it always
    /// searches: drop_objectid_items for a directory, LOG_INODE_EXISTS and
    /// BTRFS_INODE_COPY_EVERYTHING, btrfs_truncate_inode_items for a full sync of a file.
    /// fs/btrfs/tree-log.c@v5.16: drop_inode_items (88e221cdacc5, `drop-if-logged`) and
    /// btrfs_log_inode's call of truncate_inode_items (4934a8150214, `truncate-if-logged`)
    /// return at once when inode_logged() is false. Counts a search made although this
    /// transaction's log held no item of the inode (`logged_any`, which an eviction keeps)
    /// as waste: an evicted inode changed in this transaction still searches under 5.16.
    fn skips_log_drop(
        &self,
        st: &FsState,
        i: &Inode,
        t: TransId,
        kind: LogKind,
        full_sync: bool,
    ) -> bool {
        let truncate = kind == LogKind::Fsync && full_sync && !i.is_dir;
        let patch = if truncate {
            LogPatch::TruncateIfLogged
        } else {
            LogPatch::DropIfLogged
        };
        if self.log_patch(patch) && !Self::inode_logged_v5_16(st, i, t) {
            return true;
        }
        if i.logged_any.is_none_or(|(lt, _)| lt != t) {
            let mut m = self.inner.m.borrow_mut();
            if truncate {
                m.unneeded_log_truncates += 1;
            } else {
                m.unneeded_log_drops += 1;
            }
        }
        false
    }

    /// inode_logged (tree-log.c@v5.16, with 1e0860f3b3b2's log tree check): logged in this
    /// transaction, or — the log tree existing — loaded with logged_trans 0 (evicted and
    /// read back) and changed in this transaction, so possibly logged before the eviction.
    fn inode_logged_v5_16(st: &FsState, i: &Inode, t: TransId) -> bool {
        i.logged_trans == t
            || (st.log_tree_of == Some(t) && i.logged_trans == 0 && i.last_trans == t)
    }

    /// btrfs_log_holes (tree-log.c@v5.12), which btrfs_log_inode calls after
    /// copy_inode_items_to_log and btrfs_log_all_xattrs in a full fsync of a regular file
    /// (`!fast_search`). The point `log_inode:items_copied` comes first: the window
    /// 885f46d87f29 closes, where an ordered extent of a page dirtied through a shared
    /// mapping after the fsync's writeback completes and changes the items the holes are
    /// computed from. Counts the items that are not the ones copied (`items_at`, the ids
    /// when the copy ran) as `log_copy_raced_extents`. With NO_HOLES (without it the
    /// function returns at once) a hole item goes into the log for each gap between the
    /// file's items below ALIGN(i_size, sectorsize). Returns the log bytes added. The
    /// kernel's other outcome of the race, an item copied mid-walk that overlaps one copied
    /// before (the tree checker aborts the transaction), needs a point inside the leaf walk
    /// and is not modelled.
    async fn log_holes(&self, ino: Ino, items_at: &mut [u64], facts: &mut Vec<LogFact>) -> u64 {
        self.point("log_inode:items_copied").await;
        items_at.sort_unstable();
        let st = self.inner.st.borrow();
        let i = &st.inodes[&ino];
        let raced = i
            .extents
            .iter()
            .filter(|e| !e.hole && items_at.binary_search(&e.id).is_err())
            .count() as u64;
        self.inner.m.borrow_mut().log_copy_raced_extents += raced;
        if !self.inner.no_holes.get() {
            return 0;
        }
        let c = &self.inner.costs;
        let end = i.disk_size.next_multiple_of(c.sectorsize);
        let mut items: Vec<(u64, u64)> = i
            .extents
            .iter()
            .filter(|e| !e.hole && e.offset < end)
            .map(|e| (e.offset, e.end()))
            .collect();
        items.sort_unstable();
        let (mut cur, mut bytes) = (0, 0);
        let mut hole = |a: u64, b: u64| {
            bytes += c.log_bytes_extent;
            if st.keep_history {
                facts.push(LogFact::Hole {
                    ino,
                    start: a,
                    end: b,
                });
            }
        };
        for (a, b) in items {
            if a > cur {
                hole(cur, a);
            }
            cur = cur.max(b);
        }
        if cur < end {
            hole(cur, end);
        }
        bytes
    }

    /// btrfs_log_prealloc_extents (tree-log.c@v5.10..v5.15, from 471d557afed155 "Btrfs: fix
    /// loss of prealloc extents past i_size after fsync log replay"), called at the end of
    /// btrfs_log_changed_extents, i.e. by a fast fsync: every file extent item at or past
    /// i_size is copied from the subvolume tree, a preallocated extent crossing i_size
    /// included (truncate_offset), whatever its generation, so that replay, which truncates
    /// to the logged i_size before replaying extents, keeps them. The full-sync path calls
    /// it only from d99478874355 ("btrfs: fix lost prealloc extents beyond eof after full
    /// fsync", 5.17; stable 5.10.104, 5.15.27): the `prealloc-full-fsync` switch, in no
    /// release preset (a full sync of those releases loses a committed prealloc extent past
    /// EOF in a leaf not changed in the running transaction: a true S2). The
    /// kernel copies the items logged by btrfs_log_changed_extents again (after dropping
    /// the log's items past i_size); the model counts each item once per fsync.
    fn prealloc_past_eof(&self, i: &Inode) -> Vec<u64> {
        if self.mutant(Mutant::NoPreallocExtentLogging) || i.is_dir {
            return Vec::new();
        }
        i.extents
            .iter()
            .filter(|e| e.prealloc && !e.hole && e.end() > i.disk_size)
            .map(|e| e.id)
            .collect()
    }

    /// need_log_inode (tree-log.c@v5.12, from ab12313a9f56): an inode already logged in this
    /// transaction with no xattr changed since need not be logged again — link, unlink and
    /// rename keep a logged inode's names in the log up to date.
    /// From 8be2ba2e0e11 (5.15, `skip_unchanged`): a directory whose last_trans is older
    /// than the running transaction ("not modified, no dentries added or removed") is not.
    pub(super) fn need_log_inode(st: &FsState, ino: Ino, t: TransId, skip_unchanged: bool) -> bool {
        let i = &st.inodes[&ino];
        if skip_unchanged && i.is_dir && i.last_trans < t {
            return false;
        }
        i.logged_trans != t || i.copy_everything
    }

    /// Whether `dir` must make the fsync fall back before it is logged in full: the
    /// check 64d6b281ba4d moved to the top of btrfs_log_inode@v5.12 (a directory logged
    /// LOG_INODE_ALL whose last_unlink_trans is this transaction: a file moved out of it
    /// would be lost). Marks the transaction like check_parent_dirs_for_sync and returns
    /// the oracle's verdict on the mark.
    pub(super) fn dir_forces_commit(&self, t: TransId, fsynced: Ino, dir: Ino) -> Option<bool> {
        if !self.inner.st.borrow().inodes[&dir].is_dir
            || self.inner.st.borrow().inodes[&dir].last_unlink_trans < t
        {
            return None;
        }
        Some(self.mark_full_commit(t, fsynced))
    }

    /// inode_logged (tree-log.c@v5.10): logged in this transaction, or changed in it with
    /// the full-sync flag set (it may have been logged before being evicted and reloaded).
    pub(super) fn inode_logged(st: &FsState, ino: Ino, t: TransId) -> bool {
        st.inodes
            .get(&ino)
            .is_some_and(|i| i.logged_trans == t || (i.last_trans == t && i.needs_full_sync))
    }

    /// __btrfs_unlink_inode's log updates (inode.c@v5.11; unlink, rmdir, rename's old
    /// name): btrfs_del_inode_ref_in_log, then btrfs_del_dir_entries_in_log — a name
    /// removed from an inode or a directory the log holds is removed from the log too.
    pub(super) async fn del_name_in_log(&self, t: TransId, ino: Ino, dir: Ino, name: &str) {
        if self.mutant(Mutant::UnlinkKeepsLoggedNames) {
            return;
        }
        self.del_inode_ref_in_log(t, ino, dir, name).await;
        self.del_dir_entries_in_log(t, ino, dir, name).await;
    }

    /// join_running_log_trans (tree-log.c@v5.11): under root->log_mutex, joins the log
    /// transaction as a writer if the log tree exists (false: -ENOENT, nothing to do).
    async fn join_running_log_trans(&self, t: TransId) -> bool {
        let _g = self.inner.log_mutex.lock().await;
        let mut st = self.st_mut();
        if st.log_tree_of != Some(t) {
            return false;
        }
        st.log_writers += 1;
        true
    }

    /// btrfs_del_inode_ref_in_log (tree-log.c@v5.11): delete the inode's ref from the log.
    async fn del_inode_ref_in_log(&self, t: TransId, ino: Ino, dir: Ino, name: &str) {
        let fact = || LogFact::DelRef {
            ino,
            dir,
            name: name.to_string(),
        };
        let work = async || self.run_tree_work(self.log_del_inode_ref(ino, dir)).await;
        self.del_in_log(t, ino, work, fact).await;
    }

    /// btrfs_del_dir_entries_in_log (tree-log.c@v5.11): delete the name's entry from the
    /// log; 5.11 then updates the logged directory inode item's i_size.
    async fn del_dir_entries_in_log(&self, t: TransId, ino: Ino, dir: Ino, name: &str) {
        let work = async || {
            let [item, index] = self.log_del_dir_entry(dir, name);
            self.run_tree_work(item).await;
            self.run_tree_work(index).await;
            self.logged_dir_isize_update(t, ino, dir, name).await;
        };
        let fact = || LogFact::DelEntry {
            dir,
            name: name.to_string(),
        };
        self.del_in_log(t, dir, work, fact).await;
    }

    /// The shape both share: nothing unless `holder` was logged in `t`; else join the
    /// running log transaction and, under `holder`'s log_mutex, do `work` (the log-tree
    /// change) and record the removal (`fact` built only with history).
    async fn del_in_log(
        &self,
        t: TransId,
        holder: Ino,
        work: impl AsyncFnOnce(),
        fact: impl FnOnce() -> LogFact,
    ) {
        if !Self::inode_logged(&self.inner.st.borrow(), holder, t) {
            return;
        }
        if !self.join_running_log_trans(t).await {
            return;
        }
        {
            let log_mutex = self.inode_log_mutex(holder);
            let _held = log_mutex.lock().await;
            work().await;
            self.note_log_removal(t, fact);
        }
        self.end_log_trans();
    }

    /// btrfs_del_dir_entries_in_log@v5.11's update of the directory's inode item: when
    /// the dir item or dir index item was deleted from the log (bytes_del != 0), the
    /// directory's inode item is searched for in the log (btrfs_search_slot(trans, log,
    /// key, path, 0, 1)) and, if there (ret == 0), its i_size lowered by bytes_del and the
    /// leaf marked dirty. ddffcf6fb5ac (5.12) drops it: replay fixes the directory's
    /// i_size from the entries it replays. Done when the name was in the log (a full log
    /// of the directory after the name was added, `FsState::name_in_log`; the directory's
    /// inode item is then in the log too), with its CPU counted.
    async fn logged_dir_isize_update(&self, t: TransId, ino: Ino, dir: Ino, name: &str) {
        if self.log_patch(LogPatch::NoDirIsizeUpdate)
            || !self.inner.st.borrow().name_in_log(dir, name, ino, t)
        {
            return;
        }
        let work = self.log_dir_isize_update(dir);
        {
            let mut m = self.inner.m.borrow_mut();
            m.logged_dir_isize_updates += 1;
            m.logged_dir_isize_update_ns += work.cpu();
        }
        self.run_tree_work(work).await;
    }

    /// Records a removal from the running log: its leaf bytes are dirty and replaying the
    /// log now gives a different result, so its sync is needed (the fact is built only
    /// when history is kept: no allocation per unlink in workload runs).
    fn note_log_removal(&self, t: TransId, fact: impl FnOnce() -> LogFact) {
        let mut st = self.st_mut();
        let k = st.log_transid;
        st.log_dirty_bytes += self.inner.costs.item_bytes_per_dentry;
        st.note_new_content(t, k);
        if st.keep_history {
            st.log_facts.entry((t, k)).or_default().push(fact());
        }
    }

    /// btrfs_log_new_name (tree-log.c@v5.10/v5.11; link, rename): a non-directory gets
    /// `last_unlink_trans = transid` first (so its next fsync logs all its parents); then
    /// R1's early return; otherwise btrfs_log_inode_parent(LOG_INODE_EXISTS) with the
    /// result ignored — its parent walk may mark the whole transaction for a full commit —
    /// logging the inode and its new ancestors (tree-log.c@v5.15: btrfs_log_new_name calls
    /// btrfs_log_inode_parent, which runs log_all_new_ancestors after the inode).
    pub(super) async fn log_new_name(&self, t: TransId, ino: Ino, old_dir: Option<Ino>) {
        {
            let mut st = self.st_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            if !i.is_dir {
                i.last_unlink_trans = t;
            }
        }
        let skip = {
            let st = self.inner.st.borrow();
            let logged = |i: Ino| st.inodes[&i].logged_trans;
            if self.has(Fix::R1) {
                logged(ino) < t && old_dir.is_none_or(|d| logged(d) < t)
            } else {
                let lc = st.last_trans_committed;
                logged(ino) <= lc && old_dir.is_none_or(|d| logged(d) <= lc)
            }
        };
        if skip {
            return;
        }
        // btrfs_log_inode_parent: the 5.10 check R5 removes returns 1 (nothing marked) …
        if !self.has(Fix::R5) {
            let st = self.inner.st.borrow();
            if st.last_trans_log_full_commit > st.last_trans_committed {
                return;
            }
        }
        // … and check_parent_dirs_for_sync may mark the transaction.
        if !self.log_patch(LogPatch::NoParentDirsCheck)
            && self.check_parent_dirs_for_sync(t, ino).is_some()
        {
            self.inner.m.borrow_mut().new_name_full_commit_marks += 1;
            return;
        }
        let since = (
            self.recent_bound(t),
            self.inner.st.borrow().last_trans_committed,
        );
        let ancestors = Self::new_ancestor_walk(&self.inner.st.borrow(), ino);
        if let Some(log_transid) = self.start_log_trans(t).await {
            self.log_inode(t, ino, log_transid, LogKind::NewName(old_dir))
                .await;
            // The rest of btrfs_log_inode_parent: the new name's directory and its
            // ancestors, when new in this transaction, are logged too (a logged name in a
            // directory the log lacks would be lost at replay). Its btrfs_log_all_parents
            // (the parents in the commit root, logged in full) is not modelled on this
            // path: the waste of a link or rename of a logged inode is undercounted.
            let kind = LogKind::NameAncestor;
            self.log_new_ancestors(t, ino, log_transid, &ancestors, since, kind)
                .await;
            self.end_log_trans();
        }
    }

    /// btrfs_sync_log: returns false when the log must fall back to a full commit.
    pub(super) async fn sync_log(&self, t: TransId, log_transid: u64) -> bool {
        let g = self.inner.log_mutex.lock().await;
        let Some(g) = self.wait_log_commits(log_transid, g).await else {
            // Another task already synced the log sub-transaction we logged into.
            return true;
        };
        // log_commit[index] is set before batching, so a task that logged into the same log
        // transaction waits for this sync instead of starting its own.
        self.st_mut().log_committing.insert(log_transid);
        let g = self.batch_log_writers(g).await;
        if self.inner.st.borrow().last_trans_log_full_commit == t {
            // Bail out to a full commit: log_commit[index] = 0 and wake the waiters, which
            // find the mark themselves.
            self.st_mut().log_committing.remove(&log_transid);
            drop(g);
            self.inner.log_commit_wait.notify_all();
            return false;
        }
        self.point("sync_log:start").await;
        let frozen_at = self.write_log_tree(t, log_transid, g).await;
        self.write_log_root_tree(t, log_transid).await;
        self.point("sync_log:write_super").await;
        let tl = self.lock_tree_log_mutex().await;
        self.check_prev_super_done(t);
        let necessary = self.write_log_super(t, log_transid, frozen_at).await;
        drop(tl);
        self.check_crash("a log superblock was written");
        self.finish_log_commit(log_transid, necessary);
        true
    }

    /// btrfs_sync_log's wait for a running commit of this log transaction or of the
    /// previous one (tree-log.c@v5.10: wait_log_commit, without root->log_mutex). Returns
    /// None, the mutex released, when this log transaction was synced meanwhile.
    async fn wait_log_commits<'a>(
        &'a self,
        log_transid: u64,
        mut g: sim::MutexGuard<'a>,
    ) -> Option<sim::MutexGuard<'a>> {
        loop {
            let (done, ours_running, prev_running) = {
                let st = self.inner.st.borrow();
                (
                    st.last_log_commit > log_transid,
                    st.log_committing.contains(&log_transid),
                    log_transid > 0 && st.log_committing.contains(&(log_transid - 1)),
                )
            };
            if done {
                return None;
            }
            if !ours_running && !prev_running {
                return Some(g);
            }
            // wait_log_commit: sleep without root->log_mutex until that log commit ends.
            drop(g);
            self.inner.log_commit_wait.wait().await;
            g = self.inner.log_mutex.lock().await;
        }
    }

    /// The batching loop (btrfs_sync_log@v5.10/v5.11): on a non-`ssd` mount with more than
    /// one logging task, sleep one jiffy without log_mutex; wait for the log writers;
    /// repeat until no fsync bumped log_batch meanwhile.
    async fn batch_log_writers<'a>(&'a self, mut g: sim::MutexGuard<'a>) -> sim::MutexGuard<'a> {
        let h = &self.inner.h;
        loop {
            let batch = self.inner.st.borrow().log_batch;
            let multi = self.inner.st.borrow().multi_log_tasks;
            if !self.inner.ssd.get() && multi {
                drop(g);
                h.sleep(self.inner.costs.jiffy).await;
                self.inner.m.borrow_mut().log_batch_sleeps += 1;
                g = self.inner.log_mutex.lock().await;
            }
            // wait_for_writer (tree-log.c@v5.10) sleeps without root->log_mutex.
            while self.inner.st.borrow().log_writers > 0 {
                drop(g);
                self.inner.log_writers_wait.wait().await;
                g = self.inner.log_mutex.lock().await;
            }
            if batch == self.inner.st.borrow().log_batch {
                return g;
            }
        }
    }

    /// btrfs_sync_log@v5.10's write of the log tree's dirty blocks
    /// (btrfs_write_marked_extents): the log transaction is advanced and root->log_mutex
    /// released before the blocks are waited for, so later loggers start the next log
    /// sub-transaction while this one's blocks are in flight. Returns the instant the log
    /// sub-transaction was frozen.
    async fn write_log_tree(
        &self,
        t: TransId,
        log_transid: u64,
        g: sim::MutexGuard<'_>,
    ) -> sim::Nanos {
        let c = &self.inner.costs;
        let blocks = self.take_log_blocks();
        // btrfs_write_marked_extents under the log_mutex: the fsync checksums each log
        // block as it submits it (btree_csum_one_bio, inline with crc32c) and writes back
        // its pages.
        self.write_back_blocks(blocks).await;
        let (tok, off) = self.st_mut().new_write(
            WriteKind::LogBlocks {
                transid: t,
                log_transid,
            },
            blocks * c.nodesize,
        );
        // Names whose removal ended before this instant are out of this log sub-transaction
        // (their writers were waited for); later ones join the next.
        let frozen_at = self.inner.h.now();
        {
            let mut st = self.st_mut();
            st.log_transid += 1;
            // The next log transaction's first task becomes log_start_pid.
            st.log_start_pid = None;
        }
        drop(g);
        self.inner
            .dev
            .submit(Request::write(off, blocks * c.nodesize).with_token(tok))
            .await;
        frozen_at
    }

    /// The log tree blocks btrfs_sync_log@v5.10 writes (btrfs_write_marked_extents of
    /// `dirty_log_pages`): those dirtied since the last sync, with the blocks of the items
    /// the modelled tree does not hold; they are written from now on. With `costs.log_cow`
    /// off: the bytes logged, in blocks. At least one (the log root node).
    fn take_log_blocks(&self) -> u64 {
        let nodesize = self.inner.costs.nodesize;
        let mut st = self.st_mut();
        let bytes = std::mem::take(&mut st.log_dirty_bytes);
        let unplaced = std::mem::take(&mut st.log_unplaced_bytes);
        let blocks = if self.inner.costs.log_cow == 0 {
            bytes.div_ceil(nodesize)
        } else {
            let st = &mut *st;
            let n = st.log_dirty.len() as u64 + unplaced.div_ceil(nodesize);
            st.log_written.extend(st.log_dirty.drain());
            n
        };
        drop(st);
        let blocks = blocks.max(1);
        self.inner.m.borrow_mut().log_blocks_written += blocks;
        blocks
    }

    /// btrfs_sync_log@v5.10's update of the log root tree, under its log_mutex.
    async fn write_log_root_tree(&self, t: TransId, log_transid: u64) {
        let c = &self.inner.costs;
        let _lr = self.inner.log_root_tree_mutex.lock().await;
        self.write_back_blocks(1).await;
        let (tok, off) = self.st_mut().new_write(
            WriteKind::LogRoot {
                transid: t,
                log_transid,
            },
            c.nodesize,
        );
        self.inner
            .dev
            .submit(Request::write(off, c.nodesize).with_token(tok))
            .await;
    }

    /// 6/6: btrfs_sync_log takes fs_info->tree_log_mutex just before writing the superblock
    /// (with R6), which waits for a transaction commit's superblock; the wait is counted.
    async fn lock_tree_log_mutex(&self) -> Option<sim::MutexGuard<'_>> {
        let h = &self.inner.h;
        let me = h.current();
        let class = h.class_static("tree_log_mutex");
        let before = h.account_of(me, class);
        let tl = if self.has(Fix::R6) && !self.mutant(Mutant::SyncLogNoSuperWait) {
            Some(self.inner.tree_log_mutex.lock().await)
        } else {
            None
        };
        let waited = h.account_of(me, class) - before;
        if waited > 0 {
            let mut m = self.inner.m.borrow_mut();
            m.sync_log_super_waits += 1;
            m.sync_log_super_wait_ns += waited;
        }
        tl
    }

    /// S1 at btrfs_sync_log's superblock write: the previous transaction's superblock must
    /// be on disk before ours is issued.
    fn check_prev_super_done(&self, t: TransId) {
        let s1 = {
            let st = self.inner.st.borrow();
            st.trans
                .range(..t)
                .next_back()
                .filter(|(_, p)| !p.super_done)
                .map(|(id, _)| *id)
        };
        if let Some(prev) = s1 {
            self.violation(
                "S1",
                format!(
                    "log sync of transaction {t} issued its superblock before transaction {prev}'s superblock write completed"
                ),
            );
        }
    }

    /// btrfs_sync_log@v5.10's write_all_supers (a FUA write with a preflush) pointing at
    /// this log. Returns the oracle's verdict on the log's entries, judged against what is
    /// on disk as the superblock is issued.
    async fn write_log_super(&self, t: TransId, log_transid: u64, frozen_at: sim::Nanos) -> bool {
        let necessary = self.judge(t, Some(log_transid));
        let base = self.inner.st.borrow().super_generation;
        let (tok, off) = self.st_mut().new_write(
            WriteKind::LogSuper {
                transid: t,
                log_transid,
                base,
                at: frozen_at,
            },
            4096,
        );
        let sb = if self.mutant(Mutant::SyncLogNoPreflush) {
            Request::fua_write(off, 4096)
        } else {
            Request {
                fua: true,
                ..Request::preflush_write(off, 4096)
            }
        };
        self.inner.dev.submit(sb.with_token(tok)).await;
        necessary
    }

    /// The end of btrfs_sync_log@v5.10: the metrics, last_log_commit advanced past this log
    /// transaction, log_commit[index] cleared and the waiters woken.
    fn finish_log_commit(&self, log_transid: u64, necessary: bool) {
        {
            let mut m = self.inner.m.borrow_mut();
            m.log_syncs += 1;
            if !necessary {
                m.unnecessary_log_syncs += 1;
            }
        }
        {
            let mut st = self.st_mut();
            st.last_log_commit = st.last_log_commit.max(log_transid + 1);
            st.log_committing.remove(&log_transid);
        }
        self.inner.log_commit_wait.notify_all();
    }
}

/// btrfs_log_inode's view of an inode as it starts (see `log_inode_plan`).
struct InodeLogPlan {
    /// last_trans_committed when the copy started.
    last_committed: TransId,
    /// Whether the history crash recovery reads is kept (the facts are built).
    keep: bool,
    /// The oracle: already in this transaction's log, unchanged since.
    relogged: bool,
    /// BTRFS_INODE_NEEDS_FULL_SYNC.
    full_sync: bool,
    /// The file extent items to copy.
    extents: Vec<Extent>,
    /// Ids of the items btrfs_log_prealloc_extents copies (past EOF).
    past_eof: Vec<u64>,
    /// Whether the inode is a directory.
    is_dir: bool,
    /// Its names (with the history kept).
    names: Vec<(Ino, String)>,
    /// The versions the log entry carries.
    versions: Vec<TransId>,
    /// R1's oracle: whether a new name had to go into the log.
    new_name_needed: bool,
}

impl LogAcc {
    /// Adds the bytes of logged items the modelled log tree does not hold.
    fn add_unplaced(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.unplaced += bytes;
    }
}

/// What one btrfs_log_inode call adds to the log and costs.
#[derive(Default)]
struct LogAcc {
    /// Log bytes dirtied.
    bytes: u64,
    /// Of those, the bytes of items the modelled log tree does not hold (a directory's
    /// entries, hole items).
    unplaced: u64,
    /// CPU of the copy outside the trees.
    cpu: sim::Nanos,
    /// The copy's searches and inserts, run with their locks.
    tree: crate::btrfs::ctree_btree::LogTreeWork,
    /// Crash-recovery facts.
    facts: Vec<LogFact>,
    /// The oracle's judgments.
    judgments: Vec<Judgment>,
    /// Extent items logged only as past EOF (not judged).
    forced_logs: u64,
}

/// The trace mark of one btrfs_log_inode call: its mode (the `inode_only` argument), why it
/// runs and, for an fsync of a file, whether it is a full sync.
fn log_mode_label(kind: LogKind, full_sync: bool, is_dir: bool) -> &'static str {
    match kind {
        LogKind::Fsync if is_dir => "btrfs_log_inode LOG_INODE_ALL (fsync of a directory), ino",
        LogKind::Fsync if full_sync => "btrfs_log_inode LOG_INODE_ALL (fsync, full sync), ino",
        LogKind::Fsync => "btrfs_log_inode LOG_INODE_ALL (fsync, fast), ino",
        LogKind::Parent => "btrfs_log_inode LOG_INODE_ALL (btrfs_log_all_parents), ino",
        LogKind::DirDentryAll => "btrfs_log_inode LOG_INODE_ALL (log_new_dir_dentries), ino",
        LogKind::OtherAll => "btrfs_log_inode LOG_OTHER_INODE_ALL (conflicting name), ino",
        LogKind::Ancestor => "btrfs_log_inode LOG_INODE_EXISTS (new ancestor), ino",
        LogKind::NameAncestor => {
            "btrfs_log_inode LOG_INODE_EXISTS (new ancestor of a new name), ino"
        }
        LogKind::NewName(_) => "btrfs_log_inode LOG_INODE_EXISTS (btrfs_log_new_name), ino",
        LogKind::DirDentry => "btrfs_log_inode LOG_INODE_EXISTS (log_new_dir_dentries), ino",
        LogKind::Other => "btrfs_log_inode LOG_OTHER_INODE (conflicting name), ino",
    }
}

impl LogKind {
    /// Whether btrfs_log_inode runs in LOG_INODE_ALL mode for it (else LOG_INODE_EXISTS:
    /// the item and refs only).
    fn logs_all(self) -> bool {
        matches!(
            self,
            LogKind::Fsync | LogKind::Parent | LogKind::DirDentryAll | LogKind::OtherAll
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LogKind {
    Fsync,
    /// log_new_ancestors(_fast) of an fsync.
    Ancestor,
    /// log_new_ancestors(_fast) of btrfs_log_new_name (ctx->logging_new_name).
    NameAncestor,
    /// btrfs_log_all_parents.
    Parent,
    /// btrfs_log_new_name, with the rename's old directory.
    NewName(Option<Ino>),
    /// log_new_dir_dentries: a new inode named by a fsynced directory (LOG_INODE_EXISTS).
    DirDentry,
    /// log_new_dir_dentries: a directory named by a new entry (LOG_INODE_ALL).
    DirDentryAll,
    /// log_conflicting_inodes: an inode that held a logged name in the commit root
    /// (LOG_OTHER_INODE, logged as LOG_INODE_EXISTS).
    Other,
    /// log_conflicting_inodes: the directory of such an inode that no longer exists
    /// (LOG_OTHER_INODE_ALL).
    OtherAll,
}
