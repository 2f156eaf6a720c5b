//! Python values to `Feature`s (TensorFlow's coercion rules) and back.

use std::borrow::Cow;

use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyUnicodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use tfrecordkit_core::Feature;

#[derive(Clone, Copy, PartialEq)]
enum Cat {
    Int,
    Float,
    Bytes,
}

enum Scalar {
    Int(i64),
    Float(f32),
    Bytes(Vec<u8>),
}

fn int_of(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract::<i64>().map_err(|_| {
        PyOverflowError::new_err(format!(
            "integer {} is out of the int64 range of an Int64List",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

/// What a common NumPy scalar is stored as.
#[derive(Clone, Copy)]
enum NumpyScalar {
    Int,
    Float,
    Bool,
}

/// NumPy's fixed-width integer, float32 / float16 and bool scalar types (float64 is a
/// Python float already).
static NUMPY_SCALARS: PyOnceLock<Vec<(Py<PyType>, NumpyScalar)>> = PyOnceLock::new();

/// How a scalar of one of the common NumPy types is stored, found by its exact type: the
/// rows of a generator are often items of NumPy arrays, and asking each for its dtype
/// costs more than the rest of its conversion.
fn numpy_scalar_kind(obj: &Bound<'_, PyAny>) -> PyResult<Option<NumpyScalar>> {
    let py = obj.py();
    let types = NUMPY_SCALARS.get_or_try_init(py, || {
        let np = py.import("numpy")?;
        let named = [
            ("int8", NumpyScalar::Int),
            ("int16", NumpyScalar::Int),
            ("int32", NumpyScalar::Int),
            ("int64", NumpyScalar::Int),
            ("uint8", NumpyScalar::Int),
            ("uint16", NumpyScalar::Int),
            ("uint32", NumpyScalar::Int),
            ("uint64", NumpyScalar::Int),
            ("float32", NumpyScalar::Float),
            ("float16", NumpyScalar::Float),
            ("bool_", NumpyScalar::Bool),
        ];
        named
            .into_iter()
            .map(|(name, kind)| Ok((np.getattr(name)?.cast_into::<PyType>()?.unbind(), kind)))
            .collect::<PyResult<Vec<_>>>()
    })?;
    let t = obj.get_type();
    Ok(types
        .iter()
        .find(|(numpy_type, _)| t.is(numpy_type.bind(py)))
        .map(|&(_, kind)| kind))
}

/// A Python scalar as an Example value, or `None` if it is not a scalar.
fn scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Some(Scalar::Int(i64::from(b.is_true()))));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Some(Scalar::Int(int_of(obj)?)));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Some(Scalar::Float(f.value() as f32)));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(Scalar::Bytes(b.as_bytes().to_vec())));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Some(Scalar::Bytes(s.to_str()?.as_bytes().to_vec())));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Some(Scalar::Bytes(b.to_vec())));
    }
    if let Some(kind) = numpy_scalar_kind(obj)? {
        return Ok(Some(match kind {
            NumpyScalar::Int => Scalar::Int(int_of(obj)?),
            NumpyScalar::Float => Scalar::Float(obj.extract::<f64>()? as f32),
            NumpyScalar::Bool => Scalar::Int(i64::from(obj.is_truthy()?)),
        }));
    }
    // Other NumPy scalars (np.longdouble, datetimes, subclasses of the types above...) and
    // 0-d arrays, by their dtype's kind; never by `.item()`, which may return the same type
    // again.
    if obj.hasattr("dtype")? {
        let is_0d = match obj.cast::<PyUntypedArray>() {
            Ok(a) => a.ndim() == 0,
            Err(_) => true,
        };
        if is_0d {
            let kind: String = obj.getattr("dtype")?.getattr("kind")?.extract()?;
            let builtins = obj.py().import("builtins")?;
            return Ok(Some(match kind.as_str() {
                "b" => Scalar::Int(i64::from(obj.is_truthy()?)),
                "i" | "u" => Scalar::Int(int_of(&builtins.getattr("int")?.call1((obj,))?)?),
                "f" => {
                    Scalar::Float(builtins.getattr("float")?.call1((obj,))?.extract::<f64>()? as f32)
                }
                "S" => Scalar::Bytes(builtins.getattr("bytes")?.call1((obj,))?.extract()?),
                "U" => Scalar::Bytes(
                    builtins
                        .getattr("str")?
                        .call1((obj,))?
                        .extract::<String>()?
                        .into_bytes(),
                ),
                "O" => {
                    return scalar(&obj.call_method0("item")?).and_then(|s| {
                        s.ok_or_else(|| type_error(obj, "unsupported object"))
                            .map(Some)
                    })
                }
                _ => return Err(type_error(obj, "unsupported NumPy dtype")),
            }));
        }
    }
    Ok(None)
}

