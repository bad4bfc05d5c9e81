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
//!    dirty data for a flush, after the data earlier flushes claimed; + an optional rare
//!    tail spike).
//! 4. On completion the cache is updated, the tag goes to the next host-queued request, and
//!    the submitting task resumes.
//!
//! The submitter's wait is attributed, in turn, to `<dev>:host_queue`, `<dev>:queue` and
//! `<dev>:service` (`<dev>:flush` for flushes), so reports can split I/O latency.
//! All draws come from the stream `device.<name>`.
//!
//! A request queue above the driver (`QueueAbove`: the block layer's, for a scheduler other
//! than `none`) takes the place of the host queue: a submission goes up to it as a bio, and it
//! hands requests down with the lower interface (`has_free_tag`, `issue_request`,
//! `kick_units`); each completion goes back up to it (`blk_end_request`), which may dispatch
//! more. Per-kind counters then count bios; the queue keeps its own counters.

pub mod cache;
pub mod config;
pub mod dist;
pub mod hdd;
pub mod iosched;
pub mod link;
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
    /// The queue above: its request this device request carries (`NO_LINK` for bios and
    /// without a queue above).
    rq: u32,
    /// The queue above: the device request's first bio (`NO_LINK` without one).
    head: u32,
    /// 0 waiting above the driver (queue above or host queue), 1 at the driver, 2 in
    /// service, 3 done (for a late waiter's wait class).
    stage: u8,
    /// A ticket holder will collect it (`submit_nowait`).
    keep: bool,
}

/// The null value of the queue-above links a device request carries (`rq`, `head`).
pub const NO_LINK: u32 = u32::MAX;

/// The request queue above the driver (`struct request_queue` as the driver sees it, v2.6.37):
/// submissions go up to it (`generic_make_request` → `q->make_request_fn`), and the device
/// tells it when a request enters service (`blk_start_request`) and completes
/// (`blk_end_request`). It hands requests down through the device's lower interface.
pub trait QueueAbove: std::any::Any {
    /// `q->make_request_fn`: a new bio (`keep`: a ticket holder collects it); returns its
    /// slot.
    fn make_request(&self, dev: &Device, req: Request, keep: bool) -> u64;
    /// `generic_unplug_device`: run a plugged queue now.
    fn unplug(&self, dev: &Device);
    /// `blk_start_request`: the device request whose first bio is `head` entered service
    /// (`flush`: it is a cache flush).
    fn start_request(&self, dev: &Device, head: u32, flush: bool, now: Nanos);
    /// `blk_end_request`: device request `id` completed.
    fn end_request(&self, dev: &Device, id: u64);
    /// The wait class of a bio still queued above the driver.
    fn wait_class(&self) -> ClassId;
    /// The queue itself (for its owner's counters).
    fn as_any(&self) -> &dyn std::any::Any;
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
    link: link::Link,
    /// When the destage that flushes claimed so far ends.
    destage_free: Nanos,
    now: Nanos,
    stats: DeviceStats,
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

    /// Destages `work` ns of claimed dirty data from `ready` on, after what earlier flushes
    /// claimed: the flush rates are the medium's aggregate (all dies at once), so destaging is
    /// one pipe, and a flush cannot complete before the data that an earlier, still running
    /// flush claimed is durable (it covers those writes too). Returns when it ends.
    fn destage(&mut self, ready: Nanos, work: Nanos) -> Nanos {
        let end = ready.max(self.destage_free) + work;
        self.destage_free = end;
        end
    }

    /// Reserves the host link for `transfer` ns from `ready` on; returns when it ends.
    fn link(&mut self, ready: Nanos, transfer: Nanos) -> Nanos {
        self.link.reserve(self.now, ready, transfer)
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
            if self.cfg.write_cache {
                let base = self.cfg.flush.base.sample(&mut self.rng);
                let work = (d.bytes as f64 * self.cfg.flush.ns_per_dirty_byte.0) as Nanos
                    + (d.writes as f64 * self.cfg.flush.ns_per_dirty_write.0) as Nanos;
                t += self.destage(now + base, work) - now;
            }
        }
        // The host link is one shared resource (`link.rs`); a request reserves it when it
        // enters service, for when its data is ready (a PREFLUSH write's after the destage),
        // so transfers queue in service order, take the gaps before later reservations, and
        // the link caps throughput at 1 / transfer_ns_per_byte.
        t += self.link(now + t, transfer) - (now + t);
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

