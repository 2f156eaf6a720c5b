//! The order in which a plan's files are read: its file ops applied in sequence to the
//! file indices `0..n`.

use std::sync::Arc;

use super::order::Order;
use super::origin::{mix, rng_for};

pub(super) type FileIter = Box<dyn Iterator<Item = usize> + Send>;

/// The order in which a plan reads its `n` files, for the run salted with `epoch`.
pub fn file_order_of(ops: &[Order], n: usize, epoch: u64) -> FileIter {
    let ops: Arc<[Order]> = ops.to_vec().into();
    file_order(&ops, ops.len(), n, epoch)
}

fn file_order(ops: &Arc<[Order]>, upto: usize, n: usize, salt: u64) -> FileIter {
    if upto == 0 {
        return Box::new(0..n);
    }
    let upstream = || file_order(ops, upto - 1, n, salt);
    match ops[upto - 1] {
        Order::Shuffle { buffer, seed } => Box::new(ShuffleIter {
            inner: upstream(),
            buffer: Vec::new(),
            size: buffer.max(1),
            rng: rng_for(seed, mix(salt, upto as u64)),
        }),
        Order::Shard { num_shards, index } => Box::new(
            upstream()
                .skip(usize::try_from(index).unwrap_or(usize::MAX))
                .step_by(usize::try_from(num_shards.max(1)).unwrap_or(usize::MAX)),
        ),
        Order::Skip(k) => Box::new(upstream().skip(k as usize)),
        Order::Take(k) => Box::new(upstream().take(k as usize)),
        Order::Repeat(count) => {
            let ops = Arc::clone(ops);
            let epochs = (0..count.unwrap_or(u64::MAX))
                .map(move |e| file_order(&ops, upto - 1, n, mix(salt, e)));
            // An empty epoch ends the repetition instead of spinning forever.
            Box::new(RepeatIter {
                epochs: Box::new(epochs),
                current: None,
                produced: true,
            })
        }
    }
}

struct ShuffleIter {
    inner: FileIter,
    buffer: Vec<usize>,
    size: usize,
    rng: fastrand::Rng,
}

impl Iterator for ShuffleIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        while self.buffer.len() < self.size {
            match self.inner.next() {
                Some(f) => self.buffer.push(f),
                None => break,
            }
        }
        if self.buffer.is_empty() {
            return None;
        }
        let i = self.rng.usize(..self.buffer.len());
        Some(self.buffer.swap_remove(i))
    }
}

struct RepeatIter {
    epochs: Box<dyn Iterator<Item = FileIter> + Send>,
    current: Option<FileIter>,
    produced: bool,
}

impl Iterator for RepeatIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        loop {
            if let Some(f) = self.current.as_mut().and_then(Iterator::next) {
                self.produced = true;
                return Some(f);
            }
            if !self.produced {
                return None;
            }
            self.produced = false;
            self.current = Some(self.epochs.next()?);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{named_files, plan, records, strings};
    use super::*;

    fn order(ops: &[Order], n: usize, epoch: u64) -> Vec<usize> {
        file_order_of(ops, n, epoch).collect()
    }

    fn shuffle(buffer: usize, seed: u64) -> Order {
        Order::Shuffle {
            buffer,
            seed: Some(seed),
        }
    }

    fn is_permutation(order: &[usize], n: usize) -> bool {
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        sorted == (0..n).collect::<Vec<_>>()
    }

    #[test]
    fn no_ops_read_every_file_in_order() {
        assert_eq!(order(&[], 4, 0), vec![0, 1, 2, 3]);
        assert_eq!(order(&[], 0, 0), Vec::<usize>::new());
    }

