//! Latency distributions for device service times.

use rand::Rng;
use rand_distr::{Distribution, Exp1, StandardNormal};
use serde::Deserialize;
use sim::{Nanos, Stream};

/// Declares a number newtype that parses only finite values within `[lo, hi]`, and says
/// so (with the field's `what`) when it does not.
macro_rules! bounded_f64 {
    ($(#[$doc:meta])* $name:ident, $lo:expr, $hi:expr, $what:literal, $range:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
        pub struct $name(pub f64);

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                let v = f64::deserialize(d)?;
                if v.is_finite() && ($lo..=$hi).contains(&v) {
                    Ok($name(v))
                } else {
                    Err(D::Error::custom(format!(
                        concat!("invalid ", $what, " {}: expected a finite number from ", $range),
                        $crate::device::dist::num_text(v)
                    )))
                }
            }
        }
    };
}
pub(crate) use bounded_f64;

bounded_f64!(
    /// A finite, non-negative number up to 1e9, which bounds every field it is used for (µs:
    /// 1000 s; ns per byte; ms) far above any real device while keeping virtual time exact.
    NonNeg, 0.0, 1e9, "value", "0 to 1e9"
);

bounded_f64!(
    /// A log-normal shape (standard deviation of ln x): 0 to 5 (e^5 ≈ 150× spread per
    /// sigma; larger shapes put the mean in a tail no run samples).
    Shape, 0.0, 5.0, "sigma", "0 to 5"
);

/// A number as an error message shows it: plain when readable, else in exponent form.
pub fn num_text(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-3..1e7).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A service-time distribution; parameters in microseconds in TOML
/// (`{ dist = "lognormal", mean_us = 45, sigma = 0.25 }`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum LatencyDist {
    /// Always `us`.
    Constant {
        /// Value, µs.
        us: NonNeg,
    },
    /// Uniform in [`min_us`, `max_us`].
    Uniform {
        /// Lower bound, µs.
        min_us: NonNeg,
        /// Upper bound, µs.
        max_us: NonNeg,
    },
    /// Exponential with mean `mean_us`.
    Exponential {
        /// Mean, µs.
        mean_us: NonNeg,
    },
    /// Log-normal with mean `mean_us`; `sigma` is the standard deviation of ln(x).
    Lognormal {
        /// Mean, µs.
        mean_us: NonNeg,
        /// Shape: standard deviation of the underlying normal.
        sigma: Shape,
    },
}

impl LatencyDist {
    /// A constant distribution of `ns` nanoseconds.
    pub fn constant_ns(ns: f64) -> Self {
        LatencyDist::Constant {
            us: NonNeg(ns / 1e3),
        }
    }

    /// Checks cross-field constraints; returns what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            LatencyDist::Uniform { min_us, max_us } if min_us.0 > max_us.0 => Err(format!(
                "uniform distribution has min_us {} > max_us {}",
                min_us.0, max_us.0
            )),
            _ => Ok(()),
        }
    }

    /// The distribution's mean, ns.
    pub fn mean_ns(&self) -> f64 {
        1e3 * match self {
            LatencyDist::Constant { us } => us.0,
            LatencyDist::Uniform { min_us, max_us } => (min_us.0 + max_us.0) / 2.0,
            LatencyDist::Exponential { mean_us } => mean_us.0,
            LatencyDist::Lognormal { mean_us, .. } => mean_us.0,
        }
    }

    /// Draws one value, ns.
    pub fn sample(&self, rng: &mut Stream) -> Nanos {
        let us = match *self {
            LatencyDist::Constant { us } => us.0,
            LatencyDist::Uniform { min_us, max_us } => {
                if max_us.0 > min_us.0 {
                    rng.random_range(min_us.0..max_us.0)
                } else {
                    min_us.0
                }
            }
            LatencyDist::Exponential { mean_us } => {
                let x: f64 = Exp1.sample(rng);
                x * mean_us.0
            }
            LatencyDist::Lognormal { mean_us, sigma } => {
                if mean_us.0 == 0.0 {
                    0.0
                } else {
                    // E[X] = exp(mu + sigma^2/2)  =>  mu = ln(mean) - sigma^2/2.
                    let mu = mean_us.0.ln() - sigma.0 * sigma.0 / 2.0;
                    let z: f64 = StandardNormal.sample(rng);
                    (mu + sigma.0 * z).exp()
                }
            }
        };
        (us * 1e3 + 0.5) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::RngStreams;

    fn mean_of(d: &LatencyDist, n: usize) -> f64 {
        let mut rng = RngStreams::derive(9, "dist-test");
        (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn sample_means_match_declared_means() {
        let cases = [
            LatencyDist::Constant { us: NonNeg(40.0) },
            LatencyDist::Uniform {
                min_us: NonNeg(40.0),
                max_us: NonNeg(65.0),
            },
            LatencyDist::Exponential {
                mean_us: NonNeg(100.0),
            },
            LatencyDist::Lognormal {
                mean_us: NonNeg(45.0),
                sigma: Shape(0.5),
            },
        ];
        for d in &cases {
            let m = mean_of(d, 200_000);
            let rel = (m - d.mean_ns()).abs() / d.mean_ns();
            assert!(rel < 0.01, "{d:?}: sample mean {m} vs {}", d.mean_ns());
        }
    }

    #[test]
    fn uniform_min_above_max_is_invalid() {
        let d = LatencyDist::Uniform {
            min_us: NonNeg(5.0),
            max_us: NonNeg(1.0),
        };
        assert!(d.validate().is_err());
    }
}
