//! Buffered ranges written at their offsets (`write-range PATH OFFSET SIZE`, fio's random
//! buffered writes) are written back as an ordered extent each (models/src/btrfs/extent_io.rs):
//! a file extent item per merged range, splitting the hole the file was truncated to,
//! an extent item per range, and the items go again with the file.

use models::btrfs::ctree_btree::{key_type, tree_id, Key};

/// The filesystem state after `ops` run in one task under linux-5.15 (NO_HOLES as given).
fn fs_after(ops: &[&str], no_holes: bool) -> models::btrfs::state::FsState {
    let (sim, fs) = crate::common::btrfs_sim("linux-5.15");
    fs.set_no_holes(no_holes);
    let out = crate::common::run_ops(sim, &fs, ops);
    assert!(out.iter().all(Option::is_none), "{out:?}");
    fs.state()
}

/// The first file after the root directory.
const INO: u64 = 257;

/// File extent items of the file in the fs tree.
fn file_items(st: &models::btrfs::state::FsState) -> usize {
    let lo = Key::new(INO, key_type::EXTENT_DATA, 0);
    let hi = Key::new(INO, key_type::EXTENT_DATA, u64::MAX);
    st.trees.clone().get_mut(tree_id::FS).items_in(lo, hi)
}

/// Extent items in the extent tree.
fn extent_items(st: &models::btrfs::state::FsState) -> usize {
    let lo = Key::new(0, 0, 0);
    let hi = Key::new(u64::MAX, u8::MAX, u64::MAX);
    st.trees.clone().get_mut(tree_id::EXTENT).items_in(lo, hi)
}

const RANGES: [&str; 4] = [
    "write-range /f 64k 4k",
    "write-range /f 132k 4k",
    "write-range /f 128k 4k",
    "write-range /f 512k 4k",
];

fn ops_with(writes: &[&'static str]) -> Vec<&'static str> {
    let mut ops = vec!["create /f", "truncate /f 1m", "commit"];
    ops.extend_from_slice(writes);
    ops.extend(["writeback /f", "commit"]);
    ops
}

#[test]
fn each_merged_range_gets_its_own_file_extent_item_splitting_the_hole() {
    // Without NO_HOLES the truncate left one hole item over [0, 1m). Three merged ranges
    // ([64k, 68k), [128k, 136k), [512k, 516k)) each trim the hole they land in and put
    // its tail back after them: 1 + 3 × 2 items.
    let st = fs_after(&ops_with(&RANGES), false);
    assert_eq!(file_items(&st), 7);
    // With NO_HOLES only the ranges' own items.
    let st = fs_after(&ops_with(&RANGES), true);
    assert_eq!(file_items(&st), 3);
    // The same bytes without offsets are written back as one extent: fewer items.
    let plain = ["write-range /f 4k"; 4];
    let st = fs_after(&ops_with(&plain), true);
    assert!(file_items(&st) < 3, "{}", file_items(&st));
}

#[test]
fn each_range_is_an_extent_of_its_own_and_an_overwrite_frees_the_old_one() {
    let base = extent_items(&fs_after(&ops_with(&[]), true));
    let st = fs_after(&ops_with(&RANGES), true);
    // Four ranges, three after merging: an extent item each.
    assert_eq!(extent_items(&st) - base, 3);
    // Writing [64k, 68k) again replaces that extent (its item deleted at the delayed
    // ref run), so the count stays.
    let mut ops = ops_with(&RANGES);
    ops.extend(["write-range /f 64k 4k", "writeback /f", "commit"]);
    let st = fs_after(&ops, true);
    assert_eq!(extent_items(&st) - base, 3);
    assert_eq!(file_items(&st), 3);
}

#[test]
fn the_ranges_items_go_with_the_file() {
    let mut ops = ops_with(&RANGES);
    ops.extend(["unlink /f", "commit"]);
    let st = fs_after(&ops, false);
    assert_eq!(file_items(&st), 0);
    let base = extent_items(&fs_after(&["commit"], false));
    assert_eq!(extent_items(&st), base);
}

#[test]
fn ranges_at_offsets_do_not_mix_with_other_dirty_pages() {
    let (sim, fs) = crate::common::btrfs_sim("linux-5.15");
    let ops = [
        "create /f",
        "truncate /f 1m",
        "write-range /f 0 4k",
        "write /f 4k",
        "write-range /f 2m 4k",
    ];
    let out = crate::common::run_ops(sim, &fs, &ops);
    assert!(out[2].is_none());
    assert!(out[3]
        .as_ref()
        .unwrap()
        .contains("dirty ranges written at offsets"));
    assert!(out[4]
        .as_ref()
        .unwrap()
        .contains("past the file's written size"));
}
