//! A runnable Kafka for one release, assembled from Maven Central: the
//! release's own runtime classpath (kafka_2.13 plus kafka-tools, as their POMs
//! resolve), a logging binding where the POMs name none, and — for a patched
//! run — the spliced jars in place of their upstream twins.
//!
//! Not here: starting processes (node.rs) or deciding which tool class to run
//! (tools.rs reads the jar index this module builds).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::build::record::BuildRecord;
use crate::error::{Error, Result};
use crate::maven::Maven;
use crate::model::Coordinate;
use crate::version::KafkaVersion;

/// log4j 2 for Kafka 4.0.x, whose POMs name no log4j version at all; 4.1 on
/// name theirs in kafka-server's POM and that one is used.
const LOG4J2_FALLBACK: &str = "2.24.3";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Logging {
    /// log4j 1 API (log4j 1.2.17 or reload4j): `-Dlog4j.configuration`.
    Log4j1,
    /// log4j 2: `-Dlog4j2.configurationFile`.
    Log4j2,
}

#[derive(Clone)]
pub struct Runtime {
    pub version: KafkaVersion,
    pub java: PathBuf,
    pub java_version: String,
    pub classpath: Vec<PathBuf>,
    pub logging: Logging,
    /// Extra artifacts added to the POM's classpath, and why.
    pub added: Vec<String>,
    /// (upstream jar, patched jar, sha256 of the patched jar) for a patched run.
    pub swapped: Vec<(PathBuf, PathBuf, String)>,
    /// Kafka Connect artifacts left out of the classpath because Maven Central lacks them here.
    pub left_out: Vec<String>,
    /// Class-data-sharing archive for tool JVMs on this classpath: (path, still to be dumped).
    pub tool_cds: Option<(PathBuf, bool)>,
    /// The servers' class-data-sharing plan (their classpath order and archive), or why they
    /// have none (OKP_NO_CDS, or a replaced jar's class also in another jar).
    pub server_cds: std::result::Result<super::server_cds::Plan, String>,
    /// Where okp's compiled Java classes (client, tool batch) are kept between runs.
    pub client_cache: PathBuf,
}

/// Kafka Connect's modules, which kafka-tools depends on and no process okp starts loads.
const CONNECT: [&str; 8] = [
    "connect-api",
    "connect-json",
    "connect-transforms",
    "connect-runtime",
    "connect-file",
    "connect-mirror",
    "connect-mirror-client",
    "connect-basic-auth-extension",
];

impl Runtime {
    /// Resolves the release's runtime classpath; with `build`, swaps in its jars.
    pub fn assemble(maven: &Maven, version: KafkaVersion, build: Option<&BuildRecord>) -> Result<Runtime> {
        let v = version.to_string();
        let kafka = |artifact: &str| Coordinate {
            group: "org.apache.kafka".into(),
            artifact: artifact.into(),
            version: v.clone(),
        };
        let mut deps = vec![kafka("kafka_2.13"), kafka("kafka-tools")];
        // kafka-tools brings Kafka Connect's jars, which neither a broker nor a tool okp runs
        // loads; Maven Central as reached here lacks some of them (connect-api 4.0.1). Only
        // then is the classpath resolved without them, and the run says so.
        let mut left_out: Vec<String> = Vec::new();
        let mut resolve = |deps: &[Coordinate], key: &str| -> Result<Vec<PathBuf>> {
            let items: Vec<(Coordinate, Option<&str>)> = deps.iter().map(|c| (c.clone(), None)).collect();
            if left_out.is_empty() {
                match maven.classpath_with(&items, key) {
                    Err(Error::NotPublished(why)) if why.contains("org.apache.kafka:connect-") => {
                        crate::out::note(format!(
                            "verify: {v}'s classpath without Kafka Connect's jars, which Maven Central lacks here: {why}"
                        ));
                        left_out = CONNECT.iter().map(|a| format!("org.apache.kafka:{a}:{v}")).collect();
                    }
                    other => return other,
                }
            }
            let exclude: Vec<(&str, &str)> = CONNECT.iter().map(|a| ("org.apache.kafka", *a)).collect();
            maven.classpath_excluding(&items, &exclude, &format!("{key}-without-connect"))
        };
        let base = resolve(&deps, &format!("okp-verify-runtime-{v}-pom"))?;
        let (logging, added) = logging_binding(maven, version, &base)?;
        let mut classpath = if added.is_empty() {
            base
        } else {
            deps.extend(added.iter().cloned());
            resolve(&deps, &format!("okp-verify-runtime-{v}"))?
        };
        let mut swapped = Vec::new();
        if let Some(rec) = build {
            if rec.release != version {
                return Err(Error::Usage(format!("the build record is for {} but the run is for {v}", rec.release)));
            }
            swapped = rec.swap_into(&mut classpath, &format!("the {v} runtime classpath"))?;
        }
        check_one_binding(&classpath, &v)?;
        let java = crate::jvm::jdk::java_bin("java");
        let java_version = crate::jvm::jdk::version_line(&java).map_err(|e| {
            Error::External(format!("cannot run {} ({e}); okp verify needs a JDK (set JAVA_HOME)", java.display()))
        })?;
        // Keyed by each jar's path, size and modification time: a JVM refuses a dynamic archive
        // whose jars changed since the dump (verify's cached patched jars are rebuilt in place
        // when their record lacks a proof), and that refusal once cost three scenarios.
        let digest = jar_identity(&classpath, "");
        let tool_cds =
            crate::jvm::cds::archive(&maven.repo_local, &java_version, &format!("kafka-tools-{v}-{}", &digest[..16]));
        let server_cds = {
            let replaced: Vec<PathBuf> = swapped.iter().map(|(_, patched, _)| patched.clone()).collect();
            let shared: Vec<PathBuf> = classpath.iter().filter(|p| !replaced.contains(p)).cloned().collect();
            let digest = jar_identity(&shared, &super::SERVER_HEAP_GC.join(" "));
            match crate::jvm::cds::archive(
                &maven.repo_local,
                &java_version,
                &format!("kafka-server-{v}-{}", &digest[..16]),
            ) {
                Some((archive, _)) => super::server_cds::plan(&classpath, &replaced, archive),
                None => Err("no class-data-sharing archive for the servers (OKP_NO_CDS, or no cache directory)".into()),
            }
        };
        Ok(Runtime {
            tool_cds,
            server_cds,
            client_cache: maven.repo_local.join("okp-client"),
            version,
            java,
            java_version,
            classpath,
            logging,
            added: added.iter().map(|c| c.to_string()).collect(),
            left_out,
            swapped,
        })
    }

