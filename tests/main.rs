//! The integration tests, one module per topic, built as one test binary (a fresh clone
//! compiles and links one crate instead of one per file). Every tests/*.rs is declared here;
//! `every_test_file_is_a_module` fails if one is left out.

mod common;

mod architecture;
mod btree;
mod cli;
mod consumers_block;
mod consumers_fio;
mod consumers_fsperf;
mod consumers_html;
mod consumers_shell;
mod coverage;
mod crash_locks;
mod crash_state;
mod delayed_items;
mod descriptors;
mod device;
mod docs;
mod engine;
mod eof_writes;
mod errors;
mod exhaustive;
mod ext4;
mod extent_io;
mod fsperf;
mod fuzz;
mod hardening;
mod hdd;
mod iosched;
mod issue28;
mod kbuild;
mod kernel_rules;
mod limits;
mod linux516;
mod new_name;
mod no_false_alarm;
mod ops;
mod plots;
mod queueing;
mod races;
mod readdir;
mod reflink;
mod remount;
mod scrub;
mod shrink;
mod space;
mod special;
mod trace;
mod tree_locks;
mod validate;
mod vfs;
mod workload;
mod writeback;
mod xfstests;

/// A file in tests/ that is not declared above would never be compiled or run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if let Some(m) = name.strip_suffix(".rs") {
            if m != "main" && !main.contains(&format!("\nmod {m};\n")) {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in tests/main.rs: {missing:?}"
    );
}
