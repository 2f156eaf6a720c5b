use super::accum::SplitAcc;
use super::*;
use crate::example::{encode_example, Feature};
use crate::wire::put_varint;

fn example(features: Vec<(&str, Feature)>) -> Vec<u8> {
    encode_example(&features)
}

fn acc_of(records: &[Vec<u8>]) -> SplitAcc {
    let mut acc = SplitAcc::default();
    for r in records {
        acc.add_example(r).unwrap();
    }
    acc
}

fn feature<'a>(s: &'a SplitSummary, name: &str) -> &'a FeatureSummary {
    s.features.iter().find(|f| f.name == name).unwrap()
}

#[test]
fn counts_presence_kinds_lengths_and_moments() {
    let mut records = Vec::new();
    for i in 0..1000i64 {
        let mut f = vec![("id", Feature::Int64(vec![i]))];
        if i % 4 != 0 {
            f.push(("score", Feature::Float(vec![i as f32 * 0.5, f32::NAN])));
        }
        f.push((
            "tags",
            Feature::Bytes(vec![b"a".to_vec(); (i % 3) as usize]),
        ));
        records.push(example(f));
    }
    let s = acc_of(&records).summary("all", 1, 10);
    assert_eq!(s.records, 1000);
    let id = feature(&s, "id");
    assert_eq!((id.present, id.missing), (1000, 0));
    assert_eq!(id.kinds, vec![("int64", 1000)]);
    assert_eq!(id.lengths, vec![(1, 1000)]);
    let n = id.numbers.as_ref().unwrap();
    assert_eq!((n.count, n.min, n.max, n.zeros), (1000, 0.0, 999.0, 1));
    assert!((n.mean - 499.5).abs() < 1e-9);
    assert!((n.std - (((1000.0f64 * 1000.0) - 1.0) / 12.0).sqrt()).abs() < 1e-6);
    assert!(n.integers);
    let p50 = n.quantiles.iter().find(|q| q.0 == 0.5).unwrap().1;
    assert!((p50 - 499.5).abs() <= 499.5 * 0.011 + 1.0, "{p50}");
    let hist_total: f64 = n.histogram.iter().map(|b| b.2).sum();
    assert!((hist_total - 1000.0).abs() <= 2.0);

    let score = feature(&s, "score");
    assert_eq!((score.present, score.missing), (750, 250));
    let n = score.numbers.as_ref().unwrap();
    assert_eq!((n.count, n.nan), (750, 750));
    assert!(!n.integers);

    let tags = feature(&s, "tags");
    assert_eq!(tags.lengths, vec![(0, 334), (1, 333), (2, 333)]);
    let b = tags.bytes.as_ref().unwrap();
    assert_eq!((b.count, b.distinct, b.distinct_exact), (999, 1, true));
    assert_eq!(b.top[0].sample, b"a");
    assert_eq!(b.top[0].count, 999);
}

#[test]
fn a_repeated_key_keeps_its_last_value() {
    // Two map entries for "x": protobuf keeps the second.
    let mut features = Vec::new();
    for v in [1i64, 2] {
        let entry = example(vec![("x", Feature::Int64(vec![v, v]))]);
        // encode_example gives Example{features{feature{...}}}: strip the outer Example tag.
        features.extend_from_slice(&entry[crate::wire::varint_len(entry.len() as u64 - 2) + 1..]);
    }
    let mut record = vec![0x0a];
    put_varint(&mut record, features.len() as u64);
    record.extend(features);
    assert_eq!(
        crate::decode_example(&record).unwrap(),
        vec![("x".to_owned(), Feature::Int64(vec![2, 2]))]
    );
    let s = acc_of(&[record]).summary("all", 1, 10);
    let x = feature(&s, "x");
    assert_eq!((x.present, x.values), (1, 2));
    assert_eq!(x.numbers.as_ref().unwrap().min, 2.0);
}

