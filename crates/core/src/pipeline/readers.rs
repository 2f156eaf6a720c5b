//! Reader threads, and the interleaves that merge the records they read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};

use super::files::FileIter;
use super::origin::Origin;
use super::stream::{Held, Lent, Stream};
use crate::batch::RecordBatch;
use crate::error::{Error, Result};
use crate::reader::{Next, ReadOptions};
use crate::source::{SharedOpener, SourceReader};

/// What to do when a record is damaged or does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Deliver the error and stop.
    Stop,
    /// Deliver the error and go on past it.
    Continue,
}

/// Starts a named thread; the pipeline's threads end when their queues disconnect.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("the OS could not start a pipeline thread")
}

/// Records per chunk handed from a reader thread to the pipeline thread.
const CHUNK_RECORDS: usize = 256;
/// Records of a few hundred bytes (clips of SequenceExamples) fill chunks by their bytes:
/// twice 60 KiB reads those pipelines 15-30% faster, and more gains nothing. Kept, with
/// the room a chunk makes, under the allocator's mmap threshold (128 KiB), so chunk
/// buffers are reused, not faulted in.
const CHUNK_BYTES: usize = 120 << 10;
/// Large records per chunk, in bytes: enough that a reader thread queues a few of them
/// per chunk handed over (about 1 MiB in all), not one, and their buffers are reused
/// while they are still in the CPU's cache.
const CHUNK_HELD_BYTES: usize = 256 << 10;
/// How many records ahead of the one taken from a chunk its memory is fetched.
const AHEAD: usize = 8;
/// Chunks queued per reader thread.
const CHUNKS_QUEUED: usize = 4;

/// Records read from one file, in order.
pub(super) struct Chunk {
    pub(super) batch: RecordBatch,
    pub(super) origins: Vec<Origin>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            batch: RecordBatch {
                data: Vec::with_capacity(CHUNK_BYTES + 4096),
                ends: Vec::with_capacity(CHUNK_RECORDS),
                ..RecordBatch::default()
            },
            origins: Vec::with_capacity(CHUNK_RECORDS),
        }
    }
}

enum Msg {
    Chunk(Chunk),
    Error(Error),
    /// The reader is done (its file ended, or it stopped at an error).
    End,
}

/// The plan's files and how to open them, shared by all reader threads.
pub(super) struct Files {
    pub(super) paths: Vec<String>,
    pub(super) read: ReadOptions,
    pub(super) opener: SharedOpener,
    pub(super) on_error: OnError,
    /// Limits how many files are read at once, when the plan does.
    pub(super) permits: Option<Permits>,
}

/// At most `n` reader threads reading at once (`interleave(num_parallel_calls=n)`): a
/// thread holds a permit while it fills a chunk, never while it waits to hand one over,
/// so the file the consumer waits for always gets its turn.
pub(super) struct Permits {
    free: Mutex<usize>,
    freed: Condvar,
}

struct Permit<'a>(&'a Permits);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let Ok(mut free) = self.0.free.lock() {
            *free += 1;
        }
        self.0.freed.notify_one();
    }
}

impl Permits {
    pub(super) fn new(n: usize) -> Permits {
        Permits {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    /// A permit, or `None` once `stop` is set.
    fn acquire(&self, stop: &AtomicBool) -> Option<Permit<'_>> {
        let mut free = self.free.lock().ok()?;
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            if *free > 0 {
                *free -= 1;
                return Some(Permit(self));
            }
            free = self
                .freed
                .wait_timeout(free, Duration::from_millis(50))
                .ok()?
                .0;
        }
    }
}

impl Files {
    fn open(&self, file: usize) -> Result<SourceReader> {
        SourceReader::open(&self.paths[file], &self.read, &self.opener, None)
    }

