//! The `schema` number every JSON record okp writes carries, and the one check
//! a reader makes before it trusts a record's body: a number this okp does not
//! read is refused with a sentence naming the file and the number, instead of
//! being half-read or misread. docs/records.md lists every file okp writes.
//!
//! A record's schema changes when a field changes meaning, is renamed or goes
//! away; a new optional field does not change it (readers ignore fields they
//! do not know). How a record written before it had a `schema` field is read
//! is the record's own choice, stated once, in its `Schema` constant (`Absent`).
//!
//! Not here: the records themselves (each beside its writer: `build::record`,
//! `build::matrix`, `verify::record`, `report`, `diff::render`), the `.okp/`
//! records of a patched tree (strict and validated field by field:
//! `tx::record`), the bundle manifest's string schema `okp-bundle/1`
//! (`bundle::manifest`).

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// The schema a reader understands, and what to tell a user whose file has another.
#[derive(Clone, Copy, Debug)]
pub struct Schema {
    /// The number this okp writes and reads.
    pub current: u32,
    /// How a record without a `schema` field is read.
    pub absent: Absent,
    /// What the user can do about a refused file (a sentence).
    pub remedy: &'static str,
}

/// How a record without a `schema` field is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    /// As the current schema: such records were written, before the field existed, by the
    /// same structure, so their fields mean what the current schema says.
    ReadAsCurrent,
    /// Refused like an unknown number.
    Refused,
}

/// Only the `schema` field, whatever the rest holds.
#[derive(serde::Deserialize)]
struct Head {
    schema: Option<serde_json::Value>,
}

/// What a record says about its schema, when this okp reads it.
enum Found {
    /// `schema` holds the current number.
    Current,
    /// No `schema` field, and `Absent::ReadAsCurrent`.
    AbsentReadAsCurrent,
    /// Not a JSON object: the record's own parse says what is wrong.
    NotAnObject,
}

impl Schema {
    fn found(&self, path: &Path, bytes: &[u8]) -> Result<Found> {
        let Ok(head) = serde_json::from_slice::<Head>(bytes) else {
            return Ok(Found::NotAnObject);
        };
        let found = match head.schema {
            Some(n) if n.as_u64() == Some(u64::from(self.current)) => return Ok(Found::Current),
            None if self.absent == Absent::ReadAsCurrent => return Ok(Found::AbsentReadAsCurrent),
            Some(n) => Some(n.to_string()),
            None => None,
        };
        Err(Error::UnknownSchema { path: path.to_path_buf(), found, reads: self.current, remedy: self.remedy })
    }

    /// Refuses `bytes` (the contents of `path`) when they carry a `schema` other than
    /// `current`, or none when that is refused. Bytes that are not a JSON object pass:
    /// the record's own parse says what is wrong with them.
    pub fn check(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.found(path, bytes).map(|_| ())
    }

    /// Checks the schema, then parses the record; `what` names the record in the
    /// error when its body does not parse ("an okp build record").
    pub fn parse<T: DeserializeOwned>(&self, path: &Path, bytes: &[u8], what: &str) -> Result<T> {
        let bad = |e: serde_json::Error| Error::Tree {
            path: path.to_path_buf(),
            msg: format!("not {what} of schema {}: {e}", self.current),
        };
        if let Some(k) = duplicate_key(bytes) {
            return Err(Error::Tree {
                path: path.to_path_buf(),
                msg: format!("not {what}: the key {k:?} appears twice in one object (it could mean two things)"),
            });
        }
        match self.found(path, bytes)? {
            Found::Current | Found::NotAnObject => serde_json::from_slice(bytes).map_err(bad),
            Found::AbsentReadAsCurrent => {
                let mut v: serde_json::Value = serde_json::from_slice(bytes).map_err(bad)?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("schema".into(), self.current.into());
                }
                serde_json::from_value(v).map_err(bad)
            }
        }
    }

    /// Reads and parses the record at `path`; `missing` is said when it cannot be read.
    pub fn read<T: DeserializeOwned>(&self, path: &Path, what: &str, missing: &str) -> Result<T> {
        let bytes = read_record_file(path).map_err(|e| match e {
            ReadRecord::NotRegular => {
                Error::Tree { path: path.to_path_buf(), msg: format!("is not a regular file, so not {what}") }
            }
            ReadRecord::TooLarge => Error::Tree {
                path: path.to_path_buf(),
                msg: format!("is over {} MiB, larger than any {what}", MAX_RECORD >> 20),
            },
            ReadRecord::Io(e) => Error::io(format!("cannot read {} ({missing})", path.display()), e),
        })?;
        self.parse(path, &bytes, what)
    }
}

