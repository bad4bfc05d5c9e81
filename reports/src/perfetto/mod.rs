//! Perfetto traces (protobuf `TracePacket`s, `proto.rs`) of simulated runs, streamed to disk:
//! one process per run; one thread track per simulated task (helpers of the harness left
//! out) with its lock waits, parks, I/O and named waits as slices, and a child track
//! "operations" with a workload task's operations; counter tracks of the tasks waiting for a
//! core, a lock or I/O, and one per counter the model logs (`Handle::value`: btrfs's space
//! accounting); at full detail also named points as instants and flows from a task
//! that hands over a lock or unparks another to the wait it ends. Each task has its own
//! writer sequence (interned names, delta timestamps), and the packets are stored deflated in
//! `compressed_packets`, as Perfetto's service writes compressed traces. Slices end at the
//! run's end at the latest. Written to a temporary file and renamed at `finish`.

pub mod filter;
pub mod proto;

pub use filter::TraceFilter;

use proto::*;
use sim::trace::{TraceKind, TraceNames, TraceRecord};
use sim::{Nanos, TaskId};
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::rc::Rc;

/// One writer sequence: its id, last timestamp and interned names.
struct Seq {
    id: u32,
    last: Nanos,
    iids: BTreeMap<Rc<str>, u64>,
}

/// A wait in progress on a task's track.
struct Open {
    since: Nanos,
    name: Rc<str>,
    /// A sleep's planned end (`Nanos::MAX` for waits that end when the task runs).
    until: Nanos,
    /// Flows that end with the wait.
    flows: Vec<u64>,
}

/// The counter tracks of a run: tasks waiting for a core, for a lock or wait queue, for
/// I/O (a wait class with a `:`, such as `nvme:queue`), sampled every `SAMPLE` of virtual
/// time (each written when it changed).
const COUNTERS: [&str; 3] = [
    "tasks waiting for a core",
    "tasks waiting for a lock",
    "tasks waiting for I/O",
];

/// The counters' sampling period.
const SAMPLE: Nanos = 100 * sim::US;

/// The counters' state: each task's current wait (index into `COUNTERS` + 1, 0 none).
#[derive(Default)]
struct Counters {
    seq: Option<Seq>,
    uuids: [u64; 3],
    waiting: Vec<u8>,
    now: [i64; 3],
    written: [i64; 3],
    next: Nanos,
    /// The model's own counter tracks (`Handle::value`), by value id: (uuid, latest value,
    /// value last written).
    values: BTreeMap<sim::ValueId, (u64, u64, Option<u64>)>,
}

/// A finished slice or instant held back until the operation around it is known
/// (`op=` filters only): (start, end, name, instant).
type Held = (Nanos, Nanos, Rc<str>, bool);

/// A visible task's tracks and state.
struct TaskTrack {
    uuid: u64,
    engine: Seq,
    ops: Option<Seq>,
    open: Option<Open>,
    held: Vec<Held>,
}

/// Raw packet bytes compressed per `compressed_packets` packet (each must stay below
/// 512 KB compressed: deflate grows incompressible input by well under 1 %).
const CHUNK: usize = 256 * 1024;

/// Where the bytes go: packets gathered into chunks, each written deflated (zlib) as one
/// `compressed_packets` packet, as Perfetto's own service writes compressed traces.
struct Out {
    file: BufWriter<crate::output::Temp>,
    pending: Vec<u8>,
}

impl Out {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.pending.extend_from_slice(b);
        if self.pending.len() >= CHUNK {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&self.pending)?;
        let packet = TracePacket {
            compressed_packets: Some(z.finish()?),
            ..Default::default()
        };
        self.pending.clear();
        // Trace.packet (field 1).
        let mut framed = vec![0x0a];
        prost::Message::encode_length_delimited(&packet, &mut framed).expect("a Vec grows");
        self.file.write_all(&framed)
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.flush_chunk()?;
        self.file
            .into_inner()
            .map_err(|e| e.into_error())?
            .persist()
    }
}

