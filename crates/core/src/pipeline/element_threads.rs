//! The element stages that run on threads of their own: `map` with `num_parallel_calls`
//! (a fixed number of threads, or AUTOTUNE: serial or threaded, whichever delivers more)
//! and `prefetch`.
//!
//! The caller's functions may need a lock that one thread holds at a time (the bindings:
//! Python's GIL). [`Lock`] says how to take it for a span of work and how to let it go
//! while waiting for another thread, so that the threads take turns instead of blocking
//! each other. Taking it can be refused (the bindings refuse once the interpreter is
//! ending): the work then goes back to the consumer, which does it on its own thread.
//! Threads are never joined: dropping a stage tells its threads to stop, and they end
//! after the work in hand.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use super::element_stream::{Elements, MapFn};

/// Runs a piece of work in a given state of the caller's lock; `false` where it refused
/// to run it.
pub type LockFn = Arc<dyn Fn(&mut (dyn FnMut() + Send)) -> bool + Send + Sync>;

/// How threads share the lock the caller's functions take: `hold` runs work holding it
/// (or refuses), `release` runs a wait with it let go (whether or not the calling thread
/// held it; it never refuses). A wait for another thread wakes every
/// [`crate::cancel::TICK`] to ask whether to give up (Ctrl-C, for the bindings), and
/// then ends with the error `given_up` makes.
pub struct Lock<E> {
    pub hold: LockFn,
    pub release: LockFn,
    pub given_up: fn() -> E,
}

impl<E> Clone for Lock<E> {
    fn clone(&self) -> Self {
        Lock {
            hold: Arc::clone(&self.hold),
            release: Arc::clone(&self.release),
            given_up: self.given_up,
        }
    }
}

impl<E> Lock<E> {
    /// For functions that need no lock.
    pub fn none(given_up: fn() -> E) -> Self {
        let run: LockFn = Arc::new(|work| {
            work();
            true
        });
        Lock {
            hold: Arc::clone(&run),
            release: run,
            given_up,
        }
    }

    /// The next message of `rx`, waited for with the lock let go: `None` once its
    /// senders are gone, the error of [`Lock::given_up`] where the wait is given up.
    fn wait<M: Send>(&self, rx: &Receiver<M>) -> Result<Option<M>, E> {
        let mut got = Ok(None);
        (self.release)(&mut || got = crate::cancel::recv(rx));
        got.map_err(|_| (self.given_up)())
    }
}

/// How many threads a parallel `map` runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workers {
    Fixed(usize),
    /// Serially or on this many threads, whichever delivers more a second, tried anew
    /// every [`KEEP`].
    Autotune(usize),
}

/// How long one task of a parallel `map` should run: long enough that handing it to a
/// thread costs little beside it, short enough to keep every thread busy.
const TASK: Duration = Duration::from_millis(2);
const MAX_TASK_ITEMS: usize = 1024;
/// How long AUTOTUNE tries each way, and how long it keeps to the faster one.
const PROBE: Duration = Duration::from_millis(50);
const KEEP: Duration = Duration::from_secs(2);
/// The time a function takes per element below which AUTOTUNE runs it serially:
/// handing elements to threads costs about this much.
const PARALLEL_ITEM: Duration = Duration::from_micros(20);
/// Serial elements between two looks at the clock.
const CLOCK_EVERY: u32 = 64;

struct Task<T, E> {
    items: Vec<T>,
    reply: Sender<Done<T, E>>,
}

enum Done<T, E> {
    Ran {
        out: Vec<Result<T, E>>,
        per_item: Duration,
    },
    /// The thread could not take the lock: the items, for the consumer to map.
    Refused(Vec<T>),
}

enum Pending<T, E> {
    Running(Receiver<Done<T, E>>),
    Failed(E),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Serially, timing the function.
    SerialProbe,
    /// On threads, to compare with the serial rate.
    ThreadProbe {
        serial_rate: f64,
    },
    Threads,
    Serial,
}

/// `map` with `num_parallel_calls`: the elements in order, the function on threads that
/// take tasks of a few elements (as many as take about [`TASK`]), at most two tasks a
/// thread in flight, so that memory stays flat however many elements come.
pub(super) struct ParallelMapElements<T, E> {
    inner: Box<dyn Elements<T, E>>,
    f: MapFn<T, E>,
    lock: Lock<E>,
    workers: usize,
    autotune: bool,
    tasks: Option<Sender<Task<T, E>>>,
    pending: VecDeque<Pending<T, E>>,
    ready: VecDeque<Result<T, E>>,
    task_items: usize,
    ended: bool,
    phase: Phase,
    started: Instant,
    until: Instant,
    /// Elements delivered and time spent in the function since the phase started.
    n: u64,
    spent: Duration,
    countdown: u32,
    /// Where a probe's steady state starts (once the first results are in: a serial
    /// element, a task's) and where it ends (the probe's time up, before the tasks in
    /// flight drain): each the time and the elements delivered by then. A probe's rate
    /// is taken between them, so that neither the start of the pipeline or of the
    /// threads nor the last tasks trickling in count against either way.
    steady_from: Option<(Instant, u64)>,
    steady_until: Option<(Instant, u64)>,
}

