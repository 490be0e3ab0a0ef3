//! JMeter XML results (`jmeter.save.saveservice.output_format=xml`).
//!
//! Shape, from JMeter's "Results file format" documentation:
//! `<testResults version="1.2">` holding one `<httpSample>` (HTTP samplers) or `<sample>`
//! (all others, and Transaction Controllers) per result, with attributes `t` (elapsed ms),
//! `ts` (timestamp), `s` (success), `lb` (label), `rc`, `rm`, `tn`, `by`, `lt`, ...
//!
//! Sub-samples: a sample element may contain nested `<httpSample>`/`<sample>` elements
//! (redirects, embedded resources, or the children of a Transaction Controller with
//! "Generate parent sample"). Only direct children of `<testResults>` are counted, because
//! a parent's `t` already includes its children; counting both would double the load and
//! mix a transaction's time with its parts. This is also what JMeter's CSV output and its
//! Aggregate Report see.
use std::borrow::Cow;
use std::io::{BufRead, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::report::jtl::convention::transaction_kind;
use crate::report::jtl::csv_jtl::parse_success;
use crate::report::jtl::{
    JtlError, JtlErrorKind, JtlWarning, JtlWarningKind, Sample, SampleAggregator,
};
use crate::report::timestamp::{parse_digits, parse_timestamp};

/// Streams top-level sample elements into `aggregator`. A file cut off inside the last
/// element, or missing `</testResults>`, gives a warning; other malformed XML is an error.
pub fn read_xml_jtl<R: BufRead>(
    input: R,
    source_name: &str,
    aggregator: &mut SampleAggregator,
    warnings: &mut Vec<JtlWarning>,
) -> Result<(), JtlError> {
    let mut reader = Reader::from_reader(LineCountingReader::new(input));
    let mut buffer = Vec::new();
    let mut depth = 0usize;
    let mut warn = |line, kind| {
        warnings.push(JtlWarning {
            source_name: source_name.to_owned(),
            line,
            kind,
        });
    };
    loop {
        // The reader stops right after each event, so before the next read it stands at the
        // `<` of the next element: that is the line to report.
        let line = Some(reader.get_ref().line());
        let error = |kind| JtlError::new(source_name, line, kind);
        buffer.clear();
        match reader.read_event_into(&mut buffer) {
            Ok(Event::Start(element)) => {
                visit_element(&element, depth, aggregator).map_err(error)?;
                depth += 1;
            }
            Ok(Event::Empty(element)) => {
                visit_element(&element, depth, aggregator).map_err(error)?
            }
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            // quick-xml's syntax errors all mean "the input ended inside a construct".
            Err(quick_xml::Error::Syntax(syntax)) => {
                warn(
                    line,
                    JtlWarningKind::TruncatedLastRow {
                        reason: syntax.to_string(),
                    },
                );
                break;
            }
            Err(other) => return Err(error(JtlErrorKind::Xml(other.to_string()))),
        }
    }
    if depth > 0 {
        warn(
            Some(reader.get_ref().line()),
            JtlWarningKind::UnterminatedXml,
        );
    }
    Ok(())
}

/// Checks the root, counts samples directly under it and ignores everything deeper.
fn visit_element(
    element: &BytesStart<'_>,
    depth: usize,
    aggregator: &mut SampleAggregator,
) -> Result<(), JtlErrorKind> {
    let name = element.name();
    match depth {
        0 if name.as_ref() != b"testResults" => Err(JtlErrorKind::UnexpectedRoot(
            String::from_utf8_lossy(name.as_ref()).into_owned(),
        )),
        1 if matches!(name.as_ref(), b"httpSample" | b"sample") => {
            let attributes = SampleAttributes::read(element)?;
            aggregator.add(&attributes.sample()?)
        }
        _ => Ok(()),
    }
}

/// The four attributes a summary needs, borrowed from the reader's buffer where possible:
/// most samples then cost no allocation at all.
#[derive(Debug, Default)]
struct SampleAttributes<'a> {
    element: &'a [u8],
    elapsed: Option<Cow<'a, [u8]>>,
    timestamp: Option<Cow<'a, [u8]>>,
    success: Option<Cow<'a, [u8]>>,
    /// Unescaped label bytes; UTF-8 is not checked here (the aggregator decodes lossily).
    label: Option<Cow<'a, [u8]>>,
    /// Whether `rm` starts like a Transaction Controller parent's response message (the
    /// prefix has no characters XML escapes, so the raw attribute is enough).
    transaction_parent: bool,
    empty_transaction: bool,
    received_bytes: Option<Cow<'a, [u8]>>,
    sent_bytes: Option<Cow<'a, [u8]>>,
}

