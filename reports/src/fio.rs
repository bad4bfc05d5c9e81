//! Output of `fsyncsim fio`: fio-like text and fio-shaped JSON (one aggregated job, as with
//! fio's group_reporting).

use crate::latency::{stats_json, stats_json_with_percentiles, text_lines};
use models::device::ReqKind;
use models::workload::fio::{DirStats, FioResult};
use serde_json::{json, Value};

fn runtime_ms(r: &FioResult) -> f64 {
    r.elapsed as f64 / 1e6
}

fn dir_json(d: &DirStats, r: &FioResult) -> Value {
    let secs = r.elapsed as f64 / 1e9;
    let bw_bytes = if secs > 0.0 {
        d.bytes as f64 / secs
    } else {
        0.0
    };
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes.round() as u64,
        "bw": (bw_bytes / 1024.0).round() as u64,
        "iops": if secs > 0.0 { d.ios as f64 / secs } else { 0.0 },
        "runtime": runtime_ms(r).round() as u64,
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": stats_json(&d.slat),
        "clat_ns": stats_json_with_percentiles(&d.clat),
        "lat_ns": stats_json(&d.lat),
    })
}

/// The JSON report (fio's field names).
pub fn json(r: &FioResult) -> Value {
    let p = &r.params;
    let ds = &r.device_stats;
    let kinds: serde_json::Map<String, Value> = ReqKind::ALL
        .iter()
        .map(|&k| {
            let s = ds.kind(k);
            let n = s.count.max(1) as f64;
            (
                k.name().to_string(),
                json!({
                    "count": s.count,
                    "bytes": s.bytes,
                    "host_waited": s.host_waited,
                    "mean_host_wait_ns": s.host_wait_ns as f64 / n,
                    "mean_queue_wait_ns": s.queue_wait_ns as f64 / n,
                    "mean_service_ns": s.service_ns as f64 / n,
                }),
            )
        })
        .collect();
    let mut v = json!({
        "fio version": concat!("fsyncsim-", env!("CARGO_PKG_VERSION")),
        "jobs": [{
            "jobname": "fsyncsim",
            "groupid": 0,
            "error": 0,
            "job options": {
                "rw": p.rw.name(),
                "bs": p.bs.to_string(),
                "iodepth": p.iodepth.to_string(),
                "numjobs": p.numjobs.to_string(),
                "fsync": p.fsync.to_string(),
                "runtime": format!("{}ns", p.runtime),
                "size": p.size.to_string(),
                "rwmixread": p.rwmixread.to_string(),
                "seed": p.seed.to_string(),
                "device": r.device,
            },
            "read": dir_json(&r.read, r),
            "write": dir_json(&r.write, r),
            "sync": {
                "total_ios": r.sync.ios,
                "lat_ns": stats_json_with_percentiles(&r.sync.lat),
            },
            "job_runtime": runtime_ms(r).round() as u64,
        }],
        "device": {
            "name": r.device,
            "requests": kinds,
            "max_host_queue": ds.max_host_queue,
            "flushed_bytes": ds.flushed_bytes,
            "background_destaged_bytes": ds.background_bytes,
        },
        "trace_hash": format!("{:#018x}", r.trace_hash),
    });
    if let Some(b) = &r.block_stats {
        v["device"]["block"] = crate::block::json(b);
    }
    v
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
