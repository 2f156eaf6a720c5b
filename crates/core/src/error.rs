//! One error type for the whole core, carrying where the problem was found.

use std::fmt;
use std::io;

/// What went wrong, in the terms of the Python exception hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The operating system refused (missing file, permission, disk full...).
    Io,
    /// A checksum did not match.
    Corrupt,
    /// The file is not a TFRecord file at all: its first header fails its checksum and
    /// its bytes are another format's (an image, an archive, text...).
    NotTfRecord,
    /// The stream ended inside a record.
    Truncated,
    /// Other unrecoverable damage: impossible lengths, broken compressed streams.
    DataLoss,
    /// A payload is not a valid `tf.train.Example` / `SequenceExample`.
    ExampleDecode,
    /// A valid Example does not fit the schema it is parsed with.
    Schema,
    /// Image bytes that do not decode (or decode too large).
    ImageDecode,
    /// A caller passed an argument that cannot be used.
    InvalidArgument,
    /// A bug: a thread of the core panicked. Reported, never a silent early end.
    Internal,
}

/// An error with the location it was found at: file, byte offset and record index.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub path: Option<String>,
    pub offset: Option<u64>,
    pub record_index: Option<u64>,
    /// The feature key, for schema and decode errors that concern one feature.
    pub key: Option<Box<str>>,
    /// The reader has already stepped past the damaged record and can go on.
    pub resumable: bool,
    /// Byte range `[start, end)` skipped to get past the damage, when the reader resynced.
    pub lost: Option<Box<(u64, u64)>>,
    pub source: Option<io::Error>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            path: None,
            offset: None,
            record_index: None,
            key: None,
            resumable: false,
            lost: None,
            source: None,
        }
    }

    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }

    pub fn truncated(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Truncated, message)
    }

    pub fn data_loss(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::DataLoss, message)
    }

    pub fn decode(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ExampleDecode, message)
    }

    pub fn schema(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Schema, message)
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// The error a caught panic becomes: `what` panicked, with the panic's message.
    pub fn internal(what: &str, payload: &(dyn std::any::Any + Send)) -> Self {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        Self::new(
            ErrorKind::Internal,
            format!(
                "internal error: {what} panicked: {why} (a bug in tfrecordkit; please report it)"
            ),
        )
    }

    /// Runs `f`, turning a panic (always a bug) into an [`ErrorKind::Internal`] error
    /// naming `what`: for the core's own threads, whose panics would otherwise end their
    /// queues as if the work were done.
    pub fn catch<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, Error> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .map_err(|payload| Error::internal(what, payload.as_ref()))
    }

    pub fn io(err: io::Error, path: Option<&str>) -> Self {
        let mut e = Self::new(ErrorKind::Io, err.to_string());
        e.path = path.map(str::to_owned);
        e.source = Some(err);
        e
    }

    /// A wait given up (see [`crate::cancel`]): an I/O error of kind `Interrupted`.
    pub fn interrupted() -> Self {
        Self::io(given_up(), None)
    }

    pub fn with_path(mut self, path: &str) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_owned());
        }
        self
    }

    pub fn with_offset(mut self, offset: u64) -> Self {
        if self.offset.is_none() {
            self.offset = Some(offset);
        }
        self
    }

    pub fn with_record(mut self, index: u64) -> Self {
        if self.record_index.is_none() {
            self.record_index = Some(index);
        }
        self
    }

    pub fn with_key(mut self, key: &str) -> Self {
        if self.key.is_none() {
            self.key = Some(key.into());
        }
        self
    }

    /// This error, met in the feature (or feature list) `key`: keyed, and its message
    /// saying so once.
    pub fn in_feature(self, key: &str) -> Self {
        let mut e = self.with_key(key);
        if !e.message.starts_with("feature ") {
            e.message = format!("feature {key:?}: {}", e.message);
        }
        e
    }

    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }

    /// The OS error number, for errors that came from the operating system.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.as_ref().and_then(io::Error::raw_os_error)
    }

    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        self.source.as_ref().map(io::Error::kind)
    }
}

/// The I/O error of a wait given up (see [`crate::cancel`]): of kind `Interrupted`.
pub fn given_up() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "interrupted")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let mut parts = Vec::new();
        if let Some(p) = &self.path {
            parts.push(p.clone());
        }
        if let Some(i) = self.record_index {
            parts.push(format!("record {i}"));
        }
        if let Some(o) = self.offset {
            parts.push(format!("offset {o}"));
        }
        if !parts.is_empty() && self.kind != ErrorKind::Io {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
