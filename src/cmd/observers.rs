//! `okp observers status|promote|demote|watch`: which nodes' files to read
//! and how, then the library call.
//!
//! Not here: the snapshot and its rows (`observers::view`), the change with
//! its pre-checks and waits (`observers::change`), transports
//! (`observers::transport`), the watchdog's settings and rules
//! (`observers::watch`).

use crate::cli::{NodeFiles, ObserversArgs, ObserversChangeArgs, ObserversCommand, ObserversWatchArgs};
use crate::error::{Error, Outcome, Result};
use crate::observers::change::{self, Direction};
use crate::observers::transport::{self as t, NodeRole, NodeSpec, Transport};
use crate::observers::watch::config::{self, TransportName};
use crate::observers::{self, StatusArgs};

pub fn run(a: ObserversArgs) -> Result<Outcome> {
    match a.command {
        ObserversCommand::Status(a) => {
            let (nodes, transport) = resolve(&a.files)?;
            let set = change::observer_set(a.observers.as_deref(), a.observers_file.as_deref(), &nodes, &transport)?;
            observers::recover::note_unfinished(&nodes, &transport)?;
            observers::status(&StatusArgs {
                bootstrap: a.bootstrap.bootstrap,
                topic: a.topic,
                observers: set,
                max_lag: a.max_lag,
                format: a.format,
                color: crate::out::stdout_styled(),
            })
        }
        ObserversCommand::Promote(a) => change_one(a, Direction::Promote),
        ObserversCommand::Demote(a) => {
            if a.for_unclean_election {
                return Err(Error::Usage("--for-unclean-election belongs to promote".into()));
            }
            change_one(a, Direction::Demote)
        }
        ObserversCommand::Watch(a) => watch(a),
        ObserversCommand::Recover(a) => {
            let (nodes, transport) = resolve(&a.files)?;
            observers::recover::run(&nodes, &transport, a.finish, a.dry_run)
        }
        ObserversCommand::Place(a) => {
            let (nodes, transport) = resolve(&a.files)?;
            let args = observers::place::Args {
                topic: a.topic,
                primaries: a.replicas,
                observers: a.observers,
                rule_by: a.rule_by,
                execute: a.execute,
                timeout: std::time::Duration::from_secs(a.timeout),
                bootstrap: a.bootstrap.bootstrap,
            };
            observers::place::run(&nodes, &transport, &args)
        }
    }
}

/// The watchdog: its flags over its config file; the nodes from the flags if
/// they name any, else from the file (never a mix of the two).
fn watch(a: ObserversWatchArgs) -> Result<Outcome> {
    let file = a.config.as_deref().map(config::load).transpose()?;
    let flags = config::File {
        enable: a.enable.then_some(true),
        dry_run: a.dry_run.then_some(true),
        bootstrap: Some(a.bootstrap).filter(|b| !b.is_empty()),
        nodes: a.files.nodes.clone(),
        transport: a.files.transport,
        read_cmd: a.files.read_cmd.clone(),
        write_cmd: a.files.write_cmd.clone(),
        transport_timeout: a.files.transport_timeout,
        policy: a.policy,
        max_lag: a.max_lag,
        interval: a.interval,
        cooldown: a.cooldown,
        confirm_interval: a.confirm_interval,
        timeout: a.timeout,
        state: a.state,
        audit_log: a.audit_log,
        topic_policies: Some(a.topic_policy).filter(|l| !l.is_empty()),
    };
    let settings = config::resolve(&flags, a.once, a.config.as_deref().zip(file.as_ref()))?;
    let f = &a.files;
    let flags_name_nodes = f.nodes.is_some()
        || !f.node.is_empty()
        || !f.controller_node.is_empty()
        || f.transport.is_some()
        || f.read_cmd.is_some()
        || f.write_cmd.is_some()
        || f.transport_timeout.is_some();
    let files = match &file {
        Some(c) if !flags_name_nodes => NodeFiles {
            node: vec![],
            controller_node: vec![],
            nodes: c.nodes.clone(),
            transport: c.transport,
            read_cmd: c.read_cmd.clone(),
            write_cmd: c.write_cmd.clone(),
            transport_timeout: c.transport_timeout,
        },
        _ => a.files,
    };
    let (nodes, transport) = resolve(&files)?;
    observers::watch::run(&nodes, &transport, &settings)
}

fn change_one(a: ObserversChangeArgs, direction: Direction) -> Result<Outcome> {
    let (nodes, transport) = resolve(&a.files)?;
    let args = change::Args {
        ask: change::Ask { broker: a.broker, direction, topic: a.topic, restore_rule: false },
        for_unclean: a.for_unclean_election,
        force: a.force,
        dry_run: a.dry_run,
        timeout: std::time::Duration::from_secs(a.timeout),
        bootstrap: a.bootstrap.bootstrap,
    };
    change::run(&nodes, &transport, &args)
}

/// The nodes (from --nodes, --node, --controller-node) and how their files are reached.
fn resolve(f: &NodeFiles) -> Result<(Vec<NodeSpec>, Transport)> {
    let mut nodes = Vec::new();
    if let Some(file) = &f.nodes {
        nodes.extend(t::load_nodes_file(file)?);
    }
    for n in &f.node {
        nodes.push(t::parse_node_flag(n, NodeRole::Broker)?);
    }
    for n in &f.controller_node {
        nodes.push(t::parse_node_flag(n, NodeRole::Controller)?);
    }
    let timeout = match f.transport_timeout {
        None => t::DEFAULT_TIMEOUT,
        Some(s @ 1..=3600) => std::time::Duration::from_secs(s),
        Some(s) => return Err(Error::Usage(format!("--transport-timeout {s}: expected 1 to 3600 seconds"))),
    };
    let transport = match (f.transport.unwrap_or(TransportName::Local), &f.read_cmd, &f.write_cmd) {
        (TransportName::Local, None, None) if f.transport_timeout.is_none() => Transport::Local,
        (TransportName::Local, None, None) => {
            return Err(Error::Usage("--transport-timeout needs --transport command".into()))
        }
        (TransportName::Local, _, _) => {
            return Err(Error::Usage("--read-cmd and --write-cmd need --transport command".into()))
        }
        (TransportName::Command, Some(r), Some(w)) => Transport::Command { read: r.clone(), write: w.clone(), timeout },
        (TransportName::Command, _, _) => {
            return Err(Error::Usage("--transport command needs both --read-cmd and --write-cmd".into()))
        }
    };
    Ok((nodes, transport))
}
