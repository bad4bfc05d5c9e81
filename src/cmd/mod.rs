//! One module per group of subcommands: each calls the library and prints through `out`.

pub(crate) mod completions;
pub(crate) mod crash;
pub(crate) mod load;
pub(crate) mod race;
pub(crate) mod scrub;
pub(crate) mod sweep;
