//! Record framing end to end: write, read back, and every kind of damage.

use std::io::Write;

use proptest::prelude::*;
use tfrecordkit_core::{
    count_records, frame_record, Compression, ErrorKind, MultiFileReader, ReadOptions, RecordBatch,
    RecordReader, RecordWriter,
};

fn framed(records: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        frame_record(r, &mut out);
    }
    out
}

fn read_all(
    bytes: &[u8],
    compression: Compression,
) -> (Vec<Vec<u8>>, Option<tfrecordkit_core::Error>) {
    let mut reader = RecordReader::new(bytes, compression, "mem", &ReadOptions::default());
    let mut out = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => out.push(r.to_vec()),
            Ok(None) => return (out, None),
            Err(e) if e.resumable => continue,
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn empty_stream_and_boundary_end() {
    let (records, err) = read_all(b"", Compression::None);
    assert!(records.is_empty() && err.is_none());
    let bytes = framed(&[b"a", b"", b"ccc"]);
    let (records, err) = read_all(&bytes, Compression::None);
    assert!(err.is_none());
    assert_eq!(records, vec![b"a".to_vec(), vec![], b"ccc".to_vec()]);
}

#[test]
fn every_truncation_is_a_truncated_error_after_the_intact_records() {
    let bytes = framed(&[b"first", b"second record"]);
    let first_len = 16 + 5;
    for cut in first_len + 1..bytes.len() {
        let (records, err) = read_all(&bytes[..cut], Compression::None);
        assert_eq!(records, vec![b"first".to_vec()], "cut at {cut}");
        let err = err.expect("an error");
        assert_eq!(err.kind, ErrorKind::Truncated, "cut at {cut}: {err}");
        assert_eq!(err.offset, Some(first_len as u64));
        assert_eq!(err.record_index, Some(1));
    }
}

#[test]
fn length_checksum_mismatch_stops_before_allocating() {
    let mut bytes = framed(&[b"ok"]);
    let mut bad = framed(&[b"x"]);
    bad[..8].copy_from_slice(&u64::MAX.to_le_bytes()); // huge length, stale checksum
    bytes.extend(bad);
    let (records, err) = read_all(&bytes, Compression::None);
    assert_eq!(records.len(), 1);
    let err = err.unwrap();
    assert_eq!(err.kind, ErrorKind::Corrupt);
    assert_eq!(err.offset, Some(18));
}

#[test]
fn huge_length_with_valid_checksum_is_data_loss_without_allocation() {
    let len = (1u64 << 40).to_le_bytes();
    let mut bytes = len.to_vec();
    bytes.extend(tfrecordkit_core::crc::masked_crc32c(&len).to_le_bytes());
    bytes.extend([0u8; 64]);
    let (_, err) = read_all(&bytes, Compression::None);
    assert_eq!(err.unwrap().kind, ErrorKind::DataLoss);
    let opts = ReadOptions {
        max_record_bytes: u64::MAX,
        ..ReadOptions::default()
    };
    // Without a maximum, a compressed-like stream of unknown size ends as truncated data,
    // having grown its buffer only as far as the bytes that really arrived.
    let mut reader = RecordReader::new(&bytes[..], Compression::None, "mem", &opts);
    let err = reader.next_record().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Truncated);
}

#[test]
fn data_checksum_mismatch_skips_one_record() {
    let mut bytes = framed(&[b"one", b"two", b"three"]);
    bytes[19 + 12] ^= 1; // first data byte of record 1
    let mut reader = RecordReader::new(
        &bytes[..],
        Compression::None,
        "mem",
        &ReadOptions::default(),
    );
    assert_eq!(reader.next_record().unwrap().unwrap(), b"one");
    let err = reader.next_record().unwrap_err();
    assert!(err.resumable);
    assert_eq!(
        (err.kind, err.record_index, err.offset),
        (ErrorKind::Corrupt, Some(1), Some(19))
    );
    assert_eq!(reader.next_record().unwrap().unwrap(), b"three");
    assert!(reader.next_record().unwrap().is_none());
}

