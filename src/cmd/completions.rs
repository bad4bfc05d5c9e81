//! `fsyncsim completions SHELL`: clap's script, with the built-in names as candidates.

use clap::builder::PossibleValuesParser;
use clap::Command;

/// The names an argument completes to, by argument id: built-in scenarios, workloads,
/// devices and release presets (each argument also takes a path or modifiers; the shell
/// completes the names only).
fn candidates(id: &str) -> Option<Vec<String>> {
    let names: Vec<String> = match id {
        "scenario" | "scenarios" => models::scenario::Scenario::builtin()
            .into_iter()
            .flat_map(|s| [s.name, s.race.to_lowercase()])
            .collect(),
        "workload" => models::workload::spec::Spec::builtin()
            .into_iter()
            .map(|s| s.name)
            .collect(),
        "device" => models::device::presets::NAMES.map(String::from).to_vec(),
        "policy" | "baseline" | "current" => {
            models::kernel::preset_names().map(String::from).collect()
        }
        _ => return None,
    };
    Some(names)
}

/// `cmd` with every argument `candidates` knows offering its names, in every subcommand.
pub(crate) fn with_names(cmd: Command) -> Command {
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut cmd = cmd;
    for id in ids {
        if let Some(names) = candidates(&id) {
            cmd = cmd.mut_arg(id, |a| a.value_parser(PossibleValuesParser::new(names)));
        }
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for s in subs {
        cmd = cmd.mut_subcommand(s, with_names);
    }
    cmd
}
