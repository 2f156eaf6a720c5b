//! Reading framed records: `u64 length | u32 masked crc(length) | data | u32 masked crc(data)`.

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;

use crate::compression::{suggest, Compression, Decoder};
use crate::crc::masked_crc32c;
use crate::error::{Error, Result};
use crate::source::{SharedOpener, SourceReader};

/// Header and footer sizes of one framed record.
pub const HEADER_LEN: usize = 12;
pub const FOOTER_LEN: usize = 4;

/// Default largest record the reader accepts (a larger length is reported as data loss).
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 1 << 31;

const CHUNK: usize = 1 << 20;
/// The reader's buffer starts this small and doubles only while a record needs it.
const FIRST_BUFFER: usize = 1 << 16;
/// No record can be longer than memory can address (header and footer included).
const MAX_ADDRESSABLE: u64 = (isize::MAX as u64) - 16;
const HEAD_LEN: usize = 16;
/// How much of a stream's start is looked at to tell another format.
const FOREIGN_SAMPLE: usize = 64;
/// Records at least this long are read straight into the caller's buffer.
const DIRECT_MIN: u64 = 1 << 16;

/// How records are read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// `None` detects the compression from the stream's first bytes and the file name.
    pub compression: Option<Compression>,
    /// Check each record's data CRC. Length CRCs are always checked.
    pub verify: bool,
    pub max_record_bytes: u64,
    /// After damage, scan forward for the next valid record instead of giving up on the
    /// rest of the file.
    pub resync: bool,
    /// The file may still be growing: at its end, a clean end or a torn tail means "no
    /// record yet", not the end or damage; later calls pick up what was appended.
    pub follow: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            compression: None,
            verify: true,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            resync: false,
            follow: false,
        }
    }
}

/// Reads records one at a time from a (possibly compressed) stream.
///
/// Memory stays bounded: the buffer grows only as record bytes actually arrive, so a
/// damaged length can never make it allocate more than the stream holds.
pub struct RecordReader<R: Read> {
    src: Decoder<R>,
    path: String,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    done: bool,
    offset: u64,
    index: u64,
    verify: bool,
    resync: bool,
    follow: bool,
    max_record_bytes: u64,
    total_len: Option<u64>,
    head: Vec<u8>,
    /// While resynchronizing past a failed first header: the error that names the stream's
    /// other format, reported if no record follows.
    foreign: Option<Error>,
}

pub type FileRecordReader = RecordReader<io::Chain<Cursor<Vec<u8>>, File>>;

impl FileRecordReader {
    /// Opens `path`, detecting its compression when `opts.compression` is `None`.
    pub fn open(path: &str, opts: &ReadOptions) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(e, Some(path)))?;
        let meta = file.metadata().map_err(|e| Error::io(e, Some(path)))?;
        if meta.is_dir() {
            return Err(Error::io(
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
                Some(path),
            ));
        }
        let size = (meta.is_file() && !opts.follow).then_some(meta.len());
        RecordReader::from_stream(file, path, size, opts)
    }
}

impl<R: Read> RecordReader<io::Chain<Cursor<Vec<u8>>, R>> {
    /// Reads records from any stream, detecting its compression from its first bytes and
    /// `path` when `opts.compression` is `None`. `size`, when known, bounds the length a
    /// damaged header can claim in an uncompressed stream.
    pub fn from_stream(
        mut inner: R,
        path: &str,
        size: Option<u64>,
        opts: &ReadOptions,
    ) -> Result<Self> {
        let mut head = Vec::with_capacity(HEAD_LEN);
        (&mut inner)
            .take(HEAD_LEN as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::io(e, Some(path)))?;
        // An empty stream holds no records, whatever compression it was meant to have.
        let compression = if head.is_empty() {
            Compression::None
        } else {
            Compression::resolve(opts.compression, Path::new(path), &head)
        };
        let total = size.filter(|_| compression == Compression::None);
        let source = Cursor::new(head.clone()).chain(inner);
        let mut reader = RecordReader::new(source, compression, path, opts);
        reader.total_len = total;
        reader.head = head;
        Ok(reader)
    }
}

