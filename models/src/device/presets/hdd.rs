//! `hdd`: a 10k rpm SCSI/SATA disk after DiskSim's cheetah9LP model.

use super::constant_us;
use crate::device::config::{DeviceConfig, FlushCost, HddGeometry, Positive};
use crate::device::dist::NonNeg;

/// The preset.
pub fn config() -> DeviceConfig {
    DeviceConfig {
        name: "hdd".into(),
        hw_queues: 1,
        // NCQ: 32 tags (libata ATA_MAX_QUEUE).
        queue_depth: 32,
        // One head assembly.
        parallelism: 1,
        write_cache: true,
        // 16 MiB drive buffer (guess).
        cache_bytes: 16 << 20,
        // About 25 MB/s media rate => 40 ns per byte (guess for a 1999 10k rpm drive).
        transfer_ns_per_byte: 40.0,
        // Controller overhead; positioning comes from the geometry below (guess: 100 us).
        read: constant_us(100.0),
        // A write completes once in the drive's buffer (guess: 100 us).
        write: constant_us(100.0),
        // Controller overhead of a write-through write, plus positioning.
        fua_write: constant_us(100.0),
        flush: FlushCost {
            base: constant_us(100.0),
            ns_per_dirty_byte: NonNeg(40.0),
            // Half a rotation per destaged write at 10,045 rpm (2.99 ms); seeks assumed
            // amortised by the drive's elevator-ordered destage (guess).
            ns_per_dirty_write: NonNeg(2_987_000.0),
        },
        tail: None,
        // DiskSim cheetah9LP: 10,045 rpm, single-cylinder seek 0.831 ms, full stroke
        // 10.627 ms; 9.1 GB over 6,962 cylinders.
        hdd: Some(HddGeometry {
            rpm: crate::device::config::Rpm(10_045.0),
            seek_min_ms: NonNeg(0.831),
            seek_max_ms: NonNeg(10.627),
            capacity_bytes: Positive(9_100_000_000),
            cylinders: Positive(6_962),
            mech: None,
        }),
    }
}
