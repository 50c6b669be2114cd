// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors

//! Generated observer.ids files for the differential test: okp's reader (idfile/), the
//! brokers' (ObserverIds.scala) and the KRaft controllers' (ObserverReplicas.java) must give each
//! file the same verdict, and every `regex:` pattern they accept must match the topics
//! `java.util.regex` matches (patches/tests/ObserverIdsDifferential.java checks the Java and
//! Scala sides and `java.util.regex`; tests/it/observer_ids_contract.rs runs it on these files).
//!
//! One case per line, tab-separated: the file's bytes (hex), the topics asked about
//! (comma-separated, Kafka's topic characters only), okp's verdict (hex), and for a file that is
//! one `regex:P observers=1` rule, P (hex), to be checked against `java.util.regex`; `-` when not.

use crate::observers::idfile;

/// The patterns the attacks of issue 45 and the Java documentation's corners suggest: each must
/// be refused, or accepted with Java's meaning.
pub const HOSTILE: &[&str] = &[
    "[[:alpha:]]+",
    "[a-z--o]",
    "(?i)\\x{17F}",
    "(?i)\\x{212A}",
    "[[:word:]]+",
    "(?i)\u{17F}",
    "(?i)\u{212A}",
    "\u{E9}.*",
    "\\xE9",
    "[\u{E0}-\u{FF}]+",
    "(?P<n>a)",
    "\\u{61}",
    "\\p{Greek}",
    "\\pL",
    "\\p{L}+",
    "\\p{IsGreek}",
    "a{,3}",
    "(?R)",
    "(?<n>a)\\k<n>",
    "a*+",
    "a++",
    "a*?",
    "(?=a)a",
    "(?!x).*",
    "(a)\\1",
    "[a-z&&[^o]]",
    "[^\\W\\d]",
    "\\Qa.b\\E",
    "\\x61",
    "\\0141",
    "\\cA",
    "\\e",
    "\\t",
    "\\s+",
    "\\S+",
    "\\ba\\b",
    "\\B",
    "\\A.*\\z",
    "a\\Z",
    "(?x)a",
    "(?s).",
    "(?u)\\w",
    "[\\w--\\d]",
    "[a-\\d]",
    "[\\d-z]",
    "[z-a]",
    "[a-Z]",
    "[0-z]",
    "[_-a]",
    "[.-a]",
    "x{250}",
    "x{3,2}",
    "x{1000}",
    "x{0}",
    "x{0,0}",
    "x{01}",
    "x{1,}",
    "(.*a){12}x",
    "(a|aa)*b",
    "(a*)*b",
    "((a+)+)+b",
    "(x+x+)+y",
    "^orders.*$",
    "orders\\.$",
    "^",
    "$",
    "^$",
    "|",
    "a|",
    "|a",
    "()",
    "(?:)",
    "(a)(b)(c)",
    "a**",
    "a{2}{3}",
    "(((((((((((((((((a)))))))))))))))))",
    "((((((((((((((((a))))))))))))))))",
    "[]",
    "[^]",
    "[]a]",
    "[a",
    "[a-]",
    "[-a]",
    "[^-]",
    "[\\-.]",
    "\\",
    "a\\",
    "\\.",
    "a\\$",
    "a)",
    ")a",
    "(a",
    "[a-z0-9_-]+",
    "[A-Za-z]{2,4}",
    "(a{249}){20}",
    "(a{200}){25}",
    "((a|b){3}){200}",
    "\u{FEFF}a",
    "a\u{A0}",
    "a\u{85}",
    "\\-",
    "\\_",
    "[\\_]",
    "\\d+",
    "\\w+",
    "[\\d\\w]",
    "[^\\d]+",
    ".",
    ".*",
    ".+",
    "..?",
    "(?:a|b)+c",
    "a.b",
    "a\\.b",
    "__.*",
    "orders-(eu|us)-[0-9]{2,3}",
    "ledger[-_]?\\d{4}",
];

