//! Random augmentation: the source window of a random resized crop, and a flip.

use super::spec::Augment;

/// A window of the source image, in whole pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub top: usize,
    pub left: usize,
    pub height: usize,
    pub width: usize,
}

/// A source window and a flip, chosen per image by [`Augment`] from `rng`.
pub(super) fn augment_window(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
