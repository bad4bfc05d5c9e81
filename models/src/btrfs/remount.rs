//! A power failure in the middle of a run and the mount that follows it: xfstests'
//! `_flakey_drop_and_remount` (common/dmflakey: dm-flakey's drop_writes table, unmount,
//! the writes allowed again, mount). The mount is open_ctree (disk-io.c@v5.10): the
//! durable superblock's trees, then, when it points at a log, btrfs_replay_log →
//! btrfs_recover_log_trees (tree-log.c@v5.10), which replays the log and ends with "step 4:
//! commit the transaction, which also unpins the blocks" (btrfs_commit_transaction). What
//! the filesystem holds after it is exactly what the crash check recovers
//! (recovery.rs `mount_image`); the run then goes on on that filesystem.

use super::ctree::Btrfs;
use super::recovery::{mount_image, MountImage, MountedFile};
use super::state::*;
use crate::vfs::OpError;
use std::collections::BTreeMap;

/// How soon the unmount first looks again for background work to finish (virtual time);
/// the wait doubles up to `QUIESCE_POLL_MAX`.
const QUIESCE_POLL: sim::Nanos = 10 * sim::US;
/// The longest wait between two looks.
const QUIESCE_POLL_MAX: sim::Nanos = 10 * sim::MS;
/// How long the unmount waits for background work before it gives up (virtual time).
const QUIESCE_LIMIT: sim::Nanos = 60 * sim::S;

impl Btrfs {
    /// `power-fail`: the power fails now, the filesystem is unmounted with its writes
    /// dropped and mounted again from what the device kept. In order:
    /// 1. every fsync that returned before is judged now (S2 on the durable image);
    /// 2. the device loses its volatile cache and drops every write from here on
    ///    (dm-flakey drop_writes);
    /// 3. the unmount waits until no background work runs (a commit of the transaction
    ///    kthread, delayed items, ordered extents, space flushing, requests in flight):
    ///    close_ctree waits for them, and what they write is dropped;
    /// 4. the mount: the recovered namespace, extents, sizes and xattrs become the
    ///    committed tree of generation R, one past every transaction id used so far (the
    ///    kernel's replay transaction is the superblock's generation + 1 and reuses the lost
    ///    ids; the model keeps ids unique so its history names each transaction once), its
    ///    superblock durable when the mount returns (the model writes it without service
    ///    time, also when no log was replayed, where the kernel commits nothing and keeps
    ///    the generation: no item differs). Every inode is as btrfs_iget reads it
    ///    (btrfs_alloc_inode + btrfs_read_locked_inode, as `evict` makes it), no page is
    ///    dirty, no log exists, descriptors are closed, and new transactions are R + 1 on.
    ///    Symlinks, fifos, device nodes and chmod'ed modes keep what recovery gives them
    ///    (`read_special`).
    ///
    /// The caller quiesces the scenario's tasks first (a barrier: no operation runs).
    pub(super) async fn power_fail(&self) -> Result<(), OpError> {
        if !self.inner.st.borrow().keep_history {
            return Err(OpError(
                "a power failure needs the crash history, which this run does not keep".into(),
            ));
        }
        self.check_crash("the power failed");
        let img = self
            .inner
            .dev
            .with_durable_image(|image| match image {
                Some(image) => mount_image(&self.inner.st.borrow(), image),
                None => mount_image(&self.inner.st.borrow(), &BTreeMap::new()),
            })
            .map_err(|m| OpError(format!("the mount after the power failure fails: {m}")))?;
        self.inner.dev.power_fail();
        self.wait_quiescent().await?;
        let (no_holes, replayed_log, base) =
            (self.inner.no_holes.get(), img.replayed_log, img.base);
        let now = self.inner.h.now();
        let r = {
            let mut st = self.st_mut();
            let old = std::mem::replace(&mut *st, FsState::mkfs());
            *st = mounted_state(old, img, no_holes, now);
            st.generation
        };
        self.inner.dev.restore_power();
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::CommitSuper { transid: r }, 4096);
        self.inner.dev.write_durable(off, 4096, tok);
        *self.inner.crash_memo.borrow_mut() = None;
        if replayed_log {
            self.note("power-fail: log replayed over generation", base);
        }
        self.note("power-fail: mounted from the durable image, generation", r);
        Ok(())
    }

    /// The unmount's wait for background work (close_ctree, disk-io.c@v5.10: the cleaner
    /// and transaction kthreads stopped, ordered extents and delayed work flushed). Err:
    /// it still runs after `QUIESCE_LIMIT` (a reservation that can never be served).
    async fn wait_quiescent(&self) -> Result<(), OpError> {
        let (start, mut poll) = (self.inner.h.now(), QUIESCE_POLL);
        while !self.quiescent() {
            if self.inner.h.now() - start > QUIESCE_LIMIT {
                self.inner.dev.restore_power();
                return Err(OpError(format!(
                    "the unmount after the power failure waited {}s for background work that never finished (a transaction handle, a log sync, a space reservation or I/O still pending)",
                    QUIESCE_LIMIT / sim::S
                )));
            }
            self.inner.h.sleep(poll).await;
            poll = (poll * 2).min(QUIESCE_POLL_MAX);
        }
        Ok(())
    }

    /// Whether nothing runs in the background: no transaction is committing or has a
    /// handle, no log transaction is open or syncing, no ordered extent waits for its
    /// endio worker, the delayed-meta workers are idle, no space flush runs or waits, and
    /// the device has no request in flight.
    fn quiescent(&self) -> bool {
        let st = self.inner.st.borrow();
        let trans_idle = st.trans.values().all(|t| {
            t.state == TransState::Completed || (t.state == TransState::Running && t.writers == 0)
        });
        let wq = self.inner.delayed_wq.borrow();
        trans_idle
            && st.log_writers == 0
            && st.log_committing.is_empty()
            && self.inner.endio.borrow().is_empty()
            && wq.queue.is_empty()
            && wq.running == 0
            && !st.meta.flush
            && !st.meta.preempt_busy
            && st.meta.tickets.is_empty()
            && st.meta.priority_tickets.is_empty()
            && self.inner.dev.in_flight() == 0
    }
}

