//! Image decoding for input pipelines: JPEG, PNG and WebP bytes to `height × width ×
//! channels` pixels, with TensorFlow's bilinear (and nearest) resize, seeded random
//! resized crops and horizontal flips, as `uint8` or `float32` in `[0, 1]`.
//!
//! The resize follows `tf.image.resize(..., antialias=False)`: half-pixel centres, two
//! taps per axis, values interpolated in `float32`. A `float32` output is the seed
//! pipeline's `cast(float32) / 255` followed by that resize.

use std::io::Cursor;
use std::sync::Mutex;

use crate::error::{Error, ErrorKind, Result};

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

/// An image decoded to 8-bit pixels, rows top to bottom, channels interleaved.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub data: Vec<u8>,
    pub height: usize,
    pub width: usize,
    pub channels: usize,
}

thread_local! {
    /// Each thread's buffer for decoded pixels, reused from image to image so that
    /// decoding does not fault in fresh pages for every image.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A zeroed buffer of `len` bytes, this thread's scratch buffer when it is free.
fn scratch(len: usize) -> Vec<u8> {
    let mut v = SCRATCH.take();
    v.clear();
    v.resize(len, 0);
    v
}

/// Hands a decoded image's buffer back for the next image on this thread.
fn recycle(image: Image) {
    if image.data.capacity() <= 64 << 20 {
        SCRATCH.set(image.data);
    }
}

fn image_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::ImageDecode, message)
}

fn check_size(width: usize, height: usize, max_pixels: usize) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(image_error(format!("the image is {width}x{height} pixels")));
    }
    if width.saturating_mul(height) > max_pixels {
        return Err(image_error(format!(
            "the image is {width}x{height} pixels, more than the limit of {max_pixels}"
        )));
    }
    Ok(())
}

/// The format of encoded image bytes, from their signature.
pub fn sniff(data: &[u8]) -> Option<&'static str> {
    if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("jpeg")
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("png")
    } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        Some("webp")
    } else {
        None
    }
}

/// Decodes JPEG, PNG or WebP bytes to 8-bit pixels with `channels` channels (0: as
/// stored).
pub fn decode_pixels(data: &[u8], channels: u8, max_pixels: usize) -> Result<Image> {
    let image = match sniff(data) {
        Some("jpeg") => decode_jpeg(data, channels, max_pixels)?,
        Some("png") => decode_png(data, max_pixels)?,
        Some("webp") => decode_webp(data, max_pixels)?,
        _ => {
            let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
            return Err(image_error(format!(
                "not a JPEG, PNG or WebP image ({} bytes, starting {})",
                data.len(),
                head.join(" ")
            )));
        }
    };
    Ok(convert_channels(image, channels))
}

fn decode_jpeg(data: &[u8], channels: u8, max_pixels: usize) -> Result<Image> {
    use zune_core::bytestream::ZCursor;
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
    use zune_jpeg::JpegDecoder;

    // zune-jpeg's messages can end in, or span, new lines: make them one line.
    let fail = |e: zune_jpeg::errors::DecodeErrors| {
        let words: Vec<String> = e.to_string().split_whitespace().map(String::from).collect();
        image_error(format!("bad JPEG: {}", words.join(" ")))
    };
    let options = DecoderOptions::default()
        .set_max_width(1 << 16)
        .set_max_height(1 << 16)
        .set_strict_mode(true);
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(data), options);
    decoder.decode_headers().map_err(fail)?;
    let info = decoder
        .info()
        .ok_or_else(|| image_error("bad JPEG: no frame header"))?;
    let (width, height) = (info.width as usize, info.height as usize);
    check_size(width, height, max_pixels)?;
    let source = decoder.input_colorspace();
    let gray_source = matches!(source, Some(ColorSpace::Luma));
    // zune-jpeg maps CMYK only to RGB(A); gray comes from RGB in `convert_channels`.
    let cmyk_source = matches!(source, Some(ColorSpace::CMYK | ColorSpace::YCCK));
    let (out, n) = match channels {
        1 if !cmyk_source => (ColorSpace::Luma, 1),
        0 if gray_source => (ColorSpace::Luma, 1),
        4 => (ColorSpace::RGBA, 4),
        _ => (ColorSpace::RGB, 3),
    };
    decoder.set_options(options.jpeg_set_out_colorspace(out));
    let mut pixels = scratch(width * height * n);
    decoder.decode_into(&mut pixels).map_err(fail)?;
    Ok(Image {
        data: pixels,
        height,
        width,
        channels: n,
    })
}

