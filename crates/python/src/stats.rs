//! The statistics pass, and its report as plain dicts and lists.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use tfrecordkit_core::stats::{
    Anomaly, BytesSummary, FeatureSummary, ImageSummary, NumSummary, SplitSummary,
};
use tfrecordkit_core::{Compression, ReadOptions};

use crate::errors::IntoPyResult;

/// Statistics over the Examples of named groups of files, read once, a step per call.
#[pyclass(module = "tfrecordkit._core")]
pub struct StatsPass {
    inner: tfrecordkit_core::stats::StatsPass,
}

#[pymethods]
impl StatsPass {
    #[new]
    #[pyo3(signature = (splits, compression="auto", threads=0, opener=None))]
    fn new(
        py: Python<'_>,
        splits: Vec<(String, Vec<String>)>,
        compression: Option<&str>,
        threads: usize,
        opener: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        crate::errors::guard("StatsPass.new", || {
            let opts = ReadOptions {
                compression: Compression::parse(compression).py_err(py)?,
                ..ReadOptions::default()
            };
            let opener = crate::opener::shared(opener);
            Ok(StatsPass {
                inner: tfrecordkit_core::stats::StatsPass::new(splits, opts, opener, threads),
            })
        })
    }

    /// Reads and counts about `max_records` more records; returns how many it counted.
    fn step(&mut self, py: Python<'_>, max_records: u64) -> PyResult<u64> {
        crate::errors::guard("StatsPass.step", || {
            let inner = &mut self.inner;
            py.detach(|| inner.step(max_records)).py_err(py)
        })
    }

    #[getter]
    fn records(&self) -> u64 {
        self.inner.records()
    }

    #[getter]
    fn done(&self) -> bool {
        self.inner.done()
    }

    /// `{"total", "splits", "baseline", "anomalies"}` of what was read.
    #[pyo3(signature = (baseline=None, threshold=0.1, top=10))]
    fn report<'py>(
        &self,
        py: Python<'py>,
        baseline: Option<&str>,
        threshold: f64,
        top: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::errors::guard("StatsPass.report", || {
            let inner = &self.inner;
            let report = py
                .detach(|| inner.report(baseline, threshold, top))
                .py_err(py)?;
            let out = PyDict::new(py);
            out.set_item("total", split(py, &report.total)?)?;
            let splits = report
                .splits
                .iter()
                .map(|s| split(py, s))
                .collect::<PyResult<Vec<_>>>()?;
            out.set_item("splits", PyList::new(py, splits)?)?;
            out.set_item("baseline", report.baseline)?;
            let anomalies = report
                .anomalies
                .iter()
                .map(|a| anomaly(py, a))
                .collect::<PyResult<Vec<_>>>()?;
            out.set_item("anomalies", PyList::new(py, anomalies)?)?;
            Ok(out)
        })
    }
}

fn split<'py>(py: Python<'py>, s: &SplitSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &s.name)?;
    d.set_item("files", s.files)?;
    d.set_item("records", s.records)?;
    d.set_item("uncounted_features", s.uncounted_features)?;
    let features = PyDict::new(py);
    for f in &s.features {
        features.set_item(&f.name, feature(py, f)?)?;
    }
    d.set_item("features", features)?;
    Ok(d)
}

fn feature<'py>(py: Python<'py>, f: &FeatureSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("present", f.present)?;
    d.set_item("missing", f.missing)?;
    let kinds = PyDict::new(py);
    for (k, n) in &f.kinds {
        kinds.set_item(k, n)?;
    }
    d.set_item("kinds", kinds)?;
    d.set_item("values", f.values)?;
    d.set_item("list_lengths", &f.lengths)?;
    if let Some(n) = &f.numbers {
        d.set_item("numbers", numbers(py, n)?)?;
    }
    if let Some(b) = &f.bytes {
        d.set_item("bytes", bytes(py, b)?)?;
    }
    Ok(d)
}

fn numbers<'py>(py: Python<'py>, n: &NumSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (key, v) in [
        ("count", n.count),
        ("nan", n.nan),
        ("infinite", n.infinite),
        ("zeros", n.zeros),
    ] {
        d.set_item(key, v)?;
    }
    for (key, v) in [
        ("min", n.min),
        ("max", n.max),
        ("mean", n.mean),
        ("std", n.std),
    ] {
        d.set_item(key, v)?;
    }
    d.set_item("integers", n.integers)?;
    d.set_item("quantiles", &n.quantiles)?;
    d.set_item("histogram", &n.histogram)?;
    Ok(d)
}

fn bytes<'py>(py: Python<'py>, b: &BytesSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", b.count)?;
    d.set_item("distinct", b.distinct)?;
    d.set_item("distinct_exact", b.distinct_exact)?;
    let top = PyList::empty(py);
    for t in &b.top {
        top.append((PyBytes::new(py, &t.sample), t.len, t.count))?;
    }
    d.set_item("top", top)?;
    d.set_item("top_exact", b.top_exact)?;
    d.set_item("min_length", b.min_len)?;
    d.set_item("max_length", b.max_len)?;
    d.set_item("mean_length", b.mean_len)?;
    d.set_item("length_histogram", &b.length_histogram)?;
    if let Some(i) = &b.images {
        d.set_item("images", images(py, i)?)?;
    }
    Ok(d)
}

fn images<'py>(py: Python<'py>, i: &ImageSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", i.count)?;
    let formats = PyDict::new(py);
    for (f, n) in &i.formats {
        formats.set_item(f, n)?;
    }
    d.set_item("formats", formats)?;
    d.set_item("undecodable", i.undecodable)?;
    let sizes: Vec<(u32, u32, u64)> = i.sizes.iter().map(|((w, h), n)| (*w, *h, *n)).collect();
    d.set_item("sizes", sizes)?;
    d.set_item("other_sizes", i.other_sizes)?;
    Ok(d)
}

fn anomaly<'py>(py: Python<'py>, a: &Anomaly) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", a.kind)?;
    d.set_item("feature", &a.feature)?;
    d.set_item("split", &a.split)?;
    d.set_item("value", a.value)?;
    d.set_item("message", &a.message)?;
    Ok(d)
}
