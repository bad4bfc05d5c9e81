//! `noop` (`block/noop-iosched.c`, v2.6.37): one FIFO list; merges only through the request
//! queue's last-merge hint and back-merge hash (no `elevator_merge_fn`); the latter/former
//! request of a merge is the list neighbour (`noop_latter_request`, `noop_former_request`).

use super::{BlockStats, Elevator, ElvCtx, Rqs};
use sim::Nanos;
use std::collections::BTreeMap;

/// FIFO dispatch, as `noop_dispatch` (`list_add_tail` in, first entry out).
#[derive(Default, Debug)]
pub struct Noop {
    /// Allocation sequence → request, in queue order.
    list: BTreeMap<u64, u32>,
}

impl Elevator for Noop {
    fn latter(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        let seq = rqs[rq as usize].as_ref()?.seq;
        self.list.range(seq + 1..).next().map(|(_, &r)| r)
    }

    fn former(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        let seq = rqs[rq as usize].as_ref()?.seq;
        self.list.range(..seq).next_back().map(|(_, &r)| r)
    }

    fn add(&mut self, rqs: &mut Rqs, rq: u32, _now: Nanos, _cx: &mut ElvCtx, _st: &mut BlockStats) {
        let seq = rqs[rq as usize].as_ref().expect("live request").seq;
        self.list.insert(seq, rq);
    }

    fn merged(&mut self, _rqs: &Rqs, _rq: u32, _old_offset: u64) {}

    fn merge_requests(&mut self, rqs: &mut Rqs, _rq: u32, next: u32, _st: &mut BlockStats) {
        let seq = rqs[next as usize].as_ref().expect("live request").seq;
        self.list.remove(&seq);
    }

    fn dispatch(
        &mut self,
        _rqs: &mut Rqs,
        _now: Nanos,
        _cx: &mut ElvCtx,
        _st: &mut BlockStats,
    ) -> Option<u32> {
        self.list.pop_first().map(|(_, r)| r)
    }

    fn completed(
        &mut self,
        _rqs: &Rqs,
        _rq: u32,
        _now: Nanos,
        _cx: &mut ElvCtx,
        _st: &mut BlockStats,
    ) {
    }

    fn queued(&self) -> usize {
        self.list.len()
    }
}
