//! okp: observer replicas for Apache Kafka, as a library the `okp` binary
//! drives. The pipeline, bottom to top (docs/architecture.md draws it):
//!
//! - foundations: `error` (outcomes, exit codes), `out` (stdout, messages),
//!   `fsx` (atomic writes), `hash`, `jvm` (the one class-file reader, the
//!   JDK's tools, class-data-sharing archives), `plot` (line charts as PNG
//!   for the scenarios' evidence), `schema` (the versioned records okp
//!   writes), `version`
//! - data: `model` (versions.yaml, anchors.yaml), `patchset` (edits.yaml and
//!   our own sources, in layers)
//! - upstream sources: `maven`, `source` (directory, git, release jars),
//!   `workspace` (what a command works with)
//! - anchors and edits: `anchor`, `check`, `report`, `apply`, `tx`, `gitwt`,
//!   `patch`
//! - products: `build` (splice, Gradle), `diff` (`okp diff`: porting to a new release),
//!   `bundle` (signed bundles, install, rollback)
//! - live clusters: `wire` (Kafka protocol client), `cluster`, `scenarios`,
//!   `verify`, `dev_cluster`, `bench`, `observers`, `monitoring` (the exporter's
//!   rules, alert rules, a Prometheus server, the Grafana dashboard), `hosts`
//!   (separate hosts in network namespaces over ssh), `playground` (a local
//!   cluster to try by hand)
//! - the command line: `cli` (flags only), `cmd` (one module per command)
//!
//! A module imports only modules listed before its own line, or its own
//! line's; `tests/it/architecture.rs` checks that on every run.

pub mod error;
pub mod escape;
pub mod fsx;
pub mod hash;
pub mod jvm;
pub mod out;
pub mod plot;
pub mod schema;
pub mod version;

pub mod model;
pub mod patchset;

pub mod maven;
pub mod source;
pub mod workspace;

pub mod anchor;
pub mod apply;
pub mod check;
pub mod gitwt;
pub mod patch;
pub mod report;
pub mod tx;

pub mod build;
pub mod bundle;
pub mod diff;
pub mod releases;

pub mod bench;
pub mod cluster;
pub mod dev_cluster;
pub mod hosts;
pub mod monitoring;
pub mod observers;
pub mod playground;
pub mod scenarios;
pub mod soak;
pub mod unit_tests;
pub mod verify;
pub mod wire;

pub mod cli;
pub mod cmd;
