//! Schema-driven batch parsing, behaviour by behaviour: defaults, padding, missing
//! features, counts and dtypes that do not fit, every column kind, and the parallel path
//! agreeing with the serial one.

mod common;

use common::spec;
use tfrecordkit_core::{
    encode_example, parse_examples, Column, DType, ErrorKind, Feature, FeatureSpec, Parsed, Schema,
    SpecKind,
};

fn record(features: &[(&str, Feature)]) -> Vec<u8> {
    let owned: Vec<(String, Feature)> = features
        .iter()
        .map(|(k, f)| ((*k).to_string(), f.clone()))
        .collect();
    encode_example(&owned)
}

fn fixed(shape: &[usize]) -> SpecKind {
    SpecKind::FixedLen {
        shape: shape.to_vec(),
    }
}

fn sequence(shape: &[usize], allow_missing: bool) -> SpecKind {
    SpecKind::FixedLenSequence {
        shape: shape.to_vec(),
        allow_missing,
    }
}

fn parse(specs: Vec<FeatureSpec>, records: &[Vec<u8>]) -> tfrecordkit_core::Result<Vec<Parsed>> {
    let schema = Schema::new(specs).expect("a valid schema");
    let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    parse_examples(&schema, &slices)
}

fn ints(p: &Parsed) -> &[i64] {
    match &p.values {
        Column::Int64(v) => v,
        other => panic!("int64 values, not {other:?}"),
    }
}

