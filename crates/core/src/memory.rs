//! How the process's allocator treats the buffers of large records.
//!
//! glibc hands memory at the top of its heap back to the OS as soon as more than 128 KiB
//! of it is free, and serves each allocation of 128 KiB or more with a fresh `mmap`. A
//! reader of large records allocates and frees megabytes per batch (the `bytes` objects
//! of `read_batches`, the Arrow columns of `read_arrow`), so with those defaults every
//! batch lands in pages just mapped for it, and the kernel zeroes each one first: lists
//! of 100 KB `bytes` are made at 3 GB/s instead of 75. glibc itself raises both limits
//! (to at most 32 MiB and 64 MiB) once the program frees a large mapped block; readers
//! set them there when they first meet a large record, parsers when they first parse a
//! batch whose columns are that large (a batch of SequenceExamples, padded to its
//! longest, makes a fresh array of a few hundred KiB per feature list), and writers when
//! they first encode a chunk of a table that large. A program that sets its own limits
//! (`GLIBC_TUNABLES=glibc.malloc...` or `MALLOC_*_` variables) keeps them, and
//! `TFRECORDKIT_MALLOC=system` leaves glibc's defaults in place.

/// Up to this size, blocks come from the heap and are reused once freed.
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Free memory at the heap's top kept for the next batch, up to this much.
pub const TRIM_THRESHOLD: usize = 64 << 20;

/// Buffers of at least this many bytes are ones glibc, by default, maps afresh each time.
pub const LARGE_BUFFER: usize = 128 << 10;

/// [`keep_freed_buffers`] once a batch works through `bytes` bytes: its records, or what
/// it encodes.
pub fn keep_freed_buffers_for(bytes: usize) {
    if bytes >= LARGE_BUFFER {
        keep_freed_buffers();
    }
}

/// Keeps freed buffers of up to [`MMAP_THRESHOLD`] bytes for reuse, once per process
/// (glibc only; elsewhere, and where the program chose its own limits, nothing changes).
pub fn keep_freed_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            if own_limits() {
                return;
            }
            // SAFETY: mallopt takes the allocator's lock; both values are within the
            // bounds glibc accepts (it refuses, and changes nothing, otherwise).
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int);
            }
        });
    }
}

/// Whether the program has said when its allocator maps or gives back memory.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn own_limits() -> bool {
    const LIMITS: [&str; 4] = ["trim_threshold", "mmap_threshold", "top_pad", "mmap_max"];
    let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    var("TFRECORDKIT_MALLOC").is_some_and(|v| v == "system")
        || var("GLIBC_TUNABLES").is_some_and(|v| {
            LIMITS
                .iter()
                .any(|l| v.contains(&format!("glibc.malloc.{l}")))
        })
        || LIMITS
            .iter()
            .any(|l| var(&format!("MALLOC_{}_", l.to_uppercase())).is_some())
}
