//! The operations a simulated task performs on a filesystem, filesystem-independent (the
//! system calls of the VFS), with their scenario-file spelling.

use sim::Nanos;

/// A path as an operation carries it: shared, so a client that repeats operations on the
/// same files clones a reference count, not the text.
pub type OpPath = std::sync::Arc<str>;

/// One filesystem operation a task performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Create a regular file.
    Create(OpPath),
    /// Create a directory.
    Mkdir(OpPath),
    /// Buffered write of `bytes` at the end of the file.
    Write(OpPath, u64),
    /// A buffered write of `bytes` to a range not adjacent to the file's other dirty pages
    /// (a random write: one more outstanding extent).
    WriteRange(OpPath, u64),
    /// A buffered write of `bytes` at `offset` inside the file's written size, a dirty
    /// range of its own: written back as an ordered extent of its own.
    WriteRangeAt(OpPath, u64, u64),
    /// An O_DIRECT write of `bytes` at `offset` (an overwrite inside the file).
    DirectWrite(OpPath, u64, u64),
    /// setattr(2) without a size change (chmod, utimes; what dbench's Sfileinfo does).
    Setattr(OpPath),
    /// stat(2): a lookup and the inode's attributes (getattr), nothing written.
    Stat(OpPath),
    /// Read a directory to its end: opendir, getdents64 until it returns 0 (a first call
    /// that returns the entries, a second that returns none), closedir.
    Readdir(OpPath),
    /// A write through a shared memory mapping (btrfs_page_mkwrite).
    MmapWrite(OpPath, u64),
    /// A write through a shared mapping of `bytes` at `offset`, inside the file's size.
    MmapWriteAt(OpPath, u64, u64),
    /// A buffered write (pwrite) of `bytes` at `offset`: an overwrite inside the file's
    /// written size, or an append at its end.
    WriteAt(OpPath, u64, u64),
    /// A buffered write through an O_SYNC descriptor: the write, then generic_write_sync.
    WriteOsync(OpPath, u64),
    /// sync(2): write back every dirty file, then commit (btrfs_sync_fs).
    Sync,
    /// Write back dirty pages and wait (filemap_write_and_wait, no log).
    Writeback(OpPath),
    /// fsync(2).
    Fsync(OpPath),
    /// link(2) src → dst.
    Link(OpPath, OpPath),
    /// rename(2) src → dst.
    Rename(OpPath, OpPath),
    /// unlink(2).
    Unlink(OpPath),
    /// rmdir(2).
    Rmdir(OpPath),
    /// A new block group is allocated (btrfs_make_block_group → log full commit).
    NewBlockGroup,
    /// Commit the running transaction (btrfs_commit_transaction, e.g. sync(2)).
    Commit,
    /// truncate(2) / ftruncate to a size (shrink or grow).
    Truncate(OpPath, u64),
    /// fallocate(2) mode 0 (or FALLOC_FL_KEEP_SIZE): preallocate [offset, offset + len).
    Fallocate {
        /// File.
        path: OpPath,
        /// Range start.
        offset: u64,
        /// Range length.
        len: u64,
        /// FALLOC_FL_KEEP_SIZE.
        keep_size: bool,
    },
    /// fallocate(2) FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE over [offset, offset + len).
    PunchHole(OpPath, u64, u64),
    /// setxattr(2) of the named attribute.
    Setxattr(OpPath, String),
    /// removexattr(2) of the named attribute.
    Removexattr(OpPath, String),
    /// fdatasync(2).
    Fdatasync(OpPath),
    /// A ranged fsync: vfs_fsync_range(file, offset, offset + len - 1, datasync = 0), as
    /// msync(MS_SYNC) and an O_SYNC write make it.
    FsyncRange(OpPath, u64, u64),
    /// A ranged fdatasync: vfs_fsync_range(file, offset, offset + len - 1, datasync = 1),
    /// as an O_DSYNC write makes it.
    FdatasyncRange(OpPath, u64, u64),
    /// The inode is evicted from the inode cache (echo 2 > /proc/sys/vm/drop_caches
    /// reaching it) and read back from disk at its next use.
    Evict(OpPath),
    /// sync_file_range(2) with WAIT_BEFORE | WRITE | WAIT_AFTER over the whole file.
    SyncFileRange(OpPath),
    /// syncfs(2) on this filesystem.
    Syncfs,
    /// Setup: count this many bytes of existing tree blocks as used metadata and give the
    /// rest of the device to data (an aged, full filesystem).
    FillMetadata(u64),
    /// A sequential buffered read of SIZE bytes from the file's read position.
    Read(OpPath, u64),
    /// Setup: a file of SIZE bytes already on disk, committed and not cached.
    Populate(OpPath, u64),
    /// open(2) of a path, the descriptor bound to a name (`@NAME`, kept as `@NAME`): later
    /// operations given `@NAME` act on the inode it opened, whatever its names are then.
    Open(OpPath, OpPath),
    /// close(2) of a descriptor (`@NAME`): its reference on the inode is dropped.
    Close(OpPath),
    /// FICLONERANGE (ioctl_file_clone → btrfs_remap_file_range): the destination's
    /// [dst_off, dst_off + len) comes to share the source's extents over
    /// [src_off, src_off + len).
    Clone {
        /// Source file.
        src: OpPath,
        /// Source range start.
        src_off: u64,
        /// Destination file (may be the source: then the ranges must not overlap).
        dst: OpPath,
        /// Destination range start.
        dst_off: u64,
        /// Range length.
        len: u64,
    },
    /// Sleep.
    Sleep(Nanos),
    /// symlink(2): a symbolic link at the path (second) whose content is the target
    /// (first), kept as written (btrfs_symlink: an inline file extent item).
    Symlink(OpPath, OpPath),
    /// mknod(2) of a device node: a block device when the flag is set, else a character
    /// device (btrfs_mknod: an inode with i_rdev and no data).
    Mknod(OpPath, bool),
    /// mkfifo(3), mknod(2) with S_IFIFO (btrfs_mknod).
    Mkfifo(OpPath),
    /// open(2) of a directory (first) with O_TMPFILE: a new file with no name
    /// (btrfs_tmpfile), held by the descriptor (second, `@NAME`).
    Tmpfile(OpPath, OpPath),
    /// linkat(2) of a descriptor (first, `@NAME`) with AT_EMPTY_PATH: a name (second) for
    /// the inode it holds, an O_TMPFILE one included (btrfs_link).
    LinkFd(OpPath, OpPath),
    /// chmod(2): btrfs_setattr with ATTR_MODE, the permission bits (at most 0o7777).
    Chmod(OpPath, u32),
    /// A power failure and the mount after it (xfstests' `_flakey_drop_and_remount`):
    /// every write not yet durable is dropped, and the run goes on on the filesystem
    /// recovered from the device. A barrier: it waits until every other task has finished
    /// or reached its own `power-fail`.
    PowerFail,
}

