//! The resident compiler: one JVM per (Scala compiler, JDK) that keeps scalac loaded and
//! JIT-compiled between okp builds, so a user's second splice build does not pay a cold JVM
//! (`OkpCompileServer.java`, embedded, compiled by okp at first use against the release's
//! scala-compiler with the JDK's javac). Every request runs the compiler's own command-line driver
//! in a new instance (a new `scala.tools.nsc.Global`, a new javac), so what one build compiled
//! cannot reach the next; the test `the_resident_compiler_makes_the_one_shot_classes` holds that
//! its classes are byte-identical to a one-shot compile's, and every build's proofs still compare
//! them with the release's.
//!
//! It lives in `~/.m2/repository/okp-compiler/<scala>-<key>/` (0700): `sock` (a Unix socket),
//! `token` (0600, random, sent first by every client), `server.log`, `classes/` (the server's
//! own), `use.lock` (one okp at a time: another compiles in a JVM of its own meanwhile) and
//! `start.lock`. The key hashes the server's source, the compiler's classpath, the JDK and the JVM
//! options, and the server names it in its first line: a server of another key is not used. It
//! exits after `IDLE_SECONDS` without a request or `MAX_REQUESTS` requests. Anything unexpected
//! (no server and none can start, a busy, dead, mismatched or silent one, a token file others can
//! read) falls back to the one-shot compile with a note; `OKP_NO_DAEMON` set: always one-shot;
//! `OKP_DAEMON_DIR`: where the servers' directories are instead (tests; a short socket path).
//!
//! Not here: what is compiled with which options (`build::splice`).

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::hash::sha256;

const SOURCE: &str = include_str!("OkpCompileServer.java");
const CLASS: &str = "okp.build.OkpCompileServer";
/// The server exits after this long without a request: it never outlives its use by much.
pub const IDLE_SECONDS: u64 = 600;
/// The server exits after this many requests (each leaves scalac's jar index of the classpath
/// entries it read cached; the build's staged jars have a new path every build).
pub const MAX_REQUESTS: u32 = 200;
/// The server JVM's options: scalac's stack and heap limit (as the one-shot compile's), a young
/// generation large enough that a compile's garbage rarely meets a collection, and the default JIT
/// (C2 pays off in a JVM that lives across builds).
const JVM_OPTIONS: &[&str] = &["-Xss8m", "-Xms1g", "-Xmn600m", "-Xmx2g", "-XX:+UseSerialGC"];
/// Environment variables the JVM reads its options from: they shape the server, so they key it.
const JVM_ENV: &[&str] = &["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"];
/// A Unix socket's path must fit `sun_path` (108 bytes on Linux, with its NUL).
const MAX_SOCKET_PATH: usize = 100;

/// The compiler a request runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Scalac,
    Javac,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Scalac => "scalac",
            Tool::Javac => "javac",
        }
    }
}

/// How a request went.
#[derive(Debug)]
pub enum Answer {
    /// The compiler ran: its exit status and its output.
    Ran { ok: bool, output: String },
    /// Nothing was compiled (disabled, busy, none could start, mismatched): compile one-shot.
    NotRun,
    /// The server took the request and ended without answering (killed mid-compile): what it may
    /// have written is not to be trusted; compile one-shot into a clean directory.
    Broken(String),
}

/// The resident compiler for one Scala compiler: its classpath, under the local repository.
pub struct Resident<'a> {
    pub repo_local: &'a Path,
    pub scala: &'a str,
    pub classpath: &'a OsStr,
}

/// Whether the resident compiler is turned off (`OKP_NO_DAEMON` set).
pub fn disabled() -> bool {
    std::env::var_os("OKP_NO_DAEMON").is_some()
}

/// Whether `javac` is the JDK of the `java` that runs the server: only then may the server's
/// in-process javac stand for the `javac` command.
pub fn javac_is_the_servers() -> bool {
    let (java, javac) = (crate::jvm::jdk::home_of("java"), crate::jvm::jdk::home_of("javac"));
    java.is_some() && java == javac
}

