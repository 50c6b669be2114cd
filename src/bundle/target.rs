//! `Target`: the platform a bundle is for (linux-x86_64, linux-aarch64), and
//! the native-code check that makes the label mean something.
//!
//! The patched jars are JVM bytecode and run anywhere; a bundle is still built
//! per target because fleets deploy per architecture. Should a bundle ever carry
//! native code (a `.so` beside the jars or inside one), every such file must be
//! an ELF object for the target's machine: this module reads the ELF header
//! (class, byte order, `e_machine`) and says why not when it is not. Pure: bytes in,
//! findings out.

use std::fmt;
use std::io::{Cursor, Read};
use std::str::FromStr;

/// A bundle's platform. Parsed from the usual spellings, printed canonically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    LinuxX86_64,
    LinuxAarch64,
}

/// ELF `e_machine` values (System V ABI, "Machine Information").
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;

impl Target {
    #[cfg(test)]
    pub const ALL: [Target; 2] = [Target::LinuxX86_64, Target::LinuxAarch64];

    pub fn as_str(&self) -> &'static str {
        match self {
            Target::LinuxX86_64 => "linux-x86_64",
            Target::LinuxAarch64 => "linux-aarch64",
        }
    }

    /// The ELF machine a native library for this target declares.
    pub fn elf_machine(&self) -> u16 {
        match self {
            Target::LinuxX86_64 => EM_X86_64,
            Target::LinuxAarch64 => EM_AARCH64,
        }
    }

    /// What `uname -m` prints on this target (the install script checks it).
    pub fn uname_machines(&self) -> &'static [&'static str] {
        match self {
            Target::LinuxX86_64 => &["x86_64", "amd64"],
            Target::LinuxAarch64 => &["aarch64", "arm64"],
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Target {
    type Err = String;

    /// Accepts the spellings in use: `linux-x86_64`, `x86_64`, `x86-64`, `amd64`,
    /// `x64`, `linux/amd64` (OCI), `x86_64-unknown-linux-gnu` (Rust/LLVM), and for
    /// ARM `linux-aarch64`, `aarch64`, `arm64`, `armv8`, `linux/arm64`,
    /// `aarch64-unknown-linux-gnu`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let mut arch = lower.as_str();
        for prefix in ["linux-", "linux_", "linux/"] {
            arch = arch.strip_prefix(prefix).unwrap_or(arch);
        }
        for suffix in ["-unknown-linux-gnu", "-unknown-linux-musl", "-linux-gnu", "-linux"] {
            arch = arch.strip_suffix(suffix).unwrap_or(arch);
        }
        match arch {
            "x86_64" | "x86-64" | "amd64" | "x64" => Ok(Target::LinuxX86_64),
            "aarch64" | "arm64" | "armv8" | "arm64v8" => Ok(Target::LinuxAarch64),
            _ => Err(format!(
                "unknown target `{s}` (expected linux-x86_64 or linux-aarch64; also accepted: x86_64, amd64, x64, aarch64, arm64, linux/amd64, linux/arm64, x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu)"
            )),
        }
    }
}

/// A native library found in a bundle, with what its header says.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeLib {
    /// Bundle path, and `!entry` for a file inside a jar.
    pub path: String,
    /// `e_machine` of its ELF header.
    pub elf_machine: u16,
}

/// Names that denote native code on some platform.
fn looks_native(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    base.ends_with(".so")
        || base.contains(".so.")
        || base.ends_with(".dylib")
        || base.ends_with(".jnilib")
        || base.ends_with(".dll")
}

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";

fn machine_name(m: u16) -> String {
    match m {
        3 => "x86 (32-bit)".into(),
        40 => "ARM (32-bit)".into(),
        EM_X86_64 => "x86_64".into(),
        EM_AARCH64 => "aarch64".into(),
        243 => "RISC-V".into(),
        21 => "PowerPC64".into(),
        22 => "s390".into(),
        other => format!("e_machine {other}"),
    }
}

