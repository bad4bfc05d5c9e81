//! Request-queue and elevator tunables: the `[scheduler]` table of a device file. Every
//! default is the kernel's, cited; times are in ms as sysfs shows them (HZ = 1000). A
//! `DiskConfig` is a device's configuration plus these; `DiskConfig::resolve` reads
//! `--device` (presets, built-in and user device files).

use super::NAMES;
use crate::device::config::{key_line, ConfigError, DeviceConfig};
use crate::device::presets;
use serde::Deserialize;
use sim::Nanos;

const MS: Nanos = 1_000_000;

/// Request-queue limits and plugging (`block/blk-settings.c`, v2.6.37).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueTunables {
    /// Unplug once this many requests are queued (`q->unplug_thresh = 4`,
    /// blk-settings.c:blk_queue_make_request@v2.6.37).
    pub unplug_thresh: u64,
    /// Unplug timer (`q->unplug_delay = msecs_to_jiffies(3)`, same function).
    pub unplug_delay: Nanos,
    /// Largest request in bytes (`max_sectors_kb`: BLK_DEF_MAX_SECTORS = 1024 sectors,
    /// include/linux/blkdev.h@v2.6.37).
    pub max_bytes: u64,
    /// The device honours FUA (`blk_queue_flush(q, REQ_FLUSH | REQ_FUA)`; sd.c sets REQ_FUA
    /// when the disk reports DPOFUA, libata hides it unless `libata.fua=1`). Without it a
    /// FUA write is followed by a POSTFLUSH (blk-flush.c:blk_do_flush@v2.6.37).
    pub fua: bool,
    /// Plugging on (2.6.37 legacy queue); mq-deadline runs without it (blk-mq has no
    /// queue plug).
    pub plugging: bool,
    /// `queue/rotational` as set through sysfs; None: from the device (an `hdd` geometry).
    pub rotational: Option<bool>,
}

/// deadline's tunables (`block/deadline-iosched.c`, v2.6.37; mq-deadline v5.10 has the
/// same defaults in `block/mq-deadline.c`).
#[derive(Clone, Debug, PartialEq)]
pub struct DeadlineTunables {
    /// `read_expire = HZ / 2`.
    pub read_expire: Nanos,
    /// `write_expire = 5 * HZ`.
    pub write_expire: Nanos,
    /// `writes_starved = 2`: read batches before writes get one.
    pub writes_starved: u32,
    /// `fifo_batch = 16`: requests per batch.
    pub fifo_batch: u32,
    /// `front_merges = 1`.
    pub front_merges: bool,
}

/// CFQ's tunables (`block/cfq-iosched.c`, v2.6.37, top of file and `cfq_init_queue`).
#[derive(Clone, Debug, PartialEq)]
pub struct CfqTunables {
    /// `cfq_quantum = 8`.
    pub quantum: u32,
    /// `cfq_fifo_expire[1] = HZ / 8` (sync).
    pub fifo_expire_sync: Nanos,
    /// `cfq_fifo_expire[0] = HZ / 4` (async).
    pub fifo_expire_async: Nanos,
    /// `cfq_back_max = 16 * 1024` KiB.
    pub back_seek_max: u64,
    /// `cfq_back_penalty = 2`.
    pub back_seek_penalty: u64,
    /// `cfq_slice_sync = HZ / 10`.
    pub slice_sync: Nanos,
    /// `cfq_slice_async = HZ / 25`.
    pub slice_async: Nanos,
    /// `cfq_slice_async_rq = 2`.
    pub slice_async_rq: u32,
    /// `cfq_slice_idle = HZ / 125`.
    pub slice_idle: Nanos,
    /// `cfqd->cfq_latency = 1` (low_latency).
    pub low_latency: bool,
}

/// All tunables of a device's block layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Tunables {
    /// Queue limits and plugging.
    pub queue: QueueTunables,
    /// deadline.
    pub deadline: DeadlineTunables,
    /// mq-deadline.
    pub mq_deadline: DeadlineTunables,
    /// cfq.
    pub cfq: CfqTunables,
}

