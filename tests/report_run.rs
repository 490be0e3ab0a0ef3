//! `envctl report RUN_DIR` and `envctl report compare` on the fixture runs of
//! tests/fixtures/report/ (written by `fixtures/report/generator.rs`, see there).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[path = "fixtures/report/generator.rs"]
mod generator;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

/// Every file under `dir`, by relative path, with its content.
fn files_under(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The committed fixtures are exactly what the generator writes; with
/// `ENVCTL_WRITE_REPORT_FIXTURES=1` the test rewrites them instead.
#[test]
fn fixtures_match_their_generator() {
    for name in generator::FIXTURES {
        if std::env::var_os("ENVCTL_WRITE_REPORT_FIXTURES").is_some() {
            let _ = std::fs::remove_dir_all(fixture(name));
            generator::write_fixture(name, &fixture(name));
        }
        let fresh = tempfile::tempdir().unwrap();
        generator::write_fixture(name, fresh.path());
        let expected = files_under(fresh.path());
        let committed = files_under(&fixture(name));
        assert_eq!(
            committed.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{name}: regenerate with ENVCTL_WRITE_REPORT_FIXTURES=1"
        );
        for (path, content) in &expected {
            assert!(
                committed.get(path) == Some(content),
                "{name}/{path} differs from the generator's; regenerate with \
                 ENVCTL_WRITE_REPORT_FIXTURES=1"
            );
        }
    }
}
