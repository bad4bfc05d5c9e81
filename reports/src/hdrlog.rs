//! HdrHistogram interval logs (`--hdr-out DIR`): the standard `.hlog` text format the
//! HdrHistogram libraries read (Java's HistogramLogReader, Python's `hdrh.log`, the Rust
//! crate's IntervalLogIterator): comment headers, `#[StartTime: …]` and `#[BaseTime: …]`,
//! the legend, then one line per interval histogram, `[Tag=T,]start,length,max,base64 of
//! the compressed V2 encoding`.
//!
//! Deterministic: StartTime and BaseTime are virtual time 0 (the epoch), so interval
//! timestamps are seconds of virtual time; the same run gives the same bytes.

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use models::workload::fio::FioResult;
use models::workload::fsload::WorkloadResult;
use std::time::{Duration, SystemTime};

/// One interval histogram of a log.
pub struct Interval<'a> {
    /// Optional tag (no `,`, space or newline).
    pub tag: Option<String>,
    /// Start, virtual ns.
    pub start: u64,
    /// Length, ns.
    pub length: u64,
    /// The latencies, ns.
    pub hist: &'a Histogram<u64>,
}

/// A log's file name (within the directory) and its intervals.
pub struct Log<'a> {
    /// File name, `<name>.hlog`.
    pub file: String,
    /// Comment lines for the header.
    pub comments: Vec<String>,
    /// Its intervals, in start order.
    pub intervals: Vec<Interval<'a>>,
}

