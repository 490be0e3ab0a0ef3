//! Reading JMeter results (JTL) files of either format into one [`SampleAggregator`].
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::report::jtl::csv_jtl::read_csv_jtl;
use crate::report::jtl::jtl_report::FileSpan;
use crate::report::jtl::xml_jtl::read_xml_jtl;
use crate::report::jtl::{
    Convention, JtlError, JtlErrorKind, JtlReport, JtlWarning, JtlWarningKind, SampleAggregator,
};

/// Large reads keep the per-row cost down on multi-gigabyte files.
const READ_BUFFER_BYTES: usize = 1 << 18;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The two result formats JMeter writes (`jmeter.save.saveservice.output_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JtlFormat {
    /// CSV with the given delimiter (`jmeter.save.saveservice.default_delimiter`).
    Csv {
        delimiter: u8,
    },
    Xml,
}

impl JtlFormat {
    /// Guesses the format from the start of the file (after any BOM): XML starts with `<`;
    /// otherwise CSV, tab-separated if the first line has more tabs than commas.
    pub fn detect(start: &[u8]) -> Self {
        let text = start.trim_ascii_start();
        if text.starts_with(b"<") {
            return Self::Xml;
        }
        let first_line = text.split(|&byte| byte == b'\n').next().unwrap_or_default();
        let count = |wanted: u8| first_line.iter().filter(|&&byte| byte == wanted).count();
        let delimiter = if count(b'\t') > count(b',') {
            b'\t'
        } else {
            b','
        };
        Self::Csv { delimiter }
    }
}

/// Streams one JTL (either format) into `aggregator` and returns the warnings. Nothing but
/// the aggregator's per-label state is kept, so memory does not depend on the file's size.
pub fn read_jtl<R: Read>(
    input: R,
    source_name: &str,
    aggregator: &mut SampleAggregator,
) -> Result<Vec<JtlWarning>, JtlError> {
    let mut input = BufReader::with_capacity(READ_BUFFER_BYTES, input);
    let start = input
        .fill_buf()
        .map_err(|error| JtlError::new(source_name, None, error.into()))?;
    let has_bom = start.starts_with(UTF8_BOM);
    let format = JtlFormat::detect(start.strip_prefix(UTF8_BOM).unwrap_or(start));
    if has_bom {
        input.consume(UTF8_BOM.len());
    }
    let samples_before = aggregator.samples();
    let mut warnings = Vec::new();
    match format {
        JtlFormat::Csv { delimiter } => {
            read_csv_jtl(input, delimiter, source_name, aggregator, &mut warnings)?
        }
        JtlFormat::Xml => read_xml_jtl(input, source_name, aggregator, &mut warnings)?,
    }
    if aggregator.samples() == samples_before {
        warnings.push(JtlWarning {
            source_name: source_name.to_owned(),
            line: None,
            kind: JtlWarningKind::NoSamples,
        });
    }
    Ok(warnings)
}

/// Summarizes several JTL files as one test (for example one file per JMeter load
/// generator in a distributed run): every label's rows from all files are merged, in the
/// order given (which matters only for the dashboard's window of recent samples).
pub fn summarize_jtl_files<P: AsRef<Path>>(
    paths: &[P],
    convention: Convention,
) -> Result<(JtlReport, Vec<JtlWarning>), JtlError> {
    summarize_into(paths, SampleAggregator::with_convention(convention))
}

/// [`summarize_jtl_files`], plus each label's percentiles per bucket of `width_ms` from
/// `origin_ms` (`JtlReport::timelines`), for the run report's charts.
pub fn summarize_jtl_files_over_time<P: AsRef<Path>>(
    paths: &[P],
    convention: Convention,
    origin_ms: i64,
    width_ms: i64,
) -> Result<(JtlReport, Vec<JtlWarning>), JtlError> {
    summarize_into(
        paths,
        SampleAggregator::with_convention(convention).with_time_buckets(origin_ms, width_ms),
    )
}

fn summarize_into<P: AsRef<Path>>(
    paths: &[P],
    mut aggregator: SampleAggregator,
) -> Result<(JtlReport, Vec<JtlWarning>), JtlError> {
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let source_name = path.display().to_string();
        let file = File::open(path)
            .map_err(|error| JtlError::new(&source_name, None, JtlErrorKind::Io(error)))?;
        warnings.extend(read_jtl(file, &source_name, &mut aggregator)?);
        if let Some((samples, first_start_ms, last_end_ms)) = aggregator.take_source_span() {
            files.push(FileSpan {
                source: source_name,
                samples,
                first_start_ms,
                last_end_ms,
            });
        }
    }
    let mut report = aggregator.finish();
    report.files = files;
    Ok((report, warnings))
}

/// How `report jtl --by` splits its input files into tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Grouping {
    /// One table per file.
    File,
    /// One table per matrix run: the files under the same directory holding a `run.json`
    /// (`results/<run-id>/points/*/x.jtl`); a file outside any run is grouped with the
    /// other files of its directory.
    Run,
}

/// The files in groups, in the order each group's first file was given; a group is named
/// by its file, or by its run's directory.
pub fn group_files(paths: &[PathBuf], by: Grouping) -> Vec<(String, Vec<PathBuf>)> {
    let mut groups: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for path in paths {
        let name = match by {
            Grouping::File => path.display().to_string(),
            Grouping::Run => run_of(path),
        };
        match groups.iter_mut().find(|(existing, _)| existing == &name) {
            Some((_, files)) => files.push(path.clone()),
            None => groups.push((name, vec![path.clone()])),
        }
    }
    groups
}

/// The nearest directory above `path` with a `run.json`, else the file's directory.
fn run_of(path: &Path) -> String {
    let parent = path.parent().unwrap_or(Path::new(""));
    parent
        .ancestors()
        .find(|dir| dir.join("run.json").is_file())
        .unwrap_or(parent)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summarize(input: &[u8]) -> Result<(JtlReport, Vec<String>), String> {
        let mut aggregator = SampleAggregator::new();
        let warnings = read_jtl(input, "in.jtl", &mut aggregator).map_err(|e| e.to_string())?;
        Ok((
            aggregator.finish(),
            warnings.iter().map(ToString::to_string).collect(),
        ))
    }

    fn error_of(input: &[u8]) -> String {
        summarize(input)
            .err()
            .unwrap_or_else(|| panic!("expected an error"))
    }

    /// JMeter 5.x's default CSV header (all `jmeter.save.saveservice.*` at their defaults).
    const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,\
        dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,\
        IdleTime,Connect\n";

    fn row(ts: i64, elapsed: u64, label: &str, success: bool) -> String {
        format!(
            "{ts},{elapsed},{label},200,OK,Thread Group 1-1,text,{success},,512,128,1,1,\
             http://localhost/x,{elapsed},0,3\n"
        )
    }

    #[test]
    fn detects_the_format_from_the_first_bytes() {
        assert_eq!(
            JtlFormat::detect(b"  \n<?xml version=\"1.0\"?>"),
            JtlFormat::Xml
        );
        assert_eq!(
            JtlFormat::detect(HEADER.as_bytes()),
            JtlFormat::Csv { delimiter: b',' }
        );
        assert_eq!(
            JtlFormat::detect(b"timeStamp\telapsed\tlabel,x\n"),
            JtlFormat::Csv { delimiter: b'\t' }
        );
        assert_eq!(JtlFormat::detect(b""), JtlFormat::Csv { delimiter: b',' });
    }

    #[test]
    fn csv_with_the_default_header() {
        let input = format!(
            "{HEADER}{}{}{}",
            row(1000, 100, "A", true),
            row(1050, 300, "B", false),
            row(1100, 200, "A", true)
        );
        let (report, warnings) = summarize(input.as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let a = &report.labels[0];
        assert_eq!(
            (a.label.as_str(), a.samples, a.errors, a.mean_ms),
            ("A", 2, 0, 150.0)
        );
        // A's window: first start 1000, last end 1100 + 200 = 1300 -> 2 samples / 0.3 s.
        assert_eq!(a.throughput_per_second, Some(2.0 / 0.3));
        let total = report.total.unwrap();
        assert_eq!((total.samples, total.errors), (3, 1));
        assert!(
            (total.error_percent - 33.333_333_333).abs() < 1e-9,
            "{}",
            total.error_percent
        );
        assert_eq!((total.first_start_ms, total.last_end_ms), (1000, 1350));
    }

    #[test]
    fn csv_columns_in_another_order_are_found_by_name() {
        // JMeter writes only the enabled columns, in its own order; a hand-reordered file
        // (spreadsheet export) must work too.
        let input = b"label,success,elapsed,timeStamp\nA,true,10,1000\nA,false,30,2000\n";
        let (report, _) = summarize(input).unwrap();
        let a = &report.labels[0];
        assert_eq!((a.samples, a.errors, a.min_ms, a.max_ms), (2, 1, 10, 30));
        assert_eq!((a.first_start_ms, a.last_end_ms), (1000, 2030));
    }

    #[test]
    fn csv_without_a_header_uses_jmeter_defaults() {
        let input = format!("{}{}", row(1000, 100, "A", true), row(1000, 50, "A", false));
        let (report, _) = summarize(input.as_bytes()).unwrap();
        assert_eq!((report.labels[0].samples, report.labels[0].errors), (2, 1));
        assert_eq!(
            error_of(b"1000,100,A,200,OK\n"),
            "in.jtl:1: no CSV header and only 5 fields; without a header JMeter's default column \
             set (17 columns: timeStamp,elapsed,label,...) is assumed; add a header with \
             jmeter.save.saveservice.print_field_names=true"
        );
    }

    #[test]
    fn csv_quotes_commas_and_newlines_inside_fields() {
        let input = format!(
            "{HEADER}1000,10,\"Search, by title\",500,\"Internal \"\"error\"\"\nsecond line\",T 1-1,text,false,\"Assertion failed:\nexpected 200\",1,1,1,1,http://h/,9,0,1\n{}",
            row(2000, 20, "Search, by title", true)
                .replace("Search, by title", "\"Search, by title\"")
        );
        let (report, warnings) = summarize(input.as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(report.labels.len(), 1);
        let search = &report.labels[0];
        assert_eq!(
            (search.label.as_str(), search.samples, search.errors),
            ("Search, by title", 2, 1)
        );
    }

    #[test]
    fn csv_reports_bad_rows_with_their_line() {
        // The bad row starts on line 3 even though an earlier field spans two lines.
        let input = format!(
            "{HEADER}1000,1,A,200,\"two\nlines\",t,text,true,,1,1,1,1,u,1,0,1\n1000,x,A,200,OK,t,text,true,,1,1,1,1,u,1,0,1\n{}",
            row(1, 1, "A", true)
        );
        assert_eq!(
            error_of(input.as_bytes()),
            "in.jtl:4: `elapsed` is not a whole number of milliseconds: \"x\""
        );
        let missing_fields = format!("{HEADER}1000,1,A\n{}", row(1, 1, "A", true));
        assert_eq!(
            error_of(missing_fields.as_bytes()),
            "in.jtl:2: expected 17 fields like the first row, found 3"
        );
        let bad_success = format!(
            "{HEADER}{}{}",
            row(1, 1, "A", true).replace("true", "yes"),
            row(1, 1, "A", true)
        );
        assert_eq!(
            error_of(bad_success.as_bytes()),
            "in.jtl:2: `success` is neither true nor false: \"yes\""
        );
        let bad_time = format!(
            "{HEADER}{}{}",
            row(1, 1, "A", true).replacen('1', "1a", 1),
            row(1, 1, "A", true)
        );
        assert!(error_of(bad_time.as_bytes()).starts_with("in.jtl:2: `timeStamp` is neither"));
        assert_eq!(
            error_of(b"timeStamp,label,success\n1,A,true\n"),
            "in.jtl:1: the CSV header has no `elapsed` column (header: timeStamp,label,success)"
        );
        assert!(
            error_of(b"timeStamp,elapsed,label,success,SampleCount\n").contains("statistical-mode")
        );
    }

    #[test]
    fn csv_truncated_last_row_is_a_warning_and_ignored() {
        let input = format!("{HEADER}{}1700000000000,12,A,2", row(1000, 100, "A", true));
        let (report, warnings) = summarize(input.as_bytes()).unwrap();
        assert_eq!(report.total.unwrap().samples, 1);
        assert_eq!(
            warnings,
            [
                "in.jtl:3: last row ignored because it is incomplete: expected 17 fields like the first row, found 4"
            ]
        );
        // Cut inside a quoted field: the row swallows the rest of the file and is still last.
        let cut_in_quotes = format!("{HEADER}{}1,1,\"A, unfinished", row(1000, 100, "A", true));
        let (report, warnings) = summarize(cut_in_quotes.as_bytes()).unwrap();
        assert_eq!((report.total.unwrap().samples, warnings.len()), (1, 1));
    }

    #[test]
    fn csv_dates_instead_of_epoch_milliseconds() {
        // jmeter.save.saveservice.timestamp_format=yyyy/MM/dd HH:mm:ss.SSS
        let input = format!(
            "{HEADER}{}",
            row(0, 250, "A", true).replacen('0', "2023/10/27 08:26:47.123", 1)
        );
        let (report, _) = summarize(input.as_bytes()).unwrap();
        assert_eq!(report.start_ms(), Some(1_698_395_207_123));
        assert_eq!(report.end_ms(), Some(1_698_395_207_373));
    }

    #[test]
    fn non_utf8_labels_are_decoded_lossily() {
        let mut input = HEADER.as_bytes().to_vec();
        input.extend_from_slice(row(1, 5, "Caf", true).as_bytes());
        input.extend_from_slice(b"1,7,Caf\xE9 au lait,200,OK,t,text,true,,1,1,1,1,u,1,0,1\n");
        let (report, _) = summarize(&input).unwrap();
        assert_eq!(report.labels[1].label, "Caf\u{FFFD} au lait");
    }

    #[test]
    fn empty_and_header_only_files_have_no_samples() {
        for input in [&b""[..], b"\n", HEADER.as_bytes(), b"\xEF\xBB\xBF"] {
            let (report, warnings) = summarize(input).unwrap();
            assert_eq!(report.total, None);
            assert_eq!(warnings, ["in.jtl: no samples"]);
        }
    }

    #[test]
    fn a_bom_before_the_header_is_ignored() {
        let input = format!("\u{FEFF}{HEADER}{}", row(1, 5, "A", true));
        assert_eq!(summarize(input.as_bytes()).unwrap().0.labels[0].samples, 1);
    }

    #[test]
    fn a_repeated_header_from_concatenated_files_is_skipped() {
        let run = format!("{HEADER}{}", row(1, 5, "A", true));
        let (report, warnings) = summarize(format!("{run}{run}").as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(report.labels[0].samples, 2);
    }

    #[test]
    fn windows_line_endings() {
        // JMeter on Windows writes CRLF; the last field must not keep the `\r`.
        let input = format!("{HEADER}{}{}", row(1, 5, "A", true), row(9, 5, "A", false))
            .replace('\n', "\r\n");
        let (report, warnings) = summarize(input.as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!((report.labels[0].samples, report.labels[0].errors), (2, 1));
    }

    #[test]
    fn sample_variables_after_the_default_columns_are_ignored() {
        // `sample_variables=user,item` appends one column per variable, with and without header.
        let with_header = format!(
            "{}{}",
            HEADER.replace("Connect\n", "Connect,user,item\n"),
            row(1, 5, "A", true).replace('\n', ",u1,\"i, 1\"\n")
        );
        assert_eq!(
            summarize(with_header.as_bytes()).unwrap().0.labels[0].samples,
            1
        );
        let headerless = row(1, 5, "A", true).replace('\n', ",u1,i1\n");
        assert_eq!(
            summarize(headerless.as_bytes()).unwrap().0.labels[0].samples,
            1
        );
    }

    #[test]
    fn tab_separated_results() {
        let input = format!("{HEADER}{}", row(1, 5, "A", true)).replace(',', "\t");
        assert_eq!(summarize(input.as_bytes()).unwrap().0.labels[0].samples, 1);
    }

    /// Shape from JMeter's "Results file format" documentation (XML sample log).
    const XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testResults version="1.2">
<httpSample t="120" it="0" lt="100" ct="3" ts="1000" s="true" lb="Check-in &amp; out" rc="200" rm="OK" tn="TG 1-1" dt="text" by="512" sby="100" ng="1" na="1">
  <httpSample t="80" lt="80" ts="1000" s="true" lb="redirect" rc="302" rm="Found" tn="TG 1-1" by="10"/>
  <assertionResult><name>code</name><failure>false</failure><error>false</error></assertionResult>
</httpSample>
<sample t="400" lt="0" ts="1100" s="false" lb="Transaction" rc="500" rm="x" tn="TG 1-1" by="0"/>
<httpSample t="80" lt="70" ts="1300" s="true" lb="Check-in &amp; out" rc="200" rm="OK" tn="TG 1-2" by="512"/>
</testResults>
"#;

    #[test]
    fn xml_counts_top_level_samples_only() {
        let (report, warnings) = summarize(XML.as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let names: Vec<_> = report.labels.iter().map(|row| row.label.as_str()).collect();
        assert_eq!(names, ["Check-in & out", "Transaction"]);
        assert_eq!(
            (report.labels[0].samples, report.labels[0].mean_ms),
            (2, 100.0)
        );
        let total = report.total.unwrap();
        assert_eq!(
            (
                total.samples,
                total.errors,
                total.first_start_ms,
                total.last_end_ms
            ),
            (3, 1, 1000, 1500)
        );
    }

    #[test]
    fn transaction_parents_are_recognised_in_both_formats() {
        let parent_message = "Number of samples in transaction : 1, number of failing samples : 0";
        let csv = format!(
            "{HEADER}{}{}",
            row(1, 5, "Req", true),
            row(1, 5, "Flow", true).replace(",OK,", &format!(",\"{parent_message}\",")),
        );
        let xml = format!(
            "<testResults>\n<sample t=\"5\" ts=\"1\" s=\"true\" lb=\"Req\" rm=\"OK\"/>\n\
             <sample t=\"5\" ts=\"1\" s=\"true\" lb=\"Flow\" rm=\"{parent_message}\"/>\n</testResults>\n"
        );
        for input in [csv, xml] {
            let totals = [Convention::Aggregate, Convention::Dashboard].map(|convention| {
                let mut aggregator = SampleAggregator::with_convention(convention);
                read_jtl(input.as_bytes(), "in.jtl", &mut aggregator).unwrap();
                let report = aggregator.finish();
                (report.labels.len(), report.total.map(|total| total.samples))
            });
            assert_eq!(totals, [(2, Some(2)), (2, Some(1))], "{input}");
        }
    }

    #[test]
    fn xml_with_a_non_utf8_label_is_decoded_lossily() {
        // "Transacción" written in Latin-1 (0xF3) by a misconfigured encoding.
        let latin1: Vec<u8> = XML
            .replace("Transaction", "Transacci@n")
            .bytes()
            .map(|b| if b == b'@' { 0xF3 } else { b })
            .collect();
        let (report, _) = summarize(&latin1).unwrap();
        assert_eq!(report.labels[1].label, "Transacci\u{FFFD}n");
    }

    #[test]
    fn csv_blank_lines_are_skipped() {
        let input = format!(
            "{HEADER}\n{}\n\n{}",
            row(1, 5, "A", true),
            row(2, 5, "A", true)
        );
        assert_eq!(summarize(input.as_bytes()).unwrap().0.labels[0].samples, 2);
    }

    #[test]
    fn xml_cut_off_mid_file_is_a_warning() {
        let cut = &XML[..XML.find("<httpSample t=\"80\" lt=\"70\"").unwrap() + 30];
        let (report, warnings) = summarize(cut.as_bytes()).unwrap();
        assert_eq!(report.total.unwrap().samples, 2);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("in.jtl:8: last row ignored"),
            "{warnings:?}"
        );
        assert_eq!(
            warnings[1],
            "in.jtl:8: no closing </testResults>: the test was still running or was killed"
        );
    }

    #[test]
    fn xml_errors_name_the_line() {
        let missing = XML.replace(r#"<sample t="400" "#, "<sample ");
        assert_eq!(
            error_of(missing.as_bytes()),
            "in.jtl:7: <sample> has no `t` attribute"
        );
        let bad = XML.replace(r#"ts="1300""#, r#"ts="soon""#);
        assert!(error_of(bad.as_bytes()).starts_with("in.jtl:8: `ts` is neither"));
        assert_eq!(
            error_of(b"<?xml version=\"1.0\"?>\n<html></html>"),
            "in.jtl:2: not a JMeter XML results file: the root element is <html>, not <testResults>"
        );
        assert!(error_of(b"<testResults>\n</wrong>").starts_with("in.jtl:2: malformed XML"));
    }
}
