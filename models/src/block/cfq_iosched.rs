//! CFQ (`block/cfq-iosched.c`, v2.6.37), one cgroup (the root group), best-effort class at
//! the default priority 4 (requests carry no ioprio).
//!
//! - Queues (`cfq_get_queue`): one sync `cfqq` per I/O context (`Request::ioc`), one async
//!   queue shared by every context (per priority in the kernel; one priority here).
//! - Service trees SYNC / SYNC_NOIDLE / ASYNC (`cfqq_type`), ordered by `rb_key`
//!   (`cfq_service_tree_add`); the workload type is kept until `workload_expires`
//!   (`choose_service_tree`, `cfq_choose_wl`), saved across slice expiries
//!   (`cfq_group_served`).
//! - Slices (`cfq_set_prio_slice`, low_latency scaling), set at the first completion; async
//!   queues expire after `cfq_prio_to_maxrq` = 16 dispatches when others are busy.
//! - Idling (`cfq_update_idle_window`, `cfq_should_idle`, `cfq_arm_slice_timer`,
//!   `cfq_idle_slice_timer`): think time (`cfq_update_io_thinktime`), seek history
//!   (`cfq_update_io_seektime`, CFQQ_SEEKY), REQ_NOIDLE; the SYNC_NOIDLE tree idles at its end
//!   only after a request without REQ_NOIDLE (`noidle_tree_requires_idle`).
//! - `cfq_may_dispatch`: sync idling queues wait for async in flight; async queues wait
//!   while any sync request is in flight; quantum; async depth from `last_delayed_sync`.
//! - Preemption on arrival (`cfq_should_preempt`, `cfq_preempt_queue`).
//! - In a queue: the expired FIFO head (checked once per slice, `cfq_check_fifo`), else
//!   `next_rq` (`cfq_choose_req`: sync, META, nearest forward, short backward at 2×).
//!
//! Left out: RT/IDLE classes and ioprio, cgroups (and with them `group_idle`, 0 without
//! CONFIG_CFQ_GROUP_IOSCHED), close-cooperator queue merging (`cfq_close_cooperator`),
//! `hw_tag` estimation (taken as `tags > CFQ_HW_QUEUE_MIN`), task exit (`nr_tasks`).

use super::config::CfqTunables;
use super::{BioInfo, BlockStats, Elevator, ElvCtx, Rq, Rqs};
use sim::Nanos;
use std::collections::BTreeMap;

const MS: i64 = 1_000_000;
/// `cfq_target_latency = HZ * 3/10`.
const TARGET_LATENCY: i64 = 300 * MS;
/// `CFQ_MIN_TT = 2` jiffies.
const MIN_TT: i64 = 2 * MS;
/// `CFQ_SLICE_SCALE`.
const SLICE_SCALE: i64 = 5;
/// `CFQ_HW_QUEUE_MIN`.
const HW_QUEUE_MIN: u64 = 5;
/// `CFQQ_SEEK_THR = 8 * 100` sectors.
const SEEK_THR: u64 = 800 * 512;
/// `CFQQ_CLOSE_THR = 8 * 1024` sectors.
const CLOSE_THR: u64 = 8 * 1024 * 512;
/// `CFQQ_SECT_THR_NONROT = 2 * 32` sectors.
const SECT_THR_NONROT: u64 = 64 * 512;
/// `IOPRIO_NORM`: the default best-effort priority.
const PRIO: i64 = 4;
/// `CFQ_PRIO_LISTS = IOPRIO_BE_NR`.
const PRIO_LISTS: u32 = 8;
/// `PAGE_CACHE_SIZE`.
const PAGE: u64 = 4096;
/// One jiffy at HZ = 1000.
const JIFFY: i64 = MS;

/// A CFQ service tree (`enum wl_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tree {
    /// ASYNC_WORKLOAD.
    Async = 0,
    /// SYNC_NOIDLE_WORKLOAD.
    SyncNoidle = 1,
    /// SYNC_WORKLOAD.
    Sync = 2,
}

#[derive(Debug, Default)]
struct Cic {
    ttime_samples: u64,
    ttime_total: u64,
    ttime_mean: u64,
    last_end_request: i64,
    sync_q: Option<u32>,
}

#[derive(Debug, Default)]
struct Cfqq {
    sync: bool,
    sort: BTreeMap<(u64, u64), u32>,
    fifo: BTreeMap<(Nanos, u64), u32>,
    next_rq: Option<u32>,
    queued: u32,
    dispatched: u32,
    on_rr: bool,
    /// (tree, rb_key, insertion sequence) while on a service tree.
    tree: Option<(Tree, i64, u64)>,
    slice_start: i64,
    slice_end: i64,
    slice_new: bool,
    slice_dispatch: u32,
    slice_resid: i64,
    idle_window: bool,
    wait_request: bool,
    must_dispatch: bool,
    fifo_checked: bool,
    wait_busy: bool,
    deep: bool,
    seek_history: u32,
    last_request_pos: u64,
    meta_pending: u32,
}

