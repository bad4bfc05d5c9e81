//! Depth-first enumeration: follow a given prefix of decisions, then always take the first
//! candidate; records every decision and the number of candidates it had, so a driver can
//! run every interleaving of a scenario in turn (`models::sweep::exhaustive`).
//!
//! Its choices are the random walk's (a candidate among the tasks runnable at this instant
//! and those paused at named points), so the space it enumerates is the one `RandomWalk`
//! samples.

use super::random::pick_index;
use super::{ChoiceView, Pick, Scheduler};

/// Follows `prefix`, then candidate 0 at every further choice.
#[derive(Debug, Clone)]
pub struct Dfs {
    prefix: Vec<u32>,
    decisions: Vec<u32>,
    widths: Vec<u32>,
}

impl Dfs {
    /// A run that makes the decisions of `prefix` first (each cut to its choice's last
    /// candidate), then takes candidate 0.
    pub fn new(prefix: Vec<u32>) -> Self {
        Dfs {
            prefix,
            decisions: Vec::new(),
            widths: Vec::new(),
        }
    }
}

impl Scheduler for Dfs {
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
        let want = self.prefix.get(self.decisions.len()).copied().unwrap_or(0);
        let k = want.min(n as u32 - 1);
        self.decisions.push(k);
        self.widths.push(n as u32);
        pick_index(view, k as usize)
    }

    fn decisions(&self) -> Vec<u32> {
        self.decisions.clone()
    }

    fn widths(&self) -> Vec<u32> {
        self.widths.clone()
    }
}
