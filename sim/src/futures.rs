//! The engine's own futures: `Handle::sleep` / `delay` (`Delay`), `Handle::point`
//! (`Point`) and `Handle::park` (`Park`). Each returns `Pending` once and `Ready` on its
//! next poll.

use crate::handle::Handle;
use crate::sched::PausedTask;
use crate::task::{ClassId, PointId, TaskState, CLASS_POINT, CLASS_SLEEP};
use crate::time::Nanos;
use crate::trace::TraceKind;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

impl Handle {
    /// Sleeps for `d` of virtual time, attributed to plain sleep (think time).
    #[inline]
    pub fn sleep(&self, d: Nanos) -> Delay<'_> {
        self.delay(d, CLASS_SLEEP)
    }

    /// Waits for `d`, attributing the time to `class`.
    #[inline]
    pub fn delay(&self, d: Nanos, class: ClassId) -> Delay<'_> {
        Delay {
            h: self,
            d,
            class,
            started: false,
        }
    }

    /// Announces that the current task reached a labelled step; the scheduler may hold it
    /// here (under the default FIFO scheduler this is a plain yield).
    pub fn point(&self, label: PointId) -> Point<'_> {
        Point {
            h: self,
            label,
            started: false,
        }
    }

    /// Parks the current task until some other task calls `unpark` on it; the wait is
    /// attributed to `class`. Use it for completions (e.g. an I/O request).
    pub fn park(&self, class: ClassId) -> Park<'_> {
        Park {
            h: self,
            class,
            started: false,
        }
    }
}

/// Future of `Handle::sleep`, `cpu` and `delay`.
pub struct Delay<'a> {
    h: &'a Handle,
    d: Nanos,
    class: ClassId,
    started: bool,
}

impl Future for Delay<'_> {
    type Output = ();
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        self.h.core().delay_current(self.d, self.class);
        Poll::Pending
    }
}

/// Future of `Handle::point`.
pub struct Point<'a> {
    h: &'a Handle,
    label: PointId,
    started: bool,
}

impl Future for Point<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        let mut c = self.h.core();
        let cur = c.current;
        c.record(cur, TraceKind::Point(self.label), 0);
        if !c.pauses_at_points && !c.points_yield {
            return Poll::Ready(());
        }
        if c.pauses_at_points {
            let t = c.block_current(TaskState::Paused(self.label));
            let since = c.now;
            c.slow = true;
            c.paused.push(PausedTask {
                task: t,
                point: self.label,
                since,
            });
        } else {
            c.sleep_current(0, CLASS_POINT);
        }
        Poll::Pending
    }
}

/// Future of `Handle::park`.
pub struct Park<'a> {
    h: &'a Handle,
    class: ClassId,
    started: bool,
}

impl Future for Park<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        let mut c = self.h.core();
        let t = c.block_current(TaskState::Parked(self.class));
        c.record(t, TraceKind::Park(self.class), 0);
        Poll::Pending
    }
}
