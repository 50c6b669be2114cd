//! The JUnit console launcher's XML reports (`--reports-dir`, the legacy
//! format): each test case's outcome, and for a failure its kind (an assertion,
//! another exception, or a timeout) and first message line.
//!
//! Not here: comparing configurations (`judge`), running the launcher (`unit_tests`).

use std::path::Path;

use crate::error::{Error, Result};
use crate::verify::unit_record::{Kind, TestOutcome};

/// A test case: `SimpleClassName.method(params)[n]`, and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The class's fully qualified name.
    pub class: String,
    /// `SimpleClassName.name` as the report names it.
    pub test: String,
    pub outcome: TestOutcome,
}

/// The report okp writes for a class whose JVM it killed at its time limit (the launcher writes
/// its own only at the end): every test the upstream run reported, failed by timeout.
pub const KILLED_REPORT: &str = "TEST-okp-killed.xml";

/// The exception type of a test in `KILLED_REPORT`.
pub const KILLED_TYPE: &str = "okp.ClassTimeout";

pub fn killed_report(class: &str, tests: &[String], message: &str) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"okp: {} killed\" tests=\"{}\">\n",
        esc(class),
        tests.len()
    );
    for t in tests {
        let name = t.split_once('.').map(|(_, n)| n).unwrap_or(t);
        s.push_str(&format!(
            "<testcase name=\"{}\" classname=\"{}\"><error type=\"{KILLED_TYPE}\" message=\"{}\"/></testcase>\n",
            esc(name),
            esc(class),
            esc(message)
        ));
    }
    s.push_str("</testsuite>\n");
    s
}

/// Every test case of every `TEST-*.xml` in `dir`, sorted by name.
pub fn read_dir(dir: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?;
    let mut files: Vec<_> =
        rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "xml")).collect();
    files.sort();
    for p in files {
        let text = crate::fsx::read::text(&p, crate::fsx::read::MAX_TEXT, "JUnit report")?;
        cases.extend(parse(&text).map_err(|msg| Error::Tree { path: p.clone(), msg })?);
    }
    cases.sort_by(|a, b| a.test.cmp(&b.test));
    Ok(cases)
}

/// The deepest element nesting and the most XML nodes okp parses in one JUnit report.
const MAX_DEPTH: usize = 32;
const MAX_NODES: u32 = 4_000_000;

/// The test cases of one report.
pub fn parse(xml: &str) -> std::result::Result<Vec<Case>, String> {
    // roxmltree recurses once per level with no limit of its own: a report nested deeper than any
    // JUnit writer nests (testsuites > testsuite > testcase > failure) is refused before it parses.
    if let Some(line) = crate::releases::deeper_than(xml, MAX_DEPTH) {
        return Err(format!(
            "not a JUnit XML report: elements nested deeper than okp's cap of {MAX_DEPTH} (line {line})"
        ));
    }
    let opts = roxmltree::ParsingOptions { allow_dtd: false, nodes_limit: MAX_NODES };
    let doc = roxmltree::Document::parse_with_options(xml, opts).map_err(|e| format!("not a JUnit XML report: {e}"))?;
    let mut out = Vec::new();
    for tc in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let class = tc.attribute("classname").unwrap_or_default().to_string();
        let name = tc.attribute("name").unwrap_or_default();
        let simple = class.rsplit('.').next().unwrap_or(&class);
        let failure = tc.children().find(|n| n.has_tag_name("failure") || n.has_tag_name("error"));
        let outcome = if let Some(f) = failure {
            let exception = f.attribute("type").unwrap_or_default().to_string();
            let full = f.attribute("message").unwrap_or_default();
            let message: String = full.lines().next().unwrap_or_default().chars().take(300).collect();
            TestOutcome::Fail { kind: kind_of(f.has_tag_name("failure"), &exception, full), exception, message }
        } else if tc.children().any(|n| n.has_tag_name("skipped")) {
            TestOutcome::Skip
        } else {
            TestOutcome::Pass
        };
        out.push(Case { test: format!("{simple}.{name}"), class, outcome });
    }
    Ok(out)
}

/// The legacy report writes an `AssertionError` as `<failure>` and any other
/// throwable as `<error>`; a timeout is either, named by its type or message.
fn kind_of(is_failure: bool, exception: &str, message: &str) -> Kind {
    let simple = exception.rsplit('.').next().unwrap_or(exception);
    if simple.contains("Timeout") || message.contains("timed out after") {
        Kind::Timeout
    } else if is_failure {
        Kind::Assertion
    } else {
        Kind::Exception
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="JUnit Jupiter" tests="4">
<testcase name="testA()" classname="kafka.cluster.PartitionTest" time="0.1"/>
<testcase name="testB(boolean)[2]" classname="kafka.cluster.PartitionTest" time="0.1">
<failure message="expected: &lt;Set(1)&gt; but was: &lt;Set()&gt;&#10;second line" type="org.opentest4j.AssertionFailedError">trace</failure>
<system-out><![CDATA[<testcase name="fake"/>]]></system-out>
</testcase>
<testcase name="testC()" classname="kafka.cluster.PartitionLockTest" time="15">
<error type="java.util.concurrent.TimeoutException">trace</error>
</testcase>
<testcase name="testD()" classname="kafka.cluster.PartitionTest"><error message="boom" type="java.lang.IllegalStateException"/></testcase>
<testcase name="testE()" classname="kafka.cluster.PartitionTest"><skipped/></testcase>
</testsuite>"#;

    #[test]
    fn reads_outcomes_kinds_and_first_message_lines() {
        let cases = parse(REPORT).unwrap();
        let names: Vec<&str> = cases.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(
            names,
            [
                "PartitionTest.testA()",
                "PartitionTest.testB(boolean)[2]",
                "PartitionLockTest.testC()",
                "PartitionTest.testD()",
                "PartitionTest.testE()"
            ]
        );
        assert_eq!(cases[0].outcome, TestOutcome::Pass);
        assert!(
            matches!(&cases[1].outcome, TestOutcome::Fail { kind: Kind::Assertion, message, .. } if message == "expected: <Set(1)> but was: <Set()>")
        );
        assert!(matches!(cases[2].outcome, TestOutcome::Fail { kind: Kind::Timeout, .. }));
        assert!(matches!(cases[3].outcome, TestOutcome::Fail { kind: Kind::Exception, .. }));
        assert_eq!(cases[4].outcome, TestOutcome::Skip);
    }

    #[test]
    fn a_killed_class_reads_back_as_timeouts() {
        let xml =
            killed_report("kafka.cluster.PartitionLockTest", &["PartitionLockTest.t<1>()".into()], "killed at 9 s");
        let cases = parse(&xml).unwrap();
        assert_eq!(cases[0].test, "PartitionLockTest.t<1>()");
        assert!(
            matches!(&cases[0].outcome, TestOutcome::Fail { kind: Kind::Timeout, message, .. } if message == "killed at 9 s")
        );
    }

    #[test]
    fn a_damaged_report_is_refused() {
        assert!(parse("<testsuite><testcase").unwrap_err().starts_with("not a JUnit XML report"));
    }

    #[test]
    fn a_report_nested_past_the_cap_is_refused_not_a_stack_overflow() {
        let deep = format!("<testsuite>{}{}</testsuite>", "<a>".repeat(100_000), "</a>".repeat(100_000));
        let e = parse(&deep).unwrap_err();
        assert!(e.contains("nested deeper than okp's cap of 32 (line 1)"), "{e}");
    }
}
