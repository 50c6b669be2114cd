//! The lookups behind `Rules::in_force` whose cost does not grow with the number of rules: the
//! longest matching `prefix:` rule found through the lengths the prefixes have (at most one map
//! lookup per distinct length, and a topic name has at most 249 characters), and the first
//! matching `regex:` rule found by one automaton over every pattern (`regex::bytes::RegexSet`)
//! instead of one simulation per pattern.
//!
//! The index must give exactly the decisions of the linear scan it replaces
//! (`Rules::in_force_linear`, kept as the reference); the property test below holds it to that
//! over generated rule sets and names, and `examples/rules_scale.rs` measures both
//! (docs/benchmarks.md, "Rules at scale").
//!
//! Not here: what a rule or a pattern means (idfile/mod.rs, pattern/); the registries' copies of
//! this index (ObserverIds.scala, ObserverReplicas.java), which cache a decision per topic instead
//! of building one automaton.

use std::sync::OnceLock;

use crate::observers::pattern::Pattern;

/// Compiled-size limits of the combined automaton. Past them (tens of thousands of large
/// patterns) the set is not built and the regexes are scanned one by one, as before the index.
const SET_SIZE_LIMIT: usize = 256 << 20;
const SET_DFA_LIMIT: usize = 64 << 20;

/// The distinct lengths of the `prefix:` rules, longest first.
#[derive(Debug, Clone, Default)]
pub(super) struct PrefixLengths(Vec<usize>);

impl PrefixLengths {
    pub(super) fn of<'a>(prefixes: impl Iterator<Item = &'a String>) -> PrefixLengths {
        let mut lens: Vec<usize> = prefixes.map(String::len).collect();
        lens.sort_unstable_by(|a, b| b.cmp(a));
        lens.dedup();
        PrefixLengths(lens)
    }

    /// The leading parts of `topic` that a prefix rule could be, longest first. A prefix is ASCII
    /// (Kafka's topic characters), so a length that cuts a character of `topic` cannot match.
    pub(super) fn candidates<'t>(&'t self, topic: &'t str) -> impl Iterator<Item = &'t str> + 't {
        self.0.iter().filter(move |&&n| n <= topic.len()).filter_map(move |&n| topic.get(..n))
    }
}

/// Every `regex:` pattern of a file as one automaton, built on first use.
#[derive(Debug, Clone, Default)]
pub(super) struct RegexIndex(OnceLock<Option<regex::bytes::RegexSet>>);

impl RegexIndex {
    /// The position of the first pattern matching the whole of `topic`, or None when no pattern
    /// matches; `Err(())` when the automaton cannot answer for this name, and the caller scans.
    ///
    /// The combined automaton answers for ASCII names only: there, the pattern language means the
    /// same to the regex crate with `(?s-u)` (`.` any byte, `\w` and `\d` ASCII) as to the engine
    /// (differential.rs holds the two to one meaning). A name with another character (never a
    /// Kafka topic) is left to the engine, which counts characters as the registries do.
    pub(super) fn first_match<'a>(
        &self,
        patterns: impl Iterator<Item = &'a Pattern>,
        topic: &str,
    ) -> Result<Option<usize>, ()> {
        if !topic.is_ascii() {
            return Err(());
        }
        let set = self.0.get_or_init(|| {
            regex::bytes::RegexSetBuilder::new(patterns.map(|p| format!("(?s-u)^(?:{})$", p.as_str())))
                .size_limit(SET_SIZE_LIMIT)
                .dfa_size_limit(SET_DFA_LIMIT)
                .build()
                .ok()
        });
        match set {
            Some(set) => Ok(set.matches(topic.as_bytes()).iter().next()),
            None => Err(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::observers::differential::Rng;
    use crate::observers::idfile::rules;

    /// Kafka's topic characters, few of them so rules and names meet often.
    const CHARS: &[u8] = b"abcxy01._-";

    fn word(r: &mut Rng, max: usize) -> String {
        (0..1 + r.below(max)).map(|_| CHARS[r.below(CHARS.len())] as char).collect()
    }

    fn pattern(r: &mut Rng) -> String {
        const PARTS: &[&str] = &["a", "b", "x", ".", "\\.", "\\d", "\\w", "[a-c]", "[^a]", "-", "_"];
        let mut p = String::new();
        for _ in 0..1 + r.below(4) {
            p.push_str(PARTS[r.below(PARTS.len())]);
            p.push_str(["", "*", "+", "?", "{1,2}"][r.below(5)]);
        }
        if r.below(4) == 0 {
            p = format!("({p})|{}", word(r, 3));
        }
        p
    }

    /// A rule set of the three kinds, up to `max` rules, as the text of a file.
    fn file(r: &mut Rng, max: usize) -> String {
        let mut text = String::new();
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..r.below(max + 1) {
            let selector = match r.below(3) {
                0 => format!("topic:{}", word(r, 6)),
                1 => format!("prefix:{}", word(r, 4)),
                _ => format!("regex:{}", pattern(r)),
            };
            // A second rule with the same selector makes the file malformed.
            if seen.insert(selector.clone()) {
                text.push_str(&format!("{selector} observers={}\n", i % 50));
            }
        }
        text
    }

    /// The index gives the decision of the linear scan, rule for rule (selector and line), on
    /// generated rule sets and names, some of them not ASCII.
    #[test]
    fn the_index_decides_as_the_linear_scan() {
        let mut r = Rng::new(48);
        let (mut sets, mut names, mut ruled) = (0, 0, 0);
        while sets < 400 {
            let Ok(rs) = rules(&file(&mut r, 60)) else { continue };
            sets += 1;
            for _ in 0..60 {
                let mut topic = word(&mut r, 8);
                if r.below(20) == 0 {
                    topic.push('\u{E9}');
                }
                let (got, want) = (rs.in_force(&topic), rs.in_force_linear(&topic));
                assert_eq!(got.map(|f| (f.selector, f.line)), want.map(|f| (f.selector, f.line)), "{topic}");
                names += 1;
                ruled += usize::from(want.is_some());
            }
        }
        assert!(ruled > names / 4 && ruled < names * 3 / 4, "{ruled} of {names} names ruled: cases too one-sided");
    }
}
