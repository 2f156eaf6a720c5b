//! Writing framed records, plain or compressed, under a temporary name until complete.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::compression::{Compression, Deflater, ZlibOptions};
use crate::crc::{masked_crc32c, Crc32c};
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

/// The file underneath the compressor: counts and checksums every byte that reaches it.
struct Checksummed {
    file: File,
    bytes: u64,
    crc: Crc32c,
}

impl Write for Checksummed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

type Buffered = BufWriter<Checksummed>;

enum Sink {
    Plain(Buffered),
    Deflate(Deflater<Buffered>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Deflate(w) => w,
        }
    }

    fn finish(self) -> io::Result<Checksummed> {
        let buffered = match self {
            Sink::Plain(w) => w,
            Sink::Deflate(w) => w.finish()?,
        };
        buffered.into_inner().map_err(|e| e.into_error())
    }
}

/// How a [`RecordWriter`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// `None` picks it from the extension (`.gz` gzip, `.zz`/`.zlib` zlib).
    pub compression: Option<Compression>,
    /// The gzip/zlib level and zlib's other options.
    pub zlib: ZlibOptions,
    /// Write under a hidden temporary name, renamed on close.
    pub atomic: bool,
    /// Also write an index sidecar: for an uncompressed file `{path}.idx`, one
    /// `offset length` line per record (the format DALI and the `tfrecord` package read);
    /// for seekable gzip `{path}.gzi`, one line per member (see `member_bytes`).
    pub index: bool,
    /// Seekable gzip: start a new gzip member once this many uncompressed bytes went into
    /// the current one, so that every member holds whole records. TensorFlow reads the file
    /// as ordinary GZIP; with `index`, `{path}.gzi` lists `offset length first_record
    /// records` per member, for random access.
    pub member_bytes: Option<u64>,
    /// A part of a dataset, which its commit moves to a final name: dropped before it is
    /// finished (an error or a signal unwinding past it), its temporary files are removed
    /// rather than renamed, so that no part appears under a name of its own.
    pub part: bool,
}

/// What a finished file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Where the data is now: the temporary file until renamed, else the final path.
    pub data: PathBuf,
    /// Where the index sidecar is, if one was written.
    pub index: Option<PathBuf>,
    pub records: u64,
    /// Size of the file (compressed bytes, for compressed files).
    pub bytes: u64,
    /// CRC32C (unmasked) of the whole file's bytes.
    pub crc32c: u32,
}

struct IndexSidecar {
    out: BufWriter<File>,
    path: PathBuf,
}

/// The gzip member being written (seekable gzip).
#[derive(Debug, Clone, Copy, Default)]
struct Member {
    compressed_start: u64,
    uncompressed_start: u64,
    first_record: u64,
}

/// Writes records to `path`.
///
/// With `atomic` (the default in Python) the data goes to a hidden temporary file in the
/// same directory, renamed to `path` only by [`RecordWriter::close`] once it is complete
/// and synced; [`RecordWriter::abort`] removes it. A crash never leaves a torn file under
/// the final name. Dropping an open writer closes it (aborts it, for a part of a
/// dataset: see [`WriteOptions::part`]).
pub struct RecordWriter {
    sink: Option<Sink>,
    path: PathBuf,
    temp: Option<PathBuf>,
    compression: Compression,
    records: u64,
    /// Bytes of framed records written (the uncompressed stream's length).
    position: u64,
    index: Option<IndexSidecar>,
    finished: Option<Finished>,
    member_bytes: Option<u64>,
    member: Member,
    part: bool,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_name(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}{suffix}.tmp-{}-{n}", std::process::id()))
}

/// Refuses a final name held by something other than a regular file or a symbolic link
/// (a device, a pipe, a socket, a directory): renaming a finished file over it would
/// destroy it rather than write to it.
pub fn check_replaceable(path: &Path) -> io::Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    if kind.is_file() || kind.is_symlink() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        special_kind(&kind)
    };
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{what} is there, not a regular file, and is never replaced"),
    ))
}

#[cfg(unix)]
fn special_kind(kind: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &fs::FileType) -> &'static str {
    "a special file"
}

