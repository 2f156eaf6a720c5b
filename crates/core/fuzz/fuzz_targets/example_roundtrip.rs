//! decode -> encode -> decode agrees with the first decoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::{decode_example, encode_example, Feature};

fn same(a: &[(String, Feature)], b: &[(String, Feature)]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((ka, fa), (kb, fb))| {
            ka == kb
                && match (fa, fb) {
                    // Compare floats bitwise: NaN payloads must survive too.
                    (Feature::Float(x), Feature::Float(y)) => {
                        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
                    }
                    _ => fa == fb,
                }
        })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(first) = decode_example(data) {
        let again = decode_example(&encode_example(&first)).expect("our own encoding decodes");
        assert!(same(&first, &again));
    }
});
