//! Tree merges: `extends:`, service `defaults`, and `--set path=value` overrides.
//!
//! All three work on [`Node`] trees so every value keeps the span of the file (or the
//! command-line argument) it came from.
use super::decode::suggest;
use super::diagnostic::Diagnostic;
use super::node::{Key, Node, NodeKind};
use super::source::Span;

/// Merges `overlay` onto `base`: mappings merge key by key, anything else is replaced, and a
/// `null` in the overlay removes the key.
pub fn merge(base: Node, overlay: Node) -> Node {
    match (base.kind, overlay.kind) {
        (NodeKind::Map(mut base_entries), NodeKind::Map(overlay_entries)) => {
            for (key, value) in overlay_entries {
                match base_entries.iter().position(|(k, _)| k.name == key.name) {
                    Some(i) if value.kind == NodeKind::Null => {
                        base_entries.remove(i);
                    }
                    Some(i) => {
                        let (old_key, old_value) = base_entries.remove(i);
                        let _ = old_key;
                        base_entries.insert(i, (key, merge(old_value, value)));
                    }
                    None if value.kind == NodeKind::Null => {}
                    None => base_entries.push((key, value)),
                }
            }
            Node::new(NodeKind::Map(base_entries), overlay.span)
        }
        (_, kind) => Node::new(kind, overlay.span),
    }
}

/// Merges `services.defaults` under every other service, in place.
pub fn apply_service_defaults(root: &mut Node) {
    let Some(services) = map_entry_mut(root, "services") else {
        return;
    };
    let NodeKind::Map(entries) = &mut services.kind else {
        return;
    };
    let Some(defaults) = entries
        .iter()
        .find(|(k, _)| k.name == "defaults")
        .map(|(_, v)| v.clone())
    else {
        return;
    };
    for (key, value) in entries.iter_mut() {
        if key.name == "defaults" {
            continue;
        }
        let service = std::mem::replace(value, Node::new(NodeKind::Null, value.span));
        let service_span = service.span;
        let mut merged = merge(defaults.clone(), service);
        merged.span = service_span;
        *value = merged;
    }
}

fn map_entry_mut<'a>(node: &'a mut Node, key: &str) -> Option<&'a mut Node> {
    match &mut node.kind {
        NodeKind::Map(entries) => entries
            .iter_mut()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v),
        _ => None,
    }
}

/// One `path=value` override, from `--set` or a playbook variant's `set:`.
#[derive(Debug, Clone)]
pub struct SetOverride {
    /// Dotted path, e.g. `kafka.main.broker_type` or `services.*.log_level`.
    pub path: String,
    /// Where the path is written (the `--set` argument, the variant's key).
    pub path_span: Span,
    pub value: Node,
}

impl SetOverride {
    /// Where `segment` of the path is written, when the path's span holds exactly the path
    /// (a misspelt field's caret then points at it); else the whole path.
    fn segment_span(&self, segment: &str) -> Span {
        let span = self.path_span;
        let exact = span.end.checked_sub(span.start) == Some(self.path.len());
        match self.path.rfind(segment).filter(|_| exact) {
            Some(offset) => Span {
                start: span.start + offset,
                end: span.start + offset + segment.len(),
                column: span.column + u32::try_from(offset).unwrap_or(0),
                ..span
            },
            None => span,
        }
    }
}

/// Mappings whose keys are user data: the rest of a path is one key, dots included
/// (`kafka.main.properties.log.retention.minutes`).
const FREE_MAPS: &[&str] = &[
    "properties",
    "parameters",
    "environment",
    "secrets",
    "tags",
    "vars",
];

/// Collections of named things: a path may select existing entries (or `*` for all) but
/// never invent one, so a typo in a service name is an error rather than a new service.
const NAMED_COLLECTIONS: &[&str] = &["services", "kafka"];

