//! A nodes file written by an attacker cannot run anything through the
//! command transport: hosts and paths are checked when the file is loaded
//! (docs/observers-transport.md), before `observers status` or `observers
//! promote --dry-run` runs a read template, so each hostile entry is refused
//! with exit 2, the node and the field named, and the file its injection
//! would create never appears.
//!
//! Both commands run the read template for every node before they contact
//! the cluster (src/observers/change/: `run`, `observer_set`): the last test
//! shows it with a harmless template, so a missing marker above means the
//! value was refused, not that the shell was never reached.

use crate::common::*;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// Refuses connections: a command that gets as far as the cluster exits 3.
const BOOTSTRAP: &str = "127.0.0.1:1";

fn observers(sub: &[&str], nodes: &Path, read: &str, write: &str) -> Output {
    let mut c = okp();
    c.arg("observers").args(sub).args(["--bootstrap", BOOTSTRAP, "--nodes"]).arg(nodes);
    c.args(["--transport", "command", "--read-cmd", read, "--write-cmd", write]);
    c.timeout(Duration::from_secs(60)).output().unwrap()
}

const PROMOTE: &[&str] = &["promote", "--broker", "4", "--dry-run"];
const STATUS: &[&str] = &["status"];

/// Templates that put the values in every kind of place: unquoted, inside
/// double quotes of a nested `sh -c`, after a `;`, as ssh's destination.
const TEMPLATES: &[(&str, &str)] = &[
    (r#"sh -c "cat {path}" ; echo {host} >/dev/null"#, r#"sh -c "cat > {path}""#),
    ("cat {path} # {host} {id}", "cat > {path}"),
    ("ssh -o BatchMode=yes -o ConnectTimeout=1 {host} cat {path}", "ssh {host} 'cat > {path}'"),
];

#[test]
fn hostile_hosts_and_paths_are_refused_before_any_shell_runs() {
    let t = tempfile::tempdir().unwrap();
    let ids = t.path().join("observer.ids");
    std::fs::write(&ids, "4\n").unwrap();
    let marker = t.path().join("pwned");
    let (ids, m) = (ids.display().to_string(), marker.display().to_string());
    // (host, path, the field that must be named): YAML single-quoted, so the text is taken as is.
    let cases: Vec<(String, String, &str)> = vec![
        // b) an ssh option through the documented `ssh {host} cat {path}`
        (format!("-oProxyCommand=touch {m}"), ids.clone(), "`host`"),
        (format!("$(touch {m})"), ids.clone(), "`host`"),
        (format!("`touch {m}`"), ids.clone(), "`host`"),
        (format!("b4;touch {m}"), ids.clone(), "`host`"),
        (format!("b4\" ; touch {m} ; \""), ids.clone(), "`host`"),
        // a) `{path}` as the host was filled again with the path, outside the host's quotes
        ("{path}".into(), ids.clone(), "`host`"),
        ("{path}".into(), format!("{ids}$(touch {m})"), "`path`"),
        ("b4".into(), format!("{ids}$(touch {m})"), "`path`"),
        ("b4".into(), format!("{ids}`touch {m}`"), "`path`"),
        ("b4".into(), format!("{ids};touch {m}"), "`path`"),
        ("b4".into(), format!("{ids}\" ; touch {m} ; \""), "`path`"),
        ("b4".into(), format!("{ids}{{id}}$(touch {m})"), "`path`"),
        ("b4".into(), format!("-oProxyCommand=touch {m}"), "`path`"),
        ("b4".into(), format!("{}/../{}", t.path().display(), "observer.ids"), "`path`"),
    ];
    let nodes = t.path().join("nodes.yaml");
    let mut runs = 0;
    for (host, path, field) in &cases {
        let yaml = format!("- {{id: 4, path: '{}', host: '{}'}}\n", path.replace('\'', "''"), host.replace('\'', "''"));
        std::fs::write(&nodes, &yaml).unwrap();
        for (read, write) in TEMPLATES {
            for sub in [PROMOTE, STATUS] {
                let o = observers(sub, &nodes, read, write);
                let err = stderr(&o);
                assert!(!marker.exists(), "{sub:?} {read:?} with {yaml:?} ran the injection: {err}");
                assert_eq!(o.status.code(), Some(2), "{sub:?} {read:?} with {yaml:?}: {err}");
                let at = format!("{}:1:", nodes.display());
                assert!(err.contains(&at) && err.contains(&format!("broker 4: {field} ")), "{yaml:?}: {err}");
                runs += 1;
            }
        }
    }
    assert_eq!(runs, cases.len() * TEMPLATES.len() * 2);
    // A newline in a value, written as a YAML escape.
    std::fs::write(&nodes, format!("- {{id: 4, path: \"{ids}\\ntouch {m}\", host: b4}}\n")).unwrap();
    let o = observers(PROMOTE, &nodes, TEMPLATES[0].0, TEMPLATES[0].1);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("broker 4: `path`") && stderr(&o).contains("control character"), "{}", stderr(&o));
    assert!(!marker.exists());
}

