//! A pipeline's stages as its builder lists them, compiled once into what runs them: the
//! engine's file and record stages, its parse, batch and image stages, and the stages over
//! the elements a user function makes. Each run (an epoch, a consumer's share) is then a
//! [`Plan`] made from it, and its cardinality is counted from it.

use std::fmt;
use std::sync::Arc;

use super::cache::Cache;
use super::cardinality::{count_after, picked_records, Cardinality, Counted};
use super::files::{file_order_of, FileIter};
use super::order::Order;
use super::plan::{ImageStage, Plan, RecordOp};
use super::readers::OnError;
use crate::assemble::Assembly;
use crate::feature_lists::ListSchema;
use crate::image::ImageSpec;
use crate::parse::{DType, Schema, SpecKind};
use crate::reader::ReadOptions;

/// Records per unit when the plan does not batch: the engine hands records on in units.
pub const UNIT: usize = 256;
/// A unit of a plan that does not batch also ends once its records hold this much, so
/// that large records (images, audio) keep units, and the memory they take, small:
/// small enough that the buffers records are read into are freed and reused while they
/// are still in the CPU's cache (1 MiB reads 100 KB records 20% faster than 4 MiB).
pub const UNIT_BYTES: usize = 1 << 20;
/// Small batches travel from the pipeline thread to the consumer several to a unit, of
/// at most this many records (and, past the first batch, [`SEVERAL_BYTES`]), and are
/// parsed together: each unit handed between threads and each parse has a cost of its
/// own, which batches of a hundred records would pay ten times as often as batches of a
/// thousand. Units of 2,048 records cost 4% less CPU than units of 1,024.
pub const UNIT_RECORDS: usize = 2048;
/// A unit of several batches ends at the first batch that brings it to this many bytes:
/// the consumer copies each batch out of the unit it was parsed in, which costs little
/// while the unit is small enough to stay in the CPU's cache.
pub const SEVERAL_BYTES: usize = 256 << 10;

impl Order {
    pub fn record_op(self) -> RecordOp {
        match self {
            Order::Shuffle { buffer, seed } => RecordOp::Shuffle { buffer, seed },
            Order::Shard { num_shards, index } => RecordOp::Shard { num_shards, index },
            Order::Skip(n) => RecordOp::Skip(n),
            Order::Take(n) => RecordOp::Take(n),
            Order::Repeat(n) => RecordOp::Repeat(n),
        }
    }

    pub fn counted(self) -> Counted {
        match self {
            Order::Shuffle { .. } => Counted::Same,
            Order::Shard { num_shards, index } => Counted::Shard { num_shards, index },
            Order::Skip(n) => Counted::Skip(n),
            Order::Take(n) => Counted::Take(n),
            Order::Repeat(n) => Counted::Repeat(n),
        }
    }
}

/// `interleave`: how the open files' records are taken in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interleave {
    pub cycle_length: usize,
    pub block_length: usize,
    pub deterministic: bool,
    /// Files read at once; 0 for every open one.
    pub parallel_reads: usize,
}

impl Default for Interleave {
    fn default() -> Self {
        Interleave {
            cycle_length: 1,
            block_length: 1,
            deterministic: true,
            parallel_reads: 0,
        }
    }
}

/// One stage as the builder gives it.
#[derive(Clone)]
pub enum Step {
    Order(Order),
    Cache(Arc<Cache>),
    Interleave(Interleave),
    Parse(Arc<Schema>),
    /// SequenceExamples: `context` parses their context, `lists` names the feature lists
    /// read. `batched`: it follows a `batch`, and parses each batch in one call.
    ParseSequence {
        context: Arc<Schema>,
        lists: Arc<ListSchema>,
        batched: bool,
    },
    /// `seed`: `None` draws a fresh one for each run.
    DecodeImage {
        key: String,
        spec: ImageSpec,
        seed: Option<u64>,
    },
    /// `max_bytes` also ends a batch of records once they hold that many bytes.
    Batch {
        size: usize,
        drop_remainder: bool,
        max_bytes: Option<usize>,
    },
    Prefetch(usize),
    /// A user function over elements (`map`, and anything else one element in, one out).
    Map,
    Filter,
}

impl Step {
    /// The `Dataset` method that made the step.
    fn name(&self) -> &'static str {
        match self {
            Step::Order(Order::Shuffle { .. }) => "shuffle",
            Step::Order(Order::Shard { .. }) => "shard",
            Step::Order(Order::Skip(_)) => "skip",
            Step::Order(Order::Take(_)) => "take",
            Step::Order(Order::Repeat(_)) => "repeat",
            Step::Cache(_) => "cache",
            Step::Interleave(_) => "interleave",
            Step::Parse(_) | Step::ParseSequence { .. } => "parse",
            Step::DecodeImage { .. } => "decode_image",
            Step::Batch { .. } => "batch",
            Step::Prefetch(_) => "prefetch",
            Step::Map => "map",
            Step::Filter => "filter",
        }
    }

    fn counted(&self) -> Counted {
        match self {
            Step::Order(o) => o.counted(),
            Step::Filter => Counted::Filter,
            // Cut by bytes too, the number of batches depends on the records' sizes.
            Step::Batch {
                max_bytes: Some(_), ..
            } => Counted::Filter,
            Step::Batch {
                size,
                drop_remainder,
                max_bytes: None,
            } => Counted::Batch {
                size: *size as u64,
                drop_remainder: *drop_remainder,
            },
            _ => Counted::Same,
        }
    }
}

