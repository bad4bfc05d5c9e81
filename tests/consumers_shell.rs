//! `fsyncsim completions bash` loaded by bash itself (issue 29 item 8): the completion
//! function offers subcommands and the built-in scenario and workload names.

use crate::common;

use common::{fsyncsim_in, stderr, temp_dir};
use std::process::Command;

/// What bash's completion function offers for the words `line` (the last one being
/// completed), with the script `fsyncsim completions bash` printed loaded.
fn offered(script: &std::path::Path, line: &[&str]) -> Vec<String> {
    let words = line.join(" ");
    let prev = line[line.len() - 2];
    let cur = line[line.len() - 1];
    let program = format!(
        "source '{}'; COMP_WORDS=({words}); COMP_CWORD={}; COMP_LINE='{words}'; \
         COMP_POINT=${{#COMP_LINE}}; _fsyncsim fsyncsim '{cur}' '{prev}'; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        line.len() - 1
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("run bash");
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_loads_the_completions_and_offers_commands_and_names() {
    if Command::new("bash").arg("--version").output().is_err() {
        common::skip("consumers_shell", "bash");
        return;
    }
    let d = temp_dir("completions-bash");
    let o = fsyncsim_in(&d, &["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let script = d.join("fsyncsim.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    assert_eq!(offered(&script, &["fsyncsim", "ru"]), ["run"]);
    let r1 = offered(&script, &["fsyncsim", "run", "r1"]);
    assert!(
        r1.contains(&"r1-link-rename-logged-trans".to_string()),
        "{r1:?}"
    );
    let wl = offered(&script, &["fsyncsim", "workload", "dbe"]);
    assert!(
        wl.contains(&"dbench".to_string()) && wl.contains(&"dbench60".to_string()),
        "{wl:?}"
    );
    // Nothing made up: no subcommand starts with "zz".
    assert!(offered(&script, &["fsyncsim", "zz"]).is_empty());
}
