//! Every flag and positional argument of every (sub)command says what it is in `--help`.

use clap::{ArgAction, Command, CommandFactory};

use super::Cli;

/// `okp <sub> --flag` (or `<NAME>` for a positional) for each argument of `cmd` and its
/// subcommands without help, clap's own --help and --version aside.
fn without_help(cmd: &Command, path: &str, missing: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if matches!(arg.get_action(), ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version)
        {
            continue;
        }
        if arg.get_help().is_none() && arg.get_long_help().is_none() {
            let name = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => format!("<{}>", arg.get_id()),
            };
            missing.push(format!("{path} {name}"));
        }
    }
    for sub in cmd.get_subcommands() {
        without_help(sub, &format!("{path} {}", sub.get_name()), missing);
    }
}

#[test]
fn every_argument_has_help() {
    let mut missing = Vec::new();
    without_help(&Cli::command(), "okp", &mut missing);
    assert!(missing.is_empty(), "arguments without help text:\n{}", missing.join("\n"));
}

#[test]
fn the_help_check_names_an_argument_without_help() {
    let cmd = Command::new("okp").subcommand(
        Command::new("sub")
            .arg(clap::Arg::new("quiet").long("quiet").action(ArgAction::SetTrue))
            .arg(clap::Arg::new("said").long("said").help("Has help.").action(ArgAction::SetTrue)),
    );
    let mut missing = Vec::new();
    without_help(&cmd, "okp", &mut missing);
    assert_eq!(missing, ["okp sub --quiet"]);
}

#[test]
fn the_cli_is_well_formed() {
    Cli::command().debug_assert();
}
