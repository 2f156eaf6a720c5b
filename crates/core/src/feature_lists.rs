//! A sequence schema: the feature lists of `SequenceExample`s as
//! `tf.io.parse_sequence_example` gives them. Each list is read as a column (see
//! [`crate::sequence`]), then laid out: a `FixedLenSequence` checked step by step and padded
//! to the batch's longest, a `VarLen` as records of steps of values, a `RaggedFeature` as
//! records of steps split by its partitions (read from feature lists too).

use crate::composite::{ragged_splits, Partition, Rows};
use crate::error::{Error, Result};
use crate::parse::{Column, DType, MAX_FILL};
use crate::sequence::{pad_steps, parse_feature_lists, FeatureListColumn};

/// How a `RaggedFeature` list's steps are split, level by level: by a feature list of
/// int64s named `key`, or into rows of a uniform length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListPartition {
    RowSplits(String),
    RowLengths(String),
    RowStarts(String),
    RowLimits(String),
    ValueRowIds(String),
    UniformRowLength(i64),
}

impl ListPartition {
    fn key(&self) -> Option<&str> {
        match self {
            ListPartition::RowSplits(k)
            | ListPartition::RowLengths(k)
            | ListPartition::RowStarts(k)
            | ListPartition::RowLimits(k)
            | ListPartition::ValueRowIds(k) => Some(k),
            ListPartition::UniformRowLength(_) => None,
        }
    }
}

/// What a feature list is.
#[derive(Debug, Clone, PartialEq)]
pub enum ListKind {
    /// `FixedLenSequence`: every step holds `prod(shape)` values; `pad` (one value, or the
    /// dtype's zero when `None`) fills each record's steps up to the batch's longest.
    Dense {
        shape: Vec<usize>,
        allow_missing: bool,
        pad: Option<Column>,
    },
    /// `VarLen`: any number of values per step.
    Var,
    /// `RaggedFeature`: the values of list `value_key`, each step split by `partitions`
    /// (outermost first).
    Ragged {
        value_key: String,
        partitions: Vec<ListPartition>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListSpec {
    pub key: String,
    pub dtype: DType,
    pub kind: ListKind,
}

/// One feature list of a batch, laid out. Record `r` has steps `steps[r]..steps[r + 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LaidList {
    pub values: Column,
    pub steps: Vec<i64>,
    pub layout: Layout,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// `values` is `[records, width, prod(shape)]`, padded; without padding (`width`
    /// `None`) the steps' values back to back.
    Dense { width: Option<usize> },
    /// Step `s` has values `step_values[s]..step_values[s + 1]`.
    Var { step_values: Vec<i64> },
    /// The row splits of each level below the steps, outermost first (the first splits
    /// the steps).
    Ragged { levels: Vec<Vec<i64>> },
}

/// The feature lists a sequence schema reads and how it lays each out.
#[derive(Debug, Clone, PartialEq)]
pub struct ListSchema {
    specs: Vec<ListSpec>,
    /// The lists read, each once: `(key, dtype)`.
    wanted: Vec<(String, DType)>,
}

impl ListSchema {
    /// A schema of `specs`; a list read with two dtypes (as a feature's values and as a
    /// partition, say) is an `InvalidArgument` error.
    pub fn new(specs: Vec<ListSpec>) -> Result<ListSchema> {
        let mut wanted: Vec<(String, DType)> = Vec::new();
        let mut add = |key: &str, dtype: DType, by: &str| -> Result<()> {
            match wanted.iter().find(|(k, _)| k == key) {
                Some((_, d)) if *d != dtype => Err(Error::invalid(format!(
                    "feature list {by:?} reads {key:?} as {}, but it is read as {} too",
                    dtype.name(),
                    d.name()
                ))),
                Some(_) => Ok(()),
                None => {
                    wanted.push((key.to_owned(), dtype));
                    Ok(())
                }
            }
        };
        for spec in &specs {
            match &spec.kind {
                ListKind::Ragged {
                    value_key,
                    partitions,
                } => {
                    add(value_key, spec.dtype, &spec.key)?;
                    for key in partitions.iter().filter_map(ListPartition::key) {
                        add(key, DType::Int64, &spec.key)?;
                    }
                }
                _ => add(&spec.key, spec.dtype, &spec.key)?,
            }
        }
        Ok(ListSchema { specs, wanted })
    }

