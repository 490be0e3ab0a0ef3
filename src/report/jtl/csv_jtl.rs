//! JMeter CSV results (`jmeter.save.saveservice.output_format=csv`, JMeter's default).
use std::io::Read;

use csv::ByteRecord;

use crate::report::jtl::convention::transaction_kind;
use crate::report::jtl::{
    JtlError, JtlErrorKind, JtlWarning, JtlWarningKind, Sample, SampleAggregator,
};
use crate::report::timestamp::{parse_digits, parse_timestamp};

/// The columns JMeter writes when every `jmeter.save.saveservice.*` option keeps its
/// default (JMeter 5.x `jmeter.properties`), in JMeter's order. A file without a header
/// (`print_field_names=false`) is read with this layout; `sample_variables` columns, if any,
/// come after these and are ignored.
pub const DEFAULT_COLUMNS: [&str; 17] = [
    "timeStamp",
    "elapsed",
    "label",
    "responseCode",
    "responseMessage",
    "threadName",
    "dataType",
    "success",
    "failureMessage",
    "bytes",
    "sentBytes",
    "grpThreads",
    "allThreads",
    "URL",
    "Latency",
    "IdleTime",
    "Connect",
];

/// Where the four columns a summary needs sit in this file, and how wide a row must be.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CsvLayout {
    timestamp: usize,
    elapsed: usize,
    label: usize,
    success: usize,
    /// `responseMessage`, which marks Transaction Controller parents; a file without the
    /// column has none that envctl can recognise.
    response_message: Option<usize>,
    /// `bytes` and `sentBytes`, for the KB/s columns; absent columns count as 0 bytes,
    /// as JMeter's dashboard counts a missing `sentBytes`.
    bytes: Option<usize>,
    sent_bytes: Option<usize>,
    field_count: usize,
}

impl CsvLayout {
    /// Reads the layout from the first record: a header if it names any JMeter column
    /// (JMeter may write columns in any order depending on the saveservice options),
    /// otherwise the default layout. Returns whether the first record was a header.
    fn from_first_record(first: &ByteRecord) -> Result<(Self, bool), JtlErrorKind> {
        let is_header = first
            .iter()
            .any(|field| DEFAULT_COLUMNS.iter().any(|c| c.as_bytes() == field));
        if !is_header {
            if first.len() < DEFAULT_COLUMNS.len() {
                return Err(JtlErrorKind::TooFewDefaultColumns {
                    expected: DEFAULT_COLUMNS.len(),
                    found: first.len(),
                });
            }
            let layout = Self {
                timestamp: 0,
                elapsed: 1,
                label: 2,
                success: 7,
                response_message: Some(4),
                bytes: Some(9),
                sent_bytes: Some(10),
                field_count: first.len(),
            };
            return Ok((layout, false));
        }
        if first.iter().any(|field| field == b"SampleCount") {
            return Err(JtlErrorKind::StatisticalMode);
        }
        let header_for_error = || {
            first
                .iter()
                .map(|field| String::from_utf8_lossy(field))
                .collect::<Vec<_>>()
                .join(",")
        };
        let find = |column: &'static str| {
            first
                .iter()
                .position(|field| field == column.as_bytes())
                .ok_or_else(|| JtlErrorKind::MissingColumn {
                    column,
                    header: header_for_error(),
                })
        };
        let layout = Self {
            timestamp: find("timeStamp")?,
            elapsed: find("elapsed")?,
            label: find("label")?,
            success: find("success")?,
            response_message: first.iter().position(|field| field == b"responseMessage"),
            bytes: first.iter().position(|field| field == b"bytes"),
            sent_bytes: first.iter().position(|field| field == b"sentBytes"),
            field_count: first.len(),
        };
        Ok((layout, true))
    }

    fn sample<'r>(&self, record: &'r ByteRecord) -> Result<Sample<'r>, JtlErrorKind> {
        if record.len() != self.field_count {
            return Err(JtlErrorKind::FieldCount {
                expected: self.field_count,
                found: record.len(),
            });
        }
        let field = |index: usize| record.get(index).unwrap_or_default();
        let lossy = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let timestamp = field(self.timestamp);
        let start_ms =
            parse_timestamp(timestamp).ok_or_else(|| JtlErrorKind::InvalidTimestamp {
                column: "timeStamp",
                value: lossy(timestamp),
            })?;
        let elapsed = field(self.elapsed);
        // JMeter's elapsed is a Java long; anything beyond i64 cannot be a real duration.
        let elapsed_ms = parse_digits(elapsed)
            .filter(|ms| i64::try_from(*ms).is_ok())
            .ok_or_else(|| JtlErrorKind::InvalidNumber {
                column: "elapsed",
                value: lossy(elapsed),
            })?;
        let success =
            parse_success(field(self.success)).ok_or_else(|| JtlErrorKind::InvalidBoolean {
                column: "success",
                value: lossy(field(self.success)),
            })?;
        let byte_count = |index: Option<usize>, column: &'static str| match index {
            None => Ok(0),
            // An empty cell is no count (hand-edited files), not a broken row.
            Some(index) if field(index).is_empty() => Ok(0),
            Some(index) => parse_digits(field(index)).ok_or_else(|| JtlErrorKind::InvalidNumber {
                column,
                value: lossy(field(index)),
            }),
        };
        let (transaction_parent, empty_transaction) =
            transaction_kind(self.response_message.map(field).unwrap_or_default());
        Ok(Sample {
            label: field(self.label),
            start_ms,
            elapsed_ms,
            success,
            transaction_parent,
            empty_transaction,
            received_bytes: byte_count(self.bytes, "bytes")?,
            sent_bytes: byte_count(self.sent_bytes, "sentBytes")?,
        })
    }
}

