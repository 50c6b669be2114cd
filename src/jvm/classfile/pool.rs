//! The constant pool: read once per class into `Entry`s, then resolved by index into the
//! `Const` values the model holds; and the framing of attribute lists (name, length, body).
//!
//! Not here: what an attribute's body means (`attributes`, `code`).

use super::bytes::Reader;
use super::{Const, MemberRef, R};

#[derive(Clone, Debug)]
pub(super) enum Entry {
    Empty,
    Utf8(String),
    Int(i32),
    Float(u32),
    Long(i64),
    Double(u64),
    Class(u16),
    Str(u16),
    MethodType(u16),
    Ref(u8, u16, u16),
    NameType(u16, u16),
    Handle(u8, u16),
    Dynamic(u16, u16),
    Name(u16),
}

/// The constant pool and the bootstrap methods, for resolving references.
pub(super) struct Pool {
    pub(super) entries: Vec<Entry>,
    pub(super) bootstrap: Vec<(u16, Vec<u16>)>,
}

impl Pool {
    pub(super) fn utf8(&self, i: u16) -> R<String> {
        match self.entries.get(i as usize) {
            Some(Entry::Utf8(s)) => Ok(s.clone()),
            _ => Err(format!("constant {i} is not UTF-8 text")),
        }
    }
    pub(super) fn class(&self, i: u16) -> R<String> {
        match self.entries.get(i as usize) {
            Some(Entry::Class(n)) => self.utf8(*n),
            _ => Err(format!("constant {i} is not a class")),
        }
    }
    pub(super) fn name_type(&self, i: u16) -> R<(String, String)> {
        match self.entries.get(i as usize) {
            Some(Entry::NameType(n, d)) => Ok((self.utf8(*n)?, self.utf8(*d)?)),
            _ => Err(format!("constant {i} is not a name-and-type")),
        }
    }
    pub(super) fn konst(&self, i: u16) -> R<Const> {
        self.konst_depth(i, 0)
    }
    fn konst_depth(&self, i: u16, depth: u32) -> R<Const> {
        if depth > 16 {
            return Err("constants nest too deeply".into());
        }
        Ok(match self.entries.get(i as usize).ok_or_else(|| format!("constant {i} out of range"))? {
            Entry::Empty => return Err(format!("constant {i} is unused")),
            Entry::Utf8(s) => Const::Name(s.clone()),
            Entry::Int(v) => Const::Int(*v),
            Entry::Float(v) => Const::Float(*v),
            Entry::Long(v) => Const::Long(*v),
            Entry::Double(v) => Const::Double(*v),
            Entry::Class(n) => Const::Class(self.utf8(*n)?),
            Entry::Str(n) => Const::Str(self.utf8(*n)?),
            Entry::MethodType(n) => Const::MethodType(self.utf8(*n)?),
            Entry::Name(n) => Const::Name(self.utf8(*n)?),
            Entry::Ref(tag, c, nt) => {
                let (name, desc) = self.name_type(*nt)?;
                Const::Member(MemberRef { tag: *tag, owner: self.class(*c)?, name, desc })
            }
            Entry::NameType(n, d) => Const::Name(format!("{}:{}", self.utf8(*n)?, self.utf8(*d)?)),
            Entry::Handle(kind, r) => Const::Handle(*kind, Box::new(self.konst_depth(*r, depth + 1)?)),
            Entry::Dynamic(bsm, nt) => {
                let (name, desc) = self.name_type(*nt)?;
                let (h, args) =
                    self.bootstrap.get(*bsm as usize).ok_or_else(|| format!("bootstrap method {bsm} missing"))?;
                let args = args.iter().map(|a| self.konst_depth(*a, depth + 1)).collect::<R<Vec<_>>>()?;
                Const::Dynamic { bootstrap: Box::new(self.konst_depth(*h, depth + 1)?), args, name, desc }
            }
        })
    }
}

fn modified_utf8(b: &[u8]) -> String {
    // Modified UTF-8 differs from UTF-8 only for NUL and supplementary characters;
    // a lossy read still maps equal bytes to equal text and different bytes apart
    // except for invalid sequences, which compilers do not write.
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => b.iter().map(|c| format!("\\x{c:02x}")).collect(),
    }
}

pub(super) fn read_pool(r: &mut Reader) -> R<Vec<Entry>> {
    let count = r.u2()? as usize;
    let mut pool = vec![Entry::Empty; count.max(1)];
    let mut i = 1;
    while i < count {
        let tag = r.u1()?;
        pool[i] = match tag {
            1 => {
                let len = r.u2()? as usize;
                Entry::Utf8(modified_utf8(r.take(len)?))
            }
            3 => Entry::Int(r.u4()? as i32),
            4 => Entry::Float(r.u4()?),
            5 | 6 => {
                let hi = r.u4()? as u64;
                let lo = r.u4()? as u64;
                let v = (hi << 32) | lo;
                let e = if tag == 5 { Entry::Long(v as i64) } else { Entry::Double(v) };
                pool[i] = e;
                i += 2;
                continue;
            }
            7 => Entry::Class(r.u2()?),
            8 => Entry::Str(r.u2()?),
            9..=11 => Entry::Ref(tag, r.u2()?, r.u2()?),
            12 => Entry::NameType(r.u2()?, r.u2()?),
            15 => Entry::Handle(r.u1()?, r.u2()?),
            16 => Entry::MethodType(r.u2()?),
            17 | 18 => Entry::Dynamic(r.u2()?, r.u2()?),
            19 | 20 => Entry::Name(r.u2()?),
            t => return Err(format!("unknown constant pool tag {t}")),
        };
        i += 1;
    }
    Ok(pool)
}

/// (name, body) of each attribute.
pub(super) fn read_attrs<'a>(r: &mut Reader<'a>, pool: &[Entry]) -> R<Vec<(String, &'a [u8])>> {
    let n = r.u2()?;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let name = match pool.get(r.u2()? as usize) {
            Some(Entry::Utf8(s)) => s.clone(),
            _ => return Err("attribute name is not UTF-8 text".into()),
        };
        let len = r.u4()? as usize;
        out.push((name, r.take(len)?));
    }
    Ok(out)
}
