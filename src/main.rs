//! okp: observer replicas for Apache Kafka. The binary only parses the
//! command line, runs it, and turns the outcome into an exit code.

mod anchor;
mod apply;
mod build;
mod bundle;
mod check;
mod cli;
mod cluster;
mod error;
mod gitwt;
mod maven;
mod model;
mod observers;
mod patch;
mod patchset;
mod port;
mod report;
mod scenarios;
mod source;
mod tx;
mod verify;
mod version;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("okp: error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
