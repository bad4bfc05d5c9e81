//! CPU costs and sizes of the modelled btrfs steps, with where each default comes from.
//!
//! Rule: derived from first principles (sizes of on-disk items, memory-copy and b-tree
//! costs) or from operations the fixes do not touch — never fitted to the figures the fixes
//! are judged by. Values marked (guess) are documented starting points.

use sim::{Nanos, US};

/// The page size of x86-64 (PAGE_SIZE): the page cache's unit.
const PAGE_SIZE: u64 = 4096;

/// Costs and sizes used by the btrfs model.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// Metadata block (nodesize) in bytes: mkfs.btrfs default 16 KiB.
    pub nodesize: u64,
    /// Data block (sectorsize): 4 KiB.
    pub sectorsize: u64,
    /// Checksum bytes per data block: crc32c, 4 bytes (the default csum type).
    pub csum_per_block: u64,
    /// CPU of a b-tree search + insert of one item (guess: 2 us, a few cache-missing node
    /// visits at ~3 levels plus the item copy).
    pub btree_item: Nanos,
    /// Logging an inode item into the log tree: copy + insert (guess: 2 items' work).
    pub log_inode_item: Nanos,
    /// Logging one file extent item (one b-tree insert).
    pub log_extent_item: Nanos,
    /// Copying checksum items, per checksum byte (guess: 1 ns/byte, a lookup in the csum tree
    /// plus copy dominate).
    pub log_csum_per_byte: Nanos,
    /// Log bytes written per logged inode item (inode item 160 B + ref ~ 40 B; rounded up).
    pub log_bytes_inode: u64,
    /// Log bytes per file extent item (53 B item + 25 B header).
    pub log_bytes_extent: u64,
    /// Leaf bytes one small file's items take in the fs tree: inode item 160 B + inode ref
    /// (10 B + name ~12 B) + one file extent item 53 B, each with a 25 B item header
    /// (ctree.h) ≈ 310 B, rounded to 320.
    pub item_bytes_per_inode: u64,
    /// Leaf bytes one directory entry takes: DIR_ITEM and DIR_INDEX, each 25 B header +
    /// 30 B btrfs_dir_item + name (~12 B) ≈ 134 B, rounded to 136.
    pub item_bytes_per_dentry: u64,
    /// Extent-tree leaf bytes per data extent: 25 B header + extent item with an inline
    /// data ref (24 + 29 B) = 78 B.
    pub item_bytes_per_extent: u64,
    /// Fixed CPU of a transaction commit outside the modelled steps (guess: 100 us; it was
    /// first meant to cover delayed refs, fs roots and switching commit roots, which are now
    /// priced: `commit_cpu_per_block` and transaction.rs's `commit_roots_cpu`; what is left
    /// in it: update_super_roots, btrfs_write_dirty_block_groups, qgroups and the rest).
    pub commit_cpu: Nanos,
    /// Commit CPU per delayed ref it runs — each COWed metadata block and each data extent
    /// allocated or freed in the transaction (btrfs_run_delayed_refs, one extent-tree update
    /// each: `btree_item`'s 2 us).
    pub commit_cpu_per_block: Nanos,
    /// CPU per pinned extent at unpin (btrfs_finish_extent_commit; "milliseconds with
    /// thousands of pinned extents" => ~1 us each).
    pub unpin_per_extent: Nanos,
    /// Pinned extents a transaction leaves per dirtied metadata block (its old COW copy: 1).
    pub pinned_per_block: u64,
    /// CPU of a buffered write per 4 KiB page (page-cache copy, ~1 GB/s => 4 us).
    pub write_per_page: Nanos,
    /// CPU of a namespace operation's own work (lookup, item inserts: 3 items).
    pub namespace_op: Nanos,
    /// CPU to start and finish a log transaction (root log_mutex bookkeeping) (guess).
    pub log_start: Nanos,
    /// One jiffy, btrfs_sync_log's batching sleep on non-ssd mounts: 4 ms at CONFIG_HZ=250,
    /// the value of Debian's and Ubuntu's generic kernel configs (Fedora uses 1000: 1 ms).
    pub jiffy: Nanos,
    /// CPU of entering and leaving the kernel for one system call, charged to every
    /// operation (guess: 250 ns, lmbench's null-syscall latency on a 2020-era x86 core with
    /// Debian's default speculative-execution mitigations on).
    pub syscall: Nanos,
    /// Device bytes for data chunks (guess: a 1 TiB device; seed 000 names an NVMe device,
    /// not its size).
    pub fs_size: u64,
    /// Data chunk size: 1 GiB (volumes.c:init_alloc_chunk_ctl_policy_regular@v5.10,
    /// `max_stripe_size = SZ_1G` for data).
    pub data_chunk_size: u64,
    /// The data block group mkfs makes: 8 MiB (mkfs.btrfs's summary on a fresh device:
    /// "Data single 8.00MiB").
    pub mkfs_data_chunk: u64,
    /// CPU per delayed ref a space flush runs (one extent-tree update: `btree_item`'s 2 us).
    pub delayed_ref: Nanos,
    /// CPU of one pass of a space flusher's loop: summing the percpu delalloc/ordered
    /// counters and the block reserves before deciding (guess: 2 us).
    pub preempt_loop: Nanos,
    /// Metadata chunk size: 1 GiB on a device over 50 GiB, else 256 MiB
    /// (volumes.c:init_alloc_chunk_ctl_policy_regular@v5.12); DUP takes twice on the device.
    pub meta_chunk_size: u64,
    /// The metadata block group mkfs makes: 256 MiB DUP (mkfs.btrfs's summary on a fresh
    /// device: "Metadata DUP 256.00MiB").
    pub mkfs_meta_chunk: u64,
    /// Tree blocks a fresh filesystem uses (guess: 16 blocks of the root, extent, chunk,
    /// device, fs, csum, uuid, free-space trees).
    pub mkfs_meta_used: u64,
    /// The global block reserve's cap: 512 MiB (block-rsv.c:btrfs_update_global_block_rsv
    /// @v5.12).
    pub global_rsv_max: u64,
    /// Picoseconds per b-tree key comparison in a binary search (btrfs_comp_keys on a
    /// btrfs_disk_key: ~10 instructions, ~3 cycles; the probe's cache line is an L2 hit,
    /// 14 cycles on Skylake-SP (Intel 64 and IA-32 Optimization Reference Manual, 2019,
    /// §2.2, Skylake Server L2 latency); half the probes' branches mispredict, ~16.5 cycles
    /// each (Agner Fog, "The microarchitecture of Intel, AMD and VIA CPUs", Skylake: 15-20
    /// cycles): 3 + 14 + 8 ≈ 25 cycles at 2.5 GHz (Xeon Gold 6248 base clock, 2019-20 server
    /// part) = 10 ns.
    pub key_compare_ps: u64,
    /// Picoseconds per tree level visited (read_block_for_search → find_extent_buffer's
    /// radix-tree walk, ~3 dependent loads from L3 at ~60 cycles each on Skylake-SP
    /// (Optimization Reference Manual §2.2); the extent buffer's refcount get and put and
    /// the tree lock's lock and unlock, 4 atomic read-modify-writes at ~18 cycles (Agner
    /// Fog, instruction tables, Skylake-X: LOCK XADD/CMPXCHG): ~250 cycles at 2.5 GHz
    /// = 100 ns).
    pub tree_level_ps: u64,
    /// Picoseconds per byte moved inside an extent buffer (memmove_extent_buffer → the
    /// kernel's memmove, arch/x86/lib/memmove_64.S: 8-byte moves, one store per cycle on
    /// Skylake (one store port: Optimization Reference Manual §2.2): 8 B/cycle at 2.5 GHz
    /// = 50 ps/B). Also prices a COW's copy of the whole block (copy_extent_buffer_full).
    pub leaf_move_ps_per_byte: u64,
    /// Picoseconds per item whose data offset is rewritten in a leaf (ctree.c@v5.10: the
    /// loops of setup_items_for_insert, btrfs_del_items, btrfs_extend_item,
    /// __push_leaf_left/right and copy_for_split each call btrfs_token_item_offset and
    /// btrfs_set_token_item_offset per item, struct-funcs.c@v5.10: two out-of-line calls
    /// whose fast path checks the token's page and loads or stores an unaligned le32, ~12
    /// instructions each, with the loop's btrfs_item_nr arithmetic ~30 instructions, ~25
    /// cycles at 2.5 GHz (estimate) = 10 ns). Cross-check, not a source: sampling the
    /// kernel 6.18 on the development machine (AMD EPYC VM) creating 200,000 files in one
    /// btrfs directory put 11 % of a 19.6 us create in btrfs_get_32 and btrfs_set_32.
    pub item_offset_ps: u64,
    /// Picoseconds of one transaction handle's life outside the trees, charged when it
    /// joins: start_transaction@v5.10 (kmem_cache_zalloc of the handle, sb_start_intwrite,
    /// btrfs_block_rsv_add → __reserve_bytes under space_info->lock and block_rsv_add_bytes
    /// under the rsv's lock, join_transaction under trans_lock with the transaction's
    /// use_count, num_writers and num_extwriters increments) and __btrfs_end_transaction
    /// (btrfs_trans_release_metadata → btrfs_block_rsv_release under the rsv's, the
    /// delayed-refs rsv's and space_info's locks, sb_end_intwrite, the num_writers decrement
    /// and cond_wake_up's barrier, btrfs_put_transaction, kmem_cache_free): 6 spinlocks at
    /// ~20 cycles, 6 atomics at ~18 (Agner Fog, Skylake-X), the slab allocation and free
    /// ~190, ~400 other instructions at ~1.5 per cycle ~270: ~700 cycles at 2.5 GHz
    /// (estimate) = 280 ns. Cross-check, not a source: start_transaction and
    /// __btrfs_end_transaction took ~5 % of a 19.6 us create when sampling kernel 6.18 on
    /// the development machine (~1 us).
    pub trans_handle_ps: u64,
    /// Picoseconds of allocating one tree block and making it dirty, beside any copy:
    /// btrfs_alloc_tree_block@v5.10 (extent-tree.c: btrfs_use_block_rsv under the rsv's
    /// lock, ~100 cycles; btrfs_reserve_extent → find_free_extent's clustered allocation
    /// under groups_sem, the cluster's refill_lock and lock, an rb-tree walk of the free
    /// space entries and btrfs_add_reserved_bytes under space_info's and the group's locks,
    /// ~1,500; btrfs_init_new_buffer → alloc_extent_buffer: the extent_buffer's slab
    /// allocation, four pages each found or created in the btree inode's page cache
    /// (find_or_create_page: a page allocation, the xarray insert, memcg charge and LRU add,
    /// ~600 each) and the buffer_radix insert under buffer_lock, ~2,900; the new buffer's
    /// tree lock, header and set_extent_dirty into the transaction's dirty_pages tree (an
    /// extent_state allocation and rb insert), ~500; btrfs_add_delayed_tree_ref: three slab
    /// allocations, two rb-tree inserts under delayed_refs->lock, the delayed refs rsv
    /// update, ~700) and btrfs_mark_buffer_dirty → set_extent_buffer_dirty@v5.10 (four pages
    /// set dirty: the xarray's dirty mark, the dirty page and memcg counters, ~250 each,
    /// ~1,000): ~6,700 cycles at 2.5 GHz (estimate from reading the code, made after the
    /// cross-check below was measured) = 2.68 us. Charged per block a COW allocates and per
    /// leaf a split allocates; a log tree's block makes no delayed ref (over-counted here by
    /// ~280 ns). Cross-check, not a source: sampling kernel 6.18 on the development machine
    /// (AMD EPYC VM) replacing an xattr in 2,570 leaves not yet COWed in the transaction
    /// (benches/kernel/cowcost.c): a COW took 10.3 us, 5.8 times its 16 KiB copy
    /// (copy_extent_buffer_full, 1.8 us there); here a COW is this, `free_tree_block_ps` and
    /// the copy at `leaf_move_ps_per_byte`: 3.8 us, 4.6 times the copy.
    pub alloc_tree_block_ps: u64,
    /// Picoseconds of freeing the COWed block's old copy from an earlier transaction:
    /// btrfs_free_tree_block@v5.10 (extent-tree.c: btrfs_add_delayed_tree_ref with
    /// BTRFS_DROP_DELAYED_REF, ~700 cycles as in `alloc_tree_block_ps`, and its checks,
    /// ~100): ~800 cycles at 2.5 GHz (estimate) = 320 ns.
    pub free_tree_block_ps: u64,
    /// Picoseconds of a new inode's work outside the trees and the transaction handle
    /// (btrfs_new_inode@v5.10 and its callers): new_inode → btrfs_alloc_inode (the
    /// btrfs_inode's slab allocation and the initialisation of its ~40 fields, two
    /// extent_io trees and an extent map tree, ~350 cycles), inode_init_always (~250),
    /// inode_sb_list_add under s_inode_list_lock (~40); btrfs_find_free_objectid under
    /// root->objectid_mutex (~60); inode_tree_add's rb-tree descent over the root's cached
    /// inodes under root->inode_lock (~20 levels at ~40 cycles, an L2/L3 hit each: ~800);
    /// insert_inode_locked4's hash chain under inode_hash_lock (~150); btrfs_init_inode_
    /// security (the parent's cached ACL, no LSM: ~150); d_instantiate_new and
    /// unlock_new_inode (~150); btrfs_get_or_create_delayed_node (a slab allocation, the
    /// delayed_nodes_tree radix insert under root->inode_lock, ~500) and its release (~100);
    /// fsnotify_create with no watcher (~30): ~2,600 cycles at 2.5 GHz (estimate from reading
    /// the code) = 1.04 us. Cross-check, not a source: sampling kernel 6.18 on the
    /// development machine creating 100,000 files put new_inode, insert_inode_locked4,
    /// the delayed node and d_instantiate_new at ~12 % of a ~17 us create.
    pub inode_alloc_ps: u64,
    /// Picoseconds of the final iput's work outside the trees and the transaction handles
    /// (evict and btrfs_evict_inode@v5.10): inode_sb_list_del and the writeback list under
    /// their spinlocks (~100 cycles), truncate_inode_pages_final of an empty mapping (~50),
    /// remove_inode_hash (~60), the temporary block rsv's allocation and free (~150),
    /// btrfs_btree_balance_dirty's check (~100), btrfs_remove_delayed_node (the radix
    /// delete under root->inode_lock and the slab free, ~400), inode_tree_del's rb erase
    /// (~200), btrfs_drop_extent_cache and clear_inode (~150), destroy_inode →
    /// btrfs_destroy_inode's checks and the RCU-deferred slab free (~400), d_delete's
    /// dentry_unlink_inode (~150): ~1,750 cycles at 2.5 GHz (estimate) = 700 ns. The three
    /// transaction handles btrfs_evict_inode takes (btrfs_commit_inode_delayed_inode's
    /// join, evict_refill_and_join for the truncation and for btrfs_orphan_del) cost
    /// `trans_handle_ps` each.
    pub inode_evict_ps: u64,
    /// Picoseconds of one uncontended spinlock acquire + release with a few loads held
    /// (queued_spin_lock's fast path is one LOCK CMPXCHG, ~18 cycles on Skylake-X (Agner
    /// Fog, instruction tables); the release is a plain store; inode_get_bytes's
    /// i_blocks << 9 + i_bytes, ~2 cycles): ~20 cycles at 2.5 GHz = 8 ns. Prices i_lock.
    pub spinlock_ps: u64,
    /// Picoseconds per dir index item btrfs_real_readdir@v5.10 (inode.c) copies out of a
    /// leaf it holds read-locked: btrfs_item_key_to_cpu and the btrfs_dir_item's name length,
    /// type and location (two L2 loads at 14 cycles, Skylake-SP: Optimization Reference
    /// Manual §2.2), and the struct dir_entry's four put_unaligned stores into the private
    /// buffer (~4 cycles; the name's read_extent_buffer is priced per byte at
    /// `leaf_move_ps_per_byte`): ~32 cycles at 2.5 GHz (estimate) = 13 ns. Also prices each
    /// pending insertion btrfs_readdir_delayed_dir_index emits from the delayed node.
    pub readdir_item_ps: u64,
    /// CPU a task pays when it blocked (a lock, a wait queue, an I/O completion, a
    /// transaction wait) and is woken: the scheduler's switch out and back in (charged at its
    /// next CPU burst; workloads only, `sim::Handle::set_switch_cost`). A thread ping-pong
    /// over two pipes measured 2,140 ns per round trip, 1,070 ns per switch (Linux 6.6, Intel
    /// Core i7 11th gen, a 2020 part; https://ddumbying.vercel.app/experiments/ctx-switch-overhead):
    /// each switch is one block and one wake-up plus a pipe read and a write, two system
    /// calls at `syscall`'s 250 ns, so 1,070 − 500 = 570 ns per block and wake-up. Split
    /// evenly between the woken task (this) and its waker (`wakeup`): the split is a guess,
    /// the sum the measurement. Not scaled to the 2.5 GHz server clock of the other unit
    /// costs (the client part's clock during the measurement is not given).
    pub context_switch: Nanos,
    /// CPU the waker pays per task it wakes from a block (try_to_wake_up): half of the 570 ns
    /// measured per block and wake-up (see `context_switch`; the split is a guess).
    pub wakeup: Nanos,
    /// Picoseconds per byte checksummed with crc32c (the default csum type): metadata blocks
    /// as they are written (csum_tree_block from btree_csum_one_bio, inline in the
    /// submitter since crc32c-intel sets BTRFS_FS_CSUM_IMPL_FAST: the committer at commit,
    /// the fsync at log sync) and data at writeback (btrfs_csum_one_bio: the flusher or the
    /// fsync; direct writes: the writer). The kernel's crc32c-pcl-intel-asm_64.S (SSE4.2
    /// crc32 on three streams, recombined with PCLMULQDQ) took 463 cycles per 4 KiB block
    /// (David Sterba's benchmark in btrfs-progs' commit copying it from Linux 6.5-rc7,
    /// crypto/: "CRC32C-PCL: cycles/i 463", block size 4096): 8.85 B/cycle, at 2.5 GHz
    /// (Xeon Gold 6248 base clock, as `key_compare_ps`) 22 GB/s = 45 ps/B.
    pub crc32c_ps_per_byte: u64,
    /// Picoseconds per 4 KiB page written back from the page cache, data or a metadata
    /// block's (extent_io.c@v5.10 and mm/page-writeback.c@v5.10): tag_pages_for_writeback's
    /// TOWRITE mark (~40 cycles) and pagevec_lookup_range_tag's xarray walk with the page
    /// reference (~60); btree_write_cache_pages' private_lock and buffer check (~35);
    /// clear_page_dirty_for_io (TestClearPageDirty, one atomic at ~18 cycles on Skylake-X
    /// (Agner Fog, instruction tables), and three dirty-page counters, ~100);
    /// set_page_writeback → __test_set_page_writeback (the mapping's xa_lock, the
    /// WRITEBACK mark set and DIRTY and TOWRITE cleared, the writeback counters, ~200);
    /// submit_extent_page's bio_add_page (~80) and unlock_page (~30); on completion
    /// end_page_writeback → test_clear_page_writeback (xa_lock again, the mark cleared,
    /// the counters and the writeout proportion, ~250), the end_io handler's own per-page
    /// step (a metadata page's io_pages decrement, one atomic, ~20; a data page's ordered
    /// extent accounting costs more and is not counted), wake_up_page and the page's put
    /// (~50); filemap_fdatawait_range's tagged lookup and wait_on_page_writeback (~80):
    /// ~945 cycles at 2.5 GHz (estimate from reading the code) = 378 ns. Charged to
    /// the task that submits the pages (the fsync, the committer, the flusher), also for
    /// the completion's share, which the kernel runs in the I/O's interrupt.
    pub page_writeback_ps: u64,
    /// Picoseconds per metadata block written beside its pages' `page_writeback_ps`
    /// (extent_io.c@v5.10): lock_extent_buffer_for_io (btrfs_try_tree_write_lock, the
    /// refs_lock, DIRTY cleared and WRITEBACK set (two atomics), the WRITTEN header flag,
    /// the dirty_metadata_bytes percpu counter, the tree unlock and trylock_page of each
    /// of the four pages, ~300 cycles), the buffer's reference taken and dropped (~60),
    /// write_one_eb's memzero_extent_buffer of the space between the item headers and the
    /// data (about half a 16 KiB leaf, rep stosb at ~32 B/cycle (Intel Optimization
    /// Reference Manual, 2019, §3.7.6, fast strings), ~256) and end_extent_buffer_writeback
    /// (~60): ~680 cycles at 2.5 GHz (estimate) = 272 ns.
    pub eb_writeback_ps: u64,
    /// Extent buffer tree locks modelled (1) or not (0): btrfs_search_slot's read and
    /// write locks on the blocks of each change's path (locking.rs). A model switch for
    /// ablation, not a kernel parameter.
    pub tree_locks: u64,
    /// Delayed items modelled (1) or not (0): dir index items and inode item updates
    /// batched per inode and written by workers, fsync and commit (delayed_inode.rs). A
    /// model switch for ablation, not a kernel parameter.
    pub delayed_items: u64,
    /// Delayed data refs modelled (1) or not (0): the extent tree's data extent items and
    /// a freed extent's csums changed by the commit (delayed_ref.rs) instead of inside the
    /// operation. A model switch for ablation, not a kernel parameter.
    pub delayed_refs: u64,
    /// The global block reserve resized from the extent, csum and root trees at each commit
    /// and new block group (1) or kept at its mount size (0). A model switch for ablation,
    /// not a kernel parameter.
    pub global_rsv_resize: u64,
    /// Log tree blocks COWed and written as the kernel does (1) or the log's size taken
    /// from the bytes logged (0): a log block written by a log sync is COWed when changed
    /// again (ctree.c:should_cow_block@v5.10, BTRFS_HEADER_FLAG_WRITTEN), and
    /// btrfs_sync_log writes the blocks dirtied since the last sync (tree-log.c@v5.10,
    /// btrfs_write_marked_extents of `dirty_log_pages`). A model switch for ablation, not a
    /// kernel parameter.
    pub log_cow: u64,
    /// Bytes of file data an aged filesystem already holds when it is mounted (0: freshly
    /// made): data chunks allocated and full, their checksums in the csum tree. Set by
    /// `for_device` from a workload's `fill`; not a kernel constant.
    pub aged_data: u64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            nodesize: 16 << 10,
            sectorsize: 4 << 10,
            csum_per_block: 4,
            btree_item: 2 * US,
            log_inode_item: 4 * US,
            log_extent_item: 2 * US,
            log_csum_per_byte: 1,
            log_bytes_inode: 200,
            log_bytes_extent: 78,
            item_bytes_per_inode: 320,
            item_bytes_per_dentry: 136,
            item_bytes_per_extent: 78,
            commit_cpu: 100 * US,
            commit_cpu_per_block: 2 * US,
            unpin_per_extent: US,
            pinned_per_block: 1,
            write_per_page: 4 * US,
            namespace_op: 6 * US,
            log_start: US,
            jiffy: 4_000 * US,
            syscall: 250,
            fs_size: 1 << 40,
            data_chunk_size: 1 << 30,
            mkfs_data_chunk: 8 << 20,
            delayed_ref: 2 * US,
            preempt_loop: 2 * US,
            meta_chunk_size: 1 << 30,
            mkfs_meta_chunk: 256 << 20,
            mkfs_meta_used: 16 * (16 << 10),
            global_rsv_max: 512 << 20,
            key_compare_ps: 10_000,
            tree_level_ps: 100_000,
            leaf_move_ps_per_byte: 50,
            item_offset_ps: 10_000,
            trans_handle_ps: 280_000,
            alloc_tree_block_ps: 2_680_000,
            free_tree_block_ps: 320_000,
            inode_alloc_ps: 1_040_000,
            inode_evict_ps: 700_000,
            spinlock_ps: 8_000,
            readdir_item_ps: 13_000,
            context_switch: 285,
            wakeup: 285,
            crc32c_ps_per_byte: 45,
            page_writeback_ps: 378_000,
            eb_writeback_ps: 272_000,
            tree_locks: 1,
            delayed_items: 1,
            global_rsv_resize: 1,
            log_cow: 1,
            delayed_refs: 1,
            aged_data: 0,
        }
    }
}

