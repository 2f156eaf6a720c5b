//! Schema-driven batch parsing of serialized Examples into columns, as `tf.io.parse_example`.
//!
//! Feature names are looked up once per schema; each record is scanned once, remembering
//! where each wanted feature's bytes are (the last occurrence of a key wins), and values are
//! decoded straight into per-feature columns. Large batches are split across threads.

use rustc_hash::FxHashMap;

use crate::assemble::{self, Assembled, Assembly};
pub use crate::column::{Column, DType, Parsed};
use crate::error::{Error, Result};
use crate::example::{read_float_list, read_int64_list, read_map_entry, EntryValue, Kind};
use crate::pool::{pool_usable, split_run};
use crate::wire::{self, WireReader};

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

/// The most values a `FixedLen` or `FixedLenSequence` shape may hold per Example: what a
/// serialized Example (under 2 GiB, as protobuf allows) could hold at most. Larger shapes
/// are refused by [`Schema::new`], so no schema's claim sizes an allocation past it.
pub const MAX_VALUES: usize = (1 << 31) - 1;

/// The most values one parse of a batch fills in that no record holds: defaults of missing
/// `FixedLen` features, and the padding of `FixedLenSequence` features to the longest
/// record's length. A schema's claim (a default) or one long record cannot make a batch
/// allocate past it; parse smaller batches to get more.
pub const MAX_FILL: usize = 1 << 28;

/// Values reserved up front per parsed column; a column that needs more grows as its
/// values arrive, so the reservation never exceeds what the records hold by much.
const RESERVE_CAP: usize = 1 << 24;

impl FeatureSpec {
    /// The entry for feature `key`: its `dtype`, `kind` and `default` (see the fields).
    pub fn new(key: &str, dtype: DType, kind: SpecKind, default: Option<Column>) -> FeatureSpec {
        FeatureSpec {
            key: key.into(),
            dtype,
            kind,
            default,
        }
    }

    /// `prod(shape)`, or None when it passes [`MAX_VALUES`].
    fn checked_stride(&self) -> Option<usize> {
        match &self.kind {
            SpecKind::FixedLen { shape } | SpecKind::FixedLenSequence { shape, .. } => shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d.max(1)))
                .filter(|&n| n <= MAX_VALUES)
                .map(|_| shape.iter().product()),
            SpecKind::VarLen => Some(1),
        }
    }

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
    /// Compact per-spec facts the per-record loops need, kept apart from the specs.
    plan: Vec<Plan>,
    /// All keys back to back; spec `i`'s key is `keys[plan[i].key]`.
    keys: Vec<u8>,
    /// How the schema's features are made from its columns; empty when every column is a
    /// feature of its own.
    assembly: Vec<Assembly>,
    /// Whether a `FixedLenSequence` comes out as a `VarLen` does, checked but not padded.
    unpadded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Fixed,
    /// A `FixedLen` that is null where an Example lacks it (or its list is empty).
    Nullable,
    Var,
    /// A `VarLen` that is null where an Example lacks it.
    NullableVar,
    Sequence {
        allow_missing: bool,
    },
}

#[derive(Debug, Clone)]
struct Plan {
    key: std::ops::Range<usize>,
    dtype: DType,
    shape: Shape,
    stride: usize,
}

