//! Schemas and batch parsing into NumPy.

use std::sync::Arc;

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use tfrecordkit_core::{
    parse_examples as core_parse, Assembled, Assembly, Column, DType, FeatureSpec, Parsed,
    PartitionSource, Schema, SparseValues, SpecKind,
};

use crate::errors::IntoPyResult;

pub fn dtype_of(name: &str) -> PyResult<DType> {
    match name {
        "int64" => Ok(DType::Int64),
        "float32" => Ok(DType::Float32),
        "bytes" => Ok(DType::Bytes),
        other => Err(PyValueError::new_err(format!("unknown dtype {other:?}"))),
    }
}

pub(crate) fn default_column(dtype: DType, values: &Bound<'_, PyAny>) -> PyResult<Column> {
    Ok(match dtype {
        DType::Int64 => Column::Int64(values.extract()?),
        DType::Float32 => Column::Float32(values.extract()?),
        DType::Bytes => Column::from_bytes(&values.extract::<Vec<Vec<u8>>>()?),
    })
}

/// A schema compiled once for repeated batch parsing.
#[pyclass(module = "tfrecordkit._core", frozen)]
pub struct CompiledSchema {
    pub schema: Arc<Schema>,
    /// How each feature is handed to Python, in the schema's order.
    outputs: Vec<Output>,
}

/// How a feature of a parsed batch is handed to Python.
enum Output {
    /// A column: an array `[batch, *shape]`, or a `Ragged` over its row splits.
    Plain(Py<PyString>),
    /// A nullable `FixedLen` column: a `numpy.ma.MaskedArray` `[batch, *shape]`, masked
    /// where null. (A nullable `VarLen` one has no NumPy form: it is read as Arrow.)
    Nullable(Py<PyString>),
    Sparse(Py<PyString>),
    /// A `RaggedFeature`; `narrow`: its row splits are int32.
    Ragged(Py<PyString>, bool),
}

/// `tfrecordkit.schema.values`' `Ragged` and `Sparse`, looked up once.
static RESULTS: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn result_classes(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    RESULTS.get_or_try_init(py, || {
        let module = py.import("tfrecordkit.schema.values")?;
        Ok((
            module.getattr("Ragged")?.unbind(),
            module.getattr("Sparse")?.unbind(),
        ))
    })
}

