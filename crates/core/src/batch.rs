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
    }

    pub fn push(&mut self, record: &[u8]) {
        self.data.extend_from_slice(record);
        self.ends.push(self.data.len());
    }

    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}
