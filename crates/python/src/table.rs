//! Tables of columns from Python (as `tfrecordkit.table` prepares them), checked once and
//! borrowed as core column views.

use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tfrecordkit_core::columns::{check_table, encode_row, framed_sizes, ColumnRef, Rows, Values};

use crate::errors::IntoPyResult;

/// A column's values, held so that every later use borrows them in O(1).
enum Stored {
    Int(Py<PyArray1<i64>>, usize),
    Float(Py<PyArray1<f32>>, usize),
    /// Bytes values: the objects, kept alive, and views of their (immutable) buffers.
    Bytes {
        _owners: Vec<Py<PyBytes>>,
        views: Vec<&'static [u8]>,
    },
    /// Bytes values packed in one uint8 array (Arrow's binary layout): the array, its
    /// length when the table was checked, and the values' offsets into it.
    Packed(Py<PyArray1<u8>>, usize, Vec<i64>),
    /// Fixed-width bytes or text copied out of a 2-D array (text as UTF-8), trailing NULs
    /// dropped, and views into that copy.
    Copied {
        _data: Vec<u8>,
        views: Vec<&'static [u8]>,
    },
}

struct StoredColumn {
    values: Stored,
    width: usize,
    offsets: Option<Vec<i64>>,
    mask: Option<Vec<u8>>,
}

/// Each column is a tuple `(values, width, offsets, mask)`: `values` a 1-D int64 or float32
/// array, a 2-D uint8 array of fixed-width bytes, a 2-D uint32 array of fixed-width text
/// (UCS-4 code points, encoded here as UTF-8), a list of bytes, or a pair `(data,
/// value_offsets)` of a 1-D uint8 array and int64 offsets (value `j` is
/// `data[value_offsets[j]:value_offsets[j + 1]]`); `width` the number of values per row
/// when `offsets` (int64 row boundaries) is None; `mask` uint8 (0 = null).
fn store(col: &Bound<'_, PyAny>) -> PyResult<StoredColumn> {
    let t = col.cast::<PyTuple>()?;
    let values = t.get_item(0)?;
    let width: usize = t.get_item(1)?.extract()?;
    let offsets: Option<PyReadonlyArray1<'_, i64>> = t.get_item(2)?.extract()?;
    let mask: Option<PyReadonlyArray1<'_, u8>> = t.get_item(3)?.extract()?;
    let values = if let Ok(a) = values.cast::<PyArray1<i64>>() {
        Stored::Int(a.clone().unbind(), a.len())
    } else if let Ok(a) = values.cast::<PyArray1<f32>>() {
        Stored::Float(a.clone().unbind(), a.len())
    } else if let Ok(a) = values.cast::<PyArray2<u8>>() {
        let a: PyReadonlyArray2<'_, u8> = a.readonly();
        let width = a.shape()[1];
        let data = a.as_slice()?.to_vec();
        let bounds = (0..a.shape()[0])
            .map(|r| {
                let row = &data[r * width..(r + 1) * width];
                // NumPy drops trailing NUL bytes of "S" values; so do we.
                (
                    r * width,
                    row.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1),
                )
            })
            .collect();
        copied(data, bounds)
    } else if let Ok(a) = values.cast::<PyArray2<u32>>() {
        let a: PyReadonlyArray2<'_, u32> = a.readonly();
        utf8_rows(a.as_slice()?, a.shape()[0], a.shape()[1])?
    } else if let Ok(pair) = values.cast::<PyTuple>() {
        let (data, value_offsets): (Bound<'_, PyArray1<u8>>, PyReadonlyArray1<'_, i64>) =
            pair.extract()?;
        let len = data.len();
        // The offsets are copied: they are checked once, and every later use trusts them.
        Stored::Packed(data.unbind(), len, value_offsets.as_slice()?.to_vec())
    } else if let Ok(list) = values.cast::<PyList>() {
        let owners = list
            .iter()
            .map(|item| {
                item.cast_into::<PyBytes>()
                    .map(Bound::unbind)
                    .map_err(PyErr::from)
            })
            .collect::<PyResult<Vec<_>>>()?;
        // SAFETY: a bytes object's buffer is immutable and lives inside the object, which
        // `_owners` keeps alive for as long as the views exist.
        let views = owners
            .iter()
            .map(|b| {
                let v = b.bind(list.py()).as_bytes();
                unsafe { std::slice::from_raw_parts(v.as_ptr(), v.len()) }
            })
            .collect();
        Stored::Bytes {
            _owners: owners,
            views,
        }
    } else {
        return Err(PyTypeError::new_err("unsupported column values"));
    };
    Ok(StoredColumn {
        values,
        width,
        offsets: offsets
            .map(|o| o.as_slice().map(<[i64]>::to_vec))
            .transpose()?,
        mask: mask.map(|m| m.as_slice().map(<[u8]>::to_vec)).transpose()?,
    })
}

/// Bytes values copied into `data`, value `i` at `bounds[i]` (offset, length).
fn copied(data: Vec<u8>, bounds: Vec<(usize, usize)>) -> Stored {
    // SAFETY: the views point into `data`'s heap buffer, which is never written or
    // reallocated again and lives in the same `Stored` as the views.
    let views = bounds
        .into_iter()
        .map(|(at, len)| unsafe { std::slice::from_raw_parts(data.as_ptr().add(at), len) })
        .collect();
    Stored::Copied { _data: data, views }
}

