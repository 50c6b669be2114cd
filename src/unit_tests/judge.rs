//! The verdicts of `okp unit-tests`, a pure function of the configurations'
//! outcomes and the family's expected changes:
//! - a **regression** is a test that passes on upstream jars and does not on
//!   patched jars with no observer: the run fails;
//! - a **change** is a test whose outcome (pass, skip, or the kind of failure)
//!   differs between patched jars without and with observers. Each is listed
//!   with its kind and message; one the expected list does not explain fails the
//!   run; an exception or a timeout is marked for review even when explained.
//!   A test that does not pass on upstream jars says nothing about the patch
//!   set (on a loaded machine an upstream test with a tight timeout fails in
//!   one configuration and passes in the next): its changes are listed apart,
//!   as not comparable, and do not fail the run;
//! - a **rules difference** is a test whose outcome under `rules` (every topic's
//!   observers from a topic rule `regex:.* observers=IDS` in the observer file)
//!   differs from its outcome under `observers` (the same ids, cluster-wide,
//!   from `KAFKA_OBSERVER_BROKER_IDS`). Nothing explains one: both give every
//!   topic the same observers, so each fails the run, whether or not the test
//!   passes upstream. A run without `rules` outcomes (a record of a
//!   three-configuration run, rejudged) has none.
//!
//! Not here: reading reports (`junit`), running (`unit_tests`), the record's layout (`verify::unit_record`).

use std::collections::BTreeMap;

use super::data::Family;
use crate::verify::unit_record::{Change, Config, Kind, Regression, RulesDifference, TestOutcome};

/// Test name → outcome, for one configuration.
pub type Outcomes = BTreeMap<String, TestOutcome>;

/// What the configurations say together.
#[derive(Debug, Default, PartialEq)]
pub struct Judgement {
    pub regressions: Vec<Regression>,
    pub changes: Vec<Change>,
    /// Tests whose outcome under `rules` is not the one under `observers`.
    pub rules_differences: Vec<RulesDifference>,
    /// Changes of tests that do not pass upstream: listed, not judged.
    pub not_comparable: Vec<Change>,
    /// Expected entries no test's change matched (stale after a patch-set change, or a flake).
    pub unused_expectations: Vec<String>,
}

impl Judgement {
    pub fn unexplained(&self) -> usize {
        self.changes.iter().filter(|c| c.rule.is_none()).count()
    }

    pub fn ok(&self) -> bool {
        self.regressions.is_empty() && self.unexplained() == 0 && self.rules_differences.is_empty()
    }
}

fn missing() -> TestOutcome {
    TestOutcome::Fail {
        kind: Kind::Exception,
        exception: "(absent)".into(),
        message: "no result in this configuration".into(),
    }
}

/// The failures worth running again alone, with the configuration they happened in: a test that
/// passes upstream and not on patched jars (a regression if it stands), the failing side of a
/// change with observers no expected entry explains, and the failing side of a test whose outcome
/// under `rules` is not the one under `observers` (both sides when both fail, in two ways: a
/// hang that either of two timeouts of the test reports first). Explained changes are not re-run: they are
/// the contract at work, and they fail every time (under `rules` as under `observers`).
pub fn to_retry(family: &Family, outcomes: &BTreeMap<Config, Outcomes>) -> Vec<(Config, String)> {
    let empty = Outcomes::new();
    let get = |c: Config| outcomes.get(&c).unwrap_or(&empty);
    let (up, p, o) = (get(Config::Upstream), get(Config::Patched), get(Config::Observers));
    let mut out = Vec::new();
    for (test, u) in up {
        if !u.passed() {
            continue;
        }
        let (pt, ot) = (p.get(test), o.get(test));
        if pt.is_some_and(|x| !x.passed()) {
            out.push((Config::Patched, test.clone()));
        }
        let differ = matches!((pt, ot), (Some(a), Some(b)) if a.word() != b.word());
        if differ && family.explains(test).is_none() && ot.is_some_and(|x| !x.passed()) {
            out.push((Config::Observers, test.clone()));
        }
    }
    // Rules against observers, for every test either reports, passing upstream or not (a
    // difference fails the run either way).
    if let Some(r) = outcomes.get(&Config::Rules) {
        let mut names: Vec<&String> = o.keys().chain(r.keys()).collect();
        names.sort();
        names.dedup();
        for test in names {
            let (ot, rt) = (o.get(test), r.get(test));
            if let (Some(a), Some(b)) = (ot, rt) {
                if end_alike(family, test, a, b) {
                    continue;
                }
            }
            if rt.is_some_and(|x| !x.passed()) {
                out.push((Config::Rules, test.clone()));
            }
            // Failing on both sides in two ways, both sides run again: either may end as the other.
            let queued = out.iter().any(|(c, t)| *c == Config::Observers && t == test);
            if ot.is_some_and(|x| !x.passed()) && !queued {
                out.push((Config::Observers, test.clone()));
            }
        }
    }
    out
}