impl Costs {
    /// The sizes mkfs.btrfs and the chunk allocator choose on a device of `fs_size` bytes,
    /// `fill` (0..1) of it already holding data. volumes.c:init_alloc_chunk_ctl_policy_regular
    /// @v5.13: a data chunk is 1 GiB, a metadata chunk 1 GiB when the filesystem is over
    /// 50 GiB, else 256 MiB, and either at most 10 % of the filesystem
    /// (`div_factor(total_rw_bytes, 1)`); mkfs's metadata chunk (256 MiB DUP) is capped the
    /// same way. At the default 1 TiB every size is the default's.
    pub fn for_device(mut self, fs_size: u64, fill: f64) -> Costs {
        let tenth = fs_size / 10;
        self.fs_size = fs_size;
        self.data_chunk_size = (1u64 << 30).min(tenth);
        let meta = if fs_size > 50 << 30 {
            1 << 30
        } else {
            256 << 20
        };
        self.meta_chunk_size = (meta as u64).min(tenth);
        self.mkfs_meta_chunk = self.mkfs_meta_chunk.min(tenth);
        self.aged_data = (fs_size as f64 * fill.clamp(0.0, 1.0)) as u64;
        self
    }

    /// Metadata reserved per item: btrfs_calc_insert_metadata_size (ctree.h@v5.12),
    /// nodesize × BTRFS_MAX_LEVEL (8) × 2.
    pub fn meta_item(&self) -> u64 {
        self.nodesize * 8 * 2
    }

