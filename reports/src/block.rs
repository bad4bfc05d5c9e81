//! The block layer's counters (`models::block::BlockStats`): request-queue merging and
//! plugging, elevator dispatches, CFQ idling and preemption, as text lines and JSON.

use models::block::{BlockStats, Dir};
use serde::Serialize;
use serde_json::Value;

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

/// A read/write pair.
#[derive(Serialize)]
struct Rw {
    read: u64,
    write: u64,
}

impl From<[u64; 2]> for Rw {
    fn from([read, write]: [u64; 2]) -> Self {
        Rw { read, write }
    }
}

/// The flush sequence's steps (blk-flush.c).
#[derive(Serialize)]
struct FlushSteps {
    preflush: u64,
    data: u64,
    postflush: u64,
    fua_direct: u64,
}

/// Why the plug was flushed.
#[derive(Serialize)]
struct Unplugs {
    thresh: u64,
    timer: u64,
    req_unplug: u64,
    waiter: u64,
}

/// CFQ's service trees by class.
#[derive(Serialize)]
struct TreeAdds {
    #[serde(rename = "async")]
    async_: u64,
    sync_noidle: u64,
    sync: u64,
}

/// CFQ's figures.
#[derive(Serialize)]
struct Cfq {
    preemptions: u64,
    sync_preempts_async: u64,
    tree_adds: TreeAdds,
    slices_expired: u64,
    idle_armed: u64,
    idle_fired: u64,
    idle_cancelled: u64,
    idle_ns: u64,
    async_blocked_ns: u64,
    may_dispatch_refused: u64,
}

/// deadline's figures.
#[derive(Serialize)]
struct Deadline {
    starved_write_batches: u64,
    fifo_expired_batches: u64,
}

/// The block layer's JSON object.
#[derive(Serialize)]
struct BlockJson {
    scheduler: &'static str,
    bios: Rw,
    dispatches: Rw,
    dispatch_bytes: Rw,
    merges: Rw,
    merge_bytes: Rw,
    request_merges: u64,
    sync_dispatches: u64,
    async_dispatches: u64,
    flush_steps: FlushSteps,
    plugs: u64,
    unplugs: Unplugs,
    cfq: Cfq,
    deadline: Deadline,
}

/// JSON object.
pub fn json(b: &BlockStats) -> Value {
    let [preflush, data, postflush, fua_direct] = b.flush_steps;
    let doc = BlockJson {
        scheduler: b.scheduler,
        bios: b.bios.into(),
        dispatches: b.dispatches.into(),
        dispatch_bytes: b.dispatch_bytes.into(),
        merges: b.merges.into(),
        merge_bytes: b.merge_bytes.into(),
        request_merges: b.rq_merges,
        sync_dispatches: b.sync_dispatches,
        async_dispatches: b.async_dispatches,
        flush_steps: FlushSteps {
            preflush,
            data,
            postflush,
            fua_direct,
        },
        plugs: b.plugs,
        unplugs: Unplugs {
            thresh: b.unplug_thresh,
            timer: b.unplug_timer,
            req_unplug: b.unplug_req,
            waiter: b.unplug_wait,
        },
        cfq: Cfq {
            preemptions: b.preemptions,
            sync_preempts_async: b.sync_preempts_async,
            tree_adds: TreeAdds {
                async_: b.tree_adds[0],
                sync_noidle: b.tree_adds[1],
                sync: b.tree_adds[2],
            },
            slices_expired: b.slices_expired,
            idle_armed: b.idle_armed,
            idle_fired: b.idle_fired,
            idle_cancelled: b.idle_cancelled,
            idle_ns: b.idle_ns as u64,
            async_blocked_ns: b.async_blocked_ns as u64,
            may_dispatch_refused: b.may_dispatch_refused,
        },
        deadline: Deadline {
            starved_write_batches: b.starved_write_batches,
            fifo_expired_batches: b.fifo_expired_batches,
        },
    };
    serde_json::to_value(doc).expect("plain data serialises")
}
