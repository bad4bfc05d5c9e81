//! dbench's clients on the filesystem models: each loops over the workload's operation mix
//! against its own directory tree (loadfiles/client.txt's shape).

use super::fsload::{Ctx, PendingCpu, CPU_BATCH};
use super::vfs_work::VfsWork;
use crate::vfs::{Op, OpPath};
use rand::Rng;
use sim::{Nanos, Stream};

/// dbench's per-client directories (loadfiles/client.txt: clients/clientN/~dmtmp/…).
pub(super) const DBENCH_DIRS: [&str; 9] = [
    "ACCESS", "COREL", "EXCEL", "PARADOX", "PM", "PWRPNT", "SEED", "WORD", "WORDPRO",
];
/// File names per directory (the loadfile opens 185 distinct files per client).
pub(super) const DBENCH_FILES: usize = 20;
/// Share of NTCreateX calls that create (FILE_CREATE disposition) in client.txt: 16,067 of
/// 79,230.
const DBENCH_CREATE: (u64, u64) = (16_067, 79_230);

/// A file operation made from the file's path (`Op::Create`, `Op::Fsync`, …).
type MakeOp = fn(OpPath) -> Op;

/// Rebuilds a client's per-file operation slot as `make(path)`, moving the file's path out of
/// the slot's previous operation (no reference-count change), and lends it.
fn file_op(slot: &mut Op, make: impl FnOnce(OpPath) -> Op) -> &Op {
    let path = match std::mem::replace(slot, Op::Sync) {
        Op::Create(p) | Op::Write(p, _) | Op::Fsync(p) | Op::Unlink(p) | Op::Setattr(p) => p,
        other => unreachable!("a file slot holds a path operation, not {other:?}"),
    };
    *slot = make(path);
    slot
}

/// One dbench client: loops over the operation mix against its own directory tree.
pub(super) async fn dbench_client(cx: Ctx, id: u32, rng: Stream) {
    let mut c = Client::new(cx, id, rng);
    loop {
        let op = c.mix_table.pick(&mut c.rng);
        if !c.run(op).await {
            return;
        }
        if c.pending.total >= CPU_BATCH {
            c.cx.flush_cpu(&mut c.pending).await;
        }
    }
}

// Indices into DBENCH_OPS (a match on the names would compare strings per operation).
const NTCREATEX: usize = 0;
const CLOSE: usize = 1;
const RENAME: usize = 2;
const UNLINK: usize = 3;
const DELTREE: usize = 4;
const MKDIR: usize = 5;
const QPATHINFO: usize = 6;
const QFILEINFO: usize = 7;
const QFSINFO: usize = 8;
const SFILEINFO: usize = 9;
const FIND: usize = 10;
const WRITEX: usize = 11;
const READX: usize = 12;
const LOCKX: usize = 13;
const UNLOCKX: usize = 14;
const FLUSH: usize = 15;

/// A dbench client's state: its files, which of them exist, the last one opened, and the
/// CPU-only operations not yet spent.
struct Client {
    cx: Ctx,
    rng: Stream,
    paths: Vec<OpPath>,
    /// One operation slot per file holding the file's path: a measured operation is built
    /// in it by moving the path between variants (`file_op`) and borrowed, so the hot path
    /// touches no reference count (an atomic on a cold line stalls the pipeline).
    file_ops: Vec<Op>,
    /// `Op::Readdir` of each of the client's directories: a scan of one (resolve_name's,
    /// Find's, Deltree's) reads it through the filesystem.
    dir_ops: Vec<Op>,
    n: usize,
    exists: FileSet,
    last: Option<usize>,
    mix_table: Table<usize>,
    read_sizes: Table<u64>,
    write_sizes: Table<u64>,
    before: Vec<Nanos>,
    pending: PendingCpu,
    /// The workload's `[cpu]` times, where it gives one: a flat time instead of the work.
    flat: [Option<Nanos>; 16],
    /// `[cpu]`'s "open", likewise.
    open_flat: Option<Nanos>,
    work: VfsWork,
}

