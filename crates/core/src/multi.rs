//! Reading whole files in order: several files as one stream of batches, a file's record
//! count, and the positions of its records (its `.idx` sidecar).

use crate::batch::{Origins, RecordBatch};
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::reader::{Next, ReadOptions, Span};
use crate::source::{SharedOpener, SourceReader};

/// Makes the buffers large records are read into, one per record (a Python `bytes` each,
/// say), so that their bytes are copied once, from the stream to where they are used.
pub trait LargeRecords {
    /// A buffer of exactly `len` bytes for the next large record.
    fn buffer(&mut self, len: usize) -> Result<&mut [u8]>;
    /// The record last given a buffer failed to read: drop its buffer.
    fn discard(&mut self);
    /// Whether a large record ends its batch, so that large records are handed out one
    /// at a time (each then takes the memory the one before it gave back).
    fn ends_batch(&self) -> bool {
        false
    }
    /// Whether the next large record, of `len` bytes, is left unread instead: the batch
    /// ends before it (noted in `RecordBatch::before_large`), for a reader that has
    /// buffers of its own to take it, or for the next batch to start with it.
    fn leaves(&self, _len: usize) -> bool {
        false
    }
}

/// Records read one at a time by [`MultiFileReader::read_each_into`]: each large record
/// into a buffer of its own ([`LargeRecords::buffer`]), then every record handed over.
pub trait EachRecord: LargeRecords {
    /// The record just read: `Some` of a small one, `None` for a large one, whose bytes
    /// now fill all of the last buffer given.
    fn record(&mut self, small: Option<&[u8]>) -> Result<()>;
}

/// Large records read into buffers of their own, one per record, made to its exact size
/// (never zeroed, never grown), then kept in the batch they were read for (see
/// [`RecordBatch::push_held`]): one copy each, from the stream to the buffer handed on.
struct HeldBuffers {
    /// Each buffer made, with the length of its record.
    made: Vec<(Vec<u8>, usize)>,
    /// A record longer than this is left unread: the batch ends before it.
    leave_over: usize,
}

impl LargeRecords for HeldBuffers {
    fn buffer(&mut self, len: usize) -> Result<&mut [u8]> {
        let mut buf = record_buffer(len)?;
        let at = buf.as_mut_ptr();
        self.made.push((buf, len));
        // SAFETY: `record_buffer` made room for `len` bytes, which the reader only writes;
        // they are counted in (`keep_in`) only once a read filled them.
        Ok(unsafe { std::slice::from_raw_parts_mut(at, len) })
    }

    fn discard(&mut self) {
        self.made.pop();
    }

    fn leaves(&self, len: usize) -> bool {
        len > self.leave_over
    }
}

impl HeldBuffers {
    fn new(leave_over: usize) -> Self {
        HeldBuffers {
            made: Vec::new(),
            leave_over,
        }
    }

    /// Moves the records read into these buffers (the last of `out.large`) into `out`'s
    /// held records.
    fn keep_in(self, out: &mut RecordBatch) {
        let from = out.large.len() - self.made.len();
        for (&i, (mut buf, len)) in out.large[from..].iter().zip(self.made) {
            // SAFETY: every buffer left in `made` was filled by a read that succeeded.
            unsafe { buf.set_len(len) };
            out.large_bytes -= len;
            out.held_bytes += len;
            out.held.push((i, buf));
        }
        out.large.truncate(from);
    }
}

/// An empty buffer with room for a record of exactly `len` bytes, which the stream
/// vouched for: an error, not an abort, when there is no memory for it.
pub(crate) fn record_buffer(len: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| {
        let why = format!("no memory for a record of {len} bytes");
        Error::io(
            std::io::Error::new(std::io::ErrorKind::OutOfMemory, why),
            None,
        )
    })?;
    Ok(buf)
}

/// One buffer that every large record is read into, in turn.
struct Scratch {
    buf: Vec<u8>,
    /// The length of the record in it.
    len: usize,
}

impl LargeRecords for Scratch {
    fn buffer(&mut self, len: usize) -> Result<&mut [u8]> {
        if self.buf.len() < len {
            // Grown to the largest record so far and kept: filled again, never zeroed again.
            self.buf.resize(len, 0);
        }
        self.len = len;
        Ok(&mut self.buf[..len])
    }

    fn discard(&mut self) {
        self.len = 0;
    }
}

