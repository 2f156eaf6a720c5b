//! The protobuf wire format, as much of it as Example messages need.

use crate::error::{Error, Result};

pub const VARINT: u8 = 0;
pub const I64: u8 = 1;
pub const LEN: u8 = 2;
pub const SGROUP: u8 = 3;
pub const EGROUP: u8 = 4;
pub const I32: u8 = 5;

/// Unknown groups nested deeper than this are rejected rather than recursed into.
pub const MAX_DEPTH: usize = 64;

/// A cursor over one message's bytes. Every read is bounds-checked; nothing panics.
#[derive(Clone, Copy)]
pub struct WireReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> WireReader<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        WireReader { buf, pos: 0 }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    fn err(&self, what: &str) -> Error {
        Error::decode(format!("malformed protobuf: {what} at byte {}", self.pos))
    }

    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64> {
        let pos = self.pos;
        if let Some(&b) = self.buf.get(pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        if let Some(bytes) = self.buf.get(pos..pos + 8) {
            // Up to 8 bytes at once: the first byte without its high bit ends the varint,
            // and the 7-bit groups before it are packed together in three steps.
            let word = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            let ends = !word & 0x8080_8080_8080_8080;
            if ends != 0 {
                let len = (ends.trailing_zeros() / 8 + 1) as usize;
                self.pos = pos + len;
                return Ok(varint_of_word(word, len));
            }
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.err("truncated varint"));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return Err(self.err("varint longer than 64 bits"));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    /// Reads a field tag: `(field number, wire type)`.
    #[inline(always)]
    pub fn tag(&mut self) -> Result<(u32, u8)> {
        let start = self.pos;
        let key = self.varint()?;
        let field = key >> 3;
        let wire = (key & 7) as u8;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            self.pos = start;
            return Err(self.err("invalid field number"));
        }
        if wire > I32 {
            self.pos = start;
            return Err(self.err(&format!("invalid wire type {wire}")));
        }
        Ok((field as u32, wire))
    }

    /// Reads a length-delimited payload.
    #[inline(always)]
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.varint()?;
        let left = (self.buf.len() - self.pos) as u64;
        if len > left {
            return Err(self.err(&format!(
                "length {len} runs past the end of its message ({left} bytes left)"
            )));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok(&self.buf[start..self.pos])
    }

    #[inline]
    pub fn fixed32(&mut self) -> Result<u32> {
        match self.buf.get(self.pos..self.pos + 4) {
            Some(b) => {
                self.pos += 4;
                Ok(u32::from_le_bytes(b.try_into().unwrap()))
            }
            None => Err(self.err("truncated fixed32")),
        }
    }

    #[inline]
    pub fn fixed64(&mut self) -> Result<u64> {
        match self.buf.get(self.pos..self.pos + 8) {
            Some(b) => {
                self.pos += 8;
                Ok(u64::from_le_bytes(b.try_into().unwrap()))
            }
            None => Err(self.err("truncated fixed64")),
        }
    }

    fn advance(&mut self, n: usize, what: &str) -> Result<()> {
        if self.buf.len() - self.pos < n {
            return Err(self.err(what));
        }
        self.pos += n;
        Ok(())
    }

    /// Skips the value of an unknown field.
    pub fn skip(&mut self, field: u32, wire: u8) -> Result<()> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.advance(8, "truncated fixed64"),
            LEN => self.bytes().map(drop),
            I32 => self.advance(4, "truncated fixed32"),
            SGROUP => self.skip_group(field),
            _ => Err(self.err("unexpected end-group tag")),
        }
    }

    fn skip_group(&mut self, field: u32) -> Result<()> {
        let mut open = vec![field];
        while let Some(&current) = open.last() {
            if self.is_empty() {
                return Err(self.err("unterminated group"));
            }
            let (f, w) = self.tag()?;
            match w {
                SGROUP => {
                    if open.len() >= MAX_DEPTH {
                        return Err(self.err("groups nested too deeply"));
                    }
                    open.push(f);
                }
                EGROUP if f == current => {
                    open.pop();
                }
                EGROUP => return Err(self.err("mismatched end-group tag")),
                _ => self.skip(f, w)?,
            }
        }
        Ok(())
    }
}

