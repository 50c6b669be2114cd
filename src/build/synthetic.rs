//! The names scalac gives to the synthetic parts of one compilation unit, made
//! independent of the unit's fresh-name counters, so that the patch delta proof
//! (`proof::prove_delta`) can tell a renumbering from a change.
//!
//! scalac numbers synthetic names with counters that run over the whole source
//! file: the anonymous classes of partial functions and `new T { … }`
//! (`KafkaController$$anonfun$11`, `$anon$3`), the fields an anonymous class
//! captures (`topic$6`). One closure our edit adds to one method renumbers those
//! of every later method, in code no edit touches. What is canonicalised here,
//! the same way on both compiles:
//!
//! - **Anonymous and local classes** (a class with an `EnclosingMethod`
//!   attribute whose name ends in `$<digits>`): renamed to
//!   `<prefix>#<enclosing method>#<k>`, `k` counting the classes of the same
//!   prefix and the same enclosing method in the compiler's order. The name
//!   follows from where the class is defined, not from how many classes the
//!   file defines before it. Every reference is renamed with it (instructions,
//!   descriptors, signatures, InnerClasses, EnclosingMethod, NestMembers).
//! - **Captured fields of such a class** (`topic$6`): renamed to `<base>$<k>`,
//!   `k` counting the class's fields of the same base name in the compiler's
//!   order, and every access to them.
//!
//! Each rename is a bijection on one side's names (a canonical name that
//! would collide with another class leaves that side as it is), so two classes
//! equal after it are the same program with other names for its synthetic
//! parts, and any change to a member's code, constants, calls or flags still
//! shows. The names themselves are seen only by reflection, stack traces and
//! Java serialisation of such an instance, none of which the patched code paths
//! use. `$deserializeLambda$`, whose body scalac splits into groups of at most
//! 250 handles, is compared as the set of lambda handles it lists
//! (`lambda_handles`).
//!
//! Not here: what counts as explained (`proof`), reading class files (`bytecode`).

use std::collections::{BTreeMap, BTreeSet};

use crate::jvm::classfile::{Arg, Class, Code, Const, Member, MemberRef};

/// The marker of a canonical class name; scalac never writes `#` in a name.
pub const MARK: char = '#';

