//! The disk: a request queue set up above a device's driver (`blk_init_queue` + `add_disk`,
//! v2.6.37), and the glue of `block/blk-core.c` between the two: a bio enters through
//! `__make_request`; `__blk_run_queue` hands requests to the driver while it has a free tag
//! (`scsi_request_fn`); `blk_start_request` and `blk_end_request` follow a request through the
//! device, and a completion runs the queue again (`scsi_next_command`). Two daemon tasks per
//! disk are kblockd's unplug work and the elevator's timer (CFQ's idle slice timer).

use super::blk_core::Submitted;
use super::config::{DiskConfig, Tunables};
use super::{BlockStats, RequestQueue, NIL};
use crate::device::{Device, DeviceConfig, QueueAbove, Request};
use sim::{ClassId, Handle, Nanos, RngStreams, TaskId, WaitQueue};
use std::cell::RefCell;
use std::rc::Rc;

/// The request queue of one disk and what runs it.
pub struct Disk {
    h: Handle,
    q: RefCell<RequestQueue>,
    /// Waiting in the request queue (`<dev>:elevator`).
    elevator: ClassId,
    /// The unplug and elevator timers' wait queues.
    timers: [WaitQueue; 2],
    /// Scratch: bios finished by one completion.
    done: RefCell<Vec<u32>>,
    /// Scratch: their waiting tasks.
    wake: RefCell<Vec<TaskId>>,
}

/// Builds a device with the request queue its configuration names above the driver (none
/// for `scheduler = "none"`, or a bare `DeviceConfig`: submissions take the driver's tags
/// directly); with `track_image` the device keeps the durable image for crash checks.
pub fn add_disk(
    sim: &mut sim::Sim,
    cfg: impl Into<DiskConfig>,
    streams: &mut RngStreams,
    track_image: bool,
) -> Device {
    let DiskConfig {
        device,
        scheduler,
        sched,
    } = cfg.into();
    let mut disk = None;
    let dev = Device::with_queue(sim, device, streams, track_image, |h, cfg| {
        let d = Rc::new(Disk::new(h, cfg, &scheduler, &sched)?);
        disk = Some(d.clone());
        Some(d as Rc<dyn QueueAbove>)
    });
    if let Some(d) = disk {
        for which in 0..2 {
            let (d, dev) = (d.clone(), dev.clone());
            let label = ["kblockd_unplug", "elevator_timer"][which];
            sim.spawn_daemon(&format!("{}.{label}", dev.name()), async move {
                d.timer(&dev, which).await
            });
        }
    }
    dev
}

/// The request queue's and elevator's counters up to now (None without a request queue).
pub fn stats(dev: &Device) -> Option<BlockStats> {
    let d = dev.above()?.as_any().downcast_ref::<Disk>()?;
    Some(d.q.borrow_mut().stats(d.h.now()))
}

impl Disk {
    /// The queue of elevator `scheduler` above the device `cfg` (None for `none`), its wait
    /// class and timers.
    fn new(h: &Handle, cfg: &DeviceConfig, scheduler: &str, t: &Tunables) -> Option<Disk> {
        let q = RequestQueue::new(
            scheduler,
            t,
            t.queue.rotational.unwrap_or(cfg.hdd.is_some()),
            cfg.tags(),
            cfg.write_cache,
            h.now(),
        )?;
        let name = &cfg.name;
        Some(Disk {
            h: h.clone(),
            q: RefCell::new(q),
            elevator: h.class(&format!("{name}:elevator")),
            timers: [
                WaitQueue::new(h, &format!("{name}:unplug_timer")),
                WaitQueue::new(h, &format!("{name}:elevator_timer")),
            ],
            done: RefCell::new(Vec::new()),
            wake: RefCell::new(Vec::new()),
        })
    }

