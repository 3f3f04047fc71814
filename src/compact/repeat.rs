//! Spotting an answer that loops while it streams: a small model at a low temperature may
//! send the same token, phrase or block of lines again and again until its output-token limit,
//! which on a slow local server costs minutes. The runner stops such an answer as soon as the
//! loop shows and asks once more, warmer.

/// The shortest run of one repeated piece of text (a token, a phrase) that counts as a loop.
const RUN_BYTES: usize = 256;
/// The longest piece whose repetition [`RUN_BYTES`] catches.
const MAX_PIECE: usize = 64;
/// How many times in a row the same block of lines must come to count as a loop.
const BLOCK_REPEATS: usize = 4;
/// The longest block of lines looked for.
const MAX_BLOCK_LINES: usize = 8;
/// A block shorter than this (non-blank bytes) is too plain to call a loop: `}` lines.
const MIN_BLOCK_BYTES: usize = 24;

/// Why an answer was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runaway {
    /// The same piece of text over and over.
    Repeats { piece: String },
    /// Longer than any answer the step could need.
    TooLong { limit: usize },
}

impl std::fmt::Display for Runaway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Repeats { piece } => {
                let line = piece.lines().map(str::trim).find(|l| !l.is_empty());
                let shown: String = line.unwrap_or(piece).chars().take(40).collect();
                write!(f, "the answer repeated `{shown}` over and over")
            }
            Self::TooLong { limit } => write!(f, "the answer ran past {limit} bytes"),
        }
    }
}

/// Fed an answer's text as it streams; says when it has become a loop or too long.
#[derive(Debug)]
pub struct RepeatGuard {
    text: String,
    limit: usize,
    /// Where the last line checked ended, so each newline checks the line blocks once.
    lines_checked: usize,
}

impl RepeatGuard {
    /// A guard for an answer of at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            text: String::new(),
            limit,
            lines_checked: 0,
        }
    }

    /// Adds `delta`; `Some` once the answer so far is a loop or past the limit.
    pub fn push(&mut self, delta: &str) -> Option<Runaway> {
        self.text.push_str(delta);
        if self.text.len() > self.limit {
            return Some(Runaway::TooLong { limit: self.limit });
        }
        if let Some(piece) = repeated_piece(self.text.as_bytes()) {
            return Some(Runaway::Repeats { piece });
        }
        if self.text[self.lines_checked..].contains('\n') {
            self.lines_checked = self.text.len();
            if let Some(piece) = repeated_block(&self.text) {
                return Some(Runaway::Repeats { piece });
            }
        }
        None
    }
}

/// A piece of at most [`MAX_PIECE`] bytes the text ends with, repeated for [`RUN_BYTES`].
fn repeated_piece(text: &[u8]) -> Option<String> {
    let n = text.len();
    (1..=MAX_PIECE)
        .filter(|p| n >= RUN_BYTES + p)
        .find(|&p| text[n - RUN_BYTES..] == text[n - RUN_BYTES - p..n - p])
        .map(|p| String::from_utf8_lossy(&text[n - p..]).into_owned())
        // A ruler of one character (`// -----`, `=====`) is a line, not a loop.
        .filter(|piece| {
            piece
                .trim()
                .chars()
                .collect::<std::collections::HashSet<_>>()
                .len()
                > 1
        })
}

/// A block of whole lines the text ends with, [`BLOCK_REPEATS`] times in a row.
fn repeated_block(text: &str) -> Option<String> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let end = text.rfind('\n')?;
    let lines: Vec<&str> = body[..end.min(body.len())].split('\n').collect();
    for size in 1..=MAX_BLOCK_LINES {
        let needed = size * BLOCK_REPEATS;
        if lines.len() < needed {
            break;
        }
        let tail = &lines[lines.len() - needed..];
        let block = &tail[..size];
        let weight: usize = block.iter().map(|l| l.trim().len()).sum();
        if weight >= MIN_BLOCK_BYTES && tail.chunks(size).all(|chunk| chunk == block) {
            return Some(block.join("\n"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fed(text: &str, piece: usize) -> Option<Runaway> {
        let mut guard = RepeatGuard::new(1 << 20);
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(piece.max(1))
            .find_map(|c| guard.push(&c.iter().collect::<String>()))
    }

    #[test]
    fn the_same_token_forever_is_a_loop() {
        let text = format!("def mean(values):\n    return {}", "None ".repeat(80));
        assert_eq!(
            fed(&text, 3),
            Some(Runaway::Repeats {
                piece: "ne No".to_owned()
            })
        );
    }

    #[test]
    fn the_same_lines_again_and_again_are_a_loop() {
        let block =
            "        self.assertEqual(mean([1, 2, 3]), 2.0)\n        self.assertIsNone(mean([]))\n";
        let text = format!("class TestMean(unittest.TestCase):\n{}", block.repeat(5));
        let stop = fed(&text, 7).map(|r| r.to_string());
        assert_eq!(
            stop.as_deref(),
            Some("the answer repeated `self.assertEqual(mean([1, 2, 3]), 2.0)` over and over")
        );
    }

    #[test]
    fn a_long_answer_stops_at_the_limit() {
        let mut guard = RepeatGuard::new(10);
        assert_eq!(
            guard.push("fn main() {"),
            Some(Runaway::TooLong { limit: 10 })
        );
    }

    #[test]
    fn rulers_and_closing_braces_are_not_loops() {
        let text = format!(
            "// {}\nfn a() {{\n    if x {{\n        if y {{\n        }}\n    }}\n}}\n}}\n}}\n}}\n}}\n",
            "-".repeat(300)
        );
        assert_eq!(fed(&text, 5), None);
    }

    fn code_line() -> impl Strategy<Value = String> {
        (
            0_usize..4,
            prop::sample::select(vec!["let", "return", "if", "self.assert", "print", "x ="]),
            "[a-z_]{1,10}",
            0_u32..1000,
        )
            .prop_map(|(indent, word, name, n)| {
                format!("{}{word} {name}({n})", "    ".repeat(indent))
            })
    }

    proptest! {
        #[test]
        fn varied_code_lines_are_never_a_loop(
            lines in prop::collection::vec(code_line(), 1..200),
            piece in 1_usize..40,
        ) {
            // Varied lines: no two in a row alike, as code is.
            let mut text = String::new();
            let mut last = String::new();
            for line in lines {
                if line != last {
                    text.push_str(&line);
                    text.push('\n');
                }
                last = line;
            }
            prop_assert_eq!(fed(&text, piece), None);
        }
    }
}
