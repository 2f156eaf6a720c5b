//! Record reading and writing classes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyTuple};
use tfrecordkit_core::assemble::Assembled;
use tfrecordkit_core::columns::frame_table;
use tfrecordkit_core::compression::ZlibOptions;
use tfrecordkit_core::encode_example_into;
use tfrecordkit_core::example::Feature;
use tfrecordkit_core::feature_lists::{LaidList, ListSchema};
use tfrecordkit_core::in_place::HOST_MAX;
use tfrecordkit_core::LargeRecords;
use tfrecordkit_core::{
    parse_each, BatchesAhead, Compression, ExampleParser, Finished, MultiFileReader, Parsed,
    ReadOptions, RecordBatch, Schema, Span, Work, WriteOptions,
};

use crate::convert::{bytes_like, row_features};
use crate::errors::IntoPyResult;
use crate::lists::CompiledLists;
use crate::parse::{columns_to_parts, columns_to_py, CompiledSchema};
use crate::table::Table;

/// The most room `read_parsed` makes up front for a batch's bytes values.
const PARSE_RESERVE: usize = 64 << 20;

fn compression_arg(py: Python<'_>, name: Option<&str>) -> PyResult<Option<Compression>> {
    Compression::parse(name).py_err(py)
}

/// Large records go straight from the file into `bytes` objects made for them: the one
/// copy between the page cache and Python.
#[derive(Default)]
struct BytesSink {
    /// Each object made, with the address of its contents.
    made: Vec<(Py<PyBytes>, usize)>,
    /// Whether each large record ends its batch.
    one_by_one: bool,
}

impl LargeRecords for BytesSink {
    fn buffer(&mut self, len: usize) -> tfrecordkit_core::Result<&mut [u8]> {
        let made = Python::attach(|py| {
            // SAFETY: with a NULL source, PyBytes_FromStringAndSize makes a bytes object of
            // `len` bytes for its caller to fill before anyone else sees it; the GIL is held.
            let obj = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as _) };
            if obj.is_null() {
                let why = PyErr::take(py).map_or_else(String::new, |e| e.to_string());
                return Err(tfrecordkit_core::Error::io(
                    std::io::Error::new(std::io::ErrorKind::OutOfMemory, why),
                    None,
                ));
            }
            // SAFETY: `obj` is a new, owned reference to a bytes object, whose contents
            // PyBytes_AsString points at.
            let at = unsafe { pyo3::ffi::PyBytes_AsString(obj) } as usize;
            let bytes = unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<PyBytes>() };
            Ok((bytes.unbind(), at))
        })?;
        let at = made.1;
        self.made.push(made);
        // SAFETY: the object is kept alive in `made` and no one else holds it until the
        // batch is handed out, so its `len` bytes are this buffer's alone; writing them
        // needs no GIL.
        Ok(unsafe { std::slice::from_raw_parts_mut(at as *mut u8, len) })
    }

    fn discard(&mut self) {
        if let Some((bytes, _)) = self.made.pop() {
            Python::attach(|py| drop(bytes.into_bound(py)));
        }
    }

    fn ends_batch(&self) -> bool {
        self.one_by_one
    }
}

/// Reads the records of several files in order, a batch per call.
#[pyclass(module = "tfrecordkit._core")]
pub struct RecordReader {
    inner: Reading,
    batch: RecordBatch,
    /// Whether batches (without `one_by_one`) are read ahead, on a thread of their own.
    ahead: bool,
    /// Whether the reading thread handed the reader back at a large record: batches of
    /// `bytes` are read in place from then on.
    handed_back: bool,
    /// Where a large record is read when no bytes column can take it, kept from batch to
    /// batch so that it is not made (and zeroed) again for each.
    large: Vec<u8>,
    /// The bytes column that held the most in the last batch parsed in place: the next
    /// batch's first large record is read into it.
    host: Option<usize>,
}

enum Reading {
    Now(Box<MultiFileReader>),
    Ahead(Box<BatchesAhead<ParsedAhead>>),
    /// Only while one becomes the other.
    Moving,
}

/// The schemas a reader's batches are parsed with: Examples, or SequenceExamples with
/// their feature lists.
type Schemas = (Arc<Schema>, Option<Arc<ListSchema>>);

/// A batch parsed with `Schemas`: its columns, its features laid out, and its feature
/// lists.
type ParsedBatch = (Vec<Parsed>, Vec<Assembled>, Option<Vec<LaidList>>);

/// The most bytes of records whose parsed batch the consumer copies, rather than free
/// what the reading thread allocated (see [`ParsedAhead::copied_if_small`]).
const COPIED_MAX: usize = 256 << 10;

/// A batch parsed on the reading thread, with the schemas it was parsed with.
struct ParsedAhead {
    schemas: Schemas,
    parsed: tfrecordkit_core::Result<ParsedBatch>,
}

