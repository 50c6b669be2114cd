//! A second release on the same cluster, for the UPGRADE scenario: the release the cluster
//! started on (A) and the one it is rolled to (B), node by node, as an operator does it. Each
//! node moved to B gets a Kafka home of its own laid out with B's jars and B's signed bundle
//! installed by `okp install`, beside its home on A, which is kept untouched: a node rolled back
//! before the finalisation simply starts from its A home again. A node on B starts with B's
//! classpath and B's logging configuration (log4j 1 up to 3.9, log4j 2 from 4.0), and without the
//! servers' class-data-sharing archive (dumped from A's jars).
//!
//! Not here: the order of the roll and its checks (scenarios/upgrade), A's homes (homes.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::homes::{self, Bundle};
use super::runtime::Runtime;
use super::tools::{self, Runner};
use super::Cluster;
use crate::error::{Error, Result};
use crate::version::KafkaVersion;

/// Release B, what its nodes start from, and which nodes run it now.
pub struct Next {
    pub rt: Runtime,
    pub bundle: Bundle,
    /// The servers' logging flag for B (`-Dlog4j.configuration=…` or `-Dlog4j2.configurationFile=…`).
    server_log: String,
    /// B's own tools, one JVM per call (the finalisation's kafka-features).
    pub tools: Runner,
    /// The nodes running B now.
    on: BTreeSet<i32>,
    /// Each moved node's home on A, kept for a rollback.
    homes_a: BTreeMap<i32, PathBuf>,
    /// Each node's home on B, laid out at its first move.
    homes_b: BTreeMap<i32, PathBuf>,
}

impl Next {
    /// B's logging files and tools under `dir`.
    pub fn prepare(rt: Runtime, bundle: Bundle, dir: &Path) -> Result<Next> {
        crate::fsx::create_dir(dir)?;
        let (server_log, tool_log) = rt.write_logging(dir)?;
        let classes = tools::resolve(&rt.class_index()?);
        let scratch = dir.join("tools");
        crate::fsx::create_dir(&scratch)?;
        let jvm = super::tool_jvm(&rt, tool_log);
        let tools = Runner::new(rt.java.clone(), rt.classpath_string(), jvm, classes, scratch);
        Ok(Next {
            rt,
            bundle,
            server_log,
            tools,
            on: BTreeSet::new(),
            homes_a: BTreeMap::new(),
            homes_b: BTreeMap::new(),
        })
    }

    pub fn version(&self) -> KafkaVersion {
        self.rt.version
    }

    pub fn runs(&self, id: i32) -> bool {
        self.on.contains(&id)
    }

    /// The classpath node `id` starts with when it runs B.
    pub(super) fn classpath_of(&self, id: i32) -> Option<String> {
        if !self.on.contains(&id) {
            return None;
        }
        self.homes_b.get(&id).map(|home| homes::classpath(&self.rt, home))
    }
}

/// The position of the servers' logging flag in a node's command line.
fn logging_flag(argv: &[String]) -> Option<usize> {
    argv.iter().position(|a| a.starts_with("-Dlog4j.configuration=") || a.starts_with("-Dlog4j2.configurationFile="))
}

impl Cluster {
    /// The release node `id` runs now.
    pub fn release_of(&self, id: i32) -> KafkaVersion {
        match &self.next {
            Some(n) if n.runs(id) => n.version(),
            _ => self.rt.version,
        }
    }

