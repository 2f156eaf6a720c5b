//! Schema-driven batch parsing of serialized Examples into columns, as `tf.io.parse_example`.
//!
//! Feature names are looked up once per schema; each record is scanned once, remembering
//! where each wanted feature's bytes are (the last occurrence of a key wins), and values are
//! decoded straight into per-feature columns. Large batches are split across threads.

use std::sync::OnceLock;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::example::{
    read_float_list, read_int64_list, read_map_entry, utf8_key, EntryValue, Kind,
};
use crate::wire::{self, WireReader};

/// The value type of a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    Int64,
    Float32,
    Bytes,
}

impl DType {
    pub fn kind(self) -> Kind {
        match self {
            DType::Int64 => Kind::Int64,
            DType::Float32 => Kind::Float,
            DType::Bytes => Kind::Bytes,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::Int64 => "int64",
            DType::Float32 => "float32",
            DType::Bytes => "bytes",
        }
    }
}

/// A list of values of one dtype: defaults, and parsed columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Int64(Vec<i64>),
    Float32(Vec<f32>),
    /// Values packed back to back; value `i` is `data[ends[i-1]..ends[i]]`.
    Bytes {
        data: Vec<u8>,
        ends: Vec<usize>,
    },
}

impl Column {
    pub fn empty(dtype: DType) -> Column {
        match dtype {
            DType::Int64 => Column::Int64(Vec::new()),
            DType::Float32 => Column::Float32(Vec::new()),
            DType::Bytes => Column::Bytes {
                data: Vec::new(),
                ends: Vec::new(),
            },
        }
    }

    pub fn from_bytes<T: AsRef<[u8]>>(values: &[T]) -> Column {
        let mut col = Column::empty(DType::Bytes);
        for v in values {
            col.push_bytes(v.as_ref());
        }
        col
    }

    pub fn dtype(&self) -> DType {
        match self {
            Column::Int64(_) => DType::Int64,
            Column::Float32(_) => DType::Float32,
            Column::Bytes { .. } => DType::Bytes,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Int64(v) => v.len(),
            Column::Float32(v) => v.len(),
            Column::Bytes { ends, .. } => ends.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push_bytes(&mut self, b: &[u8]) {
        if let Column::Bytes { data, ends } = self {
            data.extend_from_slice(b);
            ends.push(data.len());
        }
    }

    /// Value `i` of a bytes column.
    pub fn bytes_at(&self, i: usize) -> &[u8] {
        match self {
            Column::Bytes { data, ends } => {
                let start = if i == 0 { 0 } else { ends[i - 1] };
                &data[start..ends[i]]
            }
            _ => &[],
        }
    }

    fn truncate(&mut self, n: usize) {
        match self {
            Column::Int64(v) => v.truncate(n),
            Column::Float32(v) => v.truncate(n),
            Column::Bytes { data, ends } => {
                ends.truncate(n);
                data.truncate(ends.last().copied().unwrap_or(0));
            }
        }
    }

    /// Appends `other` entirely.
    fn extend(&mut self, other: &Column) {
        self.extend_range(other, 0, other.len());
    }

    /// Appends values `from..to` of `other` (same dtype).
    fn extend_range(&mut self, other: &Column, from: usize, to: usize) {
        match (self, other) {
            (Column::Int64(a), Column::Int64(b)) => a.extend_from_slice(&b[from..to]),
            (Column::Float32(a), Column::Float32(b)) => a.extend_from_slice(&b[from..to]),
            (me @ Column::Bytes { .. }, src @ Column::Bytes { .. }) => {
                for i in from..to {
                    me.push_bytes(src.bytes_at(i));
                }
            }
            _ => unreachable!("columns of one feature share a dtype"),
        }
    }

    /// Appends value `i % other.len()` of `other`, `n` times in order (cycling).
    fn extend_cycled(&mut self, other: &Column, n: usize) {
        let len = other.len();
        if len == 0 {
            return;
        }
        for i in 0..n {
            self.extend_range(other, i % len, i % len + 1);
        }
    }
}

/// How a feature is shaped in the output.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecKind {
    /// Exactly `prod(shape)` values per Example; output `[batch, *shape]`.
    FixedLen { shape: Vec<usize> },
    /// Any number of values; output values plus `row_splits`.
    VarLen,
    /// A multiple of `prod(shape)` values; output `[batch, max_rows, *shape]`, padded.
    FixedLenSequence {
        shape: Vec<usize>,
        allow_missing: bool,
    },
}

/// One entry of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureSpec {
    pub key: String,
    pub dtype: DType,
    pub kind: SpecKind,
    /// For FixedLen: a value used when the feature is missing (one value, or `prod(shape)`).
    /// For FixedLenSequence: the padding value (one value).
    pub default: Option<Column>,
}

