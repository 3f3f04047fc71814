//! Step ids (`S3`, `S3.1`) and step statuses with their checkbox markers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `S<n>` for a step, `S<n>.<m>` for a sub-step. Ordered by number, not by text, so `S10`
/// comes after `S9`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepId {
    pub major: u32,
    pub minor: Option<u32>,
}

impl StepId {
    pub fn top(major: u32) -> Self {
        StepId { major, minor: None }
    }

    pub fn sub(major: u32, minor: u32) -> Self {
        StepId {
            major,
            minor: Some(minor),
        }
    }

    pub fn is_sub(self) -> bool {
        self.minor.is_some()
    }

    /// The step a sub-step belongs to; a top-level step is its own parent.
    #[must_use]
    pub fn parent(self) -> StepId {
        StepId::top(self.major)
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.minor {
            Some(minor) => write!(f, "S{}.{minor}", self.major),
            None => write!(f, "S{}", self.major),
        }
    }
}

impl StepId {
    /// Appends the id as [`fmt::Display`] writes it, without the formatting machinery (a
    /// status of 10,000 steps writes 10,000 of them).
    pub fn push_to(self, out: &mut String) {
        fn number(out: &mut String, mut n: u32) {
            let mut digits = [0u8; 10];
            let mut at = digits.len();
            loop {
                at -= 1;
                digits[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            out.extend(digits[at..].iter().map(|&d| char::from(d)));
        }
        out.push('S');
        number(out, self.major);
        if let Some(minor) = self.minor {
            out.push('.');
            number(out, minor);
        }
    }
}

impl FromStr for StepId {
    type Err = String;

    /// Accepts `S3`, `s3`, `3`, `S3.1`: people type ids on the command line in all of these.
    fn from_str(text: &str) -> Result<Self, String> {
        let digits = text
            .strip_prefix('S')
            .or_else(|| text.strip_prefix('s'))
            .unwrap_or(text);
        let bad = || format!("`{text}` is not a step id (like `S3` or `S3.1`)");
        let number = |part: &str| -> Result<u32, String> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            part.parse().map_err(|_| bad())
        };
        match digits.split_once('.') {
            Some((major, minor)) => Ok(StepId::sub(number(major)?, number(minor)?)),
            None => Ok(StepId::top(number(digits)?)),
        }
    }
}

impl Serialize for StepId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StepId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A step's status, as its checkbox shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// `[ ]`
    Pending,
    /// `[x]` or `[X]`
    Done,
    /// `[-]`
    InProgress,
    /// `[!]`
    Blocked,
    /// `[~]`: was done; something it relied on changed.
    Stale,
}

impl StepStatus {
    pub const ALL: [StepStatus; 5] = [
        StepStatus::Pending,
        StepStatus::Done,
        StepStatus::InProgress,
        StepStatus::Blocked,
        StepStatus::Stale,
    ];

    pub fn from_marker(marker: char) -> Option<Self> {
        match marker {
            ' ' => Some(StepStatus::Pending),
            'x' | 'X' => Some(StepStatus::Done),
            '-' => Some(StepStatus::InProgress),
            '!' => Some(StepStatus::Blocked),
            '~' => Some(StepStatus::Stale),
            _ => None,
        }
    }

    pub fn marker(self) -> char {
        match self {
            StepStatus::Pending => ' ',
            StepStatus::Done => 'x',
            StepStatus::InProgress => '-',
            StepStatus::Blocked => '!',
            StepStatus::Stale => '~',
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Done => "done",
            StepStatus::InProgress => "in_progress",
            StepStatus::Blocked => "blocked",
            StepStatus::Stale => "stale",
        }
    }
}

impl fmt::Display for StepStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How risky a step is, as the planner or a person judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

impl FromStr for Risk {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Risk::Low),
            "medium" => Ok(Risk::Medium),
            "high" => Ok(Risk::High),
            _ => Err(format!("`{text}` is not a risk level (low, medium, high)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_to_writes_what_display_writes() {
        for major in [0, 1, 9, 10, 99, 100, 12_345, u32::MAX] {
            for minor in [None, Some(0), Some(7), Some(10), Some(u32::MAX)] {
                let id = StepId { major, minor };
                let mut out = "x".to_owned();
                id.push_to(&mut out);
                assert_eq!(out, format!("x{id}"));
            }
        }
    }

    #[test]
    fn ids_parse_and_print() {
        for (text, id) in [
            ("S3", StepId::top(3)),
            ("s3", StepId::top(3)),
            ("3", StepId::top(3)),
            ("S3.1", StepId::sub(3, 1)),
            ("S12.10", StepId::sub(12, 10)),
        ] {
            assert_eq!(text.parse::<StepId>().unwrap(), id, "{text}");
        }
        for bad in [
            "", "S", "S-1", "S1.", "S.1", "S1.2.3", "X1", "S1a", "S+1", "S 1",
        ] {
            assert!(bad.parse::<StepId>().is_err(), "{bad}");
        }
        assert_eq!(StepId::sub(2, 1).to_string(), "S2.1");
        assert_eq!(StepId::top(2).to_string(), "S2");
    }

    #[test]
    fn ids_order_by_number() {
        let mut ids = vec![
            StepId::top(10),
            StepId::sub(2, 1),
            StepId::top(9),
            StepId::top(2),
        ];
        ids.sort();
        assert_eq!(
            ids,
            vec![
                StepId::top(2),
                StepId::sub(2, 1),
                StepId::top(9),
                StepId::top(10)
            ]
        );
    }

    #[test]
    fn markers_round_trip() {
        for status in StepStatus::ALL {
            assert_eq!(StepStatus::from_marker(status.marker()), Some(status));
        }
        assert_eq!(StepStatus::from_marker('X'), Some(StepStatus::Done));
        for other in ['?', 'o', '*', 'v', '/'] {
            assert_eq!(StepStatus::from_marker(other), None);
        }
    }
}
