//! The command line: every flag defined once, with its help next to it, as
//! clap types. No logic: `cmd` turns these into library calls.
//!
//! Not here: defaults that depend on data (the mode of a release, the layers
//! of a build), validation across flags beyond clap's own (`cmd`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::Layer;
use crate::report::Format;
use crate::version::KafkaVersion;

mod bundle;
mod groups;
mod observers;
#[cfg(test)]
mod tests;

pub use bundle::{BundleArgs, InstallArgs, KeygenArgs, PinArgs, RollbackArgs, VerifyBundleArgs};
pub use groups::{ClusterRelease, GitRev, LayerArgs, ModeFilter, ReleaseMode, ReleaseSourceArgs, TreeRelease};
pub use observers::{
    Bootstrap, NodeFiles, ObserversArgs, ObserversChangeArgs, ObserversCommand, ObserversStatusArgs, ObserversWatchArgs,
};

#[derive(Parser, Debug)]
#[command(name = "okp", version, about = "Observer replicas for Apache Kafka: anchors, patch set and toolchain")]
pub struct Cli {
    /// Release matrix to use instead of the embedded versions.yaml.
    #[arg(long, global = true, value_name = "FILE")]
    pub versions: Option<PathBuf>,
    /// Anchor manifest to use instead of the embedded anchors.yaml.
    #[arg(long, global = true, value_name = "FILE")]
    pub anchors: Option<PathBuf>,
    /// Patch set directory (edits.yaml and our sources) instead of the embedded patches/.
    #[arg(long, global = true, value_name = "DIR")]
    pub patches: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the release matrix: modes, patch family, toolchain, jars per mode.
    Versions(VersionsArgs),
    /// Check that every anchor of a release matches exactly once in its sources.
    ///
    /// Exit 0 when all match, 1 on drift, 2 on bad input, 3 when Maven or git fails.
    CheckAnchors(CheckArgs),
    /// Compare two upstream releases at every anchor and hook of the patch set, to port it.
    ///
    /// Per anchor: unchanged, moved, changed (with the upstream diff around the
    /// site), gone or ambiguous, and re-anchoring candidates where it no longer
    /// holds. Exit 0 when every anchor carries over, 1 on drift, 2 on bad input,
    /// 3 when Maven or git fails.
    Diff(DiffArgs),
    /// Print the effective edits of a release (and mode), readably.
    Show(ShowArgs),
    /// Apply the patch set to a Kafka checkout: all edits or none.
    ///
    /// Exit 0 when applied (or already applied), 1 on anchor drift, 2 on a
    /// refused tree (dirty, wrong release, read-only, other patch set applied).
    Apply(ApplyArgs),
    /// Restore the pristine bytes of every file okp changed, and remove the files it added.
    Revert(RevertArgs),
    /// Say whether a checkout carries the patch set, and finish an interrupted apply or revert.
    Status(StatusArgs),
    /// Write the patch set as a unified diff against the real upstream files (for `git apply`).
    Export(ExportArgs),
    /// Build patched jars: splice from the release's jars (default), or Gradle in a checkout.
    ///
    /// Exit 0 when built, 1 when a compile or the Gradle build failed, 2 on bad
    /// input, 3 when a tool is missing or Maven Central cannot be reached.
    Build(BuildArgs),
    /// Start a real patched cluster on 127.0.0.1 and prove the observer semantics (scenarios S1–S8 and more).
    ///
    /// Writes the evidence to DIR/<release>-<mode>[-upstream]/ (a run of fewer
    /// scenarios than the suite: DIR/partial/…) and the matrix page
    /// DIR/VERIFY.md. Exit 0 when every scenario passed (with --upstream:
    /// when every gate scenario failed, as it must on unpatched jars), 1 when
    /// not, 2 on bad input, 3 when Java, Maven or a port is unavailable.
    Verify(VerifyArgs),
    /// Run Kafka's own unit tests of the hooked classes on upstream jars, patched jars, patched jars with observers, and with the same observers from a topic rule.
    ///
    /// The release's test jars from Maven Central, the test libraries of its
    /// family (unit-tests.yaml), the JUnit console launcher; one JVM per class.
    /// Writes DIR/unit/<release>-<mode>/. Exit 0 when no test regresses without
    /// observers, every change with observers is explained by a contract rule,
    /// and every test ends under the topic rule as with observers; 1 when not,
    /// 2 on bad input (unknown release, no test jar, a damaged data file), 3
    /// when Java or Maven is unavailable.
    UnitTests(UnitTestsArgs),
    /// Make a bundle signing key pair (minisign format): PREFIX.key (secret, mode 0600) and PREFIX.pub.
    ///
    /// The password comes from OKP_KEY_PASSWORD or a prompt on a terminal; the
    /// secret key is never printed.
    Keygen(KeygenArgs),
    /// Package a build's patched jars as a signed, reproducible bundle for one target.
    ///
    /// Writes okp-observer-<V>-<mode>-<target>.tar.gz and its .sha256, .sha512,
    /// .minisig (and .asc with --gpg-sign). Exit 0 when written, 2 on bad input
    /// (a build directory that does not match its record, native code for
    /// another target, a wrong key password), 3 when gpg fails.
    Bundle(BundleArgs),
    /// Verify a bundle before it is unpacked: signature, checksums, manifest, files, paths, then its
    /// jars re-derived from their bytes as install does.
    ///
    /// Exit 0 when it verifies, 1 when it does not, 2 on bad input (no such file, unreadable key),
    /// 3 when Maven Central is unreachable for the jars' re-derivation.
    VerifyBundle(VerifyBundleArgs),
    /// Verify a bundle, then run its install.sh on a Kafka installation.
    ///
    /// Exit 0 when installed (or already installed), 1 when the bundle does not
    /// verify, 2 when the installation does not match (nothing changed), 3 when a step failed.
    Install(InstallArgs),
    /// Put back the original jars an installed bundle replaced, and remove its records.
    ///
    /// Exit 0 when rolled back (or nothing was installed), 2 when refused (nothing changed), 3 when a step failed.
    Rollback(RollbackArgs),
    /// Operate observer replicas on a running cluster: status, promote, demote, watch.
    ///
    /// Exit 0 when done, 1 when a pre-check refused (nothing written), the
    /// change did not show within --timeout, or status found a red state; 2 on
    /// bad input; 3 when the cluster or a transport command failed; 130 when
    /// the watchdog is stopped.
    Observers(ObserversArgs),
    /// Measure what the patch costs: `broker` runs identical upstream and patched clusters alternately.
    ///
    /// Writes DIR/bench.json and DIR/summary.md (default
    /// evidence/bench/broker/<release>-<mode>/). Judges no time. Exit 0 when
    /// measured, 2 on bad input, 3 when Java, Maven or a port is unavailable.
    Bench(BenchArgs),
    /// Print the order of a rolling upgrade of a patched cluster from one release to another: the
    /// steps `okp verify --upgrade-to` runs and checks, for your node ids (docs/upgrade.md).
    ///
    /// Plans only; performs nothing. Exit 0, or 2 on bad input (an unknown release, a release
    /// without the mode, a hop that is not forward, no brokers).
    UpgradePlan(UpgradePlanArgs),
    /// Start a local patched cluster to try observers by hand, in the foreground, until Ctrl-C.
    ///
    /// ZooKeeper (or three KRaft controllers) and brokers 1-4 on 127.0.0.1, broker 4 the observer
    /// of topic `demo`. Prints the bootstrap address, the nodes file and the next commands to
    /// try (okp observers status/promote/demote, the release's console producer and consumer).
    /// Ctrl-C or SIGTERM stops every process it started and removes its directory (exit 130).
    /// Exit 2 on bad input, 3 when Java, Maven or a port is unavailable.
    Playground(PlaygroundArgs),
    /// Write the monitoring files for observers into DIR: the JMX exporter's rules, the Prometheus
    /// alert rules rendered for your timers, the Grafana dashboard (docs/monitoring.md).
    ///
    /// Each file is replaced atomically. Exit 0 when written, 2 on bad input (a timer out of
    /// range, DIR not a directory).
    Monitoring(MonitoringArgs),
    /// Development aid for the integration tests: a patched cluster kept up until stdin closes.
    #[command(hide = true)]
    DevCluster(DevClusterArgs),
    /// Lay out a release's sources from its Maven Central sources jars as a tree.
    Sources(SourcesArgs),
    /// Every final Kafka release in scope on Maven Central, against the matrix: supported, not
    /// buildable from Maven Central (no sources jars), not verified here, or missing.
    ///
    /// Reads Maven Central's metadata of org.apache.kafka:kafka_2.13 (through curl; cached under
    /// the Maven local repository in okp-releases/). Exit 0 when every release in scope is in the
    /// matrix, 1 when one is missing (--strict: also when one cannot be built from Maven Central),
    /// 2 on bad input, 3 when Maven Central or curl fails.
    Releases(ReleasesArgs),
    /// Compare two builds of one release class by class (e.g. Gradle against splice).
    ///
    /// A and B are jars, or build directories whose jars are paired by file name;
    /// where either holds a splice build's okp-build.json, only the classes it
    /// changed are compared. Exit 0 when every class is the same program after
    /// normalisation (docs/building.md), 1 when some differ, 2 on bad input.
    CompareBuilds(CompareBuildsArgs),
}

