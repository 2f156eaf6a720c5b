//! tfrecordkit's core: TFRecord framing, compression, and the `tf.train.Example` wire codec,
//! with schema-driven batch parsing. Pure Rust; the Python bindings live in another crate.

pub mod ahead;
pub mod assemble;
pub mod batch;
pub mod cancel;
pub mod column;
pub mod columns;
pub mod composite;
pub mod compression;
pub mod crc;
pub mod error;
pub mod example;
pub mod feature_lists;
pub mod foreign;
pub mod image;
pub mod in_place;
pub mod local;
pub mod memory;
pub mod multi;
pub mod parse;
pub mod pipeline;
pub mod pool;
pub mod positional;
mod prefetch;
pub mod reader;
pub mod row_summary;
pub mod sequence;
pub mod source;
pub mod stats;
pub mod tensor;
pub mod wire;
pub mod writer;

pub use ahead::{BatchesAhead, Work};
pub use assemble::{Assembled, Assembly, PartitionSource, SparseValues};
pub use batch::{Origins, RecordBatch};
pub use columns::{frame_table, ColumnRef, Rows, Values};
pub use compression::Compression;
pub use error::{Error, ErrorKind, Result};
pub use example::{
    decode_example, decode_sequence_example, encode_example, encode_example_into,
    encode_sequence_example, Feature, FeatureLists, Features,
};
pub use foreign::foreign_format;
pub use in_place::parse_each;
pub use local::FileRecordReader;
pub use multi::{
    count_records, index_records, parse_index_table, EachRecord, LargeRecords, MultiFileReader,
};
pub use parse::{
    parse_examples, Column, DType, ExampleParser, FeatureSpec, Parsed, Schema, SpecKind, MAX_FILL,
    MAX_VALUES,
};
pub use positional::{
    member_records, read_member, read_records_at, read_records_at_with, unframe_record,
    OffsetReader,
};
pub use reader::{ReadOptions, RecordReader, Span};
pub use source::{Opened, Opener, SharedOpener, SourceReader};
pub use writer::{
    commit_shard, frame_record, index_path, rename_file, Finished, RecordWriter, WriteOptions,
};