/// The bytes of a bytes-like object (bytes, bytearray, memoryview or any buffer).
pub fn bytes_like<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    let view = obj
        .py()
        .import("builtins")?
        .getattr("memoryview")?
        .call1((obj,))
        .map_err(|_| type_error_plain(obj, "a bytes-like object"))?;
    Ok(Cow::Owned(view.call_method0("tobytes")?.extract()?))
}

fn type_error_plain(obj: &Bound<'_, PyAny>, expected: &str) -> PyErr {
    let tname = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("expected {expected}, not {tname}"))
}

fn type_error(obj: &Bound<'_, PyAny>, what: &str) -> PyErr {
    let tname = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!(
        "cannot store {tname} in an Example feature: {what}"
    ))
}

fn from_scalars<'py>(
    items: impl Iterator<Item = PyResult<Bound<'py, PyAny>>>,
) -> PyResult<Feature> {
    let mut cat: Option<Cat> = None;
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    let mut bytes = Vec::new();
    for item in items {
        let item = item?;
        let Some(s) = scalar(&item)? else {
            return Err(type_error(
                &item,
                "list items must be bool, int, float, bytes or str",
            ));
        };
        match (s, cat) {
            (Scalar::Int(v), None | Some(Cat::Int)) => {
                cat = Some(Cat::Int);
                ints.push(v);
            }
            (Scalar::Int(v), Some(Cat::Float)) => floats.push(v as f32),
            (Scalar::Float(v), None | Some(Cat::Float)) => {
                cat = Some(Cat::Float);
                floats.push(v);
            }
            (Scalar::Float(v), Some(Cat::Int)) => {
                cat = Some(Cat::Float);
                floats.extend(ints.drain(..).map(|i| i as f32));
                floats.push(v);
            }
            (Scalar::Bytes(b), None | Some(Cat::Bytes)) => {
                cat = Some(Cat::Bytes);
                bytes.push(b);
            }
            _ => {
                return Err(PyTypeError::new_err(
                    "a feature's values must be all numbers or all bytes/str, not a mix",
                ))
            }
        }
    }
    Ok(match cat {
        None => Feature::Empty,
        Some(Cat::Int) => Feature::Int64(ints),
        Some(Cat::Float) => Feature::Float(floats),
        Some(Cat::Bytes) => Feature::Bytes(bytes),
    })
}

fn from_array(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Feature> {
    // 1-D contiguous int64 and float32 arrays (a row of a 2-D array among them) are
    // copied as they are, without a flattened or converted array in between.
    if let Ok(a) = arr.cast::<PyArray1<i64>>() {
        if let Ok(Ok(values)) = a.try_readonly().map(|r| r.as_slice().map(<[i64]>::to_vec)) {
            return Ok(Feature::Int64(values));
        }
    }
    if let Ok(a) = arr.cast::<PyArray1<f32>>() {
        if let Ok(Ok(values)) = a.try_readonly().map(|r| r.as_slice().map(<[f32]>::to_vec)) {
            return Ok(Feature::Float(values));
        }
    }
    let kind = arr.dtype().kind();
    let flat = arr.call_method0("ravel")?;
    match kind {
        b'b' | b'i' | b'u' => {
            if kind == b'u' && arr.dtype().itemsize() == 8 && arr.len() > 0 {
                let max: u64 = flat.call_method0("max")?.extract()?;
                if max > i64::MAX as u64 {
                    return Err(PyOverflowError::new_err(format!(
                        "uint64 value {max} is out of the int64 range of an Int64List"
                    )));
                }
            }
            let cast = flat.call_method1("astype", ("int64",))?;
            let typed = cast.cast::<PyArray1<i64>>()?.readonly();
            Ok(Feature::Int64(typed.as_slice()?.to_vec()))
        }
        b'f' => {
            if let Ok(f32s) = flat.cast::<PyArray1<f32>>() {
                return Ok(Feature::Float(f32s.to_vec()?));
            }
            // Wider or narrower floats go through float64; the cast to float32 saturates
            // to infinity as Python's own float conversion does, without NumPy warnings.
            let wide = flat.call_method1("astype", ("float64",))?;
            let typed = wide.cast::<PyArray1<f64>>()?.readonly();
            Ok(Feature::Float(
                typed.as_slice()?.iter().map(|&v| v as f32).collect(),
            ))
        }
        b'S' | b'U' | b'O' => {
            if arr.len() == 0 {
                return Ok(Feature::Bytes(Vec::new()));
            }
            let items = flat.call_method0("tolist")?;
            from_scalars(items.try_iter()?)
        }
        _ => Err(type_error(arr.as_any(), "unsupported array dtype")),
    }
}

/// Converts one Python value (scalar, list/tuple, or ndarray) into a `Feature`.
pub fn to_feature(obj: &Bound<'_, PyAny>) -> PyResult<Feature> {
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        if arr.ndim() > 0 {
            return from_array(arr);
        }
    }
    // Lists before scalars: `scalar` ends by asking for a `dtype` attribute, which a list
    // answers with an AttributeError that costs more than the rest of its conversion.
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return from_scalars(obj.try_iter()?);
    }
    if let Some(s) = scalar(obj)? {
        return Ok(match s {
            Scalar::Int(v) => Feature::Int64(vec![v]),
            Scalar::Float(v) => Feature::Float(vec![v]),
            Scalar::Bytes(b) => Feature::Bytes(vec![b]),
        });
    }
    if obj.hasattr("__iter__")? && !obj.is_instance_of::<PyDict>() {
        return from_scalars(obj.try_iter()?);
    }
    Err(type_error(
        obj,
        "expected bool, int, float, bytes, str, a list of them, or a NumPy array",
    ))
}

