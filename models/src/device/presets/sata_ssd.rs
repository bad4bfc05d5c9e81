//! `sata-ssd`: a SATA SSD with NCQ.

use super::{constant_us, lognormal_us};
use crate::device::config::{DeviceConfig, FlushCost};
use crate::device::dist::NonNeg;

/// The preset.
pub fn config() -> DeviceConfig {
    DeviceConfig {
        name: "sata-ssd".into(),
        hw_queues: 1,
        // NCQ: 32 tags (libata ATA_MAX_QUEUE).
        queue_depth: 32,
        // A consumer controller with 4 channels x 4 dies (guess).
        parallelism: 16,
        write_cache: true,
        cache_bytes: 256 << 20,
        // SATA 6 Gb/s, about 550 MB/s => 1.82 ns per byte.
        transfer_ns_per_byte: 1.82,
        // MQSim MLC page read 75,000 ns plus AHCI/command overhead (guess: +15 us).
        read: lognormal_us(90.0),
        // Cached write completion (guess: 30 us).
        write: lognormal_us(30.0),
        // Write-through: MQSim MLC page program 750,000 ns.
        fua_write: lognormal_us(750.0),
        flush: FlushCost {
            base: constant_us(100.0),
            // 16 units x 8 KiB / 750 us = 175 MB/s destage (guess geometry, MQSim timing).
            ns_per_dirty_byte: NonNeg(5.72),
            ns_per_dirty_write: NonNeg(0.0),
        },
        tail: None,
        hdd: None,
    }
}
