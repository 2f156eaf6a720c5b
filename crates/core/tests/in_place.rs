//! Large Examples parsed where they are read (in the end of a bytes column, its values
//! then moved down over the record) give what `parse_examples` gives, on every wire shape
//! a bytes feature can take: repeated keys, a `Feature` split over entries, lists of other
//! kinds, empty values, large values in a column other than the one read into, and
//! records too large to read into a column that holds values already.

mod common;

use common::{spec, write_framed};
use tfrecordkit_core::in_place::HOST_MAX;
use tfrecordkit_core::reader::DIRECT_MIN;
use tfrecordkit_core::{
    parse_each, parse_examples, Column, DType, ErrorKind, ExampleParser, MultiFileReader, Parsed,
    ReadOptions, RecordBatch, Schema, SpecKind,
};

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field.
fn field(number: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(number << 3 | 2, &mut out);
    varint(body.len() as u64, &mut out);
    out.extend_from_slice(body);
    out
}

fn bytes_list(values: &[&[u8]]) -> Vec<u8> {
    let list: Vec<u8> = values.iter().flat_map(|v| field(1, v)).collect();
    field(1, &list)
}

fn int64_list(values: &[u64]) -> Vec<u8> {
    let mut packed = Vec::new();
    for &v in values {
        varint(v, &mut packed);
    }
    field(3, &field(1, &packed))
}

/// A map entry whose `Feature` is given as one or more serialized pieces.
fn entry(key: &str, pieces: &[Vec<u8>]) -> Vec<u8> {
    let mut body = field(1, key.as_bytes());
    for piece in pieces {
        body.extend(field(2, piece));
    }
    field(1, &body)
}

fn example(entries: &[Vec<u8>]) -> Vec<u8> {
    field(1, &entries.concat())
}

