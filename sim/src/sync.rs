//! Synchronisation primitives for simulated tasks: mutex, semaphores (counting, rw), wait queue.
//!
//! All hand-offs are FIFO and happen at the releasing instant. Every blocking wait is
//! recorded against the resource (count, total, max) and against the waiting task's account
//! under the resource's wait class, so reports can attribute latency to each named lock.

use crate::core::{wake_task, Core};
use crate::handle::Handle;
use crate::resource::ResState;
use crate::ring::Ring;
use crate::task::{ResId, TaskId, TaskState};
use crate::trace::TraceKind;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A mutex with owner tracking and FIFO hand-off.
pub struct Mutex {
    h: Handle,
    id: ResId,
}

impl Clone for Mutex {
    fn clone(&self) -> Self {
        self.h.core().hold_handle(self.id);
        Mutex {
            h: self.h.clone(),
            id: self.id,
        }
    }
}

impl Drop for Mutex {
    fn drop(&mut self) {
        // The run loop may hold the core while it drops a finished task's future; a handle
        // dropped then keeps its slot (deterministically: the same run drops it the same way).
        if let Ok(mut c) = self.h.core.try_borrow_mut() {
            if !c.tearing_down {
                c.drop_handle(self.id);
            }
        }
    }
}

impl Mutex {
    /// A new unlocked mutex; waits on it are attributed to a class of the same name.
    pub fn new(h: &Handle, name: &str) -> Self {
        Self::with_class(h, name, name)
    }

    /// A new mutex whose waits are attributed to `class` (e.g. one class for all inode locks).
    pub fn with_class(h: &Handle, name: &str, class: &str) -> Self {
        let id = h.core().add_resource(
            name,
            class,
            ResState::Mutex {
                owner: None,
                waiters: Ring::new(),
            },
        );
        Mutex { h: h.clone(), id }
    }

    /// A mutex named after its class whose engine slot is reused by a later `recyclable`
    /// mutex of the class once every clone of it is dropped (one lock per object).
    pub fn recyclable(h: &Handle, class: &str) -> Self {
        let id = h.core().add_recyclable(
            class,
            ResState::Mutex {
                owner: None,
                waiters: Ring::new(),
            },
        );
        Mutex { h: h.clone(), id }
    }

    /// The resource id (for trace lookups).
    pub fn id(&self) -> ResId {
        self.id
    }

    /// Acquires the mutex, waiting in FIFO order; unlocks when the guard drops.
    pub fn lock(&self) -> Lock<'_> {
        Lock {
            m: self,
            started: false,
        }
    }

    /// The owning task, if locked.
    pub fn owner(&self) -> Option<TaskId> {
        match &self.h.core.borrow().resources[self.id as usize].state {
            ResState::Mutex { owner, .. } => *owner,
            _ => unreachable!(),
        }
    }

    /// Releases the mutex, handing it to the longest waiter. Panics if the caller is not the owner.
    pub fn unlock(&self) {
        let mut g = self.h.core();
        let c: &mut Core = &mut g;
        if c.tearing_down {
            return;
        }
        let (cur, now, id) = (c.current, c.now, self.id);
        let res = &mut c.resources[id as usize];
        let ResState::Mutex { owner, waiters } = &mut res.state else {
            unreachable!()
        };
        assert_eq!(
            *owner,
            Some(cur),
            "mutex unlocked by a task that does not own it"
        );
        let next = waiters.pop_front();
        *owner = next;
        c.trace.record(
            now,
            cur,
            TraceKind::Release(id),
            next.map_or(0, |t| u64::from(t) + 1),
        );
        if let Some(t) = next {
            let sw = (c.switch, cur);
            let waited = wake_task(
                &mut c.tasks,
                &mut c.ready,
                now,
                c.accounting,
                t,
                res.class,
                sw,
            );
            res.note_grant(Some(waited));
        }
    }
}

/// Future of `Mutex::lock`.
pub struct Lock<'a> {
    m: &'a Mutex,
    started: bool,
}

