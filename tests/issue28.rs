//! Issue 28's hardening: outputs are written as the file they name (a symlink's target,
//! never the link; nothing under /dev or /proc), the ext3/ext4 rename onto an ancestor,
//! shards of huge ranges, capped input files, and sweep identities checked by `--resume`
//! and `merge`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const R1: &str = "r1-link-rename-logged-trans";

fn fsyncsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run fsyncsim")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Asserts exit `code`, exactly one line on stderr containing `needles`, nothing on stdout.
fn assert_one_line_in(dir: &Path, code: i32, args: &[&str], needles: &[&str]) {
    let o = fsyncsim_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}: printed output");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fsyncsim-i28-{name}-{}", std::process::id()));
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

#[cfg(unix)]
#[test]
fn a_trace_through_a_symlink_replaces_the_target_and_keeps_the_link() {
    let d = temp_dir("link");
    std::fs::write(d.join("tgt"), "keep\n").unwrap();
    std::os::unix::fs::symlink("tgt", d.join("l")).unwrap();
    let o = fsyncsim_in(&d, &["run", R1, "--trace", "l"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let meta = std::fs::symlink_metadata(d.join("l")).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let text = std::fs::read_to_string(d.join("tgt")).unwrap();
    assert!(text.starts_with("# ") && text.len() > 100, "{text}");
    assert_eq!(entries(&d), ["l", "tgt"]);
    // The same through replay and shrink's --out.
    let o = fsyncsim_in(&d, &["replay", R1, "--seed", "2", "--trace", "l"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("l"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(entries(&d), ["l", "tgt"]);
    std::fs::remove_dir_all(d).unwrap();
}

#[cfg(unix)]
#[test]
fn outputs_that_are_not_regular_files_are_refused_before_any_work() {
    let d = temp_dir("special");
    std::fs::create_dir(d.join("dir")).unwrap();
    let fifo = Command::new("mkfifo").arg(d.join("fifo")).status().unwrap();
    assert!(fifo.success());
    std::os::unix::fs::symlink("/dev/stdout", d.join("to-stdout")).unwrap();
    for (path, needle) in [
        ("/dev/stdout", "is under /dev"),
        ("/dev/stderr", "is under /dev"),
        ("/dev/fd/1", "is under /dev"),
        ("/proc/self/fd/1", "is under /proc"),
        ("/dev/null", "exists and is a character device"),
        ("to-stdout", "is under /"),
        ("dir", "is a directory"),
        ("fifo", "is a FIFO"),
    ] {
        assert_one_line_in(
            &d,
            2,
            &["run", R1, "--trace", path],
            &["--trace", path, needle],
        );
        assert_one_line_in(
            &d,
            2,
            &["replay", R1, "--seed", "1", "--trace", path],
            &["--trace", path, needle],
        );
    }
    assert_one_line_in(
        &d,
        2,
        &["sweep", R1, "--seeds", "0..10", "--out", "/dev/shm/x"],
        &["--out /dev/shm/x", "is under /dev"],
    );
    assert!(!Path::new("/dev/shm/x").exists());
    // Nothing was written: no temp file, the FIFO and the directory are as they were.
    assert_eq!(entries(&d), ["dir", "fifo", "to-stdout"]);
    assert!(entries(&d.join("dir")).is_empty());
    std::fs::remove_dir_all(d).unwrap();
}

#[cfg(unix)]
#[test]
fn a_chrome_trace_through_a_symlink_chain_lands_at_the_end_of_the_chain() {
    let d = temp_dir("chrome");
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub/l2", d.join("l1")).unwrap();
    std::os::unix::fs::symlink("trace.json", d.join("sub/l2")).unwrap();
    let t = reports::chrome::ChromeTrace::create(&d.join("l1"), "p").unwrap();
    t.finish().unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("sub/trace.json")).unwrap()).unwrap();
    assert!(v["traceEvents"].is_array());
    assert_eq!(entries(&d), ["l1", "sub"]);
    assert_eq!(entries(&d.join("sub")), ["l2", "trace.json"]);
    // An abandoned trace leaves nothing behind.
    let t = reports::chrome::ChromeTrace::create(&d.join("other.json"), "p").unwrap();
    t.abandon();
    assert_eq!(entries(&d), ["l1", "sub"]);
    std::fs::remove_dir_all(d).unwrap();
}