impl<T: Send + 'static, E: Send + 'static> ParallelMapElements<T, E> {
    pub(super) fn new(
        inner: Box<dyn Elements<T, E>>,
        f: MapFn<T, E>,
        workers: Workers,
        lock: Lock<E>,
    ) -> Self {
        let (workers, autotune) = match workers {
            Workers::Fixed(n) => (n.max(1), false),
            Workers::Autotune(n) => (n.max(1), true),
        };
        let now = Instant::now();
        ParallelMapElements {
            inner,
            f,
            lock,
            workers,
            autotune,
            tasks: None,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
            task_items: 1,
            ended: false,
            phase: if autotune {
                Phase::SerialProbe
            } else {
                Phase::Threads
            },
            started: now,
            until: now + PROBE,
            n: 0,
            spent: Duration::ZERO,
            countdown: CLOCK_EVERY,
            steady_from: None,
            steady_until: None,
        }
    }

    fn start_phase(&mut self, phase: Phase, span: Duration) {
        let now = Instant::now();
        self.phase = phase;
        self.started = now;
        self.until = now + span;
        self.n = 0;
        self.spent = Duration::ZERO;
        self.countdown = CLOCK_EVERY;
        self.steady_from = None;
        self.steady_until = None;
    }

    /// Elements a second in the phase's steady state (see `steady_from`), or over the
    /// whole phase where it was too short to have one.
    fn rate(&self) -> f64 {
        let (end, n_end) = self.steady_until.unwrap_or((Instant::now(), self.n));
        match self.steady_from {
            Some((start, n_start)) if end > start && n_end > n_start => {
                (n_end - n_start) as f64 / (end - start).as_secs_f64()
            }
            _ => self.n as f64 / self.started.elapsed().as_secs_f64().max(1e-9),
        }
    }

    /// The phase after the one just ended (AUTOTUNE only).
    fn next_phase(&mut self) {
        let rate = self.rate();
        match self.phase {
            Phase::SerialProbe => {
                let per_item = self.spent.as_secs_f64() / (self.n.max(1) as f64);
                if per_item >= PARALLEL_ITEM.as_secs_f64() {
                    // Tasks as long as TASK from the start, by the serial timing.
                    self.task_items = task_items(per_item);
                    self.start_phase(Phase::ThreadProbe { serial_rate: rate }, PROBE);
                } else {
                    self.start_phase(Phase::Serial, KEEP);
                }
            }
            Phase::ThreadProbe { serial_rate } if rate > serial_rate => {
                self.start_phase(Phase::Threads, KEEP)
            }
            Phase::ThreadProbe { .. } => self.start_phase(Phase::Serial, KEEP),
            Phase::Threads | Phase::Serial => self.start_phase(Phase::SerialProbe, PROBE),
        }
    }

    /// The channel to the threads, started on first use; `None` where no thread could be
    /// started (the work then runs on the calling thread).
    fn tasks(&mut self) -> Option<&Sender<Task<T, E>>> {
        if self.tasks.is_none() {
            let (tx, rx) = unbounded::<Task<T, E>>();
            let mut started = 0;
            for _ in 0..self.workers {
                let (rx, f, hold) = (rx.clone(), Arc::clone(&self.f), Arc::clone(&self.lock.hold));
                let spawned = thread::Builder::new()
                    .name("tfrecordkit-map".into())
                    .spawn(move || work(&rx, &f, &hold));
                started += usize::from(spawned.is_ok());
            }
            if started == 0 {
                return None;
            }
            self.tasks = Some(tx);
        }
        self.tasks.as_ref()
    }