impl ParsedAhead {
    /// A copy of a batch of Examples smaller than a run of them and of at most
    /// [`COPIED_MAX`] bytes, made on this thread (see [`BatchesAhead::take_done_copied`]);
    /// `None` for others, whose copy would cost more than it saves.
    fn copied_if_small(&self, batch: &RecordBatch) -> Option<ParsedAhead> {
        let Ok((parsed, assembled, None)) = &self.parsed else {
            return None;
        };
        let small = batch.len() < tfrecordkit_core::ahead::RUN_RECORDS;
        (small && batch.bytes() <= COPIED_MAX).then(|| ParsedAhead {
            schemas: self.schemas.clone(),
            parsed: Ok((parsed.clone(), assembled.clone(), None)),
        })
    }

    /// Whether the batch was parsed with these very schemas.
    fn parsed_with(&self, (schema, lists): &Schemas) -> bool {
        let same_lists = match (&self.schemas.1, lists) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        Arc::ptr_eq(&self.schemas.0, schema) && same_lists
    }
}

fn parse_batch(
    (schema, lists): (&Schema, Option<&ListSchema>),
    records: &[&[u8]],
) -> tfrecordkit_core::Result<ParsedBatch> {
    let parsed = tfrecordkit_core::parse_examples(schema, records)?;
    let refs: Vec<Option<&Parsed>> = parsed.iter().map(Some).collect();
    let assembled = schema.assemble(&refs)?;
    let lists = match lists {
        Some(lists) => Some(lists.parse(records, false)?),
        None => None,
    };
    Ok((parsed, assembled, lists))
}

/// The read-ahead of `inner`, started on its first batch: it hands the reader back at
/// the first record of more than `over` bytes (at the first large record with 0, never
/// with `usize::MAX`); every batch is then of the same shape. With `schemas`, the
/// reading thread parses the batches it reads while the caller is busy with the last.
fn read_ahead(
    inner: &mut Reading,
    max_records: usize,
    max_bytes: usize,
    over: usize,
    schemas: Option<Schemas>,
) -> PyResult<&mut BatchesAhead<ParsedAhead>> {
    if let Reading::Now(_) = inner {
        let Reading::Now(reader) = std::mem::replace(inner, Reading::Moving) else {
            unreachable!()
        };
        let shape = (max_records, max_bytes);
        let work = schemas.map(|schemas| -> Work<ParsedAhead> {
            Box::new(move |batch| {
                let records: Vec<&[u8]> = batch.iter().collect();
                let parsed = parse_batch((&schemas.0, schemas.1.as_deref()), &records);
                ParsedAhead {
                    schemas: schemas.clone(),
                    parsed,
                }
            })
        });
        *inner = Reading::Ahead(Box::new(BatchesAhead::with_work(
            *reader, shape, over, work,
        )));
    }
    let Reading::Ahead(ahead) = inner else {
        unreachable!("a reader that reads ahead")
    };
    if ahead.shape() != (max_records, max_bytes) {
        return Err(PyValueError::new_err(
            "a reader that reads ahead reads every batch with the same sizes",
        ));
    }
    Ok(ahead)
}

impl RecordReader {
    /// Reads the next batch into `self.batch`: ahead of the caller once `ahead` asks for
    /// it, every batch then of the same shape.
    /// With `schemas`, a reader that reads ahead parses there too (see `read_ahead`).
    fn next_batch(
        &mut self,
        py: Python<'_>,
        max_records: usize,
        max_bytes: usize,
        schemas: Option<Schemas>,
    ) -> PyResult<()> {
        let RecordReader {
            inner,
            batch,
            ahead,
            ..
        } = self;
        if *ahead {
            let ahead = read_ahead(inner, max_records, max_bytes, usize::MAX, schemas)?;
            return py.detach(|| ahead.next_batch(batch)).py_err(py);
        }
        let Reading::Now(reader) = inner else {
            unreachable!("only a reader asked to read ahead does")
        };
        batch.clear();
        py.detach(|| reader.read_batch(batch, max_records, max_bytes))
            .py_err(py)
    }

    /// Reads the next batch ahead of the caller into `self.batch` (once the reader was
    /// handed back at a record of more than `over` bytes, nothing: `self.batch` is left
    /// empty for the caller to read in place). With `schemas`, see `read_ahead`.
    fn next_batch_until_over(
        &mut self,
        py: Python<'_>,
        (max_records, max_bytes): (usize, usize),
        over: usize,
        schemas: Option<Schemas>,
    ) -> PyResult<()> {
        self.batch.clear();
        if self.handed_back && matches!(self.inner, Reading::Now(_)) {
            return Ok(());
        }
        let RecordReader { inner, batch, .. } = self;
        let ahead = read_ahead(inner, max_records, max_bytes, over, schemas)?;
        let read = py.detach(|| ahead.next_batch(batch));
        if let Some(reader) = ahead.take_reader() {
            self.inner = Reading::Now(reader);
            self.handed_back = true;
        }
        read.py_err(py)
    }

