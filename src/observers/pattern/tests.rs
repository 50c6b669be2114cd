// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors

use super::*;

fn ok(p: &str) -> Pattern {
    Pattern::compile(p).unwrap_or_else(|e| panic!("{p}: {e:?}"))
}

fn refused(p: &str) -> (usize, String) {
    match Pattern::compile(p) {
        Ok(_) => panic!("{p} accepted"),
        Err(e) => (e.at, e.reason),
    }
}

#[test]
fn whole_names_only() {
    let p = ok("ord.*");
    assert!(p.matches("orders") && p.matches("ord") && !p.matches("xorders"));
    assert!(ok("__.*").matches("__consumer_offsets"));
    assert!(ok("^orders\\.eu$").matches("orders.eu") && !ok("orders\\.eu").matches("ordersxeu"));
    assert!(ok("orders-(eu|us)-[0-9]{2,3}").matches("orders-us-123"));
    assert!(!ok("orders-(eu|us)-[0-9]{2,3}").matches("orders-us-1234"));
    assert!(ok("[a-z0-9_-]+").matches("a-_9") && !ok("[a-z0-9_-]+").matches("a.b"));
    assert!(ok("[^a-z]+").matches("AB.9") && !ok("[^a-z]+").matches("Ab"));
    assert!(ok("\\w+").matches("a_Z9") && !ok("\\w+").matches("a-b"));
    assert!(ok("x{0}").matches("") && ok("a{3}").matches("aaa") && !ok("a{3}").matches("aa"));
    assert!(ok("(a|b){2,}c").matches("abbac") && !ok("(a|b){2,}c").matches("ac"));
}

#[test]
fn refusals_say_where_and_why() {
    let cases: &[(&str, usize, &str)] = &[
        ("[[:alpha:]]+", 1, "'[' in a class"),
        ("[a-z--o]", 4, "'-' in a class stands last or as \\-"),
        ("(?i)a", 0, "'(?' other than '(?:' (no flags, names or lookaround)"),
        ("(?P<n>a)", 0, "'(?' other than '(?:' (no flags, names or lookaround)"),
        ("\\p{Greek}", 0, "\\ before 'p': the escapes are \\. \\- \\d \\w"),
        ("a{,3}", 1, "a count is {N}, {N,} or {N,M} with N <= M <= 249"),
        ("x{250}", 1, "a count is {N}, {N,} or {N,M} with N <= M <= 249"),
        ("x{3,2}", 1, "a count is {N}, {N,} or {N,M} with N <= M <= 249"),
        ("a*+", 2, "a quantifier after a quantifier (no lazy or possessive forms)"),
        ("a*?", 2, "a quantifier after a quantifier (no lazy or possessive forms)"),
        ("*a", 0, "nothing to repeat"),
        ("a|", 2, "an empty alternative"),
        ("()", 1, "an empty alternative"),
        ("a)", 1, "')' without '('"),
        ("(a", 0, "a group not closed"),
        ("[a", 0, "a class not closed"),
        ("[]", 0, "an empty class"),
        ("[z-a]", 1, "a range joins two digits, two lowercase or two uppercase letters in order"),
        ("[0-z]", 1, "a range joins two digits, two lowercase or two uppercase letters in order"),
        ("a\\", 1, "a \\ ends the pattern"),
        ("\u{E9}", 0, "U+00E9 is not in the pattern language"),
        ("a b", 1, "U+0020 is not in the pattern language"),
        ("a$b", 1, "'$' is not in the pattern language"),
        ("", 0, "empty"),
        ("(a{249}){21}", 0, "over 5000 steps once its counts are expanded"),
        ("(((((((((((((((((a)))))))))))))))))", 16, "groups nested deeper than 16"),
    ];
    for (p, at, why) in cases {
        assert_eq!(refused(p), (*at, why.to_string()), "{p}");
    }
    ok("((((((((((((((((a))))))))))))))))");
    ok(&"a|".repeat(1000)[..1999]);
    assert_eq!(refused(&"a|".repeat(2000)[..3999]).1, "over 5000 steps once its counts are expanded");
    assert_eq!(refused(&"a".repeat(4097)), (0, "longer than 4096 characters".into()));
}

/// A pattern whose backtracking takes java.util.regex minutes against a 249-character name
/// (docs/benchmarks.md) is one pass here.
#[test]
fn no_backtracking() {
    let name = "a".repeat(249);
    for p in ["(.*a){12}x", "(a|aa)*b", "(a*)*b", "((a+)+)+b", "(x+x+)+y", "(.*.*){20}b"] {
        assert!(!ok(p).matches(&name), "{p}");
    }
}
