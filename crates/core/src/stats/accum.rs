//! One split's accumulators, fed serialized `tf.train.Example`s straight from their wire
//! bytes (nothing is decoded into owned values).

use rustc_hash::FxHashMap;

use super::summary::{FeatureSummary, SplitSummary};
use super::values::{Bytes, LengthCounts, Numbers};
use crate::error::{Error, Result};
use crate::example::{
    for_each_list, for_each_map_entry, last_lists, read_bytes_list, read_float_list,
    read_int64_list, read_map_entry, utf8_key, EntryValue, Kind,
};

/// Distinct feature names counted per split; presences of names past these are counted
/// together as `uncounted_features`, so that a file cannot make the pass hold unbounded
/// accumulators.
pub const MAX_FEATURES: usize = 4096;

/// One feature's accumulators.
#[derive(Default, Clone)]
pub struct FeatureAcc {
    present: u64,
    /// Records per kind: none, bytes, float, int64.
    kinds: [u64; 4],
    lengths: LengthCounts,
    values: u64,
    numbers: Option<Box<Numbers>>,
    bytes: Option<Box<Bytes>>,
    /// The record and entry position that last named this feature (the last one wins).
    stamp: (u64, u32),
}

const KIND_NAMES: [&str; 4] = ["none", "bytes", "float", "int64"];

impl FeatureAcc {
    pub fn numbers(&self) -> Option<&Numbers> {
        self.numbers.as_deref()
    }

    pub fn bytes(&self) -> Option<&Bytes> {
        self.bytes.as_deref()
    }

    pub fn present(&self) -> u64 {
        self.present
    }

    /// The kind most records have, if any record has the feature.
    pub fn main_kind(&self) -> Option<&'static str> {
        let (i, n) = self.kinds.iter().enumerate().max_by_key(|(_, n)| **n)?;
        (*n > 0).then_some(KIND_NAMES[i])
    }

    fn add(&mut self, value: &[u8], floats: &mut Vec<f32>, ints: &mut Vec<i64>) -> Result<()> {
        self.present += 1;
        let (kind, lists) = last_lists(value)?;
        let len = match kind {
            None => {
                self.kinds[0] += 1;
                0
            }
            Some(Kind::Bytes) => {
                self.kinds[1] += 1;
                let bytes = self.bytes.get_or_insert_default();
                let mut n = 0u64;
                for_each_list(lists, Kind::Bytes, |p| {
                    read_bytes_list(p, |b| {
                        bytes.add(b);
                        n += 1;
                    })
                })?;
                n
            }
            Some(Kind::Float) => {
                self.kinds[2] += 1;
                floats.clear();
                for_each_list(lists, Kind::Float, |p| read_float_list(p, floats))?;
                let values = floats.iter().map(|&v| v as f64);
                self.numbers.get_or_insert_default().add_list(values, false);
                floats.len() as u64
            }
            Some(Kind::Int64) => {
                self.kinds[3] += 1;
                ints.clear();
                for_each_list(lists, Kind::Int64, |p| read_int64_list(p, ints))?;
                let values = ints.iter().map(|&v| v as f64);
                self.numbers.get_or_insert_default().add_list(values, true);
                ints.len() as u64
            }
        };
        self.lengths.add(len);
        self.values += len;
        Ok(())
    }

    fn merge(&mut self, other: &FeatureAcc) {
        self.present += other.present;
        for (a, b) in self.kinds.iter_mut().zip(&other.kinds) {
            *a += b;
        }
        self.lengths.merge(&other.lengths);
        self.values += other.values;
        if let Some(theirs) = &other.numbers {
            self.numbers.get_or_insert_default().merge(theirs);
        }
        if let Some(theirs) = &other.bytes {
            self.bytes.get_or_insert_default().merge(theirs);
        }
    }

    pub fn summary(&self, name: &str, records: u64, top: usize) -> FeatureSummary {
        FeatureSummary {
            name: name.to_owned(),
            present: self.present,
            missing: records - self.present,
            kinds: KIND_NAMES
                .iter()
                .zip(self.kinds)
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (*k, n))
                .collect(),
            lengths: self.lengths.sorted(),
            values: self.values,
            numbers: self.numbers.as_ref().map(|n| n.summary()),
            bytes: self.bytes.as_ref().map(|b| b.summary(top)),
        }
    }
}

/// A map entry of the record being read: the feature it names and where its value is.
#[derive(Clone)]
struct Entry {
    feature: usize,
    start: usize,
    end: usize,
}

