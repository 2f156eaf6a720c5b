//! `tf.train.Example` and `tf.train.SequenceExample`: a hand-written wire codec.
//!
//! Decoding follows protobuf's merge rules: unknown fields are skipped, a repeated map key
//! keeps its last value, packed and unpacked numeric lists both parse, and within one
//! `Feature` a second list of the same kind extends the first while another kind replaces it.

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::wire::{self, len_field_size, put_tag, put_varint, varint_len, WireReader};

/// One feature's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Feature {
    /// A `Feature` with no list set.
    Empty,
    Bytes(Vec<Vec<u8>>),
    Float(Vec<f32>),
    Int64(Vec<i64>),
}

/// Feature name to values, in first-seen order with unique names.
pub type Features = Vec<(String, Feature)>;

/// Feature-list name to its per-step features.
pub type FeatureLists = Vec<(String, Vec<Feature>)>;

/// Which list a `Feature` field number holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bytes = 1,
    Float = 2,
    Int64 = 3,
}

impl Kind {
    pub fn from_field(field: u32) -> Option<Kind> {
        match field {
            1 => Some(Kind::Bytes),
            2 => Some(Kind::Float),
            3 => Some(Kind::Int64),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Bytes => "bytes",
            Kind::Float => "float",
            Kind::Int64 => "int64",
        }
    }
}

impl Feature {
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Feature::Empty => None,
            Feature::Bytes(_) => Some(Kind::Bytes),
            Feature::Float(_) => Some(Kind::Float),
            Feature::Int64(_) => Some(Kind::Int64),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Feature::Empty => 0,
            Feature::Bytes(v) => v.len(),
            Feature::Float(v) => v.len(),
            Feature::Int64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---------------------------------------------------------------- list decoding

/// Appends the values of a `BytesList` message.
pub fn read_bytes_list<'a>(buf: &'a [u8], mut push: impl FnMut(&'a [u8])) -> Result<()> {
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if field == 1 && wt == wire::LEN {
            push(r.bytes()?);
        } else if field == 1 {
            return Err(Error::decode(format!(
                "malformed BytesList: value has wire type {wt}"
            )));
        } else {
            r.skip(field, wt)?;
        }
    }
    Ok(())
}

/// Appends the values of a `FloatList` message (packed or not).
pub fn read_float_list(buf: &[u8], out: &mut Vec<f32>) -> Result<()> {
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        match (field, wt) {
            (1, wire::LEN) => {
                let packed = r.bytes()?;
                if packed.len() % 4 != 0 {
                    return Err(Error::decode(format!(
                        "malformed FloatList: packed length {} is not a multiple of 4",
                        packed.len()
                    )));
                }
                wire::extend_f32_le(out, packed);
            }
            (1, wire::I32) => out.push(f32::from_bits(r.fixed32()?)),
            (1, _) => {
                return Err(Error::decode(format!(
                    "malformed FloatList: value has wire type {wt}"
                )))
            }
            _ => r.skip(field, wt)?,
        }
    }
    Ok(())
}

/// Appends the values of an `Int64List` message (packed or not).
pub fn read_int64_list(buf: &[u8], out: &mut Vec<i64>) -> Result<()> {
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        match (field, wt) {
            (1, wire::LEN) => wire::extend_varints(out, r.bytes()?)?,
            (1, wire::VARINT) => out.push(r.varint()? as i64),
            (1, _) => {
                return Err(Error::decode(format!(
                    "malformed Int64List: value has wire type {wt}"
                )))
            }
            _ => r.skip(field, wt)?,
        }
    }
    Ok(())
}

/// The kind of a `Feature` message's values, and its fields from where the last run of
/// lists of that kind begins: protobuf merges repeated lists of one kind, and a list of
/// another kind replaces those before it. [`for_each_list`] reads the lists from there.
pub fn last_lists(buf: &[u8]) -> Result<(Option<Kind>, &[u8])> {
    let mut r = WireReader::new(buf);
    let (mut kind, mut start) = (None, 0);
    while !r.is_empty() {
        let at = r.pos();
        let (field, wt) = r.tag()?;
        match Kind::from_field(field) {
            Some(k) if wt == wire::LEN => {
                if kind != Some(k) {
                    (kind, start) = (Some(k), at);
                }
                r.bytes()?;
            }
            Some(_) => {
                return Err(Error::decode(format!(
                    "malformed Feature: list field {field} has wire type {wt}"
                )))
            }
            None => r.skip(field, wt)?,
        }
    }
    Ok((kind, &buf[start..]))
}