impl Op {
    /// Operation kind name (used in point labels and latency reports).
    pub fn kind(&self) -> &'static str {
        self.names().0
    }

    /// The open file an operation acts on, the one argument that may be a descriptor
    /// (`@NAME`); `close`'s descriptor too. None for namespace operations and the rest.
    pub fn file(&self) -> Option<&OpPath> {
        match self {
            Op::Write(p, _)
            | Op::WriteAt(p, ..)
            | Op::WriteRange(p, _)
            | Op::WriteRangeAt(p, ..)
            | Op::DirectWrite(p, ..)
            | Op::Setattr(p)
            | Op::Stat(p)
            | Op::MmapWrite(p, _)
            | Op::MmapWriteAt(p, ..)
            | Op::WriteOsync(p, _)
            | Op::Writeback(p)
            | Op::Fsync(p)
            | Op::Fdatasync(p)
            | Op::FsyncRange(p, ..)
            | Op::FdatasyncRange(p, ..)
            | Op::Truncate(p, _)
            | Op::Fallocate { path: p, .. }
            | Op::PunchHole(p, ..)
            | Op::Setxattr(p, _)
            | Op::Removexattr(p, _)
            | Op::SyncFileRange(p)
            | Op::Close(p)
            | Op::Chmod(p, _)
            | Op::LinkFd(p, _) => Some(p),
            _ => None,
        }
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
            Op::Write(..) | Op::WriteAt(..) => "write",
            Op::WriteRange(..) | Op::WriteRangeAt(..) => "write-range",
            Op::DirectWrite(..) => "dio-write",
            Op::Setattr(_) => "setattr",
            Op::Stat(_) => "stat",
            Op::Readdir(_) => "readdir",
            Op::WriteOsync(..) => "write-osync",
            Op::MmapWrite(..) | Op::MmapWriteAt(..) => "mmap-write",
            Op::Sync => "sync",
            Op::Writeback(_) => "writeback",
            Op::Fsync(_) | Op::FsyncRange(..) => "fsync",
            Op::Link(..) => "link",
            Op::Rename(..) => "rename",
            Op::Unlink(_) => "unlink",
            Op::Rmdir(_) => "rmdir",
            Op::NewBlockGroup => "new-block-group",
            Op::Commit => "commit",
            Op::Truncate(..) => "truncate",
            Op::Fallocate { .. } => "fallocate",
            Op::PunchHole(..) => "punch-hole",
            Op::Setxattr(..) => "setxattr",
            Op::Removexattr(..) => "removexattr",
            Op::Fdatasync(_) | Op::FdatasyncRange(..) => "fdatasync",
            Op::Evict(_) => "evict",
            Op::SyncFileRange(_) => "sync-file-range",
            Op::Syncfs => "syncfs",
            Op::FillMetadata(_) => "fill-metadata",
            Op::Read(..) => "read",
            Op::Populate(..) => "populate",
            Op::Open(..) => "open",
            Op::Close(_) => "close",
            Op::Clone { .. } => "clone",
            Op::Sleep(_) => "sleep",
            Op::Symlink(..) => "symlink",
            Op::Mknod(..) => "mknod",
            Op::Mkfifo(_) => "mkfifo",
            Op::Tmpfile(..) => "tmpfile",
            Op::LinkFd(..) => "link",
            Op::Chmod(..) => "chmod",
            Op::PowerFail => "power-fail",
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
            | Op::Readdir(p)
            | Op::Writeback(p)
            | Op::Fsync(p)
            | Op::Unlink(p)
            | Op::Fdatasync(p)
            | Op::SyncFileRange(p)
            | Op::Evict(p)
            | Op::Close(p)
            | Op::Rmdir(p) => write!(f, "{k} {p}"),
            Op::Open(p, fd) => write!(f, "{k} {p} as {}", &fd[1..]),
            Op::Truncate(p, n) => write!(f, "{k} {p} {}", size_text(*n)),
            Op::Fallocate {
                path,
                offset,
                len,
                keep_size,
            } => {
                write!(f, "{k} {path} {} {}", size_text(*offset), size_text(*len))?;
                if *keep_size {
                    write!(f, " keep-size")?;
                }
                Ok(())
            }
            Op::PunchHole(p, o, n) => write!(f, "{k} {p} {} {}", size_text(*o), size_text(*n)),
            Op::Setxattr(p, name) | Op::Removexattr(p, name) => write!(f, "{k} {p} {name}"),
            Op::FillMetadata(n) => write!(f, "{k} {}", size_text(*n)),
            Op::DirectWrite(p, o, n)
            | Op::MmapWriteAt(p, o, n)
            | Op::WriteAt(p, o, n)
            | Op::WriteRangeAt(p, o, n)
            | Op::FsyncRange(p, o, n)
            | Op::FdatasyncRange(p, o, n) => {
                write!(f, "{k} {p} {} {}", size_text(*o), size_text(*n))
            }
            Op::Write(p, n)
            | Op::WriteOsync(p, n)
            | Op::MmapWrite(p, n)
            | Op::WriteRange(p, n)
            | Op::Read(p, n)
            | Op::Populate(p, n) => {
                write!(f, "{k} {p} {}", size_text(*n))
            }
            Op::Link(a, b) | Op::Rename(a, b) => write!(f, "{k} {a} {b}"),
            Op::NewBlockGroup | Op::Commit | Op::Sync | Op::Syncfs | Op::PowerFail => {
                write!(f, "{k}")
            }
            Op::Clone {
                src,
                src_off,
                dst,
                dst_off,
                len,
            } => write!(
                f,
                "{k} {src} {} {dst} {} {}",
                size_text(*src_off),
                size_text(*dst_off),
                size_text(*len)
            ),
            Op::Sleep(d) => write!(f, "{k} {d}ns"),
            Op::Symlink(target, p) | Op::LinkFd(target, p) => write!(f, "{k} {target} {p}"),
            Op::Mknod(p, block) => write!(f, "{k} {p} {}", if *block { "b" } else { "c" }),
            Op::Mkfifo(p) => write!(f, "{k} {p}"),
            Op::Tmpfile(dir, fd) => write!(f, "{k} {dir} as {}", &fd[1..]),
            Op::Chmod(p, mode) => write!(f, "{k} {p} {mode:04o}"),
        }
    }
}

