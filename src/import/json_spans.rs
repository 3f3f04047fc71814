//! Where things are in a JSON text: for every object, the path of keys and indexes that leads
//! to it and the byte spans of its scalar members, so a write-back can replace one value's
//! bytes and leave every other byte (spacing, key order, escapes) as the person's tool wrote
//! it. A loop with an explicit stack, never recursion; it runs only on text `serde_json` has
//! accepted (which refuses nesting deeper than 128 levels), and still never panics on any other.

/// One step of a path: a member's key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Part {
    Key(String),
    Index(usize),
}

/// An object: its path and its scalar members (key, byte span of the raw value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub path: Vec<Part>,
    pub members: Vec<(String, std::ops::Range<usize>)>,
}

enum Frame {
    Object {
        members: Vec<(String, std::ops::Range<usize>)>,
        key: Option<String>,
    },
    Array {
        index: usize,
    },
}

/// Every object of `src`, innermost first (in the order they close). `None` when the text is
/// not JSON this scanner follows.
pub fn objects(src: &str) -> Option<Vec<Object>> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut path: Vec<Part> = Vec::new();
    let mut at = 0;
    loop {
        at += skip_space(&bytes[at..]);
        let &byte = bytes.get(at)?;
        // A value starts here, unless this closes a container or is punctuation.
        match byte {
            b',' => {
                if let Some(Frame::Array { index }) = stack.last_mut() {
                    *index += 1;
                }
                at += 1;
                continue;
            }
            b':' => {
                at += 1;
                continue;
            }
            b'}' | b']' => {
                let frame = stack.pop()?;
                if let Frame::Object { members, .. } = frame {
                    out.push(Object {
                        path: path.clone(),
                        members,
                    });
                }
                path.pop();
                at += 1;
                if stack.is_empty() {
                    return Some(out);
                }
                end_value(&mut stack);
                continue;
            }
            _ => {}
        }
        // In an object with no key yet, a string is the key.
        if let Some(Frame::Object { key, .. }) = stack.last_mut()
            && key.is_none()
        {
            let end = string_end(bytes, at)?;
            *key = Some(serde_json::from_str::<String>(src.get(at..end)?).ok()?);
            at = end;
            continue;
        }
        let part = match stack.last() {
            Some(Frame::Object { key: Some(key), .. }) => Some(Part::Key(key.clone())),
            Some(Frame::Array { index }) => Some(Part::Index(*index)),
            _ => None,
        };
        match byte {
            b'{' | b'[' => {
                if let Some(part) = part {
                    path.push(part);
                } else if !stack.is_empty() {
                    return None;
                } else {
                    // The root: a placeholder popped with it.
                    path.push(Part::Index(0));
                }
                stack.push(if byte == b'{' {
                    Frame::Object {
                        members: Vec::new(),
                        key: None,
                    }
                } else {
                    Frame::Array { index: 0 }
                });
                at += 1;
                if stack.len() > 512 {
                    return None;
                }
            }
            _ => {
                let end = if byte == b'"' {
                    string_end(bytes, at)?
                } else {
                    scalar_end(bytes, at)
                };
                if end == at {
                    return None;
                }
                if let Some(Frame::Object { members, key }) = stack.last_mut() {
                    if let Some(key) = key.take() {
                        members.push((key, at..end));
                    }
                } else if stack.is_empty() {
                    return Some(out);
                }
                at = end;
            }
        }
    }
}

/// After a container closed inside an object, the object waits for its next key.
fn end_value(stack: &mut [Frame]) {
    if let Some(Frame::Object { key, .. }) = stack.last_mut() {
        *key = None;
    }
}

fn skip_space(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .count()
}

/// The end of the string starting at `at` (its closing quote included).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn scalar_end(bytes: &[u8], at: usize) -> usize {
    at + bytes[at..]
        .iter()
        .take_while(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' | b':'))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Described<'a> = Vec<(Vec<Part>, Vec<(String, &'a str)>)>;

    #[test]
    fn objects_have_their_paths_and_member_spans() {
        let src = r#"{"master": {"tasks": [{"id": 1, "status": "pending", "subtasks": [{"id": 1, "status": "done"}]}, {"id": 2, "t": "a\"b"}]}}"#;
        let objects = objects(src).unwrap();
        let described: Described<'_> = objects
            .iter()
            .map(|o| {
                (
                    o.path.clone(),
                    o.members
                        .iter()
                        .map(|(k, r)| (k.clone(), &src[r.clone()]))
                        .collect(),
                )
            })
            .collect();
        let key = |k: &str| Part::Key(k.to_owned());
        assert_eq!(
            described,
            [
                (
                    vec![
                        Part::Index(0),
                        key("master"),
                        key("tasks"),
                        Part::Index(0),
                        key("subtasks"),
                        Part::Index(0)
                    ],
                    vec![("id".into(), "1"), ("status".into(), "\"done\"")]
                ),
                (
                    vec![Part::Index(0), key("master"), key("tasks"), Part::Index(0)],
                    vec![("id".into(), "1"), ("status".into(), "\"pending\"")]
                ),
                (
                    vec![Part::Index(0), key("master"), key("tasks"), Part::Index(1)],
                    vec![("id".into(), "2"), ("t".into(), r#""a\"b""#)]
                ),
                (vec![Part::Index(0), key("master")], vec![]),
                (vec![Part::Index(0)], vec![]),
            ]
        );
    }

    proptest! {
        #[test]
        fn any_text_is_scanned_without_a_panic(src in "[\\[\\]{}\",:a-z0-9 \\\\]{0,200}") {
            let _ = objects(&src);
        }
    }
}
