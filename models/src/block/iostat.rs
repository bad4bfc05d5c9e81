//! `iostat -x` over a window of a run: the columns sysstat prints (and seed 003 quotes),
//! from two snapshots of a disk's counters (`/proc/diskstats`, kept by the block layer: the
//! device's per-kind counters and the request queue's merges).

use super::BlockStats;
use crate::device::{Device, DeviceStats, ReqKind};
use sim::Nanos;

/// The counters of a disk at one moment: the device's and its request queue's.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The device's counters.
    pub device: DeviceStats,
    /// The request queue's (None without one).
    pub queue: Option<BlockStats>,
}

impl Snapshot {
    /// The counters of `dev` now.
    pub fn of(dev: &Device) -> Snapshot {
        Snapshot {
            device: dev.stats(),
            queue: super::genhd::stats(dev),
        }
    }
}

/// One device's `iostat -x` line over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Iostat {
    /// Read bios merged into queued requests per second (rrqm/s).
    pub rrqm_s: f64,
    /// Write bios merged into queued requests per second (wrqm/s).
    pub wrqm_s: f64,
    /// Read requests completed per second (r/s).
    pub r_s: f64,
    /// Write requests completed per second, flushes excluded (w/s).
    pub w_s: f64,
    /// MiB read per second (rMB/s).
    pub rmb_s: f64,
    /// MiB written per second (wMB/s).
    pub wmb_s: f64,
    /// Mean request size, 512-byte sectors (avgrq-sz).
    pub avgrq_sz: f64,
    /// Mean requests in the queue and at the device (avgqu-sz).
    pub avgqu_sz: f64,
    /// Mean submission-to-completion time of a request, ms (await).
    pub await_ms: f64,
    /// Busy time per request, ms (svctm = %util / IOs, as sysstat derives it).
    pub svctm_ms: f64,
    /// Share of the window the device was busy, % (device service time over the window and
    /// its service units: one spindle on a disk).
    pub util_pct: f64,
    /// Mean submission-to-completion time of a read, ms (r_await).
    pub r_await_ms: f64,
    /// Mean submission-to-completion time of a write, ms (w_await).
    pub w_await_ms: f64,
    /// Flush requests completed per second (f/s).
    pub f_s: f64,
    /// Mean submission-to-completion time of a flush, ms (f_await).
    pub f_await_ms: f64,
}

/// The column names of today's sysstat (12.x), in its order: reads, writes, discards (none
/// here), flushes, queue size and utilisation.
pub const COLUMNS_X: [&str; 22] = [
    "r/s", "rkB/s", "rrqm/s", "%rrqm", "r_await", "rareq-sz", "w/s", "wkB/s", "wrqm/s", "%wrqm",
    "w_await", "wareq-sz", "d/s", "dkB/s", "drqm/s", "%drqm", "d_await", "dareq-sz", "f/s",
    "f_await", "aqu-sz", "%util",
];

/// The column names of sysstat 9 (the ext4 kbuild thread's), in its order.
pub const COLUMNS: [&str; 11] = [
    "rrqm/s", "wrqm/s", "r/s", "w/s", "rMB/s", "wMB/s", "avgrq-sz", "avgqu-sz", "await", "svctm",
    "%util",
];

const WRITES: [ReqKind; 3] = [ReqKind::Write, ReqKind::FuaWrite, ReqKind::PreflushWrite];

impl Iostat {
    /// The window from snapshot `a` to snapshot `b` (`ns` long) of a device with `units`
    /// service units.
    pub fn between(a: &Snapshot, b: &Snapshot, ns: Nanos, units: u64) -> Iostat {
        let secs = ns.max(1) as f64 / 1e9;
        let merges = |dir: usize| {
            let m = |s: &Snapshot| u128::from(s.queue.as_ref().map_or(0, |q| q.merges[dir]));
            m(b).saturating_sub(m(a)) as f64
        };
        let (a, b) = (&a.device, &b.device);
        let d = |f: &dyn Fn(&DeviceStats) -> u128| f(b).saturating_sub(f(a)) as f64;
        let count = |k: ReqKind| d(&|s: &DeviceStats| u128::from(s.kind(k).count));
        let bytes = |k: ReqKind| d(&|s: &DeviceStats| u128::from(s.kind(k).bytes));
        let time = |k: ReqKind| {
            d(&|s: &DeviceStats| {
                let k = s.kind(k);
                k.host_wait_ns + k.queue_wait_ns + k.service_ns
            })
        };
        let reads = count(ReqKind::Read);
        let writes: f64 = WRITES.iter().map(|&k| count(k)).sum();
        let rbytes = bytes(ReqKind::Read);
        let wbytes: f64 = WRITES.iter().map(|&k| bytes(k)).sum();
        let ios = reads + writes;
        let wait = time(ReqKind::Read) + WRITES.iter().map(|&k| time(k)).sum::<f64>();
        let busy =
            d(&|s: &DeviceStats| s.kinds.iter().map(|k| k.service_ns).sum()) / units.max(1) as f64;
        let util = (busy / (secs * 1e9)).min(1.0);
        let per_io = |x: f64| if ios > 0.0 { x / ios } else { 0.0 };
        let per = |x: f64, n: f64| if n > 0.0 { x / n } else { 0.0 };
        let flushes = count(ReqKind::Flush);
        Iostat {
            rrqm_s: merges(super::Dir::Read as usize) / secs,
            wrqm_s: merges(super::Dir::Write as usize) / secs,
            r_s: reads / secs,
            w_s: writes / secs,
            rmb_s: rbytes / 1048576.0 / secs,
            wmb_s: wbytes / 1048576.0 / secs,
            avgrq_sz: per_io((rbytes + wbytes) / 512.0),
            avgqu_sz: d(&|s: &DeviceStats| s.in_system_area) / (secs * 1e9),
            await_ms: per_io(wait) / 1e6,
            svctm_ms: per_io(util * secs * 1e3),
            util_pct: 100.0 * util,
            r_await_ms: per(time(ReqKind::Read), reads) / 1e6,
            w_await_ms: per(WRITES.iter().map(|&k| time(k)).sum(), writes) / 1e6,
            f_s: flushes / secs,
            f_await_ms: per(time(ReqKind::Flush), flushes) / 1e6,
        }
    }

    /// The values in `COLUMNS_X` order (sizes in KiB as sysstat 12 prints them; no discards).
    pub fn values_x(&self) -> [f64; 22] {
        let secs_per = |n: f64, x: f64| if n > 0.0 { x / n } else { 0.0 };
        let pc = |m: f64, n: f64| secs_per(m + n, 100.0 * m);
        [
            self.r_s,
            self.rmb_s * 1024.0,
            self.rrqm_s,
            pc(self.rrqm_s, self.r_s),
            self.r_await_ms,
            secs_per(self.r_s, self.rmb_s * 1024.0),
            self.w_s,
            self.wmb_s * 1024.0,
            self.wrqm_s,
            pc(self.wrqm_s, self.w_s),
            self.w_await_ms,
            secs_per(self.w_s, self.wmb_s * 1024.0),
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            self.f_s,
            self.f_await_ms,
            self.avgqu_sz,
            self.util_pct,
        ]
    }

    /// The values in `COLUMNS` order.
    pub fn values(&self) -> [f64; 11] {
        [
            self.rrqm_s,
            self.wrqm_s,
            self.r_s,
            self.w_s,
            self.rmb_s,
            self.wmb_s,
            self.avgrq_sz,
            self.avgqu_sz,
            self.await_ms,
            self.svctm_ms,
            self.util_pct,
        ]
    }
}
