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
    let durable = |tok: u64| is_durable(st, image, tok);
    let Replayed {
        base,
        names,
        files,
        from_log,
        log_sync_at,
        special,
    } = replay(st, image)?;
    let file_of = |ino: Ino| -> FileImage { FileImage::at_base(st, ino, base) };
    check_fsyncs(
        st,
        &names,
        &files,
        &from_log,
        log_sync_at,
        &file_of,
        &durable,
    )?;
    special.check_symlinks(st, &names)
}

/// Whether device write `tok` is on the durable image.
fn is_durable(st: &FsState, image: &BTreeMap<u64, DurableWrite>, tok: u64) -> bool {
    st.write_kind(tok)
        .is_some_and(|(_, off)| image.get(&off).is_some_and(|w| w.token == tok))
}

/// What recovery rebuilds from a durable image: the committed generation, the namespace
/// and the files log replay touched (others are as of `base`), the names the log put in,
/// and when the replayed log was synced.
struct Replayed {
    base: TransId,
    names: BTreeMap<(Ino, String), Ino>,
    files: BTreeMap<Ino, FileImage>,
    from_log: BTreeSet<(Ino, String)>,
    log_sync_at: Option<sim::Nanos>,
    /// Symlink contents and modes (special.rs).
    special: super::special::SpecialImage,
}

/// Recovery from `image` (open_ctree + btrfs_recover_log_trees): the superblock's
/// generation, its committed tree, then log replay (the namespace in the kernel's stage
/// order, the files' data items in log order). Err: the image is corrupt
/// (tree or log blocks the superblock points at are not durable).
fn replay(st: &FsState, image: &BTreeMap<u64, DurableWrite>) -> Result<Replayed, String> {
    let (base, log) = durable_root(st, image)?;
    // The namespace as of the committed generation.
    let mut names = names_at(st, base);
    // Files: extents as of the committed generation (data only; holes are absence), sizes
    // and xattrs.
    let mut files: BTreeMap<Ino, FileImage> = BTreeMap::new();
    let file_of = |ino: Ino| -> FileImage { FileImage::at_base(st, ino, base) };
    // Log replay: the namespace in the kernel's stage order (replay_namespace), the
    // files' data items in log order (which, per inode, is the key order that matters:
    // see replay_file_fact's truncate).
    let mut log_sync_at = None;
    let mut from_log: BTreeSet<(Ino, String)> = BTreeSet::new();
    // Inodes whose extent items the replay has put back so far.
    let mut logged_extents: BTreeSet<Ino> = BTreeSet::new();
    let log_facts = log
        .into_iter()
        .flat_map(|(t, k)| st.log_facts.range((t, 0)..=(t, k)))
        .flat_map(|(_, v)| v.iter());
    let special = super::special::SpecialImage::replay(st, base, log_facts);
    if let Some((t, k)) = log {
        log_sync_at = st.writes.iter().rev().find_map(|(w, _)| match *w {
            WriteKind::LogSuper {
                transid,
                log_transid,
                at,
                ..
            } if transid == t && log_transid == k => Some(at),
            _ => None,
        });
        let facts = || {
            st.log_facts
                .range((t, 0)..=(t, k))
                .flat_map(|(_, v)| v.iter())
        };
        (names, from_log) = replay_namespace(&names, facts());
        // The log holds one inode item per inode, the last one logged (log_inode_item
        // overwrites it): its i_size is the one replay truncates to.
        let mut sizes: BTreeMap<Ino, u64> = BTreeMap::new();
        for f in facts() {
            if let LogFact::Inode {
                ino, size: Some(s), ..
            } = f
            {
                sizes.insert(*ino, *s);
            }
        }
        for f in facts() {
            replay_file_fact(&mut files, &file_of, &mut logged_extents, f, (st, &sizes));
        }
    }
    Ok(Replayed {
        base,
        names,
        files,
        from_log,
        log_sync_at,
        special,
    })
}

