//! Scrub: every extent read exactly once, determinism, the two policies' mechanisms, CLI.

use models::block::DiskConfig;
use models::btrfs::layout::{Layout, LayoutParams, Tree, NODESIZE};
use models::btrfs::scrub::{self, ScrubParams, ScrubPolicy};
use std::process::Command;

fn params(policy: ScrubPolicy, files: u64, seed: u64) -> ScrubParams {
    ScrubParams {
        layout: LayoutParams {
            files,
            ..LayoutParams::default()
        },
        policy,
        device: DiskConfig::resolve("hdd-smr-5400").unwrap(),
        seed,
    }
}

#[test]
fn scrub_reads_every_extent_exactly_once() {
    for policy in ScrubPolicy::ALL {
        let p = params(policy, 3000, 7);
        let r = scrub::run(&p).unwrap();
        let mut streams = sim::RngStreams::new(7);
        let layout = Layout::build(&p.layout, &mut streams.stream("scrub.layout"));
        // What must be read: data extents (physical == logical) and every tree block in each
        // metadata stripe.
        let mut want: Vec<(u64, u64)> = layout.data.iter().map(|e| (e.logical, e.len)).collect();
        let meta = &layout.chunks[0];
        for &s in &meta.stripes {
            for b in &layout.blocks {
                want.push((b.bytenr - meta.logical + s, NODESIZE));
            }
        }
        want.sort_unstable();
        let mut got = r.reads.clone();
        got.sort_unstable();
        // Bios are merged runs: split both into 4 KiB pages and compare.
        let pages = |v: &[(u64, u64)]| -> Vec<u64> {
            v.iter()
                .flat_map(|&(a, l)| (0..l / 4096).map(move |k| a + k * 4096))
                .collect()
        };
        let (w, g) = (pages(&want), pages(&got));
        assert_eq!(w.len(), g.len(), "{policy:?}");
        assert_eq!(w, g, "{policy:?}: a page read twice or missed");
        assert!(r.reads.iter().all(|&(_, l)| l <= scrub::MAX_BIO && l > 0));
        assert_eq!(r.bytes_scrubbed, w.len() as u64 * 4096);
    }
}

#[test]
fn scrub_is_deterministic() {
    let a = scrub::run(&params(ScrubPolicy::PathReada, 2000, 3)).unwrap();
    let b = scrub::run(&params(ScrubPolicy::PathReada, 2000, 3)).unwrap();
    assert_eq!(reports::scrub::text(&a), reports::scrub::text(&b));
    assert_eq!(a.reads, b.reads);
    assert_eq!(a.duration, b.duration);
    let c = scrub::run(&params(ScrubPolicy::PathReada, 2000, 4)).unwrap();
    assert_ne!(a.reads, c.reads, "the seed changes the layout");
}

#[test]
fn policies_differ_by_their_mechanism() {
    // Seed 002's full file count: at a quarter of it the whole metadata fits in the drive's
    // read cache after the metadata chunk's scrub and the policies can tie.
    let full = LayoutParams::default().files;
    let f = scrub::run(&params(ScrubPolicy::ReadaFramework, full, 1)).unwrap();
    let p = scrub::run(&params(ScrubPolicy::PathReada, full, 1)).unwrap();
    let n = scrub::run(&params(ScrubPolicy::None, full, 1)).unwrap();
    // The framework reads every leaf itself; the scrub thread never misses.
    assert!(f.meta.framework_reads > 0);
    assert_eq!(f.meta.sync_reads + f.meta.path_reada, 0);
    // Path readahead: synchronous misses plus asynchronous siblings, no framework.
    assert!(p.meta.sync_reads > 0 && p.meta.path_reada > 0);
    assert_eq!(p.meta.framework_reads, 0);
    // Every policy reads each tree block once.
    let total =
        |r: &scrub::ScrubResult| r.meta.sync_reads + r.meta.path_reada + r.meta.framework_reads;
    assert_eq!(total(&f), total(&p));
    assert_eq!(total(&n), total(&p));
    assert_eq!(n.meta.path_reada, 0);
    // Same bytes; the framework is fastest, siblings help the synchronous reader.
    assert_eq!(f.bytes_scrubbed, p.bytes_scrubbed);
    assert!(
        f.duration < p.duration,
        "reada {} path {}",
        f.duration,
        p.duration
    );
    assert!(p.meta.sync_reads < n.meta.sync_reads);
    assert!(
        n.duration > p.duration,
        "none {} path {}",
        n.duration,
        p.duration
    );
    assert!(n.meta.blocked_ns > p.meta.blocked_ns);
}

#[test]
fn layout_puts_trees_in_the_metadata_chunk_and_data_after_it() {
    let mut streams = sim::RngStreams::new(1);
    let l = Layout::build(
        &LayoutParams::default(),
        &mut streams.stream("scrub.layout"),
    );
    let meta = &l.chunks[0];
    assert!(l
        .blocks
        .iter()
        .all(|b| b.bytenr >= meta.logical && b.bytenr + NODESIZE <= meta.logical + meta.len));
    let mut addrs: Vec<u64> = l.blocks.iter().map(|b| b.bytenr).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(
        addrs.len(),
        l.blocks.len(),
        "two tree blocks at one address"
    );
    assert!(l.data[0].logical >= meta.stripes[1] + meta.len);
    // 1/16 of 65,536 files deleted; data extents do not overlap.
    assert_eq!(l.data.len(), 65_536 - 4_096);
    assert!(l
        .data
        .windows(2)
        .all(|w| w[0].logical + w[0].len <= w[1].logical));
    // The csum tree holds 4 bytes per 4 KiB: about 16 MiB of data per leaf at most.
    let csum = l.leaves[Tree::Csum as usize].len() as u64;
    let data: u64 = l.data.iter().map(|e| e.len).sum();
    assert!(csum * 16 * (1 << 20) >= data);
}

fn fsyncsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .output()
        .expect("run fsyncsim")
}

#[test]
fn scrub_cli_prints_status_fields_and_rejects_bad_flags() {
    let o = fsyncsim(&["scrub", "--scale", "0.05"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for f in [
        "Duration:",
        "Total to scrub:",
        "Rate:",
        "MiB/s",
        "Error summary:",
    ] {
        assert!(out.contains(f), "{out}");
    }
    // btrfs-progs (cmds/scrub.c:print_scrub_summary) prints `Bytes scrubbed:` only while a
    // scrub runs; sizes as `pretty_size`: two decimals and a binary unit.
    assert!(!out.contains("Bytes scrubbed:"), "{out}");
    for l in out
        .lines()
        .filter(|l| l.starts_with("Rate:") || l.starts_with("Total to"))
    {
        let v = l.split_whitespace().last().unwrap().trim_end_matches("/s");
        let n = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        assert!(
            ["B", "KiB", "MiB", "GiB", "TiB"].contains(&&v[n.len()..]),
            "{l}"
        );
        assert_eq!(n.split('.').nth(1).map(str::len), Some(2), "{l}");
    }
    let o = fsyncsim(&["scrub", "--scale", "0.05", "--compare"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("106.46") && out.contains("100.74"), "{out}");
    for (args, flag) in [
        (vec!["scrub", "--policy", "fast"], "--policy"),
        (vec!["scrub", "--scale", "0"], "--scale"),
        (vec!["scrub", "--device", "floppy"], "--device"),
        (vec!["scrub", "--metadata", "raid9"], "--metadata"),
    ] {
        let o = fsyncsim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(flag), "{err}");
    }
}
