//! Re-cutting parsed units: units of several batches are cut into batches, and when
//! records are skipped under `OnError::Continue`, the units they leave short are joined
//! with the next ones and cut again at the batch size, so that every batch but the last
//! is full, as if the skipped records never reached `batch()`.

use std::collections::VecDeque;

use super::units::{Decoded, Item, Payload};
use crate::error::{Error, Result};
use crate::image::{PixelBatch, Pixels};
use crate::parse::{Column, Parsed};

/// Rows of parsed units waiting to fill a batch.
pub(super) struct Refill {
    size: usize,
    drop_remainder: bool,
    /// An error ends the stream (`OnError::Stop`): the rows held before it go out first.
    stop: bool,
    held: Option<(Vec<Decoded>, Vec<u64>)>,
}

impl Refill {
    pub(super) fn new(size: usize, drop_remainder: bool, stop: bool) -> Refill {
        Refill {
            size: size.max(1),
            drop_remainder,
            stop,
            held: None,
        }
    }

    /// Takes one item from upstream; full batches (and errors, in their place) go to `out`.
    pub(super) fn push(&mut self, item: Item, out: &mut VecDeque<Item>) {
        let (columns, keys, assembled) = match item {
            Ok(Payload::Parsed(columns, keys, assembled)) => (columns, keys, assembled),
            other => {
                if self.stop && other.is_err() {
                    out.extend(self.finish());
                }
                out.push_back(other);
                return;
            }
        };
        // A unit passed on whole keeps its features as laid out; joined or cut ones are
        // laid out again from their columns.
        let (mut columns, mut keys) = match self.held.take() {
            None if keys.len() == self.size => {
                out.push_back(Ok(Payload::Parsed(columns, keys, assembled)));
                return;
            }
            None => (columns, keys),
            Some((mut held, mut held_keys)) => {
                if let Err(e) = join(&mut held, columns) {
                    out.push_back(Err(e));
                    return;
                }
                held_keys.extend(keys);
                (held, held_keys)
            }
        };
        let full = keys.len() - keys.len() % self.size;
        if full < keys.len() {
            let rest_keys = keys.split_off(full);
            self.held = Some((split_rows(&mut columns, full), rest_keys));
        }
        if full == 0 {
            return;
        }
        // Cut from the back, so that each row is moved once.
        let mut batches = Vec::with_capacity(full / self.size);
        let mut at = full;
        while at > self.size {
            at -= self.size;
            let rest_keys = keys.split_off(at);
            batches.push((split_rows(&mut columns, at), rest_keys));
        }
        batches.push((columns, keys));
        for (columns, keys) in batches.into_iter().rev() {
            out.push_back(Ok(Payload::Parsed(columns, keys, None)));
        }
    }

    /// The rows left at the end of the stream, unless the last short batch is dropped.
    pub(super) fn finish(&mut self) -> Option<Item> {
        let (columns, keys) = self.held.take()?;
        (!self.drop_remainder).then_some(Ok(Payload::Parsed(columns, keys, None)))
    }
}

/// Appends the rows of `b` to `a`, feature by feature.
fn join(a: &mut [Decoded], b: Vec<Decoded>) -> Result<()> {
    for (x, y) in a.iter_mut().zip(b) {
        match (x, y) {
            (Decoded::Feature(x), Decoded::Feature(y)) => join_parsed(x, y)?,
            (Decoded::Images(x), Decoded::Images(y)) => join_pixels(x, y)?,
            _ => {
                return Err(Error::invalid(
                    "units of one pipeline hold the same features",
                ))
            }
        }
    }
    Ok(())
}

/// Splits `columns` after `rows` rows: `columns` keeps the first rows, the rest is returned.
fn split_rows(columns: &mut [Decoded], rows: usize) -> Vec<Decoded> {
    columns
        .iter_mut()
        .map(|c| match c {
            Decoded::Feature(p) => Decoded::Feature(split_parsed(p, rows)),
            Decoded::Images(p) => Decoded::Images(split_pixels(p, rows)),
        })
        .collect()
}

fn join_parsed(a: &mut Parsed, b: Parsed) -> Result<()> {
    match (&mut a.row_splits, b.row_splits) {
        (Some(sa), Some(sb)) => {
            let base = *sa.last().unwrap_or(&0);
            sa.extend(sb.iter().skip(1).map(|s| s + base));
            a.shape[0] += b.shape[0];
        }
        (None, None) if a.shape.get(1..) == b.shape.get(1..) => a.shape[0] += b.shape[0],
        _ => {
            return Err(Error::invalid(
                "rows of different shapes cannot share a batch",
            ))
        }
    }
    join_columns(&mut a.values, b.values)
}

