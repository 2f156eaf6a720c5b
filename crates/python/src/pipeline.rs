//! The streaming pipeline: plan conversion, remote streams and output units.

use std::io::{self, Read};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tfrecordkit_core::pipeline::{
    Cache, Decoded, FileOp, ImageStage, OnError, Opener, Payload, Plan, RecordOp,
};
use tfrecordkit_core::{Compression, Error, ReadOptions};

use crate::errors::IntoPyResult;
use crate::image::{pixels_to_py, ImageSpec};
use crate::parse::{parsed_column_to_py, CompiledSchema};

/// Records kept after a pipeline's first complete pass (in memory, or in a file).
#[pyclass(module = "tfrecordkit._core", frozen)]
pub struct PipelineCache {
    inner: Arc<Cache>,
}

#[pymethods]
impl PipelineCache {
    #[new]
    #[pyo3(signature = (filename=None))]
    fn new(filename: Option<String>) -> Self {
        let inner = match filename {
            Some(f) => Cache::file(&f),
            None => Cache::memory(),
        };
        PipelineCache {
            inner: Arc::new(inner),
        }
    }

    /// Whether a complete pass has been kept.
    #[getter]
    fn complete(&self) -> bool {
        self.inner.is_complete()
    }
}

/// Opens URLs through a Python callable returning a binary file object.
struct PyOpener {
    open: Py<PyAny>,
}

struct PyStream {
    file: Py<PyAny>,
}

impl Read for PyStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let data = self
                .file
                .bind(py)
                .call_method1("read", (buf.len(),))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let data = data
                .cast::<PyBytes>()
                .map_err(|e| io::Error::other(e.to_string()))?
                .as_bytes();
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            Ok(n)
        })
    }
}

impl Drop for PyStream {
    fn drop(&mut self) {
        Python::attach(|py| {
            let _ = self.file.bind(py).call_method0("close");
        });
    }
}

impl Opener for PyOpener {
    fn open(&self, path: &str) -> Option<tfrecordkit_core::Result<Box<dyn Read + Send>>> {
        if !path.contains("://") {
            return None;
        }
        Some(Python::attach(|py| {
            self.open
                .bind(py)
                .call1((path,))
                .map(|f| Box::new(PyStream { file: f.unbind() }) as Box<dyn Read + Send>)
                .map_err(|e| Error::io(io::Error::other(e.to_string()), Some(path)))
        }))
    }
}

fn file_op(t: &Bound<'_, PyTuple>) -> PyResult<FileOp> {
    let name: String = t.get_item(0)?.extract()?;
    Ok(match name.as_str() {
        "shuffle" => FileOp::Shuffle {
            buffer: t.get_item(1)?.extract()?,
            seed: t.get_item(2)?.extract()?,
        },
        "shard" => FileOp::Shard {
            num_shards: t.get_item(1)?.extract()?,
            index: t.get_item(2)?.extract()?,
        },
        "skip" => FileOp::Skip(t.get_item(1)?.extract()?),
        "take" => FileOp::Take(t.get_item(1)?.extract()?),
        "repeat" => FileOp::Repeat(t.get_item(1)?.extract()?),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown file stage {other:?}"
            )))
        }
    })
}

fn record_op(t: &Bound<'_, PyTuple>) -> PyResult<RecordOp> {
    let name: String = t.get_item(0)?.extract()?;
    Ok(match name.as_str() {
        "shuffle" => RecordOp::Shuffle {
            buffer: t.get_item(1)?.extract()?,
            seed: t.get_item(2)?.extract()?,
        },
        "shard" => RecordOp::Shard {
            num_shards: t.get_item(1)?.extract()?,
            index: t.get_item(2)?.extract()?,
        },
        "skip" => RecordOp::Skip(t.get_item(1)?.extract()?),
        "take" => RecordOp::Take(t.get_item(1)?.extract()?),
        "repeat" => RecordOp::Repeat(t.get_item(1)?.extract()?),
        "cache" => {
            let cache = t.get_item(1)?;
            let cache = cache.cast::<PipelineCache>()?;
            RecordOp::Cache(Arc::clone(&cache.get().inner))
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown record stage {other:?}"
            )))
        }
    })
}

/// A running pipeline; see `tfrecordkit.Dataset`.
#[pyclass(module = "tfrecordkit._core")]
pub struct Pipeline {
    inner: tfrecordkit_core::pipeline::Pipeline,
}