/// The CFQ elevator.
#[derive(Debug)]
pub struct Cfq {
    t: CfqTunables,
    nonrot: bool,
    hw_tag: bool,
    qs: Vec<Cfqq>,
    cics: Vec<Cic>,
    cic_of: BTreeMap<u32, u32>,
    async_q: u32,
    trees: [BTreeMap<(i64, u64), u32>; 3],
    tseq: u64,
    active: Option<u32>,
    active_cic: Option<u32>,
    busy_queues: u32,
    busy_avg: u32,
    rq_queued: u32,
    rq_in_driver: u32,
    /// `rq_in_flight[BLK_RW_ASYNC]`, `rq_in_flight[BLK_RW_SYNC]`.
    rq_in_flight: [u32; 2],
    last_position: u64,
    serving: Tree,
    workload_expires: i64,
    saved_slice: i64,
    saved_type: Tree,
    /// `noidle_tree_requires_idle`: the served SYNC_NOIDLE workload completed a request
    /// without REQ_NOIDLE, so its tree idles at the end; cleared with each new workload.
    noidle_tree_requires_idle: bool,
    last_delayed_sync: i64,
    timer_pending: bool,
    /// An idle interval is open (armed, no request, not fired or cancelled yet).
    idle_open: bool,
    idle_since: Nanos,
    acct_last: Nanos,
    tree_adds: [u64; 3],
}

fn r(rqs: &Rqs, id: u32) -> &Rq {
    rqs[id as usize].as_ref().expect("live request")
}

impl Cfq {
    /// CFQ for a device (`cfq_init_queue`); `tags` stands in for the `hw_tag` estimate.
    pub fn new(t: &CfqTunables, rotational: bool, tags: u64, now: Nanos) -> Self {
        let mut c = Cfq {
            t: t.clone(),
            nonrot: !rotational,
            hw_tag: tags > HW_QUEUE_MIN,
            qs: Vec::new(),
            cics: Vec::new(),
            cic_of: BTreeMap::new(),
            async_q: 0,
            trees: [BTreeMap::new(), BTreeMap::new(), BTreeMap::new()],
            tseq: 0,
            active: None,
            active_cic: None,
            busy_queues: 0,
            busy_avg: 0,
            rq_queued: 0,
            rq_in_driver: 0,
            rq_in_flight: [0, 0],
            last_position: 0,
            serving: Tree::SyncNoidle,
            workload_expires: 0,
            saved_slice: 0,
            saved_type: Tree::SyncNoidle,
            noidle_tree_requires_idle: false,
            // "we optimistically start assuming sync ops weren't delayed in last second"
            last_delayed_sync: now as i64 - 1_000 * MS,
            timer_pending: false,
            idle_open: false,
            idle_since: 0,
            acct_last: now,
            tree_adds: [0; 3],
        };
        c.qs.push(Cfqq::default()); // the shared async queue (BE/4)
        c
    }

    fn cic(&mut self, ioc: u32, now: Nanos) -> u32 {
        if let Some(&c) = self.cic_of.get(&ioc) {
            return c;
        }
        let c = self.cics.len() as u32;
        self.cics.push(Cic {
            last_end_request: now as i64,
            ..Cic::default()
        });
        self.cic_of.insert(ioc, c);
        c
    }

    /// `cfq_get_queue`: the context's sync queue, or the shared async queue.
    fn queue_for(&mut self, cic: u32, sync: bool) -> u32 {
        if !sync {
            return self.async_q;
        }
        if let Some(q) = self.cics[cic as usize].sync_q {
            return q;
        }
        let q = self.qs.len() as u32;
        self.qs.push(Cfqq {
            sync: true,
            idle_window: true, // cfq_init_cfqq: sync queues start with the idle window on
            ..Cfqq::default()
        });
        self.cics[cic as usize].sync_q = Some(q);
        q
    }

    fn lookup(&self, ioc: u32, sync: bool) -> Option<u32> {
        if !sync {
            return Some(self.async_q);
        }
        let c = *self.cic_of.get(&ioc)?;
        self.cics[c as usize].sync_q
    }

    fn q(&self, q: u32) -> &Cfqq {
        &self.qs[q as usize]
    }

    fn qm(&mut self, q: u32) -> &mut Cfqq {
        &mut self.qs[q as usize]
    }

