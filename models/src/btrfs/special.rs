//! Inodes other than directories and regular files, and modes (issue 30, item 3): symlinks
//! (btrfs_symlink), device nodes and fifos (btrfs_mknod), O_TMPFILE files (btrfs_tmpfile)
//! and their linkat (btrfs_link), chmod (btrfs_setattr with ATTR_MODE), all
//! fs/btrfs/inode.c@v5.10..v5.16; what the log tree holds of them (tree-log.c) and what
//! recovery keeps.

use super::ctree::Btrfs;
use super::ctree_btree::{inode_key, inode_update, link_ops, orphan_key, size, tree_id, TreeOp};
use super::state::*;
use crate::vfs::recovered::InodeKind;
use crate::vfs::{Op, OpError};
use std::collections::{BTreeMap, BTreeSet};

/// What a special inode is (the S_IFMT bits of its inode item's mode, immutable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecialKind {
    /// S_IFLNK with its content (the inline file extent item's data).
    Symlink(String),
    /// S_IFIFO.
    Fifo,
    /// S_IFCHR.
    CharDev,
    /// S_IFBLK.
    BlockDev,
}

/// What the model keeps of an inode beyond `Inode`: its special kind, its chmod history,
/// whether it is an O_TMPFILE not yet linked.
#[derive(Clone, Debug, Default)]
pub struct Special {
    /// A symlink, fifo or device node (None: a regular file or directory).
    pub kind: Option<SpecialKind>,
    /// (transaction, permission bits) of each chmod, oldest first (None before the first:
    /// the creation mode, which the model does not know).
    pub modes: Vec<(TransId, u32)>,
    /// I_LINKABLE (d_tmpfile, fs/dcache.c@v5.10): an O_TMPFILE inode that vfs_link may
    /// give its first name; cleared by that link.
    pub linkable: bool,
}

impl Special {
    /// The permission bits now (None: never chmod'ed).
    pub fn mode(&self) -> Option<u32> {
        self.modes.last().map(|m| m.1)
    }

    /// The permission bits in the committed generation `base`.
    fn mode_at(&self, base: TransId) -> Option<u32> {
        self.modes.iter().rev().find(|m| m.0 <= base).map(|m| m.1)
    }
}

/// The recovered kind of a special inode.
pub fn inode_kind(k: &SpecialKind) -> InodeKind {
    match k {
        SpecialKind::Symlink(_) => InodeKind::Symlink,
        SpecialKind::Fifo => InodeKind::Fifo,
        SpecialKind::CharDev => InodeKind::CharDev,
        SpecialKind::BlockDev => InodeKind::BlockDev,
    }
}

impl Btrfs {
    /// symlink, mknod and mkfifo: btrfs_symlink / btrfs_mknod (inode.c@v5.10..v5.16) make
    /// the inode, its ref and dir items as btrfs_create does, in one transaction; a
    /// symlink's content goes in the same transaction as an inline file extent item
    /// (btrfs_symlink: `btrfs_insert_empty_item(..., BTRFS_EXTENT_DATA_KEY, datasize)`,
    /// i_size = name_len). Simplified: the inline item's tree work and the two extra
    /// reserved items of btrfs_symlink (7 against 5) are not charged.
    pub(super) async fn make_special(&self, path: &str, kind: SpecialKind) -> Result<(), OpError> {
        self.create(path, false).await?;
        // No await since create changed the state: the name still names the new inode.
        let mut st = self.st_mut();
        let ino = st
            .lookup(path)
            .ok_or_else(|| OpError(format!("no such file or directory: {path}")))?;
        st.special.entry(ino).or_default().kind = Some(kind);
        Ok(())
    }

    /// The inode `op` acts on when it is a symlink, fifo or device node and the operation
    /// cannot act on one: open(2) follows a symlink, and a fifo's or a device's descriptor
    /// reads and writes the pipe or the device, not the filesystem (their fsync is the
    /// pipe's EINVAL or the block device's, not btrfs_sync_file).
    pub(super) fn refuse_special(&self, op: &Op) -> Result<(), OpError> {
        let path = match op {
            Op::Open(p, _) => p,
            Op::Clone { src, dst, .. } => {
                self.refuse_special_path(op, src)?;
                dst
            }
            Op::Chmod(..) | Op::Stat(_) | Op::Setattr(_) | Op::LinkFd(..) | Op::Close(_) => {
                return Ok(())
            }
            _ => match op.file() {
                Some(p) => p,
                None => return Ok(()),
            },
        };
        self.refuse_special_path(op, path)
    }

