//! The CPU of the system calls dbench's fileio backend makes that never reach the filesystem
//! model (stat, open, fstat, statvfs, pread, fcntl, close), and of the VFS work around
//! those that do (a create's resolve_name and open walk, an unlink's or rename's walks, the
//! entries a getdents64 emits: the directory itself is read by the filesystem model,
//! `Op::Readdir`), from the work each does: path components walked, directory entries
//! read, bytes copied, locks taken. Replaces the per-operation times once derived from the
//! btrfs dbench thread's own latencies (issue 27, item 6).
//!
//! Unit costs are for one core of a 2019-20 server part, the Xeon Gold 6248 at its 2.5 GHz
//! base clock (the part `btrfs::costs` prices b-tree work on): 1 cycle = 0.4 ns. Latencies
//! of memory levels are Skylake-SP's (Intel 64 and IA-32 Architectures Optimization
//! Reference Manual, 2019, §2.2: L2 14 cycles, L3 ~60); atomic read-modify-writes ~18 cycles
//! (Agner Fog, instruction tables, Skylake-X: LOCK CMPXCHG/XADD); stores one per cycle, 8 B
//! (one store port). Instruction counts of the kernel paths are estimates from reading them
//! (marked so), not measurements.

use sim::Nanos;

/// Picoseconds of one cycle at 2.5 GHz.
const CYCLE_PS: u64 = 400;

/// dbench's path to a client's file, relative to its working directory
/// (`clients/clientN/~dmtmp/DIR/FILE`, loadfiles/client.txt): 5 components.
pub(super) const FILE_COMPONENTS: u64 = 5;

/// Unit costs of the VFS work, in picoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VfsWork {
    /// Entering and leaving the kernel for one system call: 250 ns, lmbench's null-syscall
    /// latency on a 2020-era x86 core with Debian's default mitigations (as
    /// `btrfs::Costs::syscall`).
    pub syscall_ps: u64,
    /// One path component of an RCU path walk (link_path_walk → walk_component →
    /// __d_lookup_rcu, fs/namei.c@v5.10): hashing ~8 name bytes (~10 cycles), the dcache
    /// hash bucket and dentry loads (one L3 hit, ~60 cycles), the name compare and
    /// may_lookup's permission check (~40 cycles, estimate): ~110 cycles.
    pub component_ps: u64,
    /// Filling and copying a stat buffer (vfs_getattr → btrfs_getattr → generic_fillattr,
    /// inode_get_bytes under i_lock (one atomic, 18 cycles); cp_new_stat's 144-byte struct
    /// stat to user space at 8 B per cycle, 18 cycles, plus STAC/CLAC and the fill, ~60
    /// cycles, estimate): ~100 cycles.
    pub getattr_ps: u64,
    /// Opening a file object and installing its descriptor (alloc_empty_file: a slab
    /// allocation and the percpu files counter; do_dentry_open's references, two atomics;
    /// fd_install): ~300 cycles (estimate).
    pub open_file_ps: u64,
    /// Closing it (filp_close, the fput task work: __fput's dput and mntput, two atomics,
    /// and the slab free): ~300 cycles (estimate).
    pub close_file_ps: u64,
    /// One directory entry emitted to user space (dir_emit → filldir64, fs/readdir.c@v5.10:
    /// verify_dirent_name and the ~32-byte linux_dirent64 written with unsafe_put_user,
    /// ~100 cycles, estimate). Reading the entry out of the filesystem is the filesystem
    /// model's (`Op::Readdir`; btrfs: `Costs::readdir_item_ps`).
    pub readdir_entry_ps: u64,
    /// glibc's readdir stepping over one entry of its buffer and dbench's strcasecmp of a
    /// ~12-character name against it (resolve_name): ~40 cycles (estimate).
    pub match_entry_ps: u64,
    /// btrfs_statfs@v5.10's work: the space_info list under RCU (4 lists, each summed
    /// under its spinlock, 8 atomics) and btrfs_calc_avail_data_space over the one
    /// device: ~600 cycles (estimate).
    pub statfs_ps: u64,
    /// One page of a buffered read found in the page cache (filemap_read's xarray walk,
    /// ~3 dependent L2 loads, the page reference, one atomic): ~60 cycles.
    pub page_lookup_ps: u64,
    /// Bytes copied to user space (copy_page_to_iter → copy_user_enhanced_fast_string:
    /// one 8-byte store per cycle): 50 ps per byte.
    pub copy_ps_per_byte: u64,
    /// A POSIX byte-range lock set or cleared (fcntl F_SETLKW → posix_lock_inode: a slab
    /// allocation, the inode's flc_lock spinlock (one atomic), a walk of the file's few
    /// locks): ~200 cycles (estimate).
    pub posix_lock_ps: u64,
}

