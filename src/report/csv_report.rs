//! The comparison report as one tidy CSV table: a row per point and figure, with the
//! point's axes as columns, so a spreadsheet pivot or `pandas` can slice it any way.
//! Columns: `point, repeat, <axis>..., section, subject, metric, statistic, value, unit`.
//! Memory trends are rows of section `memory_trend` (statistics `slope`, `r_squared`).
use crate::report::run_summary::RunSummary;

pub fn render(summary: &RunSummary) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["point".into(), "repeat".into()];
    header.extend(summary.axes.iter().map(|axis| axis.name.clone()));
    header
        .extend(["section", "subject", "metric", "statistic", "value", "unit"].map(str::to_owned));
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
    let repeat_of = |variant: usize, point: &str| -> String {
        summary.variants[variant]
            .points
            .iter()
            .find(|p| p.id == point)
            .map(|p| p.repeat.to_string())
            .unwrap_or_default()
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
                    ]);
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
            ]);
            rows.push(fields);
        }
    }
    for fields in rows {
        // Writing to a Vec cannot fail for I/O reasons, and every row is a flat list of strings.
        let _ = writer.write_record(&fields);
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The serde name of a unit-like enum variant (`service`).
fn serde_plain<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