    fn qtype(&self, q: u32) -> Tree {
        let x = self.q(q);
        if !x.sync {
            Tree::Async
        } else if !x.idle_window {
            Tree::SyncNoidle
        } else {
            Tree::Sync
        }
    }

    fn seeky(&self, q: u32) -> bool {
        self.q(q).seek_history.count_ones() > 32 / 8
    }

    /// Time-integrated "async requests queued while sync requests are in flight".
    fn acct(&mut self, now: Nanos, st: &mut BlockStats) {
        if now > self.acct_last {
            if self.q(self.async_q).queued > 0 && self.rq_in_flight[1] > 0 {
                st.async_blocked_ns += u128::from(now - self.acct_last);
            }
            self.acct_last = now;
        }
    }

    fn prio_slice(&self, sync: bool) -> i64 {
        let base = if sync {
            self.t.slice_sync
        } else {
            self.t.slice_async
        } as i64;
        base + base / SLICE_SCALE * (4 - PRIO)
    }

    /// `cfq_slice_offset`: `(nr_cfqq - 1) * (prio_slice(sync, 0) - prio_slice(q))`.
    fn slice_offset(&self, q: u32, nr_cfqq: i64) -> i64 {
        let best = {
            let base = self.t.slice_sync as i64;
            base + base / SLICE_SCALE * 4
        };
        (nr_cfqq - 1) * (best - self.prio_slice(self.q(q).sync))
    }

    fn tree_count(&self, t: Tree) -> usize {
        self.trees[t as usize].len()
    }

