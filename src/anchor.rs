//! The anchor engine: pure functions over text. Finds where an anchor
//! matches, checks the match sits inside the expected method or class, and,
//! when an anchor is gone, ranks the lines that most resemble it so a
//! maintainer sees at once what upstream changed.
//!
//! Not here: reading files or deciding which anchors apply (see `check`).

use crate::model::Pattern;

/// A file split into lines, line endings (`\n`, `\r\n`) removed.
pub fn lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return Vec::new();
    }
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect()
}

/// 0-based indices of every place the pattern matches (for a multi-line
/// pattern, the index of its first line).
pub fn find(lines: &[&str], pattern: &Pattern) -> Vec<usize> {
    match pattern {
        Pattern::Lines(want) => {
            if want.len() > lines.len() {
                return Vec::new();
            }
            (0..=lines.len() - want.len())
                .filter(|&i| want.iter().enumerate().all(|(k, w)| lines[i + k] == w))
                .collect()
        }
        Pattern::Regex { regex, .. } => (0..lines.len()).filter(|&i| regex.is_match(lines[i])).collect(),
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The lines that enclose line `at` by indentation, innermost first, as
/// (0-based index, text): each is the nearest line above with less
/// indentation than the previous one. Blank lines, comments and lone closing
/// braces are skipped, since they open no scope.
pub fn enclosing<'a>(lines: &[&'a str], at: usize) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let mut level = indent(lines[at]);
    for i in (0..at).rev() {
        let l = lines[i];
        let t = l.trim();
        if t.is_empty()
            || t.starts_with("//")
            || t.starts_with('*')
            || t.starts_with("/*")
            || t.starts_with('}')
            || t.starts_with(')')
            || t.starts_with('@')
        {
            continue;
        }
        let d = indent(l);
        if d < level {
            out.push((i, l));
            level = d;
            if d == 0 {
                break;
            }
        }
    }
    out
}

/// Whether any enclosing line of `at` contains `needle`; on failure, the
/// innermost enclosing line that looks like a definition, for the report.
pub fn check_enclosing<'a>(lines: &[&'a str], at: usize, needle: &str) -> Result<(), Option<(usize, &'a str)>> {
    let enc = enclosing(lines, at);
    if enc.iter().any(|(_, l)| l.contains(needle)) {
        return Ok(());
    }
    Err(enc.into_iter().find(|(_, l)| looks_like_definition(l)))
}

fn looks_like_definition(l: &str) -> bool {
    let t = l.trim_start();
    [
        "def ",
        "private def ",
        "override def ",
        "class ",
        "object ",
        "trait ",
        "public ",
        "private ",
        "protected ",
        "static ",
        "final ",
        "interface ",
    ]
    .iter()
    .any(|k| t.starts_with(k))
        || (t.contains('(') && t.trim_end().ends_with('{'))
}

/// What kind of scope a header line opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    /// A method, function or Scala `def` (local ones included).
    Method,
    /// A class, object, trait, interface, enum or record.
    Type,
}

/// Words that open a statement, not a definition, although the line may look
/// like `word(...) {`.
const STATEMENT_WORDS: [&str; 16] = [
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "return",
    "new",
    "else",
    "try",
    "do",
    "synchronized",
    "throw",
    "case",
    "val",
    "var",
    "match",
];