#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits; zero takes one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub fn put_tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// Size of a length-delimited field with a one-byte tag holding `len` bytes.
#[inline]
pub fn len_field_size(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

/// The value of the varint of `len` (1 to 8) bytes at the bottom of `word`: its 7-bit
/// groups packed together in three steps.
#[inline(always)]
fn varint_of_word(word: u64, len: usize) -> u64 {
    let mask = if len == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    };
    let mut x = word & mask & 0x7f7f_7f7f_7f7f_7f7f;
    x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// Appends the varints of `bytes` (a packed `Int64List`) to `out`, as int64s.
///
/// Eight bytes are loaded at a time and every varint that ends in them is decoded from
/// that one word: where the next varint begins comes from the word's mask of last bytes,
/// not from decoding the one before, so that the varints of a list decode side by side
/// rather than one after another. Varints of more than 8 bytes are read one by one. A
/// malformed list leaves `out` as it was.
#[inline(always)]
pub fn extend_varints(out: &mut Vec<i64>, bytes: &[u8]) -> Result<()> {
    if bytes.len() >= 8 {
        return extend_many_varints(out, bytes);
    }
    // A value or two (a label, say): as they come.
    let (before, mut r) = (out.len(), WireReader::new(bytes));
    while !r.is_empty() {
        match r.varint() {
            Ok(x) => out.push(x as i64),
            Err(e) => {
                out.truncate(before);
                return Err(e);
            }
        }
    }
    Ok(())
}

fn extend_many_varints(out: &mut Vec<i64>, bytes: &[u8]) -> Result<()> {
    // No more varints than bytes: room for them all, taken once.
    out.reserve(bytes.len());
    let at = out.len();
    let n = varints_into(&mut out.spare_capacity_mut()[..bytes.len()], bytes)?;
    // SAFETY: `varints_into` wrote the first `n` of the spare values.
    unsafe { out.set_len(at + n) };
    Ok(())
}

/// Writes the varints of `bytes` (8 or more) to the start of `out` (room for one per
/// byte); returns how many there were.
#[inline]
fn varints_into(out: &mut [std::mem::MaybeUninit<i64>], bytes: &[u8]) -> Result<usize> {
    let (mut n, mut pos, len) = (0, 0, bytes.len());
    let load = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    while pos < len {
        // The next 8 bytes; at the end, the last 8 bytes shifted down to start at `pos`,
        // zeros above them (which end no varint: they are masked out).
        let (word, valid) = if pos + 8 <= len {
            (load(pos), u64::MAX)
        } else {
            let rest = len - pos;
            (load(len - 8) >> (8 * (8 - rest)), (1u64 << (8 * rest)) - 1)
        };
        let mut ends = !word & 0x8080_8080_8080_8080 & valid;
        if ends == 0 {
            // A varint of more than 8 bytes, or one cut short: read (or refused) alone.
            let mut r = WireReader { buf: bytes, pos };
            out[n].write(r.varint()? as i64);
            n += 1;
            pos = r.pos;
            continue;
        }
        let mut start = 0;
        while ends != 0 {
            let end = (ends.trailing_zeros() / 8) as usize;
            out[n].write(varint_of_word(word >> (8 * start), end + 1 - start) as i64);
            n += 1;
            start = end + 1;
            ends &= ends - 1;
        }
        pos += start;
    }
    Ok(n)
}

/// Appends the little-endian `f32`s of `bytes` (a packed `FloatList`; a multiple of 4
/// bytes) to `out`: one copy on little-endian targets, whose floats are their bytes.
pub fn extend_f32_le(out: &mut Vec<f32>, bytes: &[u8]) {
    let n = bytes.len() / 4;
    if cfg!(target_endian = "little") {
        out.reserve(n);
        let spare = out.spare_capacity_mut();
        // SAFETY: `spare` has room for `n` floats, every bit pattern is a valid f32, and
        // on a little-endian target a float's bytes in memory are its little-endian
        // bytes; `set_len` covers exactly the `n` floats written. The 16-byte moves read
        // and write within the first and the last 16 of the `len` bytes.
        unsafe {
            let (src, dst, len) = (bytes.as_ptr(), spare.as_mut_ptr().cast::<u8>(), n * 4);
            if (16..=32).contains(&len) {
                // A short list (a step of a clip, say) as two overlapping 16-byte moves,
                // not a call into `memcpy`.
                let head = src.cast::<[u8; 16]>().read_unaligned();
                let tail = src.add(len - 16).cast::<[u8; 16]>().read_unaligned();
                dst.cast::<[u8; 16]>().write_unaligned(head);
                dst.add(len - 16).cast::<[u8; 16]>().write_unaligned(tail);
            } else {
                std::ptr::copy_nonoverlapping(src, dst, len);
            }
            out.set_len(out.len() + n);
        }
    } else {
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap())),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The varints of `bytes` read one by one, as the general reader reads them.
    fn one_by_one(bytes: &[u8]) -> Result<Vec<i64>> {
        let mut r = WireReader::new(bytes);
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(r.varint()? as i64);
        }
        Ok(out)
    }

    #[test]
    fn packed_varints_read_as_one_by_one_errors_included() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..3000 {
            // Values of every length from 1 to 10 bytes (negatives take 10).
            let count = (next() % 40) as usize;
            let mut bytes = Vec::new();
            for _ in 0..count {
                let bits = next() % 65;
                let v = if bits == 64 {
                    next()
                } else {
                    next() & ((1 << bits) - 1)
                };
                put_varint(&mut bytes, v);
            }
            match case % 4 {
                // Cut short, or ending in a varint that never ends.
                1 if !bytes.is_empty() => drop(bytes.pop()),
                2 => bytes.extend([0xff; 11]),
                3 => bytes.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
                _ => {}
            }
            let mut got = vec![7i64];
            let read = extend_varints(&mut got, &bytes);
            match one_by_one(&bytes) {
                Ok(want) => {
                    read.unwrap();
                    assert_eq!(got[1..], want[..], "{bytes:02x?}");
                }
                Err(want) => assert_eq!(read.unwrap_err().message, want.message),
            }
            assert_eq!(got[0], 7);
        }
    }

    #[test]
    fn floats_of_every_short_length_are_appended_as_they_are() {
        for n in 0..=12 {
            let want: Vec<f32> = (0..n).map(|i| i as f32 + 0.25).collect();
            let bytes: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![-1.0f32];
            extend_f32_le(&mut out, &bytes);
            assert_eq!(out[0], -1.0);
            assert_eq!(out[1..], want[..], "{n} floats");
        }
    }

    #[test]
    fn varints_round_trip() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX,
            (-1i64) as u64,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(WireReader::new(&out).varint().unwrap(), v);
        }
    }

    #[test]
    fn varints_of_every_length_read_alike_with_and_without_bytes_after_them() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut values: Vec<u64> = (0..64).map(|b| 1u64 << b).collect();
        values.extend((0..64).map(|b| (1u64 << b) - 1));
        values.extend((0..2000).map(|_| rng.u64(..) >> rng.u32(0..64)));
        for v in values {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let len = out.len();
            let mut r = WireReader::new(&out);
            assert_eq!((r.varint().unwrap(), r.pos()), (v, len));
            out.extend([0xff; 9]);
            let mut r = WireReader::new(&out);
            assert_eq!((r.varint().unwrap(), r.pos()), (v, len));
        }
        // Longer than needed, as protobuf allows: 0 in two bytes, 1 in five.
        let padded = [0x80, 0x00, 0x81, 0x80, 0x80, 0x80, 0x00, 0, 0, 0];
        let mut r = WireReader::new(&padded);
        assert_eq!(r.varint().unwrap(), 0);
        assert_eq!((r.varint().unwrap(), r.pos()), (1, 7));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(WireReader::new(&[0x80]).varint().is_err());
        assert!(WireReader::new(&[0xff; 11]).varint().is_err());
        assert!(WireReader::new(&[0x0a, 0x05, 1])
            .skip_bytes_field()
            .is_err());
        assert!(WireReader::new(&[0x07]).tag().is_err());
        assert!(WireReader::new(&[0x00]).tag().is_err());
    }

    #[test]
    fn skips_nested_groups_with_a_limit() {
        let mut ok = vec![0x0b, 0x13, 0x08, 0x01, 0x14, 0x0c];
        let mut r = WireReader::new(&ok);
        let (f, w) = r.tag().unwrap();
        r.skip(f, w).unwrap();
        assert!(r.is_empty());
        ok.truncate(4);
        let mut r = WireReader::new(&ok);
        let (f, w) = r.tag().unwrap();
        assert!(r.skip(f, w).is_err());
        let deep = vec![0x0b; 1000];
        let mut r = WireReader::new(&deep);
        let (f, w) = r.tag().unwrap();
        assert!(r.skip(f, w).is_err());
    }

    impl WireReader<'_> {
        fn skip_bytes_field(&mut self) -> Result<()> {
            let (f, w) = self.tag()?;
            self.skip(f, w)
        }
    }

    #[test]
    fn floats_are_appended_from_their_little_endian_bytes() {
        let values = [1.5f32, -0.0, f32::INFINITY, f32::from_bits(0x7fc0_0001)];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![9.0f32];
        extend_f32_le(&mut out, &bytes);
        extend_f32_le(&mut out, &[]);
        let bits: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
        let expected: Vec<u32> = [9.0f32]
            .iter()
            .chain(&values)
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(bits, expected);
    }
}