/// The bytes of a record file okp did not write itself just now (a regular file within
/// `MAX_RECORD`, never blocking), for a reader that parses it another way.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    read_record_file(path).map_err(|e| match e {
        ReadRecord::NotRegular => Error::Tree { path: path.to_path_buf(), msg: "is not a regular file".into() },
        ReadRecord::TooLarge => {
            Error::Tree { path: path.to_path_buf(), msg: format!("is over {} MiB", MAX_RECORD >> 20) }
        }
        ReadRecord::Io(e) => Error::io(format!("cannot read {}", path.display()), e),
    })
}

use crate::fsx::read::{read_regular, ReadError, MAX_RECORD};

enum ReadRecord {
    NotRegular,
    TooLarge,
    Io(std::io::Error),
}

/// A record file's bytes through the guarded reader (`fsx::read`): only a regular file, never
/// more than `MAX_RECORD`, and nothing can block.
fn read_record_file(path: &Path) -> std::result::Result<Vec<u8>, ReadRecord> {
    read_regular(path, MAX_RECORD).map_err(|e| match e {
        ReadError::NotRegular(_) => ReadRecord::NotRegular,
        ReadError::TooLarge { .. } => ReadRecord::TooLarge,
        ReadError::Missing => ReadRecord::Io(crate::fsx::read::missing(path)),
        ReadError::Io(e) => ReadRecord::Io(e),
    })
}

