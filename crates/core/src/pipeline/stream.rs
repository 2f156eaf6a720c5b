//! The record stream every record stage reads from and is.

use super::origin::Origin;
use crate::error::Result;

/// Where a stream puts a large record that came in a buffer of its own: that buffer.
pub(super) type Held = Option<Vec<u8>>;

/// A record lent by a stream until its next call, and where it came from.
pub(super) type Lent<'a> = Option<(&'a [u8], Origin)>;

/// A stream of records: each call gives where the next record came from, `Ok(None)` at
/// the end, or an error at the point it occurred.
pub(super) trait Stream: Send {
    /// The next record: its bytes appended to `out`, or, when it is a large record read
    /// into a buffer of its own, that buffer put in `held` (which the caller gives empty),
    /// so that the record is not copied again on its way through the stages.
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>>;

    /// The next record lent where the stream already holds it (readers lend it from the
    /// chunk it was read into), else read into `scratch`; a large record in a buffer of
    /// its own goes to `held` as with [`Stream::next_into`], and the slice is empty. A
    /// stage that keeps records copies each once, not through `scratch` first.
    fn next_lent<'a>(&'a mut self, scratch: &'a mut Vec<u8>, held: &mut Held) -> Result<Lent<'a>> {
        scratch.clear();
        Ok(self.next_into(scratch, held)?.map(|o| (&scratch[..], o)))
    }
}
