//! The comparison report as one tidy CSV table: a row per point and figure, with the
//! point's axes as columns, so a spreadsheet pivot or `pandas` can slice it any way.
//! Columns: `point, repeat, <axis>..., section, subject, metric, statistic, value, unit,
//! synthetic, source`. Memory trends are rows of section `memory_trend` (statistics
//! `slope`, `r_squared`). `source` names where the value comes from (`load_test`,
//! `aws_cloudwatch`, `demo_workload`, `sandbox_synthetic`) and `synthetic` is `true` for the
//! last two, on every row, so the label survives any slicing of the table. `status` is the
//! point's (`passed`, `failed`, ...) and `shortfall` says why a point that did not pass has
//! figures of a partial workload (`failed: engines lost in step smoke (...)`), on every row
//! of it, for the same reason.
use crate::report::run::figure::Provenance;
use crate::report::run::run_summary::RunSummary;

/// The columns after the point, its repeat and its axes.
const FIGURE_COLUMNS: [&str; 10] = [
    "section",
    "subject",
    "metric",
    "statistic",
    "value",
    "unit",
    "synthetic",
    "source",
    "status",
    "shortfall",
];

pub fn render(summary: &RunSummary) -> String {
    let mut header: Vec<String> = vec!["point".into(), "repeat".into()];
    header.extend(summary.axes.iter().map(|axis| axis.name.clone()));
    header.extend(FIGURE_COLUMNS.map(str::to_owned));
    let mut rows: Vec<Vec<String>> = vec![header];
    let axes_of = |variant: usize| -> Vec<String> {
        summary
            .axes
            .iter()
            .map(|axis| {
                summary.variants[variant]
                    .axes
                    .iter()
                    .find(|v| v.axis == axis.name)
                    .map(|v| v.variant.clone())
                    .unwrap_or_default()
            })
            .collect()
    };
    let outcome_of = |variant: usize, point: &str| {
        summary.variants[variant]
            .points
            .iter()
            .find(|p| p.id == point)
    };
    let repeat_of = |variant: usize, point: &str| -> String {
        outcome_of(variant, point)
            .map(|p| p.repeat.to_string())
            .unwrap_or_default()
    };
    // The point's status and why it did not pass: the last two columns of its every row.
    let ending_of = |variant: usize, point: &str| -> [String; 2] {
        let outcome = outcome_of(variant, point);
        [
            outcome.map(|p| serde_plain(&p.status)).unwrap_or_default(),
            outcome
                .and_then(|p| p.shortfall.clone())
                .unwrap_or_default(),
        ]
    };
    for group in &summary.groups {
        for (position, &variant) in group.variants.iter().enumerate() {
            for row in &group.figures {
                let Some(cell) = row.cells.get(position) else {
                    continue;
                };
                for (point, value) in cell.points.iter().zip(&cell.values) {
                    let mut fields = vec![point.clone(), repeat_of(variant, point)];
                    fields.extend(axes_of(variant));
                    fields.extend([
                        serde_plain(&row.key.section),
                        row.key.subject.clone(),
                        row.key.metric.clone(),
                        row.key.statistic.clone(),
                        value.to_string(),
                        row.key.unit.clone(),
                        cell.source.unwrap_or(row.source).is_synthetic().to_string(),
                        serde_plain(&cell.source.unwrap_or(row.source)),
                    ]);
                    fields.extend(ending_of(variant, point));
                    rows.push(fields);
                }
            }
        }
    }
    for trend in &summary.memory_trends {
        for (statistic, value, unit) in [
            ("slope", trend.trend.slope_per_hour, "%/h"),
            ("r_squared", trend.trend.r_squared, "1"),
        ] {
            let mut fields = vec![trend.point.clone(), repeat_of(trend.variant, &trend.point)];
            fields.extend(axes_of(trend.variant));
            fields.extend([
                "memory_trend".to_owned(),
                trend.service.clone(),
                "Memory".to_owned(),
                statistic.to_owned(),
                value.to_string(),
                unit.to_owned(),
                trend.synthetic.to_string(),
                if trend.synthetic {
                    serde_plain(&Provenance::SandboxSynthetic)
                } else {
                    serde_plain(&Provenance::AwsCloudwatch)
                },
            ]);
            fields.extend(ending_of(trend.variant, &trend.point));
            rows.push(fields);
        }
    }
    // Written by hand rather than with csv::Writer, whose only failure (a row of another
    // length) would have to be ignored or turned into a report error; a test parses the
    // output and checks every row's length instead.
    let mut out = String::new();
    for fields in rows {
        let line: Vec<String> = fields.iter().map(|field| quote_field(field)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

/// RFC 4180 quoting: only fields with a delimiter, quote or line break are quoted.
fn quote_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The serde name of a unit-like enum variant (`service`).
fn serde_plain<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(quote_field("okapi-b"), "okapi-b");
        assert_eq!(quote_field("kafka=m5,job=x#1"), "\"kafka=m5,job=x#1\"");
        assert_eq!(quote_field("a \"b\""), "\"a \"\"b\"\"\"");
    }
}