#[test]
fn fixed_len_values_and_shape() {
    let records = vec![
        record(&[("x", Feature::Int64(vec![1, 2, 3, 4]))]),
        record(&[("x", Feature::Int64(vec![5, 6, 7, 8]))]),
    ];
    let out = parse(
        vec![spec("x", DType::Int64, fixed(&[2, 2]), None)],
        &records,
    )
    .unwrap();
    assert_eq!(out[0].shape, vec![2, 2, 2]);
    assert_eq!(ints(&out[0]), &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(out[0].row_splits.is_none());
}

#[test]
fn a_scalar_default_fills_every_value_and_a_full_default_its_own() {
    let records = vec![
        record(&[("x", Feature::Int64(vec![1, 2]))]),
        record(&[("other", Feature::Int64(vec![0]))]),
    ];
    let scalar = Some(Column::Int64(vec![9]));
    let out = parse(vec![spec("x", DType::Int64, fixed(&[2]), scalar)], &records).unwrap();
    assert_eq!(ints(&out[0]), &[1, 2, 9, 9]);
    let full = Some(Column::Int64(vec![7, 8]));
    let out = parse(vec![spec("x", DType::Int64, fixed(&[2]), full)], &records).unwrap();
    assert_eq!(ints(&out[0]), &[1, 2, 7, 8]);
}

#[test]
fn a_missing_feature_without_default_names_the_key_and_record() {
    let records = vec![
        record(&[("x", Feature::Int64(vec![1]))]),
        record(&[("y", Feature::Int64(vec![1]))]),
    ];
    let err = parse(vec![spec("x", DType::Int64, fixed(&[]), None)], &records).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert_eq!(err.key.as_deref(), Some("x"));
    assert_eq!(err.record_index, Some(1));
    assert!(err.message.contains("required"), "{}", err.message);
}

#[test]
fn a_wrong_count_or_dtype_is_a_schema_error() {
    let records = vec![record(&[("x", Feature::Int64(vec![1, 2, 3]))])];
    let err = parse(vec![spec("x", DType::Int64, fixed(&[2]), None)], &records).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert!(err.message.contains("has 3 values"), "{}", err.message);
    let err = parse(vec![spec("x", DType::Float32, fixed(&[3]), None)], &records).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert_eq!(err.key.as_deref(), Some("x"));
}

#[test]
fn var_len_values_and_row_splits() {
    let records = vec![
        record(&[("v", Feature::Float(vec![0.5, 1.5]))]),
        record(&[]),
        record(&[("v", Feature::Float(vec![2.5]))]),
    ];
    let out = parse(
        vec![spec("v", DType::Float32, SpecKind::VarLen, None)],
        &records,
    )
    .unwrap();
    assert_eq!(out[0].values, Column::Float32(vec![0.5, 1.5, 2.5]));
    assert_eq!(out[0].row_splits, Some(vec![0, 2, 2, 3]));
    assert_eq!(out[0].shape, vec![3]);
}

#[test]
fn bytes_values_keep_their_boundaries() {
    let records = vec![
        record(&[("b", Feature::Bytes(vec![b"ab".to_vec(), b"".to_vec()]))]),
        record(&[("b", Feature::Bytes(vec![b"xyz".to_vec()]))]),
    ];
    let out = parse(
        vec![spec("b", DType::Bytes, SpecKind::VarLen, None)],
        &records,
    )
    .unwrap();
    let values: Vec<&[u8]> = (0..out[0].values.len())
        .map(|i| out[0].values.bytes_at(i))
        .collect();
    assert_eq!(values, vec![&b"ab"[..], b"", b"xyz"]);
}

#[test]
fn sequences_pad_to_the_longest_record_with_the_default() {
    let records = vec![
        record(&[("s", Feature::Int64(vec![1, 2, 3, 4]))]),
        record(&[("s", Feature::Int64(vec![5, 6]))]),
        record(&[]),
    ];
    let pad = Some(Column::Int64(vec![-1]));
    let out = parse(
        vec![spec("s", DType::Int64, sequence(&[2], true), pad)],
        &records,
    )
    .unwrap();
    assert_eq!(out[0].shape, vec![3, 2, 2]);
    assert_eq!(ints(&out[0]), &[1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, -1]);
    // Without allow_missing the empty record is an error; a count that is not a multiple
    // of the element size is one too.
    let err = parse(
        vec![spec("s", DType::Int64, sequence(&[2], false), None)],
        &records,
    )
    .unwrap_err();
    assert_eq!((err.kind, err.record_index), (ErrorKind::Schema, Some(2)));
    let odd = vec![record(&[("s", Feature::Int64(vec![1, 2, 3]))])];
    let err = parse(
        vec![spec("s", DType::Int64, sequence(&[2], true), None)],
        &odd,
    )
    .unwrap_err();
    assert!(err.message.contains("a multiple of 2"), "{}", err.message);
}

#[test]
fn unpadded_sequences_come_as_var_len_values_checked_as_ever() {
    let records = vec![
        record(&[("s", Feature::Int64(vec![1, 2, 3, 4]))]),
        record(&[("s", Feature::Int64(vec![]))]),
        record(&[("s", Feature::Int64(vec![5, 6]))]),
    ];
    let specs = |allow_missing| {
        let pad = Some(Column::Int64(vec![-1]));
        vec![spec("s", DType::Int64, sequence(&[2], allow_missing), pad)]
    };
    let unpadded = |specs, records: &[Vec<u8>]| {
        let schema = Schema::new(specs).unwrap().unpadded();
        let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        parse_examples(&schema, &slices)
    };
    let out = unpadded(specs(false), &records).unwrap();
    assert_eq!(ints(&out[0]), &[1, 2, 3, 4, 5, 6]);
    assert_eq!(out[0].shape, vec![6]);
    assert_eq!(out[0].row_splits, Some(vec![0, 4, 4, 6]));
    // Present but empty is no missing feature; absent is, and so is a count that is no
    // multiple of the shape, as when padded.
    let missing = [records[0].clone(), record(&[])];
    let err = unpadded(specs(false), &missing).unwrap_err();
    assert_eq!((err.kind, err.record_index), (ErrorKind::Schema, Some(1)));
    let out = unpadded(specs(true), &missing).unwrap();
    assert_eq!(out[0].row_splits, Some(vec![0, 4, 4]));
    let odd = [record(&[("s", Feature::Int64(vec![1, 2, 3]))])];
    let err = unpadded(specs(true), &odd).unwrap_err();
    assert!(err.message.contains("a multiple of 2"), "{}", err.message);
}

#[test]
fn a_default_of_another_dtype_or_length_is_refused_with_the_schema() {
    let bad_dtype = spec(
        "x",
        DType::Int64,
        fixed(&[2]),
        Some(Column::Float32(vec![1.0])),
    );
    assert_eq!(
        Schema::new(vec![bad_dtype]).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
    let bad_len = spec(
        "x",
        DType::Int64,
        fixed(&[3]),
        Some(Column::Int64(vec![1, 2])),
    );
    assert!(Schema::new(vec![bad_len]).is_err());
    let twice = vec![
        spec("x", DType::Int64, fixed(&[]), None),
        spec("x", DType::Int64, SpecKind::VarLen, None),
    ];
    assert!(Schema::new(twice).is_err());
}

#[test]
fn a_large_batch_parses_as_its_parts_do() {
    // Large enough for the parallel path; the result must equal parsing in pieces.
    let records: Vec<Vec<u8>> = (0..20_000)
        .map(|i| {
            record(&[
                ("id", Feature::Int64(vec![i])),
                ("v", Feature::Float(vec![0.25; (i % 7) as usize])),
                ("name", Feature::Bytes(vec![format!("r{i}").into_bytes()])),
            ])
        })
        .collect();
    let specs = || {
        vec![
            spec("id", DType::Int64, fixed(&[]), None),
            spec("v", DType::Float32, SpecKind::VarLen, None),
            spec("name", DType::Bytes, fixed(&[]), None),
        ]
    };
    let whole = parse(specs(), &records).unwrap();
    let mut ids = Vec::new();
    let mut splits = vec![0i64];
    for part in records.chunks(1000) {
        let out = parse(specs(), part).unwrap();
        ids.extend_from_slice(ints(&out[0]));
        let base = *splits.last().unwrap();
        let row_splits = out[1].row_splits.as_ref().unwrap();
        splits.extend(row_splits[1..].iter().map(|s| s + base));
    }
    assert_eq!(ints(&whole[0]), ids.as_slice());
    assert_eq!(whole[1].row_splits.as_ref().unwrap(), &splits);
    assert_eq!(whole[2].values.bytes_at(12_345), b"r12345");
}

/// `i`, `v` and `n` read as `VarLen` columns, made into a `SparseFeature` `s` (indices
/// `i`, values `v`), a `RaggedFeature` `r` (`v` split by the row lengths `n`) and, third,
/// column `plain` as it is.
fn sparse_and_ragged(plain: usize) -> Schema {
    use tfrecordkit_core::{Assembly, PartitionSource};
    Schema::new(vec![
        spec("i", DType::Int64, SpecKind::VarLen, None),
        spec("v", DType::Float32, SpecKind::VarLen, None),
        spec("n", DType::Int64, SpecKind::VarLen, None),
    ])
    .unwrap()
    .with_assembly(vec![
        Assembly::Sparse {
            key: "s".into(),
            index: vec![("i".into(), 0)],
            value: 1,
            size: vec![10],
            already_sorted: false,
        },
        Assembly::Ragged {
            key: "r".into(),
            value: 1,
            partitions: vec![PartitionSource::RowLengths(2)],
        },
        Assembly::Column(plain),
    ])
    .unwrap()
}

#[test]
fn sparse_and_ragged_features_are_laid_out_from_their_columns() {
    use tfrecordkit_core::{Assembled, Assembly, SparseValues};
    let records = [
        record(&[
            ("i", Feature::Int64(vec![5, 2])),
            ("v", Feature::Float(vec![0.5, 0.25])),
            ("n", Feature::Int64(vec![1, 1])),
        ]),
        record(&[
            ("i", Feature::Int64(vec![7])),
            ("v", Feature::Float(vec![1.0])),
            ("n", Feature::Int64(vec![0, 1])),
        ]),
    ];
    let schema = sparse_and_ragged(2);
    let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let columns = parse_examples(&schema, &slices).unwrap();
    let refs: Vec<Option<&Parsed>> = columns.iter().map(Some).collect();
    let out = schema.assemble(&refs).unwrap();
    let Assembled::Sparse {
        indices,
        values: SparseValues::Gathered(values),
        dense_shape,
        row_splits,
    } = &out[0]
    else {
        panic!(
            "a sparse feature whose first record's entries are sorted: {:?}",
            out[0]
        );
    };
    assert_eq!(indices, &[0, 2, 0, 5, 1, 7]);
    assert_eq!(values, &Column::Float32(vec![0.25, 0.5, 1.0]));
    assert_eq!((dense_shape, row_splits), (&vec![2, 10], &vec![0, 2, 3]));
    assert_eq!(
        out[1],
        Assembled::Ragged {
            values: 1,
            levels: vec![vec![0, 2, 4], vec![0, 1, 2, 2, 3]],
        }
    );
    assert_eq!(out[2], Assembled::Column(2));
    // A column index past the schema is refused when the assembly is given.
    let bad = Schema::new(vec![spec("i", DType::Int64, SpecKind::VarLen, None)])
        .unwrap()
        .with_assembly(vec![Assembly::Column(3)]);
    assert!(bad.is_err());
}

#[test]
fn a_record_whose_partition_does_not_fit_is_named() {
    use tfrecordkit_core::{Assembly, PartitionSource};
    let records = [
        record(&[
            ("v", Feature::Int64(vec![1, 2])),
            ("n", Feature::Int64(vec![2])),
        ]),
        record(&[
            ("v", Feature::Int64(vec![1, 2])),
            ("n", Feature::Int64(vec![3])),
        ]),
    ];
    let schema = Schema::new(vec![
        spec("v", DType::Int64, SpecKind::VarLen, None),
        spec("n", DType::Int64, SpecKind::VarLen, None),
    ])
    .unwrap()
    .with_assembly(vec![Assembly::Ragged {
        key: "r".into(),
        value: 0,
        partitions: vec![PartitionSource::RowLengths(1)],
    }])
    .unwrap();
    let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let columns = parse_examples(&schema, &slices).unwrap();
    let refs: Vec<Option<&Parsed>> = columns.iter().map(Some).collect();
    let err = schema.assemble(&refs).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert_eq!((err.key.as_deref(), err.record_index), (Some("r"), Some(1)));
}

#[test]
fn records_pushed_one_at_a_time_parse_as_the_batch_does() {
    use tfrecordkit_core::ExampleParser;
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let blob = vec![i as u8; (i * 997) % 70_000];
            let mut features = vec![("blob", Feature::Bytes(vec![blob]))];
            if i % 3 != 0 {
                features.push(("ids", Feature::Int64((0..(i % 5) as i64).collect())));
            }
            record(&features)
        })
        .collect();
    let schema = Schema::new(vec![
        spec("blob", DType::Bytes, fixed(&[]), None),
        spec("ids", DType::Int64, SpecKind::VarLen, None),
        spec(
            "w",
            DType::Float32,
            fixed(&[2]),
            Some(Column::Float32(vec![0.5])),
        ),
    ])
    .unwrap();
    let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let whole = parse_examples(&schema, &slices).unwrap();
    let mut parser = ExampleParser::new(&schema, 4);
    parser.reserve_bytes(1 << 20);
    for r in &records {
        // Each record from the same buffer, overwritten by the next.
        let scratch = r.clone();
        parser.push(&scratch).unwrap();
    }
    assert_eq!(parser.len(), records.len());
    assert_eq!(parser.finish().unwrap(), whole);
    // An error names the record by the number pushed before it.
    let mut parser = ExampleParser::new(&schema, 4);
    parser.push(&records[0]).unwrap();
    let err = parser
        .push(&record(&[("blob", Feature::Int64(vec![1]))]))
        .unwrap_err();
    assert_eq!(
        (err.record_index, err.key.as_deref()),
        (Some(1), Some("blob"))
    );
}