impl Resident<'_> {
    /// What the server is keyed by: its source, the compiler's classpath (each file's path, size
    /// and modification time), the JDK, the JVM options and the environment the JVM reads.
    fn key(&self) -> String {
        use std::fmt::Write as _;
        let mut k = format!("okp-compile-server 1\n{}\nscala {}\n", sha256(SOURCE.as_bytes()), self.scala);
        for p in std::env::split_paths(self.classpath) {
            let m = std::fs::metadata(&p).ok();
            let _ = writeln!(
                k,
                "cp {} {} {}",
                p.display(),
                m.as_ref().map_or(0, |m| m.len()),
                m.as_ref().map_or(0, |m| m.mtime_nsec() + m.mtime() * 1_000_000_000)
            );
        }
        let java = crate::jvm::jdk::identity("java").unwrap_or_else(|| "java on PATH".into());
        let _ = writeln!(k, "java {java}\njvm {JVM_OPTIONS:?}");
        for v in JVM_ENV {
            let _ = writeln!(k, "env {v}={:?}", std::env::var_os(v));
        }
        sha256(k.as_bytes())
    }

    fn dir(&self, key: &str) -> PathBuf {
        let scala: String = self.scala.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
        let root = match std::env::var_os("OKP_DAEMON_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => self.repo_local.join("okp-compiler"),
        };
        root.join(format!("{scala}-{}", &key[..16]))
    }

    /// Runs `tool` with `args` (its command line's arguments, absolute paths: the server's working
    /// directory is not the caller's) in the resident compiler.
    pub fn run(&self, tool: Tool, args: &[OsString]) -> Answer {
        if disabled() {
            return Answer::NotRun;
        }
        let key = self.key();
        let dir = self.dir(&key);
        match self.request(&dir, &key, tool, args) {
            Ok(a) => a,
            Err(why) => {
                crate::out::note(format!(
                    "the resident compiler ({}): {why}; compiling in a JVM of its own",
                    dir.display()
                ));
                Answer::NotRun
            }
        }
    }

    fn request(&self, dir: &Path, key: &str, tool: Tool, args: &[OsString]) -> Result<Answer, String> {
        private_dir(dir)?;
        let sock = dir.join("sock");
        if sock.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(format!("{} is too long for a Unix socket", sock.display()));
        }
        // One okp at a time: a second (or this okp's other compile) does not wait for it.
        let mut quiet = |_: &str| {};
        let _lock = match crate::fsx::lock_file(&dir.join("use.lock"), false, &mut quiet).map_err(|e| e.to_string())? {
            Ok(l) => l,
            Err(crate::fsx::LockRefusal::Held(pid)) => {
                if pid != std::process::id().to_string() {
                    crate::out::note(format!(
                        "the resident compiler is busy with another okp (pid {}): compiling in a JVM of its own",
                        if pid.is_empty() { "unknown" } else { &pid }
                    ));
                }
                return Ok(Answer::NotRun);
            }
            Err(crate::fsx::LockRefusal::Gone) => return Ok(Answer::NotRun),
            Err(crate::fsx::LockRefusal::Not(_)) => {
                return Err(format!("{}: not a regular lock file", dir.join("use.lock").display()))
            }
        };
        let stream = match UnixStream::connect(&sock) {
            Ok(s) => s,
            Err(_) => self.start(dir, key, &sock)?,
        };
        let token = token(dir)?;
        exchange(stream, key, &token, tool, args)
    }

    /// Starts a server (under `start.lock`, so two okps start one) and connects to it.
    fn start(&self, dir: &Path, key: &str, sock: &Path) -> Result<UnixStream, String> {
        let mut quiet = |_: &str| {};
        let _start =
            match crate::fsx::lock_file(&dir.join("start.lock"), true, &mut quiet).map_err(|e| e.to_string())? {
                Ok(l) => l,
                Err(crate::fsx::LockRefusal::Not(_)) => {
                    return Err(format!("{}: not a regular lock file", dir.join("start.lock").display()))
                }
                Err(_) => return Err("could not take start.lock".into()),
            };
        if let Ok(s) = UnixStream::connect(sock) {
            return Ok(s);
        }
        // A socket no server listens on (a killed server's): nothing answers there any more.
        match std::fs::symlink_metadata(sock) {
            Ok(_) => {
                std::fs::remove_file(sock).map_err(|e| format!("cannot remove the stale {}: {e}", sock.display()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", sock.display())),
        }
        let classes = self.server_classes(dir)?;
        let mut raw = [0u8; 32];
        crate::hash::random_bytes(&mut raw).map_err(|e| e.to_string())?;
        let token_file = dir.join("token");
        crate::fsx::write_private(&token_file, crate::hash::hex(&raw).as_bytes()).map_err(|e| e.to_string())?;
        let log_file = dir.join("server.log");
        let _ = std::fs::remove_file(&log_file);
        let log = crate::fsx::open_append(&log_file).map_err(|e| format!("{}: {e}", log_file.display()))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let mut cp = OsString::from(self.classpath);
        cp.push(":");
        cp.push(&classes);
        let t = Instant::now();
        let mut child = Command::new(crate::jvm::jdk::java_bin("java"))
            .args(JVM_OPTIONS)
            .arg("-cp")
            .arg(&cp)
            .arg(CLASS)
            .arg(sock)
            .arg(&token_file)
            .arg(key)
            .arg(IDLE_SECONDS.to_string())
            .arg(MAX_REQUESTS.to_string())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            // Its own process group: a Ctrl-C to the okp that started it does not reach it.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start java: {e}"))?;
        while t.elapsed() < Duration::from_secs(30) {
            if let Ok(s) = UnixStream::connect(sock) {
                crate::out::note(format!(
                    "started the resident compiler for scalac {} (pid {}; it exits after {} minutes unused)",
                    self.scala,
                    child.id(),
                    IDLE_SECONDS / 60
                ));
                return Ok(s);
            }
            if let Ok(Some(status)) = child.try_wait() {
                let tail = crate::fsx::read::lossy_text(&log_file, 4096);
                return Err(format!("the server exited at its start ({status}): {}", tail.trim()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = child.kill();
        Err("the server did not listen within 30 s".into())
    }

    /// The server's classes under `dir/classes`, compiled once with the JDK's javac against the
    /// compiler's classpath.
    fn server_classes(&self, dir: &Path) -> Result<PathBuf, String> {
        let classes = dir.join("classes");
        if crate::fsx::is_regular_file(&classes.join("okp/build/OkpCompileServer.class")) {
            return Ok(classes);
        }
        let staging = tempfile::Builder::new().prefix(".classes-").tempdir_in(dir).map_err(|e| e.to_string())?;
        let src = staging.path().join("OkpCompileServer.java");
        crate::fsx::write_atomic(&src, SOURCE.as_bytes()).map_err(|e| e.to_string())?;
        let out = staging.path().join("classes");
        let o = Command::new(crate::jvm::jdk::java_bin("javac"))
            .args(["-nowarn", "-proc:none", "-d"])
            .arg(&out)
            .arg("-cp")
            .arg(self.classpath)
            .arg(&src)
            .output()
            .map_err(|e| format!("cannot run javac: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "its server does not compile against scalac {} (a defect in okp): {}{}",
                self.scala,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        let _ = std::fs::remove_dir_all(&classes);
        std::fs::rename(&out, &classes).map_err(|e| format!("cannot move the server's classes into place: {e}"))?;
        Ok(classes)
    }
}

/// `dir` made if missing and checked: a directory (not a link) of this user that no one else
/// can enter (0700; a looser mode of our own directory is tightened).
fn private_dir(dir: &Path) -> Result<(), String> {
    crate::fsx::create_dir(dir).map_err(|e| e.to_string())?;
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !m.is_dir() || m.uid() != me {
        return Err(format!("{} is not a directory of this user: not used", dir.display()));
    }
    if m.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {} private: {e}", dir.display()))?;
    }
    Ok(())
}

/// The token clients send first, from a file only this user can read.
fn token(dir: &Path) -> Result<String, String> {
    let file = dir.join("token");
    let m = std::fs::symlink_metadata(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !m.is_file() || m.uid() != me || m.mode() & 0o777 != 0o600 {
        return Err(format!(
            "{} is not a file of this user with mode 0600 (mode {:o}): the server it belongs to is not used; remove {} \
             to start a new one",
            file.display(),
            m.mode() & 0o777,
            dir.display()
        ));
    }
    let t = crate::fsx::read::text(&file, 4096, "resident compiler token").map_err(|e| e.to_string())?;
    Ok(t.trim().to_string())
}

fn b64(b: &[u8]) -> String {
    <ct_codecs::Base64 as ct_codecs::Encoder>::encode_to_string(b).unwrap_or_default()
}

/// One request on a connected server: hello (its key), the token, the tool and arguments, then
/// its answer. A server of another key is left alone; one that ends mid-request is `Broken`.
fn exchange(stream: UnixStream, key: &str, token: &str, tool: Tool, args: &[OsString]) -> Result<Answer, String> {
    use std::os::unix::ffi::OsStrExt;
    stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    let mut hello = String::new();
    reader.by_ref().take(512).read_line(&mut hello).map_err(|e| format!("no greeting from the server: {e}"))?;
    let mut words = hello.split_whitespace();
    let (proto, theirs, pid) = (words.next().zip(words.next()), words.next(), words.next().unwrap_or("?"));
    if proto != Some(("okp-compile-server", "1")) {
        return Err(format!("what answers on its socket is not okp's compile server ({:?})", hello.trim()));
    }
    if theirs != Some(key) {
        return Err(format!("its server (pid {pid}) is for another compiler, JDK or classpath"));
    }
    let mut request = format!("{token}\n{}\n{}\n", tool.name(), args.len());
    for a in args {
        request.push_str(&b64(a.as_bytes()));
        request.push('\n');
    }
    let mut w = &stream;
    w.write_all(request.as_bytes()).and_then(|_| w.flush()).map_err(|e| format!("cannot send the request: {e}"))?;
    // A compile takes as long as it takes; an end of the stream says the server died.
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    let gone =
        |what: &str| Answer::Broken(format!("the resident compiler (pid {pid}) ended before it answered ({what})"));
    let mut status = String::new();
    if reader.by_ref().take(512).read_line(&mut status).is_err() || status.is_empty() {
        return Ok(gone("no status"));
    }
    if status.trim() == "denied" {
        return Err(format!("its server (pid {pid}) refused the token"));
    }
    let rc = match status.strip_prefix("done ").and_then(|s| s.split_whitespace().next()) {
        Some(rc) => rc.parse::<i32>().map_err(|_| format!("a garbled answer: {:?}", status.trim()))?,
        None => return Err(format!("a garbled answer: {:?}", status.trim())),
    };
    let mut body = String::new();
    if reader.take(256 << 20).read_line(&mut body).is_err() || !body.ends_with('\n') {
        return Ok(gone("output cut"));
    }
    let output = <ct_codecs::Base64 as ct_codecs::Decoder>::decode_to_vec(body.trim(), None)
        .map_err(|_| "a garbled output".to_string())?;
    Ok(Answer::Ran { ok: rc == 0, output: String::from_utf8_lossy(&output).into_owned() })
}
