//! The Example codec and the batch parser agree with each other on arbitrary data, and
//! never panic on arbitrary bytes.

use proptest::prelude::*;
use tfrecordkit_core::{
    decode_example, encode_example, parse_examples, Column, DType, Feature, FeatureSpec, Schema,
    SpecKind,
};

fn feature() -> impl Strategy<Value = Feature> {
    prop_oneof![
        Just(Feature::Empty),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..5)
            .prop_map(Feature::Bytes),
        proptest::collection::vec(any::<f32>().prop_filter("not NaN", |f| !f.is_nan()), 0..5)
            .prop_map(Feature::Float),
        proptest::collection::vec(any::<i64>(), 0..5).prop_map(Feature::Int64),
    ]
}

fn example() -> impl Strategy<Value = Vec<(String, Feature)>> {
    proptest::collection::btree_map("[a-cé]{0,3}", feature(), 0..6)
        .prop_map(|m| m.into_iter().collect())
}

proptest! {
    #[test]
    fn encode_decode_round_trip(ex in example()) {
        let bytes = encode_example(&ex);
        prop_assert_eq!(decode_example(&bytes).unwrap(), ex);
    }

    #[test]
    fn varlen_parse_agrees_with_decode(batch in proptest::collection::vec(example(), 1..8)) {
        let records: Vec<Vec<u8>> = batch.iter().map(|e| encode_example(e)).collect();
        for (dtype, key) in [(DType::Int64, "a"), (DType::Float32, "b"), (DType::Bytes, "c")] {
            let schema = Schema::new(vec![FeatureSpec {
                key: key.into(), dtype, kind: SpecKind::VarLen, default: None,
            }]).unwrap();
            let wanted = |f: &Feature| f.kind().is_none_or(|k| k == dtype.kind());
            let all_match = batch.iter().all(|e| e.iter().filter(|(k, _)| k == key).all(|(_, f)| wanted(f)));
            match parse_examples(&schema, &records) {
                Ok(parsed) => {
                    prop_assert!(all_match);
                    let splits = parsed[0].row_splits.clone().unwrap();
                    prop_assert_eq!(splits.len(), batch.len() + 1);
                    for (i, e) in batch.iter().enumerate() {
                        let n = e.iter().find(|(k, _)| k == key).map_or(0, |(_, f)| f.len());
                        prop_assert_eq!((splits[i + 1] - splits[i]) as usize, n);
                    }
                    if let (DType::Int64, Column::Int64(v)) = (dtype, &parsed[0].values) {
                        let expected: Vec<i64> = batch.iter().flat_map(|e| {
                            e.iter().filter(|(k, _)| k == key).flat_map(|(_, f)| match f {
                                Feature::Int64(v) => v.clone(),
                                _ => vec![],
                            }).collect::<Vec<_>>()
                        }).collect();
                        prop_assert_eq!(v, &expected);
                    }
                }
                Err(e) => {
                    prop_assert!(!all_match, "{}", e);
                    prop_assert_eq!(e.key.as_deref(), Some(key));
                }
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        let _ = decode_example(&bytes);
        let _ = tfrecordkit_core::decode_sequence_example(&bytes);
        let schema = Schema::new(vec![
            FeatureSpec { key: "a".into(), dtype: DType::Int64, kind: SpecKind::FixedLen { shape: vec![2] }, default: Some(Column::Int64(vec![0])) },
            FeatureSpec { key: "b".into(), dtype: DType::Bytes, kind: SpecKind::FixedLenSequence { shape: vec![], allow_missing: true }, default: None },
        ]).unwrap();
        let _ = parse_examples(&schema, &[bytes]);
    }
}
