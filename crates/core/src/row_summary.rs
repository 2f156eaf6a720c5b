//! What the Examples written from rows held, feature by feature, as they are encoded:
//! the types of each feature's values, the fewest and the most values an Example had,
//! and how many Examples had it. A dataset's schema is told from it, for every row.

use std::collections::HashMap;

use crate::example::Feature;

/// The value types a feature was seen with.
pub const KIND_NAMES: [&str; 3] = ["int64", "float32", "bytes"];

/// One feature's summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureSeen {
    pub key: String,
    /// Which of [`KIND_NAMES`] its values were (bits 0, 1, 2); none for empty lists alone.
    pub kinds: u8,
    pub fewest: usize,
    pub most: usize,
    /// The Examples that had it.
    pub rows: u64,
}

impl FeatureSeen {
    /// The names of the types its values were, in the order of [`KIND_NAMES`].
    pub fn kind_names(&self) -> Vec<&'static str> {
        (0..3)
            .filter(|bit| self.kinds & (1 << bit) != 0)
            .map(|bit| KIND_NAMES[bit])
            .collect()
    }
}

/// The summary of the Examples noted so far.
#[derive(Default, Debug)]
pub struct RowSummary {
    pub rows: u64,
    /// The features in the order first seen.
    features: Vec<FeatureSeen>,
    places: HashMap<String, usize>,
    /// Where in `features` the entries of the Example before were: rows mostly name their
    /// features in one order, so a comparison finds each.
    last: Vec<usize>,
}

impl RowSummary {
    /// Notes one Example's features.
    pub fn note(&mut self, features: &[(String, Feature)]) {
        self.rows += 1;
        for (p, (key, feature)) in features.iter().enumerate() {
            let (kind, n) = match feature {
                Feature::Empty => (0, 0),
                Feature::Int64(v) => (1, v.len()),
                Feature::Float(v) => (2, v.len()),
                Feature::Bytes(v) => (4, v.len()),
            };
            let at = match self.last.get(p) {
                Some(&at) if self.features[at].key == *key => at,
                _ => {
                    let at = self.place(key, n);
                    self.last.truncate(p);
                    self.last.push(at);
                    at
                }
            };
            let seen = &mut self.features[at];
            seen.kinds |= kind;
            seen.fewest = seen.fewest.min(n);
            seen.most = seen.most.max(n);
            seen.rows += 1;
        }
    }

    /// Each feature's summary, in the order first seen.
    pub fn features(&self) -> &[FeatureSeen] {
        &self.features
    }

    /// Where `key`'s entry is, made for a first value of `n` values if new.
    fn place(&mut self, key: &str, n: usize) -> usize {
        if let Some(&at) = self.places.get(key) {
            return at;
        }
        self.features.push(FeatureSeen {
            key: key.to_owned(),
            kinds: 0,
            fewest: n,
            most: n,
            rows: 0,
        });
        self.places.insert(key.to_owned(), self.features.len() - 1);
        self.features.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(features: &[(&str, Feature)]) -> Vec<(String, Feature)> {
        features
            .iter()
            .map(|(k, f)| (k.to_string(), f.clone()))
            .collect()
    }

    #[test]
    fn features_are_summed_up_in_the_order_first_seen_whatever_each_rows_order() {
        let mut s = RowSummary::default();
        s.note(&row(&[
            ("id", Feature::Int64(vec![1])),
            ("tags", Feature::Empty),
        ]));
        s.note(&row(&[
            ("tags", Feature::Bytes(vec![b"a".to_vec(), b"b".to_vec()])),
            ("id", Feature::Int64(vec![2])),
        ]));
        s.note(&row(&[
            ("score", Feature::Float(vec![0.5])),
            ("id", Feature::Bytes(vec![])),
        ]));
        assert_eq!(s.rows, 3);
        let seen: Vec<_> = s
            .features()
            .iter()
            .map(|f| (f.key.as_str(), f.kind_names(), f.fewest, f.most, f.rows))
            .collect();
        assert_eq!(
            seen,
            [
                ("id", vec!["int64", "bytes"], 0, 1, 3),
                ("tags", vec!["bytes"], 0, 2, 2),
                ("score", vec!["float32"], 1, 1, 1),
            ]
        );
    }
}