#[derive(Args, Debug)]
pub struct ReleasesArgs {
    /// Read only the cache of an earlier run (and the local Maven repository): no network.
    #[arg(long)]
    pub offline: bool,
    /// Read this maven-metadata.xml (a recorded copy) instead of Maven Central's.
    #[arg(long, value_name = "FILE")]
    pub metadata: Option<PathBuf>,
    /// Also exit 1 when a release of the matrix cannot be built from Maven Central (no sources jars).
    #[arg(long)]
    pub strict: bool,
    /// Also report this release, listed or not (e.g. one announced before the metadata shows it); repeatable.
    #[arg(long, value_name = "V")]
    pub also: Vec<KafkaVersion>,
    /// Where the verify runs and build proofs are (VERIFY.md's directory).
    #[arg(long, value_name = "DIR", default_value = "evidence")]
    pub evidence: PathBuf,
    /// Also write the report to DIR/releases.txt and DIR/releases.json.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct CompareBuildsArgs {
    /// Build A: a jar or a build directory (e.g. `okp build --source` output).
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// Build B: a jar or a build directory (e.g. the splice build of the same release and mode).
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct VersionsArgs {
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The release whose patch set to show (every edit with its anchor).
    #[arg(long, value_name = "V", required_unless_present = "build", conflicts_with = "build")]
    pub version: Option<KafkaVersion>,
    /// Instead: what a build directory's okp-build.json records: the sources compiled (sha256),
    /// the compilers, and the provenance proofs with the members our edits changed per class.
    #[arg(long, value_name = "DIR")]
    pub build: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub mode: ModeFilter,
    #[command(flatten)]
    pub layer: LayerArgs,
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub release: TreeRelease,
    /// The checkout (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub source: PathBuf,
    /// Apply even though the tree declares another release.
    #[arg(long)]
    pub force: bool,
    /// Apply even to upstream files that are not the release's own bytes (a fork); recorded.
    #[arg(long)]
    pub allow_modified: bool,
    /// Print the change as a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Commit the patched files on a new branch okp/observer-<version>-<mode>.
    #[arg(long)]
    pub commit: bool,
    #[command(flatten)]
    pub layer: LayerArgs,
}

#[derive(Args, Debug)]
pub struct RevertArgs {
    /// The checkout (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub source: PathBuf,
    /// Revert even files changed since apply, discarding those changes.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The checkout (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub source: PathBuf,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub release: ReleaseMode,
    /// A checkout to diff against instead of the release's Maven Central sources.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["git"])]
    pub source: Option<PathBuf>,
    #[command(flatten)]
    pub git: GitRev,
    /// Write here (atomically) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub layer: LayerArgs,
}

#[derive(Args, Debug)]
pub struct UpgradePlanArgs {
    /// The release the cluster runs now.
    #[arg(long, value_name = "V")]
    pub from: KafkaVersion,
    /// The release to roll to.
    #[arg(long, value_name = "V")]
    pub to: KafkaVersion,
    /// zk or kraft: how the cluster is controlled during the roll.
    #[arg(long, value_name = "zk|kraft")]
    pub mode: crate::model::Mode,
    /// The KRaft controllers' node ids, in the order to roll them (none in ZooKeeper mode).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub controllers: Vec<i32>,
    /// The brokers' ids, in the order to roll them.
    #[arg(long, value_name = "IDS", value_delimiter = ',', required = true)]
    pub brokers: Vec<i32>,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// ProducerPerformance at acks=all on upstream and patched clusters, alternately: throughput and
    /// p50/p99/p99.9 as patched/upstream ratios; rf3, rf4 with broker 4 an observer, and that observer frozen.
    Broker(BenchBrokerArgs),
    /// The same cluster upstream and patched (broker 4 an observer, topic rules in force), alternately,
    /// at growing partition counts: topic creation, controller failover, a broker's failure, restart
    /// and ISR rejoin, controller and idle CPU, as patched/upstream ratios per size, with a PNG per metric.
    Scale(BenchScaleArgs),
}

#[derive(Args, Debug)]
pub struct BenchScaleArgs {
    #[command(flatten)]
    pub release: ClusterRelease,
    /// Total partitions of each size, run in this order (a fresh cluster per size, round and flavor).
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', default_value = "1000,5000")]
    pub sizes: Vec<u32>,
    /// Clusters of each flavor per size, started alternately.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub rounds: u32,
    /// Partitions per topic (more topics for the same size: more rule lookups).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub per_topic: u32,
    /// The quiet window the idle CPU is measured over, in seconds.
    #[arg(long, value_name = "S", default_value_t = 20)]
    pub idle_secs: u64,
    /// Where scale.json, summary.md, the PNGs and the journals go (default:
    /// evidence/bench/scale/<V>-<mode>, with --control <V>-<mode>-control).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// An A/A control: the "patched" clusters run the release's upstream jars too, so every
    /// ratio is upstream/upstream and its spread is this machine's noise floor.
    #[arg(long)]
    pub control: bool,
    /// First of the cluster's consecutive loopback ports (default: a free block from 20000 up).
    #[arg(long, value_name = "PORT")]
    pub base_port: Option<u16>,
    /// Every broker's and controller's heap ceiling (-Xmx): at 5000 partitions 320m ran a broker
    /// into back-to-back full collections.
    #[arg(long, value_name = "SIZE", default_value = "1g")]
    pub heap: String,
}

#[derive(Args, Debug)]
pub struct BenchBrokerArgs {
    #[command(flatten)]
    pub release: ClusterRelease,
    /// Clusters of each flavor, started alternately.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rounds: u32,
    /// The fixed rate, records per second.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub rate: u64,
    /// Records per fixed-rate measurement.
    #[arg(long, value_name = "N", default_value_t = 20000)]
    pub rate_records: u64,
    /// Records per max-throughput measurement.
    #[arg(long, value_name = "N", default_value_t = 200000)]
    pub max_records: u64,
    /// Bytes per record.
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub record_size: u64,
    /// Where bench.json, summary.md and the journals go (default: evidence/bench/broker/<V>-<mode>,
    /// with --control <V>-<mode>-control).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// An A/A control: the "patched" clusters run the release's upstream jars too, so every
    /// ratio is upstream/upstream and its spread is this machine's noise floor for the same settings.
    #[arg(long)]
    pub control: bool,
    /// A file of observer.ids topic rules (docs/observer-ids.md) written after the cluster-wide `4`
    /// on every node of every cluster (upstream ignores them): the cost of rules present. The
    /// produced topics are bench3 and bench4; rules naming neither measure rules that do not match.
    /// No cluster-wide ids in it (default out: <V>-<mode>-rules).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct SourcesArgs {
    /// The release whose sources to lay out.
    #[arg(long, value_name = "V")]
    pub version: KafkaVersion,
    /// Directory to create (must not exist or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Only the files the patch set's anchors touch in this release, the files its guards watch, and
    /// the other files a splice build's scalac reads (the Java sources of a module it recompiles Scala of).
    #[arg(long)]
    pub hooked: bool,
}

#[derive(Args, Debug)]
pub struct MonitoringArgs {
    /// The directory to write jmx-exporter.yml, alerts.yml and dashboard.json into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Your brokers' replica.lag.time.max.ms: the alerts' `for:` durations derive from it.
    #[arg(long, value_name = "MS", default_value_t = 30000, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub lag_ms: u64,
    /// Prometheus's scrape (and rule evaluation) interval, in seconds.
    #[arg(long, value_name = "S", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub scrape_s: u64,
    /// How often `okp observers status --format prometheus` rewrites its textfile, in seconds.
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub status_s: u64,
    /// Where the alerts' runbook links point (a URL or path to docs/monitoring.md).
    #[arg(long, value_name = "URL", default_value = "docs/monitoring.md")]
    pub runbook: String,
}

#[derive(Args, Debug)]
pub struct PlaygroundArgs {
    #[command(flatten)]
    pub release: ClusterRelease,
    /// The playground's directory (new or empty; default: a new one under the temp directory), removed at the end.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct DevClusterArgs {
    #[command(flatten)]
    pub release: ClusterRelease,
    /// Where to write cluster.json (ports, pids, observer files) once everything is up.
    #[arg(long, value_name = "FILE")]
    pub state: PathBuf,
    /// Extra topic NAME=ASSIGNMENT[,CONFIG=VALUE...], e.g. pair=1:4,min.insync.replicas=2.
    #[arg(long, value_name = "SPEC")]
    pub topic: Vec<String>,
    /// replica.lag.time.max.ms of the brokers.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    pub lag_ms: u64,
    /// ZooKeeper / KRaft broker session timeout.
    #[arg(long, value_name = "MS", default_value_t = 4000)]
    pub session_ms: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Splice,
    Gradle,
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    pub release: TreeRelease,
    /// A patched checkout to build with its own ./gradlew (implies --backend gradle).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tree", "git"])]
    pub source: Option<PathBuf>,
    #[command(flatten)]
    pub sources: ReleaseSourceArgs,
    /// With --tree/--git: build although the tree differs from the release's sources in files the
    /// splice does not compile. Those changes are NOT in the jars (recorded as provenance.not_built);
    /// a fork builds with the Gradle backend.
    #[arg(long)]
    pub allow_modified: bool,
    /// splice (from the release's jars; default without --source) or gradle (default with --source).
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// Where the jars and okp-build.json go (default: okp-out/<version>-<mode>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Progress display: auto (a bar on a terminal, step lines otherwise), always or never.
    #[arg(long, value_enum, default_value_t = crate::build::gradle::Progress::Auto)]
    pub progress: crate::build::gradle::Progress,
    /// Splice-compile every (release, mode) of the matrix (with --mode: only that mode) and print the result matrix.
    #[arg(long, conflicts_with_all = ["source", "version", "tree", "git"])]
    pub all: bool,
    /// With --all: only the reference releases (the matrix CI compiles).
    #[arg(long, requires = "all")]
    pub reference: bool,
    /// With --all: check only (build into a temporary directory, keep nothing but the matrix).
    #[arg(long, requires = "all")]
    pub check: bool,
    #[command(flatten)]
    pub layer: LayerArgs,
}

#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub release: ClusterRelease,
    /// Every (release, mode) with sources jars (with --reference: the reference releases); a failed pair
    /// does not stop the others; a summary at the end; exit non-zero if any pair failed.
    #[arg(long, conflicts_with = "version")]
    pub all: bool,
    /// With --all: only the reference releases.
    #[arg(long, requires = "all")]
    pub reference: bool,
    /// How many clusters share one run's scenarios, each running its lane at the same time
    /// (`okp verify --help` lists how the suite splits; 1: every scenario on one cluster, in order).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=4))]
    pub lanes: u16,
    /// With --all: how many clusters run at once (each on its own claimed port block).
    #[arg(long, value_name = "N", requires = "all", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub jobs: u16,
    /// Run nothing: write DIR/VERIFY.md (and DIR/partial/VERIFY.md) from the run.json files under
    /// --evidence, e.g. after CI copied each job's evidence there.
    #[arg(long, conflicts_with_all = ["version", "all", "mode", "upstream", "jars", "scenarios", "keep", "base_port"])]
    pub merge: bool,
    /// Soak one (release, mode) for DURATION (`600`, `600s`, `10m`, `1h`): acks=all producers, a seeded
    /// fault schedule, a history checked at the end (docs/soak.md); evidence in DIR/soak/.
    #[arg(long, value_name = "DURATION", requires = "seed", conflicts_with_all = ["all", "merge", "upstream", "jars", "scenarios"])]
    pub soak: Option<String>,
    /// Run nothing: check a soak's stored history again (DIR/soak/…/history.json.gz) and print the
    /// report; exit 0 when every rule holds, 1 when one does not.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["soak", "all", "merge", "version", "mode", "upstream", "jars", "scenarios", "keep", "base_port"])]
    pub soak_recheck: Option<PathBuf>,
    /// With --soak: schedule unclean elections too (primary 3 left behind, 1 and 2 killed, an unclean
    /// election): the operator's explicit choice of data loss, which the checker lists as accepted.
    #[arg(long, requires = "soak")]
    pub soak_unclean: bool,
    /// The soak's seed: the same seed and duration give the same fault schedule.
    #[arg(long, value_name = "N", requires = "soak")]
    pub seed: Option<u64>,
    /// Roll the cluster from --version to this release, both patched, node by node under acks=all
    /// writes as an operator does it, and finalise (the UPGRADE scenario, docs/upgrade.md);
    /// evidence in DIR/upgrade/<A>-to-<B>-<mode>/.
    /// Several, comma-separated, are rolled to one after the other on the same cluster under the
    /// same clients; with --migrate, after the migration (the life of one cluster). With
    /// `--scenarios HOSTS` (one release): after its steps, okp's Ansible upgrade play rolls the
    /// hosts to it (evidence in DIR/upgrade/<A>-to-<B>-<mode>-hosts/).
    #[arg(long, value_name = "VERSION", value_delimiter = ',', conflicts_with_all = ["all", "merge", "soak", "soak_recheck", "upstream", "jars"])]
    pub upgrade_to: Vec<KafkaVersion>,
    /// Take a patched ZooKeeper-mode cluster of --version (3.7–3.9) to KRaft under acks=all writes, as
    /// the operations guide gives it, and finalise (the MIGRATE scenario, docs/upgrade.md); evidence
    /// in DIR/upgrade/<V>-zk-to-kraft/.
    #[arg(long, conflicts_with_all = ["all", "merge", "soak", "soak_recheck", "upstream", "jars", "scenarios"])]
    pub migrate: bool,
    /// With --migrate, or --upgrade-to in KRaft mode: the KRaft controllers on the release's own
    /// jars (brokers patched), the negative control.
    #[arg(long)]
    pub upstream_controllers: bool,
    /// Monitor every cluster of the run: the Prometheus JMX exporter with okp's rules in every
    /// node, a Prometheus server on 127.0.0.1 with okp's alert rules, node_exporter serving `okp
    /// observers status --format prometheus`; adds scenario PROM, and records every alert that
    /// fired during the run (docs/monitoring.md). Needs Debian's prometheus packages.
    #[arg(long, conflicts_with_all = ["all", "merge", "soak", "soak_recheck"])]
    pub prometheus: bool,
    /// With --migrate: once the brokers run KRaft (dual-write), roll back to ZooKeeper as upstream
    /// allows before the finalisation (brokers to migration mode, controllers stopped, their
    /// znodes deleted, brokers to ZooKeeper mode); evidence in DIR/upgrade/<V>-zk-to-kraft-and-back/.
    #[arg(long, requires = "migrate")]
    pub migrate_back: bool,
    /// Scenario WAN's link between its two regions: the round-trip time (`80ms`, `0.1s`; default
    /// 50ms) …
    #[arg(long, value_name = "TIME")]
    pub wan_rtt: Option<String>,
    /// … and the bandwidth each way (`50mbit`, `800kbit`; default 20mbit). docs/multi-region.md.
    #[arg(long, value_name = "RATE")]
    pub wan_bandwidth: Option<String>,
    /// Scenario MM2's worker with exactly-once source support (KIP-618, from 3.5: transactional
    /// writes to the target, its internal REST server on the worker's host); evidence in
    /// DIR/wan/<V>-<mode>-mm2eos-rtt…/.
    #[arg(long)]
    pub mm2_exactly_once: bool,
    /// Run on the release's unpatched jars: the negative control.
    #[arg(long, conflicts_with = "jars")]
    pub upstream: bool,
    /// A directory written by `okp build` (default: a splice build, cached per patch-set hash).
    #[arg(long, value_name = "DIR")]
    pub jars: Option<PathBuf>,
    /// Layers of the patch set to build and prove (default: metrics, so the MET scenario reads the gauges;
    /// `--layer core` proves a core-only build and skips MET).
    #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',', default_value = "metrics")]
    pub layers: Vec<Layer>,
    /// Comma-separated scenario ids (default: all; with --upstream: the gate scenarios).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// CREATE's rounds (each: 10 new partitions per client, three clients, 50 records to each partition from the first moment).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(2..=100000))]
    pub create_rounds: u32,
    /// replica.lag.time.max.ms of the brokers.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    pub lag_ms: u64,
    /// ZooKeeper / KRaft broker session timeout.
    #[arg(long, value_name = "MS", default_value_t = 4000)]
    pub session_ms: u64,
    /// Where the evidence goes.
    #[arg(long, value_name = "DIR", default_value = "evidence")]
    pub evidence: PathBuf,
    /// Keep the run directory (configs, node logs) even when everything passed.
    #[arg(long)]
    pub keep: bool,
    /// First of 17 consecutive loopback ports per lane (17 × --lanes in all), which must all be free (default: a free block per lane from 20000 up, below the kernel's ephemeral port range).
    #[arg(long, value_name = "PORT")]
    pub base_port: Option<u16>,
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    #[command(flatten)]
    pub sources: ReleaseSourceArgs,
}

