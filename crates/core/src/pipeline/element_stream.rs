//! A stream of elements the engine does not look into, and the caller's functions that
//! the element stages apply to them.

use std::sync::Arc;

/// One element at a time: `Ok(None)` at the end.
pub trait Elements<T, E>: Send {
    fn next_element(&mut self) -> Result<Option<T>, E>;
}

/// The elements of one pass (epoch) of what comes before the stages, from its seed.
pub type SourceFn<T, E> = Arc<dyn Fn(u64) -> Result<Box<dyn Elements<T, E>>, E> + Send + Sync>;
pub type MapFn<T, E> = Arc<dyn Fn(T) -> Result<T, E> + Send + Sync>;
pub type FilterFn<T, E> = Arc<dyn Fn(&T) -> Result<bool, E> + Send + Sync>;
/// Makes one element of a batch's elements (at least one, in order).
pub type CollateFn<T, E> = Arc<dyn Fn(Vec<T>) -> Result<T, E> + Send + Sync>;
/// Makes elements of a chunk of elements, given the pass's seed and the position in the
/// pass of the chunk's first element.
pub type ChunkFn<T, E> = Arc<dyn Fn(Vec<T>, u64, u64) -> Result<Vec<T>, E> + Send + Sync>;
