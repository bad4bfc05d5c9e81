//! HDD mechanics, opt-in through `HddGeometry::mech` (the `hdd` preset leaves it off and keeps
//! its random half-turn): a seek curve with a square-root and a linear region, a platter angle
//! that advances with virtual time, zoned bit recording (media rate and track size by LBA),
//! the drive's read-ahead / segmented read cache, and the order in which the drive serves its
//! NCQ queue (FIFO, aged SPTF, C-LOOK). A read that misses repositions the head; the drive
//! then also keeps what passed under the head on the target track while it waited (pre-read)
//! and reads on past the request (read-ahead) while the host keeps reading along.
//!
//! Sources: Ruemmler & Wilkes, "An introduction to disk drive modeling", IEEE Computer 27(3),
//! 1994 (seek curve: √ region up to a knee, linear beyond; HP 97560 knee at 383 of 1962
//! cylinders); Seagate product manuals (segmented read cache with prefetch: a read that finds
//! its blocks in a segment is served from the buffer, otherwise from the media, and the drive
//! keeps reading ahead after it); the WD20SPZX manual (manualslib.com/manual/1527402, p.32:
//! multi-segment read cache with pre/post read). Simplifications, stated: tracks of a cylinder
//! are consecutive in LBA and head switches and track skew cost nothing; the media rate of a
//! zone is constant; no defect remapping; no SMR persistent cache (the data is assumed destaged
//! to its shingled band long before the scrub).

use super::config::{HddGeometry, Positive};
use super::dist::NonNeg;
use serde::Deserialize;
use sim::Nanos;
use std::collections::VecDeque;

/// A seek over more cylinders than this counts as long in `HddStats` (about 4 GB on the
/// `hdd-smr-5400` preset: between scrub's metadata chunk and a data chunk beyond it).
pub const LONG_SEEK_CYLINDERS: u64 = 1000;

/// ASPTF's weight W on the time a request has waited (guess: drives do not publish their
/// aging; with W = 0.03 a request that a stream keeps overtaking, whose own positioning costs
/// up to a revolution plus a long seek (≈ 30 ms), is served within about a second, while
/// under random load (waits of a few hundred ms) the positioning differences still decide).
pub const SPTF_AGE_WEIGHT: f64 = 0.03;

/// How the drive orders the commands in its NCQ queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NcqOrder {
    /// Arrival order.
    #[default]
    Fifo,
    /// Shortest positioning time first (seek + rotation + cache state).
    Sptf,
    /// Ascending LBA from the head, wrapping (an elevator).
    Clook,
}

/// Mechanics parameters beyond the `HddGeometry` basics (seek_min_ms is the track-to-track
/// seek, seek_max_ms the full stroke).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddMechanics {
    /// Datasheet average read seek over random pairs, ms.
    pub seek_avg_ms: NonNeg,
    /// Knee of the seek curve as a fraction of the cylinders (√ below, linear above).
    pub knee_fraction: NonNeg,
    /// Sustained media rate at the outer diameter, MB/s (10^6 bytes).
    pub od_mb_s: NonNeg,
    /// Sustained media rate at the inner diameter, MB/s.
    pub id_mb_s: NonNeg,
    /// Recording zones (equal cylinder counts).
    pub zones: Positive,
    /// Read/write heads (tracks per cylinder).
    pub heads: Positive,
    /// Command overhead per request, µs.
    pub overhead_us: NonNeg,
    /// Bytes the drive reads ahead past the last requested byte.
    pub readahead_bytes: Positive,
    /// Read cache segments (LRU).
    pub cache_segments: Positive,
    /// Bytes per cache segment.
    pub segment_bytes: Positive,
    /// NCQ service order.
    #[serde(default)]
    pub ncq: NcqOrder,
}

