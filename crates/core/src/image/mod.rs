//! Image decoding for input pipelines: JPEG, PNG and WebP bytes to `height × width ×
//! channels` pixels, with TensorFlow's bilinear (and nearest) resize, seeded random
//! resized crops and horizontal flips, as `uint8` or `float32` in `[0, 1]`.
//!
//! The resize follows `tf.image.resize(..., antialias=False)`: half-pixel centres, two
//! taps per axis, values interpolated in `float32`. A `float32` output is the usual
//! tf.data pipeline's `cast(float32) / 255` followed by that resize.

mod augment;
mod batch;
mod decode;
mod resize;

use crate::error::{Error, Result};

pub use augment::Window;
pub use batch::{decode_batch, decode_image, PixelBatch, PixelPool, Pixels};
pub use decode::{decode_pixels, sniff, Image};
pub use resize::Px;

/// Decoded images larger than this many pixels are refused before any pixel memory is
/// taken, whatever their header claims.
pub const DEFAULT_MAX_PIXELS: usize = 1 << 26;

/// The element type of decoded pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelType {
    /// 0..=255, as stored.
    U8,
    /// `value / 255`, in `[0, 1]`.
    F32,
}

/// How pixels are sampled when an image is resized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    Bilinear,
    Nearest,
}

/// Random augmentation, as the standard ImageNet training recipe uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Augment {
    /// Random resized crop: the range of the crop's area, as a fraction of the image's.
    pub crop_scale: Option<(f32, f32)>,
    /// The range of the crop's aspect ratio (width / height).
    pub crop_ratio: (f32, f32),
    /// Flip horizontally with probability one half.
    pub flip: bool,
}

/// What to make of each encoded image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSpec {
    /// 1, 3 or 4; 0 keeps the image's own channel count.
    pub channels: u8,
    /// Output `(height, width)`; `None` keeps each image's size (or the crop's).
    pub size: Option<(usize, usize)>,
    pub dtype: PixelType,
    pub filter: Filter,
    pub augment: Option<Augment>,
    pub max_pixels: usize,
}

impl Default for ImageSpec {
    fn default() -> Self {
        ImageSpec {
            channels: 3,
            size: None,
            dtype: PixelType::F32,
            filter: Filter::Bilinear,
            augment: None,
            max_pixels: DEFAULT_MAX_PIXELS,
        }
    }
}

impl ImageSpec {
    /// Checks the spec's own consistency.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.channels, 0 | 1 | 3 | 4) {
            return Err(Error::invalid(format!(
                "channels must be 0, 1, 3 or 4, not {}",
                self.channels
            )));
        }
        if let Some((h, w)) = self.size {
            if h == 0 || w == 0 || h.saturating_mul(w) > self.max_pixels {
                return Err(Error::invalid(format!("cannot resize images to {h}x{w}")));
            }
        }
        if let Some(a) = &self.augment {
            if let Some((lo, hi)) = a.crop_scale {
                if !(0.0 < lo && lo <= hi && hi <= 1.0) {
                    return Err(Error::invalid(format!(
                        "crop scale must satisfy 0 < low <= high <= 1, not ({lo}, {hi})"
                    )));
                }
                let (r0, r1) = a.crop_ratio;
                if !(0.0 < r0 && r0 <= r1 && r1.is_finite()) {
                    return Err(Error::invalid(format!(
                        "crop ratio must satisfy 0 < low <= high, not ({r0}, {r1})"
                    )));
                }
                if self.size.is_none() {
                    return Err(Error::invalid("a random resized crop needs an output size"));
                }
            }
        }
        Ok(())
    }
}
