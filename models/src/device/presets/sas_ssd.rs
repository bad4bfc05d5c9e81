//! `sas-ssd`: a SAS SSD behind an mpt3sas HBA.

use super::{constant_us, lognormal_us};
use crate::device::config::{DeviceConfig, FlushCost};
use crate::device::dist::NonNeg;

/// The preset.
pub fn config() -> DeviceConfig {
    DeviceConfig {
        name: "sas-ssd".into(),
        // One request queue per SAS device.
        hw_queues: 1,
        // MPT3SAS_SAS_QUEUE_DEPTH 254 (mpt3sas_base.h); seed 000 quotes 254 vs NVMe 1023.
        queue_depth: 254,
        // MQSim sample geometry has 8 channels x 4 chips; one request per chip (guess).
        parallelism: 32,
        write_cache: true,
        // MQSim's sample SSD: 256 MiB DRAM cache.
        cache_bytes: 256 << 20,
        // SAS-3 12 Gb/s, about 1.2 GB/s => 0.83 ns per byte.
        transfer_ns_per_byte: 0.83,
        // MQSim MLC page read 75,000 ns.
        read: lognormal_us(75.0),
        // Cached write completion (guess: 20 us).
        write: lognormal_us(20.0),
        // Write-through: one MLC page program, MQSim 750,000 ns.
        fua_write: lognormal_us(750.0),
        flush: FlushCost {
            base: constant_us(50.0),
            // MQSim: 128 planes x 8 KiB (guess) / 750 us program = 1.40 GB/s.
            ns_per_dirty_byte: NonNeg(0.715),
            ns_per_dirty_write: NonNeg(0.0),
        },
        tail: None,
        hdd: None,
    }
}
