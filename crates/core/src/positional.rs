//! Reading records at known positions: the entries of an `.idx` or `.gzi` sidecar, each
//! checked against the file before anything is allocated.

use std::fs::File;
use std::io::Read;

use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::multi::LargeRecords;
use crate::reader::{ReadOptions, RecordReader, DIRECT_MIN};

fn located_at(err: Error, path: &str, offset: u64) -> Error {
    let mut err = err;
    err.offset = Some(offset + err.offset.unwrap_or(0));
    err.with_path(path)
}

/// Reads `len` bytes at `offset` of `path`, refusing a range past the end of the file
/// (a damaged or stale index) without allocating it.
fn read_range(path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
    let mut file = File::open(path).map_err(|e| Error::io(e, Some(path)))?;
    let size = file.metadata().map_err(|e| Error::io(e, Some(path)))?.len();
    read_range_of(&mut file, size, path, offset, len)
}

fn read_range_of(file: &mut File, size: u64, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(Error::data_loss(format!(
            "the index points at bytes {offset}..{} but the file holds {size}",
            offset.saturating_add(len)
        ))
        .with_path(path)
        .with_offset(offset));
    }
    let mut buf = vec![0; len as usize];
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut buf))
        .map_err(|e| Error::io(e, Some(path)))?;
    Ok(buf)
}

/// The one record framed in `buf`, read from `offset` of `path`.
fn record_in(buf: Vec<u8>, path: &str, offset: u64, verify: bool) -> Result<Vec<u8>> {
    let framed_len = buf.len() as u64;
    let opts = ReadOptions {
        compression: Some(Compression::None),
        verify,
        ..ReadOptions::default()
    };
    let mut reader = RecordReader::new(&buf[..], Compression::None, path, &opts);
    match reader.next_record() {
        Ok(Some(r)) if r.len() as u64 + 16 == framed_len => Ok(r.to_vec()),
        Ok(_) => Err(Error::data_loss(format!(
            "the index entry ({framed_len} bytes) does not frame one record"
        ))
        .with_path(path)
        .with_offset(offset)),
        Err(e) => Err(located_at(e, path, offset)),
    }
}

/// Reads records at byte offsets of an uncompressed file, as TensorFlow's random record
/// reader: each read checks that a record starts at the offset, and gives the next one's.
pub struct OffsetReader {
    file: File,
    path: String,
}

impl OffsetReader {
    pub fn open(path: &str) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(e, Some(path)))?;
        Ok(OffsetReader {
            file,
            path: path.to_owned(),
        })
    }

    /// The record that starts at `offset` and the offset after it; `None` at (or past) the
    /// end of the file. The file may have grown since the last read.
    pub fn read(&mut self, offset: u64, verify: bool) -> Result<Option<(Vec<u8>, u64)>> {
        let path = self.path.as_str();
        let size = self
            .file
            .metadata()
            .map_err(|e| Error::io(e, Some(path)))?
            .len();
        if offset >= size {
            return Ok(None);
        }
        if size - offset < 12 {
            return Err(Error::truncated(format!(
                "a record header at byte {offset} runs past the end of the file ({size} bytes)"
            ))
            .with_path(path)
            .with_offset(offset));
        }
        let header = read_range_of(&mut self.file, size, path, offset, 12)?;
        let len = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(header[8..].try_into().expect("4 bytes"));
        if crc != crate::crc::masked_crc32c(&header[..8]) {
            return Err(Error::corrupt(format!(
                "no record starts at byte {offset}: the length there fails its checksum"
            ))
            .with_path(path)
            .with_offset(offset));
        }
        let framed = len.saturating_add(16);
        if framed > size - offset {
            return Err(Error::truncated(format!(
                "the record at byte {offset} holds {len} bytes, past the end of the file \
                 ({size} bytes)"
            ))
            .with_path(path)
            .with_offset(offset));
        }
        let buf = read_range_of(&mut self.file, size, path, offset, framed)?;
        Ok(Some((
            record_in(buf, path, offset, verify)?,
            offset + framed,
        )))
    }
}

/// The one record framed in `framed` (an `.idx` entry's bytes, fetched from `offset` of
/// `path`), its checksums checked.
pub fn unframe_record(framed: Vec<u8>, path: &str, offset: u64, verify: bool) -> Result<Vec<u8>> {
    record_in(framed, path, offset, verify)
}