#[pymethods]
impl CompiledSchema {
    /// `columns`: the `(key, spec)` of each parsed column, the spec a `FixedLen`, `VarLen`
    /// or `FixedLenSequence` of `tfrecordkit.schema`, read from its attributes.
    /// `features`: the schema's `(name, spec)` pairs as they are; sparse and ragged
    /// features are laid out from the columns they read, plain ones are their columns.
    /// Without `features` every column is a feature. With `unpadded`, a `FixedLenSequence`
    /// comes out as a `VarLen` does (see `Schema::unpadded`). The features `nullable`
    /// names are null where an Example lacks them (see `Schema::nullable`): their third
    /// part is then `(row_splits or None, valid)`, `valid` a bool array of the rows that
    /// hold a value.
    #[new]
    #[pyo3(signature = (columns, features=None, unpadded=false, nullable=Vec::new()))]
    fn new(
        py: Python<'_>,
        columns: Vec<(String, Bound<'_, PyAny>)>,
        features: Option<Vec<(String, Bound<'_, PyAny>)>>,
        unpadded: bool,
        nullable: Vec<String>,
    ) -> PyResult<Self> {
        crate::errors::guard("CompiledSchema.new", || {
            let out = columns
                .iter()
                .map(|(key, spec)| column_spec(key, spec))
                .collect::<PyResult<Vec<_>>>()?;
            let mut schema = Schema::new(out)
                .py_err(py)?
                .nullable(&nullable)
                .py_err(py)?;
            if unpadded {
                schema = schema.unpadded();
            }
            let plain = |key: &String| {
                let name = PyString::intern(py, key).unbind();
                if nullable.contains(key) {
                    Output::Nullable(name)
                } else {
                    Output::Plain(name)
                }
            };
            let Some(features) = features else {
                let outputs = columns.iter().map(|(key, _)| plain(key)).collect();
                return Ok(CompiledSchema {
                    schema: Arc::new(schema),
                    outputs,
                });
            };
            let assembly = features
                .iter()
                .map(|(key, spec)| assembly_of(&schema, key, spec))
                .collect::<PyResult<Vec<_>>>()?;
            let outputs = features
                .iter()
                .map(|(key, spec)| {
                    let name = || PyString::intern(py, key).unbind();
                    Ok(match spec.get_type().name()?.to_str()? {
                        "SparseFeature" => Output::Sparse(name()),
                        "RaggedFeature" => {
                            let splits: String = spec.getattr("row_splits_dtype")?.extract()?;
                            Output::Ragged(name(), splits == "int32")
                        }
                        _ => plain(key),
                    })
                })
                .collect::<PyResult<_>>()?;
            Ok(CompiledSchema {
                schema: Arc::new(schema.with_assembly(assembly).py_err(py)?),
                outputs,
            })
        })
    }

    /// The features of a batch as the native parse gives them (one entry per feature, see
    /// `parse_examples`), as Python takes them: a dict of arrays `[batch, *shape]`, and
    /// `Ragged` and `Sparse` values.
    fn outputs<'py>(
        &self,
        py: Python<'py>,
        parsed: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::errors::guard("CompiledSchema.outputs", || {
            self.dict(py, parsed.into_iter().map(FeaturePy::Other).collect())
        })
    }
}

impl CompiledSchema {
    /// The dict `outputs` makes of a batch's features, from their parts as
    /// [`assembled_parts`] gives them.
    pub(crate) fn dict<'py>(
        &self,
        py: Python<'py>,
        parts: Vec<FeaturePy<'py>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        if parts.len() != self.outputs.len() {
            return Err(PyValueError::new_err(format!(
                "{} parsed features for a schema of {}",
                parts.len(),
                self.outputs.len()
            )));
        }
        let (ragged, sparse) = result_classes(py)?;
        let (ragged, sparse) = (ragged.bind(py), sparse.bind(py));
        let out = PyDict::new(py);
        for (output, part) in self.outputs.iter().zip(parts) {
            let (key, value) = match output {
                Output::Plain(key) | Output::Nullable(key) => {
                    let (values, shape, splits) = match part {
                        FeaturePy::Plain(parts) => parts,
                        FeaturePy::Other(p) => p.extract()?,
                    };
                    let value = match splits {
                        Some(third) if matches!(output, Output::Nullable(_)) => {
                            let (splits, valid): (Option<Bound<'_, PyAny>>, Bound<'_, PyAny>) =
                                third.extract()?;
                            if splits.is_some() {
                                return Err(PyValueError::new_err(format!(
                                    "feature {key}: a nullable VarLen feature is read as Arrow \
                                     (read_arrow), whose lists can be null"
                                )));
                            }
                            let values = values.call_method1("reshape", (shape,))?;
                            masked(py, values, valid)?
                        }
                        Some(splits) => ragged.call1((values, splits))?,
                        // A scalar feature's flat values are its batch already.
                        None if shape.len() == 1 => values,
                        None => values.call_method1("reshape", (shape,))?,
                    };
                    (key, value)
                }
                Output::Sparse(key) => {
                    let (indices, values, dense_shape, _): (
                        Bound<'_, PyAny>,
                        Bound<'_, PyAny>,
                        Vec<i64>,
                        Bound<'_, PyAny>,
                    ) = part.into_py(py)?.extract()?;
                    let dense_shape = PyTuple::new(py, dense_shape)?;
                    (key, sparse.call1((indices, values, dense_shape))?)
                }
                Output::Ragged(key, narrow) => {
                    let (mut value, levels): (Bound<'_, PyAny>, Vec<Bound<'_, PyAny>>) =
                        part.into_py(py)?.extract()?;
                    for splits in levels.into_iter().rev() {
                        let splits = if *narrow {
                            splits.call_method1("astype", ("int32",))?
                        } else {
                            splits
                        };
                        value = ragged.call1((value, splits))?;
                    }
                    (key, value)
                }
            };
            out.set_item(key.bind(py), value)?;
        }
        Ok(out)
    }
}

