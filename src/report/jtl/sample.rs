//! One JMeter sample as the parsers hand it to the aggregator.

/// One top-level JMeter sample, borrowed from the parser's buffer so no row is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample<'a> {
    /// The transaction label (`label` column, `lb` attribute) as raw bytes; decoded lossily
    /// only when shown, so non-UTF-8 labels never stop a parse.
    pub label: &'a [u8],
    /// Start of the sample in milliseconds since the Unix epoch. JMeter's shipped
    /// `jmeter.properties` sets `sampleresult.timestamp.start=true`, so `timeStamp`/`ts` is
    /// the start, and the end is `start + elapsed`.
    pub start_ms: i64,
    /// `elapsed` / `t`: the sample's response time in milliseconds.
    pub elapsed_ms: u64,
    /// `success` / `s`: false counts as an error.
    pub success: bool,
    /// A Transaction Controller's parent sample (`responseMessage` / `rm` starts with
    /// "Number of samples in transaction"): JMeter's dashboard leaves it out of TOTAL.
    pub transaction_parent: bool,
    /// A Transaction Controller parent that recorded no sub-samples (`responseMessage`
    /// starts with "Number of samples in transaction : 0"): JMeter's dashboard leaves it
    /// out of its row and of TOTAL.
    pub empty_transaction: bool,
    /// `bytes` / `by`: bytes received; 0 when the file does not record them.
    pub received_bytes: u64,
    /// `sentBytes` / `sby`: bytes sent; 0 when the file does not record them.
    pub sent_bytes: u64,
}

impl Sample<'_> {
    /// When the sample finished; saturating so that absurd inputs cannot overflow.
    pub fn end_ms(&self) -> i64 {
        let elapsed = i64::try_from(self.elapsed_ms).unwrap_or(i64::MAX);
        self.start_ms.saturating_add(elapsed)
    }
}
