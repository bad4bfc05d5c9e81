//! What recovery keeps after a power failure: the namespace, each path's inode, link
//! count, size, extents and xattrs, as a filesystem model rebuilds it from the device's
//! durable image (`Filesystem::recovered`). Neutral: every filesystem fills the same type,
//! and `fsyncsim crash` and `[expect.crash]` read only this.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The recovered namespace: every path reachable from the top directory, in path order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Recovered {
    /// Path (`/`, `/a`, `/a/foo`) → what it names; a file with two names is listed twice.
    pub paths: BTreeMap<String, RecoveredInode>,
}

/// A directory, a regular file, a symlink, a fifo or a device node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InodeKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (its target in `RecoveredInode::target`).
    Symlink,
    /// A fifo (S_IFIFO).
    Fifo,
    /// A character device node (S_IFCHR).
    #[serde(rename = "char")]
    CharDev,
    /// A block device node (S_IFBLK).
    #[serde(rename = "block")]
    BlockDev,
}

impl InodeKind {
    /// Every kind.
    pub const ALL: [InodeKind; 6] = [
        InodeKind::Dir,
        InodeKind::File,
        InodeKind::Symlink,
        InodeKind::Fifo,
        InodeKind::CharDev,
        InodeKind::BlockDev,
    ];

    /// The spelling in renderings and `[expect.crash]` (`dir`, `file`, `symlink`, `fifo`,
    /// `char`, `block`).
    pub fn name(self) -> &'static str {
        match self {
            InodeKind::Dir => "dir",
            InodeKind::File => "file",
            InodeKind::Symlink => "symlink",
            InodeKind::Fifo => "fifo",
            InodeKind::CharDev => "char",
            InodeKind::BlockDev => "block",
        }
    }

    /// The kind spelled `s`.
    pub fn parse(s: &str) -> Option<InodeKind> {
        InodeKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// What one recovered path names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecoveredInode {
    /// Directory or file.
    pub kind: InodeKind,
    /// Inode number.
    pub ino: u64,
    /// Names of the inode in the recovered namespace (a directory: its one name).
    pub nlink: u64,
    /// i_size in bytes (files; None for directories: not modelled).
    pub size: Option<u64>,
    /// The file's extents in offset order, with the holes between them up to `size`.
    pub extents: Vec<RecoveredExtent>,
    /// xattr name → value (None: the model keeps names only).
    pub xattrs: BTreeMap<String, Option<String>>,
    /// The permission bits a chmod set (None: never chmod'ed, the creation mode, which
    /// is not modelled).
    pub mode: Option<u32>,
    /// A symlink's target ("" when its content was lost); None for other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What a file range holds after recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtentKind {
    /// Written data.
    Data,
    /// Preallocated (fallocate): allocated, reads return zeros.
    Prealloc,
    /// No extent: reads return zeros.
    Hole,
}

impl ExtentKind {
    /// The spelling in renderings and `[expect.crash]` (`data`, `prealloc`, `hole`).
    pub fn name(self) -> &'static str {
        match self {
            ExtentKind::Data => "data",
            ExtentKind::Prealloc => "prealloc",
            ExtentKind::Hole => "hole",
        }
    }

    /// The kind spelled `s`.
    pub fn parse(s: &str) -> Option<ExtentKind> {
        [ExtentKind::Data, ExtentKind::Prealloc, ExtentKind::Hole]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// One recovered extent (or hole).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecoveredExtent {
    /// File offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Data, prealloc or hole.
    pub kind: ExtentKind,
    /// The device write that holds its bytes (data and prealloc; the model's write token).
    pub write: Option<u64>,
    /// Whether that write is on the durable image (data that is not reads back garbage).
    pub durable: bool,
    /// The device byte its first byte is at (data; 0 otherwise): with `write`, which bytes
    /// it holds (a clone's extent holds another file's). Not in the JSON output.
    #[serde(skip)]
    pub disk: u64,
}