/// Moves `from` to `to`. With `replace == false` an existing `to` is never replaced: the
/// move fails with `AlreadyExists` instead, atomically (`renameat2(RENAME_NOREPLACE)` on
/// Linux; elsewhere, or where the filesystem lacks it, a hard link then an unlink; on a
/// filesystem without hard links, a check then a rename).
pub fn rename_file(from: &Path, to: &Path, replace: bool) -> io::Result<()> {
    if replace {
        check_replaceable(to)?;
        return fs::rename(from, to);
    }
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let src = CString::new(from.as_os_str().as_bytes())?;
        let dst = CString::new(to.as_os_str().as_bytes())?;
        // SAFETY: both paths are NUL-terminated C strings that outlive the call.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                src.as_ptr(),
                libc::AT_FDCWD,
                dst.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => {}
            _ => return Err(err),
        }
    }
    match fs::hard_link(from, to) {
        Ok(()) => fs::remove_file(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // A filesystem without hard links: checked, then moved (a narrow race remains).
        Err(_) if to.symlink_metadata().is_ok() => Err(io::ErrorKind::AlreadyExists.into()),
        Err(_) => fs::rename(from, to),
    }
}

/// Gives a finished shard (its data file and index sidecar, synced under temporary
/// names) its final names: the sidecar first, then the data, so that a data file never
/// appears without its index. `index` is `(temporary, final)`. Without `replace`, an
/// existing file at either final name fails the commit with `AlreadyExists` and is left
/// untouched; a failed commit removes this shard's files, wherever they got to.
pub fn commit_shard(
    data: &Path,
    index: Option<(&Path, &Path)>,
    path: &Path,
    replace: bool,
) -> Result<()> {
    let fail = |e: io::Error, at: &Path, moved_index: bool| {
        let _ = fs::remove_file(data);
        if let Some((temp, last)) = index {
            let _ = fs::remove_file(if moved_index { last } else { temp });
        }
        Err(Error::io(e, Some(&at.to_string_lossy())))
    };
    if let Some((temp, last)) = index {
        if let Err(e) = rename_file(temp, last, replace) {
            return fail(e, last, false);
        }
    }
    if let Err(e) = rename_file(data, path, replace) {
        return fail(e, path, index.is_some());
    }
    Ok(())
}

/// Writes `"{offset} {length}\n"` into `out` (42 bytes hold any two u64); returns its length.
/// Faster than formatting machinery, which matters at one line per record.
fn index_line(out: &mut [u8; 42], offset: u64, length: u64) -> usize {
    fn digits(mut v: u64, out: &mut [u8]) -> usize {
        let mut tmp = [0u8; 20];
        let mut n = 0;
        loop {
            tmp[n] = b'0' + (v % 10) as u8;
            v /= 10;
            n += 1;
            if v == 0 {
                break;
            }
        }
        for (i, d) in tmp[..n].iter().rev().enumerate() {
            out[i] = *d;
        }
        n
    }
    let a = digits(offset, &mut out[..]);
    out[a] = b' ';
    let b = digits(length, &mut out[a + 1..]);
    out[a + 1 + b] = b'\n';
    a + b + 2
}

/// The index sidecar's name for a data file: `.idx` (per record), or `.gzi` (per member of
/// a seekable gzip file).
pub fn index_path(path: &Path, compression: Compression) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(match compression {
        Compression::None => ".idx",
        _ => ".gzi",
    });
    PathBuf::from(name)
}