    /// `read_parsed` of Examples once the reader was handed back at a large record: the
    /// records read ahead before it, then each record read in place and parsed at once
    /// (see `MultiFileReader::read_each`).
    fn parse_in_place(
        &mut self,
        py: Python<'_>,
        schema: &CompiledSchema,
        max_records: usize,
        max_bytes: usize,
    ) -> PyResult<Option<(Vec<Parsed>, Vec<Assembled>)>> {
        let RecordReader {
            inner,
            batch,
            large,
            host,
            ..
        } = self;
        let Reading::Now(reader) = inner else {
            unreachable!("handed back")
        };
        let parsed = py.detach(|| {
            let mut parser = ExampleParser::new(&schema.schema, max_records.min(1024));
            parser.prefer_host(*host);
            for record in batch.iter() {
                parser.push(record)?;
            }
            // Room for the batch's bytes (up to the bound, and the record that passes it:
            // about one more like the first) before the first record read here, so that
            // values are copied into their columns once, not again as a column doubles.
            let room = max_bytes
                .saturating_sub(batch.data.len())
                .min(PARSE_RESERVE);
            parse_each(
                reader,
                batch,
                (max_records, max_bytes),
                &mut parser,
                room,
                large,
            )?;
            *host = parser.fullest_bytes_column();
            if parser.is_empty() {
                return Ok(None);
            }
            let parsed = parser.finish()?;
            let refs: Vec<Option<&Parsed>> = parsed.iter().map(Some).collect();
            let assembled = schema.schema.assemble(&refs)?;
            Ok(Some((parsed, assembled)))
        });
        parsed.map_err(|e| self.located(e)).py_err(py)
    }

    /// `e`, for a record of the last batch, named by the record's file, index there and
    /// byte offset.
    fn located(&self, mut e: tfrecordkit_core::Error) -> tfrecordkit_core::Error {
        if let Some((path, index, offset)) = e.record_index.and_then(|i| self.origin(i)) {
            e.path = Some(path.to_owned());
            e.record_index = Some(index);
            e.offset = Some(offset);
        }
        e
    }

    fn origin(&self, i: u64) -> Option<(&str, u64, u64)> {
        match &self.inner {
            Reading::Now(reader) => reader.origin_in_batch(i),
            Reading::Ahead(ahead) => ahead.origin_in_batch(i),
            Reading::Moving => None,
        }
    }
}