impl Client {
    fn new(cx: Ctx, id: u32, rng: Stream) -> Self {
        let base = format!("/clients/client{id}/~dmtmp");
        let paths: Vec<OpPath> = (0..DBENCH_DIRS.len() * DBENCH_FILES)
            .map(|f| {
                format!(
                    "{base}/{}/F{:02}",
                    DBENCH_DIRS[f / DBENCH_FILES],
                    f % DBENCH_FILES
                )
                .into()
            })
            .collect();
        let file_ops: Vec<Op> = paths.iter().map(|p| Op::Fsync(p.clone())).collect();
        let dir_ops: Vec<Op> = DBENCH_DIRS
            .iter()
            .map(|d| Op::Readdir(format!("{base}/{d}").into()))
            .collect();
        let n = DBENCH_DIRS.len() * DBENCH_FILES;
        let mix: Vec<(usize, u64)> = cx.spec.mix.iter().copied().enumerate().collect();
        let mut flat = [None; 16];
        for (i, o) in super::spec::DBENCH_OPS.iter().enumerate() {
            flat[i] = cx.spec.cpu.get(*o).copied();
        }
        sim::check_eq!(super::spec::DBENCH_OPS[FLUSH], "Flush");
        sim::check_eq!(super::spec::DBENCH_OPS[FIND], "Find");
        Client {
            rng,
            paths,
            file_ops,
            dir_ops,
            n,
            // The setup task created every other file, so the loop starts with a half-full tree.
            exists: FileSet::new(n, |f| f % 2 == 0),
            last: None,
            mix_table: Table::new(&mix),
            read_sizes: Table::new(&cx.spec.read_sizes),
            write_sizes: Table::new(&cx.spec.write_sizes),
            before: Vec::new(),
            pending: PendingCpu::default(),
            flat,
            open_flat: cx.spec.cpu.get("open").copied(),
            work: VfsWork::default(),
            cx,
        }
    }

    fn path(&self, f: usize) -> OpPath {
        self.paths[f].clone()
    }

    /// A random file whose existence is `want`: probe a few random slots, then scan.
    fn pick(&mut self, want: bool) -> Option<usize> {
        for _ in 0..8 {
            let f = self.rng.random_range(0..self.exists.len());
            if self.exists.has(f) == want {
                return Some(f);
            }
        }
        let k = self.exists.count(0..self.n, want);
        if k == 0 {
            return None;
        }
        let j = self.rng.random_range(0..k);
        Some(self.exists.nth(0..self.n, want, j))
    }

    /// The last file opened if it still exists, else a random existing one.
    fn open_file(&mut self) -> Option<usize> {
        self.last
            .filter(|&f| self.exists.has(f))
            .or_else(|| self.pick(true))
    }

    /// Queues CPU-only operation `op` costing `cost`; true.
    fn cpu(&mut self, op: usize, cost: Nanos, bytes: u64) -> bool {
        self.cx.cpu_op(&mut self.pending, op, cost, bytes);
        true
    }

    /// Spends the queued CPU time, then runs `make(path of f)` as measured operation `op`,
    /// first spending `pre` of CPU (the VFS work of dbench's call around the filesystem
    /// operation).
    async fn measure_file(
        &mut self,
        op: usize,
        bytes: u64,
        pre: Nanos,
        f: usize,
        make: impl FnOnce(OpPath) -> Op,
    ) -> bool {
        self.cx.flush_cpu(&mut self.pending).await
            && self
                .cx
                .measure_op_after(
                    op,
                    bytes,
                    &mut self.before,
                    pre,
                    file_op(&mut self.file_ops[f], make),
                )
                .await
    }

    /// The VFS work around filesystem operation `op` from `work`, unless the workload's
    /// `[cpu]` gives flat times (the flat time then stands for the whole call).
    fn around(&self, op: usize, work: impl FnOnce(&VfsWork) -> Nanos) -> Nanos {
        if self.scans(op) {
            work(&self.work)
        } else {
            0
        }
    }

