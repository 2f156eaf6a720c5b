//! Records packed back to back in one buffer, as readers hand out a batch.

/// Records packed back to back in one buffer: record `i` is `data[ends[i-1]..ends[i]]`.
#[derive(Debug, Default, Clone)]
pub struct RecordBatch {
    pub data: Vec<u8>,
    pub ends: Vec<usize>,
    /// The records (their indices, ascending) read into buffers of their own (see
    /// `MultiFileReader::read_batch_with`): empty in `data`.
    pub large: Vec<usize>,
    /// Their bytes.
    pub large_bytes: usize,
    /// Whether the batch ended before a large record that was left unread (see
    /// [`LargeRecords::leaves`](crate::multi::LargeRecords::leaves)).
    pub before_large: bool,
    /// Records (their indices, ascending) kept in the buffers they were read into, with
    /// those buffers: empty in `data`, and given by [`RecordBatch::get`] as any other.
    pub held: Vec<(usize, Vec<u8>)>,
    /// Their bytes.
    pub held_bytes: usize,
}

impl RecordBatch {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.large.clear();
        self.large_bytes = 0;
        self.before_large = false;
        self.held.clear();
        self.held_bytes = 0;
    }

    pub fn push(&mut self, record: &[u8]) {
        self.data.extend_from_slice(record);
        self.ends.push(self.data.len());
    }

    /// Appends a record kept in the buffer it was read into.
    pub fn push_held(&mut self, record: Vec<u8>) {
        self.held_bytes += record.len();
        self.held.push((self.ends.len(), record));
        self.ends.push(self.data.len());
    }

    /// The bytes of the batch's records, wherever they are kept.
    pub fn bytes(&self) -> usize {
        self.data.len() + self.held_bytes
    }

    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        if !self.held.is_empty() {
            if let Some(record) = self.held_record(i) {
                return record;
            }
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Record `i`, when it is held in a buffer of its own.
    #[cold]
    fn held_record(&self, i: usize) -> Option<&[u8]> {
        let k = self.held.binary_search_by_key(&i, |h| h.0).ok()?;
        Some(&self.held[k].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// Where the records of a batch came from: runs of consecutive records of one file
/// (`(file, index in the file of the run's first record, records)`), and each record's
/// byte offset in its file (of its header; in the decompressed stream of a compressed
/// file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    runs: Vec<(usize, u64, u64)>,
    offsets: Vec<u64>,
}

impl Origins {
    pub fn clear(&mut self) {
        self.runs.clear();
        self.offsets.clear();
    }

    /// Notes the next record of the batch: record `index` of `file`, at `offset`.
    #[inline]
    pub fn push(&mut self, file: usize, index: u64, offset: u64) {
        match self.runs.last_mut() {
            Some((f, first, n)) if *f == file && *first + *n == index => *n += 1,
            _ => self.runs.push((file, index, 1)),
        }
        self.offsets.push(offset);
    }

    /// The runs: `(file, index in the file of its first record, records)`.
    pub fn runs(&self) -> &[(usize, u64, u64)] {
        &self.runs
    }

    /// The file (an index into `paths`), the index in it and the byte offset of record `i`
    /// of the batch.
    pub fn get<'a>(&self, paths: &'a [String], i: u64) -> Option<(&'a str, u64, u64)> {
        let offset = *self.offsets.get(usize::try_from(i).ok()?)?;
        let mut i = i;
        for &(file, first, n) in &self.runs {
            if i < n {
                return Some((paths[file].as_str(), first + i, offset));
            }
            i -= n;
        }
        None
    }
}