#[pymethods]
impl RecordReader {
    #[new]
    #[pyo3(signature = (paths, compression="auto", verify=true, max_record_bytes=None, resync=false, follow=false, opener=None, spans=None, ahead=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        paths: Vec<String>,
        compression: Option<&str>,
        verify: bool,
        max_record_bytes: Option<u64>,
        resync: bool,
        follow: bool,
        opener: Option<Py<PyAny>>,
        spans: Option<Vec<Option<(u64, u64, u64)>>>,
        ahead: bool,
    ) -> PyResult<Self> {
        crate::errors::guard("RecordReader.new", || {
            let mut opts = ReadOptions {
                compression: compression_arg(py, compression)?,
                verify,
                resync,
                follow,
                ..ReadOptions::default()
            };
            if let Some(m) = max_record_bytes {
                opts.max_record_bytes = m;
            }
            let mut inner = MultiFileReader::new(paths, opts, crate::opener::shared(opener));
            if let Some(spans) = spans {
                let spans = spans
                    .into_iter()
                    .map(|s| s.map(|(start, index, end)| Span { start, index, end }))
                    .collect();
                inner = inner.with_spans(spans).py_err(py)?;
            }
            Ok(RecordReader {
                inner: Reading::Now(Box::new(inner)),
                batch: RecordBatch::default(),
                ahead: ahead && !follow,
                handed_back: false,
                large: Vec::new(),
                host: None,
            })
        })
    }

    /// Up to `max_records` records as a list of bytes; an empty list at the end. With
    /// `one_by_one` (for readers that hand records out one at a time), a large record is
    /// read straight from the file into its `bytes` and ends its batch.
    #[pyo3(signature = (max_records=1024, max_bytes=16_777_216, one_by_one=false))]
    fn read_batch<'py>(
        &mut self,
        py: Python<'py>,
        max_records: usize,
        max_bytes: usize,
        one_by_one: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        crate::errors::guard("RecordReader.read_batch", || {
            let max_records = max_records.max(1);
            let mut sink = BytesSink {
                one_by_one,
                ..BytesSink::default()
            };
            self.batch.clear();
            if self.ahead && !one_by_one {
                // Read ahead until a large record: from there on each is read here,
                // straight into its bytes object.
                self.next_batch_until_over(py, (max_records, max_bytes), 0, None)?;
            }
            let RecordReader { inner, batch, .. } = self;
            match inner {
                Reading::Ahead(_) if one_by_one => {
                    return Err(PyValueError::new_err(
                        "a reader that reads ahead hands out whole batches",
                    ));
                }
                // Read in place: the whole batch, or (handed back at a large record) the
                // rest of the one read ahead.
                Reading::Now(inner) => {
                    py.detach(|| {
                        let sink: Option<&mut dyn LargeRecords> = Some(&mut sink);
                        inner.read_batch_with(batch, max_records, max_bytes, sink)
                    })
                    .py_err(py)?;
                }
                _ => {}
            }
            let batch = &self.batch;
            let mut made = sink.made.into_iter().map(|(b, _)| b.into_bound(py));
            let mut large = batch.large.iter().copied().peekable();
            PyList::new(
                py,
                (0..batch.len()).map(|i| {
                    if large.next_if_eq(&i).is_some() {
                        made.next().expect("a bytes object per large record")
                    } else {
                        PyBytes::new(py, batch.get(i))
                    }
                }),
            )
        })
    }

    /// Reads up to `max_records` records and parses them with `schema` in one native call;
    /// `None` at the end. Returns what `parse_examples` returns; with `raw_bytes`, bytes
    /// columns come as `(data, offsets)` arrays (Arrow's binary layout) instead of objects.
    /// With `feature_lists` the records are `SequenceExample`s: returns `(context, lists)`,
    /// the context as above and each list laid out without padding (see
    /// `parse_sequence_lists`).
    /// `max_bytes` ends a batch once its records hold that many bytes. With `as_dict`,
    /// the batch of Examples comes as the dict `schema.outputs` makes of it.
    #[pyo3(signature = (schema, max_records=1024, raw_bytes=false, feature_lists=None, max_bytes=usize::MAX, as_dict=false))]
    #[allow(clippy::too_many_arguments)]
    fn read_parsed<'py>(
        &mut self,
        py: Python<'py>,
        schema: &CompiledSchema,
        max_records: usize,
        raw_bytes: bool,
        feature_lists: Option<PyRef<'py, CompiledLists>>,
        max_bytes: usize,
        as_dict: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::errors::guard("RecordReader.read_parsed", || {
            let wanted = feature_lists.as_ref().map(|l| Arc::clone(&l.schema));
            let schemas = (Arc::clone(&schema.schema), wanted.clone());
            let (max_records, max_bytes) = (max_records.max(1), max_bytes.max(1));
            if self.ahead && wanted.is_none() {
                // Examples are read ahead until a large record; from there on each is
                // read straight into the bytes column it is parsed into, while it is in
                // cache. Values handed out as `bytes` objects are copied into them
                // whatever the reader does: records of up to `HOST_MAX` bytes are then
                // read ahead too, so that the two copies run on two threads (x1.3 to
                // x1.5), and only larger ones, for which memory is what limits either
                // way, are read in place.
                let over = if raw_bytes { 0 } else { HOST_MAX };
                let shape = (max_records, max_bytes);
                self.next_batch_until_over(py, shape, over, Some(schemas.clone()))?;
                if self.handed_back {
                    let Some((parsed, assembled)) =
                        self.parse_in_place(py, schema, max_records, max_bytes)?
                    else {
                        return Ok(None);
                    };
                    return batch_to_py(py, schema, parsed, assembled, raw_bytes, as_dict)
                        .map(Some);
                }
            } else {
                self.next_batch(py, max_records, max_bytes, Some(schemas.clone()))?;
            }
            if self.batch.is_empty() {
                return Ok(None);
            }
            // Parsed on the reading thread if it had the time, with these very schemas.
            let batch = &self.batch;
            let ahead = match &mut self.inner {
                Reading::Ahead(ahead) => ahead.take_done_copied(|a| a.copied_if_small(batch)),
                _ => None,
            };
            let ahead = ahead.filter(|a| a.parsed_with(&schemas));
            // An error in a record of the batch (parsing it, or laying out its sparse and
            // ragged features) is named by the record's file and index there.
            let parsed = match ahead {
                Some(ahead) => ahead.parsed,
                None => {
                    let batch = &self.batch;
                    py.detach(|| {
                        let records: Vec<&[u8]> = batch.iter().collect();
                        parse_batch((&schemas.0, schemas.1.as_deref()), &records)
                    })
                }
            };
            let (parsed, assembled, lists) = parsed.map_err(|e| self.located(e)).py_err(py)?;
            let Some(lists) = lists else {
                return batch_to_py(py, schema, parsed, assembled, raw_bytes, as_dict).map(Some);
            };
            let context = PyList::new(py, columns_to_py(py, assembled, parsed, raw_bytes)?)?;
            let specs = wanted.as_deref().expect("lists were parsed");
            let lists = crate::lists::lists_to_py(py, specs, lists)?;
            let both = [context.into_any(), lists.into_any()];
            Ok(Some(PyTuple::new(py, both)?.into_any()))
        })
    }

    /// `(path, records delivered)` for every file opened so far.
    fn delivered(&self) -> Vec<(String, u64)> {
        let own = |(p, n): (&str, u64)| (p.to_owned(), n);
        match &self.inner {
            Reading::Now(reader) => reader.delivered().map(own).collect(),
            Reading::Ahead(ahead) => ahead.delivered().map(own).collect(),
            Reading::Moving => Vec::new(),
        }
    }

    /// `(path, index in the file, byte offset)` of record `i` of the last batch read.
    fn origin_in_batch(&self, i: u64) -> Option<(String, u64, u64)> {
        self.origin(i)
            .map(|(path, index, offset)| (path.to_owned(), index, offset))
    }
}