#[test]
fn shares_merge_to_the_same_statistics() {
    let records: Vec<Vec<u8>> = (0..3000)
        .map(|i| {
            example(vec![
                ("v", Feature::Float(vec![(i % 97) as f32])),
                (
                    "c",
                    Feature::Bytes(vec![format!("k{}", i % 7).into_bytes()]),
                ),
            ])
        })
        .collect();
    let whole = acc_of(&records).summary("all", 1, 10);
    let mut merged = SplitAcc::default();
    for part in records.chunks(700) {
        merged.merge(&acc_of(part));
    }
    let merged = merged.summary("all", 1, 10);
    for name in ["v", "c"] {
        let (mut a, mut b) = (
            feature(&whole, name).clone(),
            feature(&merged, name).clone(),
        );
        if let (Some(x), Some(y)) = (a.numbers.as_mut(), b.numbers.as_mut()) {
            // Moments merged in another order differ in their last bits only.
            assert!((x.mean - y.mean).abs() < 1e-9 && (x.std - y.std).abs() < 1e-9);
            (y.mean, y.std) = (x.mean, x.std);
        }
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

#[test]
fn top_values_stay_bounded_and_find_the_heavy_hitters() {
    let mut records = Vec::new();
    for i in 0..20_000u32 {
        let v = if i % 2 == 0 {
            b"common".to_vec()
        } else {
            format!("u{i}").into_bytes()
        };
        records.push(example(vec![("k", Feature::Bytes(vec![v]))]));
    }
    let s = acc_of(&records).summary("all", 1, 3);
    let b = feature(&s, "k").bytes.as_ref().unwrap().clone();
    assert_eq!(b.top[0].sample, b"common");
    assert!(
        b.top[0].count <= 10_000 && b.top[0].count >= 9_000,
        "{}",
        b.top[0].count
    );
    assert!(!b.top_exact && !b.distinct_exact);
    let err = (b.distinct as f64 - 10_001.0).abs() / 10_001.0;
    assert!(err < 0.05, "distinct {}", b.distinct);
}

#[test]
fn feature_names_past_the_cap_are_counted_together() {
    let records: Vec<Vec<u8>> = (0..MAX_FEATURES + 10)
        .map(|i| example(vec![(&format!("f{i}"), Feature::Int64(vec![1]))]))
        .collect();
    let s = acc_of(&records).summary("all", 1, 1);
    assert_eq!(s.features.len(), MAX_FEATURES);
    assert_eq!(s.uncounted_features, 10);
}

#[test]
fn malformed_records_are_errors_naming_the_feature() {
    let mut acc = SplitAcc::default();
    assert!(acc.add_example(&[0x0a, 0x05, 0x01]).is_err());
    let mut bad = example(vec![("f", Feature::Float(vec![1.0, 2.0]))]);
    let n = bad.len();
    bad[n - 9] = 0x7f; // a packed length past the end
    let e = acc.add_example(&bad).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("f"), "{e}");
}

#[test]
fn png_sizes_come_from_the_header() {
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, 7, 3);
        enc.set_color(png::ColorType::Grayscale);
        enc.write_header()
            .unwrap()
            .write_image_data(&[0; 21])
            .unwrap();
    }
    assert_eq!(dimensions("png", &png_bytes), Some((7, 3)));
    let records = vec![
        example(vec![("img", Feature::Bytes(vec![png_bytes.clone()]))]),
        example(vec![(
            "img",
            Feature::Bytes(vec![b"\x89PNG\r\n\x1a\nbroken".to_vec()]),
        )]),
    ];
    let s = acc_of(&records).summary("all", 1, 1);
    let i = feature(&s, "img")
        .bytes
        .as_ref()
        .unwrap()
        .images
        .clone()
        .unwrap();
    assert_eq!(i.count, 2);
    assert_eq!(i.formats, vec![("png", 2)]);
    assert_eq!(i.undecodable, 1);
    assert_eq!(i.sizes, vec![((7, 3), 1)]);
}

