//! unit-tests.yaml: what `okp unit-tests` runs for a release, per release
//! family: the test-only libraries of that family's build, the Kafka artifacts
//! whose `-test.jar` join the classpath, the upstream test classes of the
//! hooked classes, the observer ids of the third and fourth configurations,
//! and the expected changes (a test whose outcome the observer contract
//! changes, and the rule of docs/contract.md that explains it).
//!
//! Loaded and validated once (`UnitData::parse`): every error is
//! `file:line:col: message` and exits 2, before anything runs.
//!
//! Not here: running the tests (`unit_tests`), judging outcomes (`judge`).

use std::str::FromStr;

use crate::error::{Error, Result};
use crate::model::{yaml, Coordinate, Mode, Origin};
use crate::version::KafkaVersion;

/// The copy compiled into okp, so it runs from any directory.
pub const EMBEDDED: &str = include_str!("../../unit-tests.yaml");

/// The contract's rules and edges an expected change may name (docs/contract.md).
pub const RULES: &[&str] = &[
    "rule 1",
    "rule 2",
    "rule 3",
    "rule 4",
    "rule 5",
    "rule 6",
    "edge: reassignment",
    "edge: elections",
    "edge: leader balance",
];

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    schema: u32,
    launcher: String,
    families: Vec<RawFamily>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamily {
    name: String,
    from: KafkaVersion,
    to: KafkaVersion,
    libraries: Vec<String>,
    runtime: Vec<String>,
    test_jars: Vec<String>,
    #[serde(default)]
    jvm_args: Vec<String>,
    observers: Vec<u32>,
    classes: Vec<RawClass>,
    #[serde(default)]
    expected: Vec<Expected>,
    /// An earlier family whose expected changes this one shares (for the classes both run), after
    /// its own: a test's change is explained alike across the releases of neighbouring families.
    #[serde(default)]
    expected_from: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    class: String,
    modes: Vec<Mode>,
}

/// An outcome change with observers configured that the contract explains.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// `SimpleClassName.method`: matches every invocation of the method (parameters, repetitions).
    pub test: String,
    /// One of `RULES`.
    pub rule: String,
    /// One sentence: why the rule changes this test's outcome.
    pub why: String,
    /// The kinds of failure the test may end with when there are two (`[timeout, exception]`: a
    /// block that either of two timeouts of the test reports first). Failing in one of them under
    /// `observers` and in another under `rules` still ends alike. Empty: one kind, as run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ends: Vec<crate::verify::unit_record::Kind>,
}

impl Expected {
    /// Whether `a` and `b` are failures of kinds this entry names in `ends` (so alike).
    pub fn alike(
        &self,
        a: &crate::verify::unit_record::TestOutcome,
        b: &crate::verify::unit_record::TestOutcome,
    ) -> bool {
        use crate::verify::unit_record::TestOutcome::Fail;
        matches!((a, b), (Fail { kind: x, .. }, Fail { kind: y, .. }) if self.ends.contains(x) && self.ends.contains(y))
    }

    /// Whether `test` (`SimpleClassName.method(params)[n]`) is this entry's test.
    pub fn matches(&self, test: &str) -> bool {
        let base = test.split('(').next().unwrap_or(test);
        base == self.test || test == self.test
    }
}

/// A test class and the modes it is run in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestClass {
    pub class: String,
    pub modes: Vec<Mode>,
}

impl TestClass {
    pub fn simple_name(&self) -> &str {
        self.class.rsplit('.').next().unwrap_or(&self.class)
    }
}

#[derive(Clone, Debug)]
pub struct Family {
    pub name: String,
    pub from: KafkaVersion,
    pub to: KafkaVersion,
    /// Test-only libraries, at this family's versions.
    pub libraries: Vec<Coordinate>,
    /// org.apache.kafka artifacts whose runtime classpath the tests run on.
    pub runtime: Vec<String>,
    /// org.apache.kafka artifacts whose `-test.jar` join the classpath.
    pub test_jars: Vec<String>,
    pub jvm_args: Vec<String>,
    pub observers: Vec<u32>,
    pub classes: Vec<TestClass>,
    pub expected: Vec<Expected>,
}

impl Family {
    pub fn classes_for(&self, mode: Mode) -> Vec<&TestClass> {
        self.classes.iter().filter(|c| c.modes.contains(&mode)).collect()
    }

    /// The entry that explains a change of `test`, if any.
    pub fn explains(&self, test: &str) -> Option<&Expected> {
        self.expected.iter().find(|e| e.matches(test))
    }
}

#[derive(Clone, Debug)]
pub struct UnitData {
    pub origin_name: String,
    /// The JUnit console launcher (standalone jar).
    pub launcher: Coordinate,
    pub families: Vec<Family>,
}

impl UnitData {
    /// The embedded file, or `path`.
    pub fn load(path: Option<&std::path::Path>) -> Result<UnitData> {
        let origin = match path {
            Some(p) => yaml::read(p, yaml::Input::Data)?,
            None => Origin::new("unit-tests.yaml (embedded)", EMBEDDED),
        };
        UnitData::parse(&origin)
    }

