//! SVG charts for reports, drawn from plain numbers: a line chart of time series (e.g.
//! response time or CPU per minute, one line per variant) and a grouped bar chart (e.g.
//! "Check-in avg" per variant, grouped by transaction).
//!
//! Rendered with `plotters` restricted to its SVG backend and line series: no font-kit and
//! no system fonts, because SVG leaves text to the viewer; plotters then only estimates
//! label widths for the layout. The result is a `String` to embed or write next to a report.
use std::fmt;
use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;

const TITLE_FONT_SIZE: u32 = 22;
const AXIS_FONT_SIZE: u32 = 15;
const LEGEND_SWATCH_PX: i32 = 18;

/// What an axis measures and in which unit, shown as "Response time (ms)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    pub label: String,
    pub unit: String,
}

impl Axis {
    pub fn new(label: impl Into<String>, unit: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            unit: unit.into(),
        }
    }
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.label, self.unit)
    }
}

/// One named line: `(x, y)` points in x order, e.g. minutes since start and CPU %.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// How the line is drawn; repeats of one variant share a colour.
    pub style: LineStyle,
}

/// A line's colour (an index into the palette) and whether it is drawn lighter, so that
/// the repeats of one variant read as one family: `zookeeper-m5 #1` solid red,
/// `zookeeper-m5 #2` light red.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineStyle {
    pub color: usize,
    pub light: bool,
}

/// How much of the colour a light line keeps (the rest is the white background).
const LIGHT_LINE_OPACITY: f64 = 0.45;

/// Several named time series on shared axes, with a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_axis: Axis,
    pub y_axis: Axis,
    pub series: Vec<TimeSeries>,
    /// Vertical lines across the plot, such as where the workload ends.
    pub markers: Vec<Marker>,
}

/// Where a marker's name is drawn: its left edge (pixels) and its row under the top.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MarkerName {
    left: i32,
    row: i32,
}

/// A generous width of one character of a marker's name, in pixels (it is drawn at
/// [`AXIS_FONT_SIZE`], which the backend scales down): names are kept apart by it.
const MARKER_CHAR_PX: i32 = 8;
/// A row of marker names under the one above.
const MARKER_ROW_PX: i32 = 18;
/// Space kept between two names on a row.
const MARKER_GAP_PX: i32 = 6;

/// Where each marker's name goes, given the markers' lines (pixels) and names, so no two
/// names overlap ("wworkload eend" was every time chart of the README's report: two
/// variants' workload ends seconds apart). A name beside a line with the same name closer
/// than its width is not drawn again (`None`: one name for both); any other name that
/// would overlap one already placed goes a row lower. A name sits right of its line in the
/// left half of the plot and left of it in the right half, so it is never cut off.
fn marker_names(lines: &[(i32, &str)], plot: std::ops::Range<i32>) -> Vec<Option<MarkerName>> {
    let middle = (plot.start + plot.end) / 2;
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| lines[i].0);
    let mut placed: Vec<(i32, i32, i32)> = Vec::new(); // (left, right, row)
    let mut named: Vec<(i32, &str)> = Vec::new(); // lines whose name is drawn
    let mut out = vec![None; lines.len()];
    for i in order {
        let (x, name) = lines[i];
        let width = MARKER_CHAR_PX * name.chars().count() as i32;
        if named
            .iter()
            .any(|(other, other_name)| *other_name == name && (x - other).abs() < width)
        {
            continue;
        }
        let left = if x > middle { x - 4 - width } else { x + 4 };
        let right = left + width;
        let row = (0..)
            .find(|row| {
                !placed.iter().any(|(l, r, placed_row)| {
                    placed_row == row && left < r + MARKER_GAP_PX && *l < right + MARKER_GAP_PX
                })
            })
            .unwrap_or(0);
        placed.push((left, right, row));
        named.push((x, name));
        out[i] = Some(MarkerName { left, row });
    }
    out
}

/// A named vertical line at `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// One named bar series: one value per category of the chart, in the same order.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<f64>,
}

