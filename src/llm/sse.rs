//! A push parser for Server-Sent Events: bytes in, complete events out.
//!
//! Hand-written rather than `eventsource-stream` because it is synchronous (every byte split
//! is tested without a runtime), splits lines on bytes before decoding so a UTF-8 character
//! cut between two network chunks is never mangled, keeps a `\r` at the end of one chunk from
//! being read as an empty line when its `\n` arrives in the next, and lets the caller tell a
//! clean end of stream from a line cut in half.

/// One dispatched event. `event` is the `event:` field, or `message` when there was none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// The previous byte was `\r`: a `\n` now belongs to the same line end.
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    /// The longest line (and event) kept; `None` for no limit.
    max_line: Option<usize>,
    /// A line passed `max_line`: its bytes were dropped, the stream is not to be trusted.
    oversized: bool,
}

const BOM: &str = "\u{feff}";

impl SseParser {
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser that holds at most `max_line` bytes of one line or one event's data: a
    /// server sending more in one line makes [`SseParser::oversized`] say so, and the bytes
    /// beyond are never kept.
    pub fn with_max_line(max_line: usize) -> Self {
        Self {
            max_line: Some(max_line),
            ..Self::default()
        }
    }

    /// The limit a line or an event passed, if one did.
    pub fn oversized(&self) -> Option<usize> {
        self.max_line.filter(|_| self.oversized)
    }

    /// Feeds the next chunk of the body; events completed by it are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(out);
                }
                _ if self
                    .max_line
                    .is_some_and(|max| self.line.len() + self.data.len() >= max) =>
                {
                    self.oversized = true;
                }
                _ => self.line.push(byte),
            }
        }
    }

    /// Ends the stream. Data from complete lines still waiting for their blank line is
    /// dispatched, because some servers close right after `data: [DONE]\n`; a line cut in
    /// the middle is dropped, so a cut stream never yields half a JSON object.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.line.is_empty() {
            self.dispatch(out);
        }
        self.line.clear();
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let bytes = std::mem::take(&mut self.line);
        let decoded = String::from_utf8_lossy(&bytes);
        let mut line: &str = &decoded;
        if !self.started {
            self.started = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            // Keep-alive comment (OpenRouter, llama.cpp pings).
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.event),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Parses `input` delivered as the given chunks.
    pub(crate) fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    /// A server sending one endless line: the parser keeps at most the limit and says so.
    #[test]
    fn a_line_over_the_limit_is_dropped_and_reported() {
        let mut parser = SseParser::with_max_line(100);
        let mut out = Vec::new();
        parser.push(b"data: {\"ok\":1}\n\n", &mut out);
        assert_eq!(parser.oversized(), None);
        for _ in 0..1000 {
            parser.push(&[b'x'; 1000], &mut out);
        }
        assert_eq!(parser.oversized(), Some(100));
        assert!(parser.line.len() <= 100);
        assert_eq!(out.len(), 1);
    }

    /// Parses `input` split at every byte position and checks each split gives the same events.
    pub(crate) fn parse_every_split(input: &[u8]) -> Vec<SseEvent> {
        let whole = parse_chunks(&[input]);
        for at in 0..=input.len() {
            let (a, b) = input.split_at(at);
            assert_eq!(parse_chunks(&[a, b]), whole, "split at byte {at}");
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(parse_chunks(&bytes), whole, "one byte at a time");
        whole
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn data_comments_and_named_events() {
        let input = ": keep-alive\n\ndata: {\"a\":1}\n\nevent: ping\ndata: {}\n\n:OPENROUTER PROCESSING\n\ndata: [DONE]\n\n";
        assert_eq!(
            parse_every_split(input.as_bytes()),
            vec![
                ev("message", "{\"a\":1}"),
                ev("ping", "{}"),
                ev("message", "[DONE]")
            ]
        );
    }

    #[test]
    fn multi_line_data_joins_with_newlines() {
        let input = "data: first\ndata:second\ndata:  third\n\n";
        assert_eq!(
            parse_every_split(input.as_bytes()),
            vec![ev("message", "first\nsecond\n third")]
        );
    }

    #[test]
    fn crlf_cr_and_lf_line_ends_are_equivalent() {
        let lf = parse_every_split(b"event: a\ndata: x\n\ndata: y\n\n");
        let crlf = parse_every_split(b"event: a\r\ndata: x\r\n\r\ndata: y\r\n\r\n");
        let cr = parse_every_split(b"event: a\rdata: x\r\rdata: y\r\r");
        assert_eq!(lf, vec![ev("a", "x"), ev("message", "y")]);
        assert_eq!(crlf, lf);
        assert_eq!(cr, lf);
    }

    #[test]
    fn utf8_split_inside_a_character_survives() {
        let input = "data: {\"t\":\"héllo 世界 🦀\"}\n\n";
        assert_eq!(
            parse_every_split(input.as_bytes()),
            vec![ev("message", "{\"t\":\"héllo 世界 🦀\"}")]
        );
    }

    #[test]
    fn a_leading_bom_is_ignored() {
        let input = "\u{feff}data: x\n\n";
        assert_eq!(
            parse_every_split(input.as_bytes()),
            vec![ev("message", "x")]
        );
    }

    #[test]
    fn a_complete_line_without_its_blank_line_is_kept_at_the_end() {
        assert_eq!(
            parse_every_split(b"data: [DONE]\n"),
            vec![ev("message", "[DONE]")]
        );
    }

    #[test]
    fn a_line_cut_in_the_middle_is_dropped() {
        assert_eq!(
            parse_chunks(&[b"data: a\n\ndata: {\"choi"]),
            vec![ev("message", "a")]
        );
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert_eq!(parse_every_split(b"event: x\n\nid: 3\n\n"), vec![]);
    }
}
