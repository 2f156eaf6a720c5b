//! Mergeable accumulators for one feature's values: numbers (moments, a quantile sketch),
//! bytes (lengths, a distinct-count estimate, the most frequent values) and the images
//! among them (format and size, from their headers). Each holds a bounded amount of memory
//! however many values it sees.

use cardinality_estimator::CardinalityEstimator;
use rustc_hash::FxHashMap;
use sketches_ddsketch::{Config, DDSketch};

use super::summary::{BytesSummary, ImageSummary, NumSummary, TopValue, QUANTILE_LEVELS};

/// How many distinct values [`TopValues`] tracks between compactions.
pub const TOP_CAPACITY: usize = 512;
/// How many bytes of a tracked value are kept to show it.
pub const TOP_SAMPLE_BYTES: usize = 64;
/// How many distinct image sizes are counted one by one; the rest count as "other".
pub const IMAGE_SIZES: usize = 256;
/// Buckets of the numeric histogram drawn from the quantile sketch.
pub const HISTOGRAM_BUCKETS: usize = 20;
/// The quantile sketch's relative accuracy: a quantile is within 1% of the true value.
pub const RELATIVE_ACCURACY: f64 = 0.01;

/// Exact counts of list (or byte-string) lengths: dense for short lengths, a map beyond.
#[derive(Default, Clone)]
pub struct LengthCounts {
    dense: Vec<u64>,
    sparse: FxHashMap<u64, u64>,
}

const DENSE_LENGTHS: u64 = 256;

impl LengthCounts {
    #[inline]
    pub fn add(&mut self, len: u64) {
        if len < DENSE_LENGTHS {
            let i = len as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] += 1;
        } else {
            *self.sparse.entry(len).or_default() += 1;
        }
    }

    pub fn merge(&mut self, other: &LengthCounts) {
        if other.dense.len() > self.dense.len() {
            self.dense.resize(other.dense.len(), 0);
        }
        for (a, b) in self.dense.iter_mut().zip(&other.dense) {
            *a += b;
        }
        for (len, n) in &other.sparse {
            *self.sparse.entry(*len).or_default() += n;
        }
    }

    /// `(length, count)` for every length seen, in increasing length.
    pub fn sorted(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(len, n)| (len as u64, *n))
            .collect();
        let mut rest: Vec<(u64, u64)> = self.sparse.iter().map(|(l, n)| (*l, *n)).collect();
        rest.sort_unstable();
        out.extend(rest);
        out
    }
}

/// Distinct finite values counted exactly before a feature's values go to the sketch.
pub const EXACT_VALUES: usize = 1024;

/// Numbers: count, NaNs, infinities, zeros, min / max, mean and variance (merged by Chan's
/// formula), and quantiles: exact while there are at most [`EXACT_VALUES`] distinct values
/// (labels, categories), from a DDSketch after that. NaNs and infinities stay out of the
/// moments and quantiles; infinities still count toward min and max.
#[derive(Clone)]
pub struct Numbers {
    count: u64,
    nan: u64,
    infinite: u64,
    zeros: u64,
    min: f64,
    max: f64,
    mean: f64,
    m2: f64,
    all_integers: bool,
    /// Counts by value (its bits), until there are too many values to count.
    exact: Option<FxHashMap<u64, u64>>,
    sketch: DDSketch,
}

impl Default for Numbers {
    fn default() -> Self {
        Numbers {
            count: 0,
            nan: 0,
            infinite: 0,
            zeros: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
            all_integers: true,
            exact: Some(FxHashMap::default()),
            sketch: new_sketch(),
        }
    }
}

impl Numbers {
    /// Adds one list of values (an Example's float or int64 list).
    pub fn add_list(&mut self, values: impl Iterator<Item = f64> + Clone, integers: bool) {
        self.all_integers &= integers;
        let (mut n, mut sum) = (0u64, 0.0f64);
        for v in values.clone() {
            if v.is_nan() {
                self.nan += 1;
                continue;
            }
            if v < self.min {
                self.min = v;
            }
            if v > self.max {
                self.max = v;
            }
            if v.is_infinite() {
                self.infinite += 1;
                continue;
            }
            if v == 0.0 {
                self.zeros += 1;
            }
            self.add_value(v);
            n += 1;
            sum += v;
        }
        if n == 0 {
            return;
        }
        let mean = sum / n as f64;
        let m2: f64 = values
            .filter(|v| v.is_finite())
            .map(|v| (v - mean) * (v - mean))
            .sum();
        self.combine(n, mean, m2);
    }