/// Replays what one log fact does to the files (replay_one_buffer@v5.10..v5.16 for the
/// inode item's i_size and xattrs, replay_one_extent, btrfs_log_holes' hole items);
/// `logged_extents` collects the inodes whose extent items were put back so far; `sizes`
/// holds the i_size of each inode's last logged inode item (the one the log keeps).
fn replay_file_fact(
    files: &mut BTreeMap<Ino, FileImage>,
    file_of: &dyn Fn(Ino) -> FileImage,
    logged_extents: &mut BTreeSet<Ino>,
    f: &LogFact,
    (st, sizes): (&FsState, &BTreeMap<Ino, u64>),
) {
    match f {
        LogFact::Inode {
            ino,
            size,
            xattrs,
            drops_logged,
            ..
        } => {
            let fi = files.entry(*ino).or_insert_with(|| file_of(*ino));
            if let Some(size) = size {
                // replay_one_buffer: truncate to the logged i_size before the inode's
                // extent items, which come after its inode item in key order; extent items
                // logged before this item and still in the log are replayed after the
                // truncate, so it does not drop them. The truncate is to the i_size of the
                // inode item the log holds, the last logged (a larger size logged after a
                // shrinking truncate's fsync keeps the committed bytes between: xfstests
                // btrfs/231).
                fi.size = *size;
                if *drops_logged || !logged_extents.contains(ino) {
                    fi.drop_range(sizes.get(ino).copied().unwrap_or(*size), u64::MAX);
                }
            }
            if let Some(x) = xattrs {
                // replay_xattr_deletes: the logged set is the inode's set.
                fi.xattrs = x.iter().cloned().collect();
            }
        }
        LogFact::Extent { ino, extent } => {
            logged_extents.insert(*ino);
            let fi = files.entry(*ino).or_insert_with(|| file_of(*ino));
            if let Some(e) = find_extent(st, *ino, *extent) {
                // replay_one_extent: drop the range, insert the item.
                fi.drop_range(e.offset, e.end());
                if !e.hole {
                    fi.segs.insert(e.offset, e.clone());
                }
            }
        }
        LogFact::Hole { ino, start, end } => {
            let fi = files.entry(*ino).or_insert_with(|| file_of(*ino));
            fi.drop_range(*start, *end);
        }
        LogFact::DirEntries { .. } | LogFact::DelEntry { .. } | LogFact::DelRef { .. } => {}
        LogFact::Special { .. } => {}
    }
}

/// The durable superblock's committed generation and the log it points at (transaction,
/// log sub-transaction), if any. Err: tree or log blocks it points at are not durable.
fn durable_root(
    st: &FsState,
    image: &BTreeMap<u64, DurableWrite>,
) -> Result<(TransId, Option<(TransId, u64)>), String> {
    let durable = |tok: u64| is_durable(st, image, tok);
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
                ..
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
    Ok((base, log))
}

/// S2's rules on a replayed state: no name the log brings back was removed before the log
/// was synced, and every returned fsync keeps its names, entries, extents, data, size and
/// xattrs.
fn check_fsyncs(
    st: &FsState,
    names: &BTreeMap<(Ino, String), Ino>,
    files: &BTreeMap<Ino, FileImage>,
    from_log: &BTreeSet<(Ino, String)>,
    log_sync_at: Option<sim::Nanos>,
    file_of: &dyn Fn(Ino) -> FileImage,
    durable: &dyn Fn(u64) -> bool,
) -> Result<(), String> {
    check_log_names(st, names, from_log, log_sync_at)?;
    let reachable = reachable_set(names);
    for rec in &st.fsyncs {
        if !check_fsync_names(st, names, &reachable, rec)? {
            continue;
        }
        let fi = files
            .get(&rec.ino)
            .cloned()
            .unwrap_or_else(|| file_of(rec.ino));
        check_fsync_data(st, rec, &fi, durable)?;
    }
    Ok(())
}

/// A name the log replay brought in must not be one removed before the log was synced.
fn check_log_names(
    st: &FsState,
    names: &BTreeMap<(Ino, String), Ino>,
    from_log: &BTreeSet<(Ino, String)>,
    log_sync_at: Option<sim::Nanos>,
) -> Result<(), String> {
    let Some(sync_at) = log_sync_at else {
        return Ok(());
    };
    for key in from_log {
        let Some(&ino) = names.get(key) else { continue };
        let versions = st.dentry(key.0, &key.1);
        let removed_before = versions.is_some_and(|v| {
            let mine: Vec<_> = v.iter().filter(|d| d.ino == ino).collect();
            !mine.is_empty()
                && mine
                    .iter()
                    .all(|d| d.removed_at.is_some_and(|r| r <= sync_at))
        });
        if removed_before {
            return Err(format!(
                "the name '{}' in directory {} was removed before the log was synced at t={sync_at}ns, but log replay brings it back",
                key.1, key.0
            ));
        }
    }
    Ok(())
}

/// A returned fsync keeps its directory entries and a reachable name (one it had at its
/// promise, has now, or took in between: `named_since`), and no name removed before it;
/// Ok(true): a regular file still linked, whose data is checked next.
fn check_fsync_names(
    st: &FsState,
    names: &BTreeMap<(Ino, String), Ino>,
    reachable: &BTreeSet<Ino>,
    rec: &FsyncRecord,
) -> Result<bool, String> {
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
        return Ok(false); // unlinked since: nothing to keep
    }
    let named = names.iter().any(|(n, &i)| {
        i == rec.ino
            && reachable.contains(&n.0)
            && (rec.names.contains(n) || now_names.contains(n) || named_since(st, n, rec))
    });
    if !named {
        return Err(format!(
            "fsync of {} returned at t={}ns, but after a crash now the file has no name",
            rec.path, rec.at
        ));
    }
    let inode = &st.inodes[&rec.ino];
    if inode.is_dir {
        return Ok(false);
    }
    if let Some(key) = removed_name_back(st, names, rec) {
        return Err(format!(
            "fsync of {} returned at t={}ns, but after a crash now its name '{}' in directory {}, removed before the fsync, is back",
            rec.path, rec.at, key.1, key.0
        ));
    }
    Ok(true)
}

