//! Replay: make the recorded decisions again, in order (then first-come, first-served).

use super::random::pick_index;
use super::{ChoiceView, Pick, Scheduler};

/// Replays a decision sequence recorded by an exploring scheduler.
#[derive(Debug, Clone)]
pub struct Replay {
    decisions: Vec<u32>,
    next: usize,
}

impl Replay {
    /// A replay of `decisions`.
    pub fn new(decisions: Vec<u32>) -> Self {
        Replay { decisions, next: 0 }
    }
}

impl Scheduler for Replay {
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
        let k = self.decisions.get(self.next).map_or(0, |&d| d as usize);
        self.next += 1;
        pick_index(view, k.min(n - 1))
    }

    fn decisions(&self) -> Vec<u32> {
        self.decisions[..self.next.min(self.decisions.len())].to_vec()
    }
}
