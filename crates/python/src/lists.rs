//! Sequence schemas (`_core.ListSchema`): the feature lists of SequenceExamples, compiled
//! from the `tfrecordkit.schema` specs and laid out by the core.

use std::sync::Arc;

use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use tfrecordkit_core::feature_lists::{
    LaidList, Layout, ListKind, ListPartition, ListSchema, ListSpec,
};

use crate::errors::IntoPyResult;
use crate::parse::{column_to_py, default_column, dtype_of, with_records};

/// The feature lists of a sequence schema and how each is laid out.
#[pyclass(module = "tfrecordkit._core", name = "ListSchema", frozen)]
pub struct CompiledLists {
    pub schema: Arc<ListSchema>,
}

fn partition_of(p: &Bound<'_, PyAny>) -> PyResult<ListPartition> {
    let name = p.get_type().name()?.to_string();
    if name == "UniformRowLength" {
        return Ok(ListPartition::UniformRowLength(
            p.getattr("length")?.extract()?,
        ));
    }
    let key: String = p.getattr("key")?.extract()?;
    Ok(match name.as_str() {
        "RowSplits" => ListPartition::RowSplits(key),
        "RowLengths" => ListPartition::RowLengths(key),
        "RowStarts" => ListPartition::RowStarts(key),
        "RowLimits" => ListPartition::RowLimits(key),
        "ValueRowIds" => ListPartition::ValueRowIds(key),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown ragged partition {other}"
            )))
        }
    })
}

fn list_spec(key: &str, spec: &Bound<'_, PyAny>) -> PyResult<ListSpec> {
    let name = spec.get_type().name()?.to_string();
    let dtype = dtype_of(&spec.getattr("dtype")?.extract::<String>()?)?;
    let kind = match name.as_str() {
        "FixedLenSequence" => {
            let default = spec.getattr("default")?;
            ListKind::Dense {
                shape: spec.getattr("shape")?.extract()?,
                allow_missing: spec.getattr("allow_missing")?.extract()?,
                pad: if default.is_none() {
                    None
                } else {
                    Some(default_column(dtype, &default)?)
                },
            }
        }
        "VarLen" => ListKind::Var,
        "RaggedFeature" => {
            let value_key: Option<String> = spec.getattr("value_key")?.extract()?;
            ListKind::Ragged {
                value_key: value_key.unwrap_or_else(|| key.to_owned()),
                partitions: spec
                    .getattr("partitions")?
                    .try_iter()?
                    .map(|p| partition_of(&p?))
                    .collect::<PyResult<_>>()?,
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "feature list {key:?}: a {other} is not a feature list"
            )))
        }
    };
    Ok(ListSpec {
        key: key.to_owned(),
        dtype,
        kind,
    })
}

#[pymethods]
impl CompiledLists {
    /// `specs`: the `(key, spec)` of each feature list, a `FixedLenSequence`, `VarLen` or
    /// `RaggedFeature` of `tfrecordkit.schema`, read from its attributes.
    #[new]
    fn new(py: Python<'_>, specs: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<Self> {
        crate::errors::guard("ListSchema.new", || {
            let specs = specs
                .iter()
                .map(|(key, spec)| list_spec(key, spec))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(CompiledLists {
                schema: Arc::new(ListSchema::new(specs).py_err(py)?),
            })
        })
    }
}

/// A laid-out feature list as Python takes it: `(array [records, width, *shape],
/// lengths)` for a `FixedLenSequence` (`(values, steps)` unpadded), `(values, steps,
/// step_values)` for a `VarLen`, `(values, steps, levels)` for a `RaggedFeature` (every
/// array int64 but the values).
pub fn laid_list_to_py<'py>(
    py: Python<'py>,
    spec: &ListSpec,
    laid: LaidList,
) -> PyResult<Bound<'py, PyTuple>> {
    let values = column_to_py(py, laid.values)?;
    match laid.layout {
        Layout::Dense { width: None } => {
            PyTuple::new(py, [values, PyArray1::from_vec(py, laid.steps).into_any()])
        }
        Layout::Dense { width: Some(width) } => {
            let records = laid.steps.len().saturating_sub(1);
            let lengths: Vec<i64> = laid.steps.windows(2).map(|w| w[1] - w[0]).collect();
            let ListKind::Dense { shape, .. } = &spec.kind else {
                unreachable!("a dense layout is a FixedLenSequence's");
            };
            let mut dims = vec![records, width];
            dims.extend(shape);
            let array = values.call_method1("reshape", (dims,))?;
            PyTuple::new(py, [array, PyArray1::from_vec(py, lengths).into_any()])
        }
        Layout::Var { step_values } => PyTuple::new(
            py,
            [
                values,
                PyArray1::from_vec(py, laid.steps).into_any(),
                PyArray1::from_vec(py, step_values).into_any(),
            ],
        ),
        Layout::Ragged { levels } => {
            let levels = levels
                .into_iter()
                .map(|l| PyArray1::from_vec(py, l).into_any());
            PyTuple::new(
                py,
                [
                    values,
                    PyArray1::from_vec(py, laid.steps).into_any(),
                    PyList::new(py, levels)?.into_any(),
                ],
            )
        }
    }
}

/// The laid-out feature lists of `lists`, as [`laid_list_to_py`] gives each.
pub fn lists_to_py<'py>(
    py: Python<'py>,
    lists: &ListSchema,
    laid: Vec<LaidList>,
) -> PyResult<Bound<'py, PyList>> {
    let out = lists
        .specs()
        .iter()
        .zip(laid)
        .map(|(spec, laid)| laid_list_to_py(py, spec, laid))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, out)
}

/// Parses the feature lists of serialized SequenceExamples and lays them out (padded to
/// the batch's longest when `pad`), one entry per list of `lists` (see
/// [`laid_list_to_py`]).
#[pyfunction]
#[pyo3(signature = (records, lists, pad=true))]
pub fn parse_sequence_lists<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    lists: &CompiledLists,
    pad: bool,
) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("parse_sequence_lists", || {
        let schema = &lists.schema;
        let laid =
            with_records(records, |slices| py.detach(|| schema.parse(slices, pad)))?.py_err(py)?;
        lists_to_py(py, schema, laid)
    })
}
