//! Pagination tokens shared by every service: opaque to clients, an offset inside.

pub(crate) fn encode_token(offset: usize) -> String {
    format!("sbx1.{offset}")
}

pub(crate) fn decode_token(t: &str) -> Option<usize> {
    t.strip_prefix("sbx1.")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_foreign_text() {
        assert_eq!(decode_token(&encode_token(42)), Some(42));
        assert_eq!(decode_token("42"), None);
        assert_eq!(decode_token("sbx1.x"), None);
    }
}