    /// Runs one operation of the mix; false when a filesystem operation failed.
    async fn run(&mut self, op: usize) -> bool {
        match op {
            NTCREATEX => self.ntcreatex(op).await,
            WRITEX => self.writex(op).await,
            READX => {
                let size = self.read_sizes.pick(&mut self.rng);
                let cost = self.flat[op].unwrap_or_else(|| self.work.read(size));
                self.cpu(op, cost, size)
            }
            FLUSH => match self.open_file() {
                Some(f) => self.measure_file(op, 0, 0, f, Op::Fsync).await,
                None => self.cpu(op, self.close_cost(), 0),
            },
            RENAME => self.rename(op).await,
            UNLINK => match self.pick(true) {
                Some(f) => {
                    self.exists.set(f, false);
                    if self.last == Some(f) {
                        self.last = None;
                    }
                    let pre = self.around(op, VfsWork::unlink_around);
                    self.measure_file(op, 0, pre, f, Op::Unlink).await
                }
                None => self.failed_lookup(op).await,
            },
            DELTREE => self.deltree(op).await,
            // The loadfile's Mkdir names the client's directories, which exist (Deltree
            // removes no directory): fio_mkdir's mkdir fails with EEXIST after a lookup.
            MKDIR => self.cpu(op, self.open_cost(), 0),
            SFILEINFO => match self.open_file() {
                // fio_sfileinfo: utime(2) → btrfs_setattr → btrfs_dirty_inode (TRANS_JOIN).
                Some(f) => {
                    let pre = self.around(op, VfsWork::sfileinfo_around);
                    self.measure_file(op, 0, pre, f, Op::Setattr).await
                }
                None => self.cpu(op, self.flat[op].unwrap_or(self.work.qfileinfo()), 0),
            },
            QPATHINFO => self.qpathinfo(op).await,
            FIND => self.find(op).await,
            // Qfileinfo, Qfsinfo, LockX, UnlockX, Close: VFS and page-cache work only.
            _ => {
                let cost = self.vfs_cost(op);
                self.cpu(op, cost, 0)
            }
        }
    }

    /// The CPU of a VFS-only operation: `[cpu]`'s flat time, else its work
    /// (vfs_work.rs) on this client's tree as it stands.
    fn vfs_cost(&mut self, op: usize) -> Nanos {
        if let Some(c) = self.flat[op] {
            return c;
        }
        match op {
            CLOSE => self.work.close(),
            QFILEINFO => self.work.qfileinfo(),
            QFSINFO => self.work.qfsinfo(),
            LOCKX | UNLOCKX => self.work.lock(),
            _ => unreachable!(
                "{} reaches the filesystem model",
                super::spec::DBENCH_OPS[op]
            ),
        }
    }

    /// Names in the client's directory `d`.
    fn dir_entries(&self, d: usize) -> u64 {
        self.exists
            .count(d * DBENCH_FILES..(d + 1) * DBENCH_FILES, true) as u64
    }

    /// Close's CPU (also the fallback of a Flush or WriteX with no open file).
    fn close_cost(&self) -> Nanos {
        self.flat[CLOSE].unwrap_or_else(|| self.work.close())
    }

    /// NTCreateX's open of an existing file (also Mkdir's failing lookup).
    fn open_cost(&self) -> Nanos {
        self.open_flat.unwrap_or_else(|| self.work.open_existing())
    }

    /// Whether `op`'s VFS work is modelled (no `[cpu]` flat time stands for it): then its
    /// directory scans read the directory through the filesystem.
    fn scans(&self, op: usize) -> bool {
        self.open_flat.is_none() && self.flat[op].is_none()
    }

    /// Measured operation `op`: `pre` of VFS CPU, `reads` reads of the client's directory
    /// `d` through the filesystem (`Op::Readdir`), then `then(path of file f)`, if given.
    async fn measure_scans(
        &mut self,
        op: usize,
        pre: Nanos,
        (d, reads): (usize, usize),
        then: Option<(usize, MakeOp)>,
    ) -> bool {
        if !self.cx.flush_cpu(&mut self.pending).await {
            return false;
        }
        let mut ops: smallvec::SmallVec<[&Op; 3]> = smallvec::smallvec![&self.dir_ops[d]; reads];
        if let Some((f, make)) = then {
            ops.push(file_op(&mut self.file_ops[f], make));
        }
        self.cx
            .measure_ops_after(op, 0, &mut self.before, pre, &ops)
            .await
    }