/// A tag made of the characters the log format allows (others become `_`).
pub fn tag_of(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == ',' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// A file-name-safe version of an operation or policy name.
pub fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The log's bytes.
pub fn encode(log: &Log) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let epoch = SystemTime::UNIX_EPOCH;
    {
        let mut b = IntervalLogWriterBuilder::new();
        for c in &log.comments {
            b.add_comment(c);
        }
        b.add_comment("[Histogram log format version 1.3]");
        b.with_start_time(epoch).with_base_time(epoch);
        b.begin_log_with(&mut buf, &mut ser)
            .map_err(|e| e.to_string())?;
    }
    buf.extend_from_slice(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    let mut w = IntervalLogWriterBuilder::new()
        .begin_log_with(&mut buf, &mut ser)
        .map_err(|e| e.to_string())?;
    for i in &log.intervals {
        let tag = i.tag.as_deref().map(|t| {
            Tag::new(t).unwrap_or_else(|| panic!("tag {t:?} has a character a log cannot hold"))
        });
        w.write_histogram(
            i.hist,
            Duration::from_nanos(i.start),
            Duration::from_nanos(i.length),
            tag,
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// `fsyncsim fio`: one log per direction and latency (`read_clat.hlog`, `write_slat.hlog`,
/// `sync_lat.hlog`, …) that has samples, one interval over the whole run.
pub fn fio_logs(r: &FioResult) -> Vec<Log<'_>> {
    let mut logs = Vec::new();
    let dirs = [("read", &r.read), ("write", &r.write), ("sync", &r.sync)];
    for (dir, d) in dirs {
        if d.ios == 0 {
            continue;
        }
        let sets: Vec<(&str, &Histogram<u64>)> = if dir == "sync" {
            vec![("lat", &d.lat)]
        } else {
            vec![("slat", &d.slat), ("clat", &d.clat), ("lat", &d.lat)]
        };
        for (name, h) in sets {
            logs.push(Log {
                file: format!("{dir}_{name}.hlog"),
                comments: vec![format!(
                    "[fsyncsim fio: {dir} {name} (ns), device {}, seed {}, virtual time]",
                    r.device, r.params.seed
                )],
                intervals: vec![Interval {
                    tag: None,
                    start: 0,
                    length: r.elapsed,
                    hist: h,
                }],
            });
        }
    }
    logs
}

/// The measured window of a workload run: (start, length), virtual ns.
fn window(r: &WorkloadResult) -> (u64, u64) {
    (r.measured_from, r.measured)
}

/// `fsyncsim workload`: one log per operation with samples (`<op>.hlog`), one interval
/// over the measured window.
pub fn workload_logs(r: &WorkloadResult) -> Vec<Log<'_>> {
    let (start, length) = window(r);
    r.ops
        .iter()
        .filter(|o| !o.hist.is_empty())
        .map(|o| Log {
            file: format!("{}.hlog", file_part(o.name)),
            comments: vec![format!(
                "[fsyncsim workload {}: {} latency (ns) under {}, seed {}, virtual time]",
                r.workload, o.name, r.policy.name, r.seed
            )],
            intervals: vec![Interval {
                tag: None,
                start,
                length,
                hist: &o.hist,
            }],
        })
        .collect()
}

/// One side of a comparison: the policy's name and its runs, each with its `--vary` point.
pub type Side<'a> = (&'a str, Vec<(Option<String>, &'a WorkloadResult)>);

/// `fsyncsim compare`: one log per policy and operation (`<policy>.<op>.hlog`), one tagged
/// interval per run (`Tag=seed<N>`, with `--vary` `Tag=<param>=<value>:seed<N>`).
pub fn compare_logs<'a>(sides: &[Side<'a>]) -> Vec<Log<'a>> {
    let mut logs: Vec<Log<'a>> = Vec::new();
    for (policy, runs) in sides {
        let Some((_, first)) = runs.first() else {
            continue;
        };
        for (i, o) in first.ops.iter().enumerate() {
            let intervals: Vec<Interval<'a>> = runs
                .iter()
                .filter(|(_, r)| !r.ops[i].hist.is_empty())
                .map(|(point, r)| {
                    let (start, length) = window(r);
                    let seed = format!("seed{}", r.seed);
                    Interval {
                        tag: Some(tag_of(&match point {
                            Some(p) => format!("{p}:{seed}"),
                            None => seed,
                        })),
                        start,
                        length,
                        hist: &r.ops[i].hist,
                    }
                })
                .collect();
            if intervals.is_empty() {
                continue;
            }
            logs.push(Log {
                file: format!("{}.{}.hlog", file_part(policy), file_part(o.name)),
                comments: vec![format!(
                    "[fsyncsim compare {}: {} latency (ns) under {policy}, one interval per run, virtual time]",
                    first.workload, o.name
                )],
                intervals,
            });
        }
    }
    logs
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn a_log_reads_back_with_its_histograms_and_is_deterministic() {
        let mut h = models::device::new_histogram();
        for v in [1_000u64, 2_000, 3_000_000, 3_000_000] {
            h.record(v).unwrap();
        }
        let log = Log {
            file: "x.hlog".into(),
            comments: vec!["hello".into()],
            intervals: vec![Interval {
                tag: Some("seed7".into()),
                start: 1_500_000_000,
                length: 2_000_000_000,
                hist: &h,
            }],
        };
        let bytes = encode(&log).unwrap();
        assert_eq!(bytes, encode(&log).unwrap());
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("#hello\n"), "{text}");
        assert!(text.contains("#[StartTime: 0.000 (seconds since epoch)]\n"));
        assert!(text.contains("\nTag=seed7,1.500,2.000,"), "{text}");
        let mut seen = 0;
        for e in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(i) = e.unwrap() {
                seen += 1;
                assert_eq!(i.tag().unwrap().as_str(), "seed7");
                let raw = base64_decode(i.encoded_histogram());
                let back: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut std::io::Cursor::new(raw))
                    .unwrap();
                assert_eq!(back, h);
            }
        }
        assert_eq!(seen, 1);
    }

    /// Standard base64 (the log's encoding), decoded by hand for the test.
    fn base64_decode(s: &str) -> Vec<u8> {
        let val = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        };
        let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(val).collect();
        let mut out = Vec::new();
        for chunk in bytes.chunks(4) {
            let mut n = 0u32;
            for (i, &b) in chunk.iter().enumerate() {
                n |= u32::from(b) << (18 - 6 * i);
            }
            for i in 0..chunk.len().saturating_sub(1) {
                out.push((n >> (16 - 8 * i)) as u8);
            }
        }
        out
    }

    #[test]
    fn tags_and_file_names_are_sanitised() {
        assert_eq!(tag_of("clients=8: seed 1"), "clients=8:_seed_1");
        assert_eq!(file_part("linux-5.11+R7/x"), "linux-5.11_R7_x");
    }
}
