//! `mq-deadline` (`block/mq-deadline.c`, v5.10): deadline's rules on the blk-mq path —
//! `dd_dispatch_request` → `__dd_dispatch_request` keeps the per-direction sort trees and
//! FIFOs, `fifo_batch`, `writes_starved` and the expiries of 2.6.37's deadline, tests expiry
//! with `time_after_eq`, and runs without the legacy queue plug (the request queue leaves
//! plugging off for it). Defaults: `read_expire = HZ / 2`, `write_expire = 5 * HZ`,
//! `writes_starved = 2`, `fifo_batch = 16`, `front_merges = 1`.

use super::config::DeadlineTunables;
use super::deadline::Deadline;
use super::{BioInfo, BlockStats, Elevator, ElvCtx, Rqs};
use sim::Nanos;

/// mq-deadline: deadline's dispatch on the blk-mq path.
#[derive(Debug)]
pub struct MqDeadline {
    dl: Deadline,
}

impl MqDeadline {
    /// mq-deadline with these tunables.
    pub fn new(t: &DeadlineTunables) -> Self {
        MqDeadline {
            dl: Deadline::new(t).with_expiry_at_eq(),
        }
    }
}

impl Elevator for MqDeadline {
    fn front_merge(&self, rqs: &Rqs, bio: &BioInfo) -> Option<u32> {
        self.dl.front_merge(rqs, bio)
    }
    fn latter(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        self.dl.latter(rqs, rq)
    }
    fn former(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        self.dl.former(rqs, rq)
    }
    fn add(&mut self, rqs: &mut Rqs, rq: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        self.dl.add(rqs, rq, now, cx, st)
    }
    fn merged(&mut self, rqs: &Rqs, rq: u32, old_offset: u64) {
        self.dl.merged(rqs, rq, old_offset)
    }
    fn merge_requests(&mut self, rqs: &mut Rqs, rq: u32, next: u32, st: &mut BlockStats) {
        self.dl.merge_requests(rqs, rq, next, st)
    }
    fn dispatch(
        &mut self,
        rqs: &mut Rqs,
        now: Nanos,
        cx: &mut ElvCtx,
        st: &mut BlockStats,
    ) -> Option<u32> {
        self.dl.dispatch(rqs, now, cx, st)
    }
    fn completed(&mut self, rqs: &Rqs, rq: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        self.dl.completed(rqs, rq, now, cx, st)
    }
    fn queued(&self) -> usize {
        self.dl.queued()
    }
}
