//! The streaming pipeline: plan conversion, remote streams and output units.

use std::sync::Arc;

use numpy::IntoPyArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use tfrecordkit_core::pipeline::elements::ElementOp;
use tfrecordkit_core::pipeline::Order;
use tfrecordkit_core::pipeline::{parsed_columns, Cache, Decoded, Payload, Plan};

use crate::errors::IntoPyResult;
use crate::image::pixels_to_py;
use crate::parse::{assembled_parts, parsed_column_to_py, CompiledSchema, FeaturePy};
use tfrecordkit_core::Assembled;

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
}

impl PipelineCache {
    pub(crate) fn shared(&self) -> Arc<Cache> {
        Arc::clone(&self.inner)
    }
}

/// Shuffles through a buffer of `buffer_size` elements (files or records).
#[pyclass(module = "tfrecordkit._core", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct Shuffle {
    #[pyo3(get)]
    buffer_size: usize,
    #[pyo3(get)]
    seed: Option<u64>,
}

#[pymethods]
impl Shuffle {
    #[new]
    #[pyo3(signature = (buffer_size, seed=None))]
    fn new(buffer_size: usize, seed: Option<u64>) -> PyResult<Self> {
        crate::errors::guard("Shuffle.new", || {
            if buffer_size == 0 {
                return Err(PyValueError::new_err("buffer_size must be at least 1"));
            }
            Ok(Shuffle { buffer_size, seed })
        })
    }

    fn __getnewargs__(&self) -> (usize, Option<u64>) {
        (self.buffer_size, self.seed)
    }

    fn __repr__(&self) -> String {
        format!("Shuffle({}, seed={})", self.buffer_size, opt(self.seed))
    }
}

/// Every `num_shards`-th element, starting at `index`.
#[pyclass(module = "tfrecordkit._core", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    #[pyo3(get)]
    num_shards: u64,
    #[pyo3(get)]
    index: u64,
}

#[pymethods]
impl Shard {
    #[new]
    fn new(num_shards: u64, index: u64) -> PyResult<Self> {
        crate::errors::guard("Shard.new", || {
            if index >= num_shards {
                return Err(PyValueError::new_err(format!(
                    "index must be in [0, {num_shards}), not {index}"
                )));
            }
            Ok(Shard { num_shards, index })
        })
    }

    fn __getnewargs__(&self) -> (u64, u64) {
        (self.num_shards, self.index)
    }

    fn __repr__(&self) -> String {
        format!("Shard({}, {})", self.num_shards, self.index)
    }
}

/// All but the first `count` elements.
#[pyclass(module = "tfrecordkit._core", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    #[pyo3(get)]
    count: u64,
}

/// The first `count` elements.
#[pyclass(module = "tfrecordkit._core", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct Take {
    #[pyo3(get)]
    count: u64,
}

/// `count` passes (forever when None).
#[pyclass(module = "tfrecordkit._core", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct Repeat {
    #[pyo3(get)]
    count: Option<u64>,
}

#[pymethods]
impl Skip {
    #[new]
    fn new(count: u64) -> Self {
        Skip { count }
    }

    fn __getnewargs__(&self) -> (u64,) {
        (self.count,)
    }

    fn __repr__(&self) -> String {
        format!("Skip({})", self.count)
    }
}

#[pymethods]
impl Take {
    #[new]
    fn new(count: u64) -> Self {
        Take { count }
    }

    fn __getnewargs__(&self) -> (u64,) {
        (self.count,)
    }

    fn __repr__(&self) -> String {
        format!("Take({})", self.count)
    }
}

#[pymethods]
impl Repeat {
    #[new]
    #[pyo3(signature = (count=None))]
    fn new(count: Option<u64>) -> Self {
        Repeat { count }
    }

    fn __getnewargs__(&self) -> (Option<u64>,) {
        (self.count,)
    }

