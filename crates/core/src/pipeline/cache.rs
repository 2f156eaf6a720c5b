//! The cache stage: the first complete pass over its input is kept (in memory, or in a
//! TFRecord file) and every later pass replays it.

use std::sync::{Arc, Mutex};

use super::origin::Origin;
use super::readers::Chunk;
use super::stream::{Held, Stream};
use crate::batch::RecordBatch;
use crate::error::Result;
use crate::local::FileRecordReader;
use crate::reader::ReadOptions;
use crate::writer::RecordWriter;

/// Records kept after the first complete pass, replayed by every later one.
pub struct Cache {
    file: Option<String>,
    state: Mutex<Option<Arc<Cached>>>,
}

enum Cached {
    /// Segments of about [`SEGMENT_BYTES`] each, so that keeping records never copies the
    /// records kept before them.
    Memory(Vec<Chunk>),
    File,
}

const SEGMENT_BYTES: usize = 1 << 20;

impl Cache {
    /// Keeps records in memory.
    pub fn memory() -> Cache {
        Cache {
            file: None,
            state: Mutex::new(None),
        }
    }

    /// Keeps records in a TFRecord file at `path`, reused if it already exists.
    pub fn file(path: &str) -> Cache {
        Cache {
            file: Some(path.to_owned()),
            state: Mutex::new(None),
        }
    }

    fn complete(&self) -> Option<Arc<Cached>> {
        if let Some(c) = self.state.lock().ok()?.as_ref() {
            return Some(Arc::clone(c));
        }
        match &self.file {
            Some(path) if std::path::Path::new(path).is_file() => Some(Arc::new(Cached::File)),
            _ => None,
        }
    }

    /// Whether a complete pass has been kept.
    pub fn is_complete(&self) -> bool {
        self.complete().is_some()
    }
}

enum CacheStream {
    Filling {
        cache: Arc<Cache>,
        inner: Box<dyn Stream>,
        segments: Vec<Chunk>,
        writer: Option<Box<RecordWriter>>,
    },
    Memory {
        cached: Arc<Cached>,
        segment: usize,
        pos: usize,
    },
    File(Box<FileRecordReader>),
}

impl Stream for CacheStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        match self {
            CacheStream::Filling {
                cache,
                inner,
                segments,
                writer,
            } => {
                let start = out.len();
                match inner.next_into(out, held)? {
                    Some(origin) => {
                        let record = held.as_deref().unwrap_or(&out[start..]);
                        match writer {
                            Some(w) => w.write(record)?,
                            None => {
                                let full = segments.last().is_none_or(|s| {
                                    s.batch.data.len() + record.len() > SEGMENT_BYTES
                                });
                                if full {
                                    segments.push(Chunk {
                                        batch: RecordBatch {
                                            data: Vec::with_capacity(
                                                SEGMENT_BYTES.max(record.len()),
                                            ),
                                            ends: Vec::new(),
                                            ..RecordBatch::default()
                                        },
                                        origins: Vec::new(),
                                    });
                                }
                                let last = segments.last_mut().expect("a segment was just added");
                                last.batch.push(record);
                                last.origins.push(origin);
                            }
                        }
                        Ok(Some(origin))
                    }
                    None => {
                        let kept = match writer.take() {
                            Some(mut w) => {
                                w.close()?;
                                Cached::File
                            }
                            None => Cached::Memory(std::mem::take(segments)),
                        };
                        if let Ok(mut state) = cache.state.lock() {
                            *state = Some(Arc::new(kept));
                        }
                        Ok(None)
                    }
                }
            }
            CacheStream::Memory {
                cached,
                segment,
                pos,
            } => {
                let Cached::Memory(segments) = cached.as_ref() else {
                    return Ok(None);
                };
                while let Some(seg) = segments.get(*segment) {
                    if *pos < seg.origins.len() {
                        out.extend_from_slice(seg.batch.get(*pos));
                        *pos += 1;
                        return Ok(Some(seg.origins[*pos - 1]));
                    }
                    *segment += 1;
                    *pos = 0;
                }
                Ok(None)
            }
            CacheStream::File(reader) => {
                let (index, offset) = (reader.record_index(), reader.offset());
                Ok(reader.next_record_into(out)?.then_some(Origin {
                    file: u32::MAX,
                    pass: 0,
                    index,
                    offset,
                }))
            }
        }
    }
}

impl Drop for CacheStream {
    fn drop(&mut self) {
        // A pass abandoned part way leaves no cache behind.
        if let CacheStream::Filling {
            writer: Some(w), ..
        } = self
        {
            w.abort();
        }
    }
}