impl Default for Tunables {
    fn default() -> Self {
        let dl = DeadlineTunables {
            read_expire: 500 * MS,
            write_expire: 5_000 * MS,
            writes_starved: 2,
            fifo_batch: 16,
            front_merges: true,
        };
        Tunables {
            queue: QueueTunables {
                unplug_thresh: 4,
                unplug_delay: 3 * MS,
                max_bytes: 512 * 1024,
                fua: true,
                plugging: true,
                rotational: None,
            },
            deadline: dl.clone(),
            mq_deadline: dl,
            cfq: CfqTunables {
                quantum: 8,
                fifo_expire_sync: 125 * MS,
                fifo_expire_async: 250 * MS,
                back_seek_max: 16 * 1024 * 1024,
                back_seek_penalty: 2,
                slice_sync: 100 * MS,
                slice_async: 40 * MS,
                slice_async_rq: 2,
                slice_idle: 8 * MS,
                low_latency: true,
            },
        }
    }
}

/// The `[scheduler]` table as written (all optional; sysfs names, times in ms).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerTable {
    /// Elevator name.
    pub name: Option<String>,
    /// Request queue: `unplug_thresh`.
    pub unplug_thresh: Option<u64>,
    /// Request queue: `unplug_delay` in ms.
    pub unplug_delay_ms: Option<u64>,
    /// Request queue: `max_sectors_kb`.
    pub max_sectors_kb: Option<u64>,
    /// Device honours FUA.
    pub fua: Option<bool>,
    /// `queue/rotational` (0 or 1 in sysfs; here a boolean).
    pub rotational: Option<bool>,
    /// deadline / mq-deadline: `read_expire` ms.
    pub read_expire: Option<u64>,
    /// deadline / mq-deadline: `write_expire` ms.
    pub write_expire: Option<u64>,
    /// deadline / mq-deadline: `writes_starved`.
    pub writes_starved: Option<u32>,
    /// deadline / mq-deadline: `fifo_batch`.
    pub fifo_batch: Option<u32>,
    /// deadline / mq-deadline: `front_merges`.
    pub front_merges: Option<bool>,
    /// cfq: `quantum`.
    pub quantum: Option<u32>,
    /// cfq: `fifo_expire_sync` ms.
    pub fifo_expire_sync: Option<u64>,
    /// cfq: `fifo_expire_async` ms.
    pub fifo_expire_async: Option<u64>,
    /// cfq: `back_seek_max` KiB.
    pub back_seek_max: Option<u64>,
    /// cfq: `back_seek_penalty`.
    pub back_seek_penalty: Option<u64>,
    /// cfq: `slice_sync` ms.
    pub slice_sync: Option<u64>,
    /// cfq: `slice_async` ms.
    pub slice_async: Option<u64>,
    /// cfq: `slice_async_rq`.
    pub slice_async_rq: Option<u32>,
    /// cfq: `slice_idle` ms.
    pub slice_idle: Option<u64>,
    /// cfq: `low_latency`.
    pub low_latency: Option<bool>,
}