/// A stage that cannot follow what comes before it (a `TypeError` in Python), or one
/// whose arguments do not fit the plan (a `ValueError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    Order(String),
    Value(String),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Order(m) | PlanError::Value(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PlanError {}

/// What the engine parses records as.
#[derive(Clone)]
pub enum Parsing {
    /// Records stay records.
    None,
    /// Examples, with the schema of step `step`.
    Examples { step: usize, schema: Arc<Schema> },
    /// SequenceExamples, as step `step` says.
    Sequences {
        step: usize,
        context: Arc<Schema>,
        lists: Arc<ListSchema>,
    },
}

/// Which consumer of several a run is: `index` of `count`, each reading its share of
/// what the whole pipeline yields (see [`Compiled::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumers {
    pub count: u64,
    pub index: u64,
    pub level: Level,
}

/// Where consumers split a pipeline: after the last stage that picks elements by their
/// position (`shard`, `skip`, `take`), so that together they read what the whole
/// pipeline yields, each element once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A share of the files.
    Files,
    /// Every `count`-th record, all consumers reading the records in one order.
    Records,
    /// Every `count`-th element after a `map`, a `filter` or a `batch` that a pick
    /// follows: every consumer runs the engine's stages over all the records.
    Elements,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Files => "files",
            Level::Records => "records",
            Level::Elements => "elements",
        }
    }

    pub fn from_name(name: &str) -> Option<Level> {
        [Level::Files, Level::Records, Level::Elements]
            .into_iter()
            .find(|l| l.name() == name)
    }
}

/// How consumers share a pipeline (see [`Compiled::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub level: Level,
    /// The leading steps every consumer runs over everything they get, so that their
    /// unseeded shuffles need one seed for all the consumers to agree.
    pub whole: usize,
    /// At [`Level::Elements`], where among [`Compiled::elements`] the split goes.
    pub element_at: usize,
}

/// The last stage of each kind that picks elements by their position: each is where a
/// split at its level goes (an index past it in its list, and past it among the steps).
#[derive(Debug, Clone, Copy, Default)]
struct Picks {
    files: (usize, usize),
    records: Option<(usize, usize, usize)>,
    elements: Option<(usize, usize, usize)>,
    /// The steps up to the `interleave`, which reads the files.
    read_at: usize,
}

impl Consumers {
    fn shard(self) -> Order {
        Order::Shard {
            num_shards: self.count,
            index: self.index,
        }
    }
}

/// What one run of a compiled plan reads, and how.
#[derive(Clone)]
pub struct Run {
    pub files: Vec<String>,
    pub read: ReadOptions,
    pub on_error: OnError,
    pub consumers: Option<Consumers>,
    pub epoch: u64,
    /// The cores the run may use.
    pub cpus: usize,
}

/// A pipeline's stages, compiled.
#[derive(Clone)]
pub struct Compiled {
    /// The pipeline yields file names: it never reads its files.
    pub files_only: bool,
    pub file_ops: Vec<Order>,
    pub interleave: Interleave,
    pub record_ops: Vec<RecordOp>,
    pub parsing: Parsing,
    /// The `batch` step the engine runs, and its size and remainder rule.
    pub batch: Option<(usize, usize, bool)>,
    /// The bytes of records that also end a batch, where the batch says so.
    pub batch_bytes: Option<usize>,
    pub prefetch: Option<usize>,
    /// The `decode_image` steps the engine runs after parsing, with their stage and
    /// seed (`None`: a fresh one each run).
    pub images: Vec<(usize, ImageStage, Option<u64>)>,
    /// The steps over the elements a user function made, in order (indices into the
    /// steps): what the engine runs calling back into the caller's language.
    pub elements: Vec<usize>,
    /// Every step after the files are read, as it changes the number of elements.
    counted: Vec<Counted>,
    picks: Picks,
}

#[derive(PartialEq)]
enum Phase {
    Files,
    Records,
    Batched,
    Elements,
}