impl Schema {
    pub fn new(specs: Vec<FeatureSpec>) -> Result<Schema> {
        let mut lookup = FxHashMap::default();
        for (i, spec) in specs.iter().enumerate() {
            if spec.checked_stride().is_none() {
                return Err(Error::schema(format!(
                    "feature {:?}: its shape holds more than the {MAX_VALUES} values an \
                     Example can hold",
                    spec.key
                ))
                .with_key(&spec.key));
            }
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
        let mut keys = Vec::new();
        let plan = specs
            .iter()
            .map(|spec| {
                let start = keys.len();
                keys.extend_from_slice(spec.key.as_bytes());
                Plan {
                    key: start..keys.len(),
                    dtype: spec.dtype,
                    shape: match spec.kind {
                        SpecKind::FixedLen { .. } => Shape::Fixed,
                        SpecKind::VarLen => Shape::Var,
                        SpecKind::FixedLenSequence { allow_missing, .. } => {
                            Shape::Sequence { allow_missing }
                        }
                    },
                    stride: spec.stride(),
                }
            })
            .collect();
        Ok(Schema {
            specs,
            lookup,
            plan,
            keys,
            assembly: Vec::new(),
            unpadded: false,
        })
    }

    /// The schema whose `FixedLenSequence` features come out as `VarLen` ones do (values
    /// and row splits, counted in values), each record's values checked as ever (present
    /// unless missing is allowed, a multiple of the shape) but not padded: what a reader
    /// of lists (Arrow) wants.
    pub fn unpadded(mut self) -> Schema {
        self.unpadded = true;
        self
    }

    /// The schema whose features `keys` are null where an Example lacks them, as Arrow's
    /// nullable columns have it: their [`Parsed::valid`] says which rows hold a value.
    /// A `FixedLen` one is null where its list is empty too, instead of an error, its
    /// values there zeros; any other number of values than its shape holds is still an
    /// error. A `VarLen` one is null only where missing: an empty list is a value. A key
    /// that is not a `FixedLen` or `VarLen` feature of the schema, or has a default, is
    /// refused.
    pub fn nullable<S: AsRef<str>>(mut self, keys: &[S]) -> Result<Schema> {
        for key in keys {
            let key = key.as_ref();
            let i = self
                .index_of(key.as_bytes())
                .ok_or_else(|| Error::invalid(format!("nullable feature {key:?} is not read")))?;
            let spec = &self.specs[i];
            if spec.default.is_some() {
                return Err(Error::invalid(format!(
                    "feature {key:?} has a default, which fills in where it is missing; a \
                     nullable feature is null there instead"
                )));
            }
            self.plan[i].shape = match spec.kind {
                SpecKind::FixedLen { .. } => Shape::Nullable,
                SpecKind::VarLen => Shape::NullableVar,
                SpecKind::FixedLenSequence { .. } => {
                    return Err(Error::invalid(format!(
                        "nullable features are FixedLen or VarLen ones; {key:?} is a \
                         FixedLenSequence"
                    )))
                }
            };
        }
        Ok(self)
    }

    /// The schema whose features are made from its columns as `assembly` says (sparse
    /// and ragged features read several columns); by default each column is a feature.
    pub fn with_assembly(mut self, assembly: Vec<Assembly>) -> Result<Schema> {
        for a in &assembly {
            a.check(self.specs.len())?;
        }
        self.assembly = assembly;
        Ok(self)
    }

    /// The features of a batch from its parsed `columns` (see [`assemble`]).
    pub fn assemble(&self, columns: &[Option<&Parsed>]) -> Result<Vec<Assembled>> {
        if self.assembly.is_empty() {
            return Ok((0..columns.len()).map(Assembled::Column).collect());
        }
        assemble::assemble(&self.assembly, columns)
    }

    pub fn specs(&self) -> &[FeatureSpec] {
        &self.specs
    }

    /// How features are made from the columns; empty when each column is a feature.
    pub fn assembly(&self) -> &[Assembly] {
        &self.assembly
    }

    #[inline(always)]
    fn key(&self, i: usize) -> &[u8] {
        &self.keys[self.plan[i].key.clone()]
    }

    #[inline]
    fn index_of(&self, key: &[u8]) -> Option<usize> {
        if self.specs.len() <= 4 {
            return self.specs.iter().position(|s| s.key.as_bytes() == key);
        }
        self.lookup.get(key).copied()
    }
}

/// Per-feature accumulators for a run of records.
struct Acc {
    values: Vec<Column>,
    /// Values per record, for VarLen and FixedLenSequence.
    counts: Vec<Vec<usize>>,
    /// Whether each record holds a value, for nullable features.
    valid: Vec<Vec<bool>>,
    /// Values filled in from defaults so far, bounded by [`MAX_FILL`].
    filled: usize,
}

/// The error for a batch that would fill in more than [`MAX_FILL`] values of `key`.
fn fill_error(key: &str, what: &str, values: usize) -> Error {
    Error::schema(format!(
        "feature {key:?}: {what} would fill in {values} values that no record holds, more \
         than the {MAX_FILL} a batch may; parse smaller batches"
    ))
    .with_key(key)
}

fn count_error(spec: &FeatureSpec, found: usize, expected: &str) -> Error {
    Error::schema(format!(
        "feature {:?} ({}) has {found} values; expected {expected}",
        spec.key,
        spec.dtype.name()
    ))
    .with_key(&spec.key)
}

/// The payload of a `Feature` that is exactly one list of the wanted kind holding one packed
/// (or, for bytes, one) value field: the shape every mainstream writer produces.
#[inline(always)]
fn packed_payload(buf: &[u8], want: Kind) -> Option<&[u8]> {
    let tag = (want as u8) << 3 | wire::LEN;
    // One-byte lengths: `tag n | 0a m payload`, the shape of nearly every short feature.
    if buf.len() >= 4
        && buf[0] == tag
        && buf[1] < 0x80
        && buf[1] as usize == buf.len() - 2
        && buf[2] == 0x0a
        && buf[3] < 0x80
        && buf[3] as usize == buf.len() - 4
    {
        return Some(&buf[4..]);
    }
    let (&first, rest) = buf.split_first()?;
    if first != tag {
        return None;
    }
    let mut r = WireReader::new(rest);
    let list = r.bytes().ok()?;
    if !r.is_empty() {
        return None;
    }
    let (&inner, rest) = list.split_first()?;
    if inner != 0x0a {
        return None;
    }
    let mut r = WireReader::new(rest);
    let payload = r.bytes().ok()?;
    r.is_empty().then_some(payload)
}

/// Decodes the lists of one `Feature` into `col`; returns the kind present (if any) and
/// how many values were appended. Values of a kind that a later list replaces are dropped.
#[inline(always)]
pub(crate) fn read_feature_into(
    buf: &[u8],
    dtype: DType,
    col: &mut Column,
) -> Result<(Option<Kind>, usize)> {
    if let Column::Bytes { data, ends, lead } = col {
        let lead = *lead;
        return read_bytes_feature(buf, dtype, &mut Packed { data, ends, lead });
    }
    let want = dtype.kind();
    if let Some(payload) = packed_payload(buf, want) {
        match col {
            Column::Float32(v) if payload.len() == 4 => {
                v.push(f32::from_le_bytes(payload.try_into().unwrap()));
                return Ok((Some(want), 1));
            }
            Column::Float32(v) if payload.len() % 4 == 0 => {
                wire::extend_f32_le(v, payload);
                return Ok((Some(want), payload.len() / 4));
            }
            Column::Int64(v) => {
                let before = v.len();
                wire::extend_varints(v, payload)?;
                return Ok((Some(want), v.len() - before));
            }
            _ => {}
        }
    }
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
            Column::Bytes { .. } => unreachable!("bytes columns are read above"),
        }
    }
    checked_kind(kind, dtype, col.len() - base)
}

