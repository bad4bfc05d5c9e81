//! The host link (PCIe lanes, a SAS or SATA port) as one shared resource with a reservation
//! calendar: a transfer takes the earliest free span at or after the time its data is ready.
//!
//! A request reserves its transfer when it enters service, but its data may be ready only
//! later: a PREFLUSH write moves its data after the cache flush it carries has destaged
//! (blk-flush.c runs PREFLUSH then DATA), an HDD read after the media delivered it. The link
//! is idle until then, and a transfer that fits before that reservation takes the gap, as
//! on the wire. (FEMU's next-free time, which the model used before, queued every later
//! transfer behind the future reservation: a 4 KiB write behind a flush's whole destage.)

use sim::Nanos;
use std::collections::VecDeque;

/// Busy spans of the link, disjoint, sorted, adjacent ones merged.
#[derive(Debug, Default)]
pub struct Link {
    busy: VecDeque<(Nanos, Nanos)>,
}

impl Link {
    /// Reserves `len` ns of the link at the earliest free span starting at or after
    /// `ready`; spans ended by `now` are forgotten. Returns when the transfer ends.
    pub fn reserve(&mut self, now: Nanos, ready: Nanos, len: Nanos) -> Nanos {
        debug_assert!(ready >= now, "link: a transfer ready before now");
        if len == 0 {
            return ready;
        }
        while self.busy.front().is_some_and(|&(_, end)| end <= now) {
            self.busy.pop_front();
        }
        let mut start = ready;
        let mut i = 0;
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if start + len <= s {
                break;
            }
            start = start.max(e);
            i += 1;
        }
        self.insert(i, start, start + len);
        start + len
    }

    /// Puts span [s, e) before index `i`, merging it with the neighbours it touches.
    fn insert(&mut self, i: usize, s: Nanos, e: Nanos) {
        let joins_prev = i > 0 && self.busy[i - 1].1 == s;
        let joins_next = i < self.busy.len() && self.busy[i].0 == e;
        match (joins_prev, joins_next) {
            (true, true) => {
                let next_end = self.busy[i].1;
                self.busy[i - 1].1 = next_end;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = e,
            (false, true) => self.busy[i].0 = s,
            (false, false) => self.busy.insert(i, (s, e)),
        }
        debug_assert!(
            self.busy
                .iter()
                .zip(self.busy.iter().skip(1))
                .all(|(a, b)| a.1 < b.0),
            "link: busy spans overlap or are out of order"
        );
    }

    /// Busy spans still ahead (for tests).
    #[cfg(test)]
    fn spans(&self) -> Vec<(Nanos, Nanos)> {
        self.busy.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_ready_now_queue_in_reservation_order() {
        let mut l = Link::default();
        assert_eq!(l.reserve(0, 0, 10), 10);
        assert_eq!(l.reserve(0, 0, 10), 20);
        assert_eq!(l.reserve(5, 5, 10), 30);
        assert_eq!(l.spans(), vec![(0, 30)]);
    }

    #[test]
    fn a_transfer_fits_before_a_later_reservation() {
        let mut l = Link::default();
        // A PREFLUSH write's data after a 1,000 ns destage.
        assert_eq!(l.reserve(0, 1_000, 16), 1_016);
        // A write entering service now moves its data at once, not after the destage.
        assert_eq!(l.reserve(10, 10, 16), 26);
        assert_eq!(l.spans(), vec![(10, 26), (1_000, 1_016)]);
    }

    #[test]
    fn a_transfer_too_long_for_the_gap_goes_after_the_reservation() {
        let mut l = Link::default();
        l.reserve(0, 100, 50);
        assert_eq!(l.reserve(0, 0, 120), 270);
        assert_eq!(l.reserve(0, 0, 100), 100);
        assert_eq!(l.spans(), vec![(0, 270)]);
    }

    #[test]
    fn spans_ended_by_now_are_forgotten() {
        let mut l = Link::default();
        l.reserve(0, 0, 10);
        l.reserve(0, 50, 10);
        assert_eq!(l.reserve(100, 100, 5), 105);
        assert_eq!(l.spans(), vec![(100, 105)]);
    }
}