    pub fn specs(&self) -> &[ListSpec] {
        &self.specs
    }

    /// The lists read, each once, as [`parse_feature_lists`] takes them.
    pub fn wanted(&self) -> &[(String, DType)] {
        &self.wanted
    }

    /// Parses the feature lists of `records` and lays them out, padded when `pad`.
    pub fn parse<T: AsRef<[u8]> + Sync>(&self, records: &[T], pad: bool) -> Result<Vec<LaidList>> {
        self.lay_out(parse_feature_lists(&self.wanted, records)?, pad)
    }

    /// Lays out the columns of [`Self::wanted`] as read from a batch: one per spec.
    pub fn lay_out(&self, columns: Vec<FeatureListColumn>, pad: bool) -> Result<Vec<LaidList>> {
        let index = |key: &str| {
            self.wanted
                .iter()
                .position(|(k, _)| k == key)
                .expect("every list a spec reads is wanted")
        };
        // A column read by one spec only is moved into its output, never copied.
        let mut uses = vec![0usize; columns.len()];
        for spec in &self.specs {
            match &spec.kind {
                ListKind::Ragged {
                    value_key,
                    partitions,
                } => {
                    uses[index(value_key)] += 1;
                    for key in partitions.iter().filter_map(ListPartition::key) {
                        uses[index(key)] += 1;
                    }
                }
                _ => uses[index(&spec.key)] += 1,
            }
        }
        let mut columns: Vec<Option<FeatureListColumn>> = columns.into_iter().map(Some).collect();
        let mut take = |i: usize| -> FeatureListColumn {
            uses[i] -= 1;
            if uses[i] == 0 {
                columns[i]
                    .take()
                    .expect("a column is taken by its last use")
            } else {
                columns[i]
                    .clone()
                    .expect("a column is there until its last use")
            }
        };
        let mut out = Vec::with_capacity(self.specs.len());
        for spec in &self.specs {
            let key = spec.key.as_str();
            out.push(match &spec.kind {
                ListKind::Dense {
                    shape,
                    allow_missing,
                    pad: fill,
                } => {
                    let column = take(index(key));
                    dense(spec, shape, *allow_missing, fill.as_ref(), column, pad)?
                }
                ListKind::Var => {
                    let c = take(index(key));
                    LaidList {
                        values: c.values,
                        steps: c.steps,
                        layout: Layout::Var {
                            step_values: c.step_values,
                        },
                    }
                }
                ListKind::Ragged {
                    value_key,
                    partitions,
                } => {
                    let values = take(index(value_key));
                    ragged(
                        key,
                        values,
                        partitions,
                        |k| self.wanted.iter().position(|(w, _)| w == k),
                        &mut take,
                    )?
                }
            });
        }
        Ok(out)
    }
}

/// The record that step `step` belongs to.
fn record_of(steps: &[i64], step: usize) -> u64 {
    (steps.partition_point(|&s| s <= step as i64).max(1) - 1) as u64
}

fn dense(
    spec: &ListSpec,
    shape: &[usize],
    allow_missing: bool,
    fill: Option<&Column>,
    c: FeatureListColumn,
    pad: bool,
) -> Result<LaidList> {
    let key = spec.key.as_str();
    let dtype = spec.dtype.name();
    let stride: usize = shape.iter().product();
    if let Some(step) = c
        .step_values
        .windows(2)
        .position(|w| (w[1] - w[0]) as usize != stride)
    {
        let record = record_of(&c.steps, step);
        let count = c.step_values[step + 1] - c.step_values[step];
        return Err(Error::schema(format!(
            "feature list {key:?} ({dtype}): step {} has {count} values; expected {stride}",
            step as i64 - c.steps[record as usize]
        ))
        .with_key(key)
        .with_record(record));
    }
    if !allow_missing {
        if let Some(record) = c.present.iter().position(|p| !p) {
            return Err(Error::schema(format!(
                "feature list {key:?} ({dtype}) is required but could not be found"
            ))
            .with_key(key)
            .with_record(record as u64));
        }
    }
    let lengths = c.steps.windows(2).map(|w| w[1] - w[0]);
    let width = lengths.clone().max().unwrap_or(0) as usize;
    let even = lengths.clone().all(|n| n as usize == width);
    if !pad || even {
        let width = pad.then_some(width);
        return Ok(LaidList {
            values: c.values,
            steps: c.steps,
            layout: Layout::Dense { width },
        });
    }
    let values = match (&c.values, fill) {
        (Column::Int64(v), fill) => {
            let fill = match fill {
                Some(Column::Int64(f)) => f.first().copied().unwrap_or(0),
                _ => 0,
            };
            Column::Int64(pad_steps(key, v, &c.steps, &c.step_values, stride, fill)?.0)
        }
        (Column::Float32(v), fill) => {
            let fill = match fill {
                Some(Column::Float32(f)) => f.first().copied().unwrap_or(0.0),
                _ => 0.0,
            };
            Column::Float32(pad_steps(key, v, &c.steps, &c.step_values, stride, fill)?.0)
        }
        (bytes @ Column::Bytes { .. }, fill) => {
            let fill = match fill {
                Some(f @ Column::Bytes { .. }) if !f.is_empty() => f.bytes_at(0).to_vec(),
                _ => Vec::new(),
            };
            pad_bytes(key, bytes, &c.steps, &c.step_values, stride, width, &fill)?
        }
    };
    Ok(LaidList {
        values,
        steps: c.steps,
        layout: Layout::Dense { width: Some(width) },
    })
}

/// [`pad_steps`] for bytes values.
fn pad_bytes(
    key: &str,
    values: &Column,
    steps: &[i64],
    step_values: &[i64],
    stride: usize,
    width: usize,
    fill: &[u8],
) -> Result<Column> {
    let records = steps.len().saturating_sub(1);
    let row = width.saturating_mul(stride);
    let total = records.saturating_mul(row);
    let padding = total - values.len().min(total);
    if padding > MAX_FILL || fill.len().saturating_mul(padding) > MAX_FILL {
        return Err(Error::schema(format!(
            "feature {key:?}: padding to the longest record would fill in {padding} values that \
             no record holds, more than the {MAX_FILL} a batch may; parse smaller batches"
        ))
        .with_key(key));
    }
    let mut out = Column::with_capacity(DType::Bytes, total);
    for r in 0..records {
        let from = step_values[steps[r] as usize] as usize;
        let to = step_values[steps[r + 1] as usize] as usize;
        out.extend_range(values, from, to);
        for _ in (to - from)..row {
            out.push_bytes(fill);
        }
    }
    Ok(out)
}

fn ragged(
    key: &str,
    values: FeatureListColumn,
    partitions: &[ListPartition],
    find: impl Fn(&str) -> Option<usize>,
    take: &mut impl FnMut(usize) -> FeatureListColumn,
) -> Result<LaidList> {
    let mut columns = Vec::with_capacity(partitions.len());
    for p in partitions {
        let Some(part_key) = p.key() else {
            columns.push(None);
            continue;
        };
        let c = take(find(part_key).expect("every partition list is wanted"));
        if c.steps != values.steps {
            let record = c
                .steps
                .iter()
                .zip(&values.steps)
                .position(|(a, b)| a != b)
                .unwrap_or(0)
                .saturating_sub(1);
            let steps = |s: &[i64]| s.get(record + 1).copied().unwrap_or(0) - s[record];
            return Err(Error::schema(format!(
                "feature list {key:?}: partition {part_key:?} has {} steps but the values have {}",
                steps(&c.steps),
                steps(&values.steps)
            ))
            .with_key(key)
            .with_record(record as u64));
        }
        columns.push(Some(c));
    }
    let parts: Vec<Partition<'_>> = partitions
        .iter()
        .zip(&columns)
        .map(|(p, c)| {
            let rows = || {
                let c = c.as_ref().expect("a partition by a list has its column");
                let Column::Int64(v) = &c.values else {
                    unreachable!("partitions are read as int64");
                };
                Rows {
                    values: v.as_slice(),
                    splits: c.step_values.as_slice(),
                }
            };
            match p {
                ListPartition::RowSplits(_) => Partition::RowSplits(rows()),
                ListPartition::RowLengths(_) => Partition::RowLengths(rows()),
                ListPartition::RowStarts(_) => Partition::RowStarts(rows()),
                ListPartition::RowLimits(_) => Partition::RowLimits(rows()),
                ListPartition::ValueRowIds(_) => Partition::ValueRowIds(rows()),
                ListPartition::UniformRowLength(n) => Partition::UniformRowLength(*n),
            }
        })
        .collect();
    let levels = ragged_splits(key, &values.step_values, &parts).map_err(|mut e| {
        // The layout's rows are steps: name the record the step belongs to.
        e.record_index = e.record_index.map(|s| record_of(&values.steps, s as usize));
        e
    })?;
    Ok(LaidList {
        values: values.values,
        steps: values.steps,
        layout: Layout::Ragged { levels },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::example::{encode_sequence_example, Feature};

    fn record(lists: &[(&str, Vec<Feature>)]) -> Vec<u8> {
        encode_sequence_example::<&str, &str>(&[], lists)
    }

    fn ints(steps: &[&[i64]]) -> Vec<Feature> {
        steps.iter().map(|s| Feature::Int64(s.to_vec())).collect()
    }

    fn dense(key: &str, shape: Vec<usize>, allow_missing: bool) -> ListSpec {
        ListSpec {
            key: key.into(),
            dtype: DType::Int64,
            kind: ListKind::Dense {
                shape,
                allow_missing,
                pad: Some(Column::Int64(vec![-1])),
            },
        }
    }

    #[test]
    fn dense_lists_are_padded_to_the_longest_record() {
        let records = [
            record(&[("x", ints(&[&[1, 2], &[3, 4]]))]),
            record(&[("x", ints(&[&[5, 6]]))]),
            record(&[]),
        ];
        let schema = ListSchema::new(vec![dense("x", vec![2], true)]).unwrap();
        let laid = schema.parse(&records, true).unwrap();
        assert_eq!(laid[0].steps, vec![0, 2, 3, 3]);
        assert_eq!(laid[0].layout, Layout::Dense { width: Some(2) });
        assert_eq!(
            laid[0].values,
            Column::Int64(vec![1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, -1])
        );
        let unpadded = schema.parse(&records, false).unwrap();
        assert_eq!(unpadded[0].values, Column::Int64(vec![1, 2, 3, 4, 5, 6]));
        assert_eq!(unpadded[0].layout, Layout::Dense { width: None });
    }

    #[test]
    fn bytes_lists_are_padded_with_their_default() {
        let records = [
            record(&[(
                "b",
                vec![
                    Feature::Bytes(vec![b"a".to_vec()]),
                    Feature::Bytes(vec![b"b".to_vec()]),
                ],
            )]),
            record(&[("b", vec![Feature::Bytes(vec![b"c".to_vec()])])]),
        ];
        let spec = ListSpec {
            key: "b".into(),
            dtype: DType::Bytes,
            kind: ListKind::Dense {
                shape: vec![],
                allow_missing: false,
                pad: Some(Column::from_bytes(&[b"?"])),
            },
        };
        let laid = ListSchema::new(vec![spec])
            .unwrap()
            .parse(&records, true)
            .unwrap();
        assert_eq!(
            laid[0].values,
            Column::from_bytes(&[b"a", b"b", b"c", b"?"])
        );
    }

    #[test]
    fn a_step_of_the_wrong_size_or_a_missing_list_names_its_record() {
        let good = record(&[("x", ints(&[&[1, 2]]))]);
        let schema = ListSchema::new(vec![dense("x", vec![2], false)]).unwrap();
        for (bad, says) in [
            (
                record(&[("x", ints(&[&[2, 3], &[2, 3, 4]]))]),
                "step 1 has 3 values; expected 2",
            ),
            (
                record(&[("x", ints(&[&[2]]))]),
                "step 0 has 1 values; expected 2",
            ),
            (record(&[]), "is required but could not be found"),
        ] {
            let err = schema.parse(&[good.clone(), bad], true).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Schema);
            assert!(err.message.contains(says), "{}", err.message);
            assert_eq!((err.key.as_deref(), err.record_index), (Some("x"), Some(1)));
        }
    }

    #[test]
    fn ragged_lists_split_each_step_by_their_partitions() {
        let records = [
            record(&[
                ("v", ints(&[&[1, 2, 3], &[4]])),
                ("len", ints(&[&[2, 1], &[1]])),
            ]),
            record(&[("v", ints(&[&[5, 6]])), ("len", ints(&[&[2]]))]),
        ];
        let spec = ListSpec {
            key: "r".into(),
            dtype: DType::Int64,
            kind: ListKind::Ragged {
                value_key: "v".into(),
                partitions: vec![ListPartition::RowLengths("len".into())],
            },
        };
        let schema = ListSchema::new(vec![
            spec,
            ListSpec {
                key: "v".into(),
                dtype: DType::Int64,
                kind: ListKind::Var,
            },
        ])
        .unwrap();
        assert_eq!(schema.wanted().len(), 2);
        let laid = schema.parse(&records, true).unwrap();
        assert_eq!(laid[0].values, Column::Int64(vec![1, 2, 3, 4, 5, 6]));
        assert_eq!(laid[0].steps, vec![0, 2, 3]);
        assert_eq!(
            laid[0].layout,
            Layout::Ragged {
                levels: vec![vec![0, 2, 3, 4], vec![0, 2, 3, 4, 6]]
            }
        );
        // The value list is also read as a VarLen of its own: both get it.
        assert_eq!(
            laid[1].layout,
            Layout::Var {
                step_values: vec![0, 3, 4, 6]
            }
        );
        let uneven = [record(&[
            ("v", ints(&[&[1, 2]])),
            ("len", ints(&[&[1], &[1]])),
        ])];
        let err = schema.parse(&uneven, true).unwrap_err();
        assert!(
            err.message
                .contains("partition \"len\" has 2 steps but the values have 1"),
            "{}",
            err.message
        );
        let wrong = [
            record(&[("v", ints(&[&[1, 2]])), ("len", ints(&[&[5]]))]),
            records[0].clone(),
        ];
        let err = ListSchema::new(schema.specs()[..1].to_vec())
            .unwrap()
            .parse(&wrong[..1], true)
            .unwrap_err();
        assert_eq!(err.record_index, Some(0));
    }

    #[test]
    fn a_list_read_with_two_dtypes_is_refused() {
        let specs = vec![
            ListSpec {
                key: "len".into(),
                dtype: DType::Float32,
                kind: ListKind::Var,
            },
            ListSpec {
                key: "r".into(),
                dtype: DType::Int64,
                kind: ListKind::Ragged {
                    value_key: "v".into(),
                    partitions: vec![ListPartition::RowLengths("len".into())],
                },
            },
        ];
        let err = ListSchema::new(specs).unwrap_err();
        assert!(err
            .message
            .contains("reads \"len\" as int64, but it is read as float32 too"));
    }
}
