//! A class file read whole into a normalised model, and the comparison of two
//! such models member by member: what the provenance proofs (`build::proof`)
//! compare when they ask whether two class files carry the same program.
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
//! Not here: which classes to compare, or what a difference means (`proof`).

use std::collections::BTreeMap;
use std::fmt;

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
        write!(f, "{}", mnemonic(self.op))?;
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

const MNEMONICS: &str = "nop aconst_null iconst_m1 iconst_0 iconst_1 iconst_2 iconst_3 iconst_4 iconst_5 lconst_0 lconst_1 \
fconst_0 fconst_1 fconst_2 dconst_0 dconst_1 bipush sipush ldc ldc_w ldc2_w iload lload fload dload aload iload_0 iload_1 \
iload_2 iload_3 lload_0 lload_1 lload_2 lload_3 fload_0 fload_1 fload_2 fload_3 dload_0 dload_1 dload_2 dload_3 aload_0 \
aload_1 aload_2 aload_3 iaload laload faload daload aaload baload caload saload istore lstore fstore dstore astore \
istore_0 istore_1 istore_2 istore_3 lstore_0 lstore_1 lstore_2 lstore_3 fstore_0 fstore_1 fstore_2 fstore_3 dstore_0 \
dstore_1 dstore_2 dstore_3 astore_0 astore_1 astore_2 astore_3 iastore lastore fastore dastore aastore bastore castore \
sastore pop pop2 dup dup_x1 dup_x2 dup2 dup2_x1 dup2_x2 swap iadd ladd fadd dadd isub lsub fsub dsub imul lmul fmul dmul \
idiv ldiv fdiv ddiv irem lrem frem drem ineg lneg fneg dneg ishl lshl ishr lshr iushr lushr iand land ior lor ixor lxor \
iinc i2l i2f i2d l2i l2f l2d f2i f2l f2d d2i d2l d2f i2b i2c i2s lcmp fcmpl fcmpg dcmpl dcmpg ifeq ifne iflt ifge ifgt \
ifle if_icmpeq if_icmpne if_icmplt if_icmpge if_icmpgt if_icmple if_acmpeq if_acmpne goto jsr ret tableswitch \
lookupswitch ireturn lreturn freturn dreturn areturn return getstatic putstatic getfield putfield invokevirtual \
invokespecial invokestatic invokeinterface invokedynamic new newarray anewarray arraylength athrow checkcast instanceof \
monitorenter monitorexit wide multianewarray ifnull ifnonnull goto_w jsr_w";

fn mnemonic(op: u8) -> &'static str {
    MNEMONICS.split_whitespace().nth(op as usize).unwrap_or("?")
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

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

