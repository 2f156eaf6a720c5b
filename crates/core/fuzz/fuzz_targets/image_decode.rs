//! Image decoding, resizing and augmentation on arbitrary bytes: errors, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::image::{decode_image, Augment, Filter, ImageSpec, PixelType};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options; the rest is the image.
    let Some((&pick, image)) = data.split_first() else {
        return;
    };
    let spec = ImageSpec {
        channels: [0, 1, 3, 4][(pick & 3) as usize],
        size: (pick & 4 != 0).then_some((7, 5)),
        dtype: if pick & 8 != 0 { PixelType::U8 } else { PixelType::F32 },
        filter: if pick & 16 != 0 { Filter::Nearest } else { Filter::Bilinear },
        augment: (pick & 32 != 0).then_some(Augment {
            crop_scale: (pick & 4 != 0).then_some((0.08, 1.0)),
            crop_ratio: (0.75, 4.0 / 3.0),
            flip: true,
        }),
        max_pixels: 1 << 22,
    };
    let _ = decode_image(image, u64::from(pick), &spec);
});