fn checked_kind(kind: Option<Kind>, dtype: DType, n: usize) -> Result<(Option<Kind>, usize)> {
    match kind {
        Some(k) if k != dtype.kind() => Err(Error::schema(format!(
            "data types don't match: found {} but expected {}",
            k.name(),
            dtype.name()
        ))),
        _ => Ok((kind, n)),
    }
}

/// Where the values of a bytes feature go: packed into a bytes column, or (for the column
/// a large record was read into) noted as places in the record, moved into place after.
trait BytesOut {
    fn push(&mut self, value: &[u8]);
    fn count(&self) -> usize;
    fn truncate(&mut self, n: usize);
}

/// A bytes column's two vectors.
struct Packed<'a> {
    data: &'a mut Vec<u8>,
    ends: &'a mut Vec<usize>,
    lead: usize,
}

impl BytesOut for Packed<'_> {
    #[inline(always)]
    fn push(&mut self, value: &[u8]) {
        self.data.extend_from_slice(value);
        self.ends.push(self.data.len());
    }

    #[inline(always)]
    fn count(&self) -> usize {
        self.ends.len()
    }

    fn truncate(&mut self, n: usize) {
        self.ends.truncate(n);
        self.data
            .truncate(self.ends.last().copied().unwrap_or(self.lead));
    }
}

/// [`read_feature_into`] for a bytes feature whose values go to `out`.
#[inline(always)]
fn read_bytes_feature(
    buf: &[u8],
    dtype: DType,
    out: &mut impl BytesOut,
) -> Result<(Option<Kind>, usize)> {
    let want = dtype.kind();
    if let Some(payload) = packed_payload(buf, want) {
        out.push(payload);
        return Ok((Some(want), 1));
    }
    // The walk of `read_feature_into`, written out again: sharing it through a closure
    // made the parsing of small Examples 4% slower.
    let base = out.count();
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
            out.truncate(base);
            kind = Some(k);
        }
        if k == want {
            crate::example::read_bytes_list(list, |b| out.push(b))?;
        }
    }
    checked_kind(kind, dtype, out.count() - base)
}

/// Key order seen in the previous record: entry `p` had spec `order[p]` (or none).
/// Writers emit features in a fixed order, so checking the predicted key first replaces
/// most hash lookups by one comparison.
struct KeyOrder {
    order: Vec<u32>,
}

const NO_SPEC: u32 = u32::MAX;

impl KeyOrder {
    #[inline(always)]
    fn find(&mut self, schema: &Schema, pos: usize, key: &[u8]) -> Option<usize> {
        if let Some(&guess) = self.order.get(pos) {
            if guess != NO_SPEC && schema.key(guess as usize) == key {
                return Some(guess as usize);
            }
        }
        self.learn(schema, pos, key)
    }

    #[cold]
    fn learn(&mut self, schema: &Schema, pos: usize, key: &[u8]) -> Option<usize> {
        let found = schema.index_of(key);
        let code = found.map_or(NO_SPEC, |i| i as u32);
        if pos < self.order.len() {
            self.order[pos] = code;
        } else if pos == self.order.len() && pos < 4096 {
            self.order.push(code);
        }
        found
    }
}

