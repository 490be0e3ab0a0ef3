//! What envctl reads from a JMeter test plan before anything is spent: that it is XML with a
//! `jmeterTestPlan` root, and which properties it reads with `__P(name)` without a default.
//!
//! JMeter's `__P(name)` falls back to `"1"` when the property is not set ("__P", JMeter's
//! function reference), so a plan run without `-Jusers=...` silently runs one user: the
//! preflight makes a missing property an error instead.
use quick_xml::Reader;
use quick_xml::events::Event;

/// A `__P(...)` (or `__property(...)`) the plan calls, with the byte offset of its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyUse {
    pub name: String,
    pub has_default: bool,
    pub offset: usize,
}

/// Why a plan is not a JMeter test plan, with the byte offset it was noticed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JmxError {
    pub message: String,
    pub offset: usize,
}

/// Parses the plan as XML and checks its root element.
pub fn parse(text: &str) -> Result<(), JmxError> {
    let mut reader = Reader::from_str(text);
    let mut root: Option<String> = None;
    let mut depth = 0usize;
    loop {
        let at = reader.buffer_position() as usize;
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                if depth == 0 && root.is_none() {
                    root = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                    if root.as_deref() != Some("jmeterTestPlan") {
                        return Err(JmxError {
                            message: format!(
                                "the root element is <{}>, not <jmeterTestPlan>",
                                root.unwrap_or_default()
                            ),
                            offset: at,
                        });
                    }
                }
                depth += 1;
            }
            Ok(Event::Empty(e)) if depth == 0 && root.is_none() => {
                return Err(JmxError {
                    message: format!(
                        "the root element <{}/> is empty, not a <jmeterTestPlan>",
                        String::from_utf8_lossy(e.name().as_ref())
                    ),
                    offset: at,
                });
            }
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                return Err(JmxError {
                    message: format!("not well-formed XML: {e}"),
                    offset: reader.error_position() as usize,
                });
            }
        }
    }
    if depth > 0 {
        return Err(JmxError {
            message: "the file ends inside an element".into(),
            offset: text.len(),
        });
    }
    match root {
        Some(_) => Ok(()),
        None => Err(JmxError {
            message: "no <jmeterTestPlan> element".into(),
            offset: 0,
        }),
    }
}

/// Every `__P(name[,default])` and `__property(name[,var[,default]])` in the plan's text.
/// A name that is itself an expression (`__P(${x})`) is skipped: it cannot be checked.
pub fn property_uses(text: &str) -> Vec<PropertyUse> {
    let mut out = Vec::new();
    for (function, default_at) in [("__P(", 1usize), ("__property(", 2)] {
        let mut from = 0;
        while let Some(found) = text[from..].find(function) {
            let open = from + found + function.len();
            from = open;
            // `__P(` must not be the tail of a longer function name (`my__P(`).
            let start = open - function.len();
            if start > 0
                && text[..start]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            let Some(args) = arguments(&text[open..]) else {
                continue;
            };
            let Some(name) = args.first() else { continue };
            let trimmed = name.trim();
            if trimmed.is_empty() || trimmed.contains("${") {
                continue;
            }
            let lead = name.len() - name.trim_start().len();
            out.push(PropertyUse {
                name: trimmed.to_string(),
                has_default: args.len() > default_at,
                offset: open + lead,
            });
        }
    }
    out.sort_by_key(|u| u.offset);
    out
}

/// The comma-separated arguments up to the call's closing parenthesis (JMeter escapes a
/// comma in an argument as `\,`); `None` when it is never closed.
fn arguments(rest: &str) -> Option<Vec<&str>> {
    let mut args = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '(' => depth += 1,
            ')' if depth == 0 => {
                args.push(&rest[start..i]);
                return Some(args);
            }
            ')' => depth -= 1,
            ',' if depth == 0 => {
                args.push(&rest[start..i]);
                start = i + 1;
            }
            '<' | '\n' => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0">
  <hashTree>
    <ThreadGroup testname="users">
      <stringProp name="ThreadGroup.num_threads">${__P(users)}</stringProp>
      <stringProp name="ThreadGroup.duration">${__P(duration,60)}</stringProp>
      <stringProp name="host">${__property(host,,localhost)}</stringProp>
      <stringProp name="port">${__property( port )}</stringProp>
      <stringProp name="x">${__P(${prefix}.n)} ${my__P(nope)}</stringProp>
    </ThreadGroup>
  </hashTree>
</jmeterTestPlan>
"#;

    #[test]
    fn reads_the_properties_a_plan_needs_and_where() {
        let uses = property_uses(PLAN);
        let summary: Vec<(&str, bool)> = uses
            .iter()
            .map(|u| (u.name.as_str(), u.has_default))
            .collect();
        assert_eq!(
            summary,
            [
                ("users", false),
                ("duration", true),
                ("host", true),
                ("port", false)
            ]
        );
        assert_eq!(&PLAN[uses[0].offset..uses[0].offset + 5], "users");
        assert_eq!(&PLAN[uses[3].offset..uses[3].offset + 4], "port");
    }

    #[test]
    fn a_plan_must_be_well_formed_with_a_test_plan_root() {
        assert_eq!(parse(PLAN), Ok(()));
        let broken = PLAN.replace("</ThreadGroup>", "</ThreadGrup>");
        let err = parse(&broken).expect_err("mismatched end tag");
        assert!(err.message.contains("not well-formed"), "{err:?}");
        assert!(broken[..err.offset].contains("</stringProp>"), "{err:?}");
        let other = parse("<?xml version=\"1.0\"?>\n<project/>\n").expect_err("not a plan");
        assert!(other.message.contains("<project/>"), "{other:?}");
        assert!(parse("<jmeterTestPlan><hashTree>").is_err());
    }
}