/// Whether the entry `key` named `rec`'s inode at some time since `rec` took its promise
/// (a version of it that was not removed before then). A name the inode took after the
/// promise and lost again may be what a transaction committed in between holds (a
/// concurrent commit, btrfs_commit_transaction@v5.10..v5.16, captures each rename of the
/// transaction it commits): recovering it keeps the file, under a name it did have. Names
/// removed before the promise do not count (removed_name_back's rule).
fn named_since(st: &FsState, key: &(Ino, String), rec: &FsyncRecord) -> bool {
    st.dentry(key.0, &key.1).is_some_and(|v| {
        v.iter()
            .any(|d| d.ino == rec.ino && d.removed_at.is_none_or(|r| r >= rec.promised_at))
    })
}

/// A returned fsync of a regular file keeps its extents, their data, its size (while
/// unchanged since) and its xattrs in the recovered file `fi`, and no data it had dropped.
fn check_fsync_data(
    st: &FsState,
    rec: &FsyncRecord,
    fi: &FileImage,
    durable: &dyn Fn(u64) -> bool,
) -> Result<(), String> {
    let inode = &st.inodes[&rec.ino];
    for id in &rec.extents {
        let Some(e) = inode.extents.iter().find(|e| e.id == *id) else {
            continue;
        };
        if e.hole {
            continue;
        }
        if !fi.covers(e) {
            return Err(format!(
                "fsync of {} returned at t={}ns, but after a crash now its extent {id} ({} bytes at {}) is not in the tree",
                rec.path, rec.at, e.len, e.offset
            ));
        }
        if !e.prealloc && !durable(e.data_token) {
            return Err(format!(
                "fsync of {} returned at t={}ns, but after a crash now the data of its extent {id} is lost",
                rec.path, rec.at
            ));
        }
    }
    // Data the file no longer had when the fsync took its promise must not come back (a
    // truncate or punch after the promise, before the log sync or commit returned, is not
    // part of it: it may be in the next transaction).
    for s in fi.segs.values() {
        let dropped_before = inode
            .dead_extents
            .iter()
            .any(|d| d.ext.id == s.id && d.removed_at <= rec.promised_at);
        if !dropped_before {
            continue;
        }
        // The same bytes may live on in trimmed pieces of the extent: only bytes the
        // file did not map when the fsync took its promise count. Pieces dropped since (a
        // later hole punch, truncate or overwrite whose fsync has not returned) still
        // mapped them then, and a crash may keep them.
        let gap = dropped_gap(inode, rec, s);
        if let Some((a, b)) = gap {
            return Err(format!(
                "fsync of {} returned at t={}ns, but after a crash now bytes {a}..{b} hold data the file had dropped before it (extent {})",
                rec.path, rec.at, s.id
            ));
        }
    }
    // The size must survive only while it is unchanged since the fsync: equal now is not
    // enough (a file shrunk and grown back may crash with the smaller committed size).
    let size_unchanged = inode.disk_size == rec.size && inode.size_hist.len() == rec.size_changes;
    if size_unchanged && fi.size != rec.size {
        return Err(format!(
            "fsync of {} returned at t={}ns with size {}, but after a crash now the size is {}",
            rec.path, rec.at, rec.size, fi.size
        ));
    }
    for x in &rec.xattrs {
        if inode.xattrs.contains_key(x) && !fi.xattrs.contains(x) {
            return Err(format!(
                "fsync of {} returned at t={}ns, but after a crash now its xattr {x} is gone",
                rec.path, rec.at
            ));
        }
    }
    Ok(())
}

/// The first range of the recovered piece `s` (of an extent version dropped before the
/// fsync `rec` returned) whose bytes the file did not map when the fsync returned.
fn dropped_gap(inode: &Inode, rec: &FsyncRecord, s: &Extent) -> Option<(u64, u64)> {
    let mut then: Vec<&Extent> = inode
        .extents
        .iter()
        .chain(
            inode
                .dead_extents
                .iter()
                .filter(|d| d.removed_at > rec.promised_at)
                .map(|d| &d.ext),
        )
        .filter(|e| !e.hole && same_bytes(e, s))
        .collect();
    then.sort_by_key(|e| e.offset);
    let mut cur = s.offset;
    let mut gap = None;
    for e in then {
        if e.end() <= cur || e.offset >= s.end() {
            continue;
        }
        if e.offset > cur {
            gap = Some((cur, e.offset));
            break;
        }
        cur = e.end();
    }
    gap.or((cur < s.end()).then_some((cur, s.end())))
}

