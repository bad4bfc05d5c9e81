//! Script: release tasks at named points in a given order of (task, point) steps.
//!
//! A paused task whose (task, point) is the next step runs; one that appears later in the
//! script is held; one the script never mentions runs at once. This is how a race scenario
//! replays the numbered steps of a patch log. A step marked optional is skipped when its
//! task waits for a resource and every other task but daemons is held or waits too: under
//! a fix that adds a lock, the step's task waits for a task the script holds (the race
//! the lock closes).

use super::{ChoiceView, Pick, Scheduler};

/// Releases named points in a scripted order.
#[derive(Clone, Debug)]
pub struct Script {
    steps: Vec<(String, String)>,
    next: usize,
    optional: Vec<bool>,
    skipped: Vec<usize>,
}

impl Script {
    /// A script of (task name, point label) steps, in the order they must happen.
    pub fn new(steps: Vec<(String, String)>) -> Self {
        Script {
            steps,
            next: 0,
            optional: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Marks steps optional (`optional[i]` for step i; missing entries are not).
    pub fn with_optional(mut self, optional: Vec<bool>) -> Self {
        self.optional = optional;
        self
    }

    /// The optional steps skipped so far (0-based), in order.
    pub fn skipped(&self) -> &[usize] {
        &self.skipped
    }

    /// Steps played so far.
    pub fn played(&self) -> usize {
        self.next
    }

    /// Whether every step was played.
    pub fn finished(&self) -> bool {
        self.next == self.steps.len()
    }

    fn position(&self, task: &str, point: &str) -> Option<usize> {
        self.steps[self.next..]
            .iter()
            .position(|(t, p)| t == task && p == point)
            .map(|i| i + self.next)
    }
}

impl Scheduler for Script {
    fn pauses_at_points(&self) -> bool {
        true
    }

    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick {
        loop {
            let pick = self.pick_step(view);
            // Nothing runs at once and no task but daemons can move: without the skip the
            // run waits for the daemons' timers, then is stuck.
            let stuck_optional = pick == Pick::Hold
                && view.ready.is_empty()
                && self.optional.get(self.next).copied().unwrap_or(false)
                && view.blocked_among_held(&self.steps[self.next].0);
            if !stuck_optional {
                return pick;
            }
            self.skipped.push(self.next);
            self.next += 1;
        }
    }

    fn skipped_steps(&self) -> Vec<usize> {
        self.skipped.clone()
    }

    fn unfinished(&self) -> Option<String> {
        self.steps.get(self.next).map(|(t, p)| {
            format!(
                "script step {} (task '{t}' at point '{p}') was never reached",
                self.next + 1
            )
        })
    }

    fn describe_hold(&self, _view: &ChoiceView<'_>) -> String {
        match self.steps.get(self.next) {
            Some((t, p)) => format!(
                "script step {} waits for task '{t}' to reach point '{p}', which cannot happen",
                self.next + 1
            ),
            None => "script finished but tasks are held".to_string(),
        }
    }
}

impl Script {
    /// The release the plain script makes (no optional step skipped).
    fn pick_step(&mut self, view: &ChoiceView<'_>) -> Pick {
        for (i, p) in view.paused.iter().enumerate() {
            let (task, point) = (view.task_name(p.task), view.point_name(p.point));
            match self.position(task, point) {
                Some(pos) if pos == self.next => {
                    self.next += 1;
                    return Pick::Release(i);
                }
                Some(_) => {}
                None => return Pick::Release(i),
            }
        }
        Pick::Hold
    }
}