fn blob(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

fn schema() -> Schema {
    Schema::new(vec![
        spec("a", DType::Bytes, SpecKind::VarLen, None),
        spec(
            "b",
            DType::Bytes,
            SpecKind::FixedLen { shape: vec![] },
            Some(Column::from_bytes(&[b"none"])),
        ),
        spec("n", DType::Int64, SpecKind::VarLen, None),
    ])
    .unwrap()
}

/// Records in every shape, most of them large enough to be read in place.
fn records() -> Vec<Vec<u8>> {
    let big = DIRECT_MIN as usize;
    let (x, y, z) = (blob(big, 1), blob(big + 300, 7), blob(3 * big, 9));
    let b = |v: &[u8]| entry("b", &[bytes_list(&[v])]);
    vec![
        // The large value first, then small features.
        example(&[
            entry("a", &[bytes_list(&[&x])]),
            b(b"small"),
            entry("n", &[int64_list(&[1, 2])]),
        ]),
        // Small features first, several values, an empty one among them.
        example(&[
            entry("n", &[int64_list(&[3])]),
            b(b"s"),
            entry("a", &[bytes_list(&[b"", &y, b"tail", &x])]),
        ]),
        // A repeated key: the last entry wins.
        example(&[
            entry("a", &[bytes_list(&[&z])]),
            b(b"first"),
            entry("a", &[bytes_list(&[b"q", &y])]),
        ]),
        // A Feature split over two entries of one key, merged.
        example(&[
            entry("a", &[bytes_list(&[&x]), bytes_list(&[b"joined", &y])]),
            b(b"x"),
        ]),
        // A list of another kind replaced by a bytes list; "b" missing (its default).
        example(&[entry("a", &[int64_list(&[5]), bytes_list(&[&y])])]),
        // The large value in "b", which is not the column read into at first.
        example(&[entry("a", &[bytes_list(&[b"short"])]), b(&z)]),
        // A small record between large ones.
        example(&[entry("a", &[bytes_list(&[b"tiny"])]), b(b"t")]),
        // No "a" at all (VarLen: no values), a large unwanted feature.
        example(&[entry("skip", &[bytes_list(&[&z])]), b(b"u")]),
        example(&[entry("a", &[bytes_list(&[&z, &z])]), b(&y)]),
        // Too large to read into a column: read apart, its values copied out.
        example(&[entry("a", &[bytes_list(&[&blob(HOST_MAX, 8)])]), b(b"v")]),
    ]
}

/// `records` parsed by reading them from a file, in place, in batches of `per_batch`.
fn parse_in_place(
    schema: &Schema,
    records: &[Vec<u8>],
    per_batch: usize,
) -> Vec<tfrecordkit_core::Result<Vec<Parsed>>> {
    let dir = tempfile::tempdir().unwrap();
    let path = write_framed(dir.path(), "a", records);
    let mut reader = MultiFileReader::new(vec![path], ReadOptions::default(), None);
    let mut out = Vec::new();
    let mut batch = RecordBatch::default();
    let mut scratch = Vec::new();
    let mut host = None;
    loop {
        batch.clear();
        let mut parser = ExampleParser::new(schema, per_batch);
        parser.prefer_host(host);
        let bounds = (per_batch, usize::MAX);
        let read = parse_each(
            &mut reader,
            &mut batch,
            bounds,
            &mut parser,
            1 << 20,
            &mut scratch,
        );
        host = parser.fullest_bytes_column();
        if batch.is_empty() {
            return out;
        }
        out.push(read.and_then(|()| parser.finish()));
    }
}

/// `parse_in_place`, every batch parsed, against `parse_examples` of each of `chunks`.
fn assert_parsed_as(
    schema: &Schema,
    records: &[Vec<u8>],
    per_batch: usize,
    chunks: Vec<&[Vec<u8>]>,
) -> Vec<Vec<Parsed>> {
    let got: Vec<Vec<Parsed>> = parse_in_place(schema, records, per_batch)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let want: Vec<Vec<Parsed>> = chunks
        .into_iter()
        .map(|chunk| parse_examples(schema, chunk).unwrap())
        .collect();
    assert_eq!(got, want, "batches of {per_batch}");
    got
}

/// `records` cut into batches as `parse_in_place` reads them with `schema()`: at most
/// `per_batch` records, and one over `HOST_MAX` starts a batch (after any record, the
/// bytes column "b" holds a value, the default where the record has none).
fn batches(records: &[Vec<u8>], per_batch: usize) -> Vec<&[Vec<u8>]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, record) in records.iter().enumerate() {
        if i > start && (i - start == per_batch || record.len() > HOST_MAX) {
            out.push(&records[start..i]);
            start = i;
        }
    }
    out.push(&records[start..]);
    out
}

#[test]
fn every_wire_shape_parses_as_the_batch_does() {
    let schema = schema();
    let records = records();
    for per_batch in [1, 2, 3, records.len()] {
        assert_parsed_as(&schema, &records, per_batch, batches(&records, per_batch));
    }
}

#[test]
fn the_column_read_into_is_the_one_holding_most() {
    // "b" holds the most after the first record, so later ones are read into it while
    // the large values of "a" are copied into their column.
    let big = DIRECT_MIN as usize;
    let (x, y, z) = (blob(big, 2), blob(big + 1, 4), blob(4 * big, 6));
    let records = vec![
        example(&[
            entry("a", &[bytes_list(&[b"s"])]),
            entry("b", &[bytes_list(&[&z])]),
        ]),
        example(&[
            entry("a", &[bytes_list(&[&x, &x])]),
            entry("b", &[bytes_list(&[&y])]),
        ]),
        example(&[
            entry("b", &[bytes_list(&[&x])]),
            entry("a", &[bytes_list(&[&y])]),
        ]),
        example(&[entry("a", &[bytes_list(&[&y])])]),
    ];
    let schema = schema();
    assert_parsed_as(&schema, &records, records.len(), vec![&records]);
}

