//! Masked CRC32C (Castagnoli), as TFRecord framing uses it.

const MASK_DELTA: u32 = 0xa282_ead8;

/// `((crc >> 15) | (crc << 17)) + 0xa282ead8`, all modulo 2^32.
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The inverse of [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// CRC32C of `data`, masked.
///
/// crc-fast folds with carry-less multiplies (VPCLMULQDQ / PMULL) where the CPU has them:
/// about twice the speed of the CRC32 instruction alone on records of 1 KB and more, and
/// no slower on an 8-byte header, so checking a large record costs less than copying it.
#[inline]
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc_fast::crc32_iscsi(data))
}

/// A CRC32C over bytes that arrive in pieces (unmasked).
#[derive(Clone)]
pub struct Crc32c(crc_fast::Digest);

impl Default for Crc32c {
    fn default() -> Self {
        Crc32c(crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi))
    }
}

impl Crc32c {
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    pub fn value(&self) -> u32 {
        self.0.finalize() as u32
    }
}

/// CRC32C (unmasked) of a whole file's bytes, read in blocks.
pub fn file_crc32c(path: &str) -> crate::Result<u32> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| crate::Error::io(e, Some(path)))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = Crc32c::default();
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(crc.value()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(crate::Error::io(e, Some(path))),
        };
        crc.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // CRC32C check value from RFC 3720.
        assert_eq!(crc_fast::crc32_iscsi(b"123456789"), 0xe306_9283);
        assert_eq!(unmask(mask(0xdead_beef)), 0xdead_beef);
    }

    #[test]
    fn pieces_match_whole() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for cut in [0, 1, 7, 64, 4095, 65_536, 99_999, 100_000] {
            let mut crc = Crc32c::default();
            crc.update(&data[..cut]);
            crc.update(&data[cut..]);
            assert_eq!(crc.value(), crc_fast::crc32_iscsi(&data));
            assert_eq!(mask(crc.value()), masked_crc32c(&data));
        }
    }
}
