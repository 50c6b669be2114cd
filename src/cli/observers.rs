//! The `okp observers` subcommands' flags: status, promote, demote, watch, and the ways they
//! reach the brokers and the nodes' observer.ids files.
//!
//! Not here: reading or writing those files, the watchdog's policy (`observers`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::observers::watch::policy::TopicPolicy;
use crate::observers::watch::Policy;
use crate::observers::StatusFormat;

#[derive(Args, Debug)]
pub struct ObserversArgs {
    #[command(subcommand)]
    pub command: ObserversCommand,
}

#[derive(Subcommand, Debug)]
pub enum ObserversCommand {
    /// Per partition, each replica's role, log end offset, lag and caught-up state.
    ///
    /// Which replicas are observers comes from --observers, --observers-file or
    /// the nodes' own files (--node, --nodes); the output names the source.
    /// Exit 1 when an observer is found inside an ISR or leading.
    Status(ObserversStatusArgs),
    /// Make broker N a normal replica: remove it from observer.ids on every node (controllers first).
    Promote(ObserversChangeArgs),
    /// Make broker N an observer: add it to observer.ids on every node (brokers first).
    Demote(ObserversChangeArgs),
    /// The opt-in auto-promotion watchdog: promote a caught-up observer when a policy says so, demote it when the condition has cleared.
    ///
    /// Off unless --enable (or `enable: true` in --config). Every decision is
    /// one JSON line in --audit-log; what it promoted is in --state. Read
    /// docs/observers-watch.md (OBSERVERS-WATCH.md in a bundle) first.
    /// Exit 0 (--once: the scan ran), 1 an action not converged (--once), 2 bad
    /// input, a second instance or a damaged state, 3 the cluster, a transport
    /// or the disk failed, 130 stopped by SIGTERM/SIGINT.
    Watch(ObserversWatchArgs),
    /// Lay a topic out by rack: primaries in some racks, observers in others, and its topic rule.
    ///
    /// Prints the plan (each partition's replicas, the rule, the reassignment JSON) and changes
    /// nothing unless --execute: then it writes the rule on every node, waits for the nodes to
    /// re-read it, moves the replicas with AlterPartitionReassignments and waits until the
    /// cluster shows the layout. Exit 0 placed (or planned), 1 not placed within --timeout,
    /// 2 bad input or a layout the racks cannot hold (naming the rack), 3 the cluster, a
    /// transport or a refused reassignment.
    Place(ObserversPlaceArgs),
    /// Finish or undo a change of observer.ids that an earlier okp did not finish (SIGKILL, a crash).
    ///
    /// promote, demote and place record what they write before their first write and remove the
    /// record once every node is written or put back; a change of the same nodes finds a record
    /// left behind, says what each node holds, and refuses until this has run. --finish writes the
    /// new file where a node still holds the old one, --undo the old where it holds the new, each
    /// by compare-and-swap. Exit 0 done (or nothing recorded), 1 a node holds neither, 3 a transport.
    Recover(ObserversRecoverArgs),
}

#[derive(Args, Debug)]
#[group(id = "way", required = true, multiple = false, args = ["finish", "undo"])]
pub struct ObserversRecoverArgs {
    /// Write the recorded change's new file on every node that still holds its old one.
    #[arg(long)]
    pub finish: bool,
    /// Put the recorded change's old file back on every node that holds its new one.
    #[arg(long)]
    pub undo: bool,
    /// Print what would be written to each node, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub files: NodeFiles,
}

