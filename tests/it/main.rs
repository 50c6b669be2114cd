//! okp's integration tests, compiled as one test binary (`cargo test --test it`): each module is
//! one area (the file names say which; docs/testing.md lists them), `common` the shared support.
//! One binary links okp and the test crates once instead of 31 times, and lets the test harness
//! spread every test over the machine's cores.

mod common;

mod ansible_role;
mod apply_safety;
mod architecture;
mod bad_input;
mod bench;
mod build;
mod build_from_tree;
mod bundle;
mod ci_workflows;
mod diff;
mod drift;
mod exit_codes;
mod git_provider;
mod hardening_bundle;
mod hardening_sources;
mod hardening_transport;
mod hardening_tree;
mod hardening_yaml;
mod hosts;
mod monitoring;
mod observer_ids_contract;
mod observers;
mod observers_watch;
mod patch_set;
mod playground;
mod provenance;
mod readme_claims;
mod real_releases;
mod records;
mod releases;
mod resident;
mod ship_proven;
mod soak;
mod unit_tests;
mod verify;
