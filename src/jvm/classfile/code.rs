//! A method's Code attribute decoded: instructions with their operands resolved and their
//! encoding normalised (`ldc_w` as `ldc`, `goto_w` as `goto`, `wide` as the short form, branch and
//! switch targets and exception ranges as instruction indices), and the opcodes' names.
//!
//! Not here: comparing two bodies (`diff`).

use std::collections::BTreeMap;

use super::attributes::attribute;
use super::bytes::Reader;
use super::pool::{read_attrs, Pool};
use super::{Arg, Code, Handler, Insn, DROPPED, R};
use crate::hash::hex;

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

pub(super) fn mnemonic(op: u8) -> &'static str {
    MNEMONICS.split_whitespace().nth(op as usize).unwrap_or("?")
}

pub(super) fn read(body: &[u8], pool: &Pool) -> R<Code> {
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