    fn nr_cfqq(&self) -> i64 {
        self.trees.iter().map(|t| t.len() as i64).sum()
    }

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, q: u32, add_front: bool, now: i64) {
        let tree = self.qtype(q);
        let on = self.q(q).tree;
        let key = if !add_front {
            // nr_cfqq counts this queue only once it is on a tree (cfq_group_service_tree_add
            // increments it after the key is computed).
            let k = now + self.slice_offset(q, self.nr_cfqq()) - self.q(q).slice_resid;
            self.qm(q).slice_resid = 0;
            k
        } else {
            let first = self.trees[tree as usize]
                .first_key_value()
                .map(|(k, _)| k.0);
            -1_000 * MS + first.unwrap_or(now)
        };
        if let Some((t, k, s)) = on {
            if k == key && t == tree {
                return;
            }
            self.trees[t as usize].remove(&(k, s));
        }
        self.tseq += 1;
        let s = self.tseq;
        self.tree_adds[tree as usize] += 1;
        self.trees[tree as usize].insert((key, s), q);
        self.qm(q).tree = Some((tree, key, s));
    }

    fn add_cfqq_rr(&mut self, q: u32, now: i64) {
        self.qm(q).on_rr = true;
        self.busy_queues += 1;
        self.service_tree_add(q, false, now);
    }

    fn del_cfqq_rr(&mut self, q: u32) {
        self.qm(q).on_rr = false;
        if let Some((t, k, s)) = self.qm(q).tree.take() {
            self.trees[t as usize].remove(&(k, s));
        }
        self.busy_queues -= 1;
    }

    /// `cfq_choose_req`.
    fn choose_req(&self, rqs: &Rqs, a: Option<u32>, b: Option<u32>, last: u64) -> Option<u32> {
        let (a, b) = match (a, b) {
            (None, b) => return b,
            (a, None) => return a,
            (Some(a), Some(b)) if a == b => return Some(b),
            (Some(a), Some(b)) => (a, b),
        };
        let (x, y) = (r(rqs, a), r(rqs, b));
        if x.sync != y.sync {
            return Some(if x.sync { a } else { b });
        }
        if x.meta != y.meta {
            return Some(if x.meta { a } else { b });
        }
        let back_max = self.t.back_seek_max;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.t.back_seek_penalty)
            } else {
                None
            }
        };
        let (s1, s2) = (x.offset, y.offset);
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    a
                } else {
                    b
                }
            }
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if s1 <= s2 {
                    a
                } else {
                    b
                }
            }
        })
    }

    /// `cfq_find_next_rq`: the better of the neighbours of `last` in its queue.
    fn find_next_rq(&self, rqs: &Rqs, q: u32, last: u32) -> Option<u32> {
        let l = r(rqs, last);
        let sort = &self.q(q).sort;
        let prev = sort.range(..(l.offset, l.seq)).next_back().map(|(_, &x)| x);
        let next = sort
            .range((l.offset, l.seq + 1)..)
            .next()
            .map(|(_, &x)| x)
            .or_else(|| {
                sort.first_key_value()
                    .map(|(_, &x)| x)
                    .filter(|&x| x != last)
            });
        self.choose_req(rqs, next, prev, l.end())
    }

    /// `cfq_remove_request`.
    fn remove_request(&mut self, rqs: &Rqs, id: u32) {
        let x = *r(rqs, id);
        let q = x.cfqq;
        if self.q(q).next_rq == Some(id) {
            let n = self.find_next_rq(rqs, q, id);
            self.qm(q).next_rq = n;
        }
        let c = self.qm(q);
        c.fifo.remove(&(x.fifo_time, x.fifo_seq));
        c.sort.remove(&(x.offset, x.seq));
        // BUG_ON(!cfqq->queued[sync]) in cfq_del_rq_rb; WARN_ON(!cfqq->meta_pending) in
        // cfq_remove_request (block/cfq-iosched.c@v2.6.37).
        assert!(
            c.queued > 0 && (!x.meta || c.meta_pending > 0),
            "cfq: queued count underflow"
        );
        c.queued -= 1;
        if x.meta {
            c.meta_pending -= 1;
        }
        assert!(self.rq_queued > 0, "cfq: rq_queued underflow");
        self.rq_queued -= 1;
    }

    /// Ends the open idle interval (the kernel's blkio `idle_time` stops there too).
    fn idle_end(&mut self, now: Nanos, st: &mut BlockStats) {
        if self.idle_open {
            self.idle_open = false;
            st.idle_ns += u128::from(now - self.idle_since);
        }
    }

    fn del_timer(&mut self, now: Nanos, st: &mut BlockStats, cx: &mut ElvCtx) {
        if self.timer_pending {
            self.timer_pending = false;
            st.idle_cancelled += 1;
            self.idle_end(now, st);
            cx.cancel = true;
        }
    }

    /// `cfq_should_idle`.
    fn should_idle(&self, q: u32) -> bool {
        if self.t.slice_idle == 0 {
            return false;
        }
        let x = self.q(q);
        if x.idle_window && !(self.nonrot && self.hw_tag) {
            return true;
        }
        match x.tree {
            Some((t, _, _)) => self.tree_count(t) == 1 && x.sync,
            None => false,
        }
    }

    fn slice_used(&self, q: u32, now: i64) -> bool {
        let x = self.q(q);
        !x.slice_new && now >= x.slice_end
    }

    /// `cfq_set_prio_slice` with low_latency scaling.
    fn set_prio_slice(&mut self, q: u32, now: i64) {
        let mut slice = self.prio_slice(self.q(q).sync);
        if self.t.low_latency {
            // cfq_group_get_avg_queues.
            let busy = self.nr_cfqq() as u32;
            let (lo, hi) = (self.busy_avg.min(busy), self.busy_avg.max(busy));
            self.busy_avg = (3 * hi + lo + 2) / 4;
            let iq = i64::from(self.busy_avg);
            let sync_slice = self.t.slice_sync as i64;
            let expect = sync_slice * iq;
            if expect > TARGET_LATENCY {
                let low = slice.min(2 * self.t.slice_idle as i64 * slice / sync_slice);
                slice = (slice * TARGET_LATENCY / expect).max(low);
            }
        }
        let c = self.qm(q);
        c.slice_start = now;
        c.slice_end = now + slice;
    }

    /// `__cfq_slice_expired`.
    fn slice_expired(&mut self, timed_out: bool, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        let Some(q) = self.active else {
            return;
        };
        let t = now as i64;
        if self.q(q).wait_request {
            self.del_timer(now, st, cx);
        }
        st.slices_expired += 1;
        {
            let c = self.qm(q);
            c.wait_request = false;
            c.wait_busy = false;
            if timed_out && !c.slice_new {
                c.slice_resid = c.slice_end - t;
            }
        }
        // cfq_group_served: save the workload's remaining time.
        if self.workload_expires > t {
            self.saved_slice = self.workload_expires - t;
            self.saved_type = self.serving;
        } else {
            self.saved_slice = 0;
        }
        if self.q(q).on_rr && self.q(q).sort.is_empty() {
            self.del_cfqq_rr(q);
        } else if self.q(q).on_rr {
            self.service_tree_add(q, false, t);
        }
        self.active = None;
        self.active_cic = None;
    }

    /// `cfq_choose_cfqg` + `choose_service_tree` for the root group.
    fn choose_service_tree(&mut self, now: i64) {
        if self.saved_slice != 0 {
            self.workload_expires = now + self.saved_slice;
            self.serving = self.saved_type;
        } else {
            self.workload_expires = now - 1;
        }
        if self.tree_count(self.serving) > 0 && now <= self.workload_expires {
            return;
        }
        // cfq_choose_wl: the tree whose first queue has the lowest rb_key.
        let mut best = Tree::SyncNoidle;
        let mut low: Option<i64> = None;
        for t in [Tree::Async, Tree::SyncNoidle, Tree::Sync] {
            if let Some((k, _)) = self.trees[t as usize].first_key_value() {
                if low.is_none_or(|l| k.0 < l) {
                    low = Some(k.0);
                    best = t;
                }
            }
        }
        self.serving = best;
        let count = self.tree_count(best) as i64;
        let busy = self.nr_cfqq();
        let mut slice = TARGET_LATENCY * count / i64::from(self.busy_avg).max(busy).max(1);
        if best == Tree::Async {
            let tmp = TARGET_LATENCY * self.tree_count(Tree::Async) as i64
                / i64::from(self.busy_queues.max(1));
            slice = slice.min(tmp);
            slice = slice * self.t.slice_async as i64 / self.t.slice_sync as i64;
        } else {
            slice = slice.max(2 * self.t.slice_idle as i64);
        }
        slice = slice.max(MIN_TT);
        self.workload_expires = now + slice;
        self.noidle_tree_requires_idle = false;
    }

    /// `__cfq_set_active_queue`.
    fn set_active(&mut self, q: Option<u32>, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        if let Some(q) = q {
            let c = self.qm(q);
            c.slice_start = 0;
            c.slice_end = 0;
            c.slice_dispatch = 0;
            c.wait_request = false;
            c.must_dispatch = false;
            c.fifo_checked = false;
            c.slice_new = true;
            self.del_timer(now, st, cx);
        }
        self.active = q;
    }

    /// `cfq_select_queue` (no close cooperators, no group idling).
    fn select_queue(&mut self, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) -> Option<u32> {
        let t = now as i64;
        if let Some(q) = self.active {
            if self.rq_queued == 0 {
                return None;
            }
            let expire = if self.q(q).wait_busy && !self.q(q).sort.is_empty() {
                true
            } else if self.slice_used(q, t) && !self.q(q).must_dispatch {
                if self.busy_queues == 1
                    && self.q(q).sort.is_empty()
                    && self.q(q).dispatched > 0
                    && self.should_idle(q)
                {
                    return None;
                }
                true
            } else if !self.q(q).sort.is_empty() {
                return Some(q);
            } else if self.timer_pending {
                return None;
            } else {
                if self.seeky(q) && self.q(q).idle_window {
                    let c = self.q(q);
                    if c.slice_new || c.slice_end - t > t - c.slice_start {
                        let c = self.qm(q);
                        c.deep = false;
                        c.idle_window = false;
                    }
                }
                if self.q(q).dispatched > 0 && self.should_idle(q) {
                    return None;
                }
                true
            };
            if expire {
                self.slice_expired(false, now, cx, st);
            }
        }
        if self.busy_queues == 0 {
            return None;
        }
        self.choose_service_tree(t);
        let q = self.trees[self.serving as usize]
            .first_key_value()
            .map(|(_, &q)| q);
        self.set_active(q, now, cx, st);
        q
    }

    /// `cfq_slice_used_soon`.
    fn slice_used_soon(&self, q: u32, now: i64) -> bool {
        let c = self.q(q);
        c.slice_new || now + self.t.slice_idle as i64 * i64::from(c.dispatched) > c.slice_end
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: u32, now: i64) -> bool {
        if self.should_idle(q) && self.rq_in_flight[0] > 0 {
            return false;
        }
        let c = self.q(q);
        if self.rq_in_flight[1] > 0 && !c.sync {
            return false;
        }
        let mut max = (self.t.quantum / 2).max(1);
        if c.dispatched >= max {
            if self.busy_queues > 1 && self.slice_used_soon(q, now) {
                return false;
            }
            max = if self.busy_queues == 1 {
                u32::MAX
            } else {
                self.t.quantum
            };
        }
        if !c.sync && self.t.low_latency {
            let last_sync = now - self.last_delayed_sync;
            let mut depth = (last_sync / self.t.slice_sync as i64).max(0) as u32;
            if depth == 0 && c.dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        c.dispatched < max
    }

    /// `cfq_check_fifo`: the FIFO head if expired, once per slice.
    fn check_fifo(&mut self, q: u32, now: Nanos) -> Option<u32> {
        let c = self.qm(q);
        if c.fifo_checked {
            return None;
        }
        c.fifo_checked = true;
        let (&(t, _), &id) = c.fifo.first_key_value()?;
        (now >= t).then_some(id)
    }

    /// `cfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, q: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        if self.nonrot && self.hw_tag {
            return;
        }
        if !self.should_idle(q) || self.q(q).dispatched > 0 {
            return;
        }
        let Some(cic) = self.active_cic else {
            return;
        };
        let c = &self.cics[cic as usize];
        if c.ttime_samples > 80 && self.q(q).slice_end - (now as i64) < c.ttime_mean as i64 {
            return;
        }
        self.qm(q).wait_request = true;
        // mod_timer: a still-pending timer (must_dispatch path) is re-armed.
        self.idle_end(now, st);
        self.timer_pending = true;
        self.idle_open = true;
        self.idle_since = now;
        st.idle_armed += 1;
        cx.cancel = false;
        cx.arm = Some(now + self.t.slice_idle);
    }

    /// `cfq_should_preempt` for a request `rq` arriving on queue `new`.
    fn should_preempt(&self, rqs: &Rqs, new: u32, rq: u32, now: i64) -> bool {
        let Some(act) = self.active else {
            return false;
        };
        let x = r(rqs, rq);
        let a = self.q(act);
        if x.sync && !a.sync {
            return true;
        }
        if self.slice_used(act, now) {
            return true;
        }
        if self.serving == Tree::SyncNoidle
            && self.qtype(new) == Tree::SyncNoidle
            && self
                .q(new)
                .tree
                .is_some_and(|(t, _, _)| self.tree_count(t) == 2)
            && a.sort.is_empty()
        {
            return true;
        }
        if x.meta && a.meta_pending == 0 {
            return true;
        }
        if self.active_cic.is_none() || !a.wait_request {
            return false;
        }
        x.offset.abs_diff(self.last_position) <= CLOSE_THR
    }
}