fn zlib_options(given: HashMap<String, i64>) -> PyResult<ZlibOptions> {
    let mut options = ZlibOptions::default();
    for (name, value) in given {
        let out_of_range = || PyValueError::new_err(format!("{name} {value} is out of range"));
        let small = || u32::try_from(value).map_err(|_| out_of_range());
        let size = || usize::try_from(value).map_err(|_| out_of_range());
        match name.as_str() {
            "compression_level" => options.level = Some(small()?),
            "window_bits" => options.window_bits = Some(small()?),
            "mem_level" => options.mem_level = Some(small()?),
            "compression_strategy" => options.strategy = Some(small()?),
            "flush_mode" => options.flush_mode = Some(small()?),
            "input_buffer_size" => options.input_buffer_size = Some(size()?),
            "output_buffer_size" => options.output_buffer_size = Some(size()?),
            _ => return Err(PyValueError::new_err(format!("no zlib option {name:?}"))),
        }
    }
    Ok(options)
}

/// Writes framed records; see `tfrecordkit.RecordWriter`.
#[pyclass(module = "tfrecordkit._core")]
pub struct RecordWriter {
    inner: tfrecordkit_core::RecordWriter,
}

#[pymethods]
impl RecordWriter {
    /// `zlib`: zlib's options by their `tf.io.TFRecordOptions` names (`compression_level`,
    /// `window_bits`, `mem_level`, `compression_strategy`, `flush_mode`,
    /// `input_buffer_size`, `output_buffer_size`). `part`: a part of a dataset, removed
    /// rather than renamed when dropped before it is finished.
    #[new]
    #[pyo3(signature = (path, compression=None, zlib=None, atomic=true, index=false, member_bytes=None, part=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &str,
        compression: Option<&str>,
        zlib: Option<HashMap<String, i64>>,
        atomic: bool,
        index: bool,
        member_bytes: Option<u64>,
        part: bool,
    ) -> PyResult<Self> {
        crate::errors::guard("RecordWriter.new", || {
            let zlib = zlib_options(zlib.unwrap_or_default())?;
            let compression = match compression {
                Some(name) => compression_arg(py, Some(name))?,
                None => Some(Compression::None),
            };
            let opts = WriteOptions {
                compression,
                zlib,
                atomic,
                index,
                member_bytes,
                part,
            };
            let inner = tfrecordkit_core::RecordWriter::with_options(path, opts).py_err(py)?;
            Ok(RecordWriter { inner })
        })
    }

    fn write(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::errors::guard("RecordWriter.write", || {
            self.inner.write(&bytes_like(data)?).py_err(py)
        })
    }

    /// Writes every bytes-like item of an iterable; returns how many.
    fn write_many(&mut self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<u64> {
        crate::errors::guard("RecordWriter.write_many", || {
            let mut n = 0;
            for item in records.try_iter()? {
                let item = item?;
                let record = bytes_like(&item).map_err(|e| {
                    let why = e.value(py).to_string();
                    pyo3::exceptions::PyTypeError::new_err(format!(
                        "item {n}: {why} ({n} written before it)"
                    ))
                })?;
                self.inner.write(&record).py_err(py)?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Writes `items[start:end]` as `write_dataset` takes them: a `bytes` or `bytearray`
    /// as the record it is, a dict as an Example of its features (`row_features`), an item
    /// that is `skip` passed over. Stops before any other item, and before a record once
    /// `limit` framed bytes are written. Returns the items taken, the records written,
    /// their framed bytes, and whether records (bytes) and rows (dicts) were among them.
    /// The features of the rows written are noted in `seen`.
    #[pyo3(signature = (items, typed, skip, start=0, end=None, limit=None, seen=None))]
    #[allow(clippy::too_many_arguments)]
    fn write_rows(
        &mut self,
        py: Python<'_>,
        items: &Bound<'_, PyList>,
        typed: &Bound<'_, PyDict>,
        skip: &Bound<'_, PyAny>,
        start: usize,
        end: Option<usize>,
        limit: Option<u64>,
        seen: Option<PyRefMut<'_, RowSummary>>,
    ) -> PyResult<(usize, u64, u64, bool, bool)> {
        crate::errors::guard("RecordWriter.write_rows", || {
            let mut seen = seen;
            let end = end.unwrap_or(items.len()).min(items.len());
            let (mut at, mut records, mut bytes) = (start, 0u64, 0u64);
            let (mut raw, mut rows) = (false, false);
            let mut example = Vec::new();
            while at < end {
                let item = items.get_item(at)?;
                if item.is(skip) {
                    at += 1;
                    continue;
                }
                if limit.is_some_and(|l| bytes >= l) {
                    break;
                }
                let len = if let Ok(row) = item.cast::<PyDict>() {
                    example.clear();
                    encode_row_into(row, typed, seen.as_deref_mut(), &mut example)?;
                    self.inner.write(&example).py_err(py)?;
                    rows = true;
                    example.len()
                } else if item.is_instance_of::<PyBytes>() || item.is_instance_of::<PyByteArray>() {
                    let data = bytes_like(&item)?;
                    self.inner.write(&data).py_err(py)?;
                    raw = true;
                    data.len()
                } else {
                    break;
                };
                bytes += len as u64 + 16;
                records += 1;
                at += 1;
            }
            Ok((at - start, records, bytes, raw, rows))
        })
    }

    /// Encodes rows `start..end` of a table as Examples and writes them; returns how many.
    #[pyo3(signature = (table, start=0, end=None, parallel=true))]
    fn write_columns(
        &mut self,
        py: Python<'_>,
        table: &Table,
        start: usize,
        end: Option<usize>,
        parallel: bool,
    ) -> PyResult<usize> {
        crate::errors::guard("RecordWriter.write_columns", || {
            let end = end.unwrap_or(table.rows()).min(table.rows());
            let start = start.min(end);
            table.with_refs(py, |refs, cols| {
                let inner = &mut self.inner;
                py.detach(|| {
                    for chunk in frame_table(refs, cols, start..end, parallel) {
                        inner.write_framed(&chunk)?;
                    }
                    Ok(())
                })
                .py_err(py)?;
                Ok(end - start)
            })
        })
    }

    fn flush(&mut self, py: Python<'_>) -> PyResult<()> {
        crate::errors::guard("RecordWriter.flush", || {
            let inner = &mut self.inner;
            py.detach(|| inner.flush()).py_err(py)
        })
    }

    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        crate::errors::guard("RecordWriter.close", || {
            let inner = &mut self.inner;
            py.detach(|| inner.close()).py_err(py)
        })
    }

    fn abort(&mut self) {
        self.inner.abort();
    }

    /// Finishes and syncs the file without renaming it; returns what it holds:
    /// `{"data": path, "index": path or None, "records", "bytes", "crc32c"}`.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::errors::guard("RecordWriter.finish", || {
            let inner = &mut self.inner;
            let f = py.detach(|| inner.finish()).py_err(py)?;
            finished_dict(py, &f)
        })
    }

    /// What the closed (or finished) file holds, as `finish` returns it; None while open.
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        crate::errors::guard("RecordWriter.summary", || {
            self.inner
                .finished()
                .map(|f| finished_dict(py, f))
                .transpose()
        })
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
}

