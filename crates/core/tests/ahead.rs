//! Batches read ahead on a thread of their own give what the reader gives in place.

mod common;

use common::write_framed as write_file;
use tfrecordkit_core::{BatchesAhead, ErrorKind, MultiFileReader, ReadOptions, RecordBatch};

fn records(n: usize, seed: u8) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| vec![seed.wrapping_add(i as u8); i % 13])
        .collect()
}

/// The byte offset of record `k` in a file of `recs`.
fn offset_of(recs: &[Vec<u8>], k: usize) -> u64 {
    recs[..k].iter().map(|r| r.len() as u64 + 16).sum()
}

/// Every batch (records, or the error) of `read`, until the end.
fn drain(
    mut read: impl FnMut(&mut RecordBatch) -> tfrecordkit_core::Result<()>,
) -> Vec<Result<Vec<Vec<u8>>, ErrorKind>> {
    let mut out = Vec::new();
    let mut batch = RecordBatch::default();
    loop {
        match read(&mut batch) {
            Ok(()) if batch.is_empty() => return out,
            Ok(()) => out.push(Ok(batch.iter().map(<[u8]>::to_vec).collect())),
            Err(e) => out.push(Err(e.kind)),
        }
        assert!(out.len() < 10_000, "no end");
    }
}

#[test]
fn batches_ahead_are_the_batches_in_place_errors_included() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_file(dir.path(), "a", &records(50, 0));
    let b = write_file(dir.path(), "b", &records(0, 0));
    let c = write_file(dir.path(), "c", &records(77, 9));
    let mut bytes = std::fs::read(&c).unwrap();
    bytes[200] ^= 0xff;
    std::fs::write(&c, &bytes).unwrap();
    let paths = vec![a, b, c];
    let opts = ReadOptions {
        resync: true,
        ..ReadOptions::default()
    };
    let mut now = MultiFileReader::new(paths.clone(), opts, None);
    let want = drain(|batch| {
        batch.clear();
        now.read_batch(batch, 16, usize::MAX)
    });
    assert!(want.iter().any(Result::is_err), "the damage is seen");
    let mut ahead = BatchesAhead::new(
        MultiFileReader::new(paths.clone(), opts, None),
        16,
        usize::MAX,
    );
    let got = drain(|batch| ahead.next_batch(batch));
    assert_eq!(got, want);
    let counted: Vec<(String, u64)> = ahead.delivered().map(|(p, n)| (p.to_owned(), n)).collect();
    let expected: Vec<(String, u64)> = now.delivered().map(|(p, n)| (p.to_owned(), n)).collect();
    assert_eq!(counted, expected);
}

#[test]
fn origins_and_counts_follow_what_was_handed_out() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_file(dir.path(), "a", &records(10, 0));
    let b = write_file(dir.path(), "b", &records(10, 1));
    let mut ahead = BatchesAhead::new(
        MultiFileReader::new(vec![a.clone(), b.clone()], ReadOptions::default(), None),
        6,
        usize::MAX,
    );
    let mut batch = RecordBatch::default();
    ahead.next_batch(&mut batch).unwrap();
    assert_eq!(batch.len(), 6);
    ahead.next_batch(&mut batch).unwrap();
    assert_eq!(batch.len(), 6);
    let at_9 = offset_of(&records(10, 0), 9);
    assert_eq!(ahead.origin_in_batch(3), Some((a.as_str(), 9, at_9)));
    assert_eq!(ahead.origin_in_batch(4), Some((b.as_str(), 0, 0)));
    assert_eq!(ahead.origin_in_batch(6), None);
    // The reading thread is a batch or two further on; only what was handed out counts.
    let counted: Vec<u64> = ahead.delivered().map(|(_, n)| n).collect();
    assert_eq!(counted, vec![10, 2]);
    // Dropped halfway, it stops.
    drop(ahead);
}

#[test]
fn a_missing_file_is_an_error_in_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_file(dir.path(), "a", &records(3, 0));
    let gone = dir.path().join("gone").display().to_string();
    let mut ahead = BatchesAhead::new(
        MultiFileReader::new(vec![a, gone.clone()], ReadOptions::default(), None),
        100,
        usize::MAX,
    );
    let mut batch = RecordBatch::default();
    ahead.next_batch(&mut batch).unwrap();
    assert_eq!(batch.len(), 3);
    let err = ahead.next_batch(&mut batch).unwrap_err();
    assert_eq!(
        (err.kind, err.path.as_deref()),
        (ErrorKind::Io, Some(gone.as_str()))
    );
    ahead.next_batch(&mut batch).unwrap();
    assert!(batch.is_empty());
    ahead.next_batch(&mut batch).unwrap();
    assert!(batch.is_empty(), "the end stays the end");
}

