//! The record stages: each wraps the stream of records before it.

use std::sync::Arc;

use super::cache::cache_stream;
use super::files::file_order_of;
use super::origin::{mix, rng_for, Origin};
use super::plan::{Plan, RecordOp};
use super::readers::{Files, Interleave, Sloppy};
use super::shuffle::ShuffleStream;
use super::stream::{Held, Stream};
use crate::error::Result;

/// Builds the stream of records after the first `upto` record stages.
pub(super) fn build(
    plan: &Arc<Plan>,
    files: &Arc<Files>,
    upto: usize,
    salt: u64,
) -> Result<Box<dyn Stream>> {
    if upto == 0 {
        let order = file_order_of(&plan.file_ops, plan.files.len(), salt);
        let cycle = plan.cycle_length.max(1);
        if !plan.deterministic {
            return Ok(Box::new(Sloppy::new(Arc::clone(files), order, cycle)));
        }
        return Ok(Box::new(Interleave::new(
            Arc::clone(files),
            order,
            cycle,
            plan.block_length.max(1),
        )));
    }
    let stage_salt = mix(salt, upto as u64);
    let inner = || build(plan, files, upto - 1, salt);
    Ok(match &plan.record_ops[upto - 1] {
        RecordOp::Shard { num_shards, index } => Box::new(ShardStream {
            inner: inner()?,
            num_shards: (*num_shards).max(1),
            index: *index,
            position: 0,
            scratch: Vec::new(),
        }),
        RecordOp::Skip(n) => Box::new(SkipStream {
            inner: inner()?,
            left: *n,
            scratch: Vec::new(),
        }),
        RecordOp::Take(n) => Box::new(TakeStream {
            inner: inner()?,
            left: *n,
        }),
        RecordOp::Shuffle { buffer, seed } => Box::new(ShuffleStream::new(
            inner()?,
            *buffer,
            rng_for(*seed, stage_salt),
        )),
        RecordOp::Repeat(count) => {
            if *count == Some(0) {
                return Ok(Box::new(TakeStream {
                    inner: inner()?,
                    left: 0,
                }));
            }
            Box::new(RepeatStream {
                plan: Arc::clone(plan),
                files: Arc::clone(files),
                upto: upto - 1,
                count: *count,
                epoch: 0,
                salt: stage_salt,
                inner: inner()?,
                produced: false,
            })
        }
        RecordOp::Cache(cache) => cache_stream(cache, || build(plan, files, upto - 1, salt))?,
    })
}

struct ShardStream {
    inner: Box<dyn Stream>,
    num_shards: u64,
    index: u64,
    position: u64,
    scratch: Vec<u8>,
}

impl Stream for ShardStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        loop {
            let mine = self.position % self.num_shards == self.index;
            let got = if mine {
                self.inner.next_into(out, held)?
            } else {
                self.scratch.clear();
                self.inner.next_into(&mut self.scratch, held)?
            };
            let Some(origin) = got else { return Ok(None) };
            self.position += 1;
            if mine {
                return Ok(Some(origin));
            }
            *held = None;
        }
    }
}

struct SkipStream {
    inner: Box<dyn Stream>,
    left: u64,
    scratch: Vec<u8>,
}

impl Stream for SkipStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        while self.left > 0 {
            self.scratch.clear();
            if self.inner.next_into(&mut self.scratch, held)?.is_none() {
                self.left = 0;
                return Ok(None);
            }
            *held = None;
            self.left -= 1;
        }
        self.inner.next_into(out, held)
    }
}

struct TakeStream {
    inner: Box<dyn Stream>,
    left: u64,
}

impl Stream for TakeStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        if self.left == 0 {
            return Ok(None);
        }
        let got = self.inner.next_into(out, held)?;
        if got.is_some() {
            self.left -= 1;
        }
        Ok(got)
    }
}

struct RepeatStream {
    plan: Arc<Plan>,
    files: Arc<Files>,
    upto: usize,
    count: Option<u64>,
    epoch: u64,
    salt: u64,
    inner: Box<dyn Stream>,
    produced: bool,
}

impl Stream for RepeatStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        loop {
            if let Some(mut origin) = self.inner.next_into(out, held)? {
                self.produced = true;
                origin.pass = mix(origin.pass as u64, self.epoch) as u32;
                return Ok(Some(origin));
            }
            self.epoch += 1;
            // An epoch that produced nothing ends the repetition instead of spinning.
            if !self.produced || self.count.is_some_and(|c| self.epoch >= c) {
                return Ok(None);
            }
            self.produced = false;
            self.inner = build(
                &self.plan,
                &self.files,
                self.upto,
                mix(self.salt, self.epoch),
            )?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{named, named_files, plan, records, sorted, strings};
    use super::super::RecordOp;

    /// Two files, `a0`..`a4` then `b0`..`b4`, read one after the other, with `ops`.
    fn ten(dir: &std::path::Path, ops: Vec<RecordOp>) -> super::Plan {
        let mut p = plan(named_files(dir, &[5, 5]));
        p.record_ops = ops;
        p
    }

