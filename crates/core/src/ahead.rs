//! Batches of records read on a thread of their own, a batch (or a run of small ones)
//! ahead of the consumer, so that reading and checking the next batch overlaps whatever
//! the consumer does with the last one (parsing it, say).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};

use crate::batch::{Origins, RecordBatch};
use crate::error::{Error, ErrorKind, Result};
use crate::multi::MultiFileReader;

/// Batches read ahead of the consumer: at most one run of them waiting and one being
/// read, besides the one the consumer holds. A run is one batch, or small batches up to
/// [`RUN_RECORDS`] records and [`RUN_BYTES`] bytes, or as many as [`RUN_WAIT`] reads:
/// they are handed over together, so that small batches do not cost the two threads a
/// wake-up each (`read_examples` in batches of 128 small Examples took about 15% longer
/// without it). Dropping it stops the thread after the read in progress.
///
/// Given work (see [`BatchesAhead::with_work`]), the reading thread also does it on each
/// batch it reads while the consumer is still busy, rather than wait idle for room:
/// the work of a batch falls to whichever side would otherwise wait.
pub struct BatchesAhead<W: Send + 'static = ()> {
    batches: Receiver<Vec<Ahead<W>>>,
    /// The rest of the run being handed out.
    run: std::collections::VecDeque<Ahead<W>>,
    spent: Sender<RecordBatch>,
    /// Work done on the reading thread that the consumer copied: it is dropped there.
    home: Sender<W>,
    paths: Vec<String>,
    delivered: Vec<u64>,
    origins: Origins,
    shape: (usize, usize),
    ended: bool,
    /// The process whose thread reads: a forked child has the reader but not the thread.
    owner: u32,
    /// The reader, handed back at a large record (see [`BatchesAhead::until_large`]).
    handed_back: Option<Box<MultiFileReader>>,
    /// The work the reading thread did on the last batch handed out, if it did.
    done: Option<W>,
    /// Set while the consumer waits for the next run.
    waiting: Arc<AtomicBool>,
    /// Set when this is dropped: ends the reading thread's waits (for a pipe's writer).
    stop: Arc<AtomicBool>,
}

impl<W: Send + 'static> Drop for BatchesAhead<W> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A batch as the reading thread left it, with what locates its records.
struct Ahead<W> {
    batch: RecordBatch,
    result: Result<()>,
    origins: Origins,
    opened: usize,
    /// The reader itself, once the batch ends before a large record.
    reader: Option<Box<MultiFileReader>>,
    done: Option<W>,
}

/// A run of batches read while the consumer was busy ends once it holds this many
/// records, or [`RUN_BYTES`] bytes: what one batch of the usual size holds.
pub const RUN_RECORDS: usize = 1024;
/// See [`RUN_RECORDS`].
pub const RUN_BYTES: usize = 4 << 20;
/// A run of small batches goes out once it has been read for this long, however small,
/// so that a slow source (a remote file) keeps its first batches prompt.
pub const RUN_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// What the reading thread may do on a batch while the consumer is busy.
pub type Work<W> = Box<dyn FnMut(&RecordBatch) -> W + Send>;

/// Does `work` (if any) on a batch read without error, unless it was done already; a
/// panic in it leaves the work undone.
fn work_on<W>(work: &mut Option<Work<W>>, ahead: &mut Ahead<W>) {
    if let (Some(work), Ok(()), None) = (work.as_mut(), &ahead.result, &ahead.done) {
        if !ahead.batch.is_empty() {
            let batch = &ahead.batch;
            ahead.done = catch_unwind(AssertUnwindSafe(|| work(batch))).ok();
        }
    }
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
}

