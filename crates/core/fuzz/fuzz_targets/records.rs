//! Record framing over arbitrary bytes: every reading mode ends cleanly or with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::{Compression, ReadOptions, RecordReader};

fuzz_target!(|data: &[u8]| {
    for (verify, resync) in [(true, false), (false, false), (true, true)] {
        let opts = ReadOptions {
            verify,
            resync,
            max_record_bytes: 1 << 20,
            ..ReadOptions::default()
        };
        let mut reader = RecordReader::new(data, Compression::None, "fuzz", &opts);
        let mut into = Vec::new();
        for _ in 0..=data.len() {
            match reader.next_record_into(&mut into) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) if e.resumable => {}
                Err(_) => break,
            }
        }
        assert!(into.len() <= data.len());
    }
});
