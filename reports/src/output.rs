//! Writing result files atomically: a temp file in the same directory, then a rename, so
//! an error never leaves a partial file behind.
//!
//! A path that exists and is not a regular file — a directory, a FIFO, a device such as
//! `/dev/full` or `/dev/null`, a socket — is refused instead of being replaced by a regular
//! file (a rename would silently swap the node for a file). A symlink is judged by what it
//! points to. New paths and existing regular files are written via temp file + rename.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Refuses an output file path that exists and is not a regular file. A path that does not
/// exist (or cannot be looked at) passes: writing it reports any error.
pub fn check_file(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(refuse(kind(&m), "a regular file")),
        _ => Ok(()),
    }
}

/// Makes `dir` ready for output files: refuses a path that exists and is not a directory,
/// creates it (and its parents) if missing, and checks that a file can be written in it.
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
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(".probe");
    write_atomic(&probe, b"")?;
    std::fs::remove_file(probe)
}

/// Creates a new temporary file next to `path` (the same directory, so a rename replaces
/// `path` atomically), after refusing `path` if it exists and is not a regular file. The name
/// is unique per process and call, so concurrent writers never share a temp file.
pub fn create_temp(path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    check_file(path)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.{}-{seq}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    Ok((tmp, file))
}

/// Writes `bytes` to `path` via a temporary file and a rename; refuses a `path` that exists
/// and is not a regular file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (tmp, mut f) = create_temp(path)?;
    let result = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
    fn refuses_device_nodes() {
        let e = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = prepare_dir(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
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
