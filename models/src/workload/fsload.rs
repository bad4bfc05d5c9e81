//! Running a workload (`spec::Spec`) on the btrfs model: closed-loop clients, each with its
//! own seeded stream, measured after the warmup with one HDR histogram per operation kind,
//! per-operation latency attribution from the engine's wait accounting, and the slowest
//! operations. Memory does not grow with the duration: histograms and counters only, the
//! filesystem state compacted at every commit, the trace (when asked) streamed out.

use super::dbench::{DBENCH_DIRS, DBENCH_FILES};
use super::spec::{Kind, Spec};
use crate::block::DiskConfig;
use crate::btrfs::{Costs, Violation};
use crate::device::{new_histogram, Device};
use crate::kernel::Policy;
use crate::mount::Mounted;
use crate::vfs::Metrics;
use crate::vfs::{Filesystem, Op, OpPath};
use hdrhistogram::Histogram;
use rand::Rng;
use sim::trace::TraceRecord;
use sim::{Handle, Nanos, RngStreams, Sim, SimError, Stream, TaskId};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// One measured operation, for the trace: (task, op index, start, end).
pub type OpSlice = (TaskId, usize, Nanos, Nanos);

/// Receives the trace as the run goes: records and operation slices since the last call.
pub type TraceSink = Box<dyn FnMut(&Handle, &[TraceRecord], &[OpSlice]) -> std::io::Result<()>>;

/// How often (virtual time) the trace is handed to the sink.
const TRACE_DRAIN: Nanos = 10 * sim::MS;

/// A client's queued CPU-only time is spent at least this often.
pub(super) const CPU_BATCH: Nanos = sim::MS;

/// Slowest operations kept.
pub const SLOWEST: usize = 10;

/// What one operation kind measured.
#[derive(Clone, Debug)]
pub struct OpResult {
    /// dbench / sysbench / fs_mark name.
    pub name: &'static str,
    /// Latency histogram, ns.
    pub hist: Histogram<u64>,
    /// The same latencies' exact min, max, mean, deviation and fio latency ranges.
    pub exact: super::exact::Exact,
    /// Bytes it moved (ReadX, WriteX, writes).
    pub bytes: u64,
    /// Time in each wait class summed over its operations, ns (index = class id).
    pub attribution: Vec<Nanos>,
}

/// One of the slowest operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowOp {
    /// Latency, ns.
    pub latency: Nanos,
    /// Operation name.
    pub op: &'static str,
    /// Client / thread task name.
    pub task: String,
    /// Start time.
    pub at: Nanos,
    /// Time per wait class (name, ns), largest first.
    pub attribution: Vec<(String, Nanos)>,
}

/// The outcome of one workload run.
#[derive(Clone, Debug)]
pub struct WorkloadResult {
    /// Workload name.
    pub workload: String,
    /// Kind.
    pub kind: Kind,
    /// Clients or threads.
    pub clients: u32,
    /// dbench -s.
    pub sync_open: bool,
    /// Policy.
    pub policy: Policy,
    /// Device name.
    pub device: String,
    /// Seed.
    pub seed: u64,
    /// Measured window, ns.
    pub measured: Nanos,
    /// Virtual time the measured window starts at.
    pub measured_from: Nanos,
    /// Per operation kind, in report order.
    pub ops: Vec<OpResult>,
    /// Wait-class names (index = class id).
    pub classes: Vec<String>,
    /// The slowest operations, slowest first.
    pub slowest: Vec<SlowOp>,
    /// fs_mark: files completed in the window; kbuild: units compiled.
    pub files_done: u64,
    /// kbuild: compilation units per build.
    pub units: u32,
    /// kbuild: `iostat -x` of the device over the window.
    pub iostat: Option<crate::block::iostat::Iostat>,
    /// btrfs counters over the whole run (warmup included).
    pub metrics: Metrics,
    /// Invariant violations (S1, S3).
    pub violations: Vec<Violation>,
    /// Hash of the run's event sequence.
    pub trace_hash: u64,
    /// Task resumptions.
    pub events: u64,
    /// Engine resources (locks, semaphores, wait queues) made over the run: bounded by the
    /// objects alive at once, not by the run's length.
    pub resources: usize,
    /// The cores' occupancy over the window; None with unlimited CPU.
    pub cpu: Option<sim::CpuUsage>,
}

impl WorkloadResult {
    /// The run's first invariant violation as one line naming `what` ran, its policy and
    /// seed (`dbench under linux-5.11, seed 1: S1 at 0.123456 s: … (n in the run)`), if any.
    pub fn violation_line(&self, what: &str) -> Option<String> {
        let v = self.violations.first()?;
        Some(format!(
            "{what} under {}, seed {}: {} at {:.6} s: {} ({} in the run)",
            self.policy.name,
            self.seed,
            v.invariant,
            v.at as f64 / 1e9,
            v.message,
            self.violations.len()
        ))
    }

    /// An operation's results by name.
    pub fn op(&self, name: &str) -> Option<&OpResult> {
        self.ops.iter().find(|o| o.name == name)
    }