    fn __repr__(&self) -> String {
        format!("Repeat({})", opt(self.count))
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

/// A stage of a plan, told apart by its class.
#[derive(FromPyObject)]
pub(crate) enum Stage<'py> {
    Shuffle(PyRef<'py, Shuffle>),
    Shard(PyRef<'py, Shard>),
    Skip(PyRef<'py, Skip>),
    Take(PyRef<'py, Take>),
    Repeat(PyRef<'py, Repeat>),
}

impl Stage<'_> {
    /// The stage as the core orders elements.
    pub(crate) fn order(&self) -> Order {
        match self {
            Stage::Shuffle(s) => Order::Shuffle {
                buffer: s.buffer_size,
                seed: s.seed,
            },
            Stage::Shard(s) => Order::Shard {
                num_shards: s.num_shards,
                index: s.index,
            },
            Stage::Skip(s) => Order::Skip(s.count),
            Stage::Take(s) => Order::Take(s.count),
            Stage::Repeat(s) => Order::Repeat(s.count),
        }
    }

    /// The stage over elements after a user function.
    pub(crate) fn element_op<T, E>(&self) -> ElementOp<T, E> {
        match self {
            Stage::Shuffle(s) => ElementOp::Shuffle {
                buffer: s.buffer_size,
                seed: s.seed,
            },
            Stage::Shard(s) => ElementOp::Shard {
                num_shards: s.num_shards,
                index: s.index,
            },
            Stage::Skip(s) => ElementOp::Skip(s.count),
            Stage::Take(s) => ElementOp::Take(s.count),
            Stage::Repeat(s) => ElementOp::Repeat(s.count),
        }
    }
}

/// A running pipeline; see `tfrecordkit.Dataset`.
#[pyclass(module = "tfrecordkit._core")]
pub struct Pipeline {
    inner: tfrecordkit_core::pipeline::Pipeline,
}

#[pymethods]
impl Pipeline {
    /// Stops the pipeline's threads and waits for them.
    fn close(&mut self, py: Python<'_>) {
        let inner = &mut self.inner;
        py.detach(|| inner.close());
    }

    /// The next unit as `(keys, payload)`: `keys` names each record's origin (a `uint64`
    /// array), `payload` is a list of records, or one `(values, shape, row_splits)` per
    /// schema feature as `parse_examples` returns them; `None` at the end. Damage raises,
    /// at its place in the stream; with `continue_on_error` the next call goes on after it.
    fn next<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        crate::errors::guard("Pipeline.next", || {
            let Some(item) = self.next_payload(py)? else {
                return Ok(None);
            };
            let out = match item {
                Payload::Records(batch, keys) => {
                    let records = PyList::new(py, batch.iter().map(|r| PyBytes::new(py, r)))?;
                    (keys.into_pyarray(py), records.into_any())
                }
                Payload::Parsed(parsed, keys, assembled) => {
                    let parts = self.parts(py, parsed, assembled)?;
                    let out = parts_to_list(py, parts)?;
                    (keys.into_pyarray(py), out.into_any())
                }
                Payload::Sequences(parsed, keys, assembled, lists) => {
                    let parts = self.parts(py, parsed, Some(assembled))?;
                    let context = parts_to_list(py, parts)?;
                    let specs = self.inner.feature_lists().expect("sequences have lists");
                    let lists = crate::lists::lists_to_py(py, specs, lists)?;
                    let both = PyTuple::new(py, [context.into_any(), lists.into_any()])?;
                    (keys.into_pyarray(py), both.into_any())
                }
            };
            Ok(Some(PyTuple::new(py, [out.0.into_any(), out.1])?))
        })
    }

    /// The next unit of a pipeline that parses Examples, as `(count, features)`: how many
    /// records it holds, and the dict `schema.outputs` makes of them, made without the
    /// `(values, shape, row_splits)` tuples in between; `None` at the end. Raises as
    /// `next` does.
    fn next_dict<'py>(
        &mut self,
        py: Python<'py>,
        schema: PyRef<'py, CompiledSchema>,
    ) -> PyResult<Option<(usize, Bound<'py, PyDict>)>> {
        crate::errors::guard("Pipeline.next_dict", || {
            let Some(item) = self.next_payload(py)? else {
                return Ok(None);
            };
            let Payload::Parsed(parsed, keys, assembled) = item else {
                return Err(PyValueError::new_err("next_dict reads parsed Examples"));
            };
            let parts = self.parts(py, parsed, assembled)?;
            Ok(Some((keys.len(), schema.dict(py, parts)?)))
        })
    }
}

impl Pipeline {
    /// Starts the threads of `plan`; `opener` opens the paths that are not local files.
    pub(crate) fn start(py: Python<'_>, plan: Plan, opener: Option<Py<PyAny>>) -> PyResult<Self> {
        let inner =
            tfrecordkit_core::pipeline::Pipeline::start(plan, crate::opener::shared(opener))
                .py_err(py)?;
        Ok(Pipeline { inner })
    }

    /// The next unit, waited for without the GIL; damage as a Python error.
    fn next_payload(&mut self, py: Python<'_>) -> PyResult<Option<Payload>> {
        let inner = &mut self.inner;
        match py.detach(|| inner.next_item()) {
            Some(item) => item.py_err(py).map(Some),
            None => Ok(None),
        }
    }

    /// A unit's features, their images decoded, as [`assembled_parts`] gives them;
    /// `assembled` is `None` for a unit joined from others, laid out here.
    fn parts<'py>(
        &self,
        py: Python<'py>,
        parsed: Vec<Decoded>,
        assembled: Option<Vec<Assembled>>,
    ) -> PyResult<Vec<FeaturePy<'py>>> {
        let assembled = match assembled {
            Some(assembled) => assembled,
            // Joined from units laid out one by one: each was checked then.
            None => {
                let schema = self.inner.schema().expect("a parsed unit has a schema");
                let columns = parsed_columns(&parsed);
                py.detach(|| schema.assemble(&columns)).py_err(py)?
            }
        };
        let pool = self.inner.pixel_pool();
        let n = parsed.len();
        let mut parsed: Vec<Option<Decoded>> = parsed.into_iter().map(Some).collect();
        assembled_parts(py, assembled, n, false, |i| {
            match parsed[i].take().expect("each column converted once") {
                Decoded::Feature(p) => parsed_column_to_py(py, p),
                Decoded::Images(pixels) => pixels_to_py(py, pixels, Some(&pool)),
            }
        })
    }
}

/// Features' parts as the list `parse_examples` returns.
fn parts_to_list<'py>(py: Python<'py>, parts: Vec<FeaturePy<'py>>) -> PyResult<Bound<'py, PyList>> {
    let items = parts
        .into_iter()
        .map(|part| part.into_py(py))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
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

impl FileOrder {
    pub(crate) fn new(order: Box<dyn Iterator<Item = usize> + Send>) -> Self {
        FileOrder {
            inner: Box::new(SyncIter(std::sync::Mutex::new(order))),
        }
    }
}

#[pymethods]
impl FileOrder {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<usize> {
        self.inner.next()
    }
}

/// What the first bytes of a file look like when they are another format's ("a PNG
/// signature", "text: ..."), or `None`.
#[pyfunction]
pub fn foreign_format(head: &[u8]) -> Option<String> {
    tfrecordkit_core::foreign_format(head)
}

/// Mixes two 64-bit values into a well-spread seed, as the pipeline seeds its shuffles
/// and image augmentation.
#[pyfunction]
pub fn mix_seed(a: u64, b: u64) -> u64 {
    tfrecordkit_core::pipeline::mix_seed(a, b)
}