fn join_columns(a: &mut Column, b: Column) -> Result<()> {
    match (a, b) {
        (Column::Int64(a), Column::Int64(b)) => a.extend(b),
        (Column::Float32(a), Column::Float32(b)) => a.extend(b),
        (
            Column::Bytes { data, ends, .. },
            Column::Bytes {
                data: d,
                ends: e,
                lead,
            },
        ) => {
            let base = data.len();
            data.extend_from_slice(&d[lead..]);
            ends.extend(e.into_iter().map(|end| end - lead + base));
        }
        _ => return Err(Error::invalid("a feature's units hold one type")),
    }
    Ok(())
}

fn split_parsed(p: &mut Parsed, rows: usize) -> Parsed {
    match &mut p.row_splits {
        Some(splits) => {
            let at = splits[rows] as usize;
            let rest: Vec<i64> = splits[rows..].iter().map(|s| s - splits[rows]).collect();
            splits.truncate(rows + 1);
            let values = split_column(&mut p.values, at);
            let n = values_len(&values);
            p.shape[0] = at;
            Parsed {
                values,
                shape: vec![n],
                row_splits: Some(rest),
                valid: None,
            }
        }
        None => {
            let per_row: usize = p.shape[1..].iter().product();
            let mut shape = p.shape.clone();
            shape[0] = p.shape[0] - rows;
            p.shape[0] = rows;
            Parsed {
                values: split_column(&mut p.values, rows * per_row),
                shape,
                row_splits: None,
                valid: p.valid.as_mut().map(|v| v.split_off(rows)),
            }
        }
    }
}

fn values_len(c: &Column) -> usize {
    match c {
        Column::Int64(v) => v.len(),
        Column::Float32(v) => v.len(),
        Column::Bytes { ends, .. } => ends.len(),
    }
}

/// Splits a column after `at` values, keeping the first ones.
fn split_column(c: &mut Column, at: usize) -> Column {
    match c {
        Column::Int64(v) => Column::Int64(v.split_off(at)),
        Column::Float32(v) => Column::Float32(v.split_off(at)),
        Column::Bytes { data, ends, lead } => {
            let cut = if at == 0 { *lead } else { ends[at - 1] };
            let rest_ends = ends.split_off(at).into_iter().map(|e| e - cut).collect();
            Column::Bytes {
                data: data.split_off(cut),
                ends: rest_ends,
                lead: 0,
            }
        }
    }
}

fn join_pixels(a: &mut PixelBatch, b: PixelBatch) -> Result<()> {
    if a.shape.get(1..) != b.shape.get(1..) {
        return Err(Error::invalid(
            "images of different sizes cannot share a batch: give decode_image a size",
        ));
    }
    a.shape[0] += b.shape[0];
    match (&mut a.pixels, b.pixels) {
        (Pixels::U8(a), Pixels::U8(b)) => a.extend(b),
        (Pixels::F32(a), Pixels::F32(b)) => a.extend(b),
        _ => return Err(Error::invalid("a feature's images have one pixel type")),
    }
    Ok(())
}

