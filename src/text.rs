//! Text tick did not write, made safe to show on a terminal. A model's answer, a file's
//! content, a repository's TODO.md or a command line can carry control characters that a
//! terminal acts on instead of showing: `ESC ] 52` writes the clipboard, CSI sequences move the
//! cursor or erase what was printed, SGR 8 conceals the rest of a verify command. Everything
//! that prints such text shows its controls in caret notation, as `cat -v` and `less` do.
//!
//! A leaf: it depends on nothing of tick's.

use std::borrow::Cow;

/// Whether `c` is a control character that [`visible`] shows: C0 (U+0000 to U+001F) but
/// newline and tab, DEL (U+007F), C1 (U+0080 to U+009F), and the bidirectional controls
/// ([`is_bidi_control`]).
pub fn is_hidden_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// Whether `c` reorders the text around it on the screen ("Trojan Source"): the embeddings
/// and overrides U+202A to U+202E, the isolates U+2066 to U+2069 and the marks U+200E, U+200F.
/// A title or a verify command holding one can read, to the person, as something else than
/// what runs.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// `text` with every control character but newline and tab in caret notation: `^[` for ESC,
/// `^G` for BEL, `^M` for a carriage return, `^?` for DEL, and `M-` before the caret form of
/// the C1 controls (`M-^[` for U+009B, the one-character CSI), as `cat -v` writes them; a
/// bidirectional control as its code point (`<U+202E>`), as `less` shows it. All
/// other text is unchanged; borrowed when there is nothing to change. Showing the result again
/// changes nothing.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden_control(c) {
            push_caret(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// How [`visible`] shows the control character `c`, for messages that name one.
pub fn caret(c: char) -> String {
    let mut out = String::new();
    push_caret(&mut out, c);
    out
}

/// The first control character [`visible`] would change in `text`, if any: plan fields
/// refuse text with one.
pub fn first_hidden_control(text: &str) -> Option<char> {
    text.chars().find(|&c| is_hidden_control(c))
}

fn push_caret(out: &mut String, c: char) {
    let code = u32::from(c);
    if is_bidi_control(c) {
        out.push_str(&format!("<U+{code:04X}>"));
        return;
    }
    let low = if code >= 0x80 {
        out.push_str("M-");
        code - 0x80
    } else {
        code
    };
    out.push('^');
    // C0 is shown as the character 64 places up (`^@` to `^_`), DEL as `^?`.
    out.push(char::from_u32(low ^ 0x40).unwrap_or('?'));
}

/// The last `lines` lines of `text`, at most `chars` characters of them (a command's or a
/// hook's output as recorded in evidence).
pub fn tail(text: &str, lines: usize, chars: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let kept = all[all.len().saturating_sub(lines)..].join("\n");
    let count = kept.chars().count();
    if count > chars {
        kept.chars().skip(count - chars).collect()
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn controls_are_shown_in_caret_notation() {
        assert_eq!(
            visible("a\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}b"),
            "a^[]52;c;ZWNobyBwd25lZA==^Gb"
        );
        assert_eq!(
            visible("x\u{1b}[8mhidden\u{1b}[28m\r"),
            "x^[[8mhidden^[[28m^M"
        );
        assert_eq!(visible("\0\u{7f}\u{80}\u{9b}\u{9f}"), "^@^?M-^@M-^[M-^_");
        assert_eq!(caret('\u{1b}'), "^[");
        assert_eq!(first_hidden_control("ok\tline\n\u{8}x"), Some('\u{8}'));
    }

    /// Issue 25: a right-to-left override makes `rm -rf ~ #` read as something else; every
    /// bidirectional control is shown as its code point, and refused in plan fields.
    #[test]
    fn bidirectional_controls_are_shown_as_their_code_points() {
        assert_eq!(
            visible("cargo test \u{202e}# ~ fr- mr"),
            "cargo test <U+202E># ~ fr- mr"
        );
        for c in ['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}'] {
            assert_eq!(
                visible(&format!("a{c}b")),
                format!("a<U+{:04X}>b", u32::from(c))
            );
        }
        assert_eq!(
            visible("\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}"),
            "<U+2066><U+2067><U+2068><U+2069><U+200E><U+200F>"
        );
        assert_eq!(caret('\u{2067}'), "<U+2067>");
        assert_eq!(first_hidden_control("src/\u{202e}txt.rs"), Some('\u{202e}'));
        // Their neighbours are text: the zero-width space and joiner, the line separator.
        for c in [
            '\u{200b}', '\u{200d}', '\u{2028}', '\u{2065}', '\u{206a}', '\u{2029}',
        ] {
            assert!(!is_bidi_control(c), "{c:?}");
        }
        assert_eq!(visible("عربي עברית"), "عربي עברית");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "línea\tone\n✓ ^[ is already caret text \u{a0}\u{200b}";
        assert!(matches!(visible(text), Cow::Borrowed(t) if t == text));
        assert_eq!(first_hidden_control(text), None);
    }

    proptest! {
        #[test]
        fn shown_text_has_no_control_but_newline_and_tab(text in any::<String>()) {
            let shown = visible(&text);
            for c in shown.chars() {
                prop_assert!(!is_hidden_control(c), "{c:?} in {shown:?}");
            }
            for b in shown.bytes() {
                prop_assert!(b >= 0x20 || b == b'\n' || b == b'\t');
                prop_assert!(b != 0x7f);
            }
            // Idempotent: what is shown once is shown as it is.
            let again = visible(&shown);
            prop_assert_eq!(again.as_ref(), shown.as_ref());
        }

        #[test]
        fn visible_text_is_unchanged(text in any::<String>()) {
            let kept: String = text.chars().filter(|&c| !is_hidden_control(c)).collect();
            let shown = visible(&text);
            // Removing what the controls became gives the text back, character for character.
            let mut rest = shown.as_ref();
            let mut rebuilt = String::new();
            for c in text.chars() {
                let piece = if is_hidden_control(c) { caret(c) } else { c.to_string() };
                prop_assert!(rest.starts_with(&piece));
                rest = &rest[piece.len()..];
                if !is_hidden_control(c) {
                    rebuilt.push(c);
                }
            }
            prop_assert_eq!(rest, "");
            prop_assert_eq!(rebuilt, kept);
        }
    }
}