#[test]
fn gzip_members_concatenate_and_damage_is_located() {
    let mut all = Vec::new();
    for part in [framed(&[b"a", b"b"]), framed(&[b"c"])] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&part).unwrap();
        all.extend(gz.finish().unwrap());
    }
    let (records, err) = read_all(&all, Compression::Gzip);
    assert!(err.is_none());
    assert_eq!(records.len(), 3);
    let (records, err) = read_all(&all[..all.len() - 5], Compression::Gzip);
    assert!(records.len() <= 3);
    let err = err.expect("truncated gzip is an error");
    assert!(
        matches!(err.kind, ErrorKind::Truncated | ErrorKind::DataLoss),
        "{err}"
    );
}

#[test]
fn writer_is_atomic_and_readers_see_all_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (i, c) in [None, Some(Compression::Gzip), Some(Compression::Zlib)]
        .into_iter()
        .enumerate()
    {
        let path = dir.path().join(format!("f{i}.tfrecord"));
        let p = path.to_str().unwrap().to_owned();
        let mut w = RecordWriter::create(&p, c, None, true).unwrap();
        w.write(b"x").unwrap();
        w.write(&[7u8; 100_000]).unwrap();
        w.flush().unwrap();
        assert!(!path.exists(), "final name appears only at close");
        w.close().unwrap();
        assert!(path.exists());
        assert_eq!(count_records(&p, None, &None).unwrap(), 2);
        paths.push(p);
    }
    let mut aborted =
        RecordWriter::create(&format!("{}/gone", dir.path().display()), None, None, true).unwrap();
    aborted.write(b"x").unwrap();
    aborted.abort();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        3,
        "no temporaries left"
    );

    let mut reader = MultiFileReader::new(paths, ReadOptions::default(), None);
    let mut batch = RecordBatch::default();
    let mut total = 0;
    loop {
        batch.clear();
        reader.read_batch(&mut batch, 4, usize::MAX).unwrap();
        if batch.is_empty() {
            break;
        }
        total += batch.len();
    }
    assert_eq!(total, 6);
}

proptest! {
    #[test]
    fn framing_round_trips(records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..40)) {
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let (back, err) = read_all(&framed(&refs), Compression::None);
        prop_assert!(err.is_none());
        prop_assert_eq!(back, records);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        for c in [Compression::None, Compression::Gzip, Compression::Zlib] {
            let _ = read_all(&bytes, c);
        }
    }
}

#[test]
fn large_records_read_directly_into_the_caller_buffer() {
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
    let bytes = framed(&[b"small", &big, &big[..70_000]]);
    let read_into = |bytes: &[u8], c| {
        let mut reader = RecordReader::new(bytes, c, "mem", &ReadOptions::default());
        let mut out = vec![9u8];
        let mut lens = Vec::new();
        loop {
            let before = out.len();
            match reader.next_record_into(&mut out) {
                Ok(true) => lens.push(out.len() - before),
                Ok(false) => return (out, lens, None),
                Err(e) => {
                    assert_eq!(
                        out.len(),
                        before,
                        "a failed read leaves the buffer as it was"
                    );
                    if e.resumable {
                        continue;
                    }
                    return (out, lens, Some(e));
                }
            }
        }
    };
    let (out, lens, err) = read_into(&bytes, Compression::None);
    assert!(err.is_none());
    assert_eq!(lens, vec![5, 300_000, 70_000]);
    assert_eq!(&out[6..300_006], &big[..]);

    let second = 16 + 5;
    for cut in [
        second + 11,
        second + 12,
        second + 1000,
        second + 200_000,
        second + 12 + 300_000 + 2,
    ] {
        let (_, lens, err) = read_into(&bytes[..cut], Compression::None);
        assert_eq!(lens, vec![5]);
        let err = err.unwrap();
        assert_eq!(
            (err.kind, err.offset, err.record_index),
            (ErrorKind::Truncated, Some(second as u64), Some(1)),
            "cut {cut}: {err}"
        );
    }

    let mut damaged = bytes.clone();
    damaged[second + 12 + 150_000] ^= 0x40;
    let (_, lens, err) = read_into(&damaged, Compression::None);
    assert!(err.is_none());
    assert_eq!(
        lens,
        vec![5, 70_000],
        "the damaged large record alone is skipped"
    );

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    let gz = gz.finish().unwrap();
    let (_, lens, err) = read_into(&gz, Compression::Gzip);
    assert!(err.is_none());
    assert_eq!(lens, vec![5, 300_000, 70_000]);
}

