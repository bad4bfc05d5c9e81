//! Named, independent random streams derived from one run seed.
//!
//! Every component draws from its own stream (ChaCha8 keyed by the run seed, with the stream
//! number taken from a stable hash of the stream's name), so extra draws in one component
//! never shift another component's sequence: two policies compared on the same seed see the
//! same device latencies (common random numbers).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// One named random stream; implements `rand::RngCore`.
pub type Stream = ChaCha8Rng;

/// Hands out named streams for one run seed; each name may be taken once.
#[derive(Debug)]
pub struct RngStreams {
    seed: u64,
    taken: BTreeSet<String>,
}

/// FNV-1a, 64 bits, of `bytes`: the one stable (platform- and version-independent) hash
/// of the project (stream names, sweep checkpoints and identities, b-tree name keys); never
/// std's `DefaultHasher`, which may change.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// FNV-1a 64 of a stream name.
pub fn stable_hash(s: &str) -> u64 {
    fnv1a64(s.as_bytes())
}

impl RngStreams {
    /// Creates the stream set of a run with this seed.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            taken: BTreeSet::new(),
        }
    }

    /// The run seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream with this name; panics if the name was already taken (two components
    /// sharing a stream would silently break common random numbers).
    pub fn stream(&mut self, name: &str) -> Stream {
        assert!(
            self.taken.insert(name.to_string()),
            "RNG stream '{name}' requested twice: give each component its own stream name"
        );
        Self::derive(self.seed, name)
    }

    /// The stream for `name` under `seed`, without registering it (for tests and tools).
    pub fn derive(seed: u64, name: &str) -> Stream {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stable_hash(name));
        rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_independent_of_each_others_draws() {
        let mut a = RngStreams::new(7);
        let mut dev = a.stream("device");
        let mut wl = a.stream("workload");
        let dev_seq: Vec<u64> = (0..8).map(|_| dev.next_u64()).collect();
        let _ = wl.next_u64();

        let mut b = RngStreams::new(7);
        let mut wl2 = b.stream("workload");
        for _ in 0..1000 {
            wl2.next_u64();
        }
        let mut dev2 = b.stream("device");
        let dev_seq2: Vec<u64> = (0..8).map(|_| dev2.next_u64()).collect();
        assert_eq!(dev_seq, dev_seq2);
    }

    #[test]
    fn different_names_and_seeds_differ() {
        let x = RngStreams::derive(1, "a").next_u64();
        assert_ne!(x, RngStreams::derive(1, "b").next_u64());
        assert_ne!(x, RngStreams::derive(2, "a").next_u64());
        assert_eq!(x, RngStreams::derive(1, "a").next_u64());
    }

    #[test]
    #[should_panic(expected = "requested twice")]
    fn a_name_is_taken_once() {
        let mut s = RngStreams::new(1);
        let _ = s.stream("x");
        let _ = s.stream("x");
    }
}
