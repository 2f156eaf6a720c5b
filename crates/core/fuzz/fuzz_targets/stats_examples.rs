//! The statistics accumulators on arbitrary bytes: records split at 0xFF 0x00, each added
//! as an Example to one of two shares, which are merged, summarized and compared.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::stats::{find_anomalies, SplitAcc};

fuzz_target!(|data: &[u8]| {
    let mut shares = [SplitAcc::default(), SplitAcc::default()];
    for (i, record) in data.split(|&b| b == 0xFF).enumerate() {
        let _ = shares[i % 2].add_example(record);
    }
    let [a, b] = shares;
    let mut merged = a.clone();
    merged.merge(&b);
    let summary = merged.summary("all", 1, 10);
    assert!(summary.features.len() <= tfrecordkit_core::stats::MAX_FEATURES);
    for f in &summary.features {
        assert!(f.present <= summary.records);
    }
    let _ = find_anomalies(&[("a", &a), ("b", &b)], 0, 0.1);
});