/// A name of the fsynced file `rec` that recovery keeps although it was removed before the
/// fsync took its promise: the fsync of an inode persists its link count and names as of
/// the fsync (btrfs_log_inode copies the inode item and all its refs, and replay's
/// add_inode_ref / unlink_old_inode_refs drop the committed refs the log lacks,
/// tree-log.c@v5.10), so a name removed by then must not survive, whether the committed
/// tree or the log would bring it back (xfstests generic/039, 106, 107, 336). A name
/// whose entry named the inode again after the promise is not covered (a crash may keep
/// either state), nor a directory (its one name is the "has a name" rule's).
fn removed_name_back(
    st: &FsState,
    names: &BTreeMap<(Ino, String), Ino>,
    rec: &FsyncRecord,
) -> Option<(Ino, String)> {
    names
        .iter()
        .filter(|(key, &i)| i == rec.ino && !rec.names.contains(key))
        .map(|(key, _)| key)
        .find(|(dir, name)| {
            st.dentry(*dir, name).is_some_and(|v| {
                let mine: Vec<_> = v.iter().filter(|d| d.ino == rec.ino).collect();
                !mine.is_empty()
                    && mine
                        .iter()
                        .all(|d| d.removed_at.is_some_and(|r| r < rec.promised_at))
            })
        })
        .cloned()
}

/// The names of the committed tree (generation `base`): (directory, name) → inode.
pub(super) fn names_at(st: &FsState, base: TransId) -> BTreeMap<(Ino, String), Ino> {
    let mut names = BTreeMap::new();
    // Into a map: the order of the entries does not matter.
    for ((dir, name), versions) in st.dentries_unordered() {
        if let Some(d) = versions
            .iter()
            .rev()
            .find(|d| d.created <= base && d.removed.is_none_or(|r| r > base))
        {
            names.insert((dir, name.to_string()), d.ino);
        }
    }
    names
}

/// A namespace: (directory, name) → inode.
pub(super) type Names = BTreeMap<(Ino, String), Ino>;

/// The namespace items of a log as replay reads them: what every log sub-transaction up to
/// the replayed one left in the log tree, later copies replacing earlier ones.
#[derive(Default)]
struct LogItems {
    /// Inode items: inode → whether it was logged with no name (link count 0).
    inodes: BTreeMap<Ino, bool>,
    /// INODE_REF items: inode → its logged names (directory, name). A copy of the inode
    /// replaces them (drop_objectid_items / truncate_inode_items before
    /// copy_inode_items_to_log, tree-log.c@v5.10..v5.16); btrfs_del_inode_ref_in_log
    /// removes one.
    refs: BTreeMap<Ino, BTreeSet<(Ino, String)>>,
    /// DIR_ITEM / DIR_INDEX items of the directories logged in full (with the range items
    /// that make the log authoritative for them): directory → name → inode. A later full
    /// log adds its items to the earlier ones: btrfs_log_inode drops a directory's items
    /// only up to BTRFS_DIR_LOG_INDEX_KEY (tree-log.c@v5.15), so only
    /// btrfs_del_dir_entries_in_log removes a dir item from the log.
    dirs: BTreeMap<Ino, BTreeMap<String, Ino>>,
}

impl LogItems {
    /// The log tree after `facts`, in log order.
    fn from_facts<'a>(facts: impl Iterator<Item = &'a LogFact>) -> LogItems {
        let mut items = LogItems::default();
        for f in facts {
            match f {
                LogFact::Inode { ino, names, .. } => {
                    // The top directory has no name here; its item has link count 1 (a
                    // ref to itself, "..").
                    items
                        .inodes
                        .insert(*ino, names.is_empty() && *ino != ROOT_INO);
                    items.refs.insert(*ino, names.iter().cloned().collect());
                }
                LogFact::DirEntries { dir, entries } => {
                    let logged = items.dirs.entry(*dir).or_default();
                    logged.extend(entries.iter().cloned());
                }
                LogFact::DelEntry { dir, name } => {
                    if let Some(logged) = items.dirs.get_mut(dir) {
                        logged.remove(name);
                    }
                }
                LogFact::DelRef { ino, dir, name } => {
                    if let Some(refs) = items.refs.get_mut(ino) {
                        refs.remove(&(*dir, name.clone()));
                    }
                }
                LogFact::Extent { .. } | LogFact::Hole { .. } | LogFact::Special { .. } => {}
            }
        }
        items
    }

    /// Whether replay skips the items of `ino` (replay_one_buffer@v5.10..v5.16: an inode
    /// item with link count 0 sets wc->ignore_cur_inode).
    fn ignored(&self, ino: Ino) -> bool {
        self.inodes.get(&ino).copied().unwrap_or(false)
    }
}

