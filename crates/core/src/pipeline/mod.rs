//! A streaming input pipeline on native threads: files → interleave → record stages →
//! batches → parse, with bounded queues between the threads.
//!
//! Reader threads read, decompress and check records, one per open file, and hand them
//! on in chunks. One pipeline thread runs the interleave and the record stages (shard,
//! skip, take, cache, shuffle, repeat) and cuts batches; parse workers turn batches into
//! columns. The consumer receives finished units in order: at most `prefetch` ready
//! ahead of it, and one more in the making on each parse worker.
//! Memory stays bounded by the queues and the buffers the plan asks for (a shuffle
//! buffer, a cache), whatever the size of the files.

mod cache;
pub mod cardinality;
pub mod compile;
mod element_stream;
mod element_threads;
pub mod elements;
mod files;
mod order;
mod origin;
mod plan;
mod readers;
mod refill;
mod shuffle;
mod stages;
mod stream;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
mod units;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};

use crate::batch::RecordBatch;
use crate::error::{Error, Result};
use crate::feature_lists::ListSchema;
use crate::image::PixelPool;
use crate::parse::Schema;
use crate::source::SharedOpener;

pub use cache::Cache;
pub use files::file_order_of;
pub use order::Order;
pub use origin::{mix_seed, record_key, Origin};
pub use plan::{ImageStage, Plan, RecordOp};
pub use readers::OnError;
pub use units::{parsed_columns, Decoded, Item, Payload};

use readers::{spawn, Files, Permits};
use refill::Refill;
use stages::build;
use units::{keys_of, parse_unit, Unit, Work};

/// A running pipeline. Dropping it stops its threads.
pub struct Pipeline {
    plan: Arc<Plan>,
    files: Arc<Files>,
    output: Receiver<Unit>,
    ready: std::collections::VecDeque<Item>,
    /// Items re-cut to full units, ready for the consumer.
    out: std::collections::VecDeque<Item>,
    refill: Option<Refill>,
    done: bool,
    stop: Arc<AtomicBool>,
    producer: Option<thread::JoinHandle<()>>,
    pool: Arc<PixelPool>,
}

impl Pipeline {
    /// Where the buffers of decoded image batches go back to once they are freed.
    pub fn pixel_pool(&self) -> Arc<PixelPool> {
        Arc::clone(&self.pool)
    }

    /// The schema the pipeline parses with, if it parses.
    pub fn schema(&self) -> Option<&Schema> {
        self.plan.schema.as_deref()
    }

    /// The feature lists the pipeline parses, if it parses SequenceExamples.
    pub fn feature_lists(&self) -> Option<&ListSchema> {
        self.plan.feature_lists.as_deref()
    }

