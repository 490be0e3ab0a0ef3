//! Writing YAML scalars so they read back as the same text and the same type: plain where
//! that is unambiguous, JSON-quoted (valid YAML) otherwise.

/// A string value: quoted unless plain YAML reads it back as this very string. Anything
/// that starts with a digit is quoted (`"2.8.0"`, `"16.3"`): envctl wants versions as strings.
pub fn string(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_string()
    } else {
        json(s)
    }
}

/// A server property or parameter: integers and booleans stay plain (as people write them),
/// everything else is a string.
pub fn loose(s: &str) -> String {
    let integer = !s.is_empty()
        && s.len() < 19
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'));
    if integer || s == "true" || s == "false" {
        s.to_string()
    } else {
        string(s)
    }
}

/// JSON text of a string, which YAML reads as a double-quoted scalar.
pub fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn is_plain_safe(s: &str) -> bool {
    const RESERVED: [&str; 12] = [
        "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~", ".inf", ".nan",
    ];
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit() || "-.+".contains(c))
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./@".contains(&b))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_text_is_quoted() {
        assert_eq!(string("folioorg/mod-users"), "folioorg/mod-users");
        assert_eq!(string("2.8.0"), "\"2.8.0\"");
        assert_eq!(string("no"), "\"no\"");
        assert_eq!(string("a: b"), "\"a: b\"");
        assert_eq!(string("arn:aws:x"), "\"arn:aws:x\"");
        assert_eq!(string(""), "\"\"");
        assert_eq!(string("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
        assert_eq!(loose("480"), "480");
        assert_eq!(loose("true"), "true");
        assert_eq!(loose("007"), "\"007\"");
        assert_eq!(loose("3.0"), "\"3.0\"");
    }
}
