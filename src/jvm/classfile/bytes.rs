//! The cursor over a class file's big-endian bytes: every read is bounds-checked, so a truncated or
//! lying length is an error (`truncated class file`), never a panic.
//!
//! Not here: what the bytes mean (`pool`, `attributes`, `code`).

use super::R;

pub(super) struct Reader<'a> {
    b: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(b: &'a [u8]) -> Self {
        Reader { b, at: 0 }
    }
    pub(super) fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("truncated class file")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub(super) fn u1(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u2(&mut self) -> R<u16> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    pub(super) fn u4(&mut self) -> R<u32> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(super) fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}