/// Bars grouped by category (x axis), one bar per series in each group, with a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedBarChart {
    pub title: String,
    pub category_axis: String,
    pub y_axis: Axis,
    pub categories: Vec<String>,
    pub series: Vec<BarSeries>,
}

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChartError {
    #[error("nothing to draw: no series or no points")]
    NoData,
    #[error("series `{series}` has a value that is not a finite number")]
    NotFinite { series: String },
    #[error("series `{series}` has {found} values for {expected} categories")]
    LengthMismatch {
        series: String,
        expected: usize,
        found: usize,
    },
    #[error("cannot draw the chart: {0}")]
    Drawing(String),
}

fn drawing_error(error: impl std::error::Error) -> ChartError {
    ChartError::Drawing(error.to_string())
}

/// Extends an empty or single-valued range so that the axis has a width.
fn widened(range: Range<f64>) -> Range<f64> {
    if range.end > range.start {
        range
    } else {
        range.start - 1.0..range.end + 1.0
    }
}

/// The value axis starts at zero (bars and response times are read against zero) and gets
/// 5% headroom so the top is not cut by the frame. The legend has its own strip below the
/// chart, so it never covers a bar or a line, however tall.
fn value_axis(range: Range<f64>) -> Range<f64> {
    let range = widened(range.start.min(0.0)..range.end);
    range.start..range.end + (range.end - range.start) * 0.05
}

/// Decimals that print every tick of an axis spanning `span` the same way: plotters puts
/// about ten ticks on 1-2-5 steps, so the step is at least a tenth of the span rounded
/// down to a power of ten ("0, 200, 400" ms; "0.0, 0.5, 1.0"), never "0.05, 0.1, 0.15".
fn tick_decimals(span: f64) -> usize {
    if !(span.is_finite() && span > 0.0) {
        return 0;
    }
    let step = 10f64.powf((span / 10.0).log10().floor());
    (-step.log10()).ceil().max(0.0) as usize
}

/// Height of one row of the legend strip under a chart.
const LEGEND_ROW_PX: i32 = 24;

/// The legend strip's entries laid out in rows: `(series index, x, row)`; an entry's width
/// is estimated from its text, as plotters estimates label widths without fonts.
fn legend_layout(names: &[&str], width: i32) -> Vec<(usize, i32, i32)> {
    let (mut x, mut row) = (12, 0);
    let mut placed = Vec::with_capacity(names.len());
    for (index, name) in names.iter().enumerate() {
        let entry = LEGEND_SWATCH_PX + 6 + 8 * name.chars().count() as i32 + 18;
        if x + entry > width && x > 12 {
            x = 12;
            row += 1;
        }
        placed.push((index, x, row));
        x += entry;
    }
    placed
}

/// Draws the legend in its own strip: per series a swatch (`swatch` draws it at the given
/// left-middle point) and the series' name.
fn draw_legend_strip<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    names: &[&str],
    swatch: &dyn Fn(usize, (i32, i32)) -> Result<(), ChartError>,
) -> Result<(), ChartError> {
    let (width, _) = area.dim_in_pixel();
    for (index, x, row) in legend_layout(names, width as i32) {
        let y = row * LEGEND_ROW_PX + LEGEND_ROW_PX / 2;
        swatch(index, (x, y))?;
        area.draw(&Text::new(
            names[index].to_owned(),
            (x + LEGEND_SWATCH_PX + 6, y - AXIS_FONT_SIZE as i32 / 2),
            ("sans-serif", AXIS_FONT_SIZE),
        ))
        .map_err(drawing_error)?;
    }
    Ok(())
}

/// Splits the canvas into the chart and the legend strip under it.
fn with_legend_strip<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: &[&str],
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (width, height) = root.dim_in_pixel();
    let rows = legend_layout(names, width as i32)
        .last()
        .map_or(0, |(_, _, row)| row + 1);
    let strip = (rows * LEGEND_ROW_PX + 6).min(height as i32 / 2);
    root.split_vertically(height as i32 - strip)
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<Range<f64>> {
    values.fold(None, |bounds, value| match bounds {
        None => Some(value..value),
        Some(range) => Some(range.start.min(value)..range.end.max(value)),
    })
}

