//! NumPy arrays from Rust buffers, made by NumPy itself
//! (`numpy.frombuffer`), so that the module links against no NumPy ABI.

use pyo3::prelude::*;
use pyo3::types::PyByteArray;

fn array<'py>(py: Python<'py>, bytes: &[u8], dtype: &str, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let buf = PyByteArray::new(py, bytes);
    np.getattr("frombuffer")?.call1((buf, dtype))?.call_method1("reshape", (shape.to_vec(),))
}

pub(crate) fn u8_array<'py>(py: Python<'py>, v: Vec<u8>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    array(py, &v, "u1", shape)
}

pub(crate) fn bool_array<'py>(py: Python<'py>, v: Vec<u8>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    array(py, &v, "?", shape)
}

pub(crate) fn i32_array<'py>(py: Python<'py>, v: &[i32], shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    array(py, &bytes, "=i4", shape)
}

pub(crate) fn u32_array<'py>(py: Python<'py>, v: &[u32], shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    array(py, &bytes, "=u4", shape)
}