#[test]
fn until_large_hands_the_reader_back_before_the_first_large_record() {
    let dir = tempfile::tempdir().unwrap();
    let big = vec![7u8; tfrecordkit_core::reader::DIRECT_MIN as usize];
    let mut first = records(10, 0);
    first.push(big.clone());
    first.extend(records(3, 5));
    let a = write_file(dir.path(), "a", &first);
    let mut ahead = BatchesAhead::until_large(
        MultiFileReader::new(vec![a.clone()], ReadOptions::default(), None),
        4,
        usize::MAX,
    );
    let mut batch = RecordBatch::default();
    let mut got = Vec::new();
    let mut reader = loop {
        ahead.next_batch(&mut batch).unwrap();
        got.extend(batch.iter().map(<[u8]>::to_vec));
        if let Some(reader) = ahead.take_reader() {
            assert!(batch.before_large && batch.len() == 2, "10 = 4 + 4 + 2");
            break reader;
        }
        assert!(!batch.is_empty(), "the large record is met before the end");
    };
    // Nothing more comes from the thread; the reader goes on at the large record, and
    // adds to the batch in hand, its runs included.
    ahead.next_batch(&mut RecordBatch::default()).unwrap();
    reader.read_batch(&mut batch, 4, usize::MAX).unwrap();
    got.extend(batch.iter().skip(2).map(<[u8]>::to_vec));
    assert_eq!(batch.len(), 4);
    let (at_9, at_10) = (offset_of(&first, 9), offset_of(&first, 10));
    assert_eq!(reader.origin_in_batch(1), Some((a.as_str(), 9, at_9)));
    assert_eq!(reader.origin_in_batch(2), Some((a.as_str(), 10, at_10)));
    batch.clear();
    reader.read_batch(&mut batch, 100, usize::MAX).unwrap();
    got.extend(batch.iter().map(<[u8]>::to_vec));
    assert_eq!(got, first);
    let counted: Vec<u64> = reader.delivered().map(|(_, n)| n).collect();
    assert_eq!(counted, vec![first.len() as u64]);
}

#[test]
fn read_each_hands_over_every_record_in_turn_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = records(5, 0);
    recs.push(vec![3u8; tfrecordkit_core::reader::DIRECT_MIN as usize + 5]);
    recs.extend(records(4, 2));
    recs.push(vec![4u8; 2 * tfrecordkit_core::reader::DIRECT_MIN as usize]);
    let a = write_file(dir.path(), "a", &recs);
    let b = write_file(dir.path(), "b", &records(3, 7));
    let mut reader = MultiFileReader::new(vec![a.clone(), b.clone()], ReadOptions::default(), None);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut batch = RecordBatch::default();
    // Two records already in the batch count toward its bounds.
    reader.read_batch(&mut batch, 2, usize::MAX).unwrap();
    got.extend(batch.iter().map(<[u8]>::to_vec));
    reader
        .read_each(&mut batch, 8, usize::MAX, &mut |r| {
            got.push(r.to_vec());
            Ok(())
        })
        .unwrap();
    assert_eq!(batch.len(), 8);
    let at_7 = offset_of(&recs, 7);
    assert_eq!(reader.origin_in_batch(7), Some((a.as_str(), 7, at_7)));
    loop {
        batch.clear();
        let mut lens = Vec::new();
        reader
            .read_each(&mut batch, 8, 1, &mut |r| {
                got.push(r.to_vec());
                lens.push(r.len());
                Ok(())
            })
            .unwrap();
        if batch.is_empty() {
            break;
        }
        // Past max_bytes once a record holds a byte: only empty records before it.
        assert_eq!(lens.len(), batch.len());
        assert!(lens[..lens.len() - 1].iter().all(|&n| n == 0), "{lens:?}");
    }
    let mut want = recs.clone();
    want.extend(records(3, 7));
    assert_eq!(got, want);
    // An error of the callback comes back as it is, its record counted.
    let mut reader = MultiFileReader::new(vec![b], ReadOptions::default(), None);
    let mut batch = RecordBatch::default();
    let err = reader
        .read_each(&mut batch, 8, usize::MAX, &mut |_| {
            Err(tfrecordkit_core::Error::invalid("refused"))
        })
        .unwrap_err();
    assert_eq!((err.message.as_str(), batch.len()), ("refused", 1));
}

