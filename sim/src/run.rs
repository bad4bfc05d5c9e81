//! The run loop's choice of the next task: timers of the instant, then wake-ups, then the
//! scheduler at named points, then the next instant; exploration, deadlock and stuck
//! reports. `Sim::run` polls what it returns.

use crate::core::{close_wait, Core};
use crate::error::SimError;
use crate::sched::{ChoiceView, Pick, Scheduler};
use crate::task::{BoxFuture, TaskId, TaskState, CLASS_CPU};
use crate::time::Nanos;
use crate::trace::TraceKind;

/// Moves the futures of tasks spawned since the last call into the run loop's table.
#[cold]
pub(crate) fn adopt(futures: &mut Vec<Option<BoxFuture>>, c: &mut Core) {
    for (id, fut) in c.spawned.drain(..) {
        let i = id as usize;
        if futures.len() <= i {
            futures.resize_with(i + 1, || None);
        }
        futures[i] = Some(fut);
    }
}

/// Picks the next task to resume, advancing the clock when the instant is exhausted.
#[inline(always)]
pub(crate) fn next_task(
    c: &mut Core,
    scheduler: &mut dyn Scheduler,
    limit: Nanos,
) -> Result<Option<TaskId>, SimError> {
    // The common case — no exploring scheduler, nobody paused at a point — in the order of
    // `next_task_general`: timers of this instant, then wake-ups, then the next instant.
    // Here every timer due now other than the one just popped is in the queue's tie list
    // (a real pop drains them there; `slow` is kept set while one is left in the heap), so
    // the heap is only looked at when nothing else can run now.
    if !c.slow {
        loop {
            if let Some(t) = c.heap.pop_tie() {
                return Ok(Some(resume_timer(c, t)));
            }
            if let Some(t) = c.ready.pop_front() {
                return Ok(Some(dispatch(c, t)));
            }
            match c.heap.pop_until(limit) {
                Some((at, Some(t))) => {
                    c.now = at;
                    return Ok(Some(resume_timer(c, t)));
                }
                // A long timer re-armed itself; nothing else is due before `at` and the
                // ready queue is empty, so the next pop keeps the order.
                Some((at, None)) => c.now = at,
                None => break, // time limit or deadlock: reported below
            }
        }
    }
    next_task_general(c, scheduler, limit)
}

/// `next_task` in full: exploring schedulers, paused tasks, the time limit, deadlocks.
#[inline(never)]
fn next_task_general(
    c: &mut Core,
    scheduler: &mut dyn Scheduler,
    limit: Nanos,
) -> Result<Option<TaskId>, SimError> {
    loop {
        if c.live == 0 {
            return Ok(None);
        }
        // 0. An exploring scheduler chooses among every task runnable at this instant.
        if c.explores_ties {
            if let Some(t) = explore_next(c, scheduler)? {
                return Ok(Some(t));
            }
            // Nothing runnable now (or every paused task held): advance the clock.
        }
        // 1. Heap events of the current instant (older than anything in `ready`).
        else if c.heap.peek_time() == Some(c.now) {
            match c.heap.pop() {
                Some((_, Some(t))) => return Ok(Some(resume_timer(c, t))),
                _ => continue, // a long timer re-armed itself
            }
        }
        // 2. Wake-ups of the current instant, FIFO.
        if let Some(t) = c.ready.pop_front() {
            return Ok(Some(dispatch(c, t)));
        }
        // 3. Tasks paused at named points: ask the scheduler.
        if !c.paused.is_empty() && !c.explores_ties && release_paused(c, scheduler)? {
            continue;
        }
        // 4. Advance the clock to the next timer.
        if c.explores_ties {
            // Move the clock only: every timer of the new instant becomes a candidate.
            if let Some(at) = c.heap.peek_time() {
                if at > limit {
                    return Err(SimError::TimeLimit {
                        limit,
                        live: c.live,
                    });
                }
                c.now = at;
                continue;
            }
        } else if let Some((at, task)) = c.heap.pop() {
            if at > limit {
                return Err(SimError::TimeLimit {
                    limit,
                    live: c.live,
                });
            }
            c.now = at;
            match task {
                Some(t) => return Ok(Some(resume_timer(c, t))),
                None => continue, // a long timer re-armed itself
            }
        }
        // 5. Nothing can happen any more.
        return Err(deadlock(c));
    }
}

/// Step 3 of `next_task_general`: asks the scheduler about the tasks paused at named points;
/// true when it released one (woken at this instant), an error when it holds them all and
/// nothing else can happen.
fn release_paused(c: &mut Core, scheduler: &mut dyn Scheduler) -> Result<bool, SimError> {
    let next_event = c.heap.peek_time();
    let view = paused_view(c, next_event);
    match scheduler.pick(&view) {
        Pick::Release(i) if i < c.paused.len() => {
            let p = c.paused.remove(i);
            c.note_release(p);
            c.wake(p.task);
            Ok(true)
        }
        Pick::Release(_) | Pick::Ready(_) | Pick::Hold => {
            if next_event.is_none() {
                let reason = scheduler.describe_hold(&view);
                return Err(stuck(c, reason));
            }
            Ok(false)
        }
    }
}

