//! Parsing large Examples where they are read: each (up to [`HOST_MAX`] bytes) is read
//! from the file straight into the end of the batch's largest bytes column and parsed
//! there, and that column's values are then moved down over the record within the cache,
//! so that a large value is copied from the page cache once, into the column handed out.

use crate::error::Result;
use crate::multi::{EachRecord, LargeRecords};
use crate::parse::ExampleParser;

/// The largest record read into a column: moving its values down then stays within a
/// core's cache. A larger one is read into a buffer of its own and its values copied out,
/// which is faster than moving them within memory by a few bytes.
pub const HOST_MAX: usize = 1 << 20;

/// Hands records read by [`MultiFileReader::read_each_into`](crate::MultiFileReader::read_each_into)
/// to an [`ExampleParser`], large ones read into its columns.
pub struct ParseInPlace<'p, 's> {
    parser: &'p mut ExampleParser<'s>,
    /// Bytes of room to make in each bytes column before the first record, beyond it.
    room: Option<usize>,
    /// The large record being read, and whether a column holds it (else `scratch`).
    large: usize,
    hosted: bool,
    scratch: &'p mut Vec<u8>,
}

impl<'p, 's> ParseInPlace<'p, 's> {
    /// Parses into `parser`; before the first record, each bytes column gets room for
    /// `room` bytes more than that record (see [`ExampleParser::reserve_bytes`]). Records
    /// larger than [`HOST_MAX`] are read into `scratch`, grown as needed and best kept
    /// from batch to batch.
    pub fn new(parser: &'p mut ExampleParser<'s>, room: usize, scratch: &'p mut Vec<u8>) -> Self {
        ParseInPlace {
            parser,
            room: Some(room),
            large: 0,
            hosted: false,
            scratch,
        }
    }

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
        self.hosted = len <= HOST_MAX && self.parser.host(len).is_some();
        if self.hosted {
            return Ok(self.parser.host(len).expect("room made just before"));
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
                // SAFETY: `EachRecord::record(None)` comes once the record's bytes fill the
                // whole buffer `buffer` gave, which `host` made.
                unsafe { self.parser.push_hosted(self.large) }
            }
            None => self.parser.push(&self.scratch[..self.large]),
        }
    }
}
