//! Writing framed records, plain or compressed, under a temporary name until complete.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::write::{GzEncoder, ZlibEncoder};

use crate::compression::Compression;
use crate::crc::masked_crc32c;
use crate::error::{Error, Result};

/// Appends one framed record to `out`.
#[inline]
pub fn frame_record(data: &[u8], out: &mut Vec<u8>) {
    let len = (data.len() as u64).to_le_bytes();
    out.reserve(data.len() + 16);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
    Zlib(ZlibEncoder<BufWriter<File>>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
            Sink::Zlib(w) => w,
        }
    }

    fn finish(self) -> io::Result<File> {
        let buffered = match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w.finish()?,
            Sink::Zlib(w) => w.finish()?,
        };
        buffered.into_inner().map_err(|e| e.into_error())
    }
}

/// Writes records to `path`.
///
/// With `atomic` (the default in Python) the data goes to a hidden temporary file in the
/// same directory, renamed to `path` only by [`RecordWriter::close`] once it is complete
/// and synced; [`RecordWriter::abort`] removes it. A crash never leaves a torn file under
/// the final name. Dropping an open writer closes it.
pub struct RecordWriter {
    sink: Option<Sink>,
    path: PathBuf,
    temp: Option<PathBuf>,
    compression: Compression,
    records: u64,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

impl RecordWriter {
    /// `compression = None` picks it from the extension (`.gz` gzip, `.zz`/`.zlib` zlib).
    /// `level` is the gzip/zlib level, 0-9 (default 6).
    pub fn create(
        path: &str,
        compression: Option<Compression>,
        level: Option<u32>,
        atomic: bool,
    ) -> Result<Self> {
        let final_path = PathBuf::from(path);
        let compression = compression
            .or_else(|| Compression::from_extension(&final_path))
            .unwrap_or(Compression::None);
        if level.is_some() && compression == Compression::None {
            return Err(Error::invalid(
                "a compression level needs compression=\"gzip\" or \"zlib\"",
            ));
        }
        let level = match level {
            None => flate2::Compression::default(),
            Some(l) if l <= 9 => flate2::Compression::new(l),
            Some(l) => {
                return Err(Error::invalid(format!(
                    "compression level {l} is out of range 0-9"
                )))
            }
        };
        let target = if atomic {
            temp_name(&final_path)
        } else {
            final_path.clone()
        };
        let mut options = OpenOptions::new();
        options.write(true);
        if atomic {
            options.create_new(true);
        } else {
            options.create(true).truncate(true);
        }
        let file = options
            .open(&target)
            .map_err(|e| Error::io(e, Some(path)))?;
        let buffered = BufWriter::with_capacity(1 << 18, file);
        let sink = match compression {
            Compression::None => Sink::Plain(buffered),
            Compression::Gzip => Sink::Gzip(GzEncoder::new(buffered, level)),
            Compression::Zlib => Sink::Zlib(ZlibEncoder::new(buffered, level)),
        };
        Ok(RecordWriter {
            sink: Some(sink),
            path: final_path,
            temp: atomic.then_some(target),
            compression,
            records: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the bytes go until `close`: the temporary file, or the final path.
    pub fn current_path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.path)
    }

    pub fn compression(&self) -> Compression {
        self.compression
    }

    pub fn records_written(&self) -> u64 {
        self.records
    }

    pub fn is_closed(&self) -> bool {
        self.sink.is_none()
    }

    fn io_err(&self, e: io::Error) -> Error {
        Error::io(e, Some(&self.path.to_string_lossy()))
    }

    fn sink(&mut self) -> Result<&mut dyn Write> {
        match self.sink.as_mut() {
            Some(s) => Ok(s.writer()),
            None => Err(Error::invalid("the writer is closed")),
        }
    }

    /// Writes one record.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        let mut header = [0u8; 12];
        header[..8].copy_from_slice(&len);
        header[8..].copy_from_slice(&masked_crc32c(&len).to_le_bytes());
        let footer = masked_crc32c(data).to_le_bytes();
        let sink = self.sink()?;
        let res = sink
            .write_all(&header)
            .and_then(|_| sink.write_all(data))
            .and_then(|_| sink.write_all(&footer));
        res.map_err(|e| self.io_err(e))?;
        self.records += 1;
        Ok(())
    }

    /// Writes bytes that already hold `n` complete framed records.
    pub fn write_framed(&mut self, framed: &[u8], n: u64) -> Result<()> {
        let res = self.sink()?.write_all(framed);
        res.map_err(|e| self.io_err(e))?;
        self.records += n;
        Ok(())
    }

    /// Pushes everything written so far through the compressor to the operating system.
    pub fn flush(&mut self) -> Result<()> {
        let res = self.sink()?.flush();
        res.map_err(|e| self.io_err(e))
    }

    /// Finishes the stream, syncs it to disk and moves it to its final name.
    pub fn close(&mut self) -> Result<()> {
        let Some(sink) = self.sink.take() else {
            return Ok(());
        };
        let done = sink.finish().and_then(|file| file.sync_all());
        if let Err(e) = done {
            self.remove_temp();
            return Err(self.io_err(e));
        }
        if let Some(temp) = self.temp.take() {
            if let Err(e) = fs::rename(&temp, &self.path) {
                let _ = fs::remove_file(&temp);
                return Err(self.io_err(e));
            }
        }
        Ok(())
    }

    /// Stops writing and removes the temporary file; nothing appears under the final name.
    pub fn abort(&mut self) {
        self.sink = None;
        self.remove_temp();
    }

    fn remove_temp(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        if self.sink.is_some() {
            let _ = self.close();
        }
    }
}
