//! The Example and SequenceExample decoders on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tfrecordkit_core::decode_example(data);
    let _ = tfrecordkit_core::decode_sequence_example(data);
});
