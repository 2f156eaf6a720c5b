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
    let file = open_local(path).map_err(|e| Error::io(e, Some(path)))?;
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

/// Opens `path` to read. A named pipe is opened without waiting for its writer and then
/// waited on, until its first bytes come or its writer closes it, in `poll`, which wakes
/// to ask whether to give up (see [`crate::cancel`]): a blocking `open` of a pipe would
/// wait past Ctrl-C for a writer that may never come.
#[cfg(target_os = "linux")]
fn open_local(path: &str) -> io::Result<File> {
    use std::fs::OpenOptions;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let fd = file.as_raw_fd();
    if file.metadata()?.file_type().is_fifo() {
        let mut wait = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let tick = crate::cancel::TICK.as_millis() as libc::c_int;
        loop {
            // SAFETY: `wait` is one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut wait, 1, tick) };
            if ready > 0 {
                break;
            }
            let err = io::Error::last_os_error();
            if ready < 0 && err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
            if crate::cancel::interrupted() {
                return Err(crate::error::given_up());
            }
        }
    }
    // Reads block as a plain open's would.
    // SAFETY: `fd` is open and owned by `file`; F_GETFL and F_SETFL take no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

#[cfg(not(target_os = "linux"))]
fn open_local(path: &str) -> io::Result<File> {
    File::open(path)
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

#[cfg(all(test, target_os = "linux"))]
pub(crate) mod tests {
    use super::*;
    use std::ffi::CString;
    use std::fs::OpenOptions;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Makes a named pipe `pipe` in `dir`; returns its path.
    pub(crate) fn named_pipe(dir: &Path) -> String {
        let pipe = dir.join("pipe").to_str().unwrap().to_owned();
        let c = CString::new(pipe.as_str()).unwrap();
        // SAFETY: a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        pipe
    }

    /// Runs `open` on a thread of its own: a reader that blocks fails the test, not the run.
    fn open_within<T: Send + 'static>(open: impl FnOnce() -> T + Send + 'static) -> T {
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || done.send(open()));
        result
            .recv_timeout(Duration::from_secs(20))
            .expect("open blocked")
    }

    #[test]
    fn a_pipe_whose_writer_has_gone_is_read_from_what_it_left() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = named_pipe(dir.path());
        // One read end held open (as the command line holds one) keeps the written bytes
        // after the writer closes; the reader's own open comes after that close.
        let held = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&pipe)
            .unwrap();
        let mut framed = Vec::new();
        for data in [&b"one"[..], b"two"] {
            crate::writer::frame_record(data, &mut framed);
        }
        OpenOptions::new()
            .write(true)
            .open(&pipe)
            .unwrap()
            .write_all(&framed)
            .unwrap();
        let records = open_within(move || {
            let mut reader = FileRecordReader::open(&pipe, &ReadOptions::default()).unwrap();
            let mut records = Vec::new();
            while let Some(record) = reader.next_record().unwrap() {
                records.push(record.to_vec());
            }
            records
        });
        assert_eq!(records, [b"one".to_vec(), b"two".to_vec()]);
        drop(held);
    }

    #[test]
    fn waiting_for_a_pipes_writer_ends_when_the_work_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = named_pipe(dir.path());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let waiting = std::thread::spawn(move || {
            crate::cancel::stop_on(&flag);
            FileRecordReader::open(&pipe, &ReadOptions::default()).err()
        });
        std::thread::sleep(crate::cancel::TICK);
        assert!(
            !waiting.is_finished(),
            "no writer came, and the wait goes on"
        );
        stop.store(true, Ordering::Relaxed);
        let err = open_within(move || waiting.join().unwrap()).expect("no writer came");
        assert_eq!(err.io_kind(), Some(io::ErrorKind::Interrupted), "{err}");
        assert!(err.path.as_deref().unwrap().ends_with("pipe"));
    }
}