/// `values` `[batch, *shape]` as a `numpy.ma.MaskedArray`, masked in the rows that `valid`
/// (bool, one per row) says hold no value.
fn masked<'py>(
    py: Python<'py>,
    values: Bound<'py, PyAny>,
    valid: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let numpy = py.import("numpy")?;
    let mut mask = numpy.call_method1("logical_not", (valid,))?;
    let ndim: usize = values.getattr("ndim")?.extract()?;
    if ndim > 1 {
        // One mask entry per value: each row's, over the row's shape.
        let mut rows = vec![-1i64];
        rows.extend(std::iter::repeat_n(1, ndim - 1));
        let shape = values.getattr("shape")?;
        mask = numpy
            .call_method1(
                "broadcast_to",
                (mask.call_method1("reshape", (rows,))?, shape),
            )?
            .call_method0("copy")?;
    }
    numpy
        .getattr("ma")?
        .call_method1("masked_array", (values, mask))
}

/// One parsed column from its spec object (`FixedLen`, `VarLen` or `FixedLenSequence`).
fn column_spec(key: &str, spec: &Bound<'_, PyAny>) -> PyResult<FeatureSpec> {
    let kind = spec.get_type().name()?.to_string();
    let dtype = dtype_of(&spec.getattr("dtype")?.extract::<String>()?)?;
    let shape = || -> PyResult<Vec<usize>> { spec.getattr("shape")?.extract() };
    let kind = match kind.as_str() {
        "FixedLen" => SpecKind::FixedLen { shape: shape()? },
        "VarLen" => SpecKind::VarLen,
        "FixedLenSequence" => SpecKind::FixedLenSequence {
            shape: shape()?,
            allow_missing: spec.getattr("allow_missing")?.extract()?,
        },
        other => {
            return Err(PyValueError::new_err(format!(
                "column {key:?}: a {other} is not parsed as one column"
            )))
        }
    };
    let default = match &kind {
        SpecKind::VarLen => None,
        _ => {
            let default = spec.getattr("default")?;
            if default.is_none() {
                None
            } else {
                Some(default_column(dtype, &default)?)
            }
        }
    };
    Ok(FeatureSpec {
        key: key.to_owned(),
        dtype,
        kind,
        default,
    })
}

/// The index of the parsed column `key` of `schema`.
fn column_of(schema: &Schema, key: &str) -> PyResult<usize> {
    schema
        .specs()
        .iter()
        .position(|s| s.key == key)
        .ok_or_else(|| PyValueError::new_err(format!("the schema parses no column {key:?}")))
}