impl RecoveredExtent {
    /// One past its last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

impl RecoveredInode {
    /// The extents with neighbours of the same kind merged (as fiemap output filtered by
    /// xfstests' `_filter_fiemap_flags` reads): (offset, length, kind).
    pub fn merged_extents(&self) -> Vec<(u64, u64, ExtentKind)> {
        let mut out: Vec<(u64, u64, ExtentKind)> = Vec::new();
        for e in &self.extents {
            match out.last_mut() {
                Some(last) if last.2 == e.kind && last.0 + last.1 == e.offset => last.1 += e.len,
                _ => out.push((e.offset, e.len, e.kind)),
            }
        }
        out
    }
}

impl Recovered {
    /// The state as text: one line per path, then its extents and xattrs indented.
    pub fn render(&self) -> String {
        let mut t = String::new();
        for (path, i) in &self.paths {
            let kind = i.kind.name();
            let _ = write!(t, "{path}  {kind} ino {} nlink {}", i.ino, i.nlink);
            if let Some(s) = i.size {
                let _ = write!(t, " size {s}");
            }
            if let Some(m) = i.mode {
                let _ = write!(t, " mode {m:o}");
            }
            if let Some(target) = &i.target {
                let _ = write!(t, " -> {target:?}");
            }
            t.push('\n');
            for e in &i.extents {
                let _ = write!(t, "  {}..{} {}", e.offset, e.end(), e.kind.name());
                if let Some(w) = e.write {
                    let d = if e.durable { "durable" } else { "not durable" };
                    let _ = write!(t, " (write {w}, {d})");
                }
                t.push('\n');
            }
            for (n, v) in &i.xattrs {
                match v {
                    Some(v) => {
                        let _ = writeln!(t, "  xattr {n} = {v:?}");
                    }
                    None => {
                        let _ = writeln!(t, "  xattr {n}");
                    }
                }
            }
        }
        t
    }

    /// The namespace reachable from directory `root` through the (directory, name) → inode
    /// entries `names`; each path's inode is `inode(ino, nlink)`, nlink counting its names.
    pub fn from_names(
        root: u64,
        names: &BTreeMap<(u64, String), u64>,
        inode: impl Fn(u64, u64) -> RecoveredInode,
    ) -> Recovered {
        let mut nlink: BTreeMap<u64, u64> = BTreeMap::new();
        let mut children: BTreeMap<u64, Vec<(&str, u64)>> = BTreeMap::new();
        for ((dir, name), ino) in names {
            *nlink.entry(*ino).or_default() += 1;
            children.entry(*dir).or_default().push((name, *ino));
        }
        let mut paths = BTreeMap::new();
        let mut stack = vec![("/".to_string(), root)];
        let mut seen = std::collections::BTreeSet::from([root]);
        while let Some((path, ino)) = stack.pop() {
            let n = nlink.get(&ino).copied().unwrap_or(1);
            paths.insert(path.clone(), inode(ino, n));
            for &(name, c) in children.get(&ino).map(Vec::as_slice).unwrap_or(&[]) {
                let p = match path.as_str() {
                    "/" => format!("/{name}"),
                    _ => format!("{path}/{name}"),
                };
                // A directory is entered once; a file's other names are listed too.
                if seen.insert(c) || !children.contains_key(&c) {
                    stack.push((p, c));
                }
            }
        }
        Recovered { paths }
    }
}

/// Fills the holes between `extents` (sorted, non-overlapping) and up to `size`.
pub fn with_holes(extents: Vec<RecoveredExtent>, size: u64) -> Vec<RecoveredExtent> {
    let mut out = Vec::new();
    let mut cur = 0;
    for e in extents {
        if e.offset > cur {
            out.push(hole(cur, e.offset - cur));
        }
        cur = cur.max(e.end());
        out.push(e);
    }
    if size > cur {
        out.push(hole(cur, size - cur));
    }
    out
}

fn hole(offset: u64, len: u64) -> RecoveredExtent {
    RecoveredExtent {
        disk: 0,
        offset,
        len,
        kind: ExtentKind::Hole,
        write: None,
        durable: true,
    }
}

/// When a scripted run takes its power failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// The `nth` time (from 1) task `task` reaches point `point` (`"A fsync:done#2"`).
    Step {
        /// Task name.
        task: String,
        /// Point label.
        point: String,
        /// Which arrival at the point (1: the first).
        nth: usize,
    },
    /// After every task finished (`"end"`).
    End,
}

impl std::fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CrashPoint::Step { task, point, nth } if *nth == 1 => write!(f, "{task} {point}"),
            CrashPoint::Step { task, point, nth } => write!(f, "{task} {point}#{nth}"),
            CrashPoint::End => write!(f, "end"),
        }
    }
}

/// What a scenario's `[expect.crash]` says a power failure at `at` must leave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashExpect {
    /// When the power fails.
    pub at: CrashPoint,
    /// Paths that must exist.
    pub exists: Vec<String>,
    /// Paths that must not exist.
    pub absent: Vec<String>,
    /// i_size per path.
    pub size: BTreeMap<String, u64>,
    /// Link count per path.
    pub nlink: BTreeMap<String, u64>,
    /// The exact set of xattr names per path.
    pub xattrs: BTreeMap<String, Vec<String>>,
    /// The extent layout per path (neighbours of one kind merged, holes up to i_size
    /// included): (offset, length, kind).
    pub extents: BTreeMap<String, Vec<(u64, u64, ExtentKind)>>,
    /// Ranges that must hold the same durable bytes as a range of another file (or of the
    /// same file elsewhere): a clone's destination and its source.
    pub shared: Vec<SharedBytes>,
    /// The kind per path (`symlink`, `fifo`, `char`, `block`, `file`, `dir`).
    pub kind: BTreeMap<String, InodeKind>,
    /// A symlink's target per path (what readlink prints).
    pub target: BTreeMap<String, String>,
    /// The permission bits per path (a chmod's MODE).
    pub mode: BTreeMap<String, u32>,
}

