//! What a statistics pass reports: plain values, for the bindings to hand on.

/// The quantile levels every numeric feature reports (named `p1` ... `p99`).
pub const QUANTILE_LEVELS: [f64; 11] =
    [0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0];

/// One split's (or all splits') statistics.
#[derive(Debug, Clone)]
pub struct SplitSummary {
    pub name: String,
    pub files: usize,
    pub records: u64,
    /// Features in name order.
    pub features: Vec<FeatureSummary>,
    /// Feature presences not counted because the split already had
    /// [`MAX_FEATURES`](super::MAX_FEATURES) distinct names.
    pub uncounted_features: u64,
}

#[derive(Debug, Clone)]
pub struct FeatureSummary {
    pub name: String,
    /// Records that have the feature.
    pub present: u64,
    /// Records that do not.
    pub missing: u64,
    /// Records per list kind (`bytes`, `float`, `int64`, `none` for a Feature with no list).
    pub kinds: Vec<(&'static str, u64)>,
    /// `(list length, records)`, exact, in increasing length.
    pub lengths: Vec<(u64, u64)>,
    /// Values in all lists together.
    pub values: u64,
    pub numbers: Option<NumSummary>,
    pub bytes: Option<BytesSummary>,
}

#[derive(Debug, Clone)]
pub struct NumSummary {
    /// Finite values: what the moments and quantiles describe.
    pub count: u64,
    pub nan: u64,
    pub infinite: u64,
    pub zeros: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Population standard deviation.
    pub std: f64,
    /// Every value came from an int64 list (quantiles are then rounded).
    pub integers: bool,
    /// `(level, value)` for each of [`QUANTILE_LEVELS`].
    pub quantiles: Vec<(f64, f64)>,
    /// `(low, high, values)`: equal-width buckets over the finite range, from the sketch.
    pub histogram: Vec<(f64, f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct BytesSummary {
    pub count: u64,
    pub distinct: u64,
    pub distinct_exact: bool,
    pub top: Vec<TopValue>,
    pub top_exact: bool,
    pub min_len: u64,
    pub max_len: u64,
    pub mean_len: f64,
    /// `(low, high, values)` of byte lengths in power-of-two buckets, both ends inclusive.
    pub length_histogram: Vec<(u64, u64, u64)>,
    pub images: Option<ImageSummary>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopValue {
    /// The value's first bytes (all of it when `len` is no more than their length).
    pub sample: Vec<u8>,
    pub len: usize,
    pub count: u64,
}

#[derive(Debug, Clone)]
pub struct ImageSummary {
    pub count: u64,
    pub formats: Vec<(&'static str, u64)>,
    /// Values with an image signature whose header did not parse.
    pub undecodable: u64,
    /// `((width, height), images)`, most frequent first.
    pub sizes: Vec<((u32, u32), u64)>,
    /// Images of sizes past the first [`IMAGE_SIZES`](super::values::IMAGE_SIZES) distinct.
    pub other_sizes: u64,
}

/// A difference between a split and the baseline split.
#[derive(Debug, Clone, PartialEq)]
pub struct Anomaly {
    /// `missing_in_split`, `new_in_split`, `kind_mismatch`, `distribution_shift` or
    /// `unseen_category`.
    pub kind: &'static str,
    pub feature: String,
    pub split: String,
    /// The measured value (a distance for a shift, a count of values for unseen categories).
    pub value: f64,
    pub message: String,
}
