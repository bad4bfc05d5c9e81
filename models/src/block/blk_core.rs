//! The request queue (`block/blk-core.c`, `block/elevator.c`, `block/blk-merge.c`, v2.6.37):
//! `__make_request` (merge a bio into a queued request, or allocate one), plugging
//! (`blk_plug_device`, `unplug_thresh`, `unplug_delay`, REQ_UNPLUG), the dispatch list's head
//! for flush-sequence requests, and completion.

use super::blk_flush::{FlushBio, FlushQueue, FlushStart};
use super::config::{QueueTunables, Tunables};
use super::{BioInfo, BlockStats, Dir, Elevator, ElvCtx, FlushStep, Rq, NIL};
use crate::device::{IoClass, Op, Request};
use sim::Nanos;
use std::collections::{BTreeMap, VecDeque};

/// A request leaving the queue for the driver.
#[derive(Clone, Copy, Debug)]
pub struct Dispatched {
    /// Request id (give it back to `completed`).
    pub rq: u32,
    /// The device request: merged extent, flags.
    pub req: Request,
    /// First bio (chain through `next_bio`), NIL for a flush step without data.
    pub head: u32,
}

/// What `make_request` did with a bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// Queued (merged or a new request); run the queue now if `run`.
    Queued {
        /// Run the queue now.
        run: bool,
    },
    /// Nothing to do at the device: the bio is complete (an empty flush without a cache).
    Done,
}

/// The legacy request queue in front of one device.
pub struct RequestQueue {
    rqs: Vec<Option<Rq>>,
    free: Vec<u32>,
    bio_next: Vec<u32>,
    /// Back-merge hash (`elv_rqhash`): (end offset, allocation sequence) → request.
    hash: BTreeMap<(u64, u64), u32>,
    last_merge: u32,
    elv: Box<dyn Elevator>,
    q: QueueTunables,
    /// `queue_should_plug`: !(non-rotational && tagged).
    should_plug: bool,
    rotational: bool,
    plugged: bool,
    /// Unplug timer deadline.
    pub plug_deadline: Option<Nanos>,
    /// Elevator timer deadline (CFQ's idle timer).
    pub elv_deadline: Option<Nanos>,
    flush: FlushQueue,
    /// Flush-sequence requests ready for the driver (the dispatch list's head).
    front: VecDeque<u32>,
    seq: u64,
    stats: BlockStats,
}

impl RequestQueue {
    /// A request queue with the named elevator (None for `none` or an unknown name).
    pub fn new(
        name: &str,
        t: &Tunables,
        rotational: bool,
        tags: u64,
        write_cache: bool,
        now: Nanos,
    ) -> Option<Self> {
        let elv = super::elevator(name, t, rotational, tags, now)?;
        let name: &'static str = super::NAMES
            .iter()
            .find(|n| **n == name)
            .copied()
            .unwrap_or("?");
        let tagged = tags > 1;
        Some(RequestQueue {
            rqs: Vec::new(),
            free: Vec::new(),
            bio_next: Vec::new(),
            hash: BTreeMap::new(),
            last_merge: NIL,
            elv,
            q: t.queue.clone(),
            should_plug: t.queue.plugging && name != "mq-deadline" && (rotational || !tagged),
            rotational,
            plugged: false,
            plug_deadline: None,
            elv_deadline: None,
            flush: FlushQueue::new(write_cache, t.queue.fua),
            front: VecDeque::new(),
            seq: 0,
            stats: BlockStats {
                scheduler: name,
                ..BlockStats::default()
            },
        })
    }

    /// Statistics up to `now`.
    pub fn stats(&mut self, now: Nanos) -> BlockStats {
        self.elv.account(now, &mut self.stats);
        self.stats.clone()
    }

    /// The bio after `bio` in its request (NIL at the end).
    pub fn next_bio(&self, bio: u32) -> u32 {
        self.bio_next.get(bio as usize).copied().unwrap_or(NIL)
    }

    /// Whether the queue is plugged.
    pub fn plugged(&self) -> bool {
        self.plugged
    }

