//! The engine's stages over Python elements (after a user `map` or `filter`): Python
//! supplies the elements, the functions and how a batch is stacked; the core runs them.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyList, PyTuple};
use tfrecordkit_core::pipeline::elements::{
    element_stream, ChunkFn, CollateFn, ElementOp, ElementStore, Elements as CoreElements,
    FilterFn, Keeper, MapFn, SourceFn, Workers,
};

use crate::pipeline::Stage;
use crate::threads::{cpus, gil};

/// An element, with the key of the record(s) it came from (`None` where not kept).
struct Tagged {
    key: Py<PyAny>,
    value: Py<PyAny>,
}

type Stream = Box<dyn CoreElements<Tagged, PyErr>>;

/// A stage, told apart by its attributes (the `tfrecordkit._plan` dataclasses) or class.
#[derive(FromPyObject)]
enum Op<'py> {
    Native(Stage<'py>),
    Map {
        #[pyo3(attribute("fn"))]
        f: Py<PyAny>,
        #[pyo3(attribute)]
        num_parallel_calls: Option<i64>,
    },
    Filter {
        #[pyo3(attribute)]
        predicate: Py<PyAny>,
    },
    Batch {
        #[pyo3(attribute)]
        size: usize,
        #[pyo3(attribute)]
        drop_remainder: bool,
    },
    Chunked {
        #[pyo3(attribute)]
        size: usize,
        #[pyo3(attribute)]
        apply: Py<PyAny>,
    },
    Prefetch {
        #[pyo3(attribute)]
        size: usize,
    },
    Cache {
        #[pyo3(attribute)]
        store: Py<PyAny>,
    },
}

/// `map(num_parallel_calls=AUTOTUNE)`.
const AUTOTUNE: i64 = -1;

impl Op<'_> {
    fn compile(
        &self,
        collate: &Option<Py<PyAny>>,
        tagged: bool,
    ) -> PyResult<ElementOp<Tagged, PyErr>> {
        Ok(match self {
            Op::Native(stage) => stage.element_op(),
            Op::Map {
                f,
                num_parallel_calls,
            } => {
                let f = Python::attach(|py| f.clone_ref(py));
                let map: MapFn<Tagged, PyErr> = Arc::new(move |x: Tagged| {
                    Python::attach(|py| {
                        let value = f.bind(py).call1((x.value,))?.unbind();
                        Ok(Tagged { key: x.key, value })
                    })
                });
                match *num_parallel_calls {
                    None | Some(1) => ElementOp::Map(map),
                    Some(AUTOTUNE) => ElementOp::ParallelMap {
                        f: map,
                        workers: Workers::Autotune(cpus()),
                        lock: gil(),
                    },
                    Some(n) if n > 1 => ElementOp::ParallelMap {
                        f: map,
                        workers: Workers::Fixed(n as usize),
                        lock: gil(),
                    },
                    Some(n) => {
                        return Err(pyo3::exceptions::PyValueError::new_err(format!(
                            "num_parallel_calls must be at least 1 or AUTOTUNE, not {n}"
                        )))
                    }
                }
            }
            Op::Chunked { size, apply } => {
                let f = Python::attach(|py| apply.clone_ref(py));
                let chunk: ChunkFn<Tagged, PyErr> =
                    Arc::new(move |xs: Vec<Tagged>, seed: u64, start: u64| {
                        Python::attach(|py| {
                            let n = xs.len();
                            let (keys, values): (Vec<_>, Vec<_>) =
                                xs.into_iter().map(|x| (x.key, x.value)).unzip();
                            let py_keys = if tagged {
                                PyList::new(py, keys.iter().map(|k| k.bind(py)))?.into_any()
                            } else {
                                py.None().into_bound(py)
                            };
                            let out = f.bind(py).call1((
                                PyList::new(py, values)?,
                                py_keys,
                                seed,
                                start,
                            ))?;
                            let out: Vec<Py<PyAny>> = out.extract()?;
                            if out.len() != n {
                                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                                    "a stage made {} elements of {n}",
                                    out.len()
                                )));
                            }
                            Ok(keys
                                .into_iter()
                                .zip(out)
                                .map(|(key, value)| Tagged { key, value })
                                .collect())
                        })
                    });
                ElementOp::Chunks {
                    size: *size,
                    f: chunk,
                }
            }
            Op::Cache { store } => ElementOp::Cache(Arc::new(PyStore {
                store: Python::attach(|py| store.clone_ref(py)),
            })),
            Op::Prefetch { size } => ElementOp::Prefetch {
                size: *size,
                lock: gil(),
            },
            Op::Filter { predicate } => {
                let f = Python::attach(|py| predicate.clone_ref(py));
                let filter: FilterFn<Tagged, PyErr> = Arc::new(move |x: &Tagged| {
                    Python::attach(|py| f.bind(py).call1((x.value.bind(py),))?.is_truthy())
                });
                ElementOp::Filter(filter)
            }
            Op::Batch {
                size,
                drop_remainder,
            } => {
                let Some(collate) = collate else {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "batch() needs a collate function",
                    ));
                };
                let f = Python::attach(|py| collate.clone_ref(py));
                let collate: CollateFn<Tagged, PyErr> = Arc::new(move |xs: Vec<Tagged>| {
                    Python::attach(|py| {
                        let (keys, values): (Vec<_>, Vec<_>) =
                            xs.into_iter().map(|x| (x.key, x.value)).unzip();
                        let values = PyList::new(py, values)?;
                        let keys = if tagged {
                            PyList::new(py, keys)?.into_any()
                        } else {
                            py.None().into_bound(py)
                        };
                        let out = f.bind(py).call1((values, keys))?;
                        let (key, value): (Py<PyAny>, Py<PyAny>) = out.extract()?;
                        Ok(Tagged { key, value })
                    })
                });
                ElementOp::Batch {
                    size: *size,
                    drop_remainder: *drop_remainder,
                    collate,
                }
            }
        })
    }
}

