//! What a stream that is not TFRecord looks like, told from its first bytes.

/// How much of a stream's start is looked at to tell another format.
pub const FOREIGN_SAMPLE: usize = 64;

/// Other formats' signatures, and what to call them. Compressed streams are left out: a
/// gzip or zlib stream is most likely a compressed TFRecord file, and the compression hint
/// says so.
const SIGNATURES: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "a PNG signature"),
    (b"\xff\xd8\xff", "a JPEG signature"),
    (b"GIF87a", "a GIF signature"),
    (b"GIF89a", "a GIF signature"),
    (b"%PDF-", "a PDF signature"),
    (b"PK\x03\x04", "a ZIP signature"),
    (b"PAR1", "a Parquet signature"),
    (b"ARROW1", "an Arrow IPC signature"),
    (b"\x93NUMPY", "a NumPy .npy signature"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 signature"),
    (b"SQLite format 3\0", "an SQLite signature"),
    (b"\x7fELF", "an ELF signature"),
    (b"BZh", "a bzip2 signature"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard signature"),
    (b"\xfd7zXZ\x00", "an XZ signature"),
];

/// What the first bytes of a stream look like, when they are another format's: a known
/// signature, or at least 8 bytes of text (UTF-8 without control characters). TFRecord
/// headers are neither: a record's 8-byte length is mostly zero bytes.
pub fn foreign_format(head: &[u8]) -> Option<String> {
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Some("a WebP signature".to_owned());
    }
    if let Some((_, name)) = SIGNATURES.iter().find(|(sig, _)| head.starts_with(sig)) {
        return Some((*name).to_owned());
    }
    // Fewer than 8 bytes could be the start of a torn header whose length bytes print.
    if head.len() < 8 {
        return None;
    }
    let head = &head[..head.len().min(FOREIGN_SAMPLE)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A character cut at the end of the sample is still text.
        Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => {
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    let printable = |c: char| !c.is_control() || matches!(c, '\t' | '\n' | '\r');
    if text.is_empty() || !text.chars().all(printable) {
        return None;
    }
    let line = text
        .trim_start_matches('\u{feff}')
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    Some(format!(
        "text: {:?}",
        line.chars().take(24).collect::<String>()
    ))
}
