//! The block-device model: host tags, an I/O scheduler, parallel service units, per-kind
//! latency distributions, a volatile write cache with FLUSH/FUA, and HDD positioning.
//!
//! Life of a request (blk-mq terms):
//! 1. `submit`: the request takes one of `hw_queues × queue_depth` tags, or waits in the
//!    host queue (counted: requests that waited and for how long).
//! 2. With a tag it is issued to the device: it enters the I/O scheduler; a FLUSH (or
//!    PREFLUSH) records here which completed writes it covers.
//! 3. A free service unit (`parallelism` of them) takes it: service time = the kind's latency
//!    draw + bytes × transfer time (+ seek and rotation on an HDD; + destaging the covered
//!    dirty data for a flush; + an optional rare tail spike).
//! 4. On completion the cache is updated, the tag goes to the next host-queued request, and
//!    the submitting task resumes.
//!
//! The submitter's wait is attributed, in turn, to `<dev>:host_queue`, `<dev>:queue` and
//! `<dev>:service` (`<dev>:flush` for flushes), so reports can split I/O latency.
//! All draws come from the stream `device.<name>`.
//!
//! With a scheduler other than `none`, Linux 2.6.37's request queue (`crate::block`) sits in
//! front of step 1 instead of the host queue: a submitted request is a bio; it is merged into
//! a queued request or becomes one, waits in the elevator (plugged or not) attributed to
//! `<dev>:elevator`, and the elevator dispatches to the driver while a tag is free. Per-kind
//! counters still count bios; `DeviceStats::block` counts requests, merges and the elevator's
//! decisions.

pub mod cache;
pub mod config;
pub mod dist;
pub mod hdd;
pub mod iosched;
pub mod iostat;
pub mod presets;

pub use cache::{Destage, DurableWrite, WriteCache};
pub use config::{ConfigError, DeviceConfig};
pub use dist::LatencyDist;
pub use iosched::{IoClass, IoScheduler};

use hdrhistogram::Histogram;
use iosched::Queued;
use rand::Rng;
use sim::{ClassId, Handle, Nanos, RngStreams, Stream, TaskId, WaitQueue};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read `len` bytes.
    Read,
    /// Write `len` bytes.
    Write,
    /// Flush the volatile cache.
    Flush,
}

/// One block-layer request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Read, write or flush.
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Bytes (0 for a flush).
    pub len: u64,
    /// Forced unit access: durable on completion.
    pub fua: bool,
    /// Flush the cache before this write (REQ_PREFLUSH).
    pub preflush: bool,
    /// Sync or async, for schedulers.
    pub class: IoClass,
    /// The model's token for what is written (for the durable image).
    pub token: u64,
    /// The submitting task's I/O context (CFQ keeps one sync queue per context; 0 = none,
    /// e.g. kernel threads that share the async queues).
    pub ioc: u32,
    /// REQ_NOIDLE: the submitter will not send more soon, do not idle for it (WRITE_SYNC*).
    pub noidle: bool,
    /// REQ_UNPLUG: run the queue right after this request (WRITE_SYNC, 2.6.37).
    pub unplug: bool,
    /// REQ_META: filesystem metadata (CFQ prefers it).
    pub meta: bool,
}

impl Request {
    /// A read.
    pub fn read(offset: u64, len: u64) -> Self {
        Self::new(Op::Read, offset, len)
    }
    /// A cached write.
    pub fn write(offset: u64, len: u64) -> Self {
        Self::new(Op::Write, offset, len)
    }
    /// A cache flush.
    pub fn flush() -> Self {
        Self::new(Op::Flush, 0, 0)
    }
    /// A FUA write.
    pub fn fua_write(offset: u64, len: u64) -> Self {
        Request {
            fua: true,
            ..Self::write(offset, len)
        }
    }
    /// A PREFLUSH write (add `fua` for a superblock-style PREFLUSH|FUA write).
    pub fn preflush_write(offset: u64, len: u64) -> Self {
        Request {
            preflush: true,
            ..Self::write(offset, len)
        }
    }
    /// Sets the content token.
    pub fn with_token(mut self, token: u64) -> Self {
        self.token = token;
        self
    }
    /// Sets the class.
    pub fn with_class(mut self, class: IoClass) -> Self {
        self.class = class;
        self
    }
    /// Sets the submitter's I/O context.
    pub fn with_ioc(mut self, ioc: u32) -> Self {
        self.ioc = ioc;
        self
    }
    /// Sets REQ_NOIDLE and REQ_UNPLUG (2.6.37's WRITE_SYNC = WRITE | SYNC | NOIDLE | UNPLUG).
    pub fn with_hints(mut self, noidle: bool, unplug: bool) -> Self {
        self.noidle = noidle;
        self.unplug = unplug;
        self
    }
    /// Sets REQ_META.
    pub fn with_meta(mut self, meta: bool) -> Self {
        self.meta = meta;
        self
    }
    fn new(op: Op, offset: u64, len: u64) -> Self {
        Request {
            op,
            offset,
            len,
            fua: false,
            preflush: false,
            class: IoClass::Sync,
            token: 0,
            ioc: 0,
            noidle: false,
            unplug: false,
            meta: false,
        }
    }