    fn alloc(&mut self, rq: Rq) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.rqs[i as usize] = Some(rq);
                i
            }
            None => {
                self.rqs.push(Some(rq));
                (self.rqs.len() - 1) as u32
            }
        }
    }

    fn rq(&self, id: u32) -> &Rq {
        self.rqs[id as usize].as_ref().expect("live request")
    }

    fn rq_mut(&mut self, id: u32) -> &mut Rq {
        self.rqs[id as usize].as_mut().expect("live request")
    }

    fn link_bio(&mut self, bio: u32) {
        let i = bio as usize;
        if self.bio_next.len() <= i {
            self.bio_next.resize(i + 1, NIL);
        }
        self.bio_next[i] = NIL;
    }

    fn apply(&mut self, cx: ElvCtx) -> bool {
        if cx.cancel {
            self.elv_deadline = None;
        }
        if let Some(t) = cx.arm {
            self.elv_deadline = Some(t);
        }
        cx.run
    }

    fn new_rq(&self, req: &Request, bio: u32, now: Nanos, step: FlushStep) -> Rq {
        Rq {
            offset: req.offset,
            len: req.len,
            dir: if req.op == Op::Read {
                Dir::Read
            } else {
                Dir::Write
            },
            flush: false,
            fua: false,
            sync: is_sync(req),
            meta: req.meta,
            noidle: req.noidle,
            ioc: req.ioc,
            head: bio,
            tail: bio,
            bios: 1,
            start: now,
            seq: self.seq,
            step,
            cfqq: NIL,
            cic: NIL,
            fifo_time: 0,
            fifo_seq: self.seq,
        }
    }

    fn plug(&mut self, now: Nanos) {
        if !self.plugged {
            self.plugged = true;
            self.stats.plugs += 1;
            self.plug_deadline = Some(now + self.q.unplug_delay);
        }
    }

    /// `blk_remove_plug`: whether the queue was plugged.
    fn remove_plug(&mut self) -> bool {
        self.plug_deadline = None;
        std::mem::replace(&mut self.plugged, false)
    }

    /// `__generic_unplug_device`: run the queue if it was plugged (always on a
    /// non-rotational device, and on a queue that never plugs).
    fn generic_unplug(&mut self) -> bool {
        self.remove_plug() || !self.rotational || !self.should_plug
    }

    fn queue_empty(&self) -> bool {
        self.front.is_empty() && self.elv.queued() == 0
    }

    /// `__make_request` for bio `bio` (the device's slot id). `req.unplug` is REQ_UNPLUG.
    pub fn make_request(&mut self, bio: u32, req: &Request, now: Nanos) -> Submitted {
        self.link_bio(bio);
        let dir = if req.op == Op::Read {
            Dir::Read
        } else {
            Dir::Write
        };
        if req.op != Op::Flush {
            self.stats.bios[dir as usize] += 1;
        }
        self.seq += 1;
        let unplug = req.unplug || req.op == Op::Flush || req.preflush;
        if req.op == Op::Flush || req.preflush || req.fua {
            // ELEVATOR_INSERT_FRONT into the flush machinery (WRITE_FLUSH* carry REQ_UNPLUG).
            if self.should_plug && self.queue_empty() {
                self.plug(now);
            }
            let fb = FlushBio {
                bio,
                offset: req.offset,
                len: if req.op == Op::Flush { 0 } else { req.len },
                preflush: req.op == Op::Flush || req.preflush,
                fua: req.fua,
            };
            match self.flush.submit(fb) {
                FlushStart::Step(s) => self.push_step(s, fb, req, now),
                FlushStart::Pending => {}
                FlushStart::Done => return Submitted::Done,
            }
            let run = (unplug || !self.should_plug) && self.generic_unplug_counted(now);
            return Submitted::Queued { run };
        }
        let b = BioInfo {
            offset: req.offset,
            len: req.len,
            dir,
            sync: is_sync(req),
            ioc: req.ioc,
        };
        if !self.queue_empty() && self.try_merge(bio, &b) {
            let run = (req.unplug || !self.should_plug) && self.generic_unplug_counted(now);
            return Submitted::Queued { run };
        }
        if self.should_plug && self.queue_empty() {
            self.plug(now);
        }
        let rq = self.new_rq(req, bio, now, FlushStep::None);
        let id = self.alloc(rq);
        self.hash.insert((rq.end(), rq.seq), id);
        if self.last_merge == NIL {
            self.last_merge = id;
        }
        let mut cx = ElvCtx::default();
        self.elv
            .add(&mut self.rqs, id, now, &mut cx, &mut self.stats);
        let mut run = self.apply(cx);
        // elv_insert: unplug once unplug_thresh requests wait.
        if self.plugged && (self.elv.queued() + self.front.len()) as u64 >= self.q.unplug_thresh {
            self.remove_plug();
            self.stats.unplug_thresh += 1;
            run = true;
        }
        if req.unplug || !self.should_plug {
            run |= self.generic_unplug_counted(now);
        }
        Submitted::Queued { run }
    }

    fn generic_unplug_counted(&mut self, _now: Nanos) -> bool {
        let was = self.plugged;
        let run = self.generic_unplug();
        if was {
            self.stats.unplug_req += 1;
        }
        run
    }

    /// A task waits for its I/O (`blk_run_backing_dev` from `sync_buffer`/`sync_page`), or
    /// a caller unplugs explicitly: run the queue if it was plugged.
    pub fn unplug(&mut self) -> bool {
        let was = self.plugged;
        let run = self.generic_unplug();
        if was {
            self.stats.unplug_wait += 1;
        }
        run && (was || !self.queue_empty())
    }

    /// The unplug timer fired (`blk_unplug_timeout` → kblockd → `generic_unplug_device`).
    pub fn unplug_timeout(&mut self, now: Nanos) -> bool {
        match self.plug_deadline {
            Some(t) if t <= now => {
                self.plug_deadline = None;
                if self.plugged {
                    self.plugged = false;
                    self.stats.unplug_timer += 1;
                    return true;
                }
                false
            }
            _ => false,
        }
    }

    /// The elevator's timer fired; whether to run the queue.
    pub fn elv_timeout(&mut self, now: Nanos) -> bool {
        match self.elv_deadline {
            Some(t) if t <= now => {
                self.elv_deadline = None;
                let mut cx = ElvCtx::default();
                self.elv.timer(now, &mut cx, &mut self.stats);
                self.apply(cx)
            }
            _ => false,
        }
    }

    fn push_step(&mut self, s: FlushStep, fb: FlushBio, req: &Request, now: Nanos) {
        let mut rq = self.new_rq(req, fb.bio, now, s);
        rq.dir = Dir::Write;
        rq.sync = true;
        match s {
            FlushStep::Preflush | FlushStep::Postflush => {
                rq.flush = true;
                rq.offset = 0;
                rq.len = 0;
                // head stays the original bio (its timestamps); no data rides on a flush.
                rq.bios = 0;
            }
            FlushStep::Data | FlushStep::Direct => {
                rq.fua = self.flush.data_fua(&fb);
                rq.len = fb.len;
            }
            FlushStep::None => {}
        }
        let id = self.alloc(rq);
        self.front.push_back(id);
    }

    fn merge_ok(&self, id: u32, b: &BioInfo) -> bool {
        let rq = self.rq(id);
        rq.step == FlushStep::None
            && rq.dir == b.dir
            && rq.len + b.len <= self.q.max_bytes
            && self.elv.allow_merge(&self.rqs, id, b)
    }

    /// `elv_merge` + the merge cases of `__make_request`.
    fn try_merge(&mut self, bio: u32, b: &BioInfo) -> bool {
        let bend = b.offset + b.len;
        // q->last_merge (elv_try_merge: back or front).
        let lm = self.last_merge;
        if lm != NIL && self.rqs.get(lm as usize).is_some_and(|r| r.is_some()) {
            let (off, end) = (self.rq(lm).offset, self.rq(lm).end());
            if (end == b.offset || off == bend) && self.elv_rq_merge_ok_basic(lm, b) {
                if !self.merge_ok(lm, b) {
                    return false; // ll_*_merge_fn refused: a new request
                }
                if end == b.offset {
                    self.back_merge(lm, bio, b);
                } else {
                    self.front_merge(lm, bio, b);
                }
                return true;
            }
        }
        // The hash: the newest request ending where the bio starts.
        if let Some((_, &id)) = self
            .hash
            .range((b.offset, 0)..=(b.offset, u64::MAX))
            .next_back()
        {
            if self.elv_rq_merge_ok_basic(id, b) {
                if !self.merge_ok(id, b) {
                    return false;
                }
                self.back_merge(id, bio, b);
                return true;
            }
        }
        if let Some(id) = self.elv.front_merge(&self.rqs, b) {
            if self.elv_rq_merge_ok_basic(id, b) && self.merge_ok(id, b) {
                self.front_merge(id, bio, b);
                return true;
            }
        }
        false
    }

    /// `elv_rq_merge_ok`: direction and the elevator's consent (size is ll_*_merge_fn's).
    fn elv_rq_merge_ok_basic(&self, id: u32, b: &BioInfo) -> bool {
        let rq = self.rq(id);
        rq.step == FlushStep::None && rq.dir == b.dir && self.elv.allow_merge(&self.rqs, id, b)
    }

    fn count_merge(&mut self, b: &BioInfo) {
        self.stats.merges[b.dir as usize] += 1;
        self.stats.merge_bytes[b.dir as usize] += b.len;
    }

    fn back_merge(&mut self, id: u32, bio: u32, b: &BioInfo) {
        self.count_merge(b);
        let (old_end, seq, tail) = {
            let r = self.rq(id);
            (r.end(), r.seq, r.tail)
        };
        self.bio_next[tail as usize] = bio;
        let r = self.rq_mut(id);
        r.tail = bio;
        r.len += b.len;
        r.bios += 1;
        let new_end = r.end();
        self.hash.remove(&(old_end, seq));
        self.hash.insert((new_end, seq), id);
        // attempt_back_merge.
        if let Some(next) = self.elv.latter(&self.rqs, id) {
            if self.attempt_merge(id, next) {
                return;
            }
        }
        self.elv.merged(&self.rqs, id, self.rq(id).offset);
        self.last_merge = id;
    }

    fn front_merge(&mut self, id: u32, bio: u32, b: &BioInfo) {
        self.count_merge(b);
        let (old_off, head) = (self.rq(id).offset, self.rq(id).head);
        self.bio_next[bio as usize] = head;
        let r = self.rq_mut(id);
        r.head = bio;
        r.offset = b.offset;
        r.len += b.len;
        r.bios += 1;
        // The kernel's elevators hold the request by its rb node, so attempt_front_merge
        // finds and removes it wherever it sits; here the sort trees are keyed by offset,
        // so the request is re-keyed (elv_merged_request's reposition) first.
        self.elv.merged(&self.rqs, id, old_off);
        // attempt_front_merge.
        if let Some(prev) = self.elv.former(&self.rqs, id) {
            if self.attempt_merge(prev, id) {
                return;
            }
        }
        self.last_merge = id;
    }

    /// `attempt_merge`: merge queued request `next` into `rq` if contiguous.
    fn attempt_merge(&mut self, rq: u32, next: u32) -> bool {
        let (a, n) = (*self.rq(rq), *self.rq(next));
        if a.step != FlushStep::None
            || n.step != FlushStep::None
            || a.end() != n.offset
            || a.dir != n.dir
            || a.len + n.len > self.q.max_bytes
        {
            return false;
        }
        self.stats.rq_merges += 1;
        self.bio_next[a.tail as usize] = n.head;
        {
            let r = self.rq_mut(rq);
            r.tail = n.tail;
            r.len += n.len;
            r.bios += n.bios;
            r.start = r.start.min(n.start);
        }
        self.hash.remove(&(a.end(), a.seq));
        self.hash.remove(&(n.end(), n.seq));
        self.hash.insert((a.end() + n.len, a.seq), rq);
        self.elv
            .merge_requests(&mut self.rqs, rq, next, &mut self.stats);
        self.rqs[next as usize] = None;
        self.free.push(next);
        self.last_merge = rq;
        true
    }

    /// `__blk_run_queue`: removes the plug; the caller then takes requests with `next`
    /// while the driver has room.
    pub fn run_begin(&mut self) {
        self.remove_plug();
    }

    /// The next request for the driver: flush steps first (the dispatch list's head), then
    /// the elevator's choice. None if nothing can go now.
    pub fn next(&mut self, now: Nanos) -> Option<Dispatched> {
        if self.plugged {
            return None;
        }
        let id = match self.front.pop_front() {
            Some(id) => {
                let s = self.rq(id).step;
                let i = match s {
                    FlushStep::Preflush => 0,
                    FlushStep::Data => 1,
                    FlushStep::Postflush => 2,
                    _ => 3,
                };
                self.stats.flush_steps[i] += 1;
                id
            }
            None => {
                let mut cx = ElvCtx::default();
                let got = self
                    .elv
                    .dispatch(&mut self.rqs, now, &mut cx, &mut self.stats);
                // A run request from inside dispatch is this very run.
                let _ = self.apply(cx);
                let id = got?;
                let r = *self.rq(id);
                self.hash.remove(&(r.end(), r.seq));
                if self.last_merge == id {
                    self.last_merge = NIL;
                }
                self.stats.dispatches[r.dir as usize] += 1;
                self.stats.dispatch_bytes[r.dir as usize] += r.len;
                if r.sync {
                    self.stats.sync_dispatches += 1;
                } else {
                    self.stats.async_dispatches += 1;
                }
                id
            }
        };
        let r = *self.rq(id);
        let op = if r.flush {
            Op::Flush
        } else if r.dir == Dir::Read {
            Op::Read
        } else {
            Op::Write
        };
        let req = Request {
            op,
            offset: r.offset,
            len: r.len,
            fua: r.fua,
            preflush: false,
            class: if r.sync {
                IoClass::Sync
            } else {
                IoClass::Async
            },
            token: 0,
            ioc: r.ioc,
            noidle: r.noidle,
            unplug: false,
            meta: r.meta,
        };
        Some(Dispatched {
            rq: id,
            req,
            head: r.head,
        })
    }

    /// Request `rq` completed at the device. Appends the bios now finished to `done`;
    /// returns whether to run the queue (always, as `scsi_next_command` does; the flag says
    /// whether something new was queued at the head).
    pub fn completed(&mut self, id: u32, now: Nanos, done: &mut Vec<u32>) -> bool {
        let r = self.rqs[id as usize].take().expect("live request");
        self.free.push(id);
        match r.step {
            FlushStep::None => {
                let mut cx = ElvCtx::default();
                self.rqs_tmp_completed(&r, id, now, &mut cx);
                self.apply(cx);
                let mut b = r.head;
                while b != NIL {
                    done.push(b);
                    b = self.next_bio(b);
                }
            }
            FlushStep::Direct => done.push(r.head),
            s => {
                if let Some((n, fb)) = self.flush.complete(s, done) {
                    let req = Request {
                        fua: fb.fua,
                        ..Request::write(fb.offset, fb.len)
                    };
                    self.push_step(n, fb, &req, now);
                }
            }
        }
        true
    }

    fn rqs_tmp_completed(&mut self, r: &Rq, id: u32, now: Nanos, cx: &mut ElvCtx) {
        // The elevator reads the request's fields; it is out of the table already.
        self.rqs[id as usize] = Some(*r);
        self.elv.completed(&self.rqs, id, now, cx, &mut self.stats);
        self.rqs[id as usize] = None;
    }

    /// Requests queued in the elevator or at the dispatch list's head.
    pub fn queued(&self) -> usize {
        self.front.len() + self.elv.queued()
    }

    /// Flush sequences waiting behind the running one.
    pub fn flush_pending(&self) -> usize {
        self.flush.pending()
    }
}

/// `rw_is_sync`: reads, and writes with REQ_SYNC.
pub fn is_sync(req: &Request) -> bool {
    req.op == Op::Read || req.class == IoClass::Sync
}
