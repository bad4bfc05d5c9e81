//! What fsyncsim simulates: block devices and I/O schedulers (later filesystems) and the
//! workloads that drive them. Code cites the kernel function, driver or paper it models.

pub mod block;
pub mod btrfs;
pub mod device;
pub mod ext4;
pub mod jbd2;
pub mod kernel;
pub mod mount;
pub mod scenario;
pub mod shrink;
pub mod sweep;
pub mod units;
pub mod validate;
pub mod vfs;
pub mod workload;