/// `text` as a registry reads it from a UTF-8 file: each byte one character (ISO-8859-1).
pub fn as_read(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// splitmix64: a small, seeded generator, so the files are the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, of: &'a [T]) -> &'a T {
        &of[self.below(of.len())]
    }
}

/// Kafka's topic characters.
const TOPIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
/// Few letters, so generated patterns and names meet often.
const SMALL: &[u8] = b"abcxyzAB019._-";

enum Gen {
    Lit(u8, bool),
    Dot,
    Digit,
    Word,
    Class(bool, Vec<Item>),
    Cat(Vec<Gen>),
    Alt(Vec<Gen>),
    Group(Box<Gen>, bool),
    Rep(Box<Gen>, u32, Option<u32>, &'static str),
}

enum Item {
    Char(u8),
    Range(u8, u8),
    Digit,
    Word,
    Dash,
}

impl Item {
    fn holds(&self, c: u8) -> bool {
        match self {
            Item::Char(x) => *x == c,
            Item::Range(a, b) => (*a..=*b).contains(&c),
            Item::Digit => c.is_ascii_digit(),
            Item::Word => c.is_ascii_alphanumeric() || c == b'_',
            Item::Dash => c == b'-',
        }
    }
}

fn gen(r: &mut Rng, depth: u32) -> Gen {
    let leaf = depth >= 3 || r.chance(45);
    if leaf {
        return match r.below(10) {
            0..=4 => Gen::Lit(*r.pick(SMALL), r.chance(30)),
            5 => Gen::Dot,
            6 => {
                if r.chance(50) {
                    Gen::Digit
                } else {
                    Gen::Word
                }
            }
            _ => {
                let mut items: Vec<Item> = (0..1 + r.below(3))
                    .map(|_| match r.below(6) {
                        0 => Item::Range(b'a', *r.pick(b"acxz")),
                        1 => Item::Range(b'0', *r.pick(b"059")),
                        2 => Item::Digit,
                        3 => Item::Word,
                        4 => Item::Range(b'A', b'C'),
                        _ => Item::Char(*r.pick(b"abxz09._AB")),
                    })
                    .collect();
                if r.chance(20) {
                    items.push(Item::Dash);
                }
                Gen::Class(r.chance(25), items)
            }
        };
    }
    match r.below(4) {
        0 => Gen::Cat((0..2 + r.below(3)).map(|_| gen(r, depth + 1)).collect()),
        1 => Gen::Alt((0..2 + r.below(2)).map(|_| gen(r, depth + 1)).collect()),
        2 => Gen::Group(Box::new(gen(r, depth + 1)), r.chance(50)),
        _ => {
            let (min, max, q): (u32, Option<u32>, &str) = match r.below(6) {
                0 => (0, None, "*"),
                1 => (1, None, "+"),
                2 => (0, Some(1), "?"),
                3 => {
                    let n = r.below(4) as u32;
                    (n, Some(n), "{n}")
                }
                4 => (r.below(3) as u32, None, "{n,}"),
                _ => {
                    let n = r.below(3) as u32;
                    (n, Some(n + r.below(3) as u32), "{n,m}")
                }
            };
            Gen::Rep(Box::new(gen(r, depth + 1)), min, max, q)
        }
    }
}

fn render(g: &Gen, out: &mut String) {
    match g {
        Gen::Lit(c, escape) => {
            if *c == b'.' {
                out.push_str("\\.");
            } else if *c == b'-' && *escape {
                out.push_str("\\-");
            } else {
                out.push(*c as char);
            }
        }
        Gen::Dot => out.push('.'),
        Gen::Digit => out.push_str("\\d"),
        Gen::Word => out.push_str("\\w"),
        Gen::Class(neg, items) => {
            out.push('[');
            if *neg {
                out.push('^');
            }
            for i in items {
                match i {
                    Item::Char(c) => out.push(*c as char),
                    Item::Range(a, b) => {
                        out.push(*a as char);
                        out.push('-');
                        out.push(*b as char);
                    }
                    Item::Digit => out.push_str("\\d"),
                    Item::Word => out.push_str("\\w"),
                    Item::Dash => out.push('-'),
                }
            }
            out.push(']');
        }
        Gen::Cat(parts) => parts.iter().for_each(|p| render_atom_if_alt(p, out)),
        Gen::Alt(parts) => {
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                render(p, out);
            }
        }
        Gen::Group(inner, plain) => {
            out.push_str(if *plain { "(" } else { "(?:" });
            render(inner, out);
            out.push(')');
        }
        Gen::Rep(inner, min, max, q) => {
            match inner.as_ref() {
                Gen::Lit(..) | Gen::Dot | Gen::Digit | Gen::Word | Gen::Class(..) | Gen::Group(..) => {
                    render(inner, out)
                }
                _ => {
                    out.push('(');
                    render(inner, out);
                    out.push(')');
                }
            }
            match *q {
                "{n}" => out.push_str(&format!("{{{min}}}")),
                "{n,}" => out.push_str(&format!("{{{min},}}")),
                "{n,m}" => out.push_str(&format!("{{{min},{}}}", max.unwrap())),
                q => out.push_str(q),
            }
        }
    }
}

