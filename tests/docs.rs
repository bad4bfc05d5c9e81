//! The README and the manual cannot drift from the tool: every `fsyncsim …` command in a code
//! block parses, every file a page links exists, every block marked ` ```text fsyncsim ARGS `
//! is exactly what that command prints, every block opening with `$ fsyncsim ARGS` matches
//! its output (`...` and `[..]` elide), the README stays an entrance (two commands, at most
//! 250 lines), no page or `--help` calls the source threads "seed 000"…"seed 004", and the
//! pasted `validate --quick` tables hold the rows a test can re-run.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn fsyncsim(args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("run fsyncsim")
}

/// README.md, scenarios/README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    let mut v = vec![root.join("README.md"), root.join("scenarios/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

/// (info string, body lines, line of the opening fence) of each fenced block.
fn blocks(text: &str) -> Vec<(String, Vec<String>, usize)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, Vec<String>, usize)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut cur, line.strip_prefix("```")) {
            (None, Some(info)) => cur = Some((info.trim().to_string(), Vec::new(), n + 1)),
            (Some(_), Some(_)) => out.push(cur.take().unwrap()),
            (Some((_, body, _)), None) => body.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

/// The words of an `fsyncsim …` command line, without a prompt, a trailing comment, a pipe
/// or a redirection.
fn command_words(line: &str) -> Option<Vec<String>> {
    let l = line.trim().trim_start_matches("$ ");
    let rest = l.strip_prefix("fsyncsim ")?;
    // Output that starts with the tool's name ("fsyncsim bench: 64 clients …") is no command.
    if rest
        .split_whitespace()
        .next()
        .is_some_and(|w| w.ends_with(':'))
    {
        return None;
    }
    let cut = rest
        .find(['#', '|', '>', '&', ';'])
        .map_or(rest, |i| &rest[..i]);
    // A shell variable stands for a valid value: 1 (a shard, a seed).
    let words = cut.split_whitespace().map(|w| match w.find("${") {
        Some(i) => {
            let end = w[i..].find('}').map_or(w.len(), |j| i + j + 1);
            format!("{}1{}", &w[..i], &w[end..])
        }
        None => w.to_string(),
    });
    Some(words.collect())
}

/// The block's lines with shell continuations (`\` at the end) joined.
fn joined(body: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for l in body {
        let (text, cont) = match l.trim_end().strip_suffix('\\') {
            Some(t) => (t.to_string(), true),
            None => (l.clone(), false),
        };
        match (open, out.last_mut()) {
            (true, Some(last)) => last.push_str(&format!(" {}", text.trim())),
            _ => out.push(text),
        }
        open = cont;
    }
    out
}

#[test]
fn the_readme_is_an_entrance_with_the_two_commands() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    assert!(
        text.lines().count() <= 250,
        "README.md has {} lines",
        text.lines().count()
    );
    assert!(text.contains("cargo run --release -- run"));
    let test_command = "cargo nextest run --workspace --cargo-profile release";
    assert!(text.contains(test_command));
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    assert!(ci.lines().any(|l| l.trim() == test_command));
    assert!(ci.contains("cargo build --release"));
}

#[test]
fn every_command_in_a_code_block_parses() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (info, body, at) in blocks(&text) {
            // A pasted output block's first line names its command; the rest is output.
            let pasted = body.first().is_some_and(|l| l.starts_with("# pasted from"));
            if info.starts_with("text fsyncsim") || info == "toml" || pasted {
                continue;
            }
            for (k, line) in joined(&body).iter().enumerate() {
                let Some(mut words) = command_words(line) else {
                    continue;
                };
                // Flags are parsed before --help ends the parse: an unknown flag fails.
                words.push("--help".into());
                let o = fsyncsim(&words);
                assert!(
                    o.status.success(),
                    "{}:{} (block line {}): `{}` does not parse: {}",
                    page.display(),
                    at,
                    k + 1,
                    line.trim(),
                    String::from_utf8_lossy(&o.stderr)
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} commands found");
}

#[test]
fn every_marked_sample_is_what_the_command_prints() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (info, body, at) in blocks(&text) {
            let Some(args) = info.strip_prefix("text fsyncsim ") else {
                continue;
            };
            let args: Vec<String> = args.split_whitespace().map(str::to_string).collect();
            let o = fsyncsim(&args);
            let want: String = body.iter().map(|l| format!("{l}\n")).collect();
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                want,
                "{}:{at}: the sample differs from `fsyncsim {}`",
                page.display(),
                args.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked >= 1);
}

