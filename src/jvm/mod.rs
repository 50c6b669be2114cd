//! The JVM floor: what okp knows of Java itself, shared by every stage that touches it. One
//! class-file reader (`classfile`: header facts for a splice, the normalised model the proofs and
//! `okp diff --binary` compare), one way to find a JDK's tools (`jdk`), and the class-data-sharing
//! archives every okp JVM maps (`cds`: where an archive lives, keyed by the JDK, and its flags).
//!
//! It sits at the bottom beside `fsx`: it imports only the foundations, never a product or a
//! cluster, so `build`, `diff` and `cluster` all reach Java through it.
//!
//! Not here: compiling (`build::splice`), running Kafka (`cluster`), what a class difference
//! means (`build::proof`).

pub mod cds;
pub mod classfile;
pub mod jdk;