/// The error of a run where nothing can happen any more: what each non-daemon task waits for.
#[cold]
fn deadlock(c: &Core) -> SimError {
    let blocked: Vec<String> = (0..c.tasks.len() as TaskId)
        .filter(|&t| c.tasks[t as usize].state != TaskState::Done)
        .filter(|&t| !c.tasks[t as usize].daemon)
        .map(|t| c.describe_wait(t))
        .collect();
    SimError::Deadlock { at: c.now, blocked }
}

/// One choice of an exploring scheduler among the tasks runnable at this instant (timers of
/// the instant, wake-ups and tasks paused at points); None when nothing can run now.
#[inline(never)]
fn explore_next(c: &mut Core, scheduler: &mut dyn Scheduler) -> Result<Option<TaskId>, SimError> {
    while c.heap.peek_time() == Some(c.now) {
        if let Some((_, Some(t))) = c.heap.pop() {
            c.wake(t);
        }
    }
    let n = c.ready.len() + c.paused.len();
    if n > 1 || !c.paused.is_empty() {
        let next_event = c.heap.peek_time();
        let ready: &[TaskId] = c.ready.make_contiguous();
        let view = ChoiceView {
            now: c.now,
            paused: &c.paused,
            ready,
            next_event,
            task_names: &c.tasks,
            point_names: &c.points.names,
        };
        match scheduler.pick(&view) {
            Pick::Ready(i) if i < c.ready.len() => {
                let t = c.ready.remove(i).expect("index checked");
                return Ok(Some(dispatch(c, t)));
            }
            Pick::Release(i) if i < c.paused.len() => {
                let p = c.paused.remove(i);
                c.note_release(p);
                c.wake(p.task);
                let t = c.ready.pop_back().expect("just woken");
                return Ok(Some(dispatch(c, t)));
            }
            _ if !c.ready.is_empty() => {
                let t = c.ready.pop_front().expect("not empty");
                return Ok(Some(dispatch(c, t)));
            }
            _ => {
                if next_event.is_none() {
                    let view = paused_view(c, next_event);
                    let reason = scheduler.describe_hold(&view);
                    return Err(stuck(c, reason));
                }
            }
        }
    } else if let Some(t) = c.ready.pop_front() {
        return Ok(Some(dispatch(c, t)));
    }

    Ok(None)
}

/// What a scheduler sees of the tasks paused at named points (no ready candidates).
fn paused_view(c: &Core, next_event: Option<Nanos>) -> ChoiceView<'_> {
    ChoiceView {
        now: c.now,
        paused: &c.paused,
        ready: &[],
        next_event,
        task_names: &c.tasks,
        point_names: &c.points.names,
    }
}

/// What `dispatch` returns when it ran the task's resumption itself (never a task id: ids
/// have `TASK_BITS` bits).
pub(crate) const STARTED_QUANTUM: TaskId = TaskId::MAX;

/// Resumes `t` from the ready queue. A task granted a core while queued in `Cpu` would only
/// start its quantum (`Cpu::next_quantum`) in this resumption, so that is done here — the same
/// trace records, timer and accounting, without polling its futures — and `STARTED_QUANTUM`
/// returned.
#[inline(always)]
fn dispatch(c: &mut Core, t: TaskId) -> TaskId {
    c.current = t;
    c.dispatches += 1;
    c.trace.log_only(c.now, t, TraceKind::Run);
    if c.cpu_starts != 0 {
        let task = &mut c.tasks[t as usize];
        if task.cpu_q != 0 {
            let q = std::mem::take(&mut task.cpu_q);
            c.cpu_starts -= 1;
            c.delay_current(q, CLASS_CPU);
            return STARTED_QUANTUM;
        }
    }
    t
}

/// The error of a run whose scheduler holds every paused task with nothing else to happen.
fn stuck(c: &Core, reason: String) -> SimError {
    let paused = c
        .paused
        .iter()
        .map(|p| {
            format!(
                "task '{}' at point '{}'",
                c.tasks[p.task as usize].name, c.points.names[p.point as usize]
            )
        })
        .collect();
    SimError::Stuck {
        at: c.now,
        reason,
        paused,
    }
}

#[inline(always)]
/// Resumes `t` whose timer fired, closing its sleep.
fn resume_timer(c: &mut Core, t: TaskId) -> TaskId {
    let task = &mut c.tasks[t as usize];
    let class = match task.state {
        TaskState::Sleeping(cl) => cl,
        s => unreachable!("timer fired for task {t} in state {s:?}"),
    };
    close_wait(task, c.now, c.accounting, class);
    task.state = TaskState::Ready;
    c.current = t;
    c.dispatches += 1;
    c.trace.log_only(c.now, t, TraceKind::Run);
    t
}
