//! `--trace-filter`: which tasks, operations and time window a trace keeps.

use sim::Nanos;

/// What a trace keeps: `task=NAME` (repeatable; `NAME*` matches a prefix), `op=NAME`
/// (repeatable; workload operations, with what their tasks did during them), the window
/// `from=DURATION` / `to=DURATION` of virtual time, and `detail=full` (named points as
/// instants and wake-up flows too) or `detail=lean` (without them). Empty: everything, at the
/// command's detail.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceFilter {
    /// Task names or `prefix*` patterns (empty: every task).
    pub tasks: Vec<String>,
    /// Operation names (empty: every operation, and tasks without operations).
    pub ops: Vec<String>,
    /// Start of the window.
    pub from: Nanos,
    /// End of the window (`Nanos::MAX`: the run's end).
    pub to: Nanos,
    /// Named points and wake-up flows kept (Some(true)), left out (Some(false)), or the
    /// command's default (None: full for run and replay, lean for workload and compare).
    pub full: Option<bool>,
}

const EXPECTED: &str = "expected KEY=VALUE pairs separated by commas, KEY one of task, op, from, \
     to, detail (e.g. task=client3,op=Flush,from=1s,to=2s,detail=full)";

impl TraceFilter {
    /// Everything.
    pub fn all() -> TraceFilter {
        TraceFilter {
            to: Nanos::MAX,
            ..TraceFilter::default()
        }
    }

    /// Parses `task=client3,op=Flush,from=1s,to=2s`; the error says what was expected.
    pub fn parse(text: &str) -> Result<TraceFilter, String> {
        let mut f = TraceFilter::all();
        let (mut from, mut to) = (None, None);
        for part in text.split(',') {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!("'{part}': {EXPECTED}"));
            };
            let value = value.trim();
            if value.is_empty() || value == "*" {
                return Err(format!("'{part}': empty {key}: {EXPECTED}"));
            }
            match key.trim() {
                "task" => f.tasks.push(value.to_string()),
                "op" => f.ops.push(value.to_string()),
                "from" | "to" => {
                    let t = sim::parse_duration(value).map_err(|e| format!("{key}: {e}"))?;
                    let slot = if key.trim() == "from" {
                        &mut from
                    } else {
                        &mut to
                    };
                    if slot.replace(t).is_some() {
                        return Err(format!("{key} given twice: {EXPECTED}"));
                    }
                }
                "detail" => {
                    let full = match value {
                        "full" => true,
                        "lean" => false,
                        v => {
                            return Err(format!("detail={v}: expected detail=full or detail=lean"))
                        }
                    };
                    if f.full.replace(full).is_some() {
                        return Err(format!("detail given twice: {EXPECTED}"));
                    }
                }
                k => return Err(format!("unknown key '{k}': {EXPECTED}")),
            }
        }
        f.from = from.unwrap_or(0);
        f.to = to.unwrap_or(Nanos::MAX);
        if f.from >= f.to {
            return Err(format!(
                "from={} is not before to={}: expected the window's start before its end",
                sim::format_duration(f.from),
                sim::format_duration(f.to)
            ));
        }
        Ok(f)
    }

    /// Whether task `name` is kept.
    pub fn keeps_task(&self, name: &str) -> bool {
        self.tasks.is_empty()
            || self.tasks.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            })
    }

    /// Whether operation `name` is kept.
    pub fn keeps_op(&self, name: &str) -> bool {
        self.ops.is_empty() || self.ops.iter().any(|o| o == name)
    }

    /// `[start, end]` cut to the window, or None when outside it (an instant on its edge
    /// is kept).
    pub fn clip(&self, start: Nanos, end: Nanos) -> Option<(Nanos, Nanos)> {
        let (s, e) = (start.max(self.from), end.min(self.to));
        (s < e || (start == end && s == e)).then_some((s, e))
    }
}
