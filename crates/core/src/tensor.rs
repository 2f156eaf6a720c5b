//! `tensorflow.TensorProto`, as `tf.io.serialize_tensor` writes it and `tf.io.parse_tensor`
//! reads it: the packed `tensor_content` form, and the repeated `*_val` forms, where the
//! last value given fills the rest of the shape.

use crate::error::{Error, Result};
use crate::parse::MAX_FILL;
use crate::wire::{self, WireReader};

/// The element types a `TensorProto` carries here, with TensorFlow's `DataType` codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorDType {
    Float32,
    Float64,
    Int32,
    UInt8,
    Int16,
    Int8,
    String,
    Complex64,
    Int64,
    Bool,
    BFloat16,
    UInt16,
    Complex128,
    Float16,
    UInt32,
    UInt64,
}

/// Every type, for lookups by code or name.
const ALL: [TensorDType; 16] = [
    TensorDType::Float32,
    TensorDType::Float64,
    TensorDType::Int32,
    TensorDType::UInt8,
    TensorDType::Int16,
    TensorDType::Int8,
    TensorDType::String,
    TensorDType::Complex64,
    TensorDType::Int64,
    TensorDType::Bool,
    TensorDType::BFloat16,
    TensorDType::UInt16,
    TensorDType::Complex128,
    TensorDType::Float16,
    TensorDType::UInt32,
    TensorDType::UInt64,
];

/// The repeated field holding values of a type, how each value is encoded, and how many
/// of them make one element.
#[derive(Clone, Copy)]
enum Values {
    Fixed32(u32),
    Fixed64(u32),
    Varint(u32),
}

impl TensorDType {
    /// TensorFlow's `DataType` code.
    pub fn code(self) -> u64 {
        use TensorDType::*;
        match self {
            Float32 => 1,
            Float64 => 2,
            Int32 => 3,
            UInt8 => 4,
            Int16 => 5,
            Int8 => 6,
            String => 7,
            Complex64 => 8,
            Int64 => 9,
            Bool => 10,
            BFloat16 => 14,
            UInt16 => 17,
            Complex128 => 18,
            Float16 => 19,
            UInt32 => 22,
            UInt64 => 23,
        }
    }

    /// The NumPy name (`string` for byte strings).
    pub fn name(self) -> &'static str {
        use TensorDType::*;
        match self {
            Float32 => "float32",
            Float64 => "float64",
            Int32 => "int32",
            UInt8 => "uint8",
            Int16 => "int16",
            Int8 => "int8",
            String => "string",
            Complex64 => "complex64",
            Int64 => "int64",
            Bool => "bool",
            BFloat16 => "bfloat16",
            UInt16 => "uint16",
            Complex128 => "complex128",
            Float16 => "float16",
            UInt32 => "uint32",
            UInt64 => "uint64",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn from_code(code: u64) -> Option<Self> {
        ALL.into_iter().find(|t| t.code() == code)
    }

    /// Bytes per element (0 for strings).
    pub fn size(self) -> usize {
        use TensorDType::*;
        match self {
            String => 0,
            Int8 | UInt8 | Bool => 1,
            Int16 | UInt16 | Float16 | BFloat16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Complex64 => 8,
            Complex128 => 16,
        }
    }

    fn values(self) -> Values {
        use TensorDType::*;
        match self {
            Float32 => Values::Fixed32(5),
            Float64 => Values::Fixed64(6),
            Int32 | UInt8 | Int16 | Int8 | UInt16 => Values::Varint(7),
            String => Values::Varint(8), // never read as numbers: strings take their own path
            Complex64 => Values::Fixed32(9),
            Int64 => Values::Varint(10),
            Bool => Values::Varint(11),
            Complex128 => Values::Fixed64(12),
            Float16 | BFloat16 => Values::Varint(13),
            UInt32 => Values::Varint(16),
            UInt64 => Values::Varint(17),
        }
    }
}

fn dtype_name(code: u64) -> String {
    match TensorDType::from_code(code) {
        Some(t) => t.name().to_string(),
        None => format!("TensorFlow DataType {code}, which tfrecordkit does not read"),
    }
}

/// The fields of one `TensorProto` that say what it holds.
struct Header<'a> {
    dtype: u64,
    dims: Vec<i64>,
    content: &'a [u8],
}

fn bad(what: impl Into<String>) -> Error {
    Error::decode(format!("not a serialized tensor: {}", what.into()))
}

