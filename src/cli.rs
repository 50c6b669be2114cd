//! Command-line surface: flags (each defined once, help next to it) and
//! dispatch. Parses and routes only; the work lives in the modules.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::check::{self, Report};
use crate::error::{Error, Result, EXIT_DRIFT, EXIT_OK};
use crate::maven::Maven;
use crate::model::{Coordinate, Layer, Layers, Mode, Model, Release};
use crate::patch;
use crate::report::{self, Format};
use crate::source::{DirTree, GitTree, ReleaseTree, SourceTree, MARKER};
use crate::version::KafkaVersion;

#[derive(Parser, Debug)]
#[command(name = "okp", version, about = "Observer replicas for Apache Kafka: anchors, patch set and toolchain")]
pub struct Cli {
    /// Release matrix to use instead of the embedded versions.yaml.
    #[arg(long, global = true, value_name = "FILE")]
    versions: Option<PathBuf>,
    /// Anchor manifest to use instead of the embedded anchors.yaml.
    #[arg(long, global = true, value_name = "FILE")]
    anchors: Option<PathBuf>,
    /// Patch set directory (edits.yaml and our sources) instead of the embedded patches/.
    #[arg(long, global = true, value_name = "DIR")]
    patches: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the release matrix: modes, patch family, toolchain, jars per mode.
    Versions {
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
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
    Show {
        #[arg(long, value_name = "V")]
        version: KafkaVersion,
        #[arg(long, value_name = "M")]
        mode: Option<Mode>,
        /// An optional layer of the patch set to take as well (repeatable): metrics (JMX gauges, docs/observer-metrics.md).
        #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
        layers: Vec<Layer>,
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Apply the patch set to a Kafka checkout: all edits or none.
    ///
    /// Exit 0 when applied (or already applied), 1 on anchor drift, 2 on a
    /// refused tree (dirty, wrong release, read-only, other patch set applied).
    Apply {
        #[command(flatten)]
        target: TreeTarget,
        /// Apply even though the tree declares another release.
        #[arg(long)]
        force: bool,
        /// Print the change as a unified diff and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Commit the patched files on a new branch okp/observer-<version>-<mode>.
        #[arg(long)]
        commit: bool,
        /// An optional layer of the patch set to take as well (repeatable): metrics (JMX gauges, docs/observer-metrics.md).
        #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
        layers: Vec<Layer>,
    },
    /// Restore the pristine bytes of every file okp changed, and remove the files it added.
    Revert {
        /// The checkout (default: the current directory).
        #[arg(long, value_name = "DIR", default_value = ".")]
        source: PathBuf,
        /// Revert even files changed since apply, discarding those changes.
        #[arg(long)]
        force: bool,
    },
    /// Say whether a checkout carries the patch set, and finish an interrupted apply or revert.
    Status {
        #[arg(long, value_name = "DIR", default_value = ".")]
        source: PathBuf,
    },
    /// Write the patch set as a unified diff against the real upstream files (for `git apply`).
    Export {
        #[arg(long, value_name = "V")]
        version: KafkaVersion,
        #[arg(long, value_name = "M")]
        mode: Option<Mode>,
        /// A checkout to diff against instead of the release's Maven Central sources.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["git"])]
        source: Option<PathBuf>,
        #[arg(long, value_name = "REPO", requires = "rev")]
        git: Option<PathBuf>,
        #[arg(long, value_name = "REV", requires = "git")]
        rev: Option<String>,
        /// Write here (atomically) instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// An optional layer of the patch set to take as well (repeatable): metrics (JMX gauges, docs/observer-metrics.md).
        #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
        layers: Vec<Layer>,
    },
    /// Build patched jars: splice from the release's jars (default), or Gradle in a checkout.
    ///
    /// Exit 0 when built, 1 when a compile or the Gradle build failed, 2 on bad
    /// input, 3 when a tool is missing or Maven Central cannot be reached.
    Build(BuildArgs),
    /// Start a real patched cluster on 127.0.0.1 and prove the observer semantics (scenarios S1–S8 and more).
    ///
    /// Writes the evidence to DIR/<release>-<mode>[-upstream]/ and the matrix
    /// page DIR/VERIFY.md. Exit 0 when every scenario passed (with --upstream:
    /// when every gate scenario failed, as it must on unpatched jars), 1 when
    /// not, 2 on bad input, 3 when Java, Maven or a port is unavailable.
    Verify(VerifyArgs),
    /// Make a bundle signing key pair (minisign format): PREFIX.key (secret, mode 0600) and PREFIX.pub.
    ///
    /// The password comes from OKP_KEY_PASSWORD or a prompt on a terminal; the
    /// secret key is never printed.
    Keygen {
        /// Path prefix of the two files to create (never overwritten).
        #[arg(long, value_name = "PREFIX")]
        out: PathBuf,
        /// No password on the secret key (for CI secret stores).
        #[arg(long)]
        unencrypted: bool,
    },
    /// Package a build's patched jars as a signed, reproducible bundle for one target.
    ///
    /// Writes okp-observer-<V>-<mode>-<target>.tar.gz and its .sha256, .sha512,
    /// .minisig (and .asc with --gpg-sign). Exit 0 when written, 2 on bad input
    /// (a build directory that does not match its record, native code for
    /// another target, a wrong key password), 3 when gpg fails.
    Bundle {
        /// A directory written by `okp build --version V --mode M --out DIR`.
        #[arg(long, value_name = "DIR")]
        build: PathBuf,
        /// linux-x86_64 or linux-aarch64 (also x86_64, amd64, aarch64, arm64, linux/arm64, ...).
        #[arg(long, value_name = "TARGET")]
        target: crate::bundle::Target,
        /// The minisign secret key to sign with (see `okp keygen`).
        #[arg(long, value_name = "SECKEY")]
        key: PathBuf,
        /// Where the bundle and its sidecars go (default: the build directory).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Also sign with gpg, as this key, into a detached .asc (the Apache convention).
        #[arg(long, value_name = "KEYID")]
        gpg_sign: Option<String>,
    },
    /// Verify a bundle before it is unpacked: signature, checksums, manifest, files, paths.
    ///
    /// Exit 0 when it verifies, 1 when it does not, 2 on bad input (no such file, unreadable key).
    VerifyBundle {
        /// The bundle (.tar.gz); its .minisig, .sha256 and .sha512 are read from beside it.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The minisign public key: a .pub file, or its base64 line (RW...).
        #[arg(long, value_name = "KEY")]
        pubkey: String,
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Verify a bundle, then run its install.sh on a Kafka installation.
    ///
    /// Exit 0 when installed (or already installed), 1 when the bundle does not
    /// verify, 2 when the installation does not match (nothing changed), 3 when a step failed.
    Install {
        /// The bundle (.tar.gz).
        #[arg(value_name = "BUNDLE")]
        bundle: PathBuf,
        /// The Kafka installation (the directory holding bin/ and libs/).
        #[arg(long, value_name = "DIR")]
        kafka_home: PathBuf,
        /// The minisign public key the bundle must be signed with.
        #[arg(long, value_name = "KEY", required_unless_present = "allow_unverified")]
        pubkey: Option<String>,
        /// Install a well-formed bundle whose signature or checksum files do not verify.
        #[arg(long)]
        allow_unverified: bool,
        /// Say what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Install although this machine is not the bundle's target (the jars are architecture-independent).
        #[arg(long)]
        ignore_arch: bool,
        /// Accept installed jars that are not byte-identical to Maven Central's (your own build of the release).
        #[arg(long)]
        accept_local_jars: bool,
    },
    /// Put back the original jars an installed bundle replaced, and remove its records.
    ///
    /// Exit 0 when rolled back (or nothing was installed), 2 when refused (nothing changed), 3 when a step failed.
    Rollback {
        #[arg(long, value_name = "DIR")]
        kafka_home: PathBuf,
        /// Say what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Restore even jars that changed after the install.
        #[arg(long)]
        force: bool,
    },
    /// Operate observer replicas on a running cluster: status, promote, demote.
    ///
    /// Exit 0 when done, 1 when a pre-check refused (nothing written), the
    /// change did not show within --timeout, or status found a red state; 2 on
    /// bad input; 3 when the cluster or a transport command failed.
    Observers {
        #[command(subcommand)]
        command: ObserversCommand,
    },
    /// Development aid for the integration tests: a patched cluster kept up until stdin closes.
    #[command(hide = true)]
    DevCluster(DevClusterArgs),
    /// Lay out a release's sources from its Maven Central sources jars as a tree.
    Sources {
        #[arg(long, value_name = "V")]
        version: KafkaVersion,
        /// Directory to create (must not exist or be empty).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the files the patch set's anchors touch in this release.
        #[arg(long)]
        hooked: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ObserversCommand {
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
}

#[derive(Args, Debug)]
struct Bootstrap {
    /// Brokers to ask for metadata: HOST:PORT[,HOST:PORT...] (PLAINTEXT listeners).
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',', required = true)]
    bootstrap: Vec<String>,
}

#[derive(Args, Debug)]
struct NodeFiles {
    /// A broker's observer.ids: ID=PATH (repeatable).
    #[arg(long = "node", value_name = "ID=PATH")]
    node: Vec<String>,
    /// A KRaft controller's observer.ids: ID=PATH (repeatable).
    #[arg(long = "controller-node", value_name = "ID=PATH")]
    controller_node: Vec<String>,
    /// A YAML list of nodes: {id, role: broker|controller, path, host}.
    #[arg(long, value_name = "FILE")]
    nodes: Option<PathBuf>,
    /// How the files are reached: local paths, or the --read-cmd/--write-cmd templates.
    #[arg(long, value_enum, default_value_t = TransportKind::Local)]
    transport: TransportKind,
    /// With --transport command: prints a node's file, e.g. 'ssh {host} cat {path}' ({host}, {path}, {id} are filled in, shell-quoted).
    #[arg(long, value_name = "TEMPLATE")]
    read_cmd: Option<String>,
    /// With --transport command: replaces a node's file atomically with stdin, e.g. 'ssh {host} "cat > {path}.okp-tmp && mv {path}.okp-tmp {path}"'.
    #[arg(long, value_name = "TEMPLATE")]
    write_cmd: Option<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum TransportKind {
    Local,
    Command,
}

impl NodeFiles {
    fn resolve(&self) -> Result<(Vec<crate::observers::transport::NodeSpec>, crate::observers::transport::Transport)> {
        use crate::observers::transport::{self as t, NodeRole, Transport};
        let mut nodes = Vec::new();
        if let Some(f) = &self.nodes {
            nodes.extend(t::load_nodes_file(f)?);
        }
        for n in &self.node {
            nodes.push(t::parse_node_flag(n, NodeRole::Broker)?);
        }
        for n in &self.controller_node {
            nodes.push(t::parse_node_flag(n, NodeRole::Controller)?);
        }
        let transport = match (self.transport, &self.read_cmd, &self.write_cmd) {
            (TransportKind::Local, None, None) => Transport::Local,
            (TransportKind::Local, _, _) => {
                return Err(Error::Usage("--read-cmd and --write-cmd need --transport command".into()))
            }
            (TransportKind::Command, Some(r), Some(w)) => Transport::Command { read: r.clone(), write: w.clone() },
            (TransportKind::Command, _, _) => {
                return Err(Error::Usage("--transport command needs both --read-cmd and --write-cmd".into()))
            }
        };
        Ok((nodes, transport))
    }
}

#[derive(Args, Debug)]
struct ObserversStatusArgs {
    #[command(flatten)]
    bootstrap: Bootstrap,
    /// Only this topic (default: every topic).
    #[arg(long, value_name = "TOPIC")]
    topic: Option<String>,
    /// The observer ids, e.g. 4,5 (instead of reading the nodes' files).
    #[arg(long, value_name = "IDS", conflicts_with_all = ["observers_file", "node", "controller_node", "nodes"])]
    observers: Option<String>,
    /// An observer.ids file to take the ids from.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["node", "controller_node", "nodes"])]
    observers_file: Option<PathBuf>,
    #[command(flatten)]
    files: NodeFiles,
    /// A replica this many offsets behind its leader still counts as caught up.
    #[arg(long, value_name = "N", default_value_t = 0)]
    max_lag: i64,
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    format: ListFormat,
}

#[derive(Args, Debug)]
struct ObserversChangeArgs {
    /// The broker id to promote or demote.
    #[arg(long, value_name = "N")]
    broker: i32,
    #[command(flatten)]
    bootstrap: Bootstrap,
    #[command(flatten)]
    files: NodeFiles,
    /// Promote only: check N's log against every live replica's for every partition it replicates, not only the leaderless ones.
    #[arg(long)]
    for_unclean_election: bool,
    /// Waive the min.insync.replicas and log-end-offset refusals (never the leadership one).
    #[arg(long)]
    force: bool,
    /// Print the pre-checks and the plan (each file, old → new), change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Seconds to wait for the cluster to show the change.
    #[arg(long, value_name = "S", default_value_t = 120)]
    timeout: u64,
}

#[derive(Args, Debug)]
struct DevClusterArgs {
    #[arg(long, value_name = "V", default_value = "3.9.2")]
    version: KafkaVersion,
    #[arg(long, value_name = "M")]
    mode: Option<Mode>,
    /// Where to write cluster.json (ports, pids, observer files) once everything is up.
    #[arg(long, value_name = "FILE")]
    state: PathBuf,
    /// Extra topic NAME=ASSIGNMENT[,CONFIG=VALUE...], e.g. pair=1:4,min.insync.replicas=2.
    #[arg(long, value_name = "SPEC")]
    topic: Vec<String>,
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    lag_ms: u64,
    #[arg(long, value_name = "MS", default_value_t = 4000)]
    session_ms: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    Table,
    Json,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    Splice,
    Gradle,
}

#[derive(Args, Debug)]
struct BuildArgs {
    /// The release (with --source, default: the checkout's own version).
    #[arg(long, value_name = "V", conflicts_with = "all")]
    version: Option<KafkaVersion>,
    /// zk or kraft; needed when the release supports both (with --all: only this mode).
    #[arg(long, value_name = "M")]
    mode: Option<Mode>,
    /// A patched checkout to build with its own ./gradlew (implies --backend gradle).
    #[arg(long, value_name = "DIR")]
    source: Option<PathBuf>,
    /// splice (from the release's jars; default without --source) or gradle (default with --source).
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// Where the jars and okp-build.json go (default: okp-out/<version>-<mode>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = crate::build::gradle::Progress::Auto)]
    progress: crate::build::gradle::Progress,
    /// Splice-compile every (release, mode) of the matrix and print the result matrix.
    #[arg(long, conflicts_with_all = ["source", "version"])]
    all: bool,
    /// With --all: only the reference releases (the matrix CI compiles).
    #[arg(long, requires = "all")]
    reference: bool,
    /// With --all: check only (build into a temporary directory, keep nothing but the matrix).
    #[arg(long, requires = "all")]
    check: bool,
    /// An optional layer of the patch set to take as well (repeatable): metrics (JMX gauges, docs/observer-metrics.md).
    #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
    layers: Vec<Layer>,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// The release (default: 3.9.2, the last release with both modes).
    #[arg(long, value_name = "V", conflicts_with = "all")]
    version: Option<KafkaVersion>,
    /// Every (release, mode) of the matrix, one after the other (with --reference: the reference releases).
    #[arg(long)]
    all: bool,
    /// With --all: only the reference releases.
    #[arg(long, requires = "all")]
    reference: bool,
    /// zk or kraft (default: zk where the release has it, else kraft).
    #[arg(long, value_name = "M")]
    mode: Option<Mode>,
    /// Run on the release's unpatched jars: the negative control.
    #[arg(long, conflicts_with = "jars")]
    upstream: bool,
    /// A directory written by `okp build` (default: a splice build, cached per patch-set hash).
    #[arg(long, value_name = "DIR")]
    jars: Option<PathBuf>,
    /// Layers of the patch set to build and prove (default: metrics, so the MET scenario reads the gauges;
    /// `--layer core` proves a core-only build and skips MET).
    #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',', default_value = "metrics")]
    layers: Vec<Layer>,
    /// Comma-separated scenario ids (default: all; with --upstream: the gates INIT,LAT,S4).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    scenarios: Vec<String>,
    /// replica.lag.time.max.ms of the brokers.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    lag_ms: u64,
    /// ZooKeeper / KRaft broker session timeout.
    #[arg(long, value_name = "MS", default_value_t = 4000)]
    session_ms: u64,
    /// Where the evidence goes.
    #[arg(long, value_name = "DIR", default_value = "evidence")]
    evidence: PathBuf,
    /// Keep the run directory (configs, node logs) even when everything passed.
    #[arg(long)]
    keep: bool,
    /// First of 14 consecutive loopback ports, which must all be free (default: a free block from 20000 up, below the kernel's ephemeral port range).
    #[arg(long, value_name = "PORT")]
    base_port: Option<u16>,
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    format: ListFormat,
}

#[derive(Args, Debug)]
struct TreeTarget {
    /// The release (default: what the checkout's gradle.properties says).
    #[arg(long, value_name = "V")]
    version: Option<KafkaVersion>,
    /// zk or kraft; needed when the release supports both.
    #[arg(long, value_name = "M")]
    mode: Option<Mode>,
    /// The checkout (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    source: PathBuf,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// The release whose anchors to check (default: the tree's own version; with no source, every release).
    #[arg(long, value_name = "V", conflicts_with = "all")]
    version: Option<KafkaVersion>,
    /// Check every release of the matrix against its Maven Central sources.
    #[arg(long, conflicts_with_all = ["source", "git", "release"])]
    all: bool,
    /// Only this mode (zk or kraft); default: every mode the release supports.
    #[arg(long, value_name = "M")]
    mode: Option<Mode>,
    /// A Kafka source tree on disk (a checkout).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["git", "release"])]
    source: Option<PathBuf>,
    /// A git repository (bare or not) to read at --rev, without checking it out.
    #[arg(long, value_name = "REPO", requires = "rev", conflicts_with = "release")]
    git: Option<PathBuf>,
    /// Tag, branch or commit to read from --git.
    #[arg(long, value_name = "REV", requires = "git")]
    rev: Option<String>,
    /// A release's sources jars from Maven Central (may be newer than the matrix).
    #[arg(long, value_name = "V")]
    release: Option<KafkaVersion>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// List every anchor, not only the drifted ones.
    #[arg(long, short)]
    verbose: bool,
    /// Also write the report as evidence: DIR/check-anchors.{txt,json}, stamped with okp's version and the time.
    #[arg(long, value_name = "DIR")]
    evidence: Option<PathBuf>,
    /// Check only core plus these layers (repeatable; `--layer core`: core only). Default: every layer.
    #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
    layers: Vec<Layer>,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// The release to port from (its anchors are the patch set compared); default: what the old tree declares.
    #[arg(long, value_name = "V1")]
    from: Option<KafkaVersion>,
    /// The release to port to; read from its Maven Central sources jars unless a tree is given (may be newer than the matrix).
    #[arg(long, value_name = "V2")]
    to: Option<KafkaVersion>,
    /// The old release as a checkout (or a tree laid out by `okp sources`) instead of Maven Central.
    #[arg(long, value_name = "DIR", conflicts_with = "from_rev")]
    from_source: Option<PathBuf>,
    /// The new release as a checkout instead of Maven Central (e.g. a release with no sources jar).
    #[arg(long, value_name = "DIR", conflicts_with = "to_rev")]
    to_source: Option<PathBuf>,
    /// A git repository (bare or not) holding --from-rev and --to-rev; with both, the report lists the commits that touched each hooked file.
    #[arg(long, value_name = "REPO")]
    git: Option<PathBuf>,
    /// Tag, branch or commit of --git for the old release.
    #[arg(long, value_name = "REV", requires = "git")]
    from_rev: Option<String>,
    /// Tag, branch or commit of --git for the new release.
    #[arg(long, value_name = "REV", requires = "git")]
    to_rev: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::port::render::DiffFormat::Table)]
    format: crate::port::render::DiffFormat,
    /// Colour the diffs: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = crate::port::render::ColorChoice::Auto)]
    color: crate::port::render::ColorChoice,
    /// Count a changed site (the anchor holds, the code around it changed) as drift: exit 1 (the weekly sentinel's setting).
    #[arg(long)]
    strict: bool,
    /// Carries over: add V2 to versions.yaml (--versions FILE, default ./versions.yaml), checked with check-anchors. Does not: write the porting worksheet.
    #[arg(long)]
    write: bool,
    /// Where --write puts the porting worksheet (default: porting-V1-V2.md).
    #[arg(long, value_name = "FILE", requires = "write")]
    worksheet: Option<PathBuf>,
}

pub fn run(cli: Cli) -> Result<i32> {
    let model = Model::load(cli.versions.as_deref(), cli.anchors.as_deref())?;
    match cli.command {
        Command::Versions { format } => {
            let out = match format {
                ListFormat::Table => report::versions_table(&model.matrix),
                ListFormat::Json => report::versions_json(&model.matrix),
            };
            print(&out)?;
            Ok(EXIT_OK)
        }
        Command::CheckAnchors(args) => check_anchors(&model, args),
        Command::Diff(args) => diff(model, cli.versions.as_deref(), cli.anchors.as_deref(), args),
        Command::Build(args) => build(&model, cli.patches.as_deref(), args),
        Command::Verify(args) => verify(&model, cli.patches.as_deref(), args),
        Command::Show { version, mode, format, layers } => patch::show(
            &model,
            cli.patches.as_deref(),
            version,
            mode,
            &Layers::with(&layers),
            format == ListFormat::Json,
        ),
        Command::Apply { target, force, dry_run, commit, layers } => patch::apply(
            &model,
            cli.patches.as_deref(),
            &target.source,
            target.version,
            target.mode,
            patch::ApplyOpts { force, dry_run, commit, layers: Layers::with(&layers) },
        ),
        Command::Revert { source, force } => patch::revert(&source, force),
        Command::Status { source } => patch::status(&source),
        Command::Export { version, mode, source, git, rev, output, layers } => {
            let tree: Box<dyn SourceTree> = match (source, git) {
                (Some(d), _) => Box::new(DirTree::open(&d)?),
                (_, Some(g)) => Box::new(GitTree::open(&g, rev.as_deref().unwrap_or("HEAD"))?),
                _ => {
                    let r = model.matrix.require(version)?;
                    if let Some(why) = &r.no_sources_jar {
                        return Err(Error::Usage(format!("release {version}: {why}")));
                    }
                    Box::new(ReleaseTree::open(&Maven::from_env(), &version.to_string(), &r.sources)?)
                }
            };
            patch::export(
                &model,
                cli.patches.as_deref(),
                version,
                mode,
                &Layers::with(&layers),
                tree.as_ref(),
                output.as_deref(),
            )
        }
        Command::Sources { version, out, hooked } => sources(&model, version, &out, hooked),
        Command::Observers { command } => observers(command),
        Command::DevCluster(a) => {
            let release = model.matrix.require(a.version)?.clone();
            let mode = a.mode.unwrap_or(if release.supports(Mode::Zk) { Mode::Zk } else { Mode::Kraft });
            modes_of(&release, Some(mode))?;
            let timers = crate::cluster::Timers { lag_ms: a.lag_ms, session_ms: a.session_ms };
            crate::cluster::harness::hold(&model, cli.patches.as_deref(), release, mode, timers, &a.topic, &a.state)
        }
        Command::Keygen { out, unencrypted } => crate::bundle::keygen(&out, unencrypted),
        Command::Bundle { build, target, key, out, gpg_sign } => {
            crate::bundle::bundle(&model, &build, target, &key, out.as_deref(), gpg_sign.as_deref())
        }
        Command::VerifyBundle { file, pubkey, format } => {
            crate::bundle::verify_bundle(&file, &pubkey, format == ListFormat::Json)
        }
        Command::Install { bundle, kafka_home, pubkey, allow_unverified, dry_run, ignore_arch, accept_local_jars } => {
            crate::bundle::install(
                &bundle,
                &kafka_home,
                pubkey.as_deref(),
                allow_unverified,
                &crate::bundle::ScriptFlags { dry_run, ignore_arch, accept_local_jars, force: false },
            )
        }
        Command::Rollback { kafka_home, dry_run, force } => crate::bundle::rollback(
            &kafka_home,
            &crate::bundle::ScriptFlags { dry_run, ignore_arch: false, accept_local_jars: false, force },
        ),
    }
}

fn observers(command: ObserversCommand) -> Result<i32> {
    use crate::observers::{self, change};
    use std::io::IsTerminal;
    match command {
        ObserversCommand::Status(a) => {
            let (nodes, transport) = a.files.resolve()?;
            let set = change::observer_set(a.observers.as_deref(), a.observers_file.as_deref(), &nodes, &transport)?;
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            observers::status(&observers::StatusArgs {
                bootstrap: a.bootstrap.bootstrap,
                topic: a.topic,
                observers: set,
                max_lag: a.max_lag,
                json: a.format == ListFormat::Json,
                color,
            })
        }
        ObserversCommand::Promote(a) => observers_change(a, change::Direction::Promote),
        ObserversCommand::Demote(a) => {
            if a.for_unclean_election {
                return Err(Error::Usage("--for-unclean-election belongs to promote".into()));
            }
            observers_change(a, change::Direction::Demote)
        }
    }
}

fn observers_change(a: ObserversChangeArgs, direction: crate::observers::change::Direction) -> Result<i32> {
    let (nodes, transport) = a.files.resolve()?;
    let args = crate::observers::change::Args {
        broker: a.broker,
        direction,
        for_unclean: a.for_unclean_election,
        force: a.force,
        dry_run: a.dry_run,
        timeout: std::time::Duration::from_secs(a.timeout),
        bootstrap: a.bootstrap.bootstrap,
    };
    crate::observers::change::run(&nodes, &transport, &args)
}

pub(crate) fn print(s: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        // A closed pipe (`okp … | head`) is the reader's choice, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Error::io("cannot write to stdout", e)),
    }
}

/// Modes to check for a release, honouring --mode.
pub(crate) fn modes_of(release: &Release, mode: Option<Mode>) -> Result<Vec<Mode>> {
    match mode {
        None => Ok(release.modes.clone()),
        Some(m) if release.supports(m) => Ok(vec![m]),
        Some(m) => Err(Error::Usage(format!(
            "release {} has no {m} mode{}",
            release.version,
            release.kraft_note.as_ref().filter(|_| m == Mode::Kraft).map(|n| format!(": {n}")).unwrap_or_default()
        ))),
    }
}

/// Coordinates of a release's sources; for a release not in the matrix (newer, or
/// between two listed ones), the nearest older release's artifacts at its version.
fn coordinates_for(model: &Model, v: KafkaVersion) -> Result<std::collections::BTreeMap<String, Coordinate>> {
    if let Some(r) = model.matrix.get(v) {
        return Ok(r.sources.clone());
    }
    match model.matrix.releases.iter().rev().find(|r| r.version < v) {
        Some(older) => Ok(older.sources.iter().map(|(d, c)| (d.clone(), c.at_version(&v.to_string()))).collect()),
        None => Err(Error::UnknownRelease { version: v.to_string(), supported: model.matrix.supported_list() }),
    }
}

/// The release whose rules (modes, family, anchor range) apply to version `v`.
fn rules_for(model: &Model, v: KafkaVersion) -> Result<&Release> {
    match model.matrix.get(v) {
        Some(r) => Ok(r),
        None if v > model.matrix.newest().version => Ok(model.matrix.newest()),
        None => model.matrix.require(v),
    }
}

fn check_anchors(model: &Model, args: CheckArgs) -> Result<i32> {
    let maven = Maven::from_env();
    let mut report = Report::default();
    let single_tree: Option<Box<dyn SourceTree>> = match (&args.source, &args.git, &args.release) {
        (Some(dir), _, _) => Some(Box::new(DirTree::open(dir)?)),
        (_, Some(repo), _) => Some(Box::new(GitTree::open(repo, args.rev.as_deref().unwrap_or("HEAD"))?)),
        (_, _, Some(v)) => {
            if let Some(why) = model.matrix.get(*v).and_then(|r| r.no_sources_jar.as_ref()) {
                return Err(Error::Usage(format!("release {v}: {why}")));
            }
            Some(Box::new(ReleaseTree::open(&maven, &v.to_string(), &coordinates_for(model, *v)?)?))
        }
        _ => None,
    };
    match single_tree {
        Some(tree) => {
            let tree_version = tree_version(tree.as_ref(), args.version)?;
            let range_version = args.version.unwrap_or(tree_version);
            let rules = rules_for(model, range_version)?;
            let modes = modes_of(rules, args.mode)?;
            let mut targets = check::check_tree(
                &model.anchors,
                rules,
                range_version,
                &modes,
                &check_layers(&args.layers),
                tree.as_ref(),
            )?;
            for t in &mut targets {
                t.release = tree_version;
                t.rules_from = (rules.version != tree_version).then_some(rules.version);
            }
            report.targets = targets;
        }
        None => {
            let releases: Vec<&Release> = match args.version {
                Some(v) => vec![model.matrix.require(v)?],
                None => model.matrix.releases.iter().filter(|r| args.mode.is_none_or(|m| r.supports(m))).collect(),
            };
            if let (Some(_), [r]) = (args.version, releases.as_slice()) {
                if let Some(why) = &r.no_sources_jar {
                    return Err(Error::Usage(format!("release {}: {why}", r.version)));
                }
            }
            // One mvn run for everything a cold cache lacks.
            let wanted: Vec<(Coordinate, Option<&str>)> = releases
                .iter()
                .filter(|r| r.no_sources_jar.is_none())
                .flat_map(|r| r.sources.values().map(|c| (c.clone(), Some("sources"))))
                .collect();
            maven.ensure(&wanted)?;
            for r in releases {
                if let Some(why) = &r.no_sources_jar {
                    for m in modes_of(r, args.mode)? {
                        report.targets.push(check::skipped(r, m, why));
                    }
                    continue;
                }
                let tree = ReleaseTree::open(&maven, &r.version.to_string(), &r.sources)?;
                let modes = modes_of(r, args.mode)?;
                report.targets.extend(check::check_tree(
                    &model.anchors,
                    r,
                    r.version,
                    &modes,
                    &check_layers(&args.layers),
                    &tree,
                )?);
            }
        }
    }
    print(&report::check_report(&report, args.format, args.verbose))?;
    if let Some(dir) = &args.evidence {
        let stamp = format!("okp {} check-anchors, written {}\n\n", env!("CARGO_PKG_VERSION"), report::utc_now());
        let table = report::check_report(&report, Format::Table, true);
        write_atomic(&dir.join("check-anchors.txt"), format!("{stamp}{table}").as_bytes())?;
        write_atomic(&dir.join("check-anchors.json"), report::check_report(&report, Format::Json, false).as_bytes())?;
        eprintln!("okp: evidence written to {}", dir.display());
    }
    Ok(if report.ok() { EXIT_OK } else { EXIT_DRIFT })
}

/// `okp diff`: opens both sides, compares, prints, and with --write adds the
/// new release or writes the porting worksheet (see `port`).
fn diff(model: Model, versions: Option<&Path>, anchors: Option<&Path>, args: DiffArgs) -> Result<i32> {
    use crate::port::{self, render, Side};
    let versions_file = versions.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("versions.yaml"));
    // --write edits a versions.yaml: diff against that same file's matrix.
    let model = if args.write && versions.is_none() { Model::load(Some(&versions_file), anchors)? } else { model };
    let maven = Maven::from_env();
    let open = |which: &str,
                version: Option<KafkaVersion>,
                dir: &Option<PathBuf>,
                rev: &Option<String>|
     -> Result<(Box<dyn SourceTree>, Option<KafkaVersion>)> {
        let tree: Box<dyn SourceTree> = match (dir, rev, &args.git) {
            (Some(d), _, _) => Box::new(DirTree::open(d)?),
            (_, Some(r), Some(repo)) => Box::new(GitTree::open(repo, r)?),
            _ => {
                let v = version.ok_or_else(|| Error::Usage(format!("say which release to diff {which}: --{which} V, --{which}-source DIR or --git REPO --{which}-rev REV")))?;
                let hint = format!(
                    "okp diff reads a checkout instead with --{which}-source DIR or --git REPO --{which}-rev REV"
                );
                if let Some(why) = model.matrix.get(v).and_then(|r| r.no_sources_jar.as_ref()) {
                    return Err(Error::Usage(format!("release {v}: {why}; {hint}")));
                }
                let tree =
                    ReleaseTree::open(&maven, &v.to_string(), &coordinates_for(&model, v)?).map_err(|e| match e {
                        Error::Source(m) if m.starts_with("not published") => {
                            Error::Source(format!("release {v} has no sources jar: {m}; {hint}"))
                        }
                        e => e,
                    })?;
                return Ok((Box::new(tree), Some(v)));
            }
        };
        let declared = tree.declared_version()?.and_then(|d| d.parse::<KafkaVersion>().ok());
        Ok((tree, version.or(declared)))
    };
    let (old_tree, from) = open("from", args.from, &args.from_source, &args.from_rev)?;
    let (new_tree, to) = open("to", args.to, &args.to_source, &args.to_rev)?;
    let from = from.ok_or_else(|| {
        Error::Usage(format!("{} does not say which release it is; pass --from V1", old_tree.describe()))
    })?;
    let rules = model.matrix.require(from)?;
    let (anchor_list, _) = port::patch_set(&model.anchors, rules, from);
    let old = port::read_files(old_tree.as_ref(), &anchor_list)?;
    let new = port::read_files(new_tree.as_ref(), &anchor_list)?;
    let mut report = port::report(
        &model.anchors,
        rules,
        Side { version: Some(from), source: old_tree.describe() },
        Side { version: to, source: new_tree.describe() },
        &old,
        &new,
    )?;
    if let (Some(repo), Some(r1), Some(r2)) = (&args.git, &args.from_rev, &args.to_rev) {
        let files: Vec<String> = report.files.iter().map(|f| f.file.clone()).collect();
        let mut commits = port::commits_touching(repo, r1, r2, &files)?;
        for f in &mut report.files {
            f.commits = commits.remove(&f.file);
        }
    }
    print(&render::render(&report, args.format, args.color.enabled()))?;
    let code = if args.write {
        let anchors_origin = match anchors {
            Some(p) => crate::model::Origin::new(
                p.display().to_string(),
                std::fs::read_to_string(p).map_err(|e| Error::io(format!("cannot read {}", p.display()), e))?,
            ),
            None => crate::model::Origin::new("anchors.yaml (embedded)", crate::model::EMBEDDED_ANCHORS),
        };
        let worksheet = args
            .worksheet
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("porting-{}-{}.md", report.from.label(), report.to.label())));
        port::write::write(
            &report,
            new_tree.as_ref(),
            &maven,
            &port::write::Targets { versions: versions_file, anchors: anchors_origin, worksheet },
        )?
    } else if report.verdict == port::Verdict::Drift {
        EXIT_DRIFT
    } else {
        EXIT_OK
    };
    Ok(if args.strict && code == EXIT_OK && report.verdict != port::Verdict::CarriesOver { EXIT_DRIFT } else { code })
}