/// [`MultiFileReader::read_each`]'s records, large ones read into one buffer in turn.
struct EachInScratch<'f> {
    scratch: Scratch,
    each: &'f mut dyn FnMut(&[u8]) -> Result<()>,
}

impl LargeRecords for EachInScratch<'_> {
    fn buffer(&mut self, len: usize) -> Result<&mut [u8]> {
        self.scratch.buffer(len)
    }

    fn discard(&mut self) {
        self.scratch.discard()
    }
}

impl EachRecord for EachInScratch<'_> {
    fn record(&mut self, small: Option<&[u8]>) -> Result<()> {
        match small {
            Some(record) => (self.each)(record),
            None => (self.each)(&self.scratch.buf[..self.scratch.len]),
        }
    }
}

/// Reads the records of several files in order, in batches.
pub struct MultiFileReader {
    paths: Vec<String>,
    opts: ReadOptions,
    opener: SharedOpener,
    /// For each path, the span of its records to read; whole files when empty.
    spans: Vec<Option<Span>>,
    next_file: usize,
    current: Option<SourceReader>,
    pending: Option<Error>,
    /// The buffer [`MultiFileReader::read_each`] reads each large record into.
    scratch: Vec<u8>,
    /// Records delivered from each file so far.
    delivered: Vec<u64>,
    /// Where the records of the last batch came from.
    origins: Origins,
}

impl MultiFileReader {
    /// Reads `paths` in order; those `opener` claims (URLs) through it.
    pub fn new(paths: Vec<String>, opts: ReadOptions, opener: SharedOpener) -> Self {
        MultiFileReader {
            paths,
            opts,
            opener,
            spans: Vec::new(),
            next_file: 0,
            current: None,
            pending: None,
            scratch: Vec::new(),
            delivered: Vec::new(),
            origins: Origins::default(),
        }
    }

    /// Reads only `spans[i]` of path `i` where it is given (as many spans as paths).
    pub fn with_spans(mut self, spans: Vec<Option<Span>>) -> Result<Self> {
        if spans.len() != self.paths.len() {
            let msg = format!("{} spans for {} paths", spans.len(), self.paths.len());
            return Err(Error::invalid(msg));
        }
        self.spans = spans;
        Ok(self)
    }

    /// The file, the index within it and the byte offset of record `i` of the last batch
    /// read: what locates an error found later in that batch (when it is parsed, say).
    pub fn origin_in_batch(&self, i: u64) -> Option<(&str, u64, u64)> {
        self.origins.get(&self.paths, i)
    }

    /// The paths read, in order.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Where the records of the last batch came from.
    pub fn batch_located(&self) -> &Origins {
        &self.origins
    }

    /// How many files have been opened so far.
    pub fn opened(&self) -> usize {
        self.delivered.len()
    }

    /// `(path, records delivered)` for every file opened so far.
    pub fn delivered(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.paths
            .iter()
            .map(String::as_str)
            .zip(self.delivered.iter().copied())
    }

