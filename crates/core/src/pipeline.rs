//! A streaming input pipeline on native threads: files → interleave → record stages →
//! batches → parse, with bounded queues between the threads.
//!
//! Reader threads read, decompress and check records, one per open file, and hand them
//! on in chunks. One pipeline thread runs the interleave and the record stages (shard,
//! skip, take, cache, shuffle, repeat) and cuts batches; parse workers turn batches into
//! columns. The consumer receives finished units in order, at most `prefetch` ahead.
//! Memory stays bounded by the queues and the buffers the plan asks for (a shuffle
//! buffer, a cache), whatever the size of the files.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::error::{Error, Result};
use crate::image::{decode_batch, ImageSpec, PixelBatch, PixelPool};
use crate::parse::{parse_examples, Column, Parsed, Schema};
use crate::reader::{FileRecordReader, ReadOptions, RecordBatch, RecordReader};
use crate::writer::RecordWriter;

/// Where a record came from: its file (an index into the plan's file list), its index in
/// that file, and the byte offset of its header; `pass` tells apart the passes of a
/// `repeat` over it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    pub file: u32,
    pub pass: u32,
    pub index: u64,
    pub offset: u64,
}

/// Opens paths that are not local files (URLs), as byte streams.
pub trait Opener: Send + Sync {
    /// `None` when `path` is a local file, to be read natively.
    fn open(&self, path: &str) -> Option<Result<Box<dyn Read + Send>>>;
}

/// How files are ordered before they are read, applied in sequence to `0..files.len()`.
#[derive(Debug, Clone)]
pub enum FileOp {
    Shuffle { buffer: usize, seed: Option<u64> },
    Shard { num_shards: usize, index: usize },
    Skip(u64),
    Take(u64),
    Repeat(Option<u64>),
}

/// A stage applied to the stream of records.
#[derive(Clone)]
pub enum RecordOp {
    Shard { num_shards: u64, index: u64 },
    Skip(u64),
    Take(u64),
    Shuffle { buffer: usize, seed: Option<u64> },
    Repeat(Option<u64>),
    Cache(Arc<Cache>),
}

/// What to do when a record is damaged or does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Deliver the error and stop.
    Stop,
    /// Deliver the error and go on past it.
    Continue,
}

/// A whole pipeline, from files to output units.
#[derive(Clone)]
pub struct Plan {
    pub files: Vec<String>,
    pub read: ReadOptions,
    pub file_ops: Vec<FileOp>,
    pub cycle_length: usize,
    pub block_length: usize,
    /// `false` takes records from whichever open file has them ready.
    pub deterministic: bool,
    pub record_ops: Vec<RecordOp>,
    /// Records per output unit.
    pub batch_size: usize,
    /// Drop a last unit shorter than `batch_size`.
    pub drop_remainder: bool,
    pub schema: Option<Arc<Schema>>,
    pub parse_workers: usize,
    /// Finished units held ready ahead of the consumer.
    pub prefetch: usize,
    pub on_error: OnError,
    /// Mixed into every shuffle seed: the iteration (epoch) this run is.
    pub epoch: u64,
    /// Image features decoded after parsing.
    pub images: Vec<ImageStage>,
}

/// Decodes the encoded images of one parsed bytes feature.
#[derive(Debug, Clone)]
pub struct ImageStage {
    /// The feature's position in the schema.
    pub feature: usize,
    pub spec: ImageSpec,
    /// Seeds each record's augmentation, with the epoch and the record's origin.
    pub seed: u64,
}

/// Records per chunk handed from a reader thread to the pipeline thread.
const CHUNK_RECORDS: usize = 256;
/// Kept under the allocator's mmap threshold, so chunk buffers are reused, not faulted in.
const CHUNK_BYTES: usize = 60 << 10;
/// Chunks queued per reader thread.
const CHUNKS_QUEUED: usize = 4;

/// Starts a named thread; the pipeline's threads end when their queues disconnect.
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("the OS could not start a pipeline thread")
}

