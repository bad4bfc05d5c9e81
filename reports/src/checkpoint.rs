//! Sweep checkpoints (`sweep --out DIR`, `--resume DIR`: `DIR/state.json`), sealed with two
//! checksums — one of the arguments (`meta`), one of the whole content (`meta` and
//! `progress`) — so that `--resume` refuses a file that was edited by hand, truncated or
//! corrupted instead of continuing from counts no sweep produced.
//!
//! A checksum is FNV-1a (64 bits) of the compact JSON of the value (serde_json's objects are
//! sorted maps, so the text is canonical), written `fnv1a64:<16 hex digits>`. It detects
//! accidents, not an adversary: anyone can recompute it.

use serde_json::{json, Value};

pub use models::units::fnv1a64;

/// The checksum of a JSON value: `fnv1a64:` and the FNV-1a 64 of its compact text.
pub fn checksum(v: &Value) -> String {
    format!("fnv1a64:{:016x}", fnv1a64(v.to_string().as_bytes()))
}

/// A checkpoint's content: `{meta, progress, checksums: {args, content}}`; `args` is the
/// checksum of `meta`, `content` that of `{meta, progress}`.
pub fn seal(meta: &Value, progress: Value) -> Value {
    let content = json!({"meta": meta, "progress": progress});
    let checksums = json!({"args": checksum(meta), "content": checksum(&content)});
    json!({"meta": meta, "progress": content["progress"], "checksums": checksums})
}

/// Reads a checkpoint's text (`path` names it in errors) and verifies both checksums:
/// returns its `meta` and its `progress` entries, or a one-line error.
pub fn open(text: &str, path: &str) -> Result<(Value, Vec<Value>), String> {
    open_inner(text, path).map_err(|e| models::units::one_line(&e).into_owned())
}

/// [`open`], its errors as built (they quote the file's strings).
fn open_inner(text: &str, path: &str) -> Result<(Value, Vec<Value>), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        let what = if e.is_eof() {
            "truncated"
        } else {
            "not a sweep checkpoint"
        };
        format!("{path}:{}: {what}: {e}", e.line())
    })?;
    let edited = "the file was edited or is corrupt; rerun the sweep with --out";
    let (Some(meta), Some(progress)) = (v.get("meta"), v.get("progress")) else {
        return Err(format!(
            "{path}: missing 'meta' or 'progress': not a sweep checkpoint"
        ));
    };
    let (Some(args), Some(content)) = (
        v["checksums"]["args"].as_str(),
        v["checksums"]["content"].as_str(),
    ) else {
        return Err(format!("{path}: no checksums: {edited}"));
    };
    if args != checksum(meta) {
        return Err(format!(
            "{path}: the arguments do not match their checksum {args}: {edited}"
        ));
    }
    let whole = json!({"meta": meta, "progress": progress});
    if content != checksum(&whole) {
        return Err(format!(
            "{path}: the content does not match its checksum {content}: {edited}"
        ));
    }
    let progress = progress
        .as_array()
        .ok_or_else(|| format!("{path}: progress: expected an array"))?
        .clone();
    Ok((meta.clone(), progress))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_checkpoint_opens_and_any_edit_is_refused() {
        let meta = json!({"scenario": "r1", "seeds": {"start": 0, "end": 10}});
        let sealed = seal(&meta, json!([{"done_chunks": 1, "report": {"runs": 10}}]));
        let text = format!("{sealed:#}\n");
        let (m, p) = open(&text, "state.json").unwrap();
        assert_eq!(m, meta);
        assert_eq!(p[0]["done_chunks"], 1);
        // FNV-1a's published test vector.
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        for (edit, needle) in [
            (
                text.replace("\"runs\": 10", "\"runs\": 11"),
                "content does not match",
            ),
            (
                text.replace("\"end\": 10", "\"end\": 12"),
                "arguments do not match",
            ),
            (text[..text.len() / 2].to_string(), "truncated"),
            (text.replace("\"checksums\"", "\"sums\""), "no checksums"),
        ] {
            let e = open(&edit, "state.json").unwrap_err();
            assert!(e.contains(needle) && !e.contains('\n'), "{e}");
        }
    }
}
