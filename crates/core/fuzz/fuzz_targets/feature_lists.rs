//! The feature lists of arbitrary records (SequenceExamples, split into a batch at 0xFF
//! bytes): a column per wanted list whose steps and values line up, or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::sequence::parse_feature_lists;
use tfrecordkit_core::DType;

fuzz_target!(|data: &[u8]| {
    let records: Vec<&[u8]> = data.split(|&b| b == 0xFF).collect();
    let wanted = [
        ("frames".to_owned(), DType::Float32),
        ("tags".to_owned(), DType::Int64),
        ("words".to_owned(), DType::Bytes),
    ];
    if let Ok(cols) = parse_feature_lists(&wanted, &records) {
        for col in cols {
            assert_eq!(col.steps.len(), records.len() + 1);
            assert_eq!(col.present.len(), records.len());
            assert!(col.steps.windows(2).all(|w| w[0] <= w[1]));
            assert!(col.step_values.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(*col.steps.last().unwrap() as usize, col.step_values.len() - 1);
            assert_eq!(*col.step_values.last().unwrap() as usize, col.values.len());
        }
    }
});
