//! The text of an observer.ids file as the registries read it, as pure functions: which ids it
//! names (the registries' parsing rules, docs/observer-ids.md), its topic rules
//! (`topic:NAME observers=LIST`) with the same messages for a malformed one, and the tokens the
//! registries ignore. A LIST holds broker ids and `rack:NAME` items; which brokers a rack item
//! names is the cluster's answer (`RackView`, from Metadata), given by the caller.
//!
//! `edit`: the same text with one id or one topic rule changed, read back with this reader.
//!
//! Not here: reading or writing files (transport/).

use std::collections::{BTreeMap, BTreeSet};

use crate::observers::pattern::{self, Pattern};

mod edit;
mod index;

pub use edit::{rack_hold, restore_topic_rule, set_topic_list, with_cluster_id, with_topic_rule, RackHold};

/// A file's bytes as the registries read them (`new String(bytes, ISO_8859_1)`): each byte one
/// character, U+0000-U+00FF, so okp sees the characters, lines and columns the nodes see, and any
/// byte sequence (a Latin-1 comment, broken UTF-8) round-trips through an edit unchanged.
pub fn text_of(bytes: &[u8]) -> String {
    bytes.iter().copied().map(char::from).collect()
}

/// The bytes of a text `text_of` read, edited by okp (which adds only ASCII): each character
/// U+0000-U+00FF back to its byte; anything above (not from a file) as UTF-8.
pub fn bytes_of(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match u8::try_from(u32::from(c)) {
            Ok(b) => out.push(b),
            Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

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

/// okp's one line-ending rule for observer.ids, the registries' own (`text.split("\r\n|\r|\n", -1)`
/// in ObserverIds.scala and ObserverReplicas.java): a line ends at `\r\n`, else at a lone `\r` or
/// `\n`. Every line with its ending (`""` for the last, which may be empty), so that the lines
/// joined give back `text` byte for byte: the reader uses the lines, the editors put back the
/// endings of the lines they keep.
fn lines_with_ends(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['\r', '\n']) {
        let len = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        out.push((&rest[..at], &rest[at..at + len]));
        rest = &rest[at + len..];
    }
    out.push((rest, ""));
    out
}

/// The lines as the registries split them (`lines_with_ends` without the endings).
fn java_lines(text: &str) -> Vec<&str> {
    lines_with_ends(text).into_iter().map(|(line, _)| line).collect()
}

const KINDS: [&str; 3] = ["topic:", "prefix:", "regex:"];

/// Whether a line is a topic rule: its first word starts with `topic:`, `prefix:` or `regex:`.
fn is_rule_line(line: &str) -> bool {
    let body = split_comment(line).0.trim_start_matches(|c: char| c != ',' && is_separator(c));
    KINDS.iter().any(|k| body.starts_with(k))
}

/// The cluster-wide ids `text` names, exactly as the broker and controller registries parse it
/// (topic rule lines are not cluster-wide ids).
pub fn parse(text: &str) -> BTreeSet<i32> {
    java_lines(text)
        .into_iter()
        .filter(|l| !is_rule_line(l))
        .flat_map(|l| split_comment(l).0.split(is_separator).filter_map(id_of).collect::<Vec<_>>())
        .collect()
}

/// A rule's list (`observers=LIST`): broker ids and `rack:NAME` items, each a set. Both empty:
/// `none`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observers {
    pub ids: BTreeSet<i32>,
    /// The NAMEs of the list's `rack:NAME` items: every broker whose broker.rack is NAME.
    pub racks: BTreeSet<String>,
}

/// Id → broker.rack, as the cluster's Metadata names its brokers (None: the broker sets no
/// broker.rack). A broker not in it is one whose rack is unknown.
pub type RackView = BTreeMap<i32, Option<String>>;

impl Observers {
    /// A list of ids alone.
    pub fn of_ids(ids: BTreeSet<i32>) -> Observers {
        Observers { ids, racks: BTreeSet::new() }
    }

    /// The canonical text of the registries' audit line: the ids ascending, then the rack items
    /// by byte order (`7,rack:dr`); `none` when both are empty.
    pub fn shown(&self) -> String {
        if self.ids.is_empty() && self.racks.is_empty() {
            return "none".to_string();
        }
        let ids = self.ids.iter().map(|i| i.to_string());
        ids.chain(self.racks.iter().map(|r| format!("rack:{r}"))).collect::<Vec<_>>().join(",")
    }

    /// The rack item(s) that make broker `id` an observer, whether or not it is also listed by
    /// id: `rack:NAME` of its broker.rack; with its rack unknown (not in `racks`), every rack item
    /// of the list, as the registries fail safe. None: no rack item makes it one (a broker known
    /// without broker.rack matches none).
    pub fn through_rack(&self, id: i32, racks: &RackView) -> Option<String> {
        if self.racks.is_empty() {
            return None;
        }
        match racks.get(&id) {
            None => Some(self.racks.iter().map(|r| format!("rack:{r}")).collect::<Vec<_>>().join(",")),
            Some(Some(rack)) if self.racks.contains(rack) => Some(format!("rack:{rack}")),
            Some(_) => None,
        }
    }

    /// Whether broker `id` is one of these observers: listed, or through a rack (`through_rack`).
    pub fn contains(&self, id: i32, racks: &RackView) -> bool {
        self.ids.contains(&id) || self.through_rack(id, racks).is_some()
    }