fn decode_png(data: &[u8], max_pixels: usize) -> Result<Image> {
    let fail = |e: png::DecodingError| image_error(format!("bad PNG: {e}"));
    let limits = png::Limits {
        bytes: max_pixels.saturating_mul(8),
    };
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(data), limits);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(fail)?;
    let (w, h) = reader.info().size();
    check_size(w as usize, h as usize, max_pixels)?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| image_error("bad PNG: its size overflows"))?;
    let mut pixels = scratch(size);
    let frame = reader.next_frame(&mut pixels).map_err(fail)?;
    pixels.truncate(frame.buffer_size());
    let channels = frame.color_type.samples();
    Ok(Image {
        data: pixels,
        height: frame.height as usize,
        width: frame.width as usize,
        channels,
    })
}

fn decode_webp(data: &[u8], max_pixels: usize) -> Result<Image> {
    let fail = |e: image_webp::DecodingError| image_error(format!("bad WebP: {e}"));
    let mut decoder = image_webp::WebPDecoder::new(Cursor::new(data)).map_err(fail)?;
    let (w, h) = decoder.dimensions();
    check_size(w as usize, h as usize, max_pixels)?;
    let channels = if decoder.has_alpha() { 4 } else { 3 };
    let mut pixels = scratch(w as usize * h as usize * channels);
    decoder.read_image(&mut pixels).map_err(fail)?;
    Ok(Image {
        data: pixels,
        height: h as usize,
        width: w as usize,
        channels,
    })
}

/// Luma of an RGB pixel with ITU-R BT.601 weights, as `tf.image.rgb_to_grayscale`.
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((19595 * r as u32 + 38470 * g as u32 + 7471 * b as u32 + 32768) >> 16) as u8
}

/// Converts to `channels` channels (0: unchanged). Alpha is dropped or made opaque.
fn convert_channels(image: Image, channels: u8) -> Image {
    let to = channels as usize;
    let from = image.channels;
    if to == 0 || to == from {
        return image;
    }
    let mut out = Vec::with_capacity(image.width * image.height * to);
    for px in image.data.chunks_exact(from) {
        let (r, g, b, a) = match from {
            1 => (px[0], px[0], px[0], 255),
            2 => (px[0], px[0], px[0], px[1]),
            3 => (px[0], px[1], px[2], 255),
            _ => (px[0], px[1], px[2], px[3]),
        };
        match to {
            1 => out.push(if from <= 2 { r } else { luma(r, g, b) }),
            3 => out.extend_from_slice(&[r, g, b]),
            _ => out.extend_from_slice(&[r, g, b, a]),
        }
    }
    let (height, width) = (image.height, image.width);
    recycle(image);
    Image {
        data: out,
        height,
        width,
        channels: to,
    }
}

/// A window of the source image, in whole pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub top: usize,
    pub left: usize,
    pub height: usize,
    pub width: usize,
}

/// A source window and a flip, chosen per image by [`Augment`] from `rng`.
fn augment_window(
    height: usize,
    width: usize,
    augment: Option<&Augment>,
    rng: &mut fastrand::Rng,
) -> (Window, bool) {
    let full = Window {
        top: 0,
        left: 0,
        height,
        width,
    };
    let Some(a) = augment else {
        return (full, false);
    };
    let window = match a.crop_scale {
        Some(scale) => random_crop(height, width, scale, a.crop_ratio, rng),
        None => full,
    };
    let flip = a.flip && rng.bool();
    (window, flip)
}

fn uniform(rng: &mut fastrand::Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.f64()
}

/// The random-resized-crop window: ten tries at an area and aspect ratio drawn from the
/// ranges, then a centre crop at the nearest allowed ratio.
fn random_crop(
    height: usize,
    width: usize,
    scale: (f32, f32),
    ratio: (f32, f32),
    rng: &mut fastrand::Rng,
) -> Window {
    let area = (height * width) as f64;
    let (log_lo, log_hi) = ((ratio.0 as f64).ln(), (ratio.1 as f64).ln());
    for _ in 0..10 {
        let target = area * uniform(rng, scale.0 as f64, scale.1 as f64);
        let aspect = uniform(rng, log_lo, log_hi).exp();
        let w = (target * aspect).sqrt().round() as usize;
        let h = (target / aspect).sqrt().round() as usize;
        if 0 < w && w <= width && 0 < h && h <= height {
            return Window {
                top: rng.usize(0..=height - h),
                left: rng.usize(0..=width - w),
                height: h,
                width: w,
            };
        }
    }
    let in_ratio = width as f64 / height as f64;
    let (w, h) = if in_ratio < ratio.0 as f64 {
        (
            width,
            ((width as f64 / ratio.0 as f64).round() as usize).max(1),
        )
    } else if in_ratio > ratio.1 as f64 {
        (
            ((height as f64 * ratio.1 as f64).round() as usize).max(1),
            height,
        )
    } else {
        (width, height)
    };
    let (w, h) = (w.min(width), h.min(height));
    Window {
        top: (height - h) / 2,
        left: (width - w) / 2,
        height: h,
        width: w,
    }
}