impl Elevator for Cfq {
    fn allow_merge(&self, rqs: &Rqs, rq: u32, bio: &BioInfo) -> bool {
        let x = r(rqs, rq);
        if bio.sync && !x.sync {
            return false;
        }
        self.lookup(bio.ioc, bio.sync) == Some(x.cfqq)
    }

    fn front_merge(&self, _rqs: &Rqs, bio: &BioInfo) -> Option<u32> {
        let q = self.lookup(bio.ioc, bio.sync)?;
        let end = bio.offset + bio.len;
        self.q(q)
            .sort
            .range((end, 0)..=(end, u64::MAX))
            .next()
            .map(|(_, &x)| x)
    }

    fn latter(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        let x = r(rqs, rq);
        self.q(x.cfqq)
            .sort
            .range((x.offset, x.seq + 1)..)
            .next()
            .map(|(_, &n)| n)
    }

    fn former(&self, rqs: &Rqs, rq: u32) -> Option<u32> {
        let x = r(rqs, rq);
        self.q(x.cfqq)
            .sort
            .range(..(x.offset, x.seq))
            .next_back()
            .map(|(_, &n)| n)
    }

    fn add(&mut self, rqs: &mut Rqs, id: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        self.acct(now, st);
        let t = now as i64;
        let (ioc, sync) = {
            let x = r(rqs, id);
            (x.ioc, x.sync)
        };
        let cic = self.cic(ioc, now);
        let q = self.queue_for(cic, sync);
        let expire = if sync {
            self.t.fifo_expire_sync
        } else {
            self.t.fifo_expire_async
        };
        let x = {
            let x = rqs[id as usize].as_mut().expect("live request");
            x.cfqq = q;
            x.cic = cic;
            x.fifo_time = now + expire;
            *x
        };
        // cfq_insert_request → cfq_add_rq_rb.
        {
            let c = self.qm(q);
            c.fifo.insert((x.fifo_time, x.fifo_seq), id);
            c.sort.insert((x.offset, x.seq), id);
            c.queued += 1;
        }
        if !self.q(q).on_rr {
            self.add_cfqq_rr(q, t);
        }
        let n = self.choose_req(rqs, self.q(q).next_rq, Some(id), self.last_position);
        self.qm(q).next_rq = n;
        // cfq_rq_enqueued.
        self.rq_queued += 1;
        if x.meta {
            self.qm(q).meta_pending += 1;
        }
        {
            // cfq_update_io_thinktime.
            let idle2 = 2 * self.t.slice_idle;
            let c = &mut self.cics[cic as usize];
            let elapsed = (t - c.last_end_request).max(0) as u64;
            let tt = elapsed.min(idle2);
            c.ttime_samples = (7 * c.ttime_samples + 256) / 8;
            c.ttime_total = (7 * c.ttime_total + 256 * tt) / 8;
            c.ttime_mean = (c.ttime_total + 128) / c.ttime_samples;
        }
        {
            // cfq_update_io_seektime.
            let nonrot = self.nonrot;
            let c = self.qm(q);
            let sdist = if c.last_request_pos != 0 {
                c.last_request_pos.abs_diff(x.offset)
            } else {
                0
            };
            c.seek_history <<= 1;
            c.seek_history |= u32::from(if nonrot {
                x.len < SECT_THR_NONROT
            } else {
                sdist > SEEK_THR
            });
        }
        if self.q(q).sync {
            // cfq_update_idle_window.
            let seeky = self.seeky(q);
            let next_noidle = self.q(q).next_rq.is_some_and(|n| r(rqs, n).noidle);
            let (samples, mean) = {
                let c = &self.cics[cic as usize];
                (c.ttime_samples, c.ttime_mean)
            };
            let slice_idle = self.t.slice_idle;
            let c = self.qm(q);
            if c.queued >= 4 {
                c.deep = true;
            }
            if next_noidle || slice_idle == 0 || (!c.deep && seeky) {
                c.idle_window = false;
            } else if samples > 80 {
                c.idle_window = mean <= slice_idle;
            }
        }
        self.qm(q).last_request_pos = x.end();
        if self.active == Some(q) {
            if self.q(q).wait_request {
                if x.len > PAGE || self.busy_queues > 1 {
                    self.del_timer(now, st, cx);
                    self.qm(q).wait_request = false;
                    cx.run = true;
                } else {
                    // The timer stays armed; the request goes at the next queue run.
                    self.idle_end(now, st);
                    self.qm(q).must_dispatch = true;
                }
            }
        } else if self.should_preempt(rqs, q, id, t) {
            // cfq_preempt_queue.
            st.preemptions += 1;
            if let Some(a) = self.active {
                if x.sync && !self.q(a).sync {
                    st.sync_preempts_async += 1;
                }
            }
            self.slice_expired(true, now, cx, st);
            self.service_tree_add(q, true, t);
            let c = self.qm(q);
            c.slice_end = 0;
            c.slice_new = true;
            cx.run = true;
        }
    }