fn split_pixels(p: &mut PixelBatch, rows: usize) -> PixelBatch {
    let per_image: usize = p.shape[1..].iter().product();
    let mut shape = p.shape.clone();
    shape[0] = p.shape[0] - rows;
    p.shape[0] = rows;
    let at = rows * per_image;
    let pixels = match &mut p.pixels {
        Pixels::U8(v) => Pixels::U8(v.split_off(at)),
        Pixels::F32(v) => Pixels::F32(v.split_off(at)),
    };
    PixelBatch { pixels, shape }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(rows: &[&[i64]], fixed: bool) -> Decoded {
        let values: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        if fixed {
            let width = rows.first().map_or(0, |r| r.len());
            return Decoded::Feature(Parsed {
                values: Column::Int64(values),
                shape: vec![rows.len(), width],
                row_splits: None,
                valid: None,
            });
        }
        let mut splits = vec![0i64];
        for r in rows {
            splits.push(splits.last().unwrap() + r.len() as i64);
        }
        let n = values.len();
        Decoded::Feature(Parsed {
            values: Column::Int64(values),
            shape: vec![n],
            row_splits: Some(splits),
            valid: None,
        })
    }

    fn names(rows: &[&str]) -> Decoded {
        Decoded::Feature(Parsed {
            values: Column::from_bytes(rows),
            shape: vec![rows.len()],
            row_splits: None,
            valid: None,
        })
    }

    fn pixels(rows: &[u8]) -> Decoded {
        Decoded::Images(PixelBatch {
            pixels: Pixels::U8(rows.iter().flat_map(|&v| [v, v]).collect()),
            shape: vec![rows.len(), 1, 2, 1],
        })
    }

    fn unit(ids: &[i64]) -> Item {
        let rows: Vec<Vec<i64>> = ids.iter().map(|&i| vec![i; i as usize % 3]).collect();
        let rows: Vec<&[i64]> = rows.iter().map(|r| r.as_slice()).collect();
        let fixed: Vec<Vec<i64>> = ids.iter().map(|&i| vec![i, -i]).collect();
        let fixed: Vec<&[i64]> = fixed.iter().map(|r| r.as_slice()).collect();
        let text: Vec<String> = ids.iter().map(|i| "x".repeat(*i as usize)).collect();
        let text: Vec<&str> = text.iter().map(|s| s.as_str()).collect();
        let px: Vec<u8> = ids.iter().map(|&i| i as u8).collect();
        Ok(Payload::Parsed(
            vec![
                ints(&rows, false),
                ints(&fixed, true),
                names(&text),
                pixels(&px),
            ],
            ids.iter().map(|&i| i as u64 + 100).collect(),
            None,
        ))
    }

    #[test]
    fn bytes_columns_with_a_lead_join_and_split_by_their_values() {
        let led = Column::Bytes {
            data: b"junkabc".to_vec(),
            ends: vec![6, 7],
            lead: 4,
        };
        let mut joined = Column::from_bytes(&[b"x"]);
        join_columns(&mut joined, led.clone()).unwrap();
        assert_eq!(joined, Column::from_bytes(&[b"x" as &[u8], b"ab", b"c"]));
        let mut first = led.clone();
        let rest = split_column(&mut first, 1);
        assert_eq!(
            (first, rest),
            (Column::from_bytes(&[b"ab"]), Column::from_bytes(&[b"c"]))
        );
        let mut none = led;
        let all = split_column(&mut none, 0);
        assert_eq!(all, Column::from_bytes(&[b"ab" as &[u8], b"c"]));
        assert!(none.is_empty());
    }

    fn same(a: &Item, b: &Item) -> bool {
        match (a, b) {
            (Ok(Payload::Parsed(x, kx, _)), Ok(Payload::Parsed(y, ky, _))) => {
                kx == ky
                    && x.iter().zip(y).all(|p| match p {
                        (Decoded::Feature(a), Decoded::Feature(b)) => a == b,
                        (Decoded::Images(a), Decoded::Images(b)) => a == b,
                        _ => false,
                    })
            }
            (Err(a), Err(b)) => a.message == b.message,
            _ => false,
        }
    }

    fn run(items: Vec<Item>, size: usize, drop: bool) -> Vec<Item> {
        let mut refill = Refill::new(size, drop, false);
        let mut out = VecDeque::new();
        for item in items {
            refill.push(item, &mut out);
        }
        out.extend(refill.finish());
        out.into()
    }

    #[test]
    fn short_units_are_joined_and_cut_at_the_batch_size() {
        let out = run(
            vec![
                unit(&[0, 1, 3]),
                unit(&[4, 5, 6, 7]),
                unit(&[8]),
                unit(&[9, 10]),
            ],
            4,
            false,
        );
        let want = [unit(&[0, 1, 3, 4]), unit(&[5, 6, 7, 8]), unit(&[9, 10])];
        assert_eq!(out.len(), want.len());
        for (got, want) in out.iter().zip(&want) {
            assert!(same(got, want));
        }
    }

    #[test]
    fn errors_pass_in_their_place_and_full_units_pass_untouched() {
        let err = || Err(Error::schema("bad record"));
        let out = run(
            vec![unit(&[0, 1, 2]), err(), unit(&[3, 4]), unit(&[5, 6, 7])],
            3,
            false,
        );
        let want = [unit(&[0, 1, 2]), err(), unit(&[3, 4, 5]), unit(&[6, 7])];
        assert_eq!(out.len(), want.len());
        for (got, want) in out.iter().zip(&want) {
            assert!(same(got, want));
        }
    }

    #[test]
    fn the_last_short_batch_is_dropped_on_request() {
        let out = run(vec![unit(&[0, 1]), unit(&[2, 3, 4])], 2, true);
        let want = [unit(&[0, 1]), unit(&[2, 3])];
        assert_eq!(out.len(), want.len());
        for (got, want) in out.iter().zip(&want) {
            assert!(same(got, want));
        }
        assert!(run(vec![unit(&[0])], 2, true).is_empty());
    }

    #[test]
    fn images_of_different_sizes_are_an_error() {
        let a = PixelBatch {
            pixels: Pixels::U8(vec![0; 4]),
            shape: vec![1, 2, 2, 1],
        };
        let mut b = a.clone();
        b.shape = vec![1, 1, 4, 1];
        let mut held = vec![Decoded::Images(a)];
        assert!(join(&mut held, vec![Decoded::Images(b)]).is_err());
    }
}
