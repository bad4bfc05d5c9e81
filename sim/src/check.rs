//! Invariant checks that cost more than the hot path can pay on every run: on in debug
//! builds and wherever `FSYNCSIM_INVARIANTS=1` is set (the test suite sets it through
//! `.cargo/config.toml`, so release-built tests check them too); a check never changes a
//! run's result.

use std::sync::OnceLock;

/// Whether the invariant checks run (debug build, or `FSYNCSIM_INVARIANTS=1`).
#[inline]
pub fn invariants() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    cfg!(debug_assertions)
        || *ON.get_or_init(|| std::env::var_os("FSYNCSIM_INVARIANTS").is_some_and(|v| v == "1"))
}

/// `assert!` where `invariants()` holds, nothing otherwise.
#[macro_export]
macro_rules! check {
    ($($t:tt)*) => {
        if $crate::check::invariants() {
            assert!($($t)*);
        }
    };
}

/// `assert_eq!` where `invariants()` holds, nothing otherwise.
#[macro_export]
macro_rules! check_eq {
    ($($t:tt)*) => {
        if $crate::check::invariants() {
            assert_eq!($($t)*);
        }
    };
}
