//! A whole pipeline as the engine runs it: its files, stages, batches and parsing.

use std::sync::Arc;

use super::cache::Cache;
use super::order::Order;
use super::readers::OnError;
use crate::feature_lists::ListSchema;
use crate::image::ImageSpec;
use crate::parse::Schema;
use crate::reader::ReadOptions;

/// A stage applied to the stream of records.
#[derive(Clone)]
pub enum RecordOp {
    Shard { num_shards: u64, index: u64 },
    Skip(u64),
    Take(u64),
    Shuffle { buffer: usize, seed: Option<u64> },
    Repeat(Option<u64>),
    Cache(Arc<Cache>),
}

/// A whole pipeline, from files to output units.
#[derive(Clone)]
pub struct Plan {
    pub files: Vec<String>,
    pub read: ReadOptions,
    pub file_ops: Vec<Order>,
    pub cycle_length: usize,
    pub block_length: usize,
    /// How many of the open files are read at once (`interleave(num_parallel_calls)`);
    /// 0 for all of them.
    pub parallel_reads: usize,
    /// `false` takes records from whichever open file has them ready.
    pub deterministic: bool,
    pub record_ops: Vec<RecordOp>,
    /// Records per output unit.
    pub batch_size: usize,
    /// Batches the pipeline thread hands on together, parsed together and cut apart by
    /// the consumer (see [`super::compile::UNIT_RECORDS`]), when `refill` allows cutting
    /// parsed units; 1 hands on each batch alone.
    pub unit_batches: usize,
    /// Drop a last unit shorter than `batch_size`.
    pub drop_remainder: bool,
    /// A unit also ends once its records hold this many bytes (`usize::MAX`: never).
    pub batch_bytes: usize,
    /// With `OnError::Continue`, parsed units left short by records that did not parse
    /// are filled up from the next ones, so that only the last unit is ever short.
    pub refill: bool,
    pub schema: Option<Arc<Schema>>,
    /// With a schema: the records are `SequenceExample`s, the schema parses their
    /// context, and these feature lists (key, dtype) are read too.
    pub feature_lists: Option<Arc<ListSchema>>,
    pub parse_workers: usize,
    /// Finished units held ready ahead of the consumer.
    pub prefetch: usize,
    pub on_error: OnError,
    /// Mixed into every shuffle seed: the iteration (epoch) this run is.
    pub epoch: u64,
    /// Image features decoded after parsing.
    pub images: Vec<ImageStage>,
}

/// Decodes the encoded images of one parsed bytes feature.
#[derive(Debug, Clone)]
pub struct ImageStage {
    /// The feature's position in the schema.
    pub feature: usize,
    pub spec: ImageSpec,
    /// Seeds each record's augmentation, with the epoch and the record's origin.
    pub seed: u64,
}