impl<W: Send + 'static> BatchesAhead<W> {
    /// As [`BatchesAhead::until_over`], and `work` (if any) is done on the reading thread
    /// on each batch read while the one before it still waits for the consumer (see
    /// [`BatchesAhead::take_done`]). The batch before a large record, an error and the
    /// end come without it; a panic in `work` leaves it undone.
    pub fn with_work(
        reader: MultiFileReader,
        (max_records, max_bytes): (usize, usize),
        over: usize,
        work: Option<Work<W>>,
    ) -> Self {
        Self::spawn(reader, max_records, max_bytes, over, work)
    }

    fn start(reader: MultiFileReader, max_records: usize, max_bytes: usize, over: usize) -> Self {
        Self::spawn(reader, max_records, max_bytes, over, None)
    }

    fn spawn(
        mut reader: MultiFileReader,
        max_records: usize,
        max_bytes: usize,
        over: usize,
        mut work: Option<Work<W>>,
    ) -> Self {
        let paths = reader.paths().to_vec();
        let waiting = Arc::new(AtomicBool::new(false));
        let consumer_waits = Arc::clone(&waiting);
        let stop = Arc::new(AtomicBool::new(false));
        let reader_stop = Arc::clone(&stop);
        let (tx, batches) = bounded::<Vec<Ahead<W>>>(1);
        // Room for the buffers of a whole run of small batches to come back.
        let (spent, reuse) = bounded::<RecordBatch>(2 + RUN_RECORDS / max_records.max(1));
        let (home, copied) = bounded::<W>(2 + RUN_RECORDS / max_records.max(1));
        let spawned = thread::Builder::new()
            .name("tfrecordkit-batches".into())
            .spawn(move || {
                crate::cancel::stop_on(&reader_stop);
                let mut run: Vec<Ahead<W>> = Vec::new();
                let (mut records, mut bytes) = (0, 0);
                let mut run_started = std::time::Instant::now();
                loop {
                    if run.is_empty() {
                        run_started = std::time::Instant::now();
                    }
                    // Freed where it was allocated: see `take_done_copied`.
                    while copied.try_recv().is_ok() {}
                    let mut batch = reuse.try_recv().unwrap_or_default();
                    batch.clear();
                    let result = Error::catch("the batch read-ahead thread", || {
                        reader.read_batch_until(&mut batch, max_records, max_bytes, over)
                    })
                    .and_then(|r| r);
                    if batch.before_large {
                        let origins = reader.batch_located().clone();
                        run.push(Ahead {
                            batch,
                            result,
                            origins,
                            opened: reader.opened(),
                            reader: Some(Box::new(reader)),
                            done: None,
                        });
                        let _ = tx.send(run);
                        return;
                    }
                    let end = result.is_ok() && batch.is_empty();
                    let broken = matches!(&result, Err(e) if e.kind == ErrorKind::Internal);
                    let stop = end || broken;
                    // An error goes out at once, after the batches read before it.
                    let now = stop || result.is_err();
                    // An error comes alone, and the origins the reader holds then are older.
                    let origins = if batch.is_empty() {
                        Origins::default()
                    } else {
                        reader.batch_located().clone()
                    };
                    records += batch.len();
                    bytes += batch.bytes();
                    run.push(Ahead {
                        batch,
                        result,
                        origins,
                        opened: reader.opened(),
                        reader: None,
                        done: None,
                    });
                    let small = records < RUN_RECORDS && bytes < RUN_BYTES;
                    if !now && small && !tx.is_full() && run_started.elapsed() < RUN_WAIT {
                        // Small batches go out together. A consumer that waits for them
                        // gets them sooner unworked; one still busy leaves the work here.
                        if !waiting.load(Ordering::Relaxed) {
                            work_on(&mut work, run.last_mut().expect("the batch just read"));
                        }
                        continue;
                    }
                    let sent = match tx.try_send(std::mem::take(&mut run)) {
                        Ok(()) => Ok(()),
                        Err(TrySendError::Disconnected(_)) => return,
                        // The consumer is still busy with the run before: this batch is
                        // worked on here meanwhile, and joins the run being read.
                        Err(TrySendError::Full(back)) => {
                            run = back;
                            work_on(&mut work, run.last_mut().expect("the batch just read"));
                            if !now && small {
                                continue;
                            }
                            tx.send(std::mem::take(&mut run)).map_err(drop)
                        }
                    };
                    (records, bytes) = (0, 0);
                    if sent.is_err() || stop {
                        return;
                    }
                }
            });
        let batches = match spawned {
            Ok(_) => batches,
            Err(e) => {
                let (tx, rx) = bounded(1);
                let _ = tx.send(vec![Ahead {
                    batch: RecordBatch::default(),
                    result: Err(Error::io(e, None)),
                    origins: Origins::default(),
                    opened: 0,
                    reader: None,
                    done: None,
                }]);
                rx
            }
        };
        BatchesAhead {
            batches,
            run: Default::default(),
            spent,
            home,
            paths,
            delivered: Vec::new(),
            origins: Origins::default(),
            shape: (max_records, max_bytes),
            ended: false,
            owner: std::process::id(),
            handed_back: None,
            done: None,
            waiting: consumer_waits,
            stop,
        }
    }

    /// The work done on the reading thread on the last batch handed out, if it was.
    pub fn take_done(&mut self) -> Option<W> {
        self.done.take()
    }

    /// As [`BatchesAhead::take_done`], as `copy` copies it on the calling thread (`None`:
    /// the work itself), the work itself then going back to be freed on the reading
    /// thread. Memory one thread allocates and another frees makes them wait for each
    /// other's allocator lock (glibc's arenas): with batches of 128 small Examples, most
    /// of the time the consumer slept went there.
    pub fn take_done_copied(&mut self, copy: impl FnOnce(&W) -> Option<W>) -> Option<W> {
        let done = self.done.take()?;
        let Some(copied) = copy(&done) else {
            return Some(done);
        };
        // With no room, it is freed here after all.
        let _ = self.home.try_send(done);
        Some(copied)
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
    /// empty at the end, and an error in place of a batch. A wait given up (see
    /// [`crate::cancel`]) is an error too, and the next call waits again.
    pub fn next_batch(&mut self, out: &mut RecordBatch) -> Result<()> {
        if std::process::id() != self.owner {
            // Waiting would be forever: the reading thread stayed in the parent.
            return Err(Error::invalid(
                "this reader was started before the process forked, and its reading thread \
                 stayed in the parent: open the files again in this process",
            ));
        }
        self.origins.clear();
        self.done = None;
        // The last batch's memory goes back to the reading thread, its pages still mapped.
        let spent = std::mem::take(out);
        if spent.data.capacity() > 0 {
            let _ = self.spent.try_send(spent);
        }
        if self.ended {
            return Ok(());
        }
        if self.run.is_empty() {
            self.waiting.store(true, Ordering::Relaxed);
            let got = crate::cancel::recv(&self.batches);
            self.waiting.store(false, Ordering::Relaxed);
            match got? {
                Some(run) => self.run.extend(run),
                None => {
                    self.ended = true;
                    return Ok(());
                }
            }
        }
        let Some(ahead) = self.run.pop_front() else {
            self.ended = true;
            return Ok(());
        };
        let Ahead {
            batch,
            result,
            origins,
            opened,
            reader,
            done,
        } = ahead;
        self.done = done;
        if (result.is_ok() && batch.is_empty()) || reader.is_some() {
            self.ended = true;
        }
        self.handed_back = reader;
        self.delivered.resize(opened.max(self.delivered.len()), 0);
        for &(file, _, n) in origins.runs() {
            self.delivered[file] += n;
        }
        self.origins = origins;
        *out = batch;
        result
    }

    /// As [`MultiFileReader::origin_in_batch`], for the last batch handed out.
    pub fn origin_in_batch(&self, i: u64) -> Option<(&str, u64, u64)> {
        self.origins.get(&self.paths, i)
    }

    /// As [`MultiFileReader::delivered`]: the records handed out, not those read ahead.
    pub fn delivered(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.paths
            .iter()
            .map(String::as_str)
            .zip(self.delivered.iter().copied())
    }
}
