//! The volatile write cache and the durability rule of dm-log-writes
//! (Documentation/admin-guide/device-mapper/log-writes.rst): a FLUSH makes durable exactly
//! the writes that had completed before the FLUSH was issued; a FUA write is durable when it
//! completes; a power loss drops everything else still in the cache.

use std::collections::{BTreeMap, VecDeque};

/// A write that completed into the cache and is not yet durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dirty {
    cidx: u64,
    wseq: u64,
    offset: u64,
    len: u64,
    token: u64,
}

/// What is on stable media at one offset: the newest durable write there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurableWrite {
    /// Length in bytes.
    pub len: u64,
    /// The model's token for the content (what was written).
    pub token: u64,
    /// Completion order of the write (newer wins).
    pub wseq: u64,
}

/// Dirty data a flush must destage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Destage {
    /// Bytes.
    pub bytes: u64,
    /// Writes.
    pub writes: u64,
}

/// Cache state and, when tracked, the durable image.
#[derive(Debug)]
pub struct WriteCache {
    enabled: bool,
    capacity: u64,
    next_cidx: u64,
    next_wseq: u64,
    claimed_upto: u64,
    volatile: VecDeque<Dirty>,
    dirty_bytes: u64,
    image: Option<BTreeMap<u64, DurableWrite>>,
    /// Bumped whenever the durable image changes.
    image_version: u64,
    /// Bytes destaged in the background because the cache was full.
    pub background_bytes: u64,
    /// The power is off (dm-flakey's drop_writes after a power failure): completed writes
    /// reach neither the cache nor the medium.
    dropping: bool,
}

impl WriteCache {
    /// A cache (`enabled` false: every write is durable on completion).
    pub fn new(enabled: bool, capacity: u64, track_image: bool) -> Self {
        WriteCache {
            enabled,
            capacity,
            next_cidx: 0,
            next_wseq: 0,
            claimed_upto: 0,
            volatile: VecDeque::new(),
            dirty_bytes: 0,
            image: track_image.then(BTreeMap::new),
            image_version: 0,
            background_bytes: 0,
            dropping: false,
        }
    }

