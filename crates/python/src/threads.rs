//! Engine threads that run Python code (a map on threads, a prefetch after a map, the
//! readers of remote files) take the GIL through here, so that none is left inside
//! Python as the interpreter is torn down: a thread that tries then is ended by Python
//! in a way Rust frames cannot survive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use pyo3::prelude::*;
use tfrecordkit_core::pipeline::elements::{Lock, LockFn};

/// Python's GIL, as the engine's threads share it: held for a span of work, let go while
/// waiting for another thread. Once the interpreter is ending ([`stop_threads`]), it is
/// refused to the engine's threads, and their work goes back to the consumer. A wait that
/// Ctrl-C ends raises its `KeyboardInterrupt`.
pub(crate) fn gil() -> Lock<PyErr> {
    let hold: LockFn = Arc::new(|work| attach(|_| work()).is_some());
    let release: LockFn = Arc::new(|work| {
        Python::attach(|py| py.detach(&mut *work));
        true
    });
    Lock {
        hold,
        release,
        given_up: crate::errors::given_up,
    }
}

static STOPPING: AtomicBool = AtomicBool::new(false);
/// Engine threads running Python code now, and a signal when one leaves.
static INSIDE: Mutex<usize> = Mutex::new(0);
static LEFT: Condvar = Condvar::new();

/// `f` with the GIL held, on an engine thread; `None` once the interpreter is ending.
pub(crate) fn attach<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    let _inside = Inside::enter()?;
    Some(Python::attach(f))
}

/// An engine thread's span of Python work, counted.
struct Inside;

impl Inside {
    fn enter() -> Option<Inside> {
        if STOPPING.load(Ordering::SeqCst) {
            return None;
        }
        *INSIDE.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let inside = Inside;
        // Counted before looking again: `stop_threads` either waits for this span or
        // this span sees it and backs out.
        (!STOPPING.load(Ordering::SeqCst)).then_some(inside)
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        *INSIDE.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        LEFT.notify_all();
    }
}

/// Called as the interpreter ends (an `atexit` hook): the engine's threads take the GIL
/// no more, and this waits until none runs Python code, so that none is left inside
/// Python when the interpreter is torn down.
#[pyfunction]
pub fn stop_threads(py: Python<'_>) {
    STOPPING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let mut inside = INSIDE.lock().unwrap_or_else(|e| e.into_inner());
        while *inside > 0 {
            inside = LEFT.wait(inside).unwrap_or_else(|e| e.into_inner());
        }
    });
}

/// The cores this process may run on.
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
