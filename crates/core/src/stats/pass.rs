//! The pass itself: a reader thread hands batches of records to workers, each with its own
//! accumulators, merged at the end. Memory is bounded by the batches in flight and the
//! accumulators, whatever the number of records.

use crossbeam_channel::{bounded, Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::accum::SplitAcc;
use super::summary::{Anomaly, SplitSummary};
use crate::batch::{Origins, RecordBatch};
use crate::error::{Error, Result};
use crate::multi::MultiFileReader;
use crate::reader::ReadOptions;
use crate::source::SharedOpener;

const BATCH_RECORDS: usize = 8192;
const BATCH_BYTES: usize = 4 << 20;

struct Split {
    name: String,
    paths: Vec<String>,
    /// One share per worker, merged when the report is made.
    shares: Vec<SplitAcc>,
}

/// Statistics over the `tf.train.Example`s of named groups of files (splits), read once.
pub struct StatsPass {
    splits: Vec<Split>,
    current: usize,
    reader: Option<MultiFileReader>,
    opts: ReadOptions,
    opener: SharedOpener,
    threads: usize,
    records: u64,
}

/// Every split's statistics, all splits' together, and what differs between them.
pub struct Report {
    pub total: SplitSummary,
    pub splits: Vec<SplitSummary>,
    /// The split the others are checked against, when there is more than one.
    pub baseline: Option<String>,
    pub anomalies: Vec<Anomaly>,
}

type Batch = (RecordBatch, Origins);

impl StatsPass {
    /// A pass over `splits` (name, paths), counting on `threads` workers (0: one per core).
    pub fn new(
        splits: Vec<(String, Vec<String>)>,
        opts: ReadOptions,
        opener: SharedOpener,
        threads: usize,
    ) -> StatsPass {
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        StatsPass {
            splits: splits
                .into_iter()
                .map(|(name, paths)| Split {
                    name,
                    paths,
                    shares: vec![SplitAcc::default(); threads],
                })
                .collect(),
            current: 0,
            reader: None,
            opts,
            opener,
            threads,
            records: 0,
        }
    }

    /// Records counted so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Whether every file has been read.
    pub fn done(&self) -> bool {
        self.current == self.splits.len()
    }

    /// Reads and counts about `max_records` more records (at least one batch), or what is
    /// left. Returns how many it counted.
    pub fn step(&mut self, max_records: u64) -> Result<u64> {
        let start = self.records;
        while !self.done() && self.records - start < max_records.max(1) {
            let budget = max_records.max(1) - (self.records - start);
            self.step_split(budget)?;
        }
        Ok(self.records - start)
    }

    fn step_split(&mut self, budget: u64) -> Result<()> {
        let split = &mut self.splits[self.current];
        let reader = self.reader.get_or_insert_with(|| {
            MultiFileReader::new(split.paths.clone(), self.opts, self.opener.clone())
        });
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let stop = AtomicBool::new(false);
        let (to_workers, inbox) = bounded::<Batch>(self.threads * 2);
        let (give_back, spare) = bounded::<RecordBatch>(self.threads * 3);
        let fail = |e: Error| {
            stop.store(true, Ordering::Relaxed);
            failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
        };
        let mut read = 0u64;
        let mut finished = false;
        std::thread::scope(|scope| {
            let paths = &split.paths[..];
            for share in split.shares.iter_mut() {
                let (inbox, give_back) = (inbox.clone(), give_back.clone());
                let (stop, fail) = (&stop, &fail);
                scope.spawn(move || work(share, paths, inbox, give_back, stop, fail));
            }
            drop((inbox, give_back));
            while read < budget && !stop.load(Ordering::Relaxed) {
                let mut batch = spare.try_recv().unwrap_or_default();
                batch.clear();
                if let Err(e) = reader.read_batch(&mut batch, BATCH_RECORDS, BATCH_BYTES) {
                    fail(e);
                    break;
                }
                if batch.is_empty() {
                    finished = true;
                    break;
                }
                read += batch.len() as u64;
                let origins = reader.batch_located().clone();
                if to_workers.send((batch, origins)).is_err() {
                    break;
                }
            }
            drop(to_workers);
        });
        if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        self.records += read;
        if finished {
            self.reader = None;
            self.current += 1;
        }
        Ok(())
    }

    /// The statistics of what was read. Splits are checked against `baseline` (by name;
    /// `None`: `train` if there is one, else the first split) for differences past
    /// `threshold`; each bytes feature lists its `top` most frequent values.
    pub fn report(&self, baseline: Option<&str>, threshold: f64, top: usize) -> Result<Report> {
        let merged: Vec<SplitAcc> = self.splits.iter().map(|s| merge(&s.shares)).collect();
        let total = merge(&merged);
        let files: usize = self.splits.iter().map(|s| s.paths.len()).sum();
        let splits: Vec<SplitSummary> = self
            .splits
            .iter()
            .zip(&merged)
            .map(|(s, acc)| acc.summary(&s.name, s.paths.len(), top))
            .collect();
        let names: Vec<&str> = self.splits.iter().map(|s| s.name.as_str()).collect();
        let base = match baseline {
            Some(b) => Some(names.iter().position(|n| *n == b).ok_or_else(|| {
                Error::invalid(format!(
                    "baseline split {b:?} is not one of the splits: {}",
                    names.join(", ")
                ))
            })?),
            None if names.len() > 1 => Some(names.iter().position(|n| *n == "train").unwrap_or(0)),
            None => None,
        };
        let anomalies = match base {
            Some(b) => {
                let pairs: Vec<(&str, &SplitAcc)> = names.iter().copied().zip(&merged).collect();
                super::anomalies::find(&pairs, b, threshold)
            }
            None => Vec::new(),
        };
        Ok(Report {
            total: total.summary("all", files, top),
            splits,
            baseline: base.map(|b| names[b].to_owned()),
            anomalies,
        })
    }
}

fn merge(shares: &[SplitAcc]) -> SplitAcc {
    let mut out = SplitAcc::default();
    for s in shares {
        out.merge(s);
    }
    out
}

fn work(
    acc: &mut SplitAcc,
    paths: &[String],
    inbox: Receiver<Batch>,
    give_back: Sender<RecordBatch>,
    stop: &AtomicBool,
    fail: &(dyn Fn(Error) + Sync),
) {
    for (batch, origins) in inbox {
        if stop.load(Ordering::Relaxed) {
            continue;
        }
        for (i, record) in batch.iter().enumerate() {
            if let Err(e) = acc.add_example(record) {
                fail(match origins.get(paths, i as u64) {
                    Some((path, index, offset)) => {
                        e.with_path(path).with_record(index).with_offset(offset)
                    }
                    None => e,
                });
                break;
            }
        }
        let _ = give_back.try_send(batch);
    }
}