fn header(buf: &[u8]) -> Result<Header<'_>> {
    let mut header = Header {
        dtype: 0,
        dims: Vec::new(),
        content: &[],
    };
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        match r.tag()? {
            (1, wire::VARINT) => header.dtype = r.varint()?,
            (2, wire::LEN) => shape(r.bytes()?, &mut header)?,
            (4, wire::LEN) => header.content = r.bytes()?,
            (f @ (1 | 2 | 4), w) => return Err(bad(format!("field {f} has wire type {w}"))),
            (f, w) => r.skip(f, w)?,
        }
    }
    Ok(header)
}

/// Merges a `TensorShapeProto` into `header` (repeated messages merge, as protobuf does).
fn shape(buf: &[u8], header: &mut Header<'_>) -> Result<()> {
    let mut r = WireReader::new(buf);
    while !r.is_empty() {
        match r.tag()? {
            (2, wire::LEN) => {
                let mut size = 0i64;
                let mut d = WireReader::new(r.bytes()?);
                while !d.is_empty() {
                    match d.tag()? {
                        (1, wire::VARINT) => size = d.varint()? as i64,
                        (f, w) => d.skip(f, w)?,
                    }
                }
                if header.dims.len() >= 254 {
                    return Err(bad("the shape has more than 254 dimensions"));
                }
                header.dims.push(size);
            }
            // `unknown_rank` is ignored, as TensorFlow ignores it here.
            (f, w) => r.skip(f, w)?,
        }
    }
    Ok(())
}

/// The number of elements `dims` hold, checked as TensorFlow checks a shape.
fn elements(dims: &[i64]) -> Result<usize> {
    let mut n: u64 = 1;
    for &d in dims {
        if d < 0 {
            return Err(bad(format!("shape {dims:?} has a negative dimension")));
        }
        n = n
            .checked_mul(d as u64)
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| bad(format!("shape {dims:?} holds more than 2**63 elements")))?;
    }
    usize::try_from(n).map_err(|_| bad(format!("shape {dims:?} is too large here")))
}

/// A tensor's values, stacked: little-endian element bytes, or byte strings.
#[derive(Debug, Default, PartialEq)]
pub struct Stacked {
    /// The shape of each tensor (they all have it); the stack adds a leading axis.
    pub dims: Vec<i64>,
    pub data: Vec<u8>,
    pub strings: Vec<Vec<u8>>,
    /// Bytes filled in so far that no record holds (repeated last values), across the
    /// whole stack: at most [`MAX_FILL`].
    pub filled: usize,
}

impl Stacked {
    /// Counts `bytes` more filled in, or refuses them past [`MAX_FILL`] for the stack.
    fn fill(&mut self, bytes: usize, what: impl FnOnce() -> String) -> Result<()> {
        match self.filled.checked_add(bytes).filter(|&f| f <= MAX_FILL) {
            Some(f) => {
                self.filled = f;
                Ok(())
            }
            None => Err(bad(format!(
                "{}, more than the {MAX_FILL} bytes filled in for a stack (parse fewer at once)",
                what()
            ))),
        }
    }
}

/// What one filled-in string costs in memory: its `Vec` and, when not empty, the
/// allocator's block for its bytes.
fn string_cost(len: usize) -> usize {
    std::mem::size_of::<Vec<u8>>() + if len == 0 { 0 } else { len.saturating_add(32) }
}

/// Decodes serialized tensors of `dtype` and one shape into one stack, in order.
/// Errors name the record (its index in `records`).
pub fn parse_tensors(records: &[&[u8]], dtype: TensorDType) -> Result<Stacked> {
    let mut out = Stacked::default();
    for (i, buf) in records.iter().enumerate() {
        parse_into(buf, dtype, i == 0, &mut out).map_err(|mut e| {
            if e.kind == crate::ErrorKind::ExampleDecode && !e.message.starts_with("not a") {
                e.message = format!("not a serialized tensor: {}", e.message);
            }
            e.with_record(i as u64)
        })?;
        if i == 0 {
            // The rest are most likely the same size; what the record holds, not what a
            // shape filled in, sizes the room for them.
            out.data
                .reserve(out.data.len().min(buf.len()) * (records.len() - 1));
        }
    }
    Ok(out)
}

