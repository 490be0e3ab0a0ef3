//! Tags as ordered key/value pairs, shared by the services that keep them in that form.

/// Adds or overwrites tags by key, keeping the order of first appearance (TagResource and
/// AddTagsToResource overwrite an existing key's value).
pub(crate) fn merge_tags(existing: &mut Vec<(String, String)>, new: Vec<(String, String)>) {
    for (k, v) in new {
        match existing.iter_mut().find(|(ek, _)| *ek == k) {
            Some(e) => e.1 = v,
            None => existing.push((k, v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_overwrites_by_key_and_appends_new_keys() {
        let mut tags = vec![("a".to_string(), "1".to_string())];
        merge_tags(
            &mut tags,
            vec![("b".into(), "2".into()), ("a".into(), "3".into())],
        );
        assert_eq!(
            tags,
            vec![("a".into(), "3".into()), ("b".into(), "2".into())]
        );
    }
}
