//! `skulk._native`: the Python doorway to Skulk's native crates. Python decides (which
//! ports, which certificates, who is revoked) and calls in; the bytes flow on the crates'
//! own threads, never holding the GIL. Typed for Python in `src/skulk/_native.pyi`.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use skulk_relay::{forward, serve, Log, Relay, TlsFiles};

fn os_error(error: io::Error) -> PyErr {
    match error.kind() {
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
            PyValueError::new_err(error.to_string())
        }
        _ => PyOSError::new_err(error.to_string()),
    }
}

fn tls_files(tls: Option<(PathBuf, PathBuf, PathBuf)>) -> Option<TlsFiles> {
    tls.map(|(ca_certificate, certificate, private_key)| TlsFiles {
        ca_certificate,
        certificate,
        private_key,
    })
}

/// What a relay refused, said through the Python callable `log` (it takes the GIL: only
/// refusals, never the byte path).
fn log_through(log: Py<PyAny>) -> Log {
    Arc::new(move |message: &str| {
        Python::attach(|py| {
            if let Err(error) = log.call1(py, (message,)) {
                error.print(py);
            }
        });
    })
}

/// One listening relay (a members-only server or a head's loopback forwarder).
#[pyclass(frozen, name = "Relay", module = "skulk._native")]
struct PyRelay {
    relay: Relay,
}

#[pymethods]
impl PyRelay {
    /// The port it listens on.
    #[getter]
    fn port(&self) -> u16 {
        self.relay.port
    }

    /// Links refused: a revoked member, or a far end that never said READY.
    #[getter]
    fn refused(&self) -> u64 {
        self.relay.refused()
    }

    /// Links open now.
    #[getter]
    fn open_links(&self) -> usize {
        self.relay.open_links()
    }

    /// Replace the revocation list: links to these nodes are refused, and the open ones
    /// end now. Returns how many open links it ended.
    fn set_revoked(&self, py: Python<'_>, nodes: Vec<String>) -> usize {
        py.detach(|| self.relay.set_revoked(nodes))
    }

    /// Stop listening and end every open link.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.relay.close());
    }
}

/// A relay server on `listen_host:listen_port` (0: any free port) carrying each admitted
/// link to `target` on loopback; `tls` is (CA certificate, certificate, key) PEM paths,
/// or None for plain TCP.
#[pyfunction]
#[pyo3(signature = (listen_host, listen_port, target_host, target_port, tls, revoked, log))]
#[allow(clippy::too_many_arguments)]
fn serve_relay(
    py: Python<'_>,
    listen_host: String,
    listen_port: u16,
    target_host: String,
    target_port: u16,
    tls: Option<(PathBuf, PathBuf, PathBuf)>,
    revoked: Vec<String>,
    log: Py<PyAny>,
) -> PyResult<PyRelay> {
    let files = tls_files(tls);
    let log = log_through(log);
    py.detach(|| {
        serve(
            (&listen_host, listen_port),
            (target_host, target_port),
            files.as_ref(),
            revoked,
            log,
        )
    })
    .map(|relay| PyRelay { relay })
    .map_err(os_error)
}

/// A forwarder on a loopback port carrying each connection to the relay server of
/// `peer_node` at `remote_host:remote_port` (the server's certificate must name it).
#[pyfunction]
#[pyo3(signature = (remote_host, remote_port, tls, peer_node, revoked, log))]
fn forward_relay(
    py: Python<'_>,
    remote_host: String,
    remote_port: u16,
    tls: Option<(PathBuf, PathBuf, PathBuf)>,
    peer_node: Option<String>,
    revoked: Vec<String>,
    log: Py<PyAny>,
) -> PyResult<PyRelay> {
    let files = tls_files(tls);
    let log = log_through(log);
    py.detach(|| {
        forward(
            (remote_host, remote_port),
            files.as_ref(),
            peer_node.as_deref(),
            revoked,
            log,
        )
    })
    .map(|relay| PyRelay { relay })
    .map_err(os_error)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("READY", PyBytes::new(m.py(), &[skulk_relay::READY]))?;
    m.add(
        "HANDSHAKE_TIMEOUT_SECONDS",
        skulk_relay::HANDSHAKE_TIMEOUT.as_secs_f64(),
    )?;
    m.add_class::<PyRelay>()?;
    m.add_function(wrap_pyfunction!(serve_relay, m)?)?;
    m.add_function(wrap_pyfunction!(forward_relay, m)?)?;
    Ok(())
}
