//! The stages that order, pick or repeat elements, wherever they run.

/// A stage that orders, picks or repeats elements: file names before `interleave`
/// (applied in sequence to `0..files.len()`), records after it, a user function's
/// elements after a `map`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Shuffle { buffer: usize, seed: Option<u64> },
    Shard { num_shards: u64, index: u64 },
    Skip(u64),
    Take(u64),
    Repeat(Option<u64>),
}
