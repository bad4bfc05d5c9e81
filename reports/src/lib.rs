//! Turns fsyncsim results into text tables and JSON (later plots and timelines). Nothing
//! else in fsyncsim renders output.

pub mod bench;
pub mod devices;
pub mod fio;
pub mod latency;
pub mod output;
pub mod race;
pub mod sweep;
pub mod workload;