#[derive(Args, Debug)]
pub struct UnitTestsArgs {
    #[command(flatten)]
    pub release: ClusterRelease,
    /// Comma-separated test classes, simple or full names (default: every class of the release's family and mode).
    #[arg(long, value_name = "CLASSES", value_delimiter = ',')]
    pub classes: Vec<String>,
    /// A directory written by `okp build` (default: verify's splice build of the core layer, cached per patch-set hash).
    #[arg(long, value_name = "DIR")]
    pub jars: Option<PathBuf>,
    /// Each class's time limit in one configuration; its JVM's process group is killed then.
    #[arg(long, value_name = "SECONDS", default_value_t = 900)]
    pub class_timeout: u64,
    /// The unit-test data file instead of the embedded unit-tests.yaml.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Judge the JUnit XML already in the evidence again (after editing the expected changes); runs nothing.
    #[arg(long, conflicts_with_all = ["jars", "classes"])]
    pub rejudge: bool,
    /// Where the evidence goes (DIR/unit/<release>-<mode>/, and DIR/VERIFY.md).
    #[arg(long, value_name = "DIR", default_value = "evidence")]
    pub evidence: PathBuf,
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The release whose anchors to check (default: the tree's own version; with no source, every release).
    #[arg(long, value_name = "V", conflicts_with = "all")]
    pub version: Option<KafkaVersion>,
    /// Check every release of the matrix against its Maven Central sources.
    #[arg(long, conflicts_with_all = ["source", "git", "release"])]
    pub all: bool,
    #[command(flatten)]
    pub mode: ModeFilter,
    /// A Kafka source tree on disk (a checkout).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["git", "release"])]
    pub source: Option<PathBuf>,
    #[command(flatten)]
    pub git: GitRev,
    /// A release's sources jars from Maven Central (may be newer than the matrix).
    #[arg(long, value_name = "V", conflicts_with = "git")]
    pub release: Option<KafkaVersion>,
    /// The output: a table for people, json for programs, or junit for CI test reports.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// List every anchor, not only the drifted ones.
    #[arg(long, short)]
    pub verbose: bool,
    /// Also write the report as evidence: DIR/check-anchors.{txt,json}, stamped with okp's version and the time.
    #[arg(long, value_name = "DIR")]
    pub evidence: Option<PathBuf>,
    /// Check only core plus these layers (repeatable; `--layer core`: core only). Default: every layer.
    #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
    pub layers: Vec<Layer>,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The release to port from (its anchors are the patch set compared); default: what the old tree declares.
    #[arg(long, value_name = "V1")]
    pub from: Option<KafkaVersion>,
    /// The release to port to; read from its Maven Central sources jars unless a tree is given (may be newer than the matrix).
    #[arg(long, value_name = "V2")]
    pub to: Option<KafkaVersion>,
    /// The old release as a checkout (or a tree laid out by `okp sources`) instead of Maven Central.
    #[arg(long, value_name = "DIR", conflicts_with = "from_rev")]
    pub from_source: Option<PathBuf>,
    /// The new release as a checkout instead of Maven Central (e.g. a release with no sources jar).
    #[arg(long, value_name = "DIR", conflicts_with = "to_rev")]
    pub to_source: Option<PathBuf>,
    /// A git repository (bare or not) holding --from-rev and --to-rev; with both, the report lists the commits that touched each hooked file.
    #[arg(long, value_name = "REPO")]
    pub git: Option<PathBuf>,
    /// Tag, branch or commit of --git for the old release.
    #[arg(long, value_name = "REV", requires = "git")]
    pub from_rev: Option<String>,
    /// Tag, branch or commit of --git for the new release.
    #[arg(long, value_name = "REV", requires = "git")]
    pub to_rev: Option<String>,
    /// The output: a table for people, markdown for an issue or pull request, or json for programs.
    #[arg(long, value_enum, default_value_t = crate::diff::render::DiffFormat::Table)]
    pub format: crate::diff::render::DiffFormat,
    /// Colour the diffs: auto (on a terminal, unless NO_COLOR is set and not empty), always, never.
    #[arg(long, value_enum, default_value_t = crate::diff::render::ColorChoice::Auto)]
    pub color: crate::diff::render::ColorChoice,
    /// Count a changed site (the anchor holds, the code around it changed) as drift: exit 1 (the weekly sentinel's setting).
    #[arg(long)]
    pub strict: bool,
    /// Carries over: add V2 to versions.yaml (--versions FILE, default ./versions.yaml), checked with check-anchors. Does not: write the porting worksheet.
    #[arg(long)]
    pub write: bool,
    /// Where --write puts the porting worksheet (default: porting-V1-V2.md).
    #[arg(long, value_name = "FILE", requires = "write")]
    pub worksheet: Option<PathBuf>,
    /// Also compare the two releases' own jars member by member (automatic when V2 has no sources
    /// jar): per hook site, whether the code holding it changed; with a V2 tree, where that tree is
    /// not the release.
    #[arg(long)]
    pub binary: bool,
    /// With --write: take a V2 tree whose gradle.properties declares another version (a branch
    /// snapshot); the entry records it.
    #[arg(long, requires = "write")]
    pub accept_version_mismatch: bool,
    /// Also write the report as evidence: DIR/diff-V1-V2.md and .json, stamped with okp's version and the time.
    #[arg(long, value_name = "DIR")]
    pub evidence: Option<PathBuf>,
}
