//! URW, uniform random walk: at every choice point, run a candidate with probability
//! proportional to the steps it has left (as the model estimates them, `Handle::
//! set_remaining`), which samples complete interleavings closer to uniformly than a plain
//! random walk. Tasks without an estimate weigh 1.

use super::random::pick_index;
use super::{ChoiceView, Pick, Scheduler};
use crate::rng::Stream;
use rand::Rng;

/// Remaining-steps-weighted random walk.
#[derive(Debug)]
pub struct Urw {
    rng: Stream,
    decisions: Vec<u32>,
}

impl Urw {
    /// A URW drawing from `rng`.
    pub fn new(rng: Stream) -> Self {
        Urw {
            rng,
            decisions: Vec::new(),
        }
    }
}

impl Scheduler for Urw {
    fn pauses_at_points(&self) -> bool {
        true
    }

    fn chooses_ties(&self) -> bool {
        true
    }

    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick {
        let weights: Vec<u64> = view
            .ready
            .iter()
            .copied()
            .chain(view.paused.iter().map(|p| p.task))
            .map(|t| u64::from(view.remaining(t).max(1)))
            .collect();
        let total: u64 = weights.iter().sum();
        if total == 0 {
            return Pick::Hold;
        }
        let mut x = self.rng.random_range(0..total);
        let mut k = 0;
        while x >= weights[k] {
            x -= weights[k];
            k += 1;
        }
        self.decisions.push(k as u32);
        pick_index(view, k)
    }

    fn decisions(&self) -> Vec<u32> {
        self.decisions.clone()
    }
}
