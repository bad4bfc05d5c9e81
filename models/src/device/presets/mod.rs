//! Device presets, one file each, with the sources of their numbers in comments.
//! Values marked (guess) are starting points to override from a device TOML file.

mod hdd;
pub mod hdd_smr_5400;
mod nvme;
mod sas_ssd;
mod sata_ssd;

use super::config::DeviceConfig;

/// Preset names accepted by `--device`.
pub const NAMES: [&str; 5] = ["nvme", "sas-ssd", "sata-ssd", "hdd", "hdd-smr-5400"];

/// The preset with this name.
pub fn by_name(name: &str) -> Option<DeviceConfig> {
    match name {
        "nvme" => Some(nvme::config()),
        "sas-ssd" => Some(sas_ssd::config()),
        "sata-ssd" => Some(sata_ssd::config()),
        "hdd" => Some(hdd::config()),
        "hdd-smr-5400" => Some(hdd_smr_5400::config()),
        _ => None,
    }
}

/// A log-normal latency with a mean in µs and a modest shape (sigma 0.2, (guess)).
pub(crate) fn lognormal_us(mean_us: f64) -> super::LatencyDist {
    super::LatencyDist::Lognormal {
        mean_us: super::dist::NonNeg(mean_us),
        sigma: super::dist::Shape(0.2),
    }
}

/// A constant latency in µs.
pub(crate) fn constant_us(us: f64) -> super::LatencyDist {
    super::LatencyDist::Constant {
        us: super::dist::NonNeg(us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_the_driver_queue_depths() {
        // drivers/nvme/host/pci.c io_queue_depth; mpt3sas_base.h; libata ATA_MAX_QUEUE.
        assert_eq!(by_name("nvme").unwrap().queue_depth, 1024);
        assert_eq!(by_name("sas-ssd").unwrap().queue_depth, 254);
        assert_eq!(by_name("sata-ssd").unwrap().queue_depth, 32);
        assert_eq!(by_name("hdd").unwrap().queue_depth, 32);
        assert!(by_name("hdd").unwrap().hdd.is_some());
        for n in NAMES {
            let c = by_name(n).unwrap();
            assert_eq!(c.name, n);
            assert!(c.parallelism >= 1 && c.tags() >= 1);
        }
    }
}