/// What one record held for one spec.
#[derive(Clone, Copy)]
struct Seen {
    /// The record in which the spec was last seen (`RecordState::record` means this one).
    record: u64,
    /// Column length before this record's values.
    start: usize,
    count: usize,
    kind: Option<Kind>,
    /// The key's entry carried a value (an entry may hold only the key).
    has_value: bool,
    failed: bool,
}

/// Per-spec state for the record being parsed, reused from record to record.
struct RecordState {
    record: u64,
    seen: Vec<Seen>,
    /// Errors of failed features, reported unless a later duplicate key replaces them.
    errors: Vec<Option<Error>>,
}

impl RecordState {
    fn new(n: usize) -> Self {
        let blank = Seen {
            record: u64::MAX,
            start: 0,
            count: 0,
            kind: None,
            has_value: false,
            failed: false,
        };
        RecordState {
            record: 0,
            seen: vec![blank; n],
            errors: (0..n).map(|_| None).collect(),
        }
    }
}

/// Decodes one map entry's value for spec `i` straight into its column. A key seen
/// before in the same record replaces what its earlier entry added (the last one wins).
#[inline(always)]
fn take_entry(
    schema: &Schema,
    i: usize,
    value: Option<&[u8]>,
    st: &mut RecordState,
    col: &mut impl Values,
) {
    let s = &mut st.seen[i];
    if s.record == st.record {
        col.truncate(s.start);
        if s.failed {
            st.errors[i] = None;
        }
    } else {
        s.record = st.record;
        s.start = col.len();
    }
    s.has_value = value.is_some();
    s.failed = false;
    let result = match value {
        Some(b) => col.read(b, schema.plan[i].dtype),
        None => Ok((None, 0)),
    };
    match result {
        Ok((kind, n)) => {
            s.kind = kind;
            s.count = n;
        }
        Err(e) => {
            col.truncate(s.start);
            s.kind = None;
            s.count = 0;
            s.failed = true;
            st.errors[i] = Some(e.in_feature(&schema.specs[i].key));
        }
    }
}

/// What [`take_entry`] decodes one spec's values into.
trait Values {
    fn len(&self) -> usize;
    fn truncate(&mut self, n: usize);
    fn read(&mut self, feature: &[u8], dtype: DType) -> Result<(Option<Kind>, usize)>;
}

impl Values for Column {
    #[inline(always)]
    fn len(&self) -> usize {
        Column::len(self)
    }

    fn truncate(&mut self, n: usize) {
        Column::truncate(self, n)
    }

    #[inline(always)]
    fn read(&mut self, feature: &[u8], dtype: DType) -> Result<(Option<Kind>, usize)> {
        read_feature_into(feature, dtype, self)
    }
}

/// A column's first value stays where a large record was read only if the record's bytes
/// before it, kept as the column's lead, are at most this share of it.
const LEAD_SHARE: usize = 4;

/// The spec whose values stay where they are in the record, if any: the bytes column a
/// large record was read into ([`ExampleParser::push_hosted`]).
trait Host {
    fn slot(&mut self, i: usize) -> Option<&mut InRecord>;
}

impl Host for () {
    #[inline(always)]
    fn slot(&mut self, _: usize) -> Option<&mut InRecord> {
        None
    }
}

/// Where one record's values of its host spec are: ranges of the record, or (for a
/// `Feature` split over several entries, joined before it is read) bytes of their own.
struct InRecord {
    spec: usize,
    record: std::ops::Range<usize>,
    places: Vec<Place>,
}

enum Place {
    /// Offset in the record and length.
    Record(usize, usize),
    Own(Vec<u8>),
}

impl Place {
    fn len(&self) -> usize {
        match self {
            Place::Record(_, n) => *n,
            Place::Own(v) => v.len(),
        }
    }
}

impl Host for InRecord {
    #[inline(always)]
    fn slot(&mut self, i: usize) -> Option<&mut InRecord> {
        (i == self.spec).then_some(self)
    }
}

impl BytesOut for InRecord {
    fn push(&mut self, value: &[u8]) {
        let at = value.as_ptr() as usize;
        if self.record.start <= at && at + value.len() <= self.record.end {
            let offset = at - self.record.start;
            self.places.push(Place::Record(offset, value.len()));
        } else {
            self.places.push(Place::Own(value.to_vec()));
        }
    }

    fn count(&self) -> usize {
        self.places.len()
    }

    fn truncate(&mut self, n: usize) {
        self.places.truncate(n);
    }
}

impl Values for InRecord {
    fn len(&self) -> usize {
        self.places.len()
    }

    fn truncate(&mut self, n: usize) {
        self.places.truncate(n);
    }

