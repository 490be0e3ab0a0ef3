//! End-to-end tests of the envctl binary. One test binary (fast to link), one small builder:
//! `Test::new().file("env.yaml", TEXT).args(["validate", "env.yaml"]).run()`.
mod apply;
mod bad_input;
mod cli;
mod distribution;
mod docs;
mod matrix;
mod moto;
mod perf;
mod render;
mod validate;

// build.rs's commit lookup, tested on directories with and without git.
#[path = "../../build.rs"]
#[allow(dead_code)]
mod build_script;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root, where envs/, playbooks/ and task-defs/ live.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub struct Test {
    dir: tempfile::TempDir,
    args: Vec<String>,
    cwd: Option<PathBuf>,
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Default for Test {
    fn default() -> Self {
        Self::new()
    }
}

impl Test {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        // Templates are addressed relative to env files; give every test the real ones.
        let task_defs = dir.path().join("task-defs");
        std::fs::create_dir_all(&task_defs).expect("task-defs dir");
        for entry in std::fs::read_dir(repo().join("task-defs")).expect("task-defs") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), task_defs.join(entry.file_name())).expect("copy");
        }
        Test {
            dir,
            args: Vec::new(),
            cwd: None,
        }
    }

    pub fn file(self, name: &str, text: &str) -> Self {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(path, text).expect("write fixture");
        self
    }

    pub fn bytes(self, name: &str, data: &[u8]) -> Self {
        std::fs::write(self.dir.path().join(name), data).expect("write fixture");
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Run in the repository instead of the temp dir (for the committed examples).
    pub fn in_repo(mut self) -> Self {
        self.cwd = Some(repo());
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn run(self) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_envctl"))
            .args(&self.args)
            .current_dir(self.cwd.as_deref().unwrap_or(self.dir.path()))
            .env("NO_COLOR", "1")
            .output()
            .expect("envctl runs");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A small valid env that tests modify one line at a time.
pub const BASE_ENV: &str = "\
env: test
region: us-east-1
owner: ptf
network:
  subnets: [subnet-1, subnet-2]
  security_groups: [sg-1]
ecs:
  cluster: test-pvt
  capacity: {instance_type: m6i.2xlarge, instances: 2}
rds:
  writer: {id: test-db, class: db.r6g.xlarge, parameters: {max_connections: 500}}
  readers: [{id: test-db-reader}]
kafka:
  main:
    name: test-msk
    broker_type: kafka.m5.large
    brokers: 2
    zones: 2
    version: 2.8.0
    properties: {default.replication.factor: 2}
services:
  defaults:
    template: task-defs/folio-module.yaml
    kafka: main
  mod-users:
    image: folioorg/mod-users:19.2.0
    count: 2
    memory: {hard: 1024, soft: 1000}
    cpu: 128
    jvm: {xmx: 700, metaspace: 88, max_metaspace: 128}
";

/// The validate diagnostics of a file, as (code, line, column).
pub fn diagnostics(out: &Output) -> Vec<(String, u64, u64)> {
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "validate --format json printed no JSON ({e}):\n{}\n{}",
            out.stdout, out.stderr
        )
    });
    doc["diagnostics"]
        .as_array()
        .expect("diagnostics array")
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_string(),
                d["line"].as_u64().unwrap_or_default(),
                d["column"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}