impl Default for VfsWork {
    fn default() -> Self {
        VfsWork {
            syscall_ps: 250_000,
            component_ps: 110 * CYCLE_PS,
            getattr_ps: 100 * CYCLE_PS,
            open_file_ps: 300 * CYCLE_PS,
            close_file_ps: 300 * CYCLE_PS,
            readdir_entry_ps: 100 * CYCLE_PS,
            match_entry_ps: 40 * CYCLE_PS,
            statfs_ps: 600 * CYCLE_PS,
            page_lookup_ps: 60 * CYCLE_PS,
            copy_ps_per_byte: 50,
            posix_lock_ps: 200 * CYCLE_PS,
        }
    }
}

/// Picoseconds to nanoseconds, rounded up (a system call is never free).
fn ns(ps: u64) -> Nanos {
    ps.div_ceil(1000)
}

impl VfsWork {
    /// The RCU walk of a file's path (`FILE_COMPONENTS` components), as open(2), unlink(2),
    /// rename(2) and utime(2) make it.
    fn walk_ps(&self) -> u64 {
        FILE_COMPONENTS * self.component_ps
    }

    /// fstat(2) of an open file.
    fn fstat_ps(&self) -> u64 {
        self.syscall_ps + self.getattr_ps
    }

    /// stat(2) of a path of `components` (the last missing when `!exists`: the walk ends
    /// at a cached negative dentry and no stat buffer is filled).
    fn stat_ps(&self, components: u64, exists: bool) -> u64 {
        let fill = if exists { self.getattr_ps } else { 0 };
        self.syscall_ps + components * self.component_ps + fill
    }

    /// The VFS side of opendir + readdir to the end + closedir of a directory at
    /// `components` holding `entries` names (plus "." and ".."), each compared when
    /// `matching`: openat, the entries emitted, close. The two getdents64 calls (their
    /// system calls, the directory read) are the filesystem's: one `Op::Readdir` per scan,
    /// which the caller runs.
    fn scan_dir_ps(&self, components: u64, entries: u64, matching: bool) -> u64 {
        let per_entry = self.readdir_entry_ps + if matching { self.match_entry_ps } else { 0 };
        let open = self.syscall_ps + components * self.component_ps + self.open_file_ps;
        let close = self.syscall_ps + self.close_file_ps;
        open + (entries + 2) * per_entry + close
    }

    /// dbench's resolve_name (fileio.c@4.0): stat(name); when it fails (and -n,
    /// no_resolve, is not given), a scan of the parent directory comparing each name.
    fn resolve_ps(&self, exists: bool, dir_entries: u64) -> u64 {
        let stat = self.stat_ps(FILE_COMPONENTS, exists);
        if exists {
            stat
        } else {
            stat + self.scan_dir_ps(FILE_COMPONENTS - 1, dir_entries, true)
        }
    }

    /// QUERY_PATH_INFORMATION (fio_qpathinfo): resolve_name of a file of a directory of
    /// `dir_entries` names, `exists` or not.
    pub fn qpathinfo(&self, exists: bool, dir_entries: u64) -> Nanos {
        ns(self.resolve_ps(exists, dir_entries))
    }

    /// FIND_FIRST (fio_findfirst): resolve_name of the mask (`DIR\*`: stat fails, so the
    /// directory is scanned once comparing names), then opendir and readdir of up to
    /// maxcnt entries (client.txt's 1366: all of them), closedir.
    pub fn find(&self, dir_entries: u64) -> Nanos {
        ns(self.resolve_ps(false, dir_entries)
            + self.scan_dir_ps(FILE_COMPONENTS - 1, dir_entries, false))
    }

    /// NTCreateX of an existing file (fio_createx): resolve_name (stat succeeds), open(2)
    /// (walk, file object), fstat.
    pub fn open_existing(&self) -> Nanos {
        let open = self.syscall_ps + self.walk_ps() + self.open_file_ps;
        ns(self.resolve_ps(true, 0) + open + self.fstat_ps())
    }

    /// A lookup that fails where a name was expected (an NTCreateX, Unlink, Rename or Mkdir
    /// with nothing to act on): resolve_name's stat and scan, then the failing call's own
    /// walk.
    pub fn failed_lookup(&self, dir_entries: u64) -> Nanos {
        ns(self.resolve_ps(false, dir_entries) + self.stat_ps(FILE_COMPONENTS, false))
    }