    /// Reads file `file` into chunks sent to `tx`; `false` when the consumer has gone.
    fn read_into(&self, file: usize, tx: &Sender<Msg>, stop: &AtomicBool) -> bool {
        let mut reader = match self.open(file) {
            Ok(r) => r,
            Err(e) => return tx.send(Msg::Error(e)).is_ok(),
        };
        loop {
            let permit = match &self.permits {
                Some(permits) => match permits.acquire(stop) {
                    Some(p) => Some(p),
                    None => return false,
                },
                None => None,
            };
            // One chunk: filled holding the permit, handed over without it.
            let mut chunk = Chunk::new();
            let mut ended = false;
            let mut error = None;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                let (index, offset) = reader.position();
                match next_into_chunk(&mut reader, &mut chunk.batch) {
                    Ok(true) => {
                        chunk.origins.push(Origin {
                            file: file as u32,
                            pass: 0,
                            index,
                            offset,
                        });
                        if chunk.origins.len() >= CHUNK_RECORDS
                            || chunk.batch.data.len() >= CHUNK_BYTES
                            || chunk.batch.held_bytes >= CHUNK_HELD_BYTES
                        {
                            break;
                        }
                    }
                    Ok(false) => {
                        ended = true;
                        break;
                    }
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            drop(permit);
            if !chunk.origins.is_empty() && tx.send(Msg::Chunk(chunk)).is_err() {
                return false;
            }
            if let Some(e) = error {
                let go_on = e.resumable && self.on_error == OnError::Continue;
                if tx.send(Msg::Error(e)).is_err() {
                    return false;
                }
                if !go_on {
                    return true;
                }
            } else if ended {
                return true;
            }
        }
    }
}

/// The next record of `reader` onto the end of `batch`; `false` at the end. A large
/// record goes from the file straight into a buffer made for exactly it, which it is
/// kept in (see [`RecordBatch::push_held`]): not into a buffer doubled (and copied) as
/// the record arrives, nor copied again into the chunk.
fn next_into_chunk(reader: &mut SourceReader, batch: &mut RecordBatch) -> Result<bool> {
    let len = match reader.next_or_large(&mut batch.data, true)? {
        Next::End => return Ok(false),
        Next::Appended => {
            batch.ends.push(batch.data.len());
            return Ok(true);
        }
        // The reader checked that the file holds the record's `len` bytes.
        Next::Large(len) => len as usize,
    };
    let mut record = crate::multi::record_buffer(len)?;
    // SAFETY: `record_buffer` made room for `len` bytes; `read_large` only writes
    // them, and they are counted in only once all of them were.
    let room = unsafe { std::slice::from_raw_parts_mut(record.as_mut_ptr(), len) };
    reader.read_large(len as u64, room)?;
    // SAFETY: `read_large` filled all `len` bytes.
    unsafe { record.set_len(len) };
    batch.push_held(record);
    Ok(true)
}

/// A reader thread for one file, with the chunk being taken apart.
struct Slot {
    rx: Receiver<Msg>,
    chunk: Option<(Chunk, usize)>,
}

impl Slot {
    fn spawn(files: &Arc<Files>, file: usize, stop: &Arc<AtomicBool>) -> Slot {
        let (tx, rx) = bounded(CHUNKS_QUEUED);
        let files = Arc::clone(files);
        let stop = Arc::clone(stop);
        spawn("tfr-read", move || {
            crate::cancel::stop_on(&stop);
            match Error::catch("a read thread", || files.read_into(file, &tx, &stop)) {
                Ok(true) => {
                    let _ = tx.send(Msg::End);
                }
                Ok(false) => {}
                Err(e) => {
                    let _ = tx.send(Msg::Error(e));
                }
            }
        });
        Slot { rx, chunk: None }
    }
}

/// Whether `chunk` has a record left; a chunk taken apart is let go.
#[inline(always)]
fn has_next(chunk: &mut Option<(Chunk, usize)>) -> bool {
    match chunk {
        Some((c, pos)) if *pos < c.origins.len() => true,
        _ => {
            *chunk = None;
            false
        }
    }
}

/// The next record of a chunk that has one (see [`has_next`]), lent from the chunk, or,
/// when it is a large record, handed over in the buffer it was read into (`held`).
#[inline(always)]
fn lend<'a>(chunk: &'a mut Option<(Chunk, usize)>, held: &mut Held) -> (&'a [u8], Origin) {
    let (c, pos) = chunk.as_mut().expect("a chunk with a record left");
    let i = *pos;
    *pos += 1;
    // The chunk was filled on another core: its next records are fetched ahead of use.
    if let Some(&end) = c.batch.ends.get(i + AHEAD) {
        let data = c.batch.data.as_ptr().wrapping_add(end);
        crate::prefetch::prefetch(data);
        crate::prefetch::prefetch(data.wrapping_add(64));
        crate::prefetch::prefetch(c.origins.as_ptr().wrapping_add(i + AHEAD));
    }
    let large = &mut c.batch.held;
    if !large.is_empty() {
        if let Ok(k) = large.binary_search_by_key(&i, |h| h.0) {
            *held = Some(std::mem::take(&mut large[k].1));
            return (&[], c.origins[i]);
        }
    }
    (c.batch.get(i), c.origins[i])
}

