//! Maps core errors onto the one exception hierarchy in `tfrecordkit.errors`.

use pyo3::exceptions::{
    PyConnectionError, PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyOSError,
    PyPermissionError, PyTimeoutError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use std::io;
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;
use tfrecordkit_core::{Error, ErrorKind};

/// The classes of `tfrecordkit.errors` that core errors become, in the order of `NAMES`.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

const NAMES: [&str; 8] = [
    "CorruptRecordError",
    "NotTFRecordError",
    "TruncatedRecordError",
    "DataLossError",
    "ExampleDecodeError",
    "SchemaError",
    "ImageDecodeError",
    "InternalError",
];

/// The position of `InternalError` in `NAMES`.
const INTERNAL: usize = 7;
/// Python's main thread, the one its signal handlers run on.
static MAIN_THREAD: OnceLock<ThreadId> = OnceLock::new();
/// What a signal handler raised during a wait in the core, for the call that waited.
static RAISED: Mutex<Option<PyErr>> = Mutex::new(None);

/// The core's check during its waits (see `tfrecordkit_core::cancel`): on Python's main
/// thread, runs the signal handlers that are due; one that raises (Ctrl-C's
/// `KeyboardInterrupt`) ends the wait, and its exception is the call's error.
fn signal_check() -> bool {
    if MAIN_THREAD.get() != Some(&std::thread::current().id()) {
        return false;
    }
    Python::attach(|py| match py.check_signals() {
        Ok(()) => false,
        Err(raised) => {
            *RAISED.lock().unwrap_or_else(|e| e.into_inner()) = Some(raised);
            true
        }
    })
}

fn class_index(kind: ErrorKind) -> usize {
    match kind {
        ErrorKind::Corrupt => 0,
        ErrorKind::NotTfRecord => 1,
        ErrorKind::Truncated => 2,
        ErrorKind::DataLoss => 3,
        ErrorKind::ExampleDecode => 4,
        ErrorKind::Schema => 5,
        ErrorKind::ImageDecode => 6,
        ErrorKind::Internal => INTERNAL,
        ErrorKind::Io | ErrorKind::InvalidArgument => unreachable!("mapped to built-ins"),
    }
}

/// Resolves the exception classes once, when the extension is imported: a broken
/// `tfrecordkit.errors` fails the import rather than hiding a data error later.
pub fn init(py: Python<'_>) -> PyResult<()> {
    let module = py.import("tfrecordkit.errors")?;
    let classes = NAMES
        .iter()
        .map(|name| Ok(module.getattr(*name)?.cast_into::<PyType>()?.unbind()))
        .collect::<PyResult<Vec<_>>>()?;
    let _ = CLASSES.set(py, classes);
    let threading = py.import("threading")?;
    let current = threading.call_method0("current_thread")?;
    if current.is(&threading.call_method0("main_thread")?) {
        let _ = MAIN_THREAD.set(std::thread::current().id());
        tfrecordkit_core::cancel::set_host_check(signal_check);
    }
    Ok(())
}

fn os_error(err: &Error) -> PyErr {
    let path = err.path.clone();
    let msg = err
        .source
        .as_ref()
        .map(|e| e.to_string())
        .unwrap_or_else(|| err.message.clone());
    if let Some(errno) = err.raw_os_error() {
        // The system's words alone, as Python's own OSError has them: Rust's text ends
        // with " (os error N)", which errno already says.
        let suffix = format!(" (os error {errno})");
        let msg = msg.strip_suffix(&suffix).map_or(msg.clone(), str::to_owned);
        // OSError(errno, strerror, filename) picks the matching subclass itself.
        return PyOSError::new_err((errno, msg, path));
    }
    match err.io_kind() {
        Some(io::ErrorKind::NotFound) => PyFileNotFoundError::new_err((2, msg, path)),
        Some(io::ErrorKind::PermissionDenied) => PyPermissionError::new_err((13, msg, path)),
        Some(io::ErrorKind::IsADirectory) => PyIsADirectoryError::new_err((21, msg, path)),
        Some(io::ErrorKind::TimedOut) => PyTimeoutError::new_err((110, msg, path)),
        Some(
            io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::NotConnected,
        ) => PyConnectionError::new_err((111, msg, path)),
        Some(io::ErrorKind::ResourceBusy) => PyOSError::new_err((16, msg, path)),
        Some(io::ErrorKind::AlreadyExists) => PyFileExistsError::new_err((17, msg, path)),
        _ => PyOSError::new_err((5, msg, path)),
    }
}

/// The exception of a wait the core gave up: what the signal handler raised.
pub fn given_up() -> PyErr {
    Python::attach(|py| to_py(py, Error::interrupted()))
}

/// Converts a core error into the Python exception users catch.
pub fn to_py(py: Python<'_>, err: Error) -> PyErr {
    if err.io_kind() == Some(io::ErrorKind::Interrupted) {
        // A wait that a signal ended: its handler's exception is the error.
        let raised = RAISED.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(raised) = raised.or_else(|| py.check_signals().err()) {
            return raised;
        }
    }
    match err.kind {
        ErrorKind::Io => return os_error(&err),
        ErrorKind::InvalidArgument => return PyValueError::new_err(err.message),
        _ => {}
    }
    let build = || -> PyResult<PyErr> {
        let classes = CLASSES
            .get(py)
            .expect("the error classes are resolved when the module is imported");
        let cls = classes[class_index(err.kind)].bind(py);
        let kwargs = PyDict::new(py);
        kwargs.set_item("path", err.path.as_deref())?;
        kwargs.set_item("offset", err.offset)?;
        kwargs.set_item("record_index", err.record_index)?;
        kwargs.set_item("key", err.key.as_deref())?;
        kwargs.set_item("lost", err.lost.as_deref().copied())?;
        let instance = cls.call((err.message.as_str(),), Some(&kwargs))?;
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|e| e)
}

/// Runs the body of the Python-facing call `call`, turning a panic (always a bug) into
/// `tfrecordkit.errors.InternalError` naming the call: an ordinary exception, where a
/// panic would reach Python as pyo3's `PanicException`, a `BaseException` that
/// `except Exception` does not catch.
pub fn guard<T>(call: &str, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        let message = format!(
            "internal error in tfrecordkit._core.{call}: {why} (a bug in tfrecordkit; please \
             report it with the input that caused it)"
        );
        Python::attach(|py| {
            let Some(classes) = CLASSES.get(py) else {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(message));
            };
            let instance = classes[INTERNAL].bind(py).call1((message,))?;
            Err(PyErr::from_value(instance))
        })
    })
}

/// Panics inside a guarded call, so that tests can prove a panic reaches Python as
/// `InternalError` (as `faulthandler._sigsegv` lets tests provoke a crash).
#[pyfunction]
pub fn _selftest_panic(message: &str) -> PyResult<()> {
    crate::errors::guard("_selftest_panic", || panic!("{message}"))
}

/// `Result<T, Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
