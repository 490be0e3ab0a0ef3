//! End-to-end tests of the envctl binary. One test binary (fast to link), one small builder:
//! `Test::new().file("env.yaml", TEXT).args(["validate", "env.yaml"]).run()`.
mod apply;
mod bad_input;
mod capacity;
mod cli;
mod contract;
mod copies;
mod data_stores;
mod distribution;
mod docs;
mod engine_entrypoint;
mod gc_leftovers;
mod import;
mod import_park_cli;
mod load;
mod lock;
mod lost_responses;
mod matrix;
mod moto;
mod ownership;
mod park;
mod perf;
mod plan_masking;
mod render;
mod restore;
mod resume;
mod schema;
mod secrets;
mod strict;
mod validate;
mod vocabulary;

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
    /// Environment variables set (`Some`) or removed (`None`) for the run.
    env: Vec<(String, Option<String>)>,
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
            env: Vec::new(),
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

    /// Sets (`Some`) or removes (`None`) an environment variable of the run.
    pub fn env(mut self, name: &str, value: Option<&str>) -> Self {
        self.env.push((name.to_string(), value.map(str::to_string)));
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

    /// A FIFO at `name`: opening it for reading blocks until a writer comes, which none will.
    pub fn fifo(self, name: &str) -> Self {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        let status = Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_envctl"));
        cmd.args(&self.args)
            .current_dir(self.cwd.as_deref().unwrap_or(self.dir.path()))
            .env("NO_COLOR", "1")
            // Before any announced MSK end of support comes within validate's warning window
            // (kafka-version-support-ends); tests of that warning set their own date.
            .env("ENVCTL_TODAY", "2025-11-01");
        for (name, value) in &self.env {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        cmd
    }

    pub fn run(self) -> Output {
        self.run_keeping_files().0
    }

    /// As [`Test::run`], keeping the temp dir (and what envctl wrote there) for inspection.
    pub fn run_keeping_files(self) -> (Output, tempfile::TempDir) {
        let out = self.command().output().expect("envctl runs");
        let output = Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        (output, self.dir)
    }

    /// As [`Test::run`], for input that could make envctl hang: a run still going after
    /// `limit` is killed and the test fails. The limit is a hang detector, not a benchmark:
    /// give it a wide margin.
    pub fn run_within(self, limit: std::time::Duration) -> Output {
        self.run_within_keeping_files(limit).0
    }

    /// As [`Test::run_within`], keeping the temp dir for inspection.
    pub fn run_within_keeping_files(
        self,
        limit: std::time::Duration,
    ) -> (Output, tempfile::TempDir) {
        use std::io::Read;
        let mut child = self
            .command()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("envctl starts");
        // Drained while it runs, so a chatty run cannot fill a pipe and look hung.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_string(&mut text);
                }
                text
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("envctl {:?} still ran after {limit:?}", self.args);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let output = Output {
            code: status.code().unwrap_or(-1),
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        };
        (output, self.dir)
    }
}

/// BASE_ENV's capacity line: an ECS Managed Instances provider of up to two m6i.2xlarge,
/// which envctl creates and deletes with the env, so the sandbox places its tasks.
pub const BASE_CAPACITY: &str = "  capacity: {managed_instances: {instance_types: [m6i.2xlarge], instances: {min: 0, max: 2}, infrastructure_role: \"arn:aws:iam::123456789012:role/ecsInfrastructureRole\", instance_profile: \"arn:aws:iam::123456789012:instance-profile/ecsInstanceRole\"}}\n";

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
  capacity: {managed_instances: {instance_types: [m6i.2xlarge], instances: {min: 0, max: 2}, infrastructure_role: \"arn:aws:iam::123456789012:role/ecsInfrastructureRole\", instance_profile: \"arn:aws:iam::123456789012:instance-profile/ecsInstanceRole\"}}
rds:
  writer: {id: test-db, class: db.r6g.xlarge, engine_version: \"16\", parameters: {max_connections: 500}}
  readers: [{id: test-db-reader}]
kafka:
  main:
    name: test-msk
    broker_type: kafka.m5.large
    brokers: 2
    zones: 2
    version: 3.6.0
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

/// A run's points in run order with their statuses.
pub fn point_statuses(
    record: &envctl::results::RunRecord,
) -> Vec<(String, envctl::results::Status)> {
    record
        .points
        .iter()
        .map(|p| (p.id.clone(), p.status.clone()))
        .collect()
}

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

/// POST to the sandbox's control API (127.0.0.1 only); (status, body).
pub async fn control_post(endpoint: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The control API body that registers `n` container instances of `instance_type` in
/// `cluster`, alternating over two zones, as an Auto Scaling group outside envctl would.
pub fn declared_instances(cluster: &str, instance_type: &str, n: usize) -> String {
    let size = envctl::spec::catalog::ec2_instance(instance_type).expect("catalogue type");
    let instances: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let zone = ["us-east-1a", "us-east-1b"][i % 2];
            serde_json::json!({
                "zone": zone,
                "cpu": size.cpu_units(),
                "memory": size.task_memory_mib(),
            })
        })
        .collect();
    serde_json::json!({"cluster": cluster, "instances": instances}).to_string()
}
