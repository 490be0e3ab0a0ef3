//! Results of several engines merged from their raw samples: the engines' CSV JTLs are
//! concatenated into one file (one header), so every statistic the report computes from it
//! (percentiles, errors, throughput over the whole window) is that of the combined load,
//! never an average of per-engine figures. Averaging per-engine p95s, or summing per-engine
//! throughputs computed over different windows, is what distributed JMeter set-ups get
//! wrong (aws-samples/distributed-load-testing-using-aws-fargate#6).
//!
//! The start skew is measured, not assumed: the spread of the engines' first samples.
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// Why engine results could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path}: its header differs from the first engine's ({first}); the engines must save the same columns"
    )]
    Header { path: String, first: String },
}

/// What a merge found.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Samples written (all engines).
    pub samples: u64,
    /// Per engine (in the order given): its first sample's `timeStamp`, ms; `None` when it
    /// produced no sample.
    pub first_sample_ms: Vec<Option<i64>>,
}

impl Merged {
    /// Seconds between the first engine's first sample and the last engine's first
    /// sample; `None` with fewer than two engines that produced samples.
    pub fn start_skew_s(&self) -> Option<f64> {
        let firsts: Vec<i64> = self.first_sample_ms.iter().flatten().copied().collect();
        if firsts.len() < 2 {
            return None;
        }
        let (min, max) = (firsts.iter().min()?, firsts.iter().max()?);
        Some((max - min) as f64 / 1000.0)
    }
}

/// Concatenates the engines' CSV JTLs into `out`, keeping the first header once.
pub fn merge_csv_jtls<P: AsRef<Path>>(engines: &[P], out: &Path) -> Result<Merged, MergeError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| MergeError::Io { path, source }
    };
    let mut writer =
        std::io::BufWriter::new(crate::exec::private_file::create(out).map_err(io(out))?);
    let mut header: Option<String> = None;
    let mut merged = Merged {
        samples: 0,
        first_sample_ms: Vec::new(),
    };
    for path in engines {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(io(path))?;
        let mut lines = BufReader::new(file).lines();
        let mut first: Option<i64> = None;
        if let Some(line) = lines.next() {
            let line = line.map_err(io(path))?;
            match &header {
                None => {
                    writeln!(writer, "{line}").map_err(io(out))?;
                    header = Some(line);
                }
                Some(h) if *h == line => {}
                Some(h) => {
                    return Err(MergeError::Header {
                        path: path.display().to_string(),
                        first: h.clone(),
                    });
                }
            }
        }
        for line in lines {
            let line = line.map_err(io(path))?;
            if line.trim().is_empty() {
                continue;
            }
            if let Some(ts) = line
                .split(',')
                .next()
                .and_then(|t| t.trim().parse::<i64>().ok())
            {
                first = Some(first.map_or(ts, |f| f.min(ts)));
            }
            writeln!(writer, "{line}").map_err(io(out))?;
            merged.samples += 1;
        }
        merged.first_sample_ms.push(first);
    }
    writer.flush().map_err(io(out))?;
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::jtl::{Convention, summarize_jtl_files};

    const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

    fn engine(start_ms: i64, step_ms: i64, elapsed: &[u64], errors_every: usize) -> String {
        let mut out = format!("{HEADER}\n");
        for (i, e) in elapsed.iter().enumerate() {
            let ok = errors_every == 0 || i % errors_every != 0;
            out.push_str(&format!(
                "{},{e},Check-in,{},m,t 1-1,text,{ok},,10,10,1,1,,{e},0,0\n",
                start_ms + i as i64 * step_ms,
                if ok { 200 } else { 500 }
            ));
        }
        out
    }

    #[test]
    fn merged_statistics_are_those_of_the_concatenated_raw_samples() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path();
        // A fast engine and a slow one with errors, started 400 ms apart.
        let fast: Vec<u64> = (0..200).map(|i| 20 + i % 30).collect();
        let slow: Vec<u64> = (0..50).map(|i| 900 + i * 7).collect();
        let a = engine(1_700_000_000_000, 50, &fast, 0);
        let b = engine(1_700_000_000_400, 200, &slow, 5);
        let (pa, pb) = (dir.join("a.jtl"), dir.join("b.jtl"));
        std::fs::write(&pa, &a).expect("write a");
        std::fs::write(&pb, &b).expect("write b");
        let out = dir.join("merged.jtl");
        let merged = merge_csv_jtls(&[&pa, &pb], &out).expect("merge");
        assert_eq!(merged.samples, 250);
        assert_eq!(merged.start_skew_s(), Some(0.4));
        // The raw samples concatenated by hand: one header, every row of both engines.
        let concatenated = dir.join("concatenated.jtl");
        let rows_b: String = b.lines().skip(1).map(|l| format!("{l}\n")).collect();
        std::fs::write(&concatenated, format!("{a}{rows_b}")).expect("write");
        let conv = Convention::default();
        let (m, _) = summarize_jtl_files(&[&out], conv).expect("merged stats");
        let (c, _) = summarize_jtl_files(&[&concatenated], conv).expect("raw stats");
        // Every figure of every label and of the total; the reports differ only in the file
        // each read (`files`).
        assert_eq!(m.labels, c.labels);
        assert_eq!(m.total, c.total);
        let total = m.total.expect("samples");
        assert_eq!((total.samples, total.errors), (250, 10));
        // Not the average of the engines' own figures: their p95s average to ~500 ms,
        // while 80% of the combined samples are the fast engine's.
        let (ra, _) = summarize_jtl_files(&[&pa], conv).expect("a");
        let (rb, _) = summarize_jtl_files(&[&pb], conv).expect("b");
        let (ta, tb) = (ra.total.expect("a"), rb.total.expect("b"));
        let averaged = (ta.p95_ms + tb.p95_ms) / 2.0;
        assert!(
            (total.p95_ms - averaged).abs() > 100.0,
            "{} vs {averaged}",
            total.p95_ms
        );
    }

    #[test]
    fn engines_with_other_columns_are_refused() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path();
        let (pa, pb) = (dir.join("a.jtl"), dir.join("b.jtl"));
        std::fs::write(&pa, engine(0, 1, &[1, 2], 0)).expect("a");
        std::fs::write(&pb, "timeStamp,elapsed,label,success\n1,2,x,true\n").expect("b");
        let err = merge_csv_jtls(&[&pa, &pb], &dir.join("m.jtl")).expect_err("headers differ");
        assert!(err.to_string().contains("header differs"), "{err}");
    }
}