impl<'a> Future for Lock<'a> {
    type Output = MutexGuard<'a>;
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<MutexGuard<'a>> {
        let m = self.m;
        if self.started {
            // Resumed after the hand-off: nothing to look up.
            return Poll::Ready(MutexGuard { m });
        }
        self.started = true;
        Self::first_poll(m)
    }
}

impl<'a> Lock<'a> {
    /// Takes the mutex now, or queues the current task for it.
    #[inline(never)]
    fn first_poll(m: &'a Mutex) -> Poll<MutexGuard<'a>> {
        let mut g = m.h.core();
        let c: &mut Core = &mut g;
        let (cur, now, id) = (c.current, c.now, m.id);
        let res = &mut c.resources[id as usize];
        let ResState::Mutex { owner, waiters } = &mut res.state else {
            unreachable!()
        };
        match *owner {
            None => {
                *owner = Some(cur);
                res.acquisitions += 1;
                c.trace.record(now, cur, TraceKind::Acquire(id), 1);
                Poll::Ready(MutexGuard { m })
            }
            Some(o) => {
                assert_ne!(o, cur, "task locks a mutex it already holds");
                waiters.push_back(cur);
                let task = &mut c.tasks[cur as usize];
                task.state = TaskState::Blocked(id);
                task.wait_since = now;
                c.trace.record(now, cur, TraceKind::Block(id), 1);
                Poll::Pending
            }
        }
    }
}

/// Holds a locked `Mutex`; unlocks on drop.
pub struct MutexGuard<'a> {
    m: &'a Mutex,
}

impl Drop for MutexGuard<'_> {
    fn drop(&mut self) {
        self.m.unlock();
    }
}

/// A counting semaphore with FIFO grants (a waiter for n permits blocks later waiters).
#[derive(Clone)]
pub struct Semaphore {
    pub(crate) h: Handle,
    pub(crate) id: ResId,
}

impl Semaphore {
    /// A semaphore with `permits` permits; waits are attributed to a class of the same name.
    pub fn new(h: &Handle, name: &str, permits: u64) -> Self {
        Self::with_class(h, name, name, permits)
    }

    /// A semaphore whose waits are attributed to `class`.
    pub fn with_class(h: &Handle, name: &str, class: &str, permits: u64) -> Self {
        let id = h.core().add_resource(
            name,
            class,
            ResState::Semaphore {
                permits,
                capacity: permits,
                waiters: Ring::new(),
            },
        );
        Semaphore { h: h.clone(), id }
    }

    /// Takes one permit, waiting FIFO; the permit is returned when the guard drops.
    pub fn acquire(&self) -> Acquire<'_> {
        self.acquire_n(1)
    }

    /// Takes `n` permits at once.
    pub fn acquire_n(&self, n: u64) -> Acquire<'_> {
        Acquire {
            s: self,
            n,
            started: false,
        }
    }

    /// Permits free now.
    pub fn available(&self) -> u64 {
        match &self.h.core.borrow().resources[self.id as usize].state {
            ResState::Semaphore { permits, .. } => *permits,
            _ => unreachable!(),
        }
    }

    /// Tasks waiting now.
    pub fn waiting(&self) -> usize {
        match &self.h.core.borrow().resources[self.id as usize].state {
            ResState::Semaphore { waiters, .. } => waiters.len(),
            _ => unreachable!(),
        }
    }

    /// Returns `n` permits and grants waiters in FIFO order.
    #[inline]
    pub fn release_n(&self, n: u64) {
        let mut g = self.h.core();
        let c: &mut Core = &mut g;
        if c.tearing_down {
            return;
        }
        sem_release(c, self.id, n);
    }

    /// Returns one permit.
    pub fn release(&self) {
        self.release_n(1);
    }
}

/// Future of `Semaphore::acquire`.
pub struct Acquire<'a> {
    s: &'a Semaphore,
    n: u64,
    started: bool,
}

impl<'a> Future for Acquire<'a> {
    type Output = SemaphorePermit<'a>;
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<SemaphorePermit<'a>> {
        let (s, n) = (self.s, self.n);
        if self.started {
            // Resumed after the grant: nothing to look up.
            return Poll::Ready(SemaphorePermit { s, n });
        }
        self.started = true;
        Self::first_poll(s, n)
    }
}

