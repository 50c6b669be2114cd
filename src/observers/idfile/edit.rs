//! The editors of an observer.ids text: one id added to or removed from the cluster-wide ids, one
//! topic's exact rule written. An edit touches only the tokens of that id or that rule: comments,
//! other ids, blank lines and the file's separators stay as they were, so an operator's
//! annotations survive a promote/demote round trip; the id edits leave rule lines as they are.
//! Every editor reads its result back with the reader (`super`) before it returns it.
//!
//! Not here: what a text means (`super`), reading or writing files (transport/).

use super::{
    id_of, is_rule_line, is_separator, is_topic_name, java_lines, lines_with_ends, parse, rules, show, split_comment,
    Observers, RackView,
};

/// Whether `text` ends a line (so an appended line starts on its own).
fn ends_a_line(text: &str) -> bool {
    text.is_empty() || text.ends_with(['\r', '\n'])
}

/// `text` with `id` added (a line of its own at the end), or unchanged when it already names it.
pub(super) fn with_id(text: &str, id: i32) -> String {
    if parse(text).contains(&id) {
        return text.to_string();
    }
    let mut out = text.to_string();
    if !ends_a_line(&out) {
        out.push('\n');
    }
    out.push_str(&format!("{id}\n"));
    out
}

/// `text` without `id`: every token that reads as `id` (also `04`) is removed
/// from its line; a line left with neither ids nor a comment is dropped, and
/// the line's other ids keep their order and its separator style (`, ` when the
/// line used commas, else a space).
pub(super) fn without_id(text: &str, id: i32) -> String {
    let mut out = String::new();
    for (body, eol) in lines_with_ends(text) {
        if is_rule_line(body) {
            out.push_str(body);
            out.push_str(eol);
            continue;
        }
        let (ids, comment) = split_comment(body);
        let tokens: Vec<&str> = ids.split(is_separator).filter(|t| !t.is_empty()).collect();
        if !tokens.iter().any(|t| id_of(t) == Some(id)) {
            out.push_str(body);
            out.push_str(eol);
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

/// `text` with `id` an observer cluster-wide (`observer`: `with_id`) or not (`without_id`), read
/// back as the registries will read it before anything is written: the new text must name the
/// old cluster-wide ids with `id` added or removed, and the same topic rules. Err: what it would
/// read as instead (an editor that split lines otherwise than the registries wrote nothing for
/// `4 # note\r5` and reported broker 5 promoted).
pub fn with_cluster_id(text: &str, id: i32, observer: bool) -> std::result::Result<String, String> {
    let after = if observer { with_id(text, id) } else { without_id(text, id) };
    let mut want = parse(text);
    if observer {
        want.insert(id);
    } else {
        want.remove(&id);
    }
    let (got, rules_before, rules_after) = (parse(&after), rules(text).ok(), rules(&after).ok());
    if got != want || rules_before != rules_after {
        return Err(format!(
            "{} broker {id} would read as the ids {}{} instead of {}; edit the file by hand",
            if observer { "adding" } else { "removing" },
            show(&got),
            if rules_before == rules_after { String::new() } else { " with changed topic rules".into() },
            show(&want)
        ));
    }
    Ok(after)
}

/// `text` with `id` made an observer (`observer`) or a full replica of `topic` alone: the exact
/// rule `topic:TOPIC` gets the topic's observers as this file resolves them now (its rule, a
/// prefix's, a regex's or the cluster-wide ids), rack items kept, with `id` added to or removed
/// from its ids. An existing exact rule has its list rewritten in place (indentation and comment
/// kept); otherwise one line is appended. Unchanged bytes when nothing changes. Err: the topic
/// name is not one Kafka accepts, or a rule in the file is malformed (the registries keep their
/// last good set).
///
/// Removing the id does not promote a broker a rack item of the rule keeps an observer: check
/// `rack_hold` first.
pub fn with_topic_rule(text: &str, topic: &str, id: i32, observer: bool) -> std::result::Result<String, String> {
    check_topic_name(topic)?;
    let mut list = match rules(text)?.resolve(topic) {
        Some(s) => s.clone(),
        None => Observers::of_ids(parse(text)),
    };
    if observer {
        list.ids.insert(id);
    } else {
        list.ids.remove(&id);
    }
    set_topic_list(text, topic, &list)
}

/// Why removing broker `id` from topic `topic`'s rule in `text` would not make it a full replica
/// of `topic`: the rule in force names a rack item that keeps it an observer (`racks`: the
/// cluster's brokers and their broker.rack; a broker not in it has an unknown rack, which any
/// rack item holds). None: no rack item holds it. Err as `with_topic_rule`.
pub fn rack_hold(text: &str, topic: &str, id: i32, racks: &RackView) -> std::result::Result<Option<RackHold>, String> {
    let rules = rules(text)?;
    let Some(rule) = rules.in_force(topic) else { return Ok(None) };
    let Some(item) = rule.observers.through_rack(id, racks) else { return Ok(None) };
    let written =
        java_lines(text).get(rule.line - 1).map(|l| split_comment(l).0.trim().to_string()).unwrap_or_default();
    Ok(Some(RackHold { line: rule.line, rule: written, item, known: racks.contains_key(&id) }))
}

/// A rack item that keeps a broker an observer of a topic (`rack_hold`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RackHold {
    /// The rule's line, 1-based.
    pub line: usize,
    /// The rule as written, without its comment: `topic:orders observers=5,rack:west`.
    pub rule: String,
    /// `rack:west`; with the broker's rack unknown, every rack item of the rule (`rack:dr,rack:west`).
    pub item: String,
    /// Whether the cluster reports the broker (and so its broker.rack).
    pub known: bool,
}

impl RackHold {
    /// What a promotion of `broker` for `topic` refused for it says, the file `file` of `node`
    /// named: `broker 4 observes topic orders through rack:west (line 3 of /opt/kafka/observer.ids
    /// on broker 1: `topic:orders observers=rack:west`); edit that rule by hand, or list the
    /// brokers by id`.
    pub fn message(&self, broker: i32, topic: &str, file: &str, node: &str) -> String {
        let unknown = if self.known {
            String::new()
        } else {
            format!(
                ": its broker.rack is unknown (the cluster's Metadata does not list broker {broker}), and a rule naming a rack keeps such a broker an observer"
            )
        };
        format!(
            "broker {broker} observes topic {} through {}{unknown} (line {} of {} on {}: `{}`); edit that rule by hand, or list the brokers by id",
            crate::escape::one_line(topic),
            self.item,
            self.line,
            crate::escape::one_line(file),
            node,
            crate::escape::one_line(&self.rule)
        )
    }
}

/// `text` with `id` an observer of `topic` again, after a promotion that wrote `topic`'s exact rule
/// where the topic had none (its observers came from a prefix, a regex or the cluster-wide ids):
/// the exact rule goes again when the rest of the file gives `topic` the very observers it would
/// name (`id` and the rule's others), which puts the file back as it was; otherwise (the rest of
/// the file changed meanwhile) it is rewritten as `with_topic_rule` does. Err as `with_topic_rule`.
pub fn restore_topic_rule(text: &str, topic: &str, id: i32) -> std::result::Result<String, String> {
    let after = with_topic_rule(text, topic, id, true)?;
    let Some(want) = rules(&after)?.exact.get(topic).map(|e| e.list.clone()) else { return Ok(after) };
    let selector = format!("topic:{topic}");
    let without: String = lines_with_ends(&after)
        .into_iter()
        .filter(|(line, _)| {
            let first = split_comment(line).0.split(|c: char| c != ',' && is_separator(c)).find(|w| !w.is_empty());
            !(is_rule_line(line) && first == Some(selector.as_str()))
        })
        .flat_map(|(line, eol)| [line, eol])
        .collect();
    let gives = match rules(&without)?.resolve(topic) {
        Some(s) => s.clone(),
        None => Observers::of_ids(parse(&without)),
    };
    Ok(if gives == want { without } else { after })
}

fn check_topic_name(topic: &str) -> std::result::Result<(), String> {
    if is_topic_name(topic) {
        return Ok(());
    }
    Err(format!(
        "topic {}: not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249)",
        crate::escape::one_line(topic)
    ))
}

/// `text` with topic `topic`'s exact rule naming `list` alone, written canonical (`4,7,rack:dr`;
/// `none` when empty; what the rule listed before goes): rewritten in place when the file has one
/// (indentation and comment kept; the same bytes when it already says so), else one line
/// appended. Err as `with_topic_rule`.
/// The new text must read back as `list` for `topic`: a rack whose name the rule grammar cannot
/// hold (`rack:eu#1` would read as `rack:eu` and a comment; `rack:a*b` as a malformed rule, which
/// freezes every node) is refused, naming it, and nothing is written.
pub fn set_topic_list(text: &str, topic: &str, list: &Observers) -> std::result::Result<String, String> {
    let out = write_topic_list(text, topic, list)?;
    let back = rules(&out).map_err(|e| {
        format!(
            "topic {}: the rule `observers={}` would not read ({e})",
            crate::escape::one_line(topic),
            crate::escape::one_line(&list.shown())
        )
    })?;
    match back.exact.get(topic) {
        Some(e) if &e.list == list => Ok(out),
        other => Err(format!(
            "topic {}: the rule `observers={}` would read as `observers={}`",
            crate::escape::one_line(topic),
            crate::escape::one_line(&list.shown()),
            crate::escape::one_line(&other.map(|e| e.list.shown()).unwrap_or_else(|| "(no rule)".into()))
        )),
    }
}

fn write_topic_list(text: &str, topic: &str, list: &Observers) -> std::result::Result<String, String> {
    check_topic_name(topic)?;
    let rules = rules(text)?;
    let had = rules.exact.get(topic).map(|e| &e.list);
    if had == Some(list) {
        return Ok(text.to_string());
    }
    let shown = list.shown();
    let selector = format!("topic:{topic}");
    if had.is_none() {
        let mut out = text.to_string();
        if !ends_a_line(&out) {
            out.push('\n');
        }
        out.push_str(&format!("{selector} observers={shown}\n"));
        return Ok(out);
    }
    let mut out = String::new();
    for (line, eol) in lines_with_ends(text) {
        let (body, comment) = split_comment(line);
        let first = body.split(|c: char| c != ',' && is_separator(c)).find(|w| !w.is_empty());
        match body.find("observers=") {
            Some(at) if is_rule_line(line) && first == Some(selector.as_str()) => {
                let end = body[at..].find(|c: char| c != ',' && is_separator(c)).map_or(body.len(), |e| at + e);
                out.push_str(&body[..at]);
                out.push_str(&format!("observers={shown}"));
                out.push_str(&body[end..]);
                out.push_str(comment);
            }
            _ => out.push_str(line),
        }
        out.push_str(eol);
    }
    Ok(out)
}
