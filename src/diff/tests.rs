//! Tests of the `okp diff` engine on small made-up files.

use super::*;
use crate::model::Pattern;

fn anchor(id: &str, text: &str, enclosing: Option<&str>) -> Anchor {
    Anchor {
        id: id.into(),
        file: "P.scala".into(),
        pattern: Pattern::Lines(text.split('\n').map(str::to_string).collect()),
        from: KafkaVersion::new(1, 0, 0),
        to: None,
        hooks: vec!["h".into()],
        why: "test".into(),
        enclosing: enclosing.map(str::to_string),
        line: 1,
    }
}

fn files(text: &str) -> Files {
    [("P.scala".to_string(), Some(text.to_string()))].into_iter().collect()
}

const OLD: &str =
    "class P {\n  def a(): Unit = {\n    val x = 1\n    go(x)\n  }\n\n  def b(): Unit = {\n    val y = 2\n  }\n}\n";

fn one(a: &Anchor, new: &str) -> AnchorPort {
    compare(&[a], None, &files(OLD), &files(new)).unwrap().remove(0)
}

#[test]
fn same_text_is_unchanged_and_shifted_text_is_moved() {
    let a = anchor("x", "    go(x)", Some("def a"));
    let r = one(&a, OLD);
    assert_eq!((r.status, r.carries, r.delta), (SiteStatus::Unchanged, true, Some(0)));
    assert!(r.diff.is_empty());
    let r = one(&a, &OLD.replace("class P {\n", "class P {\n  // new\n  // lines\n"));
    assert_eq!((r.status, r.carries, r.delta), (SiteStatus::Moved, true, Some(2)));
    assert_eq!(r.site.as_deref(), Some("method a"));
}

#[test]
fn a_change_in_the_method_is_changed_even_when_the_anchor_holds() {
    let a = anchor("x", "    go(x)", Some("def a"));
    let r = one(&a, &OLD.replace("val x = 1", "val x = compute()"));
    assert_eq!((r.status, r.carries), (SiteStatus::Changed, true));
    assert!(
        r.diff.iter().any(|l| l == "-    val x = 1") && r.diff.iter().any(|l| l == "+    val x = compute()"),
        "{:?}",
        r.diff
    );
    assert!(r.diff[0].starts_with("@@ -2,"), "hunk headers use file line numbers: {}", r.diff[0]);
    // A change in another method does not touch this site.
    let r = one(&a, &OLD.replace("val y = 2", "val y = 3"));
    assert_eq!(r.status, SiteStatus::Unchanged);
}

#[test]
fn a_lost_anchor_ranks_the_line_in_the_same_method_first() {
    let a = anchor("x", "    go(x)", Some("def a"));
    // b gets the more similar line, a keeps a less similar one: structure decides.
    let new = OLD.replace("    go(x)", "    go(x, true)").replace("    val y = 2", "    val y = 2\n    go(x )");
    let r = one(&a, &new);
    assert_eq!((r.status, r.carries), (SiteStatus::Changed, false));
    let best = &r.candidates[0];
    assert_eq!((best.line, best.same_method, best.same_class), (4, true, true), "{:?}", r.candidates);
    assert!(r.candidates.iter().any(|c| !c.same_method && c.similarity > best.similarity));
}

#[test]
fn a_removed_file_or_method_is_gone_and_a_double_match_is_ambiguous() {
    let a = anchor("x", "    go(x)", Some("def a"));
    let none: Files = [("P.scala".to_string(), None)].into_iter().collect();
    let r = compare(&[&a], None, &files(OLD), &none).unwrap().remove(0);
    assert_eq!((r.status, r.carries), (SiteStatus::Gone, false));
    let r = one(&a, "class P {\n  def c(): Unit = {\n    stop()\n  }\n}\n");
    assert_eq!(r.status, SiteStatus::Gone);
    let b = anchor("y", "    val y = 2", None);
    let r = one(&b, &OLD.replace("val x = 1", "val y = 2"));
    assert_eq!((r.status, r.carries, r.to_lines.clone()), (SiteStatus::Ambiguous, false, vec![3, 8]));
    assert_eq!(r.candidates[0].line, 8, "the match in the old method ranks first: {:?}", r.candidates);
}

