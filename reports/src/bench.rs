//! Output of `fsyncsim bench`.

use models::workload::bench::{BenchParams, BenchResult, LoopResult};
use serde::Serialize;
use serde_json::Value;

/// Wall-clock figures measured around a benchmark run (outside the simulation).
#[derive(Clone, Copy, Debug)]
pub struct Wall {
    /// Seconds.
    pub seconds: f64,
}

/// The hand-written loop's run beside the engine's: its results and wall seconds.
#[derive(Clone, Debug)]
pub struct Versus {
    /// What the loop produced.
    pub result: LoopResult,
    /// Its wall-clock seconds.
    pub seconds: f64,
}

impl Versus {
    /// Whether the loop's virtual-time results equal the engine's.
    pub fn same_results(&self, r: &BenchResult) -> bool {
        self.result.requests == r.requests
            && self.result.sim_ns == r.sim_ns
            && self.result.mean_latency_ns == r.mean_latency_ns
    }
}

/// The text report.
pub fn text(p: &BenchParams, r: &BenchResult, w: Wall, vs: Option<&Versus>) -> String {
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
    s.push_str(&format!(
        "  wall time          {:.3} s   (the faster of 2 runs)\n",
        w.seconds
    ));
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
    if let Some(v) = vs {
        s.push_str(&format!(
            "  hand-written loop  {:.3} s, {:.1} M events/s, same results: {}\n",
            v.seconds,
            r.events as f64 / v.seconds / 1e6,
            if v.same_results(r) { "yes" } else { "NO" }
        ));
        s.push_str(&format!(
            "  engine / loop      {:.2}x   (events/s; > 1: the engine is faster)\n",
            v.seconds / w.seconds
        ));
    }
    s
}

/// The bench model's parameters in the report.
#[derive(Serialize)]
struct ModelJson {
    clients: u32,
    slots: u64,
    think_mean_ns: f64,
    service_mean_ns: f64,
    lock: bool,
    seed: u64,
}

/// The hand-written loop's figures beside the engine's (`--versus-loop`).
#[derive(Serialize)]
struct HandLoopJson {
    wall_seconds: f64,
    events_per_second: f64,
    same_results: bool,
    engine_speedup: f64,
}

/// `bench --json`'s document.
#[derive(Serialize)]
struct BenchJson {
    model: ModelJson,
    requests: u64,
    events: u64,
    dispatches: u64,
    wall_seconds: f64,
    requests_per_second: f64,
    events_per_second: f64,
    sim_seconds: f64,
    sim_iops: f64,
    mean_latency_ns: f64,
    trace_hash: String,
    hand_loop: Option<HandLoopJson>,
}

/// The JSON report.
pub fn json(p: &BenchParams, r: &BenchResult, w: Wall, vs: Option<&Versus>) -> Value {
    let doc = BenchJson {
        model: ModelJson {
            clients: p.clients,
            slots: p.slots,
            think_mean_ns: p.think_mean_ns,
            service_mean_ns: p.service_mean_ns,
            lock: p.lock,
            seed: p.seed,
        },
        requests: r.requests,
        events: r.events,
        dispatches: r.dispatches,
        wall_seconds: w.seconds,
        requests_per_second: r.requests as f64 / w.seconds,
        events_per_second: r.events as f64 / w.seconds,
        sim_seconds: r.sim_ns as f64 / 1e9,
        sim_iops: r.sim_iops,
        mean_latency_ns: r.mean_latency_ns,
        trace_hash: format!("{:#018x}", r.trace_hash),
        hand_loop: vs.map(|v| HandLoopJson {
            wall_seconds: v.seconds,
            events_per_second: r.events as f64 / v.seconds,
            same_results: v.same_results(r),
            engine_speedup: v.seconds / w.seconds,
        }),
    };
    serde_json::to_value(doc).expect("plain data serialises")
}