fn canvas(svg: &mut String, width: u32, height: u32) -> DrawingArea<SVGBackend<'_>, Shift> {
    SVGBackend::with_string(svg, (width, height)).into_drawing_area()
}

impl LineChart {
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ChartError> {
        let points = || self.series.iter().flat_map(|series| series.points.iter());
        if let Some(series) = self.series.iter().find(|series| {
            series
                .points
                .iter()
                .any(|(x, y)| !x.is_finite() || !y.is_finite())
        }) {
            return Err(ChartError::NotFinite {
                series: series.name.clone(),
            });
        }
        // The markers are part of the picture: the workload's end past the last sample
        // must still be on the axis.
        let x_range = bounds(points().map(|point| point.0)).ok_or(ChartError::NoData)?;
        let x_range = bounds(
            [x_range.start, x_range.end].into_iter().chain(
                self.markers
                    .iter()
                    .map(|marker| marker.x)
                    .filter(|x| x.is_finite()),
            ),
        )
        .unwrap_or(x_range);
        let y_range = bounds(points().map(|point| point.1)).ok_or(ChartError::NoData)?;
        let mut svg = String::new();
        {
            let root = canvas(&mut svg, width, height);
            root.fill(&WHITE).map_err(drawing_error)?;
            let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
            let (plot, legend) = with_legend_strip(&root, &names);
            let mut y_axis = value_axis(y_range);
            if !self.markers.is_empty() {
                // Room above the data for the markers' names.
                y_axis.end += (y_axis.end - y_axis.start) * 0.1;
            }
            let decimals = tick_decimals(y_axis.end - y_axis.start);
            let x_axis = widened(x_range);
            let x_decimals = tick_decimals(x_axis.end - x_axis.start);
            let mut chart = ChartBuilder::on(&plot)
                .caption(&self.title, ("sans-serif", TITLE_FONT_SIZE))
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(70)
                .build_cartesian_2d(x_axis, y_axis.clone())
                .map_err(drawing_error)?;
            chart
                .configure_mesh()
                .x_desc(self.x_axis.to_string())
                .y_desc(self.y_axis.to_string())
                .y_label_formatter(&|value| format!("{value:.decimals$}"))
                .x_label_formatter(&|value| format!("{value:.x_decimals$}"))
                .axis_desc_style(("sans-serif", AXIS_FONT_SIZE))
                .draw()
                .map_err(drawing_error)?;
            // Vertical markers (the workload's start and end), dashed, named at the top.
            let (x_pixels, _) = chart.plotting_area().get_pixel_range();
            let lines: Vec<(i32, &str)> = self
                .markers
                .iter()
                .map(|m| (chart.backend_coord(&(m.x, y_axis.end)).0, m.label.as_str()))
                .collect();
            let placed = marker_names(&lines, x_pixels);
            for (marker, name) in self.markers.iter().zip(placed) {
                let dash = (y_axis.end - y_axis.start) / 40.0;
                let mut y = y_axis.start;
                while y < y_axis.end {
                    let top = (y + dash).min(y_axis.end);
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            [(marker.x, y), (marker.x, top)],
                            BLACK.mix(0.6).stroke_width(1),
                        )))
                        .map_err(drawing_error)?;
                    y += 2.0 * dash;
                }
                let Some(MarkerName { left, row }) = name else {
                    continue;
                };
                let (_, top) = chart.backend_coord(&(marker.x, y_axis.end));
                plot.draw(&Text::new(
                    marker.label.clone(),
                    (left, top + 4 + row * MARKER_ROW_PX),
                    ("sans-serif", AXIS_FONT_SIZE),
                ))
                .map_err(drawing_error)?;
            }
            let color_of = |series: &TimeSeries| {
                let base = Palette99::pick(series.style.color).to_rgba();
                if series.style.light {
                    base.mix(LIGHT_LINE_OPACITY)
                } else {
                    base
                }
            };
            for series in &self.series {
                chart
                    .draw_series(LineSeries::new(
                        series.points.iter().copied(),
                        color_of(series).stroke_width(2),
                    ))
                    .map_err(drawing_error)?;
            }
            draw_legend_strip(&legend, &names, &|index, (x, y)| {
                let color = color_of(&self.series[index]);
                legend
                    .draw(&PathElement::new(
                        [(x, y), (x + LEGEND_SWATCH_PX, y)],
                        color.stroke_width(2),
                    ))
                    .map_err(drawing_error)
            })?;
            root.present().map_err(drawing_error)?;
        }
        Ok(svg)
    }
}

