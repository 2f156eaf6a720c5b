//! Decoding a batch of images into one array, with its buffer taken from a pool.

use std::sync::Mutex;

use super::augment::augment_window;
use super::decode::decode_pixels;
use super::decode::{image_error, recycle};
use super::resize::render;
use super::resize::Px;
use super::spec::{ImageSpec, PixelType};
use crate::error::{Error, Result};

/// Decoded pixels of a batch, `shape` = `[n, height, width, channels]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelBatch {
    pub pixels: Pixels,
    pub shape: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pixels {
    U8(Vec<u8>),
    F32(Vec<f32>),
}

/// Batch buffers handed back once their arrays are freed. A batch of `float32` images
/// runs to tens of megabytes; reusing the buffer spares the kernel zeroing fresh pages
/// for every batch, which otherwise costs a sixth of the pipeline's time.
#[derive(Default)]
pub struct PixelPool {
    pub(super) u8s: Mutex<Vec<Vec<u8>>>,
    pub(super) f32s: Mutex<Vec<Vec<f32>>>,
}

/// The element types whose buffers a [`PixelPool`] keeps, each in a list of its own.
trait Pooled: Px {
    fn free_list(pool: &PixelPool) -> &Mutex<Vec<Vec<Self>>>;
}

impl Pooled for f32 {
    fn free_list(pool: &PixelPool) -> &Mutex<Vec<Vec<f32>>> {
        &pool.f32s
    }
}

impl Pooled for u8 {
    fn free_list(pool: &PixelPool) -> &Mutex<Vec<Vec<u8>>> {
        &pool.u8s
    }
}

impl PixelPool {
    /// Buffers kept per element type; more than the batches a pipeline holds in flight.
    const KEEP: usize = 8;

    /// A buffer of `len` elements, with unspecified contents.
    fn take<T: Pooled>(&self, len: usize) -> Vec<T> {
        let reused = T::free_list(self).lock().ok().and_then(|mut free| {
            let i = free
                .iter()
                .position(|v| v.capacity() >= len && v.capacity() <= len.saturating_mul(2))?;
            Some(free.swap_remove(i))
        });
        match reused {
            Some(mut v) => {
                v.resize(len, T::default());
                v
            }
            None => batch_buffer(len),
        }
    }

    /// Hands back a batch's buffer for a later batch.
    pub fn give(&self, pixels: Pixels) {
        fn keep<T>(list: &Mutex<Vec<Vec<T>>>, v: Vec<T>) {
            if let Ok(mut free) = list.lock() {
                if free.len() < PixelPool::KEEP {
                    free.push(v);
                }
            }
        }
        match pixels {
            Pixels::U8(v) => keep(&self.u8s, v),
            Pixels::F32(v) => keep(&self.f32s, v),
        }
    }
}

/// A zeroed buffer for a batch of pixels. Batches run to tens of megabytes, fresh from
/// the kernel each time: asking for huge pages turns thousands of page faults per batch
/// into a few dozen. The zeroed allocation leaves the pages untouched until the images
/// are written into them.
fn batch_buffer<T: Px>(len: usize) -> Vec<T> {
    let v: Vec<T> = vec![T::default(); len];
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = len * std::mem::size_of::<T>();
        if bytes >= 4 * HUGE {
            let start = v.as_ptr() as usize;
            let first = start.next_multiple_of(HUGE);
            let end = (start + bytes) / HUGE * HUGE;
            if end > first {
                // SAFETY: the range lies inside the allocation `v` owns; the advice
                // changes how its pages are backed, never their contents.
                unsafe {
                    libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
                }
            }
        }
    }
    v
}

/// Image `i`'s slot in the batch buffer, which is taken on the first image.
fn slot<'a, T: Pooled>(
    v: &'a mut Vec<T>,
    pool: Option<&PixelPool>,
    (i, per, n): (usize, usize, usize),
) -> &'a mut [T] {
    if v.is_empty() {
        *v = match pool {
            Some(pool) => pool.take(per * n),
            None => batch_buffer(per * n),
        };
    }
    &mut v[i * per..(i + 1) * per]
}

/// Decodes a batch of encoded images into one `[n, height, width, channels]` array.
/// `seeds[i]` drives image `i`'s augmentation. Without an output size every image must
/// decode to the same shape. An error names the index of the image in the batch.
/// Batch buffers come from `pool` when one is given.
pub fn decode_batch(
    images: &[&[u8]],
    seeds: &[u64],
    spec: &ImageSpec,
    pool: Option<&PixelPool>,
) -> Result<PixelBatch> {
    spec.validate()?;
    let n = images.len();
    let mut shape: Option<[usize; 3]> = spec.size.and_then(|(h, w)| match spec.channels {
        0 => None,
        c => Some([h, w, c as usize]),
    });
    let mut out = match spec.dtype {
        PixelType::U8 => Pixels::U8(Vec::new()),
        PixelType::F32 => Pixels::F32(Vec::new()),
    };
    for (i, data) in images.iter().enumerate() {
        let fail = |e: Error| e.with_record(i as u64);
        let image = decode_pixels(data, spec.channels, spec.max_pixels).map_err(fail)?;
        let mut rng = fastrand::Rng::with_seed(seeds.get(i).copied().unwrap_or(0));
        let (window, flip) =
            augment_window(image.height, image.width, spec.augment.as_ref(), &mut rng);
        let size = spec.size.unwrap_or((window.height, window.width));
        let this = [size.0, size.1, image.channels];
        let expected = *shape.get_or_insert(this);
        if this != expected {
            return Err(fail(image_error(format!(
                "the image decodes to {}x{}x{}, and an earlier one in its batch to {}x{}x{}: \
                 give an output size (and channels) to batch images of different shapes",
                this[0], this[1], this[2], expected[0], expected[1], expected[2]
            ))));
        }
        let per = this.iter().product::<usize>();
        let at = (i, per, n);
        match &mut out {
            Pixels::U8(v) => render(&image, window, size, flip, spec.filter, slot(v, pool, at)),
            Pixels::F32(v) => render(&image, window, size, flip, spec.filter, slot(v, pool, at)),
        }
        recycle(image);
    }
    let [h, w, c] = shape.unwrap_or([0, 0, spec.channels as usize]);
    Ok(PixelBatch {
        pixels: out,
        shape: vec![n, h, w, c],
    })
}

/// Decodes one image to `[height, width, channels]`.
pub fn decode_image(data: &[u8], seed: u64, spec: &ImageSpec) -> Result<PixelBatch> {
    let mut batch = decode_batch(&[data], &[seed], spec, None).map_err(|mut e| {
        e.record_index = None;
        e
    })?;
    batch.shape.remove(0);
    Ok(batch)
}