#[test]
fn the_read_template_runs_before_the_cluster_is_asked() {
    let t = tempfile::tempdir().unwrap();
    let ids = t.path().join("observer.ids");
    std::fs::write(&ids, "4\n").unwrap();
    let nodes = t.path().join("nodes.yaml");
    std::fs::write(&nodes, format!("nodes:\n  - {{id: 4, path: {}, host: '[::1]'}}\n", ids.display())).unwrap();
    for (sub, name) in [(PROMOTE, "promote"), (STATUS, "status")] {
        let ran = t.path().join(format!("ran-{name}"));
        // The host and path arrive as one word each: the template records them.
        let read = format!("printf '%s|%s|%s' {{host}} {{path}} {{id}} > {}; cat {{path}}", ran.display());
        let o = observers(sub, &nodes, &read, "cat > {path}");
        assert_eq!(o.status.code(), Some(3), "{name}: the bootstrap server refuses: {}", stderr(&o));
        let got =
            std::fs::read_to_string(&ran).unwrap_or_else(|e| panic!("{name}: the read template did not run ({e})"));
        assert_eq!(got, format!("[::1]|{}|4", ids.display()), "{name}");
    }
}

/// A read template whose remote shell prints a banner on stdout before the file: okp took the
/// banner for the file's text and wrote it back into observer.ids. Now promote, demote (with
/// `--force` too) and place refuse to plan from it, exit 1 before the cluster is asked, naming
/// the node, its file, the line and the stray text; the file is untouched.
#[test]
fn a_banner_before_the_file_is_refused_for_writing() {
    let t = tempfile::tempdir().unwrap();
    let ids = t.path().join("observer.ids");
    std::fs::write(&ids, "4\n").unwrap();
    let nodes = t.path().join("nodes.yaml");
    std::fs::write(&nodes, format!("nodes:\n  - {{id: 7, path: {}, host: host7}}\n", ids.display())).unwrap();
    let read = "printf 'Welcome to host7\\n'; cat {path}";
    for sub in [
        &["promote", "--broker", "4", "--dry-run"][..],
        &["demote", "--broker", "5", "--force"],
        &["demote", "--broker", "5", "--topic", "orders"],
    ] {
        let o = observers(sub, &nodes, read, "cat > {path}");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{sub:?}: {err}");
        let want = format!(
            "broker 7 (host7:{}): observer.ids line 1: `Welcome`, `to`, `host7`: not broker ids, text the registries ignore",
            ids.display()
        );
        assert!(err.contains(&want), "{sub:?}: {err}");
        assert!(err.contains("--force does not override this"), "{sub:?}: {err}");
        assert_eq!(std::fs::read_to_string(&ids).unwrap(), "4\n", "{sub:?}");
    }
}
