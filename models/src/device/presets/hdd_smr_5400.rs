//! `hdd-smr-5400`: a 2 TB 2.5-inch 5400 rpm SATA drive, the class of seed 002's WDC
//! WD20SPZX-22UA7T0 (device-managed SMR), with the full HDD mechanics (`device::hdd`).
//!
//! Sources (H1.5 of shared/MODELS-J1-F1-H1.md unless noted):
//! - 5400 rpm, 128 MB cache, SATA 6 Gb/s: WD Blue 2.5" WD20SPZX product specification; the
//!   manual (manualslib.com/manual/1527402, p.32) describes a multi-segment read cache with
//!   pre/post read. WD publishes no seek or media-rate figures for it.
//! - Seek: the 2.5" 5400 rpm class figures of the Hitachi Travelstar 5K320 datasheet
//!   (manualsdump.com …/hitachi-hts543280l9a300…/112335/19): track-to-track 1.0 ms, average
//!   read 12 ms, full stroke 20 ms. Knee of the curve at 383/1962 of the cylinders (Ruemmler
//!   & Wilkes 1994, HP 97560).
//! - Media rate: 140 MB/s at the outer diameter, the Seagate BarraCuda 2.5" ST2000LM015
//!   datasheet's "max sustained data rate, OD read" for the same class (2 TB, 5400 rpm;
//!   recalled, not re-checked here); inner diameter half of it (guess: a 2.5" platter's
//!   recording band spans about half to full radius, and rate ∝ radius).
//! - 4 heads (guess: two 1 TB platters); 16 zones (guess); capacity 3,907,029,168 sectors of
//!   512 bytes (IDEMA LBA count for 2 TB); cylinders derived from capacity, heads, the
//!   revolution and the mean zone rate.
//! - Command overhead 100 µs (guess, as the `hdd` preset); read-ahead 1 MiB past the last
//!   requested byte (guess: about one outer track, 140 MB/s × 11.1 ms); 16 cache segments of
//!   8 MiB (guess: 128 MB split evenly).
//! - NCQ: 32 tags (libata ATA_MAX_QUEUE), served in arrival order. WD does not document the
//!   drive's reordering; this model's aged SPTF (`ncq = "sptf"` in a device file) is greedy
//!   on positioning time and on scrub's 64-deep sequential queue leaves the stream for
//!   requests ahead of and behind it (≈21,000 repositionings instead of ≈1,000), which real
//!   drives, whose queued sequential reads run at the media rate, do not; so FIFO here.

use super::constant_us;
use crate::device::config::{DeviceConfig, FlushCost, HddGeometry, Positive, Rpm};
use crate::device::dist::NonNeg;
use crate::device::hdd::{HddMechanics, NcqOrder};

/// Bytes of the drive (IDEMA: 97,696,368 + 1,953,504 × (2000 − 50) sectors of 512 bytes).
pub const CAPACITY: u64 = 3_907_029_168 * 512;

/// The mechanics of the preset.
pub fn mechanics() -> HddMechanics {
    HddMechanics {
        seek_avg_ms: NonNeg(12.0),
        knee_fraction: NonNeg(383.0 / 1962.0),
        od_mb_s: NonNeg(140.0),
        id_mb_s: NonNeg(70.0),
        zones: Positive(16),
        heads: Positive(4),
        overhead_us: NonNeg(100.0),
        readahead_bytes: Positive(1 << 20),
        cache_segments: Positive(16),
        segment_bytes: Positive(8 << 20),
        ncq: NcqOrder::Fifo,
    }
}

/// The preset.
pub fn config() -> DeviceConfig {
    let m = mechanics();
    let rpm = 5400.0;
    let rev_s = 60.0 / rpm;
    let mean_rate = (m.od_mb_s.0 + m.id_mb_s.0) / 2.0 * 1e6;
    let cylinders = (CAPACITY as f64 / (m.heads.0 as f64 * rev_s * mean_rate)).ceil() as u64;
    DeviceConfig {
        name: "hdd-smr-5400".into(),
        hw_queues: 1,
        queue_depth: 32,
        parallelism: 1,
        write_cache: true,
        cache_bytes: 128 << 20,
        // SATA 6 Gb/s: 600 MB/s after 8b/10b coding.
        transfer_ns_per_byte: 1e9 / 600e6,
        // Positioning and media time come from the mechanics; these are not used for reads.
        read: constant_us(0.0),
        // A cached write completes once in the drive's buffer (guess: 100 us).
        write: constant_us(100.0),
        fua_write: constant_us(0.0),
        flush: FlushCost {
            base: constant_us(100.0),
            ns_per_dirty_byte: NonNeg(1e9 / 105e6),
            // Half a rotation per destaged write at 5400 rpm (guess, as the `hdd` preset).
            ns_per_dirty_write: NonNeg(rev_s * 1e9 / 2.0),
        },
        tail: None,
        hdd: Some(HddGeometry {
            rpm: Rpm(rpm),
            seek_min_ms: NonNeg(1.0),
            seek_max_ms: NonNeg(20.0),
            capacity_bytes: Positive(CAPACITY),
            cylinders: Positive(cylinders),
            mech: Some(m),
        }),
    }
}