    /// Counts a new request in the system and gives it a slot.
    fn admit(&mut self, f: InFlight, now: Nanos) -> u64 {
        self.account_area(now);
        self.in_system += 1;
        self.alloc(f)
    }

    /// A finished request's per-kind counters.
    fn record(&mut self, req: &Request, done: &IoDone) {
        let histograms = self.histograms;
        let k = &mut self.stats.kinds[req.kind() as usize];
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
    }

    /// Leaves the system: one fewer request in it.
    fn leave(&mut self, now: Nanos) {
        self.account_area(now);
        assert!(
            self.in_system > 0,
            "device: completion with nothing in the system"
        );
        self.in_system -= 1;
    }
}

/// A new request in its slot: submitted now, nothing else yet.
fn in_flight(req: Request, submitter: Option<TaskId>, now: Nanos) -> InFlight {
    InFlight {
        req,
        submitter,
        done: IoDone {
            submitted: now,
            ..IoDone::default()
        },
        cover: 0,
        finished: false,
        rq: NO_LINK,
        head: NO_LINK,
        stage: 0,
        keep: false,
    }
}

struct Classes {
    host: ClassId,
    queue: ClassId,
    service: ClassId,
    flush: ClassId,
    busy: ClassId,
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
    /// The request queue above the driver (None: submissions take tags directly).
    above: Option<Rc<dyn QueueAbove>>,
}

/// A simulated block device shared by the tasks that submit to it.
#[derive(Clone)]
pub struct Device {
    inner: Rc<Inner>,
}

