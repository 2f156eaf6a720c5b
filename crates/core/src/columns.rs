//! Encoding columns straight into framed Example records, without a per-row object.

use std::ops::Range;

use rayon::prelude::*;

use crate::crc::masked_crc32c;
use crate::error::{Error, Result};
use crate::wire::{self, len_field_size, put_tag, put_varint, varint_len};

/// The values of a column, all rows back to back.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    Int64(&'a [i64]),
    Float32(&'a [f32]),
    Bytes(&'a [&'a [u8]]),
    /// Bytes values packed back to back, as Arrow lays out a binary column: value `j` is
    /// `data[offsets[j]..offsets[j + 1]]`.
    Packed {
        data: &'a [u8],
        offsets: &'a [i64],
    },
}

impl Values<'_> {
    fn len(&self) -> usize {
        match self {
            Values::Int64(v) => v.len(),
            Values::Float32(v) => v.len(),
            Values::Bytes(v) => v.len(),
            Values::Packed { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// Whether every packed value lies inside the buffer; other values always do.
    fn in_bounds(&self) -> bool {
        match self {
            Values::Packed { data, offsets } => {
                !offsets.is_empty()
                    && offsets[0] >= 0
                    && offsets.windows(2).all(|p| p[0] <= p[1])
                    && offsets
                        .last()
                        .is_some_and(|&l| l as u64 <= data.len() as u64)
            }
            _ => true,
        }
    }
}

/// Packed bytes value `j` (the offsets are checked by [`ColumnRef::check`]).
#[inline]
fn packed<'a>(data: &'a [u8], offsets: &[i64], j: usize) -> &'a [u8] {
    &data[offsets[j] as usize..offsets[j + 1] as usize]
}

/// Which values belong to which row.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    /// Row `i` holds values `i*width..(i+1)*width`.
    Fixed(usize),
    /// Row `i` holds values `offsets[i]..offsets[i+1]`.
    Ragged(&'a [i64]),
}

/// One column of a table.
#[derive(Debug, Clone, Copy)]
pub struct ColumnRef<'a> {
    pub values: Values<'a>,
    pub rows: Rows<'a>,
    /// `valid[i] == 0` leaves the feature out of row `i` (a null).
    pub valid: Option<&'a [u8]>,
}

impl<'a> ColumnRef<'a> {
    /// One value (or `width` values) per row, no nulls.
    pub fn fixed(values: Values<'a>, width: usize) -> Self {
        ColumnRef {
            values,
            rows: Rows::Fixed(width),
            valid: None,
        }
    }

    /// Checks that the column describes `n` rows, so encoding can index without failing.
    pub fn check(&self, name: &str, n: usize) -> Result<()> {
        let have = self.values.len();
        let fits = match self.rows {
            Rows::Fixed(w) => w.checked_mul(n) == Some(have),
            Rows::Ragged(off) => {
                off.len() == n + 1
                    && off.first() == Some(&0)
                    && off.windows(2).all(|p| p[0] <= p[1])
                    && off.last().map(|&l| l as usize) == Some(have)
            }
        };
        if !self.values.in_bounds() {
            return Err(Error::invalid(format!(
                "column {name:?}: its value offsets do not lie in order inside its data"
            )));
        }
        let valid_ok = self.valid.is_none_or(|v| v.len() == n);
        if fits && valid_ok {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "column {name:?} does not describe {n} rows ({have} values)"
            )))
        }
    }

    #[inline]
    fn range(&self, i: usize) -> Range<usize> {
        match self.rows {
            Rows::Fixed(w) => i * w..(i + 1) * w,
            Rows::Ragged(off) => off[i] as usize..off[i + 1] as usize,
        }
    }

    #[inline]
    fn present(&self, i: usize) -> bool {
        self.valid.is_none_or(|v| v[i] != 0)
    }

    /// The `Feature` kind field and the size of the list message of row `i`.
    #[inline]
    fn list_len(&self, i: usize) -> (u32, usize) {
        let r = self.range(i);
        match self.values {
            Values::Int64(v) => {
                let packed: usize = v[r].iter().map(|&x| varint_len(x as u64)).sum();
                (
                    3,
                    if packed == 0 {
                        0
                    } else {
                        len_field_size(packed)
                    },
                )
            }
            Values::Float32(_) => (
                2,
                if r.is_empty() {
                    0
                } else {
                    len_field_size(r.len() * 4)
                },
            ),
            Values::Bytes(v) => (1, v[r].iter().map(|b| len_field_size(b.len())).sum()),
            Values::Packed { offsets, .. } => (
                1,
                r.map(|j| len_field_size((offsets[j + 1] - offsets[j]) as usize))
                    .sum(),
            ),
        }
    }

    #[inline]
    fn put_list(&self, i: usize, out: &mut Vec<u8>) {
        let r = self.range(i);
        if r.is_empty() {
            return;
        }
        match self.values {
            Values::Int64(v) => {
                let row = &v[r];
                put_tag(out, 1, wire::LEN);
                put_varint(
                    out,
                    row.iter().map(|&x| varint_len(x as u64)).sum::<usize>() as u64,
                );
                for &x in row {
                    put_varint(out, x as u64);
                }
            }
            Values::Float32(v) => {
                put_tag(out, 1, wire::LEN);
                put_varint(out, (r.len() * 4) as u64);
                for x in &v[r] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            Values::Bytes(v) => {
                for b in &v[r] {
                    put_bytes_value(b, out);
                }
            }
            Values::Packed { data, offsets } => {
                for j in r {
                    put_bytes_value(packed(data, offsets, j), out);
                }
            }
        }
    }
}