impl<'a> SampleAttributes<'a> {
    fn read(element: &'a BytesStart<'a>) -> Result<Self, JtlErrorKind> {
        let mut attributes = Self {
            element: element.name().into_inner(),
            ..Self::default()
        };
        for attribute in element.attributes() {
            let attribute = attribute.map_err(|error| JtlErrorKind::Xml(error.to_string()))?;
            match attribute.key.as_ref() {
                b"t" => attributes.elapsed = Some(attribute.value),
                b"ts" => attributes.timestamp = Some(attribute.value),
                b"s" => attributes.success = Some(attribute.value),
                b"lb" => attributes.label = Some(unescape_label(attribute.value)?),
                b"rm" => {
                    (attributes.transaction_parent, attributes.empty_transaction) =
                        transaction_kind(&attribute.value)
                }
                b"by" => attributes.received_bytes = Some(attribute.value),
                b"sby" => attributes.sent_bytes = Some(attribute.value),
                _ => {}
            }
        }
        Ok(attributes)
    }

    fn sample(&self) -> Result<Sample<'_>, JtlErrorKind> {
        let missing = |attribute| JtlErrorKind::MissingAttribute {
            element: String::from_utf8_lossy(self.element).into_owned(),
            attribute,
        };
        let lossy = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let elapsed = self.elapsed.as_deref().ok_or_else(|| missing("t"))?;
        let timestamp = self.timestamp.as_deref().ok_or_else(|| missing("ts"))?;
        let success = self.success.as_deref().ok_or_else(|| missing("s"))?;
        let label = self.label.as_deref().ok_or_else(|| missing("lb"))?;
        // Absent byte counts are 0, as JMeter's dashboard reads a file without them.
        let byte_count = |value: Option<&[u8]>, column: &'static str| match value {
            None => Ok(0),
            Some([]) => Ok(0),
            Some(value) => parse_digits(value).ok_or_else(|| JtlErrorKind::InvalidNumber {
                column,
                value: lossy(value),
            }),
        };
        Ok(Sample {
            label,
            start_ms: parse_timestamp(timestamp).ok_or_else(|| JtlErrorKind::InvalidTimestamp {
                column: "ts",
                value: lossy(timestamp),
            })?,
            elapsed_ms: parse_digits(elapsed)
                .filter(|ms| i64::try_from(*ms).is_ok())
                .ok_or_else(|| JtlErrorKind::InvalidNumber {
                    column: "t",
                    value: lossy(elapsed),
                })?,
            success: parse_success(success).ok_or_else(|| JtlErrorKind::InvalidBoolean {
                column: "s",
                value: lossy(success),
            })?,
            transaction_parent: self.transaction_parent,
            empty_transaction: self.empty_transaction,
            received_bytes: byte_count(self.received_bytes.as_deref(), "by")?,
            sent_bytes: byte_count(self.sent_bytes.as_deref(), "sby")?,
        })
    }
}

/// Resolves `&amp;`, `&#233;` and the like. A label without `&` (nearly all) is passed
/// through as bytes; one with entities is decoded lossily first, so that a label in a wrong
/// encoding is shown with replacement characters instead of failing the file.
fn unescape_label(raw: Cow<'_, [u8]>) -> Result<Cow<'_, [u8]>, JtlErrorKind> {
    if !raw.contains(&b'&') {
        return Ok(raw);
    }
    let text = String::from_utf8_lossy(&raw);
    let unescaped =
        quick_xml::escape::unescape(&text).map_err(|error| JtlErrorKind::Xml(error.to_string()))?;
    Ok(Cow::Owned(unescaped.into_owned().into_bytes()))
}

/// Counts the line breaks the XML reader has consumed, so that errors can name a line
/// (quick-xml itself only knows byte offsets).
struct LineCountingReader<R> {
    inner: R,
    newlines: u64,
}

impl<R: BufRead> LineCountingReader<R> {
    fn new(inner: R) -> Self {
        Self { inner, newlines: 0 }
    }

    /// 1-based line of the next unread byte.
    fn line(&self) -> u64 {
        self.newlines + 1
    }
}

impl<R: BufRead> Read for LineCountingReader<R> {
    fn read(&mut self, destination: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let count = available.len().min(destination.len());
        destination[..count].copy_from_slice(&available[..count]);
        self.consume(count);
        Ok(count)
    }
}

impl<R: BufRead> BufRead for LineCountingReader<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // `consume` follows a `fill_buf`, so this returns the same buffered bytes without I/O.
        if let Ok(buffered) = self.inner.fill_buf() {
            let consumed = &buffered[..amount.min(buffered.len())];
            self.newlines += consumed.iter().filter(|&&byte| byte == b'\n').count() as u64;
        }
        self.inner.consume(amount);
    }
}