fn split(values: impl Iterator<Item = (f32, &'static str)>, extra: bool) -> SplitAcc {
    let records: Vec<Vec<u8>> = values
        .map(|(v, c)| {
            let mut f = vec![
                ("x", Feature::Float(vec![v])),
                ("c", Feature::Bytes(vec![c.as_bytes().to_vec()])),
            ];
            if extra {
                f.push(("extra", Feature::Int64(vec![1])));
            }
            example(f)
        })
        .collect();
    acc_of(&records)
}

#[test]
fn anomalies_between_splits() {
    let train = split(
        (0..1000).map(|i| (i as f32 / 1000.0, ["a", "b"][i % 2])),
        false,
    );
    let same = split(
        (0..500).map(|i| (i as f32 / 500.0, ["a", "b"][i % 2])),
        false,
    );
    let shifted = split(
        (0..500).map(|i| (5.0 + i as f32 / 500.0, ["a", "z"][i % 2])),
        true,
    );
    let splits = [("train", &train), ("test", &same), ("eval", &shifted)];
    let found = anomalies::find(&splits, 0, 0.1);
    let kinds: Vec<(&str, &str, &str)> = found
        .iter()
        .map(|a| (a.kind, a.feature.as_str(), a.split.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("new_in_split", "extra", "eval"),
            ("distribution_shift", "c", "eval"),
            ("unseen_category", "c", "eval"),
            ("distribution_shift", "x", "eval"),
        ],
        "{found:?}"
    );
    let unseen = &found[2];
    assert_eq!(unseen.value, 250.0);
    assert!(unseen.message.contains("\"z\""), "{}", unseen.message);
    let missing = anomalies::find(&[("train", &shifted), ("test", &same)], 0, 0.1);
    assert!(missing
        .iter()
        .any(|a| a.kind == "missing_in_split" && a.feature == "extra"));
}

#[test]
fn a_feature_of_several_lists_reads_as_protobuf_merges_them() {
    use crate::example::decode_feature;
    // int64 [1], then float [2.0], then float [3.0]: the floats replace the ints and merge.
    let mut message = Vec::new();
    for (field, payload) in [
        (3u8, vec![1u8]),
        (2, 2.0f32.to_le_bytes().to_vec()),
        (2, 3.0f32.to_le_bytes().to_vec()),
    ] {
        let mut list = vec![0x0a, payload.len() as u8];
        list.extend(payload);
        message.push(field << 3 | 2);
        message.push(list.len() as u8);
        message.extend(list);
    }
    assert_eq!(
        decode_feature(&message).unwrap(),
        Feature::Float(vec![2.0, 3.0])
    );
    let mut entry = vec![0x0a, 1, b'f', 0x12, message.len() as u8];
    entry.extend(&message);
    let mut features = vec![0x0a, entry.len() as u8];
    features.extend(entry);
    let mut record = vec![0x0a, features.len() as u8];
    record.extend(features);
    let s = acc_of(&[record]).summary("all", 1, 1);
    let f = feature(&s, "f");
    assert_eq!((f.kinds.clone(), f.values), (vec![("float", 1)], 2));
    let n = f.numbers.as_ref().unwrap();
    assert_eq!((n.min, n.max), (2.0, 3.0));
}

#[test]
fn a_map_entry_without_a_value_is_a_feature_with_no_list() {
    // Example { features { feature { key: "k" } } }, the value left out.
    let record = [0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'k'];
    assert_eq!(
        crate::decode_example(&record).unwrap(),
        vec![("k".to_owned(), Feature::Empty)]
    );
    let s = acc_of(&[record.to_vec()]).summary("all", 1, 1);
    let k = feature(&s, "k");
    assert_eq!(
        (k.present, k.kinds.clone(), k.values),
        (1, vec![("none", 1)], 0)
    );
}