/// How the feature `key`, a spec object of `tfrecordkit.schema`, is made from the columns.
fn assembly_of(schema: &Schema, key: &str, spec: &Bound<'_, PyAny>) -> PyResult<Assembly> {
    let kind = spec.get_type().name()?.to_string();
    Ok(match kind.as_str() {
        "SparseFeature" => {
            let index_keys: Vec<String> = spec.getattr("index_key")?.extract()?;
            let value_key: String = spec.getattr("value_key")?.extract()?;
            Assembly::Sparse {
                key: key.to_owned(),
                index: index_keys
                    .into_iter()
                    .map(|k| Ok((k.clone(), column_of(schema, &k)?)))
                    .collect::<PyResult<_>>()?,
                value: column_of(schema, &value_key)?,
                size: spec.getattr("size")?.extract()?,
                already_sorted: spec.getattr("already_sorted")?.extract()?,
            }
        }
        "RaggedFeature" => {
            let value_key: Option<String> = spec.getattr("value_key")?.extract()?;
            let partitions = spec
                .getattr("partitions")?
                .try_iter()?
                .map(|p| {
                    let p = p?;
                    let name = p.get_type().name()?.to_string();
                    if name == "UniformRowLength" {
                        return Ok(PartitionSource::UniformRowLength(
                            p.getattr("length")?.extract()?,
                        ));
                    }
                    let column = column_of(schema, &p.getattr("key")?.extract::<String>()?)?;
                    Ok(match name.as_str() {
                        "RowSplits" => PartitionSource::RowSplits(column),
                        "RowLengths" => PartitionSource::RowLengths(column),
                        "RowStarts" => PartitionSource::RowStarts(column),
                        "RowLimits" => PartitionSource::RowLimits(column),
                        "ValueRowIds" => PartitionSource::ValueRowIds(column),
                        other => {
                            return Err(PyValueError::new_err(format!(
                                "unknown ragged partition {other}"
                            )))
                        }
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            Assembly::Ragged {
                key: key.to_owned(),
                value: column_of(schema, value_key.as_deref().unwrap_or(key))?,
                partitions,
            }
        }
        _ => Assembly::Column(column_of(schema, key)?),
    })
}

/// A feature of a parsed batch on its way to Python: a plain one's `(values, shape,
/// row_splits or None)` kept apart, or a sparse or ragged one as its Python tuple.
pub enum FeaturePy<'py> {
    Plain(ParsedPy<'py>),
    Other(Bound<'py, PyAny>),
}

impl<'py> FeaturePy<'py> {
    /// The feature as `parse_examples` returns it: a tuple.
    pub fn into_py(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            FeaturePy::Plain(parts) => Ok(parts.into_pyobject(py)?.into_any()),
            FeaturePy::Other(value) => Ok(value),
        }
    }
}

/// A batch's features (as [`Schema::assemble`] makes them from its `n` parsed columns)
/// for Python: a plain feature as its `(values, shape, row_splits or None)`, a sparse one
/// as `(indices [nnz, 1 + rank], values, dense_shape, row_splits)`, a ragged one as
/// `(values, [row splits per level])`. `convert` turns column `i` into its `(values,
/// shape, row_splits)` (taking it), once however many features read it; `raw`: gathered
/// bytes values as `(data, offsets)`, as `convert` gives bytes columns then.
pub fn assembled_parts<'py>(
    py: Python<'py>,
    assembled: Vec<Assembled>,
    n: usize,
    raw: bool,
    mut convert: impl FnMut(usize) -> PyResult<ParsedPy<'py>>,
) -> PyResult<Vec<FeaturePy<'py>>> {
    let mut done: Vec<Option<ParsedPy<'py>>> = vec![None; n];
    let mut column = |i: usize| -> PyResult<ParsedPy<'py>> {
        if done[i].is_none() {
            done[i] = Some(convert(i)?);
        }
        Ok(done[i].clone().expect("converted"))
    };
    let mut out = Vec::with_capacity(assembled.len());
    for a in assembled {
        out.push(match a {
            Assembled::Column(i) => FeaturePy::Plain(column(i)?),
            Assembled::Sparse {
                indices,
                values,
                dense_shape,
                row_splits,
            } => {
                let nnz = indices.len() / dense_shape.len().max(1);
                let indices = PyArray1::from_vec(py, indices).reshape([nnz, dense_shape.len()])?;
                let values = match values {
                    SparseValues::Same(i) => column(i)?.0,
                    SparseValues::Gathered(c) => values_to_py(py, c, raw)?,
                };
                let splits = PyArray1::from_vec(py, row_splits);
                FeaturePy::Other(
                    (indices, values, dense_shape, splits)
                        .into_pyobject(py)?
                        .into_any(),
                )
            }
            Assembled::Ragged { values, levels } => {
                let levels: Vec<_> = levels
                    .into_iter()
                    .map(|l| PyArray1::from_vec(py, l))
                    .collect();
                FeaturePy::Other((column(values)?.0, levels).into_pyobject(py)?.into_any())
            }
        });
    }
    Ok(out)
}

/// The features of parsed `columns` (all `Parsed`), as [`columns_to_py`] gives them.
pub fn features_to_py<'py>(
    py: Python<'py>,
    schema: &Schema,
    columns: Vec<Parsed>,
    raw: bool,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let assembled = {
        let refs: Vec<Option<&Parsed>> = columns.iter().map(Some).collect();
        py.detach(|| schema.assemble(&refs)).py_err(py)?
    };
    columns_to_py(py, assembled, columns, raw)
}

