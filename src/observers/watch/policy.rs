//! The watchdog's policies: when it promotes an observer of a partition. One for the whole
//! cluster (`--policy`), and one per topic where a topic policy selects it (`--topic-policy`,
//! `topic-policies:`), selected as observer.ids rules select topics: the exact name, else the
//! longest prefix, else the first matching regex in the order given, else the cluster's policy.
//! Its own module, as the decisions (`decide`), the settings (`config`) and the persisted state
//! (`state`) name it.

use std::collections::BTreeMap;

use crate::observers::idfile::Selector;
use crate::observers::pattern::{self, Pattern};

/// When the watchdog promotes an observer of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// The ISR is smaller than the topic's min.insync.replicas: acks=all writes fail.
    UnderMinIsr,
    /// The partition has no leader: nothing can be read or written.
    LeaderUnavailable,
    /// The ISR is smaller than the partition's non-observer replicas.
    UnderReplicated,
    /// Never: the topic is no reason to promote.
    Never,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::UnderMinIsr => "under-min-isr",
            Policy::LeaderUnavailable => "leader-unavailable",
            Policy::UnderReplicated => "under-replicated",
            Policy::Never => "never",
        }
    }

    fn named(word: &str) -> Result<Policy, String> {
        <Policy as clap::ValueEnum>::from_str(word, false).map_err(|_| {
            format!(
                "unknown policy `{}` (under-min-isr, leader-unavailable, under-replicated or never)",
                crate::escape::one_line(word)
            )
        })
    }
}

/// The most topic policies one watchdog takes and the most of them that are patterns: far above
/// what a cluster needs, low enough that a file built to stall the watchdog or fill its memory is
/// refused at once. A pattern itself is bounded as observer.ids bounds it (pattern.rs: at most
/// 4096 characters and 5000 steps, matched in one pass).
pub const MAX_TOPIC_POLICIES: usize = 1000;
pub const MAX_REGEX_POLICIES: usize = 64;

/// One topic policy: the topics it selects and their policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicPolicy {
    pub selector: Selector,
    pub policy: Policy,
    /// Where it was written: (line, column) in the config file; None for a flag.
    pub at: Option<(usize, usize)>,
}

impl TopicPolicy {
    /// A selector as observer.ids writes one, a `regex:` one in observer.ids' pattern language
    /// (pattern.rs), which the brokers and okp read alike.
    pub fn new(selector: &str, policy: Policy, at: Option<(usize, usize)>) -> Result<TopicPolicy, String> {
        // Selector::parse reads a `regex:` selector with the pattern engine: nothing to compile here.
        let selector = Selector::parse(selector).map_err(|e| crate::escape::one_line(&e))?;
        Ok(TopicPolicy { selector, policy, at })
    }

    /// `--topic-policy SELECTOR=POLICY` (the last `=` splits).
    pub fn parse_flag(s: &str) -> Result<TopicPolicy, String> {
        let (selector, policy) = s.rsplit_once('=').ok_or_else(|| {
            "expected SELECTOR=POLICY, e.g. topic:audit=under-replicated or prefix:orders-=never".to_string()
        })?;
        TopicPolicy::new(selector, Policy::named(policy)?, None)
    }

    /// `topic:audit=under-replicated`.
    pub fn shown(&self) -> String {
        format!("{}={}", self.selector.shown(), self.policy.name())
    }

    pub fn is_regex(&self) -> bool {
        matches!(self.selector, Selector::Regex(_))
    }
}

/// R as observer.ids reads it (pattern.rs).
fn compile(pattern: &str) -> Result<Pattern, String> {
    Pattern::compile(pattern)
        .map_err(|e| format!("{} (at character {})", crate::escape::one_line(&pattern::refusal(&e, pattern)), e.at + 1))
}

/// The topic policies of one watchdog, checked and compiled.
#[derive(Clone, Debug, Default)]
pub struct TopicPolicies {
    exact: BTreeMap<String, Policy>,
    prefixes: BTreeMap<String, Policy>,
    /// In the order given.
    regexes: Vec<(Pattern, Policy)>,
    shown: Vec<String>,
}