/// Parses one operation line ("fsync /a/x", "write /a/x 4k", "sleep 10ms").
pub fn parse_op(s: &str) -> Result<Op, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    let words = words.as_slice();
    match words.first().copied() {
        Some(w @ ("fsync" | "fdatasync")) if words.len() != 2 => fsync_range_op(w, words),
        Some(
            w @ ("create" | "mkdir" | "stat" | "readdir" | "setattr" | "writeback" | "fsync"
            | "unlink" | "rmdir" | "fdatasync" | "sync-file-range" | "evict"),
        ) => path_op(w, words),
        Some("truncate") => truncate_op(words),
        Some(w @ ("fallocate" | "punch-hole")) => range_op(w, words),
        Some(w @ ("setxattr" | "removexattr")) => setxattr_op(w, words),
        Some("syncfs") => {
            want(words, 1, "syncfs")?;
            Ok(Op::Syncfs)
        }
        Some("fill-metadata") => fill_metadata_op(words),
        Some(w @ ("read" | "populate")) => read_op(w, words),
        Some("dio-write") => dio_write_op(words),
        Some(w @ ("mmap-write" | "write" | "write-range")) if words.len() == 4 => {
            write_at_op(w, words)
        }
        Some(w @ ("write" | "mmap-write" | "write-osync" | "write-range")) => write_op(w, words),
        Some("sync") => {
            want(words, 1, "sync")?;
            Ok(Op::Sync)
        }
        Some("link") if words.get(1).is_some_and(|w| w.starts_with('@')) => link_fd_op(words),
        Some(w @ ("symlink" | "mknod" | "mkfifo" | "tmpfile" | "chmod")) => special_op(w, words),
        Some("link") => {
            want(words, 3, "link SRC DST")?;
            Ok(Op::Link(op_path(words[1])?, op_path(words[2])?))
        }
        Some("rename") => {
            want(words, 3, "rename SRC DST")?;
            Ok(Op::Rename(op_path(words[1])?, op_path(words[2])?))
        }
        Some("new-block-group") => {
            want(words, 1, "new-block-group")?;
            Ok(Op::NewBlockGroup)
        }
        Some("commit") => {
            want(words, 1, "commit")?;
            Ok(Op::Commit)
        }
        Some("sleep") => sleep_op(words),
        Some("power-fail") => {
            want(words, 1, "power-fail")?;
            Ok(Op::PowerFail)
        }
        Some("clone") => clone_op(words),
        Some("open") => open_op(words),
        Some("close") => {
            want(words, 2, "close @NAME")?;
            if !words[1].starts_with('@') {
                return Err(format!(
                    "expected 'close @NAME' (a descriptor that 'open PATH as NAME' opened), got '{}'",
                    words[1]
                ));
            }
            Ok(Op::Close(fd_name(&words[1][1..])?))
        }
        Some(other) => {
            let kinds: Vec<&str> = OPS
                .iter()
                .filter_map(|(_, usage, _)| usage.split_whitespace().next())
                .collect();
            Err(format!(
                "unknown operation '{other}': expected one of {}",
                kinds.join(", ")
            ))
        }
        None => Err("empty operation".into()),
    }
}

