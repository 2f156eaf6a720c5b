//! Stream compression: detection and the decoders/encoders TensorFlow's GZIP and ZLIB options use.

use std::io::{self, Read, Write};
use std::path::Path;

use flate2::{Decompress, FlushDecompress, Status};

use crate::crc::masked_crc32c;
use crate::error::{Error, Result};

/// How a TFRecord stream is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Zlib,
}

impl Compression {
    /// Parses the names TensorFlow and tfrecordkit accept. `"auto"` gives `Ok(None)`.
    pub fn parse(name: Option<&str>) -> Result<Option<Compression>> {
        match name.map(|s| s.to_ascii_lowercase()) {
            None => Ok(Some(Compression::None)),
            Some(s) => match s.as_str() {
                "" | "none" => Ok(Some(Compression::None)),
                "gzip" | "gz" => Ok(Some(Compression::Gzip)),
                "zlib" => Ok(Some(Compression::Zlib)),
                "auto" => Ok(None),
                other => Err(Error::invalid(format!(
                    "unknown compression {other:?}: expected None, \"gzip\", \"zlib\" or \"auto\""
                ))),
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zlib => "zlib",
        }
    }

    /// The compression a file name implies: `.gz` gzip, `.zz` / `.zlib` zlib.
    pub fn from_extension(path: &Path) -> Option<Compression> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "gz" | "gzip" => Some(Compression::Gzip),
            "zz" | "zlib" => Some(Compression::Zlib),
            _ => None,
        }
    }

    /// Guesses the compression from the first bytes of a stream.
    ///
    /// A valid uncompressed record header (length plus its masked CRC) wins, since a zlib
    /// header can also be the first bytes of an ordinary length.
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        if head.len() >= 12 {
            let crc = u32::from_le_bytes(head[8..12].try_into().unwrap());
            if masked_crc32c(&head[..8]) == crc {
                return Some(Compression::None);
            }
        }
        if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
            return Some(Compression::Gzip);
        }
        if head.len() >= 2 && is_zlib_header(head[0], head[1]) {
            return Some(Compression::Zlib);
        }
        None
    }

    /// Decides the compression of a file opened with `requested` (`None` = auto).
    pub fn resolve(requested: Option<Compression>, path: &Path, head: &[u8]) -> Compression {
        match requested {
            Some(c) => c,
            None => Self::sniff(head)
                .or_else(|| Self::from_extension(path))
                .unwrap_or(Compression::None),
        }
    }
}

fn is_zlib_header(cmf: u8, flg: u8) -> bool {
    cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

/// A hint for an error at offset 0 of a stream read as `used`: what it looks like instead.
pub fn suggest(used: Compression, head: &[u8]) -> Option<String> {
    let likely = Compression::sniff(head)?;
    (likely != used).then(|| {
        let looks = match likely {
            Compression::None => "uncompressed".to_owned(),
            other => format!("{}-compressed", other.name().to_uppercase()),
        };
        format!(
            "; the file looks {looks}: read it with compression=\"{}\"",
            likely.name()
        )
    })
}

/// Counts the bytes read from the file and remembers whether the file itself failed,
/// so decoder errors can be told apart from OS errors and located.
pub struct Counting<R> {
    inner: R,
    pub count: u64,
    pub os_error: bool,
}

impl<R: Read> Counting<R> {
    pub fn new(inner: R) -> Self {
        Counting {
            inner,
            count: 0,
            os_error: false,
        }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.count += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.os_error = true;
                Err(e)
            }
        }
    }
}

/// Decompresses gzip or zlib, member after member (concatenated gzip members and zlib
/// streams read as one stream, as TensorFlow reads them).
///
/// Unlike a plain `Read` adapter it never drops output: everything decoded before a
/// damaged spot is returned first, and the error only on the following call, located at
/// the compressed byte where decoding stopped.
pub struct Inflater<R: Read> {
    inner: Counting<R>,
    gzip: bool,
    state: Decompress,
    input: Vec<u8>,
    start: usize,
    end: usize,
    input_eof: bool,
    /// Inside a member: some of its input was consumed and its end not yet seen.
    in_member: bool,
    /// Compressed bytes handed to the decoder so far.
    consumed: u64,
    pending: Option<io::Error>,
    /// The file may still be growing: the end of the input is "no more yet".
    follow: bool,
}

