//! Reading and parsing okp's YAML inputs: versions.yaml, anchors.yaml,
//! patches/edits.yaml (`--versions`, `--anchors`, `--patches`) and a nodes
//! file (`okp observers --nodes`). One reader refuses what none of them can be
//! before a byte is parsed; one parser (serde-saphyr, see
//! docs/dependencies.md) runs with a nesting budget and turns every error into
//! `file:line:col: message`.
//!
//! The caps, each far above what a real file needs (okp's own data files are
//! 13-20 KB and nest 5 levels deep):
//! - a data file: at most 4 MiB ([`Input::Data`]);
//! - a nodes file: at most 1 MiB ([`Input::Nodes`]);
//! - nesting, block or flow: at most 32 levels ([`MAX_DEPTH`]);
//! - only a regular file is read (checked before it is opened, and again on
//!   what was opened, which is opened non-blocking): a FIFO, a device or a
//!   directory is refused by name instead of hanging or reading forever.
//!
//! Not here: what the documents mean (model::versions, model::anchors,
//! patchset, observers::transport).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::ErrorKind;
use serde_saphyr::{DefaultMessageFormatter, ExternalMessageSource, MessageFormatter};

use super::Origin;
use crate::error::Error;

/// Deepest nesting of sequences and mappings (block or flow) okp parses.
pub const MAX_DEPTH: usize = 32;

/// What kind of YAML input a file is: its size cap and its name in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// versions.yaml, anchors.yaml, patches/edits.yaml.
    Data,
    /// The nodes file of `okp observers`.
    Nodes,
}

impl Input {
    /// The largest file okp reads as this input, in bytes.
    pub const fn cap(self) -> u64 {
        match self {
            Input::Data => 4 << 20,
            Input::Nodes => 1 << 20,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Input::Data => "a YAML data file",
            Input::Nodes => "a nodes file",
        }
    }

    /// How `cannot read …` names the file (the nodes file says which it is).
    fn what(self) -> &'static str {
        match self {
            Input::Data => "",
            Input::Nodes => "the nodes file ",
        }
    }
}

/// Reads `path` as `input`: a regular file of at most `input.cap()` bytes of UTF-8, through the
/// guarded reader (`fsx::read`).
pub fn read(path: &Path, input: Input) -> Result<Origin, Error> {
    use crate::fsx::read::{missing, read_regular, ReadError};
    let name = path.display().to_string();
    let io = |e: std::io::Error| Error::io(format!("cannot read {}{name}", input.what()), e);
    let bytes = read_regular(path, input.cap()).map_err(|e| match e {
        ReadError::Missing => io(missing(path)),
        ReadError::NotRegular(kind) => Error::Usage(format!(
            "{name}: is {kind}, not a regular file; okp reads {} only from a regular file",
            input.noun()
        )),
        ReadError::TooLarge { size, .. } => match within_cap(&name, size, input) {
            Err(e) => e,
            Ok(()) => io(std::io::Error::other("grew while read")),
        },
        ReadError::Io(e) => io(e),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| io(std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8")))?;
    Ok(Origin::new(name, text))
}

fn within_cap(name: &str, len: u64, input: Input) -> Result<(), Error> {
    if len <= input.cap() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{name}: {len} bytes or more, over the {} MiB cap okp sets for {}",
        input.cap() >> 20,
        input.noun()
    )))
}

/// Parses `origin` with the nesting budget; any error is `file:line:col: message`.
/// Text that did not come through [`read`] is held to the larger cap here.
pub fn parse<T: DeserializeOwned>(origin: &Origin) -> Result<T, Error> {
    within_cap(&origin.name, origin.text.len() as u64, Input::Data)?;
    let options = serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! { max_depth: MAX_DEPTH, flow_nesting_limit: MAX_DEPTH },
    };
    serde_saphyr::from_str_with_options(&origin.text, options).map_err(|e| error(origin, &e))
}

/// `file:line:col: message` for a parse error (line and column 1-based; 1:1 when unknown).
pub fn error(origin: &Origin, e: &serde_saphyr::Error) -> Error {
    let (line, col) = e
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| (l.line() as usize, l.column().max(1) as usize))
        .unwrap_or((1, 1));
    Error::Manifest { file: origin.name.clone(), line, col, msg: message(e) }
}