    /// The statistics bucket of this request.
    pub fn kind(&self) -> ReqKind {
        match (self.op, self.preflush, self.fua) {
            (Op::Read, _, _) => ReqKind::Read,
            (Op::Flush, _, _) => ReqKind::Flush,
            (Op::Write, true, _) => ReqKind::PreflushWrite,
            (Op::Write, false, true) => ReqKind::FuaWrite,
            (Op::Write, false, false) => ReqKind::Write,
        }
    }
}

/// Statistics buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReqKind {
    /// Reads.
    Read = 0,
    /// Cached writes.
    Write = 1,
    /// FUA writes.
    FuaWrite = 2,
    /// PREFLUSH writes (with or without FUA).
    PreflushWrite = 3,
    /// Flushes.
    Flush = 4,
}

impl ReqKind {
    /// All kinds, in index order.
    pub const ALL: [ReqKind; 5] = [
        ReqKind::Read,
        ReqKind::Write,
        ReqKind::FuaWrite,
        ReqKind::PreflushWrite,
        ReqKind::Flush,
    ];
    /// Short name.
    pub fn name(self) -> &'static str {
        ["read", "write", "fua_write", "preflush_write", "flush"][self as usize]
    }
}

/// Timestamps of one finished request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoDone {
    /// Submitted by the host.
    pub submitted: Nanos,
    /// Got a tag (issued to the device).
    pub issued: Nanos,
    /// Entered service.
    pub started: Nanos,
    /// Completed.
    pub completed: Nanos,
}

impl IoDone {
    /// Waiting for a tag in the host.
    pub fn host_wait(&self) -> Nanos {
        self.issued - self.submitted
    }
    /// Waiting inside the device for a service unit.
    pub fn queue_wait(&self) -> Nanos {
        self.started - self.issued
    }
    /// Service time.
    pub fn service(&self) -> Nanos {
        self.completed - self.started
    }
    /// Issue to completion (fio's clat).
    pub fn clat(&self) -> Nanos {
        self.completed - self.issued
    }
    /// Submission to completion (fio's lat).
    pub fn latency(&self) -> Nanos {
        self.completed - self.submitted
    }
}

/// Per-kind counters.
#[derive(Clone, Debug)]
pub struct KindStats {
    /// Requests completed.
    pub count: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Requests that waited for a tag (with a block layer: in the request queue).
    pub host_waited: u64,
    /// Total ns waited for tags (with a block layer: in the request queue).
    pub host_wait_ns: u128,
    /// Total ns waited for a service unit.
    pub queue_wait_ns: u128,
    /// Total ns in service.
    pub service_ns: u128,
    /// Submission-to-completion latency, ns (None until recorded, or when disabled).
    pub latency: Option<Histogram<u64>>,
}

impl KindStats {
    fn new() -> Self {
        KindStats {
            count: 0,
            bytes: 0,
            host_waited: 0,
            host_wait_ns: 0,
            queue_wait_ns: 0,
            service_ns: 0,
            latency: None,
        }
    }
}

/// A latency histogram from 1 ns to 1 hour at 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Device-wide counters.
#[derive(Clone, Debug)]
pub struct DeviceStats {
    /// Per kind, indexed by `ReqKind as usize`.
    pub kinds: Vec<KindStats>,
    /// Integral over time of requests in the system (host queue + device), ns·requests.
    pub in_system_area: u128,
    /// Largest host-queue length seen.
    pub max_host_queue: u64,
    /// Dirty bytes destaged by flushes.
    pub flushed_bytes: u64,
    /// Bytes destaged in the background because the cache was full.
    pub background_bytes: u64,
    /// Time of the last update.
    pub last_event: Nanos,
    /// The request queue's and elevator's counters (None with `scheduler = "none"`).
    pub block: Option<crate::block::BlockStats>,
}

impl DeviceStats {
    /// Counters of one kind.
    pub fn kind(&self, k: ReqKind) -> &KindStats {
        &self.kinds[k as usize]
    }
    /// Requests completed, all kinds.
    pub fn completed(&self) -> u64 {
        self.kinds.iter().map(|k| k.count).sum()
    }
}

struct InFlight {
    req: Request,
    submitter: Option<TaskId>,
    done: IoDone,
    cover: u64,
    finished: bool,
    /// Block layer: the request-queue request this device request carries (NIL for bios
    /// and on the `none` path).
    rq: u32,
    /// Block layer: the device request's first bio.
    head: u32,
    /// Block layer: 0 in the elevator, 1 at the driver, 2 in service (for a late waiter's
    /// wait class).
    stage: u8,
    /// Block layer: a ticket holder will collect it (`submit_nowait`).
    keep: bool,
}

