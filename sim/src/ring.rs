//! `Ring`: the FIFO the engine keeps tasks in (the ready queue, resources' waiters).
//!
//! A power-of-two ring of `Copy` items indexed by free-running counters: a push or pop is a
//! mask, a load or store and an increment, with no wrap-around branch (the subset of
//! `VecDeque` the engine uses, measured cheaper per wake-up in `fsyncsim bench`).

/// A FIFO of `Copy` items in a power-of-two ring.
#[derive(Debug, Clone)]
pub(crate) struct Ring<T> {
    /// Capacity is `buf.len()`, a power of two (0 before the first push).
    buf: Vec<T>,
    /// Free-running positions: the items are `buf[i & mask]` for `i` in `head..tail`.
    head: usize,
    tail: usize,
}

impl<T: Copy + Default> Default for Ring<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default> Ring<T> {
    /// An empty ring (allocates on the first push).
    pub(crate) fn new() -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            tail: 0,
        }
    }

    /// Number of items.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head)
    }

    /// Whether the ring is empty.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        i & self.buf.len().wrapping_sub(1)
    }

    /// Appends an item.
    #[inline(always)]
    pub(crate) fn push_back(&mut self, x: T) {
        if self.len() == self.buf.len() {
            self.grow();
        }
        let i = self.slot(self.tail);
        self.buf[i] = x;
        self.tail = self.tail.wrapping_add(1);
    }

    /// The oldest item.
    #[inline(always)]
    pub(crate) fn front(&self) -> Option<&T> {
        if self.is_empty() {
            None
        } else {
            Some(&self.buf[self.slot(self.head)])
        }
    }

    /// Removes the oldest item.
    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let x = self.buf[self.slot(self.head)];
        self.head = self.head.wrapping_add(1);
        Some(x)
    }

    /// Removes the newest item.
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        self.tail = self.tail.wrapping_sub(1);
        Some(self.buf[self.slot(self.tail)])
    }

    /// Doubles the capacity (at least 8), keeping the order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.make_contiguous();
        let cap = (self.buf.len() * 2).max(8);
        self.buf.resize(cap, T::default());
    }

    /// Moves the items to the front of the buffer, oldest first, and returns them.
    pub(crate) fn make_contiguous(&mut self) -> &[T] {
        let n = self.len();
        if !self.buf.is_empty() {
            let h = self.slot(self.head);
            self.buf.rotate_left(h);
        }
        self.head = 0;
        self.tail = n;
        &self.buf[..n]
    }

    /// Removes the item at `i` (0 = oldest), keeping the order of the others.
    pub(crate) fn remove(&mut self, i: usize) -> Option<T> {
        let n = self.len();
        if i >= n {
            return None;
        }
        self.make_contiguous();
        let x = self.buf[i];
        self.buf.copy_within(i + 1..n, i);
        self.tail = n - 1;
        Some(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::VecDeque;

    /// Random operations against `VecDeque`, across growth and wrap-around.
    #[test]
    fn ring_behaves_like_vecdeque() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut r: Ring<u32> = Ring::new();
        let mut d: VecDeque<u32> = VecDeque::new();
        for step in 0..50_000u32 {
            match rng.random_range(0..10) {
                0..=4 => {
                    r.push_back(step);
                    d.push_back(step);
                }
                5..=7 => assert_eq!(r.pop_front(), d.pop_front()),
                8 => assert_eq!(r.pop_back(), d.pop_back()),
                _ => {
                    if rng.random_bool(0.5) {
                        assert_eq!(r.make_contiguous(), d.make_contiguous());
                    } else {
                        let i = rng.random_range(0..=d.len());
                        assert_eq!(r.remove(i), d.remove(i));
                    }
                }
            }
            assert_eq!(r.len(), d.len());
            assert_eq!(r.is_empty(), d.is_empty());
            assert_eq!(r.front(), d.front());
        }
    }
}
