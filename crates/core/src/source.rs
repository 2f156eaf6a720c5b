//! Where records are read from: local files natively, anything else (object-store URLs)
//! through an [`Opener`], streamed in large blocks fetched ahead on their own thread.

use std::io::{self, Cursor, Read};
use std::path::Path;
use std::sync::Arc;
use std::thread;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::compression::Compression;
use crate::error::Result;
use crate::local::{span_options, FileRecordReader};
use crate::reader::{Next, ReadOptions, RecordReader, Span};

/// Bytes asked of a remote stream per read: one ranged request each.
pub const REMOTE_BLOCK: usize = 4 << 20;
/// Blocks fetched ahead of the reader per remote stream.
pub const REMOTE_AHEAD: usize = 2;

/// A byte stream opened by an [`Opener`], and its size when known.
pub struct Opened {
    pub stream: Box<dyn Read + Send>,
    pub size: Option<u64>,
}

/// Opens paths that are not local files (URLs), as byte streams.
pub trait Opener: Send + Sync {
    /// `None` when `path` is a local file, to be read natively. The stream starts at byte
    /// `offset` of the file; `size` is the whole file's.
    fn open(&self, path: &str, offset: u64) -> Option<Result<Opened>>;
}

/// A shared opener, or none (every path local).
pub type SharedOpener = Option<Arc<dyn Opener>>;

type StreamRecords = RecordReader<io::Chain<Cursor<Vec<u8>>, ReadAhead>>;

/// Records of one file, local or opened through an [`Opener`].
pub enum SourceReader {
    Local(FileRecordReader),
    Stream(StreamRecords),
}

impl SourceReader {
    /// Opens `path`, or only its `span` of records: through `opener` when it claims the
    /// path, natively otherwise.
    pub fn open(
        path: &str,
        opts: &ReadOptions,
        opener: &SharedOpener,
        span: Option<Span>,
    ) -> Result<SourceReader> {
        if let Some(opener) = opener {
            let offset = span.map_or(0, |s| s.start);
            if let Some(opened) = opener.open(path, offset) {
                let Opened { stream, size } = opened.map_err(|e| e.with_path(path))?;
                let stream = ReadAhead::new(stream, REMOTE_BLOCK, REMOTE_AHEAD);
                let Some(span) = span else {
                    return RecordReader::from_stream(stream, path, size, opts)
                        .map(SourceReader::Stream);
                };
                // The middle of a file says nothing of its compression: its name must.
                let named = Compression::resolve(opts.compression, Path::new(path), &[]);
                let opts = span_options(path, opts, named, span, size)?;
                let mut reader = RecordReader::from_stream(stream, path, size, &opts)?;
                reader.start_at(span);
                return Ok(SourceReader::Stream(reader));
            }
        }
        match span {
            Some(span) => FileRecordReader::open_span(path, opts, span),
            None => FileRecordReader::open(path, opts),
        }
        .map(SourceReader::Local)
    }

    /// Appends the next record to `out`; `false` at the end.
    pub fn next_into(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        match self {
            SourceReader::Local(r) => r.next_record_into(out),
            SourceReader::Stream(r) => r.next_record_into(out),
        }
    }

    /// As [`RecordReader::next_record_or_large`].
    pub fn next_or_large(&mut self, out: &mut Vec<u8>, claim: bool) -> Result<Next> {
        match self {
            SourceReader::Local(r) => r.next_record_or_large(out, claim),
            SourceReader::Stream(r) => r.next_record_or_large(out, claim),
        }
    }

    /// As [`RecordReader::read_large`].
    pub fn read_large(&mut self, len: u64, dst: &mut [u8]) -> Result<()> {
        match self {
            SourceReader::Local(r) => r.read_large(len, dst),
            SourceReader::Stream(r) => r.read_large(len, dst),
        }
    }

    /// The index and byte offset of the next record.
    pub fn position(&self) -> (u64, u64) {
        match self {
            SourceReader::Local(r) => (r.record_index(), r.offset()),
            SourceReader::Stream(r) => (r.record_index(), r.offset()),
        }
    }

    pub fn path(&self) -> &str {
        match self {
            SourceReader::Local(r) => r.path(),
            SourceReader::Stream(r) => r.path(),
        }
    }
}

