//! Schema-driven batch parsing of arbitrary records, split into a batch at 0xFF bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::{parse_examples, Column, DType, FeatureSpec, Schema, SpecKind};

fn schema() -> Schema {
    let spec = FeatureSpec::new;
    Schema::new(vec![
        spec("a", DType::Int64, SpecKind::FixedLen { shape: vec![2] }, Some(Column::Int64(vec![7]))),
        spec("b", DType::Float32, SpecKind::VarLen, None),
        spec("c", DType::Bytes, SpecKind::FixedLen { shape: vec![] }, Some(Column::from_bytes(&[b"x"]))),
        spec(
            "d",
            DType::Int64,
            SpecKind::FixedLenSequence { shape: vec![2], allow_missing: true },
            None,
        ),
        spec("e", DType::Bytes, SpecKind::VarLen, None),
    ])
    .expect("a valid schema")
}

fuzz_target!(|data: &[u8]| {
    let records: Vec<&[u8]> = data.split(|&b| b == 0xFF).collect();
    if let Ok(parsed) = parse_examples(&schema(), &records) {
        assert_eq!(parsed[0].shape, vec![records.len(), 2]);
        assert_eq!(parsed[1].row_splits.as_ref().map(Vec::len), Some(records.len() + 1));
    }
});
