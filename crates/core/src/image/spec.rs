//! What a pipeline asks of its decoded images: channels, size, filter, element type,
//! augmentation, and the most pixels an image may have.

use crate::error::{Error, Result};

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