    /// Starts the threads of `plan`. `opener` reads paths that are not local files.
    ///
    /// With a schema and `parse_workers == 0`, batches are parsed by the thread that
    /// calls [`Pipeline::next_item`], in parallel with the pipeline thread.
    pub fn start(plan: Plan, opener: SharedOpener) -> Result<Pipeline> {
        if plan.files.len() > u32::MAX as usize - 1 {
            return Err(Error::invalid("too many files for one pipeline"));
        }
        let files = Arc::new(Files {
            paths: plan.files.clone(),
            read: plan.read,
            opener,
            on_error: plan.on_error,
            permits: (plan.parallel_reads > 0).then(|| Permits::new(plan.parallel_reads)),
        });
        let plan = Arc::new(plan);
        let workers = if plan.schema.is_some() {
            plan.parse_workers
        } else {
            0
        };
        // A unit a worker is parsing is not yet ready: `prefetch` units may wait ready for
        // the consumer while every worker parses one more.
        let (out_tx, out_rx) = bounded(plan.prefetch.max(1) + workers);
        let (work_tx, work_rx) = bounded::<Work>(workers.max(1));
        let pool = Arc::new(PixelPool::default());
        for _ in 0..workers {
            let rx = work_rx.clone();
            let plan = Arc::clone(&plan);
            let files = Arc::clone(&files);
            let pool = Arc::clone(&pool);
            spawn("tfr-parse", move || {
                for work in rx {
                    let items = Error::catch("a parse thread", || {
                        parse_unit(&plan, &files, &pool, work.batch, &work.origins)
                    })
                    .unwrap_or_else(|e| vec![Err(e)]);
                    let _ = work.reply.send(items);
                }
            });
        }
        let work_tx = (workers > 0).then_some(work_tx);
        let (producer_plan, producer_files) = (Arc::clone(&plan), Arc::clone(&files));
        let producer_pool = Arc::clone(&pool);
        let stop = Arc::new(AtomicBool::new(false));
        let producer_stop = Arc::clone(&stop);
        let producer = spawn("tfr-pipeline", move || {
            crate::cancel::stop_on(&producer_stop);
            let run = Error::catch("the pipeline thread", || {
                produce(
                    &producer_plan,
                    &producer_files,
                    &out_tx,
                    work_tx.as_ref(),
                    &producer_pool,
                    &producer_stop,
                )
            });
            if let Err(e) = run {
                let _ = out_tx.send(Unit::Ready(vec![Err(e)]));
            }
        });
        let refill = refills(&plan).then(|| {
            Refill::new(
                plan.batch_size,
                plan.drop_remainder,
                plan.on_error == OnError::Stop,
            )
        });
        Ok(Pipeline {
            plan,
            files,
            output: out_rx,
            ready: Default::default(),
            out: Default::default(),
            refill,
            done: false,
            stop,
            producer: Some(producer),
            pool,
        })
    }

    /// The next item, or `None` at the end. Blocks until one is ready. With
    /// `OnError::Stop`, an error is the last item.
    pub fn next_item(&mut self) -> Option<Item> {
        let item = match self.refill.take() {
            None => self.next_unit(),
            Some(mut refill) => {
                let item = loop {
                    if let Some(item) = self.out.pop_front() {
                        break Some(item);
                    }
                    match self.next_unit() {
                        Some(item) => refill.push(item, &mut self.out),
                        None => break refill.finish(),
                    }
                };
                self.refill = Some(refill);
                item
            }
        };
        if matches!(item, Some(Err(_))) && self.plan.on_error == OnError::Stop {
            self.close();
        }
        item
    }

    /// The next unit as the workers made it; a wait given up (see [`crate::cancel`]) is
    /// an error in its place.
    fn next_unit(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            let unit = match crate::cancel::recv(&self.output) {
                Ok(unit) => unit,
                Err(e) => return Some(Err(e)),
            };
            match unit {
                Some(Unit::Ready(items)) => self.ready.extend(items),
                Some(Unit::Pending(reply)) => match crate::cancel::recv(&reply) {
                    Ok(Some(items)) => self.ready.extend(items),
                    Ok(None) => self.done = true,
                    Err(e) => return Some(Err(e)),
                },
                Some(Unit::Unparsed(batch, origins)) => {
                    let items = parse_unit(&self.plan, &self.files, &self.pool, batch, &origins);
                    self.ready.extend(items);
                }
                None => self.done = true,
            }
        }
    }
}

/// Whether the consumer cuts parsed units into batches: units of several batches, and
/// units left short by records skipped under `OnError::Continue`.
fn refills(plan: &Plan) -> bool {
    plan.schema.is_some()
        && plan.refill
        && (plan.unit_batches > 1 || plan.on_error == OnError::Continue)
}

