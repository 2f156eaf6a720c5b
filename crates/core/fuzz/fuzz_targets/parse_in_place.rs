//! Large Examples parsed where they are read agree with `parse_examples`: arbitrary
//! records (split at 0xFF bytes), each made large by an unwanted feature appended to it
//! (over 1 MiB for a record of 16k + 15 bytes), read from a file into the batch's
//! bytes columns and parsed there, in batches that end before each record over 1 MiB.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::in_place::HOST_MAX;
use tfrecordkit_core::reader::DIRECT_MIN;
use tfrecordkit_core::{
    frame_record, parse_examples, Column, DType, ExampleParser, FeatureSpec, MultiFileReader,
    parse_each, ReadOptions, RecordBatch, Schema, SpecKind,
};

fn schema() -> Schema {
    let spec = FeatureSpec::new;
    Schema::new(vec![
        spec("a", DType::Int64, SpecKind::VarLen, None),
        spec("c", DType::Bytes, SpecKind::FixedLen { shape: vec![] }, Some(Column::from_bytes(&[b"x"]))),
        spec("e", DType::Bytes, SpecKind::VarLen, None),
    ])
    .expect("a valid schema")
}

fn field(number: u8, body: &[u8], out: &mut Vec<u8>) {
    out.push(number << 3 | 2);
    let mut n = body.len();
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(body);
}

/// `record` with an entry for the unwanted key "z" of `DIRECT_MIN` bytes after it, or
/// of more than `HOST_MAX` bytes for a record of `16 * k + 15` bytes.
fn enlarged(record: &[u8]) -> Vec<u8> {
    let (mut list, mut feature, mut entry, mut features) = (vec![], vec![], vec![], vec![]);
    let len = DIRECT_MIN as usize + if record.len() % 16 == 15 { HOST_MAX } else { 0 };
    field(1, &vec![7u8; len], &mut list);
    field(1, &list, &mut feature);
    field(1, b"z", &mut entry);
    field(2, &feature, &mut entry);
    field(1, &entry, &mut features);
    let mut out = record.to_vec();
    field(1, &features, &mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let records: Vec<Vec<u8>> = data.split(|&b| b == 0xFF).map(enlarged).collect();
    let mut framed = Vec::new();
    for r in &records {
        frame_record(r, &mut framed);
    }
    let path = std::env::temp_dir().join(format!("tfrk-fuzz-in-place-{}", std::process::id()));
    std::fs::write(&path, &framed).expect("a temporary file");
    let schema = schema();
    let mut reader = MultiFileReader::new(
        vec![path.to_string_lossy().into_owned()],
        ReadOptions::default(),
        None,
    );
    let mut scratch = Vec::new();
    let bounds = (usize::MAX, usize::MAX);
    let mut start = 0;
    loop {
        let mut batch = RecordBatch::default();
        let mut parser = ExampleParser::new(&schema, records.len());
        let got = parse_each(&mut reader, &mut batch, bounds, &mut parser, 1 << 20, &mut scratch)
            .and_then(|()| parser.finish());
        if batch.is_empty() {
            assert_eq!(start, records.len(), "every record was read");
            break;
        }
        // A batch ends before a record over HOST_MAX: "c" holds a value (its default, if
        // no other) after any record, so the parser has a column to keep it in.
        let end = (start + 1..records.len())
            .find(|&i| records[i].len() > HOST_MAX)
            .unwrap_or(records.len());
        match (got, parse_examples(&schema, &records[start..end])) {
            (Ok(got), Ok(want)) => {
                assert_eq!(batch.len(), end - start);
                assert_eq!(got, want);
            }
            (Err(got), Err(want)) => {
                assert_eq!(
                    (got.kind, got.record_index, got.key),
                    (want.kind, want.record_index, want.key)
                );
                break;
            }
            (got, want) => panic!("{:?} against {:?}", got.map(|_| ()), want.map(|_| ())),
        }
        start = end;
    }
});