    fn merged(&mut self, rqs: &Rqs, rq: u32, old_offset: u64) {
        let x = r(rqs, rq);
        if x.offset != old_offset {
            // cfq_merged_request → cfq_reposition_rq_rb.
            let q = x.cfqq;
            let c = self.qm(q);
            c.sort.remove(&(old_offset, x.seq));
            c.sort.insert((x.offset, x.seq), rq);
            let n = self.choose_req(rqs, self.q(q).next_rq, Some(rq), self.last_position);
            self.qm(q).next_rq = n;
        }
    }

    fn merge_requests(&mut self, rqs: &mut Rqs, rq: u32, next: u32, _st: &mut BlockStats) {
        // cfq_merged_requests.
        let n = *r(rqs, next);
        let x = *r(rqs, rq);
        if n.fifo_time < x.fifo_time {
            // rq takes next's (older) FIFO place and time.
            let c = self.qm(x.cfqq);
            c.fifo.remove(&(x.fifo_time, x.fifo_seq));
            c.fifo.remove(&(n.fifo_time, n.fifo_seq));
            c.fifo.insert((n.fifo_time, n.fifo_seq), next);
            let m = rqs[rq as usize].as_mut().expect("live request");
            m.fifo_time = n.fifo_time;
            m.fifo_seq = n.fifo_seq;
            // remove_request(next) below deletes next's entry; rq re-enters at that key.
            // `if (cfqq->next_rq == next)` with cfqq = RQ_CFQQ(rq): rq's own queue.
            if self.q(x.cfqq).next_rq == Some(next) {
                self.qm(x.cfqq).next_rq = Some(rq);
            }
            self.remove_request(rqs, next);
            self.qm(x.cfqq).fifo.insert((n.fifo_time, n.fifo_seq), rq);
            return;
        }
        // cfq_merged_requests@v2.6.37 checks rq's queue; when next sat in another queue,
        // cfq_remove_request(next) moves that queue's next_rq on.
        if self.q(x.cfqq).next_rq == Some(next) {
            self.qm(x.cfqq).next_rq = Some(rq);
        }
        self.remove_request(rqs, next);
    }

