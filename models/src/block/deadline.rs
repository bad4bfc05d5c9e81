//! `deadline` (`block/deadline-iosched.c`, v2.6.37): per data direction a sort tree and a
//! FIFO with expiry times (sync and async writes alike: only the direction matters).
//! `deadline_dispatch_requests`: continue the batch in sector order while `batching <
//! fifo_batch`; else prefer reads unless writes are pending and reads have starved them
//! `writes_starved` times; start a batch at the FIFO head if it expired (or nothing follows
//! in sector order), else at the next request in sector order.

use super::config::DeadlineTunables;
use super::{BioInfo, BlockStats, Dir, Elevator, ElvCtx, Rqs};
use sim::Nanos;
use std::collections::BTreeMap;

/// The deadline elevator (also the core of `mq-deadline`).
#[derive(Debug)]
pub struct Deadline {
    t: DeadlineTunables,
    /// `sort_list[dir]`: (offset, seq) → request.
    sort: [BTreeMap<(u64, u64), u32>; 2],
    /// `fifo_list[dir]`: (fifo time, fifo seq) → request.
    fifo: [BTreeMap<(Nanos, u64), u32>; 2],
    /// `next_rq[dir]`.
    next_rq: [Option<u32>; 2],
    batching: u32,
    starved: u32,
    /// Expiry test: `time_after` (2.6.37) or `time_after_eq` (mq-deadline).
    expire_at_eq: bool,
}

fn r(rqs: &Rqs, id: u32) -> &super::Rq {
    rqs[id as usize].as_ref().expect("live request")
}

impl Deadline {
    /// deadline with these tunables.
    pub fn new(t: &DeadlineTunables) -> Self {
        Deadline {
            t: t.clone(),
            sort: [BTreeMap::new(), BTreeMap::new()],
            fifo: [BTreeMap::new(), BTreeMap::new()],
            next_rq: [None, None],
            batching: 0,
            starved: 0,
            expire_at_eq: false,
        }
    }

    /// As mq-deadline tests expiry (`time_after_eq`, block/mq-deadline.c:deadline_check_fifo@v5.10).
    pub fn with_expiry_at_eq(mut self) -> Self {
        self.expire_at_eq = true;
        self
    }

    fn latter_in(&self, rqs: &Rqs, id: u32) -> Option<u32> {
        let x = r(rqs, id);
        let d = x.dir as usize;
        self.sort[d]
            .range((x.offset, x.seq + 1)..)
            .next()
            .map(|(_, &n)| n)
    }

    /// `deadline_remove_request`: off the FIFO and the sort tree, fixing `next_rq`.
    fn remove(&mut self, rqs: &Rqs, id: u32) {
        let x = *r(rqs, id);
        let d = x.dir as usize;
        if self.next_rq[d] == Some(id) {
            self.next_rq[d] = self.latter_in(rqs, id);
        }
        self.sort[d].remove(&(x.offset, x.seq));
        self.fifo[d].remove(&(x.fifo_time, x.fifo_seq));
    }

    fn expired(&self, dir: usize, now: Nanos) -> bool {
        match self.fifo[dir].first_key_value() {
            Some((&(t, _), _)) => {
                if self.expire_at_eq {
                    now >= t
                } else {
                    now > t
                }
            }
            None => false,
        }
    }
}

impl Elevator for Deadline {
    fn front_merge(&self, rqs: &Rqs, bio: &BioInfo) -> Option<u32> {
        if !self.t.front_merges {
            return None;
        }
        let end = bio.offset + bio.len;
        let _ = rqs;
        self.sort[bio.dir as usize]
            .range((end, 0)..=(end, u64::MAX))
            .next()
            .map(|(_, &n)| n)
    }

    fn latter(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        self.latter_in(rqs, rq)
    }

    fn former(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        let x = r(rqs, rq);
        self.sort[x.dir as usize]
            .range(..(x.offset, x.seq))
            .next_back()
            .map(|(_, &n)| n)
    }

    fn add(&mut self, rqs: &mut Rqs, rq: u32, now: Nanos, _cx: &mut ElvCtx, _st: &mut BlockStats) {
        let x = rqs[rq as usize].as_mut().expect("live request");
        let d = x.dir as usize;
        x.fifo_time = now
            + if x.dir == Dir::Read {
                self.t.read_expire
            } else {
                self.t.write_expire
            };
        self.sort[d].insert((x.offset, x.seq), rq);
        self.fifo[d].insert((x.fifo_time, x.fifo_seq), rq);
    }

    fn merged(&mut self, rqs: &Rqs, rq: u32, old_offset: u64) {
        let x = r(rqs, rq);
        if x.offset != old_offset {
            let d = x.dir as usize;
            self.sort[d].remove(&(old_offset, x.seq));
            self.sort[d].insert((x.offset, x.seq), rq);
        }
    }

    fn merge_requests(&mut self, rqs: &mut Rqs, rq: u32, next: u32, _st: &mut BlockStats) {
        // deadline_merged_requests: rq takes next's FIFO place if next is older.
        let n = *r(rqs, next);
        let x = *r(rqs, rq);
        if n.fifo_time < x.fifo_time {
            let d = x.dir as usize;
            self.fifo[d].remove(&(x.fifo_time, x.fifo_seq));
            let m = rqs[rq as usize].as_mut().expect("live request");
            m.fifo_time = n.fifo_time;
            m.fifo_seq = n.fifo_seq;
            self.remove(rqs, next);
            self.fifo[d].insert((n.fifo_time, n.fifo_seq), rq);
        } else {
            self.remove(rqs, next);
        }
    }

    fn dispatch(
        &mut self,
        rqs: &mut Rqs,
        now: Nanos,
        _cx: &mut ElvCtx,
        st: &mut BlockStats,
    ) -> Option<u32> {
        let (rd, wr) = (Dir::Read as usize, Dir::Write as usize);
        let reads = !self.fifo[rd].is_empty();
        let writes = !self.fifo[wr].is_empty();
        let cont = self.next_rq[wr].or(self.next_rq[rd]);
        let id = match cont {
            Some(id) if self.batching < self.t.fifo_batch => id,
            _ => {
                let dir = if reads {
                    let starve = writes && self.starved >= self.t.writes_starved;
                    if writes {
                        self.starved += 1;
                    }
                    if starve {
                        st.starved_write_batches += 1;
                        self.starved = 0;
                        wr
                    } else {
                        rd
                    }
                } else if writes {
                    self.starved = 0;
                    wr
                } else {
                    return None;
                };
                self.batching = 0;
                let exp = self.expired(dir, now);
                match self.next_rq[dir] {
                    Some(n) if !exp => n,
                    _ => {
                        if exp {
                            st.fifo_expired_batches += 1;
                        }
                        *self.fifo[dir].first_key_value()?.1
                    }
                }
            }
        };
        self.batching += 1;
        // deadline_move_request.
        let d = r(rqs, id).dir as usize;
        let latter = self.latter_in(rqs, id);
        self.next_rq = [None, None];
        self.next_rq[d] = latter;
        let x = *r(rqs, id);
        self.sort[d].remove(&(x.offset, x.seq));
        self.fifo[d].remove(&(x.fifo_time, x.fifo_seq));
        Some(id)
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
        self.fifo[0].len() + self.fifo[1].len()
    }
}