/// Checks one file that is (by name or magic) native code. `Ok(None)`: not
/// native at all; `Ok(Some(lib))`: an ELF object for `target`; `Err`: why it
/// cannot run on `target`.
pub fn check_native(path: &str, bytes: &[u8], target: Target) -> Result<Option<NativeLib>, String> {
    let is_elf = bytes.starts_with(ELF_MAGIC);
    if !is_elf && !looks_native(path) {
        return Ok(None);
    }
    if !is_elf {
        return Err(format!("{path}: a native library that is not ELF (Mach-O or PE?): it cannot load on {target}"));
    }
    // e_ident: EI_CLASS at 4 (2 = 64-bit), EI_DATA at 5 (1 = little-endian); e_machine at 18.
    if bytes.len() < 20 {
        return Err(format!("{path}: truncated ELF header ({} bytes)", bytes.len()));
    }
    let little = match bytes[5] {
        1 => true,
        2 => false,
        d => return Err(format!("{path}: ELF header has an invalid byte order ({d})")),
    };
    let raw = [bytes[18], bytes[19]];
    let machine = if little { u16::from_le_bytes(raw) } else { u16::from_be_bytes(raw) };
    if machine != target.elf_machine() {
        return Err(format!("{path}: built for {}, but the bundle targets {target}", machine_name(machine)));
    }
    if bytes[4] != 2 || !little {
        return Err(format!(
            "{path}: {target} needs a 64-bit little-endian ELF object (class {}, byte order {})",
            bytes[4], bytes[5]
        ));
    }
    Ok(Some(NativeLib { path: path.to_string(), elf_machine: machine }))
}

/// Checks a bundle file and, when it is a jar, every entry in it (nested jars
/// too). Returns the native libraries found, or every problem.
pub fn scan(path: &str, bytes: &[u8], target: Target) -> Result<Vec<NativeLib>, Vec<String>> {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    scan_into(path, bytes, target, 0, &mut found, &mut problems);
    if problems.is_empty() {
        Ok(found)
    } else {
        Err(problems)
    }
}

