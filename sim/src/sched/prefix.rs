//! Script prefix, then exploration: the first steps of a script are played in order (as
//! `Script` does), after which another scheduler decides at every choice point.

use super::{ChoiceView, Pick, Scheduler, Script};

/// Plays a script prefix, then hands over to an exploring scheduler.
pub struct ScriptThen {
    script: Script,
    then: Box<dyn Scheduler>,
}

impl ScriptThen {
    /// `script` (the kept prefix) followed by `then`.
    pub fn new(script: Script, then: Box<dyn Scheduler>) -> Self {
        ScriptThen { script, then }
    }
}

impl Scheduler for ScriptThen {
    fn pauses_at_points(&self) -> bool {
        true
    }

    fn chooses_ties(&self) -> bool {
        true
    }

    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick {
        if self.script.finished() {
            return self.then.pick(view);
        }
        if !view.paused.is_empty() {
            let paused_only = ChoiceView {
                ready: &[],
                ..*view
            };
            if let Pick::Release(i) = self.script.pick(&paused_only) {
                return Pick::Release(i);
            }
        }
        // Runnable tasks go first-come, first-served while the prefix plays.
        if view.ready.is_empty() {
            Pick::Hold
        } else {
            Pick::Ready(0)
        }
    }

    fn describe_hold(&self, view: &ChoiceView<'_>) -> String {
        self.script.describe_hold(view)
    }

    fn decisions(&self) -> Vec<u32> {
        self.then.decisions()
    }

    fn widths(&self) -> Vec<u32> {
        self.then.widths()
    }

    fn unfinished(&self) -> Option<String> {
        self.script.unfinished()
    }
    fn skipped_steps(&self) -> Vec<usize> {
        self.script.skipped_steps()
    }
}