#[pymethods]
impl Pipeline {
    #[new]
    #[pyo3(signature = (
        files, *, compression="auto", verify=true, max_record_bytes=None, file_ops=Vec::new(),
        cycle_length=1, block_length=1, deterministic=true, record_ops=Vec::new(),
        batch_size=256, drop_remainder=false, schema=None, parse_workers=1, prefetch=2,
        continue_on_error=false, epoch=0, opener=None, images=Vec::new()
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        files: Vec<String>,
        compression: Option<&str>,
        verify: bool,
        max_record_bytes: Option<u64>,
        file_ops: Vec<Bound<'_, PyTuple>>,
        cycle_length: usize,
        block_length: usize,
        deterministic: bool,
        record_ops: Vec<Bound<'_, PyTuple>>,
        batch_size: usize,
        drop_remainder: bool,
        schema: Option<&CompiledSchema>,
        parse_workers: usize,
        prefetch: usize,
        continue_on_error: bool,
        epoch: u64,
        opener: Option<Py<PyAny>>,
        images: Vec<(usize, PyRef<'_, ImageSpec>, u64)>,
    ) -> PyResult<Self> {
        let mut read = ReadOptions {
            compression: Compression::parse(compression).py_err(py)?,
            verify,
            ..ReadOptions::default()
        };
        if let Some(m) = max_record_bytes {
            read.max_record_bytes = m;
        }
        let plan = Plan {
            files,
            read,
            file_ops: file_ops.iter().map(file_op).collect::<PyResult<_>>()?,
            cycle_length,
            block_length,
            deterministic,
            record_ops: record_ops.iter().map(record_op).collect::<PyResult<_>>()?,
            batch_size,
            drop_remainder,
            schema: schema.map(|s| Arc::new(s.schema.clone())),
            parse_workers,
            prefetch,
            on_error: if continue_on_error {
                OnError::Continue
            } else {
                OnError::Stop
            },
            epoch,
            images: images
                .iter()
                .map(|(feature, spec, seed)| ImageStage {
                    feature: *feature,
                    spec: spec.spec.clone(),
                    seed: *seed,
                })
                .collect(),
        };
        let opener = opener.map(|open| Arc::new(PyOpener { open }) as Arc<dyn Opener>);
        let inner = tfrecordkit_core::pipeline::Pipeline::start(plan, opener).py_err(py)?;
        Ok(Pipeline { inner })
    }

    /// Stops the pipeline's threads and waits for them.
    fn close(&mut self, py: Python<'_>) {
        let inner = &mut self.inner;
        py.detach(|| inner.close());
    }

    /// The next unit: a list of records, or `(n, parsed)` with what `parse_examples`
    /// returns for `n` records; `None` at the end. Damage raises, at its place in the
    /// stream; with `continue_on_error` the next call goes on after it.
    fn next<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let inner = &mut self.inner;
        let Some(item) = py.detach(|| inner.next_item()) else {
            return Ok(None);
        };
        match item.py_err(py)? {
            Payload::Records(batch) => Ok(Some(
                PyList::new(py, batch.iter().map(|r| PyBytes::new(py, r)))?.into_any(),
            )),
            Payload::Parsed(parsed, n) => {
                let pool = self.inner.pixel_pool();
                let mut out = Vec::with_capacity(parsed.len());
                for d in parsed {
                    out.push(match d {
                        Decoded::Feature(p) => parsed_column_to_py(py, p)?,
                        Decoded::Images(pixels) => pixels_to_py(py, pixels, Some(&pool))?,
                    });
                }
                Ok(Some((n, out).into_pyobject(py)?.into_any()))
            }
        }
    }
}

/// The order in which a pipeline reads its files: indexes into its file list.
#[pyclass(module = "tfrecordkit._core")]
pub struct FileOrder {
    inner: Box<dyn Iterator<Item = usize> + Send + Sync>,
}

struct SyncIter(std::sync::Mutex<Box<dyn Iterator<Item = usize> + Send>>);

impl Iterator for SyncIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        self.0.get_mut().ok()?.next()
    }
}

#[pymethods]
impl FileOrder {
    #[new]
    #[pyo3(signature = (n, file_ops, epoch=0))]
    fn new(n: usize, file_ops: Vec<Bound<'_, PyTuple>>, epoch: u64) -> PyResult<Self> {
        let ops: Vec<FileOp> = file_ops.iter().map(file_op).collect::<PyResult<_>>()?;
        let order = tfrecordkit_core::pipeline::file_order_of(&ops, n, epoch);
        Ok(FileOrder {
            inner: Box::new(SyncIter(std::sync::Mutex::new(order))),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<usize> {
        self.inner.next()
    }
}
