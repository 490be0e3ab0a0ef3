//! Throughput and peak memory of the JTL parser on a generated 5-million-row CSV.
//!
//! Prints numbers and asserts nothing about time: timings depend on the machine.
//! `JTL_BENCH_ROWS=100000 cargo test --bench jtl` runs a quick debug-build smoke check;
//! `JTL_BENCH_FORMAT=xml` measures the XML reader on the same samples instead;
//! `JTL_BENCH_CONVENTION=dashboard` the dashboard convention (its 20,000-sample windows).
//! Percentiles are exact (a value -> count map per label); the last line measures the
//! memory of that map at its bound, where a label falls back to a histogram.
use std::fs::File;
use std::time::Instant;

use envctl::report::SampleAggregator;
use envctl::report::jtl::elapsed_counts::{DENSE_LIMIT_MS, ElapsedCounts, MAX_EXACT_LARGE_VALUES};
use envctl::report::jtl::{Convention, read_jtl};

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
    let convention = if std::env::var("JTL_BENCH_CONVENTION").is_ok_and(|c| c == "dashboard") {
        Convention::Dashboard
    } else {
        Convention::Aggregate
    };
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
    let mut aggregator = SampleAggregator::with_convention(convention);
    let warnings = read_jtl(File::open(&file.0)?, "bench.jtl", &mut aggregator)?;
    let report = aggregator.finish();
    let seconds = started.elapsed().as_secs_f64();

    let parsed = report.total.as_ref().map_or(0, |total| total.samples);
    if parsed != rows || !warnings.is_empty() {
        return Err(format!("parsed {parsed} of {rows} rows, warnings {warnings:?}").into());
    }
    println!(
        "parsed {parsed} rows ({convention:?} convention, exact percentiles) in {seconds:.2} s: \
         {:.0} rows/s, {:.0} MiB/s",
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
    drop(report);
    fallback_bound_memory();
    Ok(())
}

/// The memory one label's exact counts cost at the bound: MAX_EXACT_LARGE_VALUES distinct
/// values at or above DENSE_LIMIT_MS (the map), plus every value below it (the array).
fn fallback_bound_memory() {
    if !reset_peak_memory() {
        println!("fallback bound: cannot reset VmHWM on this kernel, not measured");
        return;
    }
    let before = peak_memory_kib();
    let mut counts = ElapsedCounts::default();
    for value in 0..DENSE_LIMIT_MS + MAX_EXACT_LARGE_VALUES as u64 {
        counts.add(value);
    }
    let after = peak_memory_kib();
    assert!(counts.is_exact() && counts.distinct_values() == 2048 + MAX_EXACT_LARGE_VALUES);
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "one label at the exact bound ({MAX_EXACT_LARGE_VALUES} distinct values >= \
             {DENSE_LIMIT_MS} ms): {} KiB more peak memory",
            after.saturating_sub(before)
        );
    }
}
