//! Attributes resolved and rendered as text, every constant-pool reference replaced by what it
//! names, so two classes compare equal when they say the same thing whatever their pools' order.
//!
//! Not here: the Code attribute's instructions (`code`).

use crate::hash::hex;
use std::collections::BTreeMap;

use super::bytes::Reader;
use super::pool::{read_attrs, Entry, Pool};
use super::{DROPPED, R};

/// The lines of a Code attribute's `LineNumberTable`s (a method may carry several), sorted, once each.
pub(super) fn line_numbers(body: &[u8], pool: &[Entry]) -> R<Vec<u32>> {
    let mut r = Reader::new(body);
    let _max = (r.u2()?, r.u2()?);
    let len = r.u4()? as usize;
    r.take(len)?;
    let handlers = r.u2()? as usize;
    r.take(handlers * 8)?;
    let mut out = Vec::new();
    for (n, b) in read_attrs(&mut r, pool)? {
        if n != "LineNumberTable" {
            continue;
        }
        let mut t = Reader::new(b);
        for _ in 0..t.u2()? {
            let (_pc, line) = (t.u2()?, t.u2()?);
            out.push(u32::from(line));
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// ScalaInlineInfo: (class part, method `name:desc` -> its entry), references resolved.
/// Layout (scala.tools.nsc.backend.jvm.opt.InlineInfoAttribute): u1 version,
/// u1 flags (1 final, 2 trait self-type (v1 only), 4 has SAM), [u2 u2 SAM name
/// and descriptor], u2 count, count × (u2 name, u2 descriptor, u1 flags).
pub(super) fn scala_inline_info(body: &[u8], pool: &Pool) -> R<(String, BTreeMap<String, String>)> {
    let mut r = Reader::new(body);
    let version = r.u1()?;
    let flags = r.u1()?;
    let mut class = format!("v{version} flags {flags}");
    if flags & 4 != 0 {
        let (n, d) = (pool.utf8(r.u2()?)?, pool.utf8(r.u2()?)?);
        class.push_str(&format!(" sam {n}:{d}"));
    }
    let mut methods = BTreeMap::new();
    for _ in 0..r.u2()? {
        let (n, d) = (pool.utf8(r.u2()?)?, pool.utf8(r.u2()?)?);
        methods.insert(format!("{n}:{d}"), format!("flags {}", r.u1()?));
    }
    if !r.done() {
        return Err("ScalaInlineInfo has trailing bytes".into());
    }
    Ok((class, methods))
}

/// Adds attribute `name` to `out`, resolved and rendered, unless it is dropped.
pub(super) fn attribute(out: &mut BTreeMap<String, String>, name: &str, body: &[u8], pool: &Pool) -> R<()> {
    if DROPPED.contains(&name) {
        return Ok(());
    }
    let mut r = Reader::new(body);
    let text = match name {
        "Signature" => pool.utf8(r.u2()?)?,
        "ConstantValue" => pool.konst(r.u2()?)?.to_string(),
        "Exceptions" => {
            let n = r.u2()?;
            (0..n).map(|_| pool.class(r.u2()?)).collect::<R<Vec<_>>>()?.join(", ")
        }
        "InnerClasses" => {
            let n = r.u2()?;
            let mut rows = Vec::new();
            for _ in 0..n {
                let (inner, outer, simple, flags) = (r.u2()?, r.u2()?, r.u2()?, r.u2()?);
                let opt_class = |i: u16| if i == 0 { Ok("-".to_string()) } else { pool.class(i) };
                let simple = if simple == 0 { "-".to_string() } else { pool.utf8(simple)? };
                rows.push(format!("{} in {} as {simple} flags {flags}", pool.class(inner)?, opt_class(outer)?));
            }
            rows.sort();
            rows.join("; ")
        }
        "EnclosingMethod" => {
            let c = pool.class(r.u2()?)?;
            let m = r.u2()?;
            if m == 0 {
                c
            } else {
                let (n, d) = pool.name_type(m)?;
                format!("{c}.{n}:{d}")
            }
        }
        "NestHost" => pool.class(r.u2()?)?,
        "NestMembers" | "PermittedSubclasses" => {
            let n = r.u2()?;
            let mut v = (0..n).map(|_| pool.class(r.u2()?)).collect::<R<Vec<_>>>()?;
            v.sort();
            v.join(", ")
        }
        "MethodParameters" => {
            let n = r.u1()?;
            let mut v = Vec::new();
            for _ in 0..n {
                let (nm, fl) = (r.u2()?, r.u2()?);
                let name = if nm == 0 { "-".into() } else { fresh_suffix_dropped(&pool.utf8(nm)?) };
                v.push(format!("{name} {fl}"));
            }
            v.join(", ")
        }
        "RuntimeVisibleAnnotations" | "RuntimeInvisibleAnnotations" => {
            let n = r.u2()?;
            let mut kept = Vec::new();
            for _ in 0..n {
                let a = annotation(&mut r, pool, 0)?;
                // The pickled Scala signature gets its own name so a report can say "ScalaSignature".
                if a.starts_with("Lscala/reflect/ScalaSignature;")
                    || a.starts_with("Lscala/reflect/ScalaLongSignature;")
                {
                    out.insert("ScalaSignature".into(), a);
                } else {
                    kept.push(a);
                }
            }
            if kept.is_empty() {
                return Ok(());
            }
            kept.join("; ")
        }
        "RuntimeVisibleParameterAnnotations" | "RuntimeInvisibleParameterAnnotations" => {
            let n = r.u1()?;
            let mut v = Vec::new();
            for p in 0..n {
                for _ in 0..r.u2()? {
                    v.push(format!("#{p} {}", annotation(&mut r, pool, 0)?));
                }
            }
            v.join("; ")
        }
        "RuntimeVisibleTypeAnnotations" | "RuntimeInvisibleTypeAnnotations" => {
            let n = r.u2()?;
            let mut v = Vec::new();
            for _ in 0..n {
                skip_type_target(&mut r)?;
                let path = r.u1()? as usize;
                r.take(path * 2)?;
                v.push(annotation(&mut r, pool, 0)?.split('(').next().unwrap_or_default().to_string());
            }
            v.sort();
            v.join("; ")
        }
        "AnnotationDefault" => element_value(&mut r, pool, 0)?,
        "Deprecated" | "Synthetic" | "Scala" | "ScalaSig" => hex(body),
        _ => hex(body),
    };
    out.insert(name.to_string(), text);
    Ok(())
}

/// `partition$8` -> `partition$`: scalac names the captured values of a lambda body
/// with a counter that runs over the whole compilation unit, so one capture added
/// anywhere above renumbers every later one. Parameter names are seen only by
/// reflection; the base name and the flags are still compared.
pub(super) fn fresh_suffix_dropped(name: &str) -> String {
    match name.rsplit_once('$') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => format!("{base}$"),
        _ => name.to_string(),
    }
}

/// How deep annotations and arrays may nest inside one attribute: javac and scalac write a few
/// levels; a class file built to recurse until the stack overflows is refused instead.
const MAX_NESTING: usize = 64;

fn annotation(r: &mut Reader, pool: &Pool, depth: usize) -> R<String> {
    let ty = pool.utf8(r.u2()?)?;
    let n = r.u2()?;
    let mut v = Vec::new();
    for _ in 0..n {
        let name = pool.utf8(r.u2()?)?;
        v.push(format!("{name}={}", element_value(r, pool, depth + 1)?));
    }
    Ok(format!("{ty}({})", v.join(", ")))
}

fn element_value(r: &mut Reader, pool: &Pool, depth: usize) -> R<String> {
    if depth > MAX_NESTING {
        return Err(format!("annotation values nested deeper than {MAX_NESTING}"));
    }
    let tag = r.u1()?;
    Ok(match tag {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => format!("{}:{}", tag as char, pool.konst(r.u2()?)?),
        b's' => format!("{:?}", pool.utf8(r.u2()?)?),
        b'e' => format!("{}.{}", pool.utf8(r.u2()?)?, pool.utf8(r.u2()?)?),
        b'c' => format!("class {}", pool.utf8(r.u2()?)?),
        b'@' => annotation(r, pool, depth)?,
        b'[' => {
            let n = r.u2()?;
            let v = (0..n).map(|_| element_value(r, pool, depth + 1)).collect::<R<Vec<_>>>()?;
            format!("[{}]", v.join(", "))
        }
        t => return Err(format!("unknown annotation element tag {t}")),
    })
}

fn skip_type_target(r: &mut Reader) -> R<()> {
    let t = r.u1()?;
    let n = match t {
        0x00 | 0x01 | 0x16 => 1,
        0x10 | 0x11 | 0x12 | 0x17 | 0x42 | 0x43 | 0x44 | 0x45 | 0x46 => 2,
        0x13..=0x15 => 0,
        0x40 | 0x41 => {
            let len = r.u2()? as usize;
            len * 6
        }
        0x47..=0x4B => 3,
        t => return Err(format!("unknown type annotation target {t:#x}")),
    };
    r.take(n)?;
    Ok(())
}