    fn read(&mut self, feature: &[u8], dtype: DType) -> Result<(Option<Kind>, usize)> {
        read_bytes_feature(feature, dtype, self)
    }
}

/// Scans one Example's entries, decoding the wanted features into their columns (those
/// of `host`'s spec into `host`).
fn scan(
    schema: &Schema,
    record: &[u8],
    st: &mut RecordState,
    order: &mut KeyOrder,
    acc: &mut Acc,
    host: &mut impl Host,
) -> Result<()> {
    let mut pos = 0;
    let mut r = WireReader::new(record);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if field != 1 || wt != wire::LEN {
            r.skip(field, wt)?;
            continue;
        }
        let fb = r.bytes()?;
        let mut at = 0;
        while at < fb.len() {
            // Fast path: `0a n | 0a k key 12 v value` with one-byte lengths throughout.
            if let Some((key, value, next)) = short_entry(fb, at) {
                // Keys the schema does not ask for are skipped unread, as TensorFlow does,
                // even when they are not valid UTF-8.
                if let Some(i) = order.find(schema, pos, key) {
                    match host.slot(i) {
                        Some(h) => take_entry(schema, i, Some(value), st, h),
                        None => take_entry(schema, i, Some(value), st, &mut acc.values[i]),
                    }
                }
                at = next;
                pos += 1;
                continue;
            }
            let mut features = WireReader::new(&fb[at..]);
            let (f, w) = features.tag()?;
            if f != 1 || w != wire::LEN {
                features.skip(f, w)?;
                at += features.pos();
                continue;
            }
            let entry = features.bytes()?;
            at += features.pos();
            let (key, value) = read_map_entry(entry)?;
            if let Some(i) = order.find(schema, pos, key) {
                let joined;
                let value = match value {
                    EntryValue::Absent => None,
                    EntryValue::One(b) => Some(b),
                    EntryValue::Many(parts) => {
                        joined = parts.concat();
                        Some(&joined[..])
                    }
                };
                match host.slot(i) {
                    Some(h) => take_entry(schema, i, value, st, h),
                    None => take_entry(schema, i, value, st, &mut acc.values[i]),
                }
            }
            pos += 1;
        }
    }
    Ok(())
}

/// A map entry at `fb[at..]` in its most common encoding, all lengths one byte:
/// `0a n | 0a k key | 12 v value`. Returns the key, the value and where the next entry
/// starts; `None` sends the caller down the general path.
#[inline(always)]
fn short_entry(fb: &[u8], at: usize) -> Option<(&[u8], &[u8], usize)> {
    let head = fb.get(at..at + 4)?;
    let (n, k) = (head[1] as usize, head[3] as usize);
    if head[0] != 0x0a || head[1] >= 0x80 || head[2] != 0x0a || head[3] >= 0x80 {
        return None;
    }
    let end = at + 2 + n;
    let entry = fb.get(at + 2..end)?;
    // entry = 0a k key 12 v value
    let rest = entry.get(2 + k..)?;
    if rest.len() < 2 || rest[0] != 0x12 || rest[1] >= 0x80 || rest[1] as usize != rest.len() - 2 {
        return None;
    }
    Some((&entry[2..2 + k], &rest[2..], end))
}

fn missing_error(spec: &FeatureSpec, hint: &str) -> Error {
    Error::schema(format!(
        "feature {:?} ({}) is required but could not be found{hint}",
        spec.key,
        spec.dtype.name()
    ))
    .with_key(&spec.key)
}

fn parse_record(
    schema: &Schema,
    record: &[u8],
    st: &mut RecordState,
    order: &mut KeyOrder,
    acc: &mut Acc,
) -> Result<()> {
    st.record += 1;
    scan(schema, record, st, order, acc, &mut ())?;
    finish_record(schema, st, acc)
}