    fn refuse_special_path(&self, op: &Op, path: &str) -> Result<(), OpError> {
        let st = self.inner.st.borrow();
        let kind = st
            .lookup(path)
            .and_then(|ino| st.special.get(&ino))
            .and_then(|s| s.kind.as_ref());
        let what = match kind {
            None => return Ok(()),
            Some(SpecialKind::Symlink(_)) => "a symlink (open(2) follows it)",
            Some(SpecialKind::Fifo) => "a fifo (its descriptor is the pipe's)",
            Some(_) => "a device node (its descriptor is the device's)",
        };
        Err(OpError(format!(
            "'{}' of {what} is not modelled: {path}",
            op.kind()
        )))
    }

    /// `tmpfile DIR as NAME`: btrfs_tmpfile (inode.c@v5.10): btrfs_start_transaction(root,
    /// 5), btrfs_new_inode with no name (i_nlink 0: no inode ref, no dir item),
    /// btrfs_update_inode, btrfs_orphan_add; d_tmpfile sets I_LINKABLE. The descriptor
    /// holds it, so it lives until its last close (the final iput deletes it, `close_fd`).
    pub(super) async fn tmpfile(&self, dir: &str, fd: &crate::vfs::OpPath) -> Result<(), OpError> {
        let d = self.resolve(dir)?;
        {
            let st = self.inner.st.borrow();
            if !st.inodes[&d].is_dir {
                return Err(OpError(format!("not a directory: {dir}")));
            }
            if st.fds.contains_key(fd) {
                return Err(OpError(format!(
                    "descriptor {fd} is already open: expected a 'close {fd}' before opening it again"
                )));
            }
        }
        let th = self.start_transaction_items(5).await?;
        let t = th.id;
        self.inner.h.cpu(self.inner.costs.new_inode_cpu()).await;
        let cpu = {
            let mut st = self.st_mut();
            let ino = st.next_ino;
            let ops = [
                TreeOp::Insert(tree_id::FS, inode_key(ino), size::INODE_ITEM),
                TreeOp::Insert(tree_id::FS, orphan_key(ino), size::ORPHAN_ITEM),
            ];
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        {
            let mut st = self.st_mut();
            let ino = st.next_ino;
            st.next_ino += 1;
            st.inodes.insert(ino, Inode::new(ino, false, t));
            Self::set_inode_last_trans(&mut st, ino, t);
            st.special.entry(ino).or_default().linkable = true;
            st.fds.insert(fd.clone(), ino);
        }
        self.end(th);
        Ok(())
    }

    /// `link @NAME PATH`: linkat(fd, "", AT_FDCWD, PATH, AT_EMPTY_PATH) → vfs_link
    /// (fs/namei.c@v5.10: inode_lock(source); a source with i_nlink 0 is ENOENT unless
    /// I_LINKABLE, cleared by the link) → btrfs_link (inode.c@v5.10..v5.16):
    /// btrfs_start_transaction(root, inode->i_nlink ? 5 : 6), inc_nlink, btrfs_add_link,
    /// btrfs_update_inode, and `if (inode->i_nlink == 1)` — an O_TMPFILE file's first name
    /// — btrfs_orphan_del; then btrfs_log_new_name(inode, NULL, parent).
    pub(super) async fn link_fd(&self, fd: &str, dst: &str) -> Result<(), OpError> {
        let ino = self.resolve(fd)?;
        let (dir, name) = self.split(dst)?;
        let first = self.link_fd_checks(ino, fd, dst, (dir, name))?;
        let _lock = self.lock_inode_flags(ino, false).await;
        let th = self
            .start_transaction_items(if first { 6 } else { 5 })
            .await?;
        let t = th.id;
        self.point("link:joined").await;
        if self.link_fd_checks(ino, fd, dst, (dir, name))? != first {
            self.end(th);
            return Err(OpError(format!("{fd} changed while link waited")));
        }
        let cpu = {
            let mut st = self.st_mut();
            let mut ops: Vec<TreeOp> = link_ops(&mut st.trees, ino, dir, name).into();
            ops.push(inode_update(ino));
            if first {
                ops.push(TreeOp::Delete(tree_id::FS, orphan_key(ino)));
            }
            let cpu = Self::tree_ops(&mut st, &self.inner.costs, t, &ops);
            st.add_dentry(dir, name, ino, t);
            st.inodes.get_mut(&ino).unwrap().item_trans = t;
            st.inodes.get_mut(&dir).unwrap().item_trans = t;
            Self::set_inode_last_trans(&mut st, ino, t);
            Self::set_inode_last_trans(&mut st, dir, t);
            if let Some(s) = st.special.get_mut(&ino) {
                s.linkable = false;
            }
            cpu
        };
        self.run_tree_work(cpu).await;
        self.log_new_name(t, ino, None).await;
        self.end(th);
        Ok(())
    }

    /// vfs_link's and btrfs_link's refusals for a descriptor's inode; Ok(whether this is
    /// its first name, an O_TMPFILE file's).
    fn link_fd_checks(
        &self,
        ino: Ino,
        fd: &str,
        dst: &str,
        (dir, name): (Ino, &str),
    ) -> Result<bool, OpError> {
        let st = self.inner.st.borrow();
        if st.inodes[&ino].is_dir {
            return Err(OpError(format!("cannot hard-link a directory: {fd}")));
        }
        if st.live_entry(dir, name).is_some() {
            return Err(OpError(format!("file exists: {dst}")));
        }
        let first = !st.has_names(ino);
        let linkable = st.special.get(&ino).is_some_and(|s| s.linkable);
        if first && !linkable {
            return Err(OpError(format!(
                "no such file or directory: {fd} has no name and is not an O_TMPFILE file (vfs_link: i_nlink 0 without I_LINKABLE)"
            )));
        }
        Ok(first)
    }

    /// `chmod PATH MODE`: btrfs_setattr with ATTR_MODE (inode.c@v5.10..v5.16):
    /// setattr_copy puts the bits in the VFS inode, btrfs_dirty_inode updates the inode
    /// item in a joined transaction — the model's `setattr` — and the mode is recorded
    /// with that transaction.
    pub(super) async fn chmod(&self, path: &str, mode: u32) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        self.setattr(path).await?;
        // No await since setattr's update: its transaction is the running one's.
        let mut st = self.st_mut();
        let t = st.inodes[&ino].item_trans;
        let s = st.special.entry(ino).or_default();
        match s.modes.last_mut() {
            Some(last) if last.0 == t => last.1 = mode,
            _ => s.modes.push((t, mode)),
        }
        Ok(())
    }

