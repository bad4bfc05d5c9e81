//! Turns fsyncsim results into text tables, JSON, plots and timelines. Nothing
//! else in fsyncsim renders output.

pub mod bench;
pub mod block;
pub mod checkpoint;
pub mod crash;
pub mod devices;
pub mod fio;
pub mod fio_json;
pub mod hdrlog;
pub mod html;
pub mod latency;
pub mod output;
pub mod perfetto;
pub mod plot;
pub mod race;
pub mod scrub;
pub mod sweep;
pub mod texttable;
pub mod validate;
pub mod vocab;
pub mod workload;