/// Whether the line has `n` words, else the usage it should follow.
fn want(words: &[&str], n: usize, usage: &str) -> Result<(), String> {
    if words.len() == n {
        Ok(())
    } else {
        Err(format!("expected '{usage}'"))
    }
}

fn op_path(p: &str) -> Result<OpPath, String> {
    if p.starts_with('/') {
        Ok(p.into())
    } else if p.starts_with('@') {
        Err(format!(
            "expected an absolute path, got the descriptor '{p}' (this operation takes a path)"
        ))
    } else {
        Err(format!("expected an absolute path, got '{p}'"))
    }
}

/// The file an operation on an open file acts on: an absolute path, or `@NAME`, a
/// descriptor `open PATH as NAME` opened.
fn file_arg(p: &str) -> Result<OpPath, String> {
    match p.strip_prefix('@') {
        Some(name) => fd_name(name),
        None => op_path(p),
    }
}

/// `@NAME` of a descriptor name: letters, digits, `_` and `-`, at most 32.
fn fd_name(name: &str) -> Result<OpPath, String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > 32 || !name.chars().all(ok) {
        return Err(format!(
            "expected a descriptor name of letters, digits, '_' or '-' (at most 32), got '{name}'"
        ));
    }
    Ok(format!("@{name}").into())
}

/// The longest symlink target: PATH_MAX (4096, include/uapi/linux/limits.h) with its NUL;
/// symlink(2) of a longer one is ENAMETOOLONG (fs/namei.c: getname), of an empty one ENOENT.
pub const SYMLINK_MAX: usize = 4095;

/// symlink, mknod, mkfifo, tmpfile and chmod: the new inode kinds and modes.
fn special_op(w: &str, words: &[&str]) -> Result<Op, String> {
    match w {
        "symlink" => {
            want(words, 3, "symlink TARGET PATH")?;
            if words[1].len() > SYMLINK_MAX {
                return Err(format!(
                    "expected a TARGET of at most {SYMLINK_MAX} bytes in 'symlink TARGET PATH' (ENAMETOOLONG), got {}",
                    words[1].len()
                ));
            }
            Ok(Op::Symlink(words[1].into(), op_path(words[2])?))
        }
        "mknod" => {
            let block = match words.get(2).copied() {
                None | Some("c") => false,
                Some("b") => true,
                Some(other) => {
                    return Err(format!(
                        "expected 'mknod PATH [c|b]' (a character or block device), got '{other}'"
                    ))
                }
            };
            if words.len() > 3 {
                return Err("expected 'mknod PATH [c|b]'".into());
            }
            Ok(Op::Mknod(op_path(words[1])?, block))
        }
        "mkfifo" => {
            want(words, 2, "mkfifo PATH")?;
            Ok(Op::Mkfifo(op_path(words[1])?))
        }
        "tmpfile" => {
            want(words, 4, "tmpfile DIR as NAME")?;
            if words[2] != "as" {
                return Err(format!(
                    "expected 'tmpfile DIR as NAME', got '{}'",
                    words[2]
                ));
            }
            let name = words[3].strip_prefix('@').unwrap_or(words[3]);
            Ok(Op::Tmpfile(op_path(words[1])?, fd_name(name)?))
        }
        _ => chmod_op(words),
    }
}

/// `chmod PATH MODE`: MODE in octal (`644`, `0640`), at most 7777.
fn chmod_op(words: &[&str]) -> Result<Op, String> {
    want(words, 3, "chmod PATH MODE")?;
    let octal = words[2].bytes().all(|b| (b'0'..=b'7').contains(&b));
    let mode = u32::from_str_radix(words[2], 8)
        .ok()
        .filter(|_| octal)
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| {
            format!(
                "expected an octal MODE of at most 7777 in 'chmod PATH MODE' (0640), got '{}'",
                words[2]
            )
        })?;
    Ok(Op::Chmod(file_arg(words[1])?, mode))
}

/// `link @NAME PATH`: linkat(2) of a descriptor (AT_EMPTY_PATH).
fn link_fd_op(words: &[&str]) -> Result<Op, String> {
    want(words, 3, "link @NAME PATH")?;
    Ok(Op::LinkFd(file_arg(words[1])?, op_path(words[2])?))
}

/// `open PATH as NAME`.
fn open_op(words: &[&str]) -> Result<Op, String> {
    want(words, 4, "open PATH as NAME")?;
    if words[2] != "as" {
        return Err(format!("expected 'open PATH as NAME', got '{}'", words[2]));
    }
    let name = words[3].strip_prefix('@').unwrap_or(words[3]);
    Ok(Op::Open(op_path(words[1])?, fd_name(name)?))
}

