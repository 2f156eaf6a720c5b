//! The feature lists of serialized `SequenceExample`s, as `tf.io.parse_sequence_example`
//! reads them: for each wanted key, every step's values into one column, with the steps of
//! each record and the values of each step as row splits. (A `SequenceExample`'s context is
//! field 1, as an Example's features are: `parse_examples` reads it as it is.)

use rustc_hash::FxHashMap;

use crate::column::{Column, DType};
use crate::error::{Error, Result};
use crate::example::{for_each_map_entry, read_map_entry, EntryValue};
use crate::parse::{read_feature_into, PARALLEL_MIN_BYTES};
use crate::pool::{pool_usable, split_run};
use crate::wire::{self, WireReader};

/// One wanted feature list over a batch: record `r` has steps
/// `steps[r]..steps[r + 1]`, step `s` has values `step_values[s]..step_values[s + 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureListColumn {
    pub values: Column,
    pub steps: Vec<i64>,
    pub step_values: Vec<i64>,
    /// Whether each record has the feature list at all (an empty list is present).
    pub present: Vec<bool>,
}

impl FeatureListColumn {
    /// Appends the records of `more` (read after these).
    fn append(&mut self, more: FeatureListColumn) {
        let (values, steps) = (self.values.len() as i64, *self.steps.last().unwrap_or(&0));
        self.values.extend(&more.values);
        self.steps.extend(more.steps[1..].iter().map(|s| s + steps));
        self.step_values
            .extend(more.step_values[1..].iter().map(|v| v + values));
        self.present.extend(more.present);
    }

    fn new(dtype: DType) -> Self {
        FeatureListColumn {
            values: Column::empty(dtype),
            steps: vec![0],
            step_values: vec![0],
            present: Vec::new(),
        }
    }

    /// An empty column for `records` records of `bytes` bytes in all. Floats take 4 bytes
    /// each in a record, so `bytes / 4` of them is room enough: the column never grows by
    /// copying itself, which a batch of clips otherwise does a dozen times per list.
    fn with_room(dtype: DType, records: usize, bytes: usize) -> Self {
        let mut col = FeatureListColumn::new(dtype);
        if dtype == DType::Float32 {
            // A hint: where the memory cannot be had, the column grows as values come.
            let _ = col.values.try_reserve(bytes / 4);
        }
        col.steps.reserve(records);
        col.present.reserve(records);
        col
    }

    /// Gives back the room [`FeatureListColumn::with_room`] took that the values did not
    /// fill (in place: no copy).
    fn fit(&mut self) {
        if let Column::Float32(v) = &mut self.values {
            if v.capacity() - v.len() > v.len() / 4 {
                v.shrink_to_fit();
            }
        }
    }
}

