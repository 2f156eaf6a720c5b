//! Tables of columns from Python (as `tfrecordkit.example.table_columns` prepares them),
//! borrowed as core column views.

use numpy::PyUntypedArrayMethods;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tfrecordkit_core::columns::{check_table, encode_row, framed_sizes, ColumnRef, Rows, Values};

use crate::errors::IntoPyResult;

enum Held<'py> {
    Int(PyReadonlyArray1<'py, i64>),
    Float(PyReadonlyArray1<'py, f32>),
    /// Fixed-width bytes: rows of uint8, trailing NULs dropped.
    Fixed(PyReadonlyArray2<'py, u8>),
    Bytes(Vec<Bound<'py, PyBytes>>),
}

struct Column<'py> {
    values: Held<'py>,
    width: usize,
    offsets: Option<PyReadonlyArray1<'py, i64>>,
    mask: Option<PyReadonlyArray1<'py, u8>>,
}

/// Each column is a tuple `(values, width, offsets, mask)`: `values` a 1-D int64 or float32
/// array, a 2-D uint8 array of fixed-width bytes, or a list of bytes; `width` the number of
/// values per row when `offsets` (int64 row boundaries) is None; `mask` uint8 (0 = null).
fn hold<'py>(col: &Bound<'py, PyAny>) -> PyResult<Column<'py>> {
    let t = col.cast::<PyTuple>()?;
    let values = t.get_item(0)?;
    let width: usize = t.get_item(1)?.extract()?;
    let offsets: Option<Bound<'py, PyArray1<i64>>> = t.get_item(2)?.extract()?;
    let mask: Option<Bound<'py, PyArray1<u8>>> = t.get_item(3)?.extract()?;
    let values = if let Ok(a) = values.cast::<PyArray1<i64>>() {
        Held::Int(a.readonly())
    } else if let Ok(a) = values.cast::<PyArray1<f32>>() {
        Held::Float(a.readonly())
    } else if let Ok(a) = values.cast::<PyArray2<u8>>() {
        Held::Fixed(a.readonly())
    } else if let Ok(list) = values.cast::<PyList>() {
        let items = list
            .iter()
            .map(|item| item.cast_into::<PyBytes>().map_err(PyErr::from))
            .collect::<PyResult<Vec<_>>>()?;
        Held::Bytes(items)
    } else {
        return Err(PyTypeError::new_err("unsupported column values"));
    };
    Ok(Column {
        values,
        width,
        offsets: offsets.map(|o| o.readonly()),
        mask: mask.map(|m| m.readonly()),
    })
}

/// Borrows the Python columns as checked core column views for the duration of `f`.
pub fn with_table<'py, R>(
    py: Python<'py>,
    names: &[String],
    columns: &[Bound<'py, PyAny>],
    n_rows: usize,
    f: impl FnOnce(&[&str], &[ColumnRef<'_>]) -> PyResult<R>,
) -> PyResult<R> {
    let held = columns.iter().map(hold).collect::<PyResult<Vec<_>>>()?;
    let byte_values: Vec<Vec<&[u8]>> = held
        .iter()
        .map(|c| match &c.values {
            Held::Bytes(v) => Ok(v.iter().map(|b| b.as_bytes()).collect()),
            Held::Fixed(a) => {
                let width = a.shape()[1];
                let data = a.as_slice()?;
                // NumPy drops trailing NUL bytes of "S" values; so do we.
                Ok((0..a.shape()[0])
                    .map(|r| {
                        let row = &data[r * width..(r + 1) * width];
                        let len = row.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                        &row[..len]
                    })
                    .collect())
            }
            _ => Ok(Vec::new()),
        })
        .collect::<PyResult<_>>()?;
    let mut refs = Vec::with_capacity(held.len());
    for (c, bytes) in held.iter().zip(&byte_values) {
        let values = match &c.values {
            Held::Int(a) => Values::Int64(a.as_slice()?),
            Held::Float(a) => Values::Float32(a.as_slice()?),
            Held::Fixed(_) | Held::Bytes(_) => Values::Bytes(bytes),
        };
        let rows = match &c.offsets {
            Some(o) => Rows::Ragged(o.as_slice()?),
            None => Rows::Fixed(c.width),
        };
        let valid = match &c.mask {
            Some(m) => Some(m.as_slice()?),
            None => None,
        };
        refs.push(ColumnRef {
            values,
            rows,
            valid,
        });
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    check_table(&names, &refs, n_rows).py_err(py)?;
    f(&names, &refs)
}

/// Encodes a table as serialized Examples (unframed), one bytes object per row.
#[pyfunction]
pub fn encode_columns<'py>(
    py: Python<'py>,
    names: Vec<String>,
    columns: Vec<Bound<'py, PyAny>>,
    n_rows: usize,
) -> PyResult<Bound<'py, PyList>> {
    with_table(py, &names, &columns, n_rows, |names, cols| {
        PyList::new(
            py,
            (0..n_rows).map(|i| PyBytes::new(py, &encode_row(names, cols, i))),
        )
    })
}

/// The framed size of each row of a table, without encoding it.
#[pyfunction]
pub fn framed_row_sizes<'py>(
    py: Python<'py>,
    names: Vec<String>,
    columns: Vec<Bound<'py, PyAny>>,
    n_rows: usize,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let sizes = with_table(py, &names, &columns, n_rows, |names, cols| {
        Ok(framed_sizes(names, cols, n_rows))
    })?;
    Ok(PyArray1::from_vec(py, sizes))
}