/// Whether a line is the header of a method or type, and its name: `def
/// getOutOfSyncReplicas(` is (Method, "getOutOfSyncReplicas"), `class
/// LeaderAcceptor implements` is (Type, "LeaderAcceptor"), `if (x) {` is none.
/// Stricter than `looks_like_definition`: statements with a block never count.
pub fn definition(line: &str) -> Option<(ScopeKind, String)> {
    let mut t = line.trim_start();
    let modifiers = [
        "public ",
        "private ",
        "protected ",
        "static ",
        "final ",
        "override ",
        "abstract ",
        "synchronized ",
        "implicit ",
        "lazy ",
        "sealed ",
        "default ",
    ];
    loop {
        if let Some(m) = modifiers.iter().find(|m| t.starts_with(**m)) {
            t = t[m.len()..].trim_start();
        } else if t.starts_with("private[") || t.starts_with("protected[") {
            t = t.split_once(']').map_or("", |(_, r)| r).trim_start();
        } else if let Some(r) = t.strip_prefix("case ").filter(|r| r.starts_with("class ") || r.starts_with("object "))
        {
            t = r;
        } else {
            break;
        }
    }
    let ident = |s: &str| -> Option<String> {
        let n: String = s.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
        (!n.is_empty()).then_some(n)
    };
    for (kw, kind) in [
        ("def ", ScopeKind::Method),
        ("class ", ScopeKind::Type),
        ("object ", ScopeKind::Type),
        ("trait ", ScopeKind::Type),
        ("interface ", ScopeKind::Type),
        ("enum ", ScopeKind::Type),
        ("record ", ScopeKind::Type),
    ] {
        if let Some(rest) = t.strip_prefix(kw) {
            return ident(rest.trim_start()).map(|n| (kind, n));
        }
    }
    // A Java method: `Type name(`, with no `=` before the parenthesis (an assignment).
    let open = t.find('(')?;
    let head = &t[..open];
    if head.contains('=') || head.contains('.') || head.contains('"') {
        return None;
    }
    let words: Vec<&str> = head.split_whitespace().collect();
    let (name, ty) = match words.as_slice() {
        [.., ty, name] => (*name, *ty),
        _ => return None,
    };
    if STATEMENT_WORDS.contains(&words[0]) || STATEMENT_WORDS.contains(&ty) {
        return None;
    }
    ident(name).filter(|n| n.len() == name.len()).map(|n| (ScopeKind::Method, n))
}

/// 0-based index of the last line of the block the header at `header` opens:
/// the first later line indented no deeper ends it (a closing `}` or `)` is
/// part of the block; a `) {` that ends a multi-line header is not an end).
pub fn block_end(lines: &[&str], header: usize) -> usize {
    let d = indent(lines[header]);
    for (j, l) in lines.iter().enumerate().skip(header + 1) {
        let t = l.trim();
        if t.is_empty() || indent(l) > d {
            continue;
        }
        if t.starts_with(')') && t.ends_with('{') {
            continue;
        }
        return if t.starts_with('}') || t.starts_with(')') { j } else { j - 1 };
    }
    lines.len() - 1
}

/// The method and type definitions that enclose line `at`, innermost first,
/// as (0-based index, kind, name). A match that is itself a header counts as
/// its own innermost scope when `own` is set.
pub fn scopes(lines: &[&str], at: usize, own: bool) -> Vec<(usize, ScopeKind, String)> {
    let mut out = Vec::new();
    if own {
        if let Some((k, n)) = definition(lines[at]) {
            out.push((at, k, n));
        }
    }
    out.extend(enclosing(lines, at).into_iter().filter_map(|(i, l)| definition(l).map(|(k, n)| (i, k, n))));
    out
}

/// A line (or window of lines) that resembles a missing anchor.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Candidate {
    /// 1-based line number of the first line.
    pub line: usize,
    /// Similarity in [0, 1]; 1.0 would be a match.
    pub score: f64,
    pub text: Vec<String>,
    /// A short reading of the difference, when one is obvious.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The `limit` windows most similar to the pattern, best first, at least `min_score` alike.
