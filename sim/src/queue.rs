//! The pending-timer queue.
//!
//! `EventQueue` is a 4-ary min-heap of `u64` keys: four children share a cache line, so a
//! pop touches half as many levels as a binary heap. `TimerQueue` packs each timer into one
//! `u64` key — time relative to a base in the high 40 bits, task id in the low 24 — so every
//! comparison is one integer compare and every move 8 bytes, and restores the engine's
//! (time, insertion sequence) order for timers that fire at the same instant with a per-task
//! sequence number (a task has at most one pending timer). Measured against `std`'s
//! `BinaryHeap` in `benches/event_queue.rs`.

const D: usize = 4;

/// A 4-ary min-heap of `u64` keys (the timer queue's).
///
/// Padded with `u64::MAX` to whole groups of four children, so every level of a sift-down is
/// the same branch-free tournament (no partial last level) and an empty child never wins; one
/// bounds check both fetches a node's children and ends the descent. `keys.len()` is always
/// `1 + 4k`; entries at `n..` are MAX.
#[derive(Debug, Clone)]
pub struct EventQueue {
    keys: Vec<u64>,
    n: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            keys: vec![u64::MAX],
            n: 0,
        }
    }
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of pending keys.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no key is pending.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The smallest key.
    #[inline(always)]
    pub fn peek(&self) -> Option<u64> {
        if self.n == 0 {
            None
        } else {
            Some(self.keys[0])
        }
    }

    /// The pending keys (unordered).
    #[inline]
    fn live_mut(&mut self) -> &mut [u64] {
        &mut self.keys[..self.n]
    }

    /// Inserts a key.
    #[inline(always)]
    pub fn push(&mut self, key: u64) {
        let mut i = self.n;
        if i == self.keys.len() {
            self.grow();
        }
        self.n = i + 1;
        let keys = &mut self.keys[..];
        // Sift up with a hole: move parents down until the key fits.
        while i > 0 {
            let parent = (i - 1) / D;
            let pk = keys[parent];
            if pk <= key {
                break;
            }
            keys[i] = pk;
            i = parent;
        }
        keys[i] = key;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.keys.extend_from_slice(&[u64::MAX; D]);
    }

    /// Removes and returns the smallest key.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let n = self.n - 1;
        self.n = n;
        let keys = &mut self.keys[..];
        let top = keys[0];
        let last = keys[n];
        keys[n] = u64::MAX;
        if n == 0 {
            return Some(top);
        }
        // Sift the last key down from the root with a hole; padding makes every child group
        // whole (the group exists iff its first child's index is below the length), so each
        // level is one two-round tournament.
        let len = keys.len();
        let mut i = 0;
        let mut first = 1;
        while first < len {
            crate::check!(first + D <= len && i < first);
            // SAFETY: `len` is `1 + 4k` and `first` is `1 + 4j`, so `first < len` implies
            // `first + D <= len`; the hole `i` is below `first`.
            let c: &[u64; D] = unsafe { &*keys.as_ptr().add(first).cast::<[u64; D]>() };
            let ia = usize::from(c[1] < c[0]);
            let ib = 2 + usize::from(c[3] < c[2]);
            let im = if c[ib] < c[ia] { ib } else { ia };
            let m = c[im];
            if last <= m {
                break;
            }
            // SAFETY: `i < first < len` (asserted above), so `i` is in bounds.
            unsafe { *keys.get_unchecked_mut(i) = m };
            i = first + im;
            first = i * D + 1;
        }
        keys[i] = last;
        Some(top)
    }
}

const TASK_BITS: u32 = 24;
const TASK_MASK: u64 = (1 << TASK_BITS) - 1;

/// A task's pending timer: its insertion sequence and absolute due time.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    seq: u64,
    due: u64,
}

