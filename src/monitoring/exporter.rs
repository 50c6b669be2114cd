//! The Prometheus JMX exporter as a Java agent in each node: the jar from Maven Central, checked
//! against the hash okp pins, and the rules file okp ships (contrib/monitoring/jmx-exporter.yml).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::Coordinate;

/// io.prometheus.jmx:jmx_prometheus_javaagent: 1.0.1 is the newest on Maven Central (2026-12)
/// and runs on Java 8 and later, so on every JDK a Kafka release of the matrix runs on.
pub const VERSION: &str = "1.0.1";
/// SHA-256 of jmx_prometheus_javaagent-1.0.1.jar (its .sha1 on Maven Central agrees:
/// f9c53eb0aa1828c3c9cd7647238563e43a4ed68c).
pub const SHA256: &str = "7d61f737fd661610ccc14aea79764faa1ea94a340cbc8f0029b3d2edea3d80c1";

/// The rules okp ships for it.
pub const RULES: &str = include_str!("../../contrib/monitoring/jmx-exporter.yml");

pub fn coordinate() -> Coordinate {
    Coordinate {
        group: "io.prometheus.jmx".into(),
        artifact: "jmx_prometheus_javaagent".into(),
        version: VERSION.into(),
    }
}

/// The agent jar in the Maven cache (fetched when missing), refused unless its bytes hash to
/// `SHA256`.
pub fn jar() -> Result<PathBuf> {
    let mvn = crate::maven::Maven::from_env()?;
    let c = coordinate();
    let path = mvn.ensure(&[(c.clone(), None)])?.remove(0);
    let bytes = crate::fsx::read::input(&path, 64 << 20, "the JMX exporter's jar")?;
    let got = crate::hash::sha256(&bytes);
    if got != SHA256 {
        return Err(Error::External(format!(
            "{} hashes to {got}, not the {SHA256} okp pins for {c}: remove it from the Maven cache and fetch it again",
            path.display()
        )));
    }
    Ok(path)
}

/// The agent in a node's JVM: serve on 127.0.0.1:`port` with the rules at `rules`. The JVM
/// splits `-javaagent:` at the first `=` and the agent its argument at `:`, so neither path may
/// hold those characters.
pub fn agent_flag(jar: &Path, port: u16, rules: &Path) -> Result<String> {
    let (j, r) = (jar.display().to_string(), rules.display().to_string());
    if j.contains('=') || r.contains(':') || r.contains('=') {
        return Err(Error::Usage(format!(
            "the JMX exporter cannot be given {j} and {r}: the agent jar's path may not hold '=', the rules file's neither ':' nor '='"
        )));
    }
    Ok(format!("-javaagent:{j}=127.0.0.1:{port}:{r}"))
}