/// Source taps of one axis: output `i` is `lo[i] + (hi[i] - lo[i]) * t[i]`, with `lo`
/// and `hi` already multiplied by the stride.
struct Taps {
    lo: Vec<usize>,
    hi: Vec<usize>,
    t: Vec<f32>,
}

fn taps(out: usize, start: usize, extent: usize, filter: Filter, stride: usize) -> Taps {
    let scale = extent as f32 / out as f32;
    let last = extent as i64 - 1;
    let mut taps = Taps {
        lo: Vec::with_capacity(out),
        hi: Vec::with_capacity(out),
        t: Vec::with_capacity(out),
    };
    for i in 0..out {
        let (lo, hi, t) = match filter {
            Filter::Bilinear => {
                let x = (i as f32 + 0.5) * scale - 0.5;
                let f = x.floor();
                let lo = (f as i64).clamp(0, last);
                let hi = (x.ceil() as i64).clamp(0, last);
                (lo, hi, x - f)
            }
            Filter::Nearest => {
                let x = (((i as f32 + 0.5) * scale).floor() as i64).clamp(0, last);
                (x, x, 0.0)
            }
        };
        taps.lo.push((start + lo as usize) * stride);
        taps.hi.push((start + hi as usize) * stride);
        taps.t.push(t);
    }
    taps
}

/// An output element type.
pub trait Px: Copy + Default + private::Sealed {
    #[doc(hidden)]
    fn from_u8(v: u8) -> Self;
    #[doc(hidden)]
    fn free_list(pool: &PixelPool) -> &Mutex<Vec<Vec<Self>>>;
    /// Stores interpolated values (within `[0, 255]`) as this type.
    #[doc(hidden)]
    fn store(dst: &mut [Self], src: &[f32]);
}

mod private {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for f32 {}
}

/// Batch buffers handed back once their arrays are freed. A batch of `float32` images
/// runs to tens of megabytes; reusing the buffer spares the kernel zeroing fresh pages
/// for every batch, which otherwise costs a sixth of the pipeline's time.
#[derive(Default)]
pub struct PixelPool {
    u8s: Mutex<Vec<Vec<u8>>>,
    f32s: Mutex<Vec<Vec<f32>>>,
}

impl PixelPool {
    /// Buffers kept per element type; more than the batches a pipeline holds in flight.
    const KEEP: usize = 8;

    /// A buffer of `len` elements, with unspecified contents.
    fn take<T: Px>(&self, len: usize) -> Vec<T> {
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

impl Px for f32 {
    #[inline(always)]
    fn from_u8(v: u8) -> f32 {
        v as f32 * (1.0 / 255.0)
    }
    #[inline(always)]
    fn free_list(pool: &PixelPool) -> &Mutex<Vec<Vec<f32>>> {
        &pool.f32s
    }
    #[inline(always)]
    fn store(dst: &mut [f32], src: &[f32]) {
        for (d, &v) in dst.iter_mut().zip(src) {
            *d = v * (1.0 / 255.0);
        }
    }
}

impl Px for u8 {
    #[inline(always)]
    fn from_u8(v: u8) -> u8 {
        v
    }
    #[inline(always)]
    fn free_list(pool: &PixelPool) -> &Mutex<Vec<Vec<u8>>> {
        &pool.u8s
    }
    #[inline(always)]
    fn store(dst: &mut [u8], src: &[f32]) {
        // Adding 2^23 rounds to the nearest integer (ties to even) and leaves it in the
        // low bits of the float: no float-to-int conversion, so the loop vectorizes.
        for (d, &v) in dst.iter_mut().zip(src) {
            *d = (v + 8_388_608.0).to_bits() as u8;
        }
    }
}

/// Resizes with two taps per axis, in AVX2 where the CPU has it.
fn resize_into<T: Px, const C: usize>(
    image: &Image,
    window: Window,
    size: (usize, usize),
    flip: bool,
    filter: Filter,
    out: &mut [T],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has just been found to support AVX2.
        return unsafe { resize_avx2::<T, C>(image, window, size, flip, filter, out) };
    }
    resize_rows::<T, C>(image, window, size, flip, filter, out)
}

/// [`resize_rows`] compiled for AVX2: the u8 to f32 widening and the blends run eight
/// lanes wide instead of four.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn resize_avx2<T: Px, const C: usize>(
    image: &Image,
    window: Window,
    size: (usize, usize),
    flip: bool,
    filter: Filter,
    out: &mut [T],
) {
    resize_rows::<T, C>(image, window, size, flip, filter, out)
}