/// A lent record appended to `out` (a large one stays in `held`).
#[inline(always)]
fn append(lent: Lent<'_>, out: &mut Vec<u8>) -> Option<Origin> {
    lent.map(|(record, origin)| {
        out.extend_from_slice(record);
        origin
    })
}

/// tf.data's interleave: `cycle_length` files open at once, `block_length` records from
/// each in turn, a finished file replaced by the next one in its slot.
pub(super) struct Interleave {
    files: Arc<Files>,
    order: FileIter,
    slots: Vec<Option<Slot>>,
    cycle_index: usize,
    block_index: usize,
    block_length: usize,
    end_of_input: bool,
    open: usize,
    stop: Arc<AtomicBool>,
}

impl Interleave {
    pub(super) fn new(
        files: Arc<Files>,
        order: FileIter,
        cycle_length: usize,
        block_length: usize,
    ) -> Interleave {
        Interleave {
            files,
            order,
            slots: (0..cycle_length).map(|_| None).collect(),
            cycle_index: 0,
            block_index: 0,
            block_length,
            end_of_input: false,
            open: 0,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    fn advance(&mut self) {
        self.block_index = 0;
        self.cycle_index = (self.cycle_index + 1) % self.slots.len();
    }
}

impl Stream for Interleave {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        Ok(append(self.next_lent(&mut Vec::new(), held)?, out))
    }

    fn next_lent<'a>(&'a mut self, _: &'a mut Vec<u8>, held: &mut Held) -> Result<Lent<'a>> {
        while !self.end_of_input || self.open > 0 {
            let ci = self.cycle_index;
            if let Some(slot) = self.slots[ci].as_mut() {
                if has_next(&mut slot.chunk) {
                    self.block_index += 1;
                    if self.block_index == self.block_length {
                        self.advance();
                    }
                    let slot = self.slots[ci].as_mut().expect("the slot just read");
                    return Ok(Some(lend(&mut slot.chunk, held)));
                }
                match crate::cancel::recv(&slot.rx)? {
                    Some(Msg::Chunk(c)) => slot.chunk = Some((c, 0)),
                    Some(Msg::Error(e)) => return Err(e),
                    Some(Msg::End) | None => {
                        self.slots[ci] = None;
                        self.open -= 1;
                        self.advance();
                    }
                }
            } else if !self.end_of_input {
                match self.order.next() {
                    Some(file) => {
                        self.slots[ci] = Some(Slot::spawn(&self.files, file, &self.stop));
                        self.open += 1;
                    }
                    None => self.end_of_input = true,
                }
            } else {
                self.advance();
            }
        }
        Ok(None)
    }
}

impl Drop for Interleave {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Interleave without a fixed order: `workers` threads each read whole files taken from
/// a shared queue, and records arrive in whatever order the threads deliver them.
pub(super) struct Sloppy {
    rx: Receiver<Msg>,
    chunk: Option<(Chunk, usize)>,
    running: usize,
    stop: Arc<AtomicBool>,
}

impl Sloppy {
    pub(super) fn new(files: Arc<Files>, order: FileIter, workers: usize) -> Sloppy {
        let (tx, rx) = bounded(CHUNKS_QUEUED * workers);
        let order = Arc::new(Mutex::new(order));
        let stop = Arc::new(AtomicBool::new(false));
        for _ in 0..workers {
            let (tx, files, order, stop) = (
                tx.clone(),
                Arc::clone(&files),
                Arc::clone(&order),
                Arc::clone(&stop),
            );
            spawn("tfr-read", move || {
                crate::cancel::stop_on(&stop);
                let run = Error::catch("a read thread", || {
                    loop {
                        let next = order.lock().map(|mut o| o.next()).unwrap_or(None);
                        let Some(file) = next else { break };
                        if !files.read_into(file, &tx, &stop) {
                            return false;
                        }
                    }
                    true
                });
                match run {
                    Ok(true) => {
                        let _ = tx.send(Msg::End);
                    }
                    Ok(false) => {}
                    Err(e) => {
                        let _ = tx.send(Msg::Error(e));
                    }
                }
            });
        }
        Sloppy {
            rx,
            chunk: None,
            running: workers,
            stop,
        }
    }
}

impl Stream for Sloppy {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        Ok(append(self.next_lent(&mut Vec::new(), held)?, out))
    }

