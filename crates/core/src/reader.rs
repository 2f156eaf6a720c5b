//! Reading framed records: `u64 length | u32 masked crc(length) | data | u32 masked crc(data)`.

use std::io::{self, Cursor, Read};
use std::path::Path;

use crate::compression::{suggest, Compression, Decoder};
use crate::crc::masked_crc32c;
use crate::error::{Error, Result};
use crate::foreign::{foreign_format, FOREIGN_SAMPLE};

/// Header and footer sizes of one framed record.
pub const HEADER_LEN: usize = 12;
pub const FOOTER_LEN: usize = 4;

/// Default largest record the reader accepts (a larger length is reported as data loss).
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 1 << 31;

const CHUNK: usize = 1 << 20;
/// Bytes a resync scan steps over between two looks at whether to give up.
const SCAN_ASK_EVERY: u32 = 1 << 20;
/// The reader's buffer starts this small and doubles only while a record needs it.
const FIRST_BUFFER: usize = 1 << 16;
/// No record can be longer than memory can address (header and footer included).
const MAX_ADDRESSABLE: u64 = (isize::MAX as u64) - 16;
pub(crate) const HEAD_LEN: usize = 16;
/// Records at least this long are read straight into the caller's buffer.
pub const DIRECT_MIN: u64 = 1 << 16;

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
    /// Set once a large record was read straight into its caller's buffer: the next fill
    /// reads only what it asks for (that record's footer and the next header), so that the
    /// start of the next record, most likely large too, is not copied through this buffer.
    lean: bool,
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

/// A run of records inside an uncompressed file: those from byte `start`, where record
/// number `index` of the file begins, to the first record that begins at or after `end`.
/// Spans taken from a file's index sidecar let several readers share one large file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub index: u64,
    pub end: u64,
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
            lean: false,
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

    /// Counts offsets and record numbers from where `span` starts, for a stream that
    /// starts there.
    pub fn start_at(&mut self, span: Span) {
        self.offset = span.start;
        self.index = span.index;
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
            let room = if self.lean {
                (self.start + want).min(self.buf.len())
            } else {
                self.buf.len()
            };
            match self.src.read(&mut self.buf[self.end..room]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.stream_error(e)),
            }
        }
        self.lean = false;
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
            Error::truncated(format!("{name} stream ends early, at compressed byte {at}"))
        } else {
            Error::data_loss(format!(
                "corrupt {name} stream near compressed byte {at}: {e}"
            ))
        };
        err.with_offset(at)
    }

    /// Adds to `err`, met at `offset`, what the file looks like instead, when it is the
    /// file's first record and the file looks compressed otherwise than it is read.
    fn hint_at(&self, offset: u64, err: &mut Error) {
        if offset == 0 && err.kind != crate::ErrorKind::Io {
            if let Some(hint) = suggest(self.src.compression(), &self.head) {
                err.message.push_str(&hint);
            }
        }
    }

    /// Marks the reader finished and locates `err` at the current record.
    fn fail(&mut self, mut err: Error) -> Error {
        self.done = true;
        self.hint_at(self.offset, &mut err);
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
        let mut err = err;
        self.hint_at(offset, &mut err);
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
        // A scan through a long damaged stretch (or an endless stream of garbage) asks
        // now and then whether to give up (see `crate::cancel`).
        let mut unasked = 0u32;
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
                    unasked += 1;
                    if unasked == SCAN_ASK_EVERY {
                        unasked = 0;
                        if crate::cancel::interrupted() {
                            return Err(Error::interrupted());
                        }
                    }
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
        match self.next_record_or_large(out, false)? {
            Next::End => Ok(false),
            Next::Appended => Ok(true),
            Next::Large(_) => unreachable!("large records are asked for"),
        }
    }

    /// As [`RecordReader::next_record_into`], except that with `claim`, a record of at
    /// least [`DIRECT_MIN`] bytes whose length the stream's known size vouches for is left
    /// unread: `Next::Large(len)` asks the caller for a buffer of its own, of exactly `len`
    /// bytes, to give [`RecordReader::read_large`] next, which fills it straight from the
    /// stream (one copy). Asking again without reading it gives the same record.
    pub fn next_record_or_large(&mut self, out: &mut Vec<u8>, claim: bool) -> Result<Next> {
        let Some(len) = self.header()? else {
            return Ok(Next::End);
        };
        if !self.body_arrived(len)? {
            return Ok(Next::End);
        }
        if len >= DIRECT_MIN {
            crate::memory::keep_freed_buffers();
        }
        if len < DIRECT_MIN || self.resync || self.follow {
            // Resync rescans damaged records, so it keeps them in the buffer.
            let data = self.buffered_body(len)?;
            out.extend_from_slice(&self.buf[data]);
            return Ok(Next::Appended);
        }
        if claim && self.total_len.is_some() {
            // `header` checked that the stream holds `len` more bytes.
            return Ok(Next::Large(len));
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
        let checked = self.end_direct(len, &out[base..]);
        if checked.is_err() {
            out.truncate(base);
        }
        checked.map(|()| Next::Appended)
    }

    /// Reads the record [`RecordReader::next_record_or_large`] answered `Next::Large(len)`
    /// for into `dst` (`len` bytes), from the reader's buffer and then straight from the
    /// stream, and checks it there.
    pub fn read_large(&mut self, len: u64, dst: &mut [u8]) -> Result<()> {
        assert_eq!(
            dst.len() as u64,
            len,
            "read_large needs a buffer of the record's length"
        );
        let buffered = (self.end - self.start - HEADER_LEN).min(dst.len());
        let from = self.start + HEADER_LEN;
        dst[..buffered].copy_from_slice(&self.buf[from..from + buffered]);
        self.start += HEADER_LEN + buffered;
        let mut got = buffered;
        while got < dst.len() {
            match self.src.read(&mut dst[got..]) {
                Ok(0) => {
                    self.eof = true;
                    let msg = Self::truncated_message(len, got as u64, 0);
                    return Err(self.fail(Error::truncated(msg)));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let err = self.stream_error(e);
                    return Err(self.fail(err));
                }
            }
        }
        self.end_direct(len, dst)
    }

    /// After a record's `data` was read past the buffer: reads its footer, moves past it,
    /// and checks the data's checksum.
    fn end_direct(&mut self, len: u64, data: &[u8]) -> Result<()> {
        // The footer, and the next record's header with it where there is one.
        self.lean = true;
        let avail = match self.fill(FOOTER_LEN + HEADER_LEN) {
            Ok(n) => n,
            Err(e) => return Err(self.fail(e)),
        };
        if avail < FOOTER_LEN {
            let msg = Self::truncated_message(len, len, avail);
            return Err(self.fail(Error::truncated(msg)));
        }
        let stored = u32::from_le_bytes(self.buf[self.start..self.start + 4].try_into().unwrap());
        self.start += FOOTER_LEN;
        let (offset, index) = self.advance(len);
        if self.verify && masked_crc32c(data) != stored {
            return Err(Error::corrupt("record data checksum mismatch")
                .with_path(&self.path)
                .with_offset(offset)
                .with_record(index)
                .resumable());
        }
        Ok(())
    }
}

/// What [`RecordReader::next_record_or_large`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The clean end of the stream (or, following a file, no whole record yet).
    End,
    /// A record, appended to the caller's buffer.
    Appended,
    /// A large record of this many bytes, waiting for a buffer of its own.
    Large(u64),
}