    /// The log fact of what btrfs_log_inode copies of a special or chmod'ed inode besides
    /// its `LogFact::Inode` (tree-log.c@v5.10..v5.16), or None for other inodes. `all`:
    /// LOG_INODE_ALL. The inode item carries the mode; in LOG_INODE_EXISTS mode an item
    /// changed in this transaction is copied with generation 0 (copy_items →
    /// fill_inode_item(log_inode_only)), which replay does not copy over an inode the
    /// subvolume has (overwrite_item's `no_copy`). A symlink's inline extent item is
    /// copied only in LOG_INODE_ALL mode.
    pub(super) fn special_fact(st: &FsState, t: TransId, ino: Ino, all: bool) -> Option<LogFact> {
        let s = st.special.get(&ino)?;
        Some(LogFact::Special {
            ino,
            mode: s.mode(),
            inline: all && matches!(s.kind, Some(SpecialKind::Symlink(_))),
            gen_zero: !all && st.inodes[&ino].item_trans == t,
        })
    }

    /// Whether `ino` is a symlink (log_new_dir_dentries logs one LOG_INODE_ALL).
    pub(super) fn is_symlink(&self, ino: Ino) -> bool {
        let st = self.inner.st.borrow();
        matches!(
            st.special.get(&ino).and_then(|s| s.kind.as_ref()),
            Some(SpecialKind::Symlink(_))
        )
    }
}

/// What recovery keeps of special inodes and modes: the symlinks whose content came back,
/// and each chmod'ed inode's mode.
pub(super) struct SpecialImage {
    /// Symlinks with their inline extent item: committed with the inode, or replayed.
    content: BTreeSet<Ino>,
    /// Permission bits per inode that has a chmod history (None: the creation mode).
    modes: BTreeMap<Ino, Option<u32>>,
}