/// Each output row blends its two source rows (over the window's width, contiguous and
/// vectorized), then samples that blended row along x. Rows are padded so that every
/// pixel moves as four lanes.
#[inline(always)]
fn resize_rows<T: Px, const C: usize>(
    image: &Image,
    window: Window,
    (oh, ow): (usize, usize),
    flip: bool,
    filter: Filter,
    out: &mut [T],
) {
    let row_len = image.width * C;
    let span = window.width * C;
    let mut xs = taps(ow, 0, window.width, filter, C);
    if flip {
        xs.lo.reverse();
        xs.hi.reverse();
        xs.t.reverse();
    }
    let ys = taps(oh, window.top, window.height, filter, row_len);
    let mut blended = vec![0f32; span + 4];
    let mut sampled = vec![0f32; ow * C + 4];
    let first = window.left * C;
    for (y, dst) in out.chunks_exact_mut(ow * C).enumerate() {
        let (lo, hi, t) = (ys.lo[y] + first, ys.hi[y] + first, ys.t[y]);
        let top = &image.data[lo..lo + span];
        let bottom = &image.data[hi..hi + span];
        blend_rows(top, bottom, t, &mut blended[..span]);
        sample_row::<C>(&blended, &xs, &mut sampled);
        T::store(dst, &sampled[..ow * C]);
    }
}

/// `out = top + (bottom - top) * t`, element by element.
#[inline(always)]
fn blend_rows(top: &[u8], bottom: &[u8], t: f32, out: &mut [f32]) {
    if t == 0.0 {
        for (v, &a) in out.iter_mut().zip(top) {
            *v = a as f32;
        }
        return;
    }
    for ((v, &a), &b) in out.iter_mut().zip(top).zip(bottom) {
        let (a, b) = (a as f32, b as f32);
        *v = a + (b - a) * t;
    }
}

/// Samples a blended row (padded by four values) at the x taps, four lanes per pixel.
#[inline(always)]
fn sample_row<const C: usize>(blended: &[f32], xs: &Taps, out: &mut [f32]) {
    for (o, ((&l, &h), &t)) in xs.lo.iter().zip(&xs.hi).zip(&xs.t).enumerate() {
        let a: [f32; 4] = blended[l..l + 4].try_into().expect("padded");
        let b: [f32; 4] = blended[h..h + 4].try_into().expect("padded");
        let mut r = [0f32; 4];
        for k in 0..4 {
            r[k] = a[k] + (b[k] - a[k]) * t;
        }
        out[o * C..o * C + 4].copy_from_slice(&r);
    }
}