#[derive(Args, Debug)]
pub struct ObserversPlaceArgs {
    /// The topic to lay out (it must exist).
    #[arg(long, value_name = "TOPIC")]
    pub topic: String,
    /// RACK:COUNT primaries in broker.rack RACK (repeatable; listed first in each partition's replicas, so the preferred leader is one).
    #[arg(long = "replicas", value_name = "RACK:COUNT", required = true)]
    pub replicas: Vec<crate::observers::place::Want>,
    /// RACK:COUNT observers in broker.rack RACK (repeatable); the topic rule names the brokers chosen (see --rule-by).
    #[arg(long = "observers", value_name = "RACK:COUNT")]
    pub observers: Vec<crate::observers::place::Want>,
    /// How the topic rule names the observers: `broker`, the ids chosen (a later promote --topic
    /// can take one out), or `rack`, the --observers racks (`rack:west`: any broker of the rack
    /// that hosts the topic observes it, today's and tomorrow's; one broker's promotion is then a
    /// hand edit of the rule).
    #[arg(long, value_enum, value_name = "HOW", default_value = "broker")]
    pub rule_by: crate::observers::place::RuleBy,
    /// Write the rule and move the replicas (without it: print the plan, change nothing).
    #[arg(long)]
    pub execute: bool,
    /// Seconds to wait for the cluster to show the layout.
    #[arg(long, value_name = "S", default_value_t = 300)]
    pub timeout: u64,
    #[command(flatten)]
    pub bootstrap: Bootstrap,
    #[command(flatten)]
    pub files: NodeFiles,
}

#[derive(Args, Debug)]
pub struct Bootstrap {
    /// Brokers to ask for metadata: HOST:PORT[,HOST:PORT...] (PLAINTEXT listeners).
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',', required = true)]
    pub bootstrap: Vec<String>,
}

#[derive(Args, Debug)]
pub struct NodeFiles {
    /// A broker's observer.ids: ID=PATH (repeatable).
    #[arg(long = "node", value_name = "ID=PATH")]
    pub node: Vec<String>,
    /// A KRaft controller's observer.ids: ID=PATH (repeatable).
    #[arg(long = "controller-node", value_name = "ID=PATH")]
    pub controller_node: Vec<String>,
    /// A YAML list of nodes: {id, role: broker|controller, path, host}.
    #[arg(long, value_name = "FILE")]
    pub nodes: Option<PathBuf>,
    /// How the files are reached: local paths (the default), or the --read-cmd/--write-cmd templates.
    #[arg(long, value_enum, value_name = "KIND")]
    pub transport: Option<crate::observers::watch::config::TransportName>,
    /// With --transport command: prints a node's file, e.g. 'ssh {host} cat {path}' ({host}, {path}, {id} are filled in, shell-quoted).
    #[arg(long, value_name = "TEMPLATE")]
    pub read_cmd: Option<String>,
    /// With --transport command: replaces a node's file atomically with stdin; `{cas}` is okp's
    /// compare-and-swap script (one word), so 'ssh {host} {cas}' replaces it only if it still holds
    /// what okp read (docs/hosts.md).
    #[arg(long, value_name = "TEMPLATE")]
    pub write_cmd: Option<String>,
    /// With --transport command: seconds one template run may take before okp kills it (and
    /// everything it started) and names the node (default 30; 1 to 3600).
    #[arg(long, value_name = "S")]
    pub transport_timeout: Option<u64>,
}

#[derive(Args, Debug)]
pub struct ObserversStatusArgs {
    #[command(flatten)]
    pub bootstrap: Bootstrap,
    /// Only this topic (default: every topic).
    #[arg(long, value_name = "TOPIC")]
    pub topic: Option<String>,
    /// The observer ids, e.g. 4,5 (instead of reading the nodes' files).
    #[arg(long, value_name = "IDS", conflicts_with_all = ["observers_file", "node", "controller_node", "nodes"])]
    pub observers: Option<String>,
    /// An observer.ids file to take the ids from.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["node", "controller_node", "nodes"])]
    pub observers_file: Option<PathBuf>,
    #[command(flatten)]
    pub files: NodeFiles,
    /// A replica this many offsets behind its leader still counts as caught up.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_lag: i64,
    /// The output: a table for people, json for programs, or prometheus (the text exposition
    /// format, for node_exporter's textfile collector; docs/observers.md).
    #[arg(long, value_enum, default_value_t = StatusFormat::Table)]
    pub format: StatusFormat,
}

