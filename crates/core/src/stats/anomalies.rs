//! Differences between splits, each split checked against the baseline (training) split:
//! a feature one of them lacks, a change of kind, a shift of distribution past a
//! threshold, and categories the baseline never saw.

use super::accum::{FeatureAcc, SplitAcc};
use super::summary::Anomaly;
use super::values::{equal_edges, Numbers, TopValues, HISTOGRAM_BUCKETS};

/// Checks every split against `splits[baseline]`.
pub fn find(splits: &[(&str, &SplitAcc)], baseline: usize, threshold: f64) -> Vec<Anomaly> {
    let (base_name, base) = splits[baseline];
    let mut out = Vec::new();
    for (i, &(name, split)) in splits.iter().enumerate() {
        if i == baseline {
            continue;
        }
        let anomaly = |kind, feature: &str, value, message: String| Anomaly {
            kind,
            feature: feature.to_owned(),
            split: name.to_owned(),
            value,
            message,
        };
        for (feature, theirs) in split.features() {
            if theirs.present() > 0 && base.feature(feature).is_none_or(|f| f.present() == 0) {
                out.push(anomaly(
                    "new_in_split",
                    feature,
                    theirs.present() as f64,
                    format!(
                        "{feature} is in {} records of {name} and none of {base_name}",
                        theirs.present()
                    ),
                ));
            }
        }
        for (feature, ours) in base.features() {
            if ours.present() == 0 {
                continue;
            }
            let Some(theirs) = split.feature(feature).filter(|f| f.present() > 0) else {
                out.push(anomaly(
                    "missing_in_split",
                    feature,
                    0.0,
                    format!(
                        "{feature} is in {} records of {base_name} and none of {name}",
                        ours.present()
                    ),
                ));
                continue;
            };
            let (kind, base_kind) = (theirs.main_kind(), ours.main_kind());
            if kind != base_kind {
                let (k, b) = (kind.unwrap_or("none"), base_kind.unwrap_or("none"));
                out.push(anomaly(
                    "kind_mismatch",
                    feature,
                    0.0,
                    format!("{feature} holds {k} in {name} and {b} in {base_name}"),
                ));
                continue;
            }
            if let Some(a) = shift(ours, theirs, threshold) {
                out.push(anomaly(
                    "distribution_shift",
                    feature,
                    a.0,
                    format!("{feature} shifted between {base_name} and {name}: {}", a.1),
                ));
            }
            if let (Some(b), Some(s)) = (ours.bytes(), theirs.bytes()) {
                if let Some((values, examples)) = unseen(b.top(), s.top()) {
                    out.push(anomaly(
                        "unseen_category",
                        feature,
                        values as f64,
                        format!(
                            "{values} values of {feature} in {name} never occur in \
                             {base_name}, such as {examples}"
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// A distance past `threshold` between two features' distributions: Jensen-Shannon
/// divergence for numbers, L-infinity distance of value frequencies for bytes.
fn shift(base: &FeatureAcc, other: &FeatureAcc, threshold: f64) -> Option<(f64, String)> {
    if let (Some(a), Some(b)) = (base.numbers(), other.numbers()) {
        let d = jensen_shannon(a, b)?;
        return (d > threshold).then(|| {
            (
                d,
                format!("Jensen-Shannon divergence {d:.3} is over the threshold {threshold}"),
            )
        });
    }
    if let (Some(a), Some(b)) = (base.bytes(), other.bytes()) {
        let d = l_infinity(a.top(), a.count(), b.top(), b.count())?;
        return (d > threshold).then(|| {
            (
                d,
                format!("L-infinity distance {d:.3} is over the threshold {threshold}"),
            )
        });
    }
    None
}

fn jensen_shannon(a: &Numbers, b: &Numbers) -> Option<f64> {
    let (lo_a, hi_a) = a.range()?;
    let (lo_b, hi_b) = b.range()?;
    let edges = equal_edges(lo_a.min(lo_b), hi_a.max(hi_b), HISTOGRAM_BUCKETS);
    let (p, q) = (a.shares(&edges), b.shares(&edges));
    let kl = |x: &[f64], m: &[f64]| -> f64 {
        x.iter()
            .zip(m)
            .filter(|(x, _)| **x > 0.0)
            .map(|(x, m)| x * (x / m).log2())
            .sum()
    };
    let m: Vec<f64> = p.iter().zip(&q).map(|(x, y)| (x + y) / 2.0).collect();
    Some(((kl(&p, &m) + kl(&q, &m)) / 2.0).clamp(0.0, 1.0))
}

/// The largest difference in share of any tracked value (values tracked in only one of
/// the two count as absent from the other).
fn l_infinity(a: &TopValues, a_total: u64, b: &TopValues, b_total: u64) -> Option<f64> {
    if a_total == 0 || b_total == 0 {
        return None;
    }
    let share = |count: Option<u64>, total: u64| count.unwrap_or(0) as f64 / total as f64;
    let mut d: f64 = 0.0;
    for (hash, n) in a.tracked() {
        d = d.max((share(Some(n), a_total) - share(b.count_of(hash), b_total)).abs());
    }
    for (hash, n) in b.tracked() {
        d = d.max((share(Some(n), b_total) - share(a.count_of(hash), a_total)).abs());
    }
    Some(d)
}

/// The values of `split` that `base` never saw, when `base` counted every distinct value it
/// saw: their number and up to three of them.
fn unseen(base: &TopValues, split: &TopValues) -> Option<(u64, String)> {
    if !base.exact() {
        return None;
    }
    let mut values = 0;
    let mut missing: Vec<(u64, u64)> = Vec::new();
    for (hash, n) in split.tracked() {
        if base.count_of(hash).is_none() {
            values += n;
            missing.push((n, hash));
        }
    }
    if missing.is_empty() {
        return None;
    }
    missing.sort_unstable_by(|a, b| b.cmp(a));
    let examples: Vec<String> = missing
        .iter()
        .take(3)
        .filter_map(|(_, hash)| split.sample_of(*hash))
        .map(|v| format!("{:?}", String::from_utf8_lossy(&v.sample)))
        .collect();
    Some((values, examples.join(", ")))
}