    /// Appends up to `max_records` records (stopping early past `max_bytes`) to `out`.
    /// Records of at least [`DIRECT_MIN`](crate::reader::DIRECT_MIN) bytes are read into
    /// buffers of their own and kept there (see [`RecordBatch::push_held`]).
    ///
    /// An error met after some records were read is returned by the next call, so no record
    /// is lost. After an error the reader has moved on: past the one damaged record when
    /// the error is `resumable`, otherwise to the next file. Leaves `out` empty at the end.
    pub fn read_batch(
        &mut self,
        out: &mut RecordBatch,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<()> {
        self.read_batch_until(out, max_records, max_bytes, usize::MAX)
    }

    /// As [`MultiFileReader::read_batch`], except that the batch ends before a record of
    /// more than `over` bytes, left unread (`out.before_large`) for the caller to read in
    /// place: before every record of at least [`DIRECT_MIN`](crate::reader::DIRECT_MIN)
    /// bytes when `over` is smaller than that.
    pub fn read_batch_until(
        &mut self,
        out: &mut RecordBatch,
        max_records: usize,
        max_bytes: usize,
        over: usize,
    ) -> Result<()> {
        let mut held = HeldBuffers::new(over);
        let read = self.read_batch_with(out, max_records, max_bytes, Some(&mut held));
        held.keep_in(out);
        read
    }

    /// As [`MultiFileReader::read_batch`], adding to the records already in `out` up to
    /// the same bounds; with `large`, records of at least
    /// [`DIRECT_MIN`](crate::reader::DIRECT_MIN) bytes are read straight into buffers
    /// `large` makes, one per record (noted in `out.large`), instead of `out.data`.
    pub fn read_batch_with(
        &mut self,
        out: &mut RecordBatch,
        max_records: usize,
        max_bytes: usize,
        mut large: Option<&mut dyn LargeRecords>,
    ) -> Result<()> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if out.is_empty() {
            // The origins are those of `out`'s records: a call that adds to a batch adds to
            // them.
            self.origins.clear();
        }
        while out.len() < max_records && out.bytes() + out.large_bytes < max_bytes {
            if self.current.is_none() {
                if self.next_file == self.paths.len() {
                    break;
                }
                let path = &self.paths[self.next_file];
                let span = self.spans.get(self.next_file).copied().flatten();
                self.next_file += 1;
                self.delivered.push(0);
                match SourceReader::open(path, &self.opts, &self.opener, span) {
                    Ok(r) => self.current = Some(r),
                    Err(e) => return self.defer(out, e),
                }
            }
            let reader = self.current.as_mut().expect("a file is open");
            let (index, offset) = reader.position();
            let span = self.spans.get(self.next_file - 1).copied().flatten();
            if span.is_some_and(|s| offset >= s.end) {
                self.current = None;
                continue;
            }
            let got = match reader.next_or_large(&mut out.data, large.is_some()) {
                Ok(Next::Large(len))
                    if large.as_deref().is_some_and(|l| l.leaves(len as usize)) =>
                {
                    out.before_large = true;
                    break;
                }
                Ok(Next::Large(len)) => {
                    let sink = large.as_deref_mut().expect("claimed only with a sink");
                    let read = match sink.buffer(len as usize) {
                        Ok(dst) => reader.read_large(len, dst),
                        Err(e) => return self.defer(out, e),
                    };
                    match read {
                        Ok(()) => {
                            out.large.push(out.ends.len());
                            out.large_bytes += len as usize;
                            Ok(true)
                        }
                        Err(e) => {
                            sink.discard();
                            Err(e)
                        }
                    }
                }
                Ok(found) => Ok(found == Next::Appended),
                Err(e) => Err(e),
            };
            match got {
                Ok(true) => {
                    out.ends.push(out.data.len());
                    let file = self.next_file - 1;
                    self.delivered[file] += 1;
                    self.origins.push(file, index, offset);
                    let ends = large.as_deref().is_some_and(|l| l.ends_batch());
                    if ends && out.large.last() == Some(&(out.len() - 1)) {
                        break;
                    }
                }
                // The last file of a followed set stays open, waiting for more.
                Ok(false) if self.opts.follow && self.next_file == self.paths.len() => break,
                Ok(false) => self.current = None,
                Err(e) => {
                    if !e.resumable {
                        self.current = None;
                    }
                    return self.defer(out, e);
                }
            }
        }
        Ok(())
    }

    /// Reads records one at a time, each into one buffer that is used again for the next,
    /// and hands each to `each` while it is still in cache: a batch of large records is
    /// then read from memory once, where gathering it first would read it twice. Stops at
    /// `max_records` records or past `max_bytes`, counting those already in `out`; the
    /// records read here are counted in `out` (its runs locate them), their bytes not
    /// kept. Errors as for [`MultiFileReader::read_batch`]; an error of `each` is returned
    /// as it is, after the record was counted.
    pub fn read_each(
        &mut self,
        out: &mut RecordBatch,
        max_records: usize,
        max_bytes: usize,
        each: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut sink = EachInScratch {
            scratch: Scratch {
                buf: std::mem::take(&mut self.scratch),
                len: 0,
            },
            each,
        };
        let result = self.read_each_into(out, max_records, max_bytes, &mut sink);
        self.scratch = sink.scratch.buf;
        result
    }

