//! Streams whose plain tokens the relay writes itself, and the counts Python reads back.
//!
//! A stream becomes direct only when Python has handled every piece of its task the relay
//! passed on (`activate` compares the two counts under the lock the relay takes per
//! piece), so nothing the relay writes can overtake a token still on its way through
//! Python. It stops being direct when Python takes it back (`release`): from then on the
//! relay never writes to its socket, and what it had not sent goes back to Python in order.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use crate::sse::chunked_event;

/// One direct stream: its own duplicate of the socket (the number stays its own until
/// released, whatever the server does with its descriptor), the event's bytes around the
/// text, and what happened to the tokens since it became direct.
pub struct DirectStream {
    socket: OwnedFd,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// Delivered (whole events sent, or the rest of one in `unsent`).
    written_tokens: Vec<i32>,
    /// Not sent yet (the socket was full): the next event carries them all, as one delta.
    pending_text: String,
    pending_tokens: Vec<i32>,
    /// The end of an event the socket took only part of: Python writes it first.
    unsent: Vec<u8>,
    gone: bool,
    events: u64,
    gaps: Vec<f64>,
    last: Instant,
}

/// What Python gets back when it takes a stream back.
#[derive(Debug, Default, PartialEq)]
pub struct Released {
    pub written_tokens: Vec<i32>,
    pub pending_text: String,
    pub pending_tokens: Vec<i32>,
    pub unsent: Vec<u8>,
    pub gone: bool,
    pub events: u64,
    pub gaps: Vec<f64>,
}

impl DirectStream {
    pub fn new(socket: OwnedFd, head: Vec<u8>, tail: Vec<u8>) -> Self {
        DirectStream {
            socket,
            head,
            tail,
            written_tokens: Vec::new(),
            pending_text: String::new(),
            pending_tokens: Vec::new(),
            unsent: Vec::new(),
            gone: false,
            events: 0,
            gaps: Vec::new(),
            last: Instant::now(),
        }
    }

    /// A piece of this stream's tokens: sent now with whatever waited, or kept.
    pub fn take(&mut self, text: &str, token_ids: &[i32]) {
        let now = Instant::now();
        self.gaps.push(now.duration_since(self.last).as_secs_f64());
        self.last = now;
        if self.gone {
            return;
        }
        self.pending_text.push_str(text);
        self.pending_tokens.extend_from_slice(token_ids);
        self.flush();
    }

    fn flush(&mut self) {
        if !self.unsent.is_empty() {
            match send(&self.socket, &self.unsent) {
                Ok(sent) => drop(self.unsent.drain(..sent)),
                Err(()) => return self.gone = true,
            }
            if !self.unsent.is_empty() {
                return;
            }
        }
        if self.pending_text.is_empty() {
            // Tokens with no text yet (part of a character): no event, as in Python.
            self.written_tokens.append(&mut self.pending_tokens);
            return;
        }
        let event = chunked_event(&self.head, &self.pending_text, &self.tail);
        let Ok(sent) = send(&self.socket, &event) else {
            return self.gone = true;
        };
        if sent == 0 {
            return; // the socket is full: the text waits for the next piece or Python
        }
        self.events += 1;
        self.unsent = event[sent..].to_vec();
        self.pending_text.clear();
        self.written_tokens.append(&mut self.pending_tokens);
    }

    pub fn released(self) -> Released {
        Released {
            written_tokens: self.written_tokens,
            pending_text: self.pending_text,
            pending_tokens: self.pending_tokens,
            unsent: self.unsent,
            gone: self.gone,
            events: self.events,
            gaps: self.gaps,
        }
    }
}

