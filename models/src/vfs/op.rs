//! The operations a simulated task performs on a filesystem, filesystem-independent (the
//! system calls of the VFS), with their scenario-file spelling.

use sim::Nanos;

/// One filesystem operation a task performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Create a regular file.
    Create(String),
    /// Create a directory.
    Mkdir(String),
    /// Buffered write of `bytes` at the end of the file.
    Write(String, u64),
    /// setattr(2) without a size change (chmod, utimes; what dbench's Sfileinfo does).
    Setattr(String),
    /// stat(2): a lookup and the inode's attributes (getattr), nothing written.
    Stat(String),
    /// A write through a shared memory mapping (btrfs_page_mkwrite).
    MmapWrite(String, u64),
    /// A buffered write through an O_SYNC descriptor: the write, then generic_write_sync.
    WriteOsync(String, u64),
    /// sync(2): write back every dirty file, then commit (btrfs_sync_fs).
    Sync,
    /// Write back dirty pages and wait (filemap_write_and_wait, no log).
    Writeback(String),
    /// fsync(2).
    Fsync(String),
    /// link(2) src → dst.
    Link(String, String),
    /// rename(2) src → dst.
    Rename(String, String),
    /// unlink(2).
    Unlink(String),
    /// rmdir(2).
    Rmdir(String),
    /// A new block group is allocated (btrfs_make_block_group → log full commit).
    NewBlockGroup,
    /// Commit the running transaction (btrfs_commit_transaction, e.g. sync(2)).
    Commit,
    /// Sleep.
    Sleep(Nanos),
}

impl Op {
    /// Operation kind name (used in point labels and latency reports).
    pub fn kind(&self) -> &'static str {
        self.names().0
    }
}

/// Each operation kind's name and its static `KIND:start` and `KIND:done` labels.
macro_rules! op_names {
    ($op:expr, $($variant:pat => $kind:literal),* $(,)?) => {
        match $op {
            $($variant => ($kind, concat!($kind, ":start"), concat!($kind, ":done")),)*
        }
    };
}

impl Op {
    /// The named points at the start and end of the operation.
    pub fn labels(&self) -> (&'static str, &'static str) {
        let (_, start, done) = self.names();
        (start, done)
    }

    fn names(&self) -> (&'static str, &'static str, &'static str) {
        op_names!(self,
            Op::Create(_) => "create",
            Op::Mkdir(_) => "mkdir",
            Op::Write(..) => "write",
            Op::Setattr(_) => "setattr",
            Op::Stat(_) => "stat",
            Op::WriteOsync(..) => "write-osync",
            Op::MmapWrite(..) => "mmap-write",
            Op::Sync => "sync",
            Op::Writeback(_) => "writeback",
            Op::Fsync(_) => "fsync",
            Op::Link(..) => "link",
            Op::Rename(..) => "rename",
            Op::Unlink(_) => "unlink",
            Op::Rmdir(_) => "rmdir",
            Op::NewBlockGroup => "new-block-group",
            Op::Commit => "commit",
            Op::Sleep(_) => "sleep",
        )
    }
}

/// Formats a byte size the way scenario files write it (`4k`, `1m`, `4097`).
fn size_text(n: u64) -> String {
    for (shift, unit) in [(30, "g"), (20, "m"), (10, "k")] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// The scenario-file line of an operation; `scenario::parse_op` reads it back.
impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let k = self.kind();
        match self {
            Op::Create(p)
            | Op::Mkdir(p)
            | Op::Setattr(p)
            | Op::Stat(p)
            | Op::Writeback(p)
            | Op::Fsync(p)
            | Op::Unlink(p)
            | Op::Rmdir(p) => write!(f, "{k} {p}"),
            Op::Write(p, n) | Op::WriteOsync(p, n) | Op::MmapWrite(p, n) => {
                write!(f, "{k} {p} {}", size_text(*n))
            }
            Op::Link(a, b) | Op::Rename(a, b) => write!(f, "{k} {a} {b}"),
            Op::NewBlockGroup | Op::Commit | Op::Sync => write!(f, "{k}"),
            Op::Sleep(d) => write!(f, "{k} {d}ns"),
        }
    }
}

/// An operation that could not run (bad path and the like).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError(pub String);

/// Every operation a scenario file can name: (an example line, usage, what it models).
pub const OPS: [(&str, &str, &str); 17] = [
    ("create /f", "create PATH", "btrfs_create: a new inode (generation = running transaction, needs full sync)"),
    ("mkdir /d", "mkdir PATH", "btrfs_mkdir: a new directory"),
    ("write /f 4k", "write PATH SIZE", "buffered write: data space reserved, pages dirtied, no transaction"),
    ("mmap-write /f 4k", "mmap-write PATH SIZE", "a write through a shared mapping: btrfs_page_mkwrite stamps last_trans, last_sub_trans, then last_log_commit without the inode lock (point page_mkwrite:last_sub_trans_set between)"),
    ("setattr /f", "setattr PATH", "btrfs_setattr without a size change (chmod, utimes): btrfs_dirty_inode joins the transaction"),
    ("writeback /f", "writeback PATH", "filemap write and wait: one ordered extent, its file extent item inserted in the running transaction"),
    ("fsync /f", "fsync PATH", "btrfs_sync_file: writeback, skip checks, btrfs_log_inode_parent, btrfs_sync_log or a full commit"),
    ("link /f /g", "link SRC DST", "btrfs_link + btrfs_log_new_name"),
    ("rename /f /g", "rename SRC DST", "btrfs_rename + btrfs_record_unlink_dir (across directories) + btrfs_log_new_name"),
    ("unlink /f", "unlink PATH", "btrfs_unlink: btrfs_record_unlink_dir(for_rename = 0); the last name frees the data (pinned)"),
    ("rmdir /d", "rmdir PATH", "btrfs_rmdir: the parent inherits the removed directory's recent last_unlink_trans"),
    ("new-block-group", "new-block-group", "btrfs_make_block_group: marks the running transaction for full commits"),
    ("commit", "commit", "btrfs_commit_transaction of the running transaction (joins it)"),
    ("sync", "sync", "sync(2): sync_inodes_sb writes back every dirty file, then btrfs_sync_fs attaches (btrfs_attach_transaction_barrier) and commits"),
    ("stat /f", "stat PATH", "stat(2): path lookup and getattr, no transaction"),
    ("write-osync /f 4k", "write-osync PATH SIZE", "write(2) on an O_SYNC descriptor: the buffered write, then generic_write_sync → btrfs_sync_file"),
    ("sleep 1ms", "sleep DURATION", "nothing for a while"),
];
