//! Bounded reads of one entry of a jar (a zip): the entry is refused when its header declares
//! more than a cap, and read through a limit of cap + 1 bytes, so an entry whose header lies
//! about its size (a small declared size over a deflate stream that inflates to gigabytes) is
//! refused too instead of exhausting memory. Every zip entry okp reads whole comes through here.
//!
//! Not here: opening the jar itself (`read::open_input`, capped at `read::MAX_JAR`), what the
//! bytes mean.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// The bytes of `entry` of the jar `jar` (named in errors), at most `cap` bytes. Bad input (exit
/// 2) naming the jar and the entry when its declared or actual size is over `cap`.
pub fn read<R: Read>(entry: &mut zip::read::ZipFile<'_, R>, jar: &Path, cap: u64) -> Result<Vec<u8>> {
    let (name, declared) = (entry.name().to_string(), entry.size());
    read_capped(entry, declared, jar, &name, cap)
}

/// `read` over any reader whose header declared `declared` bytes.
fn read_capped(r: impl Read, declared: u64, jar: &Path, name: &str, cap: u64) -> Result<Vec<u8>> {
    let too_large = |size: String, note: String| Error::Tree {
        path: jar.to_path_buf(),
        msg: format!("entry {}: too large ({size} > {cap} bytes){note}", crate::escape::one_line(name)),
    };
    if declared > cap {
        return Err(too_large(declared.to_string(), String::new()));
    }
    // The declared size is only a hint for the first allocation: the limit is what holds.
    let mut bytes = Vec::with_capacity(declared as usize);
    r.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("cannot read {name} in {}", jar.display()), e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(format!("at least {}", cap + 1), format!("; its header said {declared}")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A jar with one deflated entry `name` holding `body`.
    fn jar(name: &str, body: &[u8]) -> Vec<u8> {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        z.start_file(name, opts).unwrap();
        z.write_all(body).unwrap();
        z.finish().unwrap().into_inner()
    }

    fn first_entry(bytes: Vec<u8>, cap: u64) -> Result<Vec<u8>> {
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut e = z.by_index(0).unwrap();
        read(&mut e, Path::new("/r/kafka.jar"), cap)
    }

    #[test]
    fn an_entry_within_the_cap_is_read_whole() {
        assert_eq!(first_entry(jar("a/B.class", b"0123456789"), 10).unwrap(), b"0123456789");
    }

    #[test]
    fn an_entry_declared_over_the_cap_is_bad_input_naming_jar_and_entry() {
        let e = first_entry(jar("a/B.class", &[7u8; 100]), 10).unwrap_err();
        assert_eq!(e.to_string(), "/r/kafka.jar: entry a/B.class: too large (100 > 10 bytes)");
        assert_eq!(e.failure().code(), 2);
    }

    #[test]
    fn an_entry_whose_header_lies_about_its_size_is_cut_at_the_cap() {
        // 1 MiB of zeros deflates to about 1 KiB; both headers then claim 10 bytes.
        let mut bytes = jar("big.bin", &vec![0u8; 1 << 20]);
        let size = (1u32 << 20).to_le_bytes();
        let mut patched = 0;
        for (sig, at) in [([0x50, 0x4b, 0x03, 0x04], 22), ([0x50, 0x4b, 0x01, 0x02], 24)] {
            let h = bytes.windows(4).position(|w| w == sig).unwrap();
            assert_eq!(bytes[h + at..h + at + 4], size, "uncompressed size field");
            bytes[h + at..h + at + 4].copy_from_slice(&10u32.to_le_bytes());
            patched += 1;
        }
        assert_eq!(patched, 2);
        let e = first_entry(bytes, 100).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/r/kafka.jar: entry big.bin: too large (at least 101 > 100 bytes); its header said 10"
        );
        assert_eq!(e.failure().code(), 2);
    }
}
