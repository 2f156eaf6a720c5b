//! Per-element dicts to and from columns: the rows of a parsed batch handed one Example
//! at a time to a user function, and a batch of the dicts it returns stacked back into
//! arrays, both without NumPy's per-item indexing and conversion.

use numpy::npyffi::{self, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

/// The first `n` rows of a dict of columns, each a dict of the columns' `[i]`: parsed
/// units handed one Example at a time to what follows.
#[pyfunction]
pub fn rows<'py>(columns: &Bound<'py, PyDict>, n: usize) -> PyResult<Bound<'py, PyList>> {
    crate::errors::guard("rows", || {
        let py = columns.py();
        let columns: Vec<(Bound<'py, PyAny>, Column<'py>)> = columns
            .iter()
            .map(|(key, column)| (key, Column::of(column, n)))
            .collect();
        let out = PyList::empty(py);
        for i in 0..n {
            let row = PyDict::new(py);
            for (key, column) in &columns {
                row.set_item(key, column.item(i)?)?;
            }
            out.append(row)?;
        }
        Ok(out)
    })
}

/// A column of parsed values, its items made as NumPy's `column[i]` makes them: straight
/// from a plain 1-D array's memory where it is one (the scalar of a number, the object
/// held), else through the column's own indexing.
enum Column<'py> {
    /// An array of numbers (`descr` their type) or, without `descr`, of objects.
    InMemory {
        array: Bound<'py, PyUntypedArray>,
        descr: Option<Bound<'py, PyArrayDescr>>,
        data: *mut u8,
        stride: isize,
    },
    Other(Bound<'py, PyAny>),
}

impl<'py> Column<'py> {
    /// The column, read from memory when it is an exact 1-D `ndarray` of at least `n`
    /// numbers or objects (not a subclass: a masked array has items of its own).
    fn of(column: Bound<'py, PyAny>, n: usize) -> Self {
        let py = column.py();
        // SAFETY: `column` is a live object; the check reads only its type.
        let exact = unsafe { npyffi::PyArray_CheckExact(py, column.as_ptr()) } != 0;
        if !exact {
            return Column::Other(column);
        }
        let array = column
            .cast_into::<PyUntypedArray>()
            .expect("an exact ndarray");
        if array.ndim() != 1 || array.shape()[0] < n {
            return Column::Other(array.into_any());
        }
        let descr = array.dtype();
        let descr = match descr.kind() {
            b'O' => None,
            _ if is_number(&descr) => Some(descr),
            _ => return Column::Other(array.into_any()),
        };
        // Valid for `shape[0]` items `strides[0]` bytes apart while the array is held here.
        let data = data_of(&array);
        let stride = array.strides()[0];
        Column::InMemory {
            array,
            descr,
            data,
            stride,
        }
    }

    fn item(&self, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let (array, descr, data, stride) = match self {
            Column::InMemory {
                array,
                descr,
                data,
                stride,
            } => (array, descr, *data, *stride),
            Column::Other(column) => return column.get_item(i),
        };
        let py = array.py();
        // SAFETY: `i < shape[0]` (see `Column::of`), so the item lies inside the array's
        // memory.
        let at = unsafe { data.offset(i as isize * stride) };
        match descr {
            // SAFETY: NumPy copies the number into the new scalar (swapping its bytes
            // where they are not native).
            Some(descr) => unsafe {
                let scalar = PY_ARRAY_API.PyArray_Scalar(
                    py,
                    at.cast(),
                    descr.as_dtype_ptr(),
                    array.as_ptr(),
                );
                Bound::from_owned_ptr_or_err(py, scalar)
            },
            // SAFETY: an object array's item is a pointer to a live object, or null where
            // NumPy left it unset, which reads as None.
            None => unsafe {
                let obj = (at as *const *mut ffi::PyObject).read_unaligned();
                Ok(if obj.is_null() {
                    py.None().into_bound(py)
                } else {
                    Bound::from_borrowed_ptr(py, obj)
                })
            },
        }
    }
}

/// Whether `descr` is one of NumPy's number types: bool, integers, floats and complex.
fn is_number(descr: &Bound<'_, PyArrayDescr>) -> bool {
    matches!(descr.kind(), b'b' | b'i' | b'u' | b'f' | b'c')
}

/// Where `array`'s first item is.
fn data_of(array: &Bound<'_, PyUntypedArray>) -> *mut u8 {
    // SAFETY: reading a field of a live array.
    unsafe { (*array.as_array_ptr()).fields.data as *mut u8 }
}