    fn dispatch(
        &mut self,
        rqs: &mut Rqs,
        now: Nanos,
        cx: &mut ElvCtx,
        st: &mut BlockStats,
    ) -> Option<u32> {
        self.acct(now, st);
        if self.busy_queues == 0 {
            return None;
        }
        let t = now as i64;
        let q = self.select_queue(now, cx, st)?;
        if self.q(q).sort.is_empty() {
            return None;
        }
        if !self.may_dispatch(q, t) {
            st.may_dispatch_refused += 1;
            return None;
        }
        let id = match self.check_fifo(q, now) {
            Some(id) => id,
            None => self.q(q).next_rq.expect("a queued request"),
        };
        // cfq_dispatch_insert.
        let n = self.find_next_rq(rqs, q, id);
        self.qm(q).next_rq = n;
        self.remove_request(rqs, id);
        let sync = self.q(q).sync;
        self.qm(q).dispatched += 1;
        self.rq_in_flight[usize::from(sync)] += 1;
        // cfq_activate_request (the driver takes it at once here).
        self.rq_in_driver += 1;
        self.last_position = r(rqs, id).end();
        if self.active_cic.is_none() {
            self.active_cic = Some(r(rqs, id).cic);
        }
        // cfq_dispatch_requests.
        {
            let c = self.qm(q);
            c.slice_dispatch += 1;
            c.must_dispatch = false;
        }
        let maxrq =
            2 * (self.t.slice_async_rq + self.t.slice_async_rq * (PRIO_LISTS - 1 - PRIO as u32));
        if self.busy_queues > 1 && !sync && self.q(q).slice_dispatch >= maxrq {
            self.qm(q).slice_end = t + JIFFY;
            self.slice_expired(false, now, cx, st);
        }
        Some(id)
    }