/// The release a tree is: --version when given (noting a mismatch), else
/// what the tree declares, which must be a final release.
fn tree_version(tree: &dyn SourceTree, flag: Option<KafkaVersion>) -> Result<KafkaVersion> {
    let declared = tree.declared_version()?;
    match (flag, declared) {
        (Some(v), Some(d)) => {
            if d != v.to_string() {
                eprintln!(
                    "okp: note: {} declares version {d}; checking it against the anchors of {v}",
                    tree.describe()
                );
            }
            Ok(d.parse().unwrap_or(v))
        }
        (Some(v), None) => Ok(v),
        (None, Some(d)) => d.parse().map_err(|_| {
            Error::Usage(format!(
                "{} declares version {d}, which is not a final release; pass --version to choose the anchors to check",
                tree.describe()
            ))
        }),
        (None, None) => Err(Error::Usage(format!(
            "{} does not say which release it is (no gradle.properties version=); pass --version",
            tree.describe()
        ))),
    }
}

/// `okp sources`: lay a release's sources out as a tree, atomically (built
/// beside the target, then renamed into place).
fn sources(model: &Model, version: KafkaVersion, out: &Path, hooked: bool) -> Result<i32> {
    let coords = coordinates_for(model, version)?;
    if out.exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(Error::Tree { path: out.to_path_buf(), msg: "already exists and is not empty".into() });
    }
    let maven = Maven::from_env();
    let tree = ReleaseTree::open(&maven, &version.to_string(), &coords)?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    let staging = tempfile::Builder::new()
        .prefix(".okp-sources-")
        .tempdir_in(parent)
        .map_err(|e| Error::io(format!("cannot create a staging directory in {}", parent.display()), e))?;
    let mut files = tree.files()?;
    if hooked {
        let rules = rules_for(model, version)?;
        let wanted: std::collections::BTreeSet<&str> = rules
            .modes
            .iter()
            .flat_map(|&m| model.anchors.applicable(rules, version, m))
            .map(|a| a.file.as_str())
            .collect();
        files.retain(|(p, _)| wanted.contains(p.as_str()));
    }
    for (path, bytes) in &files {
        let p = staging.path().join(path);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
        }
        std::fs::write(&p, bytes).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
    }
    let marker = serde_json::json!({
        "release": version.to_string(),
        "written_by": format!("okp {}", env!("CARGO_PKG_VERSION")),
        "sources": tree.coordinates(),
    });
    std::fs::write(staging.path().join(MARKER), serde_json::to_string_pretty(&marker).unwrap_or_default() + "\n")
        .map_err(|e| Error::io("cannot write the source marker", e))?;
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| Error::io(format!("cannot replace empty {}", out.display()), e))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::io(format!("cannot move the laid-out tree to {}", out.display()), e)
    })?;
    eprintln!("okp: wrote {} files of Kafka {version} to {}", files.len(), out.display());
    Ok(EXIT_OK)
}

