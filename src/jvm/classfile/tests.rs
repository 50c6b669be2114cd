//! The reader and the comparison over class files assembled by hand.

use super::attributes::fresh_suffix_dropped;
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
    let old = read(&class_with(&pool(extra.clone()), 5, 6, &[0x2a, 0xb6, 0, 13, 0x57, 0xa7, 0, 3, 0xb1], 7)).unwrap();
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

/// A minimal class file built by hand: class `a/B` extends `java/lang/Object`,
/// with SourceFile "B.scala" and a reference to `kafka/observer/ObserverIds`.
fn tiny_class() -> Vec<u8> {
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52];
    let utf = |s: &str| {
        let mut v = vec![1u8];
        v.extend((s.len() as u16).to_be_bytes());
        v.extend(s.as_bytes());
        v
    };
    let mut pool: Vec<Vec<u8>> = vec![
        utf("a/B"),                        // 1
        vec![7, 0, 1],                     // 2 class a/B
        utf("java/lang/Object"),           // 3
        vec![7, 0, 3],                     // 4
        utf("SourceFile"),                 // 5
        utf("B.scala"),                    // 6
        utf("kafka/observer/ObserverIds"), // 7
        vec![5, 0, 0, 0, 0, 0, 0, 0, 1],   // 8-9 long
    ];
    b.extend(((pool.len() + 2) as u16).to_be_bytes());
    for p in pool.drain(..) {
        b.extend(p);
    }
    b.extend([0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0]);
    b.extend([0, 1, 0, 5, 0, 0, 0, 2, 0, 6]);
    b
}

#[test]
fn reads_source_file_and_references() {
    let c = parse(&tiny_class()).unwrap();
    assert_eq!(c.major, 52);
    assert_eq!(java_release(c.major), 8);
    assert_eq!(c.source_file.as_deref(), Some("B.scala"));
    assert!(c.references("kafka/observer/ObserverIds"));
    assert!(!c.references("org/apache/kafka/controller/ObserverReplicas"));
}

#[test]
fn rejects_garbage_without_panicking() {
    assert!(parse(b"nope").is_err());
    let mut t = tiny_class();
    t.truncate(20);
    assert!(parse(&t).is_err());
}

/// An annotation value nested as deep as its bytes allow (an array in an array, 100 000 times) is
/// an error naming the limit, not a stack overflow; a few levels, as compilers write, read.
#[test]
fn deeply_nested_annotation_values_are_refused() {
    let mut pool = base_pool();
    pool.push(utf("AnnotationDefault")); // 10
                                         // The method's AnnotationDefault attribute after its Code: a class with one method whose
                                         // attribute count is 2 instead of 1.
    let with_default = |levels: usize| {
        let mut body = Vec::new();
        for _ in 0..levels {
            body.extend([b'[', 0, 1]);
        }
        body.extend([b'c', 0, 1]); // class a/B
        let mut class = class_full(&pool, 5, 6, &[0xb1], &[]);
        class.truncate(class.len() - 2); // the class's own attribute count, put back below
                                         // Back from the end: the method's attribute count (2), Code's name (2) and length (4),
                                         // max stack and locals (4), code length (4), code (1), handlers (2), Code's attributes (2).
        let count = class.len() - 21;
        assert_eq!(class[count..count + 4], [0, 1, 0, 7]);
        class[count + 1] = 2;
        class.extend([0, 10]);
        class.extend((body.len() as u32).to_be_bytes());
        class.extend(body);
        class.extend([0, 0]);
        class
    };
    assert!(read(&with_default(3)).is_ok());
    for levels in [65, 100_000] {
        let e = read(&with_default(levels)).unwrap_err();
        assert!(e.contains("nested deeper than 64"), "{levels}: {e}");
    }
}
