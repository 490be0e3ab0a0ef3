//! Which of JMeter's two sets of rules the figures follow.
//!
//! JMeter shows two different tables for the same JTL file, and people check envctl's
//! numbers against whichever they have open; `--convention` picks the one to match.
use serde::Serialize;

use crate::report::jtl::recent_window::DASHBOARD_STATISTIC_WINDOW;

/// Prefix of the `responseMessage` JMeter's Transaction Controller writes on its parent
/// sample ("Number of samples in transaction : 3, number of failing samples : 0"); the
/// dashboard recognises parents by it, and so does envctl.
pub const TRANSACTION_PARENT_MESSAGE_PREFIX: &[u8] = b"Number of samples in transaction";

/// Prefix of an empty Transaction Controller parent's `responseMessage` (no sub-sample ran,
/// say every child sat under an If Controller that was false). JMeter's dashboard drops
/// such samples from every row (`Sample.isEmptyController()`, tested in
/// `StatisticsSummaryConsumer.updateData`); its Aggregate Report keeps them.
pub const EMPTY_TRANSACTION_MESSAGE_PREFIX: &[u8] = b"Number of samples in transaction : 0";

/// Whether a `responseMessage` marks a Transaction Controller parent, and an empty one.
pub fn transaction_kind(response_message: &[u8]) -> (bool, bool) {
    (
        response_message.starts_with(TRANSACTION_PARENT_MESSAGE_PREFIX),
        response_message.starts_with(EMPTY_TRANSACTION_MESSAGE_PREFIX),
    )
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Convention {
    /// JMeter's Aggregate Report (and Summary Report): TOTAL counts every sample,
    /// Transaction Controller parents included; a percentile is the k-th smallest sample
    /// with k = round(n x p), p a 32-bit float as JMeter holds it
    #[default]
    Aggregate,
    /// JMeter's HTML dashboard (`jmeter -g`): TOTAL leaves Transaction Controller parents
    /// out, every row leaves empty ones out; percentiles interpolate (commons-math legacy, position p x (n+1)) over the last
    /// 20,000 samples of each row
    Dashboard,
}

impl Convention {
    /// The JMeter table, for headings.
    pub fn short_name(self) -> &'static str {
        match self {
            Self::Aggregate => "JMeter Aggregate Report rule",
            Self::Dashboard => "JMeter dashboard rule",
        }
    }

    /// One sentence for a report's method section.
    pub fn method_sentence(self) -> String {
        match self {
            Self::Aggregate => "Transaction figures follow JMeter's Aggregate Report \
                (--convention aggregate): TOTAL counts every sample, Transaction Controller \
                parents included, and a percentile p is the k-th smallest response time with \
                k = round(n × p), p held as a 32-bit float as JMeter holds it (so n × 0.9 = \
                k + 0.5 rounds down), exact at every magnitude."
                .to_owned(),
            Self::Dashboard => format!(
                "Transaction figures follow JMeter's HTML dashboard (--convention \
                 dashboard): TOTAL leaves Transaction Controller parents out, every row \
                 leaves out parents that recorded no sample (\"Number of samples in \
                 transaction : 0\"), and a percentile p interpolates between the sorted response times at position \
                 p × (n + 1) (commons-math legacy estimation) over each row's last {} \
                 samples (jmeter.reportgenerator.statistic_window).",
                DASHBOARD_STATISTIC_WINDOW
            ),
        }
    }
}
