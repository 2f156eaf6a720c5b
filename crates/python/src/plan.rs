//! A `Dataset`'s stages compiled once into the core's plan (`_core.Plan`), which starts
//! each run of the pipeline and counts its elements.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use tfrecordkit_core::pipeline::cardinality::Cardinality;
use tfrecordkit_core::pipeline::compile::{
    compile, Compiled, Consumers, Interleave, Level, Parsing, PlanError, Run, Step,
};
use tfrecordkit_core::pipeline::OnError;
use tfrecordkit_core::{Compression, ReadOptions};

use crate::errors::IntoPyResult;
use crate::image::ImageSpec;
use crate::lists::CompiledLists;
use crate::parse::CompiledSchema;
use crate::pipeline::{FileOrder, Pipeline, PipelineCache, Stage};

/// The stages of a `Dataset` (the `tfrecordkit.pipeline.plan` builders and the native
/// `Shuffle`, `Shard`, `Skip`, `Take`, `Repeat`), compiled.
#[pyclass(module = "tfrecordkit._core", name = "Plan", frozen)]
pub struct CompiledPlan {
    compiled: Compiled,
    /// The builder's stages, as given.
    ops: Vec<Py<PyAny>>,
}

/// What a pipeline reads: `tfrecordkit.pipeline.plan.Source`, read from its attributes.
#[derive(FromPyObject)]
pub struct SourceSpec<'py> {
    files: Vec<String>,
    compression: Option<String>,
    verify: bool,
    resync: bool,
    max_record_bytes: Option<u64>,
    on_error: Bound<'py, PyAny>,
    consumers: Option<(u64, u64, String)>,
    opener: Option<Py<PyAny>>,
    counts: Option<Bound<'py, PyAny>>,
}

impl SourceSpec<'_> {
    fn consumers(&self) -> PyResult<Option<Consumers>> {
        let Some((count, index, level)) = &self.consumers else {
            return Ok(None);
        };
        let level = Level::from_name(level).ok_or_else(|| {
            PyValueError::new_err(format!(
                "consumers split by files, records or elements, not {level:?}"
            ))
        })?;
        Ok(Some(Consumers {
            count: *count,
            index: *index,
            level,
        }))
    }

    /// Records that do not read or parse are skipped rather than raised.
    fn skips(&self) -> bool {
        self.on_error.extract::<String>().ok().as_deref() != Some("raise")
    }
}

fn step_of(op: &Bound<'_, PyAny>) -> PyResult<Step> {
    if let Ok(stage) = op.extract::<Stage<'_>>() {
        return Ok(Step::Order(stage.order()));
    }
    let kind = op.get_type().name()?.to_string();
    Ok(match kind.as_str() {
        "Interleave" => Step::Interleave(Interleave {
            cycle_length: op.getattr("cycle_length")?.extract()?,
            block_length: op.getattr("block_length")?.extract()?,
            deterministic: op.getattr("deterministic")?.extract()?,
            parallel_reads: op.getattr("parallel_reads")?.extract()?,
        }),
        "Parse" => {
            let compiled = op.getattr("schema")?.call_method0("compiled")?;
            Step::Parse(Arc::clone(&compiled.cast::<CompiledSchema>()?.get().schema))
        }
        "ParseSequence" => {
            let (context, lists): (Bound<'_, CompiledSchema>, Bound<'_, CompiledLists>) =
                op.call_method0("native")?.extract()?;
            Step::ParseSequence {
                context: Arc::clone(&context.get().schema),
                lists: Arc::clone(&lists.get().schema),
                batched: op.getattr("batched")?.extract()?,
            }
        }
        "DecodeImage" => {
            let options = op.getattr("options")?;
            let spec = options.call_method0("native")?;
            let seed = if options.getattr("seed")?.is_none() {
                None
            } else {
                Some(options.call_method0("seed_value")?.extract()?)
            };
            Step::DecodeImage {
                key: op.getattr("key")?.extract()?,
                spec: spec.cast::<ImageSpec>()?.get().spec.clone(),
                seed,
            }
        }
        "Batch" => Step::Batch {
            size: op.getattr("size")?.extract()?,
            drop_remainder: op.getattr("drop_remainder")?.extract()?,
            max_bytes: op.getattr("max_bytes")?.extract()?,
        },
        "Prefetch" => Step::Prefetch(op.getattr("size")?.extract()?),
        "Cache" => {
            let native = op.getattr("store")?.getattr("native")?;
            Step::Cache(native.cast::<PipelineCache>()?.get().shared())
        }
        "Map" => Step::Map,
        "Filter" => Step::Filter,
        _ => {
            return Err(PyTypeError::new_err(format!(
                "not a stage of a pipeline: {}",
                op.repr()?
            )))
        }
    })
}