pub fn candidates(lines: &[&str], pattern: &Pattern, limit: usize, min_score: f64) -> Vec<Candidate> {
    let want = match pattern {
        Pattern::Lines(l) => l.clone(),
        // Compare against the regex's literal text with escapes dropped: crude, but regex anchors are rare.
        Pattern::Regex { regex, .. } => {
            vec![regex.as_str().trim_start_matches("^(?:").trim_end_matches(")$").replace('\\', "")]
        }
    };
    let k = want.len();
    if k == 0 || lines.len() < k {
        return Vec::new();
    }
    let want_joined = want.join("\n");
    let want_trimmed: Vec<&str> = want.iter().map(|l| l.trim()).collect();
    let mut scored: Vec<Candidate> = (0..=lines.len() - k)
        .filter_map(|i| {
            let window = &lines[i..i + k];
            let joined = window.join("\n");
            let score = strsim::normalized_levenshtein(&want_joined, &joined);
            (score >= min_score).then(|| {
                let trimmed: Vec<&str> = window.iter().map(|l| l.trim()).collect();
                let hint = if trimmed == want_trimmed {
                    Some("same text, different indentation".to_string())
                } else if joined.split_whitespace().eq(want_joined.split_whitespace()) {
                    Some("same tokens, different whitespace".to_string())
                } else {
                    None
                };
                Candidate { line: i + 1, score, text: window.iter().map(|s| s.to_string()).collect(), hint }
            })
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.line.cmp(&b.line)));
    scored.truncate(limit);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &[&str]) -> Pattern {
        Pattern::Lines(s.iter().map(|x| x.to_string()).collect())
    }

    const SRC: &str = "class Partition {\n  def a(): Unit = {\n    val x = 1\n  }\n\n  def b(): Unit = {\n    // note\n    val y = 2\n    val x = 1\n  }\n}\n";

    #[test]
    fn finds_whole_lines_exactly() {
        let l = lines(SRC);
        assert_eq!(find(&l, &pat(&["    val x = 1"])), vec![2, 8]);
        assert_eq!(find(&l, &pat(&["val x = 1"])), Vec::<usize>::new(), "indentation is part of the anchor");
        assert_eq!(find(&l, &pat(&["    val y = 2", "    val x = 1"])), vec![7]);
    }

    #[test]
    fn crlf_is_ignored() {
        let l = lines("a\r\nb\r\n");
        assert_eq!(l, vec!["a", "b"]);
    }

    #[test]
    fn enclosing_walks_up_by_indentation() {
        let l = lines(SRC);
        let enc: Vec<usize> = enclosing(&l, 7).iter().map(|(i, _)| *i).collect();
        assert_eq!(enc, vec![5, 0]);
        assert!(check_enclosing(&l, 7, "def b").is_ok());
        let err = check_enclosing(&l, 2, "def b").unwrap_err();
        assert_eq!(err.map(|(i, _)| i), Some(1));
    }

    #[test]
    fn definitions_are_methods_and_types_not_statements() {
        assert_eq!(
            definition("  private def canAddReplicaToIsr(followerReplicaId: Int): Boolean = {"),
            Some((ScopeKind::Method, "canAddReplicaToIsr".into()))
        );
        assert_eq!(definition("        public boolean test(int brokerId) {"), Some((ScopeKind::Method, "test".into())));
        assert_eq!(
            definition("    static class LeaderAcceptor implements IntPredicate {"),
            Some((ScopeKind::Type, "LeaderAcceptor".into()))
        );
        assert_eq!(
            definition("class Partition(val topicPartition: TopicPartition,"),
            Some((ScopeKind::Type, "Partition".into()))
        );
        assert_eq!(definition("private[cluster] case class X(a: Int)"), Some((ScopeKind::Type, "X".into())));
        for statement in [
            "    if (!current.isInflight) {",
            "        for (BrokerState b : brokerStates) {",
            "    val x = foo(1) {",
            "      this.lock(x) {",
            "    return build(a) {",
        ] {
            assert_eq!(definition(statement), None, "{statement}");
        }
    }

    #[test]
    fn blocks_end_at_their_closing_brace_and_span_multi_line_headers() {
        let l = lines(SRC);
        assert_eq!(block_end(&l, 1), 3);
        assert_eq!(block_end(&l, 0), 10);
        let java = lines("  static X build(\n      int a\n  ) {\n    return a;\n  }\n  int other() {\n");
        assert_eq!(block_end(&java, 0), 4);
        let s: Vec<String> = scopes(&l, 8, false).into_iter().map(|(_, _, n)| n).collect();
        assert_eq!(s, vec!["b", "Partition"]);
    }

    #[test]
    fn ranks_reindented_line_first() {
        let l = lines(SRC);
        let c = candidates(&l, &pat(&["      val y = 2"]), 3, 0.5);
        assert_eq!(c[0].line, 8);
        assert_eq!(c[0].hint.as_deref(), Some("same text, different indentation"));
    }
}
