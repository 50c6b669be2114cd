//! okp's one class-file reader. Two ways in, over one constant-pool parser and one
//! set of error messages:
//! - `parse`: the header facts a splice needs of every class it copies (major
//!   version, `SourceFile`, the constant pool's UTF-8 text for references);
//! - `read`: the class read whole into a normalised model, which `compare`
//!   compares member by member: what the provenance proofs (`build::proof`),
//!   `okp compare-builds` and `okp diff --binary` ask when they want to know
//!   whether two class files carry the same program.
//!
//! The children: `bytes` (the big-endian cursor), `pool` (the constant pool and
//! attribute framing), `attributes` (each attribute resolved and rendered),
//! `code` (instructions decoded and normalised), `lambdas` (javac's lambda names
//! made canonical), `diff` (two models compared, the documented relaxations).
//!
//! What is normalised, and why:
//! - **Constant-pool order and indices.** Every reference into the constant
//!   pool (instruction operands, attribute values, bootstrap arguments) is
//!   resolved to the value it names, and the pool itself is not compared. The
//!   pool's order follows the order in which the compiler met the constants,
//!   which changes with compile order and with any line inserted above.
//! - **Instruction encoding.** `ldc_w` is read as `ldc`, `goto_w` as `goto`,
//!   `jsr_w` as `jsr`, `wide` loads/stores/`iinc` as their short forms (the
//!   wide form is chosen by the pool index or the operand's size alone), and
//!   branch targets, switch targets and exception-table ranges are instruction
//!   indices instead of byte offsets (offsets shift when an `ldc` widens and
//!   switch padding depends on them).
//! - **Member and attribute order.** Fields and methods are keyed by name and
//!   descriptor; InnerClasses, NestMembers and annotations' element order as
//!   written are kept, but InnerClasses entries are sorted (the JVM looks them
//!   up by name).
//! - **Dropped as debug information**: `LineNumberTable`, `LocalVariableTable`,
//!   `LocalVariableTypeTable` (line numbers shift with every line we insert;
//!   local-variable tables exist only with `-g`, which the release's Gradle
//!   build passes and a splice compile does not), `SourceFile` and
//!   `SourceDebugExtension` (names of the source, not of the program).
//! - **Dropped as derived**: `StackMapTable`. It is computed from the
//!   instructions and the types they touch, encodes offsets, and is checked by
//!   the JVM's verifier when the class loads; it adds no behaviour of its own.
//! - **Scala's own attributes are kept and compared**: the `ScalaSignature`
//!   annotation (the pickled Scala types, split out of the other annotations
//!   under its own name so a report can name it), the `ScalaSig` and `Scala`
//!   markers byte for byte, and `ScalaInlineInfo` resolved: its class flags
//!   stay on the class, each method's entry moves onto that method. Recompiling
//!   a release's unchanged Scala source with its own scalac reproduces all of
//!   them exactly (3.9.2, 4.3.1: byte-identical classes), so nothing there
//!   needs forgiving.
//! - Type annotations (`Runtime*TypeAnnotations`) are compared by annotation
//!   type only: their targets carry code offsets.
//!
//! Everything else is compared as parsed, and an attribute okp does not know
//! is compared byte for byte.
//!
//! Not here: which classes to compare, or what a difference means (`build::proof`); running a JDK
//! (`jvm::jdk`).

mod attributes;
mod bytes;
mod code;
mod diff;
mod lambdas;
mod pool;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use attributes::{attribute, line_numbers, scala_inline_info};
use bytes::Reader;
use lambdas::canonical_lambda_names;
use pool::{read_attrs, read_pool, Entry, Pool};

pub use diff::{
    compare, enum_values_inlined, method_equal_modulo, pretty_params, ClassDiff, Kind, MemberId, Relaxation,
};
pub use lambdas::without_handles;

/// A resolved constant: what a constant-pool entry means, without its index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Const {
    Int(i32),
    /// Bits, so NaNs compare as written.
    Float(u32),
    Long(i64),
    Double(u64),
    Str(String),
    Class(String),
    MethodType(String),
    Member(MemberRef),
    Handle(u8, Box<Const>),
    /// `invokedynamic` / `ldc` of a dynamic constant, its bootstrap method resolved.
    Dynamic {
        bootstrap: Box<Const>,
        args: Vec<Const>,
        name: String,
        desc: String,
    },
    Name(String),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemberRef {
    /// 9 field, 10 method, 11 interface method.
    pub tag: u8,
    pub owner: String,
    pub name: String,
    pub desc: String,
}