    /// CPU of b-tree work: levels, key comparisons, bytes moved and item offsets rewritten
    /// at their unit costs, each split's new leaf allocated, and `cowed` blocks COWed
    /// (btrfs_cow_block allocates a block, copies the whole nodesize block into it and
    /// frees the old one).
    pub fn tree_cpu(&self, w: &super::ctree_btree::Work, cowed: u64) -> Nanos {
        let ps = w.levels * self.tree_level_ps
            + w.compares * self.key_compare_ps
            + self.leaf_ps(w)
            + cowed * self.nodesize * self.leaf_move_ps_per_byte
            + (w.splits + cowed) * self.alloc_tree_block_ps
            + cowed * self.free_tree_block_ps;
        ps.div_ceil(1000)
    }

    /// Picoseconds of the searches in internal nodes (the part of `tree_cpu` done before
    /// unlock_up releases the levels above level 1).
    pub fn node_ps(&self, w: &super::ctree_btree::Work) -> u64 {
        w.node_levels * self.tree_level_ps + w.node_compares * self.key_compare_ps
    }

    /// Picoseconds of the work inside leaves: bytes moved and item offsets rewritten (the
    /// part of `tree_cpu` done under the leaves' locks).
    pub fn leaf_ps(&self, w: &super::ctree_btree::Work) -> u64 {
        w.moved * self.leaf_move_ps_per_byte + w.fixups * self.item_offset_ps
    }