impl<'a> Acquire<'a> {
    /// Takes the permits now, or queues the current task for them.
    #[inline(always)]
    fn first_poll(s: &'a Semaphore, n: u64) -> Poll<SemaphorePermit<'a>> {
        if sem_acquire(&mut s.h.core(), s.id, n) {
            Poll::Ready(SemaphorePermit { s, n })
        } else {
            Poll::Pending
        }
    }
}

/// Takes `n` permits of semaphore `id` for the current task now (true), or queues the task
/// for them behind the earlier waiters (false; it is woken when they are granted).
#[inline(always)]
pub(crate) fn sem_acquire(c: &mut Core, id: ResId, n: u64) -> bool {
    let (cur, now) = (c.current, c.now);
    if c.cpus.is_some_and(|x| x.0 == id) {
        c.tick_cpu_meter(now);
    }
    let res = &mut c.resources[id as usize];
    let ResState::Semaphore {
        permits,
        capacity,
        waiters,
    } = &mut res.state
    else {
        unreachable!()
    };
    assert!(
        n <= *capacity,
        "asking a semaphore for more permits than it has"
    );
    if waiters.is_empty() && *permits >= n {
        *permits -= n;
        res.acquisitions += 1;
        c.trace.record(now, cur, TraceKind::Acquire(id), n);
        true
    } else {
        waiters.push_back((cur, n));
        let task = &mut c.tasks[cur as usize];
        task.state = TaskState::Blocked(id);
        task.wait_since = now;
        c.trace.record(now, cur, TraceKind::Block(id), n);
        false
    }
}

/// Returns `n` permits of semaphore `id` and grants waiters in FIFO order (a waiter for more
/// permits than are free blocks the ones behind it).
#[inline(always)]
pub(crate) fn sem_release(c: &mut Core, id: ResId, n: u64) {
    let (cur, now) = (c.current, c.now);
    if c.cpus.is_some_and(|x| x.0 == id) {
        c.tick_cpu_meter(now);
    }
    let res = &mut c.resources[id as usize];
    let class = res.class;
    let ResState::Semaphore {
        permits,
        capacity,
        waiters,
    } = &mut res.state
    else {
        unreachable!()
    };
    *permits += n;
    crate::check!(*permits <= *capacity, "semaphore released more than taken");
    let mut first_woken = 0;
    while let Some(&(t, want)) = waiters.front() {
        if want > *permits {
            break;
        }
        *permits -= want;
        waiters.pop_front();
        if first_woken == 0 {
            first_woken = u64::from(t) + 1;
        }
        let sw = (c.switch, cur);
        let waited = wake_task(&mut c.tasks, &mut c.ready, now, c.accounting, t, class, sw);
        res.acquisitions += 1;
        res.waits += 1;
        res.wait_ns += waited;
        res.max_wait_ns = res.max_wait_ns.max(waited);
    }
    c.trace
        .record(now, cur, TraceKind::Release(id), first_woken);
}

/// Permits taken from a `Semaphore`; returned on drop (or kept with `forget`).
pub struct SemaphorePermit<'a> {
    s: &'a Semaphore,
    n: u64,
}

impl SemaphorePermit<'_> {
    /// Keeps the permits taken; the caller returns them later with `Semaphore::release_n`.
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.s.release_n(self.n);
        }
    }
}

/// A wait queue: tasks wait until notified (a condition variable without the mutex; check
/// the condition in a loop around `wait`).
#[derive(Clone)]
pub struct WaitQueue {
    h: Handle,
    id: ResId,
}

impl WaitQueue {
    /// A new empty queue; waits are attributed to a class of the same name.
    pub fn new(h: &Handle, name: &str) -> Self {
        Self::with_class(h, name, name)
    }

    /// A queue whose waits are attributed to `class`.
    pub fn with_class(h: &Handle, name: &str, class: &str) -> Self {
        let id = h.core().add_resource(
            name,
            class,
            ResState::WaitQueue {
                waiters: Ring::new(),
            },
        );
        WaitQueue { h: h.clone(), id }
    }