/// As [`read_records_at`], except that the data of each record of at least
/// [`DIRECT_MIN`] bytes goes straight from the file into a buffer `large` makes (one
/// copy, its checksum taken there); those records come back as `None`.
pub fn read_records_at_with(
    path: &str,
    positions: &[(u64, u64)],
    verify: bool,
    large: &mut dyn LargeRecords,
) -> Result<Vec<Option<Vec<u8>>>> {
    let mut file = File::open(path).map_err(|e| Error::io(e, Some(path)))?;
    let size = file.metadata().map_err(|e| Error::io(e, Some(path)))?.len();
    positions
        .iter()
        .map(|&(offset, framed)| {
            if framed < DIRECT_MIN + 16 {
                let buf = read_range_of(&mut file, size, path, offset, framed)?;
                return record_in(buf, path, offset, verify).map(Some);
            }
            large_at(&mut file, size, path, (offset, framed), verify, large).map(|()| None)
        })
        .collect()
}

/// Reads the record framed at `at` (an `.idx` entry) into a buffer of `large`'s.
fn large_at(
    file: &mut File,
    size: u64,
    path: &str,
    (offset, framed): (u64, u64),
    verify: bool,
    large: &mut dyn LargeRecords,
) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    crate::memory::keep_freed_buffers();
    let header = read_range_of(file, size, path, offset, 12)?;
    let damaged = |e: Error| e.with_path(path).with_offset(offset);
    let len = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
    let stored = u32::from_le_bytes(header[8..].try_into().expect("4 bytes"));
    if crate::crc::masked_crc32c(&header[..8]) != stored {
        return Err(damaged(Error::corrupt(
            "record length checksum mismatch (corrupt record header)",
        )));
    }
    if len.checked_add(16) != Some(framed) || offset.saturating_add(framed) > size {
        return Err(damaged(Error::data_loss(format!(
            "the index entry ({framed} bytes) does not frame one record"
        ))));
    }
    let dst = large.buffer(len as usize)?;
    let mut footer = [0u8; 4];
    let read = file
        .seek(SeekFrom::Start(offset + 12))
        .and_then(|_| file.read_exact(dst))
        .and_then(|()| file.read_exact(&mut footer));
    let checked = match read {
        Err(e) => Err(Error::io(e, Some(path))),
        Ok(()) if verify && crate::crc::masked_crc32c(dst) != u32::from_le_bytes(footer) => {
            Err(damaged(Error::corrupt("record data checksum mismatch")))
        }
        Ok(()) => Ok(()),
    };
    if checked.is_err() {
        large.discard();
    }
    checked
}

/// Reads the records framed at `(offset, framed length)` positions of an uncompressed
/// file (`.idx` entries), in that order, opening the file once.
pub fn read_records_at(path: &str, positions: &[(u64, u64)], verify: bool) -> Result<Vec<Vec<u8>>> {
    let mut file = File::open(path).map_err(|e| Error::io(e, Some(path)))?;
    let size = file.metadata().map_err(|e| Error::io(e, Some(path)))?.len();
    positions
        .iter()
        .map(|&(offset, len)| {
            let buf = read_range_of(&mut file, size, path, offset, len)?;
            record_in(buf, path, offset, verify)
        })
        .collect()
}

/// Reads every record of the gzip member of `len` compressed bytes at `offset` (a `.gzi`
/// entry of a seekable gzip file).
pub fn read_member(path: &str, offset: u64, len: u64, verify: bool) -> Result<Vec<Vec<u8>>> {
    member_records(&read_range(path, offset, len)?, path, verify)
}

/// Every record of one gzip member's bytes (fetched from a seekable gzip file `path`).
pub fn member_records(buf: &[u8], path: &str, verify: bool) -> Result<Vec<Vec<u8>>> {
    let opts = ReadOptions {
        compression: Some(Compression::Gzip),
        verify,
        ..ReadOptions::default()
    };
    let mut reader = RecordReader::new(buf, Compression::Gzip, path, &opts);
    let mut out = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => out.push(r.to_vec()),
            Ok(None) => return Ok(out),
            Err(e) => return Err(e.with_path(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_reader_follows_records_and_refuses_other_offsets() {
        let dir = std::env::temp_dir().join(format!("tfrk-offset-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tfrecord");
        let mut bytes = Vec::new();
        for r in [&b"one"[..], b"", b"three"] {
            crate::writer::frame_record(r, &mut bytes);
        }
        std::fs::write(&path, &bytes).unwrap();
        let mut reader = OffsetReader::open(path.to_str().unwrap()).unwrap();
        let (first, next) = reader.read(0, true).unwrap().unwrap();
        assert_eq!((first.as_slice(), next), (&b"one"[..], 19));
        let (second, next) = reader.read(next, true).unwrap().unwrap();
        assert_eq!((second.len(), next), (0, 35));
        let (_, end) = reader.read(next, true).unwrap().unwrap();
        assert!(reader.read(end, true).unwrap().is_none());
        assert_eq!(
            reader.read(1, true).unwrap_err().kind,
            crate::ErrorKind::Corrupt
        );
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let err = reader.read(35, true).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Truncated);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
