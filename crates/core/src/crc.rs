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
