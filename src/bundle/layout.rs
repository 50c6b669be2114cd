//! What goes into a bundle, as a pure function of its inputs: the patched jars,
//! the install and rollback scripts, the observer.ids template, NOTICE,
//! LICENSE, INSTALL.md, OBSERVERS.md (operating observers with `okp
//! observers`), OBSERVER-METRICS.md (with the metrics layer: the gauges,
//! from docs/observer-metrics.md), the opt-in observer watchdog's
//! OBSERVERS-WATCH.md (docs/observers-watch.md), monitoring/ (with the metrics layer: the JMX
//! exporter's rules, the alert rules, the Grafana dashboard), systemd unit and example
//! config (off until it says `enable: true`), and MANIFEST.json. The texts live in `files/` and are
//! embedded at build time; `{{KEY}}` placeholders are filled here.
//!
//! The shell scripts share `files/common.sh` by textual inclusion, so each
//! shipped script stands alone (rollback.sh is copied into the Kafka
//! installation and must work without the bundle).

use std::collections::BTreeMap;

use super::archive::{File, MODE_EXEC, MODE_FILE};
use super::manifest::{self, Artifact, Build, FileInfo, Identity, Jar, Manifest, Upstream};
use super::target::NativeLib;
use crate::hash::sha256;

const INSTALL_SH: &str = include_str!("files/install.sh");
const ROLLBACK_SH: &str = include_str!("files/rollback.sh");
const COMMON_SH: &str = include_str!("files/common.sh");
const NOTICE: &str = include_str!("files/NOTICE");
const INSTALL_MD: &str = include_str!("files/INSTALL.md");
const OBSERVER_IDS: &str = include_str!("files/observer.ids.template");
const OBSERVERS_MD: &str = include_str!("files/OBSERVERS.md");
/// `okp observers watch`: its page, its systemd unit (which never passes --enable) and its example config.
const OBSERVERS_WATCH_MD: &str = include_str!("../../docs/observers-watch.md");
const WATCH_SERVICE: &str = include_str!("files/okp-observer-watch.service");
const WATCH_CONFIG: &str = include_str!("files/observer-watch.yaml");
/// Shipped only in bundles whose jars carry the metrics layer.
const OBSERVER_METRICS_MD: &str = include_str!("../../docs/observer-metrics.md");
/// contrib/monitoring's files as shipped (the alert rules are `monitoring::alerts::render` with
/// Kafka's defaults, a test holds them to it).
const MONITORING_EXPORTER: &str = include_str!("../../contrib/monitoring/jmx-exporter.yml");
const MONITORING_ALERTS: &str = include_str!("../../contrib/monitoring/alerts.yml");
const MONITORING_DASHBOARD: &str = include_str!("../../contrib/monitoring/dashboard.json");

/// Fills `{{KEY}}` placeholders. Every placeholder of the template must be given.
fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    debug_assert!(!out.contains("{{"), "unfilled placeholder in a bundle template");
    out
}

/// The rollback script: the same for every bundle (it reads what install recorded).
pub fn rollback_script() -> String {
    render(ROLLBACK_SH, &[("COMMON", COMMON_SH)])
}