/// A request submitted with `Device::submit_nowait`; `Device::wait` collects it (exactly
/// once).
#[derive(Debug)]
#[must_use = "a ticket must be waited for exactly once"]
pub struct Ticket(u64);

struct State {
    cfg: DeviceConfig,
    rng: Stream,
    sched: Box<dyn IoScheduler>,
    cache: WriteCache,
    slots: Vec<Option<InFlight>>,
    free_slots: Vec<u64>,
    tags_free: u64,
    host_queue: VecDeque<u64>,
    in_system: u64,
    head_cyl: u64,
    mech: Option<hdd::Hdd>,
    histograms: bool,
    link_free: Nanos,
    now: Nanos,
    stats: DeviceStats,
    /// The request queue and elevator (None with `scheduler = "none"`).
    blk: Option<crate::block::RequestQueue>,
    /// Scratch: bios finished by one completion.
    blk_done: Vec<u32>,
    /// Scratch: their waiting tasks.
    blk_wake: Vec<TaskId>,
}

impl State {
    fn account_area(&mut self, now: Nanos) {
        let dt = now - self.stats.last_event;
        self.stats.in_system_area += u128::from(self.in_system) * u128::from(dt);
        self.stats.last_event = now;
    }

    /// Gives a tag to request `id` and queues it for service; returns its scheduler entry.
    fn issue(&mut self, id: u64, now: Nanos) {
        assert!(
            self.tags_free > 0,
            "device: request issued without a free tag"
        );
        self.tags_free -= 1;
        let f = self.slots[id as usize].as_mut().expect("live request");
        f.done.issued = now;
        f.stage = 1;
        if f.req.op == Op::Flush || f.req.preflush {
            f.cover = self.cache.issue_flush();
        }
        let q = Queued {
            id,
            offset: f.req.offset,
            class: f.req.class,
        };
        self.sched.add(q);
    }

    fn cylinder(&self, offset: u64) -> u64 {
        match &self.cfg.hdd {
            Some(g) => {
                let frac = (offset % g.capacity_bytes.0) as f64 / g.capacity_bytes.0 as f64;
                (frac * g.cylinders.0 as f64) as u64
            }
            None => 0,
        }
    }

    /// Seek + rotational latency to reach `offset` (HDD only), moving the head.
    fn position(&mut self, offset: u64) -> Nanos {
        let Some(g) = self.cfg.hdd else {
            return 0;
        };
        let target = self.cylinder(offset);
        let dist = target.abs_diff(self.head_cyl);
        self.head_cyl = target;
        // Seek curve after Ruemmler & Wilkes: min + (max - min) * sqrt(d / (C - 1)).
        let seek_ms = if dist == 0 {
            0.0
        } else {
            let span = (g.cylinders.0.max(2) - 1) as f64;
            g.seek_min_ms.0 + (g.seek_max_ms.0 - g.seek_min_ms.0) * (dist as f64 / span).sqrt()
        };
        let rev_ns = 60e9 / g.rpm.0;
        let rot_ns = self.rng.random::<f64>() * rev_ns;
        (seek_ms * 1e6 + rot_ns) as Nanos
    }

    /// The next request: the drive's NCQ order when its mechanics reorder, else the
    /// scheduler's.
    fn dispatch(&mut self, head: u64, now: Nanos) -> Option<Queued> {
        let State {
            mech, slots, sched, ..
        } = self;
        if let Some(m) = mech.as_ref() {
            if m.mechanics().ncq != hdd::NcqOrder::Fifo {
                return sched.dispatch_by(now, &|q: &Queued| {
                    let f = slots[q.id as usize].as_ref().expect("live request");
                    if f.req.op == Op::Flush {
                        return 0;
                    }
                    let waited = now - f.done.issued;
                    m.order_cost(now, f.req.offset, f.req.len, f.req.op == Op::Read, waited)
                        .unwrap_or(0)
                });
            }
        }
        sched.dispatch(head, now)
    }

    /// Service time through the HDD mechanics (reads and write-through writes), or None.
    fn mech_service(&mut self, req: &Request, transfer: Nanos) -> Option<Nanos> {
        let through = req.op == Op::Read
            || (req.op == Op::Write && !req.preflush && (req.fua || !self.cfg.write_cache));
        if !through {
            return None;
        }
        let now = self.now;
        let m = self.mech.as_mut()?;
        let media = m.access(now, req.offset, req.len, req.op == Op::Read);
        self.head_cyl = m.head_cyl();
        // The drive moves the data over the link once it is in its buffer; the media keeps
        // streaming meanwhile (the next request's data time is absolute in the stream).
        Some(self.link(now + media, transfer) - now)
    }

    /// Reserves the host link for `transfer` ns from `ready` on; returns when it ends.
    fn link(&mut self, ready: Nanos, transfer: Nanos) -> Nanos {
        let start = ready.max(self.link_free);
        self.link_free = start + transfer;
        self.link_free
    }

