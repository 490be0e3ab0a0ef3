//! The end of a step's output, for its record and the run's messages: what a failed command
//! or engine said last, masked as everything envctl prints is.
use std::path::Path;

/// The last `n` non-empty lines of a file (of its last 4 KiB), with secrets the text
/// shows masked as everywhere else envctl prints.
pub fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(4096);
    if file.seek(SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<String> = text
        .lines()
        .skip(usize::from(from > 0))
        .filter(|l| !l.trim().is_empty())
        .map(crate::redact::text)
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}