/// Converts a mapping of name → value into `(name, Feature)` pairs, in iteration order.
pub fn to_features(mapping: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Feature)>> {
    let items = mapping.call_method0("items")?;
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        out.push(named_feature(&key, &value, to_feature)?);
    }
    Ok(out)
}

/// `value` as the feature `key` names, by `convert`; an error names the feature.
fn named_feature<'py>(
    key: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    convert: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<Feature>,
) -> PyResult<(String, Feature)> {
    let key: String = key.extract().map_err(|_| {
        if key.is_instance_of::<PyString>() {
            // A str with a lone surrogate has no UTF-8 form.
            return PyValueError::new_err(format!(
                "feature name {} is not valid Unicode text",
                key.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ));
        }
        PyTypeError::new_err(format!("feature names must be str, not {}", key.get_type()))
    })?;
    let feature = convert(value).map_err(|e| {
        let py = value.py();
        if e.is_instance_of::<PyUnicodeError>(py) {
            return PyValueError::new_err(format!(
                "feature {key:?}: a str that is not valid Unicode text ({})",
                e.value(py)
            ));
        }
        let msg = format!("feature {key:?}: {}", e.value(py));
        PyErr::from_type(e.get_type(py), msg)
    })?;
    Ok((key, feature))
}

/// A row as `write_dataset` writes it: its features in order, a `None` value left out,
/// and an empty list or tuple of a feature whose kind `typed` gives (`"int64"`,
/// `"float32"`, else bytes) an empty list of that kind (Python's `typed_empty`).
pub fn row_features(
    row: &Bound<'_, PyDict>,
    typed: &Bound<'_, PyDict>,
) -> PyResult<Vec<(String, Feature)>> {
    let mut out = Vec::with_capacity(row.len());
    for (key, value) in row.iter() {
        if value.is_none() {
            continue;
        }
        let empty = value.cast::<PyList>().is_ok_and(|l| l.is_empty())
            || value.cast::<PyTuple>().is_ok_and(|t| t.is_empty());
        let kind = if empty { typed.get_item(&key)? } else { None };
        let typed_empty = match kind {
            Some(kind) => Some(match kind.extract::<Cow<'_, str>>()?.as_ref() {
                "int64" => Feature::Int64(Vec::new()),
                "float32" => Feature::Float(Vec::new()),
                _ => Feature::Bytes(Vec::new()),
            }),
            None => None,
        };
        let (name, feature) = named_feature(&key, &value, |v| match typed_empty {
            Some(feature) => Ok(feature),
            None => to_feature(v),
        })?;
        // Whole numbers where the feature is float32 (by the schema, or the rows before)
        // are written as the floats they stand for.
        let feature = match feature {
            Feature::Int64(v) if is_float32(typed, &key)? => {
                Feature::Float(v.into_iter().map(|x| x as f32).collect())
            }
            feature => feature,
        };
        out.push((name, feature));
    }
    Ok(out)
}

/// Whether `typed` says the feature `key` is float32.
fn is_float32(typed: &Bound<'_, PyDict>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(match typed.get_item(key)? {
        Some(kind) => kind.extract::<Cow<'_, str>>()? == "float32",
        None => false,
    })
}

/// A decoded `Feature` as Python: int64 / float32 arrays, or a list of bytes.
pub fn feature_to_py<'py>(py: Python<'py>, f: Feature) -> PyResult<Bound<'py, PyAny>> {
    Ok(match f {
        Feature::Empty => PyList::empty(py).into_any(),
        Feature::Int64(v) => PyArray1::from_vec(py, v).into_any(),
        Feature::Float(v) => PyArray1::from_vec(py, v).into_any(),
        Feature::Bytes(v) => PyList::new(py, v.iter().map(|b| PyBytes::new(py, b)))?.into_any(),
    })
}

pub fn features_to_dict<'py>(
    py: Python<'py>,
    features: Vec<(String, Feature)>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, f) in features {
        dict.set_item(k, feature_to_py(py, f)?)?;
    }
    Ok(dict)
}
