//! The text of an observer.ids file, as pure functions: which ids it names
//! (the registries' parsing rules, docs/observer-ids.md), and the same text
//! with one id added or removed. An edit touches only the tokens of that id:
//! comments, other ids, blank lines and the file's separators stay as they
//! were, so an operator's annotations survive a promote/demote round trip.
//!
//! Not here: reading or writing files (transport.rs).

use std::collections::BTreeSet;

/// Java's `\s` in the registries' `[,\s]+` split: space, \t, \n, \x0B, \f, \r.
fn is_separator(c: char) -> bool {
    matches!(c, ',' | ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r')
}

/// A token as the registries read it: plain decimal 0..=2147483647, else not an id.
fn id_of(token: &str) -> Option<i32> {
    if token.is_empty() || token.len() > 10 || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse::<i64>().ok().filter(|v| *v <= i32::MAX as i64).map(|v| v as i32)
}

/// A line split at its first `#`: (ids part, comment including the `#`).
fn split_comment(line: &str) -> (&str, &str) {
    match line.find('#') {
        Some(at) => line.split_at(at),
        None => (line, ""),
    }
}

/// The ids `text` names, exactly as the broker and controller registries parse it.
pub fn parse(text: &str) -> BTreeSet<i32> {
    text.lines().flat_map(|l| split_comment(l).0.split(is_separator).filter_map(id_of).collect::<Vec<_>>()).collect()
}

/// The tokens of `text` the registries ignore: outside comments, neither an id
/// nor a separator (`4x`, `4;5`, `+5`, `banana`), in file order, each once.
/// The registries read a file of only such tokens as "no observers", so a typo
/// for an id promotes that broker on that node; okp names them as a red state.
pub fn ignored(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        for t in split_comment(line).0.split(is_separator) {
            if !t.is_empty() && id_of(t).is_none() && !out.iter().any(|o| o == t) {
                out.push(t.to_string());
            }
        }
    }
    out
}

/// `text` with `id` added (a line of its own at the end), or unchanged when it already names it.
pub fn with_id(text: &str, id: i32) -> String {
    if parse(text).contains(&id) {
        return text.to_string();
    }
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("{id}\n"));
    out
}

/// `text` without `id`: every token that reads as `id` (also `04`) is removed
/// from its line; a line left with neither ids nor a comment is dropped, and
/// the line's other ids keep their order and its separator style (`, ` when the
/// line used commas, else a space).
pub fn without_id(text: &str, id: i32) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, eol) = if let Some(b) = line.strip_suffix("\r\n") {
            (b, "\r\n")
        } else if let Some(b) = line.strip_suffix('\n') {
            (b, "\n")
        } else {
            (line, "")
        };
        let (ids, comment) = split_comment(body);
        let tokens: Vec<&str> = ids.split(is_separator).filter(|t| !t.is_empty()).collect();
        if !tokens.iter().any(|t| id_of(t) == Some(id)) {
            out.push_str(line);
            continue;
        }
        let kept: Vec<&str> = tokens.into_iter().filter(|t| id_of(t) != Some(id)).collect();
        if kept.is_empty() && comment.is_empty() {
            continue;
        }
        let indent: &str = &ids[..ids.len() - ids.trim_start_matches([' ', '\t']).len()];
        let sep = if ids.contains(',') { ", " } else { " " };
        let mut rebuilt = format!("{indent}{}", kept.join(sep));
        if !comment.is_empty() {
            if !kept.is_empty() {
                rebuilt.push(' ');
            }
            rebuilt.push_str(comment);
        }
        out.push_str(&rebuilt);
        out.push_str(eol);
    }
    out
}

/// `[4,5]`: the form the OBSERVER AUDIT line uses.
pub fn show(ids: &BTreeSet<i32>) -> String {
    format!("[{}]", ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[i32]) -> BTreeSet<i32> {
        v.iter().copied().collect()
    }

    #[test]
    fn parses_like_the_registries() {
        assert_eq!(parse("4\n"), set(&[4]));
        assert_eq!(parse("7, 8\n9\t10"), set(&[7, 8, 9, 10]));
        assert_eq!(parse("3 # was 4\n# 5\n"), set(&[3]), "a comment runs to the end of its line");
        assert_eq!(parse("banana,4 %%@@!!\n+5 -1 3.0 2147483648 2147483647 04"), set(&[4, 2147483647]));
        assert_eq!(parse("4\x0b5\x0c6\r\n"), set(&[4, 5, 6]), "Java's \\s includes VT and FF");
        assert!(parse("").is_empty() && parse("# only a comment\n").is_empty());
    }

    #[test]
    fn names_the_tokens_the_registries_ignore() {
        assert_eq!(
            ignored("banana,4 %%@@!!\n+5 -1 3.0 2147483648 04 4x # 4y is a comment\n4x"),
            ["banana", "%%@@!!", "+5", "-1", "3.0", "2147483648", "4x"]
        );
        assert_eq!(ignored("4;5"), ["4;5"], "a semicolon is not a separator: the registries read no id here");
        // A file saved with a byte-order mark: Java keeps U+FEFF in the text and `\s` does not
        // match it, so the registries lose the file's first id.
        assert_eq!((parse("\u{feff}4\n5\n"), ignored("\u{feff}4\n5\n")), (set(&[5]), vec!["\u{feff}4".to_string()]));
        assert!(ignored("# observers\n4, 5\t6\r\n\n").is_empty());
        assert!(ignored("").is_empty());
    }

    #[test]
    fn removing_an_id_keeps_everything_else() {
        let text = "# DR site observers\n4, 5 # rack b\n6\n\n# end\n";
        assert_eq!(without_id(text, 5), "# DR site observers\n4 # rack b\n6\n\n# end\n");
        assert_eq!(
            without_id(text, 6),
            "# DR site observers\n4, 5 # rack b\n\n# end\n",
            "a line left empty is dropped, blank lines stay"
        );
        assert_eq!(without_id("4 5 04\n", 4), "5\n", "every token that reads as the id goes");
        assert_eq!(without_id("  4,5\r\n", 4), "  5\r\n", "indentation and CRLF stay");
        assert_eq!(without_id("4 # was here\n", 4), "# was here\n");
        assert_eq!(without_id("4", 4), "");
        assert_eq!(without_id("# 4 is not here\n5\n", 4), "# 4 is not here\n5\n", "comments are never edited");
        for (text, id) in [(text, 4), (text, 5), ("4\n", 4), ("4,5,6", 5)] {
            let after = without_id(text, id);
            let mut want = parse(text);
            want.remove(&id);
            assert_eq!(parse(&after), want, "{text:?} - {id}");
        }
    }

    #[test]
    fn adding_an_id_appends_one_line() {
        assert_eq!(with_id("", 4), "4\n");
        assert_eq!(with_id("# observers\n5", 4), "# observers\n5\n4\n");
        assert_eq!(with_id("5, 4\n", 4), "5, 4\n", "already there: unchanged bytes");
        assert_eq!(with_id("# 4\n", 4), "# 4\n4\n", "an id in a comment does not count");
        assert_eq!(without_id(&with_id("# keep\n5\n", 4), 4), "# keep\n5\n", "a round trip restores the bytes");
    }
}