    /// Waits until another task notifies this queue.
    pub fn wait(&self) -> Wait<'_> {
        Wait {
            q: self,
            started: false,
        }
    }

    /// Tasks waiting now.
    pub fn len(&self) -> usize {
        match &self.h.core.borrow().resources[self.id as usize].state {
            ResState::WaitQueue { waiters } => waiters.len(),
            _ => unreachable!(),
        }
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wakes the longest waiter; returns whether there was one.
    pub fn notify_one(&self) -> bool {
        self.notify(1) == 1
    }

    /// Wakes every waiter; returns how many.
    pub fn notify_all(&self) -> usize {
        self.notify(usize::MAX)
    }

    fn notify(&self, max: usize) -> usize {
        let mut c = self.h.core();
        let cur = c.current;
        let id = self.id;
        let mut woken = 0;
        while woken < max {
            let ResState::WaitQueue { waiters } = &mut c.resources[id as usize].state else {
                unreachable!()
            };
            let Some(t) = waiters.pop_front() else { break };
            let waited = c.wake(t);
            c.note_grant(id, Some(waited));
            woken += 1;
        }
        c.record(cur, TraceKind::Notify(id), woken as u64);
        woken
    }
}

/// Future of `WaitQueue::wait`.
pub struct Wait<'a> {
    q: &'a WaitQueue,
    started: bool,
}

impl Future for Wait<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        let mut c = self.q.h.core();
        let cur = c.current;
        let id = self.q.id;
        let ResState::WaitQueue { waiters } = &mut c.resources[id as usize].state else {
            unreachable!()
        };
        waiters.push_back(cur);
        c.block_current(TaskState::Blocked(id));
        c.record(cur, TraceKind::Block(id), 0);
        Poll::Pending
    }
}

/// A reader-writer semaphore (the kernel's rw_semaphore): many readers or one writer,
/// granted FIFO, so a waiting writer holds back the readers that come after it. Built on
/// the semaphore's grants: a reader takes one permit, a writer all of them.
pub struct RwSem {
    h: Handle,
    id: ResId,
}

/// Permits of an `RwSem`: more than any run has readers at once.
const RWSEM_PERMITS: u64 = 1 << 32;

impl Clone for RwSem {
    fn clone(&self) -> Self {
        self.h.core().hold_handle(self.id);
        RwSem {
            h: self.h.clone(),
            id: self.id,
        }
    }
}

impl Drop for RwSem {
    fn drop(&mut self) {
        // As `Mutex`'s drop: a handle dropped while the run loop holds the core keeps its slot.
        if let Ok(mut c) = self.h.core.try_borrow_mut() {
            if !c.tearing_down {
                c.drop_handle(self.id);
            }
        }
    }
}

impl RwSem {
    /// An rwsem named after its class whose engine slot is reused by a later `recyclable`
    /// rwsem of the class once every clone of it is dropped (one lock per object).
    pub fn recyclable(h: &Handle, class: &str) -> Self {
        let id = h.core().add_recyclable(
            class,
            ResState::Semaphore {
                permits: RWSEM_PERMITS,
                capacity: RWSEM_PERMITS,
                waiters: Ring::new(),
            },
        );
        RwSem { h: h.clone(), id }
    }

    /// The resource id (for trace lookups).
    pub fn id(&self) -> ResId {
        self.id
    }

    /// down_read: waits behind earlier waiters (a writer among them) and any holding writer.
    pub async fn down_read(&self) {
        self.down(1).await;
    }

    /// down_write: waits until no reader or writer holds it and no earlier task waits.
    pub async fn down_write(&self) {
        self.down(RWSEM_PERMITS).await;
    }

    /// up_read: one reader leaves.
    pub fn up_read(&self) {
        self.up(1);
    }

    /// up_write: the writer leaves.
    pub fn up_write(&self) {
        self.up(RWSEM_PERMITS);
    }

    async fn down(&self, n: u64) {
        let s = Semaphore {
            h: self.h.clone(),
            id: self.id,
        };
        s.acquire_n(n).await.forget();
    }

    fn up(&self, n: u64) {
        let mut g = self.h.core();
        let c: &mut Core = &mut g;
        if c.tearing_down {
            return;
        }
        sem_release(c, self.id, n);
    }
}
