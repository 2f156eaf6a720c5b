//! The `tfrecordkit._core` extension: conversions between Python and the core crate only.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use tfrecordkit_core::Feature;

mod convert;
mod elements;
mod errors;
mod image;
mod lists;
mod opener;
mod parse;
mod pipeline;
mod plan;
mod records;
mod stacking;
mod stats;
mod table;
mod tensor;
mod threads;

use convert::{bytes_like, feature_to_py, features_to_dict, to_feature, to_features};
use errors::IntoPyResult;

/// Serializes a mapping of feature name → value as a `tf.train.Example`.
#[pyfunction]
fn encode_example<'py>(
    py: Python<'py>,
    features: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    crate::errors::guard("encode_example", || {
        let features = to_features(features)?;
        Ok(PyBytes::new(
            py,
            &tfrecordkit_core::encode_example(&features),
        ))
    })
}

/// Decodes a serialized `tf.train.Example` into a dict.
#[pyfunction]
fn decode_example<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    crate::errors::guard("decode_example", || {
        let features = tfrecordkit_core::decode_example(&bytes_like(data)?).py_err(py)?;
        features_to_dict(py, features)
    })
}

/// Serializes a `tf.train.SequenceExample` from a context mapping and a mapping of
/// feature-list name → sequence of per-step values.
#[pyfunction]
fn encode_sequence_example<'py>(
    py: Python<'py>,
    context: &Bound<'py, PyAny>,
    feature_lists: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    crate::errors::guard("encode_sequence_example", || {
        let context = to_features(context)?;
        let mut lists: Vec<(String, Vec<Feature>)> = Vec::new();
        for item in feature_lists.call_method0("items")?.try_iter()? {
            let (key, steps): (String, Bound<'py, PyAny>) = item?.extract()?;
            let mut feats = Vec::new();
            for step in steps.try_iter()? {
                feats.push(to_feature(&step?)?);
            }
            lists.push((key, feats));
        }
        Ok(PyBytes::new(
            py,
            &tfrecordkit_core::encode_sequence_example(&context, &lists),
        ))
    })
}

/// Decodes a serialized `tf.train.SequenceExample` into `(context, feature_lists)`.
#[pyfunction]
fn decode_sequence_example<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    crate::errors::guard("decode_sequence_example", || {
        let (context, lists) =
            tfrecordkit_core::decode_sequence_example(&bytes_like(data)?).py_err(py)?;
        let context = features_to_dict(py, context)?;
        let out = PyDict::new(py);
        for (k, steps) in lists {
            let items = steps
                .into_iter()
                .map(|f| feature_to_py(py, f))
                .collect::<PyResult<Vec<_>>>()?;
            out.set_item(k, items)?;
        }
        PyTuple::new(py, [context.into_any(), out.into_any()])
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::init(m.py())?;
    m.add_function(wrap_pyfunction!(errors::_selftest_panic, m)?)?;
    m.add_function(wrap_pyfunction!(encode_example, m)?)?;
    m.add_function(wrap_pyfunction!(decode_example, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sequence_example, m)?)?;
    m.add_function(wrap_pyfunction!(decode_sequence_example, m)?)?;
    m.add_function(wrap_pyfunction!(parse::parse_examples, m)?)?;
    m.add_function(wrap_pyfunction!(lists::parse_sequence_lists, m)?)?;
    m.add_function(wrap_pyfunction!(records::count_records, m)?)?;
    m.add_function(wrap_pyfunction!(table::encode_columns, m)?)?;
    m.add_function(wrap_pyfunction!(table::framed_row_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(records::masked_crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(records::read_record_at, m)?)?;
    m.add_function(wrap_pyfunction!(records::read_member, m)?)?;
    m.add_function(wrap_pyfunction!(records::member_records, m)?)?;
    m.add_function(wrap_pyfunction!(records::unframe_records, m)?)?;
    m.add_function(wrap_pyfunction!(records::index_records, m)?)?;
    m.add_function(wrap_pyfunction!(records::parse_index, m)?)?;
    m.add_function(wrap_pyfunction!(records::read_records_at, m)?)?;
    m.add_function(wrap_pyfunction!(records::frame_record, m)?)?;
    m.add_function(wrap_pyfunction!(records::file_crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(records::commit_shard, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline::mix_seed, m)?)?;
    m.add_function(wrap_pyfunction!(stacking::rows, m)?)?;
    m.add_function(wrap_pyfunction!(stacking::stack_dicts, m)?)?;
    m.add_function(wrap_pyfunction!(threads::stop_threads, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline::foreign_format, m)?)?;
    m.add_function(wrap_pyfunction!(image::decode_images, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::parse_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::serialize_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(image::decode_image, m)?)?;
    m.add_class::<image::ImageSpec>()?;
    m.add_class::<parse::CompiledSchema>()?;
    m.add_class::<lists::CompiledLists>()?;
    m.add_class::<records::OffsetReader>()?;
    m.add_class::<table::Table>()?;
    m.add_class::<records::RecordReader>()?;
    m.add_class::<stats::StatsPass>()?;
    m.add_class::<records::RecordWriter>()?;
    m.add_class::<records::RowSummary>()?;
    m.add_function(wrap_pyfunction!(records::encode_row, m)?)?;
    m.add_class::<pipeline::Pipeline>()?;
    m.add_class::<plan::CompiledPlan>()?;
    m.add_class::<elements::ElementPipeline>()?;
    m.add_class::<pipeline::PipelineCache>()?;
    m.add_class::<pipeline::FileOrder>()?;
    m.add_class::<pipeline::Shuffle>()?;
    m.add_class::<pipeline::Shard>()?;
    m.add_class::<pipeline::Skip>()?;
    m.add_class::<pipeline::Take>()?;
    m.add_class::<pipeline::Repeat>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_VALUES", tfrecordkit_core::MAX_VALUES)?;
    m.add("MAX_FILL", tfrecordkit_core::MAX_FILL)?;
    m.add("MAX_PIXELS", tfrecordkit_core::image::DEFAULT_MAX_PIXELS)?;
    Ok(())
}
