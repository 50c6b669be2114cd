//! Class-data sharing in a running cluster: the tool JVMs' archive (trained by one tool call on
//! first use) and the servers' (mapped when there, else trained from the first broker's and
//! controller's class lists and dumped in the background), and the JVM flags of each start.
//!
//! Not here: the servers' archive itself, its key, claim and dump (`server_cds`); where an archive
//! lives and the JVM's flags (`jvm::cds`).

use std::path::PathBuf;
use std::time::Duration;

use super::node::Role;
use super::tools::Tool;
use super::{args, server_cds, server_heap_gc, Cluster, BROKERS, CONTROLLERS};
use crate::error::Result;

/// Where the servers' class-data-sharing archive stands in this cluster.
pub(super) enum ServerCds {
    /// None for this runtime (server_cds.rs; the reason was journaled).
    Off,
    /// Servers start with the archive.
    Using,
    /// `nodes` write the classes they load to `lists` during the cluster's start.
    Training { lists: Vec<(i32, PathBuf)> },
    /// The archive is being dumped from those lists.
    Dumping(std::thread::JoinHandle<Result<server_cds::Dumped>>),
    /// Another lane of this run dumps it: taken up once it is there.
    Waiting,
}

impl Cluster {
    /// On the first run with this classpath: one tool call that dumps the
    /// classes it loaded into a CDS archive, which every later tool JVM maps
    /// (tool start-up dominates a suite's wall time).
    pub(super) fn train_tool_cds(&mut self) {
        let Some((archive, true)) = self.rt.tool_cds.clone() else { return };
        let staging = crate::fsx::staging(&archive);
        let boot = self.bootstrap(&[]);
        self.tools.jvm.push(crate::jvm::cds::dump_at_exit_flag(&staging));
        let out = self.tools.run(
            Tool::Topics,
            &args(&["--bootstrap-server", &boot, "--list"]),
            None,
            Duration::from_secs(60),
        );
        self.tools.jvm.pop();
        if out.is_ok_and(|o| o.ok()) && std::fs::rename(&staging, &archive).is_ok() {
            self.tools.jvm.push(crate::jvm::cds::archive_flag(&archive));
            self.journal.note(&format!("tool JVMs now map the class-data-sharing archive {}", archive.display()));
        } else {
            let _ = std::fs::remove_file(&staging);
        }
    }

    /// Before the first start: map the servers' archive when it is there; else have the first
    /// broker (and in KRaft the first controller) list the classes they load, unless another
    /// lane of this run does.
    pub(super) fn plan_server_cds(&mut self) {
        let plan = match &self.rt.server_cds {
            Ok(plan) => plan.clone(),
            Err(why) => {
                self.journal.note(&format!("servers: the release's classpath order; {why}"));
                return;
            }
        };
        if !plan.last.is_empty() {
            let names: Vec<String> =
                plan.last.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
            self.journal.note(&format!(
                "servers: the jars the bundle replaces come last on the classpath ({}); none of their classes or resources is in another jar",
                names.join(", ")
            ));
        }
        self.server_cds = if plan.ready() {
            self.journal.note(&format!("servers map the class-data-sharing archive {}", plan.archive.display()));
            ServerCds::Using
        } else if server_cds::claim(&plan.archive) {
            let mut lists = Vec::new();
            for id in [BROKERS[0], CONTROLLERS[0]] {
                if self.nodes.iter().any(|n| n.id == id && n.role != Role::ZooKeeper) {
                    lists.push((id, self.run_dir.join(format!("cds-{}.classlist", self.node(id).name))));
                }
            }
            ServerCds::Training { lists }
        } else {
            ServerCds::Waiting
        };
    }

    /// After the start: dump the servers' archive from the class lists, in the background.
    pub(super) fn dump_server_cds(&mut self) {
        let (ServerCds::Training { lists }, Ok(plan)) = (&self.server_cds, &self.rt.server_cds) else { return };
        let lists: Vec<PathBuf> = lists.iter().map(|(_, p)| p.clone()).collect();
        let (java, plan, scratch) = (self.rt.java.clone(), plan.clone(), self.run_dir.clone());
        let jvm = server_heap_gc();
        self.journal.note(&format!(
            "servers: dumping the class-data-sharing archive {} from {} in the background",
            plan.archive.display(),
            lists.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
        self.server_cds = ServerCds::Dumping(std::thread::spawn(move || {
            let r = server_cds::dump(&java, &jvm, &plan, &lists, &scratch);
            server_cds::release(&plan.archive);
            r
        }));
    }

    /// The JVM flags of `id`'s next start for class-data sharing, taking up an archive that has
    /// been dumped since the last start.
    pub(super) fn server_cds_flags(&mut self, id: Option<i32>) -> Vec<String> {
        let Ok(plan) = self.rt.server_cds.clone() else { return Vec::new() };
        match std::mem::replace(&mut self.server_cds, ServerCds::Off) {
            ServerCds::Dumping(h) if h.is_finished() => match h.join() {
                Ok(Ok(d)) => {
                    self.journal.note(&format!(
                        "servers: dumped {} classes into {} in {:.1} s; servers started from now on map it",
                        d.classes,
                        plan.archive.display(),
                        d.seconds
                    ));
                    self.server_cds = ServerCds::Using;
                }
                Ok(Err(e)) => self.journal.note(&format!("servers: no class-data-sharing archive: {e}")),
                Err(_) => self.journal.note("servers: the archive's dump panicked; no class-data-sharing archive"),
            },
            ServerCds::Waiting if plan.ready() => {
                self.journal.note(&format!("servers map the class-data-sharing archive {}", plan.archive.display()));
                self.server_cds = ServerCds::Using;
            }
            other => self.server_cds = other,
        }
        match &self.server_cds {
            ServerCds::Using => plan.flags(),
            ServerCds::Training { lists } => lists
                .iter()
                .filter(|(node, _)| Some(*node) == id)
                .map(|(_, list)| format!("-XX:DumpLoadedClassList={}", list.display()))
                .collect(),
            _ => Vec::new(),
        }
    }
}