impl fmt::Display for Const {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Const::Int(v) => write!(f, "{v}"),
            Const::Float(b) => write!(f, "{}f", f32::from_bits(*b)),
            Const::Long(v) => write!(f, "{v}L"),
            Const::Double(b) => write!(f, "{}d", f64::from_bits(*b)),
            Const::Str(s) => write!(f, "{s:?}"),
            Const::Class(c) => write!(f, "class {c}"),
            Const::MethodType(d) => write!(f, "methodtype {d}"),
            Const::Member(m) => write!(f, "{}.{}:{}", m.owner, m.name, m.desc),
            Const::Handle(k, c) => write!(f, "handle {k} {c}"),
            Const::Dynamic { bootstrap, args, name, desc } => {
                write!(f, "dynamic {name}:{desc} via {bootstrap} [")?;
                for (i, a) in args.iter().enumerate() {
                    write!(f, "{}{a}", if i > 0 { ", " } else { "" })?;
                }
                write!(f, "]")
            }
            Const::Name(n) => write!(f, "{n}"),
        }
    }
}

/// One instruction's operand, references resolved, targets as instruction indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    None,
    Int(i32),
    Local(u16),
    Iinc(u16, i32),
    Const(Const),
    Target(usize),
    /// tableswitch / lookupswitch: default, then (key, target) pairs.
    Switch(usize, Vec<(i32, usize)>),
    MultiArray(String, u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insn {
    pub op: u8,
    pub arg: Arg,
}

pub const CHECKCAST: u8 = 0xc0;
pub const POP: u8 = 0x57;
pub const INVOKEVIRTUAL: u8 = 0xb6;
pub const INVOKESTATIC: u8 = 0xb8;

impl Insn {
    /// The same instruction with its targets replaced, for comparing shapes.
    fn shape(&self) -> Insn {
        let arg = match &self.arg {
            Arg::Target(_) => Arg::Target(0),
            Arg::Switch(_, c) => Arg::Switch(0, c.iter().map(|(k, _)| (*k, 0)).collect()),
            a => a.clone(),
        };
        Insn { op: self.op, arg }
    }
    fn targets(&self) -> Vec<usize> {
        match &self.arg {
            Arg::Target(t) => vec![*t],
            Arg::Switch(d, c) => std::iter::once(*d).chain(c.iter().map(|(_, t)| *t)).collect(),
            _ => vec![],
        }
    }
    /// Whether this calls `owner.name:desc` with opcode `op`.
    pub fn calls(&self, op: u8, owner: &str, name: &str, desc: &str) -> bool {
        self.op == op
            && matches!(&self.arg, Arg::Const(Const::Member(m)) if m.owner == owner && m.name == name && m.desc == desc)
    }
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", code::mnemonic(self.op))?;
        match &self.arg {
            Arg::None => Ok(()),
            Arg::Int(v) => write!(f, " {v}"),
            Arg::Local(l) => write!(f, " {l}"),
            Arg::Iinc(l, d) => write!(f, " {l} {d}"),
            Arg::Const(c) => write!(f, " {c}"),
            Arg::Target(t) => write!(f, " @{t}"),
            Arg::Switch(d, c) => write!(f, " default @{d}, {} cases", c.len()),
            Arg::MultiArray(c, d) => write!(f, " {c} {d}"),
        }
    }
}

/// An exception-table entry: [start, end) handler, as instruction indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handler {
    pub start: usize,
    pub end: usize,
    pub handler: usize,
    pub catch: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub max_stack: u16,
    pub max_locals: u16,
    pub insns: Vec<Insn>,
    pub handlers: Vec<Handler>,
    /// Attributes of the Code attribute other than the dropped debug ones.
    pub attrs: BTreeMap<String, String>,
}