fn mix(a: u64, b: u64) -> u64 {
    // splitmix64 of the combination: well spread seeds from small counters.
    let mut z = a ^ b
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn rng_for(seed: Option<u64>, salt: u64) -> fastrand::Rng {
    match seed {
        Some(s) => fastrand::Rng::with_seed(mix(s, salt)),
        None => fastrand::Rng::new(),
    }
}

// ---------------------------------------------------------------------------------------
// File order

type FileIter = Box<dyn Iterator<Item = usize> + Send>;

/// The order in which a plan reads its `n` files, for the run salted with `epoch`.
pub fn file_order_of(ops: &[FileOp], n: usize, epoch: u64) -> FileIter {
    let ops: Arc<[FileOp]> = ops.to_vec().into();
    file_order(&ops, ops.len(), n, epoch)
}

fn file_order(ops: &Arc<[FileOp]>, upto: usize, n: usize, salt: u64) -> FileIter {
    if upto == 0 {
        return Box::new(0..n);
    }
    let upstream = || file_order(ops, upto - 1, n, salt);
    match ops[upto - 1] {
        FileOp::Shuffle { buffer, seed } => Box::new(ShuffleIter {
            inner: upstream(),
            buffer: Vec::new(),
            size: buffer.max(1),
            rng: rng_for(seed, mix(salt, upto as u64)),
        }),
        FileOp::Shard { num_shards, index } => {
            Box::new(upstream().skip(index).step_by(num_shards.max(1)))
        }
        FileOp::Skip(k) => Box::new(upstream().skip(k as usize)),
        FileOp::Take(k) => Box::new(upstream().take(k as usize)),
        FileOp::Repeat(count) => {
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

// ---------------------------------------------------------------------------------------
// Reader threads

/// Records read from one file, in order.
struct Chunk {
    batch: RecordBatch,
    origins: Vec<Origin>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            batch: RecordBatch {
                data: Vec::with_capacity(CHUNK_BYTES + 4096),
                ends: Vec::with_capacity(CHUNK_RECORDS),
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
struct Files {
    paths: Vec<String>,
    read: ReadOptions,
    opener: Option<Arc<dyn Opener>>,
    on_error: OnError,
}

type BoxedRecords = RecordReader<std::io::Chain<std::io::Cursor<Vec<u8>>, Box<dyn Read + Send>>>;

enum AnyReader {
    Local(FileRecordReader),
    Stream(BoxedRecords),
}

impl AnyReader {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        match self {
            AnyReader::Local(r) => r.next_record_into(out),
            AnyReader::Stream(r) => r.next_record_into(out),
        }
    }

    fn position(&self) -> (u64, u64) {
        match self {
            AnyReader::Local(r) => (r.record_index(), r.offset()),
            AnyReader::Stream(r) => (r.record_index(), r.offset()),
        }
    }
}

impl Files {
    fn open(&self, file: usize) -> Result<AnyReader> {
        let path = &self.paths[file];
        if let Some(opener) = &self.opener {
            if let Some(stream) = opener.open(path) {
                let stream = stream.map_err(|e| e.with_path(path))?;
                return RecordReader::from_stream(stream, path, None, &self.read)
                    .map(AnyReader::Stream);
            }
        }
        FileRecordReader::open(path, &self.read).map(AnyReader::Local)
    }

    /// Reads file `file` into chunks sent to `tx`; `false` when the consumer has gone.
    fn read_into(&self, file: usize, tx: &Sender<Msg>, stop: &AtomicBool) -> bool {
        let mut reader = match self.open(file) {
            Ok(r) => r,
            Err(e) => return tx.send(Msg::Error(e)).is_ok(),
        };
        let mut chunk = Chunk::new();
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let (index, offset) = reader.position();
            match reader.next_into(&mut chunk.batch.data) {
                Ok(true) => {
                    chunk.batch.ends.push(chunk.batch.data.len());
                    chunk.origins.push(Origin {
                        file: file as u32,
                        pass: 0,
                        index,
                        offset,
                    });
                    if chunk.origins.len() >= CHUNK_RECORDS || chunk.batch.data.len() >= CHUNK_BYTES
                    {
                        let full = std::mem::replace(&mut chunk, Chunk::new());
                        if tx.send(Msg::Chunk(full)).is_err() {
                            return false;
                        }
                    }
                }
                Ok(false) => break,
                Err(e) => {
                    let go_on = e.resumable && self.on_error == OnError::Continue;
                    if !chunk.origins.is_empty() {
                        let part = std::mem::replace(&mut chunk, Chunk::new());
                        if tx.send(Msg::Chunk(part)).is_err() {
                            return false;
                        }
                    }
                    if tx.send(Msg::Error(e)).is_err() {
                        return false;
                    }
                    if !go_on {
                        return true;
                    }
                }
            }
        }
        chunk.origins.is_empty() || tx.send(Msg::Chunk(chunk)).is_ok()
    }
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
            if files.read_into(file, &tx, &stop) {
                let _ = tx.send(Msg::End);
            }
        });
        Slot { rx, chunk: None }
    }
}

/// Appends the next record of `chunk` to `out`.
fn take_from(chunk: &mut Option<(Chunk, usize)>, out: &mut Vec<u8>) -> Option<Origin> {
    let (c, pos) = chunk.as_mut()?;
    if *pos == c.origins.len() {
        *chunk = None;
        return None;
    }
    out.extend_from_slice(c.batch.get(*pos));
    let origin = c.origins[*pos];
    *pos += 1;
    Some(origin)
}

// ---------------------------------------------------------------------------------------
// Record streams

/// A stream of records: each call appends the next record's bytes to `out` and returns
/// where it came from, `Ok(None)` at the end, or an error at the point it occurred.
trait Stream: Send {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>>;
}

/// tf.data's interleave: `cycle_length` files open at once, `block_length` records from
/// each in turn, a finished file replaced by the next one in its slot.
struct Interleave {
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
    fn advance(&mut self) {
        self.block_index = 0;
        self.cycle_index = (self.cycle_index + 1) % self.slots.len();
    }
}

impl Stream for Interleave {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        while !self.end_of_input || self.open > 0 {
            let ci = self.cycle_index;
            if let Some(slot) = self.slots[ci].as_mut() {
                if let Some(origin) = take_from(&mut slot.chunk, out) {
                    self.block_index += 1;
                    if self.block_index == self.block_length {
                        self.advance();
                    }
                    return Ok(Some(origin));
                }
                match slot.rx.recv() {
                    Ok(Msg::Chunk(c)) => slot.chunk = Some((c, 0)),
                    Ok(Msg::Error(e)) => return Err(e),
                    Ok(Msg::End) | Err(_) => {
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
struct Sloppy {
    rx: Receiver<Msg>,
    chunk: Option<(Chunk, usize)>,
    running: usize,
    stop: Arc<AtomicBool>,
}

impl Sloppy {
    fn new(files: Arc<Files>, order: FileIter, workers: usize) -> Sloppy {
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
                loop {
                    let next = order.lock().map(|mut o| o.next()).unwrap_or(None);
                    let Some(file) = next else { break };
                    if !files.read_into(file, &tx, &stop) {
                        return;
                    }
                }
                let _ = tx.send(Msg::End);
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
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        loop {
            if let Some(origin) = take_from(&mut self.chunk, out) {
                return Ok(Some(origin));
            }
            if self.running == 0 {
                return Ok(None);
            }
            match self.rx.recv() {
                Ok(Msg::Chunk(c)) => self.chunk = Some((c, 0)),
                Ok(Msg::Error(e)) => return Err(e),
                Ok(Msg::End) => self.running -= 1,
                Err(_) => self.running = 0,
            }
        }
    }
}

impl Drop for Sloppy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct ShardStream {
    inner: Box<dyn Stream>,
    num_shards: u64,
    index: u64,
    position: u64,
    scratch: Vec<u8>,
}

impl Stream for ShardStream {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        loop {
            let mine = self.position % self.num_shards == self.index;
            let got = if mine {
                self.inner.next_into(out)?
            } else {
                self.scratch.clear();
                self.inner.next_into(&mut self.scratch)?
            };
            let Some(origin) = got else { return Ok(None) };
            self.position += 1;
            if mine {
                return Ok(Some(origin));
            }
        }
    }
}

struct SkipStream {
    inner: Box<dyn Stream>,
    left: u64,
    scratch: Vec<u8>,
}

impl Stream for SkipStream {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        while self.left > 0 {
            self.scratch.clear();
            if self.inner.next_into(&mut self.scratch)?.is_none() {
                self.left = 0;
                return Ok(None);
            }
            self.left -= 1;
        }
        self.inner.next_into(out)
    }
}

struct TakeStream {
    inner: Box<dyn Stream>,
    left: u64,
}

impl Stream for TakeStream {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        if self.left == 0 {
            return Ok(None);
        }
        let got = self.inner.next_into(out)?;
        if got.is_some() {
            self.left -= 1;
        }
        Ok(got)
    }
}

/// tf.data's shuffle: a buffer of `size` records; each output is a uniformly chosen
/// record of the buffer, whose place the next record read takes.
///
/// Records of up to [`INLINE`] bytes live inside their entry, next to their origin, so
/// that drawing one touches one place in memory; longer ones spill to a buffer of their
/// own, kept per slot and reused.
struct ShuffleStream {
    inner: Box<dyn Stream>,
    size: usize,
    entries: Vec<Entry>,
    spill: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// An error met while refilling, delivered after the record drawn before it.
    pending: Option<Error>,
    /// The slot the next output takes, drawn early so that its memory is fetched while
    /// this output is being delivered.
    next: Option<usize>,
    exhausted: bool,
    rng: fastrand::Rng,
}

const INLINE: usize = 100;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    origin: Origin,
    len: u32,
    data: [u8; INLINE],
}

impl ShuffleStream {
    fn new(inner: Box<dyn Stream>, size: usize, rng: fastrand::Rng) -> ShuffleStream {
        let size = size.max(1);
        ShuffleStream {
            inner,
            size,
            entries: Vec::with_capacity(size.min(1 << 20)),
            spill: Vec::with_capacity(size.min(1 << 20)),
            scratch: Vec::new(),
            pending: None,
            next: None,
            exhausted: false,
            rng,
        }
    }

    /// Puts the record in `scratch` into slot `i` (one past the end: a new slot).
    fn store(&mut self, i: usize, origin: Origin) {
        let len = self.scratch.len();
        let mut entry = Entry {
            origin,
            len: len as u32,
            data: [0; INLINE],
        };
        if i == self.entries.len() {
            self.spill.push(Vec::new());
        }
        if len <= INLINE {
            entry.data[..len].copy_from_slice(&self.scratch);
        } else {
            let spill = &mut self.spill[i];
            spill.clear();
            spill.extend_from_slice(&self.scratch);
        }
        if i == self.entries.len() {
            self.entries.push(entry);
        } else {
            self.entries[i] = entry;
        }
    }

    fn read(&mut self) -> Result<Option<Origin>> {
        self.scratch.clear();
        let got = self.inner.next_into(&mut self.scratch);
        if matches!(got, Ok(None)) {
            self.exhausted = true;
        }
        got
    }
}

impl Stream for ShuffleStream {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        while !self.exhausted && self.entries.len() < self.size {
            if let Some(origin) = self.read()? {
                self.store(self.entries.len(), origin);
            }
        }
        if self.entries.is_empty() {
            return Ok(None);
        }
        let i = match self.next.take() {
            Some(i) => i,
            None => self.rng.usize(..self.entries.len()),
        };
        let entry = &self.entries[i];
        let (origin, len) = (entry.origin, entry.len as usize);
        if len <= INLINE {
            out.extend_from_slice(&entry.data[..len]);
        } else {
            out.extend_from_slice(&self.spill[i]);
        }
        let refill = if self.exhausted {
            Ok(None)
        } else {
            self.read()
        };
        match refill {
            Ok(Some(next)) => {
                self.store(i, next);
                // The buffer stays full: the next draw has the same range, so it can be
                // drawn now and its entry loaded ahead of use.
                let j = self.rng.usize(..self.entries.len());
                std::hint::black_box(self.entries[j].len);
                self.next = Some(j);
            }
            other => {
                self.entries.swap_remove(i);
                self.spill.swap_remove(i);
                if let Err(e) = other {
                    self.pending = Some(e);
                }
            }
        }
        Ok(Some(origin))
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
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        loop {
            if let Some(mut origin) = self.inner.next_into(out)? {
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

/// Records kept after the first complete pass, replayed by every later one.
pub struct Cache {
    file: Option<String>,
    state: Mutex<Option<Arc<Cached>>>,
}

enum Cached {
    /// Segments of about [`SEGMENT_BYTES`] each, so that keeping records never copies the
    /// records kept before them.
    Memory(Vec<Chunk>),
    File,
}

const SEGMENT_BYTES: usize = 1 << 20;

impl Cache {
    /// Keeps records in memory.
    pub fn memory() -> Cache {
        Cache {
            file: None,
            state: Mutex::new(None),
        }
    }

    /// Keeps records in a TFRecord file at `path`, reused if it already exists.
    pub fn file(path: &str) -> Cache {
        Cache {
            file: Some(path.to_owned()),
            state: Mutex::new(None),
        }
    }

    fn complete(&self) -> Option<Arc<Cached>> {
        if let Some(c) = self.state.lock().ok()?.as_ref() {
            return Some(Arc::clone(c));
        }
        match &self.file {
            Some(path) if std::path::Path::new(path).is_file() => Some(Arc::new(Cached::File)),
            _ => None,
        }
    }

    /// Whether a complete pass has been kept.
    pub fn is_complete(&self) -> bool {
        self.complete().is_some()
    }
}

enum CacheStream {
    Filling {
        cache: Arc<Cache>,
        inner: Box<dyn Stream>,
        segments: Vec<Chunk>,
        writer: Option<Box<RecordWriter>>,
    },
    Memory {
        cached: Arc<Cached>,
        segment: usize,
        pos: usize,
    },
    File(Box<FileRecordReader>),
}

impl Stream for CacheStream {
    fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Origin>> {
        match self {
            CacheStream::Filling {
                cache,
                inner,
                segments,
                writer,
            } => {
                let start = out.len();
                match inner.next_into(out)? {
                    Some(origin) => {
                        match writer {
                            Some(w) => w.write(&out[start..])?,
                            None => {
                                let record = &out[start..];
                                let full = segments.last().is_none_or(|s| {
                                    s.batch.data.len() + record.len() > SEGMENT_BYTES
                                });
                                if full {
                                    segments.push(Chunk {
                                        batch: RecordBatch {
                                            data: Vec::with_capacity(
                                                SEGMENT_BYTES.max(record.len()),
                                            ),
                                            ends: Vec::new(),
                                        },
                                        origins: Vec::new(),
                                    });
                                }
                                let last = segments.last_mut().expect("a segment was just added");
                                last.batch.push(record);
                                last.origins.push(origin);
                            }
                        }
                        Ok(Some(origin))
                    }
                    None => {
                        let kept = match writer.take() {
                            Some(mut w) => {
                                w.close()?;
                                Cached::File
                            }
                            None => Cached::Memory(std::mem::take(segments)),
                        };
                        if let Ok(mut state) = cache.state.lock() {
                            *state = Some(Arc::new(kept));
                        }
                        Ok(None)
                    }
                }
            }
            CacheStream::Memory {
                cached,
                segment,
                pos,
            } => {
                let Cached::Memory(segments) = cached.as_ref() else {
                    return Ok(None);
                };
                while let Some(seg) = segments.get(*segment) {
                    if *pos < seg.origins.len() {
                        out.extend_from_slice(seg.batch.get(*pos));
                        *pos += 1;
                        return Ok(Some(seg.origins[*pos - 1]));
                    }
                    *segment += 1;
                    *pos = 0;
                }
                Ok(None)
            }
            CacheStream::File(reader) => {
                let (index, offset) = (reader.record_index(), reader.offset());
                Ok(reader.next_record_into(out)?.then_some(Origin {
                    file: u32::MAX,
                    pass: 0,
                    index,
                    offset,
                }))
            }
        }
    }
}

impl Drop for CacheStream {
    fn drop(&mut self) {
        // A pass abandoned part way leaves no cache behind.
        if let CacheStream::Filling {
            writer: Some(w), ..
        } = self
        {
            w.abort();
        }
    }
}

fn cache_stream(
    cache: &Arc<Cache>,
    plan: &Arc<Plan>,
    files: &Arc<Files>,
    upto: usize,
    salt: u64,
) -> Result<Box<dyn Stream>> {
    if let Some(cached) = cache.complete() {
        return Ok(match (cached.as_ref(), &cache.file) {
            (Cached::File, Some(path)) => Box::new(CacheStream::File(Box::new(
                FileRecordReader::open(path, &ReadOptions::default())?,
            ))),
            _ => Box::new(CacheStream::Memory {
                cached,
                segment: 0,
                pos: 0,
            }),
        });
    }
    let writer = match &cache.file {
        Some(path) => Some(Box::new(RecordWriter::create(path, None, None, true)?)),
        None => None,
    };
    Ok(Box::new(CacheStream::Filling {
        cache: Arc::clone(cache),
        inner: build(plan, files, upto, salt)?,
        segments: Vec::new(),
        writer,
    }))
}

/// Builds the stream of records after the first `upto` record stages.
fn build(plan: &Arc<Plan>, files: &Arc<Files>, upto: usize, salt: u64) -> Result<Box<dyn Stream>> {
    if upto == 0 {
        let order = file_order_of(&plan.file_ops, plan.files.len(), salt);
        let cycle = plan.cycle_length.max(1);
        if !plan.deterministic {
            return Ok(Box::new(Sloppy::new(Arc::clone(files), order, cycle)));
        }
        return Ok(Box::new(Interleave {
            files: Arc::clone(files),
            order,
            slots: (0..cycle).map(|_| None).collect(),
            cycle_index: 0,
            block_index: 0,
            block_length: plan.block_length.max(1),
            end_of_input: false,
            open: 0,
            stop: Arc::new(AtomicBool::new(false)),
        }));
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
        RecordOp::Cache(cache) => cache_stream(cache, plan, files, upto - 1, salt)?,
    })
}

// ---------------------------------------------------------------------------------------
// Batches, parsing and the output queue

/// What one output unit holds.
pub enum Payload {
    Records(RecordBatch),
    /// One entry per schema feature, for this many records.
    Parsed(Vec<Decoded>, usize),
}

/// A parsed feature of a unit, or its images decoded.
pub enum Decoded {
    Feature(Parsed),
    Images(PixelBatch),
}

/// One item of the output: a unit of records or an error at its place in the stream.
pub type Item = Result<Payload>;

struct Work {
    batch: RecordBatch,
    origins: Vec<Origin>,
    reply: Sender<Vec<Item>>,
}

/// A unit on its way to the consumer.
enum Unit {
    Ready(Vec<Item>),
    /// Being parsed by a worker.
    Pending(Receiver<Vec<Item>>),
    /// To be parsed by the consumer itself.
    Unparsed(RecordBatch, Vec<Origin>),
}

/// A running pipeline. Dropping it stops its threads.
pub struct Pipeline {
    plan: Arc<Plan>,
    files: Arc<Files>,
    output: Receiver<Unit>,
    ready: std::collections::VecDeque<Item>,
    done: bool,
    stop: Arc<AtomicBool>,
    producer: Option<thread::JoinHandle<()>>,
    pool: Arc<PixelPool>,
}

impl Pipeline {
    /// Where the buffers of decoded image batches go back to once they are freed.
    pub fn pixel_pool(&self) -> Arc<PixelPool> {
        Arc::clone(&self.pool)
    }

    /// Starts the threads of `plan`. `opener` reads paths that are not local files.
    ///
    /// With a schema and `parse_workers == 0`, batches are parsed by the thread that
    /// calls [`Pipeline::next_item`], in parallel with the pipeline thread.
    pub fn start(plan: Plan, opener: Option<Arc<dyn Opener>>) -> Result<Pipeline> {
        if plan.files.len() > u32::MAX as usize - 1 {
            return Err(Error::invalid("too many files for one pipeline"));
        }
        let files = Arc::new(Files {
            paths: plan.files.clone(),
            read: plan.read,
            opener,
            on_error: plan.on_error,
        });
        let plan = Arc::new(plan);
        let (out_tx, out_rx) = bounded(plan.prefetch.max(1));
        let workers = if plan.schema.is_some() {
            plan.parse_workers
        } else {
            0
        };
        let (work_tx, work_rx) = bounded::<Work>(workers.max(1));
        let pool = Arc::new(PixelPool::default());
        for _ in 0..workers {
            let rx = work_rx.clone();
            let plan = Arc::clone(&plan);
            let files = Arc::clone(&files);
            let pool = Arc::clone(&pool);
            spawn("tfr-parse", move || {
                for work in rx {
                    let items = parse_unit(&plan, &files, &pool, work.batch, &work.origins);
                    let _ = work.reply.send(items);
                }
            });
        }
        let work_tx = (workers > 0).then_some(work_tx);
        let (producer_plan, producer_files) = (Arc::clone(&plan), Arc::clone(&files));
        let stop = Arc::new(AtomicBool::new(false));
        let producer_stop = Arc::clone(&stop);
        let producer = spawn("tfr-pipeline", move || {
            produce(
                &producer_plan,
                &producer_files,
                &out_tx,
                work_tx.as_ref(),
                &producer_stop,
            )
        });
        Ok(Pipeline {
            plan,
            files,
            output: out_rx,
            ready: Default::default(),
            done: false,
            stop,
            producer: Some(producer),
            pool,
        })
    }

    /// The next item, or `None` at the end. Blocks until one is ready.
    pub fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            match self.output.recv() {
                Ok(Unit::Ready(items)) => self.ready.extend(items),
                Ok(Unit::Pending(reply)) => match reply.recv() {
                    Ok(items) => self.ready.extend(items),
                    Err(_) => self.done = true,
                },
                Ok(Unit::Unparsed(batch, origins)) => {
                    let items = parse_unit(&self.plan, &self.files, &self.pool, batch, &origins);
                    self.ready.extend(items);
                }
                Err(_) => self.done = true,
            }
        }
    }
}

impl Pipeline {
    /// Stops the pipeline and waits for its threads to let go of their files (and to
    /// remove a cache file left half written).
    pub fn close(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.output = crossbeam_channel::never();
        self.ready.clear();
        self.done = true;
        if let Some(producer) = self.producer.take() {
            let _ = producer.join();
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The pipeline thread: runs the record stages and cuts units.
fn produce(
    plan: &Arc<Plan>,
    files: &Arc<Files>,
    out: &Sender<Unit>,
    work: Option<&Sender<Work>>,
    stop: &AtomicBool,
) {
    let mut stream = match build(plan, files, plan.record_ops.len(), plan.epoch) {
        Ok(s) => s,
        Err(e) => {
            let _ = out.send(Unit::Ready(vec![Err(e)]));
            return;
        }
    };
    let size = plan.batch_size.max(1);
    let emit = |batch: RecordBatch, origins: Vec<Origin>| -> bool {
        if plan.schema.is_none() {
            return out
                .send(Unit::Ready(vec![Ok(Payload::Records(batch))]))
                .is_ok();
        }
        let Some(work) = work else {
            return out.send(Unit::Unparsed(batch, origins)).is_ok();
        };
        let (reply, rx) = bounded(1);
        out.send(Unit::Pending(rx)).is_ok()
            && work
                .send(Work {
                    batch,
                    origins,
                    reply,
                })
                .is_ok()
    };
    let mut batch = RecordBatch::default();
    let mut origins = Vec::with_capacity(size.min(1 << 16));
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match stream.next_into(&mut batch.data) {
            Ok(Some(origin)) => {
                batch.ends.push(batch.data.len());
                origins.push(origin);
                if origins.len() == size {
                    // The next batch starts with room for one like this one.
                    let next = RecordBatch {
                        data: Vec::with_capacity(batch.data.len() + batch.data.len() / 4),
                        ends: Vec::with_capacity(size),
                    };
                    let full = std::mem::replace(&mut batch, next);
                    let done = std::mem::replace(&mut origins, Vec::with_capacity(size));
                    if !emit(full, done) {
                        return;
                    }
                }
            }
            Ok(None) => {
                if !origins.is_empty() && !plan.drop_remainder {
                    emit(batch, origins);
                }
                return;
            }
            Err(e) => {
                // Bytes a failed read left behind are not a record.
                batch.data.truncate(batch.ends.last().copied().unwrap_or(0));
                if plan.on_error == OnError::Stop {
                    // Records read before the damage are not lost: they go out first.
                    if !origins.is_empty() && !plan.drop_remainder && !emit(batch, origins) {
                        return;
                    }
                    let _ = out.send(Unit::Ready(vec![Err(e)]));
                    return;
                }
                // The unit being cut goes on filling after the error.
                if out.send(Unit::Ready(vec![Err(e)])).is_err() {
                    return;
                }
            }
        }
    }
}

/// Names the file, offset and record of an error raised for a record from `origin`.
fn locate(mut e: Error, files: &Files, origin: Option<&Origin>) -> Error {
    if let Some(o) = origin {
        if let Some(path) = files.paths.get(o.file as usize) {
            e.path = Some(path.clone());
            e.offset = Some(o.offset);
            e.record_index = Some(o.index);
        }
    }
    e
}

/// Parses a unit and decodes its images. An error names the record's index in the unit.
fn process(
    plan: &Plan,
    pool: &PixelPool,
    records: &[&[u8]],
    origins: &[Origin],
) -> Result<Vec<Decoded>> {
    let schema = plan.schema.as_ref().expect("a parsed unit has a schema");
    let parsed = parse_examples(schema, records)?;
    let mut out: Vec<Decoded> = parsed.into_iter().map(Decoded::Feature).collect();
    for stage in &plan.images {
        let Some(Decoded::Feature(Parsed {
            values: Column::Bytes { data, ends },
            ..
        })) = out.get(stage.feature)
        else {
            return Err(Error::invalid("images are decoded from a bytes feature"));
        };
        if ends.len() != records.len() {
            return Err(Error::invalid(
                "images are decoded from a feature with one value per record",
            ));
        }
        let images: Vec<&[u8]> = (0..ends.len())
            .map(|i| &data[if i == 0 { 0 } else { ends[i - 1] }..ends[i]])
            .collect();
        let base = mix(stage.seed, plan.epoch);
        let seeds: Vec<u64> = origins
            .iter()
            .map(|o| mix(base, mix(((o.file as u64) << 32) | o.pass as u64, o.index)))
            .collect();
        let key = &schema.specs()[stage.feature].key;
        let pixels =
            decode_batch(&images, &seeds, &stage.spec, Some(pool)).map_err(|e| e.with_key(key))?;
        out[stage.feature] = Decoded::Images(pixels);
    }
    Ok(out)
}

fn parse_unit(
    plan: &Plan,
    files: &Files,
    pool: &PixelPool,
    batch: RecordBatch,
    origins: &[Origin],
) -> Vec<Item> {
    if plan.schema.is_none() {
        return vec![Ok(Payload::Records(batch))];
    }
    let records: Vec<&[u8]> = batch.iter().collect();
    match process(plan, pool, &records, origins) {
        Ok(parsed) => vec![Ok(Payload::Parsed(parsed, records.len()))],
        Err(e) if plan.on_error == OnError::Stop => {
            let origin = e.record_index.and_then(|i| origins.get(i as usize));
            vec![Err(locate(e, files, origin))]
        }
        Err(_) => {
            // Find every record that fails on its own; process the rest together.
            let mut items = Vec::new();
            let mut good = Vec::with_capacity(records.len());
            let mut good_origins = Vec::with_capacity(records.len());
            for (record, origin) in records.iter().zip(origins) {
                match process(plan, pool, &[record], std::slice::from_ref(origin)) {
                    Ok(_) => {
                        good.push(*record);
                        good_origins.push(*origin);
                    }
                    Err(mut e) => {
                        e.record_index = None;
                        items.push(Err(locate(e, files, Some(origin))));
                    }
                }
            }
            if !good.is_empty() {
                match process(plan, pool, &good, &good_origins) {
                    Ok(parsed) => items.push(Ok(Payload::Parsed(parsed, good.len()))),
                    Err(e) => {
                        let origin = e.record_index.and_then(|i| good_origins.get(i as usize));
                        items.push(Err(locate(e, files, origin)))
                    }
                }
            }
            items
        }
    }
}