    /// The work of an NTCreateX that creates (fio_createx, FILE_CREATE) other than the
    /// create itself (the filesystem model's, with its system call): resolve_name's failing
    /// stat and scan of the directory of `dir_entries` names, open(2)'s walk and file
    /// object, then fstat. The dentry of the missing name is taken as cached (negative):
    /// every name of dbench's loop has existed before, so no filesystem lookup runs.
    pub fn create_around(&self, dir_entries: u64) -> Nanos {
        let open = self.walk_ps() + self.open_file_ps;
        ns(self.resolve_ps(false, dir_entries) + open + self.fstat_ps())
    }

    /// The work of an Unlink (fio_unlink) other than the unlink itself: resolve_name (the
    /// stat succeeds) and unlink(2)'s walk to the parent (do_unlinkat: the last component
    /// is looked up under the parent's lock, a dcache hit).
    pub fn unlink_around(&self) -> Nanos {
        ns(self.resolve_ps(true, 0) + self.walk_ps())
    }

    /// The work of a Rename (fio_rename) other than the rename itself: resolve_name of the
    /// old name (found) and of the new one (missing: its directory of `dir_entries` names
    /// is scanned), then rename(2)'s walks of both paths.
    pub fn rename_around(&self, dir_entries: u64) -> Nanos {
        ns(self.resolve_ps(true, 0) + self.resolve_ps(false, dir_entries) + 2 * self.walk_ps())
    }

    /// The work of an Sfileinfo (fio_sfileinfo) other than utime's change: fstat of the
    /// open file and utime(2)'s walk of its path.
    pub fn sfileinfo_around(&self) -> Nanos {
        ns(self.fstat_ps() + self.walk_ps())
    }

    /// The work of a Deltree (fio_deltree) other than its unlinks: each directory of
    /// `dirs` (names in each) opened and read to the end, each name stat'ed by its path
    /// and unlink(2)'s walk of it.
    pub fn deltree_around(&self, dirs: &[u64]) -> Nanos {
        let per_name = self.stat_ps(FILE_COMPONENTS, true) + self.walk_ps();
        let ps = dirs
            .iter()
            .map(|&n| self.scan_dir_ps(FILE_COMPONENTS - 1, n, false) + n * per_name)
            .sum::<u64>();
        ns(ps)
    }

    /// QUERY_FILE_INFORMATION (fio_qfileinfo): fstat(2).
    pub fn qfileinfo(&self) -> Nanos {
        ns(self.fstat_ps())
    }

    /// QUERY_FS_INFORMATION (fio_qfsinfo): statvfs(2) of the client's directory
    /// (`clients/clientN`: 2 components).
    pub fn qfsinfo(&self) -> Nanos {
        ns(self.syscall_ps + 2 * self.component_ps + self.statfs_ps)
    }

    /// Close (fio_close): close(2).
    pub fn close(&self) -> Nanos {
        ns(self.syscall_ps + self.close_file_ps)
    }

    /// ReadX (fio_readx) of `bytes` from the page cache: pread(2).
    pub fn read(&self, bytes: u64) -> Nanos {
        let pages = bytes.div_ceil(4096).max(1);
        ns(self.syscall_ps + pages * self.page_lookup_ps + bytes * self.copy_ps_per_byte)
    }

    /// LockX / UnlockX (fio_lockx, fio_unlockx): fcntl(F_SETLKW).
    pub fn lock(&self) -> Nanos {
        ns(self.syscall_ps + self.posix_lock_ps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_grows_with_the_directory_and_a_hit_skips_it() {
        let w = VfsWork::default();
        assert!(w.qpathinfo(false, 20) > w.qpathinfo(false, 0));
        assert!(w.qpathinfo(true, 20) < w.qpathinfo(false, 0));
        assert_eq!(w.qpathinfo(true, 0), w.qpathinfo(true, 20));
        // Find scans the directory twice; a failed Qpathinfo once.
        assert!(w.find(20) > w.qpathinfo(false, 20));
        // Every call costs at least its system call.
        for c in [w.qfileinfo(), w.close(), w.lock(), w.read(1), w.qfsinfo()] {
            assert!(c >= 250, "{c}");
        }
        assert!(w.read(65536) > w.read(4096));
        // The work around a filesystem call: a create and a rename scan the directory
        // for the missing name, an unlink does not; more names, more work.
        assert!(w.create_around(20) > w.create_around(0));
        assert!(w.rename_around(20) > w.rename_around(0));
        assert!(w.create_around(0) > w.unlink_around());
        assert!(w.deltree_around(&[10, 10]) > w.deltree_around(&[10]));
        assert!(w.sfileinfo_around() > w.qfileinfo());
    }
}
