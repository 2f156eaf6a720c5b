//! Features built from several parsed columns, as `tf.io.SparseFeature` and
//! `tf.io.RaggedFeature` build them: a batch's columns are parsed in the one pass per record,
//! then put together here, checking every record. Ragged partitions are always checked
//! (TensorFlow checks them only with `validate=True`); sparse indices are taken as they are,
//! as TensorFlow takes them, only their count is checked against the values'.
//!
//! Columns come as `(values, row_splits)`: record `r` holds
//! `values[row_splits[r]..row_splits[r + 1]]`.

use std::cmp::Ordering::{Equal, Greater};

use crate::error::{Error, Result};
use crate::pool::{pool_usable, split_run};

/// Entries from which a batch's sparse layout is built on several threads.
const PARALLEL_MIN_ENTRIES: usize = 16_384;

/// One parsed variable-length column: its values and the row splits of the batch.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a, T> {
    pub values: &'a [T],
    pub splits: &'a [i64],
}

impl<'a, T> Rows<'a, T> {
    fn rows(&self) -> usize {
        self.splits.len().saturating_sub(1)
    }

    fn row(&self, r: usize) -> &'a [T] {
        &self.values[self.splits[r] as usize..self.splits[r + 1] as usize]
    }
}

fn bad(key: &str, record: usize, message: String) -> Error {
    Error::schema(format!("feature {key:?}: {message}"))
        .with_key(key)
        .with_record(record as u64)
}

fn check_splits(what: &str, splits: &[i64], n_values: usize) -> Result<()> {
    let ok = splits.first() == Some(&0)
        && splits.windows(2).all(|w| w[0] <= w[1])
        && splits.last().is_some_and(|&l| l as usize == n_values);
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what} row splits are not a partition"
        )))
    }
}

/// A sparse tensor of a batch: `indices` is `[nnz, 1 + rank]` row-major (the record, then
/// its index in each dimension), `order` says which parsed value each entry takes; empty
/// when every entry takes its own (the entries were in order already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparseLayout {
    pub indices: Vec<i64>,
    pub order: Vec<usize>,
    pub dense_shape: Vec<i64>,
}

