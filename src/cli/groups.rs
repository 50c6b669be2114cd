//! Flag groups several commands share, each declared once with its help: the release and mode
//! pairs (one per way a command picks the mode when `--mode` is absent), the sources of a
//! release (`--tree` / `--git --rev`) and the optional layers.
//!
//! Not here: a command's own flags (`cli`), the defaults that depend on data (`cmd` and
//! `Release::mode_for`).

use std::path::PathBuf;

use clap::Args;

use crate::model::{Layer, Mode};
use crate::version::KafkaVersion;

/// `--version V --mode M` of a command that starts a cluster: both have defaults
/// (`ModeDefault::ZkFirst`).
#[derive(Args, Clone, Debug)]
pub struct ClusterRelease {
    /// The release; the default is the last release with both modes.
    #[arg(long, value_name = "V", default_value = "3.9.2")]
    pub version: KafkaVersion,
    /// zk or kraft (default: zk where the release has it, else kraft).
    #[arg(long, value_name = "M")]
    pub mode: Option<Mode>,
}

/// `--version V --mode M` of a command that works on a source tree: the release defaults to the
/// tree's own, the mode must be named when the release has both (`ModeDefault::Ask`).
#[derive(Args, Clone, Debug)]
pub struct TreeRelease {
    /// The release (default: the version the source tree declares in its gradle.properties).
    #[arg(long, value_name = "V")]
    pub version: Option<KafkaVersion>,
    /// zk or kraft; needed when the release supports both.
    #[arg(long, value_name = "M")]
    pub mode: Option<Mode>,
}

/// `--version V --mode M` of a command that needs the release named: the mode must be named
/// when the release has both (`ModeDefault::Ask`).
#[derive(Args, Clone, Debug)]
pub struct ReleaseMode {
    /// The release.
    #[arg(long, value_name = "V")]
    pub version: KafkaVersion,
    /// zk or kraft; needed when the release supports both.
    #[arg(long, value_name = "M")]
    pub mode: Option<Mode>,
}

/// `--mode M` of a command that acts on every mode of a release unless told one
/// (`Release::modes_for`).
#[derive(Args, Clone, Debug)]
pub struct ModeFilter {
    /// Only this mode (zk or kraft); default: every mode the release supports.
    #[arg(long, value_name = "M")]
    pub mode: Option<Mode>,
}

/// `--git REPO --rev REV`: a release's sources read from a git repository without a checkout.
#[derive(Args, Clone, Debug, Default)]
pub struct GitRev {
    /// A git repository (bare or not) to read the sources from at --rev, without checking it out.
    #[arg(long = "git", id = "git", value_name = "REPO", requires = "rev")]
    pub repo: Option<PathBuf>,
    /// Tag, branch or commit to read from --git.
    #[arg(long, value_name = "REV", requires = "git")]
    pub rev: Option<String>,
}

/// `--tree DIR` or `--git REPO --rev REV`: a release's sources other than its Maven Central
/// sources jars. `okp build` splices from them; bundle, install and verify --jars re-derive such a
/// build's jars from the same tree (a release without a sources jar: 4.2.2, 4.3.2, 4.4.0) and
/// ignore it for a release with one.
#[derive(Args, Clone, Debug, Default)]
pub struct ReleaseSourceArgs {
    /// The release's sources as a tree (a pristine checkout or an `okp sources` tree) instead of its
    /// Maven Central sources jars; after a build from a tree, the same tree.
    #[arg(long, value_name = "DIR", conflicts_with = "git")]
    pub tree: Option<PathBuf>,
    #[command(flatten)]
    pub git: GitRev,
}

/// `--layer L`: the optional layers a command takes on top of the core patch set.
#[derive(Args, Clone, Debug, Default)]
pub struct LayerArgs {
    /// An optional layer of the patch set to take as well (repeatable): metrics (JMX gauges, docs/observer-metrics.md).
    #[arg(long = "layer", value_name = "L", value_enum, value_delimiter = ',')]
    pub layers: Vec<Layer>,
}