impl Pipeline {
    /// Stops the pipeline and waits for its threads to let go of their files (and to
    /// remove a cache file left half written).
    pub fn close(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.output = crossbeam_channel::never();
        self.ready.clear();
        self.out.clear();
        self.refill = None;
        self.done = true;
        if let Some(producer) = self.producer.take() {
            let _ = producer.join();
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The pipeline thread: runs the record stages and cuts units. Without parse workers, a
/// unit is left for the consumer to parse, unless `prefetch` units already wait for it:
/// then the consumer is the slower, and this thread parses the unit while it waits for
/// room.
fn produce(
    plan: &Arc<Plan>,
    files: &Arc<Files>,
    out: &Sender<Unit>,
    work: Option<&Sender<Work>>,
    pool: &PixelPool,
    stop: &AtomicBool,
) {
    let mut stream = match build(plan, files, plan.record_ops.len(), plan.epoch) {
        Ok(s) => s,
        Err(e) => {
            let _ = out.send(Unit::Ready(vec![Err(e)]));
            return;
        }
    };
    let size = plan.batch_size.max(1);
    let refilled = refills(plan);
    let several = refilled && plan.unit_batches > 1;
    let unit = if several {
        size.saturating_mul(plan.unit_batches)
    } else {
        size
    };
    // A last short unit may still fill a batch when records before it were skipped: the
    // remainder is dropped after re-cutting, not here.
    let drop_remainder = plan.drop_remainder && !refilled;
    let emit = |batch: RecordBatch, origins: Vec<Origin>| -> bool {
        if plan.schema.is_none() {
            let keys = keys_of(&origins);
            return out
                .send(Unit::Ready(vec![Ok(Payload::Records(batch, keys))]))
                .is_ok();
        }
        let Some(work) = work else {
            return match out.try_send(Unit::Unparsed(batch, origins)) {
                Ok(()) => true,
                Err(TrySendError::Full(Unit::Unparsed(batch, origins))) => {
                    let items = parse_unit(plan, files, pool, batch, &origins);
                    out.send(Unit::Ready(items)).is_ok()
                }
                Err(_) => false,
            };
        };
        let (reply, rx) = bounded(1);
        out.send(Unit::Pending(rx)).is_ok()
            && work
                .send(Work {
                    batch,
                    origins,
                    reply,
                })
                .is_ok()
    };
    let mut batch = RecordBatch::default();
    let mut origins = Vec::with_capacity(unit.min(1 << 16));
    let mut held = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match stream.next_into(&mut batch.data, &mut held) {
            Ok(Some(origin)) => {
                match held.take() {
                    // A large record stays in the buffer it was read into.
                    Some(record) => batch.push_held(record),
                    None => batch.ends.push(batch.data.len()),
                }
                origins.push(origin);
                let n = origins.len();
                if n == unit
                    || batch.bytes() >= plan.batch_bytes
                    || several && batch.bytes() >= compile::SEVERAL_BYTES && n % size == 0
                {
                    // The next batch starts with room for as many bytes in `data` as
                    // this one had.
                    let next = RecordBatch {
                        data: Vec::with_capacity(batch.data.len() + batch.data.len() / 4),
                        ends: Vec::with_capacity(n),
                        ..RecordBatch::default()
                    };
                    let full = std::mem::replace(&mut batch, next);
                    let done = std::mem::replace(&mut origins, Vec::with_capacity(n));
                    if !emit(full, done) {
                        return;
                    }
                }
            }
            Ok(None) => {
                if !origins.is_empty() && !drop_remainder {
                    emit(batch, origins);
                }
                return;
            }
            Err(e) => {
                // Bytes a failed read left behind are not a record.
                batch.data.truncate(batch.ends.last().copied().unwrap_or(0));
                if plan.on_error == OnError::Stop {
                    // Records read before the damage are not lost: they go out first.
                    if !origins.is_empty() && !drop_remainder && !emit(batch, origins) {
                        return;
                    }
                    let _ = out.send(Unit::Ready(vec![Err(e)]));
                    return;
                }
                // The unit being cut goes on filling after the error.
                if out.send(Unit::Ready(vec![Err(e)])).is_err() {
                    return;
                }
            }
        }
    }
}
