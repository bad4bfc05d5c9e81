//! Chrome trace-event JSON (`{"traceEvents": […]}`), streamed to disk as a run goes: one
//! track (tid) per task, complete ("X") slices for operations, lock waits, device I/O and CPU
//! time, instant ("i") events for named points such as `trans:commit_start`. Opens in
//! Perfetto and chrome://tracing. Written to a temporary file and renamed at `finish`.

use sim::trace::{TraceKind, TraceRecord};
use sim::{Handle, Nanos, TaskId};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufWriter, Write};
use std::path::Path;

/// A trace file being written.
pub struct ChromeTrace {
    out: BufWriter<crate::output::Temp>,
    pid: u32,
    /// Tasks whose name was emitted.
    named: BTreeSet<TaskId>,
    /// Open waits: task → (since, name, category).
    open: BTreeMap<TaskId, (Nanos, String, &'static str)>,
    /// Events written.
    pub events: u64,
}

fn us(ns: Nanos) -> f64 {
    ns as f64 / 1000.0
}

fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

impl ChromeTrace {
    /// Starts writing `path` (via a temporary file next to it); `process` names the run. A
    /// `path` that exists and is not a regular file is refused.
    pub fn create(path: &Path, process: &str) -> std::io::Result<ChromeTrace> {
        // Refuses a path that exists and is not a regular file (crate::output).
        let mut out = BufWriter::new(crate::output::Temp::create(path)?);
        write!(
            out,
            "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":{}}}}}",
            q(process)
        )?;
        Ok(ChromeTrace {
            out,
            pid: 1,
            named: BTreeSet::new(),
            open: BTreeMap::new(),
            events: 1,
        })
    }

    /// Appends one event; the header already wrote the first, so every event follows a comma.
    fn event(&mut self, body: String) -> std::io::Result<()> {
        self.out.write_all(b",\n")?;
        self.events += 1;
        self.out.write_all(body.as_bytes())
    }

    fn name_task(&mut self, h: &Handle, t: TaskId) -> std::io::Result<()> {
        if self.named.insert(t) {
            let body = format!(
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{t},\"args\":{{\"name\":{}}}}}",
                self.pid,
                q(&h.task_name(t))
            );
            self.event(body)?;
        }
        Ok(())
    }

    fn slice(
        &mut self,
        t: TaskId,
        name: &str,
        cat: &str,
        start: Nanos,
        end: Nanos,
    ) -> std::io::Result<()> {
        let body = format!(
            "{{\"ph\":\"X\",\"name\":{},\"cat\":\"{cat}\",\"pid\":{},\"tid\":{t},\"ts\":{:.3},\"dur\":{:.3}}}",
            q(name),
            self.pid,
            us(start),
            us(end.saturating_sub(start))
        );
        self.event(body)
    }

    /// Appends engine records and operation slices (task, operation name, start, end).
    pub fn push(
        &mut self,
        h: &Handle,
        records: &[TraceRecord],
        ops: &[(TaskId, &str, Nanos, Nanos)],
    ) -> std::io::Result<()> {
        for r in records {
            self.name_task(h, r.task)?;
            match r.kind {
                TraceKind::Sleep(c) if r.arg > 0 => {
                    let name = h.class_name(c);
                    let cat = if name == "cpu" {
                        "cpu"
                    } else if name.contains(':') {
                        "io"
                    } else {
                        "wait"
                    };
                    self.slice(r.task, &name, cat, r.time, r.time + r.arg)?;
                }
                TraceKind::Park(c) => {
                    let name = h.class_name(c);
                    let cat = if name.contains(':') { "io" } else { "wait" };
                    self.open.insert(r.task, (r.time, name, cat));
                }
                TraceKind::Block(res) => {
                    self.open
                        .insert(r.task, (r.time, h.resource_name(res), "lock"));
                }
                TraceKind::Run | TraceKind::Acquire(_) => {
                    if let Some((since, name, cat)) = self.open.remove(&r.task) {
                        self.slice(r.task, &name, cat, since, r.time)?;
                    }
                }
                TraceKind::Point(p) | TraceKind::Mark(p) => {
                    let body = format!(
                        "{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"cat\":\"point\",\"pid\":{},\"tid\":{},\"ts\":{:.3}}}",
                        q(&h.point_name(p)),
                        self.pid,
                        r.task,
                        us(r.time)
                    );
                    self.event(body)?;
                }
                _ => {}
            }
        }
        for &(t, name, start, end) in ops {
            self.name_task(h, t)?;
            self.slice(t, name, "op", start, end)?;
        }
        Ok(())
    }

    /// Closes the JSON and moves the file into place (the temp file is removed on an error).
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.write_all(b"\n]}\n")?;
        self.out.into_inner().map_err(|e| e.into_error())?.persist()
    }

    /// Drops the partial file (on an error elsewhere).
    pub fn abandon(self) {
        drop(self);
    }
}
