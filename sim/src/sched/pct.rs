//! PCT, probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010), over named points
//! and same-instant ties: every task gets a random priority when first seen; at each choice
//! the highest-priority candidate runs; at d − 1 random change points among the first
//! `horizon` choices, the task that runs drops below every initial priority.

use super::random::pick_index;
use super::{ChoiceView, Pick, Scheduler};
use crate::rng::Stream;
use crate::task::TaskId;
use rand::Rng;
use std::collections::BTreeMap;

/// PCT with depth `d`.
#[derive(Debug)]
pub struct Pct {
    rng: Stream,
    priorities: BTreeMap<TaskId, u64>,
    change_points: Vec<u64>,
    step: u64,
    decisions: Vec<u32>,
}

/// Initial priorities lie above this; change points assign values below it.
const BASE: u64 = 1 << 32;

impl Pct {
    /// PCT of depth `depth` (≥ 1) whose change points fall among the first `horizon` choices.
    pub fn new(mut rng: Stream, depth: u32, horizon: u64) -> Self {
        let mut change_points: Vec<u64> = (1..depth.max(1))
            .map(|_| rng.random_range(0..horizon.max(1)))
            .collect();
        change_points.sort_unstable();
        Pct {
            rng,
            priorities: BTreeMap::new(),
            change_points,
            step: 0,
            decisions: Vec::new(),
        }
    }

    fn priority(&mut self, t: TaskId) -> u64 {
        let rng = &mut self.rng;
        *self
            .priorities
            .entry(t)
            .or_insert_with(|| BASE + u64::from(rng.random::<u32>()))
    }
}

impl Scheduler for Pct {
    fn pauses_at_points(&self) -> bool {
        true
    }

    fn chooses_ties(&self) -> bool {
        true
    }

    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick {
        let tasks: Vec<TaskId> = view
            .ready
            .iter()
            .copied()
            .chain(view.paused.iter().map(|p| p.task))
            .collect();
        if tasks.is_empty() {
            return Pick::Hold;
        }
        let mut best = 0;
        let mut best_p = 0;
        for (k, &t) in tasks.iter().enumerate() {
            let p = self.priority(t);
            if p > best_p {
                best = k;
                best_p = p;
            }
        }
        // At a change point the chosen task drops below every initial priority.
        let changes = self
            .change_points
            .iter()
            .filter(|&&c| c == self.step)
            .count();
        if changes > 0 {
            let low = self.step;
            self.priorities.insert(tasks[best], low);
        }
        self.step += 1;
        self.decisions.push(best as u32);
        pick_index(view, best)
    }

    fn decisions(&self) -> Vec<u32> {
        self.decisions.clone()
    }
}