/// Compiles `steps`; `files_level`: the pipeline starts from file names (`list_files`)
/// and reads them at an `interleave`, rather than from the files' records.
pub fn compile(files_level: bool, steps: &[Step]) -> Result<Compiled, PlanError> {
    let mut c = Compiled {
        files_only: files_level,
        file_ops: Vec::new(),
        interleave: Interleave::default(),
        record_ops: Vec::new(),
        parsing: Parsing::None,
        batch: None,
        batch_bytes: None,
        prefetch: None,
        images: Vec::new(),
        elements: Vec::new(),
        counted: Vec::new(),
        picks: Picks::default(),
    };
    let order = |m: &str| Err(PlanError::Order(m.to_owned()));
    let mut phase = if files_level {
        Phase::Files
    } else {
        Phase::Records
    };
    for (i, step) in steps.iter().enumerate() {
        if phase != Phase::Files {
            c.counted.push(step.counted());
        }
        let picks = matches!(
            step,
            Step::Order(Order::Shard { .. } | Order::Skip(_) | Order::Take(_))
        );
        match (&phase, step) {
            (Phase::Files, Step::Order(o)) => {
                c.file_ops.push(*o);
                if picks {
                    c.picks.files = (c.file_ops.len(), i + 1);
                }
            }
            (Phase::Files, Step::Interleave(il)) => {
                c.picks.read_at = i + 1;
                c.interleave = *il;
                c.files_only = false;
                phase = Phase::Records;
            }
            (Phase::Files, Step::Prefetch(_)) => {}
            (Phase::Files, Step::Cache(_)) => {
                return order("cache() keeps records, not file names")
            }
            (Phase::Files, s) => {
                return Err(PlanError::Order(format!(
                    "{}() needs records, and this dataset holds file names: call \
                     .interleave() first to read the files",
                    s.name()
                )))
            }
            (_, Step::Interleave(_)) => {
                return order("interleave() reads files; this dataset holds records")
            }
            (Phase::Records, Step::Order(o)) => {
                c.record_ops.push(o.record_op());
                if picks {
                    c.picks.records = Some((c.record_ops.len(), c.counted.len(), i + 1));
                }
            }
            (Phase::Records, Step::Cache(cache)) => {
                c.record_ops.push(RecordOp::Cache(Arc::clone(cache)))
            }
            (Phase::Records, Step::Parse(schema)) if c.parsing.is_none() => {
                c.parsing = Parsing::Examples {
                    step: i,
                    schema: Arc::clone(schema),
                }
            }
            (
                Phase::Records,
                Step::ParseSequence {
                    context,
                    lists,
                    batched: false,
                },
            ) if c.parsing.is_none() => {
                c.parsing = Parsing::Sequences {
                    step: i,
                    context: Arc::clone(context),
                    lists: Arc::clone(lists),
                }
            }
            (Phase::Records, Step::Parse(_) | Step::ParseSequence { .. })
                if !c.parsing.is_none() =>
            {
                return order("the records are parsed already")
            }
            (
                Phase::Records,
                Step::Batch {
                    size,
                    drop_remainder,
                    max_bytes,
                },
            ) => {
                c.batch = Some((i, *size, *drop_remainder));
                c.batch_bytes = *max_bytes;
                phase = Phase::Batched;
            }
            (
                Phase::Batched | Phase::Elements,
                Step::Batch {
                    max_bytes: Some(_), ..
                },
            ) => {
                return order(
                    "batch(max_bytes=) ends batches of records by their bytes: it comes \
                     before a map or another batch, not after",
                )
            }
            (Phase::Records | Phase::Batched, Step::DecodeImage { key, spec, seed })
                if matches!(c.parsing, Parsing::Examples { .. }) =>
            {
                c.images.push((i, image_stage(&c, key, spec)?, *seed));
            }
            (Phase::Records, Step::DecodeImage { .. }) if c.parsing.is_none() => {
                return order("decode_image() needs parsed Examples: call .parse() first")
            }
            (Phase::Records | Phase::Batched, Step::Prefetch(n)) => c.prefetch = Some(*n),
            (
                Phase::Batched,
                Step::ParseSequence {
                    context,
                    lists,
                    batched: true,
                },
            ) => {
                if !c.parsing.is_none() {
                    return order("the records are parsed already");
                }
                c.parsing = Parsing::Sequences {
                    step: i,
                    context: Arc::clone(context),
                    lists: Arc::clone(lists),
                };
            }
            (Phase::Batched | Phase::Elements, Step::Parse(_))
                if phase == Phase::Batched || !c.parsing.is_none() =>
            {
                return order("parse() needs unbatched, unparsed records")
            }
            (Phase::Batched | Phase::Elements, Step::DecodeImage { .. }) if c.parsing.is_none() => {
                return order("decode_image() needs parsed Examples: call .parse() first")
            }
            _ => {
                c.elements.push(i);
                if picks {
                    c.picks.elements = Some((c.elements.len(), c.counted.len(), i + 1));
                }
                phase = Phase::Elements;
            }
        }
    }
    Ok(c)
}

impl Parsing {
    fn is_none(&self) -> bool {
        matches!(self, Parsing::None)
    }
}