    /// Hands elements to the threads until two tasks a thread are in flight.
    fn submit(&mut self) {
        while !self.ended && self.pending.len() < 2 * self.workers {
            let mut items = Vec::with_capacity(self.task_items);
            let mut failed = None;
            while items.len() < self.task_items {
                match self.inner.next_element() {
                    Ok(Some(x)) => items.push(x),
                    Ok(None) => {
                        self.ended = true;
                        break;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if !items.is_empty() {
                let (reply, done) = bounded(1);
                let task = Task { items, reply };
                match self.tasks() {
                    Some(tasks) => {
                        if let Err(lost) = tasks.send(task) {
                            self.run_here(lost.into_inner());
                        }
                    }
                    None => self.run_here(task),
                }
                self.pending.push_back(Pending::Running(done));
            }
            if let Some(e) = failed {
                self.pending.push_back(Pending::Failed(e));
                return;
            }
        }
    }

    /// A task done on the calling thread, where no thread takes it.
    fn run_here(&mut self, task: Task<T, E>) {
        let start = Instant::now();
        let n = task.items.len() as u32;
        let out = task.items.into_iter().map(|x| (self.f)(x)).collect();
        let per_item = start.elapsed() / n.max(1);
        // The receiver is in hand, so the reply has room.
        let _ = task.reply.send(Done::Ran { out, per_item });
    }

    /// The results of the oldest task in flight, waited for with the lock let go.
    fn collect(&mut self, pending: Pending<T, E>) -> Result<(), E> {
        let done = match pending {
            Pending::Failed(e) => return Err(e),
            Pending::Running(done) => done,
        };
        let got = match self.lock.wait(&done) {
            Ok(got) => got,
            Err(e) => {
                // Given up: the task stays first in line for the next call.
                self.pending.push_front(Pending::Running(done));
                return Err(e);
            }
        };
        match got.expect("a map thread stopped before finishing its task") {
            Done::Ran { out, per_item } => {
                self.task_items = task_items(per_item.as_secs_f64());
                self.ready.extend(out);
                if self.steady_from.is_none() && matches!(self.phase, Phase::ThreadProbe { .. }) {
                    self.steady_from = Some((Instant::now(), self.n + self.ready.len() as u64));
                }
            }
            Done::Refused(items) => {
                let f = &self.f;
                self.ready.extend(items.into_iter().map(|x| f(x)));
            }
        }
        Ok(())
    }

    fn next_threaded(&mut self) -> Result<Option<T>, E> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                self.n += 1;
                return r.map(Some);
            }
            if !self.autotune || Instant::now() < self.until {
                self.submit();
            } else if self.steady_until.is_none() {
                self.steady_until = Some((Instant::now(), self.n));
            }
            if let Some(p) = self.pending.pop_front() {
                self.collect(p)?;
                continue;
            }
            if self.ended {
                return Ok(None);
            }
            // The phase is over and every task in it delivered.
            self.next_phase();
            return self.next_element();
        }
    }

    fn next_serial(&mut self) -> Result<Option<T>, E> {
        if self.ended {
            return Ok(None);
        }
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = CLOCK_EVERY;
            if Instant::now() >= self.until {
                self.next_phase();
                return self.next_element();
            }
        }
        let Some(x) = self.inner.next_element()? else {
            self.ended = true;
            return Ok(None);
        };
        self.n += 1;
        if self.phase == Phase::SerialProbe {
            let start = Instant::now();
            let y = (self.f)(x);
            let end = Instant::now();
            self.spent += end - start;
            if self.steady_from.is_none() {
                self.steady_from = Some((end, self.n));
            }
            if end >= self.until {
                self.next_phase();
            }
            return y.map(Some);
        }
        (self.f)(x).map(Some)
    }
}

/// Elements a task holds so that it runs for about [`TASK`], each taking `per_item`
/// seconds.
fn task_items(per_item: f64) -> usize {
    ((TASK.as_secs_f64() / per_item.max(1e-9)) as usize).clamp(1, MAX_TASK_ITEMS)
}

/// A map thread: takes tasks until the stage is dropped.
fn work<T: Send, E: Send>(tasks: &Receiver<Task<T, E>>, f: &MapFn<T, E>, hold: &LockFn) {
    while let Ok(Task { mut items, reply }) = tasks.recv() {
        let mut out = Vec::with_capacity(items.len());
        let start = Instant::now();
        if !hold(&mut || out.extend(items.drain(..).map(|x| f(x)))) {
            // Every task still gets an answer: the consumer is waiting for it.
            let _ = reply.send(Done::Refused(items));
            continue;
        }
        let per_item = start.elapsed() / (out.len() as u32).max(1);
        if let Err(unwanted) = reply.send(Done::Ran { out, per_item }) {
            // The stage is gone: its elements are let go holding the lock.
            let mut unwanted = Some(unwanted);
            hold(&mut || drop(unwanted.take()));
        }
    }
}

impl<T: Send + 'static, E: Send + 'static> Elements<T, E> for ParallelMapElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        match self.phase {
            Phase::Threads | Phase::ThreadProbe { .. } => self.next_threaded(),
            Phase::SerialProbe | Phase::Serial => self.next_serial(),
        }
    }
}

/// Elements handed from the prefetch thread to the consumer at once, at most, and how
/// long the thread gathers them once it has the number asked for.
const PREFETCH_CHUNK: usize = 256;
const PREFETCH_GATHER: Duration = Duration::from_micros(500);

