// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors

//! The pattern language of `regex:R` topic rules (docs/observer-ids.md, "Patterns"): a small
//! subset of Java's regular expressions that okp, the brokers (ObserverIds.scala) and the KRaft
//! controllers (ObserverReplicas.java) each parse and match with the same hand-written engine, so
//! a rule means one thing everywhere. Anything outside the subset is refused with its position and
//! a reason worded identically in the three readers.
//!
//! Matching is a Thompson simulation over a program of at most `MAX_STEPS` steps, one pass over
//! the name: time linear in the name's length times the program's size, whatever the pattern
//! (no backtracking). The registries' copies are line-for-line ports of this file; the
//! differential test (differential.rs, tests/it/observer_ids_contract.rs) holds the three to one meaning and to
//! `java.util.regex` on every pattern they accept.

/// The longest pattern read, in characters.
pub const MAX_CHARS: usize = 4096;
/// The deepest nesting of groups.
pub const MAX_DEPTH: usize = 16;
/// The largest count in `{N}`, `{N,}` or `{N,M}`: a topic name holds at most 249 characters.
pub const MAX_COUNT: u32 = 249;
/// The largest program, counts expanded: bounds both the memory and the time of a match.
pub const MAX_STEPS: u64 = 5000;

/// A pattern refused: the 0-based character position it was found at, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub at: usize,
    pub reason: String,
}

/// The message of a refused pattern, the registries' words: `not a pattern of observer.ids
/// (REASON): VALUE`.
pub fn refusal(e: &PatternError, value: &str) -> String {
    format!("not a pattern of observer.ids ({}): {value}", e.reason)
}

/// A set of ASCII characters, or any character at all (`.`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Set {
    lo: u64,
    hi: u64,
    any: bool,
}

impl Set {
    const EMPTY: Set = Set { lo: 0, hi: 0, any: false };

    fn add(&mut self, c: u8) {
        if c < 64 {
            self.lo |= 1 << c;
        } else {
            self.hi |= 1 << (c - 64);
        }
    }

    fn add_range(&mut self, from: u8, to: u8) {
        for c in from..=to {
            self.add(c);
        }
    }

    fn of(c: u8) -> Set {
        let mut s = Set::EMPTY;
        s.add(c);
        s
    }

    fn digits() -> Set {
        let mut s = Set::EMPTY;
        s.add_range(b'0', b'9');
        s
    }

    fn word() -> Set {
        let mut s = Set::digits();
        s.add_range(b'a', b'z');
        s.add_range(b'A', b'Z');
        s.add(b'_');
        s
    }

    fn matches(&self, c: char, negated_rest: bool) -> bool {
        if self.any {
            return true;
        }
        let c = c as u32;
        if c >= 128 {
            return negated_rest;
        }
        if c < 64 {
            self.lo & (1 << c) != 0
        } else {
            self.hi & (1 << (c - 64)) != 0
        }
    }
}

#[derive(Debug, Clone)]
enum Node {
    /// One character of a set; `rest`: also any non-ASCII character (a negated class).
    Char(Set, bool),
    Cat(Vec<Node>),
    Alt(Vec<Node>),
    /// min, max (None: unbounded).
    Repeat(Box<Node>, u32, Option<u32>),
}

