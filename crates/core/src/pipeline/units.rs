//! Output units: what a batch of records becomes, parsed and with its images decoded,
//! and how errors met on the way are located.

use crossbeam_channel::{Receiver, Sender};

use super::origin::{mix, record_key, Origin};
use super::plan::Plan;
use super::readers::Files;
use super::readers::OnError;
use crate::assemble::Assembled;
use crate::batch::RecordBatch;
use crate::error::{Error, Result};
use crate::feature_lists::LaidList;
use crate::image::{decode_batch, PixelBatch, PixelPool};
use crate::parse::{parse_examples, Column, Parsed};

/// What one output unit holds, with the key of each of its records (see [`record_key`]).
pub enum Payload {
    Records(RecordBatch, Vec<u64>),
    /// One entry per parsed column of the schema, the keys, and the schema's features as
    /// laid out from the columns (`None` when they are to be laid out yet: a unit joined
    /// from others).
    Parsed(Vec<Decoded>, Vec<u64>, Option<Vec<Assembled>>),
    /// `SequenceExample`s: their context as `Parsed` has it (always laid out), and each
    /// feature list of the plan's, laid out (padded).
    Sequences(Vec<Decoded>, Vec<u64>, Vec<Assembled>, Vec<LaidList>),
}

impl Payload {
    /// The records of the unit.
    pub fn len(&self) -> usize {
        match self {
            Payload::Records(_, keys)
            | Payload::Parsed(_, keys, _)
            | Payload::Sequences(_, keys, _, _) => keys.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The keys of records from `origins`.
pub(super) fn keys_of(origins: &[Origin]) -> Vec<u64> {
    origins.iter().map(record_key).collect()
}

/// A parsed feature of a unit, or its images decoded.
pub enum Decoded {
    Feature(Parsed),
    Images(PixelBatch),
}

/// The parsed columns of a unit, `None` where a column was decoded into images.
pub fn parsed_columns(decoded: &[Decoded]) -> Vec<Option<&Parsed>> {
    decoded
        .iter()
        .map(|d| match d {
            Decoded::Feature(p) => Some(p),
            Decoded::Images(_) => None,
        })
        .collect()
}

/// One item of the output: a unit of records or an error at its place in the stream.
pub type Item = Result<Payload>;

pub(super) struct Work {
    pub(super) batch: RecordBatch,
    pub(super) origins: Vec<Origin>,
    pub(super) reply: Sender<Vec<Item>>,
}

/// A unit on its way to the consumer.
pub(super) enum Unit {
    Ready(Vec<Item>),
    /// Being parsed by a worker.
    Pending(Receiver<Vec<Item>>),
    /// To be parsed by the consumer itself.
    Unparsed(RecordBatch, Vec<Origin>),
}

/// Names the file, offset and record of an error raised for a record from `origin`.
fn locate(mut e: Error, files: &Files, origin: Option<&Origin>) -> Error {
    if let Some(o) = origin {
        if let Some(path) = files.paths.get(o.file as usize) {
            e.path = Some(path.clone());
            e.offset = Some(o.offset);
            e.record_index = Some(o.index);
        }
    }
    e
}

/// Parses a unit and decodes its images. An error names the record's index in the unit.
fn process(
    plan: &Plan,
    pool: &PixelPool,
    records: &[&[u8]],
    origins: &[Origin],
) -> Result<Processed> {
    let schema = plan.schema.as_ref().expect("a parsed unit has a schema");
    let parsed = parse_examples(schema, records)?;
    let mut out: Vec<Decoded> = parsed.into_iter().map(Decoded::Feature).collect();
    for stage in &plan.images {
        let Some(Decoded::Feature(Parsed {
            values: values @ Column::Bytes { .. },
            ..
        })) = out.get(stage.feature)
        else {
            return Err(Error::invalid("images are decoded from a bytes feature"));
        };
        if values.len() != records.len() {
            return Err(Error::invalid(
                "images are decoded from a feature with one value per record",
            ));
        }
        let images: Vec<&[u8]> = (0..values.len()).map(|i| values.bytes_at(i)).collect();
        let base = mix(stage.seed, plan.epoch);
        let seeds: Vec<u64> = origins.iter().map(|o| mix(base, record_key(o))).collect();
        let key = &schema.specs()[stage.feature].key;
        let pixels =
            decode_batch(&images, &seeds, &stage.spec, Some(pool)).map_err(|e| e.with_key(key))?;
        out[stage.feature] = Decoded::Images(pixels);
    }
    // Sparse and ragged features are laid out here, on the parse workers: a record whose
    // partitions or counts do not fit fails here, where the error policy can skip it.
    let assembled = schema.assemble(&parsed_columns(&out))?;
    let lists = match &plan.feature_lists {
        Some(lists) => Some(lists.parse(records, true)?),
        None => None,
    };
    Ok((out, assembled, lists))
}

type Processed = (Vec<Decoded>, Vec<Assembled>, Option<Vec<LaidList>>);

fn payload((parsed, assembled, lists): Processed, keys: Vec<u64>) -> Payload {
    match lists {
        Some(lists) => Payload::Sequences(parsed, keys, assembled, lists),
        None => Payload::Parsed(parsed, keys, Some(assembled)),
    }
}

pub(super) fn parse_unit(
    plan: &Plan,
    files: &Files,
    pool: &PixelPool,
    batch: RecordBatch,
    origins: &[Origin],
) -> Vec<Item> {
    if plan.schema.is_none() {
        return vec![Ok(Payload::Records(batch, keys_of(origins)))];
    }
    let records: Vec<&[u8]> = batch.iter().collect();
    let e = match process(plan, pool, &records, origins) {
        Ok(done) => return vec![Ok(payload(done, keys_of(origins)))],
        Err(e) => e,
    };
    let size = plan.batch_size.max(1);
    if records.len() <= size {
        return parse_failed(plan, files, pool, &records, origins, e);
    }
    // A unit of several batches: each batch again on its own, so that its errors come
    // out in their place among the batches (under `OnError::Stop`, after the batches
    // before it, and the run ends there).
    let mut items = Vec::new();
    for (part, part_origins) in records.chunks(size).zip(origins.chunks(size)) {
        match process(plan, pool, part, part_origins) {
            Ok(done) => items.push(Ok(payload(done, keys_of(part_origins)))),
            Err(e) => {
                items.extend(parse_failed(plan, files, pool, part, part_origins, e));
                if plan.on_error == OnError::Stop {
                    break;
                }
            }
        }
    }
    items
}

/// The items of a batch that failed with `e`: that error, located, under
/// `OnError::Stop`; otherwise every record that fails on its own, and the rest parsed
/// together.
fn parse_failed(
    plan: &Plan,
    files: &Files,
    pool: &PixelPool,
    records: &[&[u8]],
    origins: &[Origin],
    e: Error,
) -> Vec<Item> {
    if plan.on_error == OnError::Stop {
        let origin = e.record_index.and_then(|i| origins.get(i as usize));
        return vec![Err(locate(e, files, origin))];
    }
    let mut items = Vec::new();
    let mut good = Vec::with_capacity(records.len());
    let mut good_origins = Vec::with_capacity(records.len());
    for (record, origin) in records.iter().zip(origins) {
        match process(plan, pool, &[record], std::slice::from_ref(origin)) {
            Ok(_) => {
                good.push(*record);
                good_origins.push(*origin);
            }
            Err(mut e) => {
                e.record_index = None;
                items.push(Err(locate(e, files, Some(origin))));
            }
        }
    }
    if !good.is_empty() {
        match process(plan, pool, &good, &good_origins) {
            Ok(done) => items.push(Ok(payload(done, keys_of(&good_origins)))),
            Err(e) => {
                let origin = e.record_index.and_then(|i| good_origins.get(i as usize));
                items.push(Err(locate(e, files, origin)))
            }
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::testing::{offset_of, plan, write_file};
    use super::super::{ImageStage, OnError, Pipeline, Plan};
    use super::{Decoded, Payload};
    use crate::error::{Error, ErrorKind};
    use crate::example::{encode_example, Feature};
    use crate::image::{Filter, ImageSpec, PixelType, Pixels};
    use crate::parse::{Column, DType, FeatureSpec, Schema, SpecKind};

    /// A unit as the test sees it: the parsed `id`s of its records, or an error.
    #[derive(Debug, Clone, PartialEq)]
    enum Got {
        Ids(Vec<i64>),
        Error {
            kind: ErrorKind,
            path: Option<String>,
            offset: Option<u64>,
            record_index: Option<u64>,
        },
    }

    fn error(e: Error) -> Got {
        Got::Error {
            kind: e.kind,
            path: e.path,
            offset: e.offset,
            record_index: e.record_index,
        }
    }

    fn id_schema() -> Arc<Schema> {
        let id = FeatureSpec {
            key: "id".into(),
            dtype: DType::Int64,
            kind: SpecKind::FixedLen { shape: vec![] },
            default: None,
        };
        Arc::new(Schema::new(vec![id]).unwrap())
    }

    fn example(id: i64) -> Vec<u8> {
        encode_example(&[("id", Feature::Int64(vec![id]))])
    }

    /// Every item of a run of `plan`, which parses one int64 feature per record.
    fn parsed_ids(plan: Plan) -> Vec<Got> {
        parsed_ids_taking(plan, std::time::Duration::ZERO)
    }

    /// As [`parsed_ids`], by a consumer that takes `pause` over each item.
    fn parsed_ids_taking(plan: Plan, pause: std::time::Duration) -> Vec<Got> {
        let mut pipeline = Pipeline::start(plan, None).unwrap();
        let mut out = Vec::new();
        while let Some(item) = pipeline.next_item() {
            std::thread::sleep(pause);
            out.push(match item {
                Ok(Payload::Parsed(columns, keys, _)) => {
                    let n = keys.len();
                    let [Decoded::Feature(parsed)] = &columns[..] else {
                        panic!("one parsed feature per unit");
                    };
                    let Column::Int64(ids) = &parsed.values else {
                        panic!("int64 values");
                    };
                    assert_eq!(parsed.shape, vec![n]);
                    assert_eq!(ids.len(), n);
                    Got::Ids(ids.clone())
                }
                Ok(Payload::Records(..) | Payload::Sequences(..)) => {
                    panic!("a plan of Examples did not parse them")
                }
                Err(e) => error(e),
            });
        }
        out
    }

    /// A plan that parses the `id` of each of `records`, written to file `name`, in
    /// batches of `batch` that may be re-cut, as `batch()` after `parse()` compiles.
    fn id_plan(dir: &std::path::Path, name: &str, records: &[Vec<u8>], batch: usize) -> Plan {
        let mut p = plan(vec![write_file(dir, name, records)]);
        p.schema = Some(id_schema());
        p.batch_size = batch;
        p.refill = true;
        p
    }

    #[test]
    fn units_are_parsed_in_order_by_workers_or_by_the_consumer() {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Vec<u8>> = (0..10).map(example).collect();
        let mut p = id_plan(dir.path(), "a", &records, 4);
        let expected = vec![
            Got::Ids(vec![0, 1, 2, 3]),
            Got::Ids(vec![4, 5, 6, 7]),
            Got::Ids(vec![8, 9]),
        ];
        for workers in [0, 1, 3] {
            p.parse_workers = workers;
            assert_eq!(parsed_ids(p.clone()), expected, "{workers} workers");
        }
        p.drop_remainder = true;
        assert_eq!(parsed_ids(p), expected[..2]);
    }

    #[test]
    fn sequence_examples_bring_their_feature_lists() {
        use crate::example::encode_sequence_example;
        use crate::feature_lists::{ListKind, ListSchema, ListSpec};
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Vec<u8>> = (0..5)
            .map(|i| {
                let steps = (0..i).map(|s| Feature::Int64(vec![s; 2])).collect();
                let context = [("id", Feature::Int64(vec![i]))];
                encode_sequence_example(&context, &[("steps", steps)])
            })
            .collect();
        let mut p = plan(vec![write_file(dir.path(), "a", &records)]);
        p.schema = Some(id_schema());
        let steps = ListSpec {
            key: "steps".to_owned(),
            dtype: DType::Int64,
            kind: ListKind::Var,
        };
        p.feature_lists = Some(Arc::new(ListSchema::new(vec![steps]).unwrap()));
        p.batch_size = 3;
        for workers in [0, 1] {
            p.parse_workers = workers;
            let mut pipeline = Pipeline::start(p.clone(), None).unwrap();
            let mut seen = Vec::new();
            while let Some(item) = pipeline.next_item() {
                let Ok(Payload::Sequences(context, keys, _, lists)) = item else {
                    panic!("a unit of SequenceExamples");
                };
                let [Decoded::Feature(ids)] = &context[..] else {
                    panic!("one context feature");
                };
                assert_eq!(ids.values.len(), keys.len());
                let [steps] = &lists[..] else {
                    panic!("one feature list");
                };
                seen.push((steps.steps.clone(), steps.values.len()));
            }
            // Records 0-2 have 0, 1 and 2 steps of 2 values; records 3-4 have 3 and 4.
            assert_eq!(seen, vec![(vec![0, 0, 1, 3], 6), (vec![0, 3, 7], 14)]);
        }
    }

    /// A file `a` of six Examples whose third has no `id`, parsed four to a unit.
    fn one_unparsable(dir: &std::path::Path, on_error: OnError) -> (Plan, Got) {
        let mut records: Vec<Vec<u8>> = (0..6).map(example).collect();
        records[2] = encode_example(&[("other", Feature::Int64(vec![2]))]);
        let a = write_file(dir, "a", &records);
        let located = Got::Error {
            kind: ErrorKind::Schema,
            path: Some(a.clone()),
            offset: Some(offset_of(&records, 2)),
            record_index: Some(2),
        };
        let mut p = plan(vec![a]);
        p.schema = Some(id_schema());
        p.batch_size = 4;
        p.on_error = on_error;
        (p, located)
    }

    #[test]
    fn with_continue_a_record_that_does_not_parse_is_left_out_of_its_unit() {
        let dir = tempfile::tempdir().unwrap();
        let (mut p, located) = one_unparsable(dir.path(), OnError::Continue);
        for workers in [0, 2] {
            p.parse_workers = workers;
            assert_eq!(
                parsed_ids(p.clone()),
                vec![
                    located.clone(),
                    Got::Ids(vec![0, 1, 3]),
                    Got::Ids(vec![4, 5]),
                ]
            );
        }
    }

    #[test]
    fn with_refill_units_left_short_are_filled_from_the_next_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (mut p, located) = one_unparsable(dir.path(), OnError::Continue);
        p.refill = true;
        for workers in [0, 2] {
            p.parse_workers = workers;
            assert_eq!(
                parsed_ids(p.clone()),
                vec![
                    located.clone(),
                    Got::Ids(vec![0, 1, 3, 4]),
                    Got::Ids(vec![5])
                ]
            );
        }
        // The last short unit is dropped after re-cutting, not before.
        p.drop_remainder = true;
        assert_eq!(
            parsed_ids(p.clone()),
            vec![located, Got::Ids(vec![0, 1, 3, 4])]
        );
        p.batch_size = 5;
        assert_eq!(parsed_ids(p)[1..], [Got::Ids(vec![0, 1, 3, 4, 5])]);
    }

    #[test]
    fn with_stop_a_record_that_does_not_parse_fails_its_unit_and_ends_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let (p, located) = one_unparsable(dir.path(), OnError::Stop);
        assert_eq!(parsed_ids(p), vec![located]);
    }

    #[test]
    fn batches_handed_on_several_to_a_unit_come_out_as_if_each_went_alone() {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Vec<u8>> = (0..10).map(example).collect();
        let mut p = id_plan(dir.path(), "a", &records, 3);
        let alone = parsed_ids(p.clone());
        assert_eq!(alone.len(), 4);
        for (several, workers, drop) in [(2, 0, false), (4, 0, false), (4, 2, false), (4, 0, true)]
        {
            p.unit_batches = several;
            p.parse_workers = workers;
            p.drop_remainder = drop;
            let want = if drop { &alone[..3] } else { &alone[..] };
            assert_eq!(
                parsed_ids(p.clone()),
                want,
                "{several} batches, {workers} workers"
            );
        }
        // Large records, read into buffers of their own, in units ended by their bytes.
        let big = |id: i64| {
            let pad = Feature::Bytes(vec![vec![b'x'; 100 << 10]]);
            encode_example(&[("id", Feature::Int64(vec![id])), ("pad", pad)])
        };
        let records: Vec<Vec<u8>> = (0..10).map(big).collect();
        let mut p = id_plan(dir.path(), "big", &records, 3);
        p.unit_batches = 4;
        assert_eq!(parsed_ids(p), alone);
    }

    /// Ten Examples in batches of 3 (see [`id_plan`]), record `at` without an `id`.
    fn ten_without_id_at(dir: &std::path::Path, at: usize) -> (Plan, Vec<Vec<u8>>) {
        let mut records: Vec<Vec<u8>> = (0..10).map(example).collect();
        records[at] = encode_example(&[("other", Feature::Int64(vec![at as i64]))]);
        (id_plan(dir, "a", &records, 3), records)
    }

    #[test]
    fn with_stop_the_batches_of_a_unit_before_the_one_that_fails_go_out() {
        let dir = tempfile::tempdir().unwrap();
        let (mut p, records) = ten_without_id_at(dir.path(), 7);
        let want = vec![
            Got::Ids(vec![0, 1, 2]),
            Got::Ids(vec![3, 4, 5]),
            Got::Error {
                kind: ErrorKind::Schema,
                path: Some(p.files[0].clone()),
                offset: Some(offset_of(&records, 7)),
                record_index: Some(7),
            },
        ];
        for several in [1, 4] {
            p.unit_batches = several;
            assert_eq!(parsed_ids(p.clone()), want, "{several} batches to a unit");
        }
    }

    #[test]
    fn with_continue_errors_come_out_among_the_batches_of_a_unit_in_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let (mut p, _) = ten_without_id_at(dir.path(), 4);
        p.on_error = OnError::Continue;
        for refill in [false, true] {
            p.refill = refill;
            p.unit_batches = 1;
            let alone = parsed_ids(p.clone());
            assert!(matches!(alone[1], Got::Error { .. }), "{alone:?}");
            p.unit_batches = 4;
            assert_eq!(parsed_ids(p.clone()), alone, "refill={refill}");
        }
    }

    #[test]
    fn units_parsed_by_the_pipeline_thread_while_the_consumer_is_busy_come_out_alike() {
        // A consumer that takes its time leaves `prefetch` units waiting: the pipeline
        // thread parses the next ones itself, errors and all.
        let slowly = |p: &Plan| parsed_ids_taking(p.clone(), std::time::Duration::from_millis(2));
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Vec<u8>> = (0..40).map(example).collect();
        let mut p = id_plan(dir.path(), "a", &records, 3);
        for (several, prefetch) in [(1, 2), (1, 0), (4, 1)] {
            (p.unit_batches, p.prefetch) = (several, prefetch);
            assert_eq!(slowly(&p), parsed_ids(p.clone()), "{several} batches");
        }
        for on_error in [OnError::Stop, OnError::Continue] {
            let (mut p, _) = ten_without_id_at(dir.path(), 7);
            p.on_error = on_error;
            for several in [1, 4] {
                p.unit_batches = several;
                let quickly = parsed_ids(p.clone());
                assert!(quickly.iter().any(|g| matches!(g, Got::Error { .. })));
                assert_eq!(slowly(&p), quickly, "{on_error:?}, {several} batches");
            }
        }
    }

    #[test]
    fn with_stop_damage_inside_a_unit_of_several_batches_comes_after_the_records_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Vec<u8>> = (0..10).map(example).collect();
        let mut p = id_plan(dir.path(), "a", &records, 3);
        // Cut the file inside record 7.
        let cut = offset_of(&records, 7) + 5;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&p.files[0])
            .unwrap();
        file.set_len(cut).unwrap();
        for drop in [false, true] {
            p.drop_remainder = drop;
            p.unit_batches = 1;
            let alone = parsed_ids(p.clone());
            assert_eq!(alone.len(), if drop { 3 } else { 4 });
            assert!(matches!(
                alone.last(),
                Some(Got::Error {
                    kind: ErrorKind::Truncated,
                    ..
                })
            ));
            p.unit_batches = 4;
            assert_eq!(parsed_ids(p.clone()), alone, "drop_remainder={drop}");
        }
    }