    /// Bytes completed but not yet durable.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_bytes
    }

    /// Records a completed write.
    pub fn complete_write(&mut self, offset: u64, len: u64, token: u64, fua: bool) {
        let wseq = self.next_wseq;
        self.next_wseq += 1;
        if self.dropping {
            return;
        }
        if fua || !self.enabled {
            self.make_durable(offset, len, token, wseq);
            return;
        }
        self.volatile.push_back(Dirty {
            cidx: self.next_cidx,
            wseq,
            offset,
            len,
            token,
        });
        self.next_cidx += 1;
        self.dirty_bytes += len;
        // A full cache destages its oldest data in the background (a device may persist
        // cached data at any time; only flushes and FUA give guarantees).
        while self.dirty_bytes > self.capacity {
            let Some(d) = self.volatile.pop_front() else {
                break;
            };
            self.dirty_bytes -= d.len;
            self.background_bytes += d.len;
            self.claimed_upto = self.claimed_upto.max(d.cidx + 1);
            self.make_durable(d.offset, d.len, d.token, d.wseq);
        }
    }

    /// A flush is issued: returns its cover (writes with a smaller completion index).
    pub fn issue_flush(&mut self) -> u64 {
        self.next_cidx
    }

    /// A flush with this cover starts service: the dirty data it must destage that no
    /// earlier flush already claimed.
    pub fn claim(&mut self, cover: u64) -> Destage {
        let mut d = Destage::default();
        if cover > self.claimed_upto {
            // A write that continues the previous one on the medium (the bios of one merged
            // request, a sequential stream) is destaged in the same pass: no new positioning.
            let mut end = None;
            for w in self.volatile.iter() {
                if w.cidx >= cover {
                    break;
                }
                if w.cidx >= self.claimed_upto {
                    d.bytes += w.len;
                    if end != Some(w.offset) {
                        d.writes += 1;
                    }
                    end = Some(w.offset + w.len);
                }
            }
            self.claimed_upto = cover;
        }
        d
    }

    /// A flush with this cover completes: its writes become durable.
    pub fn complete_flush(&mut self, cover: u64) {
        while let Some(&w) = self.volatile.front() {
            if w.cidx >= cover {
                break;
            }
            self.volatile.pop_front();
            self.dirty_bytes -= w.len;
            self.make_durable(w.offset, w.len, w.token, w.wseq);
        }
    }

    fn make_durable(&mut self, offset: u64, len: u64, token: u64, wseq: u64) {
        if let Some(img) = &mut self.image {
            self.image_version += 1;
            let e = img
                .entry(offset)
                .or_insert(DurableWrite { len, token, wseq });
            if wseq >= e.wseq {
                *e = DurableWrite { len, token, wseq };
            }
        }
    }

    /// A power failure: every write still in the cache is lost, and writes completing from
    /// now on are dropped until `restore_power` (xfstests' `_flakey_drop_and_remount` loads
    /// dm-flakey's drop_writes table before it unmounts).
    pub fn power_fail(&mut self) {
        self.volatile.clear();
        self.dirty_bytes = 0;
        self.claimed_upto = self.next_cidx;
        self.dropping = true;
    }

    /// The power is back (dm-flakey's table allows writes again).
    pub fn restore_power(&mut self) {
        self.dropping = false;
    }

    /// Puts a write straight onto the medium, newest at its offset: what a mount's commit
    /// leaves durable when the model does not time it.
    pub fn write_durable(&mut self, offset: u64, len: u64, token: u64) {
        let wseq = self.next_wseq;
        self.next_wseq += 1;
        self.make_durable(offset, len, token, wseq);
    }

    /// What survives a power loss now: offset → newest durable write (None if untracked).
    pub fn durable_image(&self) -> Option<&BTreeMap<u64, DurableWrite>> {
        self.image.as_ref()
    }

    /// A number that changes whenever the durable image does.
    pub fn image_version(&self) -> u64 {
        self.image_version
    }

    /// Tokens of writes completed but lost on a power loss now, oldest first.
    pub fn volatile_tokens(&self) -> Vec<u64> {
        self.volatile.iter().map(|w| w.token).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(c: &WriteCache) -> Vec<u64> {
        let mut t: Vec<u64> = c
            .durable_image()
            .unwrap()
            .values()
            .map(|w| w.token)
            .collect();
        t.sort();
        t
    }

    #[test]
    fn dm_log_writes_example() {
        // W1,W2,W3 issued; C3,C2 complete; Wflush issued; C1; Cflush => W3,W2 durable, W1 not.
        let mut c = WriteCache::new(true, u64::MAX, true);
        c.complete_write(3 << 12, 4096, 3, false);
        c.complete_write(2 << 12, 4096, 2, false);
        let cover = c.issue_flush();
        c.complete_write(1 << 12, 4096, 1, false);
        assert_eq!(
            c.claim(cover),
            Destage {
                bytes: 8192,
                writes: 2
            }
        );
        c.complete_flush(cover);
        assert_eq!(tokens(&c), vec![2, 3]);
        assert_eq!(c.volatile_tokens(), vec![1]);
        assert_eq!(c.dirty_bytes(), 4096);
    }

    #[test]
    fn fua_is_durable_on_completion_and_newer_wins() {
        let mut c = WriteCache::new(true, u64::MAX, true);
        c.complete_write(0, 4096, 10, false);
        c.complete_write(0, 4096, 11, true);
        let cover = c.issue_flush();
        c.complete_flush(cover);
        // The older cached write at the same offset must not replace the newer FUA write.
        assert_eq!(c.durable_image().unwrap()[&0].token, 11);
    }

    #[test]
    fn second_flush_claims_only_new_dirty_data() {
        let mut c = WriteCache::new(true, u64::MAX, false);
        c.complete_write(0, 100, 1, false);
        let f1 = c.issue_flush();
        c.complete_write(8192, 50, 2, false);
        let f2 = c.issue_flush();
        assert_eq!(c.claim(f1).bytes, 100);
        assert_eq!(c.claim(f2).bytes, 50);
    }

    #[test]
    fn full_cache_destages_oldest() {
        let mut c = WriteCache::new(true, 8192, true);
        for i in 0..4 {
            c.complete_write(i << 12, 4096, i, false);
        }
        assert_eq!(c.dirty_bytes(), 8192);
        assert_eq!(tokens(&c), vec![0, 1]);
        assert_eq!(c.background_bytes, 8192);
    }

    #[test]
    fn a_power_failure_drops_the_cache_and_later_writes() {
        let mut c = WriteCache::new(true, 1 << 20, true);
        c.complete_write(0, 4096, 1, true);
        c.complete_write(4096, 4096, 2, false);
        c.power_fail();
        assert_eq!(c.dirty_bytes(), 0);
        c.complete_write(8192, 4096, 3, true);
        let cover = c.issue_flush();
        c.complete_flush(cover);
        assert_eq!(tokens(&c), [1]);
        c.restore_power();
        c.write_durable(0, 4096, 4);
        c.complete_write(8192, 4096, 5, true);
        assert_eq!(tokens(&c), [4, 5]);
    }

    #[test]
    fn no_cache_means_durable_on_completion() {
        let mut c = WriteCache::new(false, 0, true);
        c.complete_write(0, 4096, 5, false);
        assert_eq!(tokens(&c), vec![5]);
        assert_eq!(c.dirty_bytes(), 0);
    }

    #[test]
    fn contiguous_writes_destage_in_one_pass() {
        let mut c = WriteCache::new(true, 1 << 30, false);
        // Four bios of one merged 16 KiB request, then a write elsewhere.
        for k in 0..4 {
            c.complete_write(k * 4096, 4096, k + 1, false);
        }
        c.complete_write(1 << 20, 4096, 9, false);
        let cover = c.issue_flush();
        let d = c.claim(cover);
        assert_eq!((d.bytes, d.writes), (5 * 4096, 2));
    }
}