/// A field or a method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub access: u16,
    /// Meaningful attributes, rendered with every reference resolved.
    pub attrs: BTreeMap<String, String>,
    pub code: Option<Code>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub major: u16,
    pub access: u16,
    pub super_name: Option<String>,
    pub interfaces: Vec<String>,
    pub attrs: BTreeMap<String, String>,
    /// Keyed by `name:descriptor`.
    pub fields: BTreeMap<String, Member>,
    /// Keyed by `name:descriptor`.
    pub methods: BTreeMap<String, Member>,
}

/// Attributes dropped everywhere (see the module header for why).
pub const DROPPED: [&str; 6] = [
    "LineNumberTable",
    "LocalVariableTable",
    "LocalVariableTypeTable",
    "SourceFile",
    "SourceDebugExtension",
    "StackMapTable",
];

type R<T> = Result<T, String>;

/// What okp needs to know about one class file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassInfo {
    pub major: u16,
    pub source_file: Option<String>,
    /// Every CONSTANT_Utf8 entry (class names, descriptors, strings).
    pub utf8: Vec<String>,
}

impl ClassInfo {
    /// Whether the class mentions `internal_name` (e.g. `kafka/observer/ObserverIds`)
    /// anywhere in its constant pool: as a class, in a descriptor or a signature.
    pub fn references(&self, internal_name: &str) -> bool {
        self.utf8.iter().any(|s| s.contains(internal_name))
    }
}

/// A field or a method as the file lays it out: its attributes not yet resolved.
struct RawMember<'a> {
    access: u16,
    name: String,
    desc: String,
    attrs: Vec<(String, &'a [u8])>,
}

/// A class file's frame, read in one pass: the header, the constant pool, the members and the
/// attributes with their bodies as bytes. Both ways in (`parse`, `read`) start here.
struct Frame<'a> {
    major: u16,
    entries: Vec<Entry>,
    access: u16,
    this: u16,
    sup: u16,
    ifaces: Vec<u16>,
    fields: Vec<RawMember<'a>>,
    methods: Vec<RawMember<'a>>,
    attrs: Vec<(String, &'a [u8])>,
}

fn frame(bytes: &[u8]) -> R<Frame<'_>> {
    let mut r = Reader::new(bytes);
    if r.u4()? != 0xCAFE_BABE {
        return Err("not a class file (bad magic)".into());
    }
    let _minor = r.u2()?;
    let major = r.u2()?;
    let entries = read_pool(&mut r)?;
    let access = r.u2()?;
    let this = r.u2()?;
    let sup = r.u2()?;
    let n = r.u2()?;
    let mut ifaces = Vec::new();
    for _ in 0..n {
        ifaces.push(r.u2()?);
    }
    let mut members: [Vec<RawMember>; 2] = [Vec::new(), Vec::new()];
    for list in members.iter_mut() {
        let n = r.u2()?;
        for _ in 0..n {
            let access = r.u2()?;
            let name = r.u2()?;
            let desc = r.u2()?;
            let attrs = read_attrs(&mut r, &entries)?;
            let name = match entries.get(name as usize) {
                Some(Entry::Utf8(s)) => s.clone(),
                _ => return Err("member name is not UTF-8 text".into()),
            };
            let desc = match entries.get(desc as usize) {
                Some(Entry::Utf8(s)) => s.clone(),
                _ => return Err("member descriptor is not UTF-8 text".into()),
            };
            list.push(RawMember { access, name, desc, attrs });
        }
    }
    let attrs = read_attrs(&mut r, &entries)?;
    let [fields, methods] = members;
    Ok(Frame { major, entries, access, this, sup, ifaces, fields, methods, attrs })
}

/// Reads a class file far enough to answer `ClassInfo`: the frame, nothing resolved beyond the
/// `SourceFile` attribute, so it is cheap enough for every class of a jar a splice copies.
pub fn parse(bytes: &[u8]) -> R<ClassInfo> {
    let f = frame(bytes)?;
    let mut source_file = None;
    for (name, body) in &f.attrs {
        if name == "SourceFile" && body.len() == 2 {
            if let Some(Entry::Utf8(s)) = f.entries.get(usize::from(u16::from_be_bytes([body[0], body[1]]))) {
                source_file = Some(s.clone());
            }
        }
    }
    let utf8 = f.entries.into_iter().filter_map(|e| if let Entry::Utf8(s) = e { Some(s) } else { None }).collect();
    Ok(ClassInfo { major: f.major, source_file, utf8 })
}

