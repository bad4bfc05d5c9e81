//! Metadata space (seed 004, F1): need_preemptive_reclaim before and after each of the
//! seven patches, ticket reservations, the async reclaim's flush states and ENOSPC.

use models::block::DiskConfig;
use models::btrfs::policy::SpacePatch;
use models::btrfs::space_info::need_preemptive_reclaim;
use models::btrfs::state::FsState;
use models::kernel::Policy;
use models::scenario::{run, Interleaving, RunResult, Scenario};

const MIB: u64 = 1 << 20;

/// The state of the F1 example: 3.25 GiB of metadata chunks, 2.4 GiB used, the 512 MiB
/// global reserve in may_use, no unallocated space, dirty data not yet under writeback.
fn full_fs() -> FsState {
    let mut st = FsState::mkfs();
    st.data.unallocated = 0;
    let m = &mut st.meta;
    m.total = 3328 * MIB;
    m.used = 2400 * MIB;
    m.global_rsv = 512 * MIB;
    m.may_use = 512 * MIB + 2 * MIB;
    m.delalloc_bytes = 4 * MIB;
    m.clamp = 1;
    st
}

fn pre() -> Policy {
    Policy::preset("linux-5.13").unwrap()
}

#[test]
fn the_global_reserve_makes_the_513_heuristic_flush_and_patch_5_stops_it() {
    let st = full_fs();
    // used = may_use (514 MiB) ≥ thresh = 928 MiB >> 1 = 464 MiB.
    assert!(need_preemptive_reclaim(&st, &pre().btrfs));
    assert!(!need_preemptive_reclaim(
        &st,
        &pre().with_space(SpacePatch::GlobalRsvUsed, true).btrfs
    ));
    assert!(!need_preemptive_reclaim(
        &st,
        &Policy::preset("linux-5.14").unwrap().btrfs
    ));
    // Patch 4 alone only lowers the threshold: (928 − 512) >> 1 = 208 MiB, still exceeded.
    assert!(need_preemptive_reclaim(
        &st,
        &pre().with_space(SpacePatch::GlobalRsvThresh, true).btrfs
    ));
}

#[test]
fn the_almost_full_test_counts_the_global_reserve_with_patch_3_and_at_90_percent_in_515() {
    let mut st = full_fs();
    st.meta.used = 2900 * MIB; // 87 % of total; 87 % + 15 % global reserve ≥ 98 %
    assert!(need_preemptive_reclaim(&st, &pre().btrfs));
    assert!(!need_preemptive_reclaim(
        &st,
        &pre().with_space(SpacePatch::GlobalRsvFull, true).btrfs
    ));
    st.meta.used = 3030 * MIB; // 91 %
    assert!(!need_preemptive_reclaim(
        &st,
        &pre().with_space(SpacePatch::Full90, true).btrfs
    ));
    // A queued ticket: the async reclaim owns the flushing.
    let mut st = full_fs();
    st.meta.reclaim_size = 1;
    assert!(!need_preemptive_reclaim(&st, &pre().btrfs));
}

#[test]
fn with_more_ordered_than_delalloc_only_the_delayed_reserves_count_and_patch_6_halves_ordered() {
    let mut st = full_fs();
    st.meta.ordered_bytes = 6 * MIB; // ≥ delalloc: used = pinned + delayed refs + items
    assert!(!need_preemptive_reclaim(&st, &pre().btrfs));
    // 6/7: ordered counts half (3 MiB < 4 MiB of delalloc), so may_use counts again.
    assert!(need_preemptive_reclaim(
        &st,
        &pre().with_space(SpacePatch::HalfOrdered, true).btrfs
    ));
}

fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "space.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run_on(sc: &Scenario, p: &Policy) -> RunResult {
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    run(sc, p, &dev, 1, &Interleaving::Script)
}