impl SpecialImage {
    /// The committed generation `base`, then the `facts` of the replayed log in order:
    /// a symlink's inline item comes back with it; the log holds one inode item per inode,
    /// the last one logged, whose mode replay copies unless it was logged with generation 0
    /// over an inode the committed tree has (overwrite_item@v5.10..v5.16).
    pub(super) fn replay<'a>(
        st: &FsState,
        base: TransId,
        facts: impl Iterator<Item = &'a LogFact>,
    ) -> SpecialImage {
        if st.special.is_empty() {
            // Nothing special: no log fact to read (the crash check of every run).
            return SpecialImage {
                content: BTreeSet::new(),
                modes: BTreeMap::new(),
            };
        }
        let committed = |ino: Ino| st.inodes.get(&ino).is_some_and(|i| i.generation <= base);
        let mut content: BTreeSet<Ino> = st
            .special
            .iter()
            .filter(|(ino, s)| matches!(s.kind, Some(SpecialKind::Symlink(_))) && committed(**ino))
            .map(|(ino, _)| *ino)
            .collect();
        let mut modes: BTreeMap<Ino, Option<u32>> = st
            .special
            .iter()
            .filter(|(_, s)| !s.modes.is_empty())
            .map(|(ino, s)| (*ino, s.mode_at(base)))
            .collect();
        let mut last: BTreeMap<Ino, (Option<u32>, bool)> = BTreeMap::new();
        for f in facts {
            if let LogFact::Special {
                ino,
                mode,
                inline,
                gen_zero,
            } = f
            {
                if *inline {
                    content.insert(*ino);
                }
                last.insert(*ino, (*mode, *gen_zero));
            }
        }
        for (ino, (mode, gen_zero)) in last {
            if !(gen_zero && committed(ino)) {
                modes.insert(ino, mode);
            }
        }
        SpecialImage { content, modes }
    }

    /// A recovered inode's kind, symlink target ("" when its content did not come back),
    /// size override (a symlink's i_size is its target's length) and mode.
    pub(super) fn describe(
        &self,
        st: &FsState,
        ino: Ino,
    ) -> (Option<InodeKind>, Option<String>, Option<u64>, Option<u32>) {
        let Some(s) = st.special.get(&ino) else {
            return (None, None, None, None);
        };
        let mode = self.modes.get(&ino).copied().flatten();
        match &s.kind {
            Some(SpecialKind::Symlink(target)) => {
                let t = if self.content.contains(&ino) {
                    target.clone()
                } else {
                    String::new()
                };
                let len = t.len() as u64;
                (Some(InodeKind::Symlink), Some(t), Some(len), mode)
            }
            Some(k) => (Some(inode_kind(k)), None, None, mode),
            None => (None, None, None, mode),
        }
    }

    /// What the mount reads of `ino` (btrfs_read_locked_inode, inode.c@v5.10: i_mode, and
    /// with it the kind, from the recovered inode item; a symlink's target from its inline
    /// extent item): its kind, a symlink with the target recovery gives it ("" when its
    /// content did not come back), and its permission bits (None: the creation mode).
    pub(super) fn mounted(&self, st: &FsState, ino: Ino) -> (Option<SpecialKind>, Option<u32>) {
        let Some(s) = st.special.get(&ino) else {
            return (None, None);
        };
        let mode = self.modes.get(&ino).copied().flatten();
        let kind = match &s.kind {
            Some(SpecialKind::Symlink(_)) if !self.content.contains(&ino) => {
                Some(SpecialKind::Symlink(String::new()))
            }
            k => k.clone(),
        };
        (kind, mode)
    }

    /// S2's symlink rule: every symlink the recovered namespace names has the content it
    /// was created with. symlink(2) cannot make an empty one (ENOENT) and btrfs_symlink
    /// writes the inline extent in the inode's transaction, so an empty symlink after
    /// recovery is a log that held the inode item without its content (xfstests
    /// generic/348; d0e64a981fd8 for a renamed one, 5.18).
    pub(super) fn check_symlinks(
        &self,
        st: &FsState,
        names: &BTreeMap<(Ino, String), Ino>,
    ) -> Result<(), String> {
        for ((dir, name), ino) in names {
            let symlink = matches!(
                st.special.get(ino).and_then(|s| s.kind.as_ref()),
                Some(SpecialKind::Symlink(_))
            );
            if symlink && !self.content.contains(ino) {
                return Err(format!(
                    "the symlink {name} in directory {dir} (ino {ino}) comes back empty: the log holds its inode item without its inline extent"
                ));
            }
        }
        Ok(())
    }
}
