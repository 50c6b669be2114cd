//! The attacks found on okp's bundle commands, each replayed on the real
//! binary with the real 3.9.2 kraft bundle and a directory laid out like a
//! Kafka installation holding the real upstream jars (tests/common/bundle.rs):
//! planted backups, records and scripts; two okps on one installation; FIFOs
//! and devices where files are expected; a signature that fails before the
//! archive is read; a damaged gzip trailer, trailing bytes and a gzip bomb
//! under a good signature; an install killed or interrupted mid-way.
//! docs/bundles-safety.md says what okp does about each.

use crate::common::bundle::*;
use crate::common::*;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The okp binary as a plain process (to spawn, signal and time it).
fn okp_bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_okp"));
    c.env_remove("NO_COLOR");
    c
}

/// Runs `cmd` to the end; fails the test (and kills it) when it runs longer than `secs`: it hung.
fn within(cmd: &mut Command, secs: u64) -> Output {
    let d = tempfile::tempdir().unwrap();
    let (out, err) = (d.path().join("out"), d.path().join("err"));
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still ran after {secs} s: it hung\n{}", std::fs::read_to_string(&err).unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output { status, stdout: std::fs::read(&out).unwrap(), stderr: std::fs::read(&err).unwrap() }
}

/// `okp ARGS` with at most 512 MiB of address space (`ulimit -v`) and 120 s.
fn okp_in_512_mib<S: AsRef<OsStr>>(args: &[S]) -> Output {
    within(
        Command::new("sh")
            .arg("-c")
            .arg("ulimit -v \"$0\" && exec \"$@\"")
            .arg((512 * 1024).to_string())
            .arg(env!("CARGO_BIN_EXE_okp"))
            .args(args),
        120,
    )
}

fn mkfifo(p: &Path) {
    assert!(run(Command::new("mkfifo").arg(p)).status.success());
}

/// `bytes` as the 3.9.2 bundle in a fresh directory, signed by `key` as okp signs.
fn signed_as_okp(bytes: &[u8], key: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join(format!("{NAME_3_9}.tar.gz"));
    std::fs::write(&b, bytes).unwrap();
    resign_with(&b, key, &okp_comment());
    (dir, b)
}

fn verify_args<'a>(b: &'a Path, public: &'a Path) -> [&'a OsStr; 4] {
    [OsStr::new("verify-bundle"), b.as_os_str(), OsStr::new("--pubkey"), public.as_os_str()]
}

// ---- 3. Bounded reading: regular files only, within a cap; an unreadable sidecar fails.

#[test]
fn a_fifo_or_a_device_where_a_file_belongs_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = copy_bundle(&shared_bundle(), dir.path());
    for (ext, check) in [(".minisig", "signature"), (".sha256", "sha256 file"), (".sha512", "sha512 file")] {
        let side = PathBuf::from(format!("{}{ext}", b.display()));
        let saved = std::fs::read(&side).unwrap();
        std::fs::remove_file(&side).unwrap();
        mkfifo(&side);
        let o = within(okp_bin().args(verify_args(&b, &shared_pub())), 60);
        assert_eq!(o.status.code(), Some(1), "{ext}: {}", stdout(&o));
        let says = format!("FAILED   {check:<16} cannot read {NAME_3_9}.tar.gz{ext}: a FIFO, not a regular file");
        assert!(stdout(&o).contains(&says), "{ext}: {}", stdout(&o));
        let home = kafka_home("3.9.2");
        let before = tree(home.path());
        let o = within(
            okp_bin().arg("install").arg(&b).arg("--kafka-home").arg(home.path()).arg("--pubkey").arg(shared_pub()),
            60,
        );
        assert_eq!(o.status.code(), Some(1), "{ext}: {}", stderr(&o));
        assert!(stderr(&o).contains("refusing to install"), "{}", stderr(&o));
        assert_eq!(tree(home.path()), before);
        std::fs::remove_file(&side).unwrap();
        std::fs::write(&side, saved).unwrap();
    }

    // The bundle itself: a FIFO, /dev/zero, or a link to /dev/zero (which once filled memory).
    let (fifo_dir, link_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fifo = fifo_dir.path().join(format!("{NAME_3_9}.tar.gz"));
    mkfifo(&fifo);
    let link = link_dir.path().join(format!("{NAME_3_9}.tar.gz"));
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let home = kafka_home("3.9.2");
    let before = tree(home.path());
    for (path, what) in
        [(&fifo, "a FIFO"), (&link, "a character device"), (&PathBuf::from("/dev/zero"), "a character device")]
    {
        let o = okp_in_512_mib(&verify_args(path, &shared_pub()));
        assert_eq!(o.status.code(), Some(2), "{}: {}", path.display(), stderr(&o));
        assert!(stderr(&o).contains(&format!("{what}, not a regular file")), "{}", stderr(&o));
        let install = [OsStr::new("install"), path.as_os_str(), OsStr::new("--kafka-home"), home.path().as_os_str()];
        let o = okp_in_512_mib(&[&install[..], &[OsStr::new("--allow-unverified")]].concat());
        assert_eq!(o.status.code(), Some(2), "{}: {}", path.display(), stderr(&o));
        assert_eq!(tree(home.path()), before);
    }

    // The public key file.
    let key_fifo = dir.path().join("release.pub");
    mkfifo(&key_fifo);
    let o = within(okp_bin().args(verify_args(&b, &key_fifo)), 60);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a FIFO, not a regular file"), "{}", stderr(&o));
}

