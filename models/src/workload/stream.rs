//! The read-latency test of Jan Kara's jbd commit 2db938bee32e ("jbd: Refine commit writeout
//! logic", 2.6.39): streaming writers (dd-like buffered appends, no fsync) and readers that
//! sleep, then read `read_size` of a file not in the page cache and time it.

use super::fsload::{op_index, Ctx};
use super::spec::Kind;
use crate::vfs::Op;

/// Setup: the writers' files and the readers' laid-out, uncached files.
pub(crate) fn setup_ops(spec: &super::spec::Spec) -> Vec<Op> {
    let mut ops = vec![Op::Mkdir("/stream".into()), Op::Mkdir("/rl".into())];
    for w in 0..spec.clients {
        ops.push(Op::Create(format!("/stream/w{w}").into()));
    }
    for r in 0..spec.readers {
        ops.push(Op::Populate(
            format!("/rl/r{r}").into(),
            spec.reader_file_size,
        ));
    }
    ops
}

/// A streaming writer: appends `block_size` buffered writes for the whole run (dd
/// if=/dev/zero bs=…); balance_dirty_pages holds it to what the disk takes.
pub(crate) async fn writer(cx: Ctx, id: u32) {
    let op = op_index(Kind::ReadLatency, "write");
    let mut before = Vec::new();
    let p: crate::vfs::OpPath = format!("/stream/w{id}").into();
    let n = cx.spec.block_size;
    while cx
        .measure(op, n, &mut before, cx.fs(Op::Write(p.clone(), n)))
        .await
    {}
}

/// A reader: sleeps `read_interval`, then reads the next `read_size` of its file (cold: the
/// file is read once front to back), timed as one operation.
pub(crate) async fn reader(cx: Ctx, id: u32) {
    let op = op_index(Kind::ReadLatency, "read");
    let mut before = Vec::new();
    let p: crate::vfs::OpPath = format!("/rl/r{id}").into();
    let n = cx.spec.read_size;
    loop {
        cx.h.sleep(cx.spec.read_interval).await;
        if !cx
            .measure(op, n, &mut before, cx.fs(Op::Read(p.clone(), n)))
            .await
        {
            return;
        }
        cx.unit_done();
    }
}