impl Node {
    /// The program steps this node compiles to, saturating just past the limit.
    fn steps(&self) -> u64 {
        let cap = |v: u64| v.min(MAX_STEPS + 1);
        match self {
            Node::Char(..) => 1,
            Node::Cat(parts) => cap(parts.iter().map(Node::steps).sum()),
            Node::Alt(parts) => cap(parts.iter().map(Node::steps).sum::<u64>() + 2 * (parts.len() as u64 - 1)),
            Node::Repeat(inner, min, max) => {
                let f = inner.steps();
                let fixed = f * u64::from(*min);
                cap(match max {
                    None => fixed + f + 2,
                    Some(max) => fixed + u64::from(max - min) * (f + 1),
                })
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Consume one character of the set (`rest`: or any non-ASCII one), go on to the next step.
    Char(Set, bool),
    /// Go on at both relative targets.
    Split(i32, i32),
    /// Go on at the relative target.
    Jump(i32),
    Match,
}

/// A compiled pattern: matches a whole topic name.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    program: Vec<Step>,
}

impl Pattern {
    /// Reads `source` in the pattern language (docs/observer-ids.md, "Patterns").
    pub fn compile(source: &str) -> Result<Pattern, PatternError> {
        let chars: Vec<char> = source.chars().collect();
        let fail = |at: usize, reason: &str| Err(PatternError { at, reason: reason.to_string() });
        if chars.is_empty() {
            return fail(0, "empty");
        }
        if chars.len() > MAX_CHARS {
            return fail(0, "longer than 4096 characters");
        }
        let start = usize::from(chars[0] == '^');
        let mut end = chars.len();
        if end > start && chars[end - 1] == '$' && (end < 2 || chars[end - 2] != '\\') {
            end -= 1;
        }
        let mut p = Parser { chars: &chars[..end], at: start, depth: 0 };
        let node = p.alternation()?;
        debug_assert_eq!(p.at, end, "at the top, an alternation ends only at the end");
        if node.steps() > MAX_STEPS {
            return fail(0, "over 5000 steps once its counts are expanded");
        }
        let mut program = Vec::new();
        emit(&node, &mut program);
        program.push(Step::Match);
        Ok(Pattern { source: source.to_string(), program })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `name` matches: one pass over its characters, each step of the
    /// program visited at most once per character.
    pub fn matches(&self, name: &str) -> bool {
        let n = self.program.len();
        let mut current: Vec<usize> = Vec::with_capacity(n);
        let mut next: Vec<usize> = Vec::with_capacity(n);
        let mut mark = vec![usize::MAX; n];
        let mut stack: Vec<usize> = Vec::new();
        let mut generation = 0;
        self.close(0, generation, &mut current, &mut mark, &mut stack);
        for c in name.chars() {
            generation += 1;
            next.clear();
            for &pc in &current {
                if let Step::Char(set, rest) = self.program[pc] {
                    if set.matches(c, rest) {
                        self.close(pc + 1, generation, &mut next, &mut mark, &mut stack);
                    }
                }
            }
            std::mem::swap(&mut current, &mut next);
            if current.is_empty() {
                return false;
            }
        }
        current.iter().any(|&pc| self.program[pc] == Step::Match)
    }

    /// Adds to `list` every step reachable from `from` without consuming a character that
    /// consumes one or matches, each once per generation.
    fn close(&self, from: usize, generation: usize, list: &mut Vec<usize>, mark: &mut [usize], stack: &mut Vec<usize>) {
        stack.push(from);
        while let Some(pc) = stack.pop() {
            if mark[pc] == generation {
                continue;
            }
            mark[pc] = generation;
            match self.program[pc] {
                Step::Jump(to) => stack.push(offset(pc, to)),
                Step::Split(a, b) => {
                    stack.push(offset(pc, b));
                    stack.push(offset(pc, a));
                }
                Step::Char(..) | Step::Match => list.push(pc),
            }
        }
    }
}

fn offset(pc: usize, by: i32) -> usize {
    (pc as i64 + i64::from(by)) as usize
}

/// Appends the steps of `node`; targets are relative, so a node's steps can be copied.
fn emit(node: &Node, out: &mut Vec<Step>) {
    match node {
        Node::Char(set, rest) => out.push(Step::Char(*set, *rest)),
        Node::Cat(parts) => parts.iter().for_each(|p| emit(p, out)),
        Node::Alt(parts) => {
            // split(+1, next) part jump(end) ... last part
            let mut jumps = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                if i + 1 < parts.len() {
                    let split = out.len();
                    out.push(Step::Split(1, 0));
                    emit(part, out);
                    jumps.push(out.len());
                    out.push(Step::Jump(0));
                    let to = out.len() - split;
                    out[split] = Step::Split(1, to as i32);
                } else {
                    emit(part, out);
                }
            }
            let end = out.len();
            for j in jumps {
                out[j] = Step::Jump((end - j) as i32);
            }
        }
        Node::Repeat(inner, min, max) => {
            for _ in 0..*min {
                emit(inner, out);
            }
            match max {
                None => {
                    // split(+1, out) inner jump(split)
                    let split = out.len();
                    out.push(Step::Split(1, 0));
                    emit(inner, out);
                    out.push(Step::Jump(-((out.len() - split) as i32)));
                    out[split] = Step::Split(1, (out.len() - split) as i32);
                }
                Some(max) => {
                    for _ in *min..*max {
                        let split = out.len();
                        out.push(Step::Split(1, 0));
                        emit(inner, out);
                        out[split] = Step::Split(1, (out.len() - split) as i32);
                    }
                }
            }
        }
    }
}

struct Parser<'a> {
    chars: &'a [char],
    at: usize,
    depth: usize,
}

/// A character as the reasons quote it: itself when printable ASCII, else `U+XXXX`.
fn shown(c: char) -> String {
    if (' '..='~').contains(&c) && c != ' ' {
        format!("'{c}'")
    } else {
        format!("U+{:04X}", c as u32)
    }
}

fn is_literal(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn fail<T>(&self, at: usize, reason: impl Into<String>) -> Result<T, PatternError> {
        Err(PatternError { at, reason: reason.into() })
    }

    /// SEQ ('|' SEQ)*, up to a ')' or the end.
    fn alternation(&mut self) -> Result<Node, PatternError> {
        let mut parts = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.at += 1;
            parts.push(self.sequence()?);
        }
        Ok(if parts.len() == 1 { parts.pop().unwrap() } else { Node::Alt(parts) })
    }