impl Device {
    /// Builds the device (its service units start on demand as daemon tasks); with
    /// `track_image` it keeps the durable image for crash checks. `above` builds the request
    /// queue above the driver, if any (its wait classes and queues register between the
    /// device's own, as the kernel's `add_disk` sets them up).
    pub fn with_queue(
        sim: &mut sim::Sim,
        cfg: DeviceConfig,
        streams: &mut RngStreams,
        track_image: bool,
        above: impl FnOnce(&Handle, &DeviceConfig) -> Option<Rc<dyn QueueAbove>>,
    ) -> Self {
        let h = sim.handle();
        let name = cfg.name.clone();
        let mech = cfg.hdd.and_then(|g| g.mech.map(|m| hdd::Hdd::new(&g, m)));
        let state = State {
            rng: streams.stream(&format!("device.{name}")),
            sched: Box::new(iosched::NoneFifo::default()),
            cache: WriteCache::new(cfg.write_cache, cfg.cache_bytes, track_image),
            slots: Vec::new(),
            free_slots: Vec::new(),
            tags_free: cfg.tags(),
            host_queue: VecDeque::new(),
            in_system: 0,
            head_cyl: 0,
            mech,
            histograms: true,
            link: link::Link::default(),
            destage_free: 0,
            now: 0,
            stats: DeviceStats {
                kinds: ReqKind::ALL.iter().map(|_| KindStats::new()).collect(),
                in_system_area: 0,
                max_host_queue: 0,
                flushed_bytes: 0,
                background_bytes: 0,
                last_event: 0,
            },
            cfg,
        };
        let classes = Classes {
            host: h.class(&format!("{name}:host_queue")),
            queue: h.class(&format!("{name}:queue")),
            service: h.class(&format!("{name}:service")),
            flush: h.class(&format!("{name}:flush")),
            busy: h.class(&format!("{name}:unit_busy")),
        };
        let above = above(&h, &state.cfg);
        let units = state.cfg.parallelism;
        let dev = Device {
            inner: Rc::new(Inner {
                idle: WaitQueue::new(&h, &format!("{name}:idle_units")),
                drained: WaitQueue::new(&h, &format!("{name}:drained")),
                units: std::cell::Cell::new(0),
                units_max: std::cell::Cell::new(0),
                h,
                name,
                state: RefCell::new(state),
                classes,
                above,
            }),
        };
        dev.inner.units_max.set(units);
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

    /// The request queue above the driver, if any.
    pub fn above(&self) -> Option<&Rc<dyn QueueAbove>> {
        self.inner.above.as_ref()
    }

    /// Submits a request and waits for its completion. With a queue above the driver the
    /// waiting task unplugs it, as `wait_on_buffer` does (`sync_buffer` →
    /// `blk_run_address_space`, 2.6.37).
    pub async fn submit(&self, req: Request) -> IoDone {
        if self.inner.above.is_some() {
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
        sim::check!(f.finished);
        f.done
    }

    /// Submits a request nobody waits for (open-loop load); its statistics still count.
    pub fn submit_detached(&self, req: Request) {
        match &self.inner.above {
            Some(q) => {
                q.make_request(self, req, false);
            }
            None => {
                self.enqueue(req, None);
            }
        }
    }

    /// Submits a request without waiting (`submit_bh`): nothing unplugs the queue above but
    /// its own rules (REQ_UNPLUG, `unplug_thresh`, the unplug timer). Collect it with `wait`
    /// exactly once.
    pub fn submit_nowait(&self, req: Request) -> Ticket {
        if let Some(q) = &self.inner.above {
            return Ticket(q.make_request(self, req, true));
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
                0 => inner
                    .above
                    .as_ref()
                    .map_or(inner.classes.host, |q| q.wait_class()),
                1 => inner.classes.queue,
                _ if f.req.op == Op::Flush => inner.classes.flush,
                _ => inner.classes.service,
            }
        };
        inner.h.park(class).await;
        let f = inner.state.borrow_mut().free(id);
        sim::check!(f.finished);
        f.done
    }

    /// Runs a plugged queue above the driver now (`generic_unplug_device`); a no-op without
    /// one.
    pub fn unplug(&self) {
        if let Some(q) = &self.inner.above {
            q.unplug(self);
        }
    }

    /// Lower interface: a new bio from the queue above, counted in the system; returns its
    /// slot (`keep`: a ticket holder collects it).
    pub fn new_bio(&self, req: Request, keep: bool) -> u64 {
        let now = self.inner.h.now();
        let mut st = self.inner.state.borrow_mut();
        st.admit(
            InFlight {
                keep,
                ..in_flight(req, None, now)
            },
            now,
        )
    }

    /// Lower interface: bio `bio` reached the driver inside a request (first time only): its
    /// waiter's wait becomes `<dev>:queue`.
    pub fn bio_issued(&self, bio: u32, now: Nanos) {
        let mut st = self.inner.state.borrow_mut();
        let f = st.slots[bio as usize].as_mut().expect("live bio");
        if f.stage == 0 {
            f.stage = 1;
            f.done.issued = now;
            if let Some(t) = f.submitter {
                self.inner.h.reclassify(t, self.inner.classes.queue);
            }
        }
    }

    /// Lower interface: bio `bio` entered service inside a request (`flush`: a cache flush
    /// request): its waiter's wait becomes `<dev>:service` or `<dev>:flush`.
    pub fn bio_started(&self, bio: u32, flush: bool, now: Nanos) {
        let mut st = self.inner.state.borrow_mut();
        let f = st.slots[bio as usize].as_mut().expect("live bio");
        if f.stage == 1 {
            f.stage = 2;
            f.done.started = now;
            if let Some(task) = f.submitter {
                let c = if flush || f.req.op == Op::Flush {
                    self.inner.classes.flush
                } else {
                    self.inner.classes.service
                };
                self.inner.h.reclassify(task, c);
            }
        }
    }

    /// Lower interface: bio `bio` is complete: timestamps, statistics; returns the task to
    /// wake (the slot is freed now when nobody collects it).
    pub fn end_bio(&self, bio: u32, now: Nanos) -> Option<TaskId> {
        let mut st = self.inner.state.borrow_mut();
        st.leave(now);
        let (req, done, submitter, keep) = {
            let f = st.slots[bio as usize].as_mut().expect("live bio");
            f.done.completed = now;
            f.finished = true;
            f.stage = 3;
            (f.req, f.done, f.submitter, f.keep)
        };
        st.record(&req, &done);
        if submitter.is_none() && !keep {
            st.free(u64::from(bio));
        }
        submitter
    }

    /// Lower interface: whether the driver has a free tag (`scsi_dev_queue_ready`).
    pub fn has_free_tag(&self) -> bool {
        self.inner.state.borrow().tags_free > 0
    }

    /// Lower interface: a request from the queue above takes a tag and enters the device's
    /// queue; `rq` and `head` are the queue's links, given back to `start_request` and
    /// `end_request`. Wake a unit for it with `kick_units`.
    pub fn issue_request(&self, req: Request, rq: u32, head: u32, now: Nanos) -> u64 {
        let mut st = self.inner.state.borrow_mut();
        let id = st.alloc(InFlight {
            rq,
            head,
            stage: 1,
            ..in_flight(req, None, now)
        });
        st.issue(id, now);
        id
    }

    /// Lower interface: wakes (or starts) a service unit for each of `n` issued requests.
    pub fn kick_units(&self, n: u64) {
        for _ in 0..n {
            self.kick_unit();
        }
    }

    /// Lower interface: device request `id` of the queue above completed: its cache effects
    /// (a flush's, and each write bio's, `next_bio` walking them from its first), and its tag
    /// is free again; returns the queue's request link.
    pub fn end_request(&self, id: u64, next_bio: impl Fn(u32) -> u32) -> u32 {
        let mut st = self.inner.state.borrow_mut();
        let f = st.free(id);
        if f.req.op == Op::Flush {
            st.cache.complete_flush(f.cover);
        }
        if f.req.op == Op::Write {
            let mut b = f.head;
            while b != NO_LINK {
                let r = st.slots[b as usize].as_ref().expect("live bio").req;
                st.cache.complete_write(r.offset, r.len, r.token, f.req.fua);
                b = next_bio(b);
            }
        }
        st.stats.background_bytes = st.cache.background_bytes;
        st.tags_free += 1;
        f.rq
    }

    /// Lower interface: wakes `drain` waiters when nothing is left in the system.
    pub fn notify_if_drained(&self) {
        if self.inner.state.borrow().in_system == 0 {
            self.inner.drained.notify_all();
        }
    }

    fn enqueue(&self, req: Request, submitter: Option<TaskId>) -> (u64, bool) {
        let now = self.inner.h.now();
        let mut st = self.inner.state.borrow_mut();
        let id = st.admit(in_flight(req, submitter, now), now);
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
            let service = self.start(q.id, now);
            inner.h.delay(service, inner.classes.busy).await;
            self.complete(q.id);
        }
    }