fn read_resync(bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<tfrecordkit_core::Error>) {
    let opts = ReadOptions {
        resync: true,
        ..ReadOptions::default()
    };
    let mut reader = RecordReader::new(bytes, Compression::None, "mem", &opts);
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    loop {
        match reader.next_record() {
            Ok(Some(r)) => out.push(r.to_vec()),
            Ok(None) => return (out, errors),
            Err(e) => {
                assert!(e.resumable || reader.is_done(), "{e}");
                errors.push(e);
            }
        }
    }
}

#[test]
fn resync_recovers_every_record_after_damage() {
    let records: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; 20 + i as usize]).collect();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let clean = framed(&refs);
    let offset_of = |k: usize| -> usize { records[..k].iter().map(|r| r.len() + 16).sum() };

    // A damaged length: only that record is lost.
    let mut bytes = clean.clone();
    bytes[offset_of(10) + 2] ^= 0xff;
    let (out, errors) = read_resync(&bytes);
    assert_eq!(out.len(), 49);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ErrorKind::Corrupt);
    let lost = *errors[0].lost.clone().unwrap();
    assert_eq!(lost, (offset_of(10) as u64, offset_of(11) as u64));

    // Bytes cut out of the middle (a splice): everything after the cut comes back.
    let mut spliced = clean[..offset_of(20) + 7].to_vec();
    spliced.extend_from_slice(&clean[offset_of(22) + 3..]);
    let (out, errors) = read_resync(&spliced);
    assert_eq!(&out[..20], &records[..20]);
    assert_eq!(&out[20..], &records[23..]);
    assert!(!errors.is_empty());

    // Garbage inserted between records.
    let mut inserted = clean[..offset_of(5)].to_vec();
    inserted.extend_from_slice(&[0xAB; 37]);
    inserted.extend_from_slice(&clean[offset_of(5)..]);
    let (out, errors) = read_resync(&inserted);
    assert_eq!(out, records);
    assert_eq!(errors.len(), 1);

    // A torn tail: the records before it, then one error reaching the end.
    let (out, errors) = read_resync(&clean[..clean.len() - 5]);
    assert_eq!(out.len(), 49);
    assert_eq!(errors.len(), 1);
}

#[test]
fn other_formats_are_named_not_called_corrupt() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x08\0\0\0\x08".to_vec();
    let (records, err) = read_all(&png, Compression::None);
    let err = err.expect("an error");
    assert!(records.is_empty());
    assert_eq!(err.kind, ErrorKind::NotTfRecord);
    assert_eq!(
        err.message,
        "not a TFRecord file (it starts with a PNG signature)"
    );
    assert_eq!((err.offset, err.record_index), (Some(0), Some(0)));

    let csv = b"split,image_uri,label\nTRAIN,a.jpg,cat\n";
    let err = read_all(csv, Compression::None).1.unwrap();
    assert_eq!(err.kind, ErrorKind::NotTfRecord);
    assert!(
        err.message.ends_with("text: \"split,image_uri,label\")"),
        "{err}"
    );

    // Text shorter than a header is still recognized once it has 8 bytes.
    let err = read_all(b"hello!!\n", Compression::None).1.unwrap();
    assert_eq!(err.kind, ErrorKind::NotTfRecord, "{err}");
}

#[test]
fn a_damaged_first_header_of_a_real_file_stays_corrupt() {
    for len in [1usize, 100, 300, 70_000] {
        let payload = vec![b'a'; len];
        let mut bytes = framed(&[&payload]);
        bytes[8] ^= 0xff; // the length checksum
        let err = read_all(&bytes, Compression::None).1.unwrap();
        assert_eq!(err.kind, ErrorKind::Corrupt, "len {len}: {err}");
        // A header torn before its checksum is truncated, never foreign.
        for cut in 1..12 {
            let err = read_all(&framed(&[&payload])[..cut], Compression::None)
                .1
                .unwrap();
            assert_eq!(err.kind, ErrorKind::Truncated, "len {len} cut {cut}: {err}");
        }
    }
}