/// The features of a batch of `columns` (see [`assembled_parts`]) as Python tuples, each
/// column taken as it is converted.
pub fn columns_to_py<'py>(
    py: Python<'py>,
    assembled: Vec<Assembled>,
    columns: Vec<Parsed>,
    raw: bool,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    columns_to_parts(py, assembled, columns, raw)?
        .into_iter()
        .map(|part| part.into_py(py))
        .collect()
}

/// [`assembled_parts`] over `columns`, each taken as it is converted.
pub fn columns_to_parts<'py>(
    py: Python<'py>,
    assembled: Vec<Assembled>,
    columns: Vec<Parsed>,
    raw: bool,
) -> PyResult<Vec<FeaturePy<'py>>> {
    let n = columns.len();
    let mut columns: Vec<Option<Parsed>> = columns.into_iter().map(Some).collect();
    assembled_parts(py, assembled, n, raw, |i| {
        let p = columns[i].take().expect("each column converted once");
        if raw {
            parsed_column_to_raw(py, p)
        } else {
            parsed_column_to_py(py, p)
        }
    })
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

/// Parses serialized Examples; returns each feature of the schema as
/// [`columns_to_py`] gives it (with no features given, one `(flat values, shape,
/// row_splits or None)` per column).
#[pyfunction]
pub fn parse_examples<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    schema: &CompiledSchema,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    crate::errors::guard("parse_examples", || {
        let parsed = with_records(records, |slices| {
            py.detach(|| core_parse(&schema.schema, slices))
        })?
        .py_err(py)?;
        features_to_py(py, &schema.schema, parsed, false)
    })
}

/// Calls `f` with the records of a list or iterable of bytes-like objects, borrowed where
/// they are `bytes` and copied otherwise.
pub fn with_records<R>(records: &Bound<'_, PyAny>, f: impl FnOnce(&[&[u8]]) -> R) -> PyResult<R> {
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

/// One parsed column as a `(flat values, shape, row_splits or None)` tuple; a nullable
/// one's third part is `(row_splits or None, valid)` (see [`third_part`]).
pub fn parsed_column_to_py(py: Python<'_>, p: Parsed) -> PyResult<ParsedPy<'_>> {
    let values = column_to_py(py, p.values)?;
    Ok((values, p.shape, third_part(py, p.row_splits, p.valid)?))
}

/// A parsed column's third part for Python: its row splits (int64) or None, and for a
/// nullable feature those with which of its rows hold a value (bool), as a pair.
fn third_part(
    py: Python<'_>,
    row_splits: Option<Vec<i64>>,
    valid: Option<Vec<bool>>,
) -> PyResult<Option<Bound<'_, PyAny>>> {
    let splits = row_splits.map(|s| PyArray1::from_vec(py, s).into_any());
    let Some(valid) = valid else {
        return Ok(splits);
    };
    let valid = PyArray1::from_vec(py, valid).into_any();
    Ok(Some((splits, valid).into_pyobject(py)?.into_any()))
}

/// A column's values for Python: as [`column_to_py`], or with `raw` a bytes column as
/// `(data, offsets)`: its values back to back (uint8) and where each ends, after where the
/// first begins (int64), as Arrow lays binary out.
fn values_to_py(py: Python<'_>, values: Column, raw: bool) -> PyResult<Bound<'_, PyAny>> {
    match values {
        Column::Bytes { data, ends, lead } if raw => {
            let offsets: Vec<i64> = std::iter::once(lead as i64)
                .chain(ends.iter().map(|&e| e as i64))
                .collect();
            let data = PyArray1::from_vec(py, data).into_any();
            Ok((data, PyArray1::from_vec(py, offsets).into_any())
                .into_pyobject(py)?
                .into_any())
        }
        col => column_to_py(py, col),
    }
}

/// As [`parsed_column_to_py`], with a bytes column as `(data, offsets)` (see
/// [`values_to_py`]).
pub fn parsed_column_to_raw(py: Python<'_>, p: Parsed) -> PyResult<ParsedPy<'_>> {
    let values = values_to_py(py, p.values, true)?;
    Ok((values, p.shape, third_part(py, p.row_splits, p.valid)?))
}