/// Reads a stream in blocks of `block` bytes on a thread of its own, up to `ahead` blocks
/// before the consumer, so that fetching overlaps whatever the consumer does with the
/// bytes. Memory stays at most `ahead + 2` blocks. Dropping it stops the thread after the
/// read in progress.
pub struct ReadAhead {
    blocks: Receiver<io::Result<Vec<u8>>>,
    spent: Sender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    ended: bool,
}

impl ReadAhead {
    pub fn new(mut inner: Box<dyn Read + Send>, block: usize, ahead: usize) -> ReadAhead {
        let block = block.max(1);
        let (tx, blocks) = bounded(ahead.max(1));
        let (spent, reuse) = bounded::<Vec<u8>>(ahead.max(1) + 1);
        let spawned = thread::Builder::new()
            .name("tfrecordkit-readahead".into())
            .spawn(move || loop {
                let mut buf = reuse.try_recv().unwrap_or_default();
                buf.resize(block, 0);
                let filled =
                    crate::Error::catch("the read-ahead thread", || fill(&mut inner, &mut buf))
                        .unwrap_or_else(|e| Err(io::Error::other(e.message)));
                match filled {
                    Ok(0) => return,
                    Ok(n) => {
                        buf.truncate(n);
                        let last = n < block;
                        if tx.send(Ok(buf)).is_err() || last {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            });
        let blocks = match spawned {
            Ok(_) => blocks,
            Err(e) => {
                let (tx, rx) = bounded(1);
                let _ = tx.send(Err(e));
                rx
            }
        };
        ReadAhead {
            blocks,
            spent,
            current: Vec::new(),
            pos: 0,
            ended: false,
        }
    }
}

/// Reads until `buf` is full or the stream ends; the bytes read.
fn fill(inner: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match inner.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.current.len() {
            if self.ended || out.is_empty() {
                return Ok(0);
            }
            match self.blocks.recv() {
                Ok(Ok(next)) => {
                    let done = std::mem::replace(&mut self.current, next);
                    let _ = self.spent.try_send(done);
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(_) => self.ended = true,
            }
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Hands out a stream in small, uneven pieces, then fails or ends.
    struct Trickle {
        data: Vec<u8>,
        pos: usize,
        fail_at_end: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.pos == self.data.len() {
                if self.fail_at_end {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
                }
                return Ok(0);
            }
            let n = buf
                .len()
                .min(7 + self.pos % 5)
                .min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn trickle(len: usize, fail_at_end: bool) -> (Vec<u8>, Box<dyn Read + Send>) {
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let stream = Trickle {
            data: data.clone(),
            pos: 0,
            fail_at_end,
        };
        (data, Box::new(stream))
    }

    #[test]
    fn read_ahead_gives_back_the_stream_byte_for_byte() {
        for (len, block) in [(0, 16), (1, 16), (16, 16), (1000, 16), (1000, 333), (5, 1)] {
            let (data, stream) = trickle(len, false);
            let mut got = Vec::new();
            ReadAhead::new(stream, block, 2)
                .read_to_end(&mut got)
                .unwrap();
            assert_eq!(got, data, "len {len} block {block}");
        }
    }

    #[test]
    fn read_ahead_passes_on_an_error_after_the_bytes_before_it() {
        let (data, stream) = trickle(100, true);
        let mut r = ReadAhead::new(stream, 64, 2);
        let mut got = Vec::new();
        let err = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(got, data[..64]);
        assert_eq!(r.read(&mut [0; 8]).unwrap(), 0, "nothing after the error");
    }

    /// Counts the bytes taken from an endless stream.
    struct Endless(Arc<AtomicUsize>);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.fetch_add(buf.len(), Ordering::SeqCst);
            Ok(buf.len())
        }
    }

    #[test]
    fn read_ahead_stays_a_few_blocks_ahead_and_stops_when_dropped() {
        let taken = Arc::new(AtomicUsize::new(0));
        let mut r = ReadAhead::new(Box::new(Endless(taken.clone())), 1024, 2);
        let mut first = [0u8; 10];
        r.read_exact(&mut first).unwrap();
        thread::sleep(std::time::Duration::from_millis(50));
        let ahead = taken.load(Ordering::SeqCst);
        assert!(ahead <= 4 * 1024, "fetched {ahead} bytes for 10 read");
        drop(r);
        thread::sleep(std::time::Duration::from_millis(50));
        let after = taken.load(Ordering::SeqCst);
        assert!(
            after <= ahead + 1024,
            "went on fetching after the drop: {after}"
        );
    }
}