/// A Perfetto trace file being written.
pub struct PerfettoTrace {
    out: Out,
    filter: TraceFilter,
    names: TraceNames,
    next_seq: u32,
    next_uuid: u64,
    next_flow: u64,
    runs: i32,
    pid: i32,
    process_uuid: u64,
    tasks: Vec<Option<TaskTrack>>,
    /// Task ids already decided (visible or not).
    seen: usize,
    /// Flows started towards a task's current wait: wakee → flow ids.
    wakes: BTreeMap<TaskId, Vec<u64>>,
    matched_task: bool,
    matched_op: bool,
    /// Named points and flows kept.
    full: bool,
    counters: Counters,
    buf: Vec<u8>,
    /// Packet bytes written, before compression.
    pub bytes: u64,
}

impl PerfettoTrace {
    /// Starts writing `path` (via a temporary file next to it), keeping what `filter`
    /// keeps; named points and wake-up flows are kept when `full` and the filter names no
    /// detail. A `path` that exists and is not a regular file
    /// is refused.
    pub fn create(path: &Path, filter: TraceFilter, full: bool) -> std::io::Result<PerfettoTrace> {
        let full_detail = filter.full.unwrap_or(full);
        let out = Out {
            file: BufWriter::new(crate::output::Temp::create(path)?),
            pending: Vec::with_capacity(CHUNK + 4096),
        };
        Ok(PerfettoTrace {
            out,
            filter,
            names: TraceNames::default(),
            next_seq: 1,
            next_uuid: 1,
            next_flow: 1,
            runs: 0,
            pid: 0,
            process_uuid: 0,
            tasks: Vec::new(),
            seen: 0,
            wakes: BTreeMap::new(),
            matched_task: false,
            matched_op: false,
            full: full_detail,
            counters: Counters::default(),
            buf: Vec::new(),
            bytes: 0,
        })
    }

    /// Starts the next run (a process named `title`); the previous one must be ended.
    pub fn begin_run(&mut self, title: &str) -> std::io::Result<()> {
        self.runs += 1;
        // Thread ids are pid + task + 1: unique in the file (below 2^20 tasks a run), never 0.
        self.pid = self.runs.wrapping_shl(20);
        self.names = TraceNames::default();
        self.tasks.clear();
        self.seen = 0;
        self.wakes.clear();
        let uuid = self.uuid();
        let seq = self.sequence(uuid)?;
        self.packet(&TracePacket {
            trusted_packet_sequence_id: Some(seq.id),
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                process: Some(ProcessDescriptor {
                    pid: Some(self.pid),
                    process_name: Some(title.to_string()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        })?;
        self.process_uuid = uuid;
        self.counters = Counters::default();
        for (i, name) in COUNTERS.iter().enumerate() {
            let c = self.uuid();
            self.counters.uuids[i] = c;
            self.packet(&TracePacket {
                trusted_packet_sequence_id: Some(seq.id),
                track_descriptor: Some(TrackDescriptor {
                    uuid: Some(c),
                    parent_uuid: Some(uuid),
                    name: Some(name.to_string()),
                    counter: Some(CounterDescriptor { unit: Some(2) }),
                    ..Default::default()
                }),
                ..Default::default()
            })?;
        }
        self.counters.seq = Some(seq);
        Ok(())
    }

    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid
    }

    /// Writes one packet as field 1 of `Trace`.
    fn packet(&mut self, p: &TracePacket) -> std::io::Result<()> {
        use prost::Message;
        self.buf.clear();
        self.buf.push(0x0a);
        prost::encoding::encode_varint(p.encoded_len() as u64, &mut self.buf);
        p.encode(&mut self.buf).expect("a Vec grows");
        self.bytes += self.buf.len() as u64;
        let buf = std::mem::take(&mut self.buf);
        let r = self.out.write_all(&buf);
        self.buf = buf;
        r
    }

    /// A new sequence whose events default to track `uuid`, its clock at 0 (the run's t=0).
    fn sequence(&mut self, uuid: u64) -> std::io::Result<Seq> {
        let id = self.next_seq;
        self.next_seq += 1;
        let clock = |clock_id, is_incremental| Clock {
            clock_id: Some(clock_id),
            timestamp: Some(0),
            is_incremental,
        };
        self.packet(&TracePacket {
            timestamp: Some(0),
            timestamp_clock_id: Some(BOOTTIME),
            trusted_packet_sequence_id: Some(id),
            sequence_flags: Some(1),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: Some(INCREMENTAL),
                track_event_defaults: Some(TrackEventDefaults {
                    track_uuid: Some(uuid),
                }),
            }),
            clock_snapshot: Some(ClockSnapshot {
                clocks: vec![clock(BOOTTIME, None), clock(INCREMENTAL, Some(true))],
            }),
            ..Default::default()
        })?;
        Ok(Seq {
            id,
            last: 0,
            iids: BTreeMap::new(),
        })
    }

