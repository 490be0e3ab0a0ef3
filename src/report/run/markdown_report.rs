//! The comparison report as Markdown: pipe tables and plain emphasis, which both GitHub and
//! Confluence's Markdown import understand (no HTML, no footnotes, no nested tables).
use std::fmt::Write as _;

use crate::report::run::report_document::{Block, ReportDocument, Span, Table};
use crate::report::run::run_summary::RunSummary;

pub fn render(summary: &RunSummary) -> String {
    // `write!` into a String cannot fail, hence the ignored results below.
    let document = ReportDocument::of(summary);
    let mut out = String::new();
    for block in &document.blocks {
        match block {
            Block::Heading(level, text) => {
                let _ = writeln!(
                    out,
                    "{} {}\n",
                    "#".repeat(usize::from(*level)),
                    inline(text)
                );
            }
            Block::Paragraph(spans) => {
                let _ = writeln!(out, "{}\n", spans_text(spans));
            }
            Block::Note(spans) => {
                let _ = writeln!(out, "> {}\n", spans_text(spans));
            }
            Block::Bullets(items) => {
                for item in items {
                    let _ = writeln!(out, "- {}", spans_text(item));
                }
                out.push('\n');
            }
            Block::Table(table) => write_table(&mut out, table),
            Block::Folded { summary, table } => {
                let _ = writeln!(out, "{}:\n", inline(summary));
                write_table(&mut out, table);
            }
            // Charts need SVG; the Markdown points to the HTML report once per group.
            Block::Charts(_) => {
                out.push_str("Charts of CPU, memory and response times: see the HTML report (`--format html`).\n\n");
            }
        }
    }
    // One trailing newline, not two.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn spans_text(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|span| {
            if span.code {
                format!("`{}`", span.text.replace('`', "'"))
            } else if span.strong {
                format!("**{}**", inline(&span.text))
            } else {
                inline(&span.text)
            }
        })
        .collect()
}

/// Escapes what would start emphasis, code, a link or an HTML tag in running text, and
/// nothing else: Confluence's Markdown import shows needless backslashes literally.
/// An underscore inside a word (`broker_type`) is not emphasis in GitHub's Markdown, nor
/// is a `<` that does not start a tag (`p < 0.05`).
fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (index, &c) in chars.iter().enumerate() {
        let before = index.checked_sub(1).and_then(|i| chars.get(i));
        let after = chars.get(index + 1);
        let inside_word = |neighbour: Option<&char>| neighbour.is_some_and(|n| n.is_alphanumeric());
        let escape = match c {
            '\\' | '*' | '`' | '[' | ']' => true,
            '_' => !(inside_word(before) && inside_word(after)),
            '<' => after.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')),
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A pipe would end the cell and a line break the row.
fn cell(text: &str) -> String {
    inline(text).replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn write_table(out: &mut String, table: &Table) {
    if let Some(caption) = &table.caption {
        let _ = writeln!(out, "{}\n", inline(caption));
    }
    let headers: Vec<String> = table.headers.iter().map(|h| cell(h)).collect();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        table.headers.iter().map(|_| "---|").collect::<String>()
    );
    for row in &table.rows {
        let cells: Vec<String> = row
            .iter()
            .map(|c| {
                let text = cell(&c.text);
                if c.strong && !text.is_empty() {
                    format!("**{text}**")
                } else {
                    text
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_text_cannot_break_the_markup() {
        assert_eq!(cell("a|b\nc*"), "a\\|b c\\*");
        assert_eq!(inline("mod_users <b> p < 0.05"), "mod_users \\<b> p < 0.05");
        assert_eq!(inline("_x_ [a](b)"), "\\_x\\_ \\[a\\](b)");
    }
}