fn render_atom_if_alt(g: &Gen, out: &mut String) {
    if let Gen::Alt(_) = g {
        out.push_str("(?:");
        render(g, out);
        out.push(')');
    } else {
        render(g, out);
    }
}

/// A name the pattern should match (a hint for the generator: the verdict decides).
fn sample(g: &Gen, r: &mut Rng, out: &mut String) {
    match g {
        Gen::Lit(c, _) => out.push(*c as char),
        Gen::Dot => out.push(*r.pick(TOPIC) as char),
        Gen::Digit => out.push(*r.pick(b"0123456789") as char),
        Gen::Word => out.push(*r.pick(b"azAZ09_") as char),
        Gen::Class(neg, items) => {
            let fits: Vec<u8> = TOPIC.iter().copied().filter(|c| items.iter().any(|i| i.holds(*c)) != *neg).collect();
            out.push(if fits.is_empty() { 'q' } else { *r.pick(&fits) as char });
        }
        Gen::Cat(parts) => parts.iter().for_each(|p| sample(p, r, out)),
        Gen::Alt(parts) => sample(r.pick(parts), r, out),
        Gen::Group(inner, _) => sample(inner, r, out),
        Gen::Rep(inner, min, max, _) => {
            let top = max.unwrap_or(min + 3).min(min + 3);
            for _ in 0..*min + r.below((top - min + 1) as usize) as u32 {
                sample(inner, r, out);
            }
        }
    }
}

fn topic_name(r: &mut Rng) -> String {
    let len = 1 + r.below(8);
    (0..len)
        .map(|_| {
            let from = if r.chance(70) { SMALL } else { TOPIC };
            *r.pick(from) as char
        })
        .collect()
}

/// A name made a legal topic: at most 249 characters, at least one.
fn legal(name: String) -> String {
    let name: String = name.chars().take(249).collect();
    if name.is_empty() {
        "e".into()
    } else {
        name
    }
}

/// A pattern bent by one edit: a character inserted, removed or replaced by one from a hostile
/// alphabet (operators, brackets, non-ASCII Latin-1 characters).
fn mutate(p: &str, r: &mut Rng) -> String {
    const HOSTILE_CHARS: &[char] = &[
        '[', ']', '(', ')', '{', '}', '^', '$', '|', '?', '*', '+', '\\', '-', ',', ':', '=', '!', '<', '>', '&', '#',
        '"', '\'', '/', '%', 'p', 'P', 'Q', 'E', 'x', 'u', '1', '\u{E9}', '\u{A0}', '\u{85}', '\u{FF}', '\u{7F}',
        '\u{1}',
    ];
    let mut chars: Vec<char> = p.chars().collect();
    let at = r.below(chars.len() + 1);
    match r.below(3) {
        0 => chars.insert(at, *r.pick(HOSTILE_CHARS)),
        1 if at < chars.len() => {
            chars.remove(at);
        }
        _ if at < chars.len() => chars[at] = *r.pick(HOSTILE_CHARS),
        _ => chars.push(*r.pick(HOSTILE_CHARS)),
    }
    chars.into_iter().collect()
}

