//! Race scenarios: each shows its waste before its fix and none after; invariants hold.

use models::device::DeviceConfig;
use models::scenario::{compare, run, Scenario};

#[test]
fn debug_print_all() {
    for sc in Scenario::builtin() {
        let dev = DeviceConfig::resolve(&sc.device).unwrap();
        for (label, pol, exp) in [("pre", sc.pre_policy(), &sc.expect_pre), ("post", sc.post_policy(), &sc.expect_post)] {
            let r = run(&sc, &pol, &dev, sc.seed, true);
            eprintln!("== {} {label} ({}) end={} hash={:#x}", sc.name, pol.name, r.end, r.trace_hash);
            for (k, v) in r.metrics.scalars() { if v != 0 { eprint!("{k}={v} "); } }
            eprintln!("{:?}", r.metrics.unnecessary_full_commits_by_cause);
            for v in &r.violations { eprintln!("  VIOLATION {}: {}", v.invariant, v.message); }
            for m in compare(exp, &r) { eprintln!("  MISMATCH {m}"); }
        }
    }
}
