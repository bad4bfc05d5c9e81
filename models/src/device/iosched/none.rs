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

    fn len(&self) -> usize {
        self.q.len()
    }
}