    pub fn classpath_string(&self) -> String {
        std::env::join_paths(&self.classpath).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The servers' jars in classpath order: with a class-data-sharing plan, the jars the bundle
    /// replaces last (server_cds.rs says why that changes no lookup); else the release's order.
    pub fn server_jars(&self) -> Vec<PathBuf> {
        match &self.server_cds {
            Ok(plan) => plan.order(),
            Err(_) => self.classpath.clone(),
        }
    }

    pub fn server_classpath_string(&self) -> String {
        std::env::join_paths(self.server_jars()).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// Class name → jar file name, for every class on the classpath.
    pub fn class_index(&self) -> Result<BTreeMap<String, String>> {
        let mut index = BTreeMap::new();
        for jar in &self.classpath {
            let f = crate::fsx::read::open_regular(jar, crate::fsx::read::MAX_JAR)
                .map_err(|e| e.into_error(jar, "runtime classpath's jar"))?;
            let Ok(z) = zip::ZipArchive::new(f) else { continue };
            let name = jar.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            for entry in z.file_names() {
                if let Some(c) = entry.strip_suffix(".class") {
                    index.entry(c.replace('/', ".")).or_insert_with(|| name.clone());
                }
            }
        }
        Ok(index)
    }

    /// The logging configuration files for servers (INFO on stdout) and tools
    /// (WARN on stderr, so a tool's stdout is only its output).
    pub fn write_logging(&self, dir: &Path) -> Result<(String, String)> {
        let (server, tool, prop) = match self.logging {
            Logging::Log4j1 => (LOG4J1_SERVER.to_string(), LOG4J1_TOOL.to_string(), "log4j.configuration"),
            Logging::Log4j2 => (
                LOG4J2_SERVER.to_string(),
                LOG4J2_SERVER.replace("rootLogger.level = info", "rootLogger.level = warn").replace(
                    "appender.out.type = Console",
                    "appender.out.type = Console\nappender.out.target = SYSTEM_ERR",
                ),
                "log4j2.configurationFile",
            ),
        };
        let s = dir.join("log-server.properties");
        let t = dir.join("log-tool.properties");
        crate::fsx::write_atomic(&s, server.as_bytes())?;
        crate::fsx::write_atomic(&t, tool.as_bytes())?;
        Ok((format!("-D{prop}=file:{}", s.display()), format!("-D{prop}=file:{}", t.display())))
    }
}

const LOG4J1_SERVER: &str = "log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
";

const LOG4J1_TOOL: &str = "log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=[%d] %p %m (%c)%n
";

const LOG4J2_SERVER: &str = "status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = OUT
logger.zk.name = org.apache.zookeeper
logger.zk.level = warn
";

/// The logging binding: the one the POMs already bring (2.x and early 3.x get
/// slf4j-log4j12 through kafka-log4j-appender; adding another would make two),
/// else what the binary distribution ships: reload4j on 3.x, log4j 2 at
/// kafka-server's version on 4.x.
/// A digest of `jars`' identities (path, size, modification time) and `extra`: the key of a
/// class-data-sharing archive dumped from them.
fn jar_identity(jars: &[PathBuf], extra: &str) -> String {
    let mut ident = String::new();
    for p in jars {
        let m = std::fs::metadata(p).ok();
        let mtime = m.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(UNIX_EPOCH).ok());
        ident.push_str(&format!(
            "{}\0{}\0{}\n",
            p.display(),
            m.as_ref().map_or(0, |m| m.len()),
            mtime.map_or(0, |d| d.as_nanos())
        ));
    }
    ident.push_str(extra);
    crate::hash::sha256(ident.as_bytes())
}

fn logging_binding(maven: &Maven, v: KafkaVersion, base: &[PathBuf]) -> Result<(Logging, Vec<Coordinate>)> {
    let has =
        |prefix: &str| base.iter().any(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)));
    if has("slf4j-log4j12-") || has("slf4j-reload4j-") {
        return Ok((Logging::Log4j1, vec![]));
    }
    if has("log4j-slf4j-impl-") || has("log4j-slf4j2-impl-") {
        return Ok((Logging::Log4j2, vec![]));
    }
    let c = |g: &str, a: &str, ver: &str| Coordinate { group: g.into(), artifact: a.into(), version: ver.into() };
    Ok(match v.major {
        0..=3 => (
            Logging::Log4j1,
            vec![c("ch.qos.reload4j", "reload4j", "1.2.25"), c("org.slf4j", "slf4j-reload4j", "1.7.36")],
        ),
        _ => {
            let l = log4j2_version(maven, v)?;
            (
                Logging::Log4j2,
                vec![
                    c("org.apache.logging.log4j", "log4j-slf4j-impl", &l),
                    c("org.apache.logging.log4j", "log4j-core", &l),
                ],
            )
        }
    })
}

