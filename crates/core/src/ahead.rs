//! Batches of records read on a thread of their own, a batch ahead of the consumer, so
//! that reading and checking the next batch overlaps whatever the consumer does with the
//! last one (parsing it, say).

use std::thread;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::batch::RecordBatch;
use crate::error::{Error, ErrorKind, Result};
use crate::multi::MultiFileReader;

/// Batches read ahead of the consumer: at most one waiting and one being read, besides
/// the one the consumer holds. Dropping it stops the thread after the read in progress.
pub struct BatchesAhead {
    batches: Receiver<Ahead>,
    spent: Sender<RecordBatch>,
    paths: Vec<String>,
    delivered: Vec<u64>,
    runs: Vec<(usize, u64, u64)>,
    shape: (usize, usize),
    ended: bool,
    /// The process whose thread reads: a forked child has the reader but not the thread.
    owner: u32,
    /// The reader, handed back at a large record (see [`BatchesAhead::until_large`]).
    handed_back: Option<Box<MultiFileReader>>,
}

/// A batch as the reading thread left it, with what locates its records.
struct Ahead {
    batch: RecordBatch,
    result: Result<()>,
    runs: Vec<(usize, u64, u64)>,
    opened: usize,
    /// The reader itself, once the batch ends before a large record.
    reader: Option<Box<MultiFileReader>>,
}

impl BatchesAhead {
    /// Reads `reader` in batches of up to `max_records` records and `max_bytes` bytes (as
    /// [`MultiFileReader::read_batch`] reads them) on a thread of its own.
    pub fn new(reader: MultiFileReader, max_records: usize, max_bytes: usize) -> Self {
        Self::start(reader, max_records, max_bytes, usize::MAX)
    }

    /// As [`BatchesAhead::new`], until a record of at least
    /// [`DIRECT_MIN`](crate::reader::DIRECT_MIN) bytes: the batch then ends before it, and
    /// the reader comes back ([`BatchesAhead::take_reader`]) for the consumer to read such
    /// records straight into buffers of its own, one copy each; a copy made here would be
    /// a second.
    pub fn until_large(reader: MultiFileReader, max_records: usize, max_bytes: usize) -> Self {
        Self::start(reader, max_records, max_bytes, 0)
    }

    /// As [`BatchesAhead::until_large`], until a record of more than `over` bytes; large
    /// records up to that size are read ahead, each into a buffer of its own.
    pub fn until_over(
        reader: MultiFileReader,
        max_records: usize,
        max_bytes: usize,
        over: usize,
    ) -> Self {
        Self::start(reader, max_records, max_bytes, over)
    }

    fn start(
        mut reader: MultiFileReader,
        max_records: usize,
        max_bytes: usize,
        over: usize,
    ) -> Self {
        let paths = reader.paths().to_vec();
        let (tx, batches) = bounded::<Ahead>(1);
        let (spent, reuse) = bounded::<RecordBatch>(2);
        let spawned = thread::Builder::new()
            .name("tfrecordkit-batches".into())
            .spawn(move || loop {
                let mut batch = reuse.try_recv().unwrap_or_default();
                batch.clear();
                let result = Error::catch("the batch read-ahead thread", || {
                    reader.read_batch_until(&mut batch, max_records, max_bytes, over)
                })
                .and_then(|r| r);
                if batch.before_large {
                    let runs = reader.batch_runs().to_vec();
                    let _ = tx.send(Ahead {
                        batch,
                        result,
                        runs,
                        opened: reader.opened(),
                        reader: Some(Box::new(reader)),
                    });
                    return;
                }
                let end = result.is_ok() && batch.is_empty();
                let broken = matches!(&result, Err(e) if e.kind == ErrorKind::Internal);
                // An error comes alone, and the runs the reader holds then are older.
                let runs = if batch.is_empty() {
                    Vec::new()
                } else {
                    reader.batch_runs().to_vec()
                };
                let ahead = Ahead {
                    batch,
                    result,
                    runs,
                    opened: reader.opened(),
                    reader: None,
                };
                if tx.send(ahead).is_err() || end || broken {
                    return;
                }
            });
        let batches = match spawned {
            Ok(_) => batches,
            Err(e) => {
                let (tx, rx) = bounded(1);
                let _ = tx.send(Ahead {
                    batch: RecordBatch::default(),
                    result: Err(Error::io(e, None)),
                    runs: Vec::new(),
                    opened: 0,
                    reader: None,
                });
                rx
            }
        };
        BatchesAhead {
            batches,
            spent,
            paths,
            delivered: Vec::new(),
            runs: Vec::new(),
            shape: (max_records, max_bytes),
            ended: false,
            owner: std::process::id(),
            handed_back: None,
        }
    }

    /// The reader, once a batch ended before a large record (see
    /// [`BatchesAhead::until_large`]): it goes on from there, and this hands out no more
    /// batches. Its counts are those of every record handed out.
    pub fn take_reader(&mut self) -> Option<Box<MultiFileReader>> {
        self.handed_back.take()
    }

    /// The `(max_records, max_bytes)` every batch is read with.
    pub fn shape(&self) -> (usize, usize) {
        self.shape
    }

    /// Replaces `out` with the next batch, as [`MultiFileReader::read_batch`] fills it:
    /// empty at the end, and an error in place of a batch.
    pub fn next_batch(&mut self, out: &mut RecordBatch) -> Result<()> {
        if std::process::id() != self.owner {
            // Waiting would be forever: the reading thread stayed in the parent.
            return Err(Error::invalid(
                "this reader was started before the process forked, and its reading thread \
                 stayed in the parent: open the files again in this process",
            ));
        }
        self.runs.clear();
        // The last batch's memory goes back to the reading thread, its pages still mapped.
        let spent = std::mem::take(out);
        if spent.data.capacity() > 0 {
            let _ = self.spent.try_send(spent);
        }
        if self.ended {
            return Ok(());
        }
        let Ok(ahead) = self.batches.recv() else {
            self.ended = true;
            return Ok(());
        };
        let Ahead {
            batch,
            result,
            runs,
            opened,
            reader,
        } = ahead;
        if (result.is_ok() && batch.is_empty()) || reader.is_some() {
            self.ended = true;
        }
        self.handed_back = reader;
        self.delivered.resize(opened.max(self.delivered.len()), 0);
        for &(file, _, n) in &runs {
            self.delivered[file] += n;
        }
        self.runs = runs;
        *out = batch;
        result
    }

    /// As [`MultiFileReader::origin_in_batch`], for the last batch handed out.
    pub fn origin_in_batch(&self, i: u64) -> Option<(&str, u64)> {
        crate::multi::origin(&self.paths, &self.runs, i)
    }

    /// As [`MultiFileReader::delivered`]: the records handed out, not those read ahead.
    pub fn delivered(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.paths
            .iter()
            .map(String::as_str)
            .zip(self.delivered.iter().copied())
    }
}