    /// Throughput as dbench prints it: ReadX + WriteX bytes / window, in 10^6 B/s.
    pub fn mb_per_s(&self) -> f64 {
        let bytes: u64 = self.ops.iter().map(|o| o.bytes).sum();
        bytes as f64 / 1e6 / (self.measured as f64 / 1e9)
    }

    /// Requests per second as sysbench 0.4 prints it (writes; fsyncs are not requests), or
    /// files per second for fs_mark, or operations per second for dbench.
    pub fn per_s(&self) -> f64 {
        let secs = self.measured as f64 / 1e9;
        match self.kind {
            Kind::SysbenchFileio => self.op("write").map_or(0, |o| o.hist.len()) as f64 / secs,
            Kind::FsMark | Kind::Kbuild | Kind::ReadLatency => self.files_done as f64 / secs,
            Kind::Fio => self.ops.iter().map(|o| o.hist.len()).sum::<u64>() as f64 / secs,
            Kind::Dbench => self.ops.iter().map(|o| o.hist.len()).sum::<u64>() as f64 / secs,
        }
    }

    /// The fio fields fsperf records for a job (fsperf's FioResultDecoder reads them from
    /// fio's JSON as write_*; lat = clat here, a psync submission has no separate slat), as
    /// (name, value); fio's filecreate engine reports its creates as writes.
    pub fn fio_fields(&self) -> Vec<(&'static str, f64)> {
        let Some(o) = self.ops.iter().find(|o| !o.hist.is_empty()) else {
            return vec![("write_iops", 0.0)];
        };
        let secs = self.measured as f64 / 1e9;
        let h = &o.hist;
        vec![
            ("write_io_kbytes", (o.bytes / 1024) as f64),
            ("write_bw_bytes", o.bytes as f64 / secs),
            ("write_iops", h.len() as f64 / secs),
            ("write_clat_ns_p50", h.value_at_quantile(0.50) as f64),
            ("write_clat_ns_p99", h.value_at_quantile(0.99) as f64),
            ("write_lat_ns_min", h.min() as f64),
            ("write_lat_ns_max", h.max() as f64),
            ("elapsed", secs.round()),
        ]
    }

    /// One fio field by name (`fio_fields`).
    pub fn fio_field(&self, name: &str) -> Option<f64> {
        self.fio_fields()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// Largest latency of any operation, ns.
    pub fn max_latency(&self) -> Nanos {
        self.ops.iter().map(|o| o.hist.max()).max().unwrap_or(0)
    }
}

/// Measurement shared by the clients.
struct Recorder {
    from: Nanos,
    to: Nanos,
    /// Wait-class id of CPU time.
    cpu_class: usize,
    /// Wait-class id of waiting for a core (the run queue).
    cpu_wait_class: usize,
    ops: Vec<OpResult>,
    /// Per operation kind: the latest latency and how many times in a row it was recorded,
    /// not yet in the histogram (CPU-only operations repeat their cost; `flush_runs`).
    runs: Vec<(Nanos, u64)>,
    slowest: Vec<SlowOp>,
    files_done: u64,
    tracing: bool,
    slices: Vec<OpSlice>,
}

impl Recorder {
    /// Adds one latency of operation `op` to its histogram, batching equal consecutive values.
    #[inline]
    fn add_latency(&mut self, op: usize, v: Nanos) {
        let run = &mut self.runs[op];
        if run.0 == v {
            run.1 += 1;
            return;
        }
        if run.1 > 0 {
            self.ops[op].hist.saturating_record_n(run.0, run.1);
            self.ops[op].exact.record_n(run.0, run.1);
        }
        *run = (v, 1);
    }

    /// Puts every batched latency into its histogram.
    fn flush_runs(&mut self) {
        for (op, run) in self.runs.iter_mut().enumerate() {
            if run.1 > 0 {
                self.ops[op].hist.saturating_record_n(run.0, run.1);
                self.ops[op].exact.record_n(run.0, run.1);
            }
            *run = (0, 0);
        }
    }

    /// Records an operation that is pure CPU time `cost` starting at `start`, of which
    /// `wait` was spent waiting for a core (no engine event of its own: a client's
    /// consecutive CPU-only operations run as one burst, see `PendingCpu`).
    fn record_cpu(
        &mut self,
        task: TaskId,
        op: usize,
        start: Nanos,
        cost: Nanos,
        wait: Nanos,
        bytes: u64,
    ) {
        let end = start + cost + wait;
        if self.tracing {
            self.slices.push((task, op, start, end));
        }
        if start < self.from || end > self.to {
            return;
        }
        self.add_latency(op, (cost + wait).max(1));
        let o = &mut self.ops[op];
        o.bytes += bytes;
        let need = self.cpu_class.max(self.cpu_wait_class) + 1;
        if o.attribution.len() < need {
            o.attribution.resize(need, 0);
        }
        o.attribution[self.cpu_class] += cost;
        o.attribution[self.cpu_wait_class] += wait;
    }