/// Bytes the socket took (0 when full); an error means the client is gone (Python hears
/// it from the server and cancels the request as it does today).
fn send(socket: &OwnedFd, bytes: &[u8]) -> Result<usize, ()> {
    loop {
        // SAFETY: the descriptor is the stream's own duplicate, open while it lives.
        let sent = unsafe {
            libc::send(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if sent >= 0 {
            return Ok(sent as usize);
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(0),
            _ => return Err(()),
        }
    }
}

/// The relay's shared state: the direct streams by task, and the pieces passed on to
/// Python for every other task (what `activate` checks Python has handled).
#[derive(Default)]
pub struct Streams {
    direct: HashMap<String, DirectStream>,
    passed: HashMap<String, u64>,
    /// Tokens written to direct streams since the supervisor last asked (its decode speed).
    relayed: HashMap<String, u64>,
}

impl Streams {
    /// The piece went to its direct stream (true), or is counted as passed on (false).
    pub fn take(&mut self, task_id: &str, text: &str, token_ids: &[i32]) -> bool {
        if let Some(stream) = self.direct.get_mut(task_id) {
            stream.take(text, token_ids);
            *self.relayed.entry(task_id.to_owned()).or_default() += token_ids.len() as u64;
            return true;
        }
        match self.passed.get_mut(task_id) {
            Some(count) => *count += 1,
            None => drop(self.passed.insert(task_id.to_owned(), 1)),
        }
        false
    }

    /// Make `task_id`'s stream direct if Python has handled all `handled` pieces the
    /// relay passed on for it; false leaves it on Python's path (try again later).
    pub fn activate(&mut self, task_id: &str, handled: u64, stream: DirectStream) -> bool {
        let passed = self.passed.get(task_id).copied().unwrap_or(0);
        if passed != handled || self.direct.contains_key(task_id) {
            return false;
        }
        self.direct.insert(task_id.to_owned(), stream);
        true
    }

    /// Take the stream back (None: it was not direct). The relay passes its pieces on again.
    pub fn release(&mut self, task_id: &str) -> Option<Released> {
        self.direct.remove(task_id).map(DirectStream::released)
    }

    /// Tokens of `task_id` the relay wrote since the last call.
    pub fn take_relayed(&mut self, task_id: &str) -> u64 {
        self.relayed.remove(task_id).unwrap_or(0)
    }

    /// The task ended: nothing more of it is counted.
    pub fn forget(&mut self, task_id: &str) {
        self.passed.remove(task_id);
        self.relayed.remove(task_id);
    }

    pub fn direct_count(&self) -> usize {
        self.direct.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    fn stream_to(peer: &UnixStream) -> DirectStream {
        let socket = OwnedFd::from(peer.try_clone().unwrap());
        DirectStream::new(socket, b"<".to_vec(), b">".to_vec())
    }

    fn read_all(client: &mut UnixStream) -> Vec<u8> {
        client.set_nonblocking(true).unwrap();
        let mut got = Vec::new();
        let mut buffer = [0u8; 65536];
        while let Ok(read) = client.read(&mut buffer) {
            if read == 0 {
                break;
            }
            got.extend_from_slice(&buffer[..read]);
        }
        got
    }

    #[test]
    fn a_stream_goes_direct_only_when_python_handled_every_piece_passed_on() {
        let (server, _client) = UnixStream::pair().unwrap();
        let mut streams = Streams::default();
        assert!(!streams.take("t", "a", &[1]));
        assert!(!streams.take("t", "b", &[2]));
        assert!(!streams.activate("t", 1, stream_to(&server)));
        assert!(streams.activate("t", 2, stream_to(&server)));
        assert!(streams.take("t", "c", &[3]));
        assert_eq!(streams.take_relayed("t"), 1);
        assert_eq!(streams.take_relayed("t"), 0);
        let released = streams.release("t").unwrap();
        assert_eq!(released.written_tokens, vec![3]);
        assert!(
            !streams.take("t", "d", &[4]),
            "a released stream is Python's again"
        );
    }

    #[test]
    fn each_piece_is_one_event_on_the_socket() {
        let (server, mut client) = UnixStream::pair().unwrap();
        let mut streams = Streams::default();
        assert!(streams.activate("t", 0, stream_to(&server)));
        streams.take("t", "hi", &[1]);
        streams.take("t", "", &[2]);
        streams.take("t", "\"", &[3]);
        assert_eq!(
            read_all(&mut client),
            b"6\r\n<\"hi\">\r\n6\r\n<\"\\\"\">\r\n"
        );
        let released = streams.release("t").unwrap();
        assert_eq!(released.written_tokens, vec![1, 2, 3]);
        assert_eq!(released.events, 2);
        assert_eq!(released.gaps.len(), 3);
        assert!(released.unsent.is_empty() && released.pending_text.is_empty());
    }

    #[test]
    fn a_full_socket_keeps_the_text_and_sends_it_as_one_delta() {
        let (server, mut client) = UnixStream::pair().unwrap();
        server.set_nonblocking(true).unwrap();
        let mut streams = Streams::default();
        assert!(streams.activate("t", 0, stream_to(&server)));
        let big = "x".repeat(1 << 16);
        for token in 0..64 {
            streams.take("t", &big, &[token]);
        }
        let released = streams.release("t").unwrap();
        assert!(!released.gone);
        let kept = released.pending_tokens.len() as u64;
        assert!(kept > 0, "the socket filled up");
        assert_eq!(
            released.written_tokens.len() + released.pending_tokens.len(),
            64
        );
        assert_eq!(released.pending_text.len(), big.len() * kept as usize);
        // What reached the socket, then its unsent end, are whole chunks, in order.
        let mut wire = read_all(&mut client);
        wire.extend_from_slice(&released.unsent);
        let event_bytes = big.len() + 4; // <"...">
        let one = format!("{:x}\r\n", event_bytes).len() + event_bytes + 2;
        assert_eq!(wire.len(), one * released.written_tokens.len());
    }

    #[test]
    fn a_client_gone_ends_the_stream() {
        let (server, client) = UnixStream::pair().unwrap();
        drop(client);
        let mut streams = Streams::default();
        assert!(streams.activate("t", 0, stream_to(&server)));
        assert!(streams.take("t", "a", &[1]));
        assert!(streams.take("t", "b", &[2]), "still its, and dropped");
        let released = streams.release("t").unwrap();
        assert!(released.gone);
        assert!(released.written_tokens.is_empty());
    }
}