/// `decode_image(key)` after a parse with a schema: the parsed column it decodes, which
/// must be a `FixedLen([], "bytes")` feature decoded once.
fn image_stage(c: &Compiled, key: &str, spec: &ImageSpec) -> Result<ImageStage, PlanError> {
    let Parsing::Examples { schema, .. } = &c.parsing else {
        unreachable!("images are decoded natively only after a parse of Examples");
    };
    let columns = schema.specs();
    let column = columns.iter().position(|s| s.key == key);
    let feature = match schema.assembly() {
        [] => column,
        assembly => assembly.iter().find_map(|a| match a {
            Assembly::Column(i) if columns[*i].key == key => Some(*i),
            _ => None,
        }),
    };
    let composite = schema.assembly().iter().any(|a| match a {
        Assembly::Sparse { key: k, .. } | Assembly::Ragged { key: k, .. } => k == key,
        Assembly::Column(_) => false,
    });
    let Some(feature) = feature else {
        return Err(PlanError::Value(if composite {
            format!(
                "decode_image({key:?}) needs a FixedLen([], 'bytes') feature, not a composite one"
            )
        } else {
            format!("decode_image({key:?}): the schema has no feature {key:?}")
        }));
    };
    let s = &columns[feature];
    let scalar = matches!(&s.kind, SpecKind::FixedLen { shape } if shape.is_empty());
    if !scalar || s.dtype != DType::Bytes {
        return Err(PlanError::Value(format!(
            "decode_image({key:?}) needs a FixedLen([], 'bytes') feature, not {}",
            describe(&s.kind, s.dtype)
        )));
    }
    if c.images.iter().any(|(_, im, _)| im.feature == feature) {
        return Err(PlanError::Order(format!(
            "feature {key:?} is decoded already"
        )));
    }
    Ok(ImageStage {
        feature,
        spec: spec.clone(),
        seed: 0,
    })
}

fn describe(kind: &SpecKind, dtype: DType) -> String {
    let dtype = dtype.name();
    match kind {
        SpecKind::FixedLen { shape } => format!("FixedLen({shape:?}, {dtype:?})"),
        SpecKind::VarLen => format!("VarLen({dtype:?})"),
        SpecKind::FixedLenSequence { shape, .. } => {
            format!("FixedLenSequence({shape:?}, {dtype:?})")
        }
    }
}

impl Compiled {
    /// Whether the engine parses (Examples or SequenceExamples).
    pub fn parses(&self) -> bool {
        !self.parsing.is_none()
    }

    /// How `count` consumers share a pipeline over `files` files: by files when each
    /// can have some and nothing after the files picks by position; by records when
    /// only the records are picked; otherwise by the elements after the last pick.
    pub fn share(&self, files: usize, count: u64) -> Share {
        let picks = self.picks;
        let (level, whole, element_at) = if let Some((at, _, step)) = picks.elements {
            (Level::Elements, step, at)
        } else if let Some((_, _, step)) = picks.records {
            (Level::Records, step, 0)
        } else {
            let ops: Vec<Counted> = self.file_ops[..picks.files.0]
                .iter()
                .map(|o| o.counted())
                .collect();
            let enough = match count_after(Cardinality::Known(files as u64), &ops) {
                Cardinality::Known(n) => n >= count,
                _ => true,
            };
            if self.files_only || enough {
                (Level::Files, picks.files.1, 0)
            } else {
                (Level::Records, picks.read_at, 0)
            }
        };
        Share {
            level,
            whole,
            element_at,
        }
    }

    /// The file and record stages of one consumer's run, its share in its place.
    fn ops(&self, consumers: Option<Consumers>) -> (Vec<Order>, Vec<RecordOp>) {
        let (mut files, mut records) = (self.file_ops.clone(), self.record_ops.clone());
        match consumers.map(|c| (c, c.level)) {
            Some((c, Level::Files)) => files.insert(self.picks.files.0, c.shard()),
            Some((c, Level::Records)) => {
                let at = self.picks.records.map_or(0, |(at, _, _)| at);
                records.insert(at, c.shard().record_op());
            }
            // Split among the elements, where the caller runs them.
            Some((_, Level::Elements)) | None => {}
        }
        (files, records)
    }

    /// The order in which a run that never reads its files yields their names: indexes
    /// into its `n` files.
    pub fn file_order(&self, n: usize, consumers: Option<Consumers>, epoch: u64) -> FileIter {
        file_order_of(&self.ops(consumers).0, n, epoch)
    }

