//! Writing result files atomically: a temp file in the target's directory, then a rename,
//! so an error never leaves a partial file behind.
//!
//! An output path is written as the file it names and nothing else:
//!
//! - a symlink is followed (up to [`MAX_HOPS`] links, a relative link resolved against the
//!   directory of the link) and its final *target* is replaced; the link itself stays;
//! - a path that exists and is not a regular file — a directory, a FIFO, a character or
//!   block device, a socket — is refused, as is any path that is or leads into `/proc`,
//!   `/dev` or `/sys` (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`), instead of being
//!   replaced by a regular file (a rename would silently swap the node for a file);
//! - the temp file (the `tempfile` crate) is created next to the target with mode
//!   0666 & ~umask, as a plain create would (a replaced file keeps its permission bits), and
//!   is removed on every error path (it is deleted when dropped unless persisted).

use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// How many symlinks an output path may go through (Linux's `MAXSYMLINKS`).
pub const MAX_HOPS: usize = 40;

/// Directories that hold no result files: kernel and device pseudo-filesystems.
const SPECIAL: [&str; 3] = ["/proc", "/dev", "/sys"];

/// What a path that exists is, in an error message ("a directory", "a FIFO", …).
fn kind(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

fn refuse(what: &str, expected: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("exists and is {what}, not {expected}"),
    )
}

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

/// `p` made absolute against the current directory, with `.` and `..` folded lexically.
fn absolute(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Refuses `p` when it is, or is inside, one of the [`SPECIAL`] directories: lexically, and
/// after resolving the symlinks of its directory (`/tmp/d -> /dev`).
fn check_special(p: &Path) -> std::io::Result<()> {
    let mut candidates = vec![absolute(p)];
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let (Ok(real), Some(name)) = (std::fs::canonicalize(dir), p.file_name()) {
        candidates.push(real.join(name));
    }
    for c in &candidates {
        if let Some(s) = SPECIAL.iter().find(|s| c.starts_with(s)) {
            return Err(invalid(format!(
                "is under {s}: expected a regular file outside /proc, /dev and /sys"
            )));
        }
    }
    Ok(())
}

/// The file that writing `path` replaces or creates: `path` itself, or the end of its
/// symlink chain (at most [`MAX_HOPS`] links; a relative link resolved against the link's
/// directory). Refuses a chain that ends at something that is not a regular file, one that
/// passes through `/proc`, `/dev` or `/sys`, and a chain too long. A chain ending at a path
/// that does not exist gives that path (a new file is created there).
pub fn resolve_target(path: &Path) -> std::io::Result<PathBuf> {
    if path.file_name().is_none() {
        return Err(invalid("not a file path".to_string()));
    }
    let mut cur = path.to_path_buf();
    for _ in 0..=MAX_HOPS {
        let m = match std::fs::symlink_metadata(&cur) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                check_special(&cur)?;
                return Ok(cur);
            }
            Err(e) => return Err(e),
        };
        if !m.file_type().is_symlink() {
            if !m.is_file() {
                return Err(refuse(kind(&m), "a regular file"));
            }
            check_special(&cur)?;
            return Ok(cur);
        }
        // A link inside /dev or /proc (`/dev/stdout`, `/proc/self/fd/1`) leads to a stream.
        check_special(&cur)?;
        let link = std::fs::read_link(&cur)?;
        cur = if link.is_absolute() {
            link
        } else {
            cur.parent().unwrap_or(Path::new("")).join(link)
        };
        if cur.file_name().is_none() {
            return Err(invalid(format!(
                "is a symlink to {}: expected a link to a file",
                cur.display()
            )));
        }
    }
    Err(invalid(format!(
        "more than {MAX_HOPS} symlinks: expected a chain of at most {MAX_HOPS}"
    )))
}

/// Refuses an output file path that would not write a regular file (see [`resolve_target`]).
/// A path that does not exist passes: writing it reports any error.
pub fn check_file(path: &Path) -> std::io::Result<()> {
    resolve_target(path).map(|_| ())
}

/// Makes `dir` ready for output files: refuses a path that exists and is not a directory
/// (or is under `/proc`, `/dev`, `/sys`), creates it (and its parents) if missing, and checks
/// that a file can be written in it.
pub fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    if let Ok(m) = std::fs::metadata(dir) {
        if !m.is_dir() {
            let what = if m.is_file() {
                "a regular file"
            } else {
                kind(&m)
            };
            return Err(refuse(what, "a directory"));
        }
    }
    check_special(&dir.join("x"))?;
    std::fs::create_dir_all(dir)?;
    // Again, now that every directory on the way exists and its links can be resolved.
    check_special(&dir.join("x"))?;
    let probe = dir.join(".probe");
    write_atomic(&probe, b"")?;
    std::fs::remove_file(probe)
}

