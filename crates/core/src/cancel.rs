//! Waits that end early when the work waited for is to stop: a thread's waits on other
//! threads and on a named pipe's writer wake every [`TICK`] to ask whether the thread's
//! work was stopped ([`stop_on`]) or whether the host (the Python bindings, for Ctrl-C)
//! says to give up ([`set_host_check`]). Without a check, a wait is the plain blocking
//! one it replaces, woken a few times a second.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::error::{Error, Result};

/// How often a wait asks whether to give up.
pub const TICK: Duration = Duration::from_millis(100);

static HOST_CHECK: OnceLock<fn() -> bool> = OnceLock::new();

thread_local! {
    static STOP: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Installs the host's check, asked on every thread that waits (it answers for the
/// threads it knows): `true` ends the wait with [`Error::interrupted`]. Set once; later
/// calls are ignored.
pub fn set_host_check(check: fn() -> bool) {
    let _ = HOST_CHECK.set(check);
}

/// Makes `stop` end this thread's waits once it is set.
pub(crate) fn stop_on(stop: &Arc<AtomicBool>) {
    STOP.with(|s| *s.borrow_mut() = Some(Arc::clone(stop)));
}

/// Whether this thread's waits are to end now.
pub fn interrupted() -> bool {
    let stopped = STOP.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|stop| stop.load(Ordering::Relaxed))
    });
    stopped || HOST_CHECK.get().is_some_and(|check| check())
}

/// The next message of `rx`, `None` once every sender has gone; ends with
/// [`Error::interrupted`] if the wait is to end first (see [`interrupted`]).
pub fn recv<T>(rx: &Receiver<T>) -> Result<Option<T>> {
    loop {
        match rx.recv_timeout(TICK) {
            Ok(message) => return Ok(Some(message)),
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
            Err(RecvTimeoutError::Timeout) if interrupted() => return Err(Error::interrupted()),
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;

    #[test]
    fn a_wait_ends_when_its_threads_work_is_stopped() {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = bounded::<u8>(1);
        let flag = Arc::clone(&stop);
        let waiting = std::thread::spawn(move || {
            stop_on(&flag);
            recv(&rx)
        });
        std::thread::sleep(TICK);
        stop.store(true, Ordering::Relaxed);
        let err = waiting.join().unwrap().unwrap_err();
        assert_eq!(err.io_kind(), Some(std::io::ErrorKind::Interrupted));
        drop(tx);
    }

    #[test]
    fn a_wait_gets_its_message_or_the_end() {
        let (tx, rx) = bounded::<u8>(1);
        tx.send(7).unwrap();
        assert_eq!(recv(&rx).unwrap(), Some(7));
        drop(tx);
        assert_eq!(recv(&rx).unwrap(), None);
    }
}
