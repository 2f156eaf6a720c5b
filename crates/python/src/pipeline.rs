//! The streaming pipeline: plan conversion, remote streams and output units.

use std::sync::Arc;

use numpy::IntoPyArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tfrecordkit_core::pipeline::cardinality::{count_after, picked_records, Cardinality, Counted};
use tfrecordkit_core::pipeline::elements::ElementOp;
use tfrecordkit_core::pipeline::{
    parsed_columns, Cache, Decoded, FileOp, ImageStage, OnError, Payload, Plan, RecordOp,
};
use tfrecordkit_core::{Compression, ReadOptions};

use crate::errors::IntoPyResult;
use crate::image::{pixels_to_py, ImageSpec};
use crate::parse::{
    assembled_to_py, dtype_of, feature_list_to_py, parsed_column_to_py, CompiledSchema,
};
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
    Cache(PyRef<'py, PipelineCache>),
}

impl Stage<'_> {
    fn file_op(&self) -> PyResult<FileOp> {
        Ok(match self {
            Stage::Shuffle(s) => FileOp::Shuffle {
                buffer: s.buffer_size,
                seed: s.seed,
            },
            Stage::Shard(s) => FileOp::Shard {
                num_shards: s.num_shards as usize,
                index: s.index as usize,
            },
            Stage::Skip(s) => FileOp::Skip(s.count),
            Stage::Take(s) => FileOp::Take(s.count),
            Stage::Repeat(s) => FileOp::Repeat(s.count),
            Stage::Cache(_) => {
                return Err(PyValueError::new_err(
                    "cache() keeps records, not file names",
                ))
            }
        })
    }

    /// The stage over elements after a user function.
    pub(crate) fn element_op<T, E>(&self) -> PyResult<ElementOp<T, E>> {
        Ok(match self {
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
            Stage::Cache(_) => {
                return Err(PyValueError::new_err(
                    "cache() after a map keeps elements, not records",
                ))
            }
        })
    }

    fn counted(&self) -> Counted {
        match self {
            Stage::Shuffle(_) | Stage::Cache(_) => Counted::Same,
            Stage::Shard(s) => Counted::Shard {
                num_shards: s.num_shards,
                index: s.index,
            },
            Stage::Skip(s) => Counted::Skip(s.count),
            Stage::Take(s) => Counted::Take(s.count),
            Stage::Repeat(s) => Counted::Repeat(s.count),
        }
    }

    fn record_op(&self) -> RecordOp {
        match self {
            Stage::Shuffle(s) => RecordOp::Shuffle {
                buffer: s.buffer_size,
                seed: s.seed,
            },
            Stage::Shard(s) => RecordOp::Shard {
                num_shards: s.num_shards,
                index: s.index,
            },
            Stage::Skip(s) => RecordOp::Skip(s.count),
            Stage::Take(s) => RecordOp::Take(s.count),
            Stage::Repeat(s) => RecordOp::Repeat(s.count),
            Stage::Cache(c) => RecordOp::Cache(Arc::clone(&c.inner)),
        }
    }
}

/// `interleave(cycle_length, block_length, deterministic, num_parallel_calls)`, read from
/// its attributes.
#[derive(FromPyObject)]
struct InterleaveSpec {
    cycle_length: usize,
    block_length: usize,
    deterministic: bool,
    parallel_reads: usize,
}

/// The plan `tfrecordkit._plan.NativePlan` describes, read from its attributes.
#[derive(FromPyObject)]
struct PlanSpec<'py> {
    files: Vec<String>,
    compression: Option<String>,
    verify: bool,
    resync: bool,
    max_record_bytes: Option<u64>,
    continue_on_error: bool,
    file_ops: Vec<Stage<'py>>,
    interleave: InterleaveSpec,
    record_ops: Vec<Stage<'py>>,
    unit: usize,
    drop_remainder: bool,
    refill: bool,
    schema: Option<PyRef<'py, CompiledSchema>>,
    feature_lists: Option<Vec<(String, String)>>,
    images: Vec<(usize, PyRef<'py, ImageSpec>, u64)>,
    parse_workers: usize,
    prefetch: usize,
    epoch: u64,
    opener: Option<Py<PyAny>>,
}