    /// Request `id` enters service now: its service time; the queue above hears of it, and
    /// the waits become `<dev>:service` or `<dev>:flush`.
    fn start(&self, id: u64, now: Nanos) -> Nanos {
        let inner = &self.inner;
        let (t, head, flush, submitter) = {
            let mut st = inner.state.borrow_mut();
            st.now = now;
            let t = st.service_time(id);
            let f = st.slots[id as usize].as_mut().expect("live request");
            f.done.started = now;
            f.stage = 2;
            (t, f.head, f.req.op == Op::Flush, f.submitter)
        };
        if let Some(q) = &inner.above {
            q.start_request(self, head, flush, now);
        }
        if let Some(task) = submitter {
            let c = if flush {
                inner.classes.flush
            } else {
                inner.classes.service
            };
            inner.h.reclassify(task, c);
        }
        t
    }

    fn complete(&self, id: u64) {
        if let Some(q) = &self.inner.above {
            q.end_request(self, id);
            return;
        }
        let inner = &self.inner;
        let now = inner.h.now();
        let mut st = inner.state.borrow_mut();
        st.leave(now);
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
        st.record(&req, &done);
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
        self.notify_if_drained();
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
        st.stats.clone()
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

    /// A power failure: the volatile cache is lost and writes completing from now on are
    /// dropped until `restore_power` (dm-flakey drop_writes).
    pub fn power_fail(&self) {
        self.inner.state.borrow_mut().cache.power_fail();
    }

    /// Writes reach the device again after `power_fail`.
    pub fn restore_power(&self) {
        self.inner.state.borrow_mut().cache.restore_power();
    }

    /// Puts a write carrying `token` onto the durable image at once (no service time).
    pub fn write_durable(&self, offset: u64, len: u64, token: u64) {
        self.inner
            .state
            .borrow_mut()
            .cache
            .write_durable(offset, len, token);
    }

    /// Requests in the system: queued, in service or waiting for their completion.
    pub fn in_flight(&self) -> u64 {
        self.inner.state.borrow().in_system
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