impl FeatureSpec {
    fn stride(&self) -> usize {
        match &self.kind {
            SpecKind::FixedLen { shape } | SpecKind::FixedLenSequence { shape, .. } => {
                shape.iter().product()
            }
            SpecKind::VarLen => 1,
        }
    }
}

/// A validated schema with its name lookup built once.
#[derive(Debug, Clone)]
pub struct Schema {
    specs: Vec<FeatureSpec>,
    lookup: FxHashMap<Vec<u8>, usize>,
}

impl Schema {
    pub fn new(specs: Vec<FeatureSpec>) -> Result<Schema> {
        let mut lookup = FxHashMap::default();
        for (i, spec) in specs.iter().enumerate() {
            if lookup.insert(spec.key.as_bytes().to_vec(), i).is_some() {
                return Err(Error::invalid(format!(
                    "duplicate feature key {:?}",
                    spec.key
                )));
            }
            if let Some(d) = &spec.default {
                if d.dtype() != spec.dtype {
                    return Err(Error::invalid(format!(
                        "default for {:?} is {} but the feature is {}",
                        spec.key,
                        d.dtype().name(),
                        spec.dtype.name()
                    )));
                }
                let ok = match &spec.kind {
                    SpecKind::FixedLen { .. } => d.len() == 1 || d.len() == spec.stride(),
                    SpecKind::FixedLenSequence { .. } => d.len() == 1,
                    SpecKind::VarLen => false,
                };
                if !ok {
                    return Err(Error::invalid(format!(
                        "default for {:?} has {} values; expected 1 or {}",
                        spec.key,
                        d.len(),
                        spec.stride()
                    )));
                }
            }
        }
        Ok(Schema { specs, lookup })
    }

    pub fn specs(&self) -> &[FeatureSpec] {
        &self.specs
    }

    #[inline]
    fn index_of(&self, key: &[u8]) -> Option<usize> {
        if self.specs.len() <= 4 {
            return self.specs.iter().position(|s| s.key.as_bytes() == key);
        }
        self.lookup.get(key).copied()
    }
}

/// One parsed feature of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub values: Column,
    /// Output shape of `values` (for VarLen, `[n_values]`).
    pub shape: Vec<usize>,
    /// VarLen only: row `i` is `values[row_splits[i]..row_splits[i+1]]`.
    pub row_splits: Option<Vec<i64>>,
}

/// Per-feature accumulators for a run of records.
struct Acc {
    values: Vec<Column>,
    /// Values per record, for VarLen and FixedLenSequence.
    counts: Vec<Vec<usize>>,
}

enum Slot<'a> {
    Missing,
    One(&'a [u8]),
    Merged(Vec<u8>),
}

fn count_error(spec: &FeatureSpec, found: usize, expected: &str) -> Error {
    Error::schema(format!(
        "feature {:?} ({}) has {found} values; expected {expected}",
        spec.key,
        spec.dtype.name()
    ))
    .with_key(&spec.key)
}

/// Decodes the lists of one `Feature` into `col`; returns the kind present (if any) and
/// how many values were appended. Values of a kind that a later list replaces are dropped.
fn read_feature_into(buf: &[u8], dtype: DType, col: &mut Column) -> Result<(Option<Kind>, usize)> {
    let base = col.len();
    let want = dtype.kind();
    let mut kind = None;
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        let Some(k) = Kind::from_field(field) else {
            r.skip(field, wt)?;
            continue;
        };
        if wt != wire::LEN {
            return Err(Error::decode(format!(
                "malformed Feature: list field {field} has wire type {wt}"
            )));
        }
        let list = r.bytes()?;
        if kind != Some(k) {
            col.truncate(base);
            kind = Some(k);
        }
        if k != want {
            continue;
        }
        match col {
            Column::Int64(v) => read_int64_list(list, v)?,
            Column::Float32(v) => read_float_list(list, v)?,
            Column::Bytes { data, ends } => crate::example::read_bytes_list(list, |b| {
                data.extend_from_slice(b);
                ends.push(data.len());
            })?,
        }
    }
    match kind {
        Some(k) if k != want => Err(Error::schema(format!(
            "data types don't match: found {} but expected {}",
            k.name(),
            dtype.name()
        ))),
        _ => Ok((kind, col.len() - base)),
    }
}

