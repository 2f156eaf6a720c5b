//! Columns of values of one dtype, as a batch parse lays them out: defaults, parsed
//! features, and the columns that composite features are assembled from.

use crate::example::Kind;

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

/// A list of values of one dtype: defaults, and parsed columns. Two columns are equal
/// when their values are, however their bytes are laid out.
#[derive(Debug, Clone)]
pub enum Column {
    Int64(Vec<i64>),
    Float32(Vec<f32>),
    /// Values packed back to back; value `i` is `data[ends[i-1]..ends[i]]`, value 0
    /// beginning at `lead`. The bytes before it are no value: a large record parsed where
    /// it was read leaves its first bytes there, rather than moving its value down.
    Bytes {
        data: Vec<u8>,
        ends: Vec<usize>,
        lead: usize,
    },
}

impl PartialEq for Column {
    fn eq(&self, other: &Column) -> bool {
        match (self, other) {
            (Column::Int64(a), Column::Int64(b)) => a == b,
            (Column::Float32(a), Column::Float32(b)) => a == b,
            (Column::Bytes { .. }, Column::Bytes { .. }) => {
                self.len() == other.len()
                    && (0..self.len()).all(|i| self.bytes_at(i) == other.bytes_at(i))
            }
            _ => false,
        }
    }
}

impl Column {
    pub fn empty(dtype: DType) -> Column {
        match dtype {
            DType::Int64 => Column::Int64(Vec::new()),
            DType::Float32 => Column::Float32(Vec::new()),
            DType::Bytes => Column::Bytes {
                data: Vec::new(),
                ends: Vec::new(),
                lead: 0,
            },
        }
    }

    /// An empty column with room for `n` values.
    pub fn with_capacity(dtype: DType, n: usize) -> Column {
        match dtype {
            DType::Int64 => Column::Int64(Vec::with_capacity(n)),
            DType::Float32 => Column::Float32(Vec::with_capacity(n)),
            DType::Bytes => Column::Bytes {
                data: Vec::new(),
                ends: Vec::with_capacity(n),
                lead: 0,
            },
        }
    }

    /// Room for `n` more values (bytes values: their entries), or an error where the
    /// memory cannot be had: an allocation a schema sizes never aborts the process.
    pub(crate) fn try_reserve(
        &mut self,
        n: usize,
    ) -> std::result::Result<(), std::collections::TryReserveError> {
        match self {
            Column::Int64(v) => v.try_reserve(n),
            Column::Float32(v) => v.try_reserve(n),
            Column::Bytes { ends, .. } => ends.try_reserve(n),
        }
    }

    /// Appends `n` zeros (empty values, for bytes).
    pub(crate) fn push_zeros(&mut self, n: usize) {
        match self {
            Column::Int64(v) => v.resize(v.len() + n, 0),
            Column::Float32(v) => v.resize(v.len() + n, 0.0),
            Column::Bytes { data, ends, .. } => ends.resize(ends.len() + n, data.len()),
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

    pub(crate) fn push_bytes(&mut self, b: &[u8]) {
        if let Column::Bytes { data, ends, .. } = self {
            data.extend_from_slice(b);
            ends.push(data.len());
        }
    }

    /// Value `i` of a bytes column.
    pub fn bytes_at(&self, i: usize) -> &[u8] {
        match self {
            Column::Bytes { data, ends, lead } => {
                let start = if i == 0 { *lead } else { ends[i - 1] };
                &data[start..ends[i]]
            }
            _ => &[],
        }
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        match self {
            Column::Int64(v) => v.truncate(n),
            Column::Float32(v) => v.truncate(n),
            Column::Bytes { data, ends, lead } => {
                ends.truncate(n);
                data.truncate(ends.last().copied().unwrap_or(*lead));
            }
        }
    }

    /// The values at `order`, in that order.
    pub fn gather(&self, order: &[usize]) -> Column {
        match self {
            Column::Int64(v) => Column::Int64(order.iter().map(|&i| v[i]).collect()),
            Column::Float32(v) => Column::Float32(order.iter().map(|&i| v[i]).collect()),
            Column::Bytes { .. } => {
                let mut out = Column::Bytes {
                    data: Vec::new(),
                    ends: Vec::with_capacity(order.len()),
                    lead: 0,
                };
                for &i in order {
                    out.push_bytes(self.bytes_at(i));
                }
                out
            }
        }
    }

    /// Appends `other` entirely.
    pub(crate) fn extend(&mut self, other: &Column) {
        self.extend_range(other, 0, other.len());
    }

    /// Appends values `from..to` of `other` (same dtype).
    pub(crate) fn extend_range(&mut self, other: &Column, from: usize, to: usize) {
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
    pub(crate) fn extend_cycled(&mut self, other: &Column, n: usize) {
        let len = other.len();
        if len == 0 {
            return;
        }
        for i in 0..n {
            self.extend_range(other, i % len, i % len + 1);
        }
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
    /// A nullable feature only (see [`crate::Schema::nullable`]): whether row `i` holds
    /// a value; a null `FixedLen` row's values are zeros, a null `VarLen` row has none.
    pub valid: Option<Vec<bool>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` after `lead` bytes that are no value.
    fn led(lead: &[u8], values: &[&[u8]]) -> Column {
        let mut data = lead.to_vec();
        let mut ends = Vec::new();
        for v in values {
            data.extend_from_slice(v);
            ends.push(data.len());
        }
        Column::Bytes {
            data,
            ends,
            lead: lead.len(),
        }
    }

    #[test]
    fn a_lead_is_no_value() {
        let col = led(b"junk", &[b"ab", b"", b"c"]);
        assert_eq!(col.len(), 3);
        assert_eq!(col.bytes_at(0), b"ab");
        assert_eq!(col.bytes_at(1), b"");
        assert_eq!(col.bytes_at(2), b"c");
        // Columns are equal by their values, whatever their layout.
        assert_eq!(col, Column::from_bytes(&[b"ab" as &[u8], b"", b"c"]));
        assert_ne!(col, Column::from_bytes(&[b"ab" as &[u8], b"c"]));
        assert_eq!(
            col.gather(&[2, 0]),
            Column::from_bytes(&[b"c" as &[u8], b"ab"])
        );
    }

    #[test]
    fn truncating_keeps_the_lead() {
        let mut col = led(b"junk", &[b"ab", b"c"]);
        col.truncate(1);
        assert_eq!(col, Column::from_bytes(&[b"ab"]));
        col.truncate(0);
        col.push_bytes(b"new");
        assert_eq!(col, Column::from_bytes(&[b"new"]));
        let Column::Bytes { data, lead, .. } = &col else {
            unreachable!()
        };
        assert_eq!((data.as_slice(), *lead), (b"junknew" as &[u8], 4));
    }
}