/// Applies an override to the tree, or explains why its path is wrong.
pub fn apply_set(root: &mut Node, set: &SetOverride) -> Result<(), Box<Diagnostic>> {
    let segments: Vec<&str> = set.path.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(Box::new(
            Diagnostic::error(
                "invalid-set-path",
                set.path_span,
                format!("`{}` is not a valid path", set.path),
            )
            .with_hint("write dotted field names, e.g. services.mod-users.log_level"),
        ));
    }
    set_at(root, &segments, set, None)
}

fn set_at(
    node: &mut Node,
    segments: &[&str],
    set: &SetOverride,
    parent_key: Option<&str>,
) -> Result<(), Box<Diagnostic>> {
    let Some((&first, rest)) = segments.split_first() else {
        *node = set.value.clone();
        return Ok(());
    };
    if parent_key.is_some_and(|p| FREE_MAPS.contains(&p)) {
        let key = segments.join(".");
        return set_child(node, &key, &[], set, true);
    }
    if let NodeKind::Seq(items) = &mut node.kind {
        let len = items.len();
        let index: usize = first.parse().map_err(|_| {
            Box::new(
                Diagnostic::error(
                    "invalid-set-path",
                    set.path_span,
                    format!("`{first}` in `{}` must be a list index", set.path),
                )
                .with_hint(format!(
                    "this list has {len} entries: use 0 to {}",
                    len.saturating_sub(1)
                )),
            )
        })?;
        let item = items.get_mut(index).ok_or_else(|| {
            Box::new(Diagnostic::error(
                "invalid-set-path",
                set.path_span,
                format!(
                    "index {index} in `{}` is past the end of a list of {len}",
                    set.path
                ),
            ))
        })?;
        return set_at(item, rest, set, None);
    }
    if parent_key.is_some_and(|p| NAMED_COLLECTIONS.contains(&p)) {
        let NodeKind::Map(entries) = &mut node.kind else {
            return Err(Box::new(not_a_mapping(set, first)));
        };
        if first == "*" {
            for (key, value) in entries.iter_mut() {
                if key.name != "defaults" {
                    set_at(value, rest, set, Some(&key.name))?;
                }
            }
            return Ok(());
        }
        let names: Vec<String> = entries.iter().map(|(k, _)| k.name.clone()).collect();
        return match entries.iter_mut().find(|(k, _)| k.name == first) {
            Some((_, value)) => set_at(value, rest, set, Some(first)),
            None => {
                let what = parent_key.unwrap_or("entries");
                let mut diag = Diagnostic::error(
                    "unknown-reference",
                    set.path_span,
                    format!("`{}` names no entry `{first}` under `{what}`", set.path),
                );
                diag = match suggest(first, names.iter().map(String::as_str)) {
                    Some(best) => diag.with_hint(format!("did you mean `{best}`?")),
                    None => diag.with_hint(format!("`{what}` has: {}", names.join(", "))),
                };
                Err(Box::new(diag))
            }
        };
    }
    set_child(node, first, rest, set, false)
}

fn set_child(
    node: &mut Node,
    key: &str,
    rest: &[&str],
    set: &SetOverride,
    leaf: bool,
) -> Result<(), Box<Diagnostic>> {
    if node.kind == NodeKind::Null {
        node.kind = NodeKind::Map(Vec::new());
    }
    let NodeKind::Map(entries) = &mut node.kind else {
        return Err(Box::new(not_a_mapping(set, key)));
    };
    let index = match entries.iter().position(|(k, _)| k.name == key) {
        Some(i) => i,
        None => {
            entries.push((
                Key {
                    name: key.to_string(),
                    span: set.segment_span(key),
                },
                Node::new(NodeKind::Null, set.value.span),
            ));
            entries.len() - 1
        }
    };
    let child = &mut entries[index].1;
    if leaf {
        *child = set.value.clone();
        return Ok(());
    }
    set_at(child, rest, set, Some(key))
}