/// Log replay of the namespace on the committed names `base_names`
/// (btrfs_recover_log_trees@v5.10..v5.16): the log tree is walked once per stage,
/// LOG_WALK_REPLAY_INODES, LOG_WALK_REPLAY_DIR_INDEX, LOG_WALK_REPLAY_ALL, each walk in
/// key order (objectid, then item type: inode item, refs, dir items), and
/// replay_one_buffer acts on each stage's item types only. So a directory's logged
/// entries go in before any inode ref, and a ref still in the log (however old) goes in
/// after them. Returns the names and those the log put in.
pub(super) fn replay_namespace<'a>(
    base_names: &BTreeMap<(Ino, String), Ino>,
    facts: impl Iterator<Item = &'a LogFact>,
) -> (Names, BTreeSet<(Ino, String)>) {
    let items = LogItems::from_facts(facts);
    let mut names = base_names.clone();
    // The inodes the committed tree names (insert_one_name finds them there).
    let committed: BTreeSet<Ino> = base_names.values().copied().collect();
    let mut from_log = BTreeSet::new();
    replay_inode_items(&items, &mut names);
    replay_dir_index_items(&items, &committed, &mut names, &mut from_log);
    replay_refs_and_dir_items(&items, &committed, &mut names, &mut from_log);
    (names, from_log)
}

/// LOG_WALK_REPLAY_INODES (replay_one_buffer@v5.10..v5.16): at each inode item, a
/// directory the log holds in full loses every entry the log lacks (replay_dir_deletes →
/// check_item_in_log unlinks it).
fn replay_inode_items(items: &LogItems, names: &mut BTreeMap<(Ino, String), Ino>) {
    for &ino in items.inodes.keys() {
        if items.ignored(ino) {
            continue;
        }
        if let Some(logged) = items.dirs.get(&ino) {
            names.retain(|(d, n), _| *d != ino || logged.contains_key(n));
        }
    }
}

/// LOG_WALK_REPLAY_DIR_INDEX (replay_one_buffer → replay_one_dir_item → replay_one_name,
/// tree-log.c@v5.10..v5.16): each logged entry goes in, over an entry of that name naming
/// another inode, unless the log holds the matching inode ref (backref_in_log: "The dentry
/// will be added later") or its inode exists neither in the log nor in the committed tree
/// (insert_one_name's -ENOENT, ignored).
fn replay_dir_index_items(
    items: &LogItems,
    committed: &BTreeSet<Ino>,
    names: &mut BTreeMap<(Ino, String), Ino>,
    from_log: &mut BTreeSet<(Ino, String)>,
) {
    for (&dir, logged) in &items.dirs {
        if items.ignored(dir) {
            continue;
        }
        for (n, &i) in logged {
            replay_one_name(items, committed, names, from_log, (dir, n.clone()), i);
        }
    }
}

/// replay_one_name for entry `key` naming `ino`; see replay_dir_index_items.
fn replay_one_name(
    items: &LogItems,
    committed: &BTreeSet<Ino>,
    names: &mut BTreeMap<(Ino, String), Ino>,
    from_log: &mut BTreeSet<(Ino, String)>,
    key: (Ino, String),
    ino: Ino,
) {
    let ref_logged = items.refs.get(&ino).is_some_and(|r| r.contains(&key));
    let exists = items.inodes.get(&ino).is_some_and(|nlink0| !nlink0) || committed.contains(&ino);
    if ref_logged || !exists || names.get(&key) == Some(&ino) {
        return;
    }
    names.insert(key.clone(), ino);
    from_log.insert(key);
}

/// LOG_WALK_REPLAY_ALL (replay_one_buffer@v5.10..v5.16), objectid by objectid: an inode's
/// refs (type 12) become its names — add_inode_ref adds each logged name, dropping an
/// entry of that name that names another inode (__add_inode_ref), and drops the names the
/// log lacks (the model drops them in every directory; the kernel's unlink_old_inode_refs
/// does it per logged parent, and btrfs_log_all_parents logs the others) — then a
/// directory's dir items (type 84) go in as in the previous stage.
fn replay_refs_and_dir_items(
    items: &LogItems,
    committed: &BTreeSet<Ino>,
    names: &mut BTreeMap<(Ino, String), Ino>,
    from_log: &mut BTreeSet<(Ino, String)>,
) {
    let objectids: BTreeSet<Ino> = items
        .refs
        .keys()
        .chain(items.dirs.keys())
        .copied()
        .collect();
    for ino in objectids {
        if items.ignored(ino) {
            continue;
        }
        if let Some(refs) = items.refs.get(&ino).filter(|r| !r.is_empty()) {
            names.retain(|_, i| *i != ino);
            for key in refs {
                names.insert(key.clone(), ino);
                from_log.insert(key.clone());
            }
        }
        for (n, &i) in items.dirs.get(&ino).into_iter().flatten() {
            replay_one_name(items, committed, names, from_log, (ino, n.clone()), i);
        }
    }
}