/// A file being written: a temp file next to its target, moved into place by
/// [`Temp::persist`] and removed if dropped before that (any error path).
pub struct Temp {
    file: tempfile::NamedTempFile,
    target: PathBuf,
}

impl Temp {
    /// Starts writing `path`: resolves its target ([`resolve_target`]) and creates a temp
    /// file in the target's directory, mode 0666 & ~umask (a replaced regular file's
    /// permission bits when there is one).
    pub fn create(path: &Path) -> std::io::Result<Temp> {
        let target = resolve_target(path)?;
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let prefix = format!(".{name}.");
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // The mode given to open(2), which the umask then trims, as for a plain create.
            b.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let file = b.tempfile_in(dir)?;
        #[cfg(unix)]
        if let Ok(m) = std::fs::metadata(&target) {
            use std::os::unix::fs::PermissionsExt;
            let mode = m.permissions().mode() & 0o777;
            file.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        Ok(Temp { file, target })
    }

    /// The file to write.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.file.as_file_mut()
    }

    /// Syncs the temp file and renames it onto the target; on an error the temp file is
    /// removed.
    pub fn persist(self) -> std::io::Result<()> {
        self.file.as_file().sync_all()?;
        self.file
            .persist(&self.target)
            .map(|_| ())
            .map_err(|e| e.error)
    }
}