#[test]
fn a_sidecar_that_is_there_but_cannot_be_read_fails_instead_of_being_skipped() {
    let sig = std::fs::read_to_string(format!("{}.minisig", shared_bundle().display())).unwrap();
    /// (sidecar, its check, how to make it unreadable, what the report says)
    type Case = (&'static str, &'static str, Box<dyn Fn(&Path)>, &'static str);
    let cases: [Case; 3] = [
        (".sha256", "sha256 file", Box::new(|p| std::fs::create_dir(p).unwrap()), "a directory, not a regular file"),
        (".sha512", "sha512 file", Box::new(|p| std::fs::write(p, [0xff, 0xfe, b'\n']).unwrap()), "not UTF-8 text"),
        (
            ".minisig",
            "signature",
            Box::new(move |p| std::fs::write(p, format!("{sig}{}", "\n".repeat(70_000))).unwrap()),
            "over okp's cap of 65536 bytes",
        ),
    ];
    for (ext, check, make, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let b = copy_bundle(&shared_bundle(), dir.path());
        let side = PathBuf::from(format!("{}{ext}", b.display()));
        std::fs::remove_file(&side).unwrap();
        make(&side);
        let o = verify(&b, &shared_pub());
        assert_eq!(o.status.code(), Some(1), "{ext}: {}", stdout(&o));
        assert!(stdout(&o).contains(&format!("FAILED   {check:<16} cannot read")), "{ext}: {}", stdout(&o));
        assert!(stdout(&o).contains(says), "{ext}: {}", stdout(&o));
        assert!(stdout(&o).ends_with(": NOT VERIFIED\n"), "{}", stdout(&o));
    }
}

// ---- 4. The signature and the checksums before the archive.

#[test]
fn nothing_is_decompressed_unless_the_signature_and_the_checksums_hold() {
    let (_k1, key, public) = keys();
    let (_k2, _, other) = keys();
    let (_d, b) = signed_as_okp(&evil_tar("symlink"), &key);
    let skipped =
        "skipped  archive          not checked: okp decompresses no bundle whose signature, pins or checksums failed";

    // Another key: the signature fails, and the archive (with its symlink) is never read.
    let o = verify(&b, &other);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAILED   signature") && stdout(&o).contains(skipped), "{}", stdout(&o));
    assert!(!stdout(&o).contains("symbolic link"), "the archive was read: {}", stdout(&o));
    let o = okp().args(verify_args(&b, &other)).args(["--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let archive = v["checks"].as_array().unwrap().iter().find(|c| c["check"] == "archive").unwrap().clone();
    assert_eq!(archive["status"], "skipped", "{v}");

    // A good signature but a checksum file that does not match: not read either.
    std::fs::write(format!("{}.sha256", b.display()), format!("{}  {NAME_3_9}.tar.gz\n", "0".repeat(64))).unwrap();
    let o = verify(&b, &public);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("ok       signature") && stdout(&o).contains("FAILED   sha256 file"));
    assert!(stdout(&o).contains(skipped) && !stdout(&o).contains("symbolic link"), "{}", stdout(&o));

    // install --allow-unverified waives authenticity, so it reads the archive, and still refuses it.
    let home = kafka_home("3.9.2");
    let o = install(&b, home.path(), None, &["--allow-unverified"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("a symbolic link") && stderr(&o).contains("damaged or unsafe"), "{}", stderr(&o));
}

// ---- 5. The gzip container: trailer, trailing bytes, bombs.

#[test]
fn the_gzip_trailer_is_checked_even_under_a_good_signature() {
    // The bundle's own key: it also signed the provenance inside the bundle.
    let (key, public) = (shared_key(), shared_pub());
    let original = std::fs::read(shared_bundle()).unwrap();
    let n = original.len();
    // The control: the same bytes signed this way verify, so below only the changed bytes are wrong.
    let (_d, b) = signed_as_okp(&original, &key);
    let o = verify(&b, &public);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(run(Command::new("gzip").arg("-t").arg(&b)).status.success());

    for (at, field, says) in [
        (n - 8, "CRC32", "the gzip trailer's CRC32 is"),
        (n - 5, "CRC32", "the gzip trailer's CRC32 is"),
        (n - 4, "ISIZE", "the gzip trailer's length is"),
        (n - 1, "ISIZE", "the gzip trailer's length is"),
    ] {
        let mut bytes = original.clone();
        bytes[at] ^= 0x01;
        let (_d, b) = signed_as_okp(&bytes, &key);
        let o = verify(&b, &public);
        assert_eq!(o.status.code(), Some(1), "{field} byte {at} flipped, re-signed: {}", stdout(&o));
        assert!(stdout(&o).contains("ok       signature"), "{}", stdout(&o));
        assert!(stdout(&o).contains("FAILED   archive") && stdout(&o).contains(says), "{}", stdout(&o));
        // GNU gzip, the independent checker, agrees.
        assert!(!run(Command::new("gzip").arg("-t").arg(&b)).status.success(), "gzip -t accepts {field} byte {at}");
    }

    for (what, extra, says) in [
        ("garbage", b"trailing garbage".to_vec(), "16 bytes after the gzip member"),
        ("a second member", original.clone(), &*format!("{n} bytes after the gzip member")),
    ] {
        let mut bytes = original.clone();
        bytes.extend(&extra);
        let (_d, b) = signed_as_okp(&bytes, &key);
        let o = verify(&b, &public);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stdout(&o));
        assert!(stdout(&o).contains("FAILED   archive") && stdout(&o).contains(says), "{what}: {}", stdout(&o));
    }
}

/// One gzip member of `head` followed by `zeros` zero bytes (a tar header and
/// its data; the data's padding and the end-of-archive blocks are zeros too),
/// made the way a bomb is made: every MiB of zeros after a full flush
/// compresses to the same bytes, so they are compressed once and repeated.
fn gzip_bomb(head: &[u8], zeros: u64) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    const MIB: usize = 1 << 20;
    let mut c = Compress::new(Compression::best(), false);
    let mut deflate = |input: &[u8], flush: FlushCompress| {
        let mut out = Vec::with_capacity(64 << 10);
        let start = c.total_in();
        loop {
            let done = (c.total_in() - start) as usize;
            c.compress_vec(&input[done..], &mut out, flush).unwrap();
            if (c.total_in() - start) as usize == input.len() && out.len() < out.capacity() {
                return out;
            }
            out.reserve(64 << 10);
        }
    };
    let mib = vec![0u8; MIB];
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
    gz.extend(deflate(head, FlushCompress::Full));
    let block = deflate(&mib, FlushCompress::Full);
    assert_eq!(deflate(&mib, FlushCompress::Full), block, "a full flush resets the compressor");
    let (mut crc, mut zeros_crc) = (Crc::new(), Crc::new());
    crc.update(head);
    zeros_crc.update(&mib);
    // `head` is one 512-byte tar header; after it: the data, its padding, the two end blocks.
    let after_head = zeros.next_multiple_of(512) + 1024;
    let mut left = after_head;
    while left >= MIB as u64 {
        gz.extend(&block);
        crc.combine(&zeros_crc);
        left -= MIB as u64;
    }
    let tail = vec![0u8; left as usize];
    gz.extend(deflate(&tail, FlushCompress::Finish));
    crc.update(&tail);
    gz.extend(crc.sum().to_le_bytes());
    gz.extend(((head.len() as u64 + after_head) as u32).to_le_bytes());
    gz
}

#[test]
fn a_gzip_bomb_is_refused_in_bounded_memory() {
    let (_kd, key, public) = keys();
    let (_k2, _, other) = keys();
    // One entry of 1 GiB of zeros: about 1 MB of gzip, signed as okp signs.
    let mut h = tar::Header::new_gnu();
    h.set_path(format!("{NAME_3_9}/libs/kafka_2.13-3.9.2.jar")).unwrap();
    h.set_size(1 << 30);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let (_d, b) = signed_as_okp(&gzip_bomb(h.as_bytes(), 1 << 30), &key);
    let size = std::fs::metadata(&b).unwrap().len();
    assert!(size < 4 << 20, "{size}");

    let t = Instant::now();
    let o = okp_in_512_mib(&verify_args(&b, &public));
    eprintln!("a {size}-byte gzip of 1 GiB refused in {:.2?}", t.elapsed());
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("FAILED   archive") && stdout(&o).contains("a gzip bomb, not a bundle"),
        "{}",
        stdout(&o)
    );
    // Under another key it is not even decompressed.
    let o = okp_in_512_mib(&verify_args(&b, &other));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("skipped  archive"), "{}", stdout(&o));
    // Nor does --allow-unverified make install read more.
    let home = kafka_home("3.9.2");
    let args = [OsStr::new("install"), b.as_os_str(), OsStr::new("--kafka-home"), home.path().as_os_str()];
    let o = okp_in_512_mib(&[&args[..], &[OsStr::new("--allow-unverified")]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("a gzip bomb"), "{}", stderr(&o));
}

