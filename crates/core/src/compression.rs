//! Stream compression: detection and the decoders/encoders TensorFlow's GZIP and ZLIB options use.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::{MultiGzDecoder, ZlibDecoder};

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

/// Reads concatenated zlib streams back to back, as gzip members are.
pub struct MultiZlibDecoder<R: BufRead> {
    decoder: Option<ZlibDecoder<R>>,
}

impl<R: BufRead> MultiZlibDecoder<R> {
    pub fn new(inner: R) -> Self {
        MultiZlibDecoder {
            decoder: Some(ZlibDecoder::new(inner)),
        }
    }

    pub fn get_ref(&self) -> &R {
        self.decoder.as_ref().expect("decoder present").get_ref()
    }
}

impl<R: BufRead> Read for MultiZlibDecoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let dec = self.decoder.as_mut().expect("decoder present");
            let n = dec.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // End of one stream: go on if more input follows.
            if dec.get_mut().fill_buf()?.is_empty() {
                return Ok(0);
            }
            let inner = self.decoder.take().expect("decoder present").into_inner();
            self.decoder = Some(ZlibDecoder::new(inner));
        }
    }
}

type FileSource<R> = BufReader<Counting<R>>;

/// A decompressing reader that can report how far into the compressed file it got.
pub enum Decoder<R: Read> {
    Plain(Counting<R>),
    Gzip(MultiGzDecoder<FileSource<R>>),
    Zlib(MultiZlibDecoder<FileSource<R>>),
}

impl<R: Read> Decoder<R> {
    pub fn new(inner: R, compression: Compression) -> Self {
        let counted = Counting::new(inner);
        match compression {
            Compression::None => Decoder::Plain(counted),
            Compression::Gzip => Decoder::Gzip(MultiGzDecoder::new(BufReader::with_capacity(
                1 << 16,
                counted,
            ))),
            Compression::Zlib => Decoder::Zlib(MultiZlibDecoder::new(BufReader::with_capacity(
                1 << 16,
                counted,
            ))),
        }
    }

    fn counting(&self) -> &Counting<R> {
        match self {
            Decoder::Plain(c) => c,
            Decoder::Gzip(d) => d.get_ref().get_ref(),
            Decoder::Zlib(d) => d.get_ref().get_ref(),
        }
    }

    /// Compressed bytes consumed from the file so far (read ahead included).
    pub fn compressed_position(&self) -> u64 {
        self.counting().count
    }

    /// Whether the last failure came from the file rather than from the decoder.
    pub fn os_failed(&self) -> bool {
        self.counting().os_error
    }

    pub fn compression(&self) -> Compression {
        match self {
            Decoder::Plain(_) => Compression::None,
            Decoder::Gzip(_) => Compression::Gzip,
            Decoder::Zlib(_) => Compression::Zlib,
        }
    }
}

impl<R: Read> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoder::Plain(r) => r.read(buf),
            Decoder::Gzip(r) => r.read(buf),
            Decoder::Zlib(r) => r.read(buf),
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
