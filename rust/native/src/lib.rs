//! `skulk._native`: the Python doorway to Skulk's native crates. Python decides (which
//! certificates, which node each device server must be, who is revoked) and calls in; the
//! bytes flow on llama.cpp's own threads through the crates' hooks, never holding the GIL.
//! Typed for Python in `src/skulk/_native.pyi`.

use std::io;
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use skulk_channel::Log;

mod channel;
mod logits;
mod stream;

pub(crate) fn os_error(error: io::Error) -> PyErr {
    match error.kind() {
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
            PyValueError::new_err(error.to_string())
        }
        _ => PyOSError::new_err(error.to_string()),
    }
}

/// What the channel refused, said through the Python callable `log` (it takes the GIL:
/// only refusals, never the byte path).
pub(crate) fn log_through(log: Py<PyAny>) -> Log {
    Arc::new(move |message: &str| {
        Python::attach(|py| {
            if let Err(error) = log.call1(py, (message,)) {
                error.print(py);
            }
        });
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "HANDSHAKE_TIMEOUT_SECONDS",
        skulk_channel::HANDSHAKE_TIMEOUT.as_secs_f64(),
    )?;
    channel::add_to(m)?;
    logits::add_to(m)?;
    stream::add_to(m)?;
    Ok(())
}
