//! Stream compression: detection and the decoders/encoders TensorFlow's GZIP and ZLIB options use.

use std::io::{self, Read};
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
        format!(
            "; the file looks {}-compressed: read it with compression=\"{}\"",
            likely.name().to_uppercase(),
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
}