fn finished_dict<'py>(py: Python<'py>, f: &Finished) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("data", f.data.to_string_lossy())?;
    d.set_item("index", f.index.as_ref().map(|p| p.to_string_lossy()))?;
    d.set_item("records", f.records)?;
    d.set_item("bytes", f.bytes)?;
    d.set_item("crc32c", f.crc32c)?;
    Ok(d)
}

/// Counts the records of one file (length checksums verified); `opener` opens URLs.
#[pyfunction]
#[pyo3(signature = (path, compression="auto", opener=None))]
pub fn count_records(
    py: Python<'_>,
    path: &str,
    compression: Option<&str>,
    opener: Option<Py<PyAny>>,
) -> PyResult<u64> {
    crate::errors::guard("count_records", || {
        let compression = compression_arg(py, compression)?;
        let opener = crate::opener::shared(opener);
        py.detach(|| tfrecordkit_core::count_records(path, compression, &opener))
            .py_err(py)
    })
}

/// The records framed in `framed` (`.idx` entries' bytes, fetched from `offsets` of
/// `path`), their checksums checked.
#[pyfunction]
#[pyo3(signature = (framed, offsets, path, verify=true))]
pub fn unframe_records<'py>(
    py: Python<'py>,
    framed: Vec<Vec<u8>>,
    offsets: Vec<u64>,
    path: &str,
    verify: bool,
) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("unframe_records", || {
        if framed.len() != offsets.len() {
            return Err(PyValueError::new_err("framed and offsets differ in length"));
        }
        let records = py
            .detach(|| {
                framed
                    .into_iter()
                    .zip(offsets)
                    .map(|(buf, offset)| {
                        tfrecordkit_core::unframe_record(buf, path, offset, verify)
                    })
                    .collect::<tfrecordkit_core::Result<Vec<_>>>()
            })
            .py_err(py)?;
        PyList::new(py, records.iter().map(|r| PyBytes::new(py, r)))
    })
}

