//! The comparison report as one self-contained HTML file: inline CSS, inline SVG charts,
//! no scripts, fonts or external URLs, so it can be attached to a ticket or opened offline
//! and shows the same everywhere. It is also well-formed XML (XHTML-style empty elements,
//! numeric character references only), which the tests check with an XML parser.
use std::fmt::Write as _;

use crate::report::run::chart::{
    Axis, BarSeries, GroupedBarChart, LineChart, LineStyle, Marker, TimeSeries,
};
use crate::report::run::figure::Section;
use crate::report::run::report_document::{Block, ReportDocument, Span, Table};
use crate::report::run::run_summary::{GroupTimeline, RunSummary};

/// Services with the highest average CPU get charts; a platform has ~144 services, and
/// the tables already hold every one of them.
pub const CHARTED_SERVICES: usize = 8;
const CHART_WIDTH: u32 = 640;
const CHART_HEIGHT: u32 = 360;
const TIME_AXIS: &str = "Time since workload start";

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0; color: #1d232a; background: #fff; }
main { max-width: 1360px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 1.7em; margin-bottom: 0.4em; }
h2 { border-bottom: 2px solid #d7dde3; padding-bottom: 4px; margin-top: 2em; }
h3 { margin-top: 1.6em; font-size: 1.1em; }
.note { background: #fff4d6; border-left: 4px solid #e0a100; padding: 8px 14px; margin: 12px 0; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.88em; }
caption { caption-side: top; text-align: left; color: #56616c; padding-bottom: 4px; }
th, td { border: 1px solid #d7dde3; padding: 4px 8px; vertical-align: top; }
th { background: #eef2f5; text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child, table.text td { text-align: left; }
tbody tr:nth-child(even) { background: #f8fafb; }
td.strong { font-weight: 600; background: #fdecea; }
nav.contents { margin: 12px 0; color: #56616c; }
nav.contents a { color: #1f5f99; }
code { background: #eef2f5; padding: 1px 4px; border-radius: 3px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; border: 1px solid #d7dde3; flex: 0 1 640px; max-width: 640px; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #56616c; padding: 4px 8px; }
";

pub fn render(summary: &RunSummary) -> String {
    // `write!` into a String cannot fail, hence the ignored results below.
    let document = ReportDocument::of(summary);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(&document.title)
    );
    // Sections get ids from their position, so the contents can link to them without
    // any rule for turning titles like `kafka=kraft-m7g, job=update-25k` into ids.
    let sections: Vec<&String> = document
        .blocks
        .iter()
        .filter_map(|block| match block {
            Block::Heading(2, text) => Some(text),
            _ => None,
        })
        .collect();
    // The charts sit deep in long reports (after every group's tables): the contents link
    // each group's charts directly.
    let charts: Vec<(usize, &str)> = document
        .blocks
        .iter()
        .filter_map(|block| match block {
            Block::Charts(group) => summary
                .groups
                .get(*group)
                .map(|g| (*group, g.title.as_str())),
            _ => None,
        })
        .collect();
    let mut section_index = 0;
    for block in &document.blocks {
        match block {
            Block::Heading(2, text) => {
                if section_index == 0 {
                    write_contents(&mut out, &sections, &charts);
                }
                section_index += 1;
                let _ = writeln!(
                    out,
                    "<h2 id=\"section-{section_index}\">{}</h2>",
                    escape(text)
                );
            }
            Block::Heading(level, text) => {
                let _ = writeln!(out, "<h{level}>{}</h{level}>", escape(text));
            }
            Block::Paragraph(spans) => {
                let _ = writeln!(out, "<p>{}</p>", spans_html(spans));
            }
            Block::Note(spans) => {
                let _ = writeln!(out, "<p class=\"note\">{}</p>", spans_html(spans));
            }
            Block::Bullets(items) => {
                out.push_str("<ul>\n");
                for item in items {
                    let _ = writeln!(out, "<li>{}</li>", spans_html(item));
                }
                out.push_str("</ul>\n");
            }
            Block::Table(table) => write_table(&mut out, table),
            Block::Folded { summary, table } => {
                let _ = writeln!(out, "<details>\n<summary>{}</summary>", escape(summary));
                write_table(&mut out, table);
                out.push_str("</details>\n");
            }
            Block::Charts(group) => write_charts(&mut out, summary, *group),
        }
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// A line of links to the sections, for long reports (one section per group), and one
/// to each group's charts.
fn write_contents(out: &mut String, sections: &[&String], charts: &[(usize, &str)]) {
    let links: Vec<String> = sections
        .iter()
        .enumerate()
        .map(|(index, title)| format!("<a href=\"#section-{}\">{}</a>", index + 1, escape(title)))
        .collect();
    let _ = writeln!(
        out,
        "<nav class=\"contents\">Contents: {}</nav>",
        links.join(" · ")
    );
    if !charts.is_empty() {
        let links: Vec<String> = charts
            .iter()
            .map(|(group, title)| format!("<a href=\"#charts-{group}\">{}</a>", escape(title)))
            .collect();
        let _ = writeln!(
            out,
            "<nav class=\"contents\">Charts: {}</nav>",
            links.join(" · ")
        );
    }
}

/// Text and attribute values; `'` too, so that escaped text is safe in either quote style.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn spans_html(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|span| {
            let text = escape(&span.text);
            if span.code {
                format!("<code>{text}</code>")
            } else if span.strong {
                format!("<strong>{text}</strong>")
            } else {
                text
            }
        })
        .collect()
}

fn write_table(out: &mut String, table: &Table) {
    out.push_str(if table.numeric {
        "<table>\n"
    } else {
        "<table class=\"text\">\n"
    });
    if let Some(caption) = &table.caption {
        let _ = writeln!(out, "<caption>{}</caption>", escape(caption));
    }
    out.push_str("<thead><tr>");
    for header in &table.headers {
        let _ = write!(out, "<th>{}</th>", escape(header));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for cell in row {
            if cell.strong {
                let _ = write!(out, "<td class=\"strong\">{}</td>", escape(&cell.text));
            } else {
                let _ = write!(out, "<td>{}</td>", escape(&cell.text));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// A chart that cannot be drawn (say, every value missing) becomes a line of text, so
/// one bad series never costs the whole report.
fn push_chart(
    out: &mut String,
    svg: Result<String, crate::report::run::chart::ChartError>,
    caption: &str,
) {
    out.push_str("<figure>\n");
    match svg {
        Ok(svg) => {
            // plotters writes a bare <svg> element; an XML declaration inside HTML would be
            // invalid, so drop one should a future version add it.
            let svg = match svg.find("<svg") {
                Some(at) => &svg[at..],
                None => svg.as_str(),
            };
            out.push_str(svg);
            out.push('\n');
        }
        Err(error) => {
            let _ = writeln!(
                out,
                "<p>Chart not drawn: {}</p>",
                escape(&error.to_string())
            );
        }
    }
    let _ = writeln!(
        out,
        "<figcaption>{}</figcaption>\n</figure>",
        escape(caption)
    );
}

fn write_charts(out: &mut String, summary: &RunSummary, group_index: usize) {
    let Some(group) = summary.groups.get(group_index) else {
        return;
    };
    let _ = writeln!(
        out,
        "<h3 id=\"charts-{group_index}\">Charts: {}</h3>",
        escape(&group.title)
    );
    let (charted, services) = charted_services(summary, group_index);
    if services > charted.len() {
        let _ = writeln!(
            out,
            "<p>CPU and memory are charted for the {} services with the highest average CPU, \
             of {services}; the tables above have every service.</p>",
            charted.len()
        );
    }
    out.push_str("<div class=\"charts\">\n");
    write_transaction_bars(out, summary, group_index);
    let timelines: Vec<&GroupTimeline> = summary
        .timelines
        .iter()
        .filter(|t| t.group == group_index)
        .collect();
    write_percentile_charts(out, summary, &group.title, &timelines);
    for service in charted {
        for metric in ["CPU", "Memory"] {
            if let Some(timeline) = timelines.iter().find(|t| {
                t.section == Section::Service && t.subject == service && t.metric == metric
            }) {
                write_line_chart(out, summary, &group.title, timeline);
            }
        }
    }
    for timeline in timelines
        .iter()
        .filter(|t| matches!(t.section, Section::Database | Section::Broker))
    {
        write_line_chart(out, summary, &group.title, timeline);
    }
    out.push_str("</div>\n");
}

fn write_line_chart(
    out: &mut String,
    summary: &RunSummary,
    group_title: &str,
    timeline: &GroupTimeline,
) {
    let chart = LineChart {
        title: format!("{} {}", timeline.subject, timeline.metric),
        x_axis: Axis::new(TIME_AXIS, "min"),
        y_axis: Axis::new(timeline.metric.clone(), timeline.unit.clone()),
        series: timeline
            .lines
            .iter()
            .map(|line| TimeSeries {
                name: line.name.clone(),
                points: line.points.clone(),
                // Repeats after the first are lighter lines of their variant's colour.
                style: LineStyle {
                    color: line.column,
                    light: line.repeat > 1,
                },
            })
            .collect(),
        markers: workload_markers(timeline),
    };
    let synthetic = if summary.synthetic_metrics {
        ", synthetic metrics"
    } else {
        ""
    };
    let caption = format!(
        "{} {} of {} per variant ({group_title}){synthetic}; dashed lines mark where the \
         workload starts (0) and ends.",
        timeline.section.title(),
        timeline.metric,
        timeline.subject,
    );
    push_chart(out, chart.to_svg(CHART_WIDTH, CHART_HEIGHT), &caption);
}

/// Per transaction label, its median and p95 over time, per variant: the tail moving
/// during the workload, which one average per point hides.
fn write_percentile_charts(
    out: &mut String,
    summary: &RunSummary,
    group_title: &str,
    timelines: &[&GroupTimeline],
) {
    let p95: Vec<&&GroupTimeline> = timelines
        .iter()
        .filter(|t| t.section == Section::Transaction && t.metric == "Response time p95")
        .collect();
    for high in p95 {
        let Some(median) = timelines.iter().find(|t| {
            t.section == Section::Transaction
                && t.subject == high.subject
                && t.metric == "Response time p50"
        }) else {
            continue;
        };
        // p95 solid, the median light, in the variant's colour.
        let mut series = Vec::new();
        for (timeline, name, light) in [(high, "p95", false), (median, "p50", true)] {
            series.extend(timeline.lines.iter().map(|line| TimeSeries {
                name: format!("{} {name}", line.name),
                points: line.points.clone(),
                style: LineStyle {
                    color: line.column,
                    light,
                },
            }));
        }
        let chart = LineChart {
            title: format!("{} response time", high.subject),
            x_axis: Axis::new(TIME_AXIS, "min"),
            y_axis: Axis::new("Response time", "ms"),
            series,
            markers: workload_markers(high),
        };
        let synthetic = summary
            .groups
            .iter()
            .flat_map(|group| &group.figures)
            .any(|row| row.key.section == Section::Transaction && row.synthetic);
        let caption = format!(
            "{} response time per variant ({group_title}): p95 and median (lighter) of the \
             samples started in each interval{}; dashed lines mark the workload's start and \
             end.",
            high.subject,
            if synthetic {
                ", synthetic (demo workload)"
            } else {
                ""
            }
        );
        push_chart(out, chart.to_svg(CHART_WIDTH, CHART_HEIGHT), &caption);
    }
}

/// Where the workload starts (0) and ends: one end per distinct workload length among the
/// chart's lines (to the second), so a reader sees which part of each line is under load.
fn workload_markers(timeline: &GroupTimeline) -> Vec<Marker> {
    let mut ends: Vec<f64> = timeline
        .lines
        .iter()
        .map(|line| (line.workload_end_min * 60.0).round() / 60.0)
        .filter(|end| end.is_finite() && *end > 0.0)
        .collect();
    ends.sort_by(f64::total_cmp);
    ends.dedup();
    let mut markers = vec![Marker {
        x: 0.0,
        label: "workload start".to_owned(),
    }];
    markers.extend(ends.into_iter().map(|x| Marker {
        x,
        label: "workload end".to_owned(),
    }));
    markers
}

/// The [`CHARTED_SERVICES`] services of a group with the highest average CPU among the
/// variants, highest first, and how many services the group has.
fn charted_services(summary: &RunSummary, group_index: usize) -> (Vec<String>, usize) {
    let Some(group) = summary.groups.get(group_index) else {
        return (Vec::new(), 0);
    };
    let mut services: Vec<(String, f64)> = group
        .figures
        .iter()
        .filter(|row| {
            row.key.section == Section::Service
                && row.key.metric == "CPU"
                && row.key.statistic == "Average"
        })
        .map(|row| {
            let peak = row
                .cells
                .iter()
                .filter_map(|c| c.summary.map(|s| s.mean))
                .fold(f64::NEG_INFINITY, f64::max);
            (row.key.subject.clone(), peak)
        })
        .collect();
    services.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total = services.len();
    let charted = services
        .into_iter()
        .take(CHARTED_SERVICES)
        .map(|(service, _)| service)
        .collect();
    (charted, total)
}

/// A transaction label and its mean average response time per group column.
type LabelMeans = (String, Vec<f64>);

/// Labels of very different size (a 0.7 s check-in and a 3 min import) on one axis would
/// make the short bars invisible, so a label shares a chart only with labels within a
/// factor of [`BAR_CHART_RANGE`] of the chart's largest; first-seen order is kept inside.
const BAR_CHART_RANGE: f64 = 10.0;

fn bar_chart_buckets(labels: Vec<LabelMeans>) -> Vec<Vec<LabelMeans>> {
    let peak = |(_, means): &LabelMeans| means.iter().copied().fold(0.0, f64::max);
    let mut by_size: Vec<(usize, f64)> = labels
        .iter()
        .enumerate()
        .map(|(index, label)| (index, peak(label)))
        .collect();
    by_size.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut bucket_of = vec![0; labels.len()];
    let (mut bucket, mut bucket_top) = (0, f64::INFINITY);
    for (position, (index, size)) in by_size.iter().enumerate() {
        if position == 0 {
            bucket_top = *size;
        } else if *size * BAR_CHART_RANGE < bucket_top {
            bucket += 1;
            bucket_top = *size;
        }
        bucket_of[*index] = bucket;
    }
    let mut buckets: Vec<Vec<LabelMeans>> = vec![Vec::new(); bucket + 1];
    for (index, label) in labels.into_iter().enumerate() {
        buckets[bucket_of[index]].push(label);
    }
    buckets.retain(|b| !b.is_empty());
    // Short transactions first: they are what most readers look for.
    buckets.reverse();
    buckets
}

/// Average response times per variant, one chart per size class of labels.
fn write_transaction_bars(out: &mut String, summary: &RunSummary, group_index: usize) {
    let Some(group) = summary.groups.get(group_index) else {
        return;
    };
    let mut labels: Vec<LabelMeans> = Vec::new();
    for row in &group.figures {
        if row.key.section != Section::Transaction || row.key.statistic != "Average" {
            continue;
        }
        let means: Vec<Option<f64>> = row
            .cells
            .iter()
            .map(|c| c.summary.map(|s| s.mean))
            .collect();
        // A label missing in a variant cannot be a bar of zero: leave it to the tables.
        if let Some(means) = means.into_iter().collect::<Option<Vec<f64>>>() {
            labels.push((row.key.subject.clone(), means));
        }
    }
    let buckets = bar_chart_buckets(labels);
    for labels in buckets {
        // Milliseconds, as JMeter measures them: a 0.7 s check-in reads "700" on an axis of
        // whole numbers rather than "0.7" between uneven decimals.
        let chart = GroupedBarChart {
            title: format!("Average response time ({})", group.title),
            category_axis: "Transaction".to_owned(),
            y_axis: Axis::new("Average", "ms"),
            categories: labels.iter().map(|(label, _)| label.clone()).collect(),
            series: super::group_section::marked_columns(summary, group)
                .into_iter()
                .enumerate()
                .map(|(position, column)| BarSeries {
                    name: column.clone(),
                    values: labels
                        .iter()
                        .map(|(_, means)| means[position] * 1000.0)
                        .collect(),
                })
                .collect(),
        };
        let caption = format!(
            "Mean over the repeats of each label's average response time, per variant ({}).",
            group.title
        );
        push_chart(out, chart.to_svg(CHART_WIDTH, CHART_HEIGHT), &caption);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(peaks: &[(&str, f64)]) -> Vec<LabelMeans> {
        peaks
            .iter()
            .map(|(name, peak)| (name.to_string(), vec![*peak / 2.0, *peak]))
            .collect()
    }

    fn names(buckets: &[Vec<LabelMeans>]) -> Vec<Vec<&str>> {
        buckets
            .iter()
            .map(|b| b.iter().map(|(name, _)| name.as_str()).collect())
            .collect()
    }

    #[test]
    fn labels_of_similar_size_share_a_bar_chart() {
        let buckets = bar_chart_buckets(labels(&[
            ("Check-in", 0.77),
            ("DI Create 25k", 164.0),
            ("Check-out", 1.17),
            ("Search", 0.09),
        ]));
        // By size: 164 opens a chart; 1.17 is more than 10x smaller and opens the next,
        // which 0.77 joins; 0.09 is more than 10x below 1.17.
        assert_eq!(
            names(&buckets),
            [
                vec!["Search"],
                vec!["Check-in", "Check-out"],
                vec!["DI Create 25k"]
            ]
        );
    }

    #[test]
    fn text_is_escaped_for_elements_and_attributes() {
        assert_eq!(
            escape("a<b & \"c\" 'd'"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;"
        );
    }
}