fn guard(method: Option<&str>) -> Guard {
    Guard {
        id: "g".into(),
        hook: "h".into(),
        file: "P.scala".into(),
        method: method.map(str::to_string),
        from: KafkaVersion::new(1, 0, 0),
        to: None,
        why: "test".into(),
    }
}

fn guarded(g: &Guard, old: &Files, new: &Files) -> GuardPort {
    compare_guards(&[g], Some(KafkaVersion::new(2, 0, 0)), old, new).remove(0)
}

#[test]
fn a_guarded_method_is_compared_alone_wherever_it_moved() {
    let g = guard(Some("def b"));
    let moved = OLD.replace("class P {\n", "class P {\n  // new\n").replace("val x = 1", "val x = 2");
    let r = guarded(&g, &files(OLD), &files(&moved));
    assert_eq!((r.status, r.from_line, r.to_line), (GuardStatus::Unchanged, Some(7), Some(8)), "{r:?}");
    assert!(r.diff.is_empty());
    let r = guarded(&g, &files(OLD), &files(&OLD.replace("val y = 2", "val y = peek()")));
    assert_eq!(r.status, GuardStatus::Changed);
    assert_eq!(r.diff[0], "@@ -7,3 +7,3 @@ def b", "hunk headers in file lines, naming the region");
    assert!(r.diff.contains(&"+    val y = peek()".to_string()), "{:?}", r.diff);
    // Without a method the whole file is the region.
    let r = guarded(&guard(None), &files(OLD), &files(&moved));
    assert_eq!((r.status, r.region().as_str()), (GuardStatus::Changed, "the whole file"));
}

#[test]
fn a_guard_not_found_once_is_gone_or_unlocated() {
    let g = guard(Some("def b"));
    let none: Files = [("P.scala".to_string(), None)].into_iter().collect();
    let r = guarded(&g, &files(OLD), &none);
    assert_eq!((r.status, r.needs_review()), (GuardStatus::Gone, true));
    assert_eq!(r.note.as_deref(), Some("P.scala is not in 2.0.0"));
    // Gone where anchors.yaml ends the guard: expected, nothing to review.
    let ended = Guard { to: Some(KafkaVersion::new(1, 5, 0)), ..g.clone() };
    let r = guarded(&ended, &files(OLD), &none);
    assert_eq!((r.status, r.retired, r.needs_review()), (GuardStatus::Gone, true, false));
    assert_eq!(r.note.as_deref(), Some("P.scala is not in 2.0.0 (anchors.yaml ends this guard at 1.5.0)"));
    let r = guarded(&g, &files(OLD), &files(&OLD.replace("def b()", "def c()")));
    assert_eq!((r.status, r.note.as_deref()), (GuardStatus::Gone, Some("in 2.0.0 no definition holds `def b`")));
    let twice = OLD.replace("def a()", "def b()");
    let r = guarded(&g, &files(&twice), &files(OLD));
    assert_eq!(r.status, GuardStatus::Unlocated);
    assert!(r.note.as_deref().unwrap().contains("2 definitions hold `def b` (lines 2, 7)"), "{r:?}");
    let r = guarded(&g, &none, &files(OLD));
    assert_eq!(r.status, GuardStatus::Unlocated);
    // A call of the method is not its definition.
    let r = guarded(&guard(Some("go(")), &files(OLD), &files(OLD));
    assert_eq!(r.status, GuardStatus::Unlocated);
}

#[test]
fn an_old_tree_without_the_anchor_is_refused() {
    let a = anchor("x", "    nowhere()", None);
    let err = compare(&[&a], None, &files(OLD), &files(OLD)).unwrap_err();
    assert!(err[0].contains("anchor `x`"), "{err:?}");
}