/// Reads the feature lists `wanted` (key, dtype) of each record. Lists not wanted are
/// skipped unread; of a key given twice, the last list counts, as protobuf merges maps.
/// Batches of a quarter of [`PARALLEL_MIN_BYTES`] of records or more are split across
/// threads: a clip's steps are more work per byte than an Example's features (1,024
/// clips, 880 KiB, parse x1.07 faster split), but a batch of 256 clips parses x1.4 slower.
pub fn parse_feature_lists<T: AsRef<[u8]> + Sync>(
    wanted: &[(String, DType)],
    records: &[T],
) -> Result<Vec<FeatureListColumn>> {
    let mut lookup: FxHashMap<&[u8], usize> = FxHashMap::default();
    for (i, (key, _)) in wanted.iter().enumerate() {
        if lookup.insert(key.as_bytes(), i).is_some() {
            return Err(Error::invalid(format!(
                "duplicate feature list key {key:?}"
            )));
        }
    }
    let bytes: usize = records.iter().map(|r| r.as_ref().len()).sum();
    crate::memory::keep_freed_buffers_for(bytes);
    if records.len() < 64 || bytes < PARALLEL_MIN_BYTES / 4 || !pool_usable() {
        return read_run(wanted, &lookup, records, 0);
    }
    let runs = split_run(records.len(), |part| {
        let start = part.start;
        read_run(wanted, &lookup, &records[part], start)
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    let mut runs = runs.into_iter();
    let mut cols = runs.next().unwrap_or_default();
    for run in runs {
        for (col, more) in cols.iter_mut().zip(run) {
            col.append(more);
        }
    }
    Ok(cols)
}

/// The feature lists of `records`, the first of which is record `first` of the batch.
fn read_run<T: AsRef<[u8]>>(
    wanted: &[(String, DType)],
    lookup: &FxHashMap<&[u8], usize>,
    records: &[T],
    first: usize,
) -> Result<Vec<FeatureListColumn>> {
    let bytes = records.iter().map(|r| r.as_ref().len()).sum();
    let mut cols: Vec<FeatureListColumn> = wanted
        .iter()
        .map(|(_, dtype)| FeatureListColumn::with_room(*dtype, records.len(), bytes))
        .collect();
    // Where each column's record began: (values, steps), to undo a list given twice.
    let mut starts = vec![(0usize, 0usize); wanted.len()];
    for (r, record) in records.iter().enumerate() {
        for (col, start) in cols.iter_mut().zip(starts.iter_mut()) {
            col.present.push(false);
            *start = (col.values.len(), col.step_values.len());
        }
        read_record(record.as_ref(), wanted, lookup, &mut cols, &starts)
            .map_err(|e| e.with_record((first + r) as u64))?;
        for col in &mut cols {
            col.steps.push(col.step_values.len() as i64 - 1);
        }
    }
    cols.iter_mut().for_each(FeatureListColumn::fit);
    Ok(cols)
}

fn read_record(
    record: &[u8],
    wanted: &[(String, DType)],
    lookup: &FxHashMap<&[u8], usize>,
    cols: &mut [FeatureListColumn],
    starts: &[(usize, usize)],
) -> Result<()> {
    for_each_map_entry(record, 2, |entry| {
        let (key, value) = read_map_entry(entry)?;
        let Some(&i) = lookup.get(key) else {
            return Ok(());
        };
        let (key, dtype) = (&wanted[i].0, wanted[i].1);
        let col = &mut cols[i];
        let last = col.present.len() - 1;
        if col.present[last] {
            col.values.truncate(starts[i].0);
            col.step_values.truncate(starts[i].1);
        }
        col.present[last] = true;
        let joined;
        let list: &[u8] = match value {
            EntryValue::Absent => &[],
            EntryValue::One(b) => b,
            EntryValue::Many(parts) => {
                joined = parts.concat();
                &joined
            }
        };
        read_steps(list, dtype, col).map_err(|e| {
            let e = e.with_key(key);
            Error {
                message: format!("feature list {key:?}: {}", e.message),
                ..e
            }
        })
    })
}

/// The steps (`Feature`s) of one `FeatureList`.
fn read_steps(list: &[u8], dtype: DType, col: &mut FeatureListColumn) -> Result<()> {
    let mut at = packed_steps(list, 0, &mut col.values, &mut col.step_values);
    while at < list.len() {
        // Fast path: `0a n feature` with a one-byte length, as short steps are written.
        if list[at] == 0x0a && list.get(at + 1).is_some_and(|&n| n < 0x80) {
            let end = at + 2 + list[at + 1] as usize;
            if let Some(feature) = list.get(at + 2..end) {
                read_feature_into(feature, dtype, &mut col.values)?;
                col.step_values.push(col.values.len() as i64);
                at = packed_steps(list, end, &mut col.values, &mut col.step_values);
                continue;
            }
        }
        let mut steps = WireReader::new(&list[at..]);
        let (f, w) = steps.tag()?;
        if f != 1 || w != wire::LEN {
            steps.skip(f, w)?;
        } else {
            read_feature_into(steps.bytes()?, dtype, &mut col.values)?;
            col.step_values.push(col.values.len() as i64);
        }
        at = packed_steps(
            list,
            at + steps.pos(),
            &mut col.values,
            &mut col.step_values,
        );
    }
    Ok(())
}

/// Reads the steps of `list` from `at` on that are written as writers write them (one-byte
/// lengths, the values of the column's kind, packed, or none) straight into `values`, and
/// returns where the first other step begins, for the general reader to go on from. A
/// clip's steps are short and many: each otherwise costs a call that decodes the
/// `Feature` generically.
#[inline]
fn packed_steps(
    list: &[u8],
    mut at: usize,
    values: &mut Column,
    step_values: &mut Vec<i64>,
) -> usize {
    // `0a n` (a step), `12 m` or `1a m` (float or int64 list), `0a k` (packed values): the
    // values, and where the next step begins. An empty list is `0a 02 12 00` or
    // `0a 02 1a 00`.
    let step = |at: usize, kind: u8| -> Option<(&[u8], usize)> {
        let head = list.get(at..at + 4)?;
        if head == [0x0a, 0x02, kind, 0x00] {
            return Some((&[], at + 4));
        }
        let head = list.get(at..at + 6)?;
        let (n, m, k) = (head[1] as usize, head[3] as usize, head[5] as usize);
        let simple = head[0] == 0x0a && head[2] == kind && head[4] == 0x0a;
        (simple && n < 0x80 && n == m + 2 && m == k + 2)
            .then(|| list.get(at + 6..at + 6 + k).map(|p| (p, at + 6 + k)))
            .flatten()
    };
    match values {
        Column::Float32(v) => {
            while let Some((payload, next)) = step(at, 0x12).filter(|p| p.0.len() % 4 == 0) {
                wire::extend_f32_le(v, payload);
                step_values.push(v.len() as i64);
                at = next;
            }
        }
        Column::Int64(v) => {
            while let Some((payload, next)) = step(at, 0x1a) {
                let before = v.len();
                let mut p = WireReader::new(payload);
                let mut whole = true;
                while whole && !p.is_empty() {
                    match p.varint() {
                        Ok(x) => v.push(x as i64),
                        Err(_) => whole = false,
                    }
                }
                if !whole {
                    // Malformed: the general reader says how.
                    v.truncate(before);
                    break;
                }
                step_values.push(v.len() as i64);
                at = next;
            }
        }
        Column::Bytes { .. } => {}
    }
    at
}

/// A `FixedLenSequence` list of a batch as one dense array `[records, width, stride]`
/// (`width` the most steps of any record), `pad` after each record's own steps. Every step
/// must hold `stride` values (checked by the caller). The padding is bounded by
/// [`crate::parse::MAX_FILL`]: one long record cannot make a batch allocate without bound.
pub fn pad_steps<T: Copy>(
    key: &str,
    values: &[T],
    steps: &[i64],
    step_values: &[i64],
    stride: usize,
    pad: T,
) -> Result<(Vec<T>, usize)> {
    let records = steps.len().saturating_sub(1);
    let width = steps
        .windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .max()
        .unwrap_or(0);
    let row = width.saturating_mul(stride);
    let total = records.saturating_mul(row);
    let padding = total - values.len().min(total);
    if padding > crate::parse::MAX_FILL {
        return Err(Error::schema(format!(
            "feature {key:?}: padding to the longest record would fill in {padding} values that \
             no record holds, more than the {} a batch may; parse smaller batches",
            crate::parse::MAX_FILL
        ))
        .with_key(key));
    }
    let mut out = vec![pad; total];
    for r in 0..records {
        let (from, to) = (
            step_values[steps[r] as usize] as usize,
            step_values[steps[r + 1] as usize] as usize,
        );
        out[r * row..r * row + (to - from)].copy_from_slice(&values[from..to]);
    }
    Ok((out, width))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::example::{encode_sequence_example, Feature};

    fn record(lists: &[(&str, Vec<Feature>)]) -> Vec<u8> {
        encode_sequence_example::<&str, &str>(&[], lists)
    }

    #[test]
    fn steps_and_values_of_each_record() {
        let a = record(&[
            (
                "x",
                vec![Feature::Int64(vec![1, 2]), Feature::Int64(vec![3])],
            ),
            ("y", vec![Feature::Float(vec![0.5])]),
        ]);
        let b = record(&[("y", vec![])]);
        let wanted = [
            ("x".to_owned(), DType::Int64),
            ("y".to_owned(), DType::Float32),
        ];
        let cols = parse_feature_lists(&wanted, &[a, b]).unwrap();
        assert_eq!(cols[0].values, Column::Int64(vec![1, 2, 3]));
        assert_eq!(cols[0].steps, vec![0, 2, 2]);
        assert_eq!(cols[0].step_values, vec![0, 2, 3]);
        assert_eq!(cols[0].present, vec![true, false]);
        assert_eq!(cols[1].steps, vec![0, 1, 1]);
        assert_eq!(cols[1].present, vec![true, true]);
    }

    #[test]
    fn float_lists_keep_no_more_room_than_their_values_need() {
        // Room for every float the batch's bytes could hold is taken up front, and what
        // the values did not fill is given back.
        let records: Vec<Vec<u8>> = (0..300)
            .map(|i| {
                let steps = (0..i % 5)
                    .map(|s| Feature::Float(vec![s as f32; 3]))
                    .collect();
                record(&[
                    ("x", steps),
                    ("pad", vec![Feature::Bytes(vec![vec![0; 500]])]),
                ])
            })
            .collect();
        let wanted = [("x".to_owned(), DType::Float32)];
        let cols = parse_feature_lists(&wanted, &records).unwrap();
        let Column::Float32(values) = &cols[0].values else {
            panic!("floats")
        };
        assert_eq!(values.len(), (0..300).map(|i| (i % 5) * 3).sum::<usize>());
        assert!(values.capacity() <= values.len() + values.len() / 4);
    }

    #[test]
    fn a_large_batch_split_across_threads_reads_as_one_run() {
        let records: Vec<Vec<u8>> = (0..400)
            .map(|i| {
                let steps = (0..i % 7)
                    .map(|s| Feature::Float(vec![s as f32; 200]))
                    .collect();
                record(&[("x", steps), ("n", vec![Feature::Int64(vec![i as i64])])])
            })
            .collect();
        let wanted = [
            ("x".to_owned(), DType::Float32),
            ("n".to_owned(), DType::Int64),
        ];
        let lookup = wanted
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.as_bytes(), i))
            .collect();
        let whole = read_run(&wanted, &lookup, &records, 0).unwrap();
        assert_eq!(parse_feature_lists(&wanted, &records).unwrap(), whole);
        assert_eq!(whole[0].steps.len(), 401);

        let mut bad = records.clone();
        bad[399] = record(&[("n", vec![Feature::Float(vec![1.0])])]);
        let err = parse_feature_lists(&wanted, &bad).unwrap_err();
        assert_eq!(err.record_index, Some(399), "located in the whole batch");
    }

    #[test]
    fn padding_puts_each_record_in_its_own_rows() {
        // Records of 2, 0 and 1 steps of 2 values.
        let (out, width) = pad_steps(
            "k",
            &[1, 2, 3, 4, 5, 6],
            &[0, 2, 2, 3],
            &[0, 2, 4, 6],
            2,
            -1,
        )
        .unwrap();
        assert_eq!(width, 2);
        assert_eq!(out, vec![1, 2, 3, 4, -1, -1, -1, -1, 5, 6, -1, -1]);
    }

    #[test]
    fn a_list_of_the_wrong_type_names_its_key_and_record() {
        let good = record(&[("x", vec![Feature::Int64(vec![1])])]);
        let bad = record(&[("x", vec![Feature::Float(vec![1.0])])]);
        let wanted = [("x".to_owned(), DType::Int64)];
        let err = parse_feature_lists(&wanted, &[good, bad]).unwrap_err();
        assert_eq!((err.key.as_deref(), err.record_index), (Some("x"), Some(1)));
        assert!(
            err.message.starts_with("feature list \"x\": data types"),
            "{err}"
        );
    }

    fn put_len(out: &mut Vec<u8>, bytes: &[u8]) {
        wire::put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }

    /// A `SequenceExample` holding one feature list `x` whose steps are `steps`, each a
    /// `Feature` message as given.
    fn raw_list(steps: &[Vec<u8>]) -> Vec<u8> {
        let mut list = Vec::new();
        for step in steps {
            list.push(0x0a);
            put_len(&mut list, step);
        }
        let mut entry = vec![0x0a, 1, b'x', 0x12];
        put_len(&mut entry, &list);
        let mut lists = vec![0x0a];
        put_len(&mut lists, &entry);
        let mut record = vec![0x12];
        put_len(&mut record, &lists);
        record
    }

    fn floats(values: &[f32]) -> Vec<u8> {
        let packed: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut list = vec![0x0a];
        put_len(&mut list, &packed);
        let mut feature = vec![0x12];
        put_len(&mut feature, &list);
        feature
    }

    #[test]
    fn steps_written_every_way_read_alike() {
        // Packed with one-byte lengths (the quick way), two-byte lengths, one value per
        // field, empty, and a Feature with a field it does not know.
        let one_by_one = {
            let mut list = Vec::new();
            for v in [4.0f32, 5.0] {
                list.push(0x0d);
                list.extend(v.to_le_bytes());
            }
            let mut feature = vec![0x12];
            put_len(&mut feature, &list);
            feature
        };
        let mut unknown = floats(&[6.0]);
        unknown.extend([0x38, 0x01]);
        let long: Vec<f32> = (0..40).map(|i| i as f32).collect();
        let steps = [
            vec![0x12, 0x00],
            floats(&[1.0, 2.0]),
            floats(&long),
            floats(&[3.0]),
            one_by_one,
            floats(&[]),
            unknown,
            floats(&[7.0]),
            vec![0x12, 0x00],
            floats(&[8.0]),
        ];
        let wanted = [("x".to_owned(), DType::Float32)];
        let cols = parse_feature_lists(&wanted, &[raw_list(&steps)]).unwrap();
        let mut want = vec![1.0, 2.0];
        want.extend(&long);
        want.extend([3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(cols[0].values, Column::Float32(want));
        assert_eq!(
            cols[0].step_values,
            vec![0, 0, 2, 42, 43, 45, 45, 46, 47, 47, 48]
        );
        assert_eq!(cols[0].steps, vec![0, 10]);

        let ints = record(&[(
            "x",
            vec![
                Feature::Int64(vec![]),
                Feature::Int64(vec![1, 300, -5]),
                Feature::Int64(vec![]),
                Feature::Int64(vec![i64::MAX]),
                Feature::Empty,
                Feature::Int64(vec![]),
                Feature::Int64(vec![2]),
            ],
        )]);
        let wanted = [("x".to_owned(), DType::Int64)];
        let cols = parse_feature_lists(&wanted, &[ints]).unwrap();
        assert_eq!(cols[0].values, Column::Int64(vec![1, 300, -5, i64::MAX, 2]));
        assert_eq!(cols[0].step_values, vec![0, 0, 3, 3, 4, 4, 4, 5]);
    }

    #[test]
    fn a_bad_step_after_good_ones_is_an_error_naming_the_list() {
        let wanted = [("x".to_owned(), DType::Float32)];
        // A float step, then an int64 one.
        let mixed = raw_list(&[floats(&[1.0]), vec![0x1a, 3, 0x0a, 1, 1]]);
        let err = parse_feature_lists(&wanted, &[mixed]).unwrap_err();
        assert!(err.message.contains("data types don't match"), "{err}");
        assert_eq!(err.key.as_deref(), Some("x"));

        // An empty float list among int64 steps.
        let wanted = [("x".to_owned(), DType::Int64)];
        let empty = raw_list(&[vec![0x1a, 0x00], vec![0x12, 0x00], vec![0x1a, 0x00]]);
        let err = parse_feature_lists(&wanted, &[empty]).unwrap_err();
        assert!(err.message.contains("data types don't match"), "{err}");

        // A packed int64 step whose last varint never ends.
        let wanted = [("x".to_owned(), DType::Int64)];
        let cut = raw_list(&[vec![0x1a, 4, 0x0a, 2, 0x01, 0x80]]);
        let err = parse_feature_lists(&wanted, &[cut]).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("x"), "{err}");
        assert!(err.message.contains("truncated varint"), "{err}");
    }
}