/// A ranged fsync or fdatasync: `fsync PATH OFFSET LEN`.
fn fsync_range_op(w: &str, words: &[&str]) -> Result<Op, String> {
    // vfs_fsync_range(file, OFFSET, OFFSET + LEN - 1, datasync): no system call reaches
    // ->fsync with an empty range (msync of 0 bytes returns before it, mm/msync.c;
    // generic_write_sync runs only after bytes were written), so LEN 0 is refused rather
    // than guessed.
    let usage = format!("{w} PATH [OFFSET LEN]");
    want(words, 4, &usage)?;
    let o = crate::units::parse_size(words[2]).map_err(|e| format!("{e} (OFFSET of '{usage}')"))?;
    let n = crate::units::parse_size(words[3]).map_err(|e| format!("{e} (LEN of '{usage}')"))?;
    if n == 0 {
        return Err(format!(
            "expected a LEN > 0 in '{usage}': no system call reaches ->fsync with an empty range (msync of 0 bytes returns first); for the whole file write '{w} PATH'"
        ));
    }
    if n > 1 << 40 || o > 1 << 40 {
        return Err(format!(
            "expected an OFFSET and a LEN of at most 1T in '{usage}', got {o} {n}"
        ));
    }
    let p = file_arg(words[1])?;
    Ok(if w == "fsync" {
        Op::FsyncRange(p, o, n)
    } else {
        Op::FdatasyncRange(p, o, n)
    })
}

/// The operations of one path: create, mkdir, stat, readdir, setattr, writeback, fsync, unlink,
/// rmdir, fdatasync, sync-file-range, evict.
fn path_op(w: &str, words: &[&str]) -> Result<Op, String> {
    want(words, 2, &format!("{w} PATH"))?;
    let p = match w {
        "create" | "mkdir" | "readdir" | "unlink" | "rmdir" | "evict" => op_path(words[1])?,
        _ => file_arg(words[1])?,
    };
    Ok(match w {
        "create" => Op::Create(p),
        "mkdir" => Op::Mkdir(p),
        "stat" => Op::Stat(p),
        "readdir" => Op::Readdir(p),
        "setattr" => Op::Setattr(p),
        "writeback" => Op::Writeback(p),
        "fsync" => Op::Fsync(p),
        "unlink" => Op::Unlink(p),
        "fdatasync" => Op::Fdatasync(p),
        "sync-file-range" => Op::SyncFileRange(p),
        "evict" => Op::Evict(p),
        _ => Op::Rmdir(p),
    })
}

fn truncate_op(words: &[&str]) -> Result<Op, String> {
    want(words, 3, "truncate PATH SIZE")?;
    let n = crate::units::parse_size(words[2])?;
    if n > 1 << 40 {
        return Err("expected a size of at most 1T".into());
    }
    Ok(Op::Truncate(file_arg(words[1])?, n))
}

/// fallocate and punch-hole: a path, an offset and a length.
fn range_op(w: &str, words: &[&str]) -> Result<Op, String> {
    let usage = if w == "fallocate" {
        "fallocate PATH OFFSET LEN [keep-size]"
    } else {
        "punch-hole PATH OFFSET LEN"
    };
    let keep_size = w == "fallocate" && words.len() == 5;
    if keep_size && words[4] != "keep-size" {
        return Err(format!("expected '{usage}', got '{}'", words[4]));
    }
    want(words, if keep_size { 5 } else { 4 }, usage)?;
    let offset = crate::units::parse_size(words[2])?;
    let len = crate::units::parse_size(words[3])?;
    if len == 0 || offset > 1 << 40 || len > 1 << 40 {
        return Err("expected an offset of at most 1T and a length > 0 and at most 1T".into());
    }
    let p = file_arg(words[1])?;
    Ok(if w == "fallocate" {
        Op::Fallocate {
            path: p,
            offset,
            len,
            keep_size,
        }
    } else {
        Op::PunchHole(p, offset, len)
    })
}

/// setxattr or removexattr PATH NAME.
fn setxattr_op(w: &str, words: &[&str]) -> Result<Op, String> {
    want(words, 3, &format!("{w} PATH NAME"))?;
    let name = words[2];
    if name.len() > 255 || !name.contains('.') {
        return Err(format!(
            "expected an xattr name with a namespace prefix (user.x), at most 255 bytes, got '{name}'"
        ));
    }
    let p = file_arg(words[1])?;
    Ok(if w == "setxattr" {
        Op::Setxattr(p, name.to_string())
    } else {
        Op::Removexattr(p, name.to_string())
    })
}

fn fill_metadata_op(words: &[&str]) -> Result<Op, String> {
    want(words, 2, "fill-metadata SIZE")?;
    let n = crate::units::parse_size(words[1])?;
    if n == 0 || n > 1 << 40 {
        return Err("expected a size > 0 and at most 1T".into());
    }
    Ok(Op::FillMetadata(n))
}

/// read and populate: a path and a size.
fn read_op(w: &str, words: &[&str]) -> Result<Op, String> {
    let usage = if w == "mmap-write" {
        "mmap-write PATH [OFFSET] SIZE".to_string()
    } else {
        format!("{w} PATH SIZE")
    };
    want(words, 3, &usage)?;
    let n = crate::units::parse_size(words[2])?;
    if n == 0 || n > 1 << 40 {
        return Err("expected a size > 0 and at most 1T".into());
    }
    let p = op_path(words[1])?;
    Ok(if w == "read" {
        Op::Read(p, n)
    } else {
        Op::Populate(p, n)
    })
}