/// Every record of one gzip member's bytes, `data`, fetched from a seekable gzip `path`.
#[pyfunction]
#[pyo3(signature = (data, path, verify=true))]
pub fn member_records<'py>(
    py: Python<'py>,
    data: &[u8],
    path: &str,
    verify: bool,
) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("member_records", || {
        let records = py
            .detach(|| tfrecordkit_core::member_records(data, path, verify))
            .py_err(py)?;
        PyList::new(py, records.iter().map(|r| PyBytes::new(py, r)))
    })
}

/// The record framed in `length` bytes at `offset` of an uncompressed file; a large one
/// read straight into its `bytes`.
#[pyfunction]
#[pyo3(signature = (path, offset, length, verify=true))]
pub fn read_record_at<'py>(
    py: Python<'py>,
    path: &str,
    offset: u64,
    length: u64,
    verify: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    crate::errors::guard("read_record_at", || {
        let records = read_records_at(py, path, vec![(offset, length)], verify)?;
        Ok(records.get_item(0)?.cast_into::<PyBytes>()?)
    })
}

/// Every record of the gzip member of `length` compressed bytes at `offset`.
#[pyfunction]
#[pyo3(signature = (path, offset, length, verify=true))]
pub fn read_member<'py>(
    py: Python<'py>,
    path: &str,
    offset: u64,
    length: u64,
    verify: bool,
) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("read_member", || {
        let records = py
            .detach(|| tfrecordkit_core::read_member(path, offset, length, verify))
            .py_err(py)?;
        PyList::new(py, records.iter().map(|r| PyBytes::new(py, r)))
    })
}

/// `(offset, framed length)` of every record of an uncompressed file, checksums checked;
/// `opener` opens URLs.
#[pyfunction]
#[pyo3(signature = (path, opener=None))]
pub fn index_records(
    py: Python<'_>,
    path: &str,
    opener: Option<Py<PyAny>>,
) -> PyResult<Vec<(u64, u64)>> {
    crate::errors::guard("index_records", || {
        let opener = crate::opener::shared(opener);
        py.detach(|| tfrecordkit_core::index_records(path, &opener))
            .py_err(py)
    })
}

/// The numbers of an index sidecar's text, `columns` to a row, as one flat array; what
/// is not such a table is a `DataLossError` saying what is wrong.
#[pyfunction]
pub fn parse_index<'py>(
    py: Python<'py>,
    text: &[u8],
    columns: usize,
) -> PyResult<Bound<'py, numpy::PyArray1<i64>>> {
    crate::errors::guard("parse_index", || {
        let table = py
            .detach(|| tfrecordkit_core::parse_index_table(text, columns))
            .py_err(py)?;
        Ok(numpy::PyArray1::from_vec(py, table))
    })
}

/// Masked CRC32C of `data`, as TFRecord framing stores it.
#[pyfunction]
pub fn masked_crc32c(data: &[u8]) -> u32 {
    tfrecordkit_core::crc::masked_crc32c(data)
}

/// The records framed at `(offset, framed length)` positions of an uncompressed file
/// (`.idx` entries), in that order, read in one call without the GIL; large ones straight
/// into their `bytes`.
#[pyfunction]
#[pyo3(signature = (path, positions, verify=true))]
pub fn read_records_at<'py>(
    py: Python<'py>,
    path: &str,
    positions: Vec<(u64, u64)>,
    verify: bool,
) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("read_records_at", || {
        let mut sink = BytesSink::default();
        let records = py
            .detach(|| tfrecordkit_core::read_records_at_with(path, &positions, verify, &mut sink))
            .py_err(py)?;
        let mut made = sink.made.into_iter().map(|(b, _)| b.into_bound(py));
        PyList::new(
            py,
            records.iter().map(|r| match r {
                Some(small) => PyBytes::new(py, small),
                None => made.next().expect("a bytes object per large record"),
            }),
        )
    })
}

/// `data` in TFRecord framing: length, its masked CRC32C, data, its masked CRC32C.
#[pyfunction]
pub fn frame_record<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(data.len() + 16);
    tfrecordkit_core::frame_record(data, &mut out);
    PyBytes::new(py, &out)
}

/// CRC32C (unmasked) of a whole file, as dataset manifests record it.
#[pyfunction]
pub fn file_crc32c(py: Python<'_>, path: &str) -> PyResult<u32> {
    crate::errors::guard("file_crc32c", || {
        py.detach(|| tfrecordkit_core::crc::file_crc32c(path))
            .py_err(py)
    })
}