    fn record(
        &mut self,
        h: &Handle,
        op: usize,
        start: Nanos,
        bytes: u64,
        before: &[Nanos],
        after: &[Nanos],
    ) {
        let end = h.now();
        if self.tracing {
            self.slices.push((h.current(), op, start, end));
        }
        if start < self.from || end > self.to {
            return;
        }
        let lat = end - start;
        self.add_latency(op, lat.max(1));
        let o = &mut self.ops[op];
        o.bytes += bytes;
        if o.attribution.len() < after.len() {
            o.attribution.resize(after.len(), 0);
        }
        // Classes both snapshots have, then classes registered during the operation (equal
        // slices, so the loops vectorize).
        let n = before.len().min(after.len());
        let (attr, after_new) = (&mut o.attribution[..after.len()], &after[n..]);
        let (attr_old, attr_new) = attr.split_at_mut(n);
        for ((t, a), b) in attr_old.iter_mut().zip(&after[..n]).zip(&before[..n]) {
            *t += a - b;
        }
        for (t, a) in attr_new.iter_mut().zip(after_new) {
            *t += a;
        }
        let slow_enough =
            self.slowest.len() < SLOWEST || self.slowest.last().is_some_and(|s| lat > s.latency);
        if slow_enough {
            let mut attribution: Vec<(String, Nanos)> = after
                .iter()
                .enumerate()
                .map(|(i, a)| (i, a - before.get(i).copied().unwrap_or(0)))
                .filter(|&(_, d)| d > 0)
                .map(|(i, d)| (h.class_name(i as sim::ClassId), d))
                .collect();
            attribution.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let s = SlowOp {
                latency: lat,
                op: o.name,
                task: h.task_name(h.current()).to_string(),
                at: start,
                attribution,
            };
            let pos = self
                .slowest
                .iter()
                .position(|x| x.latency < lat)
                .unwrap_or(self.slowest.len());
            self.slowest.insert(pos, s);
            self.slowest.truncate(SLOWEST);
        }
    }
}

/// The round-robin time slice of `cores` CPUs: CFS's minimum granularity, 0.75 ms scaled by
/// 1 + ilog2(min(cores, 8)) (kernel/sched/fair.c@v5.10: sysctl_sched_min_granularity,
/// SCHED_TUNABLESCALING_LOG) — 3 ms on 8 or more cores.
pub fn sched_slice(cores: u64) -> Nanos {
    750 * sim::US * (1 + u64::from(cores.clamp(1, 8).ilog2()))
}

/// A client's CPU-only operations not yet spent: (op, cost, bytes) and their total.
#[derive(Default)]
pub(super) struct PendingCpu {
    pub(super) total: Nanos,
    ops: Vec<(usize, Nanos, u64)>,
}

/// What every client shares.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) h: Handle,
    fs: Mounted,
    rec: Rc<RefCell<Recorder>>,
    pub(crate) spec: Rc<Spec>,
    errors: Rc<RefCell<Vec<String>>>,
}

impl Ctx {
    /// Counts one finished unit of work (fs_mark file, kbuild unit) when inside the window.
    pub(crate) fn unit_done(&self) {
        let mut rec = self.rec.borrow_mut();
        if self.h.now() >= rec.from {
            rec.files_done += 1;
        }
    }

    /// Runs `f` as one measured operation `op` moving `bytes`.
    pub(crate) async fn measure<F: std::future::Future<Output = Result<(), String>>>(
        &self,
        op: usize,
        bytes: u64,
        before: &mut Vec<Nanos>,
        f: F,
    ) -> bool {
        let me = self.h.current();
        let start = self.h.now();
        self.h.account_into(me, before);
        if let Err(e) = f.await {
            let name = self.spec.kind.ops()[op];
            self.errors
                .borrow_mut()
                .push(format!("{} {name}: {e}", self.h.task_name(me)));
            return false;
        }
        // The waits since `before`, read in place (the engine is not changed meanwhile).
        self.h.with_account(me, |after| {
            self.rec
                .borrow_mut()
                .record(&self.h, op, start, bytes, before, after)
        });
        true
    }

    /// Runs filesystem operation `fs_op` as one measured operation `op` moving `bytes` (as
    /// `measure(.., self.fs(fs_op))`, without moving a filesystem future into it).
    pub(super) async fn measure_op(
        &self,
        op: usize,
        bytes: u64,
        before: &mut Vec<Nanos>,
        fs_op: &Op,
    ) -> bool {
        self.measure_op_after(op, bytes, before, 0, fs_op).await
    }

    /// `measure_op`, the measured operation first spending `pre` of CPU: the work the
    /// benchmark's call makes around the filesystem operation (its lookups, walks, stats).
    pub(super) async fn measure_op_after(
        &self,
        op: usize,
        bytes: u64,
        before: &mut Vec<Nanos>,
        pre: Nanos,
        fs_op: &Op,
    ) -> bool {
        self.measure_ops_after(op, bytes, before, pre, &[fs_op])
            .await
    }

