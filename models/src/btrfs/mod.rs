//! The btrfs commit/fsync model: transactions, the log tree, fsync's fast and full paths,
//! namespace operations, the policy switches of races R1–R7, the waste oracle and the
//! crash-consistency check. Files mirror the kernel's fs/btrfs/ (tree_log.rs models
//! tree-log.c, and so on).

pub mod block_group;
pub mod costs;
pub mod counters;
pub mod ctree;
pub mod ctree_blocks;
pub mod ctree_btree;
pub mod delayed_inode;
pub mod delayed_ref;
pub mod direct_io;
pub mod disk_io;
pub mod evict;
pub mod extent_io;
pub mod extent_tree;
pub mod file;
pub mod fs_super;
pub mod inode;
pub mod layout;
pub mod locking;
pub mod oracle;
pub mod policy;
pub mod reada;
pub mod recovery;
pub mod reflink;
pub mod remount;
pub mod scrub;
pub mod space_info;
pub mod special;
pub mod state;
pub mod switches;
pub mod transaction;
pub mod tree_log;
pub mod xattr;

pub use crate::vfs::{OpLatency, Violation};
pub use costs::Costs;
pub use ctree::Btrfs;
pub use policy::{Fix, Kernel, Mutant, Policy};