    /// Decides whether task `t` is shown and, if so, writes its thread track.
    fn discover(&mut self, t: TaskId) -> std::io::Result<()> {
        while self.seen <= t as usize && self.seen < self.names.tasks.len() {
            let id = self.seen;
            self.seen += 1;
            let (name, helper) = self.names.tasks[id].clone();
            let shown = !helper && self.filter.keeps_task(&name);
            self.matched_task |= shown;
            if !shown {
                self.tasks.push(None);
                continue;
            }
            let uuid = self.uuid();
            let engine = self.sequence(uuid)?;
            self.packet(&TracePacket {
                trusted_packet_sequence_id: Some(engine.id),
                track_descriptor: Some(TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(self.process_uuid),
                    thread: Some(ThreadDescriptor {
                        pid: Some(self.pid),
                        tid: Some(self.pid.wrapping_add(id as i32 + 1)),
                        thread_name: Some(name.to_string()),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })?;
            self.tasks.push(Some(TaskTrack {
                uuid,
                engine,
                ops: None,
                open: None,
                held: Vec::new(),
            }));
        }
        Ok(())
    }
}

/// One track event on `seq` at `time` (not before the sequence's last one).
fn event(
    seq: &mut Seq,
    time: Nanos,
    kind: i32,
    name: Option<&Rc<str>>,
    flows: (Vec<u64>, Vec<u64>),
) -> TracePacket {
    let time = time.max(seq.last);
    let delta = time - seq.last;
    seq.last = time;
    let mut interned = None;
    let name_iid = name.map(|n| match seq.iids.get(n) {
        Some(&iid) => iid,
        None => {
            let iid = seq.iids.len() as u64 + 1;
            seq.iids.insert(n.clone(), iid);
            interned = Some(InternedData {
                event_names: vec![EventName {
                    iid: Some(iid),
                    name: Some(n.to_string()),
                }],
            });
            iid
        }
    });
    TracePacket {
        timestamp: Some(delta),
        trusted_packet_sequence_id: Some(seq.id),
        interned_data: interned,
        track_event: Some(TrackEvent {
            r#type: Some(kind),
            name_iid,
            flow_ids: flows.0,
            terminating_flow_ids: flows.1,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether resource `name` is the cores' semaphore (`Handle::set_cpus`: the run queue).
fn is_cores(name: &str) -> bool {
    name == "cpu"
}

impl PerfettoTrace {
    /// Brings the run's names up to date (`Handle::update_names`, or a run's `TraceNames`)
    /// before records that use them are pushed.
    pub fn update_names(&mut self, f: impl FnOnce(&mut TraceNames)) {
        f(&mut self.names);
    }

    /// Appends engine records (in the order the run made them) and operation slices
    /// (task, name, start, end; each task's in time order, after the records up to their end).
    pub fn push(
        &mut self,
        records: &[TraceRecord],
        ops: &[(TaskId, &str, Nanos, Nanos)],
    ) -> std::io::Result<()> {
        for r in records {
            self.record(r)?;
        }
        for &(t, name, start, end) in ops {
            self.op(t, name, start, end)?;
        }
        Ok(())
    }

    fn record(&mut self, r: &TraceRecord) -> std::io::Result<()> {
        if let TraceKind::Value(p) = r.kind {
            return self.value(p, r.time, r.arg);
        }
        self.discover(r.task)?;
        self.count(r)?;
        if !matches!(self.tasks.get(r.task as usize), Some(Some(_))) {
            return Ok(());
        }
        let (t, at) = (r.task, r.time);
        let quiet = |c| c == sim::runtime::CLASS_CPU || c == sim::runtime::CLASS_SLEEP;
        match r.kind {
            TraceKind::Run | TraceKind::Acquire(_) | TraceKind::Exit => self.close(t, at),
            TraceKind::Sleep(c) if r.arg > 0 && !quiet(c) => {
                let name = self.names.classes[c as usize].clone();
                self.open(t, at, name, at.saturating_add(r.arg))
            }
            TraceKind::Park(c) => {
                let name = self.names.classes[c as usize].clone();
                self.open(t, at, name, Nanos::MAX)
            }
            // Waits for a core are the "tasks waiting for a core" counter, not slices.
            TraceKind::Block(res) if is_cores(&self.names.resources[res as usize]) => {
                self.close(t, at)
            }
            TraceKind::Block(res) => {
                let name = self.names.resources[res as usize].clone();
                self.open(t, at, name, Nanos::MAX)
            }
            TraceKind::Release(res) if r.arg > 0 => {
                let name = self.names.resources[res as usize].clone();
                if is_cores(&name) {
                    return Ok(());
                }
                self.wake(t, (r.arg - 1) as TaskId, at, &format!("release {name}"))
            }
            TraceKind::Unpark => self.wake(t, r.arg as TaskId, at, "unpark"),
            TraceKind::Point(p) | TraceKind::Mark(p) if self.full => {
                let name = self.names.points[p as usize].clone();
                self.instant(t, at, name, Vec::new())
            }
            _ => Ok(()),
        }
    }

    /// A model counter's new value (`Handle::value`): a counter track of its own, named as
    /// the model names it (in bytes when the name says `bytes`), made at its first value,
    /// and sampled with the other counters (a value shows at the next sampling instant).
    fn value(&mut self, p: sim::ValueId, at: Nanos, v: u64) -> std::io::Result<()> {
        self.sample(at)?;
        if self.counters.seq.is_none() {
            return Ok(());
        }
        if let Some(e) = self.counters.values.get_mut(&p) {
            e.1 = v;
            return Ok(());
        }
        let u = self.uuid();
        self.counters.values.insert(p, (u, v, None));
        let name = self.names.values[p as usize].to_string();
        // CounterDescriptor.Unit: UNIT_COUNT 2, UNIT_SIZE_BYTES 3.
        let unit = if name.contains("bytes") { 3 } else { 2 };
        let seq = self.counters.seq.as_ref().map(|s| s.id);
        self.packet(&TracePacket {
            trusted_packet_sequence_id: seq,
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u),
                parent_uuid: Some(self.process_uuid),
                name: Some(name),
                counter: Some(CounterDescriptor { unit: Some(unit) }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// Samples the counters up to `r`'s time, then applies what `r` changes.
    fn count(&mut self, r: &TraceRecord) -> std::io::Result<()> {
        self.sample(r.time)?;
        let helper = self.names.tasks.get(r.task as usize).is_none_or(|t| t.1);
        if helper {
            return Ok(());
        }
        let kind = match r.kind {
            TraceKind::Run | TraceKind::Acquire(_) | TraceKind::Exit => 0,
            TraceKind::Block(res) if is_cores(&self.names.resources[res as usize]) => 1,
            TraceKind::Block(_) => 2,
            TraceKind::Sleep(c) | TraceKind::Park(c)
                if self.names.classes[c as usize].contains(':') =>
            {
                3
            }
            _ => return Ok(()),
        };
        let c = &mut self.counters;
        if c.waiting.len() <= r.task as usize {
            c.waiting.resize(r.task as usize + 1, 0);
        }
        let was = std::mem::replace(&mut c.waiting[r.task as usize], kind);
        if was > 0 {
            c.now[was as usize - 1] -= 1;
        }
        if kind > 0 {
            c.now[kind as usize - 1] += 1;
        }
        Ok(())
    }

    /// Writes the counters that changed, at the first sampling instant in `(last, at]`.
    fn sample(&mut self, at: Nanos) -> std::io::Result<()> {
        let c = &mut self.counters;
        if at < c.next {
            return Ok(());
        }
        let when = c.next;
        c.next = (at / SAMPLE + 1) * SAMPLE;
        if self.filter.clip(when, when).is_none() {
            return Ok(());
        }
        let Some(seq) = c.seq.as_mut() else {
            return Ok(());
        };
        let mut packets = Vec::new();
        for i in 0..COUNTERS.len() {
            if c.now[i] == c.written[i] && when > 0 {
                continue;
            }
            c.written[i] = c.now[i];
            let mut p = event(seq, when, COUNTER, None, (vec![], vec![]));
            if let Some(e) = p.track_event.as_mut() {
                e.track_uuid = Some(c.uuids[i]);
                e.counter_value = Some(c.now[i]);
            }
            packets.push(p);
        }
        for (uuid, now, written) in c.values.values_mut() {
            if *written == Some(*now) {
                continue;
            }
            *written = Some(*now);
            let mut p = event(seq, when, COUNTER, None, (vec![], vec![]));
            if let Some(e) = p.track_event.as_mut() {
                e.track_uuid = Some(*uuid);
                e.counter_value = Some(i64::try_from(*now).unwrap_or(i64::MAX));
            }
            packets.push(p);
        }
        for p in &packets {
            self.packet(p)?;
        }
        Ok(())
    }

    fn open(&mut self, t: TaskId, at: Nanos, name: Rc<str>, until: Nanos) -> std::io::Result<()> {
        self.close(t, at)?;
        if let Some(Some(task)) = self.tasks.get_mut(t as usize) {
            task.open = Some(Open {
                since: at,
                name,
                until,
                flows: Vec::new(),
            });
        }
        Ok(())
    }

    /// Ends task `t`'s wait (if any) at `at`, or at a sleep's planned end if earlier.
    fn close(&mut self, t: TaskId, at: Nanos) -> std::io::Result<()> {
        let Some(Some(task)) = self.tasks.get_mut(t as usize) else {
            return Ok(());
        };
        let Some(mut o) = task.open.take() else {
            return Ok(());
        };
        o.flows.extend(self.wakes.remove(&t).unwrap_or_default());
        let end = at.min(o.until);
        if end <= o.since {
            return Ok(());
        }
        let Some((s, e)) = self.filter.clip(o.since, end) else {
            return Ok(());
        };
        if !self.filter.ops.is_empty() {
            task.held.push((s, e, o.name, false));
            return Ok(());
        }
        let b = event(
            &mut task.engine,
            s,
            SLICE_BEGIN,
            Some(&o.name),
            (vec![], vec![]),
        );
        let en = event(&mut task.engine, e, SLICE_END, None, (vec![], o.flows));
        self.packet(&b)?;
        self.packet(&en)
    }

    /// An instant on task `t`'s track.
    fn instant(
        &mut self,
        t: TaskId,
        at: Nanos,
        name: Rc<str>,
        flows: Vec<u64>,
    ) -> std::io::Result<()> {
        let Some(Some(task)) = self.tasks.get_mut(t as usize) else {
            return Ok(());
        };
        if self.filter.clip(at, at).is_none() {
            return Ok(());
        }
        if !self.filter.ops.is_empty() {
            task.held.push((at, at, name, true));
            return Ok(());
        }
        let p = event(&mut task.engine, at, INSTANT, Some(&name), (flows, vec![]));
        self.packet(&p)
    }

    /// Task `waker` ends `wakee`'s wait: a flow from an instant on the waker's track to the
    /// end of the wakee's wait, when both are shown (not under an `op=` filter).
    fn wake(&mut self, waker: TaskId, wakee: TaskId, at: Nanos, what: &str) -> std::io::Result<()> {
        self.discover(wakee)?;
        let shown = |t: TaskId| matches!(self.tasks.get(t as usize), Some(Some(_)));
        let kept = self.full && self.filter.ops.is_empty();
        if !kept || !shown(wakee) || self.filter.clip(at, at).is_none() {
            return Ok(());
        }
        let id = self.next_flow;
        self.next_flow += 1;
        self.wakes.entry(wakee).or_default().push(id);
        self.instant(waker, at, Rc::from(what), vec![id])
    }
}

impl PerfettoTrace {
    /// Operation slice `name` of task `t` on its "operations" track; under an `op=` filter,
    /// what the task did during a kept operation, and nothing else.
    fn op(&mut self, t: TaskId, name: &str, start: Nanos, end: Nanos) -> std::io::Result<()> {
        self.discover(t)?;
        if !matches!(self.tasks.get(t as usize), Some(Some(_))) {
            return Ok(());
        }
        let keep = self.filter.keeps_op(name);
        let filtered = !self.filter.ops.is_empty();
        self.matched_op |= keep && filtered;
        let window = self.filter.clip(start, end).filter(|_| keep);
        if filtered {
            let Some(Some(task)) = self.tasks.get_mut(t as usize) else {
                return Ok(());
            };
            let n = task.held.partition_point(|h| h.0 <= end);
            let mine: Vec<Held> = task.held.drain(..n).collect();
            if let Some((s, e)) = window {
                self.write_held(t, &mine, s, e)?;
            }
        }
        let Some((s, e)) = window else {
            return Ok(());
        };
        self.ops_sequence(t)?;
        let name: Rc<str> = Rc::from(name);
        let Some(Some(TaskTrack { ops: Some(ops), .. })) = self.tasks.get_mut(t as usize) else {
            return Ok(());
        };
        let b = event(ops, s, SLICE_BEGIN, Some(&name), (vec![], vec![]));
        let en = event(ops, e, SLICE_END, None, (vec![], vec![]));
        self.packet(&b)?;
        self.packet(&en)
    }

    /// Makes task `t`'s "operations" track at its first operation.
    fn ops_sequence(&mut self, t: TaskId) -> std::io::Result<()> {
        let Some(Some(task)) = self.tasks.get(t as usize) else {
            return Ok(());
        };
        if task.ops.is_some() {
            return Ok(());
        }
        let parent = task.uuid;
        let uuid = self.uuid();
        let seq = self.sequence(uuid)?;
        let id = seq.id;
        self.packet(&TracePacket {
            trusted_packet_sequence_id: Some(id),
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some("operations".to_string()),
                ..Default::default()
            }),
            ..Default::default()
        })?;
        if let Some(Some(task)) = self.tasks.get_mut(t as usize) {
            task.ops = Some(seq);
        }
        Ok(())
    }

    /// Writes held slices and instants of task `t` that fall in `[s, e]`, cut to it.
    fn write_held(&mut self, t: TaskId, held: &[Held], s: Nanos, e: Nanos) -> std::io::Result<()> {
        for (start, end, name, instant) in held {
            let (a, b) = ((*start).max(s), (*end).min(e));
            if a > b || (a == b && !instant) {
                continue;
            }
            let Some(Some(task)) = self.tasks.get_mut(t as usize) else {
                return Ok(());
            };
            let no = (vec![], vec![]);
            if *instant {
                let p = event(&mut task.engine, a, INSTANT, Some(name), no);
                self.packet(&p)?;
            } else {
                let p = event(&mut task.engine, a, SLICE_BEGIN, Some(name), no);
                let q = event(&mut task.engine, b, SLICE_END, None, (vec![], vec![]));
                self.packet(&p)?;
                self.packet(&q)?;
            }
        }
        Ok(())
    }

    /// Ends the run at virtual time `end`: waits still open end there (a planned sleep
    /// past it is cut), held slices with no operation around them are dropped.
    pub fn end_run(&mut self, end: Nanos) -> std::io::Result<()> {
        self.sample(end)?;
        for t in 0..self.tasks.len() {
            self.close(t as TaskId, end)?;
            if let Some(Some(task)) = self.tasks.get_mut(t) {
                task.held.clear();
            }
        }
        Ok(())
    }

    /// What the filter asked for that no run had (a `task=` or `op=` matching nothing),
    /// said as the flag's error.
    pub fn unmatched(&self) -> Option<String> {
        if !self.filter.tasks.is_empty() && !self.matched_task {
            return Some(format!(
                "task={} matches no simulated task of the run: expected a task name (e.g. client3, btrfs-transaction) or a prefix ending in *",
                self.filter.tasks.join(",task=")
            ));
        }
        if !self.filter.ops.is_empty() && !self.matched_op {
            return Some(format!(
                "op={} matches no operation of the run: expected an operation of the workload (e.g. Flush, WriteX)",
                self.filter.ops.join(",op=")
            ));
        }
        None
    }

    /// Moves the file into place (the temp file is removed on an error).
    pub fn finish(self) -> std::io::Result<()> {
        self.out.finish()
    }
}