    /// As [`MultiFileReader::read_each`], with the buffers for large records made by
    /// `sink`, which is handed every record.
    pub fn read_each_into(
        &mut self,
        out: &mut RecordBatch,
        max_records: usize,
        max_bytes: usize,
        sink: &mut dyn EachRecord,
    ) -> Result<()> {
        let mut bytes = out.data.len() + out.large_bytes;
        loop {
            let before = out.len();
            if before >= max_records || bytes >= max_bytes {
                return Ok(());
            }
            let start = out.data.len();
            let large_before = out.large_bytes;
            self.read_batch_with(out, before + 1, usize::MAX, Some(&mut *sink))?;
            if out.len() == before {
                // The end, or an error kept for the next call.
                return Ok(());
            }
            let handed = if out.large.last() == Some(&before) {
                // Counted, not kept: the record reads as empty from `out`.
                bytes += out.large_bytes - large_before;
                out.large.pop();
                out.large_bytes = large_before;
                sink.record(None)
            } else {
                bytes += out.data.len() - start;
                let handed = sink.record(Some(&out.data[start..]));
                out.data.truncate(start);
                handed
            };
            *out.ends.last_mut().expect("the record just read") = start;
            handed?;
        }
    }

    fn defer(&mut self, out: &RecordBatch, e: Error) -> Result<()> {
        if out.is_empty() {
            Err(e)
        } else {
            self.pending = Some(e);
            Ok(())
        }
    }
}

/// Counts the records of one file (length CRCs checked, data CRCs not); `opener` opens
/// it when it is a URL.
pub fn count_records(
    path: &str,
    compression: Option<Compression>,
    opener: &SharedOpener,
) -> Result<u64> {
    let opts = ReadOptions {
        compression,
        verify: false,
        ..ReadOptions::default()
    };
    let mut reader = SourceReader::open(path, &opts, opener, None)?;
    let mut n = 0;
    let mut scratch = Vec::new();
    while reader.next_into(&mut scratch)? {
        scratch.clear();
        n += 1;
    }
    Ok(n)
}

/// The numbers of an index sidecar's text (`offset length` per record in an `.idx`,
/// `offset length first records` per gzip member in a `.gzi`), row by row, `columns` to
/// a row, separated by ASCII whitespace. What is not a table of non-negative numbers is a
/// `DataLoss` error saying what is wrong. The table grows with the text read, never with
/// what the text claims.
pub fn parse_index_table(text: &[u8], columns: usize) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(text.len() / 4);
    for field in text
        .split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty())
    {
        let number = match field {
            [b'-', rest @ ..] if !rest.is_empty() && rest.iter().all(u8::is_ascii_digit) => {
                return Err(Error::data_loss("index holds negative numbers"))
            }
            _ if field.iter().all(u8::is_ascii_digit) => std::str::from_utf8(field)
                .ok()
                .and_then(|f| f.parse::<i64>().ok()),
            _ => None,
        };
        match number {
            Some(n) => out.push(n),
            None => return Err(Error::data_loss("index holds something other than numbers")),
        }
    }
    if columns == 0 || out.len() % columns != 0 {
        return Err(Error::data_loss(format!(
            "index has a partial line ({} fields)",
            out.len()
        )));
    }
    Ok(out)
}

/// The `(offset, framed length)` of every record of an uncompressed file, checksums
/// checked: the content of its `.idx` sidecar. `opener` opens it when it is a URL.
pub fn index_records(path: &str, opener: &SharedOpener) -> Result<Vec<(u64, u64)>> {
    let opts = ReadOptions {
        compression: Some(Compression::None),
        ..ReadOptions::default()
    };
    let mut reader = SourceReader::open(path, &opts, opener, None)?;
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    loop {
        let (_, at) = reader.position();
        scratch.clear();
        if !reader.next_into(&mut scratch)? {
            return Ok(out);
        }
        out.push((at, scratch.len() as u64 + 16));
    }
}

#[cfg(test)]
mod index_table_tests {
    use super::parse_index_table;

    #[test]
    fn an_index_is_read_as_a_table_of_numbers_or_refused() {
        assert_eq!(
            parse_index_table(b"0 25\n25 30\r\n 55\t7\n", 2).unwrap(),
            vec![0i64, 25, 25, 30, 55, 7]
        );
        assert_eq!(parse_index_table(b"", 2).unwrap(), Vec::<i64>::new());
        for (text, why) in [
            (&b"0 25\n25"[..], "partial line (3 fields)"),
            (b"0 x\n", "other than numbers"),
            (b"0 1e3\n", "other than numbers"),
            (b"0 +3\n", "other than numbers"),
            (b"0 -\n", "other than numbers"),
            (b"0 99999999999999999999\n", "other than numbers"),
            (b"0 -3\n", "negative numbers"),
        ] {
            let err = parse_index_table(text, 2).unwrap_err();
            assert!(err.message.contains(why), "{:?}: {}", text, err.message);
        }
    }
}