    /// `measure_op_after` for a call that makes several filesystem operations, in order
    /// (a directory read, then a create); the first that fails ends it.
    pub(super) async fn measure_ops_after(
        &self,
        op: usize,
        bytes: u64,
        before: &mut Vec<Nanos>,
        pre: Nanos,
        fs_ops: &[&Op],
    ) -> bool {
        let me = self.h.current();
        let start = self.h.now();
        self.h.account_into(me, before);
        if pre > 0 {
            self.h.cpu(pre).await;
        }
        for fs_op in fs_ops {
            // Dispatched here rather than through `Mounted::run_op`: one future layer less
            // on every resumption of the operation.
            let done = crate::mount::dispatch!(&self.fs, fs => fs.run_op(fs_op).await);
            if let Err(e) = done {
                let name = self.spec.kind.ops()[op];
                self.errors
                    .borrow_mut()
                    .push(format!("{} {name}: {}", self.h.task_name(me), e.0));
                return false;
            }
        }
        // The waits since `before`, read in place (the engine is not changed meanwhile).
        self.h.with_account(me, |after| {
            self.rec
                .borrow_mut()
                .record(&self.h, op, start, bytes, before, after)
        });
        true
    }

    /// Queues a CPU-only operation: its time is spent, and it is recorded, at the next
    /// `flush_cpu`.
    pub(super) fn cpu_op(&self, pending: &mut PendingCpu, op: usize, cost: Nanos, bytes: u64) {
        pending.total += cost;
        pending.ops.push((op, cost, bytes));
    }

    /// Spends the queued CPU time as one burst (one core, round-robin slices) and records
    /// each queued operation: its own CPU time, plus a share of the burst's run-queue wait
    /// in proportion to its length — the chance a preemption lands in it. Returns true (for
    /// chaining before a measured operation).
    pub(super) async fn flush_cpu(&self, pending: &mut PendingCpu) -> bool {
        if pending.total == 0 {
            pending.ops.clear();
            return true;
        }
        let total = std::mem::take(&mut pending.total);
        let start = self.h.now();
        self.h.cpu(total).await;
        let wait = (self.h.now() - start).saturating_sub(total);
        let me = self.h.current();
        let mut rec = self.rec.borrow_mut();
        let mut at = start;
        for (op, cost, bytes) in pending.ops.drain(..) {
            // wait × cost / total, in u64 when the product fits (the same quotient), else u128.
            let share = match wait.checked_mul(cost) {
                Some(p) => p / total,
                None => (u128::from(wait) * u128::from(cost) / u128::from(total)) as Nanos,
            };
            rec.record_cpu(me, op, at, cost, share, bytes);
            at += cost + share;
        }
        true
    }

    /// Runs one filesystem operation.
    pub(crate) async fn fs(&self, op: Op) -> Result<(), String> {
        self.fs.run_op(&op).await.map_err(|e| e.0)
    }

    /// Spends the workload file's CPU time of `op`.
    pub(crate) async fn cpu(&self, op: &str) -> Result<(), String> {
        self.h.cpu(self.spec.cpu_of(op)).await;
        Ok(())
    }
}

/// The report index of operation `name` of `kind`.
pub(crate) fn op_index(kind: Kind, name: &str) -> usize {
    kind.ops()
        .iter()
        .position(|o| *o == name)
        .expect("known op")
}

/// sysbench fileio rndwr: random writes of `block_size` to random files; after every
/// `fsync_freq` writes (a global count, as sb_fileio.c keeps it), every file is fsynced once,
/// the fsyncs shared among the threads.
async fn sysbench_thread(cx: Ctx, shared: Rc<SysbenchShared>, mut rng: Stream) {
    let (w, f) = (
        op_index(Kind::SysbenchFileio, "write"),
        op_index(Kind::SysbenchFileio, "fsync"),
    );
    let mut before = Vec::new();
    let files = cx.spec.files;
    let paths = shared.paths.get_or_init(|| {
        (0..files)
            .map(|j| format!("/sb/test_file.{j}").into())
            .collect()
    });
    loop {
        let next = shared.fsync_next.get();
        let ok = if next < shared.fsync_end.get() {
            shared.fsync_next.set(next + 1);
            let p = paths[(next % u64::from(files)) as usize].clone();
            cx.measure_op(f, 0, &mut before, &Op::Fsync(p)).await
        } else {
            let j = rng.random_range(0..files);
            let p = paths[j as usize].clone();
            let bs = cx.spec.block_size;
            let ok = cx.measure_op(w, bs, &mut before, &Op::Write(p, bs)).await;
            let n = shared.writes.get() + 1;
            shared.writes.set(n);
            if cx.spec.fsync_freq > 0 && n % cx.spec.fsync_freq == 0 {
                let end = shared.fsync_end.get();
                shared.fsync_end.set(end + u64::from(files));
            }
            ok
        };
        if !ok {
            return;
        }
    }
}

/// sysbench's global counters.
#[derive(Default)]
struct SysbenchShared {
    writes: Cell<u64>,
    /// fsync requests handed out so far, and queued so far.
    fsync_next: Cell<u64>,
    fsync_end: Cell<u64>,
    /// The files' paths (made by the first thread).
    paths: std::cell::OnceCell<Vec<OpPath>>,
}