    #[inline]
    fn add_value(&mut self, v: f64) {
        match &mut self.exact {
            Some(counts) => {
                // 0.0 for -0.0: one value, as NumPy counts it.
                *counts.entry((v + 0.0).to_bits()).or_default() += 1;
                if counts.len() > EXACT_VALUES {
                    self.spill();
                }
            }
            None => self.sketch.add(v),
        }
    }

    /// Moves the exact counts into the sketch, which takes every value from now on.
    fn spill(&mut self) {
        if let Some(counts) = self.exact.take() {
            for (bits, n) in counts {
                self.sketch.add_with_count(f64::from_bits(bits), n);
            }
        }
    }

    /// `(value, count)` in increasing value, while counted exactly.
    fn sorted_exact(&self) -> Option<Vec<(f64, u64)>> {
        let counts = self.exact.as_ref()?;
        let mut v: Vec<(f64, u64)> = counts
            .iter()
            .map(|(b, n)| (f64::from_bits(*b), *n))
            .collect();
        v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        Some(v)
    }

    fn combine(&mut self, n: u64, mean: f64, m2: f64) {
        let total = self.count + n;
        let delta = mean - self.mean;
        self.mean += delta * n as f64 / total as f64;
        self.m2 += m2 + delta * delta * (self.count as f64) * (n as f64) / total as f64;
        self.count = total;
    }

    pub fn merge(&mut self, other: &Numbers) {
        self.nan += other.nan;
        self.infinite += other.infinite;
        self.zeros += other.zeros;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.all_integers &= other.all_integers;
        if other.count > 0 {
            self.combine(other.count, other.mean, other.m2);
        }
        match (&mut self.exact, &other.exact) {
            (Some(mine), Some(theirs)) => {
                for (bits, n) in theirs {
                    *mine.entry(*bits).or_default() += n;
                }
                if mine.len() > EXACT_VALUES {
                    self.spill();
                }
            }
            (_, theirs) => {
                self.spill();
                let mut other_sketch = other.sketch.clone();
                for (bits, n) in theirs.iter().flatten() {
                    other_sketch.add_with_count(f64::from_bits(*bits), *n);
                }
                // Both sketches have the same configuration, so merging cannot fail.
                let _ = self.sketch.merge(&other_sketch);
            }
        }
    }

    /// The quantile at `level` (0 to 1) of the finite values: the value at rank
    /// `floor(level * (count - 1))` (NumPy's `method="lower"`) while values are counted
    /// exactly, else the sketch's answer, within 1% of it (rounded for integer features).
    pub fn quantile(&self, level: f64) -> Option<f64> {
        self.quantiles(&[level]).pop().flatten()
    }

    /// [`Numbers::quantile`] at each of `levels`, in increasing order.
    fn quantiles(&self, levels: &[f64]) -> Vec<Option<f64>> {
        if self.count == 0 {
            return vec![None; levels.len()];
        }
        if let Some(sorted) = self.sorted_exact() {
            let mut out = Vec::with_capacity(levels.len());
            let (mut i, mut below) = (0, 0u64);
            for &level in levels {
                let rank = (level * (self.count - 1) as f64).floor() as u64;
                while i + 1 < sorted.len() && below + sorted[i].1 <= rank {
                    below += sorted[i].1;
                    i += 1;
                }
                out.push(Some(sorted[i].0));
            }
            return out;
        }
        let (lo, hi) = (self.sketch.min(), self.sketch.max());
        levels
            .iter()
            .map(|&level| {
                let q = self.sketch.quantile(level).ok().flatten()?;
                // The sketch answers within 1% of a value; clamp into the seen range.
                let q = q.clamp(lo?, hi?);
                Some(if self.all_integers { q.round() } else { q })
            })
            .collect()
    }

