//! Loads that drive the models: the engine benchmark and fio-like device loads.

pub mod bench;
pub mod fio;