/// Rows of `width` UCS-4 code points (NumPy's fixed-width text), trailing NULs dropped as
/// NumPy drops them, as their UTF-8 bytes.
fn utf8_rows(code_points: &[u32], rows: usize, width: usize) -> PyResult<Stored> {
    let mut data = Vec::with_capacity(code_points.len());
    let mut bounds = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &code_points[r * width..(r + 1) * width];
        let len = row.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
        let start = data.len();
        for &c in &row[..len] {
            let ch = char::from_u32(c).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "row {r} holds code point {c:#x}, which UTF-8 cannot encode"
                ))
            })?;
            data.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        }
        bounds.push((start, data.len() - start));
    }
    Ok(copied(data, bounds))
}

/// A table of columns, checked once: writers borrow it chunk after chunk in O(1) per
/// chunk, so writing is linear in the rows.
#[pyclass(module = "tfrecordkit._core", frozen)]
pub struct Table {
    names: Vec<String>,
    columns: Vec<StoredColumn>,
    n_rows: usize,
}

#[pymethods]
impl Table {
    /// `columns` as `tfrecordkit.table.Table.native` prepares them (see `store`).
    #[new]
    fn new(
        py: Python<'_>,
        names: Vec<String>,
        columns: Vec<Bound<'_, PyAny>>,
        n_rows: usize,
    ) -> PyResult<Self> {
        crate::errors::guard("Table.new", || {
            if names.len() != columns.len() {
                return Err(PyTypeError::new_err("one name per column"));
            }
            let columns = columns
                .iter()
                .zip(&names)
                .map(|(column, name)| {
                    store(column).map_err(|e| {
                        let message = format!("column {name:?}: {}", e.value(py));
                        PyErr::from_type(e.get_type(py), message)
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            let table = Table {
                names,
                columns,
                n_rows,
            };
            table.with_refs(py, |names, refs| {
                check_table(names, refs, n_rows).py_err(py)
            })?;
            Ok(table)
        })
    }

    #[getter]
    fn n_rows(&self) -> usize {
        self.n_rows
    }
}

impl Table {
    pub fn rows(&self) -> usize {
        self.n_rows
    }

    /// Calls `f` with the table's columns as core column views.
    pub fn with_refs<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&[&str], &[ColumnRef<'_>]) -> PyResult<R>,
    ) -> PyResult<R> {
        let ints: Vec<Option<PyReadonlyArray1<'_, i64>>> = self
            .columns
            .iter()
            .map(|c| match &c.values {
                Stored::Int(a, _) => Some(a.bind(py).readonly()),
                _ => None,
            })
            .collect();
        let floats: Vec<Option<PyReadonlyArray1<'_, f32>>> = self
            .columns
            .iter()
            .map(|c| match &c.values {
                Stored::Float(a, _) => Some(a.bind(py).readonly()),
                _ => None,
            })
            .collect();
        let packed: Vec<Option<PyReadonlyArray1<'_, u8>>> = self
            .columns
            .iter()
            .map(|c| match &c.values {
                Stored::Packed(a, ..) => Some(a.bind(py).readonly()),
                _ => None,
            })
            .collect();
        let mut refs = Vec::with_capacity(self.columns.len());
        for (i, c) in self.columns.iter().enumerate() {
            let values = match (&c.values, &ints[i], &floats[i], &packed[i]) {
                (Stored::Int(_, n), Some(a), _, _) => Values::Int64(same_len(a.as_slice()?, *n)?),
                (Stored::Float(_, n), _, Some(a), _) => {
                    Values::Float32(same_len(a.as_slice()?, *n)?)
                }
                (Stored::Bytes { views, .. } | Stored::Copied { views, .. }, _, _, _) => {
                    Values::Bytes(views)
                }
                (Stored::Packed(_, n, offsets), _, _, Some(a)) => Values::Packed {
                    data: same_len(a.as_slice()?, *n)?,
                    offsets,
                },
                _ => unreachable!("numeric columns are borrowed above"),
            };
            refs.push(ColumnRef {
                values,
                rows: match &c.offsets {
                    Some(o) => Rows::Ragged(o),
                    None => Rows::Fixed(c.width),
                },
                valid: c.mask.as_deref(),
            });
        }
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        f(&names, &refs)
    }
}

/// `values`, unless the array was resized since the table was checked.
fn same_len<T>(values: &[T], checked: usize) -> PyResult<&[T]> {
    if values.len() != checked {
        return Err(PyTypeError::new_err(
            "a column changed length after the table was made",
        ));
    }
    Ok(values)
}

/// Encodes a table as serialized Examples (unframed), one bytes object per row.
#[pyfunction]
pub fn encode_columns<'py>(py: Python<'py>, table: &Table) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("encode_columns", || {
        let n_rows = table.rows();
        table.with_refs(py, |names, cols| {
            PyList::new(
                py,
                (0..n_rows).map(|i| PyBytes::new(py, &encode_row(names, cols, i))),
            )
        })
    })
}

/// The framed size of each row of a table, without encoding it.
#[pyfunction]
pub fn framed_row_sizes<'py>(
    py: Python<'py>,
    table: &Table,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    crate::errors::guard("framed_row_sizes", || {
        let n_rows = table.rows();
        let sizes = table.with_refs(py, |names, cols| Ok(framed_sizes(names, cols, n_rows)))?;
        Ok(PyArray1::from_vec(py, sizes))
    })
}
