//! A patched Kafka cluster across a run's hosts (filled in below).
//!
//! Not here: the hosts (`hosts`).