impl SchedulerTable {
    /// Applies the table to `t`; an error names the offending key and what is expected.
    pub fn apply(&self, t: &mut Tunables) -> Result<(), (String, String)> {
        fn pos(key: &str, v: u64) -> Result<u64, (String, String)> {
            if (1..=1_000_000_000).contains(&v) {
                Ok(v)
            } else {
                Err((key.into(), format!("{key} = {v}: expected 1 to 1000000000")))
            }
        }
        fn ms(key: &str, v: u64) -> Result<Nanos, (String, String)> {
            if v <= 3_600_000 {
                Ok(v * MS)
            } else {
                Err((key.into(), format!("{key} = {v}: expected 0 to 3600000 ms")))
            }
        }
        fn ms_pos(key: &str, v: u64) -> Result<Nanos, (String, String)> {
            if (1..=3_600_000).contains(&v) {
                Ok(v * MS)
            } else {
                Err((key.into(), format!("{key} = {v}: expected 1 to 3600000 ms")))
            }
        }
        if let Some(v) = self.unplug_thresh {
            t.queue.unplug_thresh = pos("unplug_thresh", v)?;
        }
        if let Some(v) = self.unplug_delay_ms {
            t.queue.unplug_delay = ms_pos("unplug_delay_ms", v)?;
        }
        if let Some(v) = self.max_sectors_kb {
            t.queue.max_bytes = pos("max_sectors_kb", v)?.min(1 << 30) * 1024;
        }
        if let Some(v) = self.fua {
            t.queue.fua = v;
        }
        if let Some(v) = self.rotational {
            t.queue.rotational = Some(v);
        }
        for d in [&mut t.deadline, &mut t.mq_deadline] {
            if let Some(v) = self.read_expire {
                d.read_expire = ms("read_expire", v)?;
            }
            if let Some(v) = self.write_expire {
                d.write_expire = ms("write_expire", v)?;
            }
            if let Some(v) = self.writes_starved {
                d.writes_starved = v;
            }
            if let Some(v) = self.fifo_batch {
                d.fifo_batch = pos("fifo_batch", v.into())? as u32;
            }
            if let Some(v) = self.front_merges {
                d.front_merges = v;
            }
        }
        let c = &mut t.cfq;
        if let Some(v) = self.quantum {
            c.quantum = pos("quantum", v.into())? as u32;
        }
        if let Some(v) = self.fifo_expire_sync {
            c.fifo_expire_sync = ms("fifo_expire_sync", v)?;
        }
        if let Some(v) = self.fifo_expire_async {
            c.fifo_expire_async = ms("fifo_expire_async", v)?;
        }
        if let Some(v) = self.back_seek_max {
            c.back_seek_max = pos("back_seek_max", v)?.min(1 << 30) * 1024;
        }
        if let Some(v) = self.back_seek_penalty {
            c.back_seek_penalty = pos("back_seek_penalty", v)?;
        }
        if let Some(v) = self.slice_sync {
            c.slice_sync = ms_pos("slice_sync", v)?;
        }
        if let Some(v) = self.slice_async {
            c.slice_async = ms_pos("slice_async", v)?;
        }
        if let Some(v) = self.slice_async_rq {
            c.slice_async_rq = pos("slice_async_rq", v.into())? as u32;
        }
        if let Some(v) = self.slice_idle {
            c.slice_idle = ms("slice_idle", v)?;
        }
        if let Some(v) = self.low_latency {
            c.low_latency = v;
        }
        Ok(())
    }
}

/// A disk's configuration: its device's (`DeviceConfig`, the driver and hardware) and its
/// request queue's (the device file's `scheduler` key). Reads of the device's fields go
/// through (`Deref`), as a disk is its device plus the queue above it.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskConfig {
    /// The device below the queue.
    pub device: DeviceConfig,
    /// I/O scheduler name (`none` = no request-queue stage).
    pub scheduler: String,
    /// Request-queue and elevator tunables (the `[scheduler]` table).
    pub sched: Tunables,
}

impl From<DeviceConfig> for DiskConfig {
    /// A device with no request queue above it (`scheduler = "none"`, default tunables).
    fn from(device: DeviceConfig) -> Self {
        DiskConfig {
            device,
            scheduler: "none".into(),
            sched: Tunables::default(),
        }
    }
}

impl std::ops::Deref for DiskConfig {
    type Target = DeviceConfig;
    fn deref(&self) -> &DeviceConfig {
        &self.device
    }
}

impl std::ops::DerefMut for DiskConfig {
    fn deref_mut(&mut self) -> &mut DeviceConfig {
        &mut self.device
    }
}

/// Device files shipped inside the binary, usable by name like a preset.
pub const BUILTIN_FILES: [(&str, &str); 3] = [
    (
        "hdd-cfq",
        include_str!("../../../scenarios/devices/hdd-cfq.toml"),
    ),
    (
        "fc-array-cfq",
        include_str!("../../../scenarios/devices/fc-array-cfq.toml"),
    ),
    (
        "sata-hdd-cfq",
        include_str!("../../../scenarios/devices/sata-hdd-cfq.toml"),
    ),
];