/// The filesystem `old` becomes when mounted from `img` at time `now`: see
/// `Btrfs::power_fail`. Device writes (tokens) and space stay; metadata writes before it
/// become `WriteKind::BeforeRemount`.
fn mounted_state(mut old: FsState, img: MountImage, no_holes: bool, now: sim::Nanos) -> FsState {
    let r = old
        .trans
        .keys()
        .copied()
        .max()
        .unwrap_or(0)
        .max(old.generation)
        + 1;
    let mut st = FsState::mkfs();
    st.generation = r;
    st.last_trans_committed = r;
    st.super_generation = r;
    st.trans = BTreeMap::from([(
        r,
        Transaction {
            state: TransState::Completed,
            writers: 0,
            super_done: true,
            ..Transaction::running(r, now, 0)
        },
    )]);
    // Space: what the device holds stays allocated; dirty pages and their reservations are
    // gone (drop_unlinked_data's accounting), the mount's commit unpins.
    st.data = std::mem::take(&mut old.data);
    st.meta = std::mem::take(&mut old.meta);
    release_in_memory_space(&mut st, &old);
    st.trees = std::mem::take(&mut old.trees);
    st.trees.free_log();
    for (kind, _) in old.writes.iter_mut() {
        if !matches!(kind, WriteKind::Data { .. }) {
            *kind = WriteKind::BeforeRemount;
        }
    }
    st.writes = std::mem::take(&mut old.writes);
    st.tokens = old.tokens;
    st.next_offset = old.next_offset;
    st.next_extent = old.next_extent;
    st.keep_history = old.keep_history;
    st.sub_trans_stamp = old.sub_trans_stamp;
    st.shared_data = old.shared_data;
    st.last_compact = old.last_compact;
    st.inodes = InodeMap::default();
    for (&ino, f) in &img.files {
        let Some(was) = old.inodes.get(&ino) else {
            continue;
        };
        let inode = read_inode(&mut st, was, f, (img.base, r), no_holes);
        if let Some(s) = read_special(f, inode.item_trans) {
            st.special.insert(ino, s);
        }
        st.inodes.insert(ino, inode);
    }
    // btrfs_init_root_free_objectid: the highest inode number in the tree, plus one.
    st.next_ino = img.files.keys().max().map_or(ROOT_INO, |m| *m) + 1;
    // Entries created in the mount's transaction: a committed generation from here on.
    for ((dir, name), ino) in &img.names {
        st.add_dentry(*dir, name, *ino, r);
    }
    st
}