/// Calls `f` with each list of `kind` in `fields` (as [`last_lists`] gives them).
pub fn for_each_list<'a>(
    fields: &'a [u8],
    kind: Kind,
    mut f: impl FnMut(&'a [u8]) -> Result<()>,
) -> Result<()> {
    let mut r = WireReader::new(fields);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if Kind::from_field(field) == Some(kind) {
            f(r.bytes()?)?;
        } else {
            r.skip(field, wt)?;
        }
    }
    Ok(())
}

/// The list fields of a `Feature` message, as `(kind, list bytes)`, in order.
/// The last kind present is the feature's kind; earlier lists of that same kind merge.
pub fn feature_lists_of(buf: &[u8]) -> Result<(Option<Kind>, Vec<&[u8]>)> {
    let (kind, fields) = last_lists(buf)?;
    let mut parts = Vec::new();
    if let Some(kind) = kind {
        for_each_list(fields, kind, |p| {
            parts.push(p);
            Ok(())
        })?;
    }
    Ok((kind, parts))
}

/// Calls `f` with the bytes of each map entry (`key = 1`, `value = 2`) in the fields numbered
/// `field` of `message`: the `feature` entries of an `Example` (field 1, its `Features`), or
/// the `feature_list` entries of a `SequenceExample` (field 2, its `FeatureLists`).
pub fn for_each_map_entry<'a>(
    message: &'a [u8],
    field: u32,
    mut f: impl FnMut(&'a [u8]) -> Result<()>,
) -> Result<()> {
    let mut r = WireReader::new(message);
    while !r.is_empty() {
        let (number, wt) = r.tag()?;
        if number != field || wt != wire::LEN {
            r.skip(number, wt)?;
            continue;
        }
        let mut map = WireReader::new(r.bytes()?);
        while !map.is_empty() {
            let (number, wt) = map.tag()?;
            if number != 1 || wt != wire::LEN {
                map.skip(number, wt)?;
                continue;
            }
            f(map.bytes()?)?;
        }
    }
    Ok(())
}

/// Decodes a `Feature` message.
pub fn decode_feature(buf: &[u8]) -> Result<Feature> {
    let (kind, parts) = feature_lists_of(buf)?;
    Ok(match kind {
        None => Feature::Empty,
        Some(Kind::Bytes) => {
            let mut v = Vec::new();
            for p in parts {
                read_bytes_list(p, |b| v.push(b.to_vec()))?;
            }
            Feature::Bytes(v)
        }
        Some(Kind::Float) => {
            let mut v = Vec::new();
            for p in parts {
                read_float_list(p, &mut v)?;
            }
            Feature::Float(v)
        }
        Some(Kind::Int64) => {
            let mut v = Vec::new();
            for p in parts {
                read_int64_list(p, &mut v)?;
            }
            Feature::Int64(v)
        }
    })
}

// ---------------------------------------------------------------- map decoding

/// The value field(s) of a map entry. Protobuf merges repeated occurrences.
pub enum EntryValue<'a> {
    Absent,
    One(&'a [u8]),
    Many(Vec<&'a [u8]>),
}

impl EntryValue<'_> {
    /// The value's bytes, concatenating repeated occurrences (which merges them).
    pub fn merged(&self) -> Option<std::borrow::Cow<'_, [u8]>> {
        match self {
            EntryValue::Absent => None,
            EntryValue::One(b) => Some(std::borrow::Cow::Borrowed(b)),
            EntryValue::Many(parts) => Some(std::borrow::Cow::Owned(parts.concat())),
        }
    }
}

/// Reads one map entry (`key = 1`, `value = 2`): the key and the value's bytes.
pub fn read_map_entry(buf: &[u8]) -> Result<(&[u8], EntryValue<'_>)> {
    let mut r = WireReader::new(buf);
    let mut key: &[u8] = b"";
    let mut value = EntryValue::Absent;
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        match (field, wt) {
            (1, wire::LEN) => key = r.bytes()?,
            (2, wire::LEN) => {
                let b = r.bytes()?;
                value = match value {
                    EntryValue::Absent => EntryValue::One(b),
                    EntryValue::One(first) => EntryValue::Many(vec![first, b]),
                    EntryValue::Many(mut v) => {
                        v.push(b);
                        EntryValue::Many(v)
                    }
                };
            }
            (1 | 2, _) => {
                return Err(Error::decode(format!(
                    "malformed map entry: field {field} has wire type {wt}"
                )))
            }
            _ => r.skip(field, wt)?,
        }
    }
    Ok((key, value))
}