/// Checks what a scanned record held of each spec against its shape, filling in defaults
/// and noting counts.
fn finish_record(schema: &Schema, st: &mut RecordState, acc: &mut Acc) -> Result<()> {
    for (i, plan) in schema.plan.iter().enumerate() {
        let s = st.seen[i];
        let (kind, n, has_value) = if s.record == st.record {
            if s.failed {
                if let Some(e) = st.errors[i].take() {
                    return Err(e);
                }
            }
            (s.kind, s.count, s.has_value)
        } else {
            (None, 0, false)
        };
        let stride = plan.stride;
        match plan.shape {
            Shape::Nullable => {
                let present = kind.is_some() && (n != 0 || stride == 0);
                if present && n != stride {
                    let expected = format!("{stride}, or none for a null");
                    return Err(count_error(&schema.specs[i], n, &expected));
                }
                if !present {
                    let spec = &schema.specs[i];
                    acc.filled = acc.filled.saturating_add(stride);
                    if acc.filled > MAX_FILL || acc.values[i].try_reserve(stride).is_err() {
                        return Err(fill_error(&spec.key, "its nulls", acc.filled));
                    }
                    acc.values[i].push_zeros(stride);
                }
                acc.valid[i].push(present);
            }
            Shape::Fixed => {
                if kind.is_none() {
                    let spec = &schema.specs[i];
                    match &spec.default {
                        Some(d) => {
                            acc.filled = acc.filled.saturating_add(stride);
                            if acc.filled > MAX_FILL {
                                return Err(fill_error(&spec.key, "its default", acc.filled));
                            }
                            if acc.values[i].try_reserve(stride).is_err() {
                                return Err(fill_error(&spec.key, "its default", acc.filled));
                            }
                            acc.values[i].extend_cycled(d, stride)
                        }
                        None => return Err(missing_error(spec, "")),
                    }
                } else if n != stride {
                    return Err(count_error(&schema.specs[i], n, &stride.to_string()));
                }
            }
            Shape::Var => acc.counts[i].push(n),
            Shape::NullableVar => {
                acc.counts[i].push(n);
                // Present, even as a `Feature` with no list of any kind: an empty one.
                acc.valid[i].push(s.record == st.record);
            }
            Shape::Sequence { allow_missing } => {
                if !has_value && !allow_missing {
                    return Err(missing_error(
                        &schema.specs[i],
                        " (use allow_missing=True to pad missing features)",
                    ));
                }
                let misfit = if stride == 0 { n != 0 } else { n % stride != 0 };
                if misfit {
                    let expected = format!("a multiple of {stride}");
                    return Err(count_error(&schema.specs[i], n, &expected));
                }
                acc.counts[i].push(n);
            }
        }
    }
    Ok(())
}

fn parse_run<'r, I>(schema: &Schema, records: I, first_index: usize) -> Result<Acc>
where
    I: ExactSizeIterator<Item = &'r [u8]>,
{
    let mut parser = ExampleParser::new(schema, records.len());
    parser.first_index = first_index;
    for record in records {
        parser.push(record)?;
    }
    Ok(parser.acc)
}

/// Parses Examples handed over one at a time into a batch's columns, for a reader that
/// reads each record into one buffer and parses it while it is still in cache, instead
/// of gathering the batch's records first.
pub struct ExampleParser<'s> {
    schema: &'s Schema,
    acc: Acc,
    state: RecordState,
    order: KeyOrder,
    records: usize,
    first_index: usize,
    /// The bytes column the next large record is read into, while it is there.
    hosting: Option<usize>,
    /// The bytes column to read a large record into while none holds anything yet.
    first_host: Option<usize>,
    places: Vec<Place>,
}

impl<'s> ExampleParser<'s> {
    /// A parser with room for about `records` records.
    pub fn new(schema: &'s Schema, records: usize) -> Self {
        let acc = Acc {
            values: schema
                .specs
                .iter()
                .map(|s| {
                    let wanted = records.saturating_mul(s.stride().max(1));
                    Column::with_capacity(s.dtype, wanted.min(RESERVE_CAP))
                })
                .collect(),
            counts: schema
                .plan
                .iter()
                .map(|p| match p.shape {
                    Shape::Fixed | Shape::Nullable => Vec::new(),
                    _ => Vec::with_capacity(records.min(RESERVE_CAP)),
                })
                .collect(),
            valid: schema
                .plan
                .iter()
                .map(|p| match p.shape {
                    Shape::Nullable | Shape::NullableVar => {
                        Vec::with_capacity(records.min(RESERVE_CAP))
                    }
                    _ => Vec::new(),
                })
                .collect(),
            filled: 0,
        };
        ExampleParser {
            schema,
            acc,
            state: RecordState::new(schema.specs.len()),
            order: KeyOrder { order: Vec::new() },
            records: 0,
            first_index: 0,
            hosting: None,
            first_host: None,
            places: Vec::new(),
        }
    }

    /// Reads the first large record into bytes column `spec` (one that
    /// [`ExampleParser::fullest_bytes_column`] named for the batch before, say), where
    /// that record's value most likely belongs, rather than into the schema's first.
    pub fn prefer_host(&mut self, spec: Option<usize>) {
        self.first_host =
            spec.filter(|&i| matches!(self.acc.values.get(i), Some(Column::Bytes { .. })));
    }

    /// The bytes column holding the most bytes so far, if any holds any.
    pub fn fullest_bytes_column(&self) -> Option<usize> {
        self.host_spec().filter(|&i| match &self.acc.values[i] {
            Column::Bytes { data, .. } => !data.is_empty(),
            _ => false,
        })
    }