    pub fn parse(origin: &Origin) -> Result<UnitData> {
        let raw: Raw = yaml::parse(origin)?;
        if raw.schema != 1 {
            return Err(
                origin.error_at("schema:", format!("schema {} is not one this okp reads (it reads 1)", raw.schema))
            );
        }
        let coord = |s: &str| Coordinate::from_str(s).map_err(|e| origin.error_at(s, e));
        let launcher = coord(&raw.launcher)?;
        let mut families: Vec<Family> = Vec::new();
        for f in raw.families {
            let at = |msg: String| origin.error_at(&format!("name: {}", f.name), msg);
            if f.from > f.to {
                return Err(at(format!("family {}: from {} is after to {}", f.name, f.from, f.to)));
            }
            if let Some(o) = families.iter().find(|o| f.from <= o.to && o.from <= f.to) {
                return Err(at(format!("family {} overlaps family {} ({}..{})", f.name, o.name, o.from, o.to)));
            }
            if f.classes.is_empty() || f.runtime.is_empty() || f.test_jars.is_empty() {
                return Err(at(format!("family {}: classes, runtime and test_jars must not be empty", f.name)));
            }
            if f.observers.is_empty() {
                return Err(at(format!("family {}: observers must name at least one id", f.name)));
            }
            for c in &f.classes {
                let ok = !c.class.is_empty()
                    && c.class
                        .split('.')
                        .all(|p| !p.is_empty() && p.chars().all(|ch| ch.is_alphanumeric() || ch == '_'));
                if !ok || c.modes.is_empty() {
                    return Err(origin.error_at(
                        &c.class,
                        format!("`{}` is not a test class name with modes (e.g. kafka.cluster.PartitionTest)", c.class),
                    ));
                }
            }
            for e in &f.expected {
                if !RULES.contains(&e.rule.as_str()) {
                    return Err(origin.error_at(
                        &e.test,
                        format!("{}: rule `{}` is not one of docs/contract.md's: {}", e.test, e.rule, RULES.join(", ")),
                    ));
                }
                let class = e.test.split('.').next().unwrap_or_default();
                if !f.classes.iter().any(|c| c.class.rsplit('.').next() == Some(class)) || !e.test.contains('.') {
                    return Err(origin.error_at(
                        &e.test,
                        format!("{}: not `Class.method` of a class family {} runs", e.test, f.name),
                    ));
                }
                if e.why.trim().is_empty() {
                    return Err(origin.error_at(&e.test, format!("{}: `why` is empty", e.test)));
                }
            }
            let mut expected = f.expected;
            if let Some(name) = &f.expected_from {
                let Some(base) = families.iter().find(|o| &o.name == name) else {
                    return Err(at(format!(
                        "family {}: expected_from `{name}` is not a family defined above it",
                        f.name
                    )));
                };
                let runs = |test: &str| {
                    let class = test.split('.').next().unwrap_or_default();
                    f.classes.iter().any(|c| c.class.rsplit('.').next() == Some(class))
                };
                for e in &base.expected {
                    if runs(&e.test) && !expected.iter().any(|o: &Expected| o.test == e.test) {
                        expected.push(e.clone());
                    }
                }
            }
            let libraries = f.libraries.iter().map(|s| coord(s)).collect::<Result<Vec<_>>>()?;
            families.push(Family {
                name: f.name,
                from: f.from,
                to: f.to,
                libraries,
                runtime: f.runtime,
                test_jars: f.test_jars,
                jvm_args: f.jvm_args,
                observers: f.observers,
                classes: f.classes.into_iter().map(|c| TestClass { class: c.class, modes: c.modes }).collect(),
                expected,
            });
        }
        Ok(UnitData { origin_name: origin.name.clone(), launcher, families })
    }

    /// The family of `v`, or why there is none.
    pub fn family(&self, v: KafkaVersion) -> Result<&Family> {
        self.families.iter().find(|f| f.from <= v && v <= f.to).ok_or_else(|| {
            let have: Vec<String> = self.families.iter().map(|f| format!("{}..{}", f.from, f.to)).collect();
            Error::Usage(format!(
                "{}: no unit-test family covers {v} (it covers {}); add one with that release's test libraries",
                self.origin_name,
                have.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_parses_and_covers_the_reference_releases() {
        let d = UnitData::load(None).unwrap();
        for v in ["2.7.2", "3.9.2", "4.3.1"] {
            d.family(v.parse().unwrap()).unwrap();
        }
    }

    #[test]
    fn an_expected_change_must_name_a_contract_rule() {
        let bad = EMBEDDED.replacen("rule: \"rule 1\"", "rule: \"rule 9\"", 1);
        assert_ne!(bad, EMBEDDED, "the embedded file has an expectation citing rule 1");
        let e = UnitData::parse(&Origin::new("u.yaml", bad)).unwrap_err().to_string();
        assert!(e.starts_with("u.yaml:") && e.contains("rule `rule 9` is not one of"), "{e}");
    }

    #[test]
    fn a_family_shares_the_expected_changes_of_an_earlier_one() {
        let d = UnitData::load(None).unwrap();
        let f = d.family("3.0.2".parse().unwrap()).unwrap();
        // u3.0 takes u2.8's (which took u2.7's) for the classes it runs.
        assert!(f.explains("PartitionTest.testIsrExpansion()").is_some());
        assert!(f.explains("PartitionTest.testMonotonicOffsetsAfterLeaderChange()").is_some());
        let names: Vec<&str> = f.expected.iter().map(|e| e.test.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "no test twice: {names:?}");
        // Naming a family that is not above it is refused, with the file and line.
        let bad = EMBEDDED.replacen("expected_from: u2.7", "expected_from: u9.9", 1);
        assert_ne!(bad, EMBEDDED);
        let e = UnitData::parse(&Origin::new("u.yaml", bad)).unwrap_err().to_string();
        assert!(e.starts_with("u.yaml:") && e.contains("expected_from `u9.9` is not a family defined above it"), "{e}");
    }

    #[test]
    fn an_expectation_matches_every_invocation_of_its_method() {
        let e = Expected { test: "PartitionTest.testX".into(), rule: "rule 1".into(), why: "w".into(), ends: vec![] };
        assert!(e.matches("PartitionTest.testX()"));
        assert!(e.matches("PartitionTest.testX(boolean)[2]"));
        assert!(!e.matches("PartitionTest.testXY()"));
    }
}