/// fs_mark: per file create, write in `block_size` pieces, fsync, close; after
/// `files_per_loop` files, unlink them and start over.
async fn fsmark_thread(cx: Ctx, id: u32) {
    let k = Kind::FsMark;
    let (c, w, f, cl, u) = (
        op_index(k, "create"),
        op_index(k, "write"),
        op_index(k, "fsync"),
        op_index(k, "close"),
        op_index(k, "unlink"),
    );
    let mut before = Vec::new();
    let dir = format!("/fsm/t{id}");
    for lp in 0u64.. {
        for n in 0..cx.spec.files_per_loop {
            let p: OpPath = format!("{dir}/f{lp}.{n}").into();
            let mut ok = cx
                .measure_op(c, 0, &mut before, &Op::Create(p.clone()))
                .await;
            let mut left = cx.spec.file_size;
            while ok && left > 0 {
                let n = left.min(cx.spec.block_size);
                left -= n;
                ok = cx
                    .measure_op(w, n, &mut before, &Op::Write(p.clone(), n))
                    .await;
            }
            ok = ok
                && cx
                    .measure_op(f, 0, &mut before, &Op::Fsync(p.clone()))
                    .await
                && cx.measure(cl, 0, &mut before, cx.cpu("close")).await;
            if !ok {
                return;
            }
            let mut rec = cx.rec.borrow_mut();
            if cx.h.now() >= rec.from {
                rec.files_done += 1;
            }
        }
        for n in 0..cx.spec.files_per_loop {
            let p = format!("{dir}/f{lp}.{n}").into();
            if !cx.measure_op(u, 0, &mut before, &Op::Unlink(p)).await {
                return;
            }
        }
    }
}

/// A fio buffered sequential reader (rw=read, time_based) of its own laid-out file.
async fn reader_thread(cx: Ctx, id: u32) {
    let op = op_index(Kind::FsMark, "read");
    let mut before = Vec::new();
    let p: OpPath = format!("/fio/read{id}").into();
    let n = cx.spec.reader_block;
    loop {
        if !cx
            .measure_op(op, n, &mut before, &Op::Read(p.clone(), n))
            .await
        {
            return;
        }
    }
}

/// A fio job as fsperf runs it: `rw=randwrite` writes `block_size` at uniformly random
/// block offsets (norandommap: with replacement) of its `files` files, switching file
/// after every I/O (fio's default file_service_type=roundrobin), O_DIRECT or buffered
/// (each write a dirty range at its offset, an ordered extent of its own at writeback);
/// `ioengine=filecreate` creates its `files` files
/// (open O_CREAT + close, no data) and stops.
async fn fio_job(cx: Ctx, id: u32, mut rng: Stream) {
    let k = Kind::Fio;
    let (w, c) = (op_index(k, "write"), op_index(k, "create"));
    let mut before = Vec::new();
    let files = u64::from(cx.spec.files);
    let bs = cx.spec.block_size;
    let blocks = (cx.spec.file_size / bs).max(1);
    // The random writer's files, named once.
    let paths: Vec<OpPath> = if cx.spec.rw == super::spec::FioRw::RandWrite {
        (0..files)
            .map(|k| format!("/fio/j{id}.{k}").into())
            .collect()
    } else {
        Vec::new()
    };
    for n in 0u64.. {
        let ok = match cx.spec.rw {
            super::spec::FioRw::FileCreate => {
                if n >= files {
                    return;
                }
                let p = format!("/fio/j{id}.{n}").into();
                // fio's filecreate engine accounts `filesize` per file made (the seed's
                // write_io_kbytes: 31,250 files × 4 KiB = 125,000).
                let bytes = cx.spec.file_size;
                cx.measure_op(c, bytes, &mut before, &Op::Create(p)).await
            }
            super::spec::FioRw::RandWrite => {
                let p = paths[(n % files) as usize].clone();
                let at = rng.random_range(0..blocks) * bs;
                let op = if cx.spec.direct {
                    Op::DirectWrite(p, at, bs)
                } else {
                    Op::WriteRangeAt(p, at, bs)
                };
                cx.measure_op(w, bs, &mut before, &op).await
            }
        };
        if !ok {
            return;
        }
    }
}