fn nullable(specs: Vec<FeatureSpec>, keys: &[&str], records: &[Vec<u8>]) -> Vec<Parsed> {
    let schema = Schema::new(specs).unwrap().nullable(keys).unwrap();
    let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    parse_examples(&schema, &slices).unwrap()
}

#[test]
fn a_nullable_feature_is_null_where_missing_or_empty() {
    let records = vec![
        record(&[
            ("x", Feature::Int64(vec![7])),
            ("b", Feature::Bytes(vec![b"ab".to_vec()])),
        ]),
        record(&[("x", Feature::Int64(vec![]))]),
        record(&[("b", Feature::Bytes(vec![b"".to_vec()]))]),
        record(&[("x", Feature::Int64(vec![9]))]),
    ];
    let specs = vec![
        spec("x", DType::Int64, fixed(&[]), None),
        spec("b", DType::Bytes, fixed(&[]), None),
    ];
    let out = nullable(specs, &["x", "b"], &records);
    assert_eq!(out[0].shape, vec![4]);
    assert_eq!(ints(&out[0]), &[7, 0, 0, 9]);
    assert_eq!(out[0].valid, Some(vec![true, false, false, true]));
    assert!(out[0].row_splits.is_none());
    // An empty bytes value is a value; a missing feature is a null, read as empty.
    assert_eq!(
        out[1].values,
        Column::from_bytes(&[b"ab" as &[u8], b"", b"", b""])
    );
    assert_eq!(out[1].valid, Some(vec![true, false, true, false]));
}

