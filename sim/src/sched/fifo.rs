//! FIFO: the default. Points do not pause; equal-time events run in insertion order.

use super::{ChoiceView, Pick, Scheduler};

/// The default decision-maker: first come, first served.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fifo;

impl Scheduler for Fifo {
    fn pauses_at_points(&self) -> bool {
        false
    }

    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick {
        if view.paused.is_empty() {
            Pick::Hold
        } else {
            Pick::Release(0)
        }
    }
}