fn open_new(path: &Path, atomic: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true);
    if atomic {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    options.open(path)
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
        Self::with_options(
            path,
            WriteOptions {
                compression,
                zlib: ZlibOptions {
                    level,
                    ..ZlibOptions::default()
                },
                atomic,
                index: false,
                member_bytes: None,
                part: false,
            },
        )
    }

    pub fn with_options(path: &str, opts: WriteOptions) -> Result<Self> {
        let final_path = PathBuf::from(path);
        let compression = opts
            .compression
            .or_else(|| Compression::from_extension(&final_path))
            .unwrap_or(Compression::None);
        opts.zlib.check()?;
        if !opts.zlib.is_default() && compression == Compression::None {
            return Err(Error::invalid(
                "zlib options (a compression level...) need compression=\"gzip\" or \"zlib\"",
            ));
        }
        if opts.member_bytes.is_some() && compression != Compression::Gzip {
            return Err(Error::invalid("seekable members need compression=\"gzip\""));
        }
        if opts.index && compression != Compression::None && opts.member_bytes.is_none() {
            return Err(Error::invalid(
                "an index needs an uncompressed file or seekable gzip members",
            ));
        }
        if opts.atomic {
            check_replaceable(&final_path).map_err(|e| Error::io(e, Some(path)))?;
        }
        let target = if opts.atomic {
            temp_name(&final_path, "")
        } else {
            final_path.clone()
        };
        let file = open_new(&target, opts.atomic).map_err(|e| Error::io(e, Some(path)))?;
        let index = if opts.index {
            let idx_final = index_path(&final_path, compression);
            let idx_target = if opts.atomic {
                temp_name(&final_path, ".idx")
            } else {
                idx_final
            };
            match open_new(&idx_target, opts.atomic) {
                Ok(f) => Some(IndexSidecar {
                    out: BufWriter::new(f),
                    path: idx_target,
                }),
                Err(e) => {
                    if opts.atomic {
                        let _ = fs::remove_file(&target);
                    }
                    return Err(Error::io(e, Some(path)));
                }
            }
        } else {
            None
        };
        let buffered = BufWriter::with_capacity(
            1 << 18,
            Checksummed {
                file,
                bytes: 0,
                crc: Crc32c::default(),
            },
        );
        let sink = match compression {
            Compression::None => Sink::Plain(buffered),
            Compression::Gzip => Sink::Deflate(Deflater::new(buffered, true, &opts.zlib)),
            Compression::Zlib => Sink::Deflate(Deflater::new(buffered, false, &opts.zlib)),
        };
        Ok(RecordWriter {
            sink: Some(sink),
            path: final_path,
            temp: opts.atomic.then_some(target),
            compression,
            records: 0,
            position: 0,
            index,
            finished: None,
            member_bytes: opts.member_bytes,
            member: Member::default(),
            part: opts.part,
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

    /// What the file holds, once finished or closed.
    pub fn finished(&self) -> Option<&Finished> {
        self.finished.as_ref()
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

    fn note_record(&mut self, len: u64) -> Result<()> {
        let framed = len + 16;
        if self.member_bytes.is_none() {
            if let Some(idx) = self.index.as_mut() {
                let mut line = [0u8; 42];
                let n = index_line(&mut line, self.position, framed);
                if let Err(e) = idx.out.write_all(&line[..n]) {
                    return Err(self.io_err(e));
                }
            }
        }
        self.position += framed;
        self.records += 1;
        Ok(())
    }

    /// Seekable gzip: ends the current member, if full, so that the next record starts a
    /// new one.
    fn next_member_if_full(&mut self) -> Result<()> {
        let Some(limit) = self.member_bytes else {
            return Ok(());
        };
        if self.position - self.member.uncompressed_start < limit {
            return Ok(());
        }
        let Some(Sink::Deflate(encoder)) = self.sink.as_mut() else {
            return Err(Error::invalid("the writer is closed"));
        };
        if let Err(e) = encoder.end_stream() {
            return Err(self.io_err(e));
        }
        let buffered = encoder.get_ref();
        let end = buffered.get_ref().bytes + buffered.buffer().len() as u64;
        self.end_member(end)
    }

    /// Notes the member that ends at compressed offset `end` in the index; starts the next.
    fn end_member(&mut self, end: u64) -> Result<()> {
        let m = self.member;
        if let Some(idx) = self.index.as_mut() {
            let line = writeln!(
                idx.out,
                "{} {} {} {}",
                m.compressed_start,
                end - m.compressed_start,
                m.first_record,
                self.records - m.first_record
            );
            if let Err(e) = line {
                return Err(self.io_err(e));
            }
        }
        self.member = Member {
            compressed_start: end,
            uncompressed_start: self.position,
            first_record: self.records,
        };
        Ok(())
    }

    /// Writes one record.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.next_member_if_full()?;
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
        self.note_record(data.len() as u64)
    }

    /// Writes bytes that hold whole framed records (as [`frame_record`] makes them).
    pub fn write_framed(&mut self, framed: &[u8]) -> Result<()> {
        if self.member_bytes.is_some() {
            // Record by record, so that members end between records.
            let mut at = 0;
            while at + 8 <= framed.len() {
                let len = u64::from_le_bytes(framed[at..at + 8].try_into().unwrap()) as usize;
                self.next_member_if_full()?;
                let res = self.sink()?.write_all(&framed[at..at + 16 + len]);
                res.map_err(|e| self.io_err(e))?;
                self.note_record(len as u64)?;
                at += 16 + len;
            }
            return Ok(());
        }
        let res = self.sink()?.write_all(framed);
        res.map_err(|e| self.io_err(e))?;
        let mut at = 0;
        while at + 8 <= framed.len() {
            let len = u64::from_le_bytes(framed[at..at + 8].try_into().unwrap());
            self.note_record(len)?;
            at += 16 + len as usize;
        }
        Ok(())
    }

    /// Pushes everything written so far through the compressor to the operating system.
    pub fn flush(&mut self) -> Result<()> {
        let res = self.sink()?.flush();
        res.map_err(|e| self.io_err(e))?;
        if let Some(idx) = self.index.as_mut() {
            if let Err(e) = idx.out.flush() {
                return Err(self.io_err(e));
            }
        }
        Ok(())
    }

    /// Finishes the stream and syncs it (and its index) to disk, leaving the files where
    /// they are: under their temporary names when atomic. The caller renames them.
    pub fn finish(&mut self) -> Result<Finished> {
        if let Some(f) = &self.finished {
            return Ok(f.clone());
        }
        let Some(sink) = self.sink.take() else {
            return Err(Error::invalid("the writer was aborted"));
        };
        let done = sink.finish().and_then(|c| {
            c.file.sync_all()?;
            Ok((c.bytes, c.crc.value()))
        });
        if let (Ok((bytes, _)), Some(_)) = (&done, self.member_bytes) {
            if let Err(e) = self.end_member(*bytes) {
                let idx = self.index.take().map(|i| i.path);
                self.remove_temps(idx);
                return Err(e);
            }
        }
        let index = self.index.take().map(|idx| {
            let synced = idx
                .out
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all());
            (idx.path, synced)
        });
        let (bytes, crc32c) = match done {
            Ok(v) => v,
            Err(e) => {
                self.remove_temps(index.map(|i| i.0));
                return Err(self.io_err(e));
            }
        };
        let index = match index {
            Some((p, Ok(()))) => Some(p),
            Some((p, Err(e))) => {
                self.remove_temps(Some(p));
                return Err(self.io_err(e));
            }
            None => None,
        };
        let finished = Finished {
            data: self.current_path().to_path_buf(),
            index,
            records: self.records,
            bytes,
            crc32c,
        };
        self.finished = Some(finished.clone());
        Ok(finished)
    }

    /// Finishes the stream, syncs it to disk and moves it (and its index) to the final name.
    pub fn close(&mut self) -> Result<()> {
        if self.sink.is_none() && self.finished.is_none() {
            return Ok(());
        }
        let finished = self.finish()?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        if let Some(idx) = &finished.index {
            if let Err(e) = rename_file(idx, &index_path(&self.path, self.compression), true) {
                self.remove_temps(Some(idx.clone()));
                let _ = fs::remove_file(&temp);
                return Err(self.io_err(e));
            }
        }
        if let Err(e) = rename_file(&temp, &self.path, true) {
            let _ = fs::remove_file(&temp);
            return Err(self.io_err(e));
        }
        if let Some(f) = self.finished.as_mut() {
            f.data = self.path.clone();
            f.index = f
                .index
                .as_ref()
                .map(|_| index_path(&self.path, self.compression));
        }
        Ok(())
    }

    /// Stops writing and removes the temporary files; nothing appears under the final name.
    pub fn abort(&mut self) {
        self.sink = None;
        let idx = self
            .index
            .take()
            .map(|i| i.path)
            .or_else(|| self.finished.as_ref().and_then(|f| f.index.clone()));
        self.finished = None;
        self.remove_temps(idx);
    }

    fn remove_temps(&mut self, index: Option<PathBuf>) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
            if let Some(idx) = index {
                let _ = fs::remove_file(idx);
            }
        }
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        if self.sink.is_some() {
            if self.part {
                self.abort();
            } else {
                let _ = self.close();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{commit_shard, index_line, rename_file};
    use std::fs;
    use std::io::ErrorKind;

    #[test]
    fn a_no_replace_rename_leaves_an_existing_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&a, "mine").unwrap();
        fs::write(&b, "theirs").unwrap();
        let err = rename_file(&a, &b, false).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&a).unwrap(), "mine");
        assert_eq!(fs::read_to_string(&b).unwrap(), "theirs");
        rename_file(&a, &b, true).unwrap();
        assert_eq!(fs::read_to_string(&b).unwrap(), "mine");
        assert!(!a.exists());
        let c = dir.path().join("c");
        rename_file(&b, &c, false).unwrap();
        assert_eq!(fs::read_to_string(&c).unwrap(), "mine");
        assert!(!b.exists());
    }

    #[test]
    fn a_part_dropped_before_it_is_finished_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-00000-of-00000.tfrecord");
        let opts = |part| super::WriteOptions {
            atomic: true,
            index: true,
            part,
            ..super::WriteOptions::default()
        };
        let mut w = super::RecordWriter::with_options(path.to_str().unwrap(), opts(true)).unwrap();
        w.write(b"a record").unwrap();
        drop(w);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        // A file of its own is closed when dropped, as before.
        let mut w = super::RecordWriter::with_options(path.to_str().unwrap(), opts(false)).unwrap();
        w.write(b"a record").unwrap();
        drop(w);
        assert!(path.exists());
    }

    #[test]
    fn a_finished_file_never_replaces_a_directory_or_a_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let (a, sub) = (dir.path().join("a"), dir.path().join("sub"));
        fs::write(&a, "mine").unwrap();
        fs::create_dir(&sub).unwrap();
        let err = rename_file(&a, &sub, true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
        assert!(err.to_string().starts_with("a directory is there"), "{err}");
        assert!(sub.is_dir() && a.exists());
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::FileTypeExt;
            let pipe = std::path::PathBuf::from(crate::local::tests::named_pipe(dir.path()));
            let err = super::RecordWriter::create(pipe.to_str().unwrap(), None, None, true)
                .err()
                .unwrap();
            assert!(err.to_string().contains("a named pipe is there"), "{err}");
            assert!(fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo());
            assert_eq!(
                fs::read_dir(dir.path()).unwrap().count(),
                3,
                "no temporary left"
            );
        }
    }

    #[test]
    fn a_failed_commit_removes_only_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        fs::write(p(".data"), "data").unwrap();
        fs::write(p(".index"), "index").unwrap();
        fs::write(p("shard"), "theirs").unwrap();
        let e = commit_shard(
            &p(".data"),
            Some((&p(".index"), &p("shard.idx"))),
            &p("shard"),
            false,
        )
        .unwrap_err();
        assert_eq!(e.io_kind(), Some(ErrorKind::AlreadyExists));
        assert_eq!(e.path.as_deref(), Some(p("shard").to_str().unwrap()));
        assert_eq!(fs::read_to_string(p("shard")).unwrap(), "theirs");
        for gone in [".data", ".index", "shard.idx"] {
            assert!(!p(gone).exists(), "{gone}");
        }
        fs::write(p(".data"), "data").unwrap();
        fs::write(p(".index"), "index").unwrap();
        commit_shard(
            &p(".data"),
            Some((&p(".index"), &p("new.idx"))),
            &p("new"),
            false,
        )
        .unwrap();
        assert_eq!(fs::read_to_string(p("new")).unwrap(), "data");
        assert_eq!(fs::read_to_string(p("new.idx")).unwrap(), "index");
    }

    #[test]
    fn index_lines_match_formatting() {
        for (a, b) in [(0, 16), (7, 123_456), (u64::MAX, u64::MAX), (10, 100)] {
            let mut buf = [0u8; 42];
            let n = index_line(&mut buf, a, b);
            assert_eq!(&buf[..n], format!("{a} {b}\n").as_bytes());
        }
    }
}