#[inline]
fn put_bytes_value(b: &[u8], out: &mut Vec<u8>) {
    put_tag(out, 1, wire::LEN);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Checks every column against the row count `n`.
pub fn check_table(names: &[&str], cols: &[ColumnRef<'_>], n: usize) -> Result<()> {
    if names.len() != cols.len() {
        return Err(Error::invalid("one name per column"));
    }
    names
        .iter()
        .zip(cols)
        .try_for_each(|(name, c)| c.check(name, n))
}

/// Appends row `i` as a serialized Example; `sizes` is scratch space reused across rows.
fn put_row(
    names: &[&str],
    cols: &[ColumnRef<'_>],
    i: usize,
    sizes: &mut Vec<Option<(u32, usize)>>,
    out: &mut Vec<u8>,
) {
    sizes.clear();
    let mut features_len = 0;
    for (c, col) in cols.iter().enumerate() {
        if !col.present(i) {
            sizes.push(None);
            continue;
        }
        let (kind, list_len) = col.list_len(i);
        sizes.push(Some((kind, list_len)));
        let entry = len_field_size(names[c].len()) + len_field_size(len_field_size(list_len));
        features_len += len_field_size(entry);
    }
    put_tag(out, 1, wire::LEN);
    put_varint(out, features_len as u64);
    for (c, col) in cols.iter().enumerate() {
        let Some((kind, list_len)) = sizes[c] else {
            continue;
        };
        let feature_len = len_field_size(list_len);
        let name = names[c];
        put_tag(out, 1, wire::LEN);
        put_varint(
            out,
            (len_field_size(name.len()) + len_field_size(feature_len)) as u64,
        );
        put_tag(out, 1, wire::LEN);
        put_varint(out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        put_tag(out, 2, wire::LEN);
        put_varint(out, feature_len as u64);
        put_tag(out, kind, wire::LEN);
        put_varint(out, list_len as u64);
        col.put_list(i, out);
    }
}

/// Appends rows `rows` as framed records (ready to be written to a TFRecord stream).
/// The columns must have passed [`check_table`].
pub fn frame_rows(names: &[&str], cols: &[ColumnRef<'_>], rows: Range<usize>, out: &mut Vec<u8>) {
    let mut sizes = Vec::with_capacity(cols.len());
    for i in rows {
        let header_at = out.len();
        out.extend_from_slice(&[0u8; 12]);
        let data_at = out.len();
        put_row(names, cols, i, &mut sizes, out);
        let len = ((out.len() - data_at) as u64).to_le_bytes();
        let data_crc = masked_crc32c(&out[data_at..]);
        out[header_at..header_at + 8].copy_from_slice(&len);
        out[header_at + 8..data_at].copy_from_slice(&masked_crc32c(&len).to_le_bytes());
        out.extend_from_slice(&data_crc.to_le_bytes());
    }
}

/// Encodes rows `rows` as framed Examples in chunks (on the thread pool when `parallel`);
/// returns the chunks' bytes in order. The columns must have passed [`check_table`].
pub fn frame_table(
    names: &[&str],
    cols: &[ColumnRef<'_>],
    rows: Range<usize>,
    parallel: bool,
) -> Vec<Vec<u8>> {
    const CHUNK: usize = 8192;
    let end = rows.end;
    let starts: Vec<_> = rows.step_by(CHUNK).collect();
    let encode = |start: usize| {
        let mut out = Vec::new();
        frame_rows(names, cols, start..(start + CHUNK).min(end), &mut out);
        crate::memory::keep_freed_buffers_for(out.len());
        out
    };
    if parallel && starts.len() > 1 && crate::pool::pool_usable() {
        starts.into_par_iter().map(encode).collect()
    } else {
        starts.into_iter().map(encode).collect()
    }
}

/// Encodes row `i` as an unframed Example. The columns must have passed [`check_table`].
pub fn encode_row(names: &[&str], cols: &[ColumnRef<'_>], i: usize) -> Vec<u8> {
    let mut out = Vec::new();
    put_row(names, cols, i, &mut Vec::new(), &mut out);
    out
}

/// The framed size of every row, without encoding: for planning shards by bytes.
/// The columns must have passed [`check_table`].
pub fn framed_sizes(names: &[&str], cols: &[ColumnRef<'_>], n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let features: usize = cols
                .iter()
                .zip(names)
                .filter(|(c, _)| c.present(i))
                .map(|(c, name)| {
                    let (_, list_len) = c.list_len(i);
                    len_field_size(
                        len_field_size(name.len()) + len_field_size(len_field_size(list_len)),
                    )
                })
                .sum();
            (len_field_size(features) + 16) as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode_example, encode_example, Feature};

    #[test]
    fn rows_match_the_example_encoder() {
        let ints = [1i64, -2, 3, 4, 5, 6];
        let floats = [0.5f32, 1.5, 2.5];
        let b: Vec<&[u8]> = vec![b"x", b"", b"zz"];
        let tokens: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let offsets = [0i64, 2, 2, 3];
        let valid = [1u8, 0, 1];
        let names = ["i", "f", "b", "none", "tok"];
        let cols = [
            ColumnRef::fixed(Values::Int64(&ints), 2),
            ColumnRef {
                valid: Some(&valid),
                ..ColumnRef::fixed(Values::Float32(&floats), 1)
            },
            ColumnRef::fixed(Values::Bytes(&b), 1),
            ColumnRef::fixed(Values::Int64(&[]), 0),
            ColumnRef {
                values: Values::Bytes(&tokens),
                rows: Rows::Ragged(&offsets),
                valid: None,
            },
        ];
        check_table(&names, &cols, 3).unwrap();
        let sizes = framed_sizes(&names, &cols, 3);
        for i in 0..3 {
            let mut row = vec![("i", Feature::Int64(ints[i * 2..i * 2 + 2].to_vec()))];
            if valid[i] == 1 {
                row.push(("f", Feature::Float(vec![floats[i]])));
            }
            row.push(("b", Feature::Bytes(vec![b[i].to_vec()])));
            row.push(("none", Feature::Int64(vec![])));
            let toks = tokens[offsets[i] as usize..offsets[i + 1] as usize].iter();
            row.push(("tok", Feature::Bytes(toks.map(|t| t.to_vec()).collect())));
            let expected = encode_example(&row);
            assert_eq!(encode_row(&names, &cols, i), expected);
            assert_eq!(sizes[i], expected.len() as u64 + 16);
        }
        let framed = frame_table(&names, &cols, 0..3, true).concat();
        assert_eq!(framed.len() as u64, sizes.iter().sum::<u64>());
        let mut reader = crate::RecordReader::new(
            &framed[..],
            crate::Compression::None,
            "mem",
            &crate::ReadOptions::default(),
        );
        let first = reader.next_record().unwrap().unwrap().to_vec();
        assert_eq!(
            decode_example(&first).unwrap()[0].1,
            Feature::Int64(vec![1, -2])
        );
    }

    #[test]
    fn inconsistent_columns_are_refused() {
        let ints = [1i64, 2, 3];
        let bad_offsets = [0i64, 2, 1, 3];
        let names = ["a"];
        let ragged = [ColumnRef {
            values: Values::Int64(&ints),
            rows: Rows::Ragged(&bad_offsets),
            valid: None,
        }];
        assert!(check_table(&names, &ragged, 3).is_err());
        assert!(check_table(&names, &[ColumnRef::fixed(Values::Int64(&ints), 2)], 2).is_err());
        let short_mask = [ColumnRef {
            valid: Some(&[1]),
            ..ColumnRef::fixed(Values::Int64(&ints), 1)
        }];
        assert!(check_table(&names, &short_mask, 3).is_err());
    }

    #[test]
    fn packed_bytes_encode_as_separate_values() {
        // A sliced Arrow array: its offsets start past the buffer's first bytes.
        let data = b"skipxyzhello";
        let offsets = [4i64, 5, 7, 7, 12];
        let views: Vec<&[u8]> = vec![b"x", b"yz", b"", b"hello"];
        let names = ["s"];
        let packed = [ColumnRef::fixed(
            Values::Packed {
                data,
                offsets: &offsets,
            },
            1,
        )];
        let sliced = [ColumnRef::fixed(Values::Bytes(&views), 1)];
        check_table(&names, &packed, 4).unwrap();
        for i in 0..4 {
            assert_eq!(
                encode_row(&names, &packed, i),
                encode_row(&names, &sliced, i)
            );
        }
        assert_eq!(
            framed_sizes(&names, &packed, 4),
            framed_sizes(&names, &sliced, 4)
        );
        // Lists of packed values, as a list<binary> column gives them.
        let rows = [0i64, 3, 4];
        let lists = [ColumnRef {
            values: Values::Packed {
                data,
                offsets: &offsets,
            },
            rows: Rows::Ragged(&rows),
            valid: None,
        }];
        check_table(&names, &lists, 2).unwrap();
        let expected = encode_example(&[(
            "s",
            Feature::Bytes(vec![b"x".to_vec(), b"yz".to_vec(), b"".to_vec()]),
        )]);
        assert_eq!(encode_row(&names, &lists, 0), expected);
    }

    #[test]
    fn packed_offsets_outside_the_buffer_are_refused() {
        let names = ["s"];
        for offsets in [&[0i64, 3, 2][..], &[-1, 2, 3], &[0, 2, 9], &[]] {
            let col = [ColumnRef::fixed(
                Values::Packed {
                    data: b"abcd",
                    offsets,
                },
                1,
            )];
            let n = offsets.len().saturating_sub(1);
            assert!(check_table(&names, &col, n).is_err(), "{offsets:?}");
        }
    }
}
