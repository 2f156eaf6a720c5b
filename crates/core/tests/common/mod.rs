//! What several test files share.

use std::io::Write;

use tfrecordkit_core::{frame_record, Column, DType, FeatureSpec, SpecKind};

/// One entry of a schema.
#[allow(dead_code)] // not every test file makes schemas
pub fn spec(key: &str, dtype: DType, kind: SpecKind, default: Option<Column>) -> FeatureSpec {
    FeatureSpec::new(key, dtype, kind, default)
}

/// Writes `records`, framed, to the file `name` in `dir`; returns its path.
#[allow(dead_code)] // not every test file writes files
pub fn write_framed(dir: &std::path::Path, name: &str, records: &[Vec<u8>]) -> String {
    let mut bytes = Vec::new();
    for r in records {
        frame_record(r, &mut bytes);
    }
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    path.display().to_string()
}
