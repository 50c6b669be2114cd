//! Compare-and-swap of one node's observer.ids: the new bytes replace the file only if it still
//! holds the bytes okp planned from, so two writers (two okp, okp and the watchdog) never lose an
//! update: the second to swap finds the file changed and stops, naming the node.
//!
//! - Local files: okp takes `PATH.okp-lock` (flock, fsx::lock_file), compares the file's bytes,
//!   and replaces it (temp file, fsync, rename) before it lets go.
//! - A command template: `{cas}` in `--write-cmd` is filled with one shell word, a POSIX `sh`
//!   script that does the same on the node: the new bytes (stdin) into `PATH.okp-tmp.PID` (a copy
//!   of the file first, so its mode and owner stay), then under `flock PATH.okp-lock` the file's
//!   sha256 compared with the one okp read, then `sync` and `mv`; 75 (EX_TEMPFAIL) when the file
//!   changed. `ssh {host} {cas}` runs it on the host, `sh -c {cas}` here. The node needs `flock`
//!   and `sha256sum` (util-linux and coreutils, or BusyBox).
//! - A write template without `{cas}` cannot compare on the node: okp reads the file again just
//!   before writing it, which narrows the window but does not close it (docs/hosts.md).
//!
//! Not here: which bytes to write (idfile/, change/), what to do when a swap fails
//! (actuate.rs).

use std::path::Path;

use super::idfile;
use super::transport::{self, NodeSpec, Transport, MAX_IDS_FILE};
use crate::error::{Error, Result};
use crate::fsx::read::read_regular;

/// How a compare-and-swap came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swap {
    /// The file held the expected bytes and now holds the new ones.
    Done,
    /// The file no longer held the expected bytes; nothing was written. What the node said.
    Changed(String),
}

/// The placeholder of okp's compare-and-swap script in a write template.
pub const CAS: &str = "{cas}";

/// The script `{cas}` stands for: replace `path` with stdin if its sha256 is `expect` (hex).
/// A checked path (transport::check_path) is one inert word, a digest is hex; the script is one
/// shell word once `fill` quotes it.
fn cas_script(path: &str, expect: &str) -> String {
    // Quoted all the same (bare when it is a checked path): a NodeSpec made elsewhere stays inert.
    let path = crate::out::sh_word(path);
    format!(
        "f={path}; t=$f.okp-tmp.$$; \
         command -v flock >/dev/null && command -v sha256sum >/dev/null \
         || {{ echo \"okp {{cas}}: flock and sha256sum are needed on this host\" >&2; exit 2; }}; \
         cp -p $f $t 2>/dev/null; cat > $t || {{ rm -f $t; exit 1; }}; \
         ( flock -w 20 9 || {{ echo \"okp {{cas}}: $f.okp-lock stayed locked for 20 s\" >&2; exit 1; }}; \
         h=$(sha256sum < $f | cut -c1-64) && [ -n \"$h\" ] || exit 1; \
         [ \"$h\" = {expect} ] || {{ echo \"okp {{cas}}: $f changed since okp read it (sha256 $h now)\" >&2; exit 75; }}; \
         sync $t && mv -f $t $f ) 9>>$f.okp-lock; \
         r=$?; rm -f $t; exit $r"
    )
}

impl Transport {
    /// Whether a write compares the file with what okp read, on the node, as it replaces it.
    pub fn compares(&self) -> bool {
        match self {
            Transport::Local => true,
            Transport::Command { write, .. } => write.contains(CAS),
        }
    }

    /// Replaces the file with `text` if it still holds `expect`. A template without `{cas}`
    /// cannot compare: it writes (`compares` is false; the caller reads first).
    pub fn swap(&self, n: &NodeSpec, expect: &str, text: &str) -> Result<Swap> {
        match self {
            Transport::Local => swap_local(n, expect, text),
            Transport::Command { write, timeout, .. } => {
                let script = cas_script(&n.path, &crate::hash::sha256(&idfile::bytes_of(expect)));
                let cmd = transport::fill_cas(write, n, Some(&script));
                let shown = transport::fill_cas(write, n, None);
                Ok(match transport::run_write(n, (&cmd, &shown), text, *timeout)? {
                    Ok(()) => Swap::Done,
                    Err(why) => Swap::Changed(why),
                })
            }
        }
    }
}

fn swap_local(n: &NodeSpec, expect: &str, text: &str) -> Result<Swap> {
    let path = Path::new(&n.path);
    let lock_path = format!("{}.okp-lock", n.path);
    let mut waiting = |pid: &str| {
        crate::out::note(format!(
            "{}: waiting for another okp (pid {}) writing it",
            n.label(),
            if pid.is_empty() { "unknown" } else { pid }
        ))
    };
    let _lock = match crate::fsx::lock_file(Path::new(&lock_path), true, &mut waiting)? {
        Ok(l) => l,
        Err(_) => {
            return Err(Error::Usage(format!(
            "{}: {lock_path} is not okp's lock file (a symbolic link, not a regular file, or its directory is gone)",
            n.label()
        )))
        }
    };
    let now = read_regular(path, MAX_IDS_FILE).map_err(|e| e.into_error(path, "observer.ids"))?;
    if now != idfile::bytes_of(expect) {
        return Ok(Swap::Changed(format!("holds {:?}, not the {:?} okp read", String::from_utf8_lossy(&now), expect)));
    }
    transport::write_replacing(path, &idfile::bytes_of(text))?;
    Ok(Swap::Done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn node(dir: &Path) -> NodeSpec {
        let p = dir.join("observer.ids");
        std::fs::write(&p, "4\n").unwrap();
        NodeSpec { id: 1, role: super::super::transport::NodeRole::Broker, path: p.display().to_string(), host: None }
    }

    /// The script through a real sh: swaps when the file holds what okp read, refuses (75, the
    /// file untouched, no temp file left) when it does not, keeps the file's mode.
    #[test]
    fn the_cas_script_swaps_only_what_okp_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let n = node(dir.path());
        std::fs::set_permissions(&n.path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let t = Transport::Command {
            read: "cat {path}".into(),
            write: "sh -c {cas}".into(),
            timeout: Duration::from_secs(10),
        };
        assert!(t.compares());
        assert_eq!(t.swap(&n, "4\n", "4\n5\n").unwrap(), Swap::Done);
        assert_eq!(std::fs::read_to_string(&n.path).unwrap(), "4\n5\n");
        assert_eq!(std::fs::metadata(&n.path).unwrap().permissions().mode() & 0o777, 0o640);
        match t.swap(&n, "4\n", "6\n").unwrap() {
            Swap::Changed(why) => assert!(why.contains("changed since okp read it"), "{why}"),
            Swap::Done => panic!("swapped a file that changed"),
        }
        assert_eq!(std::fs::read_to_string(&n.path).unwrap(), "4\n5\n");
        let left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert!(left.iter().all(|f| !f.contains("okp-tmp")), "{left:?}");
        // Locally, the same.
        let local = Transport::Local;
        assert!(matches!(local.swap(&n, "4\n", "7\n").unwrap(), Swap::Changed(_)));
        assert_eq!(local.swap(&n, "4\n5\n", "7\n").unwrap(), Swap::Done);
        assert_eq!(std::fs::read_to_string(&n.path).unwrap(), "7\n");
        assert!(!Transport::Command {
            read: "cat {path}".into(),
            write: "cat > {path}".into(),
            timeout: Duration::from_secs(1)
        }
        .compares());
    }
}