#[test]
fn a_nullable_feature_of_another_count_names_the_record() {
    let records = vec![
        record(&[("w", Feature::Float(vec![1.0, 2.0]))]),
        record(&[]),
        record(&[("w", Feature::Float(vec![1.0]))]),
    ];
    let schema = Schema::new(vec![spec("w", DType::Float32, fixed(&[2]), None)])
        .unwrap()
        .nullable(&["w"])
        .unwrap();
    let out = parse_examples(&schema, &records[..2]).unwrap();
    assert_eq!(out[0].shape, vec![2, 2]);
    assert_eq!(out[0].values, Column::Float32(vec![1.0, 2.0, 0.0, 0.0]));
    assert_eq!(out[0].valid, Some(vec![true, false]));
    let err = parse_examples(&schema, &records).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert_eq!((err.record_index, err.key.as_deref()), (Some(2), Some("w")));
    assert!(
        err.message
            .contains("has 1 values; expected 2, or none for a null"),
        "{}",
        err.message
    );
    // Features not made nullable are as ever: no validity, missing is an error.
    let plain = Schema::new(vec![spec("w", DType::Float32, fixed(&[2]), None)]).unwrap();
    let out = parse_examples(&plain, &records[..1]).unwrap();
    assert!(out[0].valid.is_none());
    assert!(parse_examples(&plain, &records[..2]).is_err());
}

