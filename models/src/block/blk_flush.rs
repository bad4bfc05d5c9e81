//! REQ_FLUSH / REQ_FUA sequencing (`block/blk-flush.c`, v2.6.37). Such bios never enter the
//! elevator (`__make_request` inserts them with ELEVATOR_INSERT_FRONT); `blk_do_flush` turns
//! each into PREFLUSH → DATA → POSTFLUSH, skipping the steps the device or the request does
//! not need, and runs one sequence per queue at a time (`q->flush_seq`; later ones wait on
//! `q->pending_flushes`). A FUA write without PREFLUSH on a device that honours FUA is
//! issued directly. No queue draining in 2.6.37.

use super::FlushStep;
use std::collections::VecDeque;

/// What a flush/FUA bio asks for.
#[derive(Clone, Copy, Debug)]
pub struct FlushBio {
    /// The bio (device slot id).
    pub bio: u32,
    /// Byte offset of the data.
    pub offset: u64,
    /// Bytes of data (0: an empty flush).
    pub len: u64,
    /// REQ_FLUSH (a PREFLUSH write, or an empty flush).
    pub preflush: bool,
    /// REQ_FUA.
    pub fua: bool,
}

/// How a flush/FUA bio starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushStart {
    /// Issue this step now (a request for the dispatch list's head).
    Step(FlushStep),
    /// Wait: another sequence is running.
    Pending,
    /// Nothing to do: the bio completes now (an empty flush on a device without a cache).
    Done,
}

/// The queue's flush machinery (`q->flush_seq`, `q->orig_flush_rq`, `q->pending_flushes`).
#[derive(Debug)]
pub struct FlushQueue {
    /// The device has a volatile cache (`REQ_FLUSH` in `q->flush_flags`).
    has_flush: bool,
    /// The device honours FUA.
    has_fua: bool,
    /// The running sequence: its bio and the steps still to do (PREFLUSH, DATA, POSTFLUSH).
    cur: Option<(FlushBio, [bool; 3])>,
    pending: VecDeque<FlushBio>,
}

impl FlushQueue {
    /// A flush queue for a device with or without a cache and FUA.
    pub fn new(has_flush: bool, has_fua: bool) -> Self {
        FlushQueue {
            has_flush,
            has_fua,
            cur: None,
            pending: VecDeque::new(),
        }
    }

    /// Whether the DATA step carries FUA to the device.
    pub fn data_fua(&self, b: &FlushBio) -> bool {
        b.fua && self.has_fua
    }

    /// `blk_do_flush`: starts the bio's sequence, queues it behind the running one, or
    /// issues it directly.
    pub fn submit(&mut self, b: FlushBio) -> FlushStart {
        let steps = self.steps(&b);
        if b.len > 0 && !steps[0] && !steps[2] {
            return FlushStart::Step(FlushStep::Direct);
        }
        if self.cur.is_some() {
            self.pending.push_back(b);
            return FlushStart::Pending;
        }
        self.start(b, steps)
    }

    fn steps(&self, b: &FlushBio) -> [bool; 3] {
        let do_preflush = self.has_flush && b.preflush;
        let do_postflush = self.has_flush && !self.has_fua && b.fua;
        [do_preflush, b.len > 0, do_postflush]
    }

    fn start(&mut self, b: FlushBio, steps: [bool; 3]) -> FlushStart {
        self.cur = Some((b, steps));
        match self.next_step() {
            Some(s) => FlushStart::Step(s),
            None => {
                self.cur = None;
                FlushStart::Done
            }
        }
    }

    fn next_step(&self) -> Option<FlushStep> {
        let (_, s) = self.cur.as_ref()?;
        [FlushStep::Preflush, FlushStep::Data, FlushStep::Postflush]
            .into_iter()
            .zip(s)
            .find(|(_, &todo)| todo)
            .map(|(x, _)| x)
    }

    /// The running sequence's bio.
    pub fn current(&self) -> Option<FlushBio> {
        self.cur.map(|(b, _)| b)
    }

    /// `blk_flush_complete_seq`: `step` of the running sequence completed. Returns the bio
    /// that is now finished (NIL if none), and the next step to issue with its bio: the
    /// sequence's next step, or the first step of the next pending sequence. Bios whose
    /// sequences need no step at all are appended to `done`.
    pub fn complete(
        &mut self,
        step: FlushStep,
        done: &mut Vec<u32>,
    ) -> Option<(FlushStep, FlushBio)> {
        let (b, s) = self.cur.as_mut().expect("a running flush sequence");
        let i = match step {
            FlushStep::Preflush => 0,
            FlushStep::Data => 1,
            _ => 2,
        };
        s[i] = false;
        let b = *b;
        if let Some(n) = self.next_step() {
            return Some((n, b));
        }
        self.cur = None;
        done.push(b.bio);
        while let Some(p) = self.pending.pop_front() {
            let steps = self.steps(&p);
            match self.start(p, steps) {
                FlushStart::Step(s) => return Some((s, p)),
                _ => done.push(p.bio),
            }
        }
        None
    }

    /// Sequences waiting.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// No sequence running (for assertions).
    pub fn idle(&self) -> bool {
        self.cur.is_none() && self.pending.is_empty()
    }
}

impl Default for FlushQueue {
    fn default() -> Self {
        Self::new(true, true)
    }
}