#[test]
fn a_record_that_starts_its_column_keeps_its_value_where_it_was_read() {
    // Larger than HOST_MAX, first in its batch: read into the column "a" (the first bytes
    // column, all being empty), whose first value stays put, the record's bytes before it
    // left as the column's lead. Records after it are read in as before, up to the next
    // one larger than HOST_MAX, which starts the next batch the same way.
    let big = blob(2 * HOST_MAX, 5);
    let first = example(&[
        entry("n", &[int64_list(&[7])]),
        entry("a", &[bytes_list(&[&big, b"after"])]),
        entry("b", &[bytes_list(&[b"one"])]),
    ]);
    let last = example(&[entry("a", &[bytes_list(&[&big])])]);
    let records = vec![
        first.clone(),
        example(&[entry("a", &[bytes_list(&[&blob(DIRECT_MIN as usize, 3)])])]),
        example(&[entry("a", &[bytes_list(&[b"small"])])]),
        last.clone(),
    ];
    let schema = schema();
    let got = assert_parsed_as(
        &schema,
        &records,
        records.len(),
        vec![&records[..3], &records[3..]],
    );
    for (batch, (record, values)) in got.iter().zip([(&first, 4), (&last, 1)]) {
        let Column::Bytes { data, ends, lead } = &batch[0].values else {
            panic!("a bytes column")
        };
        let offset = record
            .windows(64)
            .position(|w| w == &big[..64])
            .expect("the value is in the record");
        assert_eq!(*lead, offset, "the record's bytes before the value");
        assert_eq!(&data[*lead..ends[0]], big.as_slice());
        assert_eq!(ends.len(), values);
    }
}

#[test]
fn a_column_keeps_no_lead_larger_than_a_quarter_of_its_value() {
    // The record's first value of "a" comes after a large unwanted feature: kept as a
    // lead, those bytes would stay with the column, so the value moves down instead.
    let records = [
        example(&[
            entry("skip", &[bytes_list(&[&blob(2 * DIRECT_MIN as usize, 1)])]),
            entry("a", &[bytes_list(&[b"tiny"])]),
        ]),
        example(&[
            entry("b", &[bytes_list(&[&blob(400, 2)])]),
            entry("a", &[bytes_list(&[&blob(DIRECT_MIN as usize, 3)])]),
        ]),
    ];
    let schema = schema();
    for (record, lead_kept) in records.iter().zip([false, true]) {
        let records = std::slice::from_ref(record);
        let mut got = parse_in_place(&schema, records, 1);
        let got = got.remove(0).unwrap();
        assert_eq!(got, parse_examples(&schema, records).unwrap());
        let Column::Bytes { data, ends, lead } = &got[0].values else {
            panic!("a bytes column")
        };
        assert_eq!(*lead > 0, lead_kept, "lead {lead}");
        assert_eq!(data.len(), ends[0], "no bytes past the value");
    }
}

#[test]
fn a_batch_reads_its_first_record_into_the_column_that_held_most_before() {
    // Each record holds its large value in "b", the schema's second bytes column, and
    // starts a batch of its own. The first batch reads it into "a", the first column, and
    // copies the value out; later batches read it into "b", where the value stays put.
    let records: Vec<Vec<u8>> = (0..3)
        .map(|i| example(&[entry("b", &[bytes_list(&[&blob(HOST_MAX + 10, i)])])]))
        .collect();
    let schema = schema();
    let got = assert_parsed_as(
        &schema,
        &records,
        records.len(),
        records.chunks(1).collect(),
    );
    let leads: Vec<usize> = got
        .iter()
        .map(|batch| match &batch[1].values {
            Column::Bytes { lead, .. } => *lead,
            _ => panic!("a bytes column"),
        })
        .collect();
    assert_eq!(leads[0], 0, "{leads:?}");
    assert!(leads[1..].iter().all(|&l| l > 0), "{leads:?}");
}

#[test]
fn schemas_without_bytes_columns_parse_large_records_too() {
    let schema = Schema::new(vec![spec("n", DType::Int64, SpecKind::VarLen, None)]).unwrap();
    let records = records();
    assert_parsed_as(&schema, &records, 4, records.chunks(4).collect());
}