    /// `__blk_run_queue`: the elevator dispatches while the driver has a free tag; each
    /// request's bios are now at the driver.
    fn run_queue(&self, dev: &Device) {
        let now = self.h.now();
        let mut issued = 0;
        {
            let mut q = self.q.borrow_mut();
            q.run_begin();
            while dev.has_free_tag() {
                let Some(d) = q.next(now) else {
                    break;
                };
                let mut b = d.head;
                while b != NIL {
                    dev.bio_issued(b, now);
                    b = q.next_bio(b);
                }
                dev.issue_request(d.req, d.rq, d.head, now);
                issued += 1;
            }
        }
        dev.kick_units(issued);
        self.notify_timers();
    }

    /// Wakes the timer tasks that have a deadline to sleep towards.
    fn notify_timers(&self) {
        let (a, b) = {
            let q = self.q.borrow();
            (q.plug_deadline.is_some(), q.elv_deadline.is_some())
        };
        if a {
            self.timers[0].notify_one();
        }
        if b {
            self.timers[1].notify_one();
        }
    }

    /// A timer task: 0 = the unplug timer (kblockd's unplug work), 1 = the elevator's timer.
    async fn timer(&self, dev: &Device, which: usize) {
        loop {
            let now = self.h.now();
            let deadline = {
                let q = self.q.borrow();
                [q.plug_deadline, q.elv_deadline][which]
            };
            match deadline {
                None => self.timers[which].wait().await,
                Some(t) if t > now => self.h.sleep(t - now).await,
                Some(_) => {
                    let run = {
                        let mut q = self.q.borrow_mut();
                        if which == 0 {
                            q.unplug_timeout(now)
                        } else {
                            q.elv_timeout(now)
                        }
                    };
                    if run {
                        self.run_queue(dev);
                    }
                    self.notify_timers();
                }
            }
        }
    }

    /// After a completion: run the queue (`scsi_next_command`), wake drain waiters.
    fn after_completion(&self, dev: &Device) {
        self.run_queue(dev);
        dev.notify_if_drained();
    }
}

impl QueueAbove for Disk {
    /// `__make_request`: merge the bio or queue a new request, maybe run the queue.
    fn make_request(&self, dev: &Device, req: Request, keep: bool) -> u64 {
        let now = self.h.now();
        let id = dev.new_bio(req, keep);
        let submitted = self.q.borrow_mut().make_request(id as u32, &req, now);
        match submitted {
            Submitted::Done => {
                // Nothing for the device (an empty flush without a cache): done now.
                dev.bio_issued(id as u32, now);
                dev.bio_started(id as u32, false, now);
                let wake = dev.end_bio(id as u32, now);
                sim::check!(wake.is_none());
                self.after_completion(dev);
            }
            Submitted::Queued { run: true } => self.run_queue(dev),
            Submitted::Queued { run: false } => {}
        }
        self.notify_timers();
        id
    }

    fn unplug(&self, dev: &Device) {
        let run = self.q.borrow_mut().unplug();
        if run {
            self.run_queue(dev);
        }
    }

    fn start_request(&self, dev: &Device, head: u32, flush: bool, now: Nanos) {
        let q = self.q.borrow();
        let mut b = head;
        while b != NIL {
            dev.bio_started(b, flush, now);
            b = q.next_bio(b);
        }
    }

    /// `blk_end_request`: the cache learns of the request's writes, its bios complete and
    /// their waiters wake, the elevator hears of it, and the queue runs.
    fn end_request(&self, dev: &Device, id: u64) {
        let now = self.h.now();
        let mut wake = self.wake.take();
        wake.clear();
        {
            let mut q = self.q.borrow_mut();
            let rq = dev.end_request(id, |b| q.next_bio(b));
            let mut done = self.done.take();
            done.clear();
            q.completed(rq, now, &mut done);
            for &b in &done {
                if let Some(t) = dev.end_bio(b, now) {
                    wake.push(t);
                }
            }
            *self.done.borrow_mut() = done;
        }
        for &t in &wake {
            self.h.unpark(t);
        }
        *self.wake.borrow_mut() = wake;
        self.after_completion(dev);
    }

    fn wait_class(&self) -> ClassId {
        self.elevator
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