#[pymethods]
impl CompiledPlan {
    /// Compiles `ops`; `files_level`: the dataset starts from file names, read at an
    /// `interleave`. A stage that cannot follow what comes before it is a `TypeError`.
    #[new]
    fn new(files_level: bool, ops: Vec<Bound<'_, PyAny>>) -> PyResult<Self> {
        crate::errors::guard("Plan.new", || {
            let steps = ops.iter().map(step_of).collect::<PyResult<Vec<_>>>()?;
            let compiled = compile(files_level, &steps).map_err(|e| match e {
                PlanError::Order(m) => PyTypeError::new_err(m),
                PlanError::Value(m) => PyValueError::new_err(m),
            })?;
            Ok(CompiledPlan {
                compiled,
                ops: ops.into_iter().map(Bound::unbind).collect(),
            })
        })
    }

    /// The pipeline yields its file names and never reads them.
    #[getter]
    fn files_only(&self) -> bool {
        self.compiled.files_only
    }

    #[getter]
    fn deterministic(&self) -> bool {
        self.compiled.interleave.deterministic
    }

    /// The schema (`tfrecordkit.Schema`) the engine parses Examples with, if it does.
    #[getter]
    fn schema(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        crate::errors::guard("Plan.schema", || match self.compiled.parsing {
            Parsing::Examples { step, .. } => {
                Ok(Some(self.ops[step].bind(py).getattr("schema")?.unbind()))
            }
            _ => Ok(None),
        })
    }

    /// The `ParseSequence` stage the engine runs, if it parses SequenceExamples.
    #[getter]
    fn sequence(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match self.compiled.parsing {
            Parsing::Sequences { step, .. } => Some(self.ops[step].clone_ref(py)),
            _ => None,
        }
    }

    /// The `Batch` stage the engine runs, if it batches.
    #[getter]
    fn batch(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.compiled
            .batch
            .map(|(step, _, _)| self.ops[step].clone_ref(py))
    }

    /// The `DecodeImage` stages the engine runs after its parse.
    #[getter]
    fn images(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        let images = &self.compiled.images;
        images
            .iter()
            .map(|(step, _, _)| self.ops[*step].clone_ref(py))
            .collect()
    }

    /// The stages over the elements a user function made, in order.
    #[getter]
    fn element_ops(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        let steps = &self.compiled.elements;
        steps
            .iter()
            .map(|&step| self.ops[step].clone_ref(py))
            .collect()
    }

    /// Starts the engine's threads for pass `epoch` over `source`.
    fn start(&self, py: Python<'_>, source: SourceSpec<'_>, epoch: u64) -> PyResult<Pipeline> {
        crate::errors::guard("Plan.start", || {
            let mut read = ReadOptions {
                compression: Compression::parse(source.compression.as_deref()).py_err(py)?,
                verify: source.verify,
                resync: source.resync,
                ..ReadOptions::default()
            };
            if let Some(m) = source.max_record_bytes {
                read.max_record_bytes = m;
            }
            let run = Run {
                read,
                on_error: if source.skips() {
                    OnError::Continue
                } else {
                    OnError::Stop
                },
                consumers: source.consumers()?,
                epoch,
                cpus: crate::threads::cpus(),
                files: source.files,
            };
            Pipeline::start(py, self.compiled.plan(run), source.opener)
        })
    }

    /// The order in which pass `epoch` yields the names of the files of `source`, when
    /// the pipeline never reads them: indexes into `source.files`.
    fn file_order(&self, source: SourceSpec<'_>, epoch: u64) -> PyResult<FileOrder> {
        crate::errors::guard("Plan.file_order", || {
            let order = self
                .compiled
                .file_order(source.files.len(), source.consumers()?, epoch);
            Ok(FileOrder::new(order))
        })
    }

    /// How `count` consumers share the pipeline over `files` files: `(level, whole,
    /// element_at)`, `level` being `"files"`, `"records"` or `"elements"` (split after the
    /// last `shard` / `skip` / `take`, so that together they read what the whole pipeline
    /// yields); the first `whole` stages run over everything in every consumer (their
    /// unseeded shuffles need one seed); at `"elements"`, the split goes at `element_at`
    /// among `element_ops`.
    fn share(&self, files: usize, count: u64) -> (&'static str, usize, usize) {
        let share = self.compiled.share(files, count);
        (share.level.name(), share.whole, share.element_at)
    }

    /// How many elements one pass over `source` yields (tf.data's `cardinality()`: -1
    /// without end, -2 not known without reading the data), from the plan alone and the
    /// record counts `source.counts()` gives (called only when the answer needs it).
    fn cardinality(&self, source: SourceSpec<'_>) -> PyResult<i64> {
        crate::errors::guard("Plan.cardinality", || {
            let mut failed = None;
            let counts = || {
                let Some(counts) = &source.counts else {
                    return vec![None];
                };
                match counts.call0().and_then(|c| c.extract()) {
                    Ok(counts) => counts,
                    Err(err) => {
                        failed = Some(err);
                        vec![None]
                    }
                }
            };
            let consumers = source.consumers()?;
            let n =
                self.compiled
                    .cardinality(source.files.len(), consumers, source.skips(), counts);
            if let Some(err) = failed {
                return Err(err);
            }
            Ok(match n {
                Cardinality::Known(k) => i64::try_from(k).unwrap_or(i64::MAX),
                Cardinality::Infinite => -1,
                Cardinality::Unknown => -2,
            })
        })
    }
}
