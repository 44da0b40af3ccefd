//! The doorway to a runner's relay (skulk_stream): Python starts it on the runner's pipe,
//! makes a stream direct once its response is under way, and takes it back with what the
//! relay wrote and what it could not.

use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use skulk_stream::direct::DirectStream;
use skulk_stream::relay::{self, Shared};

use crate::os_error;

/// One runner's relay thread and the streams it writes.
#[pyclass(frozen, module = "skulk._native")]
struct Relay {
    shared: Arc<Shared>,
}

/// What `Relay.release` hands back: the tokens delivered, the text and tokens not sent
/// (one delta for Python to send), the end of an event the socket took only part of
/// (Python writes it first), whether the client was gone, events written, gaps (s).
type Released = (Vec<i32>, String, Vec<i32>, Py<PyBytes>, bool, u64, Vec<f64>);

#[pymethods]
impl Relay {
    /// Read `runner_fd` on a thread of its own, passing on to `onward_fd` what is not a
    /// direct stream's; both descriptors become the relay's to close.
    #[new]
    fn new(runner_fd: RawFd, onward_fd: RawFd) -> PyResult<Self> {
        // SAFETY: the caller hands both descriptors over (the doorway's documented rule).
        let (runner, onward) = unsafe {
            (
                OwnedFd::from_raw_fd(runner_fd),
                OwnedFd::from_raw_fd(onward_fd),
            )
        };
        let shared = Arc::new(Shared::default());
        relay::start(runner, onward, shared.clone()).map_err(os_error)?;
        Ok(Relay { shared })
    }

    /// Write `task_id`'s plain tokens to `socket_fd` from now on, each as `head`, its text
    /// as JSON, `tail`, in one HTTP/1.1 chunk, if Python has handled all `handled` pieces
    /// passed on for it; False leaves the stream on Python's path.
    fn activate(
        &self,
        py: Python<'_>,
        task_id: &str,
        handled: u64,
        socket_fd: RawFd,
        head: Vec<u8>,
        tail: Vec<u8>,
    ) -> PyResult<bool> {
        // SAFETY: the descriptor is open for this call (the caller's socket); the relay
        // keeps a duplicate of its own, so the number it writes to is never reused.
        let socket = unsafe { BorrowedFd::borrow_raw(socket_fd) }
            .try_clone_to_owned()
            .map_err(os_error)?;
        let stream = DirectStream::new(socket, head, tail);
        Ok(py.detach(|| self.shared.streams().activate(task_id, handled, stream)))
    }

    /// Take `task_id`'s stream back (None: it was not direct); the relay will not write
    /// to its socket again.
    fn release(&self, py: Python<'_>, task_id: &str) -> Option<Released> {
        let released = py.detach(|| self.shared.streams().release(task_id))?;
        Some((
            released.written_tokens,
            released.pending_text,
            released.pending_tokens,
            PyBytes::new(py, &released.unsent).unbind(),
            released.gone,
            released.events,
            released.gaps,
        ))
    }

    /// Tokens of `task_id` written to its socket since the last call.
    fn take_relayed(&self, task_id: &str) -> u64 {
        self.shared.streams().take_relayed(task_id)
    }

    /// The task ended: forget its count of pieces passed on.
    fn forget(&self, task_id: &str) {
        self.shared.streams().forget(task_id);
    }

    /// `time.monotonic()` of the runner's last bytes.
    fn heard_at(&self) -> f64 {
        self.shared.heard_at_seconds()
    }

    /// Streams direct now.
    fn direct_streams(&self) -> usize {
        self.shared.streams().direct_count()
    }
}

pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Relay>()?;
    Ok(())
}
