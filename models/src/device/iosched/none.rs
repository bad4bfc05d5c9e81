//! `none`: first in, first out, as blk-mq's "none" elevator.

use super::{IoScheduler, Queued};
use std::collections::VecDeque;

/// FIFO dispatch.
#[derive(Default, Debug)]
pub struct NoneFifo {
    q: VecDeque<Queued>,
}

impl IoScheduler for NoneFifo {
    fn add(&mut self, r: Queued) {
        self.q.push_back(r);
    }

    fn dispatch(&mut self, _head: u64, _now: sim::Nanos) -> Option<Queued> {
        self.q.pop_front()
    }

    fn dispatch_by(&mut self, _now: sim::Nanos, cost: &dyn Fn(&Queued) -> u64) -> Option<Queued> {
        let i = (0..self.q.len()).min_by_key(|&i| (cost(&self.q[i]), i))?;
        self.q.remove(i)
    }

    fn len(&self) -> usize {
        self.q.len()
    }
}
