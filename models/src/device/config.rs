//! Device parameters: the resolved configuration, the TOML device file that overrides a
//! preset, and its error reporting (file:line, what was expected).

use super::dist::{LatencyDist, NonNeg};

super::dist::bounded_f64!(
    /// A probability: 0 to 1.
    Probability, 0.0, 1.0, "probability", "0 to 1"
);

super::dist::bounded_f64!(
    /// A spindle speed: 1 to 100,000 rpm (a rotation must take a representable time).
    Rpm, 1.0, 100_000.0, "rpm", "1 to 100000"
);
use super::presets;
use serde::de::{Deserializer, Error as _};
use serde::Deserialize;

/// A positive integer (rejects 0 with a message naming the expectation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Positive(pub u64);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        if v >= 1 {
            Ok(Positive(v as u64))
        } else {
            Err(D::Error::custom(format!(
                "invalid value {v}: expected an integer >= 1"
            )))
        }
    }
}

/// Cost of a cache flush: a base latency plus destaging the dirty data it covers.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlushCost {
    /// Fixed part of every flush.
    pub base: LatencyDist,
    /// Nanoseconds per dirty byte destaged.
    pub ns_per_dirty_byte: NonNeg,
    /// Nanoseconds per dirty write destaged (positioning; HDDs).
    #[serde(default)]
    pub ns_per_dirty_write: NonNeg,
}

/// A rare extra delay added to a request.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailSpike {
    /// Probability per request, in [0, 1].
    pub probability: Probability,
    /// Extra delay when it hits.
    pub extra: LatencyDist,
}

/// Rotating-disk geometry: seek curve and rotation replace the read and FUA latency draws.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddGeometry {
    /// Spindle speed.
    pub rpm: Rpm,
    /// Single-cylinder seek, ms.
    pub seek_min_ms: NonNeg,
    /// Full-stroke seek, ms.
    pub seek_max_ms: NonNeg,
    /// Addressable bytes (offsets map linearly onto cylinders).
    pub capacity_bytes: Positive,
    /// Cylinders.
    pub cylinders: Positive,
    /// Mechanics (seek curve with a knee, tracked rotation, zones, drive cache, NCQ order);
    /// absent: the single √ curve and a random rotational delay of up to one turn.
    #[serde(default)]
    pub mech: Option<super::hdd::HddMechanics>,
}

/// Everything that defines a simulated block device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConfig {
    /// Name shown in reports.
    pub name: String,
    /// Hardware submission queues.
    pub hw_queues: u64,
    /// Tags per hardware queue; requests beyond hw_queues × queue_depth wait in the host.
    pub queue_depth: u64,
    /// Requests the device services at once.
    pub parallelism: u64,
    /// Volatile write cache present (writes complete into it; FLUSH/FUA make them durable).
    pub write_cache: bool,
    /// Dirty bytes the cache holds before it destages the oldest in the background.
    pub cache_bytes: u64,
    /// Transfer time per byte for reads and writes.
    pub transfer_ns_per_byte: f64,
    /// Read service time.
    pub read: LatencyDist,
    /// Write service time into the cache (or to media when there is no cache).
    pub write: LatencyDist,
    /// Write-through (FUA) service time.
    pub fua_write: LatencyDist,
    /// Flush cost.
    pub flush: FlushCost,
    /// Optional rare tail spike on any request.
    pub tail: Option<TailSpike>,
    /// Rotating-disk geometry (None for SSDs).
    pub hdd: Option<HddGeometry>,
}

/// A device TOML file: an optional base preset and any fields to override.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceFile {
    preset: Option<String>,
    name: Option<String>,
    hw_queues: Option<Positive>,
    queue_depth: Option<Positive>,
    parallelism: Option<Positive>,
    write_cache: Option<bool>,
    cache_bytes: Option<Positive>,
    transfer_ns_per_byte: Option<NonNeg>,
    read: Option<LatencyDist>,
    write: Option<LatencyDist>,
    fua_write: Option<LatencyDist>,
    flush: Option<FlushCost>,
    tail: Option<TailSpike>,
    hdd: Option<HddGeometry>,
    /// The request queue's part of the file, left to the layer above.
    scheduler: Option<toml::Value>,
}

/// A bad device description: where and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", crate::units::one_line(.location), crate::units::one_line(.message))]
pub struct ConfigError {
    /// `file:line` or the flag.
    pub location: String,
    /// What was wrong and what is expected.
    pub message: String,
}

impl ConfigError {
    /// The message a file that names this device shows at its own line: the device file's
    /// location too, when the fault is inside it or the file itself cannot be read.
    pub fn referenced(self) -> String {
        if self.location != "--device" {
            format!("device {}: {}", self.location, self.message)
        } else {
            self.message
        }
    }
}

