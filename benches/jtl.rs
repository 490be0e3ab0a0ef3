//! Throughput and peak memory of the JTL parser on a generated 5-million-row CSV.
//!
//! Prints numbers and asserts nothing about time: timings depend on the machine.
//! `JTL_BENCH_ROWS=100000 cargo test --bench jtl` runs a quick debug-build smoke check;
//! `JTL_BENCH_FORMAT=xml` measures the XML reader on the same samples instead.
use std::fs::File;
use std::time::Instant;

use envctl::report::SampleAggregator;
use envctl::report::jtl::read_jtl;

#[path = "support/jtl_sample.rs"]
mod jtl_sample;

use jtl_sample::{TempFile, generate, peak_memory_kib, reset_peak_memory};

const DEFAULT_ROWS: u64 = 5_000_000;

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
    let reset = reset_peak_memory();
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
        peak_memory_kib().map_or_else(|| "unknown".into(), |kib| format!("{kib} kB"))
    );
    Ok(())
}
