//! Parsing large Examples where they are read: each is read from the file straight into
//! the end of the batch's largest bytes column and parsed there, and that column's values
//! are then moved down over the record within the cache, so that a large value is copied
//! from the page cache once, into the column handed out. The first value of a column is
//! not moved at all (the record's bytes before it, where they are few, are left as the
//! column's lead), so a record of any size starts a batch this way; later ones up to
//! [`HOST_MAX`] bytes follow, and a batch ends before a larger one, which starts the next.
//! A batch's first record goes into the column its caller names
//! ([`ExampleParser::prefer_host`]: the one that held the most in the batch before).

use crate::batch::RecordBatch;
use crate::error::Result;
use crate::multi::{EachRecord, LargeRecords, MultiFileReader};
use crate::parse::ExampleParser;

/// The largest record read into a column that holds values already: moving its values
/// down then stays within a core's cache (moving them further within memory, by a few
/// bytes, is slower than reading the record apart and copying them out). A batch ends
/// before a larger one, which is then read at the start of the next.
pub const HOST_MAX: usize = 1 << 20;

/// Reads records from `reader` as [`MultiFileReader::read_each`] does, up to
/// `max_records` records or past `max_bytes`, and parses each into `parser`, large ones
/// where they are read (see the module). Before the first record, each bytes column gets
/// room for `room` bytes more than that record (see [`ExampleParser::reserve_bytes`]).
/// The records stop before one larger than [`HOST_MAX`] where the bytes column it would
/// be read into holds values already. Large records of a schema without bytes columns
/// are read into `scratch`, grown as needed and best kept from batch to batch. Errors as
/// for [`MultiFileReader::read_each`].
pub fn parse_each(
    reader: &mut MultiFileReader,
    out: &mut RecordBatch,
    (max_records, max_bytes): (usize, usize),
    parser: &mut ExampleParser<'_>,
    room: usize,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let mut sink = ParseInPlace {
        parser,
        room: Some(room),
        large: 0,
        hosted: false,
        scratch,
    };
    reader.read_each_into(out, max_records, max_bytes, &mut sink)
}

/// Hands the records [`parse_each`] reads to an [`ExampleParser`], large ones read into
/// its columns. Only `read_each_into` drives it: it hands over a large record only once
/// the record fills the buffer `buffer` gave, which is what `push_hosted` relies on.
struct ParseInPlace<'p, 's> {
    parser: &'p mut ExampleParser<'s>,
    /// Bytes of room to make in each bytes column before the first record, beyond it.
    room: Option<usize>,
    /// The large record being read, and whether a column holds it (else `scratch`).
    large: usize,
    hosted: bool,
    scratch: &'p mut Vec<u8>,
}

impl ParseInPlace<'_, '_> {
    fn make_room(&mut self, len: usize) {
        if let Some(room) = self.room.take() {
            self.parser.reserve_bytes(room.saturating_add(len));
        }
    }
}

impl LargeRecords for ParseInPlace<'_, '_> {
    fn buffer(&mut self, len: usize) -> Result<&mut [u8]> {
        self.make_room(len);
        self.large = len;
        self.hosted = self.parser.host(len, HOST_MAX).is_some();
        if self.hosted {
            return Ok(self
                .parser
                .host(len, HOST_MAX)
                .expect("room made just before"));
        }
        if self.scratch.len() < len {
            self.scratch.resize(len, 0);
        }
        Ok(&mut self.scratch[..len])
    }

    fn discard(&mut self) {
        self.parser.unhost();
        self.hosted = false;
    }

    fn leaves(&self, len: usize) -> bool {
        self.parser.hosts_next(len, HOST_MAX)
    }
}

impl EachRecord for ParseInPlace<'_, '_> {
    fn record(&mut self, small: Option<&[u8]>) -> Result<()> {
        match small {
            Some(record) => {
                self.make_room(record.len());
                self.parser.push(record)
            }
            None if self.hosted => {
                self.hosted = false;
                // SAFETY: `read_each_into`, the only caller, hands over a large record once
                // its bytes fill the whole buffer `buffer` gave, which `host` made.
                unsafe { self.parser.push_hosted(self.large) }
            }
            None => self.parser.push(&self.scratch[..self.large]),
        }
    }
}