/// A `cache` stage's Python store (`python_stages.CacheStore`): `replay()` gives an
/// iterator of `(key, element)` pairs once a pass is kept, else `None`; `keeper()` an object
/// with `keep(key, element)`, `finish()` and `abort()`.
struct PyStore {
    store: Py<PyAny>,
}

impl ElementStore<Tagged, PyErr> for PyStore {
    fn replay(&self) -> PyResult<Option<Stream>> {
        Python::attach(|py| {
            let kept = self.store.bind(py).call_method0("replay")?;
            if kept.is_none() {
                return Ok(None);
            }
            Ok(Some(Box::new(FromIterator {
                it: kept.try_iter()?.unbind(),
                tagged: true,
                chunks: false,
                chunk: None,
            }) as Stream))
        })
    }

    fn keeper(&self) -> PyResult<Box<dyn Keeper<Tagged, PyErr>>> {
        Python::attach(|py| {
            let keeper = self.store.bind(py).call_method0("keeper")?.unbind();
            Ok(Box::new(PyKeeper {
                keeper: Some(keeper),
            }) as Box<dyn Keeper<Tagged, PyErr>>)
        })
    }
}

struct PyKeeper {
    /// Taken once the pass is finished.
    keeper: Option<Py<PyAny>>,
}

impl Keeper<Tagged, PyErr> for PyKeeper {
    fn keep(&mut self, x: &Tagged) -> PyResult<()> {
        let Some(keeper) = &self.keeper else {
            return Ok(());
        };
        Python::attach(|py| {
            keeper
                .bind(py)
                .call_method1("keep", (x.key.bind(py), x.value.bind(py)))?;
            Ok(())
        })
    }

    fn finish(mut self: Box<Self>) -> PyResult<()> {
        let Some(keeper) = self.keeper.take() else {
            return Ok(());
        };
        Python::attach(|py| keeper.bind(py).call_method0("finish").map(drop))
    }
}