    /// Moves stopped node `id` onto release B: its B home laid out and B's bundle installed there
    /// at the first move (`okp install`, verified against its key; without `bundle`, B's own
    /// jars: the negative control's controllers), its command line on B's logging. It runs B
    /// from its next start. Returns the sha256 of each jar the bundle replaces in that home, for
    /// the caller to compare with B's build.
    pub fn move_to_next(&mut self, id: i32, bundle: bool) -> Result<Vec<(String, String)>> {
        let name = self.node(id).name.clone();
        let Some(next) = self.next.as_ref() else {
            return Err(Error::Harness("no release to upgrade to".into()));
        };
        if next.runs(id) {
            return Err(Error::Harness(format!("{name} already runs {}", next.version())));
        }
        let home = match next.homes_b.get(&id) {
            Some(h) => h.clone(),
            None => {
                let home = self.run_dir.join(format!("homes-{}", next.version())).join(&name);
                homes::lay_out(&next.rt, &home)?;
                if bundle {
                    let args = next.bundle.install_args(&home);
                    let ran = homes::okp(&next.bundle.okp, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
                    self.journal_okp(&ran);
                    ran.installed(&home)?;
                } else {
                    self.journal.note(&format!("{name}'s {} home: the release's own jars, no bundle", next.version()));
                }
                home
            }
        };
        let Some(next) = self.next.as_mut() else { unreachable!("checked above") };
        let digests = homes::replaced_jar_digests(&next.rt, &home);
        let flag = next.server_log.clone();
        next.homes_b.insert(id, home.clone());
        next.on.insert(id);
        let version = next.version();
        let node = self.node_mut(id);
        if let Some(old) = node.home.replace(home.clone()) {
            if let Some(n) = self.next.as_mut() {
                n.homes_a.entry(id).or_insert(old);
            }
        }
        let node = self.node_mut(id);
        if let Some(i) = logging_flag(&node.argv) {
            node.argv[i] = flag;
        }
        self.journal.note(&format!("{name} now runs {version} from {}", home.display()));
        Ok(digests)
    }

    /// After a hop, when another is queued (`later`): release B becomes the cluster's own (its
    /// runtime, bundle and servers' logging; every node already starts from its B home) and the
    /// queued release becomes `next`. Whether there was one.
    pub fn adopt_next(&mut self) -> bool {
        if self.later.is_empty() || self.next.is_none() {
            return false;
        }
        let (Some(n), Some(queued)) = (self.next.take(), self.later.pop_front()) else { return false };
        if let Some(i) = logging_flag(&self.server_jvm) {
            self.server_jvm[i] = n.server_log.clone();
        }
        let (from, to) = (self.rt.version, n.rt.version);
        self.rt = n.rt;
        self.bundle = Some(n.bundle);
        // The servers' archive was dumped from the first release's jars.
        self.server_cds = super::cds::ServerCds::Off;
        self.journal.note(&format!("{to} is the cluster's release now (was {from}); next: {}", queued.version()));
        self.next = Some(queued);
        true
    }

    /// Moves stopped node `id` back onto release A: its A home, as it was, and A's logging.
    pub fn move_back(&mut self, id: i32) -> Result<()> {
        let name = self.node(id).name.clone();
        let Some(next) = self.next.as_mut() else {
            return Err(Error::Harness("no release to roll back from".into()));
        };
        if !next.on.remove(&id) {
            return Err(Error::Harness(format!("{name} does not run {}", next.version())));
        }
        let home = next.homes_a.get(&id).cloned();
        let flag = self.server_jvm.iter().find(|a| logging_flag(std::slice::from_ref(a)).is_some()).cloned();
        let version = self.rt.version;
        let node = self.node_mut(id);
        node.home = home.clone();
        if let (Some(i), Some(flag)) = (logging_flag(&node.argv), flag) {
            node.argv[i] = flag;
        }
        self.journal.note(&format!(
            "{name} back on {version} from {}",
            home.map(|h| h.display().to_string()).unwrap_or_else(|| "the shared classpath".into())
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logging_flag_of_either_log4j_is_found() {
        let argv = |f: &str| vec!["-Xmx1g".to_string(), f.to_string(), "kafka.Kafka".to_string()];
        assert_eq!(logging_flag(&argv("-Dlog4j.configuration=file:/x")), Some(1));
        assert_eq!(logging_flag(&argv("-Dlog4j2.configurationFile=file:/x")), Some(1));
        assert_eq!(logging_flag(&argv("-Dlog4j2.shutdownHookEnabled=false")), None);
    }
}
