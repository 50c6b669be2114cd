//! Two normalised classes compared member by member (`compare`), and the documented compiler
//! differences a proof may forgive in one method (`Relaxation`, `method_equal_modulo`).
//!
//! Not here: which classes to compare, or what a difference means (`build::proof`).

use std::collections::BTreeMap;
use std::fmt;

use super::{Arg, Class, Handler, Member, CHECKCAST, INVOKESTATIC, INVOKEVIRTUAL, POP};

/// What kind of member a comparison names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Method,
    Field,
    /// The class header (flags, super class, interfaces, major version) or one class attribute.
    Class,
}

/// One member of a class, as a comparison names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct MemberId {
    pub kind: Kind,
    /// `name:descriptor` for fields and methods; `header` or the attribute's name for the class.
    pub key: String,
}

impl MemberId {
    pub fn method(key: &str) -> MemberId {
        MemberId { kind: Kind::Method, key: key.to_string() }
    }
    /// The member's name alone (`validateTotalNumberOfPartitions`).
    pub fn name(&self) -> &str {
        self.key.split_once(':').map_or(self.key.as_str(), |(n, _)| n)
    }
}

impl fmt::Display for MemberId {
    /// `method validateTotalNumberOfPartitions(List)`, `field log`, `class attribute InnerClasses`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Method => {
                let (name, desc) = self.key.split_once(':').unwrap_or((&self.key, ""));
                write!(f, "method {name}({})", pretty_params(desc))
            }
            Kind::Field => write!(f, "field {}", self.name()),
            Kind::Class if self.key == "header" => write!(f, "class header"),
            Kind::Class => write!(f, "class attribute {}", self.key),
        }
    }
}

/// `(ILjava/util/List;[J)V` -> `int, List, long[]`.
pub fn pretty_params(desc: &str) -> String {
    let inner = desc.strip_prefix('(').and_then(|d| d.split_once(')')).map_or("", |(p, _)| p);
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    while chars.peek().is_some() {
        let mut dims = 0;
        while chars.peek() == Some(&'[') {
            chars.next();
            dims += 1;
        }
        let base = match chars.next() {
            Some('L') => {
                let name: String = chars.by_ref().take_while(|c| *c != ';').collect();
                name.rsplit(['/', '$']).next().unwrap_or_default().to_string()
            }
            Some(c) => match c {
                'B' => "byte",
                'C' => "char",
                'D' => "double",
                'F' => "float",
                'I' => "int",
                'J' => "long",
                'S' => "short",
                'Z' => "boolean",
                _ => "?",
            }
            .to_string(),
            None => break,
        };
        out.push(format!("{base}{}", "[]".repeat(dims)));
    }
    out.join(", ")
}

/// How two versions of one class differ, member by member.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassDiff {
    pub only_a: Vec<MemberId>,
    pub only_b: Vec<MemberId>,
    pub differ: Vec<MemberId>,
}

impl ClassDiff {
    pub fn is_empty(&self) -> bool {
        self.only_a.is_empty() && self.only_b.is_empty() && self.differ.is_empty()
    }
    /// Every member named, in one list.
    pub fn all(&self) -> Vec<MemberId> {
        let mut v: Vec<MemberId> = self.only_a.iter().chain(&self.only_b).chain(&self.differ).cloned().collect();
        v.sort();
        v.dedup();
        v
    }
}

fn header(c: &Class) -> (u16, u16, &Option<String>, &Vec<String>) {
    (c.major, c.access, &c.super_name, &c.interfaces)
}

/// Compares two normalised classes member by member.
pub fn compare(a: &Class, b: &Class) -> ClassDiff {
    let mut d = ClassDiff::default();
    if header(a) != header(b) {
        d.differ.push(MemberId { kind: Kind::Class, key: "header".into() });
    }
    diff_maps(&a.attrs, &b.attrs, Kind::Class, &mut d);
    diff_maps(&a.fields, &b.fields, Kind::Field, &mut d);
    diff_maps(&a.methods, &b.methods, Kind::Method, &mut d);
    d
}