/// `shared = { "PATH OFFSET LEN" = "SRC SRC_OFFSET" }`: after recovery PATH's bytes
/// [OFFSET, OFFSET + LEN) are SRC's bytes at SRC_OFFSET — the same device bytes, durable
/// (what an md5sum of a cloned file checks, as far as the model knows bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedBytes {
    /// The file that must hold the bytes.
    pub path: String,
    /// Its range start.
    pub offset: u64,
    /// Range length.
    pub len: u64,
    /// The file whose bytes they are.
    pub src: String,
    /// Where they are in it.
    pub src_offset: u64,
}

/// The device bytes behind [off, off + len) of a recovered file, as runs (length, Some((write,
/// device offset)) for durable data, None for anything else: holes, prealloc, lost data,
/// bytes past the file's extents); neighbouring runs that continue on the device merged.
fn byte_runs(i: &RecoveredInode, off: u64, len: u64) -> Vec<(u64, Option<(u64, u64)>)> {
    let mut runs: Vec<(u64, Option<(u64, u64)>)> = Vec::new();
    let mut push = |n: u64, src: Option<(u64, u64)>| {
        if let Some(last) = runs.last_mut() {
            let cont = match (last.1, src) {
                (Some((w, d)), Some((w2, d2))) => w == w2 && d + last.0 == d2,
                (None, None) => true,
                _ => false,
            };
            if cont {
                last.0 += n;
                return;
            }
        }
        runs.push((n, src));
    };
    let (end, mut cur) = (off + len, off);
    for e in i.extents.iter().filter(|e| e.end() > off && e.offset < end) {
        let (a, b) = (e.offset.max(off), e.end().min(end));
        if a > cur {
            push(a - cur, None);
        }
        let src = match (e.kind, e.write) {
            (ExtentKind::Data, Some(w)) if e.durable => Some((w, e.disk + (a - e.offset))),
            _ => None,
        };
        push(b - a, src);
        cur = b;
    }
    if cur < end {
        push(end - cur, None);
    }
    runs
}

