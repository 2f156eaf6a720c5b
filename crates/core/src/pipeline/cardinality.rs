//! How many elements one pass of a pipeline yields, from its plan alone: the number of
//! files, the record counts known without reading them (manifests, index sidecars), and
//! what each stage does to a count, as tf.data's `cardinality()` reports it.

use super::order::Order;

/// The number of elements of a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cardinality {
    Known(u64),
    /// Without end (`repeat()`).
    Infinite,
    /// Not known without reading the data (after `filter`, say).
    Unknown,
}

/// A stage, as it changes the number of elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// One element out for each in (`map`, `shuffle`, `prefetch`, `cache`, ...).
    Same,
    Filter,
    Repeat(Option<u64>),
    Take(u64),
    Skip(u64),
    Shard {
        num_shards: u64,
        index: u64,
    },
    Batch {
        size: u64,
        drop_remainder: bool,
    },
}

/// The number of elements after `ops`, from `n` before them.
pub fn count_after(n: Cardinality, ops: &[Counted]) -> Cardinality {
    use Cardinality::{Infinite, Known, Unknown};
    ops.iter().fold(n, |n, op| match (*op, n) {
        (Counted::Same, n) => n,
        (Counted::Filter, _) => Unknown,
        (Counted::Repeat(None), Known(0)) => Known(0),
        (Counted::Repeat(None), _) => Infinite,
        (Counted::Repeat(Some(0)), _) => Known(0),
        (Counted::Repeat(Some(c)), Known(k)) => k.checked_mul(c).map_or(Unknown, Known),
        (Counted::Repeat(Some(_)), n) => n,
        (Counted::Take(0), _) => Known(0),
        (Counted::Take(c), Infinite) => Known(c),
        (Counted::Take(c), Known(k)) => Known(k.min(c)),
        (Counted::Skip(c), Known(k)) => Known(k.saturating_sub(c)),
        (Counted::Shard { num_shards, index }, Known(k)) => {
            let num_shards = num_shards.max(1);
            Known(if index < k {
                (k - index).div_ceil(num_shards)
            } else {
                0
            })
        }
        (
            Counted::Batch {
                size,
                drop_remainder,
            },
            Known(k),
        ) => {
            let size = size.max(1);
            Known(if drop_remainder {
                k / size
            } else {
                k.div_ceil(size)
            })
        }
        (_, n) => n,
    })
}

/// The longest list of files followed through file-level repeats.
const MAX_PICKS: u64 = 1 << 20;

/// The records of the files that `file_ops` pick out of `files` files, from `counts`
/// (each file's record count where known; asked for only when the count depends on it).
/// Unknown where a picked file's count is, or where shuffled files are picked in part and
/// their counts differ: which files a pass holds then changes from pass to pass.
pub fn picked_records(
    file_ops: &[Order],
    files: usize,
    counts: impl FnOnce() -> Vec<Option<u64>>,
) -> Cardinality {
    let mut picks: Vec<usize> = (0..files).collect();
    let (mut shuffled, mut chosen, mut endless) = (false, false, false);
    for op in file_ops {
        let before = picks.len();
        match *op {
            Order::Shuffle { .. } => shuffled = true,
            Order::Repeat(None) => endless = endless || !picks.is_empty(),
            _ if endless => {
                if let Order::Take(c) = *op {
                    if c > MAX_PICKS {
                        return Cardinality::Unknown;
                    }
                    picks = (0..c as usize).map(|i| picks[i % before]).collect();
                    endless = false;
                    chosen = chosen || (shuffled && c as usize % before != 0);
                }
            }
            Order::Repeat(Some(c)) => {
                if (picks.len() as u64).saturating_mul(c) > MAX_PICKS {
                    return Cardinality::Unknown;
                }
                picks = picks.repeat(c as usize);
            }
            Order::Take(c) => picks.truncate(c.min(picks.len() as u64) as usize),
            Order::Skip(c) => {
                picks.drain(..c.min(picks.len() as u64) as usize);
            }
            Order::Shard { num_shards, index } => {
                picks = picks
                    .into_iter()
                    .skip(usize::try_from(index).unwrap_or(usize::MAX))
                    .step_by(usize::try_from(num_shards.max(1)).unwrap_or(usize::MAX))
                    .collect();
            }
        }
        chosen = chosen || (shuffled && picks.len() < before);
    }
    if endless {
        return Cardinality::Infinite;
    }
    let known: Option<Vec<u64>> = counts().into_iter().collect();
    let Some(known) = known.filter(|k| k.len() == files) else {
        return Cardinality::Unknown;
    };
    if chosen {
        return match known.first() {
            Some(&first) if known.iter().all(|&k| k == first) => {
                Cardinality::Known(picks.len() as u64 * first)
            }
            _ => Cardinality::Unknown,
        };
    }
    Cardinality::Known(picks.iter().map(|&i| known[i]).sum())
}