/// The accumulators of one split (or one worker's share of it).
#[derive(Default, Clone)]
pub struct SplitAcc {
    pub records: u64,
    names: Vec<String>,
    index: FxHashMap<Box<[u8]>, usize>,
    features: Vec<FeatureAcc>,
    uncounted: u64,
    /// The features of the last record, in order: most records name the same features in
    /// the same order, which finds each without hashing its name.
    last_order: Vec<usize>,
    entries: Vec<Entry>,
    floats: Vec<f32>,
    ints: Vec<i64>,
}

impl SplitAcc {
    /// Adds one serialized `tf.train.Example`.
    pub fn add_example(&mut self, record: &[u8]) -> Result<()> {
        let number = self.records;
        self.records += 1;
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        let result = self.collect(record, number, &mut entries).and_then(|()| {
            let (floats, ints) = (&mut self.floats, &mut self.ints);
            for (pos, e) in entries.iter().enumerate() {
                let feature = &mut self.features[e.feature];
                if feature.stamp == (number, pos as u32) {
                    feature
                        .add(&record[e.start..e.end], floats, ints)
                        .map_err(|err| err.with_key(&self.names[e.feature]))?;
                }
            }
            Ok(())
        });
        self.last_order.clear();
        self.last_order.extend(entries.iter().map(|e| e.feature));
        self.entries = entries;
        result
    }

    /// Finds the record's map entries, stamping each feature with the position of its last
    /// entry (protobuf keeps the last value of a repeated map key).
    fn collect(&mut self, record: &[u8], number: u64, entries: &mut Vec<Entry>) -> Result<()> {
        let base = record.as_ptr() as usize;
        for_each_map_entry(record, 1, |entry| {
            let (key, value) = read_map_entry(entry)?;
            let value: &[u8] = match value {
                EntryValue::Absent => &[],
                EntryValue::One(v) => v,
                EntryValue::Many(_) => {
                    return Err(Error::decode(
                        "a feature's value field appears more than once in one map entry",
                    )
                    .with_key(utf8_key(key).unwrap_or("?")));
                }
            };
            let Some(feature) = self.feature_index(key, entries.len())? else {
                self.uncounted += 1;
                return Ok(());
            };
            // An absent value is an empty slice that need not point into the record.
            let start = match value.is_empty() {
                true => 0,
                false => value.as_ptr() as usize - base,
            };
            self.features[feature].stamp = (number, entries.len() as u32);
            entries.push(Entry {
                feature,
                start,
                end: start + value.len(),
            });
            Ok(())
        })
    }

    fn feature_index(&mut self, key: &[u8], pos: usize) -> Result<Option<usize>> {
        if let Some(&i) = self.last_order.get(pos) {
            if self.names[i].as_bytes() == key {
                return Ok(Some(i));
            }
        }
        if let Some(&i) = self.index.get(key) {
            return Ok(Some(i));
        }
        let name = utf8_key(key)?;
        if self.names.len() >= MAX_FEATURES {
            return Ok(None);
        }
        let i = self.names.len();
        self.names.push(name.to_owned());
        self.index.insert(key.into(), i);
        self.features.push(FeatureAcc::default());
        Ok(Some(i))
    }

    /// Adds another share of the same split (another worker's, say).
    pub fn merge(&mut self, other: &SplitAcc) {
        self.records += other.records;
        self.uncounted += other.uncounted;
        for (name, theirs) in other.names.iter().zip(&other.features) {
            let i = match self.index.get(name.as_bytes()) {
                Some(&i) => i,
                None if self.names.len() < MAX_FEATURES => {
                    let i = self.names.len();
                    self.names.push(name.clone());
                    self.index.insert(name.as_bytes().into(), i);
                    self.features.push(FeatureAcc::default());
                    i
                }
                None => {
                    self.uncounted += theirs.present;
                    continue;
                }
            };
            self.features[i].merge(theirs);
        }
    }

    /// The features in name order.
    pub fn features(&self) -> Vec<(&str, &FeatureAcc)> {
        let mut out: Vec<(&str, &FeatureAcc)> = self
            .names
            .iter()
            .map(String::as_str)
            .zip(&self.features)
            .collect();
        out.sort_unstable_by_key(|(name, _)| *name);
        out
    }

    pub fn feature(&self, name: &str) -> Option<&FeatureAcc> {
        self.index.get(name.as_bytes()).map(|&i| &self.features[i])
    }

    pub fn summary(&self, name: &str, files: usize, top: usize) -> SplitSummary {
        SplitSummary {
            name: name.to_owned(),
            files,
            records: self.records,
            features: self
                .features()
                .into_iter()
                .map(|(n, f)| f.summary(n, self.records, top))
                .collect(),
            uncounted_features: self.uncounted,
        }
    }
}