/// Whether `line` matches `pat`, where `[..]` in `pat` stands for any text.
fn line_matches(pat: &str, line: &str) -> bool {
    let mut parts = pat.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(j) => rest = &rest[j + p.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether `out` matches the sample `want`, where a line `...` stands for any lines (none
/// too) and `[..]` in a line for any text.
fn sample_matches(want: &[String], out: &[&str]) -> bool {
    match want.split_first() {
        None => out.is_empty(),
        Some((w, rest)) if w == "..." => (0..=out.len()).any(|k| sample_matches(rest, &out[k..])),
        Some((w, rest)) => out
            .split_first()
            .is_some_and(|(o, more)| line_matches(w, o) && sample_matches(rest, more)),
    }
}

#[test]
fn every_dollar_sample_matches_what_the_command_prints() {
    // A block that opens with `$ fsyncsim ARGS` (one command, no shell syntax) shows what it
    // prints: `...` elides lines, `[..]` text that changes from run to run (wall time).
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (_, body, at) in blocks(&text) {
            let Some(cmd) = body.first().and_then(|l| l.strip_prefix("$ fsyncsim ")) else {
                continue;
            };
            if body[1..].iter().any(|l| l.starts_with("$ ")) || cmd.contains(['>', '|', '#']) {
                continue;
            }
            let args: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
            let o = fsyncsim(&args);
            let out = String::from_utf8_lossy(&o.stdout);
            let mut lines: Vec<&str> = out.lines().map(str::trim_end).collect();
            while lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
            }
            let mut want: Vec<String> =
                body[1..].iter().map(|l| l.trim_end().to_string()).collect();
            while want.last().is_some_and(|l| l.is_empty()) {
                want.pop();
            }
            assert!(
                sample_matches(&want, &lines),
                "{}:{at}: the sample differs from `fsyncsim {cmd}`, which prints:\n{out}",
                page.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 1);
}

#[test]
fn the_sample_matcher_honours_its_elisions() {
    let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(sample_matches(
        &w(&["a", "...", "d"]),
        &["a", "b", "c", "d"]
    ));
    assert!(sample_matches(&w(&["a", "...", "b"]), &["a", "b"]));
    assert!(!sample_matches(&w(&["a", "d"]), &["a", "b", "d"]));
    assert!(sample_matches(&w(&["t [..] s"]), &["t 0.1 s"]));
    assert!(!sample_matches(&w(&["t [..] s"]), &["t 0.1 ms!"]));
    assert!(!sample_matches(&w(&["a"]), &["a", "b"]));
}

#[test]
fn every_linked_file_exists() {
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            assert!(
                dir.join(target).exists(),
                "{} links to {target}, which does not exist",
                page.display()
            );
        }
    }
}

#[test]
fn no_page_or_help_calls_the_source_threads_seeds() {
    let numbered = |t: &str| (0..5).any(|n| t.contains(&format!("seed 00{n}")));
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(!numbered(&text), "{} says \"seed 00N\"", page.display());
    }
    for sub in [
        "", "run", "sweep", "replay", "shrink", "check", "workload", "compare", "validate",
        "scrub", "fio", "bench", "list", "merge",
    ] {
        let mut args: Vec<String> = Vec::new();
        if !sub.is_empty() {
            args.push(sub.into());
        }
        args.push("--help".into());
        let o = fsyncsim(&args);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(
            !numbered(&help),
            "`fsyncsim {sub} --help` says \"seed 00N\""
        );
    }
}

/// Every `[costs]` key is listed by `fsyncsim list --costs` with its default and a line
/// saying what it sets, and scenarios/README points there.
#[test]
fn every_costs_key_is_listed_with_what_it_sets() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(["list", "--costs"])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let d = models::btrfs::Costs::default();
    for key in models::btrfs::Costs::FIELDS {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("{key} not listed"));
        let mut words = line.split_whitespace().skip(1);
        assert_eq!(words.next(), Some(d.get(key).unwrap().to_string().as_str()));
        assert!(words.next().is_some(), "{key} has no description");
    }
    let readme = std::fs::read_to_string("scenarios/README.md").unwrap();
    assert!(readme.contains("fsyncsim list --costs"));
}

/// The first line of a block pasted from the full `validate --quick` table.
const VALIDATE_PASTE: &str = "# pasted from `fsyncsim validate --quick`";

/// Experiments short enough for every test run to re-run (seconds, not minutes).
const VALIDATE_CHEAP: &str = "002-scrub,003-kbuild,2db938b";