    /// Service time of request `id` starting now (claims flush destage work).
    fn service_time(&mut self, id: u64) -> Nanos {
        let f = self.slots[id as usize].as_ref().expect("live request");
        let (req, cover) = (f.req, f.cover);
        let transfer = (req.len as f64 * self.cfg.transfer_ns_per_byte) as Nanos;
        if self.mech.is_some() {
            if let Some(t) = self.mech_service(&req, transfer) {
                return t;
            }
        }
        let now = self.now;
        let mut t: Nanos = 0;
        if req.op == Op::Flush || req.preflush {
            let d = self.cache.claim(cover);
            self.stats.flushed_bytes += d.bytes;
            t += if self.cfg.write_cache {
                self.cfg.flush.base.sample(&mut self.rng)
                    + (d.bytes as f64 * self.cfg.flush.ns_per_dirty_byte.0) as Nanos
                    + (d.writes as f64 * self.cfg.flush.ns_per_dirty_write.0) as Nanos
            } else {
                0
            };
        }
        // The host link is one shared resource with a next-free time (FEMU's timing model);
        // a request reserves it when it enters service, so transfers queue in service order
        // and the link caps throughput at 1 / transfer_ns_per_byte.
        if transfer > 0 {
            t += self.link(now + t, transfer) - (now + t);
        }
        t += match req.op {
            Op::Flush => 0,
            Op::Read => self.cfg.read.sample(&mut self.rng) + self.position(req.offset),
            Op::Write if req.fua || !self.cfg.write_cache => {
                let dist = if req.fua {
                    self.cfg.fua_write
                } else {
                    self.cfg.write
                };
                dist.sample(&mut self.rng) + self.position(req.offset)
            }
            Op::Write => self.cfg.write.sample(&mut self.rng),
        };
        if let Some(tail) = &self.cfg.tail {
            if self.rng.random::<f64>() < tail.probability.0 {
                t += tail.extra.sample(&mut self.rng);
            }
        }
        t
    }

    fn alloc(&mut self, f: InFlight) -> u64 {
        match self.free_slots.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(f);
                id
            }
            None => {
                self.slots.push(Some(f));
                self.slots.len() as u64 - 1
            }
        }
    }

    fn free(&mut self, id: u64) -> InFlight {
        let f = self.slots[id as usize].take().expect("live request");
        self.free_slots.push(id);
        f
    }
}

struct Classes {
    host: ClassId,
    queue: ClassId,
    service: ClassId,
    flush: ClassId,
    busy: ClassId,
    /// Waiting in the request queue (block layer only).
    elevator: ClassId,
}

struct Inner {
    h: Handle,
    name: String,
    state: RefCell<State>,
    idle: WaitQueue,
    drained: WaitQueue,
    units: std::cell::Cell<u64>,
    units_max: std::cell::Cell<u64>,
    classes: Classes,
    /// The block layer's unplug and elevator timers' wait queues (None on the `none` path).
    timers: Option<[WaitQueue; 2]>,
}

/// A simulated block device shared by the tasks that submit to it.
#[derive(Clone)]
pub struct Device {
    inner: Rc<Inner>,
}

impl Device {
    /// Builds the device and starts its service units (daemon tasks).
    pub fn new(sim: &mut sim::Sim, cfg: DeviceConfig, streams: &mut RngStreams) -> Self {
        Self::with_image(sim, cfg, streams, false)
    }

