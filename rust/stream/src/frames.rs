//! The runner pipe's frames (`skulk.worker.runner.pipe_frames`): a big-endian u32 header
//! (top bit: the body is `marshal` version 2 of plain values, not a pickle; the rest: the
//! body's length), then the body. A step's plain tokens (`TokensProduced`) are a list of
//! `(task_id, command_id, text, token_ids)` tuples; only that exact shape is parsed here,
//! and anything else is left to Python, which checks it as before.

use std::ops::Range;

pub const HEADER: usize = 4;
pub const PLAIN: u32 = 1 << 31;

/// One complete frame at the front of `buffer`: (header, body range), or None when the
/// frame is not whole yet.
pub fn next_frame(buffer: &[u8]) -> Option<(u32, Range<usize>)> {
    let header = u32::from_be_bytes(buffer.get(..HEADER)?.try_into().ok()?);
    let end = HEADER.checked_add((header & !PLAIN) as usize)?;
    (end <= buffer.len()).then_some((header, HEADER..end))
}

/// One request's plain tokens of a step, borrowed from the frame's body.
#[derive(Debug, PartialEq, Eq)]
pub struct Piece<'a> {
    pub task_id: &'a str,
    pub text: &'a str,
    pub token_ids: Vec<i32>,
    /// The piece's bytes in the body, for a frame rebuilt from the pieces left to Python.
    pub span: Range<usize>,
}

struct Cursor<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let byte = *self.body.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn i32(&mut self) -> Option<i32> {
        let bytes = self.body.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(i32::from_le_bytes(bytes.try_into().ok()?))
    }

    fn count(&mut self, kind: u8) -> Option<usize> {
        (self.byte()? == kind).then_some(())?;
        usize::try_from(self.i32()?).ok()
    }

    fn text(&mut self) -> Option<&'a str> {
        let length = self.count(b'u')?;
        let bytes = self.body.get(self.at..self.at.checked_add(length)?)?;
        self.at += length;
        std::str::from_utf8(bytes).ok() // a lone surrogate is not UTF-8: Python's then
    }
}

/// The pieces of a plain frame's body, or None when it is anything else.
pub fn pieces(body: &[u8]) -> Option<Vec<Piece<'_>>> {
    let mut cursor = Cursor { body, at: 0 };
    let count = cursor.count(b'[')?;
    let mut found = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let start = cursor.at;
        if cursor.count(b'(')? != 4 {
            return None;
        }
        let task_id = cursor.text()?;
        cursor.text()?; // the command id: the stream is found by its task
        let text = cursor.text()?;
        let tokens = cursor.count(b'[')?;
        let mut token_ids = Vec::with_capacity(tokens.min(1024));
        for _ in 0..tokens {
            (cursor.byte()? == b'i').then_some(())?;
            token_ids.push(cursor.i32()?);
        }
        found.push(Piece {
            task_id,
            text,
            token_ids,
            span: start..cursor.at,
        });
    }
    (cursor.at == body.len()).then_some(found)
}

/// A plain frame of the pieces at `spans` of `body`, in order (those Python still reads).
pub fn frame_of(body: &[u8], spans: &[Range<usize>]) -> Vec<u8> {
    let length = 5 + spans.iter().map(|span| span.len()).sum::<usize>();
    let mut frame = Vec::with_capacity(HEADER + length);
    frame.extend_from_slice(&(length as u32 | PLAIN).to_be_bytes());
    frame.push(b'[');
    frame.extend_from_slice(&(spans.len() as i32).to_le_bytes());
    for span in spans {
        frame.extend_from_slice(&body[span.clone()]);
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `marshal.dumps([("task-1", "cmd-1", "hé", [1, 300000]), ("t2", "c2", "", [])], 2)`
    const TWO_PIECES: &[u8] = b"[\x02\x00\x00\x00(\x04\x00\x00\x00u\x06\x00\x00\x00task-1\
u\x05\x00\x00\x00cmd-1u\x03\x00\x00\x00h\xc3\xa9[\x02\x00\x00\x00i\x01\x00\x00\x00\
i\xe0\x93\x04\x00(\x04\x00\x00\x00u\x02\x00\x00\x00t2u\x02\x00\x00\x00c2\
u\x00\x00\x00\x00[\x00\x00\x00\x00";

    #[test]
    fn a_frame_is_found_only_when_whole() {
        let frame = [0x80, 0, 0, 2, b'a', b'b', b'c'];
        assert_eq!(next_frame(&frame), Some((PLAIN | 2, 4..6)));
        assert_eq!(next_frame(&frame[..5]), None);
        assert_eq!(next_frame(&frame[..3]), None);
    }

    #[test]
    fn the_pieces_of_a_step_are_read_as_python_wrote_them() {
        let found = pieces(TWO_PIECES).expect("a plain step");
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].task_id, found[0].text), ("task-1", "hé"));
        assert_eq!(found[0].token_ids, vec![1, 300000]);
        assert_eq!(
            (found[1].task_id, found[1].text, found[1].token_ids.len()),
            ("t2", "", 0)
        );
    }

    #[test]
    fn anything_else_is_left_to_python() {
        assert!(pieces(b"").is_none());
        assert!(pieces(&TWO_PIECES[..TWO_PIECES.len() - 1]).is_none());
        assert!(pieces(&[TWO_PIECES, b"x"].concat()).is_none());
        let version_4 = b"\xdb\x01\x00\x00\x00)\x04";
        assert!(pieces(version_4).is_none());
        let long_token = b"[\x01\x00\x00\x00(\x04\x00\x00\x00u\x01\x00\x00\x00tu\x01\x00\x00\
\x00cu\x01\x00\x00\x00a[\x01\x00\x00\x00l\x03\x00\x00\x00\x00\x00\x00\x00\x00\x04";
        assert!(pieces(long_token).is_none());
        let lone_surrogate = b"[\x01\x00\x00\x00(\x04\x00\x00\x00u\x01\x00\x00\x00tu\x01\x00\
\x00\x00cu\x03\x00\x00\x00\xed\xa0\x80[\x00\x00\x00\x00";
        assert!(pieces(lone_surrogate).is_none());
    }

    #[test]
    fn a_frame_rebuilt_from_some_pieces_reads_back_as_them() {
        let found = pieces(TWO_PIECES).unwrap();
        let frame = frame_of(TWO_PIECES, &[found[1].span.clone()]);
        let (header, body) = next_frame(&frame).unwrap();
        assert_eq!(header & PLAIN, PLAIN);
        let again = pieces(&frame[body]).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].task_id, "t2");
    }
}