/// The setup each kind needs before the clients start (not measured).
fn setup_ops(spec: &Spec) -> Vec<Op> {
    let mut ops = Vec::new();
    match spec.kind {
        Kind::Dbench => {
            ops.push(Op::Mkdir("/clients".into()));
            for c in 0..spec.clients {
                let base = format!("/clients/client{c}");
                ops.push(Op::Mkdir(base.as_str().into()));
                ops.push(Op::Mkdir(format!("{base}/~dmtmp").into()));
                for d in DBENCH_DIRS {
                    ops.push(Op::Mkdir(format!("{base}/~dmtmp/{d}").into()));
                }
                for f in (0..DBENCH_DIRS.len() * DBENCH_FILES).step_by(2) {
                    let p: OpPath = format!(
                        "{base}/~dmtmp/{}/F{:02}",
                        DBENCH_DIRS[f / DBENCH_FILES],
                        f % DBENCH_FILES
                    )
                    .into();
                    ops.push(Op::Create(p.clone()));
                    ops.push(Op::Write(p, 64 << 10));
                }
            }
        }
        Kind::SysbenchFileio => {
            ops.push(Op::Mkdir("/sb".into()));
            for j in 0..spec.files {
                // sysbench opens test_file.N with O_CREAT: the seed's fallocated testfile.N
                // are other names, so the files start empty (sparse).
                ops.push(Op::Create(format!("/sb/test_file.{j}").into()));
            }
        }
        Kind::Fio => {
            ops.push(Op::Mkdir("/fio".into()));
            if spec.rw == super::spec::FioRw::RandWrite {
                for j in 0..spec.clients {
                    for k in 0..spec.files {
                        let p: OpPath = format!("/fio/j{j}.{k}").into();
                        ops.push(Op::Create(p.clone()));
                        // fio lays out a job's files before it starts: fallocate (its
                        // default, --fallocate=native) for direct I/O; fsperf's buffered
                        // randwrite2xram says --fallocate=none: ftruncate to the size
                        // (sparse files).
                        if !spec.direct {
                            ops.push(Op::Truncate(p.clone(), spec.file_size));
                        }
                        if spec.direct {
                            ops.push(Op::Fallocate {
                                path: p,
                                offset: 0,
                                len: spec.file_size,
                                keep_size: false,
                            });
                        }
                    }
                }
            }
        }
        // kbuild's cache is laid out by `kbuild::setup_ops` (it needs the drawn units).
        Kind::Kbuild => {}
        Kind::ReadLatency => ops.extend(super::stream::setup_ops(spec)),
        Kind::FsMark => {
            ops.push(Op::Mkdir("/fsm".into()));
            if spec.readers > 0 {
                ops.push(Op::Mkdir("/fio".into()));
                for r in 0..spec.readers {
                    ops.push(Op::Populate(
                        format!("/fio/read{r}").into(),
                        spec.reader_file_size,
                    ));
                }
            }
            for t in 0..spec.clients {
                ops.push(Op::Mkdir(format!("/fsm/t{t}").into()));
            }
        }
    }
    ops.push(Op::Commit);
    ops
}

/// Told the virtual time done (warmup included) once per virtual second.
pub type Progress = Box<dyn Fn(Nanos)>;

/// Runs `spec` under `policy` on `device` with `seed`; `sink` receives the trace.
pub fn run(
    spec: &Spec,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    sink: Option<TraceSink>,
) -> Result<WorkloadResult, String> {
    run_with_progress(spec, policy, device, seed, sink, None)
}

/// As `run`, reporting progress (for a progress bar; it does not change the run).
pub fn run_with_progress(
    spec: &Spec,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    sink: Option<TraceSink>,
    progress: Option<Progress>,
) -> Result<WorkloadResult, String> {
    let tracing = sink.is_some();
    let mut streams = RngStreams::new(seed);
    let mut run = Run::start(spec, policy, device, &mut streams, tracing);
    run.spawn_setup(spec, &mut streams, progress);
    let sink_error: Rc<RefCell<Option<String>>> = Default::default();
    let sink = Rc::new(RefCell::new(sink));
    if tracing {
        spawn_trace_drain(&mut run.sim, &run.h, &run.rec, &sink, &sink_error);
    }
    let outcome = run.sim.run();
    if let Some(s) = sink.borrow_mut().as_mut() {
        let mut buf = Vec::new();
        run.h.drain_trace(&mut buf);
        let slices = std::mem::take(&mut run.rec.borrow_mut().slices);
        s(&run.h, &buf, &slices).map_err(|e| format!("--trace: {e}"))?;
    }
    if let Some(e) = sink_error.borrow().clone() {
        return Err(format!("--trace: {e}"));
    }
    if let Some(e) = run.errors.borrow().first() {
        return Err(format!("{}: {e}", spec.origin));
    }
    Ok(run.result(spec, policy, device, seed, outcome))
}

/// The device counters at the start of kbuild's measured window: (when, counters).
type WindowDev = Rc<RefCell<Option<(Nanos, crate::block::iostat::Snapshot)>>>;

/// One workload run's simulation and what its tasks share with it.
struct Run {
    sim: Sim,
    h: Handle,
    fs: Mounted,
    /// The device, for its counters.
    probe: Device,
    /// kbuild: the device counters at the start of the measured window (for `iostat`).
    window_dev: WindowDev,
    /// When the setup finished (the warmup starts).
    started: Rc<Cell<Option<Nanos>>>,
    rec: Rc<RefCell<Recorder>>,
    errors: Rc<RefCell<Vec<String>>>,
}