    fn completed(&mut self, rqs: &Rqs, id: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        self.acct(now, st);
        let t = now as i64;
        let x = *r(rqs, id);
        let q = x.cfqq;
        // WARN_ON(!cfqd->rq_in_driver); WARN_ON(!cfqq->dispatched) in cfq_completed_request
        // (block/cfq-iosched.c@v2.6.37).
        let qsync = self.q(q).sync;
        assert!(
            self.rq_in_driver > 0
                && self.q(q).dispatched > 0
                && self.rq_in_flight[usize::from(qsync)] > 0,
            "cfq: completion of a request the driver does not hold"
        );
        self.rq_in_driver -= 1;
        self.qm(q).dispatched -= 1;
        self.rq_in_flight[usize::from(qsync)] -= 1;
        if x.sync {
            self.cics[x.cic as usize].last_end_request = t;
            if x.start + self.t.fifo_expire_sync <= now {
                self.last_delayed_sync = t;
            }
        }
        if self.active == Some(q) {
            let empty = self.q(q).sort.is_empty();
            if self.q(q).slice_new {
                self.set_prio_slice(q, t);
                self.qm(q).slice_new = false;
            }
            // cfq_should_wait_busy.
            let wait_busy = self.busy_queues <= 1 && empty && self.should_idle(q) && {
                let c = self.q(q);
                let tt = self
                    .active_cic
                    .map(|a| &self.cics[a as usize])
                    .filter(|a| a.ttime_samples > 80)
                    .map(|a| a.ttime_mean as i64);
                self.slice_used(q, t)
                    || tt.is_some_and(|m| c.slice_end - t < m)
                    || c.slice_end - t == JIFFY
            };
            if wait_busy {
                let idle = self.t.slice_idle as i64;
                let c = self.qm(q);
                c.slice_end = t + idle;
                c.wait_busy = true;
            }
            if self.slice_used(q, t) {
                self.slice_expired(true, now, cx, st);
            } else if x.sync && empty {
                // SYNC_NOIDLE idles at the end of its tree only after a request without
                // REQ_NOIDLE, or when this is the group's only busy queue
                // (cfq_completed_request; nr_cfqq is busy_queues in the one root group).
                self.noidle_tree_requires_idle |= !x.noidle;
                if self.serving == Tree::Sync
                    || self.noidle_tree_requires_idle
                    || self.busy_queues == 1
                {
                    self.arm_slice_timer(q, now, cx, st);
                }
            }
        }
        if self.rq_in_driver == 0 && self.busy_queues > 0 {
            cx.run = true;
        }
    }

    fn timer(&mut self, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        self.acct(now, st);
        if !self.timer_pending {
            return;
        }
        self.timer_pending = false;
        st.idle_fired += 1;
        self.idle_end(now, st);
        let t = now as i64;
        if let Some(q) = self.active {
            if self.q(q).must_dispatch {
                cx.run = self.busy_queues > 0;
                return;
            }
            if !self.slice_used(q, t) {
                if self.busy_queues == 0 {
                    return;
                }
                if !self.q(q).sort.is_empty() {
                    cx.run = true;
                    return;
                }
                self.qm(q).deep = false;
            }
        }
        self.slice_expired(false, now, cx, st);
        cx.run = self.busy_queues > 0;
    }

    fn queued(&self) -> usize {
        self.rq_queued as usize
    }

    fn account(&mut self, now: Nanos, st: &mut BlockStats) {
        self.acct(now, st);
        st.tree_adds = self.tree_adds;
    }
}