impl TopicPolicies {
    /// Err: the index of the entry refused (a second one for a selector, one too many) and why.
    pub fn new(list: &[TopicPolicy]) -> Result<TopicPolicies, (usize, String)> {
        if list.len() > MAX_TOPIC_POLICIES {
            return Err((MAX_TOPIC_POLICIES, format!("{} topic policies: at most {MAX_TOPIC_POLICIES}", list.len())));
        }
        if let Some((i, _)) = list.iter().enumerate().filter(|(_, t)| t.is_regex()).nth(MAX_REGEX_POLICIES) {
            return Err((
                i,
                format!("more than {MAX_REGEX_POLICIES} regex topic policies: at most {MAX_REGEX_POLICIES}"),
            ));
        }
        let mut out = TopicPolicies::default();
        let mut first: BTreeMap<&Selector, &TopicPolicy> = BTreeMap::new();
        for (i, t) in list.iter().enumerate() {
            if let Some(f) = first.insert(&t.selector, t) {
                let was = match f.at {
                    Some((line, _)) => format!(" (the first on line {line})"),
                    None => format!(" (the first: {})", f.shown()),
                };
                return Err((
                    i,
                    format!("a second topic policy for {}{was}", crate::escape::one_line(&t.selector.shown())),
                ));
            }
            match &t.selector {
                Selector::Topic(n) => {
                    out.exact.insert(n.clone(), t.policy);
                }
                Selector::Prefix(p) => {
                    out.prefixes.insert(p.clone(), t.policy);
                }
                Selector::Regex(r) => out.regexes.push((compile(r).map_err(|e| (i, e))?, t.policy)),
            }
            out.shown.push(t.shown());
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }

    /// The policy a topic policy gives `topic`: the exact name's, else the longest prefix's, else
    /// the first matching regex's; None: no topic policy selects it (the cluster's applies).
    pub fn resolve(&self, topic: &str) -> Option<Policy> {
        if let Some(p) = self.exact.get(topic) {
            return Some(*p);
        }
        if let Some((_, p)) =
            self.prefixes.iter().filter(|(p, _)| topic.starts_with(p.as_str())).max_by_key(|(p, _)| p.len())
        {
            return Some(*p);
        }
        self.regexes.iter().find(|(re, _)| re.matches(topic)).map(|(_, p)| *p)
    }

    /// As given, `;`-separated: `topic:audit=under-replicated;prefix:orders-=never`.
    pub fn shown(&self) -> String {
        crate::escape::one_line(&self.shown.join(";"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(flags: &[&str]) -> TopicPolicies {
        let list: Vec<TopicPolicy> = flags.iter().map(|f| TopicPolicy::parse_flag(f).unwrap()).collect();
        TopicPolicies::new(&list).unwrap()
    }

    #[test]
    fn the_most_specific_topic_policy_wins_as_in_observer_ids() {
        let t = table(&[
            "regex:ord.*=leader-unavailable",
            "prefix:ord=under-replicated",
            "regex:orders-.*=never",
            "prefix:orders-=under-min-isr",
            "topic:orders-eu=never",
            "regex:a-b.*=under-replicated",
        ]);
        assert_eq!(t.resolve("orders-eu"), Some(Policy::Never), "the exact name first");
        assert_eq!(t.resolve("orders-us"), Some(Policy::UnderMinIsr), "then the longest prefix");
        assert_eq!(t.resolve("ordinal"), Some(Policy::UnderReplicated), "a prefix before any regex");
        assert_eq!(t.resolve("a-bc"), Some(Policy::UnderReplicated), "a pattern of observer.ids");
        assert_eq!(t.resolve("xorders"), None, "a regex matches the whole name; no match: the cluster's");
        let r = table(&["regex:au.*=never", "regex:.*dit=under-replicated"]);
        assert_eq!(r.resolve("audit"), Some(Policy::Never), "the first regex in the order given");
        assert_eq!(r.shown(), "regex:au.*=never;regex:.*dit=under-replicated");
    }

    #[test]
    fn a_malformed_topic_policy_is_refused_with_its_reason() {
        for (flag, want) in [
            ("topic:audit", "expected SELECTOR=POLICY"),
            (
                "topic:audit=always",
                "unknown policy `always` (under-min-isr, leader-unavailable, under-replicated or never)",
            ),
            ("audit=never", "audit: a selector is topic:NAME, prefix:P or regex:R"),
            ("topic:a/b=never", "not a topic name: a/b"),
            ("regex:(=never", "not a pattern of observer.ids (an empty alternative): ( (at character 2)"),
            (
                "regex:(?!tmp).*=never",
                "not a pattern of observer.ids ('(?' other than '(?:' (no flags, names or lookaround)): (?!tmp).*",
            ),
            ("regex:a\tb=never", "holds '\\t'"),
            ("regex:a=b.*=never", "('=' is not in the pattern language): a=b.* (at character 2)"),
            ("regex:(a{200}){200}=never", "over 5000 steps once its counts are expanded"),
        ] {
            let e = TopicPolicy::parse_flag(flag).unwrap_err();
            assert!(e.contains(want), "{flag:?}: {e}");
        }
        let long = format!("regex:{}=never", "a".repeat(pattern::MAX_CHARS + 1));
        assert!(TopicPolicy::parse_flag(&long).unwrap_err().contains("longer than 4096 characters"));
        let twice: Vec<TopicPolicy> = ["topic:a=never", "prefix:a=never", "topic:a=under-replicated"]
            .map(|f| TopicPolicy::parse_flag(f).unwrap())
            .to_vec();
        let (i, e) = TopicPolicies::new(&twice).unwrap_err();
        assert_eq!((i, e.as_str()), (2, "a second topic policy for topic:a (the first: topic:a=never)"));
        let many = vec![TopicPolicy::parse_flag("topic:a=never").unwrap(); MAX_TOPIC_POLICIES + 1];
        assert!(TopicPolicies::new(&many).unwrap_err().1.contains("at most 1000"));
        let regexes: Vec<TopicPolicy> = (0..=MAX_REGEX_POLICIES)
            .map(|i| TopicPolicy::parse_flag(&format!("regex:r{i}.*=never")).unwrap())
            .collect();
        assert_eq!(
            TopicPolicies::new(&regexes).unwrap_err(),
            (64, "more than 64 regex topic policies: at most 64".to_string())
        );
        assert!(TopicPolicies::new(&regexes[..MAX_REGEX_POLICIES]).is_ok());
    }

    #[test]
    fn a_hostile_regex_is_refused_or_matched_in_linear_time() {
        // Catastrophic backtracking in a backtracking engine; observer.ids' engine takes one pass
        // (docs/benchmarks.md has the numbers).
        let t = table(&["regex:(a+)+b=never"]);
        assert_eq!(t.resolve(&"a".repeat(249)), None);
        // Nested past the parser's limit, or blowing up once counts are expanded: refused.
        let deep = format!("regex:{}a{}=never", "(".repeat(2_000), ")".repeat(2_000));
        let e = TopicPolicy::parse_flag(&deep).unwrap_err();
        assert!(e.contains("groups nested deeper than 16"), "{e}");
        let e = TopicPolicy::parse_flag("regex:(((a{100}){100}){100})=never").unwrap_err();
        assert!(e.contains("over 5000 steps"), "{e}");
    }
}
