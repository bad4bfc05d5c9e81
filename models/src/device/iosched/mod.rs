//! I/O schedulers: the order in which queued requests reach the device's service units.
//! One file per scheduler behind the small `IoScheduler` trait.

mod none;

pub use none::NoneFifo;

/// Scheduler names accepted in device files.
pub const NAMES: [&str; 1] = ["none"];

/// Whether a request is synchronous (someone waits for it) or background writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IoClass {
    /// A task waits for it.
    #[default]
    Sync,
    /// Background.
    Async,
}

/// What a scheduler needs to know about a queued request.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    /// Device-internal request id.
    pub id: u64,
    /// Byte offset (for seek-aware schedulers).
    pub offset: u64,
    /// Sync or async.
    pub class: IoClass,
}

/// Orders requests between the host's tag grant and a free service unit.
pub trait IoScheduler {
    /// Queues a request.
    fn add(&mut self, r: Queued);
    /// The next request to serve, given the head position (HDDs) and current time.
    fn dispatch(&mut self, head: u64, now: sim::Nanos) -> Option<Queued>;
    /// The queued request of least `cost` (ties: the scheduler's order), for a drive that
    /// reorders its NCQ queue; schedulers that cannot choose serve in their own order.
    fn dispatch_by(&mut self, now: sim::Nanos, cost: &dyn Fn(&Queued) -> u64) -> Option<Queued> {
        let _ = cost;
        self.dispatch(0, now)
    }
    /// Requests queued.
    fn len(&self) -> usize;
    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Builds the scheduler with this name.
pub fn by_name(name: &str) -> Option<Box<dyn IoScheduler>> {
    match name {
        "none" => Some(Box::new(NoneFifo::default())),
        _ => None,
    }
}