impl DiskConfig {
    /// Resolves `--device`: a preset name, a built-in device file, or a path to a device
    /// TOML file.
    pub fn resolve(spec: &str) -> Result<Self, ConfigError> {
        if let Some(cfg) = presets::by_name(spec) {
            return Ok(cfg.into());
        }
        if let Some((name, text)) = BUILTIN_FILES.iter().find(|(n, _)| *n == spec) {
            return Self::from_toml(text, &format!("scenarios/devices/{name}.toml"));
        }
        let path = std::path::Path::new(spec);
        if spec.ends_with(".toml") || path.exists() {
            let text = crate::units::read_text(spec, "device")
                .map_err(|(location, message)| ConfigError { location, message })?;
            return Self::from_toml(&text, spec);
        }
        Err(ConfigError {
            location: "--device".to_string(),
            message: format!(
                "unknown device '{spec}': expected one of {}, {} or a path to a device TOML file",
                presets::NAMES.join(", "),
                BUILTIN_FILES.map(|(n, _)| n).join(", ")
            ),
        })
    }

    /// Parses a device TOML text (`origin` names it in errors): the device's keys, then its
    /// `scheduler`.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let (device, scheduler) = DeviceConfig::from_toml(text, origin)?;
        let mut cfg = DiskConfig::from(device);
        if let Some(v) = scheduler {
            cfg.apply_scheduler(v, text, origin)?;
        }
        Ok(cfg)
    }

    /// `scheduler`: a name, or a `[scheduler]` table of a name and its tunables.
    fn apply_scheduler(
        &mut self,
        v: toml::Value,
        text: &str,
        origin: &str,
    ) -> Result<(), ConfigError> {
        let key_line = |path: &[&str]| key_line(text, origin, path);
        let table = scheduler_table(v, text, origin)?;
        if table.name.is_none() {
            return Err(ConfigError {
                location: key_line(&["scheduler"]),
                message: format!("[scheduler] needs name = one of {}", NAMES.join(", ")),
            });
        }
        if let Some(s) = &table.name {
            if !NAMES.contains(&s.as_str()) {
                return Err(ConfigError {
                    location: key_line(&["scheduler"]),
                    message: format!(
                        "unknown I/O scheduler '{s}': expected one of {}",
                        NAMES.join(", ")
                    ),
                });
            }
            self.scheduler = s.clone();
        }
        table
            .apply(&mut self.sched)
            .map_err(|(key, message)| ConfigError {
                location: key_line(&["scheduler", &key]),
                message,
            })
    }
}

/// The `scheduler` value as a table: a name alone, or the `[scheduler]` table.
fn scheduler_table(
    v: toml::Value,
    text: &str,
    origin: &str,
) -> Result<SchedulerTable, ConfigError> {
    Ok(match v {
        toml::Value::String(name) => SchedulerTable {
            name: Some(name),
            ..Default::default()
        },
        toml::Value::Table(t) => {
            toml::Value::Table(t)
                .try_into::<SchedulerTable>()
                .map_err(|e| {
                    // A table converted from a value has no spans: read it again from
                    // the text for the offending key's line.
                    #[derive(Deserialize)]
                    struct SchedulerOnly {
                        #[allow(dead_code)]
                        scheduler: SchedulerTable,
                    }
                    let location = match toml::from_str::<SchedulerOnly>(text) {
                        Err(e) => crate::units::toml_error(text, origin, &e).0,
                        Ok(_) => key_line(text, origin, &["scheduler"]),
                    };
                    ConfigError {
                        location,
                        message: format!("[scheduler]: {}", e.message().replace('\n', " ")),
                    }
                })?
        }
        other => {
            return Err(ConfigError {
                location: key_line(text, origin, &["scheduler"]),
                message: format!(
                    "scheduler = {other}: expected a name ({}) or a [scheduler] table",
                    NAMES.join(", ")
                ),
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_rejects_unknown_names() {
        let e = DiskConfig::resolve("floppy").unwrap_err();
        assert_eq!(e.location, "--device");
        assert!(e.message.contains("hdd"));
    }
}
