//! The thread pool's share of a batch: whether this process may use the pool, and how a
//! run of work is split across it.

use std::ops::Range;
use std::sync::OnceLock;

/// The process that first used the thread pool. A forked child (a PyTorch DataLoader
/// worker, say) inherits the pool's state but not its threads, so it parses inline.
static POOL_OWNER: OnceLock<u32> = OnceLock::new();

pub(crate) fn pool_usable() -> bool {
    *POOL_OWNER.get_or_init(std::process::id) == std::process::id()
        && rayon::current_num_threads() > 1
}

/// `f` over the ranges that split `0..n` into one part per thread of the pool, in order.
/// The calling thread runs the first part while the pool runs the others: it works
/// instead of waiting, and nothing waits on a pool thread that is slow to wake.
pub(crate) fn split_run<R: Send>(n: usize, f: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    let chunk = n.div_ceil(rayon::current_num_threads().max(1)).max(1);
    let mut parts: Vec<Range<usize>> = (0..n)
        .step_by(chunk)
        .map(|start| start..(start + chunk).min(n))
        .collect();
    if parts.len() <= 1 {
        return vec![f(0..n)];
    }
    let first = parts.remove(0);
    let mut rest: Vec<Option<R>> = parts.iter().map(|_| None).collect();
    let mut head = None;
    rayon::in_place_scope(|scope| {
        let f = &f;
        for (slot, part) in rest.iter_mut().zip(parts) {
            scope.spawn(move |_| *slot = Some(f(part)));
        }
        head = Some(f(first));
    });
    head.into_iter()
        .chain(rest.into_iter().map(|r| r.expect("each part is run")))
        .collect()
}