    /// CPU of a new inode outside the trees and its transaction handle (`inode_alloc_ps`).
    pub fn new_inode_cpu(&self) -> Nanos {
        self.inode_alloc_ps.div_ceil(1000)
    }

    /// CPU of a final iput outside the trees (`inode_evict_ps`) with `handles` of
    /// btrfs_evict_inode's three transaction handles not charged elsewhere.
    pub fn final_iput_cpu(&self, handles: u64) -> Nanos {
        (self.inode_evict_ps + handles * self.trans_handle_ps).div_ceil(1000)
    }

    /// CPU of queueing one delayed item when `pending` are queued: the delayed item's
    /// rb-tree insert (⌊log2 n⌋ + 1 key comparisons, `key_compare_ps` each; n is the node's
    /// item count in the kernel, bounded here by all pending items) and the copy of
    /// an item's worth of bytes (btrfs_inode_item, 160 B: fill_stack_inode_item) at
    /// `leaf_move_ps_per_byte`.
    pub fn delayed_item_cpu(&self, pending: u64) -> Nanos {
        let compares = u64::from(64 - pending.max(1).leading_zeros());
        let ps = compares * self.key_compare_ps
            + u64::from(super::ctree_btree::size::INODE_ITEM) * self.leaf_move_ps_per_byte;
        ps.div_ceil(1000)
    }

