//! Output of `fsyncsim fio`: fio-like text and fio-shaped JSON (one aggregated job, as with
//! fio's group_reporting).

use crate::fio_json::{fio_disk_util, fio_job, FioOutput};
use crate::latency::text_lines;
use models::device::ReqKind;
use models::workload::fio::{DirStats, FioResult};
use serde_json::Value;
use std::collections::BTreeMap;

fn runtime_ms(r: &FioResult) -> f64 {
    r.elapsed as f64 / 1e6
}

/// One request kind's device counters in `fsyncsim fio --json`'s `device.requests`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KindReport {
    /// Requests completed.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Requests that waited for a tag (or in the request queue).
    pub host_waited: u64,
    /// Mean wait for a tag, ns.
    pub mean_host_wait_ns: f64,
    /// Mean wait for a service unit, ns.
    pub mean_queue_wait_ns: f64,
    /// Mean service time, ns.
    pub mean_service_ns: f64,
}

/// `fsyncsim fio --json`'s `device` object: fsyncsim's device counters.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceReport {
    /// Device name.
    pub name: String,
    /// Per request kind.
    pub requests: BTreeMap<String, KindReport>,
    /// Largest host-queue length.
    pub max_host_queue: u64,
    /// Bytes destaged by flushes.
    pub flushed_bytes: u64,
    /// Bytes destaged in the background.
    pub background_destaged_bytes: u64,
    /// The request queue's counters (with a scheduler).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<Value>,
}

/// `fsyncsim fio --json`: fio's document plus fsyncsim's `device` counters and
/// `trace_hash`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FioReport {
    /// The fio document.
    #[serde(flatten)]
    pub fio: FioOutput,
    /// The device's counters (fsyncsim's own).
    pub device: DeviceReport,
    /// Hash of the run's event sequence.
    pub trace_hash: String,
}

/// The device report of a run.
pub fn device_report(r: &FioResult) -> DeviceReport {
    let ds = &r.device_stats;
    let requests = ReqKind::ALL
        .iter()
        .map(|&k| {
            let s = ds.kind(k);
            let n = s.count.max(1) as f64;
            (
                k.name().to_string(),
                KindReport {
                    count: s.count,
                    bytes: s.bytes,
                    host_waited: s.host_waited,
                    mean_host_wait_ns: s.host_wait_ns as f64 / n,
                    mean_queue_wait_ns: s.queue_wait_ns as f64 / n,
                    mean_service_ns: s.service_ns as f64 / n,
                },
            )
        })
        .collect();
    DeviceReport {
        name: r.device.clone(),
        requests,
        max_host_queue: ds.max_host_queue,
        flushed_bytes: ds.flushed_bytes,
        background_destaged_bytes: ds.background_bytes,
        block: r.block_stats.as_ref().map(crate::block::json),
    }
}

/// The JSON report: fio's document (`plus`: json+, with each latency set's `bins`) with
/// fsyncsim's `device` counters and `trace_hash` beside it.
pub fn report(r: &FioResult, plus: bool) -> FioReport {
    FioReport {
        fio: FioOutput::new("fsyncsim", vec![fio_job(r, plus)], vec![fio_disk_util(r)]),
        device: device_report(r),
        trace_hash: format!("{:#018x}", r.trace_hash),
    }
}

/// The JSON report as text, keys in fio's order (see [`report`]).
pub fn json_text(r: &FioResult, plus: bool) -> String {
    serde_json::to_string_pretty(&report(r, plus)).expect("a report serializes")
}

fn human_iops(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn dir_text(name: &str, d: &DirStats, r: &FioResult) -> Vec<String> {
    let secs = r.elapsed as f64 / 1e9;
    let bw = d.bytes as f64 / secs;
    let mut out = vec![format!(
        "  {name}: IOPS={}, BW={:.1}MiB/s ({:.1}MB/s)({:.1}MiB/{:.0}msec)",
        human_iops(d.ios as f64 / secs),
        bw / (1 << 20) as f64,
        bw / 1e6,
        d.bytes as f64 / (1 << 20) as f64,
        runtime_ms(r)
    )];
    out.extend(text_lines("slat", &d.slat, false));
    out.extend(text_lines("clat", &d.clat, false));
    out.extend(text_lines(" lat", &d.lat, false));
    out.extend(text_lines("clat", &d.clat, true).into_iter().skip(1));
    out
}

/// The text report.
pub fn text(r: &FioResult) -> String {
    let p = &r.params;
    let mut out = vec![format!(
        "fsyncsim: (groupid=0, jobs={}): rw={}, bs={}, iodepth={}, fsync={}, device={}, runtime={:.0}msec (virtual), seed={}",
        p.numjobs,
        p.rw.name(),
        p.bs,
        p.iodepth,
        p.fsync,
        r.device,
        runtime_ms(r),
        p.seed
    )];
    if r.read.ios > 0 {
        out.extend(dir_text("read", &r.read, r));
    }
    if r.write.ios > 0 {
        out.extend(dir_text("write", &r.write, r));
    }
    if r.sync.ios > 0 {
        out.push(format!("  sync (flush): total_ios={}", r.sync.ios));
        out.extend(text_lines(" lat", &r.sync.lat, true));
    }
    let ds = &r.device_stats;
    let waited: u64 = ds.kinds.iter().map(|k| k.host_waited).sum();
    if r.block_stats.is_some() {
        out.push(format!(
            "  device: {} requests, {} waited in the request queue, {} bytes destaged by flushes",
            ds.completed(),
            waited,
            ds.flushed_bytes
        ));
    } else {
        out.push(format!(
            "  device: {} requests, {} waited for a tag (max host queue {}), {} bytes destaged by flushes",
            ds.completed(),
            waited,
            ds.max_host_queue,
            ds.flushed_bytes
        ));
    }
    if let Some(b) = &r.block_stats {
        out.extend(crate::block::text(b));
    }
    out.push(format!("  trace hash: {:#018x}", r.trace_hash));
    out.join("\n") + "\n"
}
