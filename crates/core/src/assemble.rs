//! A schema's features put together from a batch's parsed columns, in the one native call
//! that parses the batch: plain features are their columns; `SparseFeature` and
//! `RaggedFeature` are laid out here (see [`crate::composite`]), values gathered into
//! their sorted order, so that no caller assembles anything per batch.

use crate::column::{Column, Parsed};
use crate::composite::{self, Partition, Rows};
use crate::error::{Error, Result};

/// Where a ragged level's row partition comes from: a parsed column, or a fixed length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionSource {
    RowSplits(usize),
    RowLengths(usize),
    RowStarts(usize),
    RowLimits(usize),
    ValueRowIds(usize),
    UniformRowLength(i64),
}

/// How one feature of a schema is made from its parsed columns (indexes into them).
#[derive(Debug, Clone, PartialEq)]
pub enum Assembly {
    /// A plain feature: its column as parsed.
    Column(usize),
    /// A `SparseFeature`: one index column per dimension, and the value column.
    Sparse {
        key: String,
        index: Vec<(String, usize)>,
        value: usize,
        size: Vec<i64>,
        already_sorted: bool,
    },
    /// A `RaggedFeature`: the value column split by `partitions`, outermost first.
    Ragged {
        key: String,
        value: usize,
        partitions: Vec<PartitionSource>,
    },
}

impl Assembly {
    /// The columns this feature reads whole (as opposed to reading to lay out).
    fn columns(&self) -> Vec<usize> {
        match self {
            Assembly::Column(i) => vec![*i],
            Assembly::Sparse { index, value, .. } => {
                let mut all: Vec<usize> = index.iter().map(|(_, i)| *i).collect();
                all.push(*value);
                all
            }
            Assembly::Ragged {
                value, partitions, ..
            } => {
                let mut all = vec![*value];
                all.extend(partitions.iter().filter_map(|p| match p {
                    PartitionSource::UniformRowLength(_) => None,
                    PartitionSource::RowSplits(i)
                    | PartitionSource::RowLengths(i)
                    | PartitionSource::RowStarts(i)
                    | PartitionSource::RowLimits(i)
                    | PartitionSource::ValueRowIds(i) => Some(*i),
                }));
                all
            }
        }
    }

    /// Checks the column indexes against a schema of `n` columns.
    pub fn check(&self, n: usize) -> Result<()> {
        match self.columns().into_iter().find(|&i| i >= n) {
            Some(i) => Err(Error::invalid(format!(
                "a feature reads column {i} of a schema of {n}"
            ))),
            None => Ok(()),
        }
    }
}

/// The values of a sparse feature: its value column as parsed (its entries were in order
/// already), or gathered into their order.
#[derive(Debug, Clone, PartialEq)]
pub enum SparseValues {
    Same(usize),
    Gathered(Column),
}

/// One feature of a parsed batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Assembled {
    /// Column `i` as parsed.
    Column(usize),
    /// `indices` is `[nnz, 1 + rank]` row-major; `row_splits` says which entries are each
    /// record's.
    Sparse {
        indices: Vec<i64>,
        values: SparseValues,
        dense_shape: Vec<i64>,
        row_splits: Vec<i64>,
    },
    /// The values of column `values`, split by `levels` (the batch's first).
    Ragged {
        values: usize,
        levels: Vec<Vec<i64>>,
    },
}

/// One parsed variable-length column as rows, or an error naming what it is not.
fn rows<'a>(columns: &[Option<&'a Parsed>], i: usize) -> Result<Rows<'a, i64>> {
    let p = columns
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| Error::invalid(format!("column {i} is not a parsed column")))?;
    match (&p.values, &p.row_splits) {
        (Column::Int64(values), Some(splits)) => Ok(Rows { values, splits }),
        _ => Err(Error::invalid(format!(
            "column {i} is not a variable-length int64 column"
        ))),
    }
}

fn splits_of<'a>(columns: &[Option<&'a Parsed>], i: usize) -> Result<&'a [i64]> {
    columns
        .get(i)
        .copied()
        .flatten()
        .and_then(|p| p.row_splits.as_deref())
        .ok_or_else(|| Error::invalid(format!("column {i} is not a variable-length column")))
}

/// Puts the features of `assembly` together from a batch's parsed `columns` (`None` for a
/// column that is not a `Parsed` one, such as decoded images; no composite reads those).
pub fn assemble(assembly: &[Assembly], columns: &[Option<&Parsed>]) -> Result<Vec<Assembled>> {
    assembly
        .iter()
        .map(|a| {
            Ok(match a {
                Assembly::Column(i) => Assembled::Column(*i),
                Assembly::Sparse {
                    key,
                    index,
                    value,
                    size,
                    already_sorted,
                } => {
                    let cols = index
                        .iter()
                        .map(|(_, i)| rows(columns, *i))
                        .collect::<Result<Vec<_>>>()?;
                    let names: Vec<&str> = index.iter().map(|(k, _)| k.as_str()).collect();
                    let value_splits = splits_of(columns, *value)?;
                    let layout =
                        composite::sparse(key, &cols, &names, value_splits, size, *already_sorted)?;
                    let values = if layout.order.is_empty() {
                        SparseValues::Same(*value)
                    } else {
                        let parsed = columns[*value].expect("checked by splits_of");
                        SparseValues::Gathered(parsed.values.gather(&layout.order))
                    };
                    Assembled::Sparse {
                        indices: layout.indices,
                        values,
                        dense_shape: layout.dense_shape,
                        row_splits: value_splits.to_vec(),
                    }
                }
                Assembly::Ragged {
                    key,
                    value,
                    partitions,
                } => {
                    let parts = partitions
                        .iter()
                        .map(|p| {
                            Ok(match *p {
                                PartitionSource::RowSplits(i) => {
                                    Partition::RowSplits(rows(columns, i)?)
                                }
                                PartitionSource::RowLengths(i) => {
                                    Partition::RowLengths(rows(columns, i)?)
                                }
                                PartitionSource::RowStarts(i) => {
                                    Partition::RowStarts(rows(columns, i)?)
                                }
                                PartitionSource::RowLimits(i) => {
                                    Partition::RowLimits(rows(columns, i)?)
                                }
                                PartitionSource::ValueRowIds(i) => {
                                    Partition::ValueRowIds(rows(columns, i)?)
                                }
                                PartitionSource::UniformRowLength(n) => {
                                    Partition::UniformRowLength(n)
                                }
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let levels =
                        composite::ragged_splits(key, splits_of(columns, *value)?, &parts)?;
                    Assembled::Ragged {
                        values: *value,
                        levels,
                    }
                }
            })
        })
        .collect()
}
