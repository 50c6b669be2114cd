//! The Ansible role okp ships (contrib/ansible/okp_observer), its example playbook, its upgrade
//! play (upgrade.yml) and their inventories: `ansible-playbook --syntax-check` with the real
//! ansible-core scripts/setup.sh installs, and `ansible-lint` (production profile) where it
//! installed. The role's live roll on
//! separate hosts is the HOSTS scenario (`okp verify --scenarios HOSTS`, ci/okp-hosts.yml).

use crate::common::*;

use std::path::PathBuf;
use std::process::Command;

/// A tool of one of setup.sh's virtualenvs, or on PATH.
fn tool(venv: &str, name: &str) -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let p = home.join(".local/share/okp").join(venv).join("bin").join(name);
    if p.is_file() {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()))
}

fn ansible_dir() -> PathBuf {
    repo_root().join("contrib/ansible")
}

#[test]
fn the_playbook_and_role_pass_ansible_playbooks_syntax_check() {
    let Some(bin) = tool("venv", "ansible-playbook") else {
        eprintln!("SKIPPED: ansible-playbook is not installed (scripts/setup.sh installs ansible-core)");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    for (inventory, playbook) in
        [("inventory.example.ini", "playbook.yml"), ("inventory.upgrade.example.ini", "upgrade.yml")]
    {
        let o = Command::new(&bin)
            .current_dir(ansible_dir())
            .args(["-i", inventory, "--syntax-check", playbook])
            .env("ANSIBLE_ROLES_PATH", ansible_dir())
            .env("ANSIBLE_HOME", home.path())
            .env("ANSIBLE_LOCAL_TEMP", home.path().join("tmp"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(&format!("playbook: {playbook}")), "{}", stdout(&o));
    }
    // The check can fail: a task that names a module ansible-core does not have is refused.
    let bad = tempfile::tempdir().unwrap();
    copy_into(&ansible_dir(), bad.path());
    let tasks = bad.path().join("okp_observer/tasks/main.yml");
    let text =
        std::fs::read_to_string(&tasks).unwrap().replace("ansible.builtin.fail:", "ansible.builtin.no_such_module:");
    std::fs::write(&tasks, text).unwrap();
    let o = Command::new(&bin)
        .current_dir(bad.path())
        .args(["-i", "inventory.example.ini", "--syntax-check", "playbook.yml"])
        .env("ANSIBLE_ROLES_PATH", bad.path())
        .env("ANSIBLE_HOME", home.path())
        .env("ANSIBLE_LOCAL_TEMP", home.path().join("tmp"))
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn the_role_passes_ansible_lint_production_profile() {
    let Some(bin) = tool("lint-venv", "ansible-lint") else {
        eprintln!("SKIPPED: ansible-lint did not install here (scripts/setup.sh tries)");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    copy_into(&ansible_dir(), work.path());
    let o = Command::new(&bin)
        .current_dir(work.path())
        .args(["--offline", "--profile", "production", "--nocolor", "playbook.yml", "upgrade.yml", "okp_observer"])
        .env("ANSIBLE_ROLES_PATH", work.path())
        .env("ANSIBLE_HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("0 failure(s), 0 warning(s)") || stdout(&o).contains("0 failure(s), 0 warning(s)"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
}