/// `elements` (dicts, each with the keys of the first) stacked key by key as
/// `python_stages.stack` stacks them: a key whose values are NumPy scalars of one type
/// becomes one array of it, and one whose values are all `bytes` or `str` an object
/// array, both filled here; any other key's values go to `stack(values, where)`, `where`
/// naming the key after `prefix`. `None` when the elements are not such dicts, for
/// `stack` to take them whole (and name what differs).
#[pyfunction]
pub fn stack_dicts<'py>(
    elements: &Bound<'py, PyList>,
    prefix: &str,
    stack: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    crate::errors::guard("stack_dicts", || {
        let py = elements.py();
        let dicts: Vec<Bound<'py, PyDict>> = match elements
            .iter()
            .map(|e| e.cast_into_exact::<PyDict>())
            .collect::<Result<_, _>>()
        {
            Ok(dicts) => dicts,
            Err(_) => return Ok(None),
        };
        let Some(first) = dicts.first() else {
            return Ok(None);
        };
        if dicts.iter().any(|d| d.len() != first.len()) {
            return Ok(None);
        }
        let out = PyDict::new(py);
        // The keys as they are now: comparing them runs their `__eq__`, which may change
        // the dicts.
        let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = first.iter().collect();
        for (key, value) in items {
            let mut column = Vec::with_capacity(dicts.len());
            for d in &dicts {
                match d.get_item(&key)? {
                    Some(v) => column.push(v),
                    None => return Ok(None),
                }
            }
            let stacked = match filled(py, &value, &column)? {
                Some(array) => array,
                None => {
                    let at = format!("{prefix}[{}]", key.repr()?);
                    stack.call1((PyList::new(py, column)?, at))?
                }
            };
            out.set_item(key, stacked)?;
        }
        Ok(Some(out))
    })
}

/// `column` as one array, when its values are all NumPy number scalars of `first`'s type,
/// or all `bytes` or `str`; else `None`.
fn filled<'py>(
    py: Python<'py>,
    first: &Bound<'py, PyAny>,
    column: &[Bound<'py, PyAny>],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let n = column.len() as npyffi::npy_intp;
    let tp = first.get_type();
    if first.is_exact_instance_of::<PyBytes>() || first.is_exact_instance_of::<PyString>() {
        let text = |v: &Bound<'py, PyAny>| {
            v.is_exact_instance_of::<PyBytes>() || v.is_exact_instance_of::<PyString>()
        };
        if !column.iter().all(text) {
            return Ok(None);
        }
        let array = empty(py, n, PyArrayDescr::object(py))?;
        // SAFETY: a new object array of `n` items, each a reference to None; each is
        // replaced by a new reference to its value, and the None it held released.
        unsafe {
            let items = data_of(&array) as *mut *mut ffi::PyObject;
            for (i, v) in column.iter().enumerate() {
                let slot = items.add(i);
                ffi::Py_XDECREF(*slot);
                *slot = v.clone().into_ptr();
            }
        }
        return Ok(Some(array.into_any()));
    }
    let generic = py.import("numpy")?.getattr("generic")?;
    // SAFETY: reading the type of live objects.
    let same = |v: &Bound<'py, PyAny>| unsafe { ffi::Py_TYPE(v.as_ptr()) == tp.as_type_ptr() };
    if !first.is_instance(&generic)? || !column.iter().all(same) {
        return Ok(None);
    }
    // SAFETY: `first` is a NumPy scalar; its descriptor is a new reference.
    let descr = unsafe {
        let d = PY_ARRAY_API.PyArray_DescrFromScalar(py, first.as_ptr());
        Bound::from_owned_ptr_or_err(py, d.cast())?.cast_into_unchecked::<PyArrayDescr>()
    };
    if !is_number(&descr) {
        return Ok(None);
    }
    let size = descr.itemsize();
    let array = empty(py, n, descr)?;
    // SAFETY: a new contiguous array of `n` items of the scalars' type; each scalar's
    // value (of that type: checked above) is copied into its item from where NumPy's
    // `PyArrayScalar_VAL` finds it, just past the object's header.
    unsafe {
        let data = data_of(&array);
        let header = std::mem::size_of::<ffi::PyObject>();
        for (i, v) in column.iter().enumerate() {
            let value = (v.as_ptr() as *const u8).add(header);
            std::ptr::copy_nonoverlapping(value, data.add(i * size), size);
        }
    }
    Ok(Some(array.into_any()))
}

/// A new 1-D array of `n` items of `descr` (zeros, or references to None).
fn empty<'py>(
    py: Python<'py>,
    n: npyffi::npy_intp,
    descr: Bound<'py, PyArrayDescr>,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let mut dims = [n];
    // SAFETY: `PyArray_Empty` takes the descriptor's reference, handed over here.
    unsafe {
        let array = PY_ARRAY_API.PyArray_Empty(py, 1, dims.as_mut_ptr(), descr.into_dtype_ptr(), 0);
        Ok(Bound::from_owned_ptr_or_err(py, array)?.cast_into_unchecked::<PyUntypedArray>())
    }
}