impl GroupedBarChart {
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ChartError> {
        if self.categories.is_empty() || self.series.is_empty() {
            return Err(ChartError::NoData);
        }
        for series in &self.series {
            if series.values.len() != self.categories.len() {
                return Err(ChartError::LengthMismatch {
                    series: series.name.clone(),
                    expected: self.categories.len(),
                    found: series.values.len(),
                });
            }
            if series.values.iter().any(|value| !value.is_finite()) {
                return Err(ChartError::NotFinite {
                    series: series.name.clone(),
                });
            }
        }
        let values = self
            .series
            .iter()
            .flat_map(|series| series.values.iter().copied());
        let y_range = bounds(values).ok_or(ChartError::NoData)?;
        let category_count = self.categories.len();
        let mut svg = String::new();
        {
            let root = canvas(&mut svg, width, height);
            root.fill(&WHITE).map_err(drawing_error)?;
            let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
            let (plot, legend) = with_legend_strip(&root, &names);
            let y_axis = value_axis(y_range);
            let decimals = tick_decimals(y_axis.end - y_axis.start);
            // A segmented axis puts each category's name under the middle of its slot.
            let mut chart = ChartBuilder::on(&plot)
                .caption(&self.title, ("sans-serif", TITLE_FONT_SIZE))
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(70)
                // Discrete ranges include their end: 0..n-1 is n slots.
                .build_cartesian_2d((0..category_count - 1).into_segmented(), y_axis)
                .map_err(drawing_error)?;
            let categories = &self.categories;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(category_count)
                .x_label_formatter(&|value| match value {
                    SegmentValue::CenterOf(index) | SegmentValue::Exact(index) => {
                        categories.get(*index).cloned().unwrap_or_default()
                    }
                    SegmentValue::Last => String::new(),
                })
                .x_desc(self.category_axis.as_str())
                .y_desc(self.y_axis.to_string())
                .y_label_formatter(&|value| format!("{value:.decimals$}"))
                .axis_desc_style(("sans-serif", AXIS_FONT_SIZE))
                .draw()
                .map_err(drawing_error)?;
            // Bars sit side by side inside a slot, which the segmented coordinate cannot
            // address, so they are placed in pixels: the plotting area split into equal
            // slots, as the segmented axis splits it. (The slot's right edge is not
            // `Exact(category + 1)`: for the last category that lies outside the range and
            // maps onto the left edge, which drew a single category's bars with no width.)
            let series_count = self.series.len() as i32;
            let (x_pixels, _) = chart.plotting_area().get_pixel_range();
            let slot_width = f64::from(x_pixels.end - x_pixels.start) / category_count as f64;
            let slot_edge =
                |index: usize| x_pixels.start + (slot_width * index as f64).round() as i32;
            for (series_index, series) in self.series.iter().enumerate() {
                let color = Palette99::pick(series_index).to_rgba();
                let mut bars = Vec::with_capacity(category_count);
                for (category, &value) in series.values.iter().enumerate() {
                    let (_, zero) = chart.backend_coord(&(SegmentValue::Exact(category), 0.0));
                    let (_, top) = chart.backend_coord(&(SegmentValue::Exact(category), value));
                    let (left, right) = (slot_edge(category), slot_edge(category + 1));
                    let gap = (right - left) / 8;
                    let bar_width = ((right - left - 2 * gap) / series_count).max(1);
                    let bar_left = left + gap + bar_width * series_index as i32;
                    bars.push(Rectangle::new(
                        [(bar_left, top), (bar_left + bar_width - 1, zero)],
                        color.filled(),
                    ));
                }
                for bar in bars {
                    plot.draw(&bar).map_err(drawing_error)?;
                }
            }
            draw_legend_strip(&legend, &names, &|index, (x, y)| {
                let color = Palette99::pick(index).to_rgba();
                let half = LEGEND_SWATCH_PX / 4;
                legend
                    .draw(&Rectangle::new(
                        [(x, y - half), (x + LEGEND_SWATCH_PX, y + half)],
                        color.filled(),
                    ))
                    .map_err(drawing_error)
            })?;
            root.present().map_err(drawing_error)?;
        }
        Ok(svg)
    }
}