    /// CPU-only operation `op` costing `cost`, or, when its VFS work is modelled and
    /// `reads` > 0, measured with `reads` reads of directory `d` through the filesystem.
    async fn cpu_or_scan(&mut self, op: usize, cost: Nanos, d: usize, reads: usize) -> bool {
        if reads == 0 || !self.scans(op) {
            return self.cpu(op, cost, 0);
        }
        self.measure_scans(op, cost, (d, reads), None).await
    }

    /// A lookup that finds nothing to act on (an NTCreateX, Unlink or Rename with nothing
    /// to act on): resolve_name's failing stat and scan of a directory, and the call's own
    /// failing walk.
    async fn failed_lookup(&mut self, op: usize) -> bool {
        if let Some(c) = self.open_flat {
            return self.cpu(op, c, 0);
        }
        let d = self.rng.random_range(0..DBENCH_DIRS.len());
        let cost = self.work.failed_lookup(self.dir_entries(d));
        self.cpu_or_scan(op, cost, d, 1).await
    }

    /// Qpathinfo (fio_qpathinfo): resolve_name of a random name of the client's; a missing
    /// one's directory is scanned.
    async fn qpathinfo(&mut self, op: usize) -> bool {
        if let Some(c) = self.flat[op] {
            return self.cpu(op, c, 0);
        }
        let f = self.rng.random_range(0..self.n);
        let d = f / DBENCH_FILES;
        let exists = self.exists.has(f);
        let cost = self.work.qpathinfo(exists, self.dir_entries(d));
        self.cpu_or_scan(op, cost, d, usize::from(!exists)).await
    }

    /// Find (fio_findfirst): resolve_name's scan of a random directory of the client's for
    /// the mask, then the directory read once more.
    async fn find(&mut self, op: usize) -> bool {
        if let Some(c) = self.flat[op] {
            return self.cpu(op, c, 0);
        }
        let d = self.rng.random_range(0..DBENCH_DIRS.len());
        let cost = self.work.find(self.dir_entries(d));
        self.cpu_or_scan(op, cost, d, 2).await
    }

    /// NTCreateX: creates a missing file (FILE_CREATE's share of the calls), else opens an
    /// existing one (CPU only).
    async fn ntcreatex(&mut self, op: usize) -> bool {
        let create = self.rng.random_range(0..DBENCH_CREATE.1) < DBENCH_CREATE.0;
        match (create, self.pick(!create)) {
            (true, Some(f)) => {
                // resolve_name scans the directory as it is before the create.
                let entries = self.dir_entries(f / DBENCH_FILES);
                let pre = self.around(op, |w| w.create_around(entries));
                self.exists.set(f, true);
                self.last = Some(f);
                if self.scans(op) {
                    let d = f / DBENCH_FILES;
                    self.measure_scans(op, pre, (d, 1), Some((f, Op::Create)))
                        .await
                } else {
                    self.measure_file(op, 0, pre, f, Op::Create).await
                }
            }
            (false, Some(f)) => {
                self.last = Some(f);
                self.cpu(op, self.open_cost(), 0)
            }
            // Nothing to create or open: a lookup that fails.
            _ => self.failed_lookup(op).await,
        }
    }

    /// WriteX: a buffered write to the open file (with -s, O_SYNC: write then fsync).
    async fn writex(&mut self, op: usize) -> bool {
        let size = self.write_sizes.pick(&mut self.rng);
        let Some(f) = self.open_file() else {
            return self.cpu(op, self.close_cost(), 0);
        };
        if !self.cx.spec.sync_open {
            return self
                .measure_file(op, size, 0, f, |p| Op::Write(p, size))
                .await;
        }
        if !self.cx.flush_cpu(&mut self.pending).await {
            return false;
        }
        let p = self.path(f);
        let fs = self.cx.clone();
        self.cx
            .measure(op, size, &mut self.before, async move {
                fs.fs(Op::Write(p.clone(), size)).await?;
                // O_SYNC: generic_write_sync -> btrfs_sync_file.
                fs.fs(Op::Fsync(p)).await?;
                Ok(())
            })
            .await
    }