    fn next_lent<'a>(&'a mut self, _: &'a mut Vec<u8>, held: &mut Held) -> Result<Lent<'a>> {
        loop {
            if has_next(&mut self.chunk) {
                return Ok(Some(lend(&mut self.chunk, held)));
            }
            if self.running == 0 {
                return Ok(None);
            }
            match crate::cancel::recv(&self.rx)? {
                Some(Msg::Chunk(c)) => self.chunk = Some((c, 0)),
                Some(Msg::Error(e)) => return Err(e),
                Some(Msg::End) => self.running -= 1,
                None => self.running = 0,
            }
        }
    }
}

impl Drop for Sloppy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{named_files, plan, records, sorted, strings, write_file};
    use super::super::{Payload, Pipeline};

    #[test]
    fn one_file_at_a_time_reads_files_back_to_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(named_files(dir.path(), &[2, 0, 3]));
        assert_eq!(records(p), strings(&["a0", "a1", "c0", "c1", "c2"]));
    }

    #[test]
    fn interleave_takes_blocks_from_each_open_file_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[5, 3, 4]));
        p.cycle_length = 2;
        p.block_length = 2;
        // `c` opens in `b`'s slot once `b` ends; a file ending part way through its
        // block hands the turn to the next slot.
        assert_eq!(
            records(p),
            strings(&["a0", "a1", "b0", "b1", "a2", "a3", "b2", "a4", "c0", "c1", "c2", "c3"])
        );
    }

    #[test]
    fn an_ended_file_is_replaced_on_its_slot_next_turn() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[2, 4, 2]));
        p.cycle_length = 2;
        p.block_length = 1;
        assert_eq!(
            records(p),
            strings(&["a0", "b0", "a1", "b1", "b2", "c0", "b3", "c1"])
        );
    }

    #[test]
    fn a_cycle_longer_than_the_file_list_round_robins_all_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[3, 1, 2]));
        p.cycle_length = 8;
        p.block_length = 1;
        assert_eq!(records(p), strings(&["a0", "b0", "c0", "a1", "c1", "a2"]));
    }

    /// The interleave record by record: each visit to a slot takes one record, opens the
    /// next file into an empty slot, or finds the slot's file ended and empties it.
    fn interleave_model(counts: &[usize], cycle: usize, block: usize) -> Vec<String> {
        let mut slots: Vec<Option<(usize, usize)>> = vec![None; cycle];
        let (mut cycle_index, mut block_index, mut next_file, mut open) = (0, 0, 0, 0);
        let mut end_of_input = false;
        let mut out = Vec::new();
        let advance = |cycle_index: &mut usize, block_index: &mut usize| {
            *block_index = 0;
            *cycle_index = (*cycle_index + 1) % cycle;
        };
        while !end_of_input || open > 0 {
            match &mut slots[cycle_index] {
                Some((file, pos)) if *pos < counts[*file] => {
                    out.push(format!("{}{}", char::from(b'a' + *file as u8), pos));
                    *pos += 1;
                    block_index += 1;
                    if block_index == block {
                        advance(&mut cycle_index, &mut block_index);
                    }
                }
                Some(_) => {
                    slots[cycle_index] = None;
                    open -= 1;
                    advance(&mut cycle_index, &mut block_index);
                }
                None if !end_of_input => {
                    if next_file < counts.len() {
                        slots[cycle_index] = Some((next_file, 0));
                        next_file += 1;
                        open += 1;
                    } else {
                        end_of_input = true;
                    }
                }
                None => advance(&mut cycle_index, &mut block_index),
            }
        }
        out
    }

    #[test]
    fn interleave_order_does_not_depend_on_how_records_are_chunked() {
        let dir = tempfile::tempdir().unwrap();
        // Files of more than one chunk (256 records), and empty ones.
        let counts = [300, 7, 0, 260, 1, 40, 513];
        let files = named_files(dir.path(), &counts);
        for (cycle, block) in [(1, 1), (2, 1), (3, 5), (4, 256), (7, 300), (2, 1000)] {
            let mut p = plan(files.clone());
            p.cycle_length = cycle;
            p.block_length = block;
            let got = records(p.clone());
            assert_eq!(got.len(), counts.iter().sum::<usize>());
            assert!(
                got == interleave_model(&counts, cycle, block),
                "cycle {cycle}, block {block}"
            );
            assert_eq!(records(p.clone()), got, "the same order again");
            // Reading one or two files at a time changes nothing of the order.
            for reads in [1, 2] {
                p.parallel_reads = reads;
                assert!(
                    records(p.clone()) == got,
                    "cycle {cycle}, block {block}, {reads} reads"
                );
            }
        }
    }

    #[test]
    fn without_determinism_every_record_arrives_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let counts = [300, 7, 260, 0, 40];
        let mut p = plan(named_files(dir.path(), &counts));
        p.cycle_length = 3;
        p.deterministic = false;
        let got = records(p.clone());
        p.deterministic = true;
        p.cycle_length = 1;
        assert_eq!(sorted(got.clone()), sorted(records(p)));
        for (i, &n) in counts.iter().enumerate() {
            let prefix = char::from(b'a' + i as u8).to_string();
            let of_file: Vec<&String> = got.iter().filter(|r| r.starts_with(&prefix)).collect();
            let expected: Vec<String> = (0..n).map(|k| format!("{prefix}{k}")).collect();
            assert_eq!(of_file, expected.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn records_longer_than_a_chunk_and_chunks_of_many_records_arrive_whole() {
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 100_000]).collect();
        let small: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let files = vec![
            write_file(dir.path(), "big", &big),
            write_file(dir.path(), "small", &small),
        ];
        let mut p = plan(files);
        p.cycle_length = 2;
        p.block_length = 1;
        let mut pipeline = Pipeline::start(p, None).unwrap();
        let mut got = Vec::new();
        while let Some(item) = pipeline.next_item() {
            let Ok(Payload::Records(batch, _)) = item else {
                panic!("an error or a parsed unit");
            };
            got.extend(batch.iter().map(<[u8]>::to_vec));
        }
        let mut expected = Vec::new();
        for i in 0..1000 {
            if i < big.len() {
                expected.push(big[i].clone());
            }
            expected.push(small[i].clone());
        }
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "records differ");
    }
}