    /// The brokers these observers are: the ids, every broker of `racks` in a named rack, and of
    /// `others` (brokers the caller knows of otherwise, such as partitions' replicas) those whose
    /// rack is unknown when a rack is named.
    pub fn members(&self, racks: &RackView, others: impl IntoIterator<Item = i32>) -> BTreeSet<i32> {
        let mut out = self.ids.clone();
        out.extend(racks.keys().copied().chain(others).filter(|id| self.through_rack(*id, racks).is_some()));
        out
    }
}

/// One rule of a file, as written.
#[derive(Debug, Clone)]
struct Entry {
    /// The rule's first word: `topic:orders`, `prefix:ord`, `regex:ord.*`.
    selector: String,
    /// Its line in the file, 1-based.
    line: usize,
    list: Observers,
}

/// The rule in force for a topic (`Rules::in_force`).
#[derive(Debug, Clone, Copy)]
pub struct InForce<'a> {
    /// The rule's first word as written: `topic:orders`, `prefix:ord`, `regex:ord.*`.
    pub selector: &'a str,
    /// Its line in the file, 1-based.
    pub line: usize,
    pub observers: &'a Observers,
}

/// The topic rules of one file, as the registries hold them. Two are equal when their canonical
/// text is (the registries' test for a change).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    exact: BTreeMap<String, Entry>,
    prefixes: BTreeMap<String, Entry>,
    /// In file order: the pattern (its one meaning, pattern.rs) and the rule.
    regexes: Vec<(Pattern, Entry)>,
    /// The lookups of `in_force` that do not scan every rule (index.rs).
    prefix_lengths: index::PrefixLengths,
    regex_index: index::RegexIndex,
}

impl PartialEq for Rules {
    fn eq(&self, other: &Self) -> bool {
        self.shown() == other.shown()
    }
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.prefixes.is_empty() && self.regexes.is_empty()
    }

    /// The rule's list for `topic`, most specific first (the exact name, the longest prefix, the
    /// first regex matching the whole name); None when no rule names it (the cluster-wide ids
    /// apply).
    pub fn resolve(&self, topic: &str) -> Option<&Observers> {
        self.in_force(topic).map(|r| r.observers)
    }

    /// `resolve`, with the rule's selector and line. Its cost does not grow with the number of
    /// exact or prefix rules, nor, for a Kafka topic name, with the number of regexes (index.rs).
    pub fn in_force(&self, topic: &str) -> Option<InForce<'_>> {
        if let Some(e) = self.exact.get(topic) {
            return Some(found(e));
        }
        if let Some(e) = self.prefix_lengths.candidates(topic).find_map(|p| self.prefixes.get(p)) {
            return Some(found(e));
        }
        if self.regexes.is_empty() {
            return None;
        }
        match self.regex_index.first_match(self.regexes.iter().map(|(p, _)| p), topic) {
            Ok(first) => first.map(|i| found(&self.regexes[i].1)),
            Err(()) => self.regexes.iter().find(|(p, _)| p.matches(topic)).map(|(_, e)| found(e)),
        }
    }

    /// `in_force` by the linear scan the index replaced: every prefix, then every regex in file
    /// order. The reference the index is tested against and measured with (index.rs).
    pub fn in_force_linear(&self, topic: &str) -> Option<InForce<'_>> {
        if let Some(e) = self.exact.get(topic) {
            return Some(found(e));
        }
        if let Some((_, e)) =
            self.prefixes.iter().filter(|(p, _)| topic.starts_with(p.as_str())).max_by_key(|(p, _)| p.len())
        {
            return Some(found(e));
        }
        self.regexes.iter().find(|(p, _)| p.matches(topic)).map(|(_, e)| found(e))
    }

    /// Topic `topic`'s observers against the cluster's racks (`racks`): the rule's ids and the
    /// brokers in its racks, of `others` also those whose rack is unknown when the rule names a
    /// rack (`Observers::members`); None when no rule names it.
    pub fn observers_of(
        &self,
        topic: &str,
        racks: &RackView,
        others: impl IntoIterator<Item = i32>,
    ) -> Option<BTreeSet<i32>> {
        self.resolve(topic).map(|o| o.members(racks, others))
    }

    /// Whether `topic` has an exact rule (`topic:NAME`) of its own.
    pub fn has_exact(&self, topic: &str) -> bool {
        self.exact.contains_key(topic)
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.exact.values().chain(self.prefixes.values()).chain(self.regexes.iter().map(|r| &r.1))
    }

    /// Every id some rule names.
    pub fn ids(&self) -> BTreeSet<i32> {
        self.entries().flat_map(|e| e.list.ids.iter().copied()).collect()
    }

    /// The canonical text of the audit line's `rules=` field.
    pub fn shown(&self) -> String {
        self.each().into_iter().map(|(text, _)| text).collect::<Vec<_>>().join(";")
    }

    /// Each rule in the order of `shown`: its canonical text (`topic:audit=rack:dr`) and its list.
    pub fn each(&self) -> Vec<(String, &Observers)> {
        let mut parts: Vec<(String, &Observers)> =
            self.exact.iter().map(|(n, e)| (format!("topic:{n}={}", e.list.shown()), &e.list)).collect();
        parts.extend(self.prefixes.iter().map(|(n, e)| (format!("prefix:{n}={}", e.list.shown()), &e.list)));
        parts.extend(self.regexes.iter().map(|(p, e)| (format!("regex:{}={}", p.as_str(), e.list.shown()), &e.list)));
        parts
    }
}