    /// The engine's plan for `run`.
    pub fn plan(&self, run: Run) -> Plan {
        let (file_ops, record_ops) = self.ops(run.consumers);
        let mut interleave = self.interleave;
        if matches!(run.consumers, Some(c) if c.level != Level::Files) {
            // Consumers splitting records must all see them in the same order.
            interleave.deterministic = true;
        }
        let (schema, lists) = match &self.parsing {
            Parsing::None => (None, None),
            Parsing::Examples { schema, .. } => (Some(Arc::clone(schema)), None),
            Parsing::Sequences { context, lists, .. } => {
                (Some(Arc::clone(context)), Some(Arc::clone(lists)))
            }
        };
        let sequences = schema.as_ref().is_some_and(|s| {
            s.specs()
                .iter()
                .any(|f| matches!(f.kind, SpecKind::FixedLenSequence { .. }))
        });
        let batched = self.batch.is_some();
        let own_shape = self
            .images
            .iter()
            .any(|(_, im, _)| im.spec.size.is_none() || im.spec.channels == 0);
        let unit = match self.batch {
            Some((_, size, _)) => size,
            // Sequence features are padded to their unit's longest, and images that keep
            // their own shape cannot share an array: one record per unit.
            None if sequences || own_shape => 1,
            None => UNIT,
        };
        // Batches cut apart again after parsing: ones that `refill` may join and cut
        // anyway, and no images, whose decoding is spread over workers a unit at a time.
        let refill = batched && !sequences && lists.is_none() && self.batch_bytes.is_none();
        let unit_batches = if refill && self.images.is_empty() {
            (UNIT_RECORDS / unit.max(1)).max(1)
        } else {
            1
        };
        // The consuming thread parses too; extra workers pay off past two cores. Image
        // decoding is heavy enough for a worker per core, leaving the consumer free, and
        // SequenceExamples get two even on two cores: their parse, not the consumer's
        // layout of their feature lists, is what a pipeline of them waits on.
        let cpus = run.cpus.max(1);
        let least = if lists.is_some() { cpus.min(2) } else { 0 };
        let parse_workers = if self.images.is_empty() {
            cpus.saturating_sub(2).max(least).min(4)
        } else {
            cpus
        };
        Plan {
            files: run.files,
            read: run.read,
            file_ops,
            cycle_length: interleave.cycle_length,
            block_length: interleave.block_length,
            parallel_reads: interleave.parallel_reads,
            deterministic: interleave.deterministic,
            record_ops,
            batch_size: unit,
            unit_batches,
            drop_remainder: self.batch.is_some_and(|(_, _, drop)| drop),
            // Units of a plan that does not batch are the engine's own: cut as suits it.
            batch_bytes: self
                .batch_bytes
                .unwrap_or(if batched { usize::MAX } else { UNIT_BYTES }),
            // Sequence batches are padded to their own longest row, and batches cut by
            // their bytes are short on purpose: neither is joined up again.
            refill,
            schema,
            feature_lists: lists,
            parse_workers,
            prefetch: self.prefetch.unwrap_or(2),
            on_error: run.on_error,
            epoch: run.epoch,
            images: self
                .images
                .iter()
                .map(|(_, im, seed)| ImageStage {
                    seed: seed.unwrap_or_else(|| fastrand::u64(..)),
                    ..im.clone()
                })
                .collect(),
        }
    }

