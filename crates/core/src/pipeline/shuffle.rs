//! The shuffle stage: a buffer of records, each output drawn from it at random.

use super::origin::Origin;
use super::stream::{Held, Stream};
use crate::error::{Error, Result};
use crate::reader::DIRECT_MIN;

/// tf.data's shuffle: a buffer of `size` records; each output is a uniformly chosen
/// record of the buffer, whose place the next record read takes.
///
/// Records of up to [`INLINE`] bytes live inside their entry, next to their origin, so
/// that drawing one touches one place in memory; longer ones spill to a buffer of their
/// own, kept per slot and reused. A large record that came in a buffer of its own is
/// kept in that buffer, and goes on in it.
pub(super) struct ShuffleStream {
    inner: Box<dyn Stream>,
    size: usize,
    entries: Vec<Entry>,
    spill: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// The record just read, when it came in a buffer of its own.
    held: Held,
    /// An error met while refilling, delivered after the record drawn before it.
    pending: Option<Error>,
    /// The slot the next output takes, drawn early so that its memory is fetched while
    /// this output is being delivered.
    next: Option<usize>,
    exhausted: bool,
    rng: fastrand::Rng,
}

const INLINE: usize = 100;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    origin: Origin,
    len: u32,
    data: [u8; INLINE],
}

impl ShuffleStream {
    pub(super) fn new(inner: Box<dyn Stream>, size: usize, rng: fastrand::Rng) -> ShuffleStream {
        let size = size.max(1);
        ShuffleStream {
            inner,
            size,
            entries: Vec::with_capacity(size.min(1 << 20)),
            spill: Vec::with_capacity(size.min(1 << 20)),
            scratch: Vec::new(),
            held: None,
            pending: None,
            next: None,
            exhausted: false,
            rng,
        }
    }

    /// Puts the record read into slot `i` (one past the end: a new slot).
    fn store(&mut self, i: usize, origin: Origin) {
        if self.held.is_some() {
            return self.store_held(i, origin);
        }
        let len = self.scratch.len();
        let mut entry = Entry {
            origin,
            // Past `u32::MAX`, the spilled buffer holds the length.
            len: u32::try_from(len).unwrap_or(u32::MAX),
            data: [0; INLINE],
        };
        if i == self.entries.len() {
            self.spill.push(Vec::new());
        }
        if len <= INLINE {
            entry.data[..len].copy_from_slice(&self.scratch);
        } else {
            let spill = &mut self.spill[i];
            spill.clear();
            spill.extend_from_slice(&self.scratch);
        }
        if i == self.entries.len() {
            self.entries.push(entry);
        } else {
            self.entries[i] = entry;
        }
    }

    /// [`ShuffleStream::store`] for a large record that came in a buffer of its own: it
    /// stays in that buffer.
    #[cold]
    fn store_held(&mut self, i: usize, origin: Origin) {
        let record = self.held.take().expect("a record in its own buffer");
        if record.len() <= INLINE {
            self.scratch.clear();
            self.scratch.extend_from_slice(&record);
            return self.store(i, origin);
        }
        let entry = Entry {
            origin,
            len: u32::try_from(record.len()).unwrap_or(u32::MAX),
            data: [0; INLINE],
        };
        if i == self.entries.len() {
            self.spill.push(record);
            self.entries.push(entry);
        } else {
            self.spill[i] = record;
            self.entries[i] = entry;
        }
    }

    fn read(&mut self) -> Result<Option<Origin>> {
        self.scratch.clear();
        let got = self.inner.next_into(&mut self.scratch, &mut self.held);
        if matches!(got, Ok(None)) {
            self.exhausted = true;
        }
        got
    }
}

impl Stream for ShuffleStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        while !self.exhausted && self.entries.len() < self.size {
            if let Some(origin) = self.read()? {
                self.store(self.entries.len(), origin);
            }
        }
        if self.entries.is_empty() {
            return Ok(None);
        }
        let i = match self.next.take() {
            Some(i) => i,
            None => self.rng.usize(..self.entries.len()),
        };
        let entry = &self.entries[i];
        let (origin, len) = (entry.origin, entry.len as usize);
        if len <= INLINE {
            out.extend_from_slice(&entry.data[..len]);
        } else if self.spill[i].len() as u64 >= DIRECT_MIN {
            *held = Some(std::mem::take(&mut self.spill[i]));
        } else {
            out.extend_from_slice(&self.spill[i]);
        }
        let refill = if self.exhausted {
            Ok(None)
        } else {
            self.read()
        };
        match refill {
            Ok(Some(next)) => {
                self.store(i, next);
                // The buffer stays full: the next draw has the same range, so it can be
                // drawn now and its entry loaded ahead of use.
                let j = self.rng.usize(..self.entries.len());
                std::hint::black_box(self.entries[j].len);
                self.next = Some(j);
            }
            other => {
                self.entries.swap_remove(i);
                self.spill.swap_remove(i);
                if let Err(e) = other {
                    self.pending = Some(e);
                }
            }
        }
        Ok(Some(origin))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{named, named_files, plan, records, sorted, write_file};
    use super::super::RecordOp;

    fn shuffle(buffer: usize, seed: u64) -> RecordOp {
        RecordOp::Shuffle {
            buffer,
            seed: Some(seed),
        }
    }

    #[test]
    fn shuffle_is_a_permutation_fixed_by_seed_and_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(named_files(dir.path(), &[40, 40]));
        p.cycle_length = 2;
        let unshuffled = records(p.clone());
        p.record_ops = vec![shuffle(1000, 42)];
        let first = records(p.clone());
        assert_eq!(sorted(first.clone()), sorted(unshuffled.clone()));
        assert_ne!(first, unshuffled);
        assert_eq!(records(p.clone()), first, "same seed and epoch");
        p.epoch = 1;
        let next_epoch = records(p.clone());
        assert_eq!(sorted(next_epoch.clone()), sorted(unshuffled.clone()));
        assert_ne!(next_epoch, first, "another epoch, another order");
        p.epoch = 0;
        p.record_ops = vec![shuffle(1000, 43)];
        assert_ne!(records(p.clone()), first, "another seed");
        p.record_ops = vec![RecordOp::Shuffle {
            buffer: 1000,
            seed: None,
        }];
        assert_eq!(sorted(records(p)), sorted(unshuffled));
    }

    #[test]
    fn shuffle_draws_each_record_from_a_window_of_buffer_records() {
        let dir = tempfile::tempdir().unwrap();
        let n = 200;
        let mut p = plan(named_files(dir.path(), &[n]));
        p.record_ops = vec![shuffle(1, 9)];
        assert_eq!(records(p.clone()), named("a", n), "a buffer of one");
        p.record_ops = vec![shuffle(8, 9)];
        let got = records(p);
        assert_eq!(sorted(got.clone()), sorted(named("a", n)));
        for (k, record) in got.iter().enumerate() {
            let index: usize = record[1..].parse().unwrap();
            assert!(index < k + 8, "output {k} is {record}");
        }
    }

    #[test]
    fn shuffle_keeps_long_and_short_records_intact() {
        let dir = tempfile::tempdir().unwrap();
        // Records up to 100 bytes are kept inline, longer ones apart.
        let recs: Vec<String> = (0..60)
            .map(|i| format!("{i:03}{}", "x".repeat(i * 7 % 250)))
            .collect();
        let file = write_file(dir.path(), "mixed", &recs);
        let mut p = plan(vec![file]);
        p.record_ops = vec![shuffle(16, 1)];
        let got = records(p);
        assert_ne!(got, recs);
        assert_eq!(sorted(got), sorted(recs));
    }
}
