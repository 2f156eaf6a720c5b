//! Whole runs: how the pipeline thread cuts units, and what damage does to a run.

use super::testing::{flip_byte, named, named_files, offset_of, plan, run, write_file, Out};
use super::{OnError, Pipeline};
use crate::error::ErrorKind;
use crate::reader::HEADER_LEN;

#[test]
fn units_hold_batch_size_records_and_the_last_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(named_files(dir.path(), &[5, 5]));
    p.batch_size = 4;
    let cut = vec![
        Out::unit(&["a0", "a1", "a2", "a3"]),
        Out::unit(&["a4", "b0", "b1", "b2"]),
        Out::unit(&["b3", "b4"]),
    ];
    assert_eq!(run(p.clone()), cut);
    p.drop_remainder = true;
    assert_eq!(run(p.clone()), cut[..2].to_vec());
    p.batch_size = 5;
    let even = vec![
        Out::unit(&["a0", "a1", "a2", "a3", "a4"]),
        Out::unit(&["b0", "b1", "b2", "b3", "b4"]),
    ];
    assert_eq!(run(p.clone()), even, "nothing left over to drop");
    p.drop_remainder = false;
    assert_eq!(run(p.clone()), even);
    p.batch_size = 11;
    assert_eq!(run(p.clone()).len(), 1);
    p.drop_remainder = true;
    assert_eq!(run(p.clone()), vec![]);
    p.batch_size = 0;
    assert_eq!(run(p).len(), 10, "a batch size of 0 is taken as 1");
}

#[test]
fn units_also_end_once_their_records_hold_batch_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // Records "a0".."a4" hold two bytes each.
    let mut p = plan(named_files(dir.path(), &[5]));
    p.batch_size = 4;
    p.batch_bytes = 5;
    let cut = vec![Out::unit(&["a0", "a1", "a2"]), Out::unit(&["a3", "a4"])];
    assert_eq!(run(p.clone()), cut, "6 bytes reach 5: three records a unit");
    p.drop_remainder = true;
    assert_eq!(
        run(p.clone()),
        cut[..1].to_vec(),
        "the short last one is dropped"
    );
    p.drop_remainder = false;
    p.batch_bytes = 1;
    assert_eq!(run(p.clone()).len(), 5, "one record reaches one byte");
    p.batch_bytes = usize::MAX;
    assert_eq!(run(p).len(), 2, "the count alone");
}

#[test]
fn units_are_delivered_in_order_however_far_ahead_they_are_ready() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(named_files(dir.path(), &[1000]));
    p.batch_size = 3;
    for prefetch in [0, 1, 64] {
        p.prefetch = prefetch;
        let units = run(p.clone());
        assert_eq!(units.len(), 334);
        let all: Vec<String> = units
            .into_iter()
            .flat_map(|u| match u {
                Out::Unit(records) => records,
                error => panic!("{error:?}"),
            })
            .collect();
        assert_eq!(all, named("a", 1000));
    }
}

/// A file `a` of six records whose third (`a2`) fails its data checksum, and a file `b`
/// of two intact records.
fn damaged_data(dir: &std::path::Path) -> (Vec<String>, Out) {
    let records = named("a", 6);
    let a = write_file(dir, "a", &records);
    let offset = offset_of(&records, 2);
    flip_byte(&a, offset + HEADER_LEN as u64);
    let error = Out::Error {
        kind: ErrorKind::Corrupt,
        path: Some(a.clone()),
        offset: Some(offset),
        record_index: Some(2),
    };
    (vec![a, write_file(dir, "b", &named("b", 2))], error)
}

#[test]
fn with_stop_damage_ends_the_run_after_the_records_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (files, error) = damaged_data(dir.path());
    let mut p = plan(files);
    p.on_error = OnError::Stop;
    p.batch_size = 4;
    assert_eq!(
        run(p.clone()),
        vec![Out::unit(&["a0", "a1"]), error.clone()]
    );
    p.drop_remainder = true;
    assert_eq!(run(p.clone()), vec![error.clone()]);
    p.drop_remainder = false;
    p.batch_size = 1;
    assert_eq!(run(p), vec![Out::unit(&["a0"]), Out::unit(&["a1"]), error]);
}

