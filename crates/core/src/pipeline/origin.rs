//! Where a record came from, and the seeds drawn from it and from a plan's seeds.

/// Where a record came from: its file (an index into the plan's file list), its index in
/// that file, and the byte offset of its header; `pass` tells apart the passes of a
/// `repeat` over it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    pub file: u32,
    pub pass: u32,
    pub index: u64,
    pub offset: u64,
}

/// Mixes two values into a well-spread seed: how the pipeline seeds its shuffles and
/// its per-record image augmentation.
pub fn mix_seed(a: u64, b: u64) -> u64 {
    mix(a, b)
}

/// A record's key: its file, pass and index mixed into one value. Image augmentation is
/// seeded by it, so a record is augmented alike wherever a shuffle puts it.
pub fn record_key(o: &Origin) -> u64 {
    mix(((o.file as u64) << 32) | o.pass as u64, o.index)
}

pub(crate) fn mix(a: u64, b: u64) -> u64 {
    // splitmix64 of the combination: well spread seeds from small counters.
    let mut z = a ^ b
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A shuffle's generator: seeded by `seed` and `salt`, or at random.
pub(crate) fn rng_for(seed: Option<u64>, salt: u64) -> fastrand::Rng {
    match seed {
        Some(s) => fastrand::Rng::with_seed(mix(s, salt)),
        None => fastrand::Rng::new(),
    }
}