    /// Room for `bytes` more bytes of values in each bytes column, so that large values
    /// are copied in once rather than again each time a column doubles.
    pub fn reserve_bytes(&mut self, bytes: usize) {
        for column in &mut self.acc.values {
            if let Column::Bytes { data, .. } = column {
                // A hint: where the memory cannot be had, the column grows as values come.
                let _ = data.try_reserve(bytes);
            }
        }
    }

    /// Parses the next record; an error names its index among the records pushed.
    pub fn push(&mut self, record: &[u8]) -> Result<()> {
        let index = self.first_index + self.records;
        parse_record(
            self.schema,
            record,
            &mut self.state,
            &mut self.order,
            &mut self.acc,
        )
        .map_err(|e| e.with_record(index as u64))?;
        self.records += 1;
        Ok(())
    }

    /// Room for a record of `len` bytes at the end of a bytes column (the one holding the
    /// most so far), for the reader to read it straight into; the record is then parsed
    /// there by [`ExampleParser::push_hosted`], which moves that column's values down over
    /// it, so that they are copied once from the file and again only within the cache.
    /// A column with no value yet takes a record of any size, as it keeps the record's
    /// first value where it was read (where the bytes before it are few, see
    /// `push_hosted`); another takes one of at most `limit` bytes. `None` otherwise, when
    /// the schema has no bytes column, or the memory cannot be had.
    pub(crate) fn host(&mut self, len: usize, limit: usize) -> Option<&mut [u8]> {
        if self.hosts_next(len, limit) {
            return None;
        }
        let spec = self.host_spec()?;
        let Column::Bytes { data, .. } = &mut self.acc.values[spec] else {
            unreachable!("a bytes column")
        };
        data.try_reserve(len).ok()?;
        self.hosting = Some(spec);
        let start = data.len();
        // SAFETY: `try_reserve` made room for `len` more bytes past `start`; the reader
        // only writes them, and `push_hosted` counts them in only once they all were.
        Some(unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().add(start), len) })
    }

    /// The bytes column [`ExampleParser::host`] reads a record into: the one holding the
    /// most so far (while none holds any, the one [`ExampleParser::prefer_host`] named,
    /// or else the first).
    fn host_spec(&self) -> Option<usize> {
        let (spec, held) = self
            .acc
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match c {
                Column::Bytes { data, .. } => Some((i, data.len())),
                _ => None,
            })
            .rev()
            .max_by_key(|&(_, held)| held)?;
        Some(if held == 0 {
            self.first_host.unwrap_or(spec)
        } else {
            spec
        })
    }

    /// Whether a record of `len` bytes is better read at the start of the next batch:
    /// [`ExampleParser::host`] would not read it into a column here, and would there.
    pub(crate) fn hosts_next(&self, len: usize, limit: usize) -> bool {
        len > limit
            && self
                .host_spec()
                .is_some_and(|spec| !self.acc.values[spec].is_empty())
    }

    /// The record [`ExampleParser::host`] gave room for was not read: drops it.
    pub(crate) fn unhost(&mut self) {
        self.hosting = None;
    }

    /// Parses the record of `len` bytes read into the room [`ExampleParser::host`]
    /// last gave, as [`ExampleParser::push`] would.
    ///
    /// # Safety
    /// All `len` bytes of that room were written.
    pub(crate) unsafe fn push_hosted(&mut self, len: usize) -> Result<()> {
        let spec = self.hosting.take().expect("a record read into a column");
        let index = self.first_index + self.records;
        let Column::Bytes { data, .. } = &mut self.acc.values[spec] else {
            unreachable!("hosted by a bytes column")
        };
        let mut buf = std::mem::take(data);
        let at = buf.len();
        // SAFETY: the caller wrote the `len` bytes past `at`, reserved in `host`.
        unsafe { buf.set_len(at + len) };
        let record = &buf[at..];
        let mut host = InRecord {
            spec,
            record: record.as_ptr_range().start as usize..record.as_ptr_range().end as usize,
            places: std::mem::take(&mut self.places),
        };
        self.state.record += 1;
        let scanned = scan(
            self.schema,
            record,
            &mut self.state,
            &mut self.order,
            &mut self.acc,
            &mut host,
        );
        let Column::Bytes { data, ends, lead } = &mut self.acc.values[spec] else {
            unreachable!("hosted by a bytes column")
        };
        // Each value moves down to where the column ends: never past the record bytes
        // still to move, which come after the bytes that made the values before. The
        // first value of a column stays where it is, the record's bytes before it left
        // as the column's lead, where they are few beside it: the lead is memory the
        // column keeps, and bytes of the record its caller never asked for.
        let mut end = at;
        if scanned.is_ok() {
            let mut places = host.places.drain(..).peekable();
            let stays = match places.peek() {
                Some(&Place::Record(offset, n)) if ends.is_empty() && offset <= n / LEAD_SHARE => {
                    Some((offset, n))
                }
                _ => None,
            };
            if let Some((offset, n)) = stays {
                places.next();
                *lead = at + offset;
                end = *lead + n;
                ends.push(end);
            }
            for place in places {
                let n = place.len();
                match place {
                    Place::Record(offset, _) => buf.copy_within(at + offset..at + offset + n, end),
                    Place::Own(v) => buf[end..end + n].copy_from_slice(&v),
                }
                end += n;
                ends.push(end);
            }
        }
        buf.truncate(end);
        *data = buf;
        host.places.clear();
        self.places = host.places;
        scanned
            .and_then(|()| finish_record(self.schema, &mut self.state, &mut self.acc))
            .map_err(|e| e.with_record(index as u64))?;
        self.records += 1;
        Ok(())
    }

    /// The records parsed so far.
    pub fn len(&self) -> usize {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The batch's features, as [`parse_examples`] gives them; bytes columns hold no more
    /// room than their values (what [`ExampleParser::reserve_bytes`] left over goes back).
    pub fn finish(mut self) -> Result<Vec<Parsed>> {
        for column in &mut self.acc.values {
            if let Column::Bytes { data, .. } = column {
                data.shrink_to_fit();
            }
        }
        assemble(self.schema, self.records, vec![self.acc])
    }
}

