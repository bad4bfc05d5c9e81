//! Output of `fsyncsim scrub`: btrfs-progs' `scrub status` fields per run, the model's
//! counters, and the side-by-side comparison with seed 002's figures.

use models::btrfs::scrub::{seed002, ScrubResult};
use serde::Serialize;
use serde_json::Value;

const GIB: f64 = (1u64 << 30) as f64;

/// H:MM:SS of whole seconds, as btrfs-progs prints a duration.
pub fn hms(secs: u64) -> String {
    format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// btrfs-progs' human-readable size (`common/units.c:pretty_size_snprintf`, binary units):
/// the last quotient of 1024 not below 1024, as a C float, over 1024, `%.2f` and its suffix.
pub fn pretty_size(bytes: u64) -> String {
    const SUFFIX: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes:.2}B", bytes = bytes as f32 as f64);
    }
    let (mut size, mut last, mut divs) = (bytes, bytes, 0);
    while size >= 1024 {
        last = size;
        size /= 1024;
        divs += 1;
    }
    format!("{:.2}{}", (last as f32 / 1024.0) as f64, SUFFIX[divs])
}

/// One run: the `scrub status` block, then the model's counters.
pub fn text(r: &ScrubResult) -> String {
    let mut s = format!(
        "scrub device {} policy {} ({}), seed {} (virtual time)\n",
        r.device,
        r.policy.name(),
        r.policy.kernel(),
        r.seed
    );
    // cmds/scrub.c (_print_scrub_ss, print_scrub_summary) for a finished scrub: no `Bytes
    // scrubbed:` line (printed only while running, with a percentage), no time left or ETA.
    s.push_str("Status:           finished\n");
    s.push_str(&format!("Duration:         {}\n", hms(r.whole_seconds())));
    s.push_str(&format!(
        "Total to scrub:   {}\n",
        pretty_size(r.total_to_scrub)
    ));
    let per_sec = r.bytes_scrubbed / r.whole_seconds().max(1);
    s.push_str(&format!("Rate:             {}/s\n", pretty_size(per_sec)));
    s.push_str("Error summary:    no errors found\n");
    s.push_str(&format!(
        "model: {:.3} s, {} scrubbed, {:.2} MiB/s exact; {} data extents ({:.2} GiB), {} tree \
         blocks ({} extent leaves, {} csum leaves); {} bios\n",
        r.duration as f64 / 1e9,
        pretty_size(r.bytes_scrubbed),
        r.rate_mib_s(),
        r.data_extents,
        r.data_bytes as f64 / GIB,
        r.tree_blocks,
        r.extent_leaves,
        r.csum_leaves,
        r.bios
    ));
    s.push_str(&format!(
        "metadata reads: {} sync, {} path readahead, {} readahead framework; scrub thread \
         waited {:.3} s for tree blocks\n",
        r.meta.sync_reads,
        r.meta.path_reada,
        r.meta.framework_reads,
        r.meta.blocked_ns as f64 / 1e9
    ));
    if let Some(h) = &r.hdd {
        s.push_str(&format!(
            "disk: {} repositionings ({} long seeks), seek {:.3} s, rotation {:.3} s; \
             {} read-ahead stream hits, {} cache hits\n",
            h.misses,
            h.long_seeks,
            h.seek_ns as f64 / 1e9,
            h.rotation_ns as f64 / 1e9,
            h.stream_hits,
            h.cache_hits
        ));
    }
    s
}

/// A comparison: each run's status block, then one table against the btrfs scrub thread's figures.
pub fn compare_text(runs: &[ScrubResult]) -> String {
    let mut s = String::new();
    for r in runs {
        s.push_str(&text(r));
        s.push('\n');
    }
    let mut lines = vec![vec![
        "policy".to_string(),
        "kernel".into(),
        "duration".into(),
        "rate MiB/s".into(),
        "thread's duration".into(),
        "thread's rate MiB/s".into(),
    ]];
    let seed = |i: usize| match i {
        0 => (seed002::DURATION_BEFORE, seed002::RATE_BEFORE),
        1 => (seed002::DURATION_AFTER, seed002::RATE_AFTER),
        _ => (f64::NAN, f64::NAN),
    };
    for (i, r) in runs.iter().enumerate() {
        let (sd, sr) = seed(i);
        lines.push(vec![
            r.policy.name().into(),
            r.policy.kernel().into(),
            format!("{:.2} s", r.duration as f64 / 1e9),
            format!("{:.2}", r.rate_mib_s()),
            if sd.is_finite() {
                format!("{sd:.2} s")
            } else {
                "-".into()
            },
            if sr.is_finite() {
                format!("{sr:.2}")
            } else {
                "-".into()
            },
        ]);
    }
    if runs.len() >= 2 {
        let (a, b) = (&runs[0], &runs[1]);
        let dd = (b.duration as f64 / a.duration as f64 - 1.0) * 100.0;
        let dr = (b.rate_mib_s() / a.rate_mib_s() - 1.0) * 100.0;
        lines.push(vec![
            format!("{} → {}", a.policy.name(), b.policy.name()),
            "change".into(),
            format!("{dd:+.2} %"),
            format!("{dr:+.2} %"),
            format!(
                "{:+.2} %",
                (seed002::DURATION_AFTER / seed002::DURATION_BEFORE - 1.0) * 100.0
            ),
            format!(
                "{:+.2} %",
                (seed002::RATE_AFTER / seed002::RATE_BEFORE - 1.0) * 100.0
            ),
        ]);
    }
    s.push_str(&crate::workload::pipe_table(&lines));
    s
}