    /// Rename: dbench's loadfile renames within one directory (client.txt: e.g.
    /// PWRPNT/NEWPCB.PPT -> PWRPNT/PPTC112.TMP): the target is a free name in the source's
    /// directory.
    async fn rename(&mut self, op: usize) -> bool {
        let target = self.pick(true).and_then(|a| {
            let d = a / DBENCH_FILES;
            let dir = d * DBENCH_FILES..(d + 1) * DBENCH_FILES;
            let k = self.exists.count(dir.clone(), false);
            (k > 0).then(|| (a, self.exists.nth(dir, false, self.rng.random_range(0..k))))
        });
        let Some((a, b)) = target else {
            return self.failed_lookup(op).await;
        };
        let entries = self.dir_entries(a / DBENCH_FILES);
        let pre = self.around(op, |w| w.rename_around(entries));
        self.exists.set(a, false);
        self.exists.set(b, true);
        self.last = Some(b);
        if !self.cx.flush_cpu(&mut self.pending).await {
            return false;
        }
        let rename = Op::Rename(self.path(a), self.path(b));
        // resolve_name's scan for the missing new name, in the same directory.
        let scan: &[&Op] = if self.scans(op) {
            &[&self.dir_ops[a / DBENCH_FILES], &rename]
        } else {
            &[&rename]
        };
        self.cx
            .measure_ops_after(op, 0, &mut self.before, pre, scan)
            .await
    }

    /// Deltree: dbench's fio_deltree walks the client's tree and unlinks every file; it
    /// removes no directory (fileio.c:fio_deltree).
    async fn deltree(&mut self, op: usize) -> bool {
        let victims: Vec<usize> = (0..self.n).filter(|&f| self.exists.has(f)).collect();
        let mut dirs = [0u64; DBENCH_DIRS.len()];
        for (d, n) in dirs.iter_mut().enumerate() {
            *n = self.dir_entries(d);
        }
        // The walk: every directory read, every name stat'ed and unlinked by path.
        let pre = self.around(op, |w| w.deltree_around(&dirs));
        for &f in &victims {
            self.exists.set(f, false);
        }
        self.last = None;
        if victims.is_empty() && !self.scans(op) {
            // Nothing to delete: the walk only (with `[cpu]`'s flat times, Close's).
            let cost = if pre > 0 { pre } else { self.close_cost() };
            return self.cpu(op, cost, 0);
        }
        // The walk reads each directory (through the filesystem when the VFS work is
        // modelled), then unlinks its names.
        let reads: Vec<Option<Op>> = (0..DBENCH_DIRS.len())
            .map(|d| self.scans(op).then(|| self.dir_ops[d].clone()))
            .collect();
        let fs = self.cx.clone();
        let paths: Vec<OpPath> = victims.iter().map(|&f| self.path(f)).collect();
        self.cx.flush_cpu(&mut self.pending).await
            && self
                .cx
                .measure(op, 0, &mut self.before, async move {
                    if pre > 0 {
                        fs.h.cpu(pre).await;
                    }
                    let mut rest = victims.iter().zip(paths).peekable();
                    for (d, read) in reads.into_iter().enumerate() {
                        if let Some(r) = read {
                            fs.fs(r).await?;
                        }
                        while let Some((_, p)) = rest.next_if(|(&f, _)| f / DBENCH_FILES == d) {
                            fs.fs(Op::Unlink(p)).await?;
                        }
                    }
                    Ok(())
                })
                .await
    }
}

/// A weighted choice with its cumulative weights precomputed (one draw, a binary search).
struct Table<T> {
    values: Vec<T>,
    ends: Vec<u64>,
}

impl<T: Copy> Table<T> {
    fn new(items: &[(T, u64)]) -> Self {
        let mut acc = 0;
        let ends = items
            .iter()
            .map(|&(_, w)| {
                acc += w;
                acc
            })
            .collect();
        Table {
            values: items.iter().map(|&(v, _)| v).collect(),
            ends,
        }
    }