/// The Java release a class-file major version is for: `8` for 52, `17` for 61.
pub fn java_release(major: u16) -> u16 {
    major.saturating_sub(44)
}

/// Parses and normalises a class file.
pub fn read(bytes: &[u8]) -> R<Class> {
    read_with_lines(bytes).map(|(c, _)| c)
}

/// The source lines of each method's code, from its `LineNumberTable` (debug information `read`
/// drops), keyed like `Class::methods` (`name:descriptor`, javac's lambda bodies under their
/// canonical names): sorted, each line once. A method without code or without a table has none.
pub type LineTables = BTreeMap<String, Vec<u32>>;

/// `read`, and the line tables it drops: what `okp diff --binary` needs to place a source line
/// (an anchor, a guarded method) in a release's members, and to give a release's own line numbers.
pub fn read_with_lines(bytes: &[u8]) -> R<(Class, LineTables)> {
    let Frame { major, entries, access, this, sup, ifaces, fields, methods, attrs: class_attrs } = frame(bytes)?;
    let mut pool = Pool { entries, bootstrap: Vec::new() };
    if let Some((_, body)) = class_attrs.iter().find(|(n, _)| n == "BootstrapMethods") {
        let mut b = Reader::new(body);
        for _ in 0..b.u2()? {
            let h = b.u2()?;
            let mut args = Vec::new();
            for _ in 0..b.u2()? {
                args.push(b.u2()?);
            }
            pool.bootstrap.push((h, args));
        }
    }
    let name = pool.class(this)?;
    let super_name = if sup == 0 { None } else { Some(pool.class(sup)?) };
    let interfaces = ifaces.iter().map(|i| pool.class(*i)).collect::<R<Vec<_>>>()?;
    let mut class = Class {
        name,
        major,
        access,
        super_name,
        interfaces,
        attrs: BTreeMap::new(),
        fields: BTreeMap::new(),
        methods: BTreeMap::new(),
    };
    let mut inline_entries: BTreeMap<String, String> = BTreeMap::new();
    for (n, body) in &class_attrs {
        if n == "BootstrapMethods" {
            continue; // resolved into the instructions that use it
        }
        if n == "ScalaInlineInfo" {
            let (flags, per_method) = scala_inline_info(body, &pool)?;
            class.attrs.insert(n.clone(), flags);
            inline_entries = per_method;
            continue;
        }
        attribute(&mut class.attrs, n, body, &pool)?;
    }
    for f in fields {
        let mut m = Member { access: f.access, attrs: BTreeMap::new(), code: None };
        for (n, body) in &f.attrs {
            attribute(&mut m.attrs, n, body, &pool)?;
        }
        class.fields.insert(format!("{}:{}", f.name, f.desc), m);
    }
    let mut lines = LineTables::new();
    for raw in methods {
        let key = format!("{}:{}", raw.name, raw.desc);
        let mut m = Member { access: raw.access, attrs: BTreeMap::new(), code: None };
        for (n, body) in &raw.attrs {
            if n == "Code" {
                m.code = Some(code::read(body, &pool).map_err(|e| format!("{key}: {e}"))?);
                let table = line_numbers(body, &pool.entries).map_err(|e| format!("{key}: {e}"))?;
                if !table.is_empty() {
                    lines.insert(key.clone(), table);
                }
            } else {
                attribute(&mut m.attrs, n, body, &pool)?;
            }
        }
        if let Some(e) = inline_entries.remove(&key) {
            m.attrs.insert("ScalaInlineInfo".into(), e);
        }
        class.methods.insert(key, m);
    }
    for (old, new) in canonical_lambda_names(&mut class) {
        if let Some(t) = lines.remove(&old) {
            lines.insert(format!("{new}:{}", old.split_once(':').map_or("", |(_, d)| d)), t);
        }
    }
    if !inline_entries.is_empty() {
        // Entries for methods the class does not declare: keep them on the class.
        let rest: Vec<String> = inline_entries.into_iter().map(|(k, v)| format!("{k} {v}")).collect();
        class.attrs.insert("ScalaInlineInfo.unmatched".into(), rest.join("; "));
    }
    Ok((class, lines))
}