/// The first key any JSON object in `bytes` holds twice, or None. serde keeps one of the two
/// values of a map silently; a file okp verifies or acts on must not mean two things (a manifest
/// whose `files` lists a path twice, a record naming a field twice).
pub fn duplicate_key(bytes: &[u8]) -> Option<String> {
    use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
    struct Walk(std::cell::RefCell<Option<String>>);
    struct Node<'a>(&'a Walk);
    impl<'de> serde::de::DeserializeSeed<'de> for Node<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Node<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<(), A::Error> {
            let mut seen = std::collections::BTreeSet::new();
            while let Some(k) = m.next_key::<String>()? {
                if !seen.insert(k.clone()) && self.0 .0.borrow().is_none() {
                    *self.0 .0.borrow_mut() = Some(k);
                }
                m.next_value_seed(Node(self.0))?;
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> std::result::Result<(), A::Error> {
            while s.next_element_seed(Node(self.0))?.is_some() {}
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> std::result::Result<(), E> {
            Ok(())
        }
    }
    let walk = Walk(std::cell::RefCell::new(None));
    let mut d = serde_json::Deserializer::from_slice(bytes);
    let _ = serde::de::DeserializeSeed::deserialize(Node(&walk), &mut d);
    walk.0.into_inner()
}

/// A record as okp writes it: pretty JSON ending in a newline.
pub fn to_json<T: serde::Serialize>(record: &T) -> String {
    // Records are plain structs with string map keys: serialising them cannot fail.
    serde_json::to_string_pretty(record).unwrap_or_default() + "\n"
}

/// Writes a record to `path` atomically (`fsx::write_atomic`).
pub fn write<T: serde::Serialize>(path: &Path, record: &T) -> Result<()> {
    crate::fsx::write_atomic(path, to_json(record).as_bytes())
}

/// For the records' own tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Writes `record` into a fresh directory with `write` and reads it back with `read`: the
    /// record as the crate's own reader returns it, for the caller to compare.
    pub fn round_trip<T>(record: &T, write: impl Fn(&T, &Path) -> Result<()>, read: impl Fn(&Path) -> Result<T>) -> T {
        let d = tempfile::tempdir().unwrap();
        write(record, d.path()).unwrap();
        read(d.path()).unwrap()
    }

    /// Writes `record` as `file` of a fresh directory with its `schema` (1) changed to `n`,
    /// asserts that `read` of that directory refuses it naming the file and both schemas,
    /// and returns the message.
    pub fn assert_refused<T, R>(record: &T, file: &str, n: u32, read: impl Fn(&Path) -> Result<R>) -> String
    where
        T: serde::Serialize,
        R: std::fmt::Debug,
    {
        let d = tempfile::tempdir().unwrap();
        let text = to_json(record).replacen("\"schema\": 1,", &format!("\"schema\": {n},"), 1);
        std::fs::write(d.path().join(file), text).unwrap();
        let e = read(d.path()).unwrap_err().to_string();
        let want =
            format!("{}: schema {n} is not one this okp reads (it reads schema 1); ", d.path().join(file).display());
        assert!(e.starts_with(&want), "{e}");
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Schema = Schema { current: 1, absent: Absent::ReadAsCurrent, remedy: "rebuild it" };

    #[test]
    fn a_fifo_or_a_directory_where_a_record_should_be_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("okp-build.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path and touches no Rust memory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = S.read::<R>(&fifo, "an okp build record", "m").unwrap_err().to_string();
        assert!(e.contains("is not a regular file, so not an okp build record"), "{e}");
        let e = S.read::<R>(dir.path(), "an okp build record", "m").unwrap_err().to_string();
        assert!(e.contains("is not a regular file"), "{e}");
        let e = S.read::<R>(&dir.path().join("missing.json"), "an okp build record", "is it a build?").unwrap_err();
        assert!(e.to_string().contains("(is it a build?)"), "{e}");
    }

    #[derive(serde::Deserialize, Debug)]
    struct R {
        schema: u32,
        x: u32,
    }

    #[test]
    fn the_current_number_and_an_absent_one_pass_to_the_record() {
        let p = Path::new("dir/r.json");
        let r: R = S.parse(p, br#"{"schema": 1, "x": 3}"#, "a test record").unwrap();
        assert_eq!((r.schema, r.x), (1, 3));
        let r: R = S.parse(p, br#"{"x": 4}"#, "a test record").unwrap();
        assert_eq!((r.schema, r.x), (1, 4));
    }

    #[test]
    fn another_number_is_refused_naming_the_file_and_the_number() {
        let p = Path::new("dir/r.json");
        for (text, found) in [(r#"{"schema": 2, "x": 3}"#, "schema 2 "), (r#"{"schema": "r/1"}"#, "schema \"r/1\" ")] {
            let e = S.parse::<R>(p, text.as_bytes(), "a test record").unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, Error::UnknownSchema { .. }), "{msg}");
            assert!(msg.starts_with("dir/r.json: ") && msg.contains(found) && msg.contains("rebuild it"), "{msg}");
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn an_absent_number_is_refused_when_the_record_says_so() {
        let strict = Schema { absent: Absent::Refused, ..S };
        let e = strict.parse::<R>(Path::new("r.json"), br#"{"x": 4}"#, "a test record").unwrap_err().to_string();
        assert!(e.starts_with("r.json: has no `schema` field (this okp reads schema 1)"), "{e}");
    }

    #[test]
    fn a_body_that_does_not_parse_names_the_file_and_the_record() {
        let e = S.parse::<R>(Path::new("r.json"), b"{ not json", "a test record").unwrap_err();
        assert!(e.to_string().starts_with("r.json: not a test record of schema 1: "), "{e}");
    }

    #[test]
    fn a_key_twice_in_any_object_is_found() {
        assert_eq!(super::duplicate_key(br#"{"a": 1, "b": {"c": [1, {"d": 2, "d": 3}]}}"#), Some("d".into()));
        assert_eq!(super::duplicate_key(br#"{"files": {"x": 1, "x": 1}}"#), Some("x".into()));
        assert_eq!(super::duplicate_key(br#"{"a": 1, "b": {"a": 2}, "c": [{"a": 3}]}"#), None);
        assert_eq!(super::duplicate_key(b"not json"), None);
    }
}
