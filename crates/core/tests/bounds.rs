//! Schemas are claims a file may make: none sizes an allocation past the documented
//! bounds, and none makes the core panic.

use tfrecordkit_core::{
    encode_example, parse_examples, Column, DType, ErrorKind, Feature, FeatureSpec, Schema,
    SpecKind, MAX_FILL, MAX_VALUES,
};

fn fixed(key: &str, shape: Vec<usize>, default: Option<Column>) -> FeatureSpec {
    FeatureSpec {
        key: key.into(),
        dtype: DType::Float32,
        kind: SpecKind::FixedLen { shape },
        default,
    }
}

#[test]
fn shapes_past_the_bound_or_overflowing_are_schema_errors() {
    for shape in [
        vec![1 << 31],
        vec![1 << 31, 1 << 31],
        vec![usize::MAX, 2],
        vec![usize::MAX, usize::MAX, 0],
    ] {
        let err = Schema::new(vec![fixed("x", shape.clone(), None)]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Schema, "{shape:?}");
        assert_eq!(err.key.as_deref(), Some("x"));
    }
    assert!(Schema::new(vec![fixed("x", vec![MAX_VALUES], None)]).is_ok());
}

#[test]
fn defaults_fill_at_most_max_fill_values_per_batch() {
    let record = encode_example(&[("other".to_string(), Feature::Int64(vec![1]))]);
    let default = Some(Column::Float32(vec![0.0]));
    let schema = Schema::new(vec![fixed("x", vec![MAX_FILL + 1], default.clone())]).unwrap();
    let err = parse_examples(&schema, &[&record[..]]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert!(
        err.message.contains("parse smaller batches"),
        "{}",
        err.message
    );
    // Within the bound, the default fills in.
    let schema = Schema::new(vec![fixed("x", vec![3], default)]).unwrap();
    let parsed = parse_examples(&schema, &[&record[..], &record[..]]).unwrap();
    assert_eq!(parsed[0].shape, vec![2, 3]);
}

#[test]
fn padding_to_the_longest_record_is_bounded() {
    let long = encode_example(&[("s".to_string(), Feature::Int64(vec![0; 300_000]))]);
    let empty = encode_example(&[("s".to_string(), Feature::Int64(vec![]))]);
    let mut batch: Vec<&[u8]> = vec![&long[..]];
    batch.extend(std::iter::repeat_n(&empty[..], 1000));
    let schema = Schema::new(vec![FeatureSpec {
        key: "s".into(),
        dtype: DType::Int64,
        kind: SpecKind::FixedLenSequence {
            shape: vec![],
            allow_missing: true,
        },
        default: None,
    }])
    .unwrap();
    let err = parse_examples(&schema, &batch).unwrap_err();
    assert!(err.message.contains("padding"), "{}", err.message);
    let parsed = parse_examples(&schema, &batch[..10]).unwrap();
    assert_eq!(parsed[0].shape, vec![10, 300_000]);
}