#[test]
fn foreign_format_knows_common_signatures() {
    use tfrecordkit_core::foreign_format;
    let cases: [(&[u8], &str); 5] = [
        (b"\xff\xd8\xff\xe0\0\x10JFIF\0", "a JPEG signature"),
        (b"PAR1\x15\x04\x15\0\0\0\0\0", "a Parquet signature"),
        (b"RIFF\x24\0\0\0WEBPVP8 ", "a WebP signature"),
        (b"PK\x03\x04\x14\0\0\0\0\0\0\0", "a ZIP signature"),
        (
            b"{\"a\": 1, \"b\": [1, 2]}",
            "text: \"{\\\"a\\\": 1, \\\"b\\\": [1, 2]}\"",
        ),
    ];
    for (bytes, want) in cases {
        assert_eq!(foreign_format(bytes).as_deref(), Some(want));
    }
    assert_eq!(foreign_format(&framed(&[b"an Example"])), None);
    assert_eq!(
        foreign_format(b"\x1f\x8b\x08\0\0\0\0\0"),
        None,
        "gzip gets the compression hint"
    );
}

#[test]
fn resync_calls_a_stream_foreign_only_when_no_record_follows() {
    let opts = ReadOptions {
        resync: true,
        ..ReadOptions::default()
    };
    let first_error = |bytes: &[u8]| {
        let mut reader = RecordReader::new(bytes, Compression::None, "mem", &opts);
        let mut records = 0;
        let mut errors = Vec::new();
        loop {
            match reader.next_record() {
                Ok(Some(_)) => records += 1,
                Ok(None) => break,
                Err(e) => {
                    let resumable = e.resumable;
                    errors.push(e);
                    if !resumable {
                        break;
                    }
                }
            }
        }
        (records, errors)
    };
    let text = b"a line of text, then nothing else\n".to_vec();
    let (records, errors) = first_error(&text);
    assert_eq!((records, errors.len()), (0, 1));
    assert_eq!(errors[0].kind, ErrorKind::NotTfRecord);
    assert_eq!(errors[0].lost.as_deref(), Some(&(0, text.len() as u64)));
    assert!(errors[0].message.ends_with(")"), "{}", errors[0].message);

    // Text prepended to real records: the records are found, and the text is damage.
    let mut spliced = text.clone();
    spliced.extend(framed(&[b"one", b"two"]));
    let (records, errors) = first_error(&spliced);
    assert_eq!((records, errors.len()), (2, 1));
    assert_eq!(errors[0].kind, ErrorKind::Corrupt);
    assert_eq!(errors[0].lost.as_deref(), Some(&(0, text.len() as u64)));
}

#[test]
fn records_of_a_batch_are_traced_to_their_file_index_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.tfrecord");
    let b = dir.path().join("b.tfrecord");
    let mut damaged = framed(&[b"a0", b"a1", b"a2"]);
    damaged[18 + 12] ^= 0xff; // the data of a1
    std::fs::write(&a, damaged).unwrap();
    std::fs::write(&b, framed(&[b"b0", b"b1"])).unwrap();
    let paths = vec![a.display().to_string(), b.display().to_string()];
    let mut reader = MultiFileReader::new(paths.clone(), ReadOptions::default(), None);
    let mut batch = RecordBatch::default();

    reader.read_batch(&mut batch, 8, usize::MAX).unwrap();
    assert_eq!(batch.len(), 1, "the batch ends before the damaged record");
    assert_eq!(reader.origin_in_batch(0), Some((paths[0].as_str(), 0, 0)));
    batch.clear();
    assert!(
        reader
            .read_batch(&mut batch, 8, usize::MAX)
            .unwrap_err()
            .resumable
    );
    reader.read_batch(&mut batch, 8, usize::MAX).unwrap();
    assert_eq!(batch.len(), 3);
    // Each is 18 bytes framed: a2 starts past a0 and a1.
    assert_eq!(reader.origin_in_batch(0), Some((paths[0].as_str(), 2, 36)));
    assert_eq!(reader.origin_in_batch(1), Some((paths[1].as_str(), 0, 0)));
    assert_eq!(reader.origin_in_batch(2), Some((paths[1].as_str(), 1, 18)));
    assert_eq!(reader.origin_in_batch(3), None);
}