    /// CPU of writing back `blocks` metadata blocks: their pages and the blocks themselves
    /// (`page_writeback_ps`, `eb_writeback_ps`).
    pub fn eb_writeback_cpu(&self, blocks: u64) -> Nanos {
        let pages = self.nodesize.div_ceil(PAGE_SIZE);
        let per_block = pages
            .saturating_mul(self.page_writeback_ps)
            .saturating_add(self.eb_writeback_ps);
        blocks.saturating_mul(per_block).div_ceil(1000)
    }

    /// CPU of writing back `bytes` of file data from the page cache (`page_writeback_ps`).
    pub fn data_writeback_cpu(&self, bytes: u64) -> Nanos {
        bytes
            .div_ceil(PAGE_SIZE)
            .saturating_mul(self.page_writeback_ps)
            .div_ceil(1000)
    }

    /// CPU of checksumming `bytes` with crc32c (`crc32c_ps_per_byte`).
    pub fn csum_cpu(&self, bytes: u64) -> Nanos {
        (bytes * self.crc32c_ps_per_byte).div_ceil(1000)
    }

    /// Names of the overridable fields (ns for CPU costs, bytes or counts otherwise).
    pub const FIELDS: [&'static str; 51] = [
        "nodesize",
        "sectorsize",
        "csum_per_block",
        "btree_item",
        "log_inode_item",
        "log_extent_item",
        "log_csum_per_byte",
        "log_bytes_inode",
        "log_bytes_extent",
        "item_bytes_per_inode",
        "item_bytes_per_dentry",
        "item_bytes_per_extent",
        "commit_cpu",
        "commit_cpu_per_block",
        "unpin_per_extent",
        "pinned_per_block",
        "write_per_page",
        "namespace_op",
        "log_start",
        "jiffy",
        "syscall",
        "fs_size",
        "data_chunk_size",
        "mkfs_data_chunk",
        "delayed_ref",
        "preempt_loop",
        "meta_chunk_size",
        "mkfs_meta_chunk",
        "mkfs_meta_used",
        "global_rsv_max",
        "key_compare_ps",
        "tree_level_ps",
        "leaf_move_ps_per_byte",
        "item_offset_ps",
        "trans_handle_ps",
        "alloc_tree_block_ps",
        "free_tree_block_ps",
        "inode_alloc_ps",
        "inode_evict_ps",
        "spinlock_ps",
        "readdir_item_ps",
        "context_switch",
        "wakeup",
        "crc32c_ps_per_byte",
        "page_writeback_ps",
        "eb_writeback_ps",
        "tree_locks",
        "delayed_items",
        "delayed_refs",
        "global_rsv_resize",
        "log_cow",
    ];

