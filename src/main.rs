//! okp: observer replicas for Apache Kafka. The binary parses the command
//! line, runs the command, and turns its outcome into the exit code.
//!
//! Not here: anything else (`okp::cmd` runs commands; `okp::error` owns the
//! exit codes).

use clap::Parser;

fn main() {
    let cli = okp::cli::Cli::parse();
    let code = match okp::cmd::run(cli) {
        Ok(outcome) => outcome.code(),
        Err(e) => {
            okp::out::error(&e);
            e.exit_code()
        }
    };
    std::process::exit(code);
}
