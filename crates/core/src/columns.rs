//! Encoding columns straight into framed Example records, without a per-row object.

use rayon::prelude::*;

use crate::crc::masked_crc32c;
use crate::wire::{self, len_field_size, put_tag, put_varint, varint_len};

/// One column of a table: row `i` of a numeric column is `values[i*width..(i+1)*width]`.
#[derive(Debug, Clone, Copy)]
pub enum ColumnRef<'a> {
    Int64 {
        values: &'a [i64],
        width: usize,
    },
    Float32 {
        values: &'a [f32],
        width: usize,
    },
    /// One bytes value per row.
    Bytes(&'a [&'a [u8]]),
}

impl ColumnRef<'_> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        match *self {
            ColumnRef::Int64 { values, width } => values.len().checked_div(width).unwrap_or(0),
            ColumnRef::Float32 { values, width } => values.len().checked_div(width).unwrap_or(0),
            ColumnRef::Bytes(v) => v.len(),
        }
    }

    /// Size of the list message and the `Feature` kind field of row `i`.
    #[inline]
    fn list_len(&self, i: usize) -> (u32, usize) {
        match *self {
            ColumnRef::Int64 { values, width } => {
                let row = &values[i * width..(i + 1) * width];
                let packed: usize = row.iter().map(|&v| varint_len(v as u64)).sum();
                (
                    3,
                    if width == 0 {
                        0
                    } else {
                        len_field_size(packed)
                    },
                )
            }
            ColumnRef::Float32 { width, .. } => (
                2,
                if width == 0 {
                    0
                } else {
                    len_field_size(width * 4)
                },
            ),
            ColumnRef::Bytes(v) => (1, len_field_size(v[i].len())),
        }
    }

    #[inline]
    fn put_list(&self, i: usize, out: &mut Vec<u8>) {
        match *self {
            ColumnRef::Int64 { values, width } => {
                if width == 0 {
                    return;
                }
                let row = &values[i * width..(i + 1) * width];
                put_tag(out, 1, wire::LEN);
                put_varint(
                    out,
                    row.iter().map(|&v| varint_len(v as u64)).sum::<usize>() as u64,
                );
                for &v in row {
                    put_varint(out, v as u64);
                }
            }
            ColumnRef::Float32 { values, width } => {
                if width == 0 {
                    return;
                }
                put_tag(out, 1, wire::LEN);
                put_varint(out, (width * 4) as u64);
                for v in &values[i * width..(i + 1) * width] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            ColumnRef::Bytes(v) => {
                put_tag(out, 1, wire::LEN);
                put_varint(out, v[i].len() as u64);
                out.extend_from_slice(v[i]);
            }
        }
    }
}

/// Appends row `i` as a serialized Example; `sizes` is scratch space reused across rows.
fn put_row(
    names: &[&str],
    cols: &[ColumnRef<'_>],
    i: usize,
    sizes: &mut Vec<(u32, usize)>,
    out: &mut Vec<u8>,
) {
    sizes.clear();
    sizes.resize(cols.len(), (0, 0));
    let mut features_len = 0;
    for (c, col) in cols.iter().enumerate() {
        let (kind, list_len) = col.list_len(i);
        sizes[c] = (kind, list_len);
        let entry = len_field_size(names[c].len()) + len_field_size(len_field_size(list_len));
        features_len += len_field_size(entry);
    }
    put_tag(out, 1, wire::LEN);
    put_varint(out, features_len as u64);
    for (c, col) in cols.iter().enumerate() {
        let (kind, list_len) = sizes[c];
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
pub fn frame_rows(
    names: &[&str],
    cols: &[ColumnRef<'_>],
    rows: std::ops::Range<usize>,
    out: &mut Vec<u8>,
) {
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

/// Encodes every row as a framed Example, in parallel chunks; returns, in order, each
/// chunk's record count and bytes.
pub fn frame_table(names: &[&str], cols: &[ColumnRef<'_>], n_rows: usize) -> Vec<(u64, Vec<u8>)> {
    const CHUNK: usize = 8192;
    let chunks: Vec<_> = (0..n_rows).step_by(CHUNK).collect();
    let encode = |start: usize| {
        let end = (start + CHUNK).min(n_rows);
        let mut out = Vec::new();
        frame_rows(names, cols, start..end, &mut out);
        ((end - start) as u64, out)
    };
    if chunks.len() > 1 && crate::parse::pool_usable() {
        chunks.into_par_iter().map(encode).collect()
    } else {
        chunks.into_iter().map(encode).collect()
    }
}

/// Encodes row `i` as an unframed Example.
pub fn encode_row(names: &[&str], cols: &[ColumnRef<'_>], i: usize) -> Vec<u8> {
    let mut out = Vec::new();
    put_row(names, cols, i, &mut Vec::new(), &mut out);
    out
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
        let names = ["i", "f", "b", "none"];
        let cols = [
            ColumnRef::Int64 {
                values: &ints,
                width: 2,
            },
            ColumnRef::Float32 {
                values: &floats,
                width: 1,
            },
            ColumnRef::Bytes(&b),
            ColumnRef::Int64 {
                values: &[],
                width: 0,
            },
        ];
        for i in 0..3 {
            let expected = encode_example(&[
                ("i", Feature::Int64(ints[i * 2..i * 2 + 2].to_vec())),
                ("f", Feature::Float(vec![floats[i]])),
                ("b", Feature::Bytes(vec![b[i].to_vec()])),
                ("none", Feature::Int64(vec![])),
            ]);
            assert_eq!(encode_row(&names, &cols, i), expected);
        }
        let framed: Vec<u8> = frame_table(&names, &cols, 3)
            .into_iter()
            .flat_map(|(_, b)| b)
            .collect();
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
}