fn parse_into(buf: &[u8], dtype: TensorDType, first: bool, out: &mut Stacked) -> Result<()> {
    let h = header(buf)?;
    let n = elements(&h.dims)?;
    let Some(held) = TensorDType::from_code(h.dtype) else {
        return Err(bad(format!("it holds {}", dtype_name(h.dtype))));
    };
    if held != dtype {
        return Err(Error::schema(format!(
            "the tensor holds {}, not {} (pass dtype={:?})",
            held.name(),
            dtype.name(),
            held.name()
        )));
    }
    if first {
        out.dims = h.dims.clone();
    } else if out.dims != h.dims {
        return Err(Error::schema(format!(
            "the tensor has shape {:?}, not {:?} as the first one: tensors of different \
             shapes do not stack (parse them one at a time)",
            h.dims, out.dims
        )));
    }
    if dtype == TensorDType::String {
        return strings_into(buf, &h, n, out);
    }
    let size = dtype.size();
    if !h.content.is_empty() {
        if Some(h.content.len()) != n.checked_mul(size) {
            return Err(bad(format!(
                "its tensor_content holds {} bytes, not the {} of {n} {} elements",
                h.content.len(),
                n.saturating_mul(size),
                dtype.name()
            )));
        }
        out.data.extend_from_slice(h.content);
        return Ok(());
    }
    let start = out.data.len();
    values_into(buf, dtype, n, &mut out.data)?;
    let given = (out.data.len() - start) / size;
    if n > given {
        out.fill((n - given).saturating_mul(size), || {
            format!(
                "its shape {:?} asks for {n} elements from {given} values",
                h.dims
            )
        })?;
        let fill = if given == 0 {
            vec![0u8; size]
        } else {
            out.data[out.data.len() - size..].to_vec()
        };
        out.data.reserve((n - given) * size);
        for _ in given..n {
            out.data.extend_from_slice(&fill);
        }
    }
    Ok(())
}

/// Appends the values of the repeated field for `dtype`, packed or not, as little-endian
/// elements, stopping after `n` elements.
fn values_into(buf: &[u8], dtype: TensorDType, n: usize, out: &mut Vec<u8>) -> Result<()> {
    let (field, width) = match dtype.values() {
        Values::Fixed32(f) => (f, 4),
        Values::Fixed64(f) => (f, 8),
        Values::Varint(f) => (f, 0),
    };
    let size = dtype.size();
    let limit = out.len() + n * size;
    // A complex element's two parts arrive as two values: count parts, then drop a
    // trailing lone part.
    let start = out.len();
    let push_varint = |v: u64, out: &mut Vec<u8>| {
        let bytes = v.to_le_bytes();
        out.extend_from_slice(&bytes[..size]);
    };
    let mut r = WireReader::new(buf);
    while !r.is_empty() && out.len() < limit {
        let (f, w) = r.tag()?;
        if f != field {
            r.skip(f, w)?;
            continue;
        }
        match (w, width) {
            (wire::LEN, 0) => {
                let mut p = WireReader::new(r.bytes()?);
                while !p.is_empty() && out.len() < limit {
                    let v = p.varint()?;
                    push_varint(
                        if dtype == TensorDType::Bool {
                            (v != 0) as u64
                        } else {
                            v
                        },
                        out,
                    );
                }
            }
            (wire::VARINT, 0) => {
                let v = r.varint()?;
                push_varint(
                    if dtype == TensorDType::Bool {
                        (v != 0) as u64
                    } else {
                        v
                    },
                    out,
                );
            }
            (wire::LEN, _) => {
                let packed = r.bytes()?;
                if packed.len() % width != 0 {
                    return Err(bad(format!("packed field {f} ends inside a value")));
                }
                let room = limit - out.len();
                let take = packed.len().min(room.div_ceil(width) * width);
                out.extend_from_slice(&packed[..take]);
            }
            (wire::I32, 4) => out.extend_from_slice(&r.fixed32()?.to_le_bytes()),
            (wire::I64, 8) => out.extend_from_slice(&r.fixed64()?.to_le_bytes()),
            _ => return Err(bad(format!("field {f} has wire type {w}"))),
        }
    }
    let whole = (out.len() - start) / size * size;
    out.truncate(start + whole.min(n * size));
    Ok(())
}

fn strings_into(buf: &[u8], h: &Header<'_>, n: usize, out: &mut Stacked) -> Result<()> {
    if !h.content.is_empty() {
        return Err(bad(
            "a string tensor in tensor_content, which TensorFlow reads no more",
        ));
    }
    let start = out.strings.len();
    let mut r = WireReader::new(buf);
    while !r.is_empty() && out.strings.len() - start < n {
        match r.tag()? {
            (8, wire::LEN) => out.strings.push(r.bytes()?.to_vec()),
            (8, w) => return Err(bad(format!("field 8 has wire type {w}"))),
            (f, w) => r.skip(f, w)?,
        }
    }
    let given = out.strings.len() - start;
    if n > given {
        let fill = out.strings[start..].last().cloned().unwrap_or_default();
        out.fill((n - given).saturating_mul(string_cost(fill.len())), || {
            format!("its shape {:?} asks for {n} strings from {given}", h.dims)
        })?;
        out.strings.resize(start + n, fill);
    }
    Ok(())
}