/// Inodes reachable from the top directory through `names`.
pub(super) fn reachable_set(names: &BTreeMap<(Ino, String), Ino>) -> BTreeSet<Ino> {
    let mut children: BTreeMap<Ino, Vec<Ino>> = BTreeMap::new();
    for ((dir, _), ino) in names {
        children.entry(*dir).or_default().push(*ino);
    }
    let mut seen = BTreeSet::from([ROOT_INO]);
    let mut stack = vec![ROOT_INO];
    while let Some(d) = stack.pop() {
        for &c in children.get(&d).map(Vec::as_slice).unwrap_or(&[]) {
            if seen.insert(c) {
                stack.push(c);
            }
        }
    }
    seen
}

/// A regular file as recovery sees it: data extents by offset, size, xattr names.
#[derive(Clone, Debug)]
struct FileImage {
    segs: BTreeMap<u64, Extent>,
    size: u64,
    xattrs: BTreeSet<String>,
}

impl FileImage {
    /// The file as of committed generation `base`: extent versions whose items were
    /// written by then and not dropped by then, the size of the item then, its xattrs.
    fn at_base(st: &FsState, ino: Ino, base: TransId) -> FileImage {
        let Some(i) = st.inodes.get(&ino) else {
            return FileImage {
                segs: BTreeMap::new(),
                size: 0,
                xattrs: BTreeSet::new(),
            };
        };
        let live = i.extents.iter().filter(|e| e.item_trans <= base);
        let dead = i
            .dead_extents
            .iter()
            .filter(|d| d.ext.item_trans <= base && d.removed > base)
            .map(|d| &d.ext);
        let segs = live
            .chain(dead)
            .filter(|e| !e.hole)
            .map(|e| (e.offset, e.clone()))
            .collect();
        let size = i
            .size_hist
            .iter()
            .rev()
            .find(|(t, _)| *t <= base)
            .map_or(0, |(_, s)| *s);
        FileImage {
            segs,
            size,
            xattrs: i
                .xattrs
                .iter()
                .filter(|(_, t)| **t <= base)
                .map(|(n, _)| n.clone())
                .chain(
                    st.removed_xattrs
                        .iter()
                        .filter(|r| r.ino == ino && r.set <= base && r.removed > base)
                        .map(|r| r.name.clone()),
                )
                .collect(),
        }
    }

    /// Whether the image maps all of `e`'s range to `e`'s bytes.
    fn covers(&self, e: &Extent) -> bool {
        let mut cur = e.offset;
        for s in self.segs.range(..e.end()).map(|(_, s)| s) {
            if s.end() <= cur {
                continue;
            }
            if s.offset > cur || !same_bytes(s, e) {
                return false;
            }
            cur = s.end();
            if cur >= e.end() {
                return true;
            }
        }
        cur >= e.end()
    }

    /// Drops [start, end), trimming extents that cross an edge.
    fn drop_range(&mut self, start: u64, end: u64) {
        let hit: Vec<u64> = self
            .segs
            .values()
            .filter(|e| e.offset < end && e.end() > start)
            .map(|e| e.offset)
            .collect();
        for off in hit {
            let e = self.segs.remove(&off).expect("present");
            if e.offset < start {
                let mut left = e.clone();
                left.len = start - e.offset;
                self.segs.insert(left.offset, left);
            }
            if e.end() > end {
                let mut right = e.clone();
                right.data_offset += end - e.offset;
                right.len = e.end() - end;
                right.offset = end;
                self.segs.insert(end, right);
            }
        }
    }
}

/// Whether two extent versions map file offsets to the same disk bytes (pieces of one
/// extent trimmed or split keep the disk location of each byte).
fn same_bytes(a: &Extent, b: &Extent) -> bool {
    a.data_token == b.data_token
        && a.data_offset.wrapping_sub(a.offset) == b.data_offset.wrapping_sub(b.offset)
}

/// An extent version of `ino` by id, live or dropped.
fn find_extent(st: &FsState, ino: Ino, id: u64) -> Option<&Extent> {
    let i = st.inodes.get(&ino)?;
    i.extents
        .iter()
        .find(|e| e.id == id)
        .or_else(|| i.dead_extents.iter().map(|d| &d.ext).find(|e| e.id == id))
}