/// Batches are split across the thread pool only when there is at least this much work,
/// counted as records × schema features (about a millisecond), or this many bytes: waking
/// the pool costs more than it saves on smaller batches. (1,024 Examples of a bag of 30
/// ids and weights, 400 KiB, parse x1.03 faster unsplit; 4,096 of them x1.06 faster split.)
pub const PARALLEL_MIN_CELLS: usize = 50_000;
pub const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// Parses a batch of serialized Examples with `schema`.
///
/// Errors name the record's index within the batch and the feature key. Large batches
/// are split across the thread pool.
pub fn parse_examples<T: AsRef<[u8]> + Sync>(
    schema: &Schema,
    records: &[T],
) -> Result<Vec<Parsed>> {
    let n = records.len();
    let bytes: usize = records.iter().map(|r| r.as_ref().len()).sum();
    crate::memory::keep_freed_buffers_for(bytes);
    let cells = n.saturating_mul(schema.specs.len());
    let big = cells >= PARALLEL_MIN_CELLS || bytes >= PARALLEL_MIN_BYTES;
    let accs = if n >= 64 && big && pool_usable() {
        split_run(n, |part| {
            let start = part.start;
            parse_run(schema, records[part].iter().map(AsRef::as_ref), start)
        })
        .into_iter()
        .collect::<Result<Vec<_>>>()?
    } else {
        vec![parse_run(schema, records.iter().map(AsRef::as_ref), 0)?]
    };
    assemble(schema, n, accs)
}

fn assemble(schema: &Schema, batch: usize, mut accs: Vec<Acc>) -> Result<Vec<Parsed>> {
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
        let nullable = matches!(schema.plan[i].shape, Shape::Nullable | Shape::NullableVar);
        let valid = nullable.then(|| match accs.as_mut_slice() {
            [only] => std::mem::take(&mut only.valid[i]),
            all => all
                .iter()
                .flat_map(|a| a.valid[i].iter().copied())
                .collect(),
        });
        let kind = match spec.kind {
            SpecKind::FixedLenSequence { .. } if schema.unpadded => &SpecKind::VarLen,
            ref kind => kind,
        };
        let parsed = match kind {
            SpecKind::FixedLen { shape } => {
                let mut full = vec![batch];
                full.extend_from_slice(shape);
                Parsed {
                    values,
                    shape: full,
                    row_splits: None,
                    valid,
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
                    valid,
                }
            }
            SpecKind::FixedLenSequence { shape, .. } => {
                let stride = spec.stride().max(1);
                let rows: Vec<usize> = counts.iter().map(|c| c / stride).collect();
                let max_rows = rows.iter().copied().max().unwrap_or(0);
                let padding = spec.default.clone().unwrap_or_else(|| zero(spec.dtype));
                if rows.iter().any(|&r| r != max_rows) {
                    let total = batch.saturating_mul(max_rows).saturating_mul(stride);
                    let filled = total - values.len().min(total);
                    if filled > MAX_FILL {
                        let what = "padding to the longest record";
                        return Err(fill_error(&spec.key, what, filled));
                    }
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
                    valid: None,
                }
            }
        };
        out.push(parsed);
    }
    Ok(out)
}

fn zero(dtype: DType) -> Column {
    match dtype {
        DType::Int64 => Column::Int64(vec![0]),
        DType::Float32 => Column::Float32(vec![0.0]),
        DType::Bytes => Column::from_bytes(&[b""]),
    }
}
