//! The thread that reads one runner's pipe: plain token pieces of direct streams go to
//! their sockets, everything else is passed on, unchanged and in order, to the pipe the
//! node's event loop reads. At the runner's end of file it passes on any torn frame's
//! bytes (Python reports it) and closes that pipe, as the runner's own end would be.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use crate::direct::Streams;
use crate::frames::{frame_of, next_frame, pieces, PLAIN};

const READ_SIZE: usize = 1 << 16;

/// What the relay thread and Python share.
#[derive(Default)]
pub struct Shared {
    streams: Mutex<Streams>,
    /// CLOCK_MONOTONIC nanoseconds of the runner's last bytes (the supervisor's deadlines
    /// read it: tokens written here are progress Python does not see).
    heard_at: AtomicU64,
}

impl Shared {
    pub fn streams(&self) -> MutexGuard<'_, Streams> {
        // A panic while holding the lock would leave counts half-updated: nothing the
        // relay does panics there, and a poisoned lock is still the best state there is.
        self.streams
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn heard_at_seconds(&self) -> f64 {
        self.heard_at.load(Ordering::Relaxed) as f64 / 1e9
    }
}

pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC is Python's time.monotonic.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Start the relay of `runner` (the runner's pipe) into `onward` (Python's); both are the
/// thread's to close.
pub fn start(runner: OwnedFd, onward: OwnedFd, shared: Arc<Shared>) -> io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name("skulk-relay".into())
        .spawn(move || relay(File::from(runner), File::from(onward), &shared))
}

fn relay(mut runner: File, mut onward: File, shared: &Shared) {
    let mut buffer: Vec<u8> = Vec::with_capacity(READ_SIZE);
    let mut out: Vec<u8> = Vec::with_capacity(READ_SIZE);
    loop {
        let start = buffer.len();
        buffer.resize(start + READ_SIZE, 0);
        let read = match runner.read(&mut buffer[start..]) {
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {
                buffer.truncate(start);
                continue;
            }
            Err(_) => 0,
        };
        buffer.truncate(start + read);
        if read == 0 {
            let _ = onward.write_all(&buffer); // a torn frame: Python says so
            return;
        }
        shared.heard_at.store(monotonic_ns(), Ordering::Relaxed);
        let used = split(&buffer, &mut out, shared);
        buffer.drain(..used);
        if !out.is_empty() && onward.write_all(&out).is_err() {
            return; // Python stopped reading: the node is closing this runner
        }
        out.clear();
    }
}

/// The whole frames at the front of `buffer`: direct pieces written, the rest appended to
/// `out`; returns how many bytes they took.
pub fn split(buffer: &[u8], out: &mut Vec<u8>, shared: &Shared) -> usize {
    let mut at = 0;
    while let Some((header, body)) = next_frame(&buffer[at..]) {
        let frame = &buffer[at..at + body.end];
        let body = &frame[body];
        at += frame.len();
        let found = if header & PLAIN != 0 {
            pieces(body)
        } else {
            None
        };
        let Some(found) = found else {
            out.extend_from_slice(frame);
            continue;
        };
        let mut streams = shared.streams();
        let left: Vec<_> = found
            .iter()
            .filter(|piece| !streams.take(piece.task_id, piece.text, &piece.token_ids))
            .map(|piece| piece.span.clone())
            .collect();
        drop(streams);
        if left.len() == found.len() {
            out.extend_from_slice(frame);
        } else if !left.is_empty() {
            out.extend_from_slice(&frame_of(body, &left));
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::direct::DirectStream;
    use crate::frames::HEADER;
    use std::os::unix::net::UnixStream;

    fn plain_frame(pieces: &[(&str, &str, &[i32])]) -> Vec<u8> {
        let mut body = b"[".to_vec();
        body.extend_from_slice(&(pieces.len() as i32).to_le_bytes());
        for (task, text, tokens) in pieces {
            body.extend_from_slice(b"(\x04\x00\x00\x00");
            for value in [*task, "cmd", *text] {
                body.push(b'u');
                body.extend_from_slice(&(value.len() as i32).to_le_bytes());
                body.extend_from_slice(value.as_bytes());
            }
            body.push(b'[');
            body.extend_from_slice(&(tokens.len() as i32).to_le_bytes());
            for token in *tokens {
                body.push(b'i');
                body.extend_from_slice(&token.to_le_bytes());
            }
        }
        let mut frame = (body.len() as u32 | PLAIN).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    }

    fn pickle_frame(body: &[u8]) -> Vec<u8> {
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        frame
    }

    #[test]
    fn frames_pass_on_unchanged_and_in_order_until_a_stream_is_direct() {
        let shared = Shared::default();
        let input = [
            pickle_frame(b"status"),
            plain_frame(&[("a", "x", &[1])]),
            pickle_frame(b"ended"),
        ]
        .concat();
        let mut out = Vec::new();
        assert_eq!(
            split(&input[..input.len() - 1], &mut out, &shared),
            input.len() - HEADER - 5
        );
        out.clear();
        assert_eq!(split(&input, &mut out, &shared), input.len());
        assert_eq!(out, input);
    }

    #[test]
    fn a_direct_piece_leaves_the_frame_and_the_others_stay_in_it() {
        let shared = Shared::default();
        let (server, client) = UnixStream::pair().unwrap();
        client.set_nonblocking(true).unwrap();
        let stream = DirectStream::new(OwnedFd::from(server), b"<".to_vec(), b">".to_vec());
        assert!(shared.streams().activate("d", 0, stream));
        let mut out = Vec::new();
        let step = plain_frame(&[("a", "x", &[1]), ("d", "y", &[2]), ("b", "z", &[3])]);
        split(&step, &mut out, &shared);
        assert_eq!(out, plain_frame(&[("a", "x", &[1]), ("b", "z", &[3])]));
        out.clear();
        split(&plain_frame(&[("d", "w", &[4])]), &mut out, &shared);
        assert!(out.is_empty(), "a step that is all direct wakes nobody");
        let released = shared.streams().release("d").unwrap();
        assert_eq!(released.written_tokens, vec![2, 4]);
        let mut wire = Vec::new();
        let _ = (&client).read_to_end(&mut wire);
        assert_eq!(wire, b"5\r\n<\"y\">\r\n5\r\n<\"w\">\r\n");
    }

    #[test]
    fn the_thread_passes_on_a_torn_frame_and_closes_at_the_runners_end() {
        let (mut runner_end, relay_in) = UnixStream::pair().unwrap();
        let (relay_out, mut python_end) = UnixStream::pair().unwrap();
        let handle = start(
            OwnedFd::from(relay_in),
            OwnedFd::from(relay_out),
            Arc::new(Shared::default()),
        )
        .unwrap();
        let frame = pickle_frame(b"hello");
        runner_end.write_all(&frame).unwrap();
        runner_end.write_all(&frame[..6]).unwrap();
        drop(runner_end);
        let mut got = Vec::new();
        python_end.read_to_end(&mut got).unwrap();
        assert_eq!(got, [&frame[..], &frame[..6]].concat());
        handle.join().unwrap();
    }
}
