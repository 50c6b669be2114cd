//! javac's lambda bodies renamed after where they are used, and method handles to them dropped from
//! a bootstrap's arguments: what keeps a lambda added in one method from making every later
//! method of the class differ.
//!
//! Not here: the relaxations a proof may forgive (`diff`).

use std::collections::BTreeMap;

use super::{Arg, Class, Const, Member, MemberRef};

/// Renames javac's lambda bodies (`lambda$createTopic$3`, synthetic) after where
/// they are used: `lambda$<caller>$<k>` for the k-th lambda the method `caller`
/// creates, callers taken in name order, a lambda inside a lambda named after its
/// new name. javac's own counter is not stable across javac versions (javac 8
/// names a lambda nested in a lambda `lambda$null$N`; javac 17 counts over the
/// whole class; newer javac counts per method), and one lambda added to a method
/// renumbers those of every later method. The bodies' names are seen only by
/// reflection and stack traces; every reference is renamed with them.
/// Returns the renames: old `name:descriptor` -> new name.
pub(super) fn canonical_lambda_names(class: &mut Class) -> BTreeMap<String, String> {
    let is_lambda = |k: &str, m: &Member| k.starts_with("lambda$") && m.access & 0x1000 != 0;
    if !class.methods.iter().any(|(k, m)| is_lambda(k, m)) {
        return BTreeMap::new();
    }
    let owner = class.name.clone();
    // old name:desc -> new name
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let mut queue: Vec<(String, String)> = class
        .methods
        .iter()
        .filter(|(k, m)| !is_lambda(k, m) && !k.starts_with("$deserializeLambda$"))
        .map(|(k, _)| (k.clone(), k.split(':').next().unwrap_or_default().to_string()))
        .collect();
    let mut at = 0;
    while at < queue.len() {
        let (key, caller) = queue[at].clone();
        at += 1;
        let mut k = 0;
        let Some(code) = class.methods.get(&key).and_then(|m| m.code.as_ref()) else { continue };
        for i in &code.insns {
            let Arg::Const(Const::Dynamic { args, .. }) = &i.arg else { continue };
            for a in args {
                let Const::Handle(_, t) = a else { continue };
                let Const::Member(r) = &**t else { continue };
                let target = format!("{}:{}", r.name, r.desc);
                let lambda = class.methods.get(&target).is_some_and(|m| is_lambda(&target, m));
                if r.owner == owner && lambda && !renamed.contains_key(&target) {
                    let name = format!("lambda${caller}${k}");
                    k += 1;
                    renamed.insert(target.clone(), name.clone());
                    queue.push((target, name));
                }
            }
        }
    }
    let rename = |r: &mut MemberRef| {
        if r.owner == owner {
            if let Some(n) = renamed.get(&format!("{}:{}", r.name, r.desc)) {
                r.name = n.clone();
            }
        }
    };
    for m in class.methods.values_mut() {
        let Some(code) = m.code.as_mut() else { continue };
        for i in code.insns.iter_mut() {
            match &mut i.arg {
                Arg::Const(Const::Member(r)) => rename(r),
                Arg::Const(Const::Dynamic { args, .. }) => {
                    for a in args.iter_mut() {
                        if let Const::Handle(_, t) = a {
                            if let Const::Member(r) = &mut **t {
                                rename(r);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let methods = std::mem::take(&mut class.methods);
    for (k, m) in methods {
        let key = match renamed.get(&k) {
            Some(n) => format!("{n}:{}", k.split_once(':').map_or("", |(_, d)| d)),
            None => k,
        };
        class.methods.insert(key, m);
    }
    renamed
}

/// `m` with every method handle to a method of `owner` that `drop` names removed
/// from its bootstrap arguments. `$deserializeLambda$` lists one handle per lambda
/// body of its class, so it changes whenever a lambda is added or renumbered; with
/// the handles of the changed lambdas removed, the rest must still be equal.
pub fn without_handles(m: &Member, owner: &str, drop: &dyn Fn(&str) -> bool) -> Member {
    let keep = |c: &Const| match c {
        Const::Handle(_, t) => !matches!(&**t, Const::Member(r) if r.owner == owner && drop(&r.name)),
        _ => true,
    };
    let mut out = m.clone();
    if let Some(code) = out.code.as_mut() {
        for i in code.insns.iter_mut() {
            if let Arg::Const(Const::Dynamic { args, .. }) = &mut i.arg {
                args.retain(|a| keep(a));
            }
        }
    }
    out
}
