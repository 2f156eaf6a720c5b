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
mod spec;

pub use augment::Window;
pub use batch::{decode_batch, decode_image, PixelBatch, PixelPool, Pixels};
pub use decode::{decode_pixels, sniff, Image};
pub use resize::Px;
pub use spec::{Augment, Filter, ImageSpec, PixelType, DEFAULT_MAX_PIXELS};
