//! Spans of records: several readers sharing one file through the offsets of its index.

mod common;

use tfrecordkit_core::{
    index_records, Compression, ErrorKind, MultiFileReader, ReadOptions, RecordBatch, Span,
};

/// Record `i` is `i` repeated `i % 7` times, so records differ in content and length.
fn record(i: usize) -> Vec<u8> {
    vec![i as u8; i % 7]
}

fn write_file(dir: &std::path::Path, name: &str, n: usize) -> String {
    common::write_framed(dir, name, &(0..n).map(record).collect::<Vec<_>>())
}

fn read(paths: Vec<String>, spans: Vec<Option<Span>>) -> tfrecordkit_core::Result<Vec<Vec<u8>>> {
    let mut reader = MultiFileReader::new(paths, ReadOptions::default(), None).with_spans(spans)?;
    let mut batch = RecordBatch::default();
    let mut out = Vec::new();
    loop {
        batch.clear();
        reader.read_batch(&mut batch, 5, usize::MAX)?;
        if batch.is_empty() {
            return Ok(out);
        }
        out.extend(batch.iter().map(<[u8]>::to_vec));
    }
}

/// Spans cut at the records that begin at or after each byte of `cuts`, as a reader of an
/// index sidecar cuts them.
fn spans_at(offsets: &[u64], cuts: &[u64]) -> Vec<Span> {
    let first = |byte: u64| offsets.partition_point(|&o| o < byte);
    let mut out = Vec::new();
    for pair in cuts.windows(2) {
        let (i, j) = (first(pair[0]), first(pair[1]));
        if i < j {
            let end = offsets.get(j).copied().unwrap_or(u64::MAX);
            out.push(Span {
                start: offsets[i],
                index: i as u64,
                end,
            });
        }
    }
    out
}

#[test]
fn spans_from_the_index_partition_a_file_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "a.tfrecord", 200);
    let size = std::fs::metadata(&path).unwrap().len();
    let offsets: Vec<u64> = index_records(&path, &None)
        .unwrap()
        .iter()
        .map(|&(o, _)| o)
        .collect();
    let all: Vec<Vec<u8>> = (0..200).map(record).collect();
    for parts in [1, 2, 3, 7, 64, 500] {
        let cuts: Vec<u64> = (0..=parts).map(|k| size * k / parts).collect();
        let spans = spans_at(&offsets, &cuts);
        let mut joined = Vec::new();
        for span in &spans {
            joined.extend(read(vec![path.clone()], vec![Some(*span)]).unwrap());
        }
        assert_eq!(joined, all, "{parts} parts");
        // All spans in one reader, as one task reads several, give the same.
        let n = spans.len();
        let back = read(vec![path.clone(); n], spans.into_iter().map(Some).collect()).unwrap();
        assert_eq!(back, all, "{parts} parts in one reader");
    }
}

#[test]
fn spans_and_whole_files_mix() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_file(dir.path(), "a.tfrecord", 10);
    let b = write_file(dir.path(), "b.tfrecord", 30);
    let offsets: Vec<u64> = index_records(&b, &None)
        .unwrap()
        .iter()
        .map(|&(o, _)| o)
        .collect();
    let span = Span {
        start: offsets[12],
        index: 12,
        end: offsets[20],
    };
    let back = read(vec![a, b], vec![None, Some(span)]).unwrap();
    let want: Vec<Vec<u8>> = (0..10).chain(12..20).map(record).collect();
    assert_eq!(back, want);
}

#[test]
fn damage_inside_a_span_names_the_file_offset_and_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "a.tfrecord", 40);
    let entries = index_records(&path, &None).unwrap();
    let (at, _) = entries[25];
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at as usize + 2] ^= 0xff; // the length of record 25
    std::fs::write(&path, &bytes).unwrap();
    let span = Span {
        start: entries[20].0,
        index: 20,
        end: u64::MAX,
    };
    let err = read(vec![path.clone()], vec![Some(span)]).unwrap_err();
    assert_eq!(err.path.as_deref(), Some(path.as_str()));
    assert_eq!((err.offset, err.record_index), (Some(at), Some(25)));
}

#[test]
fn a_span_refuses_compressed_files_and_starts_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = tfrecordkit_core::RecordWriter::create(
        &dir.path().join("z.tfrecord.gz").display().to_string(),
        Some(Compression::Gzip),
        None,
        false,
    )
    .unwrap();
    w.write(b"abc").unwrap();
    w.finish().unwrap();
    let gz = dir.path().join("z.tfrecord.gz").display().to_string();
    let span = Span {
        start: 0,
        index: 0,
        end: u64::MAX,
    };
    let err = read(vec![gz], vec![Some(span)]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("uncompressed"), "{}", err.message);

    let path = write_file(dir.path(), "a.tfrecord", 3);
    let past = Span {
        start: 1 << 20,
        index: 3,
        end: u64::MAX,
    };
    let err = read(vec![path.clone()], vec![Some(past)]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Truncated);
    let empty = Span {
        start: 0,
        index: 0,
        end: 0,
    };
    assert!(read(vec![path.clone()], vec![Some(empty)])
        .unwrap()
        .is_empty());

    let err = read(vec![path], vec![]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
}
