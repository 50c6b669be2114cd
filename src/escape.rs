//! How text from outside okp is shown: a node's transport stderr, a `--bootstrap` value, a
//! file's contents, a path. Such text reaches a terminal, a journal (systemd keeps okp's stderr
//! line by line) and the watchdog's audit log, so it must not carry control characters: a
//! newline inside a value could forge a separate journal line (`{"action":"promote"}`), an ANSI
//! escape could colour, hide or rewrite what the reader sees. Every C0 and C1 control and DEL is
//! shown escaped instead (`\n`, `\r`, `\t`, `\x1b`, `\u{9b}`), so the reader sees what was there.
//!
//! Not here: the wording of messages (`out`), where they go.

use std::fmt::Write;

/// A value from outside as one line of plain text: every control character escaped, newlines
/// included. The one escaping function: the door for messages (`lines`), error paths and the
/// audit log all use it.
pub fn one_line(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A message okp wrote, which may span lines on purpose: each line through `one_line`, so only
/// the message's own line breaks remain (a value inside it is escaped where it is embedded).
pub fn lines(v: &str) -> String {
    v.split('\n').map(one_line).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_cannot_forge_a_line_or_a_colour() {
        let forged = "b1:9092\n{\"action\":\"promote\"}\r\x1b[31mred\x1b[0m\u{9b}2J\x7f\ttab";
        let shown = one_line(forged);
        assert_eq!(shown, "b1:9092\\n{\"action\":\"promote\"}\\r\\x1b[31mred\\x1b[0m\\u{9b}2J\\x7f\\ttab");
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert_eq!(shown.lines().count(), 1);
        // Plain text, other scripts and symbols are kept as they are.
        assert_eq!(one_line("Partition.scala → ok, é, 日本"), "Partition.scala → ok, é, 日本");
        // A message keeps its own line breaks and loses every other control.
        assert_eq!(lines("refused:\n  - \x1b[2Ka"), "refused:\n  - \\x1b[2Ka");
        assert_eq!(lines(&format!("cannot reach {}", one_line(forged))).lines().count(), 1);
    }
}