impl<R: Read> RecordReader<R> {
    /// Reads records from any stream; `path` names it in errors.
    pub fn new(inner: R, compression: Compression, path: &str, opts: &ReadOptions) -> Self {
        let mut src = Decoder::new(inner, compression);
        src.set_follow(opts.follow);
        RecordReader {
            src,
            path: path.to_owned(),
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            done: false,
            offset: 0,
            index: 0,
            verify: opts.verify,
            resync: opts.resync,
            follow: opts.follow,
            max_record_bytes: opts.max_record_bytes,
            total_len: None,
            head: Vec::new(),
            foreign: None,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn compression(&self) -> Compression {
        self.src.compression()
    }

    /// Offset (in the decompressed stream) of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Index of the next record in this file.
    pub fn record_index(&self) -> u64 {
        self.index
    }

    /// True once the stream has ended or failed for good.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Makes at least `want` bytes available from `start`, unless the stream ends first.
    /// Returns how many are available.
    fn fill(&mut self, want: usize) -> Result<usize> {
        while self.end - self.start < want && !self.eof {
            if self.end == self.buf.len() {
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                } else {
                    // Grow by at most double what already arrived, never to the declared size.
                    let grown = (self.buf.len() * 2)
                        .max(FIRST_BUFFER)
                        .min(want.max(FIRST_BUFFER));
                    self.buf.resize(grown.max(self.buf.len() + 1), 0);
                }
                continue;
            }
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.stream_error(e)),
            }
        }
        Ok(self.end - self.start)
    }

    fn stream_error(&self, e: io::Error) -> Error {
        let compression = self.src.compression();
        if compression == Compression::None || self.src.os_failed() {
            return Error::io(e, Some(&self.path));
        }
        let name = compression.name().to_uppercase();
        let at = self.src.compressed_position();
        let err = if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::truncated(format!("{name} stream ends early: {e}"))
        } else {
            Error::data_loss(format!(
                "corrupt {name} stream near compressed byte {at}: {e}"
            ))
        };
        err.with_offset(at)
    }

    /// Marks the reader finished and locates `err` at the current record.
    fn fail(&mut self, mut err: Error) -> Error {
        self.done = true;
        if self.offset == 0 && err.kind != crate::ErrorKind::Io {
            if let Some(hint) = suggest(self.src.compression(), &self.head) {
                err.message.push_str(&hint);
            }
        }
        err.with_path(&self.path)
            .with_offset(self.offset)
            .with_record(self.index)
    }

    /// Reads and checks the next header, leaving it in the buffer; the record's length, or
    /// `None` at a clean end of stream.
    fn header(&mut self) -> Result<Option<u64>> {
        if self.done {
            return Ok(None);
        }
        if self.follow {
            // Look again at a file that may have grown since the last call.
            self.eof = false;
        }
        let avail = match self.fill(HEADER_LEN) {
            Ok(n) => n,
            Err(e) => return Err(self.fail(e)),
        };
        if avail == 0 {
            self.done = !self.follow;
            return Ok(None);
        }
        if avail < HEADER_LEN && self.follow {
            return Ok(None);
        }
        if avail < HEADER_LEN {
            if let Some(err) = self.foreign() {
                return Err(self.fail(err));
            }
            let msg = format!("truncated record header: {avail} of {HEADER_LEN} bytes");
            return Err(self.fail(Error::truncated(msg)));
        }
        let h = &self.buf[self.start..self.start + HEADER_LEN];
        let len = u64::from_le_bytes(h[..8].try_into().unwrap());
        let len_crc = u32::from_le_bytes(h[8..12].try_into().unwrap());
        if masked_crc32c(&h[..8]) != len_crc {
            self.foreign = self.foreign();
            if !self.resync {
                if let Some(err) = self.foreign.take() {
                    return Err(self.fail(err));
                }
            }
            // Resynchronizing, the stream is called foreign only if no record follows.
            let msg = "record length checksum mismatch (corrupt record header)";
            let err = self.damaged(Error::corrupt(msg), None);
            self.foreign = None;
            return Err(err);
        }
        let max = self.max_record_bytes.min(MAX_ADDRESSABLE);
        if len > max {
            let msg = format!("record length {len} exceeds the maximum of {max} bytes");
            return Err(self.damaged(Error::data_loss(msg), None));
        }
        if let Some(total) = self.total_len {
            let left = total.saturating_sub(self.offset + HEADER_LEN as u64);
            if len > left {
                let msg = format!(
                    "truncated record data: the record declares {len} bytes but only {left} remain"
                );
                return Err(self.damaged(Error::truncated(msg), None));
            }
        }
        Ok(Some(len))
    }

    /// At the very start of a stream whose first header failed, the error that says the
    /// stream is another format, when its first bytes are one.
    fn foreign(&mut self) -> Option<Error> {
        if self.offset != 0 || self.index != 0 {
            return None;
        }
        // Enough of the stream to quote a line of text; a read error is reported later.
        let _ = self.fill(FOREIGN_SAMPLE);
        let what = foreign_format(&self.buf[self.start..self.end])?;
        Some(Error::new(
            crate::ErrorKind::NotTfRecord,
            format!("not a TFRecord file (it starts with {what})"),
        ))
    }

    fn truncated_message(len: u64, data_got: u64, footer_got: usize) -> String {
        if data_got < len {
            format!("truncated record data: {data_got} of {len} bytes")
        } else {
            format!("truncated record footer: {footer_got} of {FOOTER_LEN} bytes")
        }
    }

    /// Moves past a record of `len` data bytes; returns its (offset, index).
    fn advance(&mut self, len: u64) -> (u64, u64) {
        let at = (self.offset, self.index);
        self.offset += len + (HEADER_LEN + FOOTER_LEN) as u64;
        self.index += 1;
        at
    }

    /// The record starting at the buffer's `start` is damaged.
    ///
    /// With `resync`, scans on from the next byte for a record whose length and data
    /// checksums both hold, and reports the bytes skipped (`lost`); the error is resumable.
    /// Without, a record whose length was verified (`skip_len`) is stepped over (resumable),
    /// and any other damage ends the reader.
    fn damaged(&mut self, err: Error, skip_len: Option<u64>) -> Error {
        let (offset, index) = (self.offset, self.index);
        let located =
            |e: Error, path: &str| e.with_path(path).with_offset(offset).with_record(index);
        let skip_exactly = |me: &mut Self, len: u64| {
            let need = HEADER_LEN + len as usize + FOOTER_LEN;
            me.start += need.min(me.end - me.start);
            me.advance(len);
        };
        if !self.resync {
            return match skip_len {
                Some(len) => {
                    skip_exactly(self, len);
                    located(err, &self.path).resumable()
                }
                None => self.fail(err),
            };
        }
        // A record whose length held and after which a valid header (or the end) follows
        // is skipped exactly; anything else sends the reader scanning byte by byte.
        if let Some(len) = skip_len {
            let need = HEADER_LEN + len as usize + FOOTER_LEN;
            match self.valid_at(need, false) {
                Ok(Some(true) | None) => {
                    skip_exactly(self, len);
                    let mut e = located(err, &self.path).resumable();
                    e.lost = Some(Box::new((offset, self.offset)));
                    return e;
                }
                Ok(Some(false)) => {}
                Err(e) => return self.fail(e),
            }
        }
        self.start += 1;
        self.offset += 1;
        match self.scan() {
            Ok(found) => {
                let end = found.unwrap_or(self.offset);
                self.index += 1;
                let foreign = self.foreign.take().filter(|_| found.is_none());
                let plain = foreign.is_some();
                let mut e = located(foreign.unwrap_or(err), &self.path).resumable();
                e.lost = Some(Box::new((offset, end)));
                if plain {
                    return e;
                }
                e.message.push_str(&match found {
                    Some(at) => format!(
                        "; skipped {} bytes to the next valid record at offset {at}",
                        at - offset
                    ),
                    None => format!(
                        "; no valid record follows ({} bytes skipped to the end)",
                        end - offset
                    ),
                });
                e
            }
            Err(e) => self.fail(e),
        }
    }

    /// Whether a record with a valid header (and, with `whole`, valid data) starts `rel`
    /// bytes after `start`; `None` if the stream ends exactly there.
    fn valid_at(&mut self, rel: usize, whole: bool) -> Result<Option<bool>> {
        let avail = self.fill(rel + HEADER_LEN)?;
        if avail == rel {
            return Ok(None);
        }
        if avail < rel + HEADER_LEN {
            return Ok(Some(false));
        }
        let at = self.start + rel;
        let h = &self.buf[at..at + HEADER_LEN];
        let len = u64::from_le_bytes(h[..8].try_into().unwrap());
        let max = self.max_record_bytes.min(MAX_ADDRESSABLE);
        let framed_end = self.offset + (rel + HEADER_LEN + FOOTER_LEN) as u64 + len;
        let header_ok = masked_crc32c(&h[..8]) == u32::from_le_bytes(h[8..12].try_into().unwrap())
            && len <= max
            && self.total_len.is_none_or(|t| framed_end <= t);
        if !header_ok || !whole {
            return Ok(Some(header_ok));
        }
        let need = rel + HEADER_LEN + len as usize + FOOTER_LEN;
        if self.fill(need)? < need {
            return Ok(Some(false));
        }
        let data_at = self.start + rel + HEADER_LEN;
        let data = &self.buf[data_at..data_at + len as usize];
        let stored = &self.buf[data_at + len as usize..data_at + len as usize + FOOTER_LEN];
        Ok(Some(
            masked_crc32c(data) == u32::from_le_bytes(stored.try_into().unwrap()),
        ))
    }

    /// Steps forward one byte at a time until a whole valid record starts at `start`;
    /// returns its offset, or `None` (and ends the reader) if the stream ends first.
    fn scan(&mut self) -> Result<Option<u64>> {
        loop {
            match self.valid_at(0, true)? {
                Some(true) => return Ok(Some(self.offset)),
                None => {
                    self.done = true;
                    return Ok(None);
                }
                Some(false) => {
                    self.start += 1;
                    self.offset += 1;
                }
            }
        }
    }

    /// With the header of a `len`-byte record checked and in the buffer, makes the whole
    /// record available, checks its data and moves past it; returns the data's range in
    /// the buffer (valid until the next read).
    fn buffered_body(&mut self, len: u64) -> Result<std::ops::Range<usize>> {
        let need = HEADER_LEN + len as usize + FOOTER_LEN;
        let avail = match self.fill(need) {
            Ok(n) => n,
            Err(e) => return Err(self.fail(e)),
        };
        if avail < need {
            let data_got = (avail - HEADER_LEN).min(len as usize);
            let msg = Self::truncated_message(len, data_got as u64, avail - HEADER_LEN - data_got);
            return Err(self.damaged(Error::truncated(msg), None));
        }
        let data = self.start + HEADER_LEN..self.start + need - FOOTER_LEN;
        if self.verify {
            let stored = &self.buf[data.end..data.end + FOOTER_LEN];
            if masked_crc32c(&self.buf[data.clone()])
                != u32::from_le_bytes(stored.try_into().unwrap())
            {
                let err = Error::corrupt("record data checksum mismatch");
                return Err(self.damaged(err, Some(len)));
            }
        }
        self.start += need;
        self.advance(len);
        Ok(data)
    }

    /// The next record's data, or `None` at a clean end of stream.
    ///
    /// After a data-CRC mismatch the error is `resumable`: the record was skipped and the
    /// next call reads the one after it. With `resync`, every framing error is: the reader
    /// has moved on to the next valid record. Any other error ends this reader.
    pub fn next_record(&mut self) -> Result<Option<&[u8]>> {
        let Some(len) = self.header()? else {
            return Ok(None);
        };
        if !self.body_arrived(len)? {
            return Ok(None);
        }
        let data = self.buffered_body(len)?;
        Ok(Some(&self.buf[data]))
    }

    /// Following a growing file, whether the whole record whose header is in the buffer has
    /// been written yet (a torn tail is waited on, left in place for the next call).
    fn body_arrived(&mut self, len: u64) -> Result<bool> {
        if !self.follow {
            return Ok(true);
        }
        let need = HEADER_LEN + len as usize + FOOTER_LEN;
        match self.fill(need) {
            Ok(n) => Ok(n >= need),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Appends the next record's data to `out`; `false` at a clean end of stream.
    ///
    /// Large records are read from the stream straight into `out`, without passing through
    /// the reader's buffer. Errors are as for [`RecordReader::next_record`]; `out` is left
    /// as it was.
    pub fn next_record_into(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        let Some(len) = self.header()? else {
            return Ok(false);
        };
        if !self.body_arrived(len)? {
            return Ok(false);
        }
        if len < DIRECT_MIN || self.resync || self.follow {
            // Resync rescans damaged records, so it keeps them in the buffer.
            let data = self.buffered_body(len)?;
            out.extend_from_slice(&self.buf[data]);
            return Ok(true);
        }
        let base = out.len();
        let buffered = (self.end - self.start - HEADER_LEN).min(len as usize);
        let from = self.start + HEADER_LEN;
        out.extend_from_slice(&self.buf[from..from + buffered]);
        self.start += HEADER_LEN + buffered;
        let mut got = buffered as u64;
        while got < len {
            // Grow with what really arrives, never to a declared size up front.
            let step = (len - got).min(got.max(CHUNK as u64));
            out.reserve(step as usize);
            let n = match (&mut self.src).take(step).read_to_end(out) {
                Ok(n) => n as u64,
                Err(e) => {
                    out.truncate(base);
                    let err = self.stream_error(e);
                    return Err(self.fail(err));
                }
            };
            got += n;
            if n < step {
                self.eof = true;
                out.truncate(base);
                let msg = Self::truncated_message(len, got, 0);
                return Err(self.fail(Error::truncated(msg)));
            }
        }
        let avail = match self.fill(FOOTER_LEN) {
            Ok(n) => n,
            Err(e) => {
                out.truncate(base);
                return Err(self.fail(e));
            }
        };
        if avail < FOOTER_LEN {
            out.truncate(base);
            let msg = Self::truncated_message(len, len, avail);
            return Err(self.fail(Error::truncated(msg)));
        }
        let stored = u32::from_le_bytes(self.buf[self.start..self.start + 4].try_into().unwrap());
        self.start += FOOTER_LEN;
        let (offset, index) = self.advance(len);
        if self.verify && masked_crc32c(&out[base..]) != stored {
            out.truncate(base);
            return Err(Error::corrupt("record data checksum mismatch")
                .with_path(&self.path)
                .with_offset(offset)
                .with_record(index)
                .resumable());
        }
        Ok(true)
    }
}

/// Records packed back to back in one buffer: record `i` is `data[ends[i-1]..ends[i]]`.
#[derive(Debug, Default, Clone)]
pub struct RecordBatch {
    pub data: Vec<u8>,
    pub ends: Vec<usize>,
}

impl RecordBatch {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
    }

    pub fn push(&mut self, record: &[u8]) {
        self.data.extend_from_slice(record);
        self.ends.push(self.data.len());
    }

    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// Reads the records of several files in order, in batches.
pub struct MultiFileReader {
    paths: Vec<String>,
    opts: ReadOptions,
    opener: SharedOpener,
    next_file: usize,
    current: Option<SourceReader>,
    pending: Option<Error>,
    /// Records delivered from each file so far.
    delivered: Vec<u64>,
    /// The runs of records in the last batch: (file, index in the file of its first
    /// record, records). A batch ends at any error, so each run has no gaps.
    batch_runs: Vec<(usize, u64, u64)>,
}

impl MultiFileReader {
    /// Reads `paths` in order; those `opener` claims (URLs) through it.
    pub fn new(paths: Vec<String>, opts: ReadOptions, opener: SharedOpener) -> Self {
        MultiFileReader {
            paths,
            opts,
            opener,
            next_file: 0,
            current: None,
            pending: None,
            delivered: Vec::new(),
            batch_runs: Vec::new(),
        }
    }

    /// The file and the index within it of record `i` of the last batch read: what locates
    /// an error found later in that batch (when it is parsed, say).
    pub fn origin_in_batch(&self, i: u64) -> Option<(&str, u64)> {
        let mut i = i;
        for &(file, first, n) in &self.batch_runs {
            if i < n {
                return Some((&self.paths[file], first + i));
            }
            i -= n;
        }
        None
    }

    /// `(path, records delivered)` for every file opened so far.
    pub fn delivered(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.paths
            .iter()
            .map(String::as_str)
            .zip(self.delivered.iter().copied())
    }

    /// The file being read, if any.
    pub fn current_path(&self) -> Option<&str> {
        self.current.as_ref().map(|r| r.path())
    }

    /// Appends up to `max_records` records (stopping early past `max_bytes`) to `out`.
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
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        self.batch_runs.clear();
        while out.len() < max_records && out.data.len() < max_bytes {
            if self.current.is_none() {
                if self.next_file == self.paths.len() {
                    break;
                }
                let path = &self.paths[self.next_file];
                self.next_file += 1;
                self.delivered.push(0);
                match SourceReader::open(path, &self.opts, &self.opener) {
                    Ok(r) => self.current = Some(r),
                    Err(e) => return self.defer(out, e),
                }
            }
            let reader = self.current.as_mut().expect("a file is open");
            let (index, _) = reader.position();
            match reader.next_into(&mut out.data) {
                Ok(true) => {
                    out.ends.push(out.data.len());
                    let file = self.next_file - 1;
                    self.delivered[file] += 1;
                    match self.batch_runs.last_mut() {
                        Some((f, _, n)) if *f == file => *n += 1,
                        _ => self.batch_runs.push((file, index, 1)),
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
    let mut reader = SourceReader::open(path, &opts, opener)?;
    let mut n = 0;
    let mut scratch = Vec::new();
    while reader.next_into(&mut scratch)? {
        scratch.clear();
        n += 1;
    }
    Ok(n)
}

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

/// The one record framed in `framed` (an `.idx` entry's bytes, fetched from `offset` of
/// `path`), its checksums checked.
pub fn unframe_record(framed: Vec<u8>, path: &str, offset: u64, verify: bool) -> Result<Vec<u8>> {
    record_in(framed, path, offset, verify)
}

/// Reads the one record framed in `framed_len` bytes at `offset` of an uncompressed file
/// (an `.idx` entry), checking its checksums.
pub fn read_record_at(path: &str, offset: u64, framed_len: u64, verify: bool) -> Result<Vec<u8>> {
    record_in(read_range(path, offset, framed_len)?, path, offset, verify)
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

/// The `(offset, framed length)` of every record of an uncompressed file, checksums
/// checked: the content of its `.idx` sidecar. `opener` opens it when it is a URL.
pub fn index_records(path: &str, opener: &SharedOpener) -> Result<Vec<(u64, u64)>> {
    let opts = ReadOptions {
        compression: Some(Compression::None),
        ..ReadOptions::default()
    };
    let mut reader = SourceReader::open(path, &opts, opener)?;
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