impl HddMechanics {
    /// Checks the relations a file cannot express in types.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.od_mb_s.0 > 0.0 && self.id_mb_s.0 > 0.0 && self.id_mb_s.0 <= self.od_mb_s.0) {
            return Err("expected od_mb_s >= id_mb_s > 0".into());
        }
        if !(self.knee_fraction.0 > 0.0 && self.knee_fraction.0 <= 1.0) {
            return Err("expected knee_fraction in (0, 1]".into());
        }
        Ok(())
    }
}

/// A recording zone: LBA range, media rate, track size, cylinders.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Media rate, bytes per ns.
    pub rate: f64,
    /// Bytes per track.
    pub track_bytes: u64,
    /// First cylinder.
    pub cyl_start: u64,
}

/// The fitted seek curve: 0 at d = 0; t1 + b(√d − 1) up to the knee; linear beyond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeekCurve {
    /// Track-to-track seek, ns.
    pub t1: f64,
    /// √ coefficient, ns.
    pub b: f64,
    /// Knee, cylinders.
    pub knee: f64,
    /// Linear slope beyond the knee, ns per cylinder.
    pub m: f64,
    /// Cylinders.
    pub cylinders: f64,
}

impl SeekCurve {
    /// Fits b and m so that seek(1) = t1, seek(C − 1) = full stroke and the mean over random
    /// pairs of positions (distance density 2(C − d)/C²) is the datasheet average.
    pub fn fit(t1_ms: f64, avg_ms: f64, full_ms: f64, cylinders: u64, knee_fraction: f64) -> Self {
        let c = cylinders.max(3) as f64;
        let knee = (knee_fraction * c).clamp(1.0, c - 1.0);
        // Mean of (√min(d, K) − 1) and of (d − K)+ under the density, by a midpoint sum.
        let n = 20_000;
        let (mut i1, mut i2) = (0.0, 0.0);
        for k in 0..n {
            let d = 1.0 + (c - 2.0) * (k as f64 + 0.5) / n as f64;
            let w = 2.0 * (c - d) / (c * c) * (c - 2.0) / n as f64;
            i1 += w * (d.min(knee).sqrt() - 1.0);
            i2 += w * (d - knee).max(0.0);
        }
        let (t1, avg, full) = (t1_ms * 1e6, avg_ms * 1e6, full_ms * 1e6);
        // avg = t1 + b·i1 + m·i2; full = t1 + b(√K − 1) + m(C − 1 − K).
        let (a11, a12, r1) = (i1, i2, avg - t1);
        let (a21, a22, r2) = (knee.sqrt() - 1.0, c - 1.0 - knee, full - t1);
        let det = a11 * a22 - a12 * a21;
        let (mut b, mut m) = if det.abs() > 1e-12 {
            ((r1 * a22 - a12 * r2) / det, (a11 * r2 - r1 * a21) / det)
        } else {
            (0.0, 0.0)
        };
        if b < 0.0 || m < 0.0 || !b.is_finite() || !m.is_finite() {
            // The three figures cannot be met with both regions rising: a pure √ curve
            // through track-to-track and full stroke (Ruemmler & Wilkes' simple form).
            m = 0.0;
            b = (full - t1) / ((c - 1.0).sqrt() - 1.0).max(1e-9);
            return SeekCurve {
                t1,
                b,
                knee: c - 1.0,
                m,
                cylinders: c,
            };
        }
        SeekCurve {
            t1,
            b,
            knee,
            m,
            cylinders: c,
        }
    }

    /// Seek time over `d` cylinders, ns.
    pub fn ns(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let d = d as f64;
        if d <= self.knee {
            self.t1 + self.b * (d.sqrt() - 1.0)
        } else {
            self.t1 + self.b * (self.knee.sqrt() - 1.0) + self.m * (d - self.knee)
        }
    }

    /// Mean over random pairs of positions, ns (for checking the fit).
    pub fn mean_ns(&self) -> f64 {
        let c = self.cylinders;
        let n = 20_000;
        (0..n)
            .map(|k| {
                let d = 1.0 + (c - 2.0) * (k as f64 + 0.5) / n as f64;
                2.0 * (c - d) / (c * c) * (c - 2.0) / n as f64 * self.ns(d as u64)
            })
            .sum()
    }
}

