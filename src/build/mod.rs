//! Building patched jars: the splice backend (from a release's jars, no
//! checkout) and the Gradle backend (a checkout's own wrapper), and the
//! records a build writes (okp-build.json: `record`; build-matrix.json of
//! `okp build --all`: `matrix`).
//!
//! Not here: what the patch set changes (`apply`, `patchset`), bundling the
//! jars (`bundle`).

pub mod compare;
pub mod gradle;
pub mod jar;
pub mod matrix;
pub mod proof;
pub mod recheck;
pub mod record;
pub mod resident;
pub mod show;
pub mod splice;
pub mod synthetic;
