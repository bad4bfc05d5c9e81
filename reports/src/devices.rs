//! Output of `fsyncsim devices`: one row per preset.

use models::device::DeviceConfig;

/// A table of device presets.
pub fn text(cfgs: &[DeviceConfig]) -> String {
    let mut s = format!(
        "{:<12} {:>6} {:>6} {:>5} {:>6} {:>10} {:>10} {:>10} {:>8}\n",
        "preset", "queues", "depth", "par", "cache", "read_us", "write_us", "fua_us", "hdd"
    );
    for c in cfgs {
        s.push_str(&format!(
            "{:<12} {:>6} {:>6} {:>5} {:>6} {:>10.1} {:>10.1} {:>10.1} {:>8}\n",
            c.name,
            c.hw_queues,
            c.queue_depth,
            c.parallelism,
            if c.write_cache { "yes" } else { "no" },
            c.read.mean_ns() / 1e3,
            c.write.mean_ns() / 1e3,
            c.fua_write.mean_ns() / 1e3,
            c.hdd
                .map_or("-".to_string(), |g| format!("{:.0}rpm", g.rpm.0)),
        ));
    }
    s
}