/// Writes `image`, through `window`, resized to `size` and maybe flipped, into `out`.
fn render<T: Px>(
    image: &Image,
    window: Window,
    size: (usize, usize),
    flip: bool,
    filter: Filter,
    out: &mut [T],
) {
    let whole = window.height == image.height && window.width == image.width;
    if whole && size == (image.height, image.width) && !flip {
        for (d, &s) in out.iter_mut().zip(&image.data) {
            *d = T::from_u8(s);
        }
        return;
    }
    match image.channels {
        1 => resize_into::<T, 1>(image, window, size, flip, filter, out),
        2 => resize_into::<T, 2>(image, window, size, flip, filter, out),
        3 => resize_into::<T, 3>(image, window, size, flip, filter, out),
        _ => resize_into::<T, 4>(image, window, size, flip, filter, out),
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
fn slot<'a, T: Px>(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(h: usize, w: usize) -> Image {
        let mut data = Vec::new();
        for y in 0..h {
            for x in 0..w {
                data.extend_from_slice(&[(x * 10) as u8, (y * 10) as u8, 7]);
            }
        }
        Image {
            data,
            height: h,
            width: w,
            channels: 3,
        }
    }

    fn full(image: &Image) -> Window {
        Window {
            top: 0,
            left: 0,
            height: image.height,
            width: image.width,
        }
    }

    #[test]
    fn bilinear_halving_averages_pairs() {
        let img = gradient(4, 4);
        let mut out = vec![0f32; 2 * 2 * 3];
        render(&img, full(&img), (2, 2), false, Filter::Bilinear, &mut out);
        // Half-pixel centres: output 0 samples source 0.5, between pixels 0 and 1.
        let px: Vec<f32> = out.iter().map(|v| v * 255.0).collect();
        let want = [
            5.0, 5.0, 7.0, 25.0, 5.0, 7.0, 5.0, 25.0, 7.0, 25.0, 25.0, 7.0,
        ];
        for (got, want) in px.iter().zip(want) {
            assert!((got - want).abs() < 1e-4, "{px:?}");
        }
    }

    #[test]
    fn every_resize_path_gives_the_same_pixels() {
        // Whatever `resize_into` dispatches to on this CPU must match the portable rows.
        let mut img = gradient(37, 53);
        for (i, v) in img.data.iter_mut().enumerate() {
            *v = v.wrapping_add((i * 31 % 251) as u8);
        }
        let window = Window {
            top: 3,
            left: 5,
            height: 30,
            width: 41,
        };
        for (size, flip, filter) in [
            ((16, 19), false, Filter::Bilinear),
            ((45, 60), true, Filter::Bilinear),
            ((16, 19), true, Filter::Nearest),
        ] {
            let n = size.0 * size.1 * 3;
            let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
            resize_into::<f32, 3>(&img, window, size, flip, filter, &mut a);
            resize_rows::<f32, 3>(&img, window, size, flip, filter, &mut b);
            assert_eq!(a, b);
            let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
            resize_into::<u8, 3>(&img, window, size, flip, filter, &mut a);
            resize_rows::<u8, 3>(&img, window, size, flip, filter, &mut b);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn upscaling_clamps_at_the_edges() {
        let img = gradient(2, 2);
        let mut out = vec![0u8; 4 * 4 * 3];
        render(&img, full(&img), (4, 4), false, Filter::Bilinear, &mut out);
        let xs: Vec<u8> = out.chunks(3).take(4).map(|p| p[0]).collect();
        // 2.5 and 7.5 round half to even, as NumPy and tf.round do.
        assert_eq!(xs, vec![0, 2, 8, 10]);
    }

    #[test]
    fn flip_mirrors_rows() {
        let img = gradient(3, 5);
        let mut a = vec![0u8; 3 * 5 * 3];
        let mut b = vec![0u8; 3 * 5 * 3];
        render(&img, full(&img), (3, 5), false, Filter::Nearest, &mut a);
        render(&img, full(&img), (3, 5), true, Filter::Nearest, &mut b);
        assert_eq!(a, img.data);
        for (ra, rb) in a.chunks(15).zip(b.chunks(15)) {
            let mirrored: Vec<u8> = rb.chunks(3).rev().flatten().copied().collect();
            assert_eq!(ra, mirrored.as_slice());
        }
    }

    #[test]
    fn crops_stay_inside_and_follow_the_ranges() {
        let mut rng = fastrand::Rng::with_seed(1);
        for _ in 0..2000 {
            let w = random_crop(375, 500, (0.08, 1.0), (0.75, 4.0 / 3.0), &mut rng);
            assert!(w.top + w.height <= 375 && w.left + w.width <= 500);
            assert!(w.height > 0 && w.width > 0);
        }
        // An impossible ratio falls back to a centred crop of the nearest allowed one.
        let w = random_crop(100, 1000, (0.9, 1.0), (1.0, 1.0), &mut rng);
        assert_eq!((w.height, w.width), (100, 100));
        assert_eq!((w.top, w.left), (0, 450));
    }

    #[test]
    fn garbage_and_bombs_are_errors() {
        let spec = ImageSpec::default();
        let e = decode_image(b"hello", 0, &spec).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ImageDecode);
        assert!(e.message.contains("not a JPEG"), "{}", e.message);
        let e = decode_image(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 2], 0, &spec).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ImageDecode);
        assert!(check_size(1 << 14, 1 << 14, DEFAULT_MAX_PIXELS).is_err());
    }

    #[test]
    fn channel_conversion() {
        let rgb = Image {
            data: vec![255, 0, 0, 0, 255, 0],
            height: 1,
            width: 2,
            channels: 3,
        };
        let gray = convert_channels(rgb.clone(), 1);
        assert_eq!(gray.data, vec![76, 150]);
        let rgba = convert_channels(rgb, 4);
        assert_eq!(rgba.data, vec![255, 0, 0, 255, 0, 255, 0, 255]);
    }
}
