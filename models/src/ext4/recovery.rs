//! The crash check (S2) for ext3/ext4: after a crash now, journal replay keeps the
//! transactions whose commit records are on the platter (crate::jbd2::recovery); every fsync
//! that returned must find its inode's transaction among them and its data blocks durable.

use super::Ext4;

impl Ext4 {
    /// Checks that recovery from the device's durable image now would keep every returned
    /// fsync; records an S2 violation otherwise.
    pub fn check_crash(&self, when: &str) {
        let inner = &self.inner;
        let Some(image) = inner.dev.durable_image() else {
            return;
        };
        let js = inner.journal.state();
        let recovered = crate::jbd2::recovery::recovered_tid(&js, &image);
        let st = inner.st.borrow();
        for s in &st.synced {
            if s.tid > recovered {
                let msg = format!(
                    "fsync of {} returned at {} ns needing transaction {}, but recovery after a crash when {when} replays only up to {recovered}",
                    s.path, s.at, s.tid
                );
                drop(st);
                self.violation("S2", msg);
                return;
            }
            if let Some(&(off, tok)) = s.data.iter().find(|&&(off, tok)| {
                !image
                    .range(..=off)
                    .next_back()
                    .is_some_and(|(&o, w)| o + w.len > off && w.token >= tok)
            }) {
                let msg = format!(
                    "fsync of {} returned at {} ns, but its data block at byte {off} (write {tok}) is not durable when {when}",
                    s.path, s.at
                );
                drop(st);
                self.violation("S2", msg);
                return;
            }
        }
    }
}

impl Ext4 {
    /// The recovered state after a power failure now: not modelled for ext3/ext4. Journal
    /// replay here yields only the last transaction id it keeps (jbd2::recovery), not the
    /// names, sizes and extents it restores.
    pub fn recovered(&self) -> Result<crate::vfs::Recovered, String> {
        let fs = match self.inner.cfg.variant {
            super::Variant::Ext3 => "ext3",
            super::Variant::Ext4 => "ext4",
        };
        Err(format!(
            "the recovered state is not modelled for {fs}: its journal replay keeps transactions, not names, sizes or extents"
        ))
    }
}