fn diff_maps<V: PartialEq>(a: &BTreeMap<String, V>, b: &BTreeMap<String, V>, kind: Kind, d: &mut ClassDiff) {
    for (k, v) in a {
        match b.get(k) {
            None => d.only_a.push(MemberId { kind, key: k.clone() }),
            Some(w) if w != v => d.differ.push(MemberId { kind, key: k.clone() }),
            Some(_) => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        d.only_b.push(MemberId { kind, key: k.clone() });
    }
}

/// A difference between two compilers' output that a documented exception may forgive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relaxation {
    /// javac 8 checks a receiver for null with `invokevirtual Object.getClass; pop`,
    /// javac 9 and later with `invokestatic Objects.requireNonNull; pop` (JDK-8074306):
    /// the same NullPointerException at the same point, with another message.
    JavacNullCheck,
    /// javac 8 omits a `checkcast` to a generic call's result type where the value is
    /// used only as an Object (JDK-8058199, fixed in javac 9), and casts a lambda
    /// body's generic parameter where javac 17 does not: a cast one side has and the
    /// other lacks. The classes differ only for a value of the wrong type (heap
    /// pollution), where one throws ClassCastException earlier than the other.
    JavacCheckcast,
    /// javac 21 and later write a MethodParameters attribute naming only the mandated
    /// or synthetic parameters of a constructor (an inner class's outer instance,
    /// JDK-8292275); javac 17 writes none. Only reflection's Parameter.isImplicit sees it.
    JavacMandatedParameters,
    /// javac 8 builds an enum's `$VALUES` array inline in `<clinit>`; javac 15 and later
    /// (JDK-8241798) build it in a synthetic `$values()` that `<clinit>` calls. Forgiven only
    /// when the recompile's `<clinit>` with that call replaced by `$values()`'s body is the
    /// release's `<clinit>`.
    JavacEnumValues,
    /// The release's scalac ran its optimizer (inlining); okp's cannot on JDK 17
    /// (scalac before 2.13.5 cannot read class files of Java 17), so method bodies
    /// and the InnerClasses list they pull in are not compared: the members, their
    /// flags, signatures, the pickled Scala signature and the inline info still are.
    ScalaOptimizerOff,
}

/// `<clinit>` of enum `c` (the recompile) with its call of the synthetic `$values()`
/// replaced by that method's instructions (all but the final `areturn`), branch
/// targets moved along: what javac 8 writes. None when `c` has no such method.
pub fn enum_values_inlined(c: &Class) -> Option<Member> {
    let key = format!("$values:()[L{};", c.name);
    let values = c.methods.get(&key).filter(|m| m.access & 0x1000 != 0)?;
    let body = values.code.as_ref()?;
    let (last, inline) = body.insns.split_last()?;
    if last.op != 0xb0 || !body.handlers.is_empty() || inline.iter().any(|i| !i.targets().is_empty()) {
        return None;
    }
    let mut clinit = c.methods.get("<clinit>:()V")?.clone();
    let code = clinit.code.as_mut()?;
    let (name, desc) = key.split_once(':')?;
    let at = code.insns.iter().position(|i| i.calls(INVOKESTATIC, &c.name, name, desc))?;
    let shift = inline.len() - 1;
    let moved = |t: usize| if t > at { t + shift } else { t };
    for i in code.insns.iter_mut() {
        i.arg = match &i.arg {
            Arg::Target(t) => Arg::Target(moved(*t)),
            Arg::Switch(d, cs) => Arg::Switch(moved(*d), cs.iter().map(|(k, t)| (*k, moved(*t))).collect()),
            a => a.clone(),
        };
    }
    for h in code.handlers.iter_mut() {
        (h.start, h.end, h.handler) = (moved(h.start), moved(h.end), moved(h.handler));
    }
    code.insns.splice(at..=at, inline.iter().cloned());
    code.max_stack = code.max_stack.max(body.max_stack);
    Some(clinit)
}

/// A MethodParameters value that names no parameter and flags each as mandated (0x8000)
/// or synthetic (0x1000): what javac 21 adds for an inner class's constructor.
fn only_implicit_parameters(v: &str) -> bool {
    v.split(", ").all(|p| {
        let (name, flags) = p.split_once(' ').unwrap_or((p, ""));
        name == "-" && flags.parse::<u16>().is_ok_and(|f| f & 0x9000 != 0)
    })
}

