//! The stages of a pipeline over elements the engine does not look into: what follows a
//! user function (`map`, `filter`). The caller supplies the elements, the functions and
//! how a batch of elements becomes one; the stages order, pick, shuffle and group them.
//!
//! `T` is an element and `E` the caller's error: a function's failure passes through
//! unchanged, and the stage that met it goes on with the next element when called again.

use std::collections::VecDeque;
use std::sync::Arc;

pub use super::element_stream::{ChunkFn, CollateFn, Elements, FilterFn, MapFn, SourceFn};
pub use super::element_threads::{Lock, LockFn, Workers};
use super::element_threads::{ParallelMapElements, PrefetchElements};
use super::origin::{mix, rng_for};

/// Where a `cache` stage keeps the elements of its first complete pass.
pub trait ElementStore<T, E>: Send + Sync {
    /// The kept elements, once a complete pass was kept.
    fn replay(&self) -> Result<Option<Box<dyn Elements<T, E>>>, E>;
    /// Starts keeping a pass.
    fn keeper(&self) -> Result<Box<dyn Keeper<T, E>>, E>;
}

/// Keeps one pass's elements; dropped without [`Keeper::finish`], it keeps none of them.
pub trait Keeper<T, E>: Send {
    fn keep(&mut self, x: &T) -> Result<(), E>;
    /// The pass is complete: what was kept is what later passes replay.
    fn finish(self: Box<Self>) -> Result<(), E>;
}

/// A stage over elements.
pub enum ElementOp<T, E> {
    Map(MapFn<T, E>),
    /// `map` with `num_parallel_calls`: the function on threads, the elements in order.
    ParallelMap {
        f: MapFn<T, E>,
        workers: Workers,
        lock: Lock<E>,
    },
    Filter(FilterFn<T, E>),
    /// tf.data's shuffle: each output drawn at random from a buffer of `buffer` elements.
    Shuffle {
        buffer: usize,
        seed: Option<u64>,
    },
    Batch {
        size: usize,
        drop_remainder: bool,
        collate: CollateFn<T, E>,
    },
    /// A function over chunks of up to `size` elements at a time (parsing, decoding).
    Chunks {
        size: usize,
        f: ChunkFn<T, E>,
    },
    Take(u64),
    Skip(u64),
    Shard {
        num_shards: u64,
        index: u64,
    },
    /// The stages before it, again: `None` without end. Each pass after the first gets a
    /// seed of its own; a pass that yields nothing ends the repeat.
    Repeat(Option<u64>),
    /// What comes before it made on a thread of its own, `size` elements ahead.
    Prefetch {
        size: usize,
        lock: Lock<E>,
    },
    /// The elements of the first complete pass, kept and replayed by later passes (which
    /// then do not run the stages before it).
    Cache(Arc<dyn ElementStore<T, E>>),
}

impl<T, E> Clone for ElementOp<T, E> {
    fn clone(&self) -> Self {
        match self {
            ElementOp::Map(f) => ElementOp::Map(Arc::clone(f)),
            ElementOp::ParallelMap { f, workers, lock } => ElementOp::ParallelMap {
                f: Arc::clone(f),
                workers: *workers,
                lock: lock.clone(),
            },
            ElementOp::Prefetch { size, lock } => ElementOp::Prefetch {
                size: *size,
                lock: lock.clone(),
            },
            ElementOp::Filter(f) => ElementOp::Filter(Arc::clone(f)),
            ElementOp::Shuffle { buffer, seed } => ElementOp::Shuffle {
                buffer: *buffer,
                seed: *seed,
            },
            ElementOp::Batch {
                size,
                drop_remainder,
                collate,
            } => ElementOp::Batch {
                size: *size,
                drop_remainder: *drop_remainder,
                collate: Arc::clone(collate),
            },
            ElementOp::Chunks { size, f } => ElementOp::Chunks {
                size: *size,
                f: Arc::clone(f),
            },
            ElementOp::Take(n) => ElementOp::Take(*n),
            ElementOp::Skip(n) => ElementOp::Skip(*n),
            ElementOp::Shard { num_shards, index } => ElementOp::Shard {
                num_shards: *num_shards,
                index: *index,
            },
            ElementOp::Repeat(n) => ElementOp::Repeat(*n),
            ElementOp::Cache(store) => ElementOp::Cache(Arc::clone(store)),
        }
    }
}