/// Finds the wanted features of one Example; `slots[i]` gets spec `i`'s `Feature` bytes.
fn locate<'a>(schema: &Schema, record: &'a [u8], slots: &mut [Slot<'a>]) -> Result<()> {
    for s in slots.iter_mut() {
        *s = Slot::Missing;
    }
    let mut r = WireReader::new(record);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if field != 1 || wt != wire::LEN {
            r.skip(field, wt)?;
            continue;
        }
        let mut features = WireReader::new(r.bytes()?);
        while !features.is_empty() {
            let (f, w) = features.tag()?;
            if f != 1 || w != wire::LEN {
                features.skip(f, w)?;
                continue;
            }
            let (key, value) = read_map_entry(features.bytes()?)?;
            match schema.index_of(key) {
                Some(i) => {
                    slots[i] = match value {
                        EntryValue::Absent => Slot::Missing,
                        EntryValue::One(b) => Slot::One(b),
                        EntryValue::Many(parts) => Slot::Merged(parts.concat()),
                    }
                }
                None => {
                    if !key.is_ascii() {
                        utf8_key(key)?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn parse_record<'r>(
    schema: &Schema,
    record: &'r [u8],
    local: &mut [Slot<'r>],
    acc: &mut Acc,
) -> Result<()> {
    locate(schema, record, local)?;
    for (i, spec) in schema.specs.iter().enumerate() {
        let col = &mut acc.values[i];
        let bytes: Option<&[u8]> = match &local[i] {
            Slot::Missing => None,
            Slot::One(b) => Some(b),
            Slot::Merged(v) => Some(v),
        };
        let (kind, n) = match bytes {
            Some(b) => read_feature_into(b, spec.dtype, col).map_err(|e| e.with_key(&spec.key))?,
            None => (None, 0),
        };
        match &spec.kind {
            SpecKind::FixedLen { .. } => {
                let stride = spec.stride();
                if kind.is_none() {
                    match &spec.default {
                        Some(d) => col.extend_cycled(d, stride),
                        None => {
                            return Err(Error::schema(format!(
                                "feature {:?} ({}) is required but could not be found",
                                spec.key,
                                spec.dtype.name()
                            ))
                            .with_key(&spec.key))
                        }
                    }
                } else if n != stride {
                    return Err(count_error(spec, n, &stride.to_string()));
                }
            }
            SpecKind::VarLen => acc.counts[i].push(n),
            SpecKind::FixedLenSequence { allow_missing, .. } => {
                let stride = spec.stride();
                if kind.is_none() && bytes.is_none() && !allow_missing {
                    return Err(Error::schema(format!(
                        "feature {:?} ({}) is required but could not be found \
                         (use allow_missing=True to pad missing features)",
                        spec.key,
                        spec.dtype.name()
                    ))
                    .with_key(&spec.key));
                }
                let misfit = if stride == 0 { n != 0 } else { n % stride != 0 };
                if misfit {
                    return Err(count_error(spec, n, &format!("a multiple of {stride}")));
                }
                acc.counts[i].push(n);
            }
        }
    }
    Ok(())
}

fn parse_run<'r, I>(schema: &Schema, records: I, first_index: usize) -> Result<Acc>
where
    I: Iterator<Item = &'r [u8]>,
{
    let n_specs = schema.specs.len();
    let mut acc = Acc {
        values: schema
            .specs
            .iter()
            .map(|s| Column::empty(s.dtype))
            .collect(),
        counts: vec![Vec::new(); n_specs],
    };
    let mut slots: Vec<Slot<'r>> = (0..n_specs).map(|_| Slot::Missing).collect();
    for (i, record) in records.enumerate() {
        parse_record(schema, record, &mut slots, &mut acc)
            .map_err(|e| e.with_record((first_index + i) as u64))?;
    }
    Ok(acc)
}

/// Batches with fewer record bytes than this are parsed on the calling thread.
pub const PARALLEL_MIN_BYTES: usize = 1 << 16;

/// The process that first used the thread pool. A forked child (a PyTorch DataLoader
/// worker, say) inherits the pool's state but not its threads, so it parses inline.
static POOL_OWNER: OnceLock<u32> = OnceLock::new();

pub(crate) fn pool_usable() -> bool {
    *POOL_OWNER.get_or_init(std::process::id) == std::process::id()
        && rayon::current_num_threads() > 1
}

/// Parses a batch of serialized Examples with `schema`.
///
/// Errors name the record's index within the batch and the feature key. Batches of more
/// than [`PARALLEL_MIN_BYTES`] are split across the thread pool.
pub fn parse_examples<T: AsRef<[u8]> + Sync>(
    schema: &Schema,
    records: &[T],
) -> Result<Vec<Parsed>> {
    let n = records.len();
    let bytes: usize = records.iter().map(|r| r.as_ref().len()).sum();
    let accs = if n >= 64 && bytes >= PARALLEL_MIN_BYTES && pool_usable() {
        let chunk = n.div_ceil(rayon::current_num_threads() * 2);
        records
            .par_chunks(chunk)
            .enumerate()
            .map(|(c, recs)| parse_run(schema, recs.iter().map(AsRef::as_ref), c * chunk))
            .collect::<Result<Vec<_>>>()?
    } else {
        vec![parse_run(schema, records.iter().map(AsRef::as_ref), 0)?]
    };
    Ok(assemble(schema, n, accs))
}

fn assemble(schema: &Schema, batch: usize, mut accs: Vec<Acc>) -> Vec<Parsed> {
    let mut out = Vec::with_capacity(schema.specs.len());
    for (i, spec) in schema.specs.iter().enumerate() {
        let mut values = if accs.len() == 1 {
            std::mem::replace(&mut accs[0].values[i], Column::empty(spec.dtype))
        } else {
            let mut all = Column::empty(spec.dtype);
            for a in &accs {
                all.extend(&a.values[i]);
            }
            all
        };
        let counts: Vec<usize> = accs
            .iter()
            .flat_map(|a| a.counts[i].iter().copied())
            .collect();
        let parsed = match &spec.kind {
            SpecKind::FixedLen { shape } => {
                let mut full = vec![batch];
                full.extend_from_slice(shape);
                Parsed {
                    values,
                    shape: full,
                    row_splits: None,
                }
            }
            SpecKind::VarLen => {
                let mut splits = Vec::with_capacity(batch + 1);
                let mut total = 0i64;
                splits.push(0);
                for c in &counts {
                    total += *c as i64;
                    splits.push(total);
                }
                Parsed {
                    shape: vec![values.len()],
                    values,
                    row_splits: Some(splits),
                }
            }
            SpecKind::FixedLenSequence { shape, .. } => {
                let stride = spec.stride().max(1);
                let rows: Vec<usize> = counts.iter().map(|c| c / stride).collect();
                let max_rows = rows.iter().copied().max().unwrap_or(0);
                let padding = spec.default.clone().unwrap_or_else(|| zero(spec.dtype));
                if rows.iter().any(|&r| r != max_rows) {
                    let mut padded = Column::empty(spec.dtype);
                    let mut pos = 0;
                    for &c in &counts {
                        padded.extend_range(&values, pos, pos + c);
                        pos += c;
                        padded.extend_cycled(&padding, max_rows * stride - c);
                    }
                    values = padded;
                }
                let mut full = vec![batch, max_rows];
                full.extend_from_slice(shape);
                Parsed {
                    values,
                    shape: full,
                    row_splits: None,
                }
            }
        };
        out.push(parsed);
    }
    out
}

fn zero(dtype: DType) -> Column {
    match dtype {
        DType::Int64 => Column::Int64(vec![0]),
        DType::Float32 => Column::Float32(vec![0.0]),
        DType::Bytes => Column::from_bytes(&[b""]),
    }
}