struct Chunk<T, E> {
    items: Vec<T>,
    /// After the items: the end (`Ok`), or an error (the stream goes on after it).
    end: Option<Result<(), E>>,
}

/// `prefetch(size)`: what comes before it runs on a thread of its own, `size` elements
/// ahead. Elements cross in chunks (`size` of them, or as many as come in
/// [`PREFETCH_GATHER`] up to [`PREFETCH_CHUNK`], whichever is more), so that cheap
/// elements cost no handoff each. Where no thread can be started, or the lock refuses
/// it, the elements are made on the consumer's thread.
pub(super) struct PrefetchElements<T, E> {
    chunks: Receiver<Chunk<T, E>>,
    items: std::vec::IntoIter<T>,
    end: Option<Result<(), E>>,
    ended: bool,
    stop: Arc<AtomicBool>,
    lock: Lock<E>,
    /// The source: the thread takes it, and leaves it here when it stops early.
    source: Shared<T, E>,
}

type Shared<T, E> = Arc<Mutex<Option<Box<dyn Elements<T, E>>>>>;

impl<T: Send + 'static, E: Send + 'static> PrefetchElements<T, E> {
    /// Starts the thread now, so that it reads ahead before the first element is asked for.
    pub(super) fn new(inner: Box<dyn Elements<T, E>>, size: usize, lock: Lock<E>) -> Self {
        let (tx, rx) = bounded(1);
        let stop = Arc::new(AtomicBool::new(false));
        let source: Shared<T, E> = Arc::new(Mutex::new(Some(inner)));
        let (hold, halt, theirs) = (
            Arc::clone(&lock.hold),
            Arc::clone(&stop),
            Arc::clone(&source),
        );
        let least = size.max(1);
        // Where no thread starts, the channel is closed and the source left in place.
        let _ = thread::Builder::new()
            .name("tfrecordkit-prefetch".into())
            .spawn(move || produce(&theirs, &tx, least, &hold, &halt));
        PrefetchElements {
            chunks: rx,
            items: Vec::new().into_iter(),
            end: None,
            ended: false,
            stop,
            lock,
            source,
        }
    }
}

fn produce<T, E>(
    source: &Shared<T, E>,
    chunks: &Sender<Chunk<T, E>>,
    least: usize,
    hold: &LockFn,
    stop: &AtomicBool,
) where
    T: Send,
    E: Send,
{
    let mut slot = source.lock().unwrap_or_else(|e| e.into_inner());
    let mut inner = slot.take();
    loop {
        let mut chunk = Chunk {
            items: Vec::new(),
            end: None,
        };
        let ran = hold(&mut || {
            let Some(source) = inner.as_mut() else { return };
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                match source.next_element() {
                    Ok(Some(x)) => {
                        chunk.items.push(x);
                        let n = chunk.items.len();
                        if n >= least
                            && (n >= PREFETCH_CHUNK || started.elapsed() >= PREFETCH_GATHER)
                        {
                            return;
                        }
                    }
                    Ok(None) => {
                        chunk.end = Some(Ok(()));
                        return;
                    }
                    Err(e) => {
                        chunk.end = Some(Err(e));
                        return;
                    }
                }
            }
        });
        if !ran {
            // The consumer goes on from the source, after the chunks sent before.
            *slot = inner;
            return;
        }
        let finished = matches!(chunk.end, Some(Ok(()))) || stop.load(Ordering::Relaxed);
        let unwanted = chunks.send(chunk).err().map(|e| e.into_inner());
        if finished || unwanted.is_some() {
            // What the source and the unwanted chunk hold is let go holding the lock.
            let mut rest = (inner.take(), unwanted);
            hold(&mut || drop((rest.0.take(), rest.1.take())));
            return;
        }
    }
}

impl<T: Send + 'static, E: Send + 'static> Elements<T, E> for PrefetchElements<T, E> {
    fn next_element(&mut self) -> Result<Option<T>, E> {
        loop {
            if let Some(x) = self.items.next() {
                return Ok(Some(x));
            }
            if let Some(end) = self.end.take() {
                end?;
                self.ended = true;
            }
            if self.ended {
                return Ok(None);
            }
            let Some(chunk) = self.lock.wait(&self.chunks)? else {
                // No thread, or it stopped early: the rest is made here. The thread lets
                // go of the source only once it has sent its last chunk.
                let mut source = self.source.lock().unwrap_or_else(|e| e.into_inner());
                return match source.as_mut() {
                    Some(source) => source.next_element(),
                    None => Ok(None),
                };
            };
            self.items = chunk.items.into_iter();
            self.end = chunk.end;
        }
    }
}

impl<T, E> Drop for PrefetchElements<T, E> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
