//! Flag values shared by several subcommands, so that one flag means one thing everywhere
//! (issue 14: `--seeds` is a range `A..B` in `sweep` and in `compare`).

/// Most seeds per side one `compare` runs.
pub const MAX_COMPARE_SEEDS: u64 = 10_000;

/// `compare --seeds`: a range `A..B` (B exclusive), or a bare count `N`, shorthand for the
/// `N` seeds from `--seed` (default: the workload's seed) on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompareSeeds {
    /// The first seed, when a range named it.
    pub start: Option<u64>,
    /// Seeds per side.
    pub count: u64,
}

impl CompareSeeds {
    /// Parses `A..B` or `N` (1 ≤ count ≤ [`MAX_COMPARE_SEEDS`]).
    pub fn parse(s: &str) -> Result<CompareSeeds, String> {
        let too_many = |n: u64| {
            format!("{n} seeds: expected at most {MAX_COMPARE_SEEDS} per side (a count N or a range A..B)")
        };
        if s.contains("..") {
            let r = models::sweep::parse_seeds(s)?;
            let count = r.end - r.start;
            if count > MAX_COMPARE_SEEDS {
                return Err(too_many(count));
            }
            return Ok(CompareSeeds {
                start: Some(r.start),
                count,
            });
        }
        match s.trim().parse::<u64>() {
            Ok(0) | Err(_) => Err(format!(
                "invalid seeds '{s}': expected a seed range A..B (B exclusive) or a count N for the N seeds from --seed on"
            )),
            Ok(n) if n > MAX_COMPARE_SEEDS => Err(too_many(n)),
            Ok(n) => Ok(CompareSeeds {
                start: None,
                count: n,
            }),
        }
    }

    /// Seeds per side.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The first seed: the range's start, else `--seed`, else the workload's `default`.
    /// Refuses a range together with `--seed`, and seeds beyond 2^64 − 1.
    pub fn first(&self, seed_flag: Option<u64>, default: u64) -> Result<u64, String> {
        let first = match (self.start, seed_flag) {
            (Some(a), Some(s)) if a != s => {
                return Err(format!(
                    "--seed {s} and --seeds {a}..{} both name the first seed: give one",
                    a + self.count
                ))
            }
            (Some(a), _) => a,
            (None, s) => s.unwrap_or(default),
        };
        if first.checked_add(self.count - 1).is_none() {
            return Err(format!(
                "--seed {first} --seeds {}: the seeds would pass 18446744073709551615",
                self.count
            ));
        }
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag of every subcommand, given each of a few values, parses or is refused, and
    /// never panics (clap panics at parse time when a field's type and its parser disagree,
    /// as `--cpus` did).
    #[test]
    fn no_flag_value_panics_the_parser() {
        use clap::{CommandFactory, Parser};
        let cli = crate::Cli::command();
        let values = [
            "1",
            "0",
            "-1",
            "unlimited",
            "3..5",
            "1/2",
            "4k",
            "1s",
            "x",
            "",
        ];
        let mut tried = 0;
        for sub in cli.get_subcommands() {
            let name = sub.get_name().to_string();
            let positionals: Vec<String> = sub
                .get_positionals()
                .filter(|a| a.is_required_set())
                .map(|_| "x".to_string())
                .collect();
            for arg in sub.get_opts() {
                let Some(long) = arg.get_long() else { continue };
                for v in values {
                    let mut argv = vec!["fsyncsim".to_string(), name.clone()];
                    argv.extend(positionals.iter().cloned());
                    argv.push(format!("--{long}={v}"));
                    let r = std::panic::catch_unwind(|| crate::Cli::try_parse_from(&argv).is_ok());
                    assert!(r.is_ok(), "{argv:?} panicked");
                    tried += 1;
                }
            }
        }
        assert!(tried > 100, "{tried}");
    }

    #[test]
    fn compare_seeds_take_a_range_or_a_count() {
        assert_eq!(
            CompareSeeds::parse("3"),
            Ok(CompareSeeds {
                start: None,
                count: 3
            })
        );
        let r = CompareSeeds::parse("5..8").unwrap();
        assert_eq!((r.start, r.count), (Some(5), 3));
        assert_eq!(r.first(None, 1), Ok(5));
        assert_eq!(r.first(Some(5), 1), Ok(5));
        assert!(r.first(Some(6), 1).is_err());
        assert_eq!(CompareSeeds::parse("2").unwrap().first(Some(9), 1), Ok(9));
        assert!(CompareSeeds::parse("2")
            .unwrap()
            .first(Some(u64::MAX), 1)
            .is_err());
        for bad in ["0", "x", "8..5", "0..20000", "10001", "-1"] {
            assert!(CompareSeeds::parse(bad).is_err(), "{bad}");
        }
    }
}