fn found(e: &Entry) -> InForce<'_> {
    InForce { selector: &e.selector, line: e.line, observers: &e.list }
}

/// The topic rules of `text`, or the registries' message for the first malformed one
/// (`line L, column C: …`), on which they keep their last good set.
pub fn rules(text: &str) -> std::result::Result<Rules, String> {
    let mut out = Rules::default();
    let mut seen = BTreeSet::new();
    for (i, line) in java_lines(text).into_iter().enumerate() {
        if !is_rule_line(line) {
            continue;
        }
        let body = split_comment(line).0;
        let where_ = format!("line {}, column ", i + 1);
        let space = |c: char| c != ',' && is_separator(c);
        let mut tokens: Vec<(&str, usize)> = Vec::new();
        let mut at = 0;
        for part in body.split(space) {
            if !part.is_empty() {
                tokens.push((part, body[..at].encode_utf16().count() + 1));
            }
            at += part.len() + 1;
        }
        let start = tokens[0].1;
        if tokens.len() != 2 || !tokens[1].0.starts_with("observers=") {
            return Err(format!("{where_}{start}: a topic rule is SELECTOR observers=LIST"));
        }
        let (selector, col) = tokens[0];
        let list = &tokens[1].0["observers=".len()..];
        let list = rule_list(list, &where_, tokens[1].1 + "observers=".len())?;
        if !seen.insert(selector.to_string()) {
            return Err(format!("{where_}{col}: a second rule for {selector}"));
        }
        let value_col = col + selector.find(':').map_or(0, |at| at + 1);
        let entry = Entry { selector: selector.to_string(), line: i + 1, list };
        if let Some(value) = selector.strip_prefix("regex:") {
            let pattern = Pattern::compile(value)
                .map_err(|e| format!("{where_}{}: {}", value_col + e.at, pattern::refusal(&e, value)))?;
            out.regexes.push((pattern, entry));
            continue;
        }
        match Selector::parse(selector).map_err(|e| format!("{where_}{value_col}: {e}"))? {
            Selector::Regex(_) => unreachable!("regex: rules are read above"),
            Selector::Topic(value) => {
                out.exact.insert(value, entry);
            }
            Selector::Prefix(value) => {
                out.prefixes.insert(value, entry);
            }
        }
    }
    out.prefix_lengths = index::PrefixLengths::of(out.prefixes.keys());
    Ok(out)
}

/// The first word of a topic rule: which topics it covers. The watchdog's `--topic-policy` and
/// `topic-policies:` write theirs the same way.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Selector {
    /// `topic:NAME`: that topic.
    Topic(String),
    /// `prefix:P`: every topic whose name starts with P.
    Prefix(String),
    /// `regex:R`: every topic whose whole name matches R.
    Regex(String),
}

impl Selector {
    /// `topic:NAME`, `prefix:P` or `regex:R`, checked as the registries check a rule's first
    /// word: NAME and P are Kafka topic names, R a pattern of observer.ids (pattern.rs, the one
    /// the registries read), and no word holds whitespace or `#` (in observer.ids they would end
    /// it). Err: what is wrong, quoting the word as written (the caller escapes it for a
    /// terminal).
    pub fn parse(word: &str) -> std::result::Result<Selector, String> {
        let Some(kind) = KINDS.iter().find(|k| word.starts_with(**k)).copied() else {
            return Err(format!("{word}: a selector is topic:NAME, prefix:P or regex:R"));
        };
        let value = &word[kind.len()..];
        if let Some(c) = value.chars().find(|c| *c == '#' || (*c != ',' && is_separator(*c))) {
            return Err(format!(
                "{word} holds {c:?}: a selector is one word, without whitespace or `#`, as in observer.ids"
            ));
        }
        match kind {
            "regex:" => match Pattern::compile(value) {
                Ok(_) => Ok(Selector::Regex(value.to_string())),
                Err(e) => Err(format!("{} (at character {})", pattern::refusal(&e, value), e.at + 1)),
            },
            _ if !is_topic_name(value) => Err(format!("not a topic name: {value}")),
            "topic:" => Ok(Selector::Topic(value.to_string())),
            _ => Ok(Selector::Prefix(value.to_string())),
        }
    }

    /// As written: `topic:audit`.
    pub fn shown(&self) -> String {
        match self {
            Selector::Topic(v) => format!("topic:{v}"),
            Selector::Prefix(v) => format!("prefix:{v}"),
            Selector::Regex(v) => format!("regex:{v}"),
        }
    }
}

/// `none`, or items separated by single commas, each a broker id or `rack:NAME`. `col`: the
/// list's column, for the registries' messages.
fn rule_list(list: &str, where_: &str, col: usize) -> std::result::Result<Observers, String> {
    let mut out = Observers::default();
    if list == "none" {
        return Ok(out);
    }
    let mut at = col;
    for item in list.split(',') {
        if let Some(name) = item.strip_prefix("rack:") {
            if !is_rack_name(name) {
                return Err(format!(
                    "{where_}{at}: not a rack: \"{item}\" (a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/')"
                ));
            }
            out.racks.insert(name.to_string());
        } else if let Some(id) = id_of(item) {
            out.ids.insert(id);
        } else {
            return Err(format!(
                "{where_}{at}: not a broker id: \"{item}\" (a list is none, or broker ids and rack:NAME separated by commas)"
            ));
        }
        at += item.encode_utf16().count() + 1;
    }
    Ok(out)
}

