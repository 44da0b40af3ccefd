//! A token's server-sent event as the Python path writes it: the event's bytes before
//! and after its text (`skulk.api.text_event.TextEvent`), the text as
//! `json.encoder.encode_basestring_ascii` encodes it, in one HTTP/1.1 chunk as uvicorn
//! frames a body (`%x\r\n`, the body, `\r\n`).

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u16_escape(out: &mut Vec<u8>, unit: u16) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[usize::from((unit >> shift) & 0xf)]);
    }
}

/// `text` as a JSON string, quotes included, every character outside printable ASCII
/// escaped (the surrogate pairs of one above U+FFFF, lowercase hex), as Python's C
/// `encode_basestring_ascii` does.
pub fn push_json_ascii(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for character in text.chars() {
        match character {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(character as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in character.encode_utf16(&mut units) {
                    push_u16_escape(out, *unit);
                }
            }
        }
    }
    out.push(b'"');
}

/// The HTTP/1.1 chunk carrying the event `head` + `text` as JSON + `tail`.
pub fn chunked_event(head: &[u8], text: &str, tail: &[u8]) -> Vec<u8> {
    let mut event = Vec::with_capacity(head.len() + text.len() + 8 + tail.len());
    event.extend_from_slice(head);
    push_json_ascii(&mut event, text);
    event.extend_from_slice(tail);
    let mut chunk = format!("{:x}\r\n", event.len()).into_bytes();
    chunk.reserve(event.len() + 2);
    chunk.extend_from_slice(&event);
    chunk.extend_from_slice(b"\r\n");
    chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> String {
        let mut out = Vec::new();
        push_json_ascii(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_is_escaped_as_python_escapes_it() {
        // Each expectation is `json.encoder.encode_basestring_ascii` of the input.
        assert_eq!(json("plain text ~"), r#""plain text ~""#);
        assert_eq!(json("\"q\" \\ /"), r#""\"q\" \\ /""#);
        assert_eq!(
            json("\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}"),
            r#""\n\r\t\b\f\u0000\u001f\u007f""#
        );
        assert_eq!(json("é\u{2028}ß"), r#""\u00e9\u2028\u00df""#);
        assert_eq!(json("🦊"), r#""\ud83e\udd8a""#);
        assert_eq!(json(""), r#""""#);
    }

    #[test]
    fn an_event_is_one_chunk_as_uvicorn_frames_it() {
        let chunk = chunked_event(b"data: {\"c\":", "a\"b", b"}\n\n");
        let event = b"data: {\"c\":\"a\\\"b\"}\n\n";
        let mut expected = format!("{:x}\r\n", event.len()).into_bytes();
        expected.extend_from_slice(event);
        expected.extend_from_slice(b"\r\n");
        assert_eq!(chunk, expected);
        assert!(chunk.starts_with(b"14\r\n"), "20 bytes, in hex");
    }
}