/// A patched jar as the bundle carries it.
pub struct JarInput {
    /// File name in libs/ (checked to be a plain `<artifact>-<release>.jar`).
    pub file_name: String,
    pub bytes: Vec<u8>,
    pub module: String,
    pub upstream: Artifact,
    pub replaced: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

pub struct Inputs {
    pub id: Identity,
    pub family: String,
    pub patch_set_hash: String,
    /// The layers the jars carry (`core` first).
    pub layers: Vec<crate::model::Layer>,
    pub build: Build,
    pub sources: BTreeMap<String, Artifact>,
    /// The build record's provenance proofs (the manifest carries them).
    pub provenance: Option<Box<crate::build::proof::Provenance>>,
    pub jars: Vec<JarInput>,
    /// Apache Kafka's LICENSE and NOTICE, from the upstream core jar.
    pub license: Vec<u8>,
    pub upstream_notice: String,
}

/// Every file of the bundle except the manifest.
pub fn files(i: &Inputs) -> Vec<File> {
    let id = &i.id;
    let name = id.name();
    let release = id.release.to_string();
    let okp_version = env!("CARGO_PKG_VERSION");
    let jars_data: String = i
        .jars
        .iter()
        .map(|j| format!("\n{} {} {}", j.file_name, j.upstream.sha256, sha256(&j.bytes)))
        .collect::<String>()
        + "\n";
    let sources: String = i.build.recompiled_sources.iter().map(|s| format!("  {s}\n")).collect();
    let file_list: String = i
        .jars
        .iter()
        .map(|j| {
            format!(
                "- `libs/{}`: a patched copy of `{}` ({} classes recompiled, {} added, {} removed; every other entry unchanged).\n",
                j.file_name,
                j.upstream.coordinate,
                j.replaced.len(),
                j.added.len(),
                j.removed.len()
            )
        })
        .collect();
    // One set of values for every template; each uses the placeholders it needs.
    let vars = [
        ("OKP_VERSION", okp_version),
        ("NAME", &name),
        ("RELEASE", &release),
        ("MODE", id.mode.as_str()),
        ("TARGET", id.target.as_str()),
        ("MACHINES", &id.target.uname_machines().join(" ")),
        ("PATCH_SET", &i.patch_set_hash),
        ("BACKEND", &i.build.backend),
        ("JARS", &jars_data),
        ("SOURCES", &sources),
        ("FILES", file_list.trim_end()),
        ("UPSTREAM_NOTICE", i.upstream_notice.trim_end()),
        ("COMMON", COMMON_SH),
    ];
    let (install, notice, docs) = (render(INSTALL_SH, &vars), render(NOTICE, &vars), render(INSTALL_MD, &vars));
    let text = |path: &str, mode: u32, s: String| File { path: path.into(), mode, bytes: s.into_bytes() };
    let mut files = vec![
        text("install.sh", MODE_EXEC, install),
        text("rollback.sh", MODE_EXEC, rollback_script()),
        text("config/observer.ids.template", MODE_FILE, OBSERVER_IDS.to_string()),
        text("NOTICE", MODE_FILE, notice),
        text("INSTALL.md", MODE_FILE, docs),
        text("OBSERVERS.md", MODE_FILE, OBSERVERS_MD.to_string()),
        text("OBSERVERS-WATCH.md", MODE_FILE, OBSERVERS_WATCH_MD.to_string()),
        text("systemd/okp-observer-watch.service", MODE_FILE, WATCH_SERVICE.to_string()),
        text("config/observer-watch.yaml.example", MODE_FILE, WATCH_CONFIG.to_string()),
        File { path: "LICENSE".into(), mode: MODE_FILE, bytes: i.license.clone() },
    ];
    if i.layers.contains(&crate::model::Layer::Metrics) {
        files.push(text("OBSERVER-METRICS.md", MODE_FILE, OBSERVER_METRICS_MD.to_string()));
        // The monitoring files for the gauges (docs/monitoring.md): the JMX exporter's rules,
        // the alert rules for Kafka's default timers (`okp monitoring` renders them for others),
        // the Grafana dashboard.
        files.push(text("monitoring/jmx-exporter.yml", MODE_FILE, MONITORING_EXPORTER.to_string()));
        files.push(text("monitoring/alerts.yml", MODE_FILE, MONITORING_ALERTS.to_string()));
        files.push(text("monitoring/dashboard.json", MODE_FILE, MONITORING_DASHBOARD.to_string()));
    }
    files.extend(i.jars.iter().map(|j| File {
        path: format!("libs/{}", j.file_name),
        mode: MODE_FILE,
        bytes: j.bytes.clone(),
    }));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The manifest of `files` (which must not include the manifest itself), given
/// the native libraries the caller found in them.
pub fn manifest(i: &Inputs, files: &[File], native: Vec<NativeLib>) -> Manifest {
    Manifest {
        schema: manifest::SCHEMA.into(),
        name: i.id.name(),
        product: manifest::PRODUCT.into(),
        okp_version: env!("CARGO_PKG_VERSION").into(),
        release: i.id.release.to_string(),
        mode: i.id.mode.to_string(),
        target: i.id.target.to_string(),
        family: i.family.clone(),
        patch_set_hash: i.patch_set_hash.clone(),
        layers: i.layers.clone(),
        architecture_independent: native.is_empty(),
        native_libraries: native,
        upstream: Upstream { project: "Apache Kafka".into(), sources: i.sources.clone() },
        build: i.build.clone(),
        provenance: i.provenance.clone(),
        jars: i
            .jars
            .iter()
            .map(|j| Jar {
                path: format!("libs/{}", j.file_name),
                module: j.module.clone(),
                upstream: j.upstream.clone(),
                sha256: sha256(&j.bytes),
                replaced: j.replaced.clone(),
                added: j.added.clone(),
                removed: j.removed.clone(),
            })
            .collect(),
        files: files
            .iter()
            .map(|f| {
                (
                    f.path.clone(),
                    FileInfo {
                        sha256: sha256(&f.bytes),
                        size: f.bytes.len() as u64,
                        mode: manifest::mode_string(f.mode),
                    },
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::target::Target;
    use crate::model::Mode;

    fn inputs() -> Inputs {
        Inputs {
            id: Identity { release: "3.9.2".parse().unwrap(), mode: Mode::Kraft, target: Target::LinuxAarch64 },
            family: "f3.7".into(),
            patch_set_hash: "b".repeat(64),
            layers: crate::model::anchors::core_only(),
            build: Build {
                backend: "splice".into(),
                compilers: BTreeMap::new(),
                recompiled_sources: vec!["core/src/main/scala/kafka/cluster/Partition.scala".into()],
            },
            sources: BTreeMap::new(),
            provenance: None,
            jars: vec![JarInput {
                file_name: "kafka_2.13-3.9.2.jar".into(),
                bytes: b"jar".to_vec(),
                module: "core".into(),
                upstream: Artifact { coordinate: "org.apache.kafka:kafka_2.13:3.9.2".into(), sha256: "c".repeat(64) },
                replaced: vec!["kafka/cluster/Partition.class".into()],
                added: vec![],
                removed: vec![],
            }],
            license: b"Apache License".to_vec(),
            upstream_notice: "Apache Kafka\nCopyright".into(),
        }
    }

    #[test]
    fn every_placeholder_is_filled_and_the_scripts_carry_the_data() {
        let fs = files(&inputs());
        for f in &fs {
            let t = String::from_utf8_lossy(&f.bytes);
            assert!(!t.contains("{{"), "{}: unfilled placeholder", f.path);
        }
        let install = String::from_utf8_lossy(&fs.iter().find(|f| f.path == "install.sh").unwrap().bytes).into_owned();
        assert!(install.contains("MACHINES='aarch64 arm64'"));
        assert!(install.contains(&format!("kafka_2.13-3.9.2.jar {} {}", "c".repeat(64), sha256(b"jar"))));
        assert!(install.contains("sha256_of()"), "common.sh is included");
        let observers =
            String::from_utf8_lossy(&fs.iter().find(|f| f.path == "OBSERVERS.md").unwrap().bytes).into_owned();
        assert!(
            observers.contains("okp observers status") && observers.contains("never overrides"),
            "the operator's page for okp observers ships"
        );
        let shipped = |p: &str| String::from_utf8_lossy(&fs.iter().find(|f| f.path == p).unwrap().bytes).into_owned();
        let unit = shipped("systemd/okp-observer-watch.service");
        let exec: Vec<&str> = unit.lines().filter(|l| l.starts_with("ExecStart=")).collect();
        assert!(exec.len() == 1 && !exec[0].contains("--enable"), "the unit needs the config's explicit enable");
        assert!(shipped("config/observer-watch.yaml.example").contains("enable: false"));
        assert!(shipped("OBSERVERS-WATCH.md").contains("okp observers watch"));
        let notice = String::from_utf8_lossy(&fs.iter().find(|f| f.path == "NOTICE").unwrap().bytes).into_owned();
        assert!(
            notice.contains("MODIFIED BUILD OF APACHE KAFKA")
                && notice.contains("Partition.scala")
                && notice.ends_with("Copyright\n")
        );
        let m = manifest(&inputs(), &fs, vec![]);
        assert!(m.validate().is_ok(), "{:?}", m.validate());
        assert_eq!(m.files["install.sh"].mode, "0755");
    }

    #[test]
    fn nothing_calls_the_bundle_apache_kafka() {
        // Apache's trademark policy: a modified build is "a build of Apache Kafka", never "Apache Kafka X".
        for f in files(&inputs()) {
            let t = String::from_utf8_lossy(&f.bytes);
            if f.path == "LICENSE" {
                continue;
            }
            for line in t.lines().filter(|l| l.contains("Apache Kafka 3.9.2")) {
                assert!(line.contains("of Apache Kafka") || line.contains("NOTICE of"), "{}: {line}", f.path);
            }
        }
    }
}
