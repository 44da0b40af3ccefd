//! The secure channel's doorway: Python configures it (the node's trust material, which
//! node each device endpoint must be, the revocation list) and installs it into ggml RPC;
//! the bytes then cross on llama.cpp's own threads (skulk_channel::channel).

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use skulk_channel::channel::install;
use skulk_channel::channel_cpu;
use skulk_channel::channel_registry::{self as registry, Settings, REGISTRY};
use skulk_channel::TlsFiles;

use crate::{log_through, os_error};

/// Configure the channel of this process: `tls` is (CA certificate, certificate, key) PEM
/// paths, `peers` maps each device server's `host:port` to the node it must be, `revoked`
/// the nodes refused; `log` hears each refusal.
#[pyfunction]
#[pyo3(signature = (tls, peers, revoked, log))]
fn channel_configure(
    py: Python<'_>,
    tls: (PathBuf, PathBuf, PathBuf),
    peers: HashMap<String, String>,
    revoked: Vec<String>,
    log: Py<PyAny>,
) -> PyResult<()> {
    let (ca_certificate, certificate, private_key) = tls;
    let files = TlsFiles {
        ca_certificate,
        certificate,
        private_key,
    };
    let log = log_through(log);
    py.detach(|| {
        let settings = Settings::new(&files, peers, log)?;
        registry::configure(settings);
        REGISTRY.set_revoked(revoked);
        Ok(())
    })
    .map_err(os_error)
}

/// Hand the channel's hooks to ggml RPC: `setter` is the address of
/// `ggml_backend_rpc_set_channel` in the library libllama uses.
#[pyfunction]
fn channel_install(setter: usize) -> PyResult<()> {
    if setter == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "no ggml_backend_rpc_set_channel",
        ));
    }
    // SAFETY: Python looked the address up by that name in libllama's ggml RPC.
    unsafe { install(setter) };
    Ok(())
}

/// Replace the revocation list; returns how many open links it ended.
#[pyfunction]
fn channel_set_revoked(py: Python<'_>, nodes: Vec<String>) -> usize {
    py.detach(|| REGISTRY.set_revoked(nodes))
}

/// Connections refused so far in this process (not counting a probe that sent nothing).
#[pyfunction]
fn channel_refused() -> u64 {
    REGISTRY.refused()
}

/// Channel links open now in this process.
#[pyfunction]
fn channel_open_links() -> usize {
    REGISTRY.open_links()
}

/// Count the CPU time spent inside the channel's send and recv (a benchmark's reading).
#[pyfunction]
fn channel_measure_cpu(on: bool) {
    channel_cpu::measure(on);
}

/// CPU seconds spent inside the channel's send and recv while measuring, the part of it
/// in their socket calls, and how many calls.
#[pyfunction]
fn channel_cpu_spent() -> (f64, f64, u64) {
    let (inside, socket, calls) = channel_cpu::spent();
    (inside as f64 / 1e9, socket as f64 / 1e9, calls)
}

pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(channel_configure, m)?)?;
    m.add_function(wrap_pyfunction!(channel_install, m)?)?;
    m.add_function(wrap_pyfunction!(channel_set_revoked, m)?)?;
    m.add_function(wrap_pyfunction!(channel_refused, m)?)?;
    m.add_function(wrap_pyfunction!(channel_open_links, m)?)?;
    m.add_function(wrap_pyfunction!(channel_measure_cpu, m)?)?;
    m.add_function(wrap_pyfunction!(channel_cpu_spent, m)?)?;
    Ok(())
}