impl DeviceConfig {
    /// Parses a device TOML text (`origin` names it in errors); also returns the file's
    /// `scheduler` value, which describes the request queue above the device and is left to
    /// that layer.
    pub fn from_toml(text: &str, origin: &str) -> Result<(Self, Option<toml::Value>), ConfigError> {
        let file: DeviceFile = toml::from_str(text).map_err(|e| {
            let (location, message) = crate::units::toml_error(text, origin, &e);
            ConfigError { location, message }
        })?;
        let key_line = |path: &[&str]| key_line(text, origin, path);
        let base = file.preset.as_deref().unwrap_or("nvme");
        let mut cfg = presets::by_name(base).ok_or_else(|| ConfigError {
            location: key_line(&["preset"]),
            message: format!(
                "unknown preset '{base}': expected one of {}",
                presets::NAMES.join(", ")
            ),
        })?;
        cfg.apply_queues(&file);
        cfg.apply_service(&file, &key_line)?;
        if let Some(g) = file.hdd {
            if g.seek_min_ms.0 > g.seek_max_ms.0 || g.rpm.0 <= 0.0 {
                return Err(ConfigError {
                    location: key_line(&["hdd"]),
                    message: "expected rpm > 0 and seek_min_ms <= seek_max_ms".to_string(),
                });
            }
            if let Some(m) = &g.mech {
                m.validate().map_err(|message| ConfigError {
                    location: key_line(&["hdd", "mech"]),
                    message,
                })?;
            }
            cfg.hdd = Some(g);
        }
        Ok((cfg, file.scheduler))
    }

    /// The file's name, queue and cache keys over the preset's.
    fn apply_queues(&mut self, file: &DeviceFile) {
        if let Some(v) = &file.name {
            self.name = v.clone();
        }
        if let Some(v) = file.hw_queues {
            self.hw_queues = v.0;
        }
        if let Some(v) = file.queue_depth {
            self.queue_depth = v.0;
        }
        if let Some(v) = file.parallelism {
            self.parallelism = v.0;
        }
        if let Some(v) = file.write_cache {
            self.write_cache = v;
        }
        if let Some(v) = file.cache_bytes {
            self.cache_bytes = v.0;
        }
        if let Some(v) = file.transfer_ns_per_byte {
            self.transfer_ns_per_byte = v.0;
        }
    }

    /// The file's service times (read, write, fua_write, flush, tail) over the preset's,
    /// each checked.
    fn apply_service(
        &mut self,
        file: &DeviceFile,
        key_line: &impl Fn(&[&str]) -> String,
    ) -> Result<(), ConfigError> {
        for (key, src, dst) in [
            ("read", &file.read, &mut self.read),
            ("write", &file.write, &mut self.write),
            ("fua_write", &file.fua_write, &mut self.fua_write),
        ] {
            if let Some(d) = src {
                d.validate().map_err(|m| ConfigError {
                    location: key_line(&[key]),
                    message: m,
                })?;
                *dst = *d;
            }
        }
        if let Some(f) = &file.flush {
            f.base.validate().map_err(|m| ConfigError {
                location: key_line(&["flush", "base"]),
                message: m,
            })?;
            self.flush = f.clone();
        }
        if let Some(t) = &file.tail {
            if t.probability.0 > 1.0 {
                return Err(ConfigError {
                    location: key_line(&["tail", "probability"]),
                    message: format!(
                        "tail probability {} out of range: expected a number in [0, 1]",
                        t.probability.0
                    ),
                });
            }
            t.extra.validate().map_err(|m| ConfigError {
                location: key_line(&["tail", "extra"]),
                message: m,
            })?;
            self.tail = Some(t.clone());
        }
        Ok(())
    }

    /// Tags the device accepts at once.
    pub fn tags(&self) -> u64 {
        self.hw_queues.saturating_mul(self.queue_depth)
    }
}

/// The line of the key at a path (["hdd", "mech"]) as `origin:line`, whole keys only:
/// `write` is not `write_cache`; headers, dotted and inline keys alike (`origin` alone when
/// the key is not found).
pub fn key_line(text: &str, origin: &str, path: &[&str]) -> String {
    crate::units::key_offset(text, path).map_or(origin.to_string(), |o| {
        format!("{origin}:{}", crate::units::line_of(text, o))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ConfigError {
        DeviceConfig::from_toml(text, "dev.toml").unwrap_err()
    }

    #[test]
    fn overrides_a_preset() {
        let c = DeviceConfig::from_toml(
            "preset = \"sata-ssd\"\nqueue_depth = 8\n[read]\ndist = \"constant\"\nus = 70\n",
            "x",
        )
        .unwrap()
        .0;
        assert_eq!(c.queue_depth, 8);
        assert_eq!(c.read.mean_ns(), 70_000.0);
        assert_eq!(c.hw_queues, presets::by_name("sata-ssd").unwrap().hw_queues);
    }

    #[test]
    fn errors_name_the_line_and_expectation() {
        let e = err("preset = \"nvme\"\nqueue_depth = 0\n");
        assert_eq!(e.location, "dev.toml:2");
        assert!(e.message.contains(">= 1"), "{e}");

        let e = err("preset = \"nvme\"\n\nbogus = 3\n");
        assert_eq!(e.location, "dev.toml:3");
        assert!(e.message.contains("unknown field"), "{e}");

        let e = err("[read]\ndist = \"lognormal\"\nmean_us = -4\nsigma = 0.2\n");
        assert!(e.message.contains("from 0 to 1e9"), "{e}");
        assert!(e.location.starts_with("dev.toml:"), "{e}");

        let e = err("[write]\ndist = \"constant\"\nus = nan\n");
        assert!(e.message.contains("finite"), "{e}");

        let e = err("preset = \"floppy\"\n");
        assert_eq!(e.location, "dev.toml:1");
        assert!(e.message.contains("nvme, sas-ssd, sata-ssd, hdd"), "{e}");

        let e = err("queue_depth = [\n");
        assert!(e.location.starts_with("dev.toml:"), "{e}");

        let e = err("[read]\ndist = \"uniform\"\nmin_us = 9\nmax_us = 1\n");
        assert_eq!(e.location, "dev.toml:1");
    }
}
