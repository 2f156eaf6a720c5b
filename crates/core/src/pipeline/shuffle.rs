//! The shuffle stage: a buffer of records, each output drawn from it at random.

use std::collections::VecDeque;

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
    /// The slots the next outputs take, drawn early so that their memory is fetched
    /// while the outputs before them are delivered.
    upcoming: VecDeque<usize>,
    exhausted: bool,
    rng: fastrand::Rng,
}

const INLINE: usize = 100;
/// Draws made ahead of their output.
const AHEAD: usize = 4;

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
            upcoming: VecDeque::with_capacity(AHEAD),
            exhausted: false,
            rng,
        }
    }

    /// Reads the next record into slot `i` (one past the end: a new slot), copied once
    /// from where the stream before lends it; `false` at the end of the input.
    fn read_into(&mut self, i: usize) -> Result<bool> {
        let lent = self.inner.next_lent(&mut self.scratch, &mut self.held);
        let (record, origin) = match lent {
            Ok(Some(lent)) => lent,
            Ok(None) => {
                self.exhausted = true;
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        if let Some(record) = self.held.take() {
            store_held(&mut self.entries, &mut self.spill, i, record, origin);
            return Ok(true);
        }
        if i == self.entries.len() {
            self.spill.push(Vec::new());
            self.entries.push(Entry {
                origin,
                len: 0,
                data: [0; INLINE],
            });
        }
        let entry = &mut self.entries[i];
        entry.origin = origin;
        // Past `u32::MAX`, the spilled buffer holds the length.
        entry.len = u32::try_from(record.len()).unwrap_or(u32::MAX);
        if record.len() <= INLINE {
            entry.data[..record.len()].copy_from_slice(record);
        } else {
            let spill = &mut self.spill[i];
            spill.clear();
            spill.extend_from_slice(record);
        }
        Ok(true)
    }
}

/// Puts a large record that came in a buffer of its own into slot `i`: it stays in that
/// buffer.
#[cold]
fn store_held(
    entries: &mut Vec<Entry>,
    spill: &mut Vec<Vec<u8>>,
    i: usize,
    record: Vec<u8>,
    origin: Origin,
) {
    let len = record.len();
    let entry = Entry {
        origin,
        len: u32::try_from(len).unwrap_or(u32::MAX),
        data: [0; INLINE],
    };
    if i == entries.len() {
        spill.push(Vec::new());
        entries.push(entry);
    }
    entries[i] = entry;
    if len <= INLINE {
        entries[i].data[..len].copy_from_slice(&record);
    } else {
        spill[i] = record;
    }
}

impl Stream for ShuffleStream {
    fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        while !self.exhausted && self.entries.len() < self.size {
            self.read_into(self.entries.len())?;
        }
        if self.entries.is_empty() {
            return Ok(None);
        }
        let i = match self.upcoming.pop_front() {
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
            Ok(false)
        } else {
            self.read_into(i)
        };
        match refill {
            Ok(true) => {
                // The buffer stays full: the next draws have the same range, so they can
                // be drawn now and their entries loaded ahead of use.
                while self.upcoming.len() < AHEAD {
                    let j = self.rng.usize(..self.entries.len());
                    prefetch(&self.entries[j]);
                    self.upcoming.push_back(j);
                }
            }
            other => {
                self.upcoming.clear();
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

/// Asks the CPU to bring `entry` into its cache without waiting for it.
#[inline(always)]
fn prefetch(entry: &Entry) {
    let p = (entry as *const Entry).cast::<u8>();
    crate::prefetch::prefetch(p);
    crate::prefetch::prefetch(p.wrapping_add(64));
}

#[cfg(test)]
mod tests {
    use super::super::origin::Origin;
    use super::super::stream::{Held, Lent, Stream};
    use super::super::testing::{named, named_files, plan, records, sorted, write_file};
    use super::super::RecordOp;
    use super::ShuffleStream;
    use crate::error::Result;

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

    /// Records `0..n`, each named by its index in its origin.
    struct Counting(u64, u64);

    impl Stream for Counting {
        fn next_into(&mut self, out: &mut Vec<u8>, _: &mut Held) -> Result<Option<Origin>> {
            if self.0 == self.1 {
                return Ok(None);
            }
            self.0 += 1;
            out.push(b'r');
            Ok(Some(Origin {
                index: self.0 - 1,
                ..Origin::default()
            }))
        }
    }

    #[test]
    fn each_record_lands_at_each_place_as_often_as_in_tf_datas_shuffle() {
        // tf.data's algorithm: fill a buffer, output a uniformly drawn entry and put the
        // next record in its place; once the input ends, drain the buffer at random.
        let (n, buffer, runs) = (9, 3, 50_000);
        // How often each record comes out at each place: `[place][record]`.
        let mut expected = vec![vec![0f64; n]; n];
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..runs * 10 {
            let mut slots: Vec<usize> = (0..buffer).collect();
            let mut next = buffer;
            for at_place in expected.iter_mut() {
                let i = rng.usize(..slots.len());
                at_place[slots[i]] += 0.1 / runs as f64;
                if next < n {
                    slots[i] = next;
                    next += 1;
                } else {
                    slots.swap_remove(i);
                }
            }
        }
        let mut got = vec![vec![0f64; n]; n];
        for seed in 0..runs as u64 {
            let input = Box::new(Counting(0, n as u64));
            let mut s = ShuffleStream::new(input, buffer, fastrand::Rng::with_seed(seed));
            let (mut out, mut held) = (Vec::new(), None);
            let mut place = 0;
            while let Some(origin) = s.next_into(&mut out, &mut held).unwrap() {
                got[place][origin.index as usize] += 1.0 / runs as f64;
                place += 1;
            }
            assert_eq!((place, out.len()), (n, n));
        }
        for (place, (g, e)) in got.iter().zip(&expected).enumerate() {
            for (record, (&g, &e)) in g.iter().zip(e).enumerate() {
                assert!(
                    (g - e).abs() < 0.008,
                    "record {record} at {place}: {g} vs {e}"
                );
            }
        }
    }

    /// Records of 1 to 300 bytes, every fifth one of them a large record handed over in
    /// a buffer of its own; lent from the stream's memory or copied out, as `lend` says.
    struct Varied {
        records: Vec<Vec<u8>>,
        at: usize,
        lend: bool,
    }

    impl Varied {
        fn new(lend: bool) -> Varied {
            let records = (0..500u32)
                .map(|i| vec![i as u8; 1 + (i as usize * 37) % 300])
                .collect();
            Varied {
                records,
                at: 0,
                lend,
            }
        }

        fn advance(&mut self, held: &mut Held) -> Option<(usize, Origin)> {
            let i = self.at;
            self.records.get(i)?;
            self.at += 1;
            if i % 5 == 4 {
                *held = Some(self.records[i].clone());
            }
            let origin = Origin {
                index: i as u64,
                ..Origin::default()
            };
            Some((i, origin))
        }
    }

    impl Stream for Varied {
        fn next_into(&mut self, out: &mut Vec<u8>, held: &mut Held) -> Result<Option<Origin>> {
            Ok(self.advance(held).map(|(i, origin)| {
                if held.is_none() {
                    out.extend_from_slice(&self.records[i]);
                }
                origin
            }))
        }

        fn next_lent<'a>(
            &'a mut self,
            scratch: &'a mut Vec<u8>,
            held: &mut Held,
        ) -> Result<Lent<'a>> {
            if !self.lend {
                scratch.clear();
                return Ok(self.next_into(scratch, held)?.map(|o| (&scratch[..], o)));
            }
            Ok(self.advance(held).map(|(i, origin)| {
                let record: &[u8] = if held.is_some() {
                    &[]
                } else {
                    &self.records[i]
                };
                (record, origin)
            }))
        }
    }

    #[test]
    fn records_lent_by_the_stream_before_shuffle_as_records_copied_from_it() {
        let run = |lend: bool| {
            let mut s =
                ShuffleStream::new(Box::new(Varied::new(lend)), 64, fastrand::Rng::with_seed(3));
            let mut got = Vec::new();
            loop {
                let (mut out, mut held) = (Vec::new(), None);
                let Some(origin) = s.next_into(&mut out, &mut held).unwrap() else {
                    break;
                };
                let record = held.unwrap_or(out);
                let i = origin.index as usize;
                assert_eq!(record, vec![i as u8; 1 + (i * 37) % 300], "record {i}");
                got.push(i);
            }
            got
        };
        let lent = run(true);
        let mut each = lent.clone();
        each.sort_unstable();
        assert_eq!(each, (0..500).collect::<Vec<_>>());
        assert_ne!(lent, each);
        assert_eq!(lent, run(false));
    }
}