/// Counters of the mechanics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HddStats {
    /// Reads served from a cache segment.
    pub cache_hits: u64,
    /// Reads served by the running read-ahead stream (no repositioning).
    pub stream_hits: u64,
    /// Accesses that repositioned the head.
    pub misses: u64,
    /// Seeks over more than `LONG_SEEK_CYLINDERS`.
    pub long_seeks: u64,
    /// Total seek time, ns.
    pub seek_ns: u128,
    /// Total rotational wait, ns.
    pub rotation_ns: u128,
}

/// What serving a request would cost, before committing to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Time from now until the data is in the buffer (reads) or on the media (writes), ns.
    pub ns: Nanos,
    kind: PlanKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum PlanKind {
    Hit,
    Stream,
    Miss {
        cyl: u64,
        seek: f64,
        rot: f64,
        transfer_start: f64,
    },
}

/// The read-ahead stream behind the head: byte `e0` passed under it at time `t0`.
#[derive(Clone, Copy, Debug)]
struct Stream {
    e0: u64,
    t0: f64,
    rate: f64,
    seg_start: u64,
    consumed: u64,
}

/// The drive's mechanical state.
#[derive(Clone, Debug)]
pub struct Hdd {
    m: HddMechanics,
    rev_ns: f64,
    seek: SeekCurve,
    zones: Vec<Zone>,
    head_cyl: u64,
    stream: Option<Stream>,
    segments: VecDeque<(u64, u64)>,
    stats: HddStats,
}

impl Hdd {
    /// The mechanics of this geometry.
    pub fn new(g: &HddGeometry, m: HddMechanics) -> Self {
        let rev_ns = 60e9 / g.rpm.0;
        let nz = m.zones.0.max(1);
        let cyls = g.cylinders.0.max(nz);
        let (od, id) = (m.od_mb_s.0 * 1e-3, m.id_mb_s.0 * 1e-3); // bytes per ns
        let mut zones = Vec::with_capacity(nz as usize);
        let mut start = 0u64;
        for z in 0..nz {
            // Constant linear density: rate ∝ radius, radius linear in the cylinder index.
            let rate = if nz == 1 {
                od
            } else {
                od - (od - id) * z as f64 / (nz - 1) as f64
            };
            let track_bytes = ((rate * rev_ns) as u64).max(512);
            let (c0, c1) = (cyls * z / nz, cyls * (z + 1) / nz);
            let end = start + (c1 - c0) * m.heads.0 * track_bytes;
            zones.push(Zone {
                start,
                end,
                rate,
                track_bytes,
                cyl_start: c0,
            });
            start = end;
        }
        let seek = SeekCurve::fit(
            g.seek_min_ms.0,
            m.seek_avg_ms.0,
            g.seek_max_ms.0,
            cyls,
            m.knee_fraction.0,
        );
        Hdd {
            m,
            rev_ns,
            seek,
            zones,
            head_cyl: 0,
            stream: None,
            segments: VecDeque::new(),
            stats: HddStats::default(),
        }
    }