pub fn utf8_key(key: &[u8]) -> Result<&str> {
    std::str::from_utf8(key)
        .map_err(|_| Error::decode(format!("feature key is not valid UTF-8: {}", quoted(key))))
}

/// Bytes a file supplied, for an error message: the first 32, escaped to printable ASCII,
/// and how many there are when there are more.
fn quoted(bytes: &[u8]) -> String {
    const SHOWN: usize = 32;
    let head = &bytes[..bytes.len().min(SHOWN)];
    let more = if bytes.len() > SHOWN {
        format!("... ({} bytes)", bytes.len())
    } else {
        String::new()
    };
    format!("\"{}\"{more}", head.escape_ascii())
}

/// Inserts or replaces, keeping first-seen order.
struct OrderedMap<V> {
    entries: Vec<(String, V)>,
    index: FxHashMap<String, usize>,
}

impl<V> OrderedMap<V> {
    fn new() -> Self {
        OrderedMap {
            entries: Vec::new(),
            index: FxHashMap::default(),
        }
    }

    fn insert(&mut self, key: &str, value: V) {
        match self.index.get(key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.to_owned(), self.entries.len());
                self.entries.push((key.to_owned(), value));
            }
        }
    }
}

/// Decodes a `Features` message into `map` (a later key replaces an earlier one).
fn decode_features_into(buf: &[u8], map: &mut OrderedMap<Feature>) -> Result<()> {
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if field == 1 && wt == wire::LEN {
            let (key, value) = read_map_entry(r.bytes()?)?;
            let key = utf8_key(key)?;
            let feature = match value.merged() {
                None => Feature::Empty,
                Some(b) => decode_feature(&b).map_err(|e| e.in_feature(key))?,
            };
            map.insert(key, feature);
        } else {
            r.skip(field, wt)?;
        }
    }
    Ok(())
}

/// Decodes a serialized `tf.train.Example`.
pub fn decode_example(buf: &[u8]) -> Result<Features> {
    let mut map = OrderedMap::new();
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if field == 1 && wt == wire::LEN {
            decode_features_into(r.bytes()?, &mut map)?;
        } else {
            r.skip(field, wt)?;
        }
    }
    Ok(map.entries)
}

fn decode_feature_list(buf: &[u8]) -> Result<Vec<Feature>> {
    let mut out = Vec::new();
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        if field == 1 && wt == wire::LEN {
            out.push(decode_feature(r.bytes()?)?);
        } else {
            r.skip(field, wt)?;
        }
    }
    Ok(out)
}

/// Decodes a serialized `tf.train.SequenceExample` into its context and feature lists.
pub fn decode_sequence_example(buf: &[u8]) -> Result<(Features, FeatureLists)> {
    let mut context = OrderedMap::new();
    let mut lists: OrderedMap<Vec<Feature>> = OrderedMap::new();
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        let (field, wt) = r.tag()?;
        match (field, wt) {
            (1, wire::LEN) => decode_features_into(r.bytes()?, &mut context)?,
            (2, wire::LEN) => {
                let mut fl = WireReader::new(r.bytes()?);
                while !fl.is_empty() {
                    let (f, w) = fl.tag()?;
                    if f == 1 && w == wire::LEN {
                        let (key, value) = read_map_entry(fl.bytes()?)?;
                        let key = utf8_key(key)?;
                        let list = match value.merged() {
                            None => Vec::new(),
                            Some(b) => decode_feature_list(&b).map_err(|e| e.in_feature(key))?,
                        };
                        lists.insert(key, list);
                    } else {
                        fl.skip(f, w)?;
                    }
                }
            }
            _ => r.skip(field, wt)?,
        }
    }
    Ok((context.entries, lists.entries))
}

// ---------------------------------------------------------------- encoding

fn list_payload_len(f: &Feature) -> usize {
    match f {
        Feature::Empty => 0,
        Feature::Bytes(v) => v.iter().map(|b| len_field_size(b.len())).sum(),
        Feature::Float(v) if v.is_empty() => 0,
        Feature::Float(v) => len_field_size(v.len() * 4),
        Feature::Int64(v) if v.is_empty() => 0,
        Feature::Int64(v) => len_field_size(int64_packed_len(v)),
    }
}