#[cfg(test)]
mod tests {
    use quick_xml::Reader;
    use quick_xml::events::Event;

    use super::*;

    /// Parses the whole document with a checking XML reader and returns all text content
    /// (unescaped, one element per line), so that tests see what a viewer would show.
    fn well_formed_text(svg: &str) -> String {
        let mut reader = Reader::from_str(svg);
        reader.config_mut().check_end_names = true;
        let (mut depth, mut roots, mut text) = (0i32, 0, String::new());
        loop {
            match reader.read_event() {
                Ok(Event::Start(element)) => {
                    if depth == 0 {
                        roots += 1;
                        assert_eq!(element.name().as_ref(), b"svg");
                    }
                    depth += 1;
                }
                Ok(Event::End(_)) => {
                    depth -= 1;
                    text.push('\n');
                }
                Ok(Event::Text(content)) => text.push_str(&String::from_utf8_lossy(&content)),
                // quick-xml 0.38 reports `&amp;` and friends as separate events.
                Ok(Event::GeneralRef(reference)) => match reference.as_ref() {
                    b"amp" => text.push('&'),
                    b"lt" => text.push('<'),
                    b"gt" => text.push('>'),
                    b"quot" => text.push('"'),
                    b"apos" => text.push('\''),
                    _ => match reference.resolve_char_ref() {
                        Ok(Some(character)) => text.push(character),
                        other => panic!("unknown entity {reference:?}: {other:?}"),
                    },
                },
                Ok(Event::Eof) => break,
                Ok(_) => {}
                Err(error) => panic!("malformed SVG at {}: {error}", reader.buffer_position()),
            }
        }
        assert_eq!((depth, roots), (0, 1), "one closed <svg> root");
        text
    }

    /// `ENVCTL_CHART_SAMPLE=/tmp/chart cargo test -p envctl-perf --lib report::chart` also writes
    /// the SVGs to /tmp/chart-line.svg and /tmp/chart-bars.svg, to look at them.
    fn cpu_chart() -> LineChart {
        LineChart {
            title: "CPU during Check-in & Check-out <CICO>".into(),
            x_axis: Axis::new("Time since start", "min"),
            y_axis: Axis::new("CPU", "%"),
            series: vec![
                TimeSeries {
                    name: "kafka.m5.2xlarge".into(),
                    points: vec![(0.0, 20.0), (1.0, 107.8), (2.0, 95.5)],
                    style: LineStyle {
                        color: 0,
                        light: false,
                    },
                },
                TimeSeries {
                    name: "kafka.m7g.2xlarge".into(),
                    points: vec![(0.0, 18.0), (1.0, 75.1), (2.0, 70.2)],
                    style: LineStyle {
                        color: 1,
                        light: false,
                    },
                },
            ],
            markers: vec![Marker {
                x: 1.5,
                label: "workload end".into(),
            }],
        }
    }

    #[test]
    fn line_chart_is_well_formed_with_title_axes_and_legend() {
        let svg = cpu_chart().to_svg(800, 450).unwrap();
        let text = well_formed_text(&svg);
        for expected in [
            "CPU during Check-in & Check-out <CICO>",
            "Time since start (min)",
            "CPU (%)",
            "kafka.m5.2xlarge",
            "kafka.m7g.2xlarge",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in {text}");
        }
        // Each series' colour strokes its line and its legend swatch.
        for index in 0..2 {
            let color = Palette99::pick(index).to_rgba();
            let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
            assert_eq!(svg.matches(&stroke).count(), 2, "{stroke} in {svg}");
        }
        if let Ok(path) = std::env::var("ENVCTL_CHART_SAMPLE") {
            std::fs::write(format!("{path}-line.svg"), &svg).unwrap();
        }
    }