/// The stream of a cache stage: what the cache holds when a pass was completed, else the
/// stream `upstream` builds, kept as it is read.
pub(super) fn cache_stream(
    cache: &Arc<Cache>,
    upstream: impl FnOnce() -> Result<Box<dyn Stream>>,
) -> Result<Box<dyn Stream>> {
    if let Some(cached) = cache.complete() {
        return Ok(match (cached.as_ref(), &cache.file) {
            (Cached::File, Some(path)) => Box::new(CacheStream::File(Box::new(
                FileRecordReader::open(path, &ReadOptions::default())?,
            ))),
            _ => Box::new(CacheStream::Memory {
                cached,
                segment: 0,
                pos: 0,
            }),
        });
    }
    let writer = match &cache.file {
        Some(path) => Some(Box::new(RecordWriter::create(path, None, None, true)?)),
        None => None,
    };
    Ok(Box::new(CacheStream::Filling {
        cache: Arc::clone(cache),
        inner: upstream()?,
        segments: Vec::new(),
        writer,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::testing::{named, named_files, plan, records, sorted, strings};
    use super::super::RecordOp;
    use super::Cache;

    fn remove(files: &[String]) {
        for f in files {
            std::fs::remove_file(f).unwrap();
        }
    }

    /// The names in `dir`, sorted.
    fn listing(dir: &std::path::Path) -> Vec<String> {
        let names = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        sorted(names)
    }

    #[test]
    fn a_memory_cache_replays_the_first_pass_without_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let files = named_files(dir.path(), &[3, 300]);
        let cache = Arc::new(Cache::memory());
        let mut p = plan(files.clone());
        p.cycle_length = 2;
        p.record_ops = vec![RecordOp::Cache(Arc::clone(&cache))];
        assert!(!cache.is_complete());
        let first = records(p.clone());
        assert_eq!(first.len(), 303);
        assert!(cache.is_complete());
        remove(&files);
        assert_eq!(records(p.clone()), first);
        assert_eq!(records(p), first, "and again");
    }

    #[test]
    fn a_file_cache_is_replayed_by_a_later_cache_at_the_same_path() {
        let dir = tempfile::tempdir().unwrap();
        let files = named_files(dir.path(), &[4, 2]);
        let path = dir.path().join("cache.tfrecord");
        let path = path.to_str().unwrap();
        let mut p = plan(files.clone());
        p.cycle_length = 2;
        p.record_ops = vec![RecordOp::Cache(Arc::new(Cache::file(path)))];
        let first = records(p.clone());
        assert_eq!(first, strings(&["a0", "b0", "a1", "b1", "a2", "a3"]));
        assert!(std::path::Path::new(path).is_file());
        remove(&files);
        let again = Arc::new(Cache::file(path));
        assert!(again.is_complete());
        p.record_ops = vec![RecordOp::Cache(again)];
        assert_eq!(records(p), first);
    }

    #[test]
    fn stages_after_a_cache_run_anew_over_the_replay() {
        let dir = tempfile::tempdir().unwrap();
        let files = named_files(dir.path(), &[50]);
        let cache = Arc::new(Cache::memory());
        let mut p = plan(files.clone());
        p.record_ops = vec![
            RecordOp::Cache(Arc::clone(&cache)),
            RecordOp::Shuffle {
                buffer: 100,
                seed: Some(1),
            },
        ];
        let epoch0 = records(p.clone());
        remove(&files);
        p.epoch = 1;
        let epoch1 = records(p.clone());
        assert_eq!(sorted(epoch1.clone()), sorted(named("a", 50)));
        assert_ne!(epoch1, epoch0);
        p.epoch = 0;
        assert_eq!(records(p), epoch0);
    }

    #[test]
    fn a_repeat_after_a_cache_replays_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = named_files(dir.path(), &[3]);
        let cache = Arc::new(Cache::memory());
        let mut p = plan(files);
        p.record_ops = vec![
            RecordOp::Cache(Arc::clone(&cache)),
            RecordOp::Repeat(Some(3)),
        ];
        assert_eq!(
            records(p),
            strings(&["a0", "a1", "a2", "a0", "a1", "a2", "a0", "a1", "a2"])
        );
        assert!(cache.is_complete());
    }

    #[test]
    fn a_pass_stopped_part_way_leaves_no_cache() {
        let dir = tempfile::tempdir().unwrap();
        let files = named_files(dir.path(), &[5]);
        let path = dir.path().join("cache.tfrecord");
        let path = path.to_str().unwrap();
        for cache in [Arc::new(Cache::memory()), Arc::new(Cache::file(path))] {
            let mut p = plan(files.clone());
            p.record_ops = vec![RecordOp::Cache(Arc::clone(&cache)), RecordOp::Take(2)];
            assert_eq!(records(p.clone()), strings(&["a0", "a1"]));
            assert!(!cache.is_complete());
            assert_eq!(listing(dir.path()), strings(&["a"]));
            // The next pass reads the files again, and keeps them all.
            p.record_ops = vec![RecordOp::Cache(Arc::clone(&cache))];
            assert_eq!(records(p), named("a", 5));
            assert!(cache.is_complete());
        }
        assert_eq!(listing(dir.path()), strings(&["a", "cache.tfrecord"]));
    }
}
