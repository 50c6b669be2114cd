//! Bounded reads of files a user or another process put in our way: the
//! bundle, its sidecars, key files, and what install finds in a Kafka
//! installation. Only a regular file is read, never more than a cap, and
//! nothing can block: a FIFO, a device (`/dev/zero`), a directory or a file
//! that grows past the cap is refused with a sentence saying which.
//!
//! The path is judged before it is opened (so a FIFO is never opened), opened
//! with O_NONBLOCK (so a FIFO swapped in after that judgement cannot block the
//! open) and judged again on the open descriptor (so what is read is what was
//! judged). A symbolic link to a regular file is followed, as `cat` would.
//! Not here: what the bytes mean.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest bundle okp reads: real ones are a few MB (a 3.9.2 kraft bundle is 5.4 MB).
pub const MAX_BUNDLE: u64 = 512 << 20;
/// The largest `.minisig`, `.sha256` or `.sha512` okp reads (real ones are under 1 KiB).
pub const MAX_SIDECAR: u64 = 64 << 10;
/// The largest minisign key file okp reads (real ones are under 400 bytes).
pub const MAX_KEY: u64 = 4 << 10;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Nothing at the path (nor at the end of its symbolic link).
    Missing,
    /// Something other than a regular file: "a FIFO", "a directory", ...
    NotRegular(&'static str),
    TooLarge {
        size: u64,
        cap: u64,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => write!(f, "no such file"),
            ReadError::NotRegular(what) => write!(f, "{what}, not a regular file"),
            ReadError::TooLarge { size, cap } => write!(f, "{size} bytes or more, over okp's cap of {cap} bytes"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl ReadError {
    /// okp's error for not reading `what` at `path`: bad input (exit 2) when
    /// the path is the problem (missing, wrong kind, too large, not ours to
    /// read), an I/O failure when the system is.
    pub fn into_error(self, path: &Path, what: &str) -> crate::error::Error {
        use crate::error::Error;
        match self {
            ReadError::Io(e) if e.kind() != std::io::ErrorKind::PermissionDenied => {
                Error::io(format!("cannot read the {what} {}", path.display()), e)
            }
            e => Error::Tree { path: path.to_path_buf(), msg: format!("cannot read the {what}: {e}") },
        }
    }
}

fn kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

fn judge(m: &std::fs::Metadata, cap: u64) -> Result<(), ReadError> {
    if let Some(what) = kind(m.file_type()) {
        return Err(ReadError::NotRegular(what));
    }
    if m.len() > cap {
        return Err(ReadError::TooLarge { size: m.len(), cap });
    }
    Ok(())
}

/// Opens `path` for reading if it is a regular file of at most `cap` bytes.
pub fn open_regular(path: &Path, cap: u64) -> Result<File, ReadError> {
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Io(e),
    };
    judge(&std::fs::metadata(path).map_err(io)?, cap)?;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    judge(&f.metadata().map_err(ReadError::Io)?, cap)?;
    Ok(f)
}

/// Reads a regular file of at most `cap` bytes (a file growing past the cap while read is refused too).
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let f = open_regular(path, cap)?;
    let mut bytes = Vec::new();
    f.take(cap + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { size: bytes.len() as u64, cap });
    }
    Ok(bytes)
}

/// A text file that may be absent: `Ok(None)` when nothing is at the path,
/// an error when something is there but cannot be read as text within the cap.
pub fn read_optional_text(path: &Path, cap: u64) -> Result<Option<String>, String> {
    match read_regular(path, cap) {
        Ok(b) => String::from_utf8(b).map(Some).map_err(|_| "not UTF-8 text".into()),
        Err(ReadError::Missing) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// The largest record, journal or state file okp reads (real ones are a few hundred KiB at most).
pub const MAX_RECORD: u64 = 64 << 20;
/// The largest source file okp reads from a tree (Kafka's largest is under 300 KB).
pub const MAX_SOURCE: u64 = 8 << 20;
/// The largest jar okp reads (kafka_2.13 is about 7 MB, a sources jar about 3 MB).
pub const MAX_JAR: u64 = 256 << 20;
/// The largest class file okp reads from a compiler's output (Kafka's largest is under 200 KB;
/// the class-file format's 64 KiB limits keep real ones far below this).
pub const MAX_CLASS: u64 = 16 << 20;
/// The largest jar entry okp reads whole that is neither a class nor a source file (a resource,
/// a licence, a nested jar or native library a bundle's check looks into): Kafka's jars' largest
/// entries are native libraries of a few MB.
pub const MAX_ENTRY: u64 = 64 << 20;
/// The largest other text okp reads: a POM, a classpath file, a page it wrote, a test report.
pub const MAX_TEXT: u64 = 32 << 20;

/// The largest log okp reads whole: a server's stdout.log, a partition's log segment (Kafka's
/// default segment is 1 GiB; a test cluster's are a few MB).
pub const MAX_LOG: u64 = 1 << 30;

/// A log or a process's output as text (invalid UTF-8 replaced) for what okp shows and greps,
/// never for a decision: empty when nothing is at `path`, a one-line note saying why when
/// something is there that okp refuses (not a regular file, over `cap`) or cannot read.
pub fn lossy_text(path: &Path, cap: u64) -> String {
    match read_regular(path, cap) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(ReadError::Missing) => String::new(),
        Err(e) => format!("(okp did not read {}: {e})", path.display()),
    }
}

/// What a child process wrote to a pipe, as text (invalid UTF-8 replaced), at most `cap` bytes:
/// the rest is drained and dropped so the child never blocks on a full pipe, and a line says how
/// much was dropped.
pub fn pipe_text(pipe: &mut impl Read, cap: u64) -> String {
    let mut bytes = Vec::new();
    let _ = pipe.by_ref().take(cap).read_to_end(&mut bytes);
    let dropped = std::io::copy(pipe, &mut std::io::sink()).unwrap_or(0);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n(okp dropped the last {dropped} bytes, over its cap of {cap})"));
    }
    text
}

