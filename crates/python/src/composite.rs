//! The row splits of a ragged feature list from its parsed columns (see the core's
//! `composite` module). Example features are laid out in the parse itself.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tfrecordkit_core::composite::{self, Partition, Rows};

use crate::errors::IntoPyResult;

type Column<'py> = (PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>);

/// The row splits of a batch's ragged feature, outermost (the batch) first, from the value
/// column's row splits and the partitions `(kind, values, row_splits, uniform_length)`.
#[pyfunction]
pub fn ragged_layout<'py>(
    py: Python<'py>,
    key: &str,
    value_splits: PyReadonlyArray1<'py, i64>,
    partitions: Vec<(String, Option<Column<'py>>, i64)>,
) -> PyResult<Vec<Bound<'py, PyArray1<i64>>>> {
    crate::errors::guard("ragged_layout", || {
        let parts: Vec<Partition<'_>> = partitions
            .iter()
            .map(|(kind, column, uniform)| {
                let rows = || -> PyResult<Rows<'_, i64>> {
                    let (v, s) = column
                        .as_ref()
                        .ok_or_else(|| PyValueError::new_err(format!("{kind} needs a column")))?;
                    Ok(Rows {
                        values: v.as_slice()?,
                        splits: s.as_slice()?,
                    })
                };
                Ok(match kind.as_str() {
                    "row_splits" => Partition::RowSplits(rows()?),
                    "row_lengths" => Partition::RowLengths(rows()?),
                    "row_starts" => Partition::RowStarts(rows()?),
                    "row_limits" => Partition::RowLimits(rows()?),
                    "value_rowids" => Partition::ValueRowIds(rows()?),
                    "uniform_row_length" => Partition::UniformRowLength(*uniform),
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "unknown partition {other:?}"
                        )))
                    }
                })
            })
            .collect::<PyResult<_>>()?;
        let splits = value_splits.as_slice()?;
        let levels = py
            .detach(|| composite::ragged_splits(key, splits, &parts))
            .py_err(py)?;
        Ok(levels
            .into_iter()
            .map(|l| PyArray1::from_vec(py, l))
            .collect())
    })
}