/// One case: the file's text (characters U+0000-U+00FF, one per byte, as the registries read
/// files as ISO-8859-1), the topics asked about, and the pattern to check against
/// `java.util.regex` when the file is that one rule.
pub struct Case {
    pub text: String,
    pub topics: Vec<String>,
    pub pattern: Option<String>,
}

fn pattern_case(p: String, names: Vec<String>, r: &mut Rng) -> Case {
    let mut topics: Vec<String> = names.into_iter().map(legal).collect();
    while topics.len() < 8 {
        topics.push(topic_name(r));
    }
    if r.chance(5) {
        topics.push("a".repeat(249));
    }
    let no_space = !p.chars().any(|c| c == '#' || matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r'));
    Case { text: format!("regex:{p} observers=1\n"), topics, pattern: no_space.then_some(p) }
}

/// A whole file: cluster-wide ids, comments, the three kinds of rules, line endings of every
/// kind, and stray bytes.
fn file_case(r: &mut Rng) -> Case {
    let mut text = String::new();
    let mut topics = Vec::new();
    for _ in 0..1 + r.below(6) {
        let line = match r.below(9) {
            0 => format!("{}, {}", r.below(10), r.below(10)),
            1 => "# a comment 7".to_string(),
            2 => {
                let t = topic_name(r);
                topics.push(t.clone());
                format!("topic:{t} observers={}", r.below(10))
            }
            3 => {
                let t = topic_name(r);
                topics.push(format!("{t}{}", topic_name(r)));
                format!("prefix:{t} observers={},rack:r{}", r.below(10), r.below(3))
            }
            4 => {
                let g = gen(r, 0);
                let mut p = String::new();
                render(&g, &mut p);
                let mut s = String::new();
                sample(&g, r, &mut s);
                topics.push(legal(s));
                format!("regex:{p}\tobservers={}", r.below(10))
            }
            5 => format!("regex:{} observers=none", as_read(HOSTILE[r.below(HOSTILE.len())])),
            6 => format!(
                "{}{} {}",
                *r.pick(&["", "\u{EF}\u{BB}\u{BF}", "\u{A0}", " "]),
                r.below(10),
                r.pick(&["4x", "+3", "\u{E9}", "rack:dr"])
            ),
            7 => format!(
                "topic:{} observers={}",
                topic_name(r),
                r.pick(&["none", "4,,5", "none,4", "rack:", "Rack:x", "5"])
            ),
            _ => format!("  prefix:{} observers=2 # note", topic_name(r)),
        };
        text.push_str(&line);
        const ENDS: [&str; 4] = ["\n", "\r\n", "\r", "\n\n"];
        let end = ENDS[r.below(ENDS.len())];
        text.push_str(end);
    }
    while topics.len() < 6 {
        topics.push(topic_name(r));
    }
    Case { text, topics: topics.into_iter().map(legal).collect(), pattern: None }
}

/// `count` cases from `seed`: every hostile pattern, then generated patterns (a third of them
/// bent by one edit) and whole files.
pub fn generate(seed: u64, count: usize) -> Vec<Case> {
    let mut r = Rng::new(seed);
    let mut out: Vec<Case> = HOSTILE
        .iter()
        .map(|p| {
            let names = vec!["a".into(), "orders".into(), "orders.x".into(), "ab".into(), "x".into(), "aab".into()];
            pattern_case(as_read(p), names, &mut r)
        })
        .collect();
    while out.len() < count {
        if r.chance(25) {
            out.push(file_case(&mut r));
            continue;
        }
        let g = gen(&mut r, 0);
        let mut p = String::new();
        if r.chance(10) {
            p.push('^');
        }
        render(&g, &mut p);
        if r.chance(10) {
            p.push('$');
        }
        let names: Vec<String> = (0..5)
            .map(|_| {
                let mut s = String::new();
                sample(&g, &mut r, &mut s);
                s
            })
            .collect();
        if r.chance(33) {
            p = mutate(&p, &mut r);
        }
        out.push(pattern_case(p, names, &mut r));
    }
    out
}

/// okp's verdict on a file: `malformed:MESSAGE`, or the cluster-wide ids, the rules' canonical
/// text, and each topic's rule list (`-`: no rule, the cluster-wide ids apply).
pub fn verdict(text: &str, topics: &[String]) -> String {
    let rules = match idfile::rules(text) {
        Ok(r) => r,
        Err(e) => return format!("malformed:{e}"),
    };
    let ids: Vec<String> = idfile::parse(text).iter().map(|i| i.to_string()).collect();
    let mut out = format!("ids={};rules={}", ids.join(","), rules.shown());
    for t in topics {
        let list = match rules.resolve(t) {
            Some(o) => o.shown(),
            None => "-".into(),
        };
        out.push_str(&format!(";{t}={list}"));
    }
    out
}

/// Lowercase hex of a text's characters, one byte each (every character is U+0000-U+00FF).
pub fn hex(text: &str) -> String {
    text.chars()
        .map(|c| {
            assert!((c as u32) < 0x100, "{c:?} is not one byte: cases hold what a registry reads (as_read)");
            format!("{:02x}", c as u32)
        })
        .collect()
}

/// The lines of the cases file.
pub fn lines(cases: &[Case]) -> String {
    let mut out = String::new();
    for c in cases {
        let pattern = c.pattern.as_deref().map_or("-".to_string(), hex);
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            hex(&c.text),
            c.topics.join(","),
            hex(&verdict(&c.text, &c.topics)),
            pattern
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::pattern::Pattern;

    /// Every pattern the engine accepts means what Rust's regex crate means by `^(?:P)$` on Kafka
    /// topic names (the Java side is held to `java.util.regex` by the differential test).
    #[test]
    fn agrees_with_the_regex_crate_where_it_accepts() {
        let mut accepted = 0;
        let mut checked = 0;
        for case in generate(45, 3000) {
            let Some(p) = &case.pattern else { continue };
            let Ok(mine) = Pattern::compile(p) else { continue };
            accepted += 1;
            let theirs =
                regex::Regex::new(&format!("^(?:{p})$")).unwrap_or_else(|e| panic!("{p} accepted by okp: {e}"));
            for t in &case.topics {
                checked += 1;
                assert_eq!(mine.matches(t), theirs.is_match(t), "{p} on {t}");
            }
        }
        assert!(accepted > 1000 && checked > 8000, "{accepted} patterns, {checked} names");
    }

    #[test]
    fn hostile_patterns_are_in_the_cases() {
        let cases = generate(45, 10);
        assert_eq!(cases.len(), HOSTILE.len(), "count below the hostile list: just the list");
        let mut r = Rng::new(1);
        assert_ne!(r.next_u64(), r.next_u64());
    }

    /// Writes the differential cases to $OKP_WRITE_DIFF_CASES (a developer's aid to run
    /// patches/tests/run-contract-test.sh by hand with OKP_DIFF_CASES); does nothing when unset.
    #[test]
    fn write_cases_when_asked() {
        if let Some(path) = std::env::var_os("OKP_WRITE_DIFF_CASES") {
            std::fs::write(path, lines(&generate(45, 4000))).unwrap();
        }
    }
}
