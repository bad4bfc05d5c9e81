//! The block layer above the driver, as Linux 2.6.37's legacy single-queue `request_queue`
//! (`block/`): plugging and merging (`blk_core.rs`), the REQ_FLUSH/REQ_FUA sequence
//! (`blk_flush.rs`) and the elevators, one file each (`noop.rs`, `deadline.rs`,
//! `cfq_iosched.rs`, and the modern `mq_deadline.rs`), behind the small `Elevator` trait.
//!
//! The block layer sits above the device model (`crate::device`, the driver and hardware) and
//! imports it, never the reverse. `add_disk` (`genhd.rs`) builds a device; when its
//! `scheduler` is not `none` it puts a `RequestQueue` above the driver as the device's
//! `QueueAbove`: bios wait (and merge) in the elevator, and the elevator dispatches a request
//! to the driver whenever the driver has a free tag (`scsi_request_fn` taking requests while
//! the device queue has room); each completion comes back up and runs the queue again. The
//! driver's own order (FIFO, or a drive's NCQ order through
//! `device::IoScheduler::dispatch_by`) is unchanged below it. `none` keeps the device exactly
//! as it was: no request queue stage at all.

pub mod blk_core;
pub mod blk_flush;
pub mod cfq_iosched;
pub mod config;
pub mod deadline;
pub mod genhd;
pub mod iostat;
pub mod mq_deadline;
pub mod noop;

pub use blk_core::{Dispatched, RequestQueue};
pub use config::{DiskConfig, Tunables};
pub use genhd::{add_disk, Disk};

use sim::Nanos;

/// Scheduler names accepted in device files (`scheduler = "…"` or `[scheduler] name = "…"`).
pub const NAMES: [&str; 5] = ["none", "noop", "deadline", "cfq", "mq-deadline"];

/// "No request": the null value of request and bio links (the device's own null link, as
/// the device walks a request's bios through `RequestQueue::next_bio`).
pub const NIL: u32 = crate::device::NO_LINK;

/// Data direction of a request (`rq_data_dir`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dir {
    /// READ.
    Read = 0,
    /// WRITE.
    Write = 1,
}

/// Which step of a flush sequence a request is (`blk_flush_cur_seq`, v2.6.37).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushStep {
    /// An ordinary request that went through the elevator.
    None,
    /// PREFLUSH: an empty cache flush before the data.
    Preflush,
    /// DATA: the original write (with FUA when the device supports it).
    Data,
    /// POSTFLUSH: a cache flush after the data (FUA requested, not supported).
    Postflush,
    /// A FUA write the device supports, issued directly (`blk_do_flush`'s special case).
    Direct,
}

/// One block-layer request: one or more contiguous bios of one direction.
#[derive(Clone, Copy, Debug)]
pub struct Rq {
    /// First byte.
    pub offset: u64,
    /// Bytes (0 for a flush).
    pub len: u64,
    /// Direction.
    pub dir: Dir,
    /// A cache flush (flush sequence only).
    pub flush: bool,
    /// FUA on the device request.
    pub fua: bool,
    /// `rq_is_sync`: a read, or a write with REQ_SYNC.
    pub sync: bool,
    /// REQ_META of the first bio.
    pub meta: bool,
    /// REQ_NOIDLE of the first bio.
    pub noidle: bool,
    /// The first bio's I/O context.
    pub ioc: u32,
    /// First bio (device slot id), or NIL.
    pub head: u32,
    /// Last bio, or NIL.
    pub tail: u32,
    /// Bios in the request.
    pub bios: u32,
    /// When the request was allocated (`rq->start_time`).
    pub start: Nanos,
    /// Allocation sequence (newest wins the merge hash).
    pub seq: u64,
    /// Flush-sequence role.
    pub step: FlushStep,
    /// Elevator-private: CFQ's queue.
    pub cfqq: u32,
    /// Elevator-private: CFQ's io context slot.
    pub cic: u32,
    /// Elevator-private: FIFO deadline (`rq_fifo_time`).
    pub fifo_time: Nanos,
    /// Elevator-private: FIFO position (a merge can move a request to its neighbour's).
    pub fifo_seq: u64,
}

