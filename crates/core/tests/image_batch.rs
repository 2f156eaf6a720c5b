//! Decoding batches of images into one array: shapes, resizing, pooled buffers, seeded
//! augmentation, and errors that name the image.

use tfrecordkit_core::image::{
    decode_batch, decode_image, Augment, ImageSpec, PixelBatch, PixelPool, PixelType, Pixels,
};
use tfrecordkit_core::ErrorKind;

/// An 8-bit RGB PNG of `height` x `width` whose pixels count up.
fn png(height: u32, width: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let data: Vec<u8> = (0..height * width * 3).map(|i| (i % 251) as u8).collect();
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(&data).unwrap();
    writer.finish().unwrap();
    out
}

fn u8s(batch: &PixelBatch) -> &[u8] {
    match &batch.pixels {
        Pixels::U8(v) => v,
        Pixels::F32(_) => panic!("uint8 pixels"),
    }
}

fn spec(size: Option<(usize, usize)>, dtype: PixelType) -> ImageSpec {
    ImageSpec {
        size,
        dtype,
        ..ImageSpec::default()
    }
}

#[test]
fn images_of_one_shape_share_an_array_in_order() {
    let (a, b) = (png(4, 6), png(4, 6));
    let batch = decode_batch(&[&a, &b], &[0, 0], &spec(None, PixelType::U8), None).unwrap();
    assert_eq!(batch.shape, vec![2, 4, 6, 3]);
    let single = decode_image(&a, 0, &spec(None, PixelType::U8)).unwrap();
    assert_eq!(single.shape, vec![4, 6, 3]);
    assert_eq!(&u8s(&batch)[..72], u8s(&single));
    assert_eq!(&u8s(&single)[..4], &[0, 1, 2, 3]);
}

#[test]
fn float_pixels_scale_to_the_unit_interval() {
    let a = png(2, 2);
    let batch = decode_batch(&[&a], &[0], &spec(None, PixelType::F32), None).unwrap();
    let Pixels::F32(v) = &batch.pixels else {
        panic!("float32 pixels")
    };
    assert_eq!(v[0], 0.0);
    assert!((v[1] - 1.0 / 255.0).abs() < 1e-6);
}

#[test]
fn different_shapes_need_an_output_size() {
    let (a, b) = (png(4, 6), png(5, 6));
    let err = decode_batch(&[&a, &b], &[0, 0], &spec(None, PixelType::U8), None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ImageDecode);
    assert_eq!(err.record_index, Some(1));
    assert!(err.message.contains("output size"), "{}", err.message);
    let sized = spec(Some((3, 3)), PixelType::U8);
    let batch = decode_batch(&[&a, &b], &[0, 0], &sized, None).unwrap();
    assert_eq!(batch.shape, vec![2, 3, 3, 3]);
}

#[test]
fn an_undecodable_image_is_named_by_its_place_in_the_batch() {
    let good = png(2, 2);
    let bad = b"not an image at all".to_vec();
    let err = decode_batch(&[&good, &bad], &[0, 0], &spec(None, PixelType::U8), None).unwrap_err();
    assert_eq!(
        (err.kind, err.record_index),
        (ErrorKind::ImageDecode, Some(1))
    );
    // Alone, the image has no place in a batch to name.
    let err = decode_image(&bad, 0, &spec(None, PixelType::U8)).unwrap_err();
    assert_eq!(err.record_index, None);
}

#[test]
fn too_many_pixels_are_refused_before_decoding() {
    let big = png(64, 64);
    let small_limit = ImageSpec {
        max_pixels: 1000,
        ..spec(None, PixelType::U8)
    };
    let err = decode_batch(&[&big], &[0], &small_limit, None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ImageDecode);
}

#[test]
fn pooled_buffers_give_the_same_pixels() {
    let pool = PixelPool::default();
    let images = [png(8, 8), png(8, 8)];
    let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
    let plain = decode_batch(&refs, &[0, 0], &spec(None, PixelType::F32), None).unwrap();
    let first = decode_batch(&refs, &[0, 0], &spec(None, PixelType::F32), Some(&pool)).unwrap();
    pool.give(first.pixels);
    let again = decode_batch(&refs, &[0, 0], &spec(None, PixelType::F32), Some(&pool)).unwrap();
    assert_eq!(plain, again);
}

#[test]
fn augmentation_follows_its_seed() {
    let image = png(16, 16);
    let augmented = ImageSpec {
        augment: Some(Augment {
            crop_scale: Some((0.2, 0.6)),
            crop_ratio: (0.75, 1.333),
            flip: true,
        }),
        ..spec(Some((8, 8)), PixelType::U8)
    };
    let run = |seed| decode_batch(&[&image], &[seed], &augmented, None).unwrap();
    assert_eq!(run(7), run(7));
    assert!((0..8).any(|s| run(s) != run(7)));
    assert_eq!(run(7).shape, vec![1, 8, 8, 3]);
}