    fn shuffle(buffer: usize, seed: u64) -> RecordOp {
        RecordOp::Shuffle {
            buffer,
            seed: Some(seed),
        }
    }

    fn all_ten() -> Vec<String> {
        let mut all = named("a", 5);
        all.extend(named("b", 5));
        all
    }

    #[test]
    fn shard_keeps_every_nth_record_from_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let shard = |num_shards, index| RecordOp::Shard { num_shards, index };
        assert_eq!(
            records(ten(dir.path(), vec![shard(3, 1)])),
            strings(&["a1", "a4", "b2"])
        );
        assert_eq!(
            records(ten(dir.path(), vec![shard(3, 0)])),
            strings(&["a0", "a3", "b1", "b4"])
        );
        assert_eq!(records(ten(dir.path(), vec![shard(1, 0)])), all_ten());
        assert_eq!(records(ten(dir.path(), vec![shard(20, 12)])), strings(&[]));
        let mut union: Vec<String> = (0..3)
            .flat_map(|i| records(ten(dir.path(), vec![shard(3, i)])))
            .collect();
        union.sort();
        assert_eq!(union, sorted(all_ten()));
    }

    #[test]
    fn skip_drops_the_first_records() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Skip(7)])),
            strings(&["b2", "b3", "b4"])
        );
        assert_eq!(records(ten(dir.path(), vec![RecordOp::Skip(0)])), all_ten());
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Skip(10)])),
            strings(&[])
        );
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Skip(99)])),
            strings(&[])
        );
    }

    #[test]
    fn take_keeps_the_first_records() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Take(6)])),
            strings(&["a0", "a1", "a2", "a3", "a4", "b0"])
        );
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Take(0)])),
            strings(&[])
        );
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Take(99)])),
            all_ten()
        );
    }

    #[test]
    fn stages_apply_in_plan_order() {
        let dir = tempfile::tempdir().unwrap();
        let (skip, take) = (RecordOp::Skip(2), RecordOp::Take(4));
        assert_eq!(
            records(ten(dir.path(), vec![skip.clone(), take.clone()])),
            strings(&["a2", "a3", "a4", "b0"])
        );
        assert_eq!(
            records(ten(dir.path(), vec![take, skip])),
            strings(&["a2", "a3"])
        );
        let shard = RecordOp::Shard {
            num_shards: 2,
            index: 1,
        };
        assert_eq!(
            records(ten(dir.path(), vec![RecordOp::Skip(1), shard])),
            strings(&["a2", "a4", "b1", "b3"])
        );
    }

    #[test]
    fn repeat_replays_its_input() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[3]));
        p.record_ops = vec![RecordOp::Repeat(Some(2))];
        assert_eq!(
            records(p.clone()),
            strings(&["a0", "a1", "a2", "a0", "a1", "a2"])
        );
        p.record_ops = vec![RecordOp::Repeat(Some(1))];
        assert_eq!(records(p.clone()), strings(&["a0", "a1", "a2"]));
        p.record_ops = vec![RecordOp::Repeat(Some(0))];
        assert_eq!(records(p.clone()), strings(&[]));
        p.record_ops = vec![RecordOp::Repeat(None), RecordOp::Take(8)];
        assert_eq!(
            records(p),
            strings(&["a0", "a1", "a2", "a0", "a1", "a2", "a0", "a1"])
        );
    }

    #[test]
    fn repeat_forever_of_nothing_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[0, 0]));
        p.record_ops = vec![RecordOp::Repeat(None)];
        assert_eq!(records(p.clone()), strings(&[]));
        p = plan(named_files(dir.path(), &[4]));
        p.record_ops = vec![RecordOp::Skip(10), RecordOp::Repeat(None)];
        assert_eq!(records(p), strings(&[]));
    }

    #[test]
    fn repeat_reruns_the_stages_before_it_each_pass() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[5]));
        p.record_ops = vec![RecordOp::Skip(3), RecordOp::Repeat(Some(3))];
        assert_eq!(
            records(p.clone()),
            strings(&["a3", "a4", "a3", "a4", "a3", "a4"])
        );
        // A shuffle before the repeat draws a new order each pass.
        p = plan(named_files(dir.path(), &[30]));
        p.record_ops = vec![shuffle(100, 7), RecordOp::Repeat(Some(3))];
        let got = records(p.clone());
        let passes: Vec<Vec<String>> = got.chunks(30).map(<[String]>::to_vec).collect();
        assert_eq!(passes.len(), 3);
        for pass in &passes {
            assert_eq!(sorted(pass.clone()), sorted(named("a", 30)));
        }
        assert_ne!(passes[0], passes[1]);
        assert_ne!(passes[1], passes[2]);
        assert_eq!(records(p), got);
        // The stages after a repeat see its passes as one stream.
        p = plan(named_files(dir.path(), &[2, 2]));
        p.cycle_length = 2;
        p.record_ops = vec![RecordOp::Repeat(Some(2)), RecordOp::Skip(1)];
        assert_eq!(
            records(p),
            strings(&["b0", "a1", "b1", "a0", "b0", "a1", "b1"])
        );
    }
}