    fn finite_min(&self) -> Option<f64> {
        match &self.exact {
            Some(c) => c.keys().map(|b| f64::from_bits(*b)).min_by(f64::total_cmp),
            None => self.sketch.min(),
        }
    }

    fn finite_max(&self) -> Option<f64> {
        match &self.exact {
            Some(c) => c.keys().map(|b| f64::from_bits(*b)).max_by(f64::total_cmp),
            None => self.sketch.max(),
        }
    }

    /// The share of finite values in each of `edges.len() - 1` buckets, estimated from 1001
    /// evenly spaced quantiles.
    pub fn shares(&self, edges: &[f64]) -> Vec<f64> {
        let buckets = edges.len().saturating_sub(1);
        let mut out = vec![0.0; buckets];
        if self.count == 0 || buckets == 0 {
            return out;
        }
        const POINTS: usize = 1001;
        let levels: Vec<f64> = (0..POINTS)
            .map(|i| i as f64 / (POINTS - 1) as f64)
            .collect();
        for q in self.quantiles(&levels) {
            let Some(q) = q else {
                return out;
            };
            let b = edges[1..]
                .iter()
                .position(|&e| q < e)
                .unwrap_or(buckets - 1);
            out[b] += 1.0 / POINTS as f64;
        }
        out
    }

    pub fn summary(&self) -> NumSummary {
        let quantiles = QUANTILE_LEVELS
            .iter()
            .zip(self.quantiles(&QUANTILE_LEVELS))
            .map(|(&level, q)| (level, q.unwrap_or(f64::NAN)))
            .collect();
        let histogram = match (self.finite_min(), self.finite_max()) {
            (Some(lo), Some(hi)) if self.count > 0 => {
                let edges = equal_edges(lo, hi, HISTOGRAM_BUCKETS);
                let shares = self.shares(&edges);
                edges
                    .windows(2)
                    .zip(shares)
                    .map(|(e, s)| (e[0], e[1], (s * self.count as f64).round()))
                    .collect()
            }
            _ => Vec::new(),
        };
        let std = if self.count > 0 {
            (self.m2 / self.count as f64).sqrt()
        } else {
            f64::NAN
        };
        NumSummary {
            count: self.count,
            nan: self.nan,
            infinite: self.infinite,
            zeros: self.zeros,
            min: if self.min <= self.max {
                self.min
            } else {
                f64::NAN
            },
            max: if self.min <= self.max {
                self.max
            } else {
                f64::NAN
            },
            mean: if self.count > 0 { self.mean } else { f64::NAN },
            std,
            integers: self.all_integers,
            quantiles,
            histogram,
        }
    }

    pub fn range(&self) -> Option<(f64, f64)> {
        Some((self.finite_min()?, self.finite_max()?))
    }
}

fn new_sketch() -> DDSketch {
    DDSketch::new(Config::new(RELATIVE_ACCURACY, 2048, 1e-9))
}

/// `buckets + 1` equal-width edges from `lo` to `hi` (a single bucket when they are equal).
pub fn equal_edges(lo: f64, hi: f64, buckets: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo, hi];
    }
    let width = (hi - lo) / buckets as f64;
    let mut edges: Vec<f64> = (0..buckets).map(|i| lo + width * i as f64).collect();
    edges.push(hi);
    edges
}

/// The most frequent values: Misra-Gries counting with lazy compaction. Counts are exact
/// until more than [`TOP_CAPACITY`] distinct values are seen; after that each is a lower
/// bound, short by at most `error`.
#[derive(Default, Clone)]
pub struct TopValues {
    slots: FxHashMap<u64, Slot>,
    error: u64,
}

#[derive(Clone)]
struct Slot {
    count: u64,
    len: usize,
    sample: Box<[u8]>,
}

impl TopValues {
    #[inline]
    pub fn add(&mut self, hash: u64, value: &[u8]) {
        if let Some(slot) = self.slots.get_mut(&hash) {
            slot.count += 1;
            return;
        }
        if self.slots.len() >= TOP_CAPACITY {
            self.compact();
        }
        self.slots.insert(hash, Slot::of(value, 1));
    }