fn dio_write_op(words: &[&str]) -> Result<Op, String> {
    want(words, 4, "dio-write PATH OFFSET SIZE")?;
    let o = crate::units::parse_size(words[2])?;
    let n = crate::units::parse_size(words[3])?;
    if n == 0 || n > 1 << 40 || o > 1 << 40 {
        return Err("expected an offset at most 1T and a size > 0 and at most 1T".into());
    }
    Ok(Op::DirectWrite(file_arg(words[1])?, o, n))
}

/// write, write-range and mmap-write with an offset: PATH OFFSET SIZE.
fn write_at_op(w: &str, words: &[&str]) -> Result<Op, String> {
    let o = crate::units::parse_size(words[2])?;
    let n = crate::units::parse_size(words[3])?;
    if n == 0 || n > 1 << 40 || o > 1 << 40 {
        return Err("expected an offset at most 1T and a size > 0 and at most 1T".into());
    }
    let p = file_arg(words[1])?;
    Ok(match w {
        "write" => Op::WriteAt(p, o, n),
        "write-range" => Op::WriteRangeAt(p, o, n),
        _ => Op::MmapWriteAt(p, o, n),
    })
}

/// write, mmap-write, write-osync and write-range: PATH SIZE.
fn write_op(w: &str, words: &[&str]) -> Result<Op, String> {
    want(words, 3, &format!("{w} PATH SIZE"))?;
    let n = crate::units::parse_size(words[2])?;
    if n == 0 || n > 1 << 40 {
        return Err("expected a size > 0 and at most 1T".into());
    }
    let p = file_arg(words[1])?;
    Ok(match w {
        "write" => Op::Write(p, n),
        "write-range" => Op::WriteRange(p, n),
        "mmap-write" => Op::MmapWrite(p, n),
        _ => Op::WriteOsync(p, n),
    })
}

/// The block size clone offsets and lengths must be multiples of (btrfs's sectorsize,
/// `fs_info->sb->s_blocksize`, 4 KiB on the modelled filesystems).
pub const CLONE_BLOCK: u64 = 4096;

/// `clone SRC SRC_OFF DST DST_OFF LEN`: what generic_remap_checks (fs/read_write.c@v5.10)
/// can refuse without the files' sizes: offsets not block aligned, LEN 0 (FICLONERANGE's
/// "to the source's EOF", not modelled), overlapping ranges of one file (EINVAL).
fn clone_op(words: &[&str]) -> Result<Op, String> {
    let usage = "clone SRC SRC_OFF DST DST_OFF LEN";
    want(words, 6, usage)?;
    let num = |i: usize, what: &str| {
        crate::units::parse_size(words[i]).map_err(|e| format!("{e} ({what} of '{usage}')"))
    };
    let (src_off, dst_off, len) = (num(2, "SRC_OFF")?, num(4, "DST_OFF")?, num(5, "LEN")?);
    if len == 0 || src_off > 1 << 40 || dst_off > 1 << 40 || len > 1 << 40 {
        return Err(format!(
            "expected offsets of at most 1T and a LEN > 0 and at most 1T in '{usage}' (LEN 0, to the source's EOF, is not modelled)"
        ));
    }
    if src_off % CLONE_BLOCK != 0 || dst_off % CLONE_BLOCK != 0 {
        return Err(format!(
            "expected SRC_OFF and DST_OFF aligned to the {CLONE_BLOCK}-byte block in '{usage}', got {src_off} and {dst_off} (EINVAL: generic_remap_checks)"
        ));
    }
    let (src, dst) = (op_path(words[1])?, op_path(words[3])?);
    if src == dst && src_off < dst_off + len && dst_off < src_off + len {
        return Err(format!(
            "expected ranges that do not overlap when SRC and DST are the same file in '{usage}', got [{src_off}, {}) and [{dst_off}, {}) (EINVAL: generic_remap_checks)",
            src_off + len,
            dst_off + len
        ));
    }
    Ok(Op::Clone {
        src,
        src_off,
        dst,
        dst_off,
        len,
    })
}

fn sleep_op(words: &[&str]) -> Result<Op, String> {
    want(words, 2, "sleep DURATION")?;
    let d = sim::parse_duration(words[1])?;
    if d > 3600 * sim::S {
        return Err("expected a duration of at most 1h".into());
    }
    Ok(Op::Sleep(d))
}

/// An operation that could not run (bad path and the like).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError(pub String);

