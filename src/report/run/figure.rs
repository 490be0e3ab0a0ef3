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

/// Where a figure's numbers come from. Synthetic sources show the report's shape, not a
/// system's performance: they are labelled in every format and never listed as findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// A real load test against AWS: its JTL files, and its steps' durations.
    LoadTest,
    /// AWS CloudWatch metrics of the environment's resources.
    AwsCloudwatch,
    /// The sandbox's demo workload (a step's `demo:` command under `--sandbox`): it times
    /// the sandbox's own API on the machine that ran it, not the system under test.
    DemoWorkload,
    /// The sandbox: its synthetic CloudWatch series, and durations on its simulated clock.
    SandboxSynthetic,
}

impl Provenance {
    /// The source of a section's figures in a point of a sandbox (`sandbox`) or AWS run
    /// whose CloudWatch answers were or were not synthetic.
    pub fn of(section: Section, sandbox: bool, synthetic_metrics: bool) -> Self {
        match section {
            Section::Duration if sandbox => Self::SandboxSynthetic,
            Section::Transaction if sandbox => Self::DemoWorkload,
            Section::Duration | Section::Transaction => Self::LoadTest,
            _ if sandbox || synthetic_metrics => Self::SandboxSynthetic,
            _ => Self::AwsCloudwatch,
        }
    }

    pub fn is_synthetic(self) -> bool {
        matches!(self, Self::DemoWorkload | Self::SandboxSynthetic)
    }

    /// For headings and captions: "demo workload".
    pub fn short_name(self) -> &'static str {
        match self {
            Self::LoadTest => "load test",
            Self::AwsCloudwatch => "AWS CloudWatch",
            Self::DemoWorkload => "demo workload",
            Self::SandboxSynthetic => "sandbox synthetic",
        }
    }

    /// One clause for the report's banner and method: what the figures are.
    pub fn explanation(self, section: Section) -> &'static str {
        match (self, section) {
            (Self::DemoWorkload, _) => {
                "the demo workload's transactions time the sandbox's own API on the machine \
                 that ran it, not the system under test"
            }
            (Self::SandboxSynthetic, Section::Duration) => {
                "step durations run on the sandbox's simulated clock"
            }
            (Self::SandboxSynthetic, _) => {
                "the CloudWatch figures (services, database, MSK brokers) are the sandbox's \
                 synthetic series, not AWS measurements"
            }
            (Self::AwsCloudwatch, _) => "CloudWatch metrics from AWS",
            (Self::LoadTest, _) => "measured by the load test",
        }
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
    /// The smallest change the instrument behind this figure can show, in its unit: a
    /// JTL's response times are whole milliseconds (JMeter's clock), so a transaction's
    /// response time moves in steps of 0.001 s; durations are recorded to the millisecond.
    /// A smaller difference is "no measurable change". `None` where the source gives no
    /// such floor (CloudWatch averages, error percentages).
    pub fn resolution(&self) -> Option<f64> {
        match (self.section, self.unit.as_str()) {
            (Section::Transaction | Section::Duration, "s") => Some(0.001),
            (Section::Transaction | Section::Duration, "ms") => Some(1.0),
            _ => None,
        }
    }

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
