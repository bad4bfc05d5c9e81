//! Resources (mutexes, semaphores, wait queues) as the engine stores them, and their
//! counters.

use crate::ring::Ring;
use crate::task::{ClassId, TaskId};
use crate::time::Nanos;
use std::rc::Rc;

/// What kind of primitive a resource is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// A mutex with FIFO hand-off.
    Mutex,
    /// A counting semaphore with FIFO grants.
    Semaphore,
    /// A wait queue (condition variable).
    WaitQueue,
}

/// A resource's primitive-specific state: owner, permits, FIFO waiters.
pub(crate) enum ResState {
    Mutex {
        owner: Option<TaskId>,
        waiters: Ring<TaskId>,
    },
    Semaphore {
        permits: u64,
        capacity: u64,
        waiters: Ring<(TaskId, u64)>,
    },
    WaitQueue {
        waiters: Ring<TaskId>,
    },
}

/// A resource's record: name, wait class, counters and state.
pub(crate) struct Resource {
    pub(crate) name: Rc<str>,
    pub(crate) class: ClassId,
    pub(crate) acquisitions: u64,
    pub(crate) waits: u64,
    pub(crate) wait_ns: Nanos,
    pub(crate) max_wait_ns: Nanos,
    pub(crate) state: ResState,
    /// Live `Mutex` values naming it (counted for recyclable resources only).
    pub(crate) handles: u32,
    /// Whether its slot goes back to `Core::free` when its last handle drops.
    pub(crate) recyclable: bool,
}

/// Counters of one resource after (or during) a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceStats {
    /// The resource's name.
    pub name: String,
    /// Mutex, semaphore or wait queue.
    pub kind: ResourceKind,
    /// Grants (lock acquisitions, permits granted, wake-ups delivered).
    pub acquisitions: u64,
    /// Grants that had to wait.
    pub waits: u64,
    /// Total nanoseconds waited.
    pub wait_ns: Nanos,
    /// Longest single wait.
    pub max_wait_ns: Nanos,
}

impl Resource {
    /// Whether no task holds it or waits on it.
    pub(crate) fn is_idle(&self) -> bool {
        match &self.state {
            ResState::Mutex { owner, waiters } => owner.is_none() && waiters.is_empty(),
            ResState::Semaphore {
                permits,
                capacity,
                waiters,
            } => permits == capacity && waiters.is_empty(),
            ResState::WaitQueue { waiters } => waiters.is_empty(),
        }
    }

    /// Records a grant after `waited` ns (None = uncontended).
    #[inline(always)]
    pub(crate) fn note_grant(&mut self, waited: Option<Nanos>) {
        self.acquisitions += 1;
        if let Some(w) = waited {
            self.waits += 1;
            self.wait_ns += w;
            self.max_wait_ns = self.max_wait_ns.max(w);
        }
    }
}
