//! Just enough of the JVM class-file format to splice jars: the `SourceFile`
//! attribute (which source a class came from) and the constant pool's UTF-8
//! entries (which names a class references).

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

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("truncated class file")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u1(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u2(&mut self) -> Result<u16, String> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u4(&mut self) -> Result<u32, String> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn skip_attributes(&mut self) -> Result<(), String> {
        let n = self.u2()?;
        for _ in 0..n {
            self.u2()?;
            let len = self.u4()? as usize;
            self.take(len)?;
        }
        Ok(())
    }
}

/// Parses a class file far enough to answer `ClassInfo`.
pub fn parse(bytes: &[u8]) -> Result<ClassInfo, String> {
    let mut r = Reader { b: bytes, at: 0 };
    if r.u4()? != 0xCAFE_BABE {
        return Err("not a class file (bad magic)".into());
    }
    let _minor = r.u2()?;
    let major = r.u2()?;
    let count = r.u2()? as usize;
    // Index -> UTF-8 text (None for other constants); entry 0 is unused.
    let mut pool: Vec<Option<String>> = vec![None; count.max(1)];
    let mut i = 1;
    while i < count {
        let tag = r.u1()?;
        match tag {
            1 => {
                let len = r.u2()? as usize;
                // Modified UTF-8: lossless for the ASCII names we look for.
                pool[i] = Some(String::from_utf8_lossy(r.take(len)?).into_owned());
            }
            3 | 4 => {
                r.take(4)?;
            }
            5 | 6 => {
                r.take(8)?;
                i += 1; // longs and doubles take two slots
            }
            7 | 8 | 16 | 19 | 20 => {
                r.take(2)?;
            }
            9 | 10 | 11 | 12 | 17 | 18 => {
                r.take(4)?;
            }
            15 => {
                r.take(3)?;
            }
            t => return Err(format!("unknown constant pool tag {t}")),
        }
        i += 1;
    }
    r.u2()?; // access flags
    r.u2()?; // this class
    r.u2()?; // super class
    let interfaces = r.u2()? as usize;
    r.take(interfaces * 2)?;
    for _ in 0..2 {
        // fields, then methods
        let n = r.u2()?;
        for _ in 0..n {
            r.take(6)?;
            r.skip_attributes()?;
        }
    }
    let mut source_file = None;
    let n = r.u2()?;
    for _ in 0..n {
        let name = r.u2()? as usize;
        let len = r.u4()? as usize;
        let body = r.take(len)?;
        if pool.get(name).and_then(|s| s.as_deref()) == Some("SourceFile") && len == 2 {
            let idx = u16::from_be_bytes([body[0], body[1]]) as usize;
            source_file = pool.get(idx).cloned().flatten();
        }
    }
    let utf8 = pool.into_iter().flatten().collect();
    Ok(ClassInfo { major, source_file, utf8 })
}

/// `8` for class-file major 52, `17` for 61.
pub fn java_release(major: u16) -> u16 {
    major.saturating_sub(44)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