impl Rq {
    /// End offset.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// What a bio brings to a merge decision.
#[derive(Clone, Copy, Debug)]
pub struct BioInfo {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Direction.
    pub dir: Dir,
    /// `cfq_bio_sync`.
    pub sync: bool,
    /// Submitter's I/O context.
    pub ioc: u32,
}

/// The requests of a queue, indexed by request id.
pub type Rqs = [Option<Rq>];

/// Side effects an elevator asks of the request queue.
#[derive(Debug, Default)]
pub struct ElvCtx {
    /// Run the queue (`__blk_run_queue` / `cfq_schedule_dispatch`).
    pub run: bool,
    /// Arm the elevator's timer at this time (`mod_timer`).
    pub arm: Option<Nanos>,
    /// Delete the elevator's timer (`del_timer`).
    pub cancel: bool,
}

/// An I/O scheduler of the request queue (`struct elevator_ops`, v2.6.37).
pub trait Elevator {
    /// `elevator_allow_merge_fn`: may this bio merge into this queued request.
    fn allow_merge(&self, rqs: &Rqs, rq: u32, bio: &BioInfo) -> bool {
        let _ = (rqs, rq, bio);
        true
    }
    /// `elevator_merge_fn`: a queued request this bio can be front-merged into.
    fn front_merge(&self, rqs: &Rqs, bio: &BioInfo) -> Option<u32> {
        let _ = (rqs, bio);
        None
    }
    /// `elevator_latter_req_fn`: the request after `rq` (for `attempt_back_merge`).
    fn latter(&self, rqs: &Rqs, rq: u32) -> Option<u32>;
    /// `elevator_former_req_fn`: the request before `rq` (for `attempt_front_merge`).
    fn former(&self, rqs: &Rqs, rq: u32) -> Option<u32>;
    /// `elevator_add_req_fn` (+ CFQ's `cfq_rq_enqueued`): queue a new request.
    fn add(&mut self, rqs: &mut Rqs, rq: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats);
    /// `elevator_merged_fn`: `rq` grew by a bio; `old_offset` is its offset before (front
    /// merges move it).
    fn merged(&mut self, rqs: &Rqs, rq: u32, old_offset: u64);
    /// `elevator_merge_req_fn`: `next` was merged into `rq` and leaves the elevator.
    fn merge_requests(&mut self, rqs: &mut Rqs, rq: u32, next: u32, st: &mut BlockStats);
    /// `elevator_dispatch_fn` (one request): the next request for the driver, or None.
    fn dispatch(
        &mut self,
        rqs: &mut Rqs,
        now: Nanos,
        cx: &mut ElvCtx,
        st: &mut BlockStats,
    ) -> Option<u32>;
    /// `elevator_completed_req_fn`: a dispatched request completed.
    fn completed(&mut self, rqs: &Rqs, rq: u32, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats);
    /// The elevator's timer fired (CFQ's `cfq_idle_slice_timer`).
    fn timer(&mut self, now: Nanos, cx: &mut ElvCtx, st: &mut BlockStats) {
        let _ = (now, cx, st);
    }
    /// Requests queued in the elevator (`elv_queue_empty` is `queued() == 0`).
    fn queued(&self) -> usize;
    /// Brings time-integrated statistics up to `now` (before a snapshot).
    fn account(&mut self, now: Nanos, st: &mut BlockStats) {
        let _ = (now, st);
    }
}

/// Counters of the request queue and its elevator (what J1's analysis reads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockStats {
    /// Elevator name.
    pub scheduler: &'static str,
    /// Bios submitted, per direction (index `Dir as usize`).
    pub bios: [u64; 2],
    /// Requests dispatched to the driver from the elevator, per direction.
    pub dispatches: [u64; 2],
    /// Bytes of those requests, per direction.
    pub dispatch_bytes: [u64; 2],
    /// Bios merged into a queued request (back or front), per direction (blktrace `M`/`F`).
    pub merges: [u64; 2],
    /// Bytes of merged bios, per direction.
    pub merge_bytes: [u64; 2],
    /// Queued requests merged into a neighbour (`attempt_back/front_merge`).
    pub rq_merges: u64,
    /// Sync requests dispatched (reads and REQ_SYNC writes).
    pub sync_dispatches: u64,
    /// Async requests dispatched.
    pub async_dispatches: u64,
    /// Flush-sequence requests: PREFLUSH, DATA, POSTFLUSH, direct FUA writes.
    pub flush_steps: [u64; 4],
    /// Times the queue was plugged.
    pub plugs: u64,
    /// Unplugs: at `unplug_thresh` queued requests.
    pub unplug_thresh: u64,
    /// Unplugs: the `unplug_delay` timer.
    pub unplug_timer: u64,
    /// Unplugs: a REQ_UNPLUG bio.
    pub unplug_req: u64,
    /// Unplugs: a task waiting for its I/O (`blk_run_backing_dev`) or an explicit unplug.
    pub unplug_wait: u64,
    /// CFQ: active queue preempted by an arriving request (`cfq_preempt_queue`).
    pub preemptions: u64,
    /// CFQ: preemptions of an async queue by a sync request.
    pub sync_preempts_async: u64,
    /// CFQ: queues put on a service tree, per tree (ASYNC, SYNC_NOIDLE, SYNC).
    pub tree_adds: [u64; 3],
    /// CFQ: slices ended (`__cfq_slice_expired`).
    pub slices_expired: u64,
    /// CFQ: idle timer armed (`cfq_arm_slice_timer`).
    pub idle_armed: u64,
    /// CFQ: idle timer fired.
    pub idle_fired: u64,
    /// CFQ: idle timer cancelled (a request arrived, or the slice ended).
    pub idle_cancelled: u64,
    /// CFQ: ns from arming the idle timer to its firing, its cancellation, or the arrival of
    /// the awaited request (the kernel's blkio `idle_time`).
    pub idle_ns: u128,
    /// CFQ: ns during which async requests were queued while sync requests were in flight
    /// at the driver (`cfq_may_dispatch` holds every async queue then).
    pub async_blocked_ns: u128,
    /// CFQ: dispatch attempts refused by `cfq_may_dispatch`.
    pub may_dispatch_refused: u64,
    /// deadline: batches started because reads had starved writes `writes_starved` times.
    pub starved_write_batches: u64,
    /// deadline: batches started at an expired FIFO head.
    pub fifo_expired_batches: u64,
}

impl BlockStats {
    /// Write dispatches and write bio merges (blktrace's `D` and `M` for W).
    pub fn write_dispatch_merge(&self) -> (u64, u64) {
        (
            self.dispatches[Dir::Write as usize],
            self.merges[Dir::Write as usize],
        )
    }
}

/// Builds the elevator with this name (None for `none` and unknown names).
pub fn elevator(
    name: &str,
    t: &Tunables,
    rotational: bool,
    tags: u64,
    now: Nanos,
) -> Option<Box<dyn Elevator>> {
    match name {
        "noop" => Some(Box::new(noop::Noop::default())),
        "deadline" => Some(Box::new(deadline::Deadline::new(&t.deadline))),
        "mq-deadline" => Some(Box::new(mq_deadline::MqDeadline::new(&t.mq_deadline))),
        "cfq" => Some(Box::new(cfq_iosched::Cfq::new(
            &t.cfq, rotational, tags, now,
        ))),
        _ => None,
    }
}
