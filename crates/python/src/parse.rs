//! Schemas and batch parsing into NumPy.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tfrecordkit_core::{
    parse_examples as core_parse, Column, DType, FeatureSpec, Parsed, Schema, SpecKind,
};

use tfrecordkit_core::sequence;

use crate::errors::IntoPyResult;

pub fn dtype_of(name: &str) -> PyResult<DType> {
    match name {
        "int64" => Ok(DType::Int64),
        "float32" => Ok(DType::Float32),
        "bytes" => Ok(DType::Bytes),
        other => Err(PyValueError::new_err(format!("unknown dtype {other:?}"))),
    }
}

fn default_column(dtype: DType, values: &Bound<'_, PyAny>) -> PyResult<Column> {
    Ok(match dtype {
        DType::Int64 => Column::Int64(values.extract()?),
        DType::Float32 => Column::Float32(values.extract()?),
        DType::Bytes => Column::from_bytes(&values.extract::<Vec<Vec<u8>>>()?),
    })
}

/// A schema compiled once for repeated batch parsing.
#[pyclass(module = "tfrecordkit._core", frozen)]
pub struct CompiledSchema {
    pub schema: Schema,
}

#[pymethods]
impl CompiledSchema {
    /// `specs`: `(key, dtype, kind, shape, allow_missing, default)` tuples, where `kind` is
    /// "fixed", "var" or "sequence" and `default` is a flat list or None.
    #[new]
    fn new(py: Python<'_>, specs: Vec<Bound<'_, PyTuple>>) -> PyResult<Self> {
        crate::errors::guard("CompiledSchema.new", || {
            let mut out = Vec::with_capacity(specs.len());
            for t in specs {
                let (key, dtype, kind, shape, allow_missing, default): (
                    String,
                    String,
                    String,
                    Vec<usize>,
                    bool,
                    Bound<'_, PyAny>,
                ) = t.extract()?;
                let dtype = dtype_of(&dtype)?;
                let kind = match kind.as_str() {
                    "fixed" => SpecKind::FixedLen { shape },
                    "var" => SpecKind::VarLen,
                    "sequence" => SpecKind::FixedLenSequence {
                        shape,
                        allow_missing,
                    },
                    other => return Err(PyValueError::new_err(format!("unknown kind {other:?}"))),
                };
                let default = if default.is_none() {
                    None
                } else {
                    Some(default_column(dtype, &default)?)
                };
                out.push(FeatureSpec {
                    key,
                    dtype,
                    kind,
                    default,
                });
            }
            Ok(CompiledSchema {
                schema: Schema::new(out).py_err(py)?,
            })
        })
    }
}

pub fn column_to_py<'py>(py: Python<'py>, col: Column) -> PyResult<Bound<'py, PyAny>> {
    Ok(match col {
        Column::Int64(v) => PyArray1::from_vec(py, v).into_any(),
        Column::Float32(v) => PyArray1::from_vec(py, v).into_any(),
        col @ Column::Bytes { .. } => {
            let objs: Vec<Py<PyAny>> = (0..col.len())
                .map(|i| PyBytes::new(py, col.bytes_at(i)).into_any().unbind())
                .collect();
            PyArray1::from_vec(py, objs).into_any()
        }
    })
}

pub type ParsedPy<'py> = (Bound<'py, PyAny>, Vec<usize>, Option<Bound<'py, PyAny>>);

/// Parses serialized Examples; returns `(flat values, shape, row_splits or None)` per spec.
#[pyfunction]
pub fn parse_examples<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    schema: &CompiledSchema,
) -> PyResult<Vec<ParsedPy<'py>>> {
    crate::errors::guard("parse_examples", || {
        let parsed = with_records(records, |slices| {
            py.detach(|| core_parse(&schema.schema, slices))
        })?
        .py_err(py)?;
        parsed_to_py(py, parsed)
    })
}

/// Calls `f` with the records of a list or iterable of bytes-like objects, borrowed where
/// they are `bytes` and copied otherwise.
fn with_records<R>(records: &Bound<'_, PyAny>, f: impl FnOnce(&[&[u8]]) -> R) -> PyResult<R> {
    let items: Vec<Bound<'_, PyAny>> = match records.cast::<PyList>() {
        Ok(list) => list.iter().collect(),
        Err(_) => records.try_iter()?.collect::<PyResult<_>>()?,
    };
    if items.iter().all(|i| i.is_instance_of::<PyBytes>()) {
        let slices: Vec<&[u8]> = items
            .iter()
            .map(|i| i.cast::<PyBytes>().map(|b| b.as_bytes()))
            .collect::<Result<_, _>>()?;
        return Ok(f(&slices));
    }
    let owned: Vec<Vec<u8>> = items
        .iter()
        .map(|i| i.extract::<Vec<u8>>())
        .collect::<PyResult<_>>()?;
    let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    Ok(f(&slices))
}

