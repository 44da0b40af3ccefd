//! ggml RPC's framing, so a relay passes on whole messages: the head sends each command as
//! three writes (its 1-byte id, its 8-byte little-endian size, its payload) and the server
//! each reply as two (size, payload). Relayed one read at a time, each write became a TLS
//! record and a wake-up of every process after it; held until the message is complete,
//! a command crosses as one record. A relay never waits on framing for long: what it holds
//! goes on after `HOLD` without more bytes (a peer that frames otherwise is only slower),
//! and a long payload streams through in pieces.

use std::time::Duration;

/// How long a relay holds a message's first bytes for the rest of it.
pub const HOLD: Duration = Duration::from_millis(1);
/// A relay passes on what it holds once it has this much, whole message or not.
pub const HOLD_AT_MOST: usize = 16 * 1024;

/// Where a byte stream stands in its messages.
#[derive(Clone, Debug)]
pub struct Framing {
    header_len: usize,
    size_at: usize,
    header: [u8; 9],
    have: usize,
    remaining: u64,
}

impl Framing {
    /// Head to device: a command id byte, then the size, then the payload.
    pub fn commands() -> Self {
        Framing {
            header_len: 9,
            size_at: 1,
            header: [0; 9],
            have: 0,
            remaining: 0,
        }
    }

    /// Device to head: the size, then the payload.
    pub fn replies() -> Self {
        Framing {
            header_len: 8,
            size_at: 0,
            header: [0; 9],
            have: 0,
            remaining: 0,
        }
    }

    /// Take the next bytes of the stream; true when they end exactly where a message does.
    pub fn advance(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.remaining > 0 {
                let take = bytes
                    .len()
                    .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                self.remaining -= take as u64;
                bytes = &bytes[take..];
                continue;
            }
            let take = bytes.len().min(self.header_len - self.have);
            self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
            self.have += take;
            bytes = &bytes[take..];
            if self.have == self.header_len {
                let mut size = [0u8; 8];
                size.copy_from_slice(&self.header[self.size_at..self.size_at + 8]);
                self.remaining = u64::from_le_bytes(size);
                self.have = 0;
            }
        }
        self.have == 0 && self.remaining == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(id: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![id];
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    #[test]
    fn a_command_written_in_three_pieces_ends_with_its_payload() {
        let mut framing = Framing::commands();
        let bytes = command(6, &[7; 300]);
        assert!(!framing.advance(&bytes[..1]));
        assert!(!framing.advance(&bytes[1..9]));
        assert!(!framing.advance(&bytes[9..100]));
        assert!(framing.advance(&bytes[100..]));
    }

    #[test]
    fn commands_back_to_back_and_an_empty_payload() {
        let mut framing = Framing::commands();
        let mut bytes = command(6, &[1; 10]);
        bytes.extend(command(10, &[]));
        bytes.extend(command(5, &[2; 3]));
        assert!(framing.advance(&bytes));
        assert!(!framing.advance(&command(6, &[1; 10])[..12]));
    }

    #[test]
    fn a_reply_is_its_size_then_its_payload() {
        let mut framing = Framing::replies();
        let mut bytes = 2304u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 2304]);
        assert!(!framing.advance(&bytes[..8]));
        assert!(!framing.advance(&bytes[8..2000]));
        assert!(framing.advance(&bytes[2000..]));
    }
}