    /// The item whose cumulative range holds a uniform draw below the total weight.
    fn pick(&self, rng: &mut Stream) -> T {
        let total = self.ends.last().copied().unwrap_or(0);
        let x = rng.random_range(0..total.max(1));
        let i = self.ends.partition_point(|&e| e <= x);
        self.values[i.min(self.values.len() - 1)]
    }
}

/// Which of a client's files exist: one bit per file, so that counting and choosing the
/// k-th existing (or missing) file are word operations.
struct FileSet {
    words: Vec<u64>,
    len: usize,
}

impl FileSet {
    fn new(len: usize, init: impl Fn(usize) -> bool) -> Self {
        let mut s = FileSet {
            words: vec![0; len.div_ceil(64)],
            len,
        };
        for f in (0..len).filter(|&f| init(f)) {
            s.set(f, true);
        }
        s
    }

    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn has(&self, f: usize) -> bool {
        self.words[f / 64] >> (f % 64) & 1 == 1
    }

    #[inline]
    fn set(&mut self, f: usize, on: bool) {
        let bit = 1u64 << (f % 64);
        if on {
            self.words[f / 64] |= bit;
        } else {
            self.words[f / 64] &= !bit;
        }
    }

    /// Word `i` restricted to `range`, with the files whose existence is `want` set.
    #[inline]
    fn word(&self, i: usize, range: &std::ops::Range<usize>, want: bool) -> u64 {
        let w = if want { self.words[i] } else { !self.words[i] };
        let (lo, hi) = (i * 64, i * 64 + 64);
        let from = range.start.clamp(lo, hi) - lo;
        let to = range.end.clamp(lo, hi) - lo;
        let mask = if to - from == 64 {
            u64::MAX
        } else {
            ((1u64 << (to - from)) - 1) << from
        };
        w & mask
    }

    /// Files in `range` whose existence is `want`.
    fn count(&self, range: std::ops::Range<usize>, want: bool) -> usize {
        let words = range.start / 64..range.end.div_ceil(64);
        words
            .map(|i| self.word(i, &range, want).count_ones() as usize)
            .sum()
    }

    /// The `j`-th file (from 0, in index order) in `range` whose existence is `want`;
    /// `j` must be below `count(range, want)`.
    fn nth(&self, range: std::ops::Range<usize>, want: bool, mut j: usize) -> usize {
        for i in range.start / 64..range.end.div_ceil(64) {
            let mut w = self.word(i, &range, want);
            let c = w.count_ones() as usize;
            if j < c {
                for _ in 0..j {
                    w &= w - 1;
                }
                return i * 64 + w.trailing_zeros() as usize;
            }
            j -= c;
        }
        unreachable!("nth beyond count")
    }
}

#[cfg(test)]
mod tests {
    use super::FileSet;
    use rand::Rng;

    /// The bit set answers as a plain list of flags does, across word boundaries and in
    /// sub-ranges (dbench's per-directory rename targets).
    #[test]
    fn file_set_matches_a_flag_list() {
        let mut rng = sim::RngStreams::new(7).stream("test.fileset");
        for len in [1, 63, 64, 65, 180, 200] {
            let mut flags: Vec<bool> = (0..len).map(|f| f % 3 == 0).collect();
            let mut set = FileSet::new(len, |f| f % 3 == 0);
            for _ in 0..2000 {
                let f = rng.random_range(0..len);
                let on = rng.random_bool(0.5);
                flags[f] = on;
                set.set(f, on);
                let lo = rng.random_range(0..len);
                let hi = rng.random_range(lo..=len);
                for want in [false, true] {
                    let naive: Vec<usize> = (lo..hi).filter(|&i| flags[i] == want).collect();
                    assert_eq!(set.count(lo..hi, want), naive.len());
                    for (j, &i) in naive.iter().enumerate() {
                        assert_eq!(set.nth(lo..hi, want, j), i);
                    }
                }
                assert_eq!(set.has(f), on);
            }
        }
    }
}
