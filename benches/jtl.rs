//! Throughput and peak memory of the JTL parser on a generated 5-million-row CSV.
//!
//! Prints numbers and asserts nothing about time: timings depend on the machine.
//! `JTL_BENCH_ROWS=100000 cargo test --bench jtl` runs a quick debug-build smoke check;
//! `JTL_BENCH_FORMAT=xml` measures the XML reader on the same samples instead.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use envctl::report::SampleAggregator;
use envctl::report::jtl::read_jtl;

const DEFAULT_ROWS: u64 = 5_000_000;
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
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows = match std::env::var("JTL_BENCH_ROWS") {
        Ok(text) => text.parse()?,
        Err(_) => DEFAULT_ROWS,
    };
    let xml = std::env::var("JTL_BENCH_FORMAT").is_ok_and(|format| format == "xml");
    let path = std::env::temp_dir().join(format!("envctl-bench-{}.jtl", std::process::id()));
    let file = TempFile(path);
    let generated = Instant::now();
    let bytes = generate(&file.0, rows, xml)?;
    println!(
        "generated {rows} {} rows ({:.0} MiB) in {:.1} s",
        if xml { "XML" } else { "CSV" },
        bytes as f64 / (1024.0 * 1024.0),
        generated.elapsed().as_secs_f64()
    );

    // Reset the peak-RSS counter (Linux >= 4.0), so VmHWM below measures the parse only.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let started = Instant::now();
    let mut aggregator = SampleAggregator::new();
    let warnings = read_jtl(File::open(&file.0)?, "bench.jtl", &mut aggregator)?;
    let report = aggregator.finish();
    let seconds = started.elapsed().as_secs_f64();

    let parsed = report.total.as_ref().map_or(0, |total| total.samples);
    if parsed != rows || !warnings.is_empty() {
        return Err(format!("parsed {parsed} of {rows} rows, warnings {warnings:?}").into());
    }
    println!(
        "parsed {parsed} rows in {seconds:.2} s: {:.0} rows/s, {:.0} MiB/s",
        rows as f64 / seconds,
        bytes as f64 / (1024.0 * 1024.0) / seconds
    );
    let scope = if reset {
        "during the parse"
    } else {
        "of the whole process"
    };
    println!(
        "peak memory (VmHWM) {scope}: {}",
        peak_memory().unwrap_or_else(|| "unknown".into())
    );
    Ok(())
}

/// Writes `rows` samples in JMeter's default CSV layout (or its XML format), with a varied,
/// reproducible mix of labels, elapsed times and 1% failures; returns the file size.
fn generate(path: &PathBuf, rows: u64, xml: bool) -> std::io::Result<u64> {
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

fn peak_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_owned())
}
