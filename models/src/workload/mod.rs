//! Loads that drive the models: the engine benchmark, fio-like device loads, and
//! dbench-, sysbench-fileio- and fs_mark-like filesystem workloads.

pub mod bench;
pub mod compare;
mod dbench;
pub mod exact;
pub mod fio;
pub mod fsload;
pub mod kbuild;
pub mod spec;
pub mod stream;
pub mod vfs_work;