    /// How many elements one pass yields (tf.data's `cardinality()`), from `files` files
    /// and `counts()`, each file's record count where known without reading it (asked
    /// for only when the answer needs it). With `skips`, damaged records may be skipped,
    /// so a count of records is unknown.
    pub fn cardinality(
        &self,
        files: usize,
        consumers: Option<Consumers>,
        skips: bool,
        counts: impl FnOnce() -> Vec<Option<u64>>,
    ) -> Cardinality {
        let (file_ops, _) = self.ops(consumers);
        let mut counted = self.counted.clone();
        let at = match (consumers.map(|c| c.level), self.picks) {
            (Some(Level::Records), Picks { records, .. }) => records.map(|(_, at, _)| at),
            (Some(Level::Elements), Picks { elements, .. }) => elements.map(|(_, at, _)| at),
            _ => None,
        };
        if let Some(c) = consumers.filter(|c| c.level != Level::Files) {
            counted.insert(at.unwrap_or(0), c.shard().counted());
        }
        if self.files_only {
            let picks: Vec<Counted> = file_ops.iter().map(|o| o.counted()).collect();
            return count_after(Cardinality::Known(files as u64), &picks);
        }
        let n = match picked_records(&file_ops, files, counts) {
            Cardinality::Known(_) if skips => Cardinality::Unknown,
            n => n,
        };
        count_after(n, &counted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature_lists::{ListKind, ListSpec};
    use crate::parse::FeatureSpec;

    fn schema(specs: &[(&str, DType, SpecKind)]) -> Arc<Schema> {
        let specs = specs
            .iter()
            .map(|(key, dtype, kind)| FeatureSpec {
                key: (*key).to_owned(),
                dtype: *dtype,
                kind: kind.clone(),
                default: None,
            })
            .collect();
        Arc::new(Schema::new(specs).unwrap())
    }

    fn image_schema() -> Arc<Schema> {
        schema(&[
            ("image", DType::Bytes, SpecKind::FixedLen { shape: vec![] }),
            ("label", DType::Int64, SpecKind::FixedLen { shape: vec![] }),
            ("tags", DType::Bytes, SpecKind::VarLen),
        ])
    }

    fn image(key: &str) -> Step {
        Step::DecodeImage {
            key: key.to_owned(),
            spec: ImageSpec {
                size: Some((8, 8)),
                ..ImageSpec::default()
            },
            seed: Some(0),
        }
    }

    fn shuffle() -> Step {
        Step::Order(Order::Shuffle {
            buffer: 4,
            seed: Some(1),
        })
    }

    fn batch(size: usize) -> Step {
        Step::Batch {
            size,
            drop_remainder: false,
            max_bytes: None,
        }
    }

    fn bytes_batch(size: usize, max_bytes: usize) -> Step {
        Step::Batch {
            size,
            drop_remainder: false,
            max_bytes: Some(max_bytes),
        }
    }

    #[test]
    fn a_batch_cut_by_bytes_reaches_the_plan_and_leaves_the_count_unknown() {
        let c = compile(false, &[bytes_batch(8, 1 << 20)]).unwrap();
        let plan = c.plan(run());
        assert_eq!((plan.batch_size, plan.batch_bytes), (8, 1 << 20));
        assert!(!plan.refill, "short units are short on purpose");
        assert_eq!(
            c.cardinality(3, None, false, || vec![Some(10); 3]),
            Cardinality::Unknown
        );
        let c = compile(false, &[batch(8)]).unwrap();
        assert_eq!(c.plan(run()).batch_bytes, usize::MAX);
        // Unbatched, the engine's units are bounded in bytes of its own accord.
        let c = compile(false, &[]).unwrap();
        let plan = c.plan(run());
        assert_eq!((plan.batch_size, plan.batch_bytes), (UNIT, UNIT_BYTES));
    }

    #[test]
    fn small_batches_travel_several_to_a_unit_unless_images_or_bytes_cut_them() {
        let parse = Step::Parse(image_schema());
        let unit_batches = |steps: &[Step]| compile(false, steps).unwrap().plan(run()).unit_batches;
        assert_eq!(
            unit_batches(&[parse.clone(), batch(128)]),
            UNIT_RECORDS / 128
        );
        assert_eq!(unit_batches(&[parse.clone(), batch(1000)]), 2);
        assert_eq!(unit_batches(&[parse.clone(), batch(5000)]), 1);
        assert_eq!(unit_batches(&[parse.clone(), bytes_batch(8, 1 << 20)]), 1);
        assert_eq!(unit_batches(&[parse.clone(), image("image"), batch(8)]), 1);
        assert_eq!(
            unit_batches(&[parse, Step::Map, batch(8)]),
            1,
            "batched after a map"
        );
        assert_eq!(unit_batches(&[sequences(true), batch(8)]), 1);
    }

    fn interleave() -> Step {
        Step::Interleave(Interleave {
            cycle_length: 2,
            block_length: 3,
            deterministic: false,
            parallel_reads: 1,
        })
    }

    fn sequences(batched: bool) -> Step {
        Step::ParseSequence {
            context: schema(&[]),
            lists: Arc::new(
                ListSchema::new(vec![ListSpec {
                    key: "steps".to_owned(),
                    dtype: DType::Float32,
                    kind: ListKind::Var,
                }])
                .unwrap(),
            ),
            batched,
        }
    }

    fn run() -> Run {
        Run {
            files: vec!["a".into(), "b".into(), "c".into()],
            read: ReadOptions::default(),
            on_error: OnError::Stop,
            consumers: None,
            epoch: 7,
            cpus: 2,
        }
    }

    fn order_error(files_level: bool, steps: &[Step]) -> String {
        match compile(files_level, steps) {
            Err(PlanError::Order(m)) => m,
            Err(e) => panic!("a ValueError, not a TypeError: {e}"),
            Ok(_) => panic!("compiled"),
        }
    }

    #[test]
    fn stages_are_sorted_into_the_engine_and_the_elements_after_a_map() {
        let steps = [
            shuffle(),
            interleave(),
            shuffle(),
            Step::Cache(Arc::new(Cache::memory())),
            Step::Parse(image_schema()),
            image("image"),
            batch(32),
            Step::Prefetch(5),
            Step::Map,
            shuffle(),
            batch(2),
        ];
        let c = compile(true, &steps).unwrap();
        assert!(!c.files_only);
        assert_eq!(c.file_ops.len(), 1);
        assert_eq!(c.interleave.cycle_length, 2);
        assert_eq!(c.record_ops.len(), 2);
        assert!(matches!(c.parsing, Parsing::Examples { step: 4, .. }));
        assert_eq!(c.images.len(), 1);
        assert_eq!(c.images[0].0, 5);
        assert_eq!(c.batch, Some((6, 32, false)));
        assert_eq!(c.prefetch, Some(5));
        assert_eq!(c.elements, vec![8, 9, 10]);
        let plan = c.plan(run());
        assert_eq!(plan.batch_size, 32);
        assert!(plan.refill);
        assert_eq!(plan.epoch, 7);
        assert_eq!(plan.prefetch, 5);
        assert_eq!(plan.images.len(), 1);
        assert_eq!(plan.parse_workers, 2, "a worker per core decodes images");
        assert!(!plan.deterministic);
    }

    #[test]
    fn file_names_alone_are_never_read() {
        let c = compile(true, &[shuffle(), Step::Prefetch(2)]).unwrap();
        assert!(c.files_only);
        assert_eq!(c.file_ops.len(), 1);
        let picked: Vec<usize> = c.file_order(3, None, 0).collect();
        let mut sorted = picked.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2]);
        let two = Consumers {
            count: 2,
            index: 1,
            level: Level::Files,
        };
        assert_eq!(c.file_order(3, Some(two), 0).count(), 1);
        assert_eq!(
            c.cardinality(3, Some(two), false, || unreachable!()),
            Cardinality::Known(1)
        );
        assert_eq!(
            c.cardinality(3, None, false, || unreachable!()),
            Cardinality::Known(3)
        );
    }