/// Serializes a tensor as `tf.io.serialize_tensor` does: `dtype`, the shape, then the
/// elements as little-endian `tensor_content` (numbers) or one `string_val` each (strings).
/// `data` holds `prod(dims)` elements.
pub fn serialize_tensor(
    dtype: TensorDType,
    dims: &[i64],
    data: &[u8],
    strings: &[&[u8]],
) -> Result<Vec<u8>> {
    let n = elements(dims).map_err(|e| Error::invalid(e.message))?;
    let held = if dtype == TensorDType::String {
        strings.len()
    } else {
        data.len() / dtype.size()
    };
    if held != n || (dtype != TensorDType::String && data.len() % dtype.size() != 0) {
        return Err(Error::invalid(format!(
            "shape {dims:?} holds {n} elements, and {held} were given"
        )));
    }
    let dim_len = |d: i64| {
        if d == 0 {
            0
        } else {
            1 + wire::varint_len(d as u64)
        }
    };
    let shape_len: usize = dims.iter().map(|&d| wire::len_field_size(dim_len(d))).sum();
    let mut out = Vec::with_capacity(16 + shape_len + data.len());
    wire::put_tag(&mut out, 1, wire::VARINT);
    wire::put_varint(&mut out, dtype.code());
    wire::put_tag(&mut out, 2, wire::LEN);
    wire::put_varint(&mut out, shape_len as u64);
    for &d in dims {
        wire::put_tag(&mut out, 2, wire::LEN);
        wire::put_varint(&mut out, dim_len(d) as u64);
        if d != 0 {
            wire::put_tag(&mut out, 1, wire::VARINT);
            wire::put_varint(&mut out, d as u64);
        }
    }
    if dtype == TensorDType::String {
        for s in strings {
            wire::put_tag(&mut out, 8, wire::LEN);
            wire::put_varint(&mut out, s.len() as u64);
            out.extend_from_slice(s);
        }
    } else if !data.is_empty() {
        wire::put_tag(&mut out, 4, wire::LEN);
        wire::put_varint(&mut out, data.len() as u64);
        out.extend_from_slice(data);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(buf: &[u8], dtype: TensorDType) -> Result<Stacked> {
        parse_tensors(&[buf], dtype)
    }

    #[test]
    fn round_trips_numbers_and_strings() {
        let data: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let buf = serialize_tensor(TensorDType::Float32, &[2, 3], &data, &[]).unwrap();
        let got = parse(&buf, TensorDType::Float32).unwrap();
        assert_eq!((got.dims, got.data), (vec![2, 3], data));

        let buf =
            serialize_tensor(TensorDType::String, &[2], &[], &[b"a".as_slice(), b"bc"]).unwrap();
        // tf.io.serialize_tensor(tf.constant([b"a", b"bc"]))
        assert_eq!(buf, b"\x08\x07\x12\x04\x12\x02\x08\x02B\x01aB\x02bc");
        let got = parse(&buf, TensorDType::String).unwrap();
        assert_eq!(got.strings, vec![b"a".to_vec(), b"bc".to_vec()]);
    }

    #[test]
    fn scalars_and_empty_shapes_match_tensorflow() {
        // tf.io.serialize_tensor(tf.zeros([], tf.float32)) and of tf.zeros([0], tf.float32)
        let zero = 0f32.to_le_bytes();
        let buf = serialize_tensor(TensorDType::Float32, &[], &zero, &[]).unwrap();
        assert_eq!(buf, [0x08, 0x01, 0x12, 0x00, 0x22, 0x04, 0, 0, 0, 0]);
        let buf = serialize_tensor(TensorDType::Float32, &[0], &[], &[]).unwrap();
        assert_eq!(buf, [0x08, 0x01, 0x12, 0x02, 0x12, 0x00]);
        assert_eq!(parse(&buf, TensorDType::Float32).unwrap().dims, vec![0]);
    }

    fn proto(dtype: u64, dims: &[i64], fields: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        wire::put_tag(&mut out, 1, wire::VARINT);
        wire::put_varint(&mut out, dtype);
        let mut shape = Vec::new();
        for &d in dims {
            let mut dim = Vec::new();
            wire::put_tag(&mut dim, 1, wire::VARINT);
            wire::put_varint(&mut dim, d as u64);
            wire::put_tag(&mut shape, 2, wire::LEN);
            wire::put_varint(&mut shape, dim.len() as u64);
            shape.extend(dim);
        }
        wire::put_tag(&mut out, 2, wire::LEN);
        wire::put_varint(&mut out, shape.len() as u64);
        out.extend(shape);
        for (f, payload) in fields {
            wire::put_tag(&mut out, *f, wire::LEN);
            wire::put_varint(&mut out, payload.len() as u64);
            out.extend(payload);
        }
        out
    }

    #[test]
    fn repeated_values_fill_the_shape_with_the_last() {
        let vals: Vec<u8> = [1f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let buf = proto(1, &[4], &[(5, vals)]);
        let got = parse(&buf, TensorDType::Float32).unwrap();
        let floats: Vec<f32> = got
            .data
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(floats, [1.0, 2.0, 2.0, 2.0]);
        // int_val of an int8 tensor truncates as a C cast does: 300 -> 44
        let buf = proto(6, &[3], &[(7, vec![0xac, 0x02, 0x7f])]);
        assert_eq!(parse(&buf, TensorDType::Int8).unwrap().data, [44, 127, 127]);
    }

    #[test]
    fn claims_and_damage_are_errors() {
        // A shape claiming 2**40 elements from one value is refused, not allocated.
        let buf = proto(1, &[1 << 20, 1 << 20], &[(5, vec![0, 0, 0, 0])]);
        assert!(parse(&buf, TensorDType::Float32).is_err());
        let buf = proto(1, &[3], &[(4, vec![0; 8])]);
        assert!(parse(&buf, TensorDType::Float32).is_err());
        let buf = proto(1, &[2], &[]);
        let err = parse(&buf, TensorDType::Float64).unwrap_err();
        assert!(err.message.contains("holds float32, not float64"), "{err}");
        assert!(parse(b"\xff\xff", TensorDType::Float32).is_err());
        assert!(parse(&proto(99, &[], &[]), TensorDType::Float32).is_err());
        let two = [proto(3, &[1], &[]), proto(3, &[2], &[])];
        let slices: Vec<&[u8]> = two.iter().map(Vec::as_slice).collect();
        let err = parse_tensors(&slices, TensorDType::Int32).unwrap_err();
        assert_eq!(err.record_index, Some(1));
    }

    #[test]
    fn filling_in_is_bounded_for_the_whole_stack() {
        // One string repeated 2M times costs about 120 MB filled in: one such tensor
        // parses, three stacked would pass the bound and are refused at the one that does.
        let one = proto(7, &[2 << 20], &[(8, b"xy".to_vec())]);
        let got = parse(&one, TensorDType::String).unwrap();
        assert_eq!(got.strings.len(), 2 << 20);
        assert!(got.filled <= MAX_FILL);
        let three = [one.as_slice(), one.as_slice(), one.as_slice()];
        let err = parse_tensors(&three, TensorDType::String).unwrap_err();
        assert_eq!(err.record_index, Some(2), "{err}");
        assert!(err.message.contains("filled in for a stack"), "{err}");
        // The same for numbers: 40M float32 from one value is 160 MB, two are refused.
        let one = proto(1, &[40 << 20], &[(5, vec![0, 0, 128, 63])]);
        assert_eq!(
            parse(&one, TensorDType::Float32).unwrap().filled,
            4 * (40 << 20) - 4
        );
        let err = parse_tensors(&[&one, &one], TensorDType::Float32).unwrap_err();
        assert_eq!(err.record_index, Some(1), "{err}");
    }

    #[test]
    fn fuzzed_string_stack_stays_bounded() {
        // Found by the tensor_parse fuzz target: string tensors whose shapes ask for
        // millions of copies of a short string, three in one stack.
        let data: &[u8] = &[
            8, 7, 8, 7, 18, 8, 18, 2, 8, 2, 18, 2, 8, 7, 18, 8, 18, 2, 8, 2, 18, 2, 8, 97, 66, 0,
            66, 3, 120, 121, 2, 18, 8, 18, 2, 8, 2, 18, 2, 8, 7, 18, 8, 18, 2, 8, 2, 18, 2, 8, 97,
            66, 0, 66, 3, 120, 121, 2, 66, 1, 97, 66, 0, 66, 3, 97, 66, 0, 66, 3, 120, 121, 2, 66,
            1, 97, 66, 0, 66, 3, 120, 121, 113,
        ];
        let (a, b) = data.split_at(data.len() / 2);
        for stack in [vec![data], vec![a, b, data]] {
            if let Ok(got) = parse_tensors(&stack, TensorDType::String) {
                assert!(got.filled <= MAX_FILL);
            }
        }
    }
}