impl Write for Temp {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Writes `bytes` to `path` via a temporary file and a rename (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut t = Temp::create(path)?;
    t.file().write_all(bytes)?;
    t.persist()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fsyncsim-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_new_files_and_replaces_regular_ones_leaving_no_temp_file() {
        let d = scratch("write");
        let p = d.join("a.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(entries(&d), ["a.txt"]);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn refuses_a_directory_where_a_file_is_expected() {
        let d = scratch("dir");
        let sub = d.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let e = write_atomic(&sub, b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("is a directory"), "{e}");
        assert!(sub.is_dir());
        assert_eq!(entries(&d), ["sub"]);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn refuses_device_nodes_and_everything_under_dev_and_proc() {
        let e = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        for p in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "/dev/new"] {
            let e = write_atomic(Path::new(p), b"x").unwrap_err();
            assert!(e.to_string().contains("is under /"), "{p}: {e}");
        }
        let e = prepare_dir(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        let e = prepare_dir(Path::new("/dev/shm/fsyncsim-x")).unwrap_err();
        assert!(e.to_string().contains("is under /dev"), "{e}");
        // A symlink elsewhere that leads into /dev is refused too.
        let d = scratch("devlink");
        std::os::unix::fs::symlink("/dev/null", d.join("l")).unwrap();
        std::os::unix::fs::symlink("/dev", d.join("dl")).unwrap();
        let e = write_atomic(&d.join("l"), b"x").unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = write_atomic(&d.join("dl/null2"), b"x").unwrap_err();
        assert!(e.to_string().contains("is under /dev"), "{e}");
        assert!(!Path::new("/dev/null2").exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_chain_is_followed_and_its_target_replaced() {
        use std::os::unix::fs::symlink;
        let d = scratch("links");
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/tgt"), b"keep").unwrap();
        // l1 -> sub/l2 (relative to d) -> tgt (relative to sub) -> the file.
        symlink("tgt", d.join("sub/l2")).unwrap();
        symlink("sub/l2", d.join("l1")).unwrap();
        write_atomic(&d.join("l1"), b"new").unwrap();
        assert!(std::fs::symlink_metadata(d.join("l1"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::symlink_metadata(d.join("sub/l2"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(d.join("sub/tgt")).unwrap(), b"new");
        assert_eq!(entries(&d), ["l1", "sub"]);
        assert_eq!(entries(&d.join("sub")), ["l2", "tgt"]);
        // A dangling link creates its target.
        symlink("made", d.join("dangling")).unwrap();
        write_atomic(&d.join("dangling"), b"m").unwrap();
        assert_eq!(std::fs::read(d.join("made")).unwrap(), b"m");
        // A link to a directory is refused; a loop is refused after MAX_HOPS.
        symlink("sub", d.join("todir")).unwrap();
        let e = write_atomic(&d.join("todir"), b"x").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        symlink("loop", d.join("loop")).unwrap();
        let e = write_atomic(&d.join("loop"), b"x").unwrap_err();
        assert!(e.to_string().contains("more than 40 symlinks"), "{e}");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_gets_0666_less_the_umask_and_a_replaced_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch("mode");
        // What a plain create gives under this process's umask.
        let plain = d.join("plain");
        std::fs::File::create(&plain).unwrap();
        let want = std::fs::metadata(&plain).unwrap().permissions().mode() & 0o777;
        let p = d.join("new");
        write_atomic(&p, b"x").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            want
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"y").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_temp_file_dropped_before_persist_is_removed() {
        let d = scratch("drop");
        let mut t = Temp::create(&d.join("out")).unwrap();
        t.file().write_all(b"partial").unwrap();
        assert_eq!(entries(&d).len(), 1);
        drop(t);
        assert!(entries(&d).is_empty());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn prepare_dir_creates_and_refuses_files() {
        let d = scratch("prep");
        let out = d.join("x/y");
        prepare_dir(&out).unwrap();
        assert!(out.is_dir() && entries(&out).is_empty());
        let f = d.join("f");
        std::fs::write(&f, b"keep").unwrap();
        let e = prepare_dir(&f).unwrap_err();
        assert!(
            e.to_string().contains("a regular file, not a directory"),
            "{e}"
        );
        assert_eq!(std::fs::read(&f).unwrap(), b"keep");
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// Hidden directories of [`Staging`]s alive now: what a signal handler removes
/// ([`remove_staged`]) before the process exits.
static STAGED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every staging directory still alive (for a signal handler, before exiting).
pub fn remove_staged() {
    let dirs = std::mem::take(&mut *STAGED.lock().unwrap_or_else(|e| e.into_inner()));
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The files of one command, written into hidden directories next to their destinations
/// and moved into place together by [`Staging::commit`]: a multi-file result appears
/// complete or not at all. Dropped without a commit, it removes what it staged.
#[derive(Default)]
pub struct Staging {
    dirs: Vec<tempfile::TempDir>,
    moves: Vec<(PathBuf, PathBuf)>,
}

impl Staging {
    /// The hidden directory next to `target_dir` (made on first use).
    fn dir_in(&mut self, target_dir: &Path) -> std::io::Result<PathBuf> {
        let parent = if target_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            target_dir
        };
        if let Some(d) = self.dirs.iter().find(|d| d.path().parent() == Some(parent)) {
            return Ok(d.path().to_path_buf());
        }
        let d = tempfile::Builder::new()
            .prefix(".fsyncsim-")
            .tempdir_in(parent)?;
        let p = d.path().to_path_buf();
        STAGED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.clone());
        self.dirs.push(d);
        Ok(p)
    }

    /// Where to write the file that is to become `dest` (checked as [`resolve_target`]
    /// checks an output path; a symlink's target is what will be replaced).
    pub fn path_for(&mut self, dest: &Path) -> std::io::Result<PathBuf> {
        let target = resolve_target(dest)?;
        let name = target
            .file_name()
            .expect("resolve_target gives a file path")
            .to_owned();
        let staged = self
            .dir_in(target.parent().unwrap_or(Path::new("")))?
            .join(name);
        self.moves.push((staged.clone(), target));
        Ok(staged)
    }

    /// A hidden directory to write files into that are to land in `dest_dir` under their
    /// own names (register each with [`Staging::adopt`]).
    pub fn dir_for(&mut self, dest_dir: &Path) -> std::io::Result<PathBuf> {
        self.dir_in(dest_dir)
    }

    /// Registers a file written into [`Staging::dir_for`]`(dest_dir)` to land in `dest_dir`.
    pub fn adopt(&mut self, staged: &Path, dest_dir: &Path) -> std::io::Result<()> {
        let name = staged
            .file_name()
            .ok_or_else(|| invalid("not a file path".into()))?;
        let target = resolve_target(&dest_dir.join(name))?;
        self.moves.push((staged.to_path_buf(), target));
        Ok(())
    }

    /// Checks every destination, then moves every staged file into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        for (_, t) in &self.moves {
            check_file(t)?;
        }
        for (s, t) in std::mem::take(&mut self.moves) {
            std::fs::rename(&s, &t)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let mut live = STAGED.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|p| !self.dirs.iter().any(|d| d.path() == p));
    }
}
