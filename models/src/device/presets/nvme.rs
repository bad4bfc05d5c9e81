//! `nvme`: a datacenter-class NVMe SSD.

use super::{constant_us, lognormal_us};
use crate::device::config::{DeviceConfig, FlushCost};
use crate::device::dist::NonNeg;

/// The preset.
pub fn config() -> DeviceConfig {
    DeviceConfig {
        name: "nvme".into(),
        // Linux creates one submission/completion queue pair per CPU
        // (drivers/nvme/host/pci.c); 8 CPUs is (guess).
        hw_queues: 8,
        // io_queue_depth module parameter default 1024 (drivers/nvme/host/pci.c).
        queue_depth: 1024,
        // FEMU's default geometry: 8 channels x 8 LUNs serve requests in parallel.
        parallelism: 64,
        write_cache: true,
        // MQSim's sample SSD: 256 MiB DRAM cache.
        cache_bytes: 256 << 20,
        // PCIe 3.0 x4: 3.94 GB/s => 0.254 ns per byte.
        transfer_ns_per_byte: 0.254,
        // FEMU page read 40,000 ns; SimpleSSD 40-65 us.
        read: lognormal_us(40.0),
        // A write completes once in the DRAM cache (guess: 10 us including controller work).
        write: lognormal_us(10.0),
        // Write-through: one page program, FEMU 200,000 ns.
        fua_write: lognormal_us(200.0),
        flush: FlushCost {
            // Command overhead of an empty flush (guess).
            base: constant_us(20.0),
            // Destage rate: 64 LUNs x 4 KiB page / 200 us program = 1.31 GB/s (FEMU).
            ns_per_dirty_byte: NonNeg(0.763),
            ns_per_dirty_write: NonNeg(0.0),
        },
        tail: None,
        hdd: None,
    }
}