impl<R: Read> Inflater<R> {
    pub fn new(inner: R, gzip: bool) -> Self {
        Inflater {
            inner: Counting::new(inner),
            gzip,
            state: Self::fresh(gzip),
            input: vec![0; 1 << 16],
            start: 0,
            end: 0,
            input_eof: false,
            in_member: false,
            consumed: 0,
            pending: None,
            follow: false,
        }
    }

    fn fresh(gzip: bool) -> Decompress {
        if gzip {
            Decompress::new_gzip(15)
        } else {
            Decompress::new(true)
        }
    }

    fn name(&self) -> &'static str {
        if self.gzip {
            "GZIP"
        } else {
            "ZLIB"
        }
    }
}

impl<R: Read> Read for Inflater<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.start == self.end && !self.input_eof {
                let n = self.inner.read(&mut self.input)?;
                self.start = 0;
                self.end = n;
                self.input_eof = n == 0;
            }
            if self.start == self.end && self.input_eof {
                if self.follow {
                    // Try the file again on the next call.
                    self.input_eof = false;
                    return Ok(0);
                }
                if self.in_member {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("{} stream ends early", self.name()),
                    ));
                }
                return Ok(0);
            }
            let (in_before, out_before) = (self.state.total_in(), self.state.total_out());
            let result = self.state.decompress(
                &self.input[self.start..self.end],
                out,
                FlushDecompress::None,
            );
            let used = (self.state.total_in() - in_before) as usize;
            let produced = (self.state.total_out() - out_before) as usize;
            self.start += used;
            self.consumed += used as u64;
            self.in_member |= used > 0;
            match result {
                Ok(Status::StreamEnd) => {
                    self.state = Self::fresh(self.gzip);
                    self.in_member = false;
                }
                Ok(_) => {}
                Err(e) => {
                    let err = io::Error::new(io::ErrorKind::InvalidData, e.to_string());
                    if produced > 0 {
                        self.pending = Some(err);
                        return Ok(produced);
                    }
                    return Err(err);
                }
            }
            if produced > 0 {
                return Ok(produced);
            }
        }
    }
}

/// A decompressing reader that can report how far into the compressed file it got.
pub enum Decoder<R: Read> {
    Plain(Counting<R>),
    Inflate(Box<Inflater<R>>),
}

impl<R: Read> Decoder<R> {
    pub fn new(inner: R, compression: Compression) -> Self {
        match compression {
            Compression::None => Decoder::Plain(Counting::new(inner)),
            Compression::Gzip => Decoder::Inflate(Box::new(Inflater::new(inner, true))),
            Compression::Zlib => Decoder::Inflate(Box::new(Inflater::new(inner, false))),
        }
    }

    /// Treats the end of the input as "no more yet" (the file may still be growing).
    pub fn set_follow(&mut self, follow: bool) {
        if let Decoder::Inflate(d) = self {
            d.follow = follow;
        }
    }

    /// Compressed bytes the decoder has consumed (for a plain stream, bytes read).
    pub fn compressed_position(&self) -> u64 {
        match self {
            Decoder::Plain(c) => c.count,
            Decoder::Inflate(d) => d.consumed,
        }
    }

    /// Whether the last failure came from the file rather than from the decoder.
    pub fn os_failed(&self) -> bool {
        match self {
            Decoder::Plain(c) => c.os_error,
            Decoder::Inflate(d) => d.inner.os_error,
        }
    }

    pub fn compression(&self) -> Compression {
        match self {
            Decoder::Plain(_) => Compression::None,
            Decoder::Inflate(d) if d.gzip => Compression::Gzip,
            Decoder::Inflate(_) => Compression::Zlib,
        }
    }
}

impl<R: Read> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoder::Plain(r) => r.read(buf),
            Decoder::Inflate(r) => r.read(buf),
        }
    }
}

/// zlib's tuning of a GZIP or ZLIB stream, as `tf.io.TFRecordOptions` has it. `None` is
/// zlib's default for each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZlibOptions {
    /// 0 (store) to 9 (smallest); 6 by default.
    pub level: Option<u32>,
    /// The log2 of the history window, 9 to 15 (15 by default).
    pub window_bits: Option<u32>,
    /// How much memory the compressor's state takes, 1 to 9 (8 by default).
    pub mem_level: Option<u32>,
    /// 0 default, 1 filtered, 2 Huffman only, 3 run-length, 4 fixed codes.
    pub strategy: Option<u32>,
    /// The flush after every `input_buffer_size` bytes: 0 none (the default), 1 partial,
    /// 2 sync, 3 full.
    pub flush_mode: Option<u32>,
    pub input_buffer_size: Option<usize>,
    /// The compressed bytes made per call into the compressor (256 KiB by default).
    pub output_buffer_size: Option<usize>,
}