/// Converts parsed columns into `(flat values, shape, row_splits or None)` tuples.
pub fn parsed_to_py(py: Python<'_>, parsed: Vec<Parsed>) -> PyResult<Vec<ParsedPy<'_>>> {
    parsed
        .into_iter()
        .map(|p| parsed_column_to_py(py, p))
        .collect()
}

/// One parsed column as a `(flat values, shape, row_splits or None)` tuple.
pub fn parsed_column_to_py(py: Python<'_>, p: Parsed) -> PyResult<ParsedPy<'_>> {
    let values = column_to_py(py, p.values)?;
    let splits = p.row_splits.map(|s| PyArray1::from_vec(py, s).into_any());
    Ok((values, p.shape, splits))
}

/// As [`parsed_column_to_py`], with a bytes column as `(data, offsets)`: its values back to
/// back (uint8) and where each ends, after a leading 0 (int64), as Arrow lays binary out.
pub fn parsed_column_to_raw(py: Python<'_>, p: Parsed) -> PyResult<ParsedPy<'_>> {
    let values = match p.values {
        Column::Bytes { data, ends } => {
            let offsets: Vec<i64> = std::iter::once(0)
                .chain(ends.iter().map(|&e| e as i64))
                .collect();
            let data = PyArray1::from_vec(py, data).into_any();
            (data, PyArray1::from_vec(py, offsets).into_any())
                .into_pyobject(py)?
                .into_any()
        }
        col => column_to_py(py, col)?,
    };
    let splits = p.row_splits.map(|s| PyArray1::from_vec(py, s).into_any());
    Ok((values, p.shape, splits))
}

/// One feature list of a batch: `(values, steps, step_values, present)`.
pub type FeatureListPy<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
);

/// Reads the feature lists `wanted` `(key, dtype)` of serialized SequenceExamples.
#[pyfunction]
pub fn parse_feature_lists<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    wanted: Vec<(String, String)>,
) -> PyResult<Vec<FeatureListPy<'py>>> {
    crate::errors::guard("parse_feature_lists", || {
        let wanted = wanted
            .into_iter()
            .map(|(key, dtype)| Ok((key, dtype_of(&dtype)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let cols = with_records(records, |slices| {
            py.detach(|| tfrecordkit_core::sequence::parse_feature_lists(&wanted, slices))
        })?
        .py_err(py)?;
        cols.into_iter()
            .map(|c| {
                Ok((
                    column_to_py(py, c.values)?,
                    PyArray1::from_vec(py, c.steps).into_any(),
                    PyArray1::from_vec(py, c.step_values).into_any(),
                    PyArray1::from_vec(py, c.present).into_any(),
                ))
            })
            .collect()
    })
}

/// A `FixedLenSequence` list of a batch padded to `[records, width * stride]` with `pad`
/// (int64 and float32 values; see the core's `pad_steps`).
#[pyfunction]
pub fn pad_steps<'py>(
    py: Python<'py>,
    key: &str,
    values: &Bound<'py, PyAny>,
    steps: PyReadonlyArray1<'py, i64>,
    step_values: PyReadonlyArray1<'py, i64>,
    stride: usize,
    pad: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    crate::errors::guard("pad_steps", || {
        let (steps, step_values) = (steps.as_slice()?, step_values.as_slice()?);
        let records = steps.len().saturating_sub(1);
        let (out, width) = if let Ok(v) = values.extract::<PyReadonlyArray1<'py, i64>>() {
            let (v, pad) = (v.as_slice()?, pad.extract::<i64>()?);
            let (out, width) = py
                .detach(|| sequence::pad_steps(key, v, steps, step_values, stride, pad))
                .py_err(py)?;
            (PyArray1::from_vec(py, out).into_any(), width)
        } else {
            let v = values.extract::<PyReadonlyArray1<'py, f32>>()?;
            let (v, pad) = (v.as_slice()?, pad.extract::<f32>()?);
            let (out, width) = py
                .detach(|| sequence::pad_steps(key, v, steps, step_values, stride, pad))
                .py_err(py)?;
            (PyArray1::from_vec(py, out).into_any(), width)
        };
        out.call_method1("reshape", ((records, width * stride),))
    })
}
