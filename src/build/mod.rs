//! Building patched jars: the splice backend (from a release's jars, no
//! checkout) and the Gradle backend (a checkout's own wrapper).

pub mod bytecode;
pub mod classfile;
pub mod gradle;
pub mod jar;
pub mod proof;
pub mod splice;