    /// Sets one field by name to a value in its range, or says what was expected.
    pub fn set_checked(&mut self, name: &str, x: u64) -> Result<(), String> {
        let ok = match name {
            "nodesize" | "sectorsize" => (512..=1 << 20).contains(&x),
            "tree_locks" | "delayed_items" | "delayed_refs" | "global_rsv_resize" | "log_cow" => {
                x <= 1
            }
            _ => x <= 1_000_000_000_000,
        };
        if ok && self.set(name, x) {
            return Ok(());
        }
        Err(format!(
            "unknown or invalid cost '{name}' = {x}: expected one of {} (at most 10^12; nodesize and sectorsize 512..1M; tree_locks, delayed_items, delayed_refs, global_rsv_resize and log_cow 0 or 1)",
            Costs::FIELDS.join(", ")
        ))
    }

    /// Sets one field by name; false if there is no such field.
    pub fn set(&mut self, name: &str, v: u64) -> bool {
        match self.field(name) {
            Some(f) => {
                *f = v;
                true
            }
            None => false,
        }
    }

    /// One field by name.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.clone().field(name).map(|f| *f)
    }

    fn field(&mut self, name: &str) -> Option<&mut u64> {
        let f = match name {
            "nodesize" => &mut self.nodesize,
            "sectorsize" => &mut self.sectorsize,
            "csum_per_block" => &mut self.csum_per_block,
            "btree_item" => &mut self.btree_item,
            "log_inode_item" => &mut self.log_inode_item,
            "log_extent_item" => &mut self.log_extent_item,
            "log_csum_per_byte" => &mut self.log_csum_per_byte,
            "log_bytes_inode" => &mut self.log_bytes_inode,
            "log_bytes_extent" => &mut self.log_bytes_extent,
            "item_bytes_per_inode" => &mut self.item_bytes_per_inode,
            "item_bytes_per_dentry" => &mut self.item_bytes_per_dentry,
            "item_bytes_per_extent" => &mut self.item_bytes_per_extent,
            "commit_cpu" => &mut self.commit_cpu,
            "commit_cpu_per_block" => &mut self.commit_cpu_per_block,
            "unpin_per_extent" => &mut self.unpin_per_extent,
            "pinned_per_block" => &mut self.pinned_per_block,
            "write_per_page" => &mut self.write_per_page,
            "namespace_op" => &mut self.namespace_op,
            "log_start" => &mut self.log_start,
            "jiffy" => &mut self.jiffy,
            "syscall" => &mut self.syscall,
            "fs_size" => &mut self.fs_size,
            "data_chunk_size" => &mut self.data_chunk_size,
            "mkfs_data_chunk" => &mut self.mkfs_data_chunk,
            "delayed_ref" => &mut self.delayed_ref,
            "preempt_loop" => &mut self.preempt_loop,
            "meta_chunk_size" => &mut self.meta_chunk_size,
            "mkfs_meta_chunk" => &mut self.mkfs_meta_chunk,
            "mkfs_meta_used" => &mut self.mkfs_meta_used,
            "global_rsv_max" => &mut self.global_rsv_max,
            "key_compare_ps" => &mut self.key_compare_ps,
            "tree_level_ps" => &mut self.tree_level_ps,
            "leaf_move_ps_per_byte" => &mut self.leaf_move_ps_per_byte,
            "item_offset_ps" => &mut self.item_offset_ps,
            "trans_handle_ps" => &mut self.trans_handle_ps,
            "alloc_tree_block_ps" => &mut self.alloc_tree_block_ps,
            "free_tree_block_ps" => &mut self.free_tree_block_ps,
            "inode_alloc_ps" => &mut self.inode_alloc_ps,
            "inode_evict_ps" => &mut self.inode_evict_ps,
            "spinlock_ps" => &mut self.spinlock_ps,
            "readdir_item_ps" => &mut self.readdir_item_ps,
            "context_switch" => &mut self.context_switch,
            "wakeup" => &mut self.wakeup,
            "crc32c_ps_per_byte" => &mut self.crc32c_ps_per_byte,
            "page_writeback_ps" => &mut self.page_writeback_ps,
            "eb_writeback_ps" => &mut self.eb_writeback_ps,
            "tree_locks" => &mut self.tree_locks,
            "delayed_items" => &mut self.delayed_items,
            "delayed_refs" => &mut self.delayed_refs,
            "global_rsv_resize" => &mut self.global_rsv_resize,
            "log_cow" => &mut self.log_cow,
            _ => return None,
        };
        Some(f)
    }
}

