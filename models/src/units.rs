//! Parsing of byte sizes as fio writes them (`4k`, `64KiB`, `1M`, `4096`); k = 1024.

/// 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses a byte size; suffixes k/m/g/t (optionally followed by `b`, `ib`, any case) are
/// powers of 1024.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let expected = "expected a size like 4096, 4k, 64KiB, 1M";
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("invalid size '{t}': {expected}"));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid size '{t}': {expected}"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("unknown unit in size '{t}': {expected}")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size '{t}' too large"))
}

/// FNV-1a 64 (the engine's one stable hash): of everything fsyncsim persists (sweep
/// checkpoints' checksums, sweep identities).
pub use sim::rng::fnv1a64;

/// The largest input file fsyncsim reads (scenario, workload and device TOML, sweep
/// checkpoints and shard JSON): 16 MiB. Larger files, and anything that is not a regular
/// file (`/dev/zero`, a FIFO, a directory), are refused before they are read.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Reads the input file at `path` through [`MAX_INPUT_BYTES`]: refuses anything that is
/// not a regular file (after following symlinks) or is larger, with the one message
/// `expected a regular file of at most N bytes`; reads at most the cap plus one byte even
/// if the file grows meanwhile. `what` names the file in other errors ("scenario").
pub fn read_capped(path: &str, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let refused = || format!("expected a regular file of at most {MAX_INPUT_BYTES} bytes");
    let cannot = |e: std::io::Error| format!("cannot read {what} file: {e}");
    // Looked at before it is opened: opening a FIFO would wait for a writer.
    let m = std::fs::metadata(path).map_err(cannot)?;
    if !m.is_file() || m.len() > MAX_INPUT_BYTES {
        return Err(refused());
    }
    let f = std::fs::File::open(path).map_err(cannot)?;
    let m = f.metadata().map_err(cannot)?;
    if !m.is_file() {
        return Err(refused());
    }
    let mut bytes = Vec::with_capacity(m.len().min(MAX_INPUT_BYTES) as usize);
    f.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(refused());
    }
    Ok(bytes)
}

/// Reads the `what` file (scenario, device, …) at `spec` through [`read_capped`]; an error
/// comes back as (location, message): `spec:line` of the first bad byte for invalid UTF-8,
/// `spec` when the file cannot be read or is refused.
pub fn read_text(spec: &str, what: &str) -> Result<String, (String, String)> {
    let bytes = read_capped(spec, what).map_err(|m| (spec.to_string(), m))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        (
            format!("{spec}:{line}"),
            format!("invalid UTF-8 at byte {at}: expected a UTF-8 text file"),
        )
    })
}

/// `s` on one line: line breaks and other control characters a file's value can carry
/// (a TOML string with `\n`) are shown escaped, so that an error quoting it stays one line.
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| match c {
            '\t' => c.to_string(),
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect::<String>()
        .into()
}

/// Where and what of a TOML error in `text` (`origin` names the file): `origin:line` of the
/// error's span; for a parse error that has none (the parser's "recursion limit" on a key of
/// too many dotted parts) the first line through which the text fails with it. The message
/// comes on one line.
pub fn toml_error(text: &str, origin: &str, e: &toml::de::Error) -> (String, String) {
    let at = e
        .span()
        .map(|s| s.start)
        .or_else(|| spanless_error_offset(text, e.message()));
    let location = match at {
        Some(o) => format!("{origin}:{}", line_of(text, o)),
        None => origin.to_string(),
    };
    (location, e.message().replace('\n', " "))
}

/// Start of the first line through which `text` fails to parse with the span-less error
/// `message` (a binary search over line ends: a prefix without the line parses without it).
fn spanless_error_offset(text: &str, message: &str) -> Option<usize> {
    let fails = |end: usize| {
        let (_, errors) = toml::de::DeTable::parse_recoverable(&text[..end]);
        errors
            .iter()
            .any(|e| e.span().is_none() && e.message() == message)
    };
    let ends: Vec<usize> = text
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .chain((!text.ends_with('\n')).then_some(text.len()))
        .collect();
    if !ends.last().is_some_and(|&end| fails(end)) {
        return None;
    }
    let (mut lo, mut hi) = (0, ends.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fails(ends[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(if lo == 0 { 0 } else { ends[lo - 1] })
}

/// Byte offset of the key at `path` in the TOML `text`: `["expect", "post"]` finds the
/// `post` of `[expect.post]`, of `expect.post = …` and of `expect = { post = … }`; through
/// an array of tables, in the first table that has it. None when the text does not parse
/// or has no such key.
pub fn key_offset(text: &str, path: &[&str]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    fn find(t: &DeTable<'_>, path: &[&str]) -> Option<usize> {
        let (first, rest) = path.split_first()?;
        let (k, v) = t.iter().find(|(k, _)| k.get_ref().as_ref() == *first)?;
        if rest.is_empty() {
            return Some(k.span().start);
        }
        match v.get_ref() {
            DeValue::Table(t) => find(t, rest),
            DeValue::Array(a) => a.iter().find_map(|x| match x.get_ref() {
                DeValue::Table(t) => find(t, rest),
                _ => None,
            }),
            _ => None,
        }
    }
    let doc = DeTable::parse(text).ok()?;
    find(doc.get_ref(), path)
}

/// `s` as one POSIX shell word: unchanged when it is made only of characters no shell
/// treats specially (letters, digits, `-_./:,=+@%`), else in single quotes, each `'` written
/// `'\''`; so that a printed command line pastes back into `sh` as the same arguments.
pub fn shell_quote(s: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:,=+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return std::borrow::Cow::Borrowed(s);
    }
    format!("'{}'", s.replace('\'', r"'\''")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fio_sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        for bad in ["", "k", "-4k", "4x", "1.5k", "99999999999999999999"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn keys_are_found_whole_in_headers_dotted_and_inline() {
        let t = "write_cache = true\nwrite = { min_us = 1 }\n[s]\nread_x = 1\nread = 2\n[e.post]\na.b = 1\n";
        let line = |p: &[&str]| key_offset(t, p).map(|o| line_of(t, o));
        assert_eq!(line(&["write"]), Some(2));
        assert_eq!(line(&["write", "min_us"]), Some(2));
        assert_eq!(line(&["s", "read"]), Some(5));
        assert_eq!(line(&["e", "post"]), Some(6));
        assert_eq!(line(&["e", "post", "a", "b"]), Some(7));
        assert_eq!(line(&["read"]), None);
    }

    #[test]
    fn a_spanless_parse_error_is_placed_at_its_line() {
        let t = format!("a = 1\n\n{}b = 1\nc = 2\n", "a.".repeat(100));
        let e = toml::from_str::<toml::Table>(&t).unwrap_err();
        assert!(e.span().is_none(), "{e}");
        assert_eq!(toml_error(&t, "f.toml", &e).0, "f.toml:3");
    }

    #[test]
    fn shell_words_round_trip() {
        assert_eq!(shell_quote("scenarios/x-1.toml"), "scenarios/x-1.toml");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