/// Puts a `SparseFeature` together from its index columns (one per dimension) and its value
/// column. Each record must have as many indices in every dimension as values; entries are
/// sorted by index within each record unless `already_sorted`. Indices are not checked
/// against `size`, as TensorFlow does not check them.
pub fn sparse(
    key: &str,
    index: &[Rows<'_, i64>],
    index_keys: &[&str],
    value_splits: &[i64],
    size: &[i64],
    already_sorted: bool,
) -> Result<SparseLayout> {
    let rows = value_splits.len().saturating_sub(1);
    let rank = index.len();
    if rank == 0 || size.len() != rank || index_keys.len() != rank {
        return Err(Error::invalid(format!(
            "feature {key:?}: {rank} index keys need as many sizes, not {}",
            size.len()
        )));
    }
    for (d, col) in index.iter().enumerate() {
        check_splits(index_keys[d], col.splits, col.values.len())?;
        if col.rows() != rows {
            return Err(Error::invalid("index and value columns differ in rows"));
        }
    }
    let nnz = value_splits.last().copied().unwrap_or(0).max(0) as usize;
    check_splits("value", value_splits, nnz)?;
    let run = |from: usize, to: usize| {
        sparse_rows(
            key,
            index,
            index_keys,
            value_splits,
            from..to,
            already_sorted,
        )
    };
    let (indices, order) = if nnz >= PARALLEL_MIN_ENTRIES && rows >= 64 && pool_usable() {
        let runs = split_run(rows, |part| run(part.start, part.end))
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        let mut indices = Vec::with_capacity(nnz * (rank + 1));
        let mut order = Vec::new();
        if runs.iter().any(|(_, o)| !o.is_empty()) {
            order.reserve(nnz);
        }
        for (i, o) in runs {
            let first = indices.len() / (rank + 1);
            let n = i.len() / (rank + 1);
            indices.extend(i);
            if order.capacity() > 0 {
                if o.is_empty() {
                    order.extend(first..first + n);
                } else {
                    order.extend(o);
                }
            }
        }
        (indices, order)
    } else {
        run(0, rows)?
    };
    let mut dense_shape = Vec::with_capacity(rank + 1);
    dense_shape.push(rows as i64);
    dense_shape.extend_from_slice(size);
    Ok(SparseLayout {
        indices,
        order,
        dense_shape,
    })
}

/// The sparse indices and value order of records `rows` (see [`sparse`]).
fn sparse_rows(
    key: &str,
    index: &[Rows<'_, i64>],
    index_keys: &[&str],
    value_splits: &[i64],
    rows: std::ops::Range<usize>,
    already_sorted: bool,
) -> Result<(Vec<i64>, Vec<usize>)> {
    let rank = index.len();
    let (first, last) = (
        value_splits[rows.start] as usize,
        value_splits[rows.end] as usize,
    );
    let mut indices = Vec::with_capacity((last - first) * (rank + 1));
    // Made (as the identity) only once an entry turns out to be out of order.
    let mut order: Vec<usize> = Vec::new();
    let mut pairs: Vec<(i64, usize)> = Vec::new();
    let mut packed: Vec<u64> = Vec::new();
    for r in rows {
        let (start, end) = (value_splits[r] as usize, value_splits[r + 1] as usize);
        let n = end - start;
        for (d, col) in index.iter().enumerate() {
            let idx = col.row(r);
            if idx.len() != n {
                return Err(bad(
                    key,
                    r,
                    format!(
                        "index key {:?} has {} values but the value key has {n}",
                        index_keys[d],
                        idx.len()
                    ),
                ));
            }
        }
        if rank == 1 {
            let idx = index[0].row(r);
            if !already_sorted && idx.windows(2).any(|w| w[0] > w[1]) {
                if order.is_empty() {
                    order.extend(first..last);
                }
                let order = &mut order[start - first..end - first];
                // (index, position) pairs are unique, so the unstable sort keeps the
                // order of entries at one index, as a stable one would. Packed into one
                // u64 each where they fit (the usual case), they sort several times
                // faster than as tuples.
                if n <= 1 << 32 && idx.iter().all(|&i| (0..1 << 32).contains(&i)) {
                    packed.clear();
                    packed.extend(idx.iter().zip(0u64..).map(|(&i, p)| (i as u64) << 32 | p));
                    packed.sort_unstable();
                    let at = indices.len();
                    indices.resize(at + 2 * n, r as i64);
                    let pairs = indices[at..].chunks_exact_mut(2);
                    for ((slot, pair), &key) in order.iter_mut().zip(pairs).zip(packed.iter()) {
                        *slot = start + (key & 0xffff_ffff) as usize;
                        pair[1] = (key >> 32) as i64;
                    }
                    continue;
                }
                pairs.clear();
                pairs.extend(idx.iter().zip(start..end).map(|(&i, k)| (i, k)));
                pairs.sort_unstable();
                for (slot, &(i, k)) in order.iter_mut().zip(pairs.iter()) {
                    *slot = k;
                    indices.extend([r as i64, i]);
                }
            } else {
                let at = indices.len();
                indices.resize(at + 2 * n, r as i64);
                for (pair, &i) in indices[at..].chunks_exact_mut(2).zip(idx) {
                    pair[1] = i;
                }
            }
            continue;
        }
        let cols: Vec<&[i64]> = index.iter().map(|col| col.row(r)).collect();
        let at = |k: usize, d: usize| cols[d][k - start];
        let compare = |a: usize, b: usize| {
            (0..rank)
                .map(|d| at(a, d).cmp(&at(b, d)))
                .find(|o| o.is_ne())
        };
        let unsorted = !already_sorted
            && (start..end)
                .collect::<Vec<_>>()
                .windows(2)
                .any(|w| compare(w[0], w[1]) == Some(Greater));
        if unsorted && order.is_empty() {
            order.extend(first..last);
        }
        let row: Vec<usize> = if unsorted {
            let row = &mut order[start - first..end - first];
            // Stable, so that entries at one index keep their order.
            row.sort_by(|&a, &b| compare(a, b).unwrap_or(Equal));
            row.to_vec()
        } else {
            (start..end).collect()
        };
        for k in row {
            indices.push(r as i64);
            indices.extend((0..rank).map(|d| at(k, d)));
        }
    }
    Ok((indices, order))
}

/// How one level of a `RaggedFeature` is partitioned, with its parsed column when it has
/// one (every kind but `UniformRowLength`).
#[derive(Debug, Clone, Copy)]
pub enum Partition<'a> {
    RowSplits(Rows<'a, i64>),
    RowLengths(Rows<'a, i64>),
    RowStarts(Rows<'a, i64>),
    RowLimits(Rows<'a, i64>),
    ValueRowIds(Rows<'a, i64>),
    UniformRowLength(i64),
}

impl Partition<'_> {
    fn name(&self) -> &'static str {
        match self {
            Partition::RowSplits(_) => "RowSplits",
            Partition::RowLengths(_) => "RowLengths",
            Partition::RowStarts(_) => "RowStarts",
            Partition::RowLimits(_) => "RowLimits",
            Partition::ValueRowIds(_) => "ValueRowIds",
            Partition::UniformRowLength(_) => "UniformRowLength",
        }
    }

    /// This record's row splits over `n` items of the level below (appended to `out`,
    /// starting at 0); returns the number of rows, or what is wrong. `spare` is how many
    /// more rows than items the batch may still make: rows no value is in (value row ids
    /// that skip rows) cost no bytes in the file, so they are bounded, not trusted.
    fn split(
        &self,
        r: usize,
        n: usize,
        out: &mut Vec<i64>,
        spare: &mut usize,
    ) -> std::result::Result<usize, String> {
        let n64 = n as i64;
        let start = out.len();
        let nondecreasing = |v: &[i64]| v.windows(2).all(|w| w[0] <= w[1]);
        match *self {
            Partition::RowSplits(col) => {
                let s = col.row(r);
                if s.is_empty() && n == 0 {
                    out.push(0);
                } else if s.first() != Some(&0) || s.last() != Some(&n64) || !nondecreasing(s) {
                    return Err(format!(
                        "row splits {s:?} do not go from 0 up to the {n} items they split"
                    ));
                } else {
                    out.extend_from_slice(s);
                }
            }
            Partition::RowLengths(col) => {
                let l = col.row(r);
                if l.iter().any(|&x| x < 0) || l.iter().sum::<i64>() != n64 {
                    return Err(format!("row lengths {l:?} do not add up to the {n} items"));
                }
                out.push(0);
                let mut at = 0;
                for &x in l {
                    at += x;
                    out.push(at);
                }
            }
            Partition::RowStarts(col) => {
                let s = col.row(r);
                let first_ok = s.first().is_none_or(|&f| f == 0) && (!s.is_empty() || n == 0);
                if !first_ok || !nondecreasing(s) || s.last().is_some_and(|&l| l > n64) {
                    return Err(format!(
                        "row starts {s:?} do not start rows of the {n} items"
                    ));
                }
                out.extend_from_slice(s);
                out.push(n64);
            }
            Partition::RowLimits(col) => {
                let l = col.row(r);
                let ok = if l.is_empty() {
                    n == 0
                } else {
                    l[0] >= 0 && nondecreasing(l) && l[l.len() - 1] == n64
                };
                if !ok {
                    return Err(format!("row limits {l:?} do not end rows of the {n} items"));
                }
                out.push(0);
                out.extend_from_slice(l);
            }
            Partition::ValueRowIds(col) => {
                let ids = col.row(r);
                if ids.len() != n || ids.first().is_some_and(|&f| f < 0) || !nondecreasing(ids) {
                    return Err(format!(
                        "value row ids {ids:?} are not {n} nondecreasing row numbers"
                    ));
                }
                let rows = ids.last().map_or(0, |&l| l as usize + 1);
                let empty = rows.saturating_sub(n);
                if empty > *spare {
                    return Err(format!(
                        "value row ids up to {} make {rows} rows for {n} values: more empty \
                         rows than the {MAX_EMPTY_ROWS} a batch may; parse smaller batches",
                        rows - 1
                    ));
                }
                *spare -= empty;
                out.push(0);
                let mut at = 0;
                for row in 0..rows {
                    while at < n && ids[at] as usize == row {
                        at += 1;
                    }
                    out.push(at as i64);
                }
            }
            Partition::UniformRowLength(k) => {
                if k <= 0 || n64 % k != 0 {
                    return Err(format!("{n} items do not make rows of {k}"));
                }
                out.extend((0..=n64 / k).map(|i| i * k));
            }
        }
        Ok(out.len() - start - 1)
    }
}

/// The most rows without values that value row ids may make in one batch (rows they skip
/// to cost no bytes in the file, so their number is bounded rather than trusted):
/// 128 MiB of row splits.
pub const MAX_EMPTY_ROWS: usize = 1 << 24;

/// The row splits of a `RaggedFeature` over a batch, outermost first: the batch's own
/// splits, then one level per partition (`partitions` outermost first, as TensorFlow lists
/// them); the last level splits the values. Every record's partitions are checked.
pub fn ragged_splits(
    key: &str,
    value_splits: &[i64],
    partitions: &[Partition<'_>],
) -> Result<Vec<Vec<i64>>> {
    let rows = value_splits.len().saturating_sub(1);
    let n_values = value_splits.last().copied().unwrap_or(0).max(0) as usize;
    check_splits("value", value_splits, n_values)?;
    for p in partitions {
        if let Partition::RowSplits(c)
        | Partition::RowLengths(c)
        | Partition::RowStarts(c)
        | Partition::RowLimits(c)
        | Partition::ValueRowIds(c) = p
        {
            check_splits(p.name(), c.splits, c.values.len())?;
            if c.rows() != rows {
                return Err(Error::invalid("partition and value columns differ in rows"));
            }
        }
    }
    // levels[0] is the batch; levels[1 + i] is partition i.
    let mut levels: Vec<Vec<i64>> = vec![vec![0]; partitions.len() + 1];
    let mut local = Vec::new();
    let mut spare = MAX_EMPTY_ROWS;
    for r in 0..rows {
        let mut n = (value_splits[r + 1] - value_splits[r]) as usize;
        for (i, p) in partitions.iter().enumerate().rev() {
            local.clear();
            let count = p
                .split(r, n, &mut local, &mut spare)
                .map_err(|m| bad(key, r, format!("{} partition: {m}", p.name())))?;
            let level = &mut levels[i + 1];
            let base = *level.last().expect("starts with 0");
            level.extend(local[1..].iter().map(|&s| base + s));
            n = count;
        }
        let batch = &mut levels[0];
        let base = *batch.last().expect("starts with 0");
        batch.push(base + n as i64);
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows<'a>(values: &'a [i64], splits: &'a [i64]) -> Rows<'a, i64> {
        Rows { values, splits }
    }

    fn unit(splits: &[i64]) -> &[i64] {
        splits
    }

    #[test]
    fn sparse_sorts_within_each_record_and_checks_counts_and_ranges() {
        let idx = [3, 1, 2];
        let layout = sparse(
            "s",
            &[rows(&idx, &[0, 2, 3])],
            &["i"],
            unit(&[0, 2, 3]),
            &[10],
            false,
        )
        .unwrap();
        assert_eq!(layout.indices, vec![0, 1, 0, 3, 1, 2]);
        assert_eq!(layout.order, vec![1, 0, 2]);
        assert_eq!(layout.dense_shape, vec![2, 10]);

        let dups = [3, 1, 3];
        let layout = sparse(
            "s",
            &[rows(&dups, &[0, 3])],
            &["i"],
            unit(&[0, 3]),
            &[10],
            false,
        )
        .unwrap();
        assert_eq!(
            layout.order,
            vec![1, 0, 2],
            "entries at one index keep their order"
        );

        let kept = sparse(
            "s",
            &[rows(&idx, &[0, 2, 3])],
            &["i"],
            unit(&[0, 2, 3]),
            &[10],
            true,
        )
        .unwrap();
        assert!(
            kept.order.is_empty(),
            "entries in order take their own values"
        );

        let err = sparse(
            "s",
            &[rows(&idx, &[0, 2, 3])],
            &["i"],
            unit(&[0, 1, 3]),
            &[10],
            false,
        )
        .unwrap_err();
        assert_eq!(err.record_index, Some(0));
        assert!(
            err.message.contains("has 2 values but the value key has 1"),
            "{}",
            err.message
        );
        assert_eq!(err.key.as_deref(), Some("s"));
    }

    #[test]
    fn a_large_batch_split_across_threads_lays_out_as_one_run() {
        // 600 records of 0..80 entries with descending indices: every record is sorted.
        let mut idx = Vec::new();
        let mut splits = vec![0i64];
        for r in 0..600i64 {
            idx.extend((0..r % 81).rev());
            splits.push(idx.len() as i64);
        }
        assert!(idx.len() >= PARALLEL_MIN_ENTRIES);
        let cols = [rows(&idx, &splits)];
        let layout = sparse("s", &cols, &["i"], &splits, &[100], false).unwrap();
        let whole = sparse_rows("s", &cols, &["i"], &splits, 0..600, false).unwrap();
        assert_eq!((layout.indices, layout.order), whole);
    }

    #[test]
    fn value_row_ids_cannot_make_rows_without_bound() {
        // Three values whose last row id is 2^40: rows the file does not pay for.
        let ids = [0, 0, 1 << 40];
        let err = ragged_splits(
            "r",
            unit(&[0, 3]),
            &[Partition::ValueRowIds(rows(&ids, &[0, 3]))],
        )
        .unwrap_err();
        assert!(err.to_string().contains("more empty rows than"), "{err}");
        // Within the bound across the batch: two records of 2^23 rows each pass, and a
        // third record past what is left fails.
        let big = (1i64 << 23) - 1;
        let ids = [0, big, 0, big, 0, big];
        let splits = [0, 2, 4, 6];
        let part = |n| {
            [Partition::ValueRowIds(rows(
                &ids[..n],
                &splits[..n / 2 + 1],
            ))]
        };
        let levels = ragged_splits("r", unit(&splits[..3]), &part(4)).unwrap();
        assert_eq!(levels[1].len(), 2 * (1 << 23) + 1);
        assert!(ragged_splits("r", unit(&splits), &part(6)).is_err());
    }

    #[test]
    fn ragged_levels_follow_each_partition_kind() {
        // One record of 5 values: lengths [2, 1] over lengths [2, 2, 1].
        let a = [2, 1];
        let b = [2, 2, 1];
        let levels = ragged_splits(
            "r",
            unit(&[0, 5]),
            &[
                Partition::RowLengths(rows(&a, &[0, 2])),
                Partition::RowLengths(rows(&b, &[0, 3])),
            ],
        )
        .unwrap();
        assert_eq!(levels, vec![vec![0, 2], vec![0, 2, 3], vec![0, 2, 4, 5]]);

        let ids = [0, 0, 2];
        let levels = ragged_splits(
            "r",
            unit(&[0, 3]),
            &[Partition::ValueRowIds(rows(&ids, &[0, 3]))],
        )
        .unwrap();
        assert_eq!(levels, vec![vec![0, 3], vec![0, 2, 2, 3]]);

        let levels =
            ragged_splits("r", unit(&[0, 4, 6]), &[Partition::UniformRowLength(2)]).unwrap();
        assert_eq!(levels, vec![vec![0, 2, 3], vec![0, 2, 4, 6]]);

        let bad_lengths = [2, 2];
        let err = ragged_splits(
            "r",
            unit(&[0, 3]),
            &[Partition::RowLengths(rows(&bad_lengths, &[0, 2]))],
        )
        .unwrap_err();
        assert!(err.message.contains("do not add up"), "{}", err.message);
    }
}