    #[test]
    fn a_stage_that_cannot_follow_its_predecessor_is_refused() {
        let cases: Vec<(bool, Vec<Step>, &str)> = vec![
            (
                true,
                vec![Step::Parse(image_schema())],
                "parse() needs records, and this dataset holds file names",
            ),
            (true, vec![Step::Map], "map() needs records"),
            (
                true,
                vec![Step::Cache(Arc::new(Cache::memory()))],
                "cache() keeps records, not file names",
            ),
            (false, vec![interleave()], "interleave() reads files"),
            (
                true,
                vec![interleave(), Step::Map, interleave()],
                "interleave() reads files",
            ),
            (
                false,
                vec![Step::Parse(image_schema()), Step::Parse(image_schema())],
                "parsed already",
            ),
            (
                false,
                vec![sequences(false), Step::Parse(image_schema())],
                "parsed already",
            ),
            (
                false,
                vec![Step::Parse(image_schema()), batch(2), sequences(true)],
                "parsed already",
            ),
            (
                false,
                vec![batch(2), Step::Parse(image_schema())],
                "parse() needs unbatched, unparsed records",
            ),
            (
                false,
                vec![
                    Step::Parse(image_schema()),
                    Step::Map,
                    Step::Parse(image_schema()),
                ],
                "parse() needs unbatched",
            ),
            (
                false,
                vec![image("image")],
                "decode_image() needs parsed Examples",
            ),
            (
                false,
                vec![batch(2), image("image")],
                "decode_image() needs parsed Examples",
            ),
            (
                false,
                vec![Step::Map, image("image")],
                "decode_image() needs parsed Examples",
            ),
            (
                false,
                vec![Step::Parse(image_schema()), image("image"), image("image")],
                "feature \"image\" is decoded already",
            ),
            (
                false,
                vec![Step::Map, bytes_batch(4, 100)],
                "batch(max_bytes=) ends batches of records",
            ),
            (
                false,
                vec![batch(2), bytes_batch(4, 100)],
                "batch(max_bytes=) ends batches of records",
            ),
        ];
        for (files_level, steps, wanted) in cases {
            let got = order_error(files_level, &steps);
            assert!(got.contains(wanted), "{got:?} does not say {wanted:?}");
        }
    }

    #[test]
    fn decode_image_needs_a_scalar_bytes_feature_of_the_schema() {
        for (key, wanted) in [
            ("nope", "the schema has no feature \"nope\""),
            ("label", "not FixedLen([], \"int64\")"),
            ("tags", "not VarLen(\"bytes\")"),
        ] {
            match compile(false, &[Step::Parse(image_schema()), image(key)]) {
                Err(PlanError::Value(m)) => assert!(m.contains(wanted), "{m}"),
                _ => panic!("decode_image({key:?}) compiled"),
            }
        }
        let c = compile(false, &[Step::Parse(image_schema()), image("image")]).unwrap();
        assert_eq!(c.images[0].1.feature, 0);
    }

    #[test]
    fn sequences_parse_natively_before_or_right_after_a_batch() {
        let c = compile(false, &[sequences(false)]).unwrap();
        assert!(matches!(c.parsing, Parsing::Sequences { step: 0, .. }));
        let plan = c.plan(run());
        assert_eq!(
            plan.parse_workers, 2,
            "two workers parse SequenceExamples on two cores"
        );
        assert!(plan.feature_lists.is_some());
        assert_eq!(plan.batch_size, UNIT);
        let c = compile(false, &[batch(8), sequences(true), Step::Map]).unwrap();
        assert!(matches!(c.parsing, Parsing::Sequences { step: 1, .. }));
        assert_eq!(c.elements, vec![2]);
        assert!(
            !c.plan(run()).refill,
            "sequence batches are padded to their own longest"
        );
        // After a map they are the caller's to parse.
        let c = compile(false, &[Step::Map, sequences(false)]).unwrap();
        assert!(!c.parses());
        assert_eq!(c.elements, vec![0, 1]);
    }

    #[test]
    fn one_record_per_unit_where_records_cannot_share_an_array() {
        let seq = schema(&[(
            "s",
            DType::Int64,
            SpecKind::FixedLenSequence {
                shape: vec![],
                allow_missing: true,
            },
        )]);
        let plan = compile(false, &[Step::Parse(seq)]).unwrap().plan(run());
        assert_eq!(plan.batch_size, 1);
        let own = Step::DecodeImage {
            key: "image".into(),
            spec: ImageSpec::default(),
            seed: None,
        };
        let plan = compile(false, &[Step::Parse(image_schema()), own])
            .unwrap()
            .plan(run());
        assert_eq!(plan.batch_size, 1);
        let plan = compile(false, &[Step::Parse(image_schema())])
            .unwrap()
            .plan(run());
        assert_eq!((plan.batch_size, plan.parse_workers), (UNIT, 0));
    }