/// Every operation a scenario file can name: (an example line, usage, what it models).
pub const OPS: [(&str, &str, &str); 41] = [
    ("create /f", "create PATH", "btrfs_create: a new inode (generation = running transaction, needs full sync)"),
    ("mkdir /d", "mkdir PATH", "btrfs_mkdir: a new directory"),
    ("write /f 4k", "write PATH SIZE", "buffered write: data space reserved, pages dirtied, no transaction; `write PATH OFFSET SIZE` writes at OFFSET: an overwrite inside the file, or past EOF after btrfs_cont_expand's hole (btrfs)"),
    ("mmap-write /f 4k", "mmap-write PATH [OFFSET] SIZE", "a write through a shared mapping: btrfs_page_mkwrite stamps last_trans, last_sub_trans, then last_log_commit without the inode lock (point page_mkwrite:last_sub_trans_set between; from 5.13 under i_mmap_lock shared). Without OFFSET the pages are appended; with it they overwrite [OFFSET, OFFSET + SIZE), which must lie inside the written file (a mapping cannot extend it), and writeback puts one extent there (btrfs only; ext3/ext4 take it as a write)"),
    ("setattr /f", "setattr PATH", "btrfs_setattr without a size change (chmod, utimes): btrfs_dirty_inode joins the transaction"),
    ("writeback /f", "writeback PATH", "filemap write and wait: one ordered extent, its file extent item inserted in the running transaction"),
    ("fsync /f", "fsync PATH [OFFSET LEN]", "btrfs_sync_file: writeback, skip checks, btrfs_log_inode_parent, btrfs_sync_log or a full commit. With OFFSET LEN a ranged fsync (vfs_fsync_range, as msync and O_SYNC writes make): btrfs of 5.10-5.15 sets the range to the whole file (487781796d30), so it writes back and logs exactly what a full fsync does (btrfs only)"),
    ("link /f /g", "link SRC DST", "btrfs_link + btrfs_log_new_name"),
    ("rename /f /g", "rename SRC DST", "btrfs_rename + btrfs_record_unlink_dir (across directories) + btrfs_log_new_name. Over an existing DST (a file over a file, a directory over an empty directory; the same inode: nothing) the target is unlinked first: btrfs_unlink_inode (its name removed from the log, drop_nlink, btrfs_update_inode), an orphan item at nlink 0 and the final iput's truncation, deferred while a descriptor holds it; RENAME_EXCHANGE is not modelled"),
    ("unlink /f", "unlink PATH", "btrfs_unlink: btrfs_record_unlink_dir(for_rename = 0); the last name frees the data (pinned)"),
    ("rmdir /d", "rmdir PATH", "btrfs_rmdir: the parent inherits the removed directory's recent last_unlink_trans"),
    ("new-block-group", "new-block-group", "btrfs_make_block_group: marks the running transaction for full commits"),
    ("commit", "commit", "btrfs_commit_transaction of the running transaction (joins it)"),
    ("sync", "sync", "sync(2): sync_inodes_sb writes back every dirty file, then btrfs_sync_fs attaches (btrfs_attach_transaction_barrier) and commits"),
    ("stat /f", "stat PATH", "stat(2): path lookup and getattr, no transaction"),
    ("write-osync /f 4k", "write-osync PATH SIZE", "write(2) on an O_SYNC (or O_DSYNC: 5.10/5.11 ignore datasync) descriptor: the buffered write, then generic_write_sync → btrfs_sync_file"),
    ("truncate /f 4k", "truncate PATH SIZE", "btrfs_setsize: growing updates i_size; shrinking (btrfs_truncate) drops extents past SIZE and sets NEEDS_FULL_SYNC"),
    ("fallocate /f 0 1m", "fallocate PATH OFFSET LEN [keep-size]", "btrfs_fallocate → __btrfs_prealloc_file_range: a preallocated extent per hole of the range (modified list), i_size to the end unless keep-size"),
    ("punch-hole /f 0 4k", "punch-hole PATH OFFSET LEN", "btrfs_punch_hole: btrfs_drop_extents over the range, fill_holes puts a hole extent map on the modified list"),
    ("setxattr /f user.a", "setxattr PATH NAME", "btrfs_setxattr_trans: an xattr item and btrfs_update_inode in a started transaction; LOG_INODE_ALL logs every xattr"),
    ("removexattr /f user.a", "removexattr PATH NAME", "btrfs_setxattr_trans with no value: the xattr item deleted, COPY_EVERYTHING set and btrfs_update_inode in a started transaction; an attribute the file lacks is ENODATA (the op fails); replay's replay_xattr_deletes drops xattrs a logged inode no longer has (ext3/ext4: an inode update, as setxattr)"),
    ("fdatasync /f", "fdatasync PATH [OFFSET LEN]", "btrfs_sync_file(datasync = 1): 5.10 and 5.11 ignore datasync, so the same path as fsync; with OFFSET LEN ranged as fsync's (btrfs only)"),
    ("evict /f", "evict PATH", "btrfs only: the inode leaves the inode cache (drop_caches: btrfs_evict_inode) unless it has dirty pages, writeback or an ordered extent in flight, or an operation in progress on it (then it stays cached, as inode_lru_isolate leaves it); read back, it has logged_trans, last_sub_trans, last_log_commit 0, last_trans = last_unlink_trans = the inode item's transid, no modified extents, and NEEDS_FULL_SYNC iff that transid is the running generation (btrfs_read_locked_inode)"),
    ("sync-file-range /f", "sync-file-range PATH", "sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER): writeback and wait, no log, no flush (fs/sync.c)"),
    ("syncfs", "syncfs", "syncfs(2) → sync_filesystem: writeback of every dirty file, then btrfs_sync_fs(wait = 1) commits"),
    ("fill-metadata 900m", "fill-metadata SIZE", "setup for space scenarios: SIZE of existing tree blocks counted as used metadata (chunks allocated for them), the rest of the device given to data, the global reserve resized (an aged, full filesystem)"),
    ("dio-write /f 0 4k", "dio-write PATH OFFSET SIZE", "btrfs only: an O_DIRECT write (btrfs_direct_write): data and outstanding-extent metadata reserved, a new extent written, its ordered extent finished by an endio worker; past EOF (after btrfs_cont_expand's hole for a gap) the extent is placed at OFFSET and i_size moves at that completion, which fsync waits for"),
    ("write-range /f 4k", "write-range PATH [OFFSET] SIZE", "btrfs only: a buffered write of a separate dirty range (one more outstanding extent to reserve metadata for), as fio's random buffered writes make; inside a file laid out to its size the bytes replace blocks inside i_size (at writeback: the first gap of the file's data that fits, else an overwrite from offset 0), otherwise they append. With OFFSET (inside the file's written size) the range is an ordered extent of its own at writeback: its file extent item at OFFSET (splitting the hole or extent there), its extent item and checksums, finished by the endio-write workers"),
    ("read /f 128k", "read PATH SIZE", "ext3/ext4 only: a sequential buffered read from the file's position; missing pages come in 128 KiB readahead windows, one synchronous READ each from the reader's I/O context"),
    ("populate /f 1g", "populate PATH SIZE", "ext3/ext4 setup: a file of SIZE already on disk (laid out contiguously, committed, not cached), as a benchmark's layout phase and drop_caches leave it"),
    ("open /f as F", "open PATH as NAME", "btrfs only: open(2), the descriptor named NAME: operations on an open file (write, fsync, setattr, truncate, ...) take @NAME for PATH and act on the inode opened, after a rename or unlink of its path too. Its reference keeps the inode cached (evict leaves it) and, unlinked, alive with its data and an orphan item until close; an fsync of a file with no names logs nothing (btrfs_log_inode_parent: i_nlink == 0, BTRFS_NO_LOG_SYNC)"),
    ("close @F", "close @NAME", "btrfs only: close(2) of the descriptor; the last reference on an unlinked inode is the final iput (btrfs_evict_inode: data, inode and orphan items dropped in the running transaction)"),
    ("clone /f 0 /g 0 4k", "clone SRC SRC_OFF DST DST_OFF LEN", "btrfs only: FICLONERANGE (btrfs_remap_file_range → btrfs_clone_files → btrfs_clone): both files' dirty pages written back and ordered extents waited for, then DST's range gets file extent items referring to SRC's extents (the same data, one more reference each; the data lives while any file refers to it), its old extents dropped (btrfs_punch_hole_range / btrfs_replace_file_extents), i_size grown to the range's end, and DST marked NEEDS_FULL_SYNC (its next fsync copies every item changed in the transaction). Offsets must be 4 KiB aligned, LEN too unless the source range ends at SRC's EOF; ranges past either file's EOF (the destination may start at it) and overlapping ranges of one file are EINVAL"),
    ("sleep 1ms", "sleep DURATION", "nothing for a while"),
    ("symlink /foo /d/bar", "symlink TARGET PATH", "btrfs_symlink: a new inode whose content, TARGET (at most 4095 bytes), is an inline file extent item written with it; i_size is its length. An fsync of its directory logs it in full through log_new_dir_dentries (BTRFS_FT_SYMLINK: LOG_INODE_ALL, xfstests generic/348). Data operations and fsync on it are refused (open(2) follows a symlink). ext3/ext4: a create"),
    ("mknod /d/dev", "mknod PATH [c|b]", "btrfs_mknod: a character (c, the default) or block (b) device node, an inode with i_rdev and no data; a directory fsync logs it LOG_INODE_EXISTS (its kind is in the inode item). Data operations and fsync on it are refused. ext3/ext4: a create"),
    ("mkfifo /d/fifo", "mkfifo PATH", "btrfs_mknod with S_IFIFO: a fifo, an inode with no data, as mknod. ext3/ext4: a create"),
    ("tmpfile /d as T", "tmpfile DIR as NAME", "btrfs only: open(2) of DIR with O_TMPFILE (btrfs_tmpfile): a new regular file with no name (i_nlink 0) and an orphan item, held by the descriptor @NAME; its fsync logs nothing (btrfs_log_inode_parent: i_nlink == 0), its last close deletes it (final iput)"),
    ("link @T /d/f", "link @NAME PATH", "btrfs only: linkat(2) of the descriptor with AT_EMPTY_PATH (btrfs_link): PATH names its inode; for an O_TMPFILE inode (i_nlink 0 before) the orphan item is deleted in the same transaction (btrfs_orphan_del), then btrfs_log_new_name"),
    ("chmod /f 0640", "chmod PATH MODE", "btrfs_setattr with ATTR_MODE: the permission bits (octal, at most 7777) in the inode item, through btrfs_dirty_inode as setattr; logged with the inode item and recovered (ext3/ext4: an inode update, as setattr)"),
    ("power-fail", "power-fail", "btrfs only: a power failure and the mount after it (xfstests' _flakey_drop_and_remount): a barrier (it waits until every other task has finished or reached its own power-fail), then every fsync that returned is judged (S2), the device drops what is not durable, the unmount waits for background work (its writes dropped), and the mount recovers the durable image (open_ctree, btrfs_recover_log_trees and its commit): the recovered names, extents, sizes and xattrs are the committed tree of a new generation, every inode read back from disk, no dirty page, no log, descriptors closed; later operations act on the recovered files"),
];
