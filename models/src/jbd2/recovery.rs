//! What journal recovery keeps after a crash (fs/jbd2/recovery.c@v2.6.37): replay scans the
//! log from the tail and replays each transaction whose descriptor, metadata copies and
//! commit block are all on the platter, stopping at the first that is not.

use super::{JState, Tid};
use crate::device::DurableWrite;
use std::collections::BTreeMap;

/// The newest transaction whose metadata survives a crash with this durable image: all
/// transactions up to it are either checkpointed (home blocks durable) or replayable.
pub fn recovered_tid(st: &JState, image: &BTreeMap<u64, DurableWrite>) -> Tid {
    let durable = |off: u64, tok: u64| image.get(&off).is_some_and(|w| w.token == tok);
    let mut tid = st.checkpointed;
    for (&t, rec) in st.commit_blocks.range(st.checkpointed + 1..) {
        if t != tid + 1 {
            break;
        }
        let ok =
            durable(rec.commit.0, rec.commit.1) && rec.blocks.iter().all(|&(o, k)| durable(o, k));
        if !ok {
            break;
        }
        tid = t;
    }
    tid
}
