//! Gzip and zlib streams of arbitrary bytes: no panic, no unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::{Compression, ReadOptions, RecordReader};

fuzz_target!(|data: &[u8]| {
    for compression in [Compression::Gzip, Compression::Zlib] {
        let opts = ReadOptions {
            max_record_bytes: 1 << 20,
            ..ReadOptions::default()
        };
        let mut reader = RecordReader::new(data, compression, "fuzz", &opts);
        for _ in 0..10_000 {
            match reader.next_record() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) if e.resumable => {}
                Err(_) => break,
            }
        }
    }
});