    #[test]
    fn a_consumer_runs_its_share_first() {
        let c = compile(true, &[interleave(), shuffle()]).unwrap();
        let by_records = Consumers {
            count: 4,
            index: 3,
            level: Level::Records,
        };
        let plan = c.plan(Run {
            consumers: Some(by_records),
            ..run()
        });
        assert!(
            plan.deterministic,
            "consumers splitting records see one order"
        );
        assert!(matches!(
            plan.record_ops[0],
            RecordOp::Shard {
                num_shards: 4,
                index: 3
            }
        ));
        let counts = || vec![Some(10), Some(10), Some(5)];
        assert_eq!(
            c.cardinality(3, Some(by_records), false, counts),
            Cardinality::Known(6)
        );
        assert_eq!(
            c.cardinality(3, Some(by_records), true, counts),
            Cardinality::Unknown
        );
        let by_files = Consumers {
            count: 2,
            index: 0,
            level: Level::Files,
        };
        let plan = c.plan(Run {
            consumers: Some(by_files),
            ..run()
        });
        assert!(matches!(
            plan.file_ops[0],
            Order::Shard {
                num_shards: 2,
                index: 0
            }
        ));
        assert_eq!(
            c.cardinality(3, Some(by_files), false, counts),
            Cardinality::Known(15)
        );
    }

    #[test]
    fn consumers_split_after_the_last_pick() {
        let take = |n| Step::Order(Order::Take(n));
        let skip = |n| Step::Order(Order::Skip(n));
        let share = |files_level, steps: &[Step], files, count| {
            compile(files_level, steps).unwrap().share(files, count)
        };
        let at = |level, whole, element_at| Share {
            level,
            whole,
            element_at,
        };
        // Nothing picked: the files when each consumer can have one.
        let plain = [interleave(), shuffle()];
        assert_eq!(share(true, &plain, 4, 4), at(Level::Files, 0, 0));
        assert_eq!(share(true, &plain, 3, 4), at(Level::Records, 1, 0));
        assert_eq!(share(false, &[shuffle()], 3, 4), at(Level::Records, 0, 0));
        // Files skipped: what is left is shared, after the skip.
        let skipped = [shuffle(), skip(1), interleave()];
        assert_eq!(share(true, &skipped, 5, 4), at(Level::Files, 2, 0));
        assert_eq!(share(true, &skipped, 4, 4), at(Level::Records, 3, 0));
        // Records taken: every consumer reads the records the take keeps.
        let taken = [interleave(), shuffle(), take(7), shuffle()];
        assert_eq!(share(true, &taken, 8, 4), at(Level::Records, 3, 0));
        // A pick after a batch or a map: the elements are split after it.
        let late = [batch(2), Step::Map, take(3), Step::Map];
        assert_eq!(share(false, &late, 8, 2), at(Level::Elements, 3, 2));
        // Names only: split by files, whatever their number.
        assert_eq!(share(true, &[take(2)], 2, 4), at(Level::Files, 1, 0));

        let c = compile(true, &taken).unwrap();
        let consumers = Some(Consumers {
            count: 4,
            index: 1,
            level: Level::Records,
        });
        let plan = c.plan(Run { consumers, ..run() });
        assert!(matches!(plan.record_ops[1], RecordOp::Take(7)));
        assert!(matches!(
            plan.record_ops[2],
            RecordOp::Shard {
                num_shards: 4,
                index: 1
            }
        ));
        let counts = || vec![Some(10), Some(10), Some(10)];
        assert_eq!(
            c.cardinality(3, consumers, false, counts),
            Cardinality::Known(2)
        );
        let c = compile(false, &[batch(2), take(5), Step::Map]).unwrap();
        let consumers = Some(Consumers {
            count: 2,
            index: 0,
            level: Level::Elements,
        });
        let plan = c.plan(Run { consumers, ..run() });
        assert!(plan.record_ops.is_empty(), "the engine reads every record");
        assert_eq!(
            c.cardinality(3, consumers, false, counts),
            Cardinality::Known(3)
        );
    }

    #[test]
    fn cardinality_follows_every_stage_in_order() {
        let steps = [
            Step::Parse(image_schema()),
            Step::Order(Order::Take(25)),
            batch(10),
            Step::Map,
            Step::Order(Order::Repeat(Some(3))),
        ];
        let c = compile(false, &steps).unwrap();
        let counts = || vec![Some(10), Some(20), None];
        assert_eq!(c.cardinality(3, None, false, counts), Cardinality::Unknown);
        let counts = || vec![Some(10), Some(20), Some(0)];
        assert_eq!(c.cardinality(3, None, false, counts), Cardinality::Known(9));
        let filtered = compile(false, &[Step::Filter, batch(2)]).unwrap();
        assert_eq!(
            filtered.cardinality(1, None, false, || vec![Some(4)]),
            Cardinality::Unknown
        );
        let endless = compile(
            false,
            &[
                Step::Order(Order::Repeat(None)),
                Step::Order(Order::Take(7)),
            ],
        )
        .unwrap();
        assert_eq!(
            endless.cardinality(1, None, false, || vec![None]),
            Cardinality::Known(7)
        );
    }
}
