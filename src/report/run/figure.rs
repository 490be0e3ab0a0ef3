//! What a report compares: named figures such as "Check-in average (s)" or "mod-inventory-b
//! CPU maximum (%)", one value per point.
use serde::Serialize;

/// Where a figure comes from; also the order of the report's sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Step durations from `point.json`.
    Duration,
    /// Per-label figures from the JTL files.
    Transaction,
    /// ECS service metrics (`source: ecs`).
    Service,
    /// RDS instance metrics (`source: rds`).
    Database,
    /// MSK broker metrics (`source: kafka`).
    Broker,
    /// Any other metric source, kept rather than dropped.
    Other,
}

impl Section {
    pub fn of_source(source: &str) -> Self {
        match source {
            "ecs" => Self::Service,
            "rds" => Self::Database,
            "kafka" => Self::Broker,
            _ => Self::Other,
        }
    }

    /// The noun for a table heading: "Service CPU (%)".
    pub fn title(self) -> &'static str {
        match self {
            Self::Duration => "Step durations",
            Self::Transaction => "Transactions",
            Self::Service => "Service",
            Self::Database => "Database",
            Self::Broker => "MSK broker",
            Self::Other => "Other",
        }
    }

    /// Figures measured by CloudWatch, which the sandbox fakes.
    pub fn is_metric(self) -> bool {
        matches!(
            self,
            Self::Service | Self::Database | Self::Broker | Self::Other
        )
    }
}

/// Names one figure; equal keys across points are the same figure.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FigureKey {
    pub section: Section,
    /// Step name, transaction label, service, `writer qcp1-db`, `<cluster> broker 1`.
    pub subject: String,
    /// `Duration`, `Response time`, `Errors`, `CPU`, `Memory`, `Connections`, ...
    pub metric: String,
    /// `Value`, `Average` or `Maximum` over the workload window, or a transaction's
    /// percentile `p90`, `p95`, `p99` (see [`FigureKey::is_percentile`]).
    pub statistic: String,
    /// `s`, `%`, `count`, ...
    pub unit: String,
}

impl FigureKey {
    /// A response-time percentile of a label (`p90`, ...), compared with a rank test.
    pub fn is_percentile(&self) -> bool {
        self.statistic.starts_with('p')
            && self.statistic.len() > 1
            && self.statistic[1..]
                .bytes()
                .all(|byte| byte.is_ascii_digit())
    }
}

/// CloudWatch metric names as people read them in the published reports.
pub fn metric_title(metric: &str) -> String {
    match metric {
        "CPUUtilization" => "CPU".to_owned(),
        "MemoryUtilization" => "Memory".to_owned(),
        "DatabaseConnections" => "Connections".to_owned(),
        "CpuUser" => "CPU user".to_owned(),
        "CpuSystem" => "CPU system".to_owned(),
        other => other.to_owned(),
    }
}

/// CloudWatch units, shortened.
pub fn unit_symbol(unit: &str) -> String {
    match unit {
        "Percent" => "%".to_owned(),
        "Count" => "count".to_owned(),
        "Seconds" => "s".to_owned(),
        "Milliseconds" => "ms".to_owned(),
        "Bytes" => "B".to_owned(),
        other => other.to_owned(),
    }
}