/// The elements of `ops` applied in order to what `source` yields, for the pass `epoch`
/// (it seeds the shuffles, mixed with each stage's place).
pub fn element_stream<T: Send + 'static, E: Send + 'static>(
    source: SourceFn<T, E>,
    ops: Arc<[ElementOp<T, E>]>,
    epoch: u64,
) -> Result<Box<dyn Elements<T, E>>, E> {
    build(&source, &ops, ops.len(), epoch)
}

fn build<T: Send + 'static, E: Send + 'static>(
    source: &SourceFn<T, E>,
    ops: &Arc<[ElementOp<T, E>]>,
    upto: usize,
    epoch: u64,
) -> Result<Box<dyn Elements<T, E>>, E> {
    if upto == 0 {
        return source(epoch);
    }
    let op = ops[upto - 1].clone();
    if let ElementOp::Repeat(count) = op {
        let (source, ops) = (Arc::clone(source), Arc::clone(ops));
        return Ok(Box::new(RepeatElements {
            pass: Arc::new(move |e| build(&source, &ops, upto - 1, e)),
            count,
            epoch,
            done: 0,
            current: None,
            produced: false,
        }));
    }
    if let ElementOp::Cache(store) = &op {
        if let Some(kept) = store.replay()? {
            return Ok(kept);
        }
        let keeper = store.keeper()?;
        let inner = build(source, ops, upto - 1, epoch)?;
        return Ok(Box::new(CacheElements {
            inner,
            keeper: Some(keeper),
        }));
    }
    let inner = build(source, ops, upto - 1, epoch)?;
    Ok(match op {
        ElementOp::Map(f) => Box::new(MapElements { inner, f }),
        ElementOp::ParallelMap { f, workers, lock } => {
            Box::new(ParallelMapElements::new(inner, f, workers, lock))
        }
        ElementOp::Prefetch { size, lock } => Box::new(PrefetchElements::new(inner, size, lock)),
        ElementOp::Filter(f) => Box::new(FilterElements { inner, f }),
        ElementOp::Shuffle { buffer, seed } => Box::new(ShuffleElements {
            inner,
            size: buffer.max(1),
            buffer: Vec::with_capacity(buffer.clamp(1, 1 << 16)),
            filled: false,
            ended: false,
            rng: rng_for(seed, mix(epoch, upto as u64)),
        }),
        ElementOp::Batch {
            size,
            drop_remainder,
            collate,
        } => Box::new(BatchElements {
            inner,
            size: size.max(1),
            drop_remainder,
            collate,
            pending: VecDeque::new(),
            ended: false,
        }),
        ElementOp::Chunks { size, f } => Box::new(ChunkElements {
            inner,
            size: size.max(1),
            f,
            seed: epoch,
            position: 0,
            pending: Vec::new(),
            ready: VecDeque::new(),
        }),
        ElementOp::Take(n) => Box::new(TakeElements { inner, left: n }),
        ElementOp::Skip(n) => Box::new(SkipElements { inner, left: n }),
        ElementOp::Shard { num_shards, index } => Box::new(ShardElements {
            inner,
            num_shards: num_shards.max(1),
            index,
            position: 0,
        }),
        ElementOp::Repeat(_) | ElementOp::Cache(_) => unreachable!("handled above"),
    })
}

struct MapElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    f: MapFn<T, E>,
}

impl<T: Send, E: Send> Elements<T, E> for MapElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        match self.inner.next_element()? {
            Some(x) => (self.f)(x).map(Some),
            None => Ok(None),
        }
    }
}

struct FilterElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    f: FilterFn<T, E>,
}

impl<T: Send, E: Send> Elements<T, E> for FilterElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        while let Some(x) = self.inner.next_element()? {
            if (self.f)(&x)? {
                return Ok(Some(x));
            }
        }
        Ok(None)
    }
}

struct ShuffleElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    size: usize,
    buffer: Vec<T>,
    filled: bool,
    ended: bool,
    rng: fastrand::Rng,
}

