//! What okp says: the one place that writes to stdout, and the shape of its
//! messages on stderr (`okp: …` notes, `okp: error: …`).
//!
//! Results (tables, JSON, diffs, plans) go to stdout through `print`, so a
//! reader can pipe them; progress and notes go to stderr through `note`, so
//! they never mix into a result. A closed pipe (`okp … | head`) is the
//! reader's choice and ends the output quietly.
//!
//! Not here: how a report is laid out (`report`, `diff::render`,
//! `bundle::verify::render`), exit codes (`error`).

use std::io::Write;

use crate::error::{Error, Result};

/// Writes a result to stdout, flushed.
pub fn print(s: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Error::io("cannot write to stdout", e)),
    }
}

/// A note or progress line on stderr: `okp: <msg>`, no control character but its own line breaks
/// (`escape::lines`).
pub fn note(msg: impl std::fmt::Display) {
    eprintln!("okp: {}", crate::escape::lines(&msg.to_string()));
}

/// A block okp wrote for stderr (a report, a tool's last lines, a refusal), no `okp:` prefix:
/// as it is but for control characters other than its line breaks and tabs (`escape::lines`).
pub fn block(text: &str) {
    eprint!("{}", shown_block(text));
}

fn shown_block(text: &str) -> String {
    text.split('\t').map(crate::escape::lines).collect::<Vec<_>>().join("\t")
}

/// Prints the line for an error that ends a command (`error_line`) on stderr.
pub fn error(e: &Error) {
    eprintln!("{}", error_line(e));
}

/// A progress line redrawn in place on stderr (`\r`, erase line); `progress_end` ends it. Only when
/// `stderr_live`.
pub fn progress(line: &str) {
    eprint!("\r\x1b[2K{}", crate::escape::one_line(line));
}

/// Ends a progress line with a line break.
pub fn progress_end() {
    eprintln!();
}

/// The line `main` prints for an error that ends a command: no control character but its own line
/// breaks (`escape::lines`); a value from outside inside it is escaped where it was embedded.
pub fn error_line(e: &Error) -> String {
    format!("okp: error: {}", crate::escape::lines(&e.to_string()))
}

/// One word of a command line okp prints for a user to run, quoted for sh where it needs it
/// (`'it'\''s'` style), so the line runs as written.
pub fn sh_word(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-:@+=,%".contains(&b)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Whether the environment allows colour: NO_COLOR (no-color.org) absent or empty. okp's one
/// colour rule; `--color always|never` overrides it where a command has the flag.
pub fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// True when stdout is a terminal and `colour_allowed`: colour and progress may be used.
pub fn stdout_styled() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && colour_allowed()
}

/// True when stderr is a terminal: a progress line may be redrawn in place (`progress`).
pub fn stderr_live() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_keeps_its_line_breaks_and_tabs_and_no_other_control() {
        assert_eq!(shown_block("a\tb\x1b[2K\nc\r\n"), "a\tb\\x1b[2K\nc\\r\n");
    }

    #[test]
    fn the_error_line_keeps_its_own_line_breaks_and_no_other_control() {
        let e = Error::Check("refused:\n  - a \x1b[31mred\x1b[0m word\r".into());
        assert_eq!(error_line(&e), "okp: error: refused:\n  - a \\x1b[31mred\\x1b[0m word\\r");
        // A value embedded where it came from outside stays on its line.
        let e = Error::External(format!("cannot reach {}", crate::escape::one_line("b:1\n{\"action\":\"promote\"}")));
        assert_eq!(error_line(&e).lines().count(), 1);
    }
}