/// Dirty pages and their delalloc reservations are lost, pinned extents unpinned by the
/// mount's commit, no reservation is held (every task is quiesced).
fn release_in_memory_space(st: &mut FsState, old: &FsState) {
    let dirty: u64 = old.inodes.values().map(|i| i.dirty_bytes).sum();
    st.data.may_use = st.data.may_use.saturating_sub(dirty);
    let pinned: Vec<(u64, u64)> = st.data.groups().map(|(id, b)| (id, b.pinned)).collect();
    for (id, p) in pinned {
        st.data.unpin(id, p);
    }
    let m = &mut st.meta;
    m.delalloc_bytes = m.delalloc_bytes.saturating_sub(dirty);
    let rsv: u64 = m.delalloc_rsv.values().sum();
    m.may_use = m.may_use.saturating_sub(rsv);
    m.delalloc_rsv.clear();
    m.range_dirty.clear();
    m.range_at.clear();
    m.range_list.clear();
    m.dirty_at.clear();
    m.pinned = 0;
    m.ticket_in_trans = None;
}

/// Inode `was` as btrfs_iget reads it after the mount (btrfs_alloc_inode +
/// btrfs_read_locked_inode, inode.c@v5.10, as `evict` models them) with the recovered
/// extents, size and xattrs of `f`. Its item's transid: the mount's transaction `r` when
/// the replay wrote it, else at most the committed generation `base`.
fn read_inode(
    st: &mut FsState,
    was: &Inode,
    f: &MountedFile,
    (base, r): (TransId, TransId),
    no_holes: bool,
) -> Inode {
    let item_t = if f.from_log {
        r
    } else {
        was.item_trans.min(base)
    };
    let mut extents = Vec::new();
    let mut cur = 0;
    for e in &f.extents {
        if !no_holes && !was.is_dir && e.offset > cur && cur < f.size {
            extents.push(hole_item(st, cur, e.offset.min(f.size), item_t));
        }
        cur = cur.max(e.end());
        let mut e = e.clone();
        e.id = st.next_extent;
        st.next_extent += 1;
        e.generation = e.generation.min(r);
        if e.item_trans > base {
            e.item_trans = r;
        }
        extents.push(e);
    }
    if !no_holes && !was.is_dir && f.size > cur {
        extents.push(hole_item(st, cur, f.size, item_t));
    }
    Inode {
        ino: was.ino,
        is_dir: was.is_dir,
        generation: was.generation,
        logged_trans: 0,
        last_trans: item_t,
        last_unlink_trans: item_t,
        last_sub_trans: 0,
        last_log_commit: 0,
        // fs_info->generation is r until a new transaction starts; the model reads every
        // inode then (the kernel reads each at its first lookup).
        needs_full_sync: item_t == r,
        item_trans: item_t,
        extents,
        modified_extents: Vec::new(),
        dirty_bytes: 0,
        disk_size: if was.is_dir { was.disk_size } else { f.size },
        size_hist: if was.is_dir {
            Vec::new()
        } else {
            vec![(item_t, f.size)]
        },
        dead_extents: Vec::new(),
        xattrs: f.xattrs.iter().map(|x| (x.clone(), item_t)).collect(),
        change_seq: 0,
        logged_full: None,
        logged_any: None,
        copy_everything: false,
        xattr_seq: 0,
        xattrs_logged: None,
        full_sync_needless: false,
    }
}

/// What the model keeps beyond `Inode` of an inode the mount reads whose item `f`
/// recovered is a symlink, fifo or device node or has a chmod'ed mode, with its item's
/// transid `item_t` (None for the others). btrfs_read_locked_inode (inode.c@v5.10) takes
/// i_mode — the kind and the permission bits — from the recovered inode item and sets
/// the operations by `i_mode & S_IFMT` (btrfs_symlink_inode_operations for S_IFLNK,
/// init_special_inode for the others), and a symlink's target is its recovered inline
/// item: what the crash check printed, also an empty target whose item the log lost. No
/// inode is I_LINKABLE: an unlinked O_TMPFILE is not in the recovered namespace.
fn read_special(f: &MountedFile, item_t: TransId) -> Option<super::special::Special> {
    if f.kind.is_none() && f.mode.is_none() {
        return None;
    }
    Some(super::special::Special {
        kind: f.kind.clone(),
        modes: f.mode.map(|m| vec![(item_t, m)]).unwrap_or_default(),
        linkable: false,
    })
}

/// An explicit hole item over [start, end) (a filesystem without NO_HOLES has one for
/// every gap: btrfs_cont_expand, fill_holes, and replay of logged hole items insert them).
fn hole_item(st: &mut FsState, start: u64, end: u64, t: TransId) -> Extent {
    let id = st.next_extent;
    st.next_extent += 1;
    Extent::hole(id, start, end, t)
}