/// JMeter writes `true`/`false`; other capitalizations are accepted because spreadsheet
/// round trips turn them into `TRUE`/`FALSE`.
pub fn parse_success(field: &[u8]) -> Option<bool> {
    if field.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else if field.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else {
        None
    }
}

/// Streams CSV rows into `aggregator`. A row that cannot be read is an error with its line,
/// except the very last row, which is reported as a [`JtlWarningKind::TruncatedLastRow`]
/// warning and ignored (see there for why).
pub fn read_csv_jtl<R: Read>(
    input: R,
    delimiter: u8,
    source_name: &str,
    aggregator: &mut SampleAggregator,
    warnings: &mut Vec<JtlWarning>,
) -> Result<(), JtlError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        // Row widths are checked here, to report them with the expected count and line.
        .flexible(true)
        .delimiter(delimiter)
        .buffer_capacity(1 << 16)
        .from_reader(input);
    let mut record = ByteRecord::new();
    let mut read_next = |record: &mut ByteRecord| {
        reader.read_byte_record(record).map_err(|error| {
            let line = error.position().map(|position| position.line());
            let message = error.to_string();
            let kind = match error.into_kind() {
                csv::ErrorKind::Io(io) => JtlErrorKind::Io(io),
                _ => JtlErrorKind::Csv(message),
            };
            JtlError::new(source_name, line, kind)
        })
    };
    let line_of = |record: &ByteRecord| record.position().map(|position| position.line());

    if !read_next(&mut record)? {
        return Ok(());
    }
    let (layout, first_is_header) = CsvLayout::from_first_record(&record)
        .map_err(|kind| JtlError::new(source_name, line_of(&record), kind))?;
    // Kept to recognise the header again further down: `cat run1.jtl run2.jtl > all.jtl`
    // is a common way to merge runs, and repeats the header in the middle.
    let header = first_is_header.then(|| record.clone());
    if first_is_header && !read_next(&mut record)? {
        return Ok(());
    }
    loop {
        let line = line_of(&record);
        match layout.sample(&record) {
            Ok(sample) => aggregator
                .add(&sample)
                .map_err(|kind| JtlError::new(source_name, line, kind))?,
            // Compared only once a row fails to parse, so the hot path pays nothing.
            Err(_)
                if header
                    .as_ref()
                    .is_some_and(|header| header.iter().eq(record.iter())) => {}
            Err(kind) => {
                if read_next(&mut record)? {
                    return Err(JtlError::new(source_name, line, kind));
                }
                warnings.push(JtlWarning {
                    source_name: source_name.to_owned(),
                    line,
                    kind: JtlWarningKind::TruncatedLastRow {
                        reason: kind.to_string(),
                    },
                });
                return Ok(());
            }
        }
        if !read_next(&mut record)? {
            return Ok(());
        }
    }
}