    /// As `new`; with `track_image` the device keeps the durable image for crash checks.
    pub fn with_image(
        sim: &mut sim::Sim,
        cfg: DeviceConfig,
        streams: &mut RngStreams,
        track_image: bool,
    ) -> Self {
        let h = sim.handle();
        let name = cfg.name.clone();
        let mech = cfg.hdd.and_then(|g| g.mech.map(|m| hdd::Hdd::new(&g, m)));
        let sched = iosched::by_name(&cfg.scheduler).unwrap_or_else(|| {
            Box::new(iosched::NoneFifo::default()) // validated at parse time
        });
        let state = State {
            rng: streams.stream(&format!("device.{name}")),
            sched,
            cache: WriteCache::new(cfg.write_cache, cfg.cache_bytes, track_image),
            slots: Vec::new(),
            free_slots: Vec::new(),
            tags_free: cfg.tags(),
            host_queue: VecDeque::new(),
            in_system: 0,
            head_cyl: 0,
            mech,
            histograms: true,
            link_free: 0,
            now: 0,
            stats: DeviceStats {
                kinds: ReqKind::ALL.iter().map(|_| KindStats::new()).collect(),
                in_system_area: 0,
                max_host_queue: 0,
                flushed_bytes: 0,
                background_bytes: 0,
                last_event: 0,
                block: None,
            },
            blk: crate::block::RequestQueue::new(
                &cfg.scheduler,
                &cfg.sched,
                cfg.sched.queue.rotational.unwrap_or(cfg.hdd.is_some()),
                cfg.tags(),
                cfg.write_cache,
                h.now(),
            ),
            blk_done: Vec::new(),
            blk_wake: Vec::new(),
            cfg,
        };
        let block = state.blk.is_some();
        let classes = Classes {
            host: h.class(&format!("{name}:host_queue")),
            queue: h.class(&format!("{name}:queue")),
            service: h.class(&format!("{name}:service")),
            flush: h.class(&format!("{name}:flush")),
            busy: h.class(&format!("{name}:unit_busy")),
            elevator: if block {
                h.class(&format!("{name}:elevator"))
            } else {
                ClassId::default()
            },
        };
        let timers = block.then(|| {
            [
                WaitQueue::new(&h, &format!("{name}:unplug_timer")),
                WaitQueue::new(&h, &format!("{name}:elevator_timer")),
            ]
        });
        let units = state.cfg.parallelism;
        let dev = Device {
            inner: Rc::new(Inner {
                idle: WaitQueue::new(&h, &format!("{name}:idle_units")),
                drained: WaitQueue::new(&h, &format!("{name}:drained")),
                units: std::cell::Cell::new(0),
                units_max: std::cell::Cell::new(0),
                h,
                name: name.clone(),
                state: RefCell::new(state),
                classes,
                timers,
            }),
        };
        dev.inner.units_max.set(units);
        if block {
            for which in 0..2 {
                let d = dev.clone();
                let label = ["kblockd_unplug", "elevator_timer"][which];
                sim.spawn_daemon(&format!("{name}.{label}"), async move {
                    d.blk_timer(which).await
                });
            }
        }
        dev
    }