impl Drop for PyKeeper {
    fn drop(&mut self) {
        if let Some(keeper) = self.keeper.take() {
            // A pass left early, or failed: what was kept of it goes.
            crate::threads::attach(|py| {
                let _ = keeper.bind(py).call_method0("abort");
            });
        }
    }
}

/// What a Python iterator yields: `(key, element)` pairs when tagged; lists of them
/// when `chunks`.
struct FromIterator {
    it: Py<PyIterator>,
    tagged: bool,
    chunks: bool,
    chunk: Option<Py<PyIterator>>,
}

impl CoreElements<Tagged, PyErr> for FromIterator {
    fn next_element(&mut self) -> PyResult<Option<Tagged>> {
        Python::attach(|py| {
            let x = loop {
                if let Some(chunk) = &self.chunk {
                    if let Some(x) = chunk.bind(py).clone().next() {
                        break x?;
                    }
                    self.chunk = None;
                }
                let Some(x) = self.it.bind(py).clone().next() else {
                    return Ok(None);
                };
                if !self.chunks {
                    break x?;
                }
                self.chunk = Some(x?.try_iter()?.unbind());
            };
            Ok(Some(if self.tagged {
                let (key, value): (Py<PyAny>, Py<PyAny>) = x.extract()?;
                Tagged { key, value }
            } else {
                Tagged {
                    key: py.None(),
                    value: x.unbind(),
                }
            }))
        })
    }
}

/// The elements of a pipeline's stages after a user function: `source(epoch)` gives the
/// elements before them (as `(key, element)` pairs when `tagged`; lists of them, one at
/// a time, when `chunks`), and it yields pairs when `pairs` (by default, when `tagged`);
/// `ops` are the stages
/// (`Map`, serial or with `num_parallel_calls`, `Filter`, `Batch`, `Prefetch`, `Chunked`
/// (`apply(elements, keys, seed, position)` making as many elements of a chunk of
/// `size`) and the engine's `Shuffle`, `Shard`, `Skip`, `Take`, `Repeat`), and `collate(elements, keys)` stacks a batch into a `(key, element)` pair.
#[pyclass(module = "tfrecordkit._core")]
pub struct ElementPipeline {
    // Only ever used through `&mut self`: the lock is never contended.
    inner: std::sync::Mutex<Stream>,
    /// Whether it yields `(key, element)` pairs (else the elements alone).
    pairs: bool,
}

#[pymethods]
impl ElementPipeline {
    #[new]
    #[pyo3(signature = (source, ops, epoch, tagged, collate=None, chunks=false, pairs=None))]
    fn new(
        source: Py<PyAny>,
        ops: Vec<Op<'_>>,
        epoch: u64,
        tagged: bool,
        collate: Option<Py<PyAny>>,
        chunks: bool,
        pairs: Option<bool>,
    ) -> PyResult<Self> {
        crate::errors::guard("ElementPipeline.new", || {
            let ops: Vec<ElementOp<Tagged, PyErr>> = ops
                .iter()
                .map(|op| op.compile(&collate, tagged))
                .collect::<PyResult<_>>()?;
            let source: SourceFn<Tagged, PyErr> = Arc::new(move |epoch| {
                Python::attach(|py| {
                    let it = source.bind(py).call1((epoch,))?.try_iter()?.unbind();
                    Ok(Box::new(FromIterator {
                        it,
                        tagged,
                        chunks,
                        chunk: None,
                    }) as Stream)
                })
            });
            let inner = element_stream(source, ops.into(), epoch)?;
            Ok(ElementPipeline {
                inner: std::sync::Mutex::new(inner),
                pairs: pairs.unwrap_or(tagged),
            })
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        crate::errors::guard("ElementPipeline.__next__", || {
            let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
            let Some(x) = inner.next_element()? else {
                return Ok(None);
            };
            Ok(Some(if self.pairs {
                PyTuple::new(py, [x.key, x.value])?.into_any().unbind()
            } else {
                x.value
            }))
        })
    }
}