/// Timers of tasks, popped in (time, insertion sequence) order.
#[derive(Debug, Clone)]
pub struct TimerQueue {
    heap: EventQueue,
    /// Keys hold `time - base`.
    base: u64,
    /// Largest relative time a key can hold.
    max_rel: u64,
    /// Keys in the heap clamped to `max_rel` (long timers that fire early and are re-armed);
    /// while 0, a popped key is never an early firing and its due time is not looked up.
    long: usize,
    /// Per task: insertion sequence and absolute due time of its pending timer.
    slots: Vec<Slot>,
    next_seq: u64,
    /// Timers of the current instant, sorted by insertion sequence, not yet popped.
    ties: std::collections::VecDeque<(u64, u32)>,
    scratch: Vec<(u64, u32)>,
}

impl Default for TimerQueue {
    fn default() -> Self {
        Self::with_rel_bits(64 - TASK_BITS)
    }
}

impl TimerQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty queue whose keys hold `bits` bits of relative time (tests use few bits to
    /// exercise rebasing and long timers).
    pub fn with_rel_bits(bits: u32) -> Self {
        assert!((2..=64 - TASK_BITS).contains(&bits));
        TimerQueue {
            heap: EventQueue::new(),
            base: 0,
            max_rel: (1u64 << bits) - 1,
            long: 0,
            slots: Vec::new(),
            next_seq: 0,
            ties: std::collections::VecDeque::new(),
            scratch: Vec::new(),
        }
    }

    /// Pending timers (a long timer counts once).
    pub fn len(&self) -> usize {
        self.heap.len() + self.ties.len()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Arms `task`'s timer for absolute time `at`; `now` is a lower bound of every pending time.
    #[inline(always)]
    pub fn push(&mut self, now: u64, at: u64, task: u32) {
        crate::check!(u64::from(task) <= TASK_MASK && at >= now && now >= self.base);
        let slot = Slot {
            seq: self.next_seq,
            due: at,
        };
        match self.slots.get_mut(task as usize) {
            Some(s) => *s = slot,
            None => self.grow_slots(task as usize, slot),
        }
        self.next_seq += 1;
        self.insert(now, at, task);
    }

    #[cold]
    #[inline(never)]
    fn grow_slots(&mut self, t: usize, slot: Slot) {
        self.slots.resize(t + 1, Slot::default());
        self.slots[t] = slot;
    }

    #[inline(always)]
    fn insert(&mut self, now: u64, at: u64, task: u32) {
        let rel = if at - self.base > self.max_rel {
            self.insert_far(now, at)
        } else {
            at - self.base
        };
        self.heap.push((rel << TASK_BITS) | u64::from(task));
    }

    /// The relative time of a key due at `at`, beyond the key range from the current base:
    /// moves the base up to `now` and, if `at` is still too far, clamps it (a long timer fires
    /// early at the range's end and is re-armed).
    #[cold]
    #[inline(never)]
    fn insert_far(&mut self, now: u64, at: u64) -> u64 {
        self.rebase(now);
        let rel = at - self.base;
        if rel > self.max_rel {
            self.long += 1;
            self.max_rel
        } else {
            rel
        }
    }

    /// Moves the base up to `now` (every pending time is >= now), keeping the order.
    fn rebase(&mut self, now: u64) {
        let delta = (now - self.base) << TASK_BITS;
        if delta == 0 {
            return;
        }
        for k in self.heap.live_mut() {
            *k -= delta;
        }
        self.base = now;
    }

    #[inline(always)]
    fn time_of(&self, key: u64) -> u64 {
        self.base + (key >> TASK_BITS)
    }

    /// The time of the next timer, or of the next early firing of a long timer.
    #[inline(always)]
    pub fn peek_time(&self) -> Option<u64> {
        match self.ties.front() {
            Some(&(t, _)) => Some(t),
            None => self.heap.peek().map(|k| self.time_of(k)),
        }
    }

    /// Whether popped key `task`'s firing at `time` is the early firing of a long timer (then
    /// it is re-armed here).
    #[inline(always)]
    fn fires_early(&mut self, time: u64, task: u32) -> bool {
        if self.long == 0 {
            return false;
        }
        self.check_long(time, task)
    }

    #[cold]
    #[inline(never)]
    fn check_long(&mut self, time: u64, task: u32) -> bool {
        let due = self.slots[task as usize].due;
        if time < due {
            // Only a clamped key fires before its due time.
            self.long -= 1;
            self.insert(time, due, task);
            true
        } else {
            false
        }
    }

    /// Removes the next timer of the tie list: timers due at the instant of the last pop,
    /// after the first of them, in arming order.
    #[inline(always)]
    pub fn pop_tie(&mut self) -> Option<u32> {
        self.ties.pop_front().map(|(_, task)| task)
    }

    /// Whether the heap (not the tie list) holds a timer due at `now`: only after the
    /// clock was moved without popping, or after the early firing of a long timer.
    pub fn due_in_heap(&self, now: u64) -> bool {
        self.heap.peek().is_some_and(|k| self.time_of(k) == now)
    }

    /// Like `pop` with an empty tie list, but only if the next timer (or early firing) is
    /// due no later than `limit`; None leaves the queue unchanged.
    #[inline(always)]
    pub fn pop_until(&mut self, limit: u64) -> Option<(u64, Option<u32>)> {
        crate::check!(self.ties.is_empty());
        let key = self.heap.peek()?;
        if self.time_of(key) > limit {
            return None;
        }
        self.pop_heap()
    }

    /// Removes the next timer: `(time, Some(task))`, or `(time, None)` for the early
    /// firing of a timer beyond the key range, which is re-armed here; the caller's clock
    /// must reach `time` either way. Timers due at the same instant come out in the order
    /// they were armed.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(u64, Option<u32>)> {
        if let Some((t, task)) = self.ties.pop_front() {
            return Some((t, Some(task)));
        }
        self.pop_heap()
    }

    /// `pop` from the heap (the tie list is empty).
    #[inline(always)]
    fn pop_heap(&mut self) -> Option<(u64, Option<u32>)> {
        let key = self.heap.pop()?;
        let (time, task) = (self.time_of(key), (key & TASK_MASK) as u32);
        if self.fires_early(time, task) {
            return Some((time, None));
        }
        match self.heap.peek() {
            Some(next) if (next ^ key) >> TASK_BITS == 0 => {
                Some((time, Some(self.pop_ties(time, task).1)))
            }
            _ => Some((time, Some(task))),
        }
    }

    /// Drains every timer due at `time` and orders them by insertion sequence.
    #[cold]
    #[inline(never)]
    fn pop_ties(&mut self, time: u64, first: u32) -> (u64, u32) {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.push((time, first));
        while let Some(next) = self.heap.peek() {
            if self.time_of(next) != time {
                break;
            }
            self.heap.pop();
            let task = (next & TASK_MASK) as u32;
            if !self.fires_early(time, task) {
                batch.push((time, task));
            }
        }
        batch.sort_unstable_by_key(|&(_, t)| self.slots[t as usize].seq);
        self.ties.extend(batch.drain(..));
        self.scratch = batch;
        self.ties.pop_front().expect("at least the first timer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Arms `task`'s timer after a random delay, in `q` and in the (time, sequence) reference:
    /// small delays make many ties; some are far beyond the key range.
    fn arm_random(
        rng: &mut rand_chacha::ChaCha8Rng,
        q: &mut TimerQueue,
        reference: &mut std::collections::BTreeMap<(u64, u64), u32>,
        now: u64,
        seq: &mut u64,
        task: u32,
    ) {
        let d = match rng.random_range(0..10) {
            0 => rng.random_range(1..100_000),
            _ => rng.random_range(1..8),
        };
        q.push(now, now + d, task);
        reference.insert((now + d, *seq), task);
        *seq += 1;
    }

    /// Random arms and pops against a reference ordered by (time, insertion sequence),
    /// with few key bits so rebasing and long timers happen constantly.
    #[test]
    fn timer_queue_pops_in_time_then_insertion_order() {
        for bits in [4u32, 9, 40] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::from(bits));
            let mut q = TimerQueue::with_rel_bits(bits);
            let mut reference = std::collections::BTreeMap::new();
            let mut pending = [false; 64];
            let (mut now, mut seq) = (0u64, 0u64);
            for _ in 0..20_000 {
                let task = rng.random_range(0..64u32);
                if !pending[task as usize] && rng.random_bool(0.55) {
                    arm_random(&mut rng, &mut q, &mut reference, now, &mut seq, task);
                    pending[task as usize] = true;
                } else if let Some(((t, _), task)) = reference.pop_first() {
                    loop {
                        let next = q.peek_time().unwrap();
                        assert!(next <= t);
                        match q.pop() {
                            Some((at, None)) => {
                                assert!(at <= t, "early firing after the real timer");
                            }
                            got => {
                                assert_eq!(got, Some((t, Some(task))));
                                assert_eq!(next, t);
                                break;
                            }
                        }
                    }
                    pending[task as usize] = false;
                    now = t;
                }
                assert_eq!(q.len(), reference.len());
            }
        }
    }

    /// The run loop's fast path (`pop_tie`, then `pop_until` a limit) against the same
    /// reference: ties in arming order, limits respected, long timers and rebasing.
    #[test]
    fn fast_path_pops_in_time_then_insertion_order() {
        for bits in [4u32, 9, 40] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(100 + u64::from(bits));
            let mut q = TimerQueue::with_rel_bits(bits);
            let mut reference = std::collections::BTreeMap::new();
            let mut pending = [false; 64];
            let (mut now, mut seq) = (0u64, 0u64);
            for _ in 0..20_000 {
                let task = rng.random_range(0..64u32);
                if !pending[task as usize] && rng.random_bool(0.55) {
                    arm_random(&mut rng, &mut q, &mut reference, now, &mut seq, task);
                    pending[task as usize] = true;
                    continue;
                }
                if let Some(t) = q.pop_tie() {
                    let ((at, _), task) = reference.pop_first().expect("a tie is pending");
                    assert_eq!((at, task), (now, t));
                    pending[t as usize] = false;
                    continue;
                }
                let limit = if rng.random_bool(0.3) {
                    now + rng.random_range(0..4)
                } else {
                    u64::MAX
                };
                let first = reference.first_key_value().map(|(&(at, _), &t)| (at, t));
                match q.pop_until(limit) {
                    Some((at, Some(t))) => {
                        assert!(at <= limit);
                        assert_eq!(first, Some((at, t)));
                        reference.pop_first();
                        pending[t as usize] = false;
                        now = at;
                        // Every other timer due now is in the tie list.
                        assert!(!q.due_in_heap(now));
                    }
                    Some((at, None)) => {
                        assert!(at <= limit && at >= now);
                        assert!(first.is_some_and(|(t, _)| at <= t), "early after the real");
                        now = at;
                    }
                    None => assert!(first.is_none_or(|(t, _)| t > limit)),
                }
                assert_eq!(q.len(), reference.len());
            }
        }
    }

    #[test]
    fn pops_in_sorted_order() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut q = EventQueue::new();
        let mut reference = Vec::new();
        for round in 0..2000 {
            let k: u64 = rng.random_range(0..500);
            q.push(k);
            reference.push(k);
            if round % 3 == 0 {
                reference.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(q.pop(), reference.pop());
            }
        }
        reference.sort_unstable_by(|a, b| b.cmp(a));
        while let Some(k) = reference.pop() {
            assert_eq!(q.peek(), Some(k));
            assert_eq!(q.pop(), Some(k));
        }
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }
}