type R<T> = Result<T, String>;

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, at: 0 }
    }
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("truncated class file")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u1(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    fn u2(&mut self) -> R<u16> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u4(&mut self) -> R<u32> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

#[derive(Clone, Debug)]
enum Entry {
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
struct Pool {
    entries: Vec<Entry>,
    bootstrap: Vec<(u16, Vec<u16>)>,
}

impl Pool {
    fn utf8(&self, i: u16) -> R<String> {
        match self.entries.get(i as usize) {
            Some(Entry::Utf8(s)) => Ok(s.clone()),
            _ => Err(format!("constant {i} is not UTF-8 text")),
        }
    }
    fn class(&self, i: u16) -> R<String> {
        match self.entries.get(i as usize) {
            Some(Entry::Class(n)) => self.utf8(*n),
            _ => Err(format!("constant {i} is not a class")),
        }
    }
    fn name_type(&self, i: u16) -> R<(String, String)> {
        match self.entries.get(i as usize) {
            Some(Entry::NameType(n, d)) => Ok((self.utf8(*n)?, self.utf8(*d)?)),
            _ => Err(format!("constant {i} is not a name-and-type")),
        }
    }
    fn konst(&self, i: u16) -> R<Const> {
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

fn read_pool(r: &mut Reader) -> R<Vec<Entry>> {
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
fn read_attrs<'a>(r: &mut Reader<'a>, pool: &[Entry]) -> R<Vec<(String, &'a [u8])>> {
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

struct RawMember<'a> {
    access: u16,
    name: String,
    desc: String,
    attrs: Vec<(String, &'a [u8])>,
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
    let mut raw_members: [Vec<RawMember>; 2] = [Vec::new(), Vec::new()];
    for list in raw_members.iter_mut() {
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
    let class_attrs = read_attrs(&mut r, &entries)?;
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
    let [fields, methods] = raw_members;
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
                m.code = Some(code(body, &pool).map_err(|e| format!("{key}: {e}"))?);
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

/// The lines of a Code attribute's `LineNumberTable`s (a method may carry several), sorted, once each.
fn line_numbers(body: &[u8], pool: &[Entry]) -> R<Vec<u32>> {
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

/// Renames javac's lambda bodies (`lambda$createTopic$3`, synthetic) after where
/// they are used: `lambda$<caller>$<k>` for the k-th lambda the method `caller`
/// creates, callers taken in name order, a lambda inside a lambda named after its
/// new name. javac's own counter is not stable across javac versions (javac 8
/// names a lambda nested in a lambda `lambda$null$N`; javac 17 counts over the
/// whole class; newer javac counts per method), and one lambda added to a method
/// renumbers those of every later method. The bodies' names are seen only by
/// reflection and stack traces; every reference is renamed with them.
/// Returns the renames: old `name:descriptor` -> new name.
fn canonical_lambda_names(class: &mut Class) -> BTreeMap<String, String> {
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

/// ScalaInlineInfo: (class part, method `name:desc` -> its entry), references resolved.
/// Layout (scala.tools.nsc.backend.jvm.opt.InlineInfoAttribute): u1 version,
/// u1 flags (1 final, 2 trait self-type (v1 only), 4 has SAM), [u2 u2 SAM name
/// and descriptor], u2 count, count × (u2 name, u2 descriptor, u1 flags).
fn scala_inline_info(body: &[u8], pool: &Pool) -> R<(String, BTreeMap<String, String>)> {
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
fn attribute(out: &mut BTreeMap<String, String>, name: &str, body: &[u8], pool: &Pool) -> R<()> {
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
                let a = annotation(&mut r, pool)?;
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
                    v.push(format!("#{p} {}", annotation(&mut r, pool)?));
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
                v.push(annotation(&mut r, pool)?.split('(').next().unwrap_or_default().to_string());
            }
            v.sort();
            v.join("; ")
        }
        "AnnotationDefault" => element_value(&mut r, pool)?,
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
fn fresh_suffix_dropped(name: &str) -> String {
    match name.rsplit_once('$') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => format!("{base}$"),
        _ => name.to_string(),
    }
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

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

fn annotation(r: &mut Reader, pool: &Pool) -> R<String> {
    let ty = pool.utf8(r.u2()?)?;
    let n = r.u2()?;
    let mut v = Vec::new();
    for _ in 0..n {
        let name = pool.utf8(r.u2()?)?;
        v.push(format!("{name}={}", element_value(r, pool)?));
    }
    Ok(format!("{ty}({})", v.join(", ")))
}

fn element_value(r: &mut Reader, pool: &Pool) -> R<String> {
    let tag = r.u1()?;
    Ok(match tag {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => format!("{}:{}", tag as char, pool.konst(r.u2()?)?),
        b's' => format!("{:?}", pool.utf8(r.u2()?)?),
        b'e' => format!("{}.{}", pool.utf8(r.u2()?)?, pool.utf8(r.u2()?)?),
        b'c' => format!("class {}", pool.utf8(r.u2()?)?),
        b'@' => annotation(r, pool)?,
        b'[' => {
            let n = r.u2()?;
            let v = (0..n).map(|_| element_value(r, pool)).collect::<R<Vec<_>>>()?;
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

fn code(body: &[u8], pool: &Pool) -> R<Code> {
    let mut r = Reader::new(body);
    let max_stack = r.u2()?;
    let max_locals = r.u2()?;
    let len = r.u4()? as usize;
    let bytes = r.take(len)?;
    let (insns, offsets) = decode(bytes, pool)?;
    let index_of = |off: usize| -> R<usize> {
        if off == len {
            return Ok(insns.len());
        }
        offsets.binary_search(&off).map_err(|_| format!("offset {off} is not an instruction boundary"))
    };
    let mut out = Vec::with_capacity(insns.len());
    for (op, arg) in insns.iter() {
        let arg = match arg {
            RawArg::Arg(a) => a.clone(),
            RawArg::Target(t) => Arg::Target(index_of(*t)?),
            RawArg::Switch(d, c) => {
                Arg::Switch(index_of(*d)?, c.iter().map(|(k, t)| Ok((*k, index_of(*t)?))).collect::<R<Vec<_>>>()?)
            }
        };
        out.push(Insn { op: *op, arg });
    }
    let mut handlers = Vec::new();
    for _ in 0..r.u2()? {
        let (s, e, h, c) = (r.u2()?, r.u2()?, r.u2()?, r.u2()?);
        handlers.push(Handler {
            start: index_of(s as usize)?,
            end: index_of(e as usize)?,
            handler: index_of(h as usize)?,
            catch: if c == 0 { None } else { Some(pool.class(c)?) },
        });
    }
    let mut attrs = BTreeMap::new();
    for (n, b) in read_attrs(&mut r, &pool.entries)? {
        if n.ends_with("TypeAnnotations") {
            attribute(&mut attrs, &n, b, pool)?;
        } else if !DROPPED.contains(&n.as_str()) {
            attrs.insert(n, hex(b));
        }
    }
    Ok(Code { max_stack, max_locals, insns: out, handlers, attrs })
}

enum RawArg {
    Arg(Arg),
    Target(usize),
    Switch(usize, Vec<(i32, usize)>),
}

/// Decodes the instructions: (normalised opcode, operand) and each one's byte offset.
/// Instructions as (normalised opcode, operand) and each one's byte offset.
type Decoded = (Vec<(u8, RawArg)>, Vec<usize>);

fn decode(b: &[u8], pool: &Pool) -> R<Decoded> {
    let mut r = Reader::new(b);
    let mut insns = Vec::new();
    let mut offsets = Vec::new();
    while !r.done() {
        let at = r.at;
        offsets.push(at);
        let op = r.u1()?;
        let rel = |d: i64| -> R<usize> { usize::try_from(at as i64 + d).map_err(|_| "branch before the code".into()) };
        let (op, arg) = match op {
            0x10 => (op, RawArg::Arg(Arg::Int(r.u1()? as i8 as i32))),
            0x11 => (op, RawArg::Arg(Arg::Int(r.u2()? as i16 as i32))),
            0x12 => (op, RawArg::Arg(Arg::Const(pool.konst(r.u1()? as u16)?))),
            0x13 => (0x12, RawArg::Arg(Arg::Const(pool.konst(r.u2()?)?))),
            0x14 => (op, RawArg::Arg(Arg::Const(pool.konst(r.u2()?)?))),
            0x15..=0x19 | 0x36..=0x3a | 0xa9 => (op, RawArg::Arg(Arg::Local(r.u1()? as u16))),
            0x84 => (op, RawArg::Arg(Arg::Iinc(r.u1()? as u16, r.u1()? as i8 as i32))),
            0x99..=0xa8 | 0xc6 | 0xc7 => (op, RawArg::Target(rel(r.u2()? as i16 as i64)?)),
            0xc8 => (0xa7, RawArg::Target(rel(r.u4()? as i32 as i64)?)),
            0xc9 => (0xa8, RawArg::Target(rel(r.u4()? as i32 as i64)?)),
            0xaa | 0xab => {
                while !r.at.is_multiple_of(4) {
                    r.u1()?;
                }
                let default = rel(r.u4()? as i32 as i64)?;
                let mut cases = Vec::new();
                if op == 0xaa {
                    let low = r.u4()? as i32;
                    let high = r.u4()? as i32;
                    if high < low {
                        return Err("tableswitch with high < low".into());
                    }
                    for k in low..=high {
                        cases.push((k, rel(r.u4()? as i32 as i64)?));
                    }
                } else {
                    for _ in 0..r.u4()? {
                        let k = r.u4()? as i32;
                        cases.push((k, rel(r.u4()? as i32 as i64)?));
                    }
                }
                (op, RawArg::Switch(default, cases))
            }
            0xb2..=0xb8 | 0xbb | 0xbd | 0xc0 | 0xc1 => (op, RawArg::Arg(Arg::Const(pool.konst(r.u2()?)?))),
            0xb9 => {
                let c = pool.konst(r.u2()?)?;
                r.take(2)?; // count and zero: determined by the descriptor
                (op, RawArg::Arg(Arg::Const(c)))
            }
            0xba => {
                let c = pool.konst(r.u2()?)?;
                r.take(2)?;
                (op, RawArg::Arg(Arg::Const(c)))
            }
            0xbc => (op, RawArg::Arg(Arg::Int(r.u1()? as i32))),
            0xc4 => {
                let wop = r.u1()?;
                let local = r.u2()?;
                if wop == 0x84 {
                    (wop, RawArg::Arg(Arg::Iinc(local, r.u2()? as i16 as i32)))
                } else {
                    (wop, RawArg::Arg(Arg::Local(local)))
                }
            }
            0xc5 => {
                let c = pool.class(r.u2()?)?;
                (op, RawArg::Arg(Arg::MultiArray(c, r.u1()?)))
            }
            0x00..=0x0f | 0x1a..=0x35 | 0x3b..=0x83 | 0x85..=0x98 | 0xac..=0xb1 | 0xbe | 0xbf | 0xc2 | 0xc3 => {
                (op, RawArg::Arg(Arg::None))
            }
            t => return Err(format!("unknown opcode {t:#x} at {at}")),
        };
        insns.push((op, arg));
    }
    Ok((insns, offsets))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A class file assembled by hand: class `a/B` with one method (name and
    /// descriptor at `method_name`, `desc`) whose code is `code`, over `pool`
    /// (entries from index 1); `code_attrs` are the Code attribute's own attributes.
    fn class_full(pool: &[Vec<u8>], method_name: u16, desc: u16, code: &[u8], code_attrs: &[&[u8]]) -> Vec<u8> {
        let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52];
        b.extend(((pool.len() + 1) as u16).to_be_bytes());
        for p in pool {
            b.extend(p);
        }
        b.extend([0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0]); // flags, this #2, super #4, no interfaces, no fields
        b.extend([0, 1, 0, 1]); // one method, public
        b.extend(method_name.to_be_bytes());
        b.extend(desc.to_be_bytes());
        b.extend([0, 1, 0, 7]); // one attribute: Code (#7)
        let extra: usize = code_attrs.iter().map(|a| a.len()).sum();
        b.extend(((12 + code.len() + extra) as u32).to_be_bytes());
        b.extend([0, 2, 0, 1]);
        b.extend((code.len() as u32).to_be_bytes());
        b.extend(code);
        b.extend([0, 0]); // no handlers
        b.extend((code_attrs.len() as u16).to_be_bytes());
        for a in code_attrs {
            b.extend(*a);
        }
        b.extend([0, 0]); // no class attributes
        b
    }

    fn class_with(pool: &[Vec<u8>], method_name: u16, desc: u16, code: &[u8], _code_name: u16) -> Vec<u8> {
        class_full(pool, method_name, desc, code, &[])
    }

    fn utf(s: &str) -> Vec<u8> {
        let mut v = vec![1u8];
        v.extend((s.len() as u16).to_be_bytes());
        v.extend(s.as_bytes());
        v
    }

    fn base_pool() -> Vec<Vec<u8>> {
        vec![
            utf("a/B"),              // 1
            vec![7, 0, 1],           // 2
            utf("java/lang/Object"), // 3
            vec![7, 0, 3],           // 4
            utf("m"),                // 5
            utf("()V"),              // 6
            utf("Code"),             // 7
            utf("hello"),            // 8
            vec![8, 0, 8],           // 9 String "hello"
        ]
    }

    #[test]
    fn constant_pool_order_and_ldc_width_do_not_matter() {
        // ldc #9; pop; goto +3 (to return); return
        let a = class_with(&base_pool(), 5, 6, &[0x12, 9, 0x57, 0xa7, 0, 3, 0xb1], 7);
        // The same program with the string at another index, loaded with ldc_w: offsets shift by one.
        let mut pool = base_pool();
        pool.swap(7, 8); // 8 is now the String (-> #9 text), 9 the text
        pool[7] = vec![8, 0, 9];
        let b = class_with(&pool, 5, 6, &[0x13, 0, 8, 0x57, 0xa7, 0, 3, 0xb1], 7);
        assert_ne!(a, b);
        let (ca, cb) = (read(&a).unwrap(), read(&b).unwrap());
        assert_eq!(ca, cb);
        assert!(compare(&ca, &cb).is_empty());
        let m = &ca.methods["m:()V"];
        assert_eq!(m.code.as_ref().unwrap().insns[0].to_string(), "ldc \"hello\"");
        assert_eq!(m.code.as_ref().unwrap().insns[2].arg, Arg::Target(3));
    }

    #[test]
    fn a_changed_constant_or_branch_is_a_differing_method() {
        let a = read(&class_with(&base_pool(), 5, 6, &[0x12, 9, 0x57, 0xb1], 7)).unwrap();
        let mut pool = base_pool();
        pool[7] = utf("hellO");
        let b = read(&class_with(&pool, 5, 6, &[0x12, 9, 0x57, 0xb1], 7)).unwrap();
        let d = compare(&a, &b);
        assert_eq!(d.differ, vec![MemberId::method("m:()V")]);
        assert_eq!(d.differ[0].to_string(), "method m()");
        // Another method name: one member only in each.
        let mut pool = base_pool();
        pool[4] = utf("n");
        let c = read(&class_with(&pool, 5, 6, &[0x12, 9, 0x57, 0xb1], 7)).unwrap();
        let d = compare(&a, &c);
        assert_eq!((d.only_a.len(), d.only_b.len(), d.differ.len()), (1, 1, 0));
    }

    #[test]
    fn debug_attributes_are_dropped_and_unknown_ones_kept() {
        let mut pool = base_pool();
        pool.push(utf("LineNumberTable")); // 10
        pool.push(utf("Mystery")); // 11
        let plain = read(&class_full(&pool, 5, 6, &[0xb1], &[])).unwrap();
        // pc 0 is line 42, then line 43: dropped.
        let lnt: &[u8] = &[0, 10, 0, 0, 0, 6, 0, 1, 0, 0, 0, 42];
        let lnt2: &[u8] = &[0, 10, 0, 0, 0, 6, 0, 1, 0, 0, 0, 43];
        assert_eq!(plain, read(&class_full(&pool, 5, 6, &[0xb1], &[lnt])).unwrap());
        assert_eq!(plain, read(&class_full(&pool, 5, 6, &[0xb1], &[lnt2])).unwrap());
        // An attribute okp does not know is compared byte for byte.
        let mystery: &[u8] = &[0, 11, 0, 0, 0, 1, 7];
        let m = read(&class_full(&pool, 5, 6, &[0xb1], &[mystery])).unwrap();
        assert_eq!(compare(&plain, &m).differ, vec![MemberId::method("m:()V")]);
    }

    #[test]
    fn javac_relaxations_forgive_only_their_own_difference() {
        let pool = |extra: Vec<Vec<u8>>| {
            let mut p = base_pool();
            p.extend(extra);
            p
        };
        // 10.. : Object.getClass, Objects.requireNonNull, a/C class
        let extra = vec![
            utf("getClass"),                               // 10
            utf("()Ljava/lang/Class;"),                    // 11
            vec![12, 0, 10, 0, 11],                        // 12 nt
            vec![10, 0, 4, 0, 12],                         // 13 Object.getClass
            utf("java/util/Objects"),                      // 14
            vec![7, 0, 14],                                // 15
            utf("requireNonNull"),                         // 16
            utf("(Ljava/lang/Object;)Ljava/lang/Object;"), // 17
            vec![12, 0, 16, 0, 17],                        // 18
            vec![10, 0, 15, 0, 18],                        // 19 Objects.requireNonNull
        ];
        let old =
            read(&class_with(&pool(extra.clone()), 5, 6, &[0x2a, 0xb6, 0, 13, 0x57, 0xa7, 0, 3, 0xb1], 7)).unwrap();
        let new =
            read(&class_with(&pool(extra.clone()), 5, 6, &[0x2a, 0xb8, 0, 19, 0x57, 0xc0, 0, 4, 0xa7, 0, 3, 0xb1], 7))
                .unwrap();
        let (ma, mb) = (&old.methods["m:()V"], &new.methods["m:()V"]);
        assert!(method_equal_modulo(ma, mb, &[]).is_none());
        assert!(method_equal_modulo(ma, mb, &[Relaxation::JavacNullCheck]).is_none(), "the cast is not forgiven");
        let used = method_equal_modulo(ma, mb, &[Relaxation::JavacNullCheck, Relaxation::JavacCheckcast]).unwrap();
        assert_eq!(used.get(&Relaxation::JavacNullCheck), Some(&1));
        assert_eq!(used.get(&Relaxation::JavacCheckcast), Some(&1));
        // The null check is forgiven in javac 8's direction only; casts either way (javac 8 casts in
        // lambda bodies where javac 17 does not).
        assert!(method_equal_modulo(mb, ma, &[Relaxation::JavacNullCheck, Relaxation::JavacCheckcast]).is_none());
        assert!(method_equal_modulo(mb, mb, &[]).is_some());
    }

    #[test]
    fn fresh_name_counters_are_dropped_from_parameter_names_only() {
        assert_eq!(fresh_suffix_dropped("partition$8"), "partition$");
        assert_eq!(fresh_suffix_dropped("partition"), "partition");
        assert_eq!(fresh_suffix_dropped("$this"), "$this");
        assert_ne!(fresh_suffix_dropped("partition$8"), fresh_suffix_dropped("replica$8"));
    }

    #[test]
    fn parameters_print_as_simple_names() {
        assert_eq!(pretty_params("(Ljava/util/List;)V"), "List");
        assert_eq!(pretty_params("(I[JLkafka/cluster/Partition$Foo;)Z"), "int, long[], Foo");
        assert_eq!(MemberId::method("validate:(Ljava/util/List;)V").to_string(), "method validate(List)");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(read(b"nope").is_err());
        let mut c = class_with(&base_pool(), 5, 6, &[0xb1], 7);
        c.truncate(c.len() - 5);
        assert!(read(&c).is_err());
        // An opcode that does not exist.
        assert!(read(&class_with(&base_pool(), 5, 6, &[0xfe], 7)).is_err());
    }
}