    /// A `width` x 1 RGB PNG whose pixel `x` is `(x, value, 0)`.
    fn png(width: u32, value: u8) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, width, 1);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        let pixels: Vec<u8> = (0..width).flat_map(|x| [x as u8, value, 0]).collect();
        writer.write_image_data(&pixels).unwrap();
        writer.finish().unwrap();
        out
    }

    #[test]
    fn images_are_decoded_into_one_array_per_unit() {
        let dir = tempfile::tempdir().unwrap();
        let image = |bytes: Vec<u8>| encode_example(&[("image", Feature::Bytes(vec![bytes]))]);
        let mut records: Vec<Vec<u8>> = (0..3).map(|i| image(png(2, i * 10))).collect();
        records.push(image(b"not an image".to_vec()));
        let a = write_file(dir.path(), "a", &records);
        let spec = FeatureSpec {
            key: "image".into(),
            dtype: DType::Bytes,
            kind: SpecKind::FixedLen { shape: vec![] },
            default: None,
        };
        let mut p = plan(vec![a.clone()]);
        p.schema = Some(Arc::new(Schema::new(vec![spec]).unwrap()));
        p.batch_size = 4;
        p.on_error = OnError::Continue;
        p.images = vec![ImageStage {
            feature: 0,
            spec: ImageSpec {
                channels: 3,
                size: Some((1, 2)),
                dtype: PixelType::U8,
                filter: Filter::Nearest,
                augment: None,
                max_pixels: 1 << 20,
            },
            seed: 0,
        }];
        let mut pipeline = Pipeline::start(p, None).unwrap();
        let e = pipeline
            .next_item()
            .unwrap()
            .err()
            .expect("the bad image first");
        assert_eq!(e.kind, ErrorKind::ImageDecode);
        assert_eq!(e.path.as_deref(), Some(a.as_str()));
        assert_eq!(e.offset, Some(offset_of(&records, 3)));
        assert_eq!(e.record_index, Some(3));
        let Some(Ok(Payload::Parsed(columns, keys, _))) = pipeline.next_item() else {
            panic!("the three good images in one unit");
        };
        assert_eq!(keys.len(), 3);
        let [Decoded::Images(batch)] = &columns[..] else {
            panic!("decoded images");
        };
        assert_eq!(batch.shape, vec![3, 1, 2, 3]);
        assert_eq!(
            batch.pixels,
            Pixels::U8(vec![
                0, 0, 0, 1, 0, 0, 0, 10, 0, 1, 10, 0, 0, 20, 0, 1, 20, 0
            ])
        );
        assert!(pipeline.next_item().is_none());
    }
}