impl<T: Send, E: Send> Elements<T, E> for ShuffleElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        if !self.filled {
            while self.buffer.len() < self.size {
                match self.inner.next_element()? {
                    Some(x) => self.buffer.push(x),
                    None => {
                        self.ended = true;
                        break;
                    }
                }
            }
            self.filled = true;
        }
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let i = self.rng.usize(..self.buffer.len());
        // The buffer is full until the elements run out: the next one takes the place of
        // the one drawn, and after the last the buffer drains.
        if !self.ended {
            match self.inner.next_element()? {
                Some(x) => return Ok(Some(std::mem::replace(&mut self.buffer[i], x))),
                None => self.ended = true,
            }
        }
        Ok(Some(self.buffer.swap_remove(i)))
    }
}

struct BatchElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    size: usize,
    drop_remainder: bool,
    collate: CollateFn<T, E>,
    /// The elements of the batch being gathered, kept across an error in it.
    pending: VecDeque<T>,
    ended: bool,
}

impl<T: Send, E: Send> Elements<T, E> for BatchElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        while !self.ended && self.pending.len() < self.size {
            match self.inner.next_element()? {
                Some(x) => self.pending.push_back(x),
                None => self.ended = true,
            }
        }
        if self.pending.is_empty() || (self.drop_remainder && self.pending.len() < self.size) {
            self.pending.clear();
            return Ok(None);
        }
        let batch: Vec<T> = self.pending.drain(..).collect();
        (self.collate)(batch).map(Some)
    }
}

struct ChunkElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    size: usize,
    f: ChunkFn<T, E>,
    seed: u64,
    position: u64,
    /// The chunk being gathered, kept across an error before it is complete.
    pending: Vec<T>,
    ready: VecDeque<T>,
}

impl<T: Send, E: Send> Elements<T, E> for ChunkElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        loop {
            if let Some(x) = self.ready.pop_front() {
                return Ok(Some(x));
            }
            let mut ended = false;
            while self.pending.len() < self.size {
                match self.inner.next_element()? {
                    Some(x) => self.pending.push(x),
                    None => {
                        ended = true;
                        break;
                    }
                }
            }
            if self.pending.is_empty() {
                return Ok(None);
            }
            let chunk = std::mem::take(&mut self.pending);
            let start = self.position;
            self.position += chunk.len() as u64;
            self.ready.extend((self.f)(chunk, self.seed, start)?);
            if ended && self.ready.is_empty() {
                return Ok(None);
            }
        }
    }
}

struct CacheElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    /// Let go at an error: a pass that lost an element is not kept.
    keeper: Option<Box<dyn Keeper<T, E>>>,
}

impl<T: Send, E: Send> Elements<T, E> for CacheElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        let next = self.inner.next_element();
        match &next {
            Ok(Some(x)) => {
                if let Some(keeper) = self.keeper.as_mut() {
                    if let Err(e) = keeper.keep(x) {
                        self.keeper = None;
                        return Err(e);
                    }
                }
            }
            Ok(None) => {
                if let Some(keeper) = self.keeper.take() {
                    keeper.finish()?;
                }
            }
            Err(_) => self.keeper = None,
        }
        next
    }
}

struct TakeElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    left: u64,
}

impl<T: Send, E: Send> Elements<T, E> for TakeElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        if self.left == 0 {
            return Ok(None);
        }
        let x = self.inner.next_element()?;
        if x.is_some() {
            self.left -= 1;
        } else {
            self.left = 0;
        }
        Ok(x)
    }
}

struct SkipElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    left: u64,
}

impl<T: Send, E: Send> Elements<T, E> for SkipElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        while self.left > 0 {
            if self.inner.next_element()?.is_none() {
                self.left = 0;
                return Ok(None);
            }
            self.left -= 1;
        }
        self.inner.next_element()
    }
}

struct ShardElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    num_shards: u64,
    index: u64,
    position: u64,
}

impl<T: Send, E: Send> Elements<T, E> for ShardElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        while let Some(x) = self.inner.next_element()? {
            let p = self.position;
            self.position += 1;
            if p % self.num_shards == self.index {
                return Ok(Some(x));
            }
        }
        Ok(None)
    }
}