/// What a mount after a power failure starts from (remount.rs): the same recovery as
/// `check_recovery` and `recovered_state` (the durable superblock's committed tree, then
/// log replay), per inode.
pub(super) struct MountImage {
    /// The durable superblock's committed generation.
    pub base: TransId,
    /// Whether a log was replayed (btrfs_recover_log_trees then commits).
    pub replayed_log: bool,
    /// The recovered namespace: (directory, name) → inode.
    pub names: Names,
    /// Per recovered inode (the top directory too): its data and prealloc extents by
    /// offset, i_size, xattr names, whether the replayed log held its inode item, and its
    /// special kind and mode.
    pub files: BTreeMap<Ino, MountedFile>,
}

/// One inode of a `MountImage`.
pub(super) struct MountedFile {
    /// Data and prealloc extents (pieces of one version keep its id), by offset.
    pub extents: Vec<Extent>,
    /// i_size.
    pub size: u64,
    /// xattr names.
    pub xattrs: BTreeSet<String>,
    /// The replayed log held its inode item (replay wrote it in the mount's transaction).
    pub from_log: bool,
    /// A symlink (with its recovered target), fifo or device node (None: a regular file
    /// or directory).
    pub kind: Option<super::special::SpecialKind>,
    /// The recovered permission bits of a chmod'ed inode (None: the creation mode).
    pub mode: Option<u32>,
}

