//! The record stream every record stage reads from and is.

use super::origin::Origin;
use crate::error::Result;

/// A stream of records: each call appends the next record's bytes to `out` and returns
/// where it came from, `Ok(None)` at the end, or an error at the point it occurred.
pub(super) trait Stream: Send {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>>;
}