/// What a `[costs]` key sets, with its unit, one line (`fsyncsim list --costs`); the
/// field's doc comment in this file cites where its default comes from.
pub fn describe(name: &str) -> Option<&'static str> {
    Some(match name {
        "nodesize" => "bytes: metadata block size (mkfs.btrfs default 16 KiB)",
        "sectorsize" => "bytes: data block size (4 KiB)",
        "csum_per_block" => "bytes of checksum per data block (crc32c: 4)",
        "btree_item" => "ns: one b-tree item search + insert where no tree work is modelled",
        "log_inode_item" => {
            "ns: unused since btrfs_log_inode's copy is tree work (accepted for old files)"
        }
        "log_extent_item" => "ns: unused since the log copy is tree work (accepted for old files)",
        "log_csum_per_byte" => "ns per checksum byte copied into the log",
        "log_bytes_inode" => "bytes of log written per logged inode item",
        "log_bytes_extent" => "bytes of log written per logged file extent item",
        "item_bytes_per_inode" => {
            "bytes: unused since the b-trees size items (accepted for old files)"
        }
        "item_bytes_per_dentry" => "bytes of leaf one directory entry takes (DIR_ITEM + DIR_INDEX)",
        "item_bytes_per_extent" => "bytes of extent-tree leaf per data extent",
        "commit_cpu" => "ns: fixed CPU of a commit outside the modelled steps",
        "commit_cpu_per_block" => {
            "ns: commit CPU per COWed block's delayed ref (and per data ref when delayed_refs = 0)"
        }
        "unpin_per_extent" => "ns per pinned extent unpinned after the commit",
        "pinned_per_block" => "pinned extents per dirtied metadata block",
        "write_per_page" => "ns: buffered write CPU per 4 KiB page",
        "namespace_op" => "ns: a namespace operation's own work on ext3/ext4 (btrfs: tree work)",
        "log_start" => "ns: starting and finishing a log transaction",
        "jiffy" => "ns: btrfs_sync_log's batching sleep on non-ssd mounts (CONFIG_HZ=250: 4 ms)",
        "syscall" => "ns: entering and leaving the kernel, charged to every operation",
        "fs_size" => "bytes of device for chunks",
        "data_chunk_size" => "bytes: a data chunk (1 GiB)",
        "mkfs_data_chunk" => "bytes: the data block group mkfs makes (8 MiB)",
        "delayed_ref" => "ns per delayed ref a space flush runs",
        "preempt_loop" => "ns: one pass of a space flusher's loop",
        "meta_chunk_size" => "bytes: a metadata chunk (1 GiB over 50 GiB devices, else 256 MiB)",
        "mkfs_meta_chunk" => "bytes: the metadata block group mkfs makes (256 MiB DUP)",
        "mkfs_meta_used" => "bytes of tree blocks a fresh filesystem uses",
        "global_rsv_max" => "bytes: the global block reserve's cap (512 MiB)",
        "key_compare_ps" => "ps per b-tree key comparison",
        "tree_level_ps" => "ps per tree level visited",
        "leaf_move_ps_per_byte" => {
            "ps per byte moved inside an extent buffer (and per byte of a COW)"
        }
        "item_offset_ps" => {
            "ps per item whose data offset a leaf insert, delete, push or split rewrites"
        }
        "trans_handle_ps" => {
            "ps per transaction handle: started (reserving) and ended, outside the trees"
        }
        "alloc_tree_block_ps" => {
            "ps per tree block allocated and made dirty (a COW's new block, a split's leaf)"
        }
        "free_tree_block_ps" => "ps per COWed block's old copy freed (its delayed ref)",
        "inode_alloc_ps" => "ps per new inode's work outside the trees and its handle",
        "inode_evict_ps" => "ps per final iput's work outside the trees and its handles",
        "spinlock_ps" => "ps per uncontended spinlock acquire and release (i_lock)",
        "readdir_item_ps" => "ps per dir index item readdir copies out of a leaf",
        "context_switch" => {
            "ns a task pays when woken from a block (switch out and in; workloads; 0: off)"
        }
        "wakeup" => "ns the waker pays per task it wakes from a block (workloads; 0: off)",
        "crc32c_ps_per_byte" => {
            "ps per byte checksummed: metadata blocks written, data at writeback (0: off)"
        }
        "page_writeback_ps" => {
            "ps per 4 KiB page written back: dirty and writeback marks, bio, completion, wait"
        }
        "eb_writeback_ps" => {
            "ps per metadata block written beside its pages (lock_extent_buffer_for_io, memzero)"
        }
        "tree_locks" => "1 or 0: extent buffer tree locks modelled (ablation switch)",
        "delayed_items" => "1 or 0: delayed items modelled (ablation switch)",
        "delayed_refs" => "1 or 0: delayed data refs modelled (ablation switch)",
        "global_rsv_resize" => {
            "1 or 0: the global reserve follows the extent, csum and root trees (ablation switch)"
        }
        "log_cow" => {
            "1 or 0: log tree blocks COWed after each log sync, the sync writing the dirtied blocks (ablation switch)"
        }
        _ => return None,
    })
}