/// The metadata reads of a scrub run.
#[derive(Serialize)]
struct MetaJson {
    sync_reads: u64,
    path_reada: u64,
    framework_reads: u64,
    blocked_ns: u64,
}

/// The disk's figures of a scrub run on an HDD.
#[derive(Serialize)]
struct HddJson {
    misses: u64,
    long_seeks: u64,
    seek_ns: u64,
    rotation_ns: u64,
    stream_hits: u64,
    cache_hits: u64,
}

/// One scrub run.
#[derive(Serialize)]
struct RunJson<'a> {
    policy: &'static str,
    kernel: &'static str,
    device: &'a str,
    seed: u64,
    duration_ns: u64,
    duration: String,
    total_to_scrub_bytes: u64,
    bytes_scrubbed: u64,
    data_bytes: u64,
    rate_mib_s: f64,
    progs_rate_mib_s: f64,
    data_extents: u64,
    tree_blocks: u64,
    extent_leaves: u64,
    csum_leaves: u64,
    bios: u64,
    meta: MetaJson,
    hdd: Option<HddJson>,
}

/// The btrfs scrub thread's figures, beside the runs.
#[derive(Serialize)]
struct ThreadJson {
    rate_before_mib_s: f64,
    rate_after_mib_s: f64,
    duration_before_s: f64,
    duration_after_s: f64,
    bytes_mib: f64,
}

/// `scrub --json`'s document.
#[derive(Serialize)]
struct ScrubJson<'a> {
    runs: Vec<RunJson<'a>>,
    seed002: ThreadJson,
}

/// `--json`: one object per run.
pub fn json(runs: &[ScrubResult]) -> Value {
    let doc = ScrubJson {
        runs: runs
            .iter()
            .map(|r| RunJson {
                policy: r.policy.name(),
                kernel: r.policy.kernel(),
                device: &r.device,
                seed: r.seed,
                duration_ns: r.duration,
                duration: hms(r.whole_seconds()),
                total_to_scrub_bytes: r.total_to_scrub,
                bytes_scrubbed: r.bytes_scrubbed,
                data_bytes: r.data_bytes,
                rate_mib_s: r.rate_mib_s(),
                progs_rate_mib_s: r.progs_rate_mib_s(),
                data_extents: r.data_extents,
                tree_blocks: r.tree_blocks,
                extent_leaves: r.extent_leaves,
                csum_leaves: r.csum_leaves,
                bios: r.bios,
                meta: MetaJson {
                    sync_reads: r.meta.sync_reads,
                    path_reada: r.meta.path_reada,
                    framework_reads: r.meta.framework_reads,
                    blocked_ns: r.meta.blocked_ns,
                },
                hdd: r.hdd.map(|h| HddJson {
                    misses: h.misses,
                    long_seeks: h.long_seeks,
                    seek_ns: h.seek_ns as u64,
                    rotation_ns: h.rotation_ns as u64,
                    stream_hits: h.stream_hits,
                    cache_hits: h.cache_hits,
                }),
            })
            .collect(),
        seed002: ThreadJson {
            rate_before_mib_s: seed002::RATE_BEFORE,
            rate_after_mib_s: seed002::RATE_AFTER,
            duration_before_s: seed002::DURATION_BEFORE,
            duration_after_s: seed002::DURATION_AFTER,
            bytes_mib: seed002::BYTES_MIB,
        },
    };
    serde_json::to_value(doc).expect("plain data serialises")
}

#[cfg(test)]
mod tests {
    use super::pretty_size;

    #[test]
    fn sizes_as_btrfs_progs_prints_them() {
        assert_eq!(pretty_size(0), "0.00B");
        assert_eq!(pretty_size(1023), "1023.00B");
        assert_eq!(pretty_size(1024), "1.00KiB");
        assert_eq!(pretty_size(1536), "1.50KiB");
        // 19.02 GiB: the quotient truncates to whole MiB before the last division.
        assert_eq!(pretty_size(20_422_000_000), "19.02GiB");
        assert_eq!(pretty_size((1 << 20) - 1), "1024.00KiB");
        assert_eq!(pretty_size(120 << 20), "120.00MiB");
    }
}