/// The layers check-anchors looks at: every layer unless `--layer` narrows them.
fn check_layers(chosen: &[Layer]) -> Layers {
    if chosen.is_empty() {
        Layers::all()
    } else {
        Layers::with(chosen)
    }
}

fn build(model: &Model, patches: Option<&Path>, args: BuildArgs) -> Result<i32> {
    use crate::build::{gradle, splice};
    let maven = Maven::from_env();
    if args.all {
        let releases: Vec<&Release> = model
            .matrix
            .releases
            .iter()
            .filter(|r| !args.reference || r.reference)
            .filter(|r| args.mode.is_none_or(|m| r.supports(m)))
            .collect();
        let base = args.out.clone().unwrap_or_else(|| PathBuf::from("okp-out"));
        let scratch = if args.check {
            Some(tempfile::tempdir().map_err(|e| Error::io("cannot create a scratch directory", e))?)
        } else {
            None
        };
        let root = scratch.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_else(|| base.clone());
        let mut rows = Vec::new();
        let mut failed = 0;
        for r in releases {
            for m in modes_of(r, args.mode)? {
                let out = root.join(format!("{}-{m}", r.version));
                let t = std::time::Instant::now();
                let result = match &r.no_sources_jar {
                    Some(_) => "skipped: no sources jar on Maven Central".to_string(),
                    None => match splice::splice(model, patches, &maven, r, m, &Layers::with(&args.layers), &out)? {
                        splice::SpliceOutcome::Built(rec) => {
                            let n: usize = rec
                                .jars
                                .iter()
                                .map(|j| j.splice.replaced.len() + j.splice.added.len() + j.splice.removed.len())
                                .sum();
                            format!(
                                "ok ({n} classes changed in {})",
                                rec.jars.iter().map(|j| j.splice.jar.clone()).collect::<Vec<_>>().join(", ")
                            )
                        }
                        splice::SpliceOutcome::CompileFailed(f) => {
                            failed += 1;
                            eprintln!("okp: {} {m}: {} compile failed:\n{}", r.version, f.module, f.output);
                            format!("COMPILE FAILED ({})", f.module)
                        }
                    },
                };
                let secs = t.elapsed().as_secs_f64();
                eprintln!("okp: {} {m}: {result} in {secs:.1}s", r.version);
                rows.push(serde_json::json!({"release": r.version, "mode": m, "family": r.family, "result": result, "seconds": (secs * 10.0).round() / 10.0}));
            }
        }
        let mut table = format!("{:<8} {:<6} {:<6} {:>7}  {}\n", "release", "mode", "family", "seconds", "result");
        for row in &rows {
            table.push_str(&format!(
                "{:<8} {:<6} {:<6} {:>7}  {}\n",
                row["release"].as_str().unwrap_or_default(),
                row["mode"].as_str().unwrap_or_default(),
                row["family"].as_str().unwrap_or_default(),
                row["seconds"],
                row["result"].as_str().unwrap_or_default()
            ));
        }
        table.push_str(&format!("\n{} (release, mode) builds, {failed} failed\n", rows.len()));
        print(&table)?;
        std::fs::create_dir_all(&base).map_err(|e| Error::io(format!("cannot create {}", base.display()), e))?;
        let json = serde_json::to_string_pretty(&serde_json::json!({"okp_version": env!("CARGO_PKG_VERSION"), "written_at": report::utc_now(), "builds": rows})).unwrap_or_default();
        std::fs::write(base.join("build-matrix.json"), json + "\n")
            .map_err(|e| Error::io("cannot write build-matrix.json", e))?;
        return Ok(if failed == 0 { EXIT_OK } else { EXIT_DRIFT });
    }

    let backend = args.backend.unwrap_or(if args.source.is_some() { Backend::Gradle } else { Backend::Splice });
    let (version, root) = match (&args.source, args.version) {
        (Some(dir), v) => {
            let tree = DirTree::open(dir)?;
            (tree_version(&tree, v)?, Some(dir.clone()))
        }
        (None, Some(v)) => (v, None),
        (None, None) => {
            return Err(Error::Usage(
                "pass --version V (splice from Maven Central) or --source DIR (Gradle in a checkout)".into(),
            ))
        }
    };
    let release = model.matrix.require(version)?;
    let mode = match (args.mode, release.modes.as_slice()) {
        (Some(m), _) => modes_of(release, Some(m)).map(|_| m)?,
        (None, [m]) => *m,
        (None, _) => return Err(Error::Usage(format!("release {version} supports zk and kraft: pass --mode"))),
    };
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("okp-out").join(format!("{version}-{mode}")));
    match backend {
        Backend::Gradle => {
            let root =
                root.ok_or_else(|| Error::Usage("the gradle backend needs --source DIR (a patched checkout)".into()))?;
            if !args.layers.is_empty() {
                return Err(Error::Usage("--layer belongs to `okp apply` when building a checkout with Gradle: the checkout already carries the layers it was patched with".into()));
            }
            match gradle::build(&root, release, mode, &out, args.progress)? {
                gradle::Outcome::Built(jars) => {
                    for j in &jars {
                        eprintln!("okp: built {}", j.display());
                    }
                    Ok(EXIT_OK)
                }
                gradle::Outcome::Failed { task, tail, log } => {
                    eprintln!("{tail}");
                    eprintln!(
                        "okp: gradle failed{}; full log: {}",
                        task.map(|t| format!(" in task {t}")).unwrap_or_default(),
                        log.display()
                    );
                    Ok(EXIT_DRIFT)
                }
            }
        }
        Backend::Splice => {
            match splice::splice(model, patches, &maven, release, mode, &Layers::with(&args.layers), &out)? {
                splice::SpliceOutcome::Built(rec) => {
                    for j in &rec.jars {
                        eprintln!(
                            "okp: {}: {} classes replaced, {} added, {} removed, {} entries unchanged; sha256 {}",
                            j.path.display(),
                            j.splice.replaced.len(),
                            j.splice.added.len(),
                            j.splice.removed.len(),
                            j.splice.unchanged,
                            j.sha256
                        );
                    }
                    eprintln!("okp: record: {}", out.join("okp-build.json").display());
                    Ok(EXIT_OK)
                }
                splice::SpliceOutcome::CompileFailed(f) => {
                    eprintln!("{}", f.output.trim_end());
                    eprintln!("okp: the {} compile failed: {}", f.module, f.command);
                    Ok(EXIT_DRIFT)
                }
            }
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory.
fn verify(model: &Model, patches: Option<&Path>, args: VerifyArgs) -> Result<i32> {
    if args.all {
        let pairs: Vec<(KafkaVersion, Mode)> = model
            .matrix
            .releases
            .iter()
            .filter(|r| !args.reference || r.reference)
            .filter(|r| r.no_sources_jar.is_none() || args.upstream)
            .flat_map(|r| r.modes.iter().filter(|m| args.mode.is_none_or(|x| x == **m)).map(move |m| (r.version, *m)))
            .collect();
        let mut worst = EXIT_OK;
        let mut failed = Vec::new();
        for (v, m) in pairs {
            let one = VerifyArgs {
                version: Some(v),
                mode: Some(m),
                all: false,
                reference: false,
                scenarios: args.scenarios.clone(),
                jars: None,
                evidence: args.evidence.clone(),
                layers: args.layers.clone(),
                ..args
            };
            let code = match verify_one(model, patches, one) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("okp: verify {v} {m}: error: {e}");
                    e.exit_code()
                }
            };
            if code != EXIT_OK {
                failed.push(format!("{v} {m}"));
            }
            worst = worst.max(code);
        }
        eprintln!(
            "okp: verify --all: {} failed{}; matrix: {}",
            failed.len(),
            if failed.is_empty() { String::new() } else { format!(" ({})", failed.join(", ")) },
            args.evidence.join("VERIFY.md").display()
        );
        return Ok(worst);
    }
    verify_one(model, patches, args)
}