/// The system's own error for a path with nothing at it ("No such file or directory (os error 2)").
pub fn missing(path: &Path) -> std::io::Error {
    std::fs::metadata(path).err().unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
}

/// okp's one way to read an input file: a regular file of at most `cap` bytes, refused at once
/// otherwise (exit 2, naming the file and `what`); an I/O failure of the system is exit 3.
pub fn input(path: &Path, cap: u64, what: &str) -> crate::error::Result<Vec<u8>> {
    read_regular(path, cap).map_err(|e| e.into_error(path, what))
}

/// `input` left unread: the open file, for a reader that takes only what it needs (a jar's
/// central directory and the entries it asks for). The same refusals as `input`.
pub fn open_input(path: &Path, cap: u64, what: &str) -> crate::error::Result<File> {
    open_regular(path, cap).map_err(|e| e.into_error(path, what))
}

/// `input`, or None when nothing is at `path`.
pub fn input_if_any(path: &Path, cap: u64, what: &str) -> crate::error::Result<Option<Vec<u8>>> {
    match read_regular(path, cap) {
        Ok(b) => Ok(Some(b)),
        Err(ReadError::Missing) => Ok(None),
        Err(e) => Err(e.into_error(path, what)),
    }
}

/// `input` as UTF-8 text.
pub fn text(path: &Path, cap: u64, what: &str) -> crate::error::Result<String> {
    String::from_utf8(input(path, cap, what)?).map_err(|_| crate::error::Error::Tree {
        path: path.to_path_buf(),
        msg: format!("cannot read the {what}: not UTF-8 text"),
    })
}

/// `text`, or None when nothing is at `path`.
pub fn text_if_any(path: &Path, cap: u64, what: &str) -> crate::error::Result<Option<String>> {
    match input_if_any(path, cap, what)? {
        None => Ok(None),
        Some(b) => String::from_utf8(b).map(Some).map_err(|_| crate::error::Error::Tree {
            path: path.to_path_buf(),
            msg: format!("cannot read the {what}: not UTF-8 text"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_is_read_up_to_its_cap_and_drained() {
        let mut pipe = std::io::Cursor::new(vec![b'x'; 100]);
        let text = pipe_text(&mut pipe, 10);
        assert_eq!(text, format!("{}\n(okp dropped the last 90 bytes, over its cap of 10)", "x".repeat(10)));
        assert_eq!(pipe.position(), 100, "the rest is drained so the writer never blocks");
        assert_eq!(pipe_text(&mut std::io::Cursor::new(b"ok\xff".to_vec()), 10), "ok\u{fffd}");
    }

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_regular(&f, 5).unwrap(), b"12345");
        assert!(matches!(read_regular(&f, 4), Err(ReadError::TooLarge { size: 5, cap: 4 })));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(read_regular(&link, 5).unwrap(), b"12345", "a link to a regular file is followed");

        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_regular(&fifo, 5), Err(ReadError::NotRegular("a FIFO"))));
        assert!(matches!(read_regular(Path::new("/dev/zero"), MAX_BUNDLE), Err(ReadError::NotRegular(_))));
        assert!(matches!(read_regular(d.path(), 5), Err(ReadError::NotRegular("a directory"))));
        assert!(matches!(read_regular(&d.path().join("none"), 5), Err(ReadError::Missing)));

        // A FIFO swapped in after the path was judged: the open does not block, the descriptor is refused.
        let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        assert!(matches!(judge(&opened.metadata().unwrap(), 5), Err(ReadError::NotRegular("a FIFO"))));

        assert_eq!(read_optional_text(&d.path().join("none"), 5), Ok(None));
        assert!(read_optional_text(&fifo, 5).unwrap_err().contains("FIFO"));
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert_eq!(read_optional_text(&f, 5), Err("not UTF-8 text".into()));
    }
}
