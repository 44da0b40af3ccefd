//! The doorway to skulk_logits: a greedy token from a row of logits llama.cpp wrote.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The first highest of the `count` f32 logits at `address` (a row llama.cpp returned by
/// `llama_get_logits_ith`, valid until its next decode), or None when the row holds a
/// NaN or an infinity.
#[pyfunction]
fn greedy_token(address: usize, count: usize) -> PyResult<Option<usize>> {
    if address == 0 || count == 0 || !address.is_multiple_of(std::mem::align_of::<f32>()) {
        return Err(PyValueError::new_err(format!(
            "no row of logits at {address:#x} ({count} values)"
        )));
    }
    // SAFETY: the caller passes the address and length of a row llama.cpp owns and does
    // not write until its next decode, which cannot run while this call holds the GIL.
    let row = unsafe { std::slice::from_raw_parts(address as *const f32, count) };
    Ok(skulk_logits::greedy(row))
}

pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(greedy_token, m)?)?;
    Ok(())
}
