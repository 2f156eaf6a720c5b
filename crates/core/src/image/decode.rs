//! Encoded bytes to 8-bit pixels: format sniffing, the JPEG, PNG and WebP decoders, and
//! channel conversion.

use std::io::Cursor;

use crate::error::{Error, ErrorKind, Result};

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
pub(super) fn recycle(image: Image) {
    if image.data.capacity() <= 64 << 20 {
        SCRATCH.set(image.data);
    }
}

pub(super) fn image_error(message: impl Into<String>) -> Error {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{decode_image, ImageSpec, DEFAULT_MAX_PIXELS};

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