#[cfg(test)]
mod tests {
    use super::Cardinality::{Infinite, Known, Unknown};
    use super::*;

    #[test]
    fn stages_change_a_count_as_tf_data_does() {
        let batch = |size, drop_remainder| Counted::Batch {
            size,
            drop_remainder,
        };
        assert_eq!(count_after(Known(10), &[batch(4, false)]), Known(3));
        assert_eq!(count_after(Known(10), &[batch(4, true)]), Known(2));
        let shard = |num_shards, index| Counted::Shard { num_shards, index };
        assert_eq!(count_after(Known(10), &[shard(3, 0)]), Known(4));
        assert_eq!(count_after(Known(10), &[shard(3, 2)]), Known(3));
        assert_eq!(count_after(Known(1), &[shard(3, 2)]), Known(0));
        let ops = [Counted::Skip(3), Counted::Take(5), Counted::Same];
        assert_eq!(count_after(Known(10), &ops), Known(5));
        assert_eq!(count_after(Known(6), &ops), Known(3));
        assert_eq!(
            count_after(Known(4), &[Counted::Repeat(Some(3))]),
            Known(12)
        );
        assert_eq!(count_after(Known(4), &[Counted::Repeat(None)]), Infinite);
        // Nothing taken is nothing, however many there were; repeated, still nothing.
        let none_taken = [Counted::Take(0), Counted::Repeat(None)];
        assert_eq!(count_after(Unknown, &none_taken), Known(0));
        assert_eq!(count_after(Known(0), &[Counted::Repeat(None)]), Known(0));
        assert_eq!(count_after(Unknown, &[Counted::Repeat(Some(0))]), Known(0));
        let endless = [Counted::Repeat(None), Counted::Take(7), batch(2, false)];
        assert_eq!(count_after(Known(3), &endless), Known(4));
        assert_eq!(count_after(Known(3), &[Counted::Filter]), Unknown);
        assert_eq!(count_after(Unknown, &[Counted::Take(3)]), Unknown);
        assert_eq!(count_after(Infinite, &[Counted::Skip(3)]), Infinite);
    }

    #[test]
    fn picked_files_sum_their_known_counts() {
        let counts = || vec![Some(10), Some(20), Some(30)];
        assert_eq!(picked_records(&[], 3, counts), Known(60));
        let shard = Order::Shard {
            num_shards: 2,
            index: 1,
        };
        assert_eq!(picked_records(&[shard], 3, counts), Known(20));
        let twice = [Order::Skip(1), Order::Repeat(Some(2))];
        assert_eq!(picked_records(&twice, 3, counts), Known(100));
        assert_eq!(
            picked_records(&[], 2, || vec![Some(1), None]),
            Unknown,
            "a file's count is not known"
        );
        assert_eq!(picked_records(&[Order::Repeat(None)], 3, counts), Infinite);
        let endless = [Order::Repeat(None), Order::Take(4)];
        assert_eq!(picked_records(&endless, 3, counts), Known(70));
    }

    #[test]
    fn shuffled_files_picked_in_part_count_only_when_alike() {
        let shuffle = Order::Shuffle {
            buffer: 8,
            seed: None,
        };
        let part = [shuffle, Order::Take(2)];
        assert_eq!(picked_records(&part, 3, || vec![Some(5); 3]), Known(10));
        let differ = || vec![Some(5), Some(6), Some(5)];
        assert_eq!(picked_records(&part, 3, differ), Unknown);
        // Every file, in a new order: the sum.
        assert_eq!(picked_records(&[shuffle], 3, differ), Known(16));
        assert_eq!(
            picked_records(&[Order::Repeat(Some(1 << 21))], 3, differ),
            Unknown
        );
    }
}