    /// Subtracts the median count from every count and drops those left at zero, so at
    /// least half the slots are free again.
    fn compact(&mut self) {
        let mut counts: Vec<u64> = self.slots.values().map(|s| s.count).collect();
        let mid = counts.len() / 2;
        let (_, &mut cut, _) = counts.select_nth_unstable(mid);
        self.slots.retain(|_, s| {
            s.count = s.count.saturating_sub(cut);
            s.count > 0
        });
        self.error += cut;
    }

    pub fn merge(&mut self, other: &TopValues) {
        for (hash, slot) in &other.slots {
            self.slots
                .entry(*hash)
                .and_modify(|s| s.count += slot.count)
                .or_insert_with(|| slot.clone());
        }
        self.error += other.error;
        while self.slots.len() > TOP_CAPACITY {
            self.compact();
        }
    }

    /// Whether every count is exact (no compaction happened).
    pub fn exact(&self) -> bool {
        self.error == 0
    }

    pub fn count_of(&self, hash: u64) -> Option<u64> {
        self.slots.get(&hash).map(|s| s.count)
    }

    /// `(hash, count)` of every tracked value.
    pub fn tracked(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.slots.iter().map(|(h, s)| (*h, s.count))
    }

    pub fn top(&self, n: usize) -> Vec<TopValue> {
        let mut slots: Vec<(&u64, &Slot)> = self.slots.iter().collect();
        slots.sort_unstable_by(|a, b| b.1.count.cmp(&a.1.count).then(a.1.sample.cmp(&b.1.sample)));
        slots
            .into_iter()
            .take(n)
            .map(|(_, s)| TopValue {
                sample: s.sample.to_vec(),
                len: s.len,
                count: s.count,
            })
            .collect()
    }

    pub fn sample_of(&self, hash: u64) -> Option<TopValue> {
        self.slots.get(&hash).map(|s| TopValue {
            sample: s.sample.to_vec(),
            len: s.len,
            count: s.count,
        })
    }
}

impl Slot {
    fn of(value: &[u8], count: u64) -> Slot {
        Slot {
            count,
            len: value.len(),
            sample: value[..value.len().min(TOP_SAMPLE_BYTES)].into(),
        }
    }
}

/// The hash [`Bytes`] keys values by, for both the distinct count and the top values.
#[inline]
pub fn value_hash(value: &[u8]) -> u64 {
    wyhash::wyhash(value, 0x7466_7265_636f_7264)
}

/// Byte strings: their lengths (a power-of-two histogram), a distinct-count estimate, the
/// most frequent values, and the images among them.
#[derive(Clone)]
pub struct Bytes {
    count: u64,
    total_len: u64,
    min_len: u64,
    max_len: u64,
    /// Bucket 0 holds empty strings, bucket `i` lengths in `[2^(i-1), 2^i)`.
    len_buckets: [u64; 65],
    distinct: CardinalityEstimator<[u8]>,
    top: TopValues,
    images: Option<Box<Images>>,
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes {
            count: 0,
            total_len: 0,
            min_len: u64::MAX,
            max_len: 0,
            len_buckets: [0; 65],
            distinct: CardinalityEstimator::new(),
            top: TopValues::default(),
            images: None,
        }
    }
}

impl Bytes {
    #[inline]
    pub fn add(&mut self, value: &[u8]) {
        let len = value.len() as u64;
        self.count += 1;
        self.total_len += len;
        self.min_len = self.min_len.min(len);
        self.max_len = self.max_len.max(len);
        self.len_buckets[(64 - len.leading_zeros()) as usize] += 1;
        let hash = value_hash(value);
        self.distinct.insert_hash(hash);
        self.top.add(hash, value);
        if let Some(format) = crate::image::sniff(value) {
            self.images.get_or_insert_default().add(format, value);
        }
    }