fn message(e: &serde_saphyr::Error) -> String {
    let e = e.without_snippet();
    let too_deep = match e {
        serde_saphyr::Error::Budget { breach: BudgetBreach::Depth { .. }, .. } => true,
        serde_saphyr::Error::ExternalMessage { source, .. } => {
            matches!(source.as_ref(), ExternalMessageSource::Parser(s) if matches!(s.kind(), ErrorKind::RecursionLimitExceeded))
        }
        _ => false,
    };
    if too_deep {
        return format!("nested more than {MAX_DEPTH} levels deep, okp's limit for its YAML inputs");
    }
    let text = DefaultMessageFormatter.format_message(e);
    // Errors wrapped by a field's deserializer (see observers::transport) carry
    // their own " at line L, column C"; the position is printed in front instead.
    let text = match regex::Regex::new(r" at line \d+, column \d+") {
        Ok(r) => r.replace_all(&text, "").into_owned(),
        Err(_) => text.into_owned(),
    };
    // The library's advice to its own callers is not the user's to follow: say what is wrong.
    let text = text.replace(", set DuplicateKeyPolicy in Options if acceptable", " (a key may appear once)").replace(
        "multiple YAML documents detected; use from_str_multiple or from_str_multiple_with_options",
        "more than one YAML document (a `---` line): okp reads one document per file",
    );
    // The message may quote the file's text: never pass control characters to a terminal.
    crate::escape::one_line(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        a: u32,
        #[serde(default)]
        b: Option<serde_json::Value>,
    }

    fn err(text: &str) -> String {
        parse::<Doc>(&Origin::new("t.yaml", text)).unwrap_err().to_string()
    }

    #[test]
    fn errors_are_file_line_col_message() {
        assert_eq!(err("a: 1\nc: 2\n"), "t.yaml:2:1: unknown field `c`, expected one of a, b");
        assert_eq!(err("a: x\n"), "t.yaml:1:4: invalid u32");
        assert!(err("a: [1\n").starts_with("t.yaml:1:4: "), "{}", err("a: [1\n"));
        assert!(err("a: \"\x07\"\n").contains("t.yaml:1:"), "a control character in the text is escaped");
    }

    #[test]
    fn nesting_is_capped_block_and_flow() {
        // `b: ` then brackets from column 4: the parser stops at the 33rd.
        let flow = format!("a: 1\nb: {}\n", "[".repeat(100_000));
        assert_eq!(err(&flow), "t.yaml:2:36: nested more than 32 levels deep, okp's limit for its YAML inputs");
        let mut block = String::from("a: 1\nb:\n");
        for i in 0..MAX_DEPTH + 5 {
            block.push_str(&format!("{}-\n", "  ".repeat(i + 1)));
        }
        assert!(err(&block).contains(": nested more than 32 levels deep"), "{}", err(&block));
        // 32 levels in all (the top mapping and 31 sequences), block or flow: accepted.
        let ok = format!("a: 1\nb: {}{}\n", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
        assert!(parse::<Doc>(&Origin::new("t.yaml", ok)).is_ok());
        let mut ok = String::from("a: 1\nb:\n");
        for i in 0..MAX_DEPTH - 1 {
            ok.push_str(&format!("{}-\n", "  ".repeat(i + 1)));
        }
        assert!(parse::<Doc>(&Origin::new("t.yaml", ok)).is_ok());
    }

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), Input::Data).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path and touches no Rust memory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo, Input::Nodes).unwrap_err().to_string();
        assert!(e.contains("fifo: is a FIFO, not a regular file; okp reads a nodes file only"), "{e}");
        let big = dir.path().join("big.yaml");
        std::fs::write(&big, vec![b'#'; (Input::Nodes.cap() + 1) as usize]).unwrap();
        let e = read(&big, Input::Nodes).unwrap_err().to_string();
        assert!(e.contains("over the 1 MiB cap okp sets for a nodes file"), "{e}");
        assert!(read(&big, Input::Data).is_ok(), "the data cap is 4 MiB");
        let e = read(&dir.path().join("missing.yaml"), Input::Nodes).unwrap_err().to_string();
        assert!(e.starts_with("cannot read the nodes file "), "{e}");
    }

    #[test]
    fn the_librarys_advice_to_its_callers_does_not_leak() {
        let e = err("a: 1\na: 2\n");
        assert!(
            e.contains("duplicate mapping key: a (a key may appear once)") && !e.contains("DuplicateKeyPolicy"),
            "{e}"
        );
        let e = err("a: 1\n---\na: 2\n");
        assert!(e.contains("okp reads one document per file") && !e.contains("from_str_multiple"), "{e}");
    }
}