/// Whether method `a` (the release's) equals `b` (the recompile) once the
/// differences in `allowed` are forgiven; the relaxations actually used, with
/// a count each, or None when something else differs.
pub fn method_equal_modulo(a: &Member, b: &Member, allowed: &[Relaxation]) -> Option<BTreeMap<Relaxation, usize>> {
    let mut used: BTreeMap<Relaxation, usize> = BTreeMap::new();
    let mut a_attrs = a.attrs.clone();
    if allowed.contains(&Relaxation::JavacMandatedParameters) && !b.attrs.contains_key("MethodParameters") {
        if let Some(v) = a_attrs.get("MethodParameters").filter(|v| only_implicit_parameters(v)) {
            let _ = v;
            a_attrs.remove("MethodParameters");
            used.insert(Relaxation::JavacMandatedParameters, 1);
        }
    }
    if a.access != b.access || a_attrs != b.attrs {
        return None;
    }
    if allowed.contains(&Relaxation::ScalaOptimizerOff) && a.code.is_some() == b.code.is_some() && a.code != b.code {
        used.insert(Relaxation::ScalaOptimizerOff, 1);
        return Some(used);
    }
    let (ca, cb) = match (&a.code, &b.code) {
        (None, None) => return Some(used),
        (Some(x), Some(y)) => (x, y),
        _ => return None,
    };
    if ca == cb {
        return Some(used);
    }
    if ca.max_locals != cb.max_locals || ca.attrs != cb.attrs || ca.handlers.len() != cb.handlers.len() {
        return None;
    }
    let null_check = allowed.contains(&Relaxation::JavacNullCheck);
    let checkcast = allowed.contains(&Relaxation::JavacCheckcast);
    let (xa, xb) = (&ca.insns, &cb.insns);
    // pos_a[i], pos_b[j]: the step of the alignment an instruction stands at; a cast
    // one side has alone stands for the instruction after it, so branches to it agree.
    let (mut pos_a, mut pos_b) = (vec![usize::MAX; xa.len() + 1], vec![usize::MAX; xb.len() + 1]);
    let mut pairs = Vec::new();
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < xa.len() || j < xb.len() {
        if i < xa.len() && j < xb.len() && xa[i].shape() == xb[j].shape() {
            (pos_a[i], pos_b[j]) = (k, k);
            pairs.push((i, j));
            (i, j, k) = (i + 1, j + 1, k + 1);
        } else if null_check
            && i + 1 < xa.len()
            && j + 1 < xb.len()
            && xa[i].calls(INVOKEVIRTUAL, "java/lang/Object", "getClass", "()Ljava/lang/Class;")
            && xb[j].calls(
                INVOKESTATIC,
                "java/util/Objects",
                "requireNonNull",
                "(Ljava/lang/Object;)Ljava/lang/Object;",
            )
            && xa[i + 1].op == POP
            && xb[j + 1].op == POP
        {
            (pos_a[i], pos_b[j], pos_a[i + 1], pos_b[j + 1]) = (k, k, k + 1, k + 1);
            (i, j, k) = (i + 2, j + 2, k + 2);
            *used.entry(Relaxation::JavacNullCheck).or_default() += 1;
        } else if checkcast && j < xb.len() && xb[j].op == CHECKCAST {
            pos_b[j] = k;
            j += 1;
            *used.entry(Relaxation::JavacCheckcast).or_default() += 1;
        } else if checkcast && i < xa.len() && xa[i].op == CHECKCAST {
            pos_a[i] = k;
            i += 1;
            *used.entry(Relaxation::JavacCheckcast).or_default() += 1;
        } else {
            return None;
        }
    }
    (pos_a[xa.len()], pos_b[xb.len()]) = (k, k);
    for (i, j) in pairs {
        let ta: Vec<usize> = xa[i].targets().iter().map(|t| pos_a[*t]).collect();
        let tb: Vec<usize> = xb[j].targets().iter().map(|t| pos_b[*t]).collect();
        if ta != tb {
            return None;
        }
    }
    for (ha, hb) in ca.handlers.iter().zip(&cb.handlers) {
        let at = |p: &[usize], h: &Handler| (p[h.start], p[h.end], p[h.handler]);
        if at(&pos_a, ha) != at(&pos_b, hb) || ha.catch != hb.catch {
            return None;
        }
    }
    // A cast more can raise the operand stack's high-water mark by nothing; a
    // different max_stack with equal instructions otherwise means different code.
    if ca.max_stack != cb.max_stack && used.is_empty() {
        return None;
    }
    Some(used)
}