#[test]
fn with_continue_damage_is_delivered_and_the_run_goes_on_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let (files, error) = damaged_data(dir.path());
    let mut p = plan(files);
    p.on_error = OnError::Continue;
    p.batch_size = 1;
    let one_by_one: Vec<Out> = ["a0", "a1"]
        .iter()
        .map(|r| Out::unit(&[r]))
        .chain([error.clone()])
        .chain(
            ["a3", "a4", "a5", "b0", "b1"]
                .iter()
                .map(|r| Out::unit(&[r])),
        )
        .collect();
    assert_eq!(run(p.clone()), one_by_one);
    // The error goes out at once; the unit being cut when it came goes on filling.
    p.batch_size = 4;
    assert_eq!(
        run(p),
        vec![
            error,
            Out::unit(&["a0", "a1", "a3", "a4"]),
            Out::unit(&["a5", "b0", "b1"]),
        ]
    );
}

#[test]
fn with_continue_damage_that_ends_a_file_moves_on_to_the_next_file() {
    let dir = tempfile::tempdir().unwrap();
    let records = named("a", 4);
    let a = write_file(dir.path(), "a", &records);
    // A record's length checksum: without it, nothing after it in the file can be found.
    let offset = offset_of(&records, 1);
    flip_byte(&a, offset + 8);
    let b = write_file(dir.path(), "b", &named("b", 2));
    let error = Out::Error {
        kind: ErrorKind::Corrupt,
        path: Some(a.clone()),
        offset: Some(offset),
        record_index: Some(1),
    };
    let mut p = plan(vec![a, b]);
    p.on_error = OnError::Continue;
    assert_eq!(
        run(p.clone()),
        vec![
            Out::unit(&["a0"]),
            error.clone(),
            Out::unit(&["b0"]),
            Out::unit(&["b1"]),
        ]
    );
    p.on_error = OnError::Stop;
    assert_eq!(run(p), vec![Out::unit(&["a0"]), error]);
}

#[test]
fn a_file_that_does_not_open_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = named_files(dir.path(), &[1, 0, 1]);
    let missing = dir.path().join("missing").to_str().unwrap().to_owned();
    files[1] = missing.clone();
    let error = Out::Error {
        kind: ErrorKind::Io,
        path: Some(missing),
        offset: None,
        record_index: None,
    };
    let mut p = plan(files);
    p.on_error = OnError::Continue;
    assert_eq!(
        run(p.clone()),
        vec![Out::unit(&["a0"]), error.clone(), Out::unit(&["c0"])]
    );
    p.on_error = OnError::Stop;
    assert_eq!(run(p), vec![Out::unit(&["a0"]), error]);
}

#[test]
fn closing_part_way_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(named_files(dir.path(), &[5000, 5000]));
    p.cycle_length = 2;
    let mut pipeline = Pipeline::start(p, None).unwrap();
    assert!(pipeline.next_item().is_some());
    pipeline.close();
    assert!(pipeline.next_item().is_none());
}

/// Records of `file`: large ones (70,000 bytes, over `DIRECT_MIN`, each its own) among
/// short ones, in an order that puts large records next to each other and after short
/// ones.
fn mixed(file: char) -> Vec<String> {
    (0..12)
        .map(|i| match i % 4 {
            0 | 3 => format!(
                "{file}{i}-{}",
                char::from(b'a' + i as u8).to_string().repeat(70_000)
            ),
            _ => format!("{file}{i}"),
        })
        .collect()
}

