//! Output of `fsyncsim bench`.

use models::workload::bench::{BenchParams, BenchResult};
use serde_json::{json, Value};

/// Wall-clock figures measured around a benchmark run (outside the simulation).
#[derive(Clone, Copy, Debug)]
pub struct Wall {
    /// Seconds.
    pub seconds: f64,
}

/// The text report.
pub fn text(p: &BenchParams, r: &BenchResult, w: Wall) -> String {
    let per = if p.lock { 6 } else { 4 };
    let mut s = String::new();
    s.push_str(&format!(
        "fsyncsim bench: {} clients, {} slots, think Exp({:.0}us), service Exp({:.0}us){}, {} requests, seed {}\n",
        p.clients,
        p.slots,
        p.think_mean_ns / 1e3,
        p.service_mean_ns / 1e3,
        if p.lock { ", global lock" } else { "" },
        r.requests,
        p.seed
    ));
    s.push_str(&format!("  wall time          {:.3} s\n", w.seconds));
    s.push_str(&format!(
        "  requests/s         {:.2} M\n",
        r.requests as f64 / w.seconds / 1e6
    ));
    s.push_str(&format!(
        "  events/s           {:.1} M   ({per} events per request)\n",
        r.events as f64 / w.seconds / 1e6
    ));
    s.push_str(&format!(
        "  task resumptions   {:.2} M   ({:.1} M/s)\n",
        r.dispatches as f64 / 1e6,
        r.dispatches as f64 / w.seconds / 1e6
    ));
    s.push_str(&format!("  simulated IOPS     {:.0}\n", r.sim_iops));
    s.push_str(&format!(
        "  mean latency       {:.1} us\n",
        r.mean_latency_ns / 1e3
    ));
    s.push_str(&format!(
        "  virtual time       {:.3} s\n",
        r.sim_ns as f64 / 1e9
    ));
    s.push_str(&format!("  trace hash         {:#018x}\n", r.trace_hash));
    s
}

/// The JSON report.
pub fn json(p: &BenchParams, r: &BenchResult, w: Wall) -> Value {
    json!({
        "model": {
            "clients": p.clients,
            "slots": p.slots,
            "think_mean_ns": p.think_mean_ns,
            "service_mean_ns": p.service_mean_ns,
            "lock": p.lock,
            "seed": p.seed,
        },
        "requests": r.requests,
        "events": r.events,
        "dispatches": r.dispatches,
        "wall_seconds": w.seconds,
        "requests_per_second": r.requests as f64 / w.seconds,
        "events_per_second": r.events as f64 / w.seconds,
        "sim_seconds": r.sim_ns as f64 / 1e9,
        "sim_iops": r.sim_iops,
        "mean_latency_ns": r.mean_latency_ns,
        "trace_hash": format!("{:#018x}", r.trace_hash),
    })
}