/// A `rack:NAME` item's NAME as the registries accept it: `[a-zA-Z0-9._/-]{1,255}`.
fn is_rack_name(name: &str) -> bool {
    (1..=255).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
}

/// The tokens of `text` the registries ignore: outside comments, neither an id
/// nor a separator (`4x`, `4;5`, `+5`, `banana`), in file order, each once.
/// The registries read a file of only such tokens as "no observers", so a typo
/// for an id promotes that broker on that node; okp names them as a red state.
pub fn ignored(text: &str) -> Vec<String> {
    ignored_at(text).into_iter().map(|(_, t)| t.to_string()).collect()
}

/// `ignored`, each token with the line (1-based) of its first use.
pub fn ignored_at(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, line) in java_lines(text).into_iter().enumerate().filter(|(_, l)| !is_rule_line(l)) {
        for t in split_comment(line).0.split(is_separator) {
            if !t.is_empty() && id_of(t).is_none() && seen.insert(t) {
                out.push((i + 1, t));
            }
        }
    }
    out
}

/// An ignored token as okp names it: the file is anyone's text, so escaped (no terminal control
/// reaches the output), cut at 40 characters, in backquotes.
pub fn shown_token(token: &str) -> String {
    let cut: String = token.chars().take(40).collect();
    let more = if cut.len() < token.len() { "…" } else { "" };
    format!("`{}{more}`", crate::escape::one_line(&cut))
}

/// Kafka's topic names: letters, digits, `.`, `_`, `-`, 1 to 249 of them.
fn is_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 249
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// `[4,5]`: the form the OBSERVER AUDIT line uses.
pub fn show(ids: &BTreeSet<i32>) -> String {
    format!("[{}]", ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(","))
}