#[test]
fn large_records_come_through_every_record_stage_whole() {
    use super::cache::Cache;
    use super::testing::{records, sorted};
    use super::RecordOp;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (mixed('a'), mixed('b'));
    let files = vec![
        write_file(dir.path(), "a", &a),
        write_file(dir.path(), "b", &b),
    ];
    let both: Vec<String> = a.iter().chain(&b).cloned().collect();
    let with = |ops: Vec<RecordOp>| {
        let mut p = plan(files.clone());
        p.batch_size = 3;
        p.record_ops = ops;
        p
    };
    assert_eq!(records(with(vec![])), both);
    let mut p = with(vec![]);
    p.cycle_length = 2;
    let turns: Vec<String> = a
        .iter()
        .zip(&b)
        .flat_map(|(x, y)| [x.clone(), y.clone()])
        .collect();
    assert_eq!(records(p.clone()), turns, "interleaved");
    p.deterministic = false;
    assert_eq!(sorted(records(p)), sorted(both.clone()), "as they come");
    let shuffled = records(with(vec![RecordOp::Shuffle {
        buffer: 5,
        seed: Some(3),
    }]));
    assert_ne!(shuffled, both);
    assert_eq!(sorted(shuffled), sorted(both.clone()));
    let shard = records(with(vec![RecordOp::Shard {
        num_shards: 3,
        index: 1,
    }]));
    assert_eq!(
        shard,
        both.iter().skip(1).step_by(3).cloned().collect::<Vec<_>>()
    );
    let window = records(with(vec![RecordOp::Skip(3), RecordOp::Take(5)]));
    assert_eq!(window, both[3..8].to_vec());
    let twice = records(with(vec![RecordOp::Repeat(Some(2))]));
    assert_eq!(twice, [both.clone(), both.clone()].concat());
    for cache in [
        Cache::memory(),
        Cache::file(dir.path().join("cache").to_str().unwrap()),
    ] {
        let p = with(vec![RecordOp::Cache(Arc::new(cache))]);
        assert_eq!(records(p.clone()), both, "filling the cache");
        assert_eq!(records(p), both, "from the cache");
    }
}

#[test]
fn units_count_large_records_toward_batch_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let a = mixed('a');
    let mut p = plan(vec![write_file(dir.path(), "a", &a)]);
    p.batch_size = 100;
    p.batch_bytes = 100_000;
    let units: Vec<Vec<String>> = run(p)
        .into_iter()
        .map(|out| match out {
            Out::Unit(records) => records,
            error => panic!("unexpected {error:?}"),
        })
        .collect();
    assert_eq!(units.concat(), a);
    let bytes = |unit: &[String]| unit.iter().map(String::len).sum::<usize>();
    for unit in &units[..units.len() - 1] {
        assert!(
            bytes(unit) >= 100_000,
            "a unit ends once it holds the bound"
        );
        assert!(bytes(&unit[..unit.len() - 1]) < 100_000, "and not later");
    }
}

#[test]
fn damage_inside_a_large_record_is_named_and_its_neighbours_kept() {
    use super::testing::sorted;

    let dir = tempfile::tempdir().unwrap();
    let all = mixed('a');
    let a = write_file(dir.path(), "a", &all);
    // Record 4 is large: a byte well inside its data is flipped.
    let offset = offset_of(&all, 4);
    flip_byte(&a, offset + HEADER_LEN as u64 + 50_000);
    let error = Out::Error {
        kind: ErrorKind::Corrupt,
        path: Some(a.clone()),
        offset: Some(offset),
        record_index: Some(4),
    };
    let mut p = plan(vec![a]);
    p.on_error = OnError::Continue;
    let out = run(p.clone());
    assert_eq!(out.iter().filter(|o| **o == error).count(), 1, "{out:?}");
    let mut want = all.clone();
    want.remove(4);
    assert_eq!(unit_records(out), want);
    p.on_error = OnError::Stop;
    assert_eq!(run(p.clone()).last(), Some(&error));
    // Through a shuffle, the damage is still named and the rest kept.
    p.on_error = OnError::Continue;
    p.record_ops = vec![super::RecordOp::Shuffle {
        buffer: 4,
        seed: Some(1),
    }];
    let out = run(p);
    assert!(out.contains(&error), "{out:?}");
    assert_eq!(sorted(unit_records(out)), sorted(want));
}

/// The records of a run's units, the errors left out.
fn unit_records(out: Vec<Out>) -> Vec<String> {
    out.into_iter()
        .flat_map(|o| match o {
            Out::Unit(records) => records,
            _ => Vec::new(),
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn closing_a_pipeline_ends_its_readers_wait_for_a_pipes_writer() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = crate::local::tests::named_pipe(dir.path());
    for deterministic in [true, false] {
        let mut p = plan(vec![pipe.clone()]);
        p.deterministic = deterministic;
        let (done, closed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut pipeline = Pipeline::start(p, None).unwrap();
            // Its reader waits for a writer that never comes.
            std::thread::sleep(crate::cancel::TICK * 2);
            pipeline.close();
            done.send(pipeline.next_item().is_none()).unwrap();
        });
        let ended = closed.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(ended, Ok(true), "deterministic={deterministic}");
    }
}