impl Run {
    /// The simulation with its device and the filesystem mounted on it, no task spawned.
    fn start(
        spec: &Spec,
        policy: &Policy,
        device: &DiskConfig,
        streams: &mut RngStreams,
        tracing: bool,
    ) -> Run {
        let mut sim = Sim::new();
        // No scheduler decides at named points here: they are trace marks, not yields.
        sim.set_points_yield(false);
        sim.keep_trace(tracing);
        let h = sim.handle();
        let dev = crate::block::add_disk(&mut sim, device.clone(), streams, false);
        dev.set_histograms(false);
        let probe = dev.clone();
        let mut costs = match spec.fs_size {
            None if spec.fill == 0.0 => Costs::default(),
            size => {
                let d = Costs::default();
                let size = size.unwrap_or(d.fs_size);
                d.for_device(size, spec.fill)
            }
        };
        for (k, &v) in &spec.costs {
            let set = costs.set(k, v);
            sim::check!(set, "Spec checked its [costs] keys");
        }
        // Blocking costs CPU whatever the filesystem (a task woken from a lock, wait queue
        // or I/O completion switches out and back in; its waker pays the wake-up).
        h.set_switch_cost(costs.context_switch, costs.wakeup);
        let fs = Mounted::mount(&h, dev, &spec.mount, policy.clone(), costs);
        fs.set_latency(false);
        fs.set_history(false);
        if let Some(cores) = spec.cpus {
            h.set_cpus(cores, sched_slice(cores));
        }
        fs.spawn_committer(&h, spec.commit_interval);
        let rec = Rc::new(RefCell::new(Recorder::new(&h, spec, tracing)));
        Run {
            sim,
            h,
            fs,
            probe,
            window_dev: Default::default(),
            started: Rc::new(Cell::new(None)),
            rec,
            errors: Default::default(),
        }
    }

    /// Spawns the setup task, which starts the clients (each with its own stream).
    fn spawn_setup(&mut self, spec: &Spec, streams: &mut RngStreams, progress: Option<Progress>) {
        let cx = Ctx {
            h: self.h.clone(),
            fs: self.fs.clone(),
            rec: self.rec.clone(),
            spec: Rc::new(spec.clone()),
            errors: self.errors.clone(),
        };
        let client_rngs: Vec<Stream> = (0..spec.clients)
            .map(|i| streams.stream(&format!("workload.client{i}")))
            .collect();
        let build =
            (spec.kind == Kind::Kbuild).then(|| Rc::new(super::kbuild::Build::new(spec, streams)));
        let mut ops = setup_ops(spec);
        if let Some(b) = &build {
            ops.splice(0..0, super::kbuild::setup_ops(spec, b));
        }
        let setup = Setup {
            cx,
            started: self.started.clone(),
            ops,
            client_rngs,
            build,
            window_dev: self.window_dev.clone(),
            probe: self.probe.clone(),
            progress,
        };
        self.sim.spawn("setup", setup.run());
    }

    /// The result of the finished run.
    fn result(
        self,
        spec: &Spec,
        policy: &Policy,
        device: &DiskConfig,
        seed: u64,
        outcome: Result<sim::RunSummary, SimError>,
    ) -> WorkloadResult {
        let Run { sim, h, fs, .. } = &self;
        fs.finish();
        let mut violations = fs.violations();
        let summary = summary_or_s3(outcome, h, &mut violations);
        let from = self.started.get().unwrap_or(0) + spec.warmup;
        let measured = h.now().saturating_sub(from).max(1);
        let iostat = self.window_dev.borrow().as_ref().map(|(at, a)| {
            let units = device.parallelism;
            let now = crate::block::iostat::Snapshot::of(&self.probe);
            crate::block::iostat::Iostat::between(a, &now, h.now() - at, units)
        });
        let mut rec = self.rec.borrow_mut();
        rec.flush_runs();
        let ops = std::mem::take(&mut rec.ops);
        let slowest = std::mem::take(&mut rec.slowest);
        let stats = sim.resource_stats();
        WorkloadResult {
            workload: spec.name.clone(),
            kind: spec.kind,
            clients: spec.clients,
            sync_open: spec.sync_open,
            policy: policy.clone(),
            device: device.name.clone(),
            seed,
            measured,
            measured_from: from,
            ops,
            classes: sim.class_names(),
            slowest,
            files_done: rec.files_done,
            iostat,
            units: spec.units,
            resources: stats.len(),
            cpu: h.cpu_usage(),
            metrics: {
                let mut m = fs.metrics();
                m.fill_waits(&stats);
                m
            },
            violations,
            trace_hash: summary.trace_hash,
            events: summary.dispatches,
        }
    }
}

impl Recorder {
    /// A recorder for `spec`'s operations, its window not yet open.
    fn new(h: &Handle, spec: &Spec, tracing: bool) -> Self {
        let ops = spec
            .kind
            .ops()
            .iter()
            .map(|&name| OpResult {
                name,
                hist: new_histogram(),
                exact: Default::default(),
                bytes: 0,
                attribution: Vec::new(),
            })
            .collect();
        Recorder {
            from: Nanos::MAX,
            to: Nanos::MAX,
            cpu_class: 0,
            cpu_wait_class: h.class_static("cpu_wait") as usize,
            runs: vec![(0, 0); spec.kind.ops().len()],
            ops,
            slowest: Vec::new(),
            files_done: 0,
            tracing,
            slices: Vec::new(),
        }
    }
}

/// The setup task: runs the setup operations, opens the measured window, then starts the
/// clients, the readers and the daemons.
struct Setup {
    cx: Ctx,
    started: Rc<Cell<Option<Nanos>>>,
    ops: Vec<Op>,
    client_rngs: Vec<Stream>,
    build: Option<Rc<super::kbuild::Build>>,
    window_dev: WindowDev,
    probe: Device,
    progress: Option<Progress>,
}