    /// Wakes an idle service unit, or starts a new one while fewer than `parallelism` exist
    /// (units are daemon tasks, started on demand so small runs stay cheap).
    fn kick_unit(&self) {
        if self.inner.idle.notify_one() {
            return;
        }
        let n = self.inner.units.get();
        if n < self.inner.units_max.get() {
            self.inner.units.set(n + 1);
            let d = self.clone();
            self.inner
                .h
                .spawn_daemon(&format!("{}.unit{n}", self.inner.name), async move {
                    d.unit().await
                });
        }
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Submits a request and waits for its completion. With a block layer (scheduler other
    /// than `none`) the waiting task unplugs the queue, as `wait_on_buffer` does
    /// (`sync_buffer` → `blk_run_address_space`, 2.6.37).
    pub async fn submit(&self, req: Request) -> IoDone {
        if self.inner.timers.is_some() {
            let t = self.submit_nowait(req);
            return self.wait(t).await;
        }
        let me = self.inner.h.current();
        let (id, issued) = self.enqueue(req, Some(me));
        let class = if issued {
            self.inner.classes.queue
        } else {
            self.inner.classes.host
        };
        self.inner.h.park(class).await;
        let f = self.inner.state.borrow_mut().free(id);
        debug_assert!(f.finished);
        f.done
    }

    /// Submits a request nobody waits for (open-loop load); its statistics still count.
    pub fn submit_detached(&self, req: Request) {
        if self.inner.timers.is_some() {
            self.enqueue_blk(req, false);
            return;
        }
        self.enqueue(req, None);
    }

    /// Submits a request without waiting (`submit_bh`): nothing unplugs the queue but the
    /// block layer's own rules (REQ_UNPLUG, `unplug_thresh`, the unplug timer). Collect it
    /// with `wait` exactly once.
    pub fn submit_nowait(&self, req: Request) -> Ticket {
        if self.inner.timers.is_some() {
            return Ticket(self.enqueue_blk(req, true));
        }
        let (id, _) = self.enqueue(req, None);
        self.inner.state.borrow_mut().slots[id as usize]
            .as_mut()
            .expect("live request")
            .keep = true;
        Ticket(id)
    }

    /// Waits for a `submit_nowait` request (`wait_on_buffer`): unplugs the queue first, as
    /// the kernel's waiter does, then parks until the request completes.
    pub async fn wait(&self, t: Ticket) -> IoDone {
        let id = t.0;
        self.unplug();
        let inner = &self.inner;
        let class = {
            let mut st = inner.state.borrow_mut();
            let f = st.slots[id as usize].as_mut().expect("live ticket");
            if f.finished {
                return st.free(id).done;
            }
            f.submitter = Some(inner.h.current());
            match f.stage {
                0 if inner.timers.is_some() => inner.classes.elevator,
                0 => inner.classes.host,
                1 => inner.classes.queue,
                _ if f.req.op == Op::Flush => inner.classes.flush,
                _ => inner.classes.service,
            }
        };
        inner.h.park(class).await;
        let f = inner.state.borrow_mut().free(id);
        debug_assert!(f.finished);
        f.done
    }

    /// Runs a plugged queue now (`generic_unplug_device`); a no-op without a block layer.
    pub fn unplug(&self) {
        let run = match self.inner.state.borrow_mut().blk.as_mut() {
            Some(b) => b.unplug(),
            None => return,
        };
        if run {
            self.run_queue();
        }
    }

    /// Block layer: a new bio goes through `__make_request`; returns its slot.
    fn enqueue_blk(&self, req: Request, keep: bool) -> u64 {
        let now = self.inner.h.now();
        let (id, run, done_now) = {
            let mut st = self.inner.state.borrow_mut();
            st.account_area(now);
            st.in_system += 1;
            let id = st.alloc(InFlight {
                req,
                submitter: None,
                done: IoDone {
                    submitted: now,
                    ..IoDone::default()
                },
                cover: 0,
                finished: false,
                rq: crate::block::NIL,
                head: crate::block::NIL,
                stage: 0,
                keep,
            });
            let blk = st.blk.as_mut().expect("block layer");
            match blk.make_request(id as u32, &req, now) {
                crate::block::blk_core::Submitted::Queued { run } => (id, run, false),
                crate::block::blk_core::Submitted::Done => (id, false, true),
            }
        };
        if done_now {
            let mut st = self.inner.state.borrow_mut();
            {
                let f = st.slots[id as usize].as_mut().expect("live request");
                f.done.issued = now;
                f.done.started = now;
            }
            let wake = self.finish_bio(&mut st, id as u32, now);
            debug_assert!(wake.is_none());
            drop(st);
            self.after_completion();
        } else if run {
            self.run_queue();
        }
        self.notify_timers();
        id
    }

    /// `__blk_run_queue`: the elevator dispatches while the driver has a free tag.
    fn run_queue(&self) {
        let inner = &self.inner;
        let now = inner.h.now();
        let mut issued = 0;
        {
            let mut st = inner.state.borrow_mut();
            let st = &mut *st;
            let Some(blk) = st.blk.as_mut() else {
                return;
            };
            blk.run_begin();
            while st.tags_free > 0 {
                let Some(d) = st.blk.as_mut().expect("block layer").next(now) else {
                    break;
                };
                let id = st.alloc(InFlight {
                    req: d.req,
                    submitter: None,
                    done: IoDone {
                        submitted: now,
                        ..IoDone::default()
                    },
                    cover: 0,
                    finished: false,
                    rq: d.rq,
                    head: d.head,
                    stage: 1,
                    keep: false,
                });
                let mut b = d.head;
                while b != crate::block::NIL {
                    let f = st.slots[b as usize].as_mut().expect("live bio");
                    if f.stage == 0 {
                        f.stage = 1;
                        f.done.issued = now;
                        if let Some(t) = f.submitter {
                            inner.h.reclassify(t, inner.classes.queue);
                        }
                    }
                    b = st.blk.as_ref().expect("block layer").next_bio(b);
                }
                st.issue(id, now);
                issued += 1;
            }
        }
        for _ in 0..issued {
            self.kick_unit();
        }
        self.notify_timers();
    }

    /// Wakes the block layer's timer tasks that have a deadline to sleep towards.
    fn notify_timers(&self) {
        let Some(wq) = &self.inner.timers else {
            return;
        };
        let (a, b) = {
            let st = self.inner.state.borrow();
            let blk = st.blk.as_ref().expect("block layer");
            (blk.plug_deadline.is_some(), blk.elv_deadline.is_some())
        };
        if a {
            wq[0].notify_one();
        }
        if b {
            wq[1].notify_one();
        }
    }

    /// A block-layer timer task: 0 = the unplug timer, 1 = the elevator's (CFQ idle) timer.
    async fn blk_timer(&self, which: usize) {
        let inner = &self.inner;
        let wq = inner.timers.as_ref().expect("block layer");
        loop {
            let now = inner.h.now();
            let deadline = {
                let st = inner.state.borrow();
                let blk = st.blk.as_ref().expect("block layer");
                [blk.plug_deadline, blk.elv_deadline][which]
            };
            match deadline {
                None => wq[which].wait().await,
                Some(t) if t > now => inner.h.sleep(t - now).await,
                Some(_) => {
                    let run = {
                        let mut st = inner.state.borrow_mut();
                        let blk = st.blk.as_mut().expect("block layer");
                        if which == 0 {
                            blk.unplug_timeout(now)
                        } else {
                            blk.elv_timeout(now)
                        }
                    };
                    if run {
                        self.run_queue();
                    }
                    self.notify_timers();
                }
            }
        }
    }

    /// Finishes one bio: timestamps, statistics; returns the task to wake.
    fn finish_bio(&self, st: &mut State, bio: u32, now: Nanos) -> Option<TaskId> {
        st.account_area(now);
        assert!(
            st.in_system > 0,
            "device: completion with nothing in the system"
        );
        st.in_system -= 1;
        let (req, done, submitter, keep) = {
            let f = st.slots[bio as usize].as_mut().expect("live bio");
            f.done.completed = now;
            f.finished = true;
            f.stage = 3;
            (f.req, f.done, f.submitter, f.keep)
        };
        let histograms = st.histograms;
        let k = &mut st.stats.kinds[req.kind() as usize];
        k.count += 1;
        k.bytes += req.len;
        if done.host_wait() > 0 {
            k.host_waited += 1;
        }
        k.host_wait_ns += u128::from(done.host_wait());
        k.queue_wait_ns += u128::from(done.queue_wait());
        k.service_ns += u128::from(done.service());
        if histograms {
            k.latency
                .get_or_insert_with(new_histogram)
                .saturating_record(done.latency());
        }
        if submitter.is_none() && !keep {
            st.free(u64::from(bio));
        }
        submitter
    }

    /// Block layer: a device request completed: cache, its bios, the elevator, the queue.
    fn complete_blk(&self, id: u64) {
        let inner = &self.inner;
        let now = inner.h.now();
        let mut wake;
        {
            let mut st = inner.state.borrow_mut();
            wake = std::mem::take(&mut st.blk_wake);
            wake.clear();
            let f = st.free(id);
            if f.req.op == Op::Flush {
                st.cache.complete_flush(f.cover);
            }
            if f.req.op == Op::Write {
                let mut b = f.head;
                while b != crate::block::NIL {
                    let r = st.slots[b as usize].as_ref().expect("live bio").req;
                    st.cache.complete_write(r.offset, r.len, r.token, f.req.fua);
                    b = st.blk.as_ref().expect("block layer").next_bio(b);
                }
            }
            st.stats.background_bytes = st.cache.background_bytes;
            st.tags_free += 1;
            let mut done = std::mem::take(&mut st.blk_done);
            done.clear();
            st.blk
                .as_mut()
                .expect("block layer")
                .completed(f.rq, now, &mut done);
            for &b in &done {
                if let Some(t) = self.finish_bio(&mut st, b, now) {
                    wake.push(t);
                }
            }
            st.blk_done = done;
        }
        for &t in &wake {
            inner.h.unpark(t);
        }
        inner.state.borrow_mut().blk_wake = wake;
        self.after_completion();
    }

    fn after_completion(&self) {
        self.run_queue();
        if self.inner.state.borrow().in_system == 0 {
            self.inner.drained.notify_all();
        }
    }

    fn enqueue(&self, req: Request, submitter: Option<TaskId>) -> (u64, bool) {
        let now = self.inner.h.now();
        let mut st = self.inner.state.borrow_mut();
        st.account_area(now);
        st.in_system += 1;
        let id = st.alloc(InFlight {
            req,
            submitter,
            done: IoDone {
                submitted: now,
                ..IoDone::default()
            },
            cover: 0,
            finished: false,
            rq: crate::block::NIL,
            head: crate::block::NIL,
            stage: 0,
            keep: false,
        });
        let issued = st.tags_free > 0;
        if issued {
            st.issue(id, now);
            drop(st);
            self.kick_unit();
        } else {
            st.host_queue.push_back(id);
            st.stats.max_host_queue = st.stats.max_host_queue.max(st.host_queue.len() as u64);
        }
        (id, issued)
    }

    /// A service unit: takes the next request from the scheduler and serves it.
    async fn unit(&self) {
        let inner = &self.inner;
        loop {
            let now = inner.h.now();
            let next = {
                let mut st = inner.state.borrow_mut();
                let head = st.head_cyl;
                st.dispatch(head, now)
            };
            let Some(q) = next else {
                inner.idle.wait().await;
                continue;
            };
            let service = {
                let mut st = inner.state.borrow_mut();
                st.now = now;
                let t = st.service_time(q.id);
                let f = st.slots[q.id as usize].as_mut().expect("live request");
                f.done.started = now;
                f.stage = 2;
                if f.rq != crate::block::NIL {
                    let (mut b, flush) = (f.head, f.req.op == Op::Flush);
                    while b != crate::block::NIL {
                        let f = st.slots[b as usize].as_mut().expect("live bio");
                        if f.stage == 1 {
                            f.stage = 2;
                            f.done.started = now;
                            if let Some(task) = f.submitter {
                                let c = if flush || f.req.op == Op::Flush {
                                    inner.classes.flush
                                } else {
                                    inner.classes.service
                                };
                                inner.h.reclassify(task, c);
                            }
                        }
                        b = st.blk.as_ref().expect("block layer").next_bio(b);
                    }
                }
                let f = st.slots[q.id as usize].as_mut().expect("live request");
                if let Some(task) = f.submitter {
                    let c = if f.req.op == Op::Flush {
                        inner.classes.flush
                    } else {
                        inner.classes.service
                    };
                    inner.h.reclassify(task, c);
                }
                t
            };
            inner.h.delay(service, inner.classes.busy).await;
            self.complete(q.id);
        }
    }

    fn complete(&self, id: u64) {
        if self.inner.timers.is_some() {
            self.complete_blk(id);
            return;
        }
        let inner = &self.inner;
        let now = inner.h.now();
        let mut st = inner.state.borrow_mut();
        st.account_area(now);
        assert!(
            st.in_system > 0,
            "device: completion with nothing in the system"
        );
        st.in_system -= 1;
        let (req, cover, done, submitter) = {
            let f = st.slots[id as usize].as_mut().expect("live request");
            f.done.completed = now;
            f.finished = true;
            (f.req, f.cover, f.done, f.submitter)
        };
        if req.op == Op::Flush || req.preflush {
            st.cache.complete_flush(cover);
        }
        if req.op == Op::Write {
            st.cache
                .complete_write(req.offset, req.len, req.token, req.fua);
        }
        st.stats.background_bytes = st.cache.background_bytes;
        let k = &mut st.stats.kinds[req.kind() as usize];
        k.count += 1;
        k.bytes += req.len;
        if done.host_wait() > 0 {
            k.host_waited += 1;
        }
        k.host_wait_ns += u128::from(done.host_wait());
        k.queue_wait_ns += u128::from(done.queue_wait());
        k.service_ns += u128::from(done.service());
        if st.histograms {
            let k = &mut st.stats.kinds[req.kind() as usize];
            k.latency
                .get_or_insert_with(new_histogram)
                .saturating_record(done.latency());
        }
        // The tag passes to the oldest host-queued request.
        st.tags_free += 1;
        let mut woke_unit = false;
        if let Some(next) = st.host_queue.pop_front() {
            st.issue(next, now);
            if let Some(t) = st.slots[next as usize].as_ref().and_then(|f| f.submitter) {
                inner.h.reclassify(t, inner.classes.queue);
            }
            woke_unit = true;
        }
        match submitter {
            Some(t) => {
                drop(st);
                inner.h.unpark(t);
            }
            None if st.slots[id as usize].as_ref().is_some_and(|f| f.keep) => drop(st),
            None => {
                st.free(id);
                drop(st);
            }
        }
        if woke_unit {
            self.kick_unit();
        }
        if self.inner.state.borrow().in_system == 0 {
            inner.drained.notify_all();
        }
    }

    /// Waits until no request is queued or in service.
    pub async fn drain(&self) {
        while self.inner.state.borrow().in_system > 0 {
            self.inner.drained.wait().await;
        }
    }

    /// Turns per-kind latency histograms on or off (off for fast seed sweeps).
    pub fn set_histograms(&self, on: bool) {
        self.inner.state.borrow_mut().histograms = on;
    }

    /// Bytes written and cache flushes (FLUSH requests and PREFLUSH writes) so far.
    pub fn write_totals(&self) -> (u64, u64) {
        let st = self.inner.state.borrow();
        let k = |x: ReqKind| &st.stats.kinds[x as usize];
        let bytes = ReqKind::ALL
            .iter()
            .filter(|&&x| x != ReqKind::Read)
            .map(|&x| k(x).bytes)
            .sum();
        (
            bytes,
            k(ReqKind::Flush).count + k(ReqKind::PreflushWrite).count,
        )
    }

    /// A snapshot of the device's counters.
    pub fn stats(&self) -> DeviceStats {
        let now = self.inner.h.now();
        let mut st = self.inner.state.borrow_mut();
        st.account_area(now);
        let mut s = st.stats.clone();
        if let Some(b) = st.blk.as_mut() {
            s.block = Some(b.stats(now));
        }
        s
    }

    /// What survives a power loss now (offset → newest durable write); None unless the
    /// device was built with `with_image`.
    pub fn durable_image(&self) -> Option<BTreeMap<u64, DurableWrite>> {
        self.inner.state.borrow().cache.durable_image().cloned()
    }

    /// Calls `f` with the durable image and its version, without copying it.
    pub fn with_durable_image<R>(
        &self,
        f: impl FnOnce(Option<&BTreeMap<u64, DurableWrite>>) -> R,
    ) -> R {
        f(self.inner.state.borrow().cache.durable_image())
    }

    /// A number that changes whenever the durable image does.
    pub fn durable_version(&self) -> u64 {
        self.inner.state.borrow().cache.image_version()
    }

    /// Tokens of completed writes a power loss now would drop.
    pub fn volatile_tokens(&self) -> Vec<u64> {
        self.inner.state.borrow().cache.volatile_tokens()
    }

    /// Bytes completed into the cache and not yet durable.
    pub fn dirty_bytes(&self) -> u64 {
        self.inner.state.borrow().cache.dirty_bytes()
    }

    /// The configuration.
    pub fn config(&self) -> DeviceConfig {
        self.inner.state.borrow().cfg.clone()
    }

    /// Counters of the HDD mechanics (None unless the geometry has `mech`).
    pub fn hdd_stats(&self) -> Option<hdd::HddStats> {
        self.inner.state.borrow().mech.as_ref().map(|m| m.stats())
    }

    /// Whether the device rotates (what the block layer reports as `rotational`).
    pub fn rotational(&self) -> bool {
        self.inner.state.borrow().cfg.hdd.is_some()
    }
}