#[test]
fn large_records_are_read_into_buffers_of_their_own_in_place_and_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let min = tfrecordkit_core::reader::DIRECT_MIN as usize;
    let mut recs = records(3, 0);
    recs.push(vec![1u8; min]);
    recs.push(vec![2u8; min - 1]);
    recs.extend(records(2, 4));
    recs.push((0..3 * min).map(|i| i as u8).collect());
    let a = write_file(dir.path(), "a", &recs);
    // The same file, cut in the middle of its last record.
    let cut = dir.path().join("cut").to_str().unwrap().to_owned();
    let bytes = std::fs::read(&a).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - min]).unwrap();

    let mut reader = MultiFileReader::new(vec![a.clone()], ReadOptions::default(), None);
    let mut batch = RecordBatch::default();
    reader.read_batch(&mut batch, 100, usize::MAX).unwrap();
    let got: Vec<Vec<u8>> = batch.iter().map(<[u8]>::to_vec).collect();
    assert_eq!(got, recs);
    let held: Vec<usize> = batch.held.iter().map(|h| h.0).collect();
    assert_eq!(
        held,
        vec![3, 7],
        "records of at least DIRECT_MIN bytes are held"
    );
    assert!(batch.large.is_empty());
    assert_eq!(batch.bytes(), recs.iter().map(Vec::len).sum::<usize>());

    // Held bytes count toward a batch's bound: it ends after the first large record.
    let mut reader = MultiFileReader::new(vec![a.clone()], ReadOptions::default(), None);
    batch.clear();
    reader.read_batch(&mut batch, 100, min).unwrap();
    assert_eq!(batch.len(), 4);

    let mut ahead = BatchesAhead::new(
        MultiFileReader::new(vec![a.clone(), cut], ReadOptions::default(), None),
        5,
        usize::MAX,
    );
    let got = drain(|batch| ahead.next_batch(batch));
    let (last, read) = got.split_last().unwrap();
    assert_eq!(*last, Err(ErrorKind::Truncated), "the cut record, last");
    let read: Vec<Vec<u8>> = read.iter().flat_map(|b| b.clone().unwrap()).collect();
    let mut want = recs.clone();
    want.extend_from_slice(&recs[..recs.len() - 1]);
    assert!(read == want, "every record before the cut, in order");
}

#[test]
fn until_over_reads_large_records_ahead_up_to_its_bound_and_hands_back_at_a_larger_one() {
    let dir = tempfile::tempdir().unwrap();
    let min = tfrecordkit_core::reader::DIRECT_MIN as usize;
    let recs = vec![
        vec![1u8; 10],
        vec![2u8; min],
        vec![3u8; 2 * min],
        vec![4u8; 5],
        vec![5u8; 4 * min],
        vec![6u8; 7],
    ];
    let a = write_file(dir.path(), "a", &recs);
    let mut ahead = BatchesAhead::until_over(
        MultiFileReader::new(vec![a], ReadOptions::default(), None),
        100,
        usize::MAX,
        2 * min,
    );
    let mut batch = RecordBatch::default();
    ahead.next_batch(&mut batch).unwrap();
    let got: Vec<Vec<u8>> = batch.iter().map(<[u8]>::to_vec).collect();
    assert_eq!(got, recs[..4], "up to the record over the bound");
    assert!(batch.before_large);
    assert_eq!(
        batch.held.iter().map(|h| h.0).collect::<Vec<_>>(),
        vec![1, 2]
    );
    let mut reader = ahead
        .take_reader()
        .expect("handed back before the larger record");
    batch.clear();
    reader.read_batch(&mut batch, 100, usize::MAX).unwrap();
    let rest: Vec<Vec<u8>> = batch.iter().map(<[u8]>::to_vec).collect();
    assert_eq!(rest, recs[4..]);
}

#[test]
fn work_is_done_ahead_while_the_consumer_is_busy_and_matches_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(4000, 3);
    let a = write_file(dir.path(), "a", &recs);
    let sum = |batch: &RecordBatch| -> u64 { batch.iter().flatten().map(|&b| u64::from(b)).sum() };
    let work: tfrecordkit_core::Work<u64> = Box::new(move |batch| sum(batch));
    let reader = MultiFileReader::new(vec![a.clone()], ReadOptions::default(), None);
    let mut ahead = BatchesAhead::with_work(reader, (10, usize::MAX), usize::MAX, Some(work));
    let (mut batch, mut read, mut done) = (RecordBatch::default(), Vec::new(), 0);
    loop {
        ahead.next_batch(&mut batch).unwrap();
        if batch.is_empty() {
            break;
        }
        if let Some(total) = ahead.take_done() {
            assert_eq!(total, sum(&batch), "the work of this very batch");
            done += 1;
        }
        assert_eq!(ahead.take_done(), None, "taken once");
        read.extend(batch.iter().map(<[u8]>::to_vec));
        // A busy consumer: the reading thread has the time to work.
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    assert!(read == recs, "every record, in order");
    // The first run is read while the consumer waits for it, and goes out unworked.
    assert!(
        done >= 250,
        "most of the 400 batches worked on ahead, not {done}"
    );

    // Work that panics is left undone, and the batches still come.
    let work: tfrecordkit_core::Work<u64> = Box::new(|_| panic!("no"));
    let reader = MultiFileReader::new(vec![a], ReadOptions::default(), None);
    let mut ahead = BatchesAhead::with_work(reader, (10, usize::MAX), usize::MAX, Some(work));
    let got = drain(|batch| {
        let read = ahead.next_batch(batch);
        assert!(ahead.take_done().is_none());
        std::thread::sleep(std::time::Duration::from_millis(2));
        read
    });
    let got: Vec<Vec<u8>> = got.into_iter().flat_map(Result::unwrap).collect();
    assert!(got == recs);
}