fn scan_into(
    path: &str,
    bytes: &[u8],
    target: Target,
    depth: usize,
    found: &mut Vec<NativeLib>,
    problems: &mut Vec<String>,
) {
    match check_native(path, bytes, target) {
        Ok(Some(lib)) => found.push(lib),
        Ok(None) => {}
        Err(e) => problems.push(e),
    }
    let lower = path.to_ascii_lowercase();
    if !(lower.ends_with(".jar") || lower.ends_with(".zip")) || depth > 3 {
        return;
    }
    let mut zip = match zip::ZipArchive::new(Cursor::new(bytes)) {
        Ok(z) => z,
        Err(e) => {
            problems.push(format!("{path}: not a readable jar: {e}"));
            return;
        }
    };
    for i in 0..zip.len() {
        let mut entry = match zip.by_index(i) {
            Ok(e) => e,
            Err(e) => {
                problems.push(format!("{path}: entry {i}: {e}"));
                continue;
            }
        };
        if entry.is_dir() {
            continue;
        }
        let name = format!("{path}!{}", entry.name());
        let nested = name.to_ascii_lowercase().ends_with(".jar");
        // The ELF header is all the check needs, unless the entry is itself a jar.
        let mut data = Vec::new();
        if nested || looks_native(entry.name()) {
            match crate::fsx::zip_entry::read(&mut entry, std::path::Path::new(path), crate::fsx::read::MAX_JAR) {
                Ok(d) => data = d,
                Err(e) => {
                    problems.push(format!("{name}: {e}"));
                    continue;
                }
            }
        } else if let Err(e) = (&mut entry).take(64).read_to_end(&mut data) {
            problems.push(format!("{name}: cannot read: {e}"));
            continue;
        }
        drop(entry);
        scan_into(&name, &data, target, depth + 1, found, problems);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first 20 bytes of an ELF header: magic, class, byte order, version, padding, type, machine.
    pub(crate) fn elf_header(class: u8, little: bool, machine: u16) -> Vec<u8> {
        let mut h = vec![0x7f, b'E', b'L', b'F', class, if little { 1 } else { 2 }, 1, 0];
        h.extend([0u8; 8]);
        let e_type: u16 = 3; // ET_DYN: a shared object
        if little {
            h.extend(e_type.to_le_bytes());
            h.extend(machine.to_le_bytes());
        } else {
            h.extend(e_type.to_be_bytes());
            h.extend(machine.to_be_bytes());
        }
        h.extend([0u8; 44]);
        h
    }

    #[test]
    fn parses_the_usual_spellings() {
        for s in [
            "linux-x86_64",
            "x86_64",
            "X86_64",
            "amd64",
            "x64",
            "x86-64",
            "linux/amd64",
            "linux-amd64",
            "x86_64-unknown-linux-gnu",
        ] {
            assert_eq!(s.parse::<Target>(), Ok(Target::LinuxX86_64), "{s}");
        }
        for s in ["linux-aarch64", "aarch64", "arm64", "ARM64", "armv8", "linux/arm64", "aarch64-unknown-linux-gnu"] {
            assert_eq!(s.parse::<Target>(), Ok(Target::LinuxAarch64), "{s}");
        }
        for s in ["", "i686", "arm", "armv7", "riscv64", "darwin-arm64x", "windows-x86_64"] {
            assert!(s.parse::<Target>().is_err(), "{s} should be refused");
        }
        for t in Target::ALL {
            assert_eq!(t.as_str().parse::<Target>(), Ok(t));
        }
    }

    #[test]
    fn elf_for_the_target_passes_and_for_another_fails() {
        let x86 = elf_header(2, true, EM_X86_64);
        let arm = elf_header(2, true, EM_AARCH64);
        assert_eq!(check_native("libs/libfoo.so", &x86, Target::LinuxX86_64).unwrap().unwrap().elf_machine, EM_X86_64);
        assert_eq!(check_native("libfoo.so", &arm, Target::LinuxAarch64).unwrap().unwrap().elf_machine, EM_AARCH64);
        let e = check_native("libfoo.so", &arm, Target::LinuxX86_64).unwrap_err();
        assert!(e.contains("built for aarch64") && e.contains("linux-x86_64"), "{e}");
        let e = check_native("libfoo.so", &x86, Target::LinuxAarch64).unwrap_err();
        assert!(e.contains("built for x86_64"), "{e}");
        // 32-bit or big-endian objects of the right machine number still cannot load.
        assert!(check_native("a.so", &elf_header(1, true, EM_X86_64), Target::LinuxX86_64).is_err());
        assert!(check_native("a.so", &elf_header(2, false, EM_AARCH64), Target::LinuxAarch64).is_err());
        // Even without a telling name, the magic gives an ELF object away.
        assert!(check_native("data.bin", &arm, Target::LinuxX86_64).is_err());
        // A .so that is not ELF (a Mach-O dylib renamed), and a truncated header.
        assert!(check_native("libfoo.so", b"\xcf\xfa\xed\xfe....", Target::LinuxX86_64).is_err());
        assert!(check_native("libfoo.so", &x86[..12], Target::LinuxX86_64).is_err());
        assert!(check_native("libs/kafka_2.13-3.9.2.jar", b"PK\x03\x04", Target::LinuxX86_64).unwrap().is_none());
    }

    fn jar_with(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            w.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            std::io::Write::write_all(&mut w, bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn native_libraries_inside_jars_and_nested_jars_are_checked() {
        let arm = elf_header(2, true, EM_AARCH64);
        let clean = jar_with(&[("a/B.class", b"\xca\xfe\xba\xbe"), ("META-INF/MANIFEST.MF", b"x")]);
        assert_eq!(scan("libs/x.jar", &clean, Target::LinuxX86_64), Ok(vec![]));
        let with_so = jar_with(&[("a/B.class", b"\xca\xfe\xba\xbe"), ("native/linux/libz.so", &arm)]);
        assert_eq!(
            scan("libs/x.jar", &with_so, Target::LinuxAarch64).unwrap()[0].path,
            "libs/x.jar!native/linux/libz.so"
        );
        let problems = scan("libs/x.jar", &with_so, Target::LinuxX86_64).unwrap_err();
        assert!(problems[0].contains("libs/x.jar!native/linux/libz.so: built for aarch64"), "{problems:?}");
        let outer = jar_with(&[("lib/inner.jar", &with_so)]);
        let problems = scan("libs/outer.jar", &outer, Target::LinuxX86_64).unwrap_err();
        assert!(problems[0].starts_with("libs/outer.jar!lib/inner.jar!native/linux/libz.so"), "{problems:?}");
    }
}