    pub fn merge(&mut self, other: &Bytes) {
        self.count += other.count;
        self.total_len += other.total_len;
        self.min_len = self.min_len.min(other.min_len);
        self.max_len = self.max_len.max(other.max_len);
        for (a, b) in self.len_buckets.iter_mut().zip(&other.len_buckets) {
            *a += b;
        }
        self.distinct.merge(&other.distinct);
        self.top.merge(&other.top);
        if let Some(theirs) = &other.images {
            self.images.get_or_insert_default().merge(theirs);
        }
    }

    pub fn top(&self) -> &TopValues {
        &self.top
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn summary(&self, top: usize) -> BytesSummary {
        let length_histogram = self
            .len_buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| match i {
                0 => (0, 0, *n),
                _ => (1u64 << (i - 1), (1u64 << (i - 1)) * 2 - 1, *n),
            })
            .collect();
        let exact = self.top.exact();
        BytesSummary {
            count: self.count,
            distinct: if exact {
                self.top.slots.len() as u64
            } else {
                self.distinct.estimate() as u64
            },
            distinct_exact: exact,
            top: self.top.top(top),
            top_exact: exact,
            min_len: if self.count > 0 { self.min_len } else { 0 },
            max_len: self.max_len,
            mean_len: if self.count > 0 {
                self.total_len as f64 / self.count as f64
            } else {
                f64::NAN
            },
            length_histogram,
            images: self.images.as_ref().map(|i| i.summary()),
        }
    }
}

/// Encoded images, from their headers only: format and width x height.
#[derive(Default, Clone)]
pub struct Images {
    formats: [u64; 3],
    undecodable: u64,
    sizes: FxHashMap<(u32, u32), u64>,
    other_sizes: u64,
}

const FORMATS: [&str; 3] = ["jpeg", "png", "webp"];

impl Images {
    fn add(&mut self, format: &str, data: &[u8]) {
        let i = FORMATS.iter().position(|f| *f == format).unwrap_or(0);
        self.formats[i] += 1;
        match dimensions(format, data) {
            Some(size) => {
                if let Some(n) = self.sizes.get_mut(&size) {
                    *n += 1;
                } else if self.sizes.len() < IMAGE_SIZES {
                    self.sizes.insert(size, 1);
                } else {
                    self.other_sizes += 1;
                }
            }
            None => self.undecodable += 1,
        }
    }

    fn merge(&mut self, other: &Images) {
        for (a, b) in self.formats.iter_mut().zip(&other.formats) {
            *a += b;
        }
        self.undecodable += other.undecodable;
        self.other_sizes += other.other_sizes;
        for (size, n) in &other.sizes {
            if let Some(mine) = self.sizes.get_mut(size) {
                *mine += n;
            } else if self.sizes.len() < IMAGE_SIZES {
                self.sizes.insert(*size, *n);
            } else {
                self.other_sizes += n;
            }
        }
    }

    fn summary(&self) -> ImageSummary {
        let mut sizes: Vec<((u32, u32), u64)> = self.sizes.iter().map(|(s, n)| (*s, *n)).collect();
        sizes.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ImageSummary {
            count: self.formats.iter().sum(),
            formats: FORMATS
                .iter()
                .zip(self.formats)
                .filter(|(_, n)| *n > 0)
                .map(|(f, n)| (*f, n))
                .collect(),
            undecodable: self.undecodable,
            sizes,
            other_sizes: self.other_sizes,
        }
    }
}

/// An image's width and height from its header, without decoding its pixels.
pub fn dimensions(format: &str, data: &[u8]) -> Option<(u32, u32)> {
    use std::io::Cursor;
    match format {
        "jpeg" => {
            use zune_core::bytestream::ZCursor;
            let mut decoder = zune_jpeg::JpegDecoder::new(ZCursor::new(data));
            decoder.decode_headers().ok()?;
            let (w, h) = decoder.dimensions()?;
            Some((w as u32, h as u32))
        }
        "png" => {
            let mut decoder = png::Decoder::new(Cursor::new(data));
            let info = decoder.read_header_info().ok()?;
            Some((info.width, info.height))
        }
        "webp" => image_webp::WebPDecoder::new(Cursor::new(data))
            .ok()
            .map(|d| d.dimensions()),
        _ => None,
    }
}