fn not_a_mapping(set: &SetOverride, at: &str) -> Diagnostic {
    Diagnostic::error(
        "invalid-set-path",
        set.path_span,
        format!("`{}` goes through `{at}`, which is not a mapping", set.path),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::node::parse;
    use crate::spec::source::Sources;

    fn tree(text: &str) -> Node {
        let mut sources = Sources::new();
        let id = sources.add("t.yaml".into(), None, text.into());
        parse(&sources, id).unwrap()
    }

    fn set(path: &str, value: &str) -> SetOverride {
        SetOverride {
            path: path.into(),
            path_span: Span::BUILTIN,
            value: tree(value),
        }
    }

    #[test]
    fn merge_overrides_scalars_merges_maps_and_null_removes() {
        let merged = merge(
            tree("a: 1\nb: {c: 2, d: 3}\ne: [1, 2]\nf: x\n"),
            tree("b: {c: 9}\ne: [7]\nf: null\n"),
        );
        assert_eq!(merged.get("a").unwrap().kind, NodeKind::Int(1));
        assert_eq!(
            merged.get("b").unwrap().get("c").unwrap().kind,
            NodeKind::Int(9)
        );
        assert_eq!(
            merged.get("b").unwrap().get("d").unwrap().kind,
            NodeKind::Int(3)
        );
        assert!(matches!(&merged.get("e").unwrap().kind, NodeKind::Seq(v) if v.len() == 1));
        assert!(merged.get("f").is_none());
    }

    #[test]
    fn defaults_apply_under_each_service() {
        let mut root =
            tree("services:\n  defaults: {log_level: info, cpu: 128}\n  a: {cpu: 256}\n  b: {}\n");
        apply_service_defaults(&mut root);
        let services = root.get("services").unwrap();
        assert_eq!(
            services.get("a").unwrap().get("cpu").unwrap().kind,
            NodeKind::Int(256)
        );
        assert_eq!(
            services.get("b").unwrap().get("cpu").unwrap().kind,
            NodeKind::Int(128)
        );
        assert_eq!(
            services.get("b").unwrap().get("log_level").unwrap().kind,
            NodeKind::Str("info".into())
        );
    }

    #[test]
    fn set_paths_reach_fields_free_maps_wildcards_and_lists() {
        let mut root = tree(
            "kafka:\n  main: {brokers: 2, properties: {a: 1}}\nservices:\n  x: {count: 1}\n  y: {count: 1}\nrds:\n  readers: [{id: r1}]\n",
        );
        apply_set(&mut root, &set("kafka.main.brokers", "4")).unwrap();
        apply_set(
            &mut root,
            &set("kafka.main.properties.log.retention.minutes", "480"),
        )
        .unwrap();
        apply_set(&mut root, &set("services.*.count", "3")).unwrap();
        apply_set(&mut root, &set("rds.readers.0.class", "db.r6g.large")).unwrap();
        let main = root.get("kafka").unwrap().get("main").unwrap();
        assert_eq!(main.get("brokers").unwrap().kind, NodeKind::Int(4));
        assert_eq!(
            main.get("properties")
                .unwrap()
                .get("log.retention.minutes")
                .unwrap()
                .kind,
            NodeKind::Int(480)
        );
        for s in ["x", "y"] {
            let count = &root
                .get("services")
                .unwrap()
                .get(s)
                .unwrap()
                .get("count")
                .unwrap()
                .kind;
            assert_eq!(count, &NodeKind::Int(3));
        }
    }

    #[test]
    fn set_refuses_to_invent_services_and_suggests() {
        let mut root = tree("services:\n  mod-users: {count: 1}\n");
        let err = apply_set(&mut root, &set("services.mod-user.count", "2")).unwrap_err();
        assert_eq!(err.code, "unknown-reference");
        assert!(err.hint.unwrap().contains("mod-users"));
        let err = apply_set(&mut root, &set("services..count", "2")).unwrap_err();
        assert_eq!(err.code, "invalid-set-path");
    }
}