/// Moves a finished shard's temporary `data` (and `index` sidecar) to `path` (and
/// `index_path`), the sidecar first. Without `replace`, an existing file at either name
/// raises `FileExistsError` and is left as it is; a failed commit removes the shard.
#[pyfunction]
#[pyo3(signature = (data, path, index=None, index_path=None, replace=false))]
pub fn commit_shard(
    py: Python<'_>,
    data: PathBuf,
    path: PathBuf,
    index: Option<PathBuf>,
    index_path: Option<PathBuf>,
    replace: bool,
) -> PyResult<()> {
    crate::errors::guard("commit_shard", || {
        let sidecar = match (&index, &index_path) {
            (Some(t), Some(f)) => Some((t.as_path(), f.as_path())),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("index and index_path go together")),
        };
        py.detach(|| tfrecordkit_core::commit_shard(&data, sidecar, &path, replace))
            .py_err(py)
    })
}

/// Reads records at byte offsets of an uncompressed file; see
/// `tfrecordkit.RandomRecordReader`.
#[pyclass(module = "tfrecordkit._core")]
pub struct OffsetReader {
    inner: Option<tfrecordkit_core::OffsetReader>,
}

#[pymethods]
impl OffsetReader {
    #[new]
    fn new(py: Python<'_>, path: &str) -> PyResult<Self> {
        crate::errors::guard("OffsetReader.new", || {
            let inner = tfrecordkit_core::OffsetReader::open(path).py_err(py)?;
            Ok(OffsetReader { inner: Some(inner) })
        })
    }

    /// `(record, next offset)`, or None at the end of the file.
    #[pyo3(signature = (offset, verify=true))]
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        offset: u64,
        verify: bool,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, u64)>> {
        crate::errors::guard("OffsetReader.read", || {
            let Some(inner) = self.inner.as_mut() else {
                return Err(PyValueError::new_err("the reader is closed"));
            };
            let found = py.detach(|| inner.read(offset, verify)).py_err(py)?;
            Ok(found.map(|(record, next)| (PyBytes::new(py, &record), next)))
        })
    }

    fn close(&mut self) {
        self.inner = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }
}

/// A parsed batch of Examples for Python: what `parse_examples` returns, or with
/// `as_dict` the dict `schema.outputs` makes of it.
fn batch_to_py<'py>(
    py: Python<'py>,
    schema: &CompiledSchema,
    parsed: Vec<Parsed>,
    assembled: Vec<Assembled>,
    raw_bytes: bool,
    as_dict: bool,
) -> PyResult<Bound<'py, PyAny>> {
    if as_dict {
        let parts = columns_to_parts(py, assembled, parsed, raw_bytes)?;
        return Ok(schema.dict(py, parts)?.into_any());
    }
    Ok(PyList::new(py, columns_to_py(py, assembled, parsed, raw_bytes)?)?.into_any())
}

/// `row` as an Example, into `out`, as `write_dataset` encodes a row (see `row_features`);
/// its features noted in `seen`.
fn encode_row_into(
    row: &Bound<'_, PyDict>,
    typed: &Bound<'_, PyDict>,
    seen: Option<&mut RowSummary>,
    out: &mut Vec<u8>,
) -> PyResult<()> {
    let features = row_features(row, typed)?;
    if let Some(seen) = seen {
        seen.note(&features);
    }
    encode_example_into(&features, out);
    Ok(())
}

/// `row` serialized as an Example as `RecordWriter.write_rows` writes it, its features
/// noted in `seen`.
#[pyfunction]
#[pyo3(signature = (row, typed, seen=None))]
pub fn encode_row<'py>(
    py: Python<'py>,
    row: &Bound<'py, PyDict>,
    typed: &Bound<'py, PyDict>,
    seen: Option<PyRefMut<'_, RowSummary>>,
) -> PyResult<Bound<'py, PyBytes>> {
    crate::errors::guard("encode_row", || {
        let mut seen = seen;
        let mut out = Vec::new();
        encode_row_into(row, typed, seen.as_deref_mut(), &mut out)?;
        Ok(PyBytes::new(py, &out))
    })
}

/// What the rows that `RecordWriter.write_rows` encoded held, feature by feature (see
/// `tfrecordkit_core::row_summary`).
#[pyclass(module = "tfrecordkit._core")]
#[derive(Default)]
pub struct RowSummary(tfrecordkit_core::row_summary::RowSummary);

impl RowSummary {
    fn note(&mut self, features: &[(String, Feature)]) {
        self.0.note(features);
    }
}

#[pymethods]
impl RowSummary {
    #[new]
    fn new() -> Self {
        RowSummary::default()
    }

    /// The rows noted.
    #[getter]
    fn rows(&self) -> u64 {
        self.0.rows
    }

    /// Each feature's `(types, fewest, most, rows)`: the types of its values (`"int64"`,
    /// `"float32"`, `"bytes"`; none where every row held an empty list), the fewest and
    /// the most values a row had, and how many rows had it; in the order first seen.
    fn features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::errors::guard("RowSummary.features", || {
            let out = PyDict::new(py);
            for seen in self.0.features() {
                let row = (seen.kind_names(), seen.fewest, seen.most, seen.rows);
                out.set_item(&seen.key, row)?;
            }
            Ok(out)
        })
    }
}
