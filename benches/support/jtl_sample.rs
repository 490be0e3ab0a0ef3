//! A reproducible JMeter results file and the peak-memory probe the JTL benchmarks share
//! (`benches/jtl.rs` prints the JTL parser alone, `benches/perf.rs` puts it in the table).
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

const LABELS: [&str; 8] = [
    "Check-out",
    "Check-in",
    "Search, by title",
    "Login",
    "Get user",
    "Renew",
    "Data import: create",
    "List refresh",
];
const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,\
    dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,\
    IdleTime,Connect";

/// Deletes the generated file even when the bench panics.
pub struct TempFile(pub PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `rows` samples in JMeter's default CSV layout (or its XML format), with a varied,
/// reproducible mix of labels, elapsed times and 1% failures; returns the file size.
pub fn generate(path: &Path, rows: u64, xml: bool) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    if xml {
        writeln!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testResults version=\"1.2\">"
        )?;
    } else {
        writeln!(out, "{HEADER}")?;
    }
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let start_ms: u64 = 1_698_395_207_000;
    for row in 0..rows {
        // xorshift64: cheap, deterministic variety without a rand dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let label = LABELS[(state % LABELS.len() as u64) as usize];
        let elapsed = 20 + (state >> 8) % 3000;
        let success = !(state >> 40).is_multiple_of(100);
        let (code, message) = if success {
            ("200", "OK")
        } else {
            ("500", "Internal Server Error")
        };
        let timestamp = start_ms + row / 50;
        let thread = row % 50 + 1;
        let latency = elapsed.saturating_sub(3);
        if xml {
            writeln!(
                out,
                "<httpSample t=\"{elapsed}\" it=\"0\" lt=\"{latency}\" ct=\"2\" ts=\"{timestamp}\" \
                 s=\"{success}\" lb=\"{label}\" rc=\"{code}\" rm=\"{message}\" \
                 tn=\"Thread Group 1-{thread}\" dt=\"text\" by=\"1843\" sby=\"422\" ng=\"50\" na=\"50\"/>"
            )?;
            continue;
        }
        let quoted = if label.contains(',') {
            format!("\"{label}\"")
        } else {
            label.to_owned()
        };
        writeln!(
            out,
            "{timestamp},{elapsed},{quoted},{code},{message},Thread Group 1-{thread},text,\
             {success},,1843,422,50,50,http://okapi:9130/circulation/endpoint,{latency},0,2"
        )?;
    }
    if xml {
        writeln!(out, "</testResults>")?;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Resets this process's peak-RSS counter (Linux >= 4.0), so that [`peak_memory_kib`]
/// measures from here on; false when the kernel does not allow it.
pub fn reset_peak_memory() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// This process's peak resident set (VmHWM) in KiB, if readable.
pub fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