fn int64_packed_len(v: &[i64]) -> usize {
    v.iter().map(|&x| varint_len(x as u64)).sum()
}

/// Encoded size of a `Feature` message.
pub fn feature_len(f: &Feature) -> usize {
    match f {
        Feature::Empty => 0,
        _ => len_field_size(list_payload_len(f)),
    }
}

/// Appends a `Feature` message's bytes (without its own length prefix).
pub fn put_feature(out: &mut Vec<u8>, f: &Feature) {
    let Some(kind) = f.kind() else { return };
    put_tag(out, kind as u32, wire::LEN);
    put_varint(out, list_payload_len(f) as u64);
    match f {
        Feature::Empty => {}
        Feature::Bytes(v) => {
            for b in v {
                put_tag(out, 1, wire::LEN);
                put_varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
        }
        Feature::Float(v) => {
            if !v.is_empty() {
                put_tag(out, 1, wire::LEN);
                put_varint(out, (v.len() * 4) as u64);
                for x in v {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        Feature::Int64(v) => {
            if !v.is_empty() {
                put_tag(out, 1, wire::LEN);
                put_varint(out, int64_packed_len(v) as u64);
                for &x in v {
                    put_varint(out, x as u64);
                }
            }
        }
    }
}

fn entry_len(key: &str, value_len: usize) -> usize {
    len_field_size(key.len()) + len_field_size(value_len)
}

fn features_len<K: AsRef<str>>(features: &[(K, Feature)]) -> usize {
    features
        .iter()
        .map(|(k, f)| len_field_size(entry_len(k.as_ref(), feature_len(f))))
        .sum()
}

fn put_features<K: AsRef<str>>(out: &mut Vec<u8>, features: &[(K, Feature)]) {
    for (key, f) in features {
        let key = key.as_ref();
        let flen = feature_len(f);
        put_tag(out, 1, wire::LEN);
        put_varint(out, entry_len(key, flen) as u64);
        put_tag(out, 1, wire::LEN);
        put_varint(out, key.len() as u64);
        out.extend_from_slice(key.as_bytes());
        put_tag(out, 2, wire::LEN);
        put_varint(out, flen as u64);
        put_feature(out, f);
    }
}

/// Appends a serialized `tf.train.Example` to `out`.
pub fn encode_example_into<K: AsRef<str>>(features: &[(K, Feature)], out: &mut Vec<u8>) {
    let flen = features_len(features);
    out.reserve(len_field_size(flen));
    put_tag(out, 1, wire::LEN);
    put_varint(out, flen as u64);
    put_features(out, features);
}

/// Serializes a `tf.train.Example`.
pub fn encode_example<K: AsRef<str>>(features: &[(K, Feature)]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_example_into(features, &mut out);
    out
}

/// Serializes a `tf.train.SequenceExample`.
pub fn encode_sequence_example<K: AsRef<str>, L: AsRef<str>>(
    context: &[(K, Feature)],
    feature_lists: &[(L, Vec<Feature>)],
) -> Vec<u8> {
    let mut out = Vec::new();
    let clen = features_len(context);
    put_tag(&mut out, 1, wire::LEN);
    put_varint(&mut out, clen as u64);
    put_features(&mut out, context);
    if feature_lists.is_empty() {
        return out;
    }
    let list_len = |steps: &Vec<Feature>| -> usize {
        steps.iter().map(|f| len_field_size(feature_len(f))).sum()
    };
    let lists_len: usize = feature_lists
        .iter()
        .map(|(k, steps)| len_field_size(entry_len(k.as_ref(), list_len(steps))))
        .sum();
    put_tag(&mut out, 2, wire::LEN);
    put_varint(&mut out, lists_len as u64);
    for (key, steps) in feature_lists {
        let key = key.as_ref();
        let llen = list_len(steps);
        put_tag(&mut out, 1, wire::LEN);
        put_varint(&mut out, entry_len(key, llen) as u64);
        put_tag(&mut out, 1, wire::LEN);
        put_varint(&mut out, key.len() as u64);
        out.extend_from_slice(key.as_bytes());
        put_tag(&mut out, 2, wire::LEN);
        put_varint(&mut out, llen as u64);
        for f in steps {
            put_tag(&mut out, 1, wire::LEN);
            put_varint(&mut out, feature_len(f) as u64);
            put_feature(&mut out, f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_not_utf8_is_quoted_short_in_its_error() {
        let err = utf8_key(&[0xff; 2_000_000]).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "feature key is not valid UTF-8: \"{}\"... (2000000 bytes)",
                "\\xff".repeat(32)
            )
        );
        let err = utf8_key(b"a\n\xfe").unwrap_err();
        assert_eq!(err.message, "feature key is not valid UTF-8: \"a\\n\\xfe\"");
    }

    #[test]
    fn seed_tutorial_example_bytes() {
        // serialize_example(False, 4, b'goat', 0.9876) from the TensorFlow tutorial, whose
        // map order put feature2, feature1, feature3, feature0.
        let expected: &[u8] = b"\nR\n\x14\n\x08feature2\x12\x08\n\x06\n\x04goat\n\x11\n\x08feature1\x12\x05\x1a\x03\n\x01\x04\n\x14\n\x08feature3\x12\x08\x12\x06\n\x04[\xd3|?\n\x11\n\x08feature0\x12\x05\x1a\x03\n\x01\x00";
        let features = vec![
            ("feature2", Feature::Bytes(vec![b"goat".to_vec()])),
            ("feature1", Feature::Int64(vec![4])),
            ("feature3", Feature::Float(vec![0.9876])),
            ("feature0", Feature::Int64(vec![0])),
        ];
        assert_eq!(encode_example(&features), expected);
        let decoded = decode_example(expected).unwrap();
        assert_eq!(decoded.len(), 4);
        assert_eq!(decoded[0].0, "feature2");
        assert_eq!(decoded[2].1, Feature::Float(vec![0.9876]));
    }

    #[test]
    fn unpacked_lists_duplicates_and_unknown_fields() {
        // Int64List with two unpacked values and an unknown field 7.
        let list = [0x08, 0x05, 0x08, 0x7f, 0x38, 0x01];
        let mut feature = vec![0x1a, list.len() as u8];
        feature.extend_from_slice(&list);
        let mut entry = vec![0x0a, 0x01, b'a', 0x12, feature.len() as u8];
        entry.extend_from_slice(&feature);
        let mut features = vec![0x0a, entry.len() as u8];
        features.extend_from_slice(&entry);
        // The same key again, later, with a float: the last one wins.
        let later = [
            0x0a, 0x0c, 0x0a, 0x01, b'a', 0x12, 0x07, 0x12, 0x05, 0x0d, 0, 0, 0x80, 0x3f,
        ];
        features.extend_from_slice(&later);
        let mut example = vec![0x0a, features.len() as u8];
        example.extend_from_slice(&features);
        example.extend_from_slice(&[0x10, 0x01]); // unknown top-level varint field
        let decoded = decode_example(&example).unwrap();
        assert_eq!(decoded, vec![("a".to_string(), Feature::Float(vec![1.0]))]);
        features.truncate(2 + entry.len());
        let mut example = vec![0x0a, features.len() as u8];
        example.extend_from_slice(&features);
        let decoded = decode_example(&example).unwrap();
        assert_eq!(decoded[0].1, Feature::Int64(vec![5, 127]));
    }

    #[test]
    fn sequence_example_round_trip() {
        let context = vec![("id", Feature::Bytes(vec![b"x".to_vec()]))];
        let lists = vec![(
            "tokens",
            vec![
                Feature::Int64(vec![1, 2]),
                Feature::Int64(vec![]),
                Feature::Empty,
            ],
        )];
        let bytes = encode_sequence_example(&context, &lists);
        let (c, l) = decode_sequence_example(&bytes).unwrap();
        assert_eq!(c[0].1, context[0].1);
        assert_eq!(l[0].1, lists[0].1);
    }

    #[test]
    fn malformed_input_is_an_error() {
        for bad in [
            &[0x0a, 0x05, 0x0a][..],
            &[0x0a, 0x02, 0x0a, 0x7f],
            &[0x0f],
            &[0x0a, 0x04, 0x0a, 0x02, 0xff, 0xfe],
        ] {
            let err = decode_example(bad).unwrap_err();
            assert_eq!(err.kind, crate::ErrorKind::ExampleDecode, "{bad:?}");
        }
    }
}