/// `Outer$$anonfun$11` -> (`Outer$$anonfun`, 11).
fn counted(name: &str) -> Option<(&str, u64)> {
    let (prefix, n) = name.rsplit_once('$')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| (prefix, n.parse().ok())).and_then(|(p, n)| {
        let n: u64 = n?;
        (!p.is_empty()).then_some((p, n))
    })
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// `text` with every whole occurrence of an internal class name in `renames`
/// replaced (a match must not run on into a longer name).
pub fn rename_classes(text: &str, renames: &BTreeMap<String, String>) -> String {
    if renames.is_empty() || !renames.keys().any(|k| text.contains(k.as_str())) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    'outer: while i < text.len() {
        let rest = &text[i..];
        // Longest match first, so `X$1` never takes the start of `X$11`.
        for (old, new) in renames.iter().rev() {
            if rest.starts_with(old.as_str()) && !rest[old.len()..].starts_with(ident) {
                // Not the tail of a longer name (`L` opens a descriptor's class).
                let before_ok = !text[..i].ends_with(|c: char| (ident(c) || c == '/') && c != 'L');
                if before_ok {
                    out.push_str(new);
                    i += old.len();
                    continue 'outer;
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Applies `f` to every string of `c` that can name a class (not string literals).
fn each_name(c: &mut Class, f: &dyn Fn(&str) -> String) {
    c.name = f(&c.name);
    if let Some(s) = c.super_name.as_mut() {
        *s = f(s);
    }
    for i in c.interfaces.iter_mut() {
        *i = f(i);
    }
    for v in c.attrs.values_mut() {
        *v = f(v);
    }
    for members in [&mut c.fields, &mut c.methods] {
        let old = std::mem::take(members);
        for (k, mut m) in old {
            member_names(&mut m, f);
            members.insert(f(&k), m);
        }
    }
}

fn member_names(m: &mut Member, f: &dyn Fn(&str) -> String) {
    for v in m.attrs.values_mut() {
        *v = f(v);
    }
    if let Some(code) = m.code.as_mut() {
        code_names(code, f);
    }
}

fn code_names(code: &mut Code, f: &dyn Fn(&str) -> String) {
    for v in code.attrs.values_mut() {
        *v = f(v);
    }
    for h in code.handlers.iter_mut() {
        if let Some(c) = h.catch.as_mut() {
            *c = f(c);
        }
    }
    for i in code.insns.iter_mut() {
        match &mut i.arg {
            Arg::Const(k) => const_names(k, f),
            Arg::MultiArray(c, _) => *c = f(c),
            _ => {}
        }
    }
}

fn const_names(k: &mut Const, f: &dyn Fn(&str) -> String) {
    match k {
        Const::Class(c) | Const::MethodType(c) | Const::Name(c) => *c = f(c),
        Const::Member(r) => {
            r.owner = f(&r.owner);
            r.desc = f(&r.desc);
        }
        Const::Handle(_, t) => const_names(t, f),
        Const::Dynamic { bootstrap, args, desc, .. } => {
            const_names(bootstrap, f);
            for a in args.iter_mut() {
                const_names(a, f);
            }
            *desc = f(desc);
        }
        Const::Int(_) | Const::Float(_) | Const::Long(_) | Const::Double(_) | Const::Str(_) => {}
    }
}

/// Every field reference in `c`'s code.
fn field_refs(c: &mut Class, f: &mut dyn FnMut(&mut MemberRef)) {
    for m in c.methods.values_mut().chain(c.fields.values_mut()) {
        let Some(code) = m.code.as_mut() else { continue };
        for i in code.insns.iter_mut() {
            if let Arg::Const(Const::Member(r)) = &mut i.arg {
                if r.tag == 9 {
                    f(r);
                }
            }
        }
    }
}

/// Where a local or anonymous class is defined: its EnclosingMethod's class and method
/// when the attribute names a method; else (scalac's partial-function classes name only
/// the class) the one method of the unit that instantiates it, if exactly one does.
/// `None` for a class that is not local or anonymous.
fn definer(name: &str, c: &Class, classes: &BTreeMap<String, Class>) -> Option<(String, Option<String>)> {
    let e = c.attrs.get("EnclosingMethod")?;
    if let Some((class, m)) = e.split_once('.') {
        return Some((class.to_string(), Some(m.split(':').next().unwrap_or_default().to_string())));
    }
    let mut found: BTreeSet<(String, String)> = BTreeSet::new();
    for (owner, o) in classes {
        for (key, m) in &o.methods {
            let Some(code) = m.code.as_ref() else { continue };
            let new =
                code.insns.iter().any(|i| i.op == NEW && matches!(&i.arg, Arg::Const(Const::Class(x)) if x == name));
            if new {
                found.insert((owner.clone(), key.split(':').next().unwrap_or_default().to_string()));
            }
        }
    }
    Some(match (found.len(), found.into_iter().next()) {
        (1, Some((owner, m))) => (owner, Some(m)),
        _ => (e.clone(), None),
    })
}

const NEW: u8 = 0xbb;

/// The result of `canonicalise`.
#[derive(Debug, Default)]
pub struct Canonical {
    /// Canonical class name -> the class's real name, for the classes renamed.
    pub real: BTreeMap<String, String>,
    /// Canonical class name -> where the class is defined (class, method), canonical too.
    pub definers: BTreeMap<String, (String, Option<String>)>,
}

/// Canonicalises the synthetic names of one compilation unit's classes (keyed by
/// internal name) in place; returns canonical name -> original name of the classes
/// renamed.
pub fn canonicalise(classes: &mut BTreeMap<String, Class>) -> Canonical {
    // Captured fields of local and anonymous classes.
    let names: Vec<String> = classes.keys().cloned().collect();
    for name in &names {
        let Some(c) = classes.get(name) else { continue };
        if !c.attrs.contains_key("EnclosingMethod") {
            continue;
        }
        let mut groups: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
        for key in c.fields.keys() {
            let (field, desc) = key.split_once(':').unwrap_or((key, ""));
            if let Some((base, n)) = counted(field) {
                groups.entry(base.to_string()).or_default().push((n, format!("{field}:{desc}")));
            }
        }
        let mut renames: BTreeMap<String, String> = BTreeMap::new();
        for (base, mut v) in groups {
            v.sort();
            for (k, (_, key)) in v.into_iter().enumerate() {
                let desc = key.split_once(':').map_or("", |(_, d)| d);
                renames.insert(key.clone(), format!("{base}${}:{desc}", k + 1));
            }
        }
        renames.retain(|a, b| a != b);
        let taken: BTreeSet<&String> = c.fields.keys().filter(|k| !renames.contains_key(*k)).collect();
        if renames.is_empty() || renames.values().any(|v| taken.contains(v)) {
            continue;
        }
        let by_name: BTreeMap<String, String> = renames
            .iter()
            .map(|(a, b)| {
                (
                    a.split(':').next().unwrap_or_default().to_string(),
                    b.split(':').next().unwrap_or_default().to_string(),
                )
            })
            .collect();
        if let Some(c) = classes.get_mut(name) {
            let fields = std::mem::take(&mut c.fields);
            c.fields = fields.into_iter().map(|(k, m)| (renames.get(&k).cloned().unwrap_or(k), m)).collect();
        }
        for other in classes.values_mut() {
            field_refs(other, &mut |r| {
                if &r.owner == name {
                    if let Some(n) = by_name.get(&r.name) {
                        r.name = n.clone();
                    }
                }
            });
        }
    }

    // Local and anonymous classes, after where they are defined.
    let definers: BTreeMap<String, (String, Option<String>)> =
        classes.iter().filter_map(|(n, c)| definer(n, c, classes).map(|d| (n.clone(), d))).collect();
    let mut groups: BTreeMap<(String, String, String), Vec<(u64, String)>> = BTreeMap::new();
    for (name, (owner, m)) in &definers {
        let Some((prefix, n)) = counted(name) else { continue };
        let m = m.clone().unwrap_or_else(|| "-".into());
        groups.entry((prefix.to_string(), owner.clone(), m)).or_default().push((n, name.clone()));
    }
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    for ((prefix, _, m), mut v) in groups {
        v.sort();
        for (k, (_, name)) in v.into_iter().enumerate() {
            renames.insert(name, format!("{prefix}{MARK}{m}{MARK}{}", k + 1));
        }
    }
    let targets: BTreeSet<&String> = renames.values().collect();
    if targets.len() != renames.len() || classes.keys().any(|k| targets.contains(k)) {
        // Not a bijection: compare the names as written.
        renames.clear();
    }
    let f = |s: &str| rename_classes(s, &renames);
    let old = std::mem::take(classes);
    for (k, mut c) in old {
        each_name(&mut c, &f);
        classes.insert(f(&k), c);
    }
    Canonical {
        definers: definers.into_iter().map(|(n, (o, m))| (f(&n), (f(&o), m))).collect(),
        real: renames.into_iter().map(|(a, b)| (b, a)).collect(),
    }
}

/// The method handles of `$deserializeLambda$` (a synthetic method scalac writes with one
/// `invokedynamic` per group of at most 250 handles), as a set, leaving out the handles to
/// methods of `owner` that `drop` names. `None` when `m` is not that synthetic method.
pub fn lambda_handles(m: &Member, owner: &str, drop: &dyn Fn(&str) -> bool) -> Option<BTreeSet<String>> {
    const SYNTHETIC: u16 = 0x1000;
    if m.access & SYNTHETIC == 0 {
        return None;
    }
    let code = m.code.as_ref()?;
    let mut out = BTreeSet::new();
    for i in &code.insns {
        let Arg::Const(Const::Dynamic { bootstrap, args, .. }) = &i.arg else { continue };
        let lambda_deserialize = matches!(&**bootstrap, Const::Handle(_, t)
            if matches!(&**t, Const::Member(r) if r.owner == "scala/runtime/LambdaDeserialize"));
        if !lambda_deserialize {
            return None;
        }
        for a in args {
            let Const::Handle(_, t) = a else { return None };
            let Const::Member(r) = &**t else { return None };
            if !(r.owner == owner && drop(&r.name)) {
                out.insert(a.to_string());
            }
        }
    }
    Some(out)
}

/// The internal class names `m` mentions (owners, descriptors, classes, attributes).
pub fn mentions(m: &Member, class: &str) -> bool {
    let mut m = m.clone();
    let seen = std::cell::Cell::new(false);
    let f = |s: &str| {
        let mut at = 0;
        while let Some(p) = s[at..].find(class) {
            let end = at + p + class.len();
            if !s[end..].starts_with(ident) {
                seen.set(true);
            }
            at = end;
        }
        s.to_string()
    };
    member_names(&mut m, &f);
    seen.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::jvm::classfile::{compare, Insn, Kind, MemberId};

    fn code(insns: Vec<Insn>) -> Member {
        let code = Code { max_stack: 2, max_locals: 1, insns, handlers: Vec::new(), attrs: BTreeMap::new() };
        Member { access: 1, attrs: BTreeMap::new(), code: Some(code) }
    }

    fn class(name: &str, enclosing: Option<&str>, methods: Vec<(&str, Member)>) -> Class {
        let mut attrs = BTreeMap::new();
        if let Some(e) = enclosing {
            attrs.insert("EnclosingMethod".to_string(), e.to_string());
        }
        Class {
            name: name.into(),
            major: 52,
            access: 0x31,
            super_name: Some("java/lang/Object".into()),
            interfaces: Vec::new(),
            attrs,
            fields: BTreeMap::new(),
            methods: methods.into_iter().map(|(k, m)| (k.to_string(), m)).collect(),
        }
    }

    fn new_of(c: &str) -> Member {
        code(vec![Insn { op: NEW, arg: Arg::Const(Const::Class(c.into())) }, Insn { op: 0xb1, arg: Arg::None }])
    }

    fn ldc(text: &str) -> Member {
        code(vec![Insn { op: 0x12, arg: Arg::Const(Const::Str(text.into())) }, Insn { op: 0xb0, arg: Arg::None }])
    }

    /// A unit whose methods `m…` each define one partial-function class (numbered in `order`),
    /// whose `apply` loads the text given.
    fn unit(defs: &[(&str, &str)]) -> BTreeMap<String, Class> {
        let mut outer = Vec::new();
        let mut out = BTreeMap::new();
        for (i, (m, text)) in defs.iter().enumerate() {
            let anon = format!("p/O$$anonfun${}", i + 1);
            outer.push((*m, new_of(&anon)));
            out.insert(anon.clone(), class(&anon, Some("p/O"), vec![("apply:()Ljava/lang/Object;", ldc(text))]));
        }
        let outer: Vec<(String, Member)> = outer.into_iter().map(|(m, c)| (format!("{m}:()V"), c)).collect();
        let o = class("p/O", None, outer.iter().map(|(k, m)| (k.as_str(), m.clone())).collect());
        out.insert("p/O".into(), o);
        out
    }

    #[test]
    fn a_renumbering_alone_is_no_difference_and_a_change_still_is() {
        let mut before = unit(&[("m1", "x"), ("m2", "y")]);
        // The edit adds a class in m0, defined first: m1's and m2's are renumbered.
        let mut after = unit(&[("m0", "new"), ("m1", "x"), ("m2", "y")]);
        let (cb, ca) = (canonicalise(&mut before), canonicalise(&mut after));
        assert_eq!(ca.real["p/O$$anonfun#m1#1"], "p/O$$anonfun$2");
        assert_eq!(cb.real["p/O$$anonfun#m1#1"], "p/O$$anonfun$1");
        assert_eq!(ca.definers["p/O$$anonfun#m0#1"], ("p/O".to_string(), Some("m0".to_string())));
        for k in ["p/O$$anonfun#m1#1", "p/O$$anonfun#m2#1"] {
            assert!(compare(&before[k], &after[k]).is_empty(), "{k}");
        }
        let d = compare(&before["p/O"], &after["p/O"]);
        assert_eq!(d.all(), vec![MemberId::method("m0:()V")], "only the edited method differs");
        assert!(!before.contains_key("p/O$$anonfun#m0#1"));

        // The same renumbering with a real change in m2's class: still a difference, named.
        let mut changed = unit(&[("m0", "new"), ("m1", "x"), ("m2", "Y")]);
        canonicalise(&mut changed);
        let d = compare(&before["p/O$$anonfun#m2#1"], &changed["p/O$$anonfun#m2#1"]);
        assert_eq!(d.differ, vec![MemberId::method("apply:()Ljava/lang/Object;")]);
        // And a class moved to another method is another class.
        let mut moved = unit(&[("m0", "new"), ("m2", "x"), ("m1", "y")]);
        canonicalise(&mut moved);
        assert!(!compare(&before["p/O$$anonfun#m1#1"], &moved["p/O$$anonfun#m1#1"]).is_empty());
    }

    #[test]
    fn captured_fields_keep_their_order_not_their_counter() {
        let get = |f: &str| {
            let r = MemberRef { tag: 9, owner: "p/O$$anon$1".into(), name: f.into(), desc: "I".into() };
            code(vec![Insn { op: 0xb4, arg: Arg::Const(Const::Member(r)) }, Insn { op: 0xac, arg: Arg::None }])
        };
        let side = |a: &str, b: &str, read: &str| {
            let mut c = class("p/O$$anon$1", Some("p/O.m:()V"), vec![("f:()I", get(read))]);
            let field = Member { access: 0x12, attrs: BTreeMap::new(), code: None };
            c.fields.insert(format!("{a}:I"), field.clone());
            c.fields.insert(format!("{b}:I"), field);
            BTreeMap::from([(c.name.clone(), c)])
        };
        let (mut x, mut y) = (side("topic$6", "topic$9", "topic$9"), side("topic$7", "topic$12", "topic$12"));
        canonicalise(&mut x);
        canonicalise(&mut y);
        let k = "p/O$$anon#m#1";
        assert!(compare(&x[k], &y[k]).is_empty());
        assert!(x[k].fields.contains_key("topic$2:I"));
        // Reading the other captured value is a change.
        let mut z = side("topic$7", "topic$12", "topic$7");
        canonicalise(&mut z);
        assert_eq!(compare(&x[k], &z[k]).differ, vec![MemberId::method("f:()I")]);
        assert_eq!(compare(&x[k], &z[k]).differ[0].kind, Kind::Method);
    }

    #[test]
    fn deserialize_lambda_is_its_set_of_handles() {
        let handle = |n: &str| {
            let r = MemberRef { tag: 10, owner: "p/O".into(), name: n.into(), desc: "()V".into() };
            Const::Handle(6, Box::new(Const::Member(r)))
        };
        let boot = MemberRef {
            tag: 10,
            owner: "scala/runtime/LambdaDeserialize".into(),
            name: "bootstrap".into(),
            desc: "()V".into(),
        };
        let indy = |names: &[&str]| Insn {
            op: 0xba,
            arg: Arg::Const(Const::Dynamic {
                bootstrap: Box::new(Const::Handle(6, Box::new(Const::Member(boot.clone())))),
                args: names.iter().map(|n| handle(n)).collect(),
                name: "lambdaDeserialize".into(),
                desc: "()V".into(),
            }),
        };
        let mut one = code(vec![indy(&["a", "b", "c"])]);
        let mut two = code(vec![indy(&["a", "new"]), indy(&["b", "c"])]);
        one.access = 0x100a;
        two.access = 0x100a;
        let keep_all = |_: &str| false;
        let drop_new = |n: &str| n == "new";
        assert_ne!(lambda_handles(&one, "p/O", &keep_all), lambda_handles(&two, "p/O", &keep_all));
        assert_eq!(lambda_handles(&one, "p/O", &drop_new), lambda_handles(&two, "p/O", &drop_new));
        two.access = 0x000a;
        assert_eq!(lambda_handles(&two, "p/O", &drop_new), None, "only the synthetic method");
    }

    #[test]
    fn counters_are_read_from_the_end() {
        assert_eq!(counted("a/B$$anonfun$11"), Some(("a/B$$anonfun", 11)));
        assert_eq!(counted("topic$6"), Some(("topic", 6)));
        assert_eq!(counted("a/B$$anonfun$$nestedInanonfun$f$2$1"), Some(("a/B$$anonfun$$nestedInanonfun$f$2", 1)));
        assert_eq!(counted("topic"), None);
        assert_eq!(counted("$1"), None);
    }

    #[test]
    fn class_names_are_renamed_whole() {
        let r: BTreeMap<String, String> =
            [("a/B$$anonfun$1".to_string(), "X".to_string()), ("a/B$$anonfun$11".to_string(), "Y".to_string())].into();
        assert_eq!(rename_classes("(La/B$$anonfun$1;La/B$$anonfun$11;)V", &r), "(LX;LY;)V");
        assert_eq!(rename_classes("a/B$$anonfun$12 in a/B", &r), "a/B$$anonfun$12 in a/B");
        assert_eq!(rename_classes("a/B$$anonfun$1.apply:()V", &r), "X.apply:()V");
    }
}