#[derive(Args, Debug)]
pub struct ObserversChangeArgs {
    /// The broker id to promote or demote.
    #[arg(long, value_name = "N")]
    pub broker: i32,
    /// Change this topic alone: N becomes a full replica (promote) or an observer (demote) of it
    /// through its exact `topic:` rule in observer.ids (written when the topic has none); the
    /// pre-checks and the wait look at its partitions only (docs/observer-ids.md, "Topic rules").
    #[arg(long, value_name = "TOPIC")]
    pub topic: Option<String>,
    #[command(flatten)]
    pub bootstrap: Bootstrap,
    #[command(flatten)]
    pub files: NodeFiles,
    /// Promote only: check N's log against every live replica's for every partition it replicates, not only the leaderless ones.
    #[arg(long)]
    pub for_unclean_election: bool,
    /// Waive the min.insync.replicas and log-end-offset refusals (never the leadership one).
    #[arg(long)]
    pub force: bool,
    /// Print the pre-checks and the plan (each file, old → new), change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds to wait for the cluster to show the change.
    #[arg(long, value_name = "S", default_value_t = 120)]
    pub timeout: u64,
}

#[derive(Args, Debug)]
pub struct ObserversWatchArgs {
    /// Let the watchdog run at all (rule 1: without it, or `enable: true` in --config, it refuses to start).
    #[arg(long)]
    pub enable: bool,
    /// A YAML file of settings, each key a flag's name (enable, bootstrap, nodes, transport, read-cmd, write-cmd, transport-timeout, policy, topic-policies, max-lag, interval, cooldown, confirm-interval, timeout, state, audit-log, dry-run); flags win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Trace every decision (and run the pre-checks), write nothing: no observer.ids, no state.
    #[arg(long)]
    pub dry_run: bool,
    /// One scan, then exit (for cron and tests).
    #[arg(long)]
    pub once: bool,
    /// Brokers to ask for metadata: HOST:PORT[,HOST:PORT...] (PLAINTEXT listeners).
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',')]
    pub bootstrap: Vec<String>,
    #[command(flatten)]
    pub files: NodeFiles,
    /// When to promote (default under-min-isr), for every topic no --topic-policy selects: under-min-isr (ISR below min.insync.replicas), leader-unavailable (no leader), under-replicated (ISR below the non-observer replicas), never (no topic is a reason to promote).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub policy: Option<Policy>,
    /// The policy of the topics SELECTOR selects, written as in observer.ids: topic:NAME, prefix:P or regex:R (repeatable; the name wins over the longest prefix, which wins over the first matching regex in the order given; any replaces the config's topic-policies), e.g. topic:audit=under-replicated, prefix:tmp-=never.
    #[arg(long = "topic-policy", value_name = "SELECTOR=POLICY", value_parser = TopicPolicy::parse_flag)]
    pub topic_policy: Vec<TopicPolicy>,
    /// An observer this many offsets behind is still caught up (default 0).
    #[arg(long, value_name = "N")]
    pub max_lag: Option<i64>,
    /// Seconds between scans (default 10).
    #[arg(long, value_name = "S")]
    pub interval: Option<u64>,
    /// Seconds between two actions, against flapping (default 300).
    #[arg(long, value_name = "S")]
    pub cooldown: Option<u64>,
    /// Seconds between the two looks that must both find a condition cleared before a demotion (default 5).
    #[arg(long, value_name = "S")]
    pub confirm_interval: Option<u64>,
    /// Seconds to wait for the cluster to show a change (default 120).
    #[arg(long, value_name = "S")]
    pub timeout: Option<u64>,
    /// What the watchdog promoted, and its last action (default /var/lib/okp/observer-watch.json; locked through FILE.lock).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// One JSON line per decision, appended (default /var/log/okp/observer-watch.log).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
}
