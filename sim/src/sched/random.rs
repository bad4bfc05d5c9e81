//! Random walk: at every choice point, run a uniformly random candidate (a task runnable at
//! this instant or one paused at a named point). Seeded; records its decisions.

use super::{ChoiceView, Pick, Scheduler};
use crate::rng::Stream;
use rand::Rng;

/// Uniform choice among the candidates of each choice point.
#[derive(Debug)]
pub struct RandomWalk {
    rng: Stream,
    decisions: Vec<u32>,
}

impl RandomWalk {
    /// A random walk drawing from `rng` (give it its own stream, e.g. "scheduler").
    pub fn new(rng: Stream) -> Self {
        RandomWalk {
            rng,
            decisions: Vec::new(),
        }
    }
}

/// Turns an index over `ready` ++ `paused` into a pick.
pub(crate) fn pick_index(view: &ChoiceView<'_>, k: usize) -> Pick {
    if k < view.ready.len() {
        Pick::Ready(k)
    } else {
        Pick::Release(k - view.ready.len())
    }
}

impl Scheduler for RandomWalk {
    fn pauses_at_points(&self) -> bool {
        true
    }

    fn chooses_ties(&self) -> bool {
        true
    }

    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick {
        let n = view.ready.len() + view.paused.len();
        if n == 0 {
            return Pick::Hold;
        }
        let k = self.rng.random_range(0..n);
        self.decisions.push(k as u32);
        pick_index(view, k)
    }

    fn decisions(&self) -> Vec<u32> {
        self.decisions.clone()
    }
}