/// The recovery of `image` as a mount reads it (open_ctree → btrfs_recover_log_trees,
/// disk-io.c / tree-log.c@v5.10). Err: recovery fails (the image is corrupt).
pub(super) fn mount_image(
    st: &FsState,
    image: &BTreeMap<u64, DurableWrite>,
) -> Result<MountImage, String> {
    let r = replay(st, image)?;
    let log = durable_root(st, image)?.1;
    let logged: BTreeSet<Ino> = log
        .map(|(t, k)| {
            st.log_facts
                .range((t, 0)..=(t, k))
                .flat_map(|(_, v)| v.iter())
                .filter_map(|f| match f {
                    LogFact::Inode { ino, .. } => Some(*ino),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let inos: BTreeSet<Ino> = r
        .names
        .values()
        .copied()
        .chain(std::iter::once(ROOT_INO))
        .collect();
    let files = inos
        .into_iter()
        .map(|ino| {
            let fi = r
                .files
                .get(&ino)
                .cloned()
                .unwrap_or_else(|| FileImage::at_base(st, ino, r.base));
            let (kind, mode) = r.special.mounted(st, ino);
            let f = MountedFile {
                extents: fi.segs.into_values().collect(),
                size: fi.size,
                xattrs: fi.xattrs,
                from_log: logged.contains(&ino),
                kind,
                mode,
            };
            (ino, f)
        })
        .collect();
    Ok(MountImage {
        base: r.base,
        replayed_log: log.is_some(),
        names: r.names,
        files,
    })
}

impl Btrfs {
    /// What recovery keeps after a power failure now (`recovered_state` of the durable
    /// image). Err: recovery fails, or the run keeps no history (long workload runs).
    pub fn recovered(&self) -> Result<crate::vfs::Recovered, String> {
        if !self.inner.st.borrow().keep_history {
            return Err(
                "the recovered state needs the crash history, which this run does not keep".into(),
            );
        }
        let st = self.inner.st.borrow();
        self.inner.dev.with_durable_image(|image| match image {
            Some(image) => recovered_state(&st, image),
            None => recovered_state(&st, &BTreeMap::new()),
        })
    }

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

/// The recovered state of `image`: the same recovery `check_recovery` performs (the
/// durable superblock's committed tree, then log replay), as the neutral namespace.
/// Err: recovery fails (the image is corrupt). A directory's link count is its one name
/// (btrfs keeps nlink 1 for directories); xattr values and modes are not modelled.
pub fn recovered_state(
    st: &FsState,
    image: &BTreeMap<u64, DurableWrite>,
) -> Result<crate::vfs::Recovered, String> {
    use crate::vfs::recovered::{
        with_holes, ExtentKind, InodeKind, Recovered, RecoveredExtent, RecoveredInode,
    };
    let r = replay(st, image)?;
    let inode = |ino: Ino, nlink: u64| -> RecoveredInode {
        let is_dir = st.inodes.get(&ino).is_some_and(|i| i.is_dir);
        let fi = r
            .files
            .get(&ino)
            .cloned()
            .unwrap_or_else(|| FileImage::at_base(st, ino, r.base));
        let extents: Vec<RecoveredExtent> = fi
            .segs
            .values()
            .map(|e| RecoveredExtent {
                offset: e.offset,
                len: e.len,
                kind: if e.prealloc {
                    ExtentKind::Prealloc
                } else {
                    ExtentKind::Data
                },
                // A preallocated extent has no data write: nothing of it can be lost.
                write: (!e.prealloc).then_some(e.data_token),
                durable: e.prealloc || is_durable(st, image, e.data_token),
                disk: if e.prealloc { 0 } else { e.data_offset },
            })
            .collect();
        let (special, target, special_size, mode) = r.special.describe(st, ino);
        RecoveredInode {
            kind: special.unwrap_or(if is_dir {
                InodeKind::Dir
            } else {
                InodeKind::File
            }),
            ino,
            nlink: if is_dir { 1 } else { nlink },
            size: (!is_dir).then_some(special_size.unwrap_or(fi.size)),
            extents: if is_dir {
                Vec::new()
            } else {
                with_holes(extents, fi.size)
            },
            xattrs: fi.xattrs.iter().map(|x| (x.clone(), None)).collect(),
            mode,
            target,
        }
    };
    Ok(Recovered::from_names(ROOT_INO, &r.names, inode))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's inode item with its refs, as btrfs_log_inode copies them.
    fn inode(ino: Ino, names: &[(Ino, &str)], is_dir: bool) -> LogFact {
        LogFact::Inode {
            ino,
            names: names.iter().map(|&(d, n)| (d, n.to_string())).collect(),
            is_dir,
            size: None,
            xattrs: None,
            drops_logged: false,
        }
    }

    /// A directory logged in full with `entries`.
    fn dir_entries(dir: Ino, entries: &[(&str, Ino)]) -> LogFact {
        LogFact::DirEntries {
            dir,
            entries: entries.iter().map(|&(n, i)| (n.to_string(), i)).collect(),
        }
    }

    const D: Ino = 257;
    const FOO: Ino = 258;

    /// /d committed with /d/foo in it.
    fn committed() -> BTreeMap<(Ino, String), Ino> {
        BTreeMap::from([((ROOT_INO, "d".into()), D), ((D, "foo".into()), FOO)])
    }

    #[test]
    fn a_ref_left_in_the_log_goes_in_after_the_directory_entries() {
        // foo logged with its ref, then d logged in full without foo (an unlink that left
        // foo's ref in the log). In log order d's entries would come last and drop foo;
        // the kernel replays inode refs in LOG_WALK_REPLAY_ALL, after the dir index items
        // (LOG_WALK_REPLAY_DIR_INDEX), so the stale ref brings foo back.
        let facts = [
            inode(FOO, &[(D, "foo")], false),
            inode(D, &[(ROOT_INO, "d")], true),
            dir_entries(D, &[]),
        ];
        let (names, from_log) = replay_namespace(&committed(), facts.iter());
        assert_eq!(names.get(&(D, "foo".into())), Some(&FOO));
        assert!(from_log.contains(&(D, "foo".into())));
    }

    #[test]
    fn a_ref_deleted_from_the_log_leaves_the_directory_log_in_charge() {
        // btrfs_del_inode_ref_in_log removed foo's ref: d's full log drops the committed
        // name in LOG_WALK_REPLAY_INODES (replay_dir_deletes) and nothing adds it back.
        let facts = [
            inode(FOO, &[(D, "foo")], false),
            LogFact::DelRef {
                ino: FOO,
                dir: D,
                name: "foo".into(),
            },
            inode(D, &[(ROOT_INO, "d")], true),
            dir_entries(D, &[]),
        ];
        let (names, from_log) = replay_namespace(&committed(), facts.iter());
        assert_eq!(names.get(&(D, "foo".into())), None);
        assert!(!from_log.contains(&(D, "foo".into())));
    }

    #[test]
    fn a_later_full_log_of_a_directory_keeps_the_earlier_dir_items() {
        // btrfs_log_inode drops a directory's log items only up to BTRFS_DIR_LOG_INDEX_KEY:
        // a dir item logged earlier stays until btrfs_del_dir_entries_in_log removes it.
        // Inode 259 is committed as /bar and not logged, so only d's dir item names it.
        let mut base = committed();
        base.insert((ROOT_INO, "bar".into()), 259);
        let facts = [
            inode(D, &[(ROOT_INO, "d")], true),
            dir_entries(D, &[("foo", FOO), ("bar", 259)]),
            inode(D, &[(ROOT_INO, "d")], true),
            dir_entries(D, &[("foo", FOO)]),
        ];
        let (names, from_log) = replay_namespace(&base, facts.iter());
        assert_eq!(names.get(&(D, "bar".into())), Some(&259));
        assert!(from_log.contains(&(D, "bar".into())));
        let deleted = [
            &facts[..],
            &[LogFact::DelEntry {
                dir: D,
                name: "bar".into(),
            }],
        ]
        .concat();
        let (names, _) = replay_namespace(&base, deleted.iter());
        assert_eq!(names.get(&(D, "bar".into())), None);
        assert_eq!(names.get(&(ROOT_INO, "bar".into())), Some(&259));
    }
}
