//! Two-tap resizing (bilinear or nearest) of a window of an image, maybe flipped, into
//! `u8` or `f32` output, compiled for AVX2 where the CPU has it.

use super::augment::Window;
use super::decode::Image;
use super::spec::Filter;

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
    /// Stores interpolated values (within `[0, 255]`) as this type.
    #[doc(hidden)]
    fn store(dst: &mut [Self], src: &[f32]);
}

mod private {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for f32 {}
}

impl Px for f32 {
    #[inline(always)]
    fn from_u8(v: u8) -> f32 {
        v as f32 * (1.0 / 255.0)
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
pub(super) fn render<T: Px>(
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
}
