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

/// Integers without padding: every byte of a value is initialised.
trait Plain: Copy {}
impl Plain for i32 {}
impl Plain for u32 {}

/// The bytes of a slice of integers, in native order.
fn bytes_of<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: `T` is a plain integer (no padding, every byte initialised);
    // u8 needs no alignment; the length is the slice's size in bytes, and
    // the borrow keeps the memory alive.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

pub(crate) fn i32_array<'py>(py: Python<'py>, v: &[i32], shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    array(py, bytes_of(v), "=i4", shape)
}

pub(crate) fn u32_array<'py>(py: Python<'py>, v: &[u32], shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    array(py, bytes_of(v), "=u4", shape)
}
