//! `scrub`: a btrfs scrub on a modelled device.

#[allow(unused_imports)]
use crate::*;

pub(crate) fn scrub(a: ScrubArgs) -> Result<(), Failure> {
    use models::btrfs::{layout::LayoutParams, scrub as sc};
    let device = DiskConfig::resolve(&a.device).map_err(|e| Failure(e.to_string()))?;
    let base = LayoutParams::default();
    let layout = LayoutParams {
        files: ((base.files as f64 * a.scale).round() as u64).max(16),
        metadata_dup: a.metadata == "dup",
        ..base
    };
    let policies = if a.compare {
        vec![sc::ScrubPolicy::ReadaFramework, sc::ScrubPolicy::PathReada]
    } else {
        vec![a.policy]
    };
    let runs = sc::compare(&layout, &device, a.seed, &policies).map_err(Failure)?;
    if a.json {
        outln!("{:#}", reports::scrub::json(&runs));
    } else if a.compare {
        out!("{}", reports::scrub::compare_text(&runs));
    } else {
        out!("{}", reports::scrub::text(&runs[0]));
    }
    Ok(())
}