/// The input and output buffer sizes TensorFlow's zlib writer uses by default.
const ZLIB_BUFFER: usize = 256 << 10;

impl ZlibOptions {
    pub fn is_default(&self) -> bool {
        *self == ZlibOptions::default()
    }

    /// Checks every option's range, naming the option that is out of it.
    pub fn check(&self) -> Result<()> {
        let ranges: [(&str, Option<u32>, u32, u32); 5] = [
            ("compression_level", self.level, 0, 9),
            ("window_bits", self.window_bits, 9, 15),
            ("mem_level", self.mem_level, 1, 9),
            ("compression_strategy", self.strategy, 0, 4),
            ("flush_mode", self.flush_mode, 0, 3),
        ];
        for (name, value, low, high) in ranges {
            if let Some(v) = value.filter(|v| !(low..=high).contains(v)) {
                return Err(Error::invalid(format!(
                    "{name} {v} is out of range {low}-{high}"
                )));
            }
        }
        for (name, value) in [
            ("input_buffer_size", self.input_buffer_size),
            ("output_buffer_size", self.output_buffer_size),
        ] {
            if let Some(v) = value.filter(|&v| v == 0 || v > 1 << 30) {
                return Err(Error::invalid(format!(
                    "{name} {v} is out of range 1-{}",
                    1 << 30
                )));
            }
        }
        Ok(())
    }
}

/// A GZIP or ZLIB stream written to `inner`, with zlib's tuning options; `finish` ends it.
pub struct Deflater<W: Write> {
    inner: W,
    state: zlib_rs::Deflate,
    out: Vec<u8>,
    flush: zlib_rs::DeflateFlush,
    flush_every: usize,
    since_flush: usize,
}