    /// PIECE+, up to a '|', a ')' or the end.
    fn sequence(&mut self) -> Result<Node, PatternError> {
        let mut parts = Vec::new();
        while let Some(c) = self.peek() {
            if c == ')' && self.depth == 0 {
                return self.fail(self.at, "')' without '('");
            }
            if c == '|' || c == ')' {
                break;
            }
            parts.push(self.piece()?);
        }
        if parts.is_empty() {
            return self.fail(self.at, "an empty alternative");
        }
        Ok(if parts.len() == 1 { parts.pop().unwrap() } else { Node::Cat(parts) })
    }

    /// ATOM QUANT?
    fn piece(&mut self) -> Result<Node, PatternError> {
        let atom = self.atom()?;
        let Some((min, max)) = self.quantifier()? else {
            return Ok(atom);
        };
        if let Some('*' | '+' | '?' | '{') = self.peek() {
            return self.fail(self.at, "a quantifier after a quantifier (no lazy or possessive forms)");
        }
        Ok(Node::Repeat(Box::new(atom), min, max))
    }

    fn quantifier(&mut self) -> Result<Option<(u32, Option<u32>)>, PatternError> {
        let q = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => return self.count().map(Some),
            _ => return Ok(None),
        };
        self.at += 1;
        Ok(Some(q))
    }

    /// {N}, {N,} or {N,M}: N and M of 1-3 digits, N <= M <= 249.
    fn count(&mut self) -> Result<(u32, Option<u32>), PatternError> {
        let open = self.at;
        let bad = "a count is {N}, {N,} or {N,M} with N <= M <= 249";
        self.at += 1;
        let Some(min) = self.number() else {
            return self.fail(open, bad);
        };
        let max = match self.peek() {
            Some('}') => Some(min),
            Some(',') => {
                self.at += 1;
                if self.peek() == Some('}') {
                    None
                } else {
                    match self.number() {
                        Some(m) => Some(m),
                        None => return self.fail(open, bad),
                    }
                }
            }
            _ => return self.fail(open, bad),
        };
        if self.peek() != Some('}') || min > MAX_COUNT || max.is_some_and(|m| m > MAX_COUNT || m < min) {
            return self.fail(open, bad);
        }
        self.at += 1;
        Ok((min, max))
    }

    fn number(&mut self) -> Option<u32> {
        let from = self.at;
        while self.at < self.chars.len() && self.at - from < 3 && self.chars[self.at].is_ascii_digit() {
            self.at += 1;
        }
        if self.at == from {
            return None;
        }
        Some(self.chars[from..self.at].iter().fold(0, |v, c| v * 10 + c.to_digit(10).unwrap()))
    }

    fn atom(&mut self) -> Result<Node, PatternError> {
        let at = self.at;
        let c = self.chars[at];
        match c {
            '(' => self.group(),
            '[' => self.class(),
            '.' => {
                self.at += 1;
                Ok(Node::Char(Set { lo: 0, hi: 0, any: true }, false))
            }
            '\\' => {
                let set = self.escape()?;
                Ok(Node::Char(set, false))
            }
            '*' | '+' | '?' | '{' => self.fail(at, "nothing to repeat"),
            _ if is_literal(c) => {
                self.at += 1;
                Ok(Node::Char(Set::of(c as u8), false))
            }
            _ => self.fail(at, format!("{} is not in the pattern language", shown(c))),
        }
    }

    /// `\.`, `\-`, `\d`, `\w` (and, in a class, nothing else either).
    fn escape(&mut self) -> Result<Set, PatternError> {
        let at = self.at;
        let Some(&c) = self.chars.get(at + 1) else {
            return self.fail(at, "a \\ ends the pattern");
        };
        let set = match c {
            '.' | '-' => Set::of(c as u8),
            'd' => Set::digits(),
            'w' => Set::word(),
            _ => return self.fail(at, format!("\\ before {}: the escapes are \\. \\- \\d \\w", shown(c))),
        };
        self.at += 2;
        Ok(set)
    }

    /// '(' ALT ')' or '(?:' ALT ')'.
    fn group(&mut self) -> Result<Node, PatternError> {
        let open = self.at;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.fail(open, "groups nested deeper than 16");
        }
        self.at += 1;
        if self.peek() == Some('?') {
            if self.chars.get(self.at + 1) != Some(&':') {
                return self.fail(open, "'(?' other than '(?:' (no flags, names or lookaround)");
            }
            self.at += 2;
        }
        let inner = self.alternation()?;
        if self.peek() != Some(')') {
            return self.fail(open, "a group not closed");
        }
        self.at += 1;
        self.depth -= 1;
        Ok(inner)
    }

    /// '[' '^'? ITEM+ ']': letters, digits, '_', '.', `\.`, `\-`, ranges of two digits, two
    /// lowercase or two uppercase letters in order, `\d`, `\w`, and '-' as the last item.
    fn class(&mut self) -> Result<Node, PatternError> {
        let open = self.at;
        self.at += 1;
        let negated = self.peek() == Some('^');
        if negated {
            self.at += 1;
        }
        let mut set = Set::EMPTY;
        let mut items = 0;
        loop {
            let Some(c) = self.peek() else {
                return self.fail(open, "a class not closed");
            };
            if c == ']' {
                break;
            }
            let item = self.at;
            if c == '-' && self.chars.get(item + 1) == Some(&']') {
                set.add(b'-');
                self.at += 1;
            } else if c == '\\' && matches!(self.chars.get(item + 1), Some('d' | 'w')) {
                let s = self.escape()?;
                set.lo |= s.lo;
                set.hi |= s.hi;
            } else {
                let from = self.class_char()?;
                if self.peek() == Some('-') && self.chars.get(self.at + 1).is_some_and(|c| *c != ']') {
                    self.at += 1;
                    let to = self.class_char()?;
                    let kind = |c: char| {
                        if c.is_ascii_digit() {
                            1
                        } else if c.is_ascii_lowercase() {
                            2
                        } else if c.is_ascii_uppercase() {
                            3
                        } else {
                            0
                        }
                    };
                    if kind(from) == 0 || kind(from) != kind(to) || from > to {
                        return self
                            .fail(item, "a range joins two digits, two lowercase or two uppercase letters in order");
                    }
                    set.add_range(from as u8, to as u8);
                } else {
                    set.add(from as u8);
                }
            }
            items += 1;
        }
        if items == 0 {
            return self.fail(open, "an empty class");
        }
        self.at += 1;
        Ok(if negated {
            Node::Char(Set { lo: !set.lo, hi: !set.hi, any: false }, true)
        } else {
            Node::Char(set, false)
        })
    }

    /// One character of a class: a letter, digit, '_', '.', `\.` or `\-`.
    fn class_char(&mut self) -> Result<char, PatternError> {
        let at = self.at;
        let c = self.chars[at];
        if c == '\\' {
            return match self.chars.get(at + 1) {
                Some(&e @ ('.' | '-')) => {
                    self.at += 2;
                    Ok(e)
                }
                Some(&e) => {
                    self.fail(at, format!("\\ before {} in a class: the escapes are \\. \\- \\d \\w", shown(e)))
                }
                None => self.fail(at, "a \\ ends the pattern"),
            };
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            self.at += 1;
            return Ok(c);
        }
        let why = if c == '-' {
            "'-' in a class stands last or as \\-".to_string()
        } else {
            format!("{} in a class", shown(c))
        };
        self.fail(at, why)
    }
}

#[cfg(test)]
mod tests;