fn log4j2_version(maven: &Maven, v: KafkaVersion) -> Result<String> {
    let server =
        Coordinate { group: "org.apache.kafka".into(), artifact: "kafka-server".into(), version: v.to_string() };
    let pom = maven.path(&server, None).with_extension("pom");
    if !pom.is_file() {
        // The POM arrives with the runtime classpath; fetch it alone on a cold cache.
        let _ = maven.classpath(&server);
    }
    let text =
        crate::fsx::read::read_optional_text(&pom, crate::fsx::read::MAX_TEXT).ok().flatten().unwrap_or_default();
    Ok(pom_dependency_version(&text, "log4j-core").unwrap_or_else(|| LOG4J2_FALLBACK.to_string()))
}

/// The `<version>` of the dependency `artifact` in a POM's text.
fn pom_dependency_version(pom: &str, artifact: &str) -> Option<String> {
    let at = pom.find(&format!("<artifactId>{artifact}</artifactId>"))?;
    let rest = &pom[at..];
    let end = rest.find("</dependency>").unwrap_or(rest.len());
    let block = &rest[..end];
    let v0 = block.find("<version>")? + "<version>".len();
    let v1 = block[v0..].find("</version>")? + v0;
    Some(block[v0..v1].trim().to_string())
}

/// Exactly one SLF4J binding: none logs nothing, two log unpredictably.
fn check_one_binding(cp: &[PathBuf], v: &str) -> Result<()> {
    let bindings: Vec<String> = cp
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| {
            n.starts_with("slf4j-log4j12-")
                || n.starts_with("slf4j-reload4j-")
                || n.starts_with("log4j-slf4j-impl-")
                || n.starts_with("log4j-slf4j2-impl-")
        })
        .collect();
    if bindings.len() == 1 {
        Ok(())
    } else {
        Err(Error::Harness(format!(
            "the {v} runtime classpath has {} SLF4J bindings ({}); expected exactly one",
            bindings.len(),
            bindings.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_dependency_version_from_a_pom() {
        let pom = "<dependency><groupId>x</groupId><artifactId>log4j-api</artifactId><version>1</version></dependency>\
                   <dependency><groupId>x</groupId><artifactId>log4j-core</artifactId><version>2.25.4</version></dependency>";
        assert_eq!(pom_dependency_version(pom, "log4j-core").as_deref(), Some("2.25.4"));
        assert_eq!(pom_dependency_version(pom, "log4j-slf4j-impl"), None);
    }

    #[test]
    fn wants_exactly_one_binding() {
        let one = vec![PathBuf::from("/r/slf4j-reload4j-1.7.36.jar"), PathBuf::from("/r/slf4j-api-1.7.36.jar")];
        assert!(check_one_binding(&one, "3.9.2").is_ok());
        let two = vec![PathBuf::from("/r/slf4j-reload4j-1.7.36.jar"), PathBuf::from("/r/slf4j-log4j12-1.7.30.jar")];
        assert!(check_one_binding(&two, "2.7.2").is_err());
        assert!(check_one_binding(&[], "2.7.2").is_err());
    }
}
