//! Image decoding options and single-call decoding.

use std::sync::Arc;

use numpy::ndarray::Array1;
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use tfrecordkit_core::image::{
    decode_batch, decode_image as decode_one, Augment, Filter, ImageSpec as CoreSpec, PixelBatch,
    PixelPool, PixelType, Pixels, DEFAULT_MAX_PIXELS,
};

use crate::errors::IntoPyResult;
use crate::parse::ParsedPy;

/// How `decode_image` decodes, resizes and augments; see `tfrecordkit.image.decode`.
#[pyclass(module = "tfrecordkit._core", frozen)]
pub struct ImageSpec {
    pub spec: CoreSpec,
}

#[pymethods]
impl ImageSpec {
    #[new]
    #[pyo3(signature = (
        channels=3, size=None, dtype="float32", resize="bilinear", crop_scale=None,
        crop_ratio=(0.75, 4.0 / 3.0), flip=false, max_pixels=DEFAULT_MAX_PIXELS
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        channels: u8,
        size: Option<(usize, usize)>,
        dtype: &str,
        resize: &str,
        crop_scale: Option<(f32, f32)>,
        crop_ratio: (f32, f32),
        flip: bool,
        max_pixels: usize,
    ) -> PyResult<Self> {
        crate::errors::guard("ImageSpec.new", || {
            let dtype = match dtype {
                "float32" => PixelType::F32,
                "uint8" => PixelType::U8,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "dtype must be 'float32' or 'uint8', not {other:?}"
                    )))
                }
            };
            let filter = match resize {
                "bilinear" => Filter::Bilinear,
                "nearest" => Filter::Nearest,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "resize must be 'bilinear' or 'nearest', not {other:?}"
                    )))
                }
            };
            let augment = (crop_scale.is_some() || flip).then_some(Augment {
                crop_scale,
                crop_ratio,
                flip,
            });
            let spec = CoreSpec {
                channels,
                size,
                dtype,
                filter,
                augment,
                max_pixels,
            };
            spec.validate().py_err(py)?;
            Ok(ImageSpec { spec })
        })
    }
}

enum Owned {
    U8(Array1<u8>),
    F32(Array1<f32>),
}

/// The buffer of a decoded batch, lent to the NumPy array built over it and handed back
/// to its pipeline's pool when that array is freed.
#[pyclass(module = "tfrecordkit._core", frozen)]
pub struct PooledPixels {
    data: Option<Owned>,
    pool: Arc<PixelPool>,
}

impl Drop for PooledPixels {
    fn drop(&mut self) {
        let pixels = match self.data.take() {
            Some(Owned::U8(a)) => Pixels::U8(a.into_raw_vec_and_offset().0),
            Some(Owned::F32(a)) => Pixels::F32(a.into_raw_vec_and_offset().0),
            None => return,
        };
        self.pool.give(pixels);
    }
}

/// Converts decoded pixels to `(flat array, shape, None)`, the shape of a parsed feature.
/// With a pool, the array's memory goes back to it when the array is freed.
pub fn pixels_to_py<'py>(
    py: Python<'py>,
    batch: PixelBatch,
    pool: Option<&Arc<PixelPool>>,
) -> PyResult<ParsedPy<'py>> {
    let Some(pool) = pool else {
        let values = match batch.pixels {
            Pixels::U8(v) => PyArray1::from_vec(py, v).into_any(),
            Pixels::F32(v) => PyArray1::from_vec(py, v).into_any(),
        };
        return Ok((values, batch.shape, None));
    };
    let data = match batch.pixels {
        Pixels::U8(v) => Owned::U8(Array1::from_vec(v)),
        Pixels::F32(v) => Owned::F32(Array1::from_vec(v)),
    };
    let owner = Bound::new(
        py,
        PooledPixels {
            data: Some(data),
            pool: Arc::clone(pool),
        },
    )?;
    let container = owner.clone().into_any();
    // SAFETY: `owner` becomes the array's base object, and the buffer it holds is never
    // touched, moved or reallocated until `owner` is dropped, after the array.
    let values = unsafe {
        match &owner.get().data {
            Some(Owned::U8(a)) => PyArray1::borrow_from_array(a, container).into_any(),
            Some(Owned::F32(a)) => PyArray1::borrow_from_array(a, container).into_any(),
            None => unreachable!("set above"),
        }
    };
    Ok((values, batch.shape, None))
}

/// Decodes encoded images (a list of bytes) into one `[n, h, w, c]` array, image `i`
/// augmented with `seeds[i]`.
#[pyfunction]
pub fn decode_images<'py>(
    py: Python<'py>,
    images: &Bound<'py, PyList>,
    spec: &ImageSpec,
    seeds: Vec<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    crate::errors::guard("decode_images", || {
        let items: Vec<Bound<'py, PyBytes>> = images
            .iter()
            .map(|i| i.cast_into::<PyBytes>().map_err(PyErr::from))
            .collect::<PyResult<_>>()?;
        let slices: Vec<&[u8]> = items.iter().map(|b| b.as_bytes()).collect();
        let batch = py
            .detach(|| decode_batch(&slices, &seeds, &spec.spec, None))
            .py_err(py)?;
        let (values, shape, _) = pixels_to_py(py, batch, None)?;
        values.call_method1("reshape", (shape,))
    })
}

/// Decodes one encoded image into a `[h, w, c]` array, augmented with `seed`.
#[pyfunction]
pub fn decode_image<'py>(
    py: Python<'py>,
    image: &Bound<'py, PyBytes>,
    spec: &ImageSpec,
    seed: u64,
) -> PyResult<Bound<'py, PyAny>> {
    crate::errors::guard("decode_image", || {
        let data = image.as_bytes();
        let batch = py
            .detach(|| decode_one(data, seed, &spec.spec))
            .py_err(py)?;
        let (values, shape, _) = pixels_to_py(py, batch, None)?;
        values.call_method1("reshape", (shape,))
    })
}
