//! The block layer's counters (`models::block::BlockStats`): request-queue merging and
//! plugging, elevator dispatches, CFQ idling and preemption, as text lines and JSON.

use models::block::{BlockStats, Dir};
use serde_json::{json, Value};

/// Text lines (indented two spaces, as fio's device line).
pub fn text(b: &BlockStats) -> Vec<String> {
    let (r, w) = (Dir::Read as usize, Dir::Write as usize);
    let mib = |x: u64| x as f64 / (1 << 20) as f64;
    let mut out = vec![
        format!(
            "  block ({}): dispatches R {} ({:.1} MiB) W {} ({:.1} MiB); merges R {} ({:.1} MiB) W {} ({:.1} MiB); request merges {}",
            b.scheduler,
            b.dispatches[r],
            mib(b.dispatch_bytes[r]),
            b.dispatches[w],
            mib(b.dispatch_bytes[w]),
            b.merges[r],
            mib(b.merge_bytes[r]),
            b.merges[w],
            mib(b.merge_bytes[w]),
            b.rq_merges
        ),
        format!(
            "  block: sync {} / async {} dispatches; flush steps preflush {} data {} postflush {} fua {}; plugs {} (unplugged: thresh {}, timer {}, REQ_UNPLUG {}, waiter {})",
            b.sync_dispatches,
            b.async_dispatches,
            b.flush_steps[0],
            b.flush_steps[1],
            b.flush_steps[2],
            b.flush_steps[3],
            b.plugs,
            b.unplug_thresh,
            b.unplug_timer,
            b.unplug_req,
            b.unplug_wait
        ),
    ];
    match b.scheduler {
        "cfq" => out.push(format!(
            "  cfq: preemptions {} (sync over async {}), slices expired {}, idle armed {} fired {} cancelled {} idle {:.3} ms, async blocked by sync in flight {:.3} ms, may_dispatch refused {}",
            b.preemptions,
            b.sync_preempts_async,
            b.slices_expired,
            b.idle_armed,
            b.idle_fired,
            b.idle_cancelled,
            b.idle_ns as f64 / 1e6,
            b.async_blocked_ns as f64 / 1e6,
            b.may_dispatch_refused
        )),
        "deadline" | "mq-deadline" => out.push(format!(
            "  {}: write batches forced by starvation {}, batches started at an expired FIFO head {}",
            b.scheduler, b.starved_write_batches, b.fifo_expired_batches
        )),
        _ => {}
    }
    out
}

/// JSON object.
pub fn json(b: &BlockStats) -> Value {
    json!({
        "scheduler": b.scheduler,
        "bios": {"read": b.bios[0], "write": b.bios[1]},
        "dispatches": {"read": b.dispatches[0], "write": b.dispatches[1]},
        "dispatch_bytes": {"read": b.dispatch_bytes[0], "write": b.dispatch_bytes[1]},
        "merges": {"read": b.merges[0], "write": b.merges[1]},
        "merge_bytes": {"read": b.merge_bytes[0], "write": b.merge_bytes[1]},
        "request_merges": b.rq_merges,
        "sync_dispatches": b.sync_dispatches,
        "async_dispatches": b.async_dispatches,
        "flush_steps": {
            "preflush": b.flush_steps[0],
            "data": b.flush_steps[1],
            "postflush": b.flush_steps[2],
            "fua_direct": b.flush_steps[3],
        },
        "plugs": b.plugs,
        "unplugs": {
            "thresh": b.unplug_thresh,
            "timer": b.unplug_timer,
            "req_unplug": b.unplug_req,
            "waiter": b.unplug_wait,
        },
        "cfq": {
            "preemptions": b.preemptions,
            "sync_preempts_async": b.sync_preempts_async,
            "tree_adds": {"async": b.tree_adds[0], "sync_noidle": b.tree_adds[1], "sync": b.tree_adds[2]},
            "slices_expired": b.slices_expired,
            "idle_armed": b.idle_armed,
            "idle_fired": b.idle_fired,
            "idle_cancelled": b.idle_cancelled,
            "idle_ns": b.idle_ns as u64,
            "async_blocked_ns": b.async_blocked_ns as u64,
            "may_dispatch_refused": b.may_dispatch_refused,
        },
        "deadline": {
            "starved_write_batches": b.starved_write_batches,
            "fifo_expired_batches": b.fifo_expired_batches,
        },
    })
}