impl Rules {
    /// These rules without topic `topic`'s exact rule: what a change of that rule alone must leave
    /// as it was (the role diff, roles.rs).
    pub fn without_exact(&self, topic: &str) -> Rules {
        let mut out = self.clone();
        out.exact.remove(topic);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::edit::{with_id, without_id};
    use super::*;

    fn set(v: &[i32]) -> BTreeSet<i32> {
        v.iter().copied().collect()
    }

    #[test]
    fn bytes_read_as_the_registries_read_them_and_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(bytes_of(&text_of(&all)), all);
        // A Latin-1 'é' (not UTF-8) and a UTF-8 one in comments survive an edit byte for byte.
        let file = b"4 # caf\xe9\n5 # caf\xc3\xa9\n";
        assert_eq!(bytes_of(&without_id(&text_of(file), 5)), b"4 # caf\xe9\n# caf\xc3\xa9\n".to_vec(), "comments stay");
        assert_eq!(bytes_of(&with_id(&text_of(file), 6)), [&file[..], b"6\n"].concat());
        // Columns count bytes, as Java's do on the ISO-8859-1 string: the UTF-8 'é' is two.
        let e = rules(&text_of(b"regex:caf\xc3\xa9 observers=4")).unwrap_err();
        assert!(e.starts_with("line 1, column 10: not a pattern of observer.ids (U+00C3 "), "{e}");
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
    fn lines_end_where_the_registries_end_them() {
        // Java's `text.split("\r\n|\r|\n", -1)`: `\r\n` first, then a lone `\r` or `\n`; the
        // trailing empty line kept.
        for (text, java) in [
            ("", vec![""]),
            ("4\n", vec!["4", ""]),
            ("4\r\n5", vec!["4", "5"]),
            ("4\r5", vec!["4", "5"]),
            ("4\r\r\n5\n\r6\r", vec!["4", "", "5", "", "6", ""]),
            ("4 # note\r5", vec!["4 # note", "5"]),
        ] {
            assert_eq!(java_lines(text), java, "{text:?}");
            let joined: String = lines_with_ends(text).into_iter().flat_map(|(l, e)| [l, e]).collect();
            assert_eq!(joined, text, "the lines with their endings are the text");
        }
    }

    #[test]
    fn id_edits_split_lines_as_the_registries_do() {
        // The attack: the editor split only at `\n`, so 5 sat in the comment of one line for it,
        // on a line of its own for the brokers: promote --broker 5 wrote nothing.
        let attack = "4 # note\r5";
        assert_eq!(parse(attack), set(&[4, 5]));
        assert_eq!(without_id(attack, 5), "4 # note\r");
        assert_eq!(with_cluster_id(attack, 5, false).unwrap(), "4 # note\r");
        assert_eq!(with_cluster_id(attack, 7, true).unwrap(), "4 # note\r5\n7\n");
        // Every ending, alone and mixed, is kept on the lines the edit keeps.
        for (text, removed_5, added_8) in [
            ("4\n5\n6\n", "4\n6\n", "4\n5\n6\n8\n"),
            ("4\r\n5\r\n6\r\n", "4\r\n6\r\n", "4\r\n5\r\n6\r\n8\n"),
            ("4\r5\r6\r", "4\r6\r", "4\r5\r6\r8\n"),
            ("4\r5 # five\r\n6\n7", "4\r# five\r\n6\n7", "4\r5 # five\r\n6\n7\n8\n"),
            ("# a\r5\rtopic:t observers=5\r", "# a\rtopic:t observers=5\r", "# a\r5\rtopic:t observers=5\r8\n"),
        ] {
            assert_eq!(with_cluster_id(text, 5, false).unwrap(), removed_5, "{text:?} - 5");
            assert_eq!(with_cluster_id(text, 8, true).unwrap(), added_8, "{text:?} + 8");
        }
    }

    #[test]
    fn topic_rule_edits_split_lines_as_the_registries_do() {
        // A rule on a line ended by a lone CR is the rule the brokers read: edited in place, not
        // appended a second time (which the registries would read as malformed).
        let text = "4\rtopic:orders observers=5 # dr\r6";
        let after = with_topic_rule(text, "orders", 7, true).unwrap();
        assert_eq!(after, "4\rtopic:orders observers=5,7 # dr\r6");
        assert_eq!(restore_topic_rule("4\r5\rtopic:orders observers=4\r", "orders", 5).unwrap(), "4\r5\r");
    }

    #[test]
    fn adding_an_id_appends_one_line() {
        assert_eq!(with_id("", 4), "4\n");
        assert_eq!(with_id("# observers\n5", 4), "# observers\n5\n4\n");
        assert_eq!(with_id("5, 4\n", 4), "5, 4\n", "already there: unchanged bytes");
        assert_eq!(with_id("# 4\n", 4), "# 4\n4\n", "an id in a comment does not count");
        assert_eq!(without_id(&with_id("# keep\n5\n", 4), 4), "# keep\n5\n", "a round trip restores the bytes");
    }

    #[test]
    fn topic_rules_resolve_most_specific_first() {
        let text = "# cluster-wide\n4\ntopic:orders observers=5,6   # exact\n  prefix:ord observers=7\n\
                    prefix:orders- observers=none\nregex:ord.* observers=8\nregex:log.*\tobservers=9,10\n3\n";
        let r = rules(text).unwrap();
        let of = |t: &str| r.resolve(t).map(|o| o.ids.clone());
        assert_eq!(of("orders"), Some(set(&[5, 6])));
        assert_eq!(of("orders-eu"), Some(set(&[])), "the longest prefix; none means no observers");
        assert_eq!(of("ordinal"), Some(set(&[7])), "a prefix before a regex");
        assert_eq!(of("logs"), Some(set(&[9, 10])));
        assert_eq!(of("xlogs"), None, "a regex matches the whole name");
        assert_eq!(parse(text), set(&[3, 4]), "rule lines are not cluster-wide ids");
        assert!(ignored(text).is_empty(), "nor ignored tokens");
        assert_eq!(r.ids(), set(&[5, 6, 7, 8, 9, 10]));
        // The registries' audit text (patches/tests/ObserverIdsContractTest.java, topicRulesPrecedence).
        assert_eq!(r.shown(), "topic:orders=5,6;prefix:ord=7;prefix:orders-=none;regex:ord.*=8;regex:log.*=9,10");
        assert!(rules("4\n5, 6 # old file\n").unwrap().is_empty(), "an old file has no rules");
    }

    #[test]
    fn malformed_rules_are_named_as_the_registries_name_them() {
        // The same cases and messages as the contract test's malformedRulesNamed.
        let list = "(a list is none, or broker ids and rack:NAME separated by commas)";
        let rack = "(a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/')";
        let long = format!("topic:a observers=rack:{}", "r".repeat(256));
        for (text, want) in [
            ("topic:a", "line 1, column 1: a topic rule is SELECTOR observers=LIST".to_string()),
            ("4\n  topic:a observers=4 extra", "line 2, column 3: a topic rule is SELECTOR observers=LIST".into()),
            ("topic:a 4", "line 1, column 1: a topic rule is SELECTOR observers=LIST".into()),
            ("topic:bad/name observers=4", "line 1, column 7: not a topic name: bad/name".into()),
            ("prefix: observers=4", "line 1, column 8: not a topic name: ".into()),
            ("regex:( observers=4", "line 1, column 8: not a pattern of observer.ids (an empty alternative): (".into()),
            ("topic:a observers=", format!("line 1, column 19: not a broker id: \"\" {list}")),
            ("topic:a observers=4,,5", format!("line 1, column 21: not a broker id: \"\" {list}")),
            ("topic:a observers=none,4", format!("line 1, column 19: not a broker id: \"none\" {list}")),
            ("topic:a observers=4\r\ntopic:a observers=5", "line 2, column 1: a second rule for topic:a".into()),
            ("\ntopic:audit observers=5x\n", format!("line 2, column 23: not a broker id: \"5x\" {list}")),
            ("topic:a observers=4,rack:", format!("line 1, column 21: not a rack: \"rack:\" {rack}")),
            ("topic:a observers=rack:a*b", format!("line 1, column 19: not a rack: \"rack:a*b\" {rack}")),
            (&long, format!("line 1, column 19: not a rack: \"{}\" {rack}", &long["topic:a observers=".len()..])),
            ("topic:a observers=Rack:x", format!("line 1, column 19: not a broker id: \"Rack:x\" {list}")),
        ] {
            assert_eq!(rules(text).unwrap_err(), want, "{text:?}");
        }
    }

    #[test]
    fn rack_items_are_read_as_the_registries_read_them() {
        let r = |t: &str| rules(t).unwrap().shown();
        assert_eq!(r("topic:audit observers=rack:dr\n"), "topic:audit=rack:dr");
        assert_eq!(r("topic:audit observers=7,rack:dr"), "topic:audit=7,rack:dr");
        assert_eq!(
            r("prefix:ledger observers=rack:west,rack:dr,rack:west # twice is once\n"),
            "prefix:ledger=rack:dr,rack:west",
            "a set: sorted by byte order, a repeated item once"
        );
        assert_eq!(
            r("topic:a observers=rack:dr,9,rack:a/b-1.c_D,4,rack:Z\nregex:x.* observers=rack:x"),
            "topic:a=4,9,rack:Z,rack:a/b-1.c_D,rack:dr;regex:x.*=rack:x",
            "ids first, ascending, then the racks"
        );
        let longest = format!("rack:{}", "r".repeat(255));
        assert_eq!(r(&format!("topic:a observers={longest}")), format!("topic:a={longest}"));
        // The cases of the contract, with the registries' messages and columns.
        let rack = "(a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/')";
        let list = "(a list is none, or broker ids and rack:NAME separated by commas)";
        for (text, want) in [
            ("topic:a observers=rack:", format!("line 1, column 19: not a rack: \"rack:\" {rack}")),
            ("topic:a observers=4,rack:dr!", format!("line 1, column 21: not a rack: \"rack:dr!\" {rack}")),
            ("topic:a observers=rack:x:y", format!("line 1, column 19: not a rack: \"rack:x:y\" {rack}")),
            ("topic:a observers=rack:é,4", format!("line 1, column 19: not a rack: \"rack:é\" {rack}")),
            ("4\n topic:é observers=4", "line 2, column 8: not a topic name: é".to_string()),
            ("topic:a observers=rack:dr,rack:", format!("line 1, column 27: not a rack: \"rack:\" {rack}")),
            (&format!("topic:a observers={longest}r"), format!("line 1, column 19: not a rack: \"{longest}r\" {rack}")),
            ("topic:a observers=RACK:dr", format!("line 1, column 19: not a broker id: \"RACK:dr\" {list}")),
            ("topic:a observers=rack", format!("line 1, column 19: not a broker id: \"rack\" {list}")),
            ("topic:a observers=rack:dr,none", format!("line 1, column 27: not a broker id: \"none\" {list}")),
            ("topic:a observers=rack:dr,", format!("line 1, column 27: not a broker id: \"\" {list}")),
            ("topic:a observers=rack:dr,5x", format!("line 1, column 27: not a broker id: \"5x\" {list}")),
        ] {
            assert_eq!(rules(text).unwrap_err(), want, "{text:?}");
        }
        // Rack items exist only in a rule's list: on a cluster-wide line `rack:dr` is a token
        // that is not an id, as before.
        assert_eq!((parse("4 rack:dr\n"), ignored("4 rack:dr\n")), (set(&[4]), vec!["rack:dr".to_string()]));
    }

    fn racks(v: &[(i32, Option<&str>)]) -> RackView {
        v.iter().map(|(id, r)| (*id, r.map(str::to_string))).collect()
    }

    #[test]
    fn rack_items_resolve_against_the_brokers_racks() {
        let view =
            racks(&[(1, Some("east")), (2, Some("east")), (4, Some("west")), (5, Some("west")), (6, None), (7, None)]);
        let r = rules("4\ntopic:orders observers=7,rack:west\nprefix:ord observers=rack:dr\ntopic:plain observers=7\n")
            .unwrap();
        let of = |t: &str, others: &[i32]| r.observers_of(t, &view, others.iter().copied());
        assert_eq!(of("orders", &[]), Some(set(&[4, 5, 7])), "its ids and the brokers in rack west");
        assert_eq!(
            of("orders", &[1, 6, 9]),
            Some(set(&[4, 5, 7, 9])),
            "9 is not in Metadata: its rack is unknown, so it observes (fail safe); 6 has no rack: it does not"
        );
        assert_eq!(of("ordinal", &[9]), Some(set(&[9])), "a rack nobody is in: only the unknown broker");
        assert_eq!(of("plain", &[9]), Some(set(&[7])), "no rack item: an unknown rack does not matter");
        assert_eq!(of("other", &[9]), None, "no rule: the cluster-wide ids apply");
        let orders = r.resolve("orders").unwrap();
        assert_eq!(orders.ids, set(&[7]), "the list as written, ids");
        assert!(orders.contains(5, &view) && orders.contains(7, &view) && orders.contains(9, &view));
        assert!(!orders.contains(1, &view) && !orders.contains(6, &view));
        assert_eq!(orders.through_rack(4, &view).as_deref(), Some("rack:west"));
        assert_eq!(orders.through_rack(7, &view), None, "7 is listed by id, without a rack");
        assert_eq!(r.ids(), set(&[7]), "the ids named anywhere; racks are not ids");
    }

    #[test]
    fn a_rack_item_that_keeps_a_broker_an_observer_is_named() {
        let view = racks(&[(1, Some("east")), (4, Some("west")), (5, Some("west")), (6, None)]);
        let text = "4\n# DR\n  prefix:ord observers=5,rack:west # west is DR\n";
        let hold = |id: i32| rack_hold(text, "orders", id, &view).unwrap();
        let west = RackHold {
            line: 3,
            rule: "prefix:ord observers=5,rack:west".into(),
            item: "rack:west".into(),
            known: true,
        };
        assert_eq!(hold(4), Some(west.clone()));
        assert_eq!(hold(5), Some(west.clone()), "listed by id too: removing the id does not promote it");
        assert_eq!((hold(1), hold(6)), (None, None), "east, and no broker.rack: no rack item holds them");
        assert_eq!(hold(9), Some(RackHold { known: false, ..west.clone() }), "an unknown rack: held (fail safe)");
        assert_eq!(rack_hold(text, "logs", 4, &view).unwrap(), None, "no rule for the topic");
        assert_eq!(rack_hold("topic:a observers=rack:x,rack:y", "a", 9, &view).unwrap().unwrap().item, "rack:x,rack:y");
        assert!(rack_hold("topic:a observers=rack:", "a", 4, &view).is_err());
        assert_eq!(
            west.message(4, "orders", "/opt/kafka/observer.ids", "broker 1"),
            "broker 4 observes topic orders through rack:west (line 3 of /opt/kafka/observer.ids on broker 1: `prefix:ord observers=5,rack:west`); edit that rule by hand, or list the brokers by id"
        );
        assert_eq!(
            RackHold { known: false, ..west }.message(9, "orders", "/o", "controller 101"),
            "broker 9 observes topic orders through rack:west: its broker.rack is unknown (the cluster's Metadata does not list broker 9), and a rule naming a rack keeps such a broker an observer (line 3 of /o on controller 101: `prefix:ord observers=5,rack:west`); edit that rule by hand, or list the brokers by id"
        );
    }

    #[test]
    fn edits_of_a_topic_rule_keep_its_rack_items() {
        // demote --topic: the id joins the exact rule, the rack items stay.
        assert_eq!(
            with_topic_rule("topic:audit observers=rack:dr # DR\n", "audit", 4, true).unwrap(),
            "topic:audit observers=4,rack:dr # DR\n"
        );
        assert_eq!(
            with_topic_rule("topic:audit observers=4,rack:dr\n", "audit", 4, false).unwrap(),
            "topic:audit observers=rack:dr\n"
        );
        // A prefix rule in force: the topic's new exact rule copies its rack items.
        let before = "prefix:ledger observers=7,rack:dr\n";
        let promoted = with_topic_rule(before, "ledger-eu", 7, false).unwrap();
        assert_eq!(promoted, "prefix:ledger observers=7,rack:dr\ntopic:ledger-eu observers=rack:dr\n");
        assert_eq!(restore_topic_rule(&promoted, "ledger-eu", 7).unwrap(), before, "and the demotion puts it back");
        // The same list written another way is no change.
        let same = "topic:audit observers=rack:dr,7,rack:dr\n";
        assert_eq!(with_topic_rule(same, "audit", 7, true).unwrap(), same);
        // place writes an id rule: the ids it names, its rack items replaced.
        assert_eq!(
            set_topic_list("topic:audit observers=rack:dr\n", "audit", &Observers::of_ids(set(&[5, 6]))).unwrap(),
            "topic:audit observers=5,6\n"
        );
        // A broker.rack the rule grammar cannot hold is refused, not written as something else.
        let racks = |r: &str| Observers { ids: BTreeSet::new(), racks: [r.to_string()].into() };
        let e = set_topic_list("4\n", "audit", &racks("eu#1")).unwrap_err();
        assert!(e.contains("would read as `observers=rack:eu`"), "{e}");
        let e = set_topic_list("4\n", "audit", &racks("a*b")).unwrap_err();
        assert!(e.contains("would not read") && e.contains("not a rack"), "{e}");
        assert_eq!(
            set_topic_list("4\n", "audit", &racks("eu-1/a.b_c")).unwrap(),
            "4\ntopic:audit observers=rack:eu-1/a.b_c\n"
        );
    }

    #[test]
    fn a_java_only_regex_is_refused_where_it_stands() {
        assert_eq!(
            rules("4\n  regex:(?!tmp).* observers=4\n").unwrap_err(),
            "line 2, column 9: not a pattern of observer.ids ('(?' other than '(?:' (no flags, names or lookaround)): (?!tmp).*"
        );
        assert_eq!(
            rules("regex:[[:alpha:]]+ observers=3").unwrap_err(),
            "line 1, column 8: not a pattern of observer.ids ('[' in a class): [[:alpha:]]+"
        );
        // Columns count the file's bytes, as the registries read it (ISO-8859-1): a UTF-8 'é' is two.
        assert_eq!(
            rules("regex:\u{C3}\u{A9}x observers=3").unwrap_err(),
            "line 1, column 7: not a pattern of observer.ids (U+00C3 is not in the pattern language): \u{C3}\u{A9}x"
        );
    }

    #[test]
    fn id_edits_leave_rule_lines_alone() {
        let text = "4\ntopic:audit observers=4,5\n";
        assert_eq!(without_id(text, 4), "topic:audit observers=4,5\n");
        assert_eq!(with_id("topic:audit observers=4\n", 4), "topic:audit observers=4\n4\n");
    }

    #[test]
    fn selectors_are_checked_as_the_registries_check_a_rule() {
        assert_eq!(Selector::parse("topic:audit"), Ok(Selector::Topic("audit".into())));
        assert_eq!(Selector::parse("prefix:orders-"), Ok(Selector::Prefix("orders-".into())));
        assert_eq!(Selector::parse("regex:a{1,2}"), Ok(Selector::Regex("a{1,2}".into())), "a comma is no separator");
        assert_eq!(
            Selector::parse("regex:a(?!tmp).*"),
            Err("not a pattern of observer.ids ('(?' other than '(?:' (no flags, names or lookaround)): a(?!tmp).* (at character 2)".into())
        );
        for (word, want) in [
            ("audit", "audit: a selector is topic:NAME, prefix:P or regex:R"),
            ("topic:bad/name", "not a topic name: bad/name"),
            ("prefix:", "not a topic name: "),
            ("regex:", "not a pattern of observer.ids (empty):  (at character 1)"),
            ("regex:a b", "regex:a b holds ' ': a selector is one word, without whitespace or `#`, as in observer.ids"),
            ("regex:a#b", "regex:a#b holds '#': a selector is one word, without whitespace or `#`, as in observer.ids"),
        ] {
            assert_eq!(Selector::parse(word).unwrap_err(), want, "{word:?}");
        }
    }

    #[test]
    fn a_rule_the_promotion_added_goes_again_when_the_rest_of_the_file_says_the_same() {
        // Observers of ledger-eu by a prefix rule: the promotion added an exact rule, the
        // demotion takes it away again, and the file is as it was.
        let before = "4\nprefix:ledger observers=4,7\n";
        let promoted = with_topic_rule(before, "ledger-eu", 4, false).unwrap();
        assert_eq!(promoted, "4\nprefix:ledger observers=4,7\ntopic:ledger-eu observers=7\n");
        assert_eq!(restore_topic_rule(&promoted, "ledger-eu", 4).unwrap(), before);
        // By the cluster-wide ids: the same.
        let promoted = with_topic_rule("4, 5\n", "tfull", 4, false).unwrap();
        assert_eq!(restore_topic_rule(&promoted, "tfull", 4).unwrap(), "4, 5\n");
        // The prefix rule changed meanwhile: the exact rule stays, naming what it named before.
        let moved = promoted.replace("4, 5", "5");
        assert_eq!(restore_topic_rule(&moved, "tfull", 4).unwrap(), "5\ntopic:tfull observers=4,5\n");
        // An exact rule the rest of the file does not repeat is rewritten, not removed.
        let own = "topic:audit observers=none # DR later\n";
        assert_eq!(restore_topic_rule(own, "audit", 7).unwrap(), "topic:audit observers=7 # DR later\n");
    }

    #[test]
    fn a_topic_rule_is_edited_in_place_or_appended() {
        // No rule: the topic takes the cluster-wide ids, less (or plus) the broker.
        assert_eq!(with_topic_rule("4, 5\n", "tfull", 4, false).unwrap(), "4, 5\ntopic:tfull observers=5\n");
        assert_eq!(with_topic_rule("4", "tfull", 4, false).unwrap(), "4\ntopic:tfull observers=none\n");
        assert_eq!(with_topic_rule("", "audit", 7, true).unwrap(), "topic:audit observers=7\n");
        // A prefix rule resolves it: its ids are the start.
        assert_eq!(
            with_topic_rule("4\nprefix:ledger observers=7\n", "ledger-eu", 4, true).unwrap(),
            "4\nprefix:ledger observers=7\ntopic:ledger-eu observers=4,7\n"
        );
        // An exact rule: its list rewritten, indentation and comment kept, CRLF kept.
        assert_eq!(
            with_topic_rule("4\r\n  topic:audit\tobservers=7 # DR copy\r\n", "audit", 4, true).unwrap(),
            "4\r\n  topic:audit\tobservers=4,7 # DR copy\r\n"
        );
        assert_eq!(
            with_topic_rule("topic:audit observers=7\n", "audit", 7, false).unwrap(),
            "topic:audit observers=none\n"
        );
        let same = "topic:audit observers=7\n";
        assert_eq!(with_topic_rule(same, "audit", 7, true).unwrap(), same, "already so: the same bytes");
        assert_eq!(
            with_topic_rule("topic:audit-2 observers=7\n", "audit", 7, true).unwrap(),
            "topic:audit-2 observers=7\ntopic:audit observers=7\n"
        );
        // What the registries would read afterwards.
        let after = with_topic_rule("4\n", "tfull", 4, false).unwrap();
        assert_eq!(
            (parse(&after), rules(&after).unwrap().resolve("tfull").map(|o| o.ids.clone())),
            (set(&[4]), Some(set(&[])))
        );
        assert!(with_topic_rule("4\n", "bad/name", 4, true).unwrap_err().contains("not a Kafka topic name"));
        assert!(with_topic_rule("topic:a observers=x\n", "b", 4, true).unwrap_err().starts_with("line 1, column 19"));
        assert!(with_topic_rule("regex:(?!x).* observers=4\n", "b", 4, true)
            .unwrap_err()
            .contains("line 1, column 7: not a pattern of observer.ids"));
    }
}