type PassFn<T, E> = Arc<dyn Fn(u64) -> Result<Box<dyn Elements<T, E>>, E> + Send + Sync>;

struct RepeatElements<T, E> {
    pass: PassFn<T, E>,
    count: Option<u64>,
    epoch: u64,
    /// Passes started.
    done: u64,
    current: Option<Box<dyn Elements<T, E>>>,
    produced: bool,
}

impl<T: Send, E: Send> Elements<T, E> for RepeatElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        loop {
            if self.current.is_none() {
                let ended = self.done > 0 && !self.produced;
                if ended || self.count.is_some_and(|c| self.done >= c) {
                    return Ok(None);
                }
                let seed = if self.done == 0 {
                    self.epoch
                } else {
                    mix(self.epoch, self.done)
                };
                self.current = Some((self.pass)(seed)?);
                self.done += 1;
                self.produced = false;
            }
            let current = self.current.as_mut().expect("a pass is under way");
            match current.next_element()? {
                Some(x) => {
                    self.produced = true;
                    return Ok(Some(x));
                }
                None => self.current = None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter {
        next: u64,
        end: u64,
        /// Fails when it reaches this value, once.
        fail_at: Option<u64>,
    }

    impl Elements<u64, String> for Counter {
        fn next_element(&mut self) -> Result<Option<u64>, String> {
            if self.fail_at == Some(self.next) {
                self.fail_at = None;
                return Err(format!("bad {}", self.next));
            }
            if self.next == self.end {
                return Ok(None);
            }
            self.next += 1;
            Ok(Some(self.next - 1))
        }
    }

    fn given_up() -> String {
        "given up".to_owned()
    }

    fn source(n: u64) -> SourceFn<u64, String> {
        Arc::new(move |_| {
            Ok(Box::new(Counter {
                next: 0,
                end: n,
                fail_at: None,
            }) as Box<dyn Elements<u64, String>>)
        })
    }

    fn run(n: u64, ops: Vec<ElementOp<u64, String>>, epoch: u64) -> Result<Vec<u64>, String> {
        let mut s = element_stream(source(n), ops.into(), epoch)?;
        let mut out = Vec::new();
        while let Some(x) = s.next_element()? {
            out.push(x);
        }
        Ok(out)
    }

    fn sum() -> CollateFn<u64, String> {
        Arc::new(|xs: Vec<u64>| Ok(xs.iter().sum::<u64>() * 1000 + xs.len() as u64))
    }

    #[test]
    fn map_filter_take_skip_shard_in_order() {
        let ops = vec![
            ElementOp::Map(Arc::new(|x: u64| Ok(x * 10)) as MapFn<u64, String>),
            ElementOp::Filter(Arc::new(|x: &u64| Ok(x % 20 == 0)) as FilterFn<u64, String>),
            ElementOp::Skip(1),
            ElementOp::Shard {
                num_shards: 2,
                index: 1,
            },
            ElementOp::Take(3),
        ];
        // 0, 20, 40, ... skip 0 → 20, 40, 60, 80, 100, 120, 140; odd places → 40, 80, 120.
        assert_eq!(run(20, ops, 0).unwrap(), vec![40, 80, 120]);
    }

    #[test]
    fn batches_and_the_remainder() {
        let batch = |drop_remainder| ElementOp::Batch {
            size: 4,
            drop_remainder,
            collate: sum(),
        };
        assert_eq!(
            run(10, vec![batch(false)], 0).unwrap(),
            vec![6004, 22004, 17002]
        );
        assert_eq!(run(10, vec![batch(true)], 0).unwrap(), vec![6004, 22004]);
        assert!(run(0, vec![batch(false)], 0).unwrap().is_empty());
    }

    #[test]
    fn shuffle_is_a_seeded_permutation_within_its_buffer() {
        let shuffle = |seed| ElementOp::Shuffle { buffer: 5, seed };
        let a = run(100, vec![shuffle(Some(7))], 3).unwrap();
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(a, sorted);
        // A buffer of 5 never yields an element more than 4 places early.
        for (place, &x) in a.iter().enumerate() {
            assert!(x <= place as u64 + 4, "{x} at {place}");
        }
        assert_eq!(a, run(100, vec![shuffle(Some(7))], 3).unwrap());
        assert_ne!(a, run(100, vec![shuffle(Some(7))], 4).unwrap());
        assert_ne!(a, run(100, vec![shuffle(Some(8))], 3).unwrap());
    }

    #[test]
    fn repeat_passes_get_their_own_shuffle() {
        let ops = vec![
            ElementOp::Shuffle {
                buffer: 50,
                seed: Some(1),
            },
            ElementOp::Repeat(Some(3)),
        ];
        let out = run(20, ops, 0).unwrap();
        assert_eq!(out.len(), 60);
        let (first, second) = (&out[..20], &out[20..40]);
        assert_ne!(first, second);
        let mut s = second.to_vec();
        s.sort_unstable();
        assert_eq!(s, (0..20).collect::<Vec<_>>());
        assert_eq!(run(0, vec![ElementOp::Repeat(None)], 0).unwrap(), vec![]);
        assert_eq!(run(3, vec![ElementOp::Repeat(Some(0))], 0).unwrap(), vec![]);
        let endless = vec![ElementOp::Repeat(None), ElementOp::Take(7)];
        assert_eq!(run(3, endless, 0).unwrap(), vec![0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn an_error_passes_through_and_the_stream_goes_on() {
        let failing: SourceFn<u64, String> = Arc::new(|_| {
            Ok(Box::new(Counter {
                next: 0,
                end: 6,
                fail_at: Some(2),
            }) as Box<dyn Elements<u64, String>>)
        });
        let ops: Arc<[ElementOp<u64, String>]> = vec![ElementOp::Batch {
            size: 4,
            drop_remainder: false,
            collate: sum(),
        }]
        .into();
        let mut s = element_stream(failing, ops, 0).unwrap();
        assert_eq!(s.next_element(), Err("bad 2".to_owned()));
        // The elements gathered before the error stay in their batch.
        assert_eq!(s.next_element(), Ok(Some(6004)));
        assert_eq!(s.next_element(), Ok(Some(9002)));
        assert_eq!(s.next_element(), Ok(None));
    }

    #[test]
    fn a_failing_function_fails_its_element_only() {
        let ops = vec![ElementOp::Map(Arc::new(
            |x: u64| {
                if x == 1 {
                    Err("one".to_owned())
                } else {
                    Ok(x)
                }
            },
        ) as MapFn<u64, String>)];
        let mut s = element_stream(source(3), ops.into(), 0).unwrap();
        assert_eq!(s.next_element(), Ok(Some(0)));
        assert_eq!(s.next_element(), Err("one".to_owned()));
        assert_eq!(s.next_element(), Ok(Some(2)));
    }

    fn slow_square(micros: u64) -> MapFn<u64, String> {
        Arc::new(move |x: u64| {
            std::thread::sleep(std::time::Duration::from_micros(micros));
            if x == 13 {
                Err("thirteen".to_owned())
            } else {
                Ok(x * x)
            }
        })
    }

    fn drain(s: &mut Box<dyn Elements<u64, String>>) -> (Vec<u64>, Vec<String>) {
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        loop {
            match s.next_element() {
                Ok(Some(x)) => out.push(x),
                Ok(None) => return (out, errors),
                Err(e) => errors.push(e),
            }
        }
    }

    #[test]
    fn a_parallel_map_keeps_the_order_and_fails_one_element() {
        for workers in [Workers::Fixed(3), Workers::Autotune(2)] {
            for micros in [0, 100] {
                let ops = vec![ElementOp::ParallelMap {
                    f: slow_square(micros),
                    workers,
                    lock: Lock::none(given_up),
                }];
                let mut s = element_stream(source(2000), ops.into(), 0).unwrap();
                let (out, errors) = drain(&mut s);
                let want: Vec<u64> = (0..2000).filter(|&x| x != 13).map(|x| x * x).collect();
                assert_eq!(out, want, "{workers:?}, {micros} µs");
                assert_eq!(errors, vec!["thirteen".to_owned()]);
            }
        }
    }

    #[test]
    fn autotune_runs_a_cheap_function_serially_and_a_slow_one_on_threads() {
        let threads_used = |micros: u64| {
            let seen = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
            let record = Arc::clone(&seen);
            let f: MapFn<u64, String> = Arc::new(move |x| {
                record.lock().unwrap().insert(std::thread::current().id());
                std::thread::sleep(std::time::Duration::from_micros(micros));
                Ok(x)
            });
            let ops = vec![ElementOp::ParallelMap {
                f,
                workers: Workers::Autotune(2),
                lock: Lock::none(given_up),
            }];
            let mut s = element_stream(source(3000), ops.into(), 0).unwrap();
            assert_eq!(drain(&mut s).0, (0..3000).collect::<Vec<_>>());
            let n = seen.lock().unwrap().len();
            n
        };
        assert_eq!(threads_used(0), 1);
        // Sleeping is time threads share: they deliver more.
        assert!(threads_used(200) > 1);
    }

    #[test]
    fn a_parallel_map_passes_the_source_error_on_in_its_place() {
        let failing: SourceFn<u64, String> = Arc::new(|_| {
            Ok(Box::new(Counter {
                next: 0,
                end: 40,
                fail_at: Some(25),
            }) as Box<dyn Elements<u64, String>>)
        });
        let ops: Arc<[ElementOp<u64, String>]> = vec![ElementOp::ParallelMap {
            f: Arc::new(|x: u64| Ok(x + 1)),
            workers: Workers::Fixed(2),
            lock: Lock::none(given_up),
        }]
        .into();
        let mut s = element_stream(failing, ops, 0).unwrap();
        let mut seen = Vec::new();
        for _ in 0..25 {
            seen.push(s.next_element().unwrap().unwrap());
        }
        assert_eq!(seen, (1..=25).collect::<Vec<_>>());
        assert_eq!(s.next_element(), Err("bad 25".to_owned()));
        assert_eq!(drain(&mut s).0, (26..=40).collect::<Vec<_>>());
    }

    #[test]
    fn a_wait_given_up_ends_at_once_and_loses_no_element() {
        let slow: MapFn<u64, String> = Arc::new(|x| {
            std::thread::sleep(std::time::Duration::from_millis(800));
            Ok(x)
        });
        let parallel = ElementOp::ParallelMap {
            f: Arc::clone(&slow),
            workers: Workers::Fixed(2),
            lock: Lock::none(given_up),
        };
        let prefetched = ElementOp::Prefetch {
            size: 2,
            lock: Lock::none(given_up),
        };
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        crate::cancel::stop_on(&stop);
        for ops in [vec![parallel], vec![ElementOp::Map(slow), prefetched]] {
            let mut s = element_stream(source(3), ops.into(), 0).unwrap();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let waited = std::time::Instant::now();
            assert_eq!(s.next_element(), Err(given_up()));
            // Given up within a tick or two, long before the function returns.
            assert!(waited.elapsed() < std::time::Duration::from_millis(600));
            stop.store(false, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(drain(&mut s), (vec![0, 1, 2], vec![]));
        }
    }

    #[test]
    fn prefetch_keeps_order_errors_and_stops_when_dropped() {
        for size in [1, 7, 1000] {
            let ops = vec![
                ElementOp::Map(slow_square(0)),
                ElementOp::Prefetch {
                    size,
                    lock: Lock::none(given_up),
                },
            ];
            let mut s = element_stream(source(3000), ops.into(), 0).unwrap();
            let (out, errors) = drain(&mut s);
            assert_eq!(out.len(), 2999);
            assert_eq!(out[..3], [0, 1, 4]);
            assert_eq!(out[13], 14 * 14);
            assert_eq!(errors, vec!["thirteen".to_owned()]);
        }
        // An endless source: dropping the stage stops its thread.
        let made = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Arc::clone(&made);
        let ops = vec![
            ElementOp::Repeat(None),
            ElementOp::Map(Arc::new(move |x: u64| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(x)
            })),
            ElementOp::Prefetch {
                size: 4,
                lock: Lock::none(given_up),
            },
        ];
        let mut s = element_stream(source(3), ops.into(), 0).unwrap();
        assert_eq!(s.next_element(), Ok(Some(0)));
        drop(s);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let after = made.load(std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), after);
    }

    #[test]
    fn a_lock_that_refuses_sends_the_work_back_to_the_consumer() {
        // The lock refuses from its 4th use on, as the bindings' does at interpreter exit.
        let uses = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Arc::clone(&uses);
        let hold: LockFn = Arc::new(move |work| {
            if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 3 {
                return false;
            }
            work();
            true
        });
        let lock = Lock {
            hold,
            ..Lock::none(given_up)
        };
        let ops = vec![
            ElementOp::ParallelMap {
                f: Arc::new(|x: u64| Ok(x + 1)),
                workers: Workers::Fixed(2),
                lock: lock.clone(),
            },
            ElementOp::Prefetch { size: 3, lock },
        ];
        let mut s = element_stream(source(5000), ops.into(), 0).unwrap();
        assert_eq!(drain(&mut s), ((1..=5000).collect::<Vec<_>>(), vec![]));
        assert!(uses.load(std::sync::atomic::Ordering::SeqCst) > 3);
    }

    #[test]
    fn chunks_see_their_pass_seed_and_position() {
        let f: ChunkFn<u64, String> = Arc::new(|xs: Vec<u64>, seed, start| {
            if xs.contains(&7) {
                return Err(format!("7 in the chunk at {start}"));
            }
            Ok(xs.iter().map(|x| x * 100 + start + seed).collect())
        });
        let ops = vec![ElementOp::Chunks { size: 3, f }];
        let mut s = element_stream(source(11), ops.into(), 1000).unwrap();
        let (out, errors) = drain(&mut s);
        // The chunk that fails is lost with its error; the next goes on at its place.
        assert_eq!(out, vec![1000, 1100, 1200, 1303, 1403, 1503, 1909, 2009]);
        assert_eq!(errors, vec!["7 in the chunk at 6".to_owned()]);
    }

    #[derive(Default)]
    struct Memory {
        kept: std::sync::Mutex<Option<Vec<u64>>>,
    }

    struct Keep<'a>(&'a Memory, Vec<u64>);

    impl ElementStore<u64, String> for &'static Memory {
        fn replay(&self) -> Result<Option<Box<dyn Elements<u64, String>>>, String> {
            Ok(self
                .kept
                .lock()
                .unwrap()
                .clone()
                .map(|v| Box::new(Replay(v.into_iter())) as Box<dyn Elements<u64, String>>))
        }
        fn keeper(&self) -> Result<Box<dyn Keeper<u64, String>>, String> {
            Ok(Box::new(Keep(self, Vec::new())))
        }
    }

    impl Keeper<u64, String> for Keep<'static> {
        fn keep(&mut self, x: &u64) -> Result<(), String> {
            self.1.push(*x);
            Ok(())
        }
        fn finish(self: Box<Self>) -> Result<(), String> {
            *self.0.kept.lock().unwrap() = Some(self.1);
            Ok(())
        }
    }

    struct Replay(std::vec::IntoIter<u64>);

    impl Elements<u64, String> for Replay {
        fn next_element(&mut self) -> Result<Option<u64>, String> {
            Ok(self.0.next())
        }
    }

    #[test]
    fn a_cache_replays_the_first_complete_pass() {
        let store: &'static Memory = Box::leak(Box::default());
        let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Arc::clone(&calls);
        let ops = vec![
            ElementOp::Map(Arc::new(move |x: u64| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(x)
            })),
            ElementOp::Shuffle {
                buffer: 4,
                seed: None,
            },
            ElementOp::Cache(Arc::new(store)),
            ElementOp::Repeat(Some(3)),
        ];
        let out = run(10, ops, 0).unwrap();
        assert_eq!(&out[..10], &out[10..20]);
        assert_eq!(&out[..10], &out[20..]);
        // Later passes replay: the stages before the cache ran once.
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 10);
        // A pass left early keeps nothing.
        let early: &'static Memory = Box::leak(Box::default());
        let ops = vec![ElementOp::Cache(Arc::new(early)), ElementOp::Take(3)];
        assert_eq!(run(10, ops, 0).unwrap(), vec![0, 1, 2]);
        assert!(early.kept.lock().unwrap().is_none());
    }
}
