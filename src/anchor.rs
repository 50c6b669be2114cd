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
        if t.is_empty() || t.starts_with("//") || t.starts_with('*') || t.starts_with("/*") || t.starts_with('}') || t.starts_with(')') || t.starts_with('@') {
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
    ["def ", "private def ", "override def ", "class ", "object ", "trait ", "public ", "private ", "protected ", "static ", "final ", "interface "]
        .iter()
        .any(|k| t.starts_with(k))
        || (t.contains('(') && t.trim_end().ends_with('{'))
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
        Pattern::Regex { regex, .. } => vec![regex.as_str().trim_start_matches("^(?:").trim_end_matches(")$").replace('\\', "")],
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
    fn ranks_reindented_line_first() {
        let l = lines(SRC);
        let c = candidates(&l, &pat(&["      val y = 2"]), 3, 0.5);
        assert_eq!(c[0].line, 8);
        assert_eq!(c[0].hint.as_deref(), Some("same text, different indentation"));
    }
}