#[test]
fn a_bad_large_record_is_named_as_the_batch_names_it() {
    let schema = schema();
    let x = blob(DIRECT_MIN as usize, 3);
    let mut records = records();
    // "a" holds int64s in the end: the wrong kind, found after its bytes were noted.
    records.insert(
        2,
        example(&[entry("a", &[bytes_list(&[&x]), int64_list(&[1])])]),
    );
    // A truncated value inside a large record.
    let mut cut = example(&[entry("a", &[bytes_list(&[&x])])]);
    cut.truncate(cut.len() - 10);
    records.push(cut);
    let got = parse_in_place(&schema, &records, records.len());
    let err = got.into_iter().next().unwrap().unwrap_err();
    let want = parse_examples(&schema, &records).unwrap_err();
    assert_eq!(
        (err.kind, err.record_index, err.key.as_deref()),
        (want.kind, want.record_index, want.key.as_deref())
    );
    assert_eq!(err.kind, ErrorKind::Schema);
    // Each batch of one: the truncated record is a decode error, and the rest parse.
    let got = parse_in_place(&schema, &records, 1);
    let kinds: Vec<Option<ErrorKind>> = got
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.kind))
        .collect();
    let want: Vec<Option<ErrorKind>> = records
        .chunks(1)
        .map(|c| parse_examples(&schema, c).err().map(|e| e.kind))
        .collect();
    assert_eq!(kinds, want);
    assert!(want.iter().filter(|k| k.is_some()).count() == 2, "{want:?}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Damaged large records (bytes changed near either end, or cut) parse in place as
    /// in a batch: the same values, or an error of the same kind for the same record.
    #[test]
    fn damaged_large_records_parse_as_the_batch_does(
        pick in 0usize..10,
        edits in proptest::collection::vec((0usize..96, proptest::prelude::any::<u8>(), proptest::prelude::any::<bool>()), 1..4),
        cut in 0usize..64,
    ) {
        let schema = schema();
        let mut record = records()[pick].clone();
        for (at, byte, from_end) in edits {
            let i = if from_end { record.len().saturating_sub(at + 1) } else { at.min(record.len() - 1) };
            record[i] = byte;
        }
        record.truncate(record.len().saturating_sub(cut));
        let records = vec![records()[0].clone(), record];
        let got = parse_in_place(&schema, &records, 2).pop().unwrap();
        let last = batches(&records, 2).pop().unwrap();
        match (got, parse_examples(&schema, last)) {
            (Ok(got), Ok(want)) => proptest::prop_assert_eq!(got, want),
            (Err(got), Err(want)) => proptest::prop_assert_eq!(
                (got.kind, got.record_index, got.key),
                (want.kind, want.record_index, want.key)
            ),
            (got, want) => proptest::prop_assert!(false, "{:?} against {:?}", got.map(|_| ()), want.map(|_| ())),
        }
    }
}

#[test]
fn a_nullable_bytes_feature_parses_in_place_as_the_batch_does() {
    let schema = Schema::new(vec![
        spec("a", DType::Bytes, SpecKind::VarLen, None),
        spec(
            "b",
            DType::Bytes,
            SpecKind::FixedLen { shape: vec![] },
            None,
        ),
        spec("n", DType::Int64, SpecKind::VarLen, None),
    ])
    .unwrap()
    .nullable(&["b"])
    .unwrap();
    let records = records();
    for per_batch in [1, 2, 3, records.len()] {
        let got = assert_parsed_as(&schema, &records, per_batch, batches(&records, per_batch));
        let valid: Vec<bool> = got
            .iter()
            .flat_map(|batch| batch[1].valid.clone().unwrap())
            .collect();
        // Only the record with no "b" is null there.
        let nulls: Vec<usize> = (0..valid.len()).filter(|&i| !valid[i]).collect();
        assert_eq!(nulls, vec![4], "batches of {per_batch}");
    }
}