impl Setup {
    async fn run(self) {
        let cx = self.cx;
        for op in &self.ops {
            if let Err(e) = cx.fs.run_op(op).await {
                cx.errors
                    .borrow_mut()
                    .push(format!("setup: {}: {}", op.kind(), e.0));
                cx.h.stop();
                return;
            }
        }
        // Measurement starts after the warmup; the run ends after the duration.
        let t0 = cx.h.now();
        self.started.set(Some(t0));
        {
            let mut r = cx.rec.borrow_mut();
            r.from = t0 + cx.spec.warmup;
            r.to = r.from + cx.spec.duration;
            cx.h.count_cpu_from(r.from);
        }
        spawn_clients(&cx, self.client_rngs, &self.build);
        if cx.spec.kind == Kind::Kbuild {
            let (h, probe, warmup) = (cx.h.clone(), self.probe.clone(), cx.spec.warmup);
            let window_dev = self.window_dev;
            cx.h.spawn_helper("iostat", async move {
                h.sleep(warmup).await;
                *window_dev.borrow_mut() =
                    Some((h.now(), crate::block::iostat::Snapshot::of(&probe)));
            });
        }
        for r in 0..cx.spec.readers {
            let c = cx.clone();
            if cx.spec.kind == Kind::ReadLatency {
                cx.h.spawn(&format!("reader{r}"), super::stream::reader(c, r));
            } else {
                cx.h.spawn(&format!("fio{r}"), reader_thread(c, r));
            }
        }
        // Always there, so that a run with a progress bar is the same run as one without.
        let h = cx.h.clone();
        let progress = self.progress;
        cx.h.spawn_helper("progress", async move {
            loop {
                h.sleep(sim::S).await;
                if let Some(tick) = &progress {
                    tick(h.now() - t0);
                }
            }
        });
        let h = cx.h.clone();
        let end = cx.spec.warmup + cx.spec.duration;
        // Clients may have queued CPU-only operations up to the end; let them finish.
        cx.h.spawn_helper("stopper", async move {
            h.sleep(end).await;
            h.stop();
        });
    }
}

/// Spawns the workload's clients (threads, jobs), each with its own stream.
fn spawn_clients(cx: &Ctx, client_rngs: Vec<Stream>, build: &Option<Rc<super::kbuild::Build>>) {
    let shared = Rc::new(SysbenchShared::default());
    for (i, rng) in client_rngs.into_iter().enumerate() {
        let i = i as u32;
        let c = cx.clone();
        match c.spec.kind {
            Kind::Dbench => cx.h.spawn(
                &format!("client{i}"),
                super::dbench::dbench_client(c, i, rng),
            ),
            Kind::SysbenchFileio => cx.h.spawn(
                &format!("thread{i}"),
                sysbench_thread(c, shared.clone(), rng),
            ),
            Kind::FsMark => cx.h.spawn(&format!("thread{i}"), fsmark_thread(c, i)),
            Kind::Fio => cx.h.spawn(&format!("job{i}"), fio_job(c, i, rng)),
            Kind::Kbuild => {
                let b = build.clone().expect("drawn for kbuild");
                cx.h.spawn(&format!("make{i}"), super::kbuild::job(c, i, b))
            }
            Kind::ReadLatency => cx.h.spawn(&format!("dd{i}"), super::stream::writer(c, i)),
        };
    }
}

/// Hands the trace to the sink every `TRACE_DRAIN`; a sink error stops the run.
fn spawn_trace_drain(
    sim: &mut Sim,
    h: &Handle,
    rec: &Rc<RefCell<Recorder>>,
    sink: &Rc<RefCell<Option<TraceSink>>>,
    sink_error: &Rc<RefCell<Option<String>>>,
) {
    let (h2, rec2, sink2, err2) = (h.clone(), rec.clone(), sink.clone(), sink_error.clone());
    sim.spawn_helper("trace-drain", async move {
        let mut buf = Vec::new();
        loop {
            h2.sleep(TRACE_DRAIN).await;
            h2.drain_trace(&mut buf);
            let slices = std::mem::take(&mut rec2.borrow_mut().slices);
            if let Some(s) = sink2.borrow_mut().as_mut() {
                if let Err(e) = s(&h2, &buf, &slices) {
                    *err2.borrow_mut() = Some(e.to_string());
                    h2.stop();
                    return;
                }
            }
            buf.clear();
        }
    });
}

/// The run's summary; a run the engine could not finish is violation S3 (and a summary of
/// the time reached).
fn summary_or_s3(
    outcome: Result<sim::RunSummary, SimError>,
    h: &Handle,
    violations: &mut Vec<Violation>,
) -> sim::RunSummary {
    match outcome {
        Ok(s) => s,
        Err(e) => {
            violations.push(Violation {
                invariant: "S3".into(),
                at: h.now(),
                message: e.to_string(),
                timeline: Vec::new(),
            });
            sim::RunSummary {
                end: h.now(),
                dispatches: 0,
                trace_hash: 0,
                stopped: false,
            }
        }
    }
}
