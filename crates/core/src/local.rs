//! Record readers over local files: a whole file, or a span of its records.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::reader::{ReadOptions, RecordReader, Span, HEAD_LEN};

/// A reader of a local file.
pub type FileRecordReader = RecordReader<io::Chain<Cursor<Vec<u8>>, File>>;

impl FileRecordReader {
    /// Opens `path`, detecting its compression when `opts.compression` is `None`.
    pub fn open(path: &str, opts: &ReadOptions) -> Result<Self> {
        let (file, size) = open_file(path, opts)?;
        RecordReader::from_stream(file, path, size, opts)
    }

    /// Opens the records of `span` in `path`, which must be uncompressed: its compression
    /// is told from its own first bytes, not from the middle of the file.
    pub fn open_span(path: &str, opts: &ReadOptions, span: Span) -> Result<Self> {
        let (mut file, size) = open_file(path, opts)?;
        let mut head = Vec::with_capacity(HEAD_LEN);
        (&mut file)
            .take(HEAD_LEN as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::io(e, Some(path)))?;
        let compression = Compression::resolve(opts.compression, Path::new(path), &head);
        let opts = span_options(path, opts, compression, span, size)?;
        file.seek(SeekFrom::Start(span.start))
            .map_err(|e| Error::io(e, Some(path)))?;
        let mut reader = RecordReader::from_stream(file, path, size, &opts)?;
        reader.start_at(span);
        Ok(reader)
    }
}

fn open_file(path: &str, opts: &ReadOptions) -> Result<(File, Option<u64>)> {
    let file = File::open(path).map_err(|e| Error::io(e, Some(path)))?;
    let meta = file.metadata().map_err(|e| Error::io(e, Some(path)))?;
    if meta.is_dir() {
        return Err(Error::io(
            io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            Some(path),
        ));
    }
    let size = (meta.is_file() && !opts.follow).then_some(meta.len());
    Ok((file, size))
}

/// The options that read `span` of `path`: uncompressed, and only within the file.
pub(crate) fn span_options(
    path: &str,
    opts: &ReadOptions,
    compression: Compression,
    span: Span,
    size: Option<u64>,
) -> Result<ReadOptions> {
    let fail = |e: Error| e.with_path(path).with_offset(span.start);
    if compression != Compression::None {
        let name = compression.name().to_uppercase();
        let msg = format!("a span of records reads uncompressed files only; this one is {name}");
        return Err(fail(Error::invalid(msg)));
    }
    if opts.follow {
        return Err(fail(Error::invalid(
            "a span of records cannot follow a growing file",
        )));
    }
    if let Some(size) = size.filter(|&s| span.start > s) {
        let msg = format!("the span starts past the end of the file ({size} bytes)");
        return Err(fail(Error::truncated(msg)));
    }
    Ok(ReadOptions {
        compression: Some(Compression::None),
        ..*opts
    })
}
