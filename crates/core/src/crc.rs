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

/// CRC32C of `data` (hardware-accelerated where the CPU offers it), masked.
#[inline]
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c::crc32c(data))
}

/// CRC32C (unmasked) of a whole file's bytes, read in blocks.
pub fn file_crc32c(path: &str) -> crate::Result<u32> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| crate::Error::io(e, Some(path)))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(crc),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(crate::Error::io(e, Some(path))),
        };
        crc = crc32c::crc32c_append(crc, &buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // CRC32C check value from RFC 3720.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(unmask(mask(0xdead_beef)), 0xdead_beef);
    }
}