// ---- 1. The rollback script okp runs: its own, never the copy in the installation.

fn install_shared(home: &Path) -> Output {
    install(&shared_bundle(), home, Some(&shared_pub()), &[])
}

#[test]
fn okp_rollback_runs_its_own_script_not_the_copy_in_the_installation() {
    let home = kafka_home("3.9.2");
    let pristine = tree(home.path());
    assert_eq!(install_shared(home.path()).status.code(), Some(0));
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    std::fs::write(home.path().join(".okp-observer/rollback.sh"), format!("touch '{}'\nexit 0\n", ran.display()))
        .unwrap();
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!ran.exists(), "okp ran the rollback.sh it found in the installation");
    assert_eq!(tree(home.path()), pristine);
}

// ---- 2 and 6. One okp per installation; nothing left behind by a killed or interrupted install.

/// An `okp install` stopped at its first `cp` (a stand-in on PATH that sleeps)
/// in its own process group; it and its script are killed on drop.
struct Blocked {
    okp: std::process::Child,
    /// The pid of the install.sh shell (the script's process group with okp's fix).
    script: i32,
    _shims: tempfile::TempDir,
}

impl Blocked {
    fn start(home: &Path, tmp: &Path) -> Blocked {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let shims = tempfile::tempdir().unwrap();
        let started = shims.path().join("started");
        let real = stdout(&run(Command::new("sh").arg("-c").arg("command -v cp")));
        let cp = shims.path().join("cp");
        std::fs::write(
            &cp,
            format!(
                "#!/bin/sh\nif [ ! -e '{s}' ]; then echo \"$PPID\" > '{s}.tmp' && mv '{s}.tmp' '{s}'; exec sleep 300; fi\nexec {real} \"$@\"\n",
                s = started.display(),
                real = real.trim()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&cp, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", shims.path().display(), std::env::var("PATH").unwrap());
        let okp = install_cmd(home, tmp)
            .env("PATH", path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(shims.path().join("stderr")).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut b = Blocked { okp, script: 0, _shims: shims };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !started.exists() {
            if let Some(s) = b.okp.try_wait().unwrap() {
                panic!(
                    "the install ended ({s}) before its first cp: {}",
                    std::fs::read_to_string(b._shims.path().join("stderr")).unwrap()
                );
            }
            assert!(Instant::now() < deadline, "the install never reached its first cp");
            std::thread::sleep(Duration::from_millis(50));
        }
        b.script = std::fs::read_to_string(&started).unwrap().trim().parse().unwrap();
        b
    }

    fn pid(&self) -> i32 {
        self.okp.id() as i32
    }

    /// Whether every process of the script's group has ended within `secs`.
    fn script_gone_within(&self, secs: u64) -> bool {
        // SAFETY: signal 0 sends nothing.
        let gone = || unsafe { libc::kill(-self.script, 0) } != 0;
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !gone() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        gone()
    }

    /// SIGKILL to okp and to the script, as a host crash, an OOM kill or `systemctl kill` would.
    fn kill_all(&mut self) {
        for group in [self.pid(), self.script] {
            // SAFETY: kill(2) on process groups this test started.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        let _ = self.okp.wait();
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// `okp install` of the shared bundle into `home`, staging under `tmp`.
fn install_cmd(home: &Path, tmp: &Path) -> Command {
    let mut c = okp_bin();
    c.arg("install").arg(shared_bundle()).arg("--kafka-home").arg(home).arg("--pubkey").arg(shared_pub());
    c.env("TMPDIR", tmp);
    c
}

fn install_with_tmp(home: &Path, tmp: &Path) -> Output {
    within(&mut install_cmd(home, tmp), 120)
}

fn names_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn one_install_or_rollback_at_a_time_per_kafka_installation() {
    let home = kafka_home("3.9.2");
    let pristine = tree(home.path());
    let tmp = tempfile::tempdir().unwrap();
    let mut first = Blocked::start(home.path(), tmp.path());
    let holder = format!("another okp install or rollback (pid {})", first.pid());
    let o = install_with_tmp(home.path(), tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&holder) && stderr(&o).contains("nothing was changed"), "{}", stderr(&o));
    let o = within(okp_bin().arg("rollback").arg("--kafka-home").arg(home.path()), 60);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&holder), "{}", stderr(&o));

    // The holder dies (and its script): its lock dies with it; the file it wrote is reused.
    first.kill_all();
    assert!(home.path().join(".okp-observer.lock").is_file());
    let o = install_with_tmp(home.path(), tmp.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!home.path().join(".okp-observer.lock").exists(), "the lock file outlived its holder");
    assert_eq!(rollback(home.path(), &[]).status.code(), Some(0));
    assert_eq!(tree(home.path()), pristine);
}

#[test]
fn a_killed_or_interrupted_install_leaves_nothing_behind() {
    let home = kafka_home("3.9.2");
    let pristine = tree(home.path());
    let tmp = tempfile::tempdir().unwrap();

    // SIGKILL mid-way: nothing can clean up then, so the next install does.
    let mut killed = Blocked::start(home.path(), tmp.path());
    let staged = names_in(tmp.path());
    assert!(staged.len() == 1 && staged[0].starts_with("okp-install-"), "{staged:?}");
    killed.kill_all();
    let o = install_with_tmp(home.path(), tmp.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(names_in(tmp.path()), Vec::<String>::new(), "left in TMPDIR after the next install");
    assert!(
        stderr(&o).contains(&format!("left by an okp install (pid {}) that was killed", killed.pid())),
        "{}",
        stderr(&o)
    );
    assert_eq!(rollback(home.path(), &[]).status.code(), Some(0));
    assert_eq!(tree(home.path()), pristine);

    // SIGTERM to okp: it stops its script, removes its staging directory and exits 130.
    let mut stopped = Blocked::start(home.path(), tmp.path());
    // SAFETY: kill(2) on the okp this test started.
    unsafe { libc::kill(stopped.pid(), libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = stopped.okp.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "okp did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "{status}");
    assert_eq!(names_in(tmp.path()), Vec::<String>::new(), "okp left its staging directory on SIGTERM");
    assert!(stopped.script_gone_within(10), "the script's processes outlived okp");
    finish_then_roll_back(home.path(), tmp.path(), &pristine);
}

/// SIGKILL to okp alone (the OOM killer, `kill -9` of okp): no handler runs, and its script, in a
/// process group of its own, used to go on changing the installation after okp died. A sentinel
/// now stops the script's whole group; the next install finishes the job, rollback undoes it.
#[test]
fn a_script_does_not_outlive_an_okp_killed_with_sigkill() {
    let home = kafka_home("3.9.2");
    let pristine = tree(home.path());
    let tmp = tempfile::tempdir().unwrap();
    let mut killed = Blocked::start(home.path(), tmp.path());
    // SAFETY: kill(2) on the okp this test started (not its script).
    unsafe { libc::kill(killed.pid(), libc::SIGKILL) };
    let _ = killed.okp.wait();
    assert!(killed.script_gone_within(10), "the script's processes outlived an okp killed with SIGKILL");
    finish_then_roll_back(home.path(), tmp.path(), &pristine);
}

/// The next install succeeds, and a rollback leaves `home` as `pristine`.
fn finish_then_roll_back(home: &Path, tmp: &Path, pristine: &std::collections::BTreeMap<String, (Vec<u8>, u32)>) {
    let o = install_with_tmp(home, tmp);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rollback(home, &[]).status.code(), Some(0));
    assert_eq!(&tree(home), pristine);
}

// ---- 1. Backups and records okp did not write.

/// The bundle's jars: (file name, Maven Central sha256, patched sha256).
fn bundle_jars() -> Vec<(String, String, String)> {
    manifest_of(&shared_bundle())["jars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let name = j["path"].as_str().unwrap().strip_prefix("libs/").unwrap().to_string();
            (name, j["upstream"]["sha256"].as_str().unwrap().into(), j["sha256"].as_str().unwrap().into())
        })
        .collect()
}

fn sha256_file(p: &Path) -> String {
    stdout(&run(Command::new("sha256sum").arg(p)))[..64].to_string()
}

#[test]
fn install_refuses_a_backup_or_record_it_did_not_write() {
    let planted = |home: &Path, file: &str, bytes: &[u8]| {
        let p = home.join(".okp-observer").join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    let refused = |home: &Path, says: &str| {
        let before = tree(home);
        let o = install_shared(home);
        assert_eq!(o.status.code(), Some(2), "{says}: {}", stderr(&o));
        assert!(stderr(&o).contains(says) && stderr(&o).contains("nothing was changed"), "{says}: {}", stderr(&o));
        assert_eq!(tree(home), before, "{says}: changed");
    };
    // A backup of the core jar that is not the jar in libs/: once recorded as "the original".
    let home = kafka_home("3.9.2");
    planted(home.path(), "backup/kafka_2.13-3.9.2.jar", b"an attacker's kafka jar");
    refused(home.path(), "is not a copy of libs/kafka_2.13-3.9.2.jar");
    // A backup no jar of this bundle explains.
    let home = kafka_home("3.9.2");
    planted(home.path(), "backup/kafka-tools-3.9.2.jar", b"x");
    refused(home.path(), "is not the backup of a jar this bundle replaces");

    // An interrupted install's record naming a forged original, the forged jar as its backup.
    let home = kafka_home("3.9.2");
    planted(home.path(), "backup/kafka_2.13-3.9.2.jar", b"an attacker's kafka jar");
    let forged = sha256_file(&home.path().join(".okp-observer/backup/kafka_2.13-3.9.2.jar"));
    let mut record =
        format!("bundle={NAME_3_9}\nrelease=3.9.2\nmode=kraft\ntarget=linux-x86_64\npatch_set={}\n", patch_set());
    for (jar, upstream, patched) in bundle_jars() {
        let original = if jar.starts_with("kafka_2.13") { &forged } else { &upstream };
        record.push_str(&format!("jar={jar} {original} {patched}\n"));
    }
    planted(home.path(), "installing", record.as_bytes());
    refused(home.path(), "that is not the Maven Central jar");
    // The same record with the real original, and no backup: a genuine interrupted install, completed.
    let pristine = kafka_home("3.9.2");
    let home = kafka_home("3.9.2");
    let core_upstream = bundle_jars().into_iter().find(|j| j.0.starts_with("kafka_2.13")).unwrap().1;
    planted(home.path(), "installing", record.replace(&forged, &core_upstream).as_bytes());
    let o = install_shared(home.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rollback(home.path(), &[]).status.code(), Some(0));
    assert_eq!(tree(home.path()), tree(pristine.path()));
}

#[test]
fn rollback_refuses_a_record_it_cannot_read_as_its_own() {
    let home = kafka_home("3.9.2");
    let pristine = tree(home.path());
    assert_eq!(install_shared(home.path()).status.code(), Some(0));
    let rec = home.path().join(".okp-observer/installed");
    let real = std::fs::read_to_string(&rec).unwrap();
    let header: String = real.lines().filter(|l| !l.starts_with("jar=")).map(|l| format!("{l}\n")).collect();
    let first_jar = real.lines().find(|l| l.starts_with("jar=")).unwrap().to_string();
    let first_name = first_jar.split(' ').next().unwrap().strip_prefix("jar=").unwrap().to_string();
    for (case, text, says) in [
        ("no jar lines", header.clone(), "no jar= line: it names no jar to restore"),
        ("an unknown line", format!("{real}rm -rf /\n"), "not a line okp writes"),
        ("a path for a jar", real.replace(&first_name, "../bin/kafka-run-class.sh"), "not jar=NAME"),
        ("a jar twice", format!("{real}{first_jar}\n"), "twice"),
    ] {
        std::fs::write(&rec, &text).unwrap();
        let mid = tree(home.path());
        // Twice: the first refusal must not leave a state the second one acts on.
        for _ in 0..2 {
            let o = rollback(home.path(), &[]);
            assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("is not an install record okp wrote") && stderr(&o).contains(says),
                "{case}: {}",
                stderr(&o)
            );
            assert_eq!(tree(home.path()), mid, "{case}: changed (the backups must stay)");
        }
        let o = install_shared(home.path());
        assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
        assert_eq!(tree(home.path()), mid);
    }
    std::fs::write(&rec, &real).unwrap();
    // Both records.
    std::fs::write(home.path().join(".okp-observer/installing"), &real).unwrap();
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("okp never leaves both"), "{}", stderr(&o));
    std::fs::remove_file(home.path().join(".okp-observer/installing")).unwrap();
    // No record at all while libs/ holds the patched jars: the backups are the only originals, never deleted.
    std::fs::remove_file(&rec).unwrap();
    let mid = tree(home.path());
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("it may be the only copy of an original"), "{}", stderr(&o));
    assert_eq!(tree(home.path()), mid);
    // With the real record back, rollback restores byte for byte.
    std::fs::write(&rec, &real).unwrap();
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree(home.path()), pristine);
}

/// The pins, from the command line: each refuses the shared bundle when it does not hold (exit 1,
/// the pin and the bundle's value named) and lets it through when it does, on verify-bundle and
/// install alike.
#[test]
fn pins_on_the_command_line_refuse_a_replayed_bundle() {
    let (b, public) = (shared_bundle(), shared_pub());
    let zeros = "0".repeat(64);
    let refused: [(&str, &str, &str); 3] = [
        ("--not-before", "2099-01-01", "not-before"),
        ("--min-okp-version", "99.0.0", "okp"),
        ("--patch-set", &zeros, "patch"),
    ];
    for (flag, value, word) in refused {
        let o =
            okp_bin().arg("verify-bundle").arg(&b).arg("--pubkey").arg(&public).args([flag, value]).output().unwrap();
        let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {out}");
        assert!(out.to_lowercase().contains(word), "{flag} {value}: {out}");
        let home = tempfile::tempdir().unwrap();
        let o = okp_bin()
            .arg("install")
            .arg(&b)
            .arg("--kafka-home")
            .arg(home.path())
            .arg("--pubkey")
            .arg(&public)
            .arg("--allow-unverified")
            .args([flag, value])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "install {flag} {value}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "install {flag} wrote into the home");
    }
    let hash = patch_set();
    let o = okp_bin()
        .arg("verify-bundle")
        .arg(&b)
        .arg("--pubkey")
        .arg(&public)
        .args(["--not-before", "2000-01-01", "--min-okp-version", "0.1.0", "--patch-set", &hash])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    let o = okp_bin()
        .arg("verify-bundle")
        .arg(&b)
        .arg("--pubkey")
        .arg(&public)
        .args(["--not-before", "yesterday"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "a malformed pin is bad input");
}
