//! Statistics over `tf.train.Example` files, in one streaming pass: for each feature its
//! presence, kinds and list lengths; for numbers moments, zeros, NaNs and quantiles from a
//! mergeable sketch; for bytes a distinct-count estimate, the most frequent values and a
//! length histogram; for encoded images their formats and sizes. Per split, with the
//! differences between splits that deserve a look.

mod accum;
mod anomalies;
mod pass;
mod summary;
mod values;

#[cfg(test)]
mod tests;

pub use accum::{SplitAcc, MAX_FEATURES};
pub use anomalies::find as find_anomalies;
pub use pass::{Report, StatsPass};
pub use summary::{
    Anomaly, BytesSummary, FeatureSummary, ImageSummary, NumSummary, SplitSummary, TopValue,
    QUANTILE_LEVELS,
};
pub use values::{dimensions, IMAGE_SIZES, RELATIVE_ACCURACY, TOP_CAPACITY};
