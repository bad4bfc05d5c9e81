//! ext3/ext4's counters: the journal's (jbd2_journal_commit_transaction's stats), the
//! readers' stalls and the block layer's, reported as `ext4.<name>`, plus the device and
//! commit totals every filesystem reports.

use crate::block::BlockStats;
use crate::jbd2::JournalStats;
use crate::vfs::Metrics;

/// The journal counters with what each counts.
pub const JOURNAL_METRICS: [(&str, &str); 24] = [
    ("commits", "journal commits finished"),
    ("sync_commits", "commits whose log writes were REQ_SYNC"),
    ("async_commits", "commits whose log writes were plain WRITE"),
    (
        "waited_async_commits",
        "commits someone waited for (fsync, sync) that were written as plain WRITE",
    ),
    (
        "timer_commits",
        "commits the commit timer requested (commit= interval)",
    ),
    (
        "log_blocks",
        "log blocks written: descriptors, metadata copies, commit blocks",
    ),
    ("commit_ns", "ns from T_LOCKED to T_FINISHED, all commits"),
    ("commit_max_ns", "the longest commit, ns"),
    (
        "handle_wait_ns",
        "ns handles waited to join a transaction (locked, too big, log full)",
    ),
    (
        "commit_wait_ns",
        "ns callers waited in jbd2_log_wait_commit (commit_wait_ns of fsync and sync)",
    ),
    ("commit_waits", "jbd2_log_wait_commit calls that waited"),
    ("checkpoints", "checkpoints forced by a full log"),
    (
        "fsync_flush_only",
        "ext4 fsyncs that returned after a cache flush without waiting (commit already requested)",
    ),
    ("fsync_commit_waits", "fsyncs that waited for a commit"),
    (
        "ordered_data_bytes",
        "data bytes kjournald wrote for data=ordered (ext3)",
    ),
    (
        "reader_stall_ns",
        "ns readers waited for READ requests (queue + service)",
    ),
    ("read_bytes", "bytes read from the device by readers"),
    (
        "write_dispatches",
        "block layer: write requests dispatched to the driver (blktrace D)",
    ),
    (
        "write_merges",
        "block layer: write bios merged into queued requests (blktrace M/F)",
    ),
    (
        "sync_dispatches",
        "block layer: sync requests dispatched (reads, REQ_SYNC writes)",
    ),
    ("async_dispatches", "block layer: async requests dispatched"),
    (
        "cfq_preemptions",
        "CFQ: active queue preempted by an arriving request",
    ),
    (
        "cfq_idle_ns",
        "CFQ: ns the idle timer was armed (blkio idle_time)",
    ),
    (
        "cfq_async_blocked_ns",
        "CFQ: ns async requests waited while sync ones were in flight",
    ),
];

/// The scalar counters ext3/ext4 report besides the `ext4.*` rows.
pub const TOTALS: [&str; 3] = ["transaction_commits", "device_bytes_written", "flushes"];

/// The counters of a run: commits, the device's (bytes written, flushes), then the
/// journal's counters, the readers' (bytes, ns waited) and the device's block-layer counters
/// as `ext4.<name>` rows.
pub fn metrics(
    s: &JournalStats,
    (device_bytes_written, flushes): (u64, u64),
    (read_bytes, reader_stall_ns): (u64, u64),
    b: Option<&BlockStats>,
) -> Metrics {
    let d = b.cloned().unwrap_or_default();
    let v = [
        s.commits,
        s.sync_commits,
        s.async_commits,
        s.waited_async_commits,
        s.timer_commits,
        s.log_blocks,
        s.commit_ns,
        s.commit_max_ns,
        s.handle_wait_ns,
        s.commit_wait_ns,
        s.commit_waits,
        s.checkpoints,
        s.fsync_flush_only,
        s.fsync_commit_waits,
        s.ordered_data_bytes,
        reader_stall_ns,
        read_bytes,
        d.dispatches[crate::block::Dir::Write as usize],
        d.merges[crate::block::Dir::Write as usize],
        d.sync_dispatches,
        d.async_dispatches,
        d.preemptions,
        u64::try_from(d.idle_ns).unwrap_or(u64::MAX),
        u64::try_from(d.async_blocked_ns).unwrap_or(u64::MAX),
    ];
    Metrics {
        scalars: TOTALS
            .into_iter()
            .zip([s.commits, device_bytes_written, flushes])
            .collect(),
        prefixed: JOURNAL_METRICS
            .iter()
            .zip(v)
            .map(|((n, _), v)| (format!("ext4.{n}"), v))
            .collect(),
        ..Metrics::default()
    }
}

/// Whether `name` is an ext3/ext4 counter.
pub fn is_metric(name: &str) -> bool {
    metrics(&JournalStats::default(), (0, 0), (0, 0), None)
        .get(name)
        .is_some()
}
