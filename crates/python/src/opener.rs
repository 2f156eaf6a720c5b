//! Remote files for the core readers: a Python callable opens a URL as a binary file
//! object, and its `read` calls feed the core's read-ahead thread.

use std::io::{self, Read};
use std::sync::Arc;

use pyo3::exceptions::{
    PyConnectionError, PyFileNotFoundError, PyOSError, PyPermissionError, PyTimeoutError,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tfrecordkit_core::{Error, Opened, Opener, SharedOpener};

use crate::threads::attach;

/// Opens URLs (paths with `://`) through a Python callable returning a binary file object
/// with `read(n)` (and `seek(offset)` to read part of a file), and a `size` when it knows
/// one.
pub struct PyOpener {
    open: Py<PyAny>,
}

/// The core opener calling `open`, if given.
pub fn shared(open: Option<Py<PyAny>>) -> SharedOpener {
    open.map(|open| Arc::new(PyOpener { open }) as Arc<dyn Opener>)
}

/// A Python exception as an I/O error of the matching kind, so that the core error, and
/// the Python exception it becomes, keep its meaning: a missing object stays
/// `FileNotFoundError`, a refused one `PermissionError`, a timeout `TimeoutError`, an
/// unreachable store `ConnectionError`, a busy one `OSError(EBUSY)`. The message is the
/// error's own words (an `OSError`'s `strerror`), the path being the core error's.
fn io_error(py: Python<'_>, err: PyErr) -> io::Error {
    let kind = if err.is_instance_of::<PyFileNotFoundError>(py) {
        io::ErrorKind::NotFound
    } else if err.is_instance_of::<PyPermissionError>(py) {
        io::ErrorKind::PermissionDenied
    } else if err.is_instance_of::<PyTimeoutError>(py) {
        io::ErrorKind::TimedOut
    } else if err.is_instance_of::<PyConnectionError>(py) {
        io::ErrorKind::ConnectionRefused
    } else if err.is_instance_of::<PyOSError>(py)
        && err
            .value(py)
            .getattr("errno")
            .and_then(|e| e.extract::<i32>())
            .is_ok_and(|e| e == EBUSY)
    {
        io::ErrorKind::ResourceBusy
    } else {
        io::ErrorKind::Other
    };
    let value = err.value(py);
    let strerror = value
        .getattr("strerror")
        .ok()
        .filter(|s| !s.is_none())
        .map(|s| s.to_string());
    let msg = strerror.unwrap_or_else(|| {
        let name = err
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "error".into());
        let text = value.to_string();
        if text.is_empty() {
            name
        } else {
            format!("{name}: {text}")
        }
    });
    io::Error::new(kind, msg)
}

const EBUSY: i32 = 16;

fn exiting() -> io::Error {
    io::Error::other("the Python interpreter is exiting")
}

struct PyStream {
    file: Py<PyAny>,
}

impl Read for PyStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        attach(|py| {
            let data = self
                .file
                .bind(py)
                .call_method1("read", (buf.len(),))
                .map_err(|e| io_error(py, e))?;
            let data = data
                .cast::<PyBytes>()
                .map_err(|e| io::Error::other(e.to_string()))?
                .as_bytes();
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            Ok(n)
        })
        .unwrap_or_else(|| Err(exiting()))
    }
}

impl Drop for PyStream {
    fn drop(&mut self) {
        attach(|py| {
            let _ = self.file.bind(py).call_method0("close");
        });
    }
}

impl Opener for PyOpener {
    fn open(&self, path: &str, offset: u64) -> Option<tfrecordkit_core::Result<Opened>> {
        if !path.contains("://") {
            return None;
        }
        Some(
            attach(|py| {
                let failed = |e: PyErr| Error::io(io_error(py, e), Some(path));
                let file = self.open.bind(py).call1((path,)).map_err(failed)?;
                if offset > 0 {
                    file.call_method1("seek", (offset,)).map_err(failed)?;
                }
                let size = file
                    .getattr("size")
                    .ok()
                    .and_then(|s| s.extract::<u64>().ok());
                Ok(Opened {
                    stream: Box::new(PyStream {
                        file: file.unbind(),
                    }),
                    size,
                })
            })
            .unwrap_or_else(|| Err(Error::io(exiting(), Some(path)))),
        )
    }
}