#[test]
fn a_nullable_var_len_feature_is_null_only_where_missing() {
    let records = vec![
        record(&[("v", Feature::Float(vec![0.5, 1.5]))]),
        record(&[]),
        record(&[("v", Feature::Float(vec![]))]),
        record(&[("v", Feature::Float(vec![2.5]))]),
        // A `Feature` with no list of any kind: present, and empty.
        vec![0x0a, 0x07, 0x0a, 0x05, 0x0a, 0x01, b'v', 0x12, 0x00],
    ];
    let specs = vec![spec("v", DType::Float32, SpecKind::VarLen, None)];
    let out = nullable(specs, &["v"], &records);
    assert_eq!(out[0].values, Column::Float32(vec![0.5, 1.5, 2.5]));
    assert_eq!(out[0].row_splits, Some(vec![0, 2, 2, 2, 3, 3]));
    assert_eq!(out[0].valid, Some(vec![true, false, true, true, true]));
}

#[test]
fn only_fixed_len_and_var_len_features_without_a_default_can_be_nullable() {
    let schema = || {
        Schema::new(vec![
            spec("d", DType::Int64, fixed(&[]), Some(Column::Int64(vec![0]))),
            spec("s", DType::Int64, sequence(&[], true), None),
        ])
        .unwrap()
    };
    for (key, says) in [
        ("d", "default"),
        ("s", "FixedLenSequence"),
        ("nope", "not read"),
    ] {
        let err = schema().nullable(&[key]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{key}");
        assert!(err.message.contains(says), "{key}: {}", err.message);
    }
}

#[test]
fn a_nullable_column_that_sparse_and_ragged_features_read_lays_them_out_as_ever() {
    // A feature read plainly, nullable, and also as the part of a composite one: the
    // composite takes a missing key as no entries, as it does without nulls.
    use tfrecordkit_core::Assembled;
    let records = [
        record(&[
            ("i", Feature::Int64(vec![3, 1])),
            ("v", Feature::Float(vec![0.5, 0.25])),
            ("n", Feature::Int64(vec![1, 1])),
        ]),
        record(&[("v", Feature::Float(vec![]))]),
    ];
    let schema = sparse_and_ragged(0).nullable(&["i", "n"]).unwrap();
    let columns = parse_examples(&schema, &records).unwrap();
    assert_eq!(columns[0].valid, Some(vec![true, false]));
    assert_eq!(columns[0].row_splits.as_deref(), Some(&[0, 2, 2][..]));
    let refs: Vec<Option<&Parsed>> = columns.iter().map(Some).collect();
    let out = schema.assemble(&refs).unwrap();
    let Assembled::Sparse {
        indices,
        row_splits,
        ..
    } = &out[0]
    else {
        panic!("not sparse: {:?}", out[0]);
    };
    assert_eq!(
        (indices.as_slice(), row_splits.as_slice()),
        (&[0, 1, 0, 3][..], &[0, 2, 2][..])
    );
    let Assembled::Ragged { levels, .. } = &out[1] else {
        panic!("not ragged: {:?}", out[1]);
    };
    assert_eq!(levels, &vec![vec![0, 2, 2], vec![0, 1, 2]]);
}

#[test]
fn a_large_nullable_batch_parses_as_its_parts_do() {
    let records: Vec<Vec<u8>> = (0..20_000)
        .map(|i| match i % 3 {
            0 => record(&[("id", Feature::Int64(vec![i]))]),
            1 => record(&[("id", Feature::Int64(vec![]))]),
            _ => record(&[("v", Feature::Float(vec![0.5; 8]))]),
        })
        .collect();
    let specs = || {
        vec![
            spec("id", DType::Int64, fixed(&[]), None),
            spec("v", DType::Float32, SpecKind::VarLen, None),
        ]
    };
    let whole = nullable(specs(), &["id", "v"], &records);
    let mut ids = Vec::new();
    let mut valid = Vec::new();
    let mut lists = Vec::new();
    for part in records.chunks(999) {
        let out = nullable(specs(), &["id", "v"], part);
        ids.extend_from_slice(ints(&out[0]));
        valid.extend(out[0].valid.clone().unwrap());
        lists.extend(out[1].valid.clone().unwrap());
    }
    assert_eq!(ints(&whole[0]), ids.as_slice());
    assert_eq!(whole[0].valid.as_ref(), Some(&valid));
    assert_eq!(whole[1].valid.as_ref(), Some(&lists));
    assert_eq!(lists.iter().filter(|&&v| v).count(), 6_666);
    assert_eq!(valid.iter().filter(|&&v| v).count(), 6_667);
    assert_eq!(ids[3], 3);
    assert_eq!(ids[4], 0);
}
