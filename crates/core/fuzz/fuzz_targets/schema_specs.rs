//! Schemas built from arbitrary bytes (keys, dtypes, kinds, shapes up to 2^63 per
//! dimension, defaults of any length, nullable features), then a parse of the records
//! that follow: no panic, no abort, no allocation a schema's claim sizes past the
//! documented bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrecordkit_core::{parse_examples, Column, DType, FeatureSpec, Schema, SpecKind};

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    /// A dimension: small, a power of two, or near the top of the range.
    fn dim(&mut self) -> usize {
        match self.next() {
            b @ 0xF0.. => usize::MAX >> (b - 0xF0),
            b @ 0x80.. => 1usize << (b & 0x3F),
            b => b as usize,
        }
    }
}

fn spec(b: &mut Bytes<'_>) -> FeatureSpec {
    let key = format!("k{}", b.next() % 8);
    let dtype = [DType::Int64, DType::Float32, DType::Bytes][b.next() as usize % 3];
    let shape: Vec<usize> = (0..b.next() % 4).map(|_| b.dim()).collect();
    let kind = match b.next() % 3 {
        0 => SpecKind::FixedLen { shape },
        1 => SpecKind::VarLen,
        _ => SpecKind::FixedLenSequence {
            shape,
            allow_missing: b.next() % 2 == 0,
        },
    };
    let n = b.next() % 4;
    let default = (n > 0).then(|| match dtype {
        DType::Int64 => Column::Int64(vec![7; n as usize]),
        DType::Float32 => Column::Float32(vec![0.5; n as usize]),
        DType::Bytes => Column::from_bytes(&vec![b"d"; n as usize]),
    });
    FeatureSpec {
        key,
        dtype,
        kind,
        default,
    }
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0xFE).unwrap_or(data.len());
    let (head, tail) = data.split_at(split);
    let mut b = Bytes(head);
    let specs: Vec<FeatureSpec> = (0..b.next() % 5).map(|_| spec(&mut b)).collect();
    // Any key may be named nullable, whatever its kind, default or presence.
    let nullable: Vec<String> = (0..b.next() % 3)
        .map(|_| format!("k{}", b.next() % 8))
        .collect();
    let records: Vec<&[u8]> = tail.split(|&x| x == 0xFF).collect();
    // Defaults and nulls may fill up to MAX_FILL values per batch, by design more than the
    // fuzzer's memory limit: parse only where the fills stay small, but build every schema.
    let fill: usize = specs
        .iter()
        .filter(|s| s.default.is_some() || nullable.contains(&s.key))
        .map(|s| match &s.kind {
            SpecKind::FixedLen { shape } => shape.iter().fold(1usize, |n, &d| n.saturating_mul(d)),
            _ => 1,
        })
        .fold(0usize, usize::saturating_add);
    let Ok(schema) = Schema::new(specs) else {
        return;
    };
    let schema = schema.clone().nullable(&nullable).unwrap_or(schema);
    if fill.saturating_mul(records.len()) <= 1 << 22 {
        let _ = parse_examples(&schema, &records);
    }
});
