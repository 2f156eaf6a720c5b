//! Helpers for the pipeline's tests: small TFRecord files in a temporary directory, a
//! plan that reads them, and a run's output as plain values to compare.

use std::path::Path;

use super::{OnError, Payload, Pipeline, Plan};
use crate::error::ErrorKind;
use crate::reader::ReadOptions;
use crate::writer::RecordWriter;

/// Writes `records` to a new TFRecord file `name` in `dir`; returns its path.
pub(super) fn write_file<R: AsRef<[u8]>>(dir: &Path, name: &str, records: &[R]) -> String {
    let path = dir.join(name).to_str().expect("a UTF-8 path").to_owned();
    let mut writer = RecordWriter::create(&path, None, None, false).unwrap();
    for record in records {
        writer.write(record.as_ref()).unwrap();
    }
    writer.close().unwrap();
    path
}

/// `n` records named by `prefix` and their index: `a0`, `a1`, ...
pub(super) fn named(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// One file per entry of `counts`, named `a`, `b`, ..., holding that many [`named`]
/// records with the file's name as prefix.
pub(super) fn named_files(dir: &Path, counts: &[usize]) -> Vec<String> {
    counts
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let name = char::from(b'a' + i as u8).to_string();
            write_file(dir, &name, &named(&name, n))
        })
        .collect()
}

/// The byte offset of record `index` in a file holding `records`.
pub(super) fn offset_of<R: AsRef<[u8]>>(records: &[R], index: usize) -> u64 {
    records[..index]
        .iter()
        .map(|r| (r.as_ref().len() + 16) as u64)
        .sum()
}

/// Flips a bit of the byte `at` of the file at `path`.
pub(super) fn flip_byte(path: &str, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

/// A plan reading `files` one after another, one record per unit, unparsed, stopping at
/// the first error.
pub(super) fn plan(files: Vec<String>) -> Plan {
    Plan {
        files,
        read: ReadOptions::default(),
        file_ops: Vec::new(),
        cycle_length: 1,
        block_length: 1,
        parallel_reads: 0,
        deterministic: true,
        record_ops: Vec::new(),
        batch_size: 1,
        unit_batches: 1,
        drop_remainder: false,
        batch_bytes: usize::MAX,
        refill: false,
        schema: None,
        feature_lists: None,
        parse_workers: 0,
        prefetch: 2,
        on_error: OnError::Stop,
        epoch: 0,
        images: Vec::new(),
    }
}

/// An output item of an unparsed run: a unit's records as text, or where an error was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Out {
    Unit(Vec<String>),
    Error {
        kind: ErrorKind,
        path: Option<String>,
        offset: Option<u64>,
        record_index: Option<u64>,
    },
}

impl Out {
    pub(super) fn unit(records: &[&str]) -> Out {
        Out::Unit(records.iter().map(|r| r.to_string()).collect())
    }
}

/// Every item of a run of `plan`, which must not parse.
pub(super) fn run(plan: Plan) -> Vec<Out> {
    let mut pipeline = Pipeline::start(plan, None).unwrap();
    let mut out = Vec::new();
    while let Some(item) = pipeline.next_item() {
        out.push(match item {
            Ok(Payload::Records(batch, _)) => Out::Unit(
                batch
                    .iter()
                    .map(|r| String::from_utf8(r.to_vec()).unwrap())
                    .collect(),
            ),
            Ok(Payload::Parsed(..) | Payload::Sequences(..)) => {
                panic!("a plan without a schema parsed a unit")
            }
            Err(e) => Out::Error {
                kind: e.kind,
                path: e.path,
                offset: e.offset,
                record_index: e.record_index,
            },
        });
    }
    pipeline.close();
    out
}

/// The records of a run of `plan`, in order, across units; panics on an error.
pub(super) fn records(plan: Plan) -> Vec<String> {
    run(plan)
        .into_iter()
        .flat_map(|out| match out {
            Out::Unit(records) => records,
            error => panic!("unexpected {error:?}"),
        })
        .collect()
}

/// `names` as owned strings, to compare with [`records`].
pub(super) fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// `records` sorted, to compare as multisets.
pub(super) fn sorted(mut records: Vec<String>) -> Vec<String> {
    records.sort();
    records
}