impl PlanSpec<'_> {
    fn plan(self, py: Python<'_>) -> PyResult<(Plan, Option<Py<PyAny>>)> {
        let mut read = ReadOptions {
            compression: Compression::parse(self.compression.as_deref()).py_err(py)?,
            verify: self.verify,
            resync: self.resync,
            ..ReadOptions::default()
        };
        if let Some(m) = self.max_record_bytes {
            read.max_record_bytes = m;
        }
        let plan = Plan {
            files: self.files,
            read,
            file_ops: self
                .file_ops
                .iter()
                .map(Stage::file_op)
                .collect::<PyResult<_>>()?,
            cycle_length: self.interleave.cycle_length,
            block_length: self.interleave.block_length,
            parallel_reads: self.interleave.parallel_reads,
            deterministic: self.interleave.deterministic,
            record_ops: self.record_ops.iter().map(Stage::record_op).collect(),
            batch_size: self.unit,
            drop_remainder: self.drop_remainder,
            refill: self.refill,
            schema: self.schema.map(|s| Arc::new(s.schema.clone())),
            feature_lists: match self.feature_lists {
                Some(wanted) => Some(Arc::new(
                    wanted
                        .into_iter()
                        .map(|(key, dtype)| Ok((key, dtype_of(&dtype)?)))
                        .collect::<PyResult<Vec<_>>>()?,
                )),
                None => None,
            },
            parse_workers: self.parse_workers,
            prefetch: self.prefetch,
            on_error: if self.continue_on_error {
                OnError::Continue
            } else {
                OnError::Stop
            },
            epoch: self.epoch,
            images: self
                .images
                .iter()
                .map(|(feature, spec, seed)| ImageStage {
                    feature: *feature,
                    spec: spec.spec.clone(),
                    seed: *seed,
                })
                .collect(),
        };
        Ok((plan, self.opener))
    }
}

/// A running pipeline; see `tfrecordkit.Dataset`.
#[pyclass(module = "tfrecordkit._core")]
pub struct Pipeline {
    inner: tfrecordkit_core::pipeline::Pipeline,
}

#[pymethods]
impl Pipeline {
    /// Starts the threads of `plan`, a `tfrecordkit._plan.NativePlan`.
    #[new]
    fn new(py: Python<'_>, plan: PlanSpec<'_>) -> PyResult<Self> {
        crate::errors::guard("Pipeline.new", || {
            let (plan, opener) = plan.plan(py)?;
            let inner =
                tfrecordkit_core::pipeline::Pipeline::start(plan, crate::opener::shared(opener))
                    .py_err(py)?;
            Ok(Pipeline { inner })
        })
    }

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
            let inner = &mut self.inner;
            let Some(item) = py.detach(|| inner.next_item()) else {
                return Ok(None);
            };
            let out = match item.py_err(py)? {
                Payload::Records(batch, keys) => {
                    let records = PyList::new(py, batch.iter().map(|r| PyBytes::new(py, r)))?;
                    (keys.into_pyarray(py), records.into_any())
                }
                Payload::Parsed(parsed, keys, assembled) => {
                    let schema = self.inner.schema().expect("a parsed unit has a schema");
                    let assembled = match assembled {
                        Some(assembled) => assembled,
                        // Joined from units laid out one by one: each was checked then.
                        None => {
                            let columns = parsed_columns(&parsed);
                            py.detach(|| schema.assemble(&columns)).py_err(py)?
                        }
                    };
                    let out = self.columns_to_py(py, parsed, assembled)?;
                    (keys.into_pyarray(py), out.into_any())
                }
                Payload::Sequences(parsed, keys, assembled, lists) => {
                    let context = self.columns_to_py(py, parsed, assembled)?;
                    let lists = lists
                        .into_iter()
                        .map(|c| feature_list_to_py(py, c))
                        .collect::<PyResult<Vec<_>>>()?;
                    let both =
                        PyTuple::new(py, [context.into_any(), PyList::new(py, lists)?.into_any()])?;
                    (keys.into_pyarray(py), both.into_any())
                }
            };
            Ok(Some(PyTuple::new(py, [out.0.into_any(), out.1])?))
        })
    }
}