fn creates(n: usize) -> String {
    (0..n)
        .map(|i| format!("\"create /d/f{i}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn a_full_metadata_space_queues_tickets_that_the_async_reclaim_serves_by_writing_back() {
    // 2800 MiB used of 3.25 GiB, the global reserve 512 MiB: 15.75 MiB left. Each file with
    // dirty data holds 2 items (512 KiB) of delalloc metadata until its writeback, so the
    // 40 files of two writers outgrow it; the waiting reservation's ticket starts the async
    // reclaim, whose FLUSH_DELALLOC writes files back and hands their reservations over.
    let writes = |t: &str| {
        (0..40)
            .map(|i| format!("\"write /d/{t}{i} 4k\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sc = scenario(&format!(
        "name = \"t\"\nrace = \"F1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"mkdir /d\", {}, {}, \"commit\", \"fill-metadata 2800m\"]\n[[task]]\nname = \"A\"\nops = [{}]\n[[task]]\nname = \"B\"\nops = [{}]\n[policies]\nbefore = \"linux-5.13\"\nafter = \"linux-5.14\"\n",
        creates(40).replace("/d/f", "/d/a"),
        creates(40).replace("/d/f", "/d/b"),
        writes("a"),
        writes("b")
    ));
    for p in [sc.pre_policy(), sc.post_policy()] {
        let r = run_on(&sc, &p);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let m = |n: &str| r.metrics.get(n).unwrap();
        assert!(m("metadata_tickets") > 0, "{:?}", r.metrics);
        assert!(m("async_reclaim_episodes") > 0);
        assert!(m("delalloc_flushed_inodes") > 0);
        assert!(m("metadata_ticket_ns") > 0, "waiters were timed");
    }
}

#[test]
fn nothing_left_to_flush_fails_the_ticket_with_enospc_after_three_commits() {
    // Free metadata below the global reserve plus one create: nothing a flush frees helps.
    let sc = scenario(
        "name = \"t\"\nrace = \"F1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"mkdir /d\", \"commit\", \"fill-metadata 2815m\"]\n[[task]]\nname = \"A\"\nops = [\"create /d/x\"]\n[policies]\nbefore = \"linux-5.13\"\nafter = \"linux-5.14\"\n",
    );
    let r = run_on(&sc, &sc.pre_policy());
    assert!(
        r.violations
            .iter()
            .any(|v| v.message.contains("no space left on device (metadata)")),
        "{:?}",
        r.violations
    );
    assert_eq!(r.metrics.get("metadata_tickets"), Some(1));
    assert_eq!(r.metrics.get("async_reclaim_episodes"), Some(1));
}

#[test]
fn the_f1_example_is_deterministic_and_only_the_pre_series_flushes() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/examples/f1-preempt-flush-nonstop.toml"
    );
    let sc = Scenario::load(path).unwrap();
    let a = run_on(&sc, &sc.pre_policy());
    let b = run_on(&sc, &sc.pre_policy());
    assert_eq!(a.trace_hash, b.trace_hash);
    assert!(a.metrics.get("preempt_flushes").unwrap() > 0);
    let post = run_on(&sc, &sc.post_policy());
    assert_eq!(post.metrics.get("preempt_flushes"), Some(0));
    // Patch 7 alone flushes in smaller bites: more passes, not fewer.
    let p7 = run_on(&sc, &pre().with_space(SpacePatch::OneShotDelalloc, true));
    assert!(p7.metrics.get("preempt_flushes") >= a.metrics.get("preempt_flushes"));
}

#[test]
fn an_eviction_on_a_full_space_waits_in_a_priority_ticket_and_flushes_itself() {
    // 1856 KiB free outside the global reserve. A's unlink holds its 5 items (1280 KiB);
    // B0..B2's first writes (640 KiB each: calc_inode_reservations) queue normal tickets;
    // when the unlink ends its reservation first fills the delayed refs rsv for the leaves
    // it COWed, the rest grants tickets. The final iput's FLUSH_EVICT reservation (one
    // item update + its delayed refs, 384 KiB) then does not fit: a priority ticket, whose
    // caller runs the evict flush states itself (FLUSH_DELALLOC writes B0's file back).
    let text = "name = \"t\"\nrace = \"F1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"mkdir /d\", \"create /d/x\", \"create /d/b0\", \"create /d/b1\", \"create /d/b2\", \"create /d/b3\", \"commit\", \"fill-metadata 2881472k\"]\n[[task]]\nname = \"A\"\nops = [\"unlink /d/x\"]\n[[task]]\nname = \"B0\"\nops = [\"sleep 1us\", \"write /d/b0 4k\"]\n[[task]]\nname = \"B1\"\nops = [\"sleep 1us\", \"write /d/b1 4k\"]\n[[task]]\nname = \"B2\"\nops = [\"sleep 1us\", \"write /d/b2 4k\"]\n[[task]]\nname = \"B3\"\nops = [\"sleep 1us\", \"write-range /d/b3 4k\"]\n[policies]\nbefore = \"linux-5.13\"\nafter = \"linux-5.14\"\n";
    let sc = scenario(text);
    let r = run_on(&sc, &sc.pre_policy());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let m = |n: &str| r.metrics.get(n).unwrap();
    assert_eq!(m("priority_tickets"), 1, "{:?}", r.metrics);
    assert_eq!(m("metadata_tickets"), 4);
    // The evict states ran in the unlinking task: delalloc flushed, no async episode of its
    // own (the one episode is the normal tickets').
    assert!(m("flushes.FLUSH_DELALLOC") >= 1);
    assert_eq!(m("async_reclaim_episodes"), 1);
    // Every ticket's wait is in the histogram; the longest is a writer's (the async
    // reclaim sleeps a jiffy once nothing is left to write back). The eviction's is short:
    // its own FLUSH_DELAYED_REFS_NR, run before delalloc, gives back what the unlink's
    // released reservation left in the delayed refs rsv.
    assert!(m("metadata_ticket_wait_max_ns") >= 4_000_000);
    assert!(m("metadata_ticket_wait_p50_ns") < m("metadata_ticket_wait_max_ns"));
    assert!(m("flushes.FLUSH_DELAYED_REFS_NR") >= 1);
    let unlink = r.latency.by_op["unlink"].max();
    assert!(unlink < m("metadata_ticket_wait_max_ns"), "{unlink}");
    // With 292 MiB free the eviction reserves at once.
    let roomy = scenario(&text.replace("2881472k", "1500m"));
    let r = run_on(&roomy, &sc.pre_policy());
    assert_eq!(r.metrics.get("priority_tickets"), Some(0));
    assert_eq!(r.metrics.get("metadata_ticket_wait_max_ns"), Some(0));
}

#[test]
fn the_early_flush_example_needs_only_the_global_rsv_full_check_to_stop_the_ticket() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/examples/f1-ticket-behind-early-flush.toml"
    );
    let sc = Scenario::load(path).unwrap();
    let old = run_on(&sc, &sc.pre_policy());
    assert!(old.metrics.get("metadata_tickets").unwrap() > 0);
    assert!(old.metrics.get("flushes.FLUSH_DELALLOC").unwrap() > 0);
    // 3/7 alone: the almost-full test counts the global reserve, the worker never starts.
    let p3 = run_on(&sc, &pre().with_space(SpacePatch::GlobalRsvFull, true));
    assert_eq!(p3.metrics.get("preempt_flushes"), Some(0));
    assert_eq!(p3.metrics.get("metadata_tickets"), Some(0));
    // 5/7 alone stops it too: without the global reserve, `used` (1 MiB of delalloc
    // reservations) is far below thresh = free >> clamp (about 256 MiB).
    let p5 = run_on(&sc, &pre().with_space(SpacePatch::GlobalRsvUsed, true));
    assert_eq!(p5.metrics.get("preempt_flushes"), Some(0));
}

#[test]
fn direct_io_overwrites_hold_metadata_until_their_ordered_extent_completes() {
    let text = "name = \"t\"\nrace = \"F1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"mkdir /d\", \"create /d/a\", \"fallocate /d/a 0 1m\"]\n[[task]]\nname = \"A\"\nops = [\"dio-write /d/a 0 4k\", \"dio-write /d/a 1020k 4k\", \"fsync /d/a\"]\n[policies]\nbefore = \"linux-5.13\"\nafter = \"linux-5.14\"\n";
    let sc = scenario(text);
    let r = run_on(&sc, &sc.pre_policy());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.latency.by_op["dio-write"].len(), 2);
    // Two 4 KiB data writes reached the device beyond the setup's.
    assert!(r.metrics.get("device_bytes_written").unwrap() >= 8192);
    // Past the written part: a new extent and i_size moved at its completion
    // (tests/eof_writes.rs); the overwrites above hold their metadata the same way.
    let past = scenario(&text.replace("1020k 4k", "1022k 4k"));
    let r = run_on(&past, &past.pre_policy());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.latency.by_op["dio-write"].len(), 2);
}