/// Work whose drop says on which thread it happened.
struct Freed {
    sum: u64,
    threads: std::sync::Arc<std::sync::Mutex<Vec<Option<String>>>>,
}

impl Drop for Freed {
    fn drop(&mut self) {
        let name = std::thread::current().name().map(str::to_owned);
        self.threads.lock().unwrap().push(name);
    }
}

#[test]
fn work_copied_by_the_consumer_is_freed_on_the_reading_thread() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(40_000, 5);
    let a = write_file(dir.path(), "a", &recs);
    let threads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sum = |batch: &RecordBatch| -> u64 { batch.iter().flatten().map(|&b| u64::from(b)).sum() };
    let made = std::sync::Arc::clone(&threads);
    let work: tfrecordkit_core::Work<Freed> = Box::new(move |batch| Freed {
        sum: sum(batch),
        threads: std::sync::Arc::clone(&made),
    });
    // Batches of 256 go in runs of four.
    let reader = MultiFileReader::new(vec![a], ReadOptions::default(), None);
    let mut ahead = BatchesAhead::with_work(reader, (256, usize::MAX), usize::MAX, Some(work));
    let (mut batch, mut copies, mut kept) = (RecordBatch::default(), 0, 0);
    loop {
        ahead.next_batch(&mut batch).unwrap();
        if batch.is_empty() {
            break;
        }
        // Every other batch's work is copied here; the rest is taken as it is.
        let copy = copies <= kept;
        let done = ahead.take_done_copied(|w| {
            copy.then(|| Freed {
                sum: w.sum,
                threads: std::sync::Arc::new(std::sync::Mutex::new(Vec::new())),
            })
        });
        if let Some(done) = done {
            assert_eq!(done.sum, sum(&batch), "the work of this very batch");
            if copy {
                copies += 1;
            } else {
                kept += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    drop(ahead);
    assert!(copies >= 30 && kept >= 30, "{copies} copied, {kept} kept");
    let freed = threads.lock().unwrap().clone();
    let there = freed
        .iter()
        .filter(|n| n.as_deref() == Some("tfrecordkit-batches"))
        .count();
    // The original of a copy goes back, and is freed there before the next read; those
    // of the last two runs, copied once reading has ended, are freed with the reader.
    assert!(
        there + 8 >= copies,
        "{there} of {copies} freed on the reading thread"
    );
    assert!(
        there <= copies,
        "work taken as it is is freed where it is dropped"
    );
}

#[test]
fn batches_read_while_the_consumer_is_busy_come_as_they_would_one_by_one() {
    // A slow consumer: the reading thread hands small batches over in runs.
    let dir = tempfile::tempdir().unwrap();
    let a = write_file(dir.path(), "a", &records(40, 0));
    let c = write_file(dir.path(), "c", &records(60, 9));
    let mut bytes = std::fs::read(&c).unwrap();
    bytes[150] ^= 0xff;
    std::fs::write(&c, &bytes).unwrap();
    let paths = vec![a, c];
    let opts = ReadOptions {
        resync: true,
        ..ReadOptions::default()
    };
    let first_origin =
        |origin: Option<(&str, u64, u64)>| origin.map(|(p, i, o)| (p.to_owned(), i, o));
    let mut now = MultiFileReader::new(paths.clone(), opts, None);
    let mut want_origins = Vec::new();
    let want = drain(|batch| {
        batch.clear();
        let read = now.read_batch(batch, 3, usize::MAX);
        if read.is_ok() {
            want_origins.push(first_origin(now.origin_in_batch(0)));
        }
        read
    });
    assert!(want.iter().any(Result::is_err), "the damage is seen");
    let mut ahead = BatchesAhead::new(MultiFileReader::new(paths, opts, None), 3, usize::MAX);
    let mut got_origins = Vec::new();
    let got = drain(|batch| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        let read = ahead.next_batch(batch);
        if read.is_ok() {
            got_origins.push(first_origin(ahead.origin_in_batch(0)));
        }
        read
    });
    assert_eq!(got, want);
    assert_eq!(got_origins, want_origins);
    let counted: Vec<u64> = ahead.delivered().map(|(_, n)| n).collect();
    let expected: Vec<u64> = now.delivered().map(|(_, n)| n).collect();
    assert_eq!(counted, expected);
}