/// A validate table's rows: id → the other cells, trimmed.
fn validate_rows(lines: &[&str]) -> std::collections::BTreeMap<String, Vec<String>> {
    lines
        .iter()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        .filter(|c| c.len() == 7 && c[0].contains('/') && !c[0].starts_with('-'))
        .map(|c| {
            (
                c[0].to_string(),
                c[1..].iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect()
}

/// Every pasted `validate --quick` table holds the rows the tool prints today for the
/// experiments a test can afford to re-run, cell for cell, and its score line counts its own
/// rows (a hand-edited row or score fails).
#[test]
fn pasted_validate_tables_match_the_tool_where_it_can_rerun() {
    let args: Vec<String> = ["validate", "--quick", "--only", VALIDATE_CHEAP]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let o = fsyncsim(&args);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let fresh = validate_rows(&out.lines().collect::<Vec<_>>());
    assert!(fresh.len() >= 5, "{out}");
    let mut pasted = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (_, body, at) in blocks(&text) {
            if body.first().map(String::as_str) != Some(VALIDATE_PASTE) {
                continue;
            }
            let lines: Vec<&str> = body.iter().map(String::as_str).collect();
            let rows = validate_rows(&lines);
            for (id, cells) in &fresh {
                assert_eq!(
                    rows.get(id),
                    Some(cells),
                    "{}:{at}: row {id} differs from `fsyncsim {}`",
                    page.display(),
                    args.join(" ")
                );
            }
            score_counts_rows(&rows, &lines, &format!("{}:{at}", page.display()));
            pasted += 1;
        }
    }
    assert!(pasted >= 1, "no block opens with {VALIDATE_PASTE}");
}

/// The score line's counts of delta rows, rows in the thread's direction and those with an
/// interval excluding 0 are those of the table's rows.
fn score_counts_rows(
    rows: &std::collections::BTreeMap<String, Vec<String>>,
    lines: &[&str],
    at: &str,
) {
    let deltas = rows.values().filter(|c| c[3] != "-").count();
    let same = rows.values().filter(|c| c[3] == "yes").count();
    let same_ci = rows
        .values()
        .filter(|c| c[3] == "yes" && c[4] == "yes")
        .count();
    let want = format!(
        "score: {same} of {deltas} delta rows in the thread's direction, {same_ci} of them"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&want)),
        "{at}: the score line does not count the rows ({want})"
    );
}

/// The command of a long paste's marker line (`# pasted from \`fsyncsim ARGS\`` and an
/// optional note), unless the note says it is not re-run (an earlier tree's measurement).
fn long_paste_command(marker: &str) -> Option<Vec<String>> {
    let rest = marker.strip_prefix("# pasted from `fsyncsim ")?;
    let (args, note) = rest.split_once('`')?;
    if note.contains("not re-run") {
        return None;
    }
    Some(args.split_whitespace().map(str::to_string).collect())
}

/// Every long paste — `validate --quick`'s whole block, `compare fsperf`, the queue-depth
/// sweep — is what the tool prints today, line for line (trailing blanks aside). Minutes of
/// simulation, so the README's test command skips it and `.ci/run` runs it on its own.
#[test]
#[ignore = "re-runs the long pastes (minutes); .ci/run runs it"]
fn the_long_pastes_are_what_the_tool_prints() {
    let mut checked = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (_, body, at) in blocks(&text) {
            let Some(args) = body.first().and_then(|m| long_paste_command(m)) else {
                continue;
            };
            let o = fsyncsim(&args);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}:{at}: {args:?}",
                page.display()
            );
            let out = String::from_utf8_lossy(&o.stdout).to_string();
            let mut got: Vec<&str> = out.lines().map(str::trim_end).collect();
            let mut want: Vec<&str> = body[1..].iter().map(|l| l.trim_end()).collect();
            for v in [&mut got, &mut want] {
                while v.last().is_some_and(|l| l.is_empty()) {
                    v.pop();
                }
            }
            if let Some(i) = (0..want.len().max(got.len())).find(|&i| want.get(i) != got.get(i)) {
                panic!(
                    "{}:{at}: line {} of the paste differs from `fsyncsim {}`:\n  pasted: {:?}\n  prints: {:?}",
                    page.display(),
                    i + 2,
                    args.join(" "),
                    want.get(i),
                    got.get(i)
                );
            }
            checked.push(args.join(" "));
        }
    }
    assert!(
        checked.iter().any(|c| c == "validate --quick"),
        "the validate --quick block is among them: {checked:?}"
    );
    assert!(checked.len() >= 3, "{checked:?}");
}

#[test]
fn long_paste_markers_name_their_command_or_say_they_are_not_re_run() {
    assert_eq!(
        long_paste_command("# pasted from `fsyncsim validate --quick`"),
        Some(vec!["validate".to_string(), "--quick".to_string()])
    );
    assert_eq!(
        long_paste_command(
            "# pasted from `fsyncsim validate` (the full run: not re-run by the tests)"
        ),
        None
    );
    assert_eq!(long_paste_command("# pasted from the command above"), None);
    // Every marker in the docs is one or the other: a paste of no command cannot be checked.
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (_, body, at) in blocks(&text) {
            let Some(m) = body.first().filter(|m| m.starts_with("# pasted from")) else {
                continue;
            };
            assert!(
                long_paste_command(m).is_some() || m.contains("not re-run"),
                "{}:{at}: {m}: name the command in backticks, or say it is not re-run",
                page.display()
            );
        }
    }
}