/// `byte_runs` as text: `[4096 write 3 at 1052672, 8192 other]`.
fn runs_text(v: &[(u64, Option<(u64, u64)>)]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|(n, s)| match s {
            Some((w, d)) => format!("{n} write {w} at {d}"),
            None => format!("{n} not durable data"),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

impl CrashExpect {
    /// What differs between the expectation and `got`, one line each (empty: all holds).
    pub fn compare(&self, got: &Recovered) -> Vec<String> {
        let mut out = Vec::new();
        let p = &got.paths;
        for path in &self.exists {
            if !p.contains_key(path) {
                out.push(format!("{path}: expected to exist, absent"));
            }
        }
        for path in &self.absent {
            if let Some(i) = p.get(path) {
                out.push(format!(
                    "{path}: expected absent, present (ino {}, nlink {})",
                    i.ino, i.nlink
                ));
            }
        }
        let mut field = |path: &str, what: &str, want: String, have: Option<String>| match have {
            None => out.push(format!("{path}: expected {what} {want}, absent")),
            Some(h) if h != want => out.push(format!("{path}: expected {what} {want}, got {h}")),
            Some(_) => {}
        };
        for (path, want) in &self.size {
            let have = p
                .get(path)
                .map(|i| i.size.map_or("none".into(), |s| s.to_string()));
            field(path, "size", want.to_string(), have);
        }
        for (path, want) in &self.nlink {
            field(
                path,
                "nlink",
                want.to_string(),
                p.get(path).map(|i| i.nlink.to_string()),
            );
        }
        for (path, want) in &self.xattrs {
            let mut want = want.clone();
            want.sort();
            let have = p.get(path).map(|i| {
                format!(
                    "[{}]",
                    i.xattrs.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            });
            field(path, "xattrs", format!("[{}]", want.join(", ")), have);
        }
        for (path, want) in &self.extents {
            let have = p.get(path).map(|i| extents_text(&i.merged_extents()));
            field(path, "extents", extents_text(want), have);
        }
        self.special_diffs(got, &mut out);
        self.shared_diffs(got, &mut out);
        out
    }

    /// The `kind`, `target` and `mode` entries that do not hold, one line each.
    fn special_diffs(&self, got: &Recovered, out: &mut Vec<String>) {
        let p = &got.paths;
        let mut field = |path: &str, what: &str, want: String, have: Option<String>| match have {
            None => out.push(format!("{path}: expected {what} {want}, absent")),
            Some(h) if h != want => out.push(format!("{path}: expected {what} {want}, got {h}")),
            Some(_) => {}
        };
        for (path, want) in &self.kind {
            let have = p.get(path).map(|i| i.kind.name().to_string());
            field(path, "kind", want.name().to_string(), have);
        }
        for (path, want) in &self.target {
            let have = p.get(path).map(|i| match &i.target {
                Some(t) => format!("{t:?}"),
                None => format!("no target (a {})", i.kind.name()),
            });
            field(path, "target", format!("{want:?}"), have);
        }
        for (path, want) in &self.mode {
            let have = p.get(path).map(|i| match i.mode {
                Some(m) => format!("{m:04o}"),
                None => "the creation mode (no chmod recovered)".to_string(),
            });
            field(path, "mode", format!("{want:04o}"), have);
        }
    }

    /// The `shared` ranges that do not hold their source's durable bytes, one line each.
    fn shared_diffs(&self, got: &Recovered, out: &mut Vec<String>) {
        let p = &got.paths;
        for s in &self.shared {
            let (Some(a), Some(b)) = (p.get(&s.path), p.get(&s.src)) else {
                out.push(format!(
                    "{}: expected bytes {}..{} shared with {}, one of the files is absent",
                    s.path,
                    s.offset,
                    s.offset + s.len,
                    s.src
                ));
                continue;
            };
            let (have, want) = (
                byte_runs(a, s.offset, s.len),
                byte_runs(b, s.src_offset, s.len),
            );
            if have != want || want.iter().any(|r| r.1.is_none()) {
                out.push(format!(
                    "{}: expected bytes {}..{} to be {}'s durable bytes at {} {}, got {}",
                    s.path,
                    s.offset,
                    s.offset + s.len,
                    s.src,
                    s.src_offset,
                    runs_text(&want),
                    runs_text(&have)
                ));
            }
        }
    }
}

/// Extents as `[0..4096 data, 4096..8192 prealloc]`.
pub fn extents_text(v: &[(u64, u64, ExtentKind)]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|(o, l, k)| format!("{o}..{} {}", o + l, k.name()))
        .collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(offset: u64, len: u64) -> RecoveredExtent {
        RecoveredExtent {
            disk: 0,
            offset,
            len,
            kind: ExtentKind::Data,
            write: Some(1),
            durable: true,
        }
    }

    #[test]
    fn holes_fill_the_gaps_up_to_the_size_and_neighbours_merge() {
        let v = with_holes(vec![data(4096, 4096), data(8192, 4096)], 20000);
        let kinds: Vec<(u64, u64, ExtentKind)> =
            v.iter().map(|e| (e.offset, e.len, e.kind)).collect();
        assert_eq!(
            kinds,
            [
                (0, 4096, ExtentKind::Hole),
                (4096, 4096, ExtentKind::Data),
                (8192, 4096, ExtentKind::Data),
                (12288, 7712, ExtentKind::Hole),
            ]
        );
        let i = RecoveredInode {
            kind: InodeKind::File,
            ino: 257,
            nlink: 1,
            size: Some(20000),
            extents: v,
            xattrs: BTreeMap::new(),
            mode: None,
            target: None,
        };
        assert_eq!(
            extents_text(&i.merged_extents()),
            "[0..4096 hole, 4096..12288 data, 12288..20000 hole]"
        );
    }

    #[test]
    fn every_name_of_a_file_is_a_path_and_counts_as_a_link() {
        let names: BTreeMap<(u64, String), u64> = [
            ((256, "d".to_string()), 257),
            ((257, "a".to_string()), 258),
            ((256, "b".to_string()), 258),
            // Under a directory nothing reaches: not listed, but still a link.
            ((999, "c".to_string()), 258),
        ]
        .into_iter()
        .collect();
        let r = Recovered::from_names(256, &names, |ino, nlink| RecoveredInode {
            kind: if ino == 258 {
                InodeKind::File
            } else {
                InodeKind::Dir
            },
            ino,
            nlink,
            size: None,
            extents: Vec::new(),
            xattrs: BTreeMap::new(),
            mode: None,
            target: None,
        });
        let paths: Vec<(&str, u64, u64)> = r
            .paths
            .iter()
            .map(|(p, i)| (p.as_str(), i.ino, i.nlink))
            .collect();
        assert_eq!(
            paths,
            [
                ("/", 256, 1),
                ("/b", 258, 3),
                ("/d", 257, 1),
                ("/d/a", 258, 3)
            ]
        );
    }
}