    #[test]
    fn shard_takes_every_nth_file_from_its_index() {
        let shard = |num_shards, index| Order::Shard { num_shards, index };
        assert_eq!(order(&[shard(3, 0)], 8, 0), vec![0, 3, 6]);
        assert_eq!(order(&[shard(3, 1)], 8, 0), vec![1, 4, 7]);
        assert_eq!(order(&[shard(3, 2)], 8, 0), vec![2, 5]);
        // The shards of a split cover every file exactly once.
        let mut all: Vec<usize> = (0..3).flat_map(|i| order(&[shard(3, i)], 8, 0)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn skip_and_take_apply_in_sequence() {
        assert_eq!(order(&[Order::Skip(2)], 5, 0), vec![2, 3, 4]);
        assert_eq!(order(&[Order::Take(2)], 5, 0), vec![0, 1]);
        assert_eq!(order(&[Order::Skip(9)], 5, 0), Vec::<usize>::new());
        assert_eq!(
            order(&[Order::Skip(1), Order::Take(3)], 8, 0),
            vec![1, 2, 3]
        );
        assert_eq!(order(&[Order::Take(3), Order::Skip(1)], 8, 0), vec![1, 2]);
    }

    #[test]
    fn repeat_replays_the_upstream_order() {
        assert_eq!(
            order(&[Order::Repeat(Some(2))], 3, 0),
            vec![0, 1, 2, 0, 1, 2]
        );
        assert_eq!(order(&[Order::Repeat(Some(0))], 3, 0), Vec::<usize>::new());
        let forever: Vec<usize> = file_order_of(&[Order::Repeat(None)], 3, 0)
            .take(7)
            .collect();
        assert_eq!(forever, vec![0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn repeat_of_nothing_ends() {
        let ops = [Order::Take(0), Order::Repeat(None)];
        assert_eq!(order(&ops, 3, 0), Vec::<usize>::new());
        assert_eq!(order(&[Order::Repeat(None)], 0, 0), Vec::<usize>::new());
    }

    #[test]
    fn shuffle_is_a_permutation_fixed_by_seed_and_epoch() {
        let ops = [shuffle(100, 7)];
        let first = order(&ops, 20, 0);
        assert!(is_permutation(&first, 20), "{first:?}");
        assert_ne!(first, (0..20).collect::<Vec<_>>());
        assert_eq!(order(&ops, 20, 0), first, "same seed and epoch");
        let next_epoch = order(&ops, 20, 1);
        assert!(is_permutation(&next_epoch, 20));
        assert_ne!(next_epoch, first, "another epoch, another order");
        assert_ne!(order(&[shuffle(100, 8)], 20, 0), first, "another seed");
        let unseeded = order(
            &[Order::Shuffle {
                buffer: 100,
                seed: None,
            }],
            20,
            0,
        );
        assert!(is_permutation(&unseeded, 20));
    }

    #[test]
    fn shuffle_draws_from_a_window_of_buffer_files() {
        assert_eq!(order(&[shuffle(1, 3)], 6, 0), vec![0, 1, 2, 3, 4, 5]);
        let got = order(&[shuffle(3, 3)], 30, 0);
        assert!(is_permutation(&got, 30));
        for (k, &file) in got.iter().enumerate() {
            assert!(file < k + 3, "output {k} is file {file}: {got:?}");
        }
    }

    #[test]
    fn each_repeated_pass_is_shuffled_anew() {
        let ops = [shuffle(100, 5), Order::Repeat(Some(3))];
        let got = order(&ops, 10, 0);
        assert_eq!(got.len(), 30);
        let passes: Vec<&[usize]> = got.chunks(10).collect();
        for pass in &passes {
            assert!(is_permutation(pass, 10), "{pass:?}");
        }
        assert_ne!(passes[0], passes[1]);
        assert_ne!(passes[1], passes[2]);
        assert_eq!(order(&ops, 10, 0), got);
    }

    #[test]
    fn a_pipeline_reads_its_files_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[2, 2, 2, 2]));
        p.file_ops = vec![
            Order::Shard {
                num_shards: 2,
                index: 1,
            },
            Order::Repeat(Some(2)),
        ];
        assert_eq!(
            records(p),
            strings(&["b0", "b1", "d0", "d1", "b0", "b1", "d0", "d1"])
        );
    }

    #[test]
    fn a_pipeline_shuffles_files_as_file_order_of_does() {
        let dir = tempfile::tempdir().unwrap();
        let files = named_files(dir.path(), &[1; 8]);
        let mut p = plan(files);
        p.file_ops = vec![shuffle(8, 11)];
        p.epoch = 4;
        let expected: Vec<String> = order(&p.file_ops, 8, 4)
            .into_iter()
            .map(|f| format!("{}0", char::from(b'a' + f as u8)))
            .collect();
        assert_eq!(records(p), expected);
    }
}