fn verify_one(model: &Model, patches: Option<&Path>, args: VerifyArgs) -> Result<i32> {
    use crate::scenarios::{self, Flavor};
    let version = args.version.unwrap_or(crate::version::KafkaVersion::new(3, 9, 2));
    let release = model.matrix.require(version)?.clone();
    if let Some(why) = &release.no_sources_jar {
        if !args.upstream && args.jars.is_none() {
            return Err(Error::Usage(format!("release {version}: {why}; okp verify builds its patched jars from those sources (--upstream still runs the negative control)")));
        }
    }
    let mode = match args.mode {
        Some(m) if !release.supports(m) => {
            let why = release.kraft_note.clone().unwrap_or_else(|| format!("{version} has no {m} mode"));
            return Err(Error::Usage(format!("release {version} does not support {m}: {why}")));
        }
        Some(m) => m,
        None if release.supports(Mode::Zk) => Mode::Zk,
        None => Mode::Kraft,
    };
    let flavor = if args.upstream { Flavor::Upstream } else { Flavor::Patched };
    let ids: Vec<String> = if !args.scenarios.is_empty() {
        args.scenarios.clone()
    } else if args.upstream {
        scenarios::SCENARIOS.iter().filter(|s| s.gate).map(|s| s.id.to_string()).collect()
    } else {
        scenarios::SCENARIOS.iter().map(|s| s.id.to_string()).collect()
    };
    // With --jars the build record says which layers the jars carry.
    let layers = match &args.jars {
        Some(dir) => Layers::with(&crate::verify::read_build_record(dir).map(|r| r.layers).unwrap_or_default()),
        None => Layers::with(&args.layers),
    };
    let explicit = !args.scenarios.is_empty();
    let mut selected = Vec::new();
    for id in &ids {
        match scenarios::by_id(id.trim()) {
            Some(s) => match scenarios::needs_layer(s.id) {
                Some(l) if args.upstream || !layers.contains(l) => {
                    if explicit {
                        let why = if args.upstream {
                            "upstream jars carry no layer".to_string()
                        } else if args.jars.is_some() {
                            "the --jars build record does not list it (build with --layer)".to_string()
                        } else {
                            format!("pass --layer {l}")
                        };
                        return Err(Error::Usage(format!("scenario {} needs the {l} layer: {why}", s.id)));
                    }
                    eprintln!("okp: verify: scenario {} left out: it needs the {l} layer", s.id);
                }
                _ => selected.push(s),
            },
            None => {
                let known: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.id).collect();
                return Err(Error::Usage(format!("unknown scenario `{id}`; known: {}", known.join(", "))));
            }
        }
    }
    if args.lag_ms < 500 || args.session_ms < 1000 {
        return Err(Error::Usage("--lag-ms must be at least 500 and --session-ms at least 1000".into()));
    }
    let opts = crate::verify::Options {
        release,
        mode,
        flavor,
        jars: args.jars,
        layers,
        scenarios: selected,
        timers: crate::cluster::Timers { lag_ms: args.lag_ms, session_ms: args.session_ms },
        evidence: args.evidence,
        keep: args.keep,
        base_port: args.base_port,
        json: args.format == ListFormat::Json,
    };
    crate::verify::run(model, patches, opts)
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(format!("cannot write in {}", dir.display()), e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    tmp.persist(path).map_err(|e| Error::io(format!("cannot write {}", path.display()), e.error))?;
    Ok(())
}
