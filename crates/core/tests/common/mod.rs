//! What several test files share.

use std::io::Write;

use tfrecordkit_core::frame_record;

/// Writes `records`, framed, to the file `name` in `dir`; returns its path.
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