/// Whether `test` ends alike under `observers` (`o`) and `rules` (`r`): the same outcome, or two
/// failures of kinds its expected entry names in `ends`.
fn end_alike(family: &Family, test: &str, o: &TestOutcome, r: &TestOutcome) -> bool {
    o.word() == r.word() || family.explains(test).is_some_and(|e| e.alike(o, r))
}

/// Compares the configurations (`rules`: None for a three-configuration run). Tests that only
/// some configurations report count as absent in the others (a failure: a test that vanished is
/// not a pass).
pub fn judge(
    family: &Family,
    upstream: &Outcomes,
    patched: &Outcomes,
    observers: &Outcomes,
    rules: Option<&Outcomes>,
) -> Judgement {
    let mut j = Judgement::default();
    for (test, up) in upstream {
        let p = patched.get(test).cloned().unwrap_or_else(missing);
        if up.passed() && !p.passed() {
            j.regressions.push(Regression { test: test.clone(), upstream: up.clone(), patched: p });
        }
    }
    let mut names: Vec<&String> = patched.keys().chain(observers.keys()).collect();
    names.sort();
    names.dedup();
    for test in names {
        let p = patched.get(test).cloned().unwrap_or_else(missing);
        let o = observers.get(test).cloned().unwrap_or_else(missing);
        if p.word() == o.word() {
            continue;
        }
        let explained = family.explains(test);
        let comparable = upstream.get(test).is_some_and(TestOutcome::passed);
        let review = matches!(o, TestOutcome::Fail { kind: Kind::Exception | Kind::Timeout, .. });
        let change = Change {
            test: test.clone(),
            patched: p,
            observers: o,
            rule: explained.map(|e| e.rule.clone()),
            why: explained.map(|e| e.why.clone()),
            review,
        };
        if comparable {
            j.changes.push(change);
        } else {
            j.not_comparable.push(change);
        }
    }
    j.unused_expectations = family
        .expected
        .iter()
        .filter(|e| {
            // Only the classes this run ran: a family's KRaft entries say nothing in a ZooKeeper run.
            let class = format!("{}.", e.test.split('.').next().unwrap_or_default());
            patched.keys().any(|t| t.starts_with(&class))
        })
        .filter(|e| !j.changes.iter().chain(&j.not_comparable).any(|c| e.matches(&c.test)))
        .map(|e| e.test.clone())
        .collect();
    if let Some(rules) = rules {
        let mut names: Vec<&String> = observers.keys().chain(rules.keys()).collect();
        names.sort();
        names.dedup();
        for test in names {
            let o = observers.get(test).cloned().unwrap_or_else(missing);
            let r = rules.get(test).cloned().unwrap_or_else(missing);
            if !end_alike(family, test, &o, &r) {
                j.rules_differences.push(RulesDifference { test: test.clone(), observers: o, rules: r });
            }
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit_tests::data::{Expected, UnitData};

    fn family(expected: Vec<Expected>) -> Family {
        let mut f = UnitData::load(None).unwrap().family("3.9.2".parse().unwrap()).unwrap().clone();
        f.expected = expected;
        f
    }

    fn fail(kind: Kind) -> TestOutcome {
        TestOutcome::Fail { kind, exception: "x".into(), message: "m".into() }
    }

    fn of(items: &[(&str, TestOutcome)]) -> Outcomes {
        items.iter().map(|(t, o)| (t.to_string(), o.clone())).collect()
    }

    #[test]
    fn only_failures_that_would_fail_the_run_are_run_again() {
        let e =
            Expected { test: "PartitionTest.explained".into(), rule: "rule 1".into(), why: "w".into(), ends: vec![] };
        let up = of(&[
            ("PartitionTest.flake()", TestOutcome::Pass),
            ("PartitionTest.explained()", TestOutcome::Pass),
            ("PartitionTest.odd()", TestOutcome::Pass),
            ("PartitionTest.brokenUpstream()", fail(Kind::Exception)),
        ]);
        let p = of(&[
            ("PartitionTest.flake()", fail(Kind::Exception)),
            ("PartitionTest.explained()", TestOutcome::Pass),
            ("PartitionTest.odd()", TestOutcome::Pass),
            ("PartitionTest.brokenUpstream()", fail(Kind::Exception)),
        ]);
        let o = of(&[
            ("PartitionTest.flake()", TestOutcome::Pass),
            ("PartitionTest.explained()", fail(Kind::Assertion)),
            ("PartitionTest.odd()", fail(Kind::Timeout)),
            ("PartitionTest.brokenUpstream()", TestOutcome::Pass),
        ]);
        let all: BTreeMap<Config, Outcomes> =
            [(Config::Upstream, up), (Config::Patched, p), (Config::Observers, o)].into();
        let r = to_retry(&family(vec![e]), &all);
        assert_eq!(
            r,
            [
                (Config::Patched, "PartitionTest.flake()".to_string()),
                (Config::Observers, "PartitionTest.odd()".to_string())
            ]
        );
    }

    #[test]
    fn a_test_passing_upstream_and_failing_patched_is_a_regression() {
        let up = of(&[("A.t()", TestOutcome::Pass), ("A.u()", fail(Kind::Assertion)), ("A.v()", TestOutcome::Pass)]);
        let p = of(&[("A.t()", fail(Kind::Assertion)), ("A.u()", fail(Kind::Assertion))]);
        let j = judge(&family(vec![]), &up, &p, &p, Some(&p));
        let names: Vec<&str> = j.regressions.iter().map(|r| r.test.as_str()).collect();
        assert_eq!(names, ["A.t()", "A.v()"], "a failure upstream is no regression; a vanished test is one");
        assert!(!j.ok());
    }

    #[test]
    fn an_observer_change_fails_unless_a_rule_explains_it() {
        let p = of(&[("PartitionTest.t(boolean)[1]", TestOutcome::Pass), ("PartitionTest.u()", TestOutcome::Pass)]);
        let o =
            of(&[("PartitionTest.t(boolean)[1]", fail(Kind::Assertion)), ("PartitionTest.u()", fail(Kind::Timeout))]);
        let j = judge(&family(vec![]), &p, &p, &o, Some(&o));
        assert_eq!((j.changes.len(), j.unexplained(), j.ok()), (2, 2, false));
        assert!(j.changes[1].review && !j.changes[0].review);
        // A test that fails upstream is not evidence either way.
        let up = of(&[("PartitionTest.t(boolean)[1]", fail(Kind::Timeout)), ("PartitionTest.u()", TestOutcome::Pass)]);
        let j = judge(&family(vec![]), &up, &p, &o, Some(&o));
        assert_eq!((j.changes.len(), j.not_comparable.len()), (1, 1));
        assert_eq!(j.not_comparable[0].test, "PartitionTest.t(boolean)[1]");
        let e = Expected { test: "PartitionTest.t".into(), rule: "rule 1".into(), why: "w".into(), ends: vec![] };
        let stale =
            Expected { test: "PartitionTest.gone".into(), rule: "rule 5".into(), why: "w".into(), ends: vec![] };
        let j = judge(&family(vec![e, stale]), &p, &p, &o, None);
        assert_eq!(j.unexplained(), 1);
        assert_eq!(j.changes[0].rule.as_deref(), Some("rule 1"));
        assert_eq!(j.unused_expectations, ["PartitionTest.gone"]);
    }

    #[test]
    fn rules_giving_each_test_its_outcome_with_observers_pass() {
        let e = Expected { test: "PartitionTest.t".into(), rule: "rule 1".into(), why: "w".into(), ends: vec![] };
        let p = of(&[("PartitionTest.t()", TestOutcome::Pass), ("PartitionTest.u()", TestOutcome::Pass)]);
        let o = of(&[("PartitionTest.t()", fail(Kind::Assertion)), ("PartitionTest.u()", TestOutcome::Pass)]);
        // The explained change happens under rules too: rules ≡ observers, nothing more to explain.
        let j = judge(&family(vec![e.clone()]), &p, &p, &o, Some(&o.clone()));
        assert!(j.ok(), "{j:?}");
        assert_eq!((j.changes.len(), j.rules_differences.len()), (1, 0));
        // Another message of the same kind is the same outcome (as between patched and observers).
        let other = of(&[
            (
                "PartitionTest.t()",
                TestOutcome::Fail { kind: Kind::Assertion, exception: "y".into(), message: "other".into() },
            ),
            ("PartitionTest.u()", TestOutcome::Pass),
        ]);
        assert!(judge(&family(vec![e]), &p, &p, &o, Some(&other)).ok());
    }

    #[test]
    fn a_rules_outcome_other_than_the_observers_one_fails_the_run_naming_both() {
        let e = Expected { test: "PartitionTest.t".into(), rule: "rule 1".into(), why: "w".into(), ends: vec![] };
        let up = of(&[
            ("PartitionTest.t()", TestOutcome::Pass),
            ("PartitionTest.u()", TestOutcome::Pass),
            ("PartitionTest.v()", fail(Kind::Timeout)),
            ("PartitionTest.w()", TestOutcome::Pass),
        ]);
        let o = of(&[
            ("PartitionTest.t()", fail(Kind::Assertion)),
            ("PartitionTest.u()", TestOutcome::Pass),
            ("PartitionTest.v()", fail(Kind::Timeout)),
            ("PartitionTest.w()", TestOutcome::Pass),
        ]);
        let r = of(&[
            // An explained change with observers that does not happen under rules.
            ("PartitionTest.t()", TestOutcome::Pass),
            // A change under rules alone: an entry explaining it with observers would not help.
            ("PartitionTest.u()", fail(Kind::Exception)),
            // Failing upstream does not excuse it here.
            ("PartitionTest.v()", TestOutcome::Pass),
            // PartitionTest.w() vanished.
        ]);
        let j = judge(&family(vec![e]), &up, &up, &o, Some(&r));
        assert!(!j.ok());
        assert_eq!((j.regressions.len(), j.unexplained()), (0, 0), "{j:?}");
        let d: Vec<(&str, String, String)> =
            j.rules_differences.iter().map(|d| (d.test.as_str(), d.observers.word(), d.rules.word())).collect();
        assert_eq!(
            d,
            [
                ("PartitionTest.t()", "fail (assertion)".into(), "pass".into()),
                ("PartitionTest.u()", "pass".into(), "fail (exception)".into()),
                ("PartitionTest.v()", "fail (timeout)".into(), "pass".into()),
                ("PartitionTest.w()", "pass".into(), "fail (exception)".into()),
            ]
        );
        // Without rules outcomes (a three-configuration record), there is nothing to compare.
        assert!(judge(&family(vec![]), &up, &up, &up, None).ok());
    }

    /// An entry's `ends` makes two failures of its kinds alike between observers and rules (no
    /// difference, nothing run again); a kind it does not name, or a pass, is still a difference.
    #[test]
    fn an_entry_naming_two_kinds_takes_either_as_the_same_end() {
        let e = |test: &str| Expected {
            test: test.into(),
            rule: "rule 2".into(),
            why: "w".into(),
            ends: vec![Kind::Timeout, Kind::Exception],
        };
        let up = of(&[("PartitionLockTest.a()", TestOutcome::Pass), ("PartitionLockTest.b()", TestOutcome::Pass)]);
        let o = of(&[("PartitionLockTest.a()", fail(Kind::Timeout)), ("PartitionLockTest.b()", fail(Kind::Timeout))]);
        let r =
            of(&[("PartitionLockTest.a()", fail(Kind::Exception)), ("PartitionLockTest.b()", fail(Kind::Assertion))]);
        let f = family(vec![e("PartitionLockTest.a"), e("PartitionLockTest.b")]);
        let j = judge(&f, &up, &up, &o, Some(&r));
        let d: Vec<&str> = j.rules_differences.iter().map(|d| d.test.as_str()).collect();
        assert_eq!(d, ["PartitionLockTest.b()"], "{j:?}");
        let outcomes: BTreeMap<Config, Outcomes> =
            [(Config::Upstream, up.clone()), (Config::Patched, up.clone()), (Config::Observers, o), (Config::Rules, r)]
                .into();
        let again: Vec<String> = to_retry(&f, &outcomes).into_iter().map(|(_, t)| t).collect();
        assert!(again.iter().all(|t| t == "PartitionLockTest.b()") && !again.is_empty(), "{again:?}");
    }

    #[test]
    fn the_failing_side_of_a_rules_difference_is_run_again() {
        let e = Expected { test: "PartitionTest.t".into(), rule: "rule 1".into(), why: "w".into(), ends: vec![] };
        let up = of(&[
            ("PartitionTest.t()", TestOutcome::Pass),
            ("PartitionTest.u()", TestOutcome::Pass),
            ("PartitionTest.same()", TestOutcome::Pass),
        ]);
        let o = of(&[
            ("PartitionTest.t()", fail(Kind::Assertion)),
            ("PartitionTest.u()", TestOutcome::Pass),
            ("PartitionTest.same()", fail(Kind::Assertion)),
        ]);
        let r = of(&[
            ("PartitionTest.t()", TestOutcome::Pass),
            ("PartitionTest.u()", fail(Kind::Timeout)),
            ("PartitionTest.same()", fail(Kind::Assertion)),
        ]);
        let all: BTreeMap<Config, Outcomes> =
            [(Config::Upstream, up.clone()), (Config::Patched, up), (Config::Observers, o), (Config::Rules, r)].into();
        let mut got = to_retry(&family(vec![e]), &all);
        got.sort();
        assert_eq!(
            got,
            [
                (Config::Observers, "PartitionTest.same()".to_string()),
                (Config::Observers, "PartitionTest.t()".to_string()),
                (Config::Rules, "PartitionTest.u()".to_string()),
            ]
        );
    }
}