    /// Two repeats of one variant: one colour, the second line light.
    #[test]
    fn a_light_line_keeps_its_colour_at_a_lower_opacity() {
        let mut chart = cpu_chart();
        chart.series[1].style = LineStyle {
            color: 0,
            light: true,
        };
        let svg = chart.to_svg(800, 450).unwrap();
        well_formed_text(&svg);
        let color = Palette99::pick(0).to_rgba();
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        assert_eq!(svg.matches(&stroke).count(), 4, "{svg}");
        // The light line and its legend swatch (plotters writes alpha as `opacity`).
        let light = svg
            .lines()
            .filter(|line| {
                line.contains(&stroke)
                    && line.contains(&format!("opacity=\"{LIGHT_LINE_OPACITY}\""))
            })
            .count();
        assert_eq!(light, 2, "{svg}");
    }

    #[test]
    fn grouped_bar_chart_is_well_formed_with_a_bar_per_value() {
        let chart = GroupedBarChart {
            title: "Average response time".into(),
            category_axis: "Transaction".into(),
            y_axis: Axis::new("Average", "s"),
            categories: vec!["Check-in".into(), "Check-out".into()],
            series: vec![
                BarSeries {
                    name: "ZooKeeper".into(),
                    values: vec![0.736, 1.16],
                },
                BarSeries {
                    name: "KRaft".into(),
                    values: vec![0.765, 1.118],
                },
                BarSeries {
                    name: "KRaft, R/W split".into(),
                    values: vec![0.706, 1.095],
                },
            ],
        };
        let svg = chart.to_svg(800, 450).unwrap();
        let text = well_formed_text(&svg);
        for expected in [
            "Average response time",
            "Transaction",
            "Average (s)",
            "Check-in",
            "Check-out",
            "ZooKeeper",
            "KRaft, R/W split",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in {text}");
        }
        // Each series' colour fills its two bars and its legend swatch.
        for index in 0..3 {
            let color = Palette99::pick(index).to_rgba();
            let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
            assert_eq!(svg.matches(&fill).count(), 3, "{fill} in {svg}");
        }
        if let Ok(path) = std::env::var("ENVCTL_CHART_SAMPLE") {
            std::fs::write(format!("{path}-bars.svg"), &svg).unwrap();
        }
    }

