//! Record reading and writing classes.

use numpy::{PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use tfrecordkit_core::columns::encode_row;
use tfrecordkit_core::{
    frame_table, ColumnRef, Compression, MultiFileReader, ReadOptions, RecordBatch,
};

use crate::convert::bytes_like;
use crate::errors::IntoPyResult;
use crate::parse::{parsed_to_py, CompiledSchema, ParsedPy};

fn compression_arg(py: Python<'_>, name: Option<&str>) -> PyResult<Option<Compression>> {
    Compression::parse(name).py_err(py)
}

/// Reads the records of several files in order, a batch per call.
#[pyclass(module = "tfrecordkit._core")]
pub struct RecordReader {
    inner: MultiFileReader,
    batch: RecordBatch,
}

#[pymethods]
impl RecordReader {
    #[new]
    #[pyo3(signature = (paths, compression="auto", verify=true, max_record_bytes=None))]
    fn new(
        py: Python<'_>,
        paths: Vec<String>,
        compression: Option<&str>,
        verify: bool,
        max_record_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let mut opts = ReadOptions {
            compression: compression_arg(py, compression)?,
            verify,
            ..ReadOptions::default()
        };
        if let Some(m) = max_record_bytes {
            opts.max_record_bytes = m;
        }
        Ok(RecordReader {
            inner: MultiFileReader::new(paths, opts),
            batch: RecordBatch::default(),
        })
    }

    /// Up to `max_records` records as a list of bytes; an empty list at the end.
    #[pyo3(signature = (max_records=1024, max_bytes=16_777_216))]
    fn read_batch<'py>(
        &mut self,
        py: Python<'py>,
        max_records: usize,
        max_bytes: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let RecordReader { inner, batch } = self;
        batch.clear();
        py.detach(|| inner.read_batch(batch, max_records.max(1), max_bytes))
            .py_err(py)?;
        PyList::new(py, batch.iter().map(|r| PyBytes::new(py, r)))
    }

    /// Reads up to `max_records` records and parses them with `schema` in one native call;
    /// `None` at the end. Returns what `parse_examples` returns.
    #[pyo3(signature = (schema, max_records=1024))]
    fn read_parsed<'py>(
        &mut self,
        py: Python<'py>,
        schema: &CompiledSchema,
        max_records: usize,
    ) -> PyResult<Option<Vec<ParsedPy<'py>>>> {
        let RecordReader { inner, batch } = self;
        batch.clear();
        py.detach(|| inner.read_batch(batch, max_records.max(1), usize::MAX))
            .py_err(py)?;
        if batch.is_empty() {
            return Ok(None);
        }
        let records: Vec<&[u8]> = batch.iter().collect();
        let parsed = py
            .detach(|| tfrecordkit_core::parse_examples(&schema.schema, &records))
            .py_err(py)?;
        parsed_to_py(py, parsed).map(Some)
    }

    /// The file being read, if any.
    #[getter]
    fn current_path(&self) -> Option<String> {
        self.inner.current_path().map(str::to_owned)
    }
}

/// Writes framed records; see `tfrecordkit.RecordWriter`.
#[pyclass(module = "tfrecordkit._core")]
pub struct RecordWriter {
    inner: tfrecordkit_core::RecordWriter,
}

#[pymethods]
impl RecordWriter {
    #[new]
    #[pyo3(signature = (path, compression=None, level=None, atomic=true))]
    fn new(
        py: Python<'_>,
        path: &str,
        compression: Option<&str>,
        level: Option<i64>,
        atomic: bool,
    ) -> PyResult<Self> {
        let level = match level {
            None => None,
            Some(l @ 0..=9) => Some(l as u32),
            Some(l) => {
                return Err(PyValueError::new_err(format!(
                    "compression level {l} is out of range 0-9"
                )))
            }
        };
        let compression = match compression {
            Some(name) => compression_arg(py, Some(name))?,
            None => Some(Compression::None),
        };
        let inner =
            tfrecordkit_core::RecordWriter::create(path, compression, level, atomic).py_err(py)?;
        Ok(RecordWriter { inner })
    }

    fn write(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.write(&bytes_like(data)?).py_err(py)
    }

    /// Writes every bytes-like item of an iterable; returns how many.
    fn write_many(&mut self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut n = 0;
        for item in records.try_iter()? {
            let item = item?;
            self.inner.write(&bytes_like(&item)?).py_err(py)?;
            n += 1;
        }
        Ok(n)
    }

    /// Encodes a table as Examples and writes them; returns the number of rows.
    ///
    /// `columns` holds, per name, a C-contiguous 2-D int64 or float32 array
    /// (`[rows, values per row]`) or a list of bytes (one value per row).
    fn write_columns(
        &mut self,
        py: Python<'_>,
        names: Vec<String>,
        columns: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        with_columns(&columns, |cols| {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let rows = table_rows(&refs, cols)?;
            let inner = &mut self.inner;
            py.detach(|| {
                for (n, chunk) in frame_table(&refs, cols, rows) {
                    inner.write_framed(&chunk, n)?;
                }
                Ok(())
            })
            .py_err(py)?;
            Ok(rows)
        })
    }