impl<W: Write> Deflater<W> {
    /// `options` must have passed [`ZlibOptions::check`].
    pub fn new(inner: W, gzip: bool, options: &ZlibOptions) -> Self {
        use zlib_rs::{DeflateConfig, DeflateFlush, Strategy};
        let window_bits = options.window_bits.unwrap_or(15) as i32;
        let config = DeflateConfig {
            level: options.level.map_or(6, |l| l as i32),
            window_bits: if gzip { window_bits + 16 } else { window_bits },
            mem_level: options.mem_level.map_or(8, |m| m as i32),
            strategy: match options.strategy.unwrap_or(0) {
                1 => Strategy::Filtered,
                2 => Strategy::HuffmanOnly,
                3 => Strategy::Rle,
                4 => Strategy::Fixed,
                _ => Strategy::Default,
            },
            ..DeflateConfig::default()
        };
        Deflater {
            inner,
            state: zlib_rs::Deflate::new_with_config(config),
            out: vec![0; options.output_buffer_size.unwrap_or(ZLIB_BUFFER)],
            flush: match options.flush_mode.unwrap_or(0) {
                1 => DeflateFlush::PartialFlush,
                2 => DeflateFlush::SyncFlush,
                3 => DeflateFlush::FullFlush,
                _ => DeflateFlush::NoFlush,
            },
            flush_every: options.input_buffer_size.unwrap_or(ZLIB_BUFFER),
            since_flush: 0,
        }
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Compresses `input` with `flush`, writing what comes out, until all of it is in
    /// (and, for a flush, all of it is out).
    fn run(&mut self, mut input: &[u8], flush: zlib_rs::DeflateFlush) -> io::Result<()> {
        use zlib_rs::{DeflateFlush, Status};
        loop {
            let (before_in, before_out) = (self.state.total_in(), self.state.total_out());
            let status = self
                .state
                .compress(input, &mut self.out, flush)
                .map_err(|e| io::Error::other(format!("compressing: {}", e.as_str())))?;
            let taken = (self.state.total_in() - before_in) as usize;
            let made = (self.state.total_out() - before_out) as usize;
            self.inner.write_all(&self.out[..made])?;
            input = &input[taken..];
            let done = match flush {
                DeflateFlush::NoFlush => input.is_empty(),
                DeflateFlush::Finish => status == Status::StreamEnd,
                _ => input.is_empty() && made < self.out.len(),
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Ends the stream, then makes the compressor ready for another (a new gzip member).
    pub fn end_stream(&mut self) -> io::Result<()> {
        self.run(&[], zlib_rs::DeflateFlush::Finish)?;
        self.state.reset();
        self.since_flush = 0;
        Ok(())
    }

    /// Ends the stream and hands back the writer underneath.
    pub fn finish(mut self) -> io::Result<W> {
        self.run(&[], zlib_rs::DeflateFlush::Finish)?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for Deflater<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut rest = buf;
        while !rest.is_empty() {
            let room = self.flush_every - self.since_flush;
            let (now, later) = rest.split_at(rest.len().min(room));
            self.run(now, zlib_rs::DeflateFlush::NoFlush)?;
            self.since_flush += now.len();
            if self.since_flush == self.flush_every {
                if self.flush != zlib_rs::DeflateFlush::NoFlush {
                    self.run(&[], self.flush)?;
                }
                self.since_flush = 0;
            }
            rest = later;
        }
        Ok(buf.len())
    }

    /// Pushes what the compressor holds to the writer underneath (a sync flush).
    fn flush(&mut self) -> io::Result<()> {
        self.run(&[], zlib_rs::DeflateFlush::SyncFlush)?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn sniffs_gzip_zlib_and_plain() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"hello").unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(Compression::sniff(&gz), Some(Compression::Gzip));
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(b"hello").unwrap();
        let zl = zl.finish().unwrap();
        assert_eq!(Compression::sniff(&zl), Some(Compression::Zlib));
        // A record of 376 bytes starts with 0x78 0x01, which is also a zlib header.
        let mut head = 376u64.to_le_bytes().to_vec();
        head.extend_from_slice(&masked_crc32c(&head).to_le_bytes());
        assert_eq!(Compression::sniff(&head), Some(Compression::None));
    }

    #[test]
    fn concatenated_zlib_streams() {
        let mut all = Vec::new();
        for part in [&b"abc"[..], b"def"] {
            let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            zl.write_all(part).unwrap();
            all.extend(zl.finish().unwrap());
        }
        let mut out = String::new();
        Decoder::new(&all[..], Compression::Zlib)
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "abcdef");
    }

    #[test]
    fn parses_names() {
        assert_eq!(Compression::parse(None).unwrap(), Some(Compression::None));
        assert_eq!(
            Compression::parse(Some("GZIP")).unwrap(),
            Some(Compression::Gzip)
        );
        assert_eq!(Compression::parse(Some("auto")).unwrap(), None);
        assert!(Compression::parse(Some("lz4")).is_err());
    }

    #[test]
    fn every_zlib_option_makes_a_stream_that_decodes() {
        let data: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut variants = vec![ZlibOptions::default()];
        for strategy in 0..=4 {
            variants.push(ZlibOptions {
                strategy: Some(strategy),
                level: Some(strategy + 1),
                ..ZlibOptions::default()
            });
        }
        for flush_mode in 0..=3 {
            variants.push(ZlibOptions {
                flush_mode: Some(flush_mode),
                input_buffer_size: Some(1000),
                output_buffer_size: Some(77),
                window_bits: Some(9),
                mem_level: Some(1),
                ..ZlibOptions::default()
            });
        }
        for options in variants {
            options.check().unwrap();
            for (gzip, kind) in [(true, Compression::Gzip), (false, Compression::Zlib)] {
                let mut w = Deflater::new(Vec::new(), gzip, &options);
                for chunk in data.chunks(7919) {
                    w.write_all(chunk).unwrap();
                }
                let stream = w.finish().unwrap();
                assert_eq!(Compression::sniff(&stream), Some(kind));
                let mut back = Vec::new();
                Decoder::new(&stream[..], kind)
                    .read_to_end(&mut back)
                    .unwrap();
                assert!(back == data, "{options:?}");
            }
        }
        let bad = ZlibOptions {
            window_bits: Some(16),
            ..ZlibOptions::default()
        };
        assert!(bad.check().unwrap_err().message.contains("window_bits 16"));
    }
}