    /// One category once drew its bars with no width; each bar must be visibly wide.
    #[test]
    fn a_single_category_gets_wide_bars() {
        let chart = GroupedBarChart {
            title: "DI".into(),
            category_axis: "Transaction".into(),
            y_axis: Axis::new("Average", "s"),
            categories: vec!["DI Create 25k".into()],
            series: vec![
                BarSeries {
                    name: "ZooKeeper".into(),
                    values: vec![164.0],
                },
                BarSeries {
                    name: "KRaft".into(),
                    values: vec![159.0],
                },
            ],
        };
        let svg = chart.to_svg(640, 360).unwrap();
        well_formed_text(&svg);
        let color = Palette99::pick(0).to_rgba();
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        let bar = svg
            .lines()
            .find(|line| line.starts_with("<rect") && line.contains(&fill))
            .unwrap_or_else(|| panic!("no bar in {svg}"));
        let width: f64 = bar
            .split("width=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("no width in {bar}"));
        assert!(width > 100.0, "{bar}");
    }

    /// `(y, text-anchor, text)` of a `<text>` element.
    type SvgText = (f64, String, String);
    /// `(y, height, fill)` of a `<rect>` element.
    type SvgRect = (f64, f64, String);

    /// Every `<text>` element of a plotters SVG (its content is on the line after the
    /// opening tag) and every `<rect>`.
    fn texts_and_rects(svg: &str) -> (Vec<SvgText>, Vec<SvgRect>) {
        let attribute = |line: &str, name: &str| {
            line.split(&format!(" {name}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .map(str::to_owned)
                .unwrap_or_default()
        };
        let number = |line: &str, name: &str| attribute(line, name).parse::<f64>().unwrap_or(0.0);
        let lines: Vec<&str> = svg.lines().collect();
        let mut texts = Vec::new();
        let mut rects = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if line.starts_with("<text") {
                let content = lines.get(index + 1).copied().unwrap_or_default();
                texts.push((
                    number(line, "y"),
                    attribute(line, "text-anchor"),
                    content.trim().to_owned(),
                ));
            } else if line.starts_with("<rect") {
                rects.push((
                    number(line, "y"),
                    number(line, "height"),
                    attribute(line, "fill"),
                ));
            }
        }
        (texts, rects)
    }

    fn tall_last_bar_chart(y_unit: &str, values: [[f64; 2]; 2]) -> GroupedBarChart {
        GroupedBarChart {
            title: "Average response time".into(),
            category_axis: "Transaction".into(),
            y_axis: Axis::new("Average", y_unit),
            categories: vec!["Check-in".into(), "Check-out".into()],
            series: vec![
                BarSeries {
                    name: "zookeeper-m5".into(),
                    values: values[0].to_vec(),
                },
                BarSeries {
                    name: "kraft-m7g".into(),
                    values: values[1].to_vec(),
                },
            ],
        }
    }

    /// The issue: a legend box in the upper right covered the tallest bar. The legend has
    /// its own strip under the chart, so every bar ends above every legend entry.
    #[test]
    fn the_legend_never_covers_a_bar() {
        let chart = tall_last_bar_chart("ms", [[736.0, 1160.0], [765.0, 1240.0]]);
        let svg = chart.to_svg(640, 360).unwrap();
        let (texts, rects) = texts_and_rects(&svg);
        let legend_top = texts
            .iter()
            .filter(|(_, _, text)| text == "zookeeper-m5" || text == "kraft-m7g")
            .map(|(y, _, _)| *y)
            .fold(f64::INFINITY, f64::min);
        let fills: Vec<String> = (0..2)
            .map(|index| {
                let color = Palette99::pick(index).to_rgba();
                format!("#{:02X}{:02X}{:02X}", color.0, color.1, color.2)
            })
            .collect();
        let bars: Vec<&SvgRect> = rects
            .iter()
            .filter(|(y, _, fill)| fills.contains(fill) && *y < legend_top - 12.0)
            .collect();
        assert_eq!(
            bars.len(),
            4,
            "every bar above the legend: {rects:?} {legend_top}"
        );
        for (y, height, _) in bars {
            assert!(
                y + height < legend_top,
                "bar {y}+{height} reaches the legend at {legend_top}"
            );
        }
    }

    /// The issue: seconds for millisecond values, with ticks "0.05, 0.1, 0.15". Every tick
    /// of an axis is printed with the same number of decimals.
    #[test]
    fn axis_ticks_share_one_number_of_decimals() {
        assert_eq!(tick_decimals(1300.0), 0);
        assert_eq!(tick_decimals(13.0), 0);
        assert_eq!(tick_decimals(1.3), 1);
        assert_eq!(tick_decimals(0.33), 2);
        for (unit, values) in [
            ("ms", [[90.0, 300.0], [80.0, 280.0]]),
            ("s", [[0.09, 0.3], [0.08, 0.28]]),
        ] {
            let svg = tall_last_bar_chart(unit, values).to_svg(640, 360).unwrap();
            let (texts, _) = texts_and_rects(&svg);
            // The value axis's tick labels are the right-aligned texts.
            let ticks: Vec<&String> = texts
                .iter()
                .filter(|(_, anchor, _)| anchor == "end")
                .map(|(_, _, text)| text)
                .collect();
            assert!(ticks.len() >= 4, "{ticks:?}");
            let decimals = |tick: &str| tick.split('.').nth(1).map_or(0, str::len);
            let first = decimals(ticks[0]);
            assert!(
                ticks.iter().all(|tick| decimals(tick) == first),
                "{unit}: {ticks:?}"
            );
        }
    }

    /// The boxes of the SVG's text elements whose content is one of `names`: (left, top,
    /// right, bottom), from their position and font size, at 0.6 em per character (wider
    /// than sans-serif's average), as a viewer would draw them.
    fn text_boxes(svg: &str, names: &[&str]) -> Vec<(String, f64, f64, f64, f64)> {
        let mut boxes = Vec::new();
        for element in svg.split("<text ").skip(1) {
            let Some((attributes, rest)) = element.split_once('>') else {
                continue;
            };
            let content = rest.split('<').next().unwrap_or_default().trim();
            if !names.contains(&content) {
                continue;
            }
            let attribute = |name: &str| -> f64 {
                let start = attributes
                    .find(&format!(" {name}=\""))
                    .or_else(|| attributes.starts_with(&format!("{name}=\"")).then_some(0))
                    .unwrap_or_else(|| panic!("no {name} in {attributes}"));
                let value = &attributes[start..];
                let value = value.split('"').nth(1).unwrap_or_default();
                value.parse().unwrap_or_else(|_| panic!("{name}={value}"))
            };
            let (x, y, size) = (attribute("x"), attribute("y"), attribute("font-size"));
            let width = 0.6 * size * content.chars().count() as f64;
            boxes.push((content.to_owned(), x, y, x + width, y + size));
        }
        boxes
    }

    /// Issue 35: two variants' workloads end seconds apart, and their "workload end" names
    /// printed over each other ("wworkload eend") in every time chart of the README's report.
    #[test]
    fn marker_names_never_overlap() {
        let mut chart = cpu_chart();
        chart.markers = vec![
            Marker {
                x: 0.0,
                label: "workload start".into(),
            },
            Marker {
                x: 1.50,
                label: "workload end".into(),
            },
            Marker {
                x: 1.53,
                label: "workload end".into(),
            },
            // Another name close to them: drawn, a row lower.
            Marker {
                x: 1.56,
                label: "restart".into(),
            },
        ];
        let svg = chart.to_svg(640, 360).unwrap();
        let boxes = text_boxes(&svg, &["workload start", "workload end", "restart"]);
        let names: Vec<&str> = boxes.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(
            names.iter().filter(|n| **n == "workload end").count(),
            1,
            "{names:?}"
        );
        assert!(names.contains(&"restart") && names.contains(&"workload start"));
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                let apart = a.3 <= b.1 || b.3 <= a.1 || a.4 <= b.2 || b.4 <= a.2;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn marker_names_share_one_name_and_move_a_row_down_when_close() {
        let placed = marker_names(
            &[
                (100, "workload end"),
                (400, "workload end"),
                (110, "workload end"),
                (120, "restart"),
            ],
            50..500,
        );
        assert_eq!(placed[0], Some(MarkerName { left: 104, row: 0 }));
        // Right half: left of its line.
        assert_eq!(placed[1], Some(MarkerName { left: 300, row: 0 }));
        // 10 px from a line with the same name: that name stands for both.
        assert_eq!(placed[2], None);
        // Another name in the way: one row lower.
        assert_eq!(placed[3], Some(MarkerName { left: 124, row: 1 }));
    }

    #[test]
    fn a_marker_draws_and_names_the_end_of_the_workload() {
        let svg = cpu_chart().to_svg(640, 360).unwrap();
        assert!(well_formed_text(&svg).contains("workload end"));
    }

    #[test]
    fn bad_input_is_refused_before_drawing() {
        let mut empty = cpu_chart();
        empty.series.clear();
        assert_eq!(empty.to_svg(400, 300), Err(ChartError::NoData));
        let mut nan = cpu_chart();
        nan.series[1].points.push((3.0, f64::NAN));
        assert_eq!(
            nan.to_svg(400, 300),
            Err(ChartError::NotFinite {
                series: "kafka.m7g.2xlarge".into()
            })
        );
        let bars = GroupedBarChart {
            title: "t".into(),
            category_axis: "c".into(),
            y_axis: Axis::new("y", "ms"),
            categories: vec!["a".into(), "b".into()],
            series: vec![BarSeries {
                name: "short".into(),
                values: vec![1.0],
            }],
        };
        assert_eq!(
            bars.to_svg(400, 300),
            Err(ChartError::LengthMismatch {
                series: "short".into(),
                expected: 2,
                found: 1
            })
        );
    }
}