    /// The parameters.
    pub fn mechanics(&self) -> &HddMechanics {
        &self.m
    }
    /// The fitted seek curve.
    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }
    /// The zones, outermost first.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }
    /// One revolution, ns.
    pub fn rev_ns(&self) -> f64 {
        self.rev_ns
    }
    /// Counters so far.
    pub fn stats(&self) -> HddStats {
        self.stats
    }
    /// The head's cylinder.
    pub fn head_cyl(&self) -> u64 {
        self.head_cyl
    }

    /// The zone holding `offset` (offsets past the last zone fall in it).
    pub fn zone_of(&self, offset: u64) -> &Zone {
        let i = self.zones.partition_point(|z| z.end <= offset);
        &self.zones[i.min(self.zones.len() - 1)]
    }

    /// Media rate at `offset`, MB/s.
    pub fn rate_mb_s(&self, offset: u64) -> f64 {
        self.zone_of(offset).rate * 1e3
    }

    /// Cylinder and angle (fraction of a turn from index) of `offset`.
    pub fn locate(&self, offset: u64) -> (u64, f64) {
        let z = self.zone_of(offset);
        let within = offset.saturating_sub(z.start);
        let track = within / z.track_bytes;
        let angle = (within % z.track_bytes) as f64 / z.track_bytes as f64;
        (z.cyl_start + track / self.m.heads.0, angle)
    }

    /// Angle under the head at time `t` (fraction of a turn; index at t = 0).
    pub fn angle_at(&self, t: f64) -> f64 {
        (t / self.rev_ns).fract()
    }

    /// Rotational wait at time `t` until `angle` comes under the head, ns.
    pub fn rotation_wait(&self, t: f64, angle: f64) -> f64 {
        let d = angle - self.angle_at(t);
        (d - d.floor()) * self.rev_ns
    }

    /// Bytes the running stream has read into the buffer by `now`.
    fn stream_pos(&self, s: &Stream, now: f64) -> u64 {
        let limit = s.consumed + self.m.readahead_bytes.0;
        if now <= s.t0 {
            return s.e0;
        }
        (s.e0 + ((now - s.t0) * s.rate) as u64).min(limit)
    }

    /// Whether `offset` lies ahead on the running stream's path at `t`: within its read-ahead
    /// or within one turn of the head, and the stream has not stopped. The head gets there by
    /// reading on (what it passes stays in the buffer); repositioning would be no sooner.
    fn on_stream_path(&self, s: &Stream, t: f64, offset: u64) -> bool {
        let limit = s.consumed + self.m.readahead_bytes.0;
        let stopped_at = s.t0 + (limit - s.e0) as f64 / s.rate;
        let p = self.stream_pos(s, t);
        let reach = limit.max(p + self.zone_of(p).track_bytes);
        offset >= s.seg_start && offset <= reach && t <= stopped_at
    }

    /// What serving `[offset, offset + len)` at `now` would cost (reads consult the cache).
    pub fn plan(&self, now: Nanos, offset: u64, len: u64, read: bool) -> Plan {
        let t = now as f64;
        let oh = self.m.overhead_us.0 * 1e3;
        let end = offset + len;
        if read {
            if let Some(s) = &self.stream {
                let p = self.stream_pos(s, t);
                if offset >= s.seg_start && end <= p {
                    return Plan {
                        ns: oh as Nanos,
                        kind: PlanKind::Hit,
                    };
                }
                if self.on_stream_path(s, t, offset) {
                    let ready = s.t0 + (end - s.e0) as f64 / s.rate;
                    return Plan {
                        ns: (ready - t).max(oh) as Nanos,
                        kind: PlanKind::Stream,
                    };
                }
            }
            if self.segments.iter().any(|&(a, b)| offset >= a && end <= b) {
                return Plan {
                    ns: oh as Nanos,
                    kind: PlanKind::Hit,
                };
            }
        }
        let (cyl, angle) = self.locate(offset);
        let seek = self.seek.ns(cyl.abs_diff(self.head_cyl));
        let rot = self.rotation_wait(t + oh + seek, angle);
        let transfer_start = t + oh + seek + rot;
        let rate = self.zone_of(offset).rate;
        Plan {
            ns: (transfer_start + len as f64 / rate - t) as Nanos,
            kind: PlanKind::Miss {
                cyl,
                seek,
                rot,
                transfer_start,
            },
        }
    }

    /// Serves `[offset, offset + len)` at `now`: returns the time until its data is in the
    /// buffer (reads) or on the media (writes), and moves the head and the cache.
    pub fn access(&mut self, now: Nanos, offset: u64, len: u64, read: bool) -> Nanos {
        let p = self.plan(now, offset, len, read);
        let end = offset + len;
        let t = now as f64;
        match p.kind {
            PlanKind::Hit => {
                self.stats.cache_hits += 1;
                // A hit on the running stream's path keeps its read-ahead going (the drive
                // follows the host's sequential pattern by LBA), unless it already stopped.
                if let Some(mut s) = self.stream {
                    if end > s.consumed && self.on_stream_path(&s, t, offset) {
                        s.consumed = end;
                        self.stream = Some(s);
                    }
                }
            }
            PlanKind::Stream => {
                self.stats.stream_hits += 1;
                if let Some(s) = &mut self.stream {
                    s.consumed = s.consumed.max(end);
                }
                self.head_cyl = self.locate(end.saturating_sub(1)).0;
            }
            PlanKind::Miss {
                cyl,
                seek,
                rot,
                transfer_start,
            } => {
                self.stats.misses += 1;
                self.stats.seek_ns += seek as u128;
                self.stats.rotation_ns += rot as u128;
                if cyl.abs_diff(self.head_cyl) > LONG_SEEK_CYLINDERS {
                    self.stats.long_seeks += 1;
                }
                self.retire_stream(t);
                if !read {
                    // A write invalidates what the cache holds of its range.
                    self.segments.retain(|&(a, b)| b <= offset || a >= end);
                }
                self.head_cyl = self.locate(end.saturating_sub(1)).0;
                self.head_cyl = self.locate(end.saturating_sub(1)).0;
                if read {
                    // Pre-read: after the seek the head reads whatever passes under it while
                    // it waits for the target sector, back to the start of the target's track
                    // (the "pre/post read" of the WD20SPZX manual's read cache).
                    let z = *self.zone_of(offset);
                    let track_start = offset - (offset - z.start) % z.track_bytes;
                    let pre = (rot * z.rate) as u64;
                    self.stream = Some(Stream {
                        e0: offset,
                        t0: transfer_start,
                        rate: z.rate,
                        seg_start: offset.saturating_sub(pre).max(track_start),
                        consumed: end,
                    });
                }
            }
        }
        p.ns
    }

    /// Keeps what the stream read ahead as a cache segment (LRU, bounded).
    fn retire_stream(&mut self, now: f64) {
        if let Some(s) = self.stream.take() {
            let p = self.stream_pos(&s, now);
            let a = s.seg_start.max(p.saturating_sub(self.m.segment_bytes.0));
            if p > a {
                self.segments.push_back((a, p));
                while self.segments.len() as u64 > self.m.cache_segments.0 {
                    self.segments.pop_front();
                }
            }
        }
    }

    /// The NCQ ordering cost of a queued request that has waited `waited` ns in the drive
    /// (lower is served first; FIFO: None). SPTF is aged (ASPTF, Worthington, Ganger & Patt,
    /// SIGMETRICS 1994: T_eff = T_pos − W·T_wait) so that a request the stream keeps
    /// overtaking is not starved.
    pub fn order_cost(
        &self,
        now: Nanos,
        offset: u64,
        len: u64,
        read: bool,
        waited: Nanos,
    ) -> Option<u64> {
        match self.m.ncq {
            NcqOrder::Fifo => None,
            NcqOrder::Sptf => {
                let pos = self.plan(now, offset, len, read).ns as f64;
                Some((pos - SPTF_AGE_WEIGHT * waited as f64).max(0.0) as u64)
            }
            NcqOrder::Clook => {
                let head = self
                    .stream
                    .map_or_else(|| self.zone_of_cyl_start(), |s| s.consumed);
                Some(offset.wrapping_sub(head))
            }
        }
    }

    fn zone_of_cyl_start(&self) -> u64 {
        let z = self
            .zones
            .iter()
            .rev()
            .find(|z| z.cyl_start <= self.head_cyl)
            .unwrap_or(&self.zones[0]);
        z.start + (self.head_cyl - z.cyl_start) * self.m.heads.0 * z.track_bytes
    }
}