impl Pipeline {
    /// A unit's parsed features as `parse_examples` returns them.
    fn columns_to_py<'py>(
        &self,
        py: Python<'py>,
        parsed: Vec<Decoded>,
        assembled: Vec<Assembled>,
    ) -> PyResult<Bound<'py, PyList>> {
        let pool = self.inner.pixel_pool();
        let n = parsed.len();
        let mut parsed: Vec<Option<Decoded>> = parsed.into_iter().map(Some).collect();
        let out = assembled_to_py(py, assembled, n, false, |i| {
            match parsed[i].take().expect("each column converted once") {
                Decoded::Feature(p) => parsed_column_to_py(py, p),
                Decoded::Images(pixels) => pixels_to_py(py, pixels, Some(&pool)),
            }
        })?;
        PyList::new(py, out)
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
    fn new(n: usize, file_ops: Vec<Stage<'_>>, epoch: u64) -> PyResult<Self> {
        crate::errors::guard("FileOrder.new", || {
            let ops: Vec<FileOp> = file_ops
                .iter()
                .map(Stage::file_op)
                .collect::<PyResult<_>>()?;
            let order = tfrecordkit_core::pipeline::file_order_of(&ops, n, epoch);
            Ok(FileOrder {
                inner: Box::new(SyncIter(std::sync::Mutex::new(order))),
            })
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<usize> {
        self.inner.next()
    }
}

/// A stage after the files are read, as it changes the number of elements: told apart by
/// its class or attributes (the `tfrecordkit.pipeline.plan` dataclasses).
#[derive(FromPyObject)]
pub enum CountedStage<'py> {
    Native(Stage<'py>),
    Filter {
        #[pyo3(attribute)]
        #[allow(dead_code)]
        predicate: Bound<'py, PyAny>,
    },
    Batch {
        #[pyo3(attribute)]
        size: u64,
        #[pyo3(attribute)]
        drop_remainder: bool,
    },
    Other(#[allow(dead_code)] Bound<'py, PyAny>),
}

/// How many elements one pass yields (tf.data's `cardinality()`: -1 without end, -2 not
/// known without reading the data), from the plan alone: `files` files picked by
/// `file_ops`, then, when `read`, their records through `ops`. `counts()` gives each
/// file's record count (`None` where not known); called only when the answer needs it.
/// With `skips`, records may be skipped (an error policy), so a count of them is unknown.
#[pyfunction]
#[pyo3(signature = (files, file_ops, ops, counts=None, read=true, skips=false))]
pub fn cardinality(
    py: Python<'_>,
    files: usize,
    file_ops: Vec<Stage<'_>>,
    ops: Vec<CountedStage<'_>>,
    counts: Option<Py<PyAny>>,
    read: bool,
    skips: bool,
) -> PyResult<i64> {
    crate::errors::guard("cardinality", || {
        let file_ops: Vec<FileOp> = file_ops
            .iter()
            .map(Stage::file_op)
            .collect::<PyResult<_>>()?;
        let counted: Vec<Counted> = ops
            .iter()
            .map(|op| match op {
                CountedStage::Native(stage) => stage.counted(),
                CountedStage::Filter { .. } => Counted::Filter,
                CountedStage::Batch {
                    size,
                    drop_remainder,
                } => Counted::Batch {
                    size: *size,
                    drop_remainder: *drop_remainder,
                },
                CountedStage::Other(_) => Counted::Same,
            })
            .collect();
        let n = if read {
            let mut failed = None;
            let n = picked_records(&file_ops, files, || {
                let Some(counts) = &counts else {
                    return vec![None];
                };
                match counts.bind(py).call0().and_then(|c| c.extract()) {
                    Ok(counts) => counts,
                    Err(err) => {
                        failed = Some(err);
                        vec![None]
                    }
                }
            });
            if let Some(err) = failed {
                return Err(err);
            }
            match n {
                Cardinality::Known(_) if skips => Cardinality::Unknown,
                n => n,
            }
        } else {
            let counted: Vec<Counted> = file_ops.iter().map(Counted::from).collect();
            count_after(Cardinality::Known(files as u64), &counted)
        };
        Ok(match count_after(n, if read { &counted } else { &[] }) {
            Cardinality::Known(k) => i64::try_from(k).unwrap_or(i64::MAX),
            Cardinality::Infinite => -1,
            Cardinality::Unknown => -2,
        })
    })
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