    fn flush(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| inner.flush()).py_err(py)
    }

    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| inner.close()).py_err(py)
    }

    fn abort(&mut self) {
        self.inner.abort();
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    #[getter]
    fn records_written(&self) -> u64 {
        self.inner.records_written()
    }

    #[getter]
    fn compression(&self) -> Option<&'static str> {
        match self.inner.compression() {
            Compression::None => None,
            c => Some(c.name()),
        }
    }

    /// Where bytes go until `close` (a temporary file when writing atomically).
    #[getter]
    fn current_path(&self) -> String {
        self.inner.current_path().to_string_lossy().into_owned()
    }
}

/// Borrows the Python columns as core column views for the duration of `f`.
fn with_columns<R>(
    columns: &[Bound<'_, PyAny>],
    f: impl FnOnce(&[ColumnRef<'_>]) -> PyResult<R>,
) -> PyResult<R> {
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    let mut fixed = Vec::new();
    let mut bytes: Vec<Vec<Bound<'_, PyBytes>>> = Vec::new();
    enum Slot {
        Int(usize),
        Float(usize),
        Fixed(usize),
        Bytes(usize),
    }
    let mut slots = Vec::with_capacity(columns.len());
    for col in columns {
        if let Ok(a) = col.cast::<PyArray2<i64>>() {
            slots.push(Slot::Int(ints.len()));
            ints.push(a.readonly());
        } else if let Ok(a) = col.cast::<PyArray2<f32>>() {
            slots.push(Slot::Float(floats.len()));
            floats.push(a.readonly());
        } else if let Ok(a) = col.cast::<PyArray2<u8>>() {
            // Fixed-width bytes (a NumPy "S" array viewed as rows of uint8).
            slots.push(Slot::Fixed(fixed.len()));
            fixed.push(a.readonly());
        } else {
            let list = col.cast::<PyList>()?;
            let items = list
                .iter()
                .map(|item| item.cast_into::<PyBytes>().map_err(PyErr::from))
                .collect::<PyResult<Vec<_>>>()?;
            slots.push(Slot::Bytes(bytes.len()));
            bytes.push(items);
        }
    }
    let mut byte_slices: Vec<Vec<&[u8]>> = bytes
        .iter()
        .map(|v| v.iter().map(|b| b.as_bytes()).collect())
        .collect();
    let first_fixed = byte_slices.len();
    for a in &fixed {
        let width = a.shape()[1];
        let data = a.as_slice()?;
        // NumPy drops trailing NUL bytes of "S" values; so do we.
        byte_slices.push(
            (0..a.shape()[0])
                .map(|r| {
                    let row = &data[r * width..(r + 1) * width];
                    let len = row.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                    &row[..len]
                })
                .collect(),
        );
    }
    let mut refs = Vec::with_capacity(slots.len());
    for slot in &slots {
        refs.push(match *slot {
            Slot::Int(i) => ColumnRef::Int64 {
                values: ints[i].as_slice()?,
                width: ints[i].shape()[1],
            },
            Slot::Float(i) => ColumnRef::Float32 {
                values: floats[i].as_slice()?,
                width: floats[i].shape()[1],
            },
            Slot::Bytes(i) => ColumnRef::Bytes(&byte_slices[i]),
            Slot::Fixed(i) => ColumnRef::Bytes(&byte_slices[first_fixed + i]),
        });
    }
    f(&refs)
}

/// The common row count of `cols`, or an error naming the column that disagrees.
fn table_rows(names: &[&str], cols: &[ColumnRef<'_>]) -> PyResult<usize> {
    let mut rows = None;
    for (name, col) in names.iter().zip(cols) {
        let n = col.rows();
        match rows {
            None => rows = Some(n),
            Some(r) if r != n => {
                return Err(PyValueError::new_err(format!(
                    "column {name:?} has {n} rows but an earlier column has {r}"
                )))
            }
            _ => {}
        }
    }
    Ok(rows.unwrap_or(0))
}

/// Encodes a table as serialized Examples (unframed), one bytes object per row.
#[pyfunction]
pub fn encode_columns<'py>(
    py: Python<'py>,
    names: Vec<String>,
    columns: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    with_columns(&columns, |cols| {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let rows = table_rows(&refs, cols)?;
        PyList::new(
            py,
            (0..rows).map(|i| PyBytes::new(py, &encode_row(&refs, cols, i))),
        )
    })
}

/// Counts the records of one file (length checksums verified).
#[pyfunction]
#[pyo3(signature = (path, compression="auto"))]
pub fn count_records(py: Python<'_>, path: &str, compression: Option<&str>) -> PyResult<u64> {
    let compression = compression_arg(py, compression)?;
    py.detach(|| tfrecordkit_core::count_records(path, compression))
        .py_err(py)
}

/// Masked CRC32C of `data`, as TFRecord framing stores it.
#[pyfunction]
pub fn masked_crc32c(data: &[u8]) -> u32 {
    tfrecordkit_core::crc::masked_crc32c(data)
}
