//! `envctl validate`: every error kind and every lint, pinned to its exact line and column.
use crate::{BASE_CAPACITY, BASE_ENV, Test, diagnostics, repo};

/// BASE_ENV with `from` replaced by `to` (which must occur exactly once).
fn env_with(from: &str, to: &str) -> String {
    assert_eq!(
        BASE_ENV.matches(from).count(),
        1,
        "`{from}` must occur once in BASE_ENV"
    );
    BASE_ENV.replacen(from, to, 1)
}

/// Validates a file and returns its diagnostics.
fn check(text: &str, extra: &[&str]) -> (i32, Vec<(String, u64, u64)>, String) {
    let out = Test::new()
        .file("env.yaml", text)
        .args(["validate", "env.yaml", "--format", "json"])
        .args(extra.iter().copied())
        .run();
    let diags = diagnostics(&out);
    (out.code, diags, out.stdout)
}

#[test]
fn base_env_is_valid() {
    let (code, diags, _) = check(BASE_ENV, &[]);
    assert_eq!((code, diags), (0, vec![]));
}

/// (case, from, to, expected diagnostics as (code, line, column)): exactly these, in order.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, u64, u64)],
);

const CASES: &[Case] = &[
    (
        "wait deadline that is not a duration",
        "owner: ptf\n",
        "owner: ptf\nwaits: {services: 20 minutes}\n",
        &[("invalid-value", 4, 19)],
    ),
    (
        "zero wait deadline",
        "owner: ptf\n",
        "owner: ptf\nwaits:\n  rds: 0s\n",
        &[("invalid-value", 5, 8)],
    ),
    (
        "a retention CloudWatch Logs refuses",
        "owner: ptf\n",
        "owner: ptf\nlogs:\n  retention_days: 45\n",
        &[("invalid-value", 5, 19)],
    ),
    (
        "unknown kind of wait",
        "owner: ptf\n",
        "owner: ptf\nwaits: {service: 20m}\n",
        &[("unknown-field", 4, 9)],
    ),
    (
        "yaml syntax",
        "    brokers: 2\n",
        "    brokers: [2\n",
        &[("yaml-syntax", 18, 10)],
    ),
    (
        "duplicate key",
        "    count: 2\n",
        "    count: 2\n    count: 3\n",
        &[("yaml-syntax", 28, 5)],
    ),
    (
        "wrong type",
        "    count: 2\n",
        "    count: two\n",
        &[("wrong-type", 27, 12)],
    ),
    (
        "out of range",
        "    count: 2\n",
        "    count: -1\n",
        &[("out-of-range", 27, 12)],
    ),
    (
        // Issue 35: the misspelt key alone is the error ("did you mean `cpu`?"); the field
        // it names is not also said missing.
        "unknown field",
        "    cpu: 128\n",
        "    cpus: 128\n",
        &[("unknown-field", 29, 5)],
    ),
    (
        "invalid enum value",
        "    cpu: 128\n",
        "    cpu: 128\n    log_level: loud\n",
        &[("invalid-value", 30, 16)],
    ),
    (
        "unknown kafka reference",
        "    kafka: main\n",
        "    kafka: mian\n",
        &[("unknown-reference", 24, 12)],
    ),
    (
        "invalid env name",
        "env: test\n",
        "env: Test_1\n",
        &[("invalid-name", 1, 6)],
    ),
    (
        "missing field",
        "region: us-east-1\n",
        "",
        &[("missing-field", 1, 1)],
    ),
    (
        "postgres version that is neither a major nor a major.minor",
        "engine_version: \"16\"",
        "engine_version: 16.x",
        &[("invalid-value", 11, 63)],
    ),
    (
        "parameters without an engine version",
        "engine_version: \"16\", parameters",
        "parameters",
        &[("parameters-without-engine-version", 11, 77)],
    ),
    (
        "kafka version past end of support",
        "    version: 3.6.0\n",
        "    version: 2.8.0\n",
        &[("kafka-version-end-of-support", 19, 14)],
    ),
    (
        "version as a number",
        "    version: 3.6.0\n",
        "    version: 3.7\n",
        &[("wrong-type", 19, 14)],
    ),
    (
        "tag twice",
        "    count: 2\n",
        "    count: 2\n    version: 1.0.0\n",
        &[("conflicting-fields", 28, 14)],
    ),
    (
        "jvm over hard limit",
        "{xmx: 700,",
        "{xmx: 900,",
        &[("jvm-exceeds-hard-limit", 30, 16)],
    ),
    (
        "jvm over soft limit",
        "{xmx: 700,",
        "{xmx: 820,",
        &[("jvm-exceeds-soft-limit", 30, 16)],
    ),
    (
        "soft above hard",
        "soft: 1000}",
        "soft: 1100}",
        &[("soft-above-hard", 28, 32)],
    ),
    (
        "task larger than an instance",
        "{hard: 1024, soft: 1000}",
        "{hard: 40000, soft: 1000}",
        &[("task-exceeds-instance", 28, 20)],
    ),
    (
        "rw split without reader",
        "  readers: [{id: test-db-reader}]\n",
        "",
        &[],
    ),
    (
        "replicas over brokers",
        "{default.replication.factor: 2}",
        "{default.replication.factor: 3}",
        &[("replication-factor-exceeds-brokers", 20, 46)],
    ),
    (
        "brokers not a multiple of zones",
        "    brokers: 2\n",
        "    brokers: 3\n",
        &[("brokers-not-multiple-of-zones", 17, 14)],
    ),
    (
        "zones beyond subnets",
        "    zones: 2\n",
        "    zones: 3\n",
        &[
            ("brokers-not-multiple-of-zones", 17, 14),
            ("zones-exceed-subnets", 18, 12),
        ],
    ),
    (
        "kraft on 3.6",
        "    version: 3.6.0\n",
        "    version: 3.6.0\n    metadata: kraft\n",
        &[("kraft-unsupported-version", 19, 14)],
    ),
    (
        "zookeeper on 4.0",
        "    version: 3.6.0\n",
        "    version: 4.0.x\n",
        &[("zookeeper-unsupported-version", 19, 14)],
    ),
    (
        "capacity exceeded",
        "    count: 2\n",
        "    count: 100\n",
        &[("capacity-exceeded", 9, 90)],
    ),
    (
        // Two Managed Instances m6i.2xlarge hold six awsvpc tasks (three network
        // interfaces each): four tasks fit, their rolling deployment's four more do not.
        "no room for a rolling deploy",
        "    count: 2\n",
        "    count: 4\n",
        &[("capacity-rolling-headroom", 9, 90)],
    ),
    (
        "tasks that fit by the sum but not on any one instance",
        "    count: 2\n    memory: {hard: 1024, soft: 1000}\n",
        "    count: 3\n    memory: {hard: 20000, soft: 20000}\n",
        &[("capacity-exceeded", 9, 90)],
    ),
    (
        // The shared template follows `env.network_mode`: bridge on instances registered
        // elsewhere, awsvpc on Managed Instances (which take awsvpc and host only).
        "instances registered elsewhere with the shared template",
        BASE_CAPACITY,
        "  capacity: {instance_type: m6i.2xlarge, instances: 2}\n",
        &[],
    ),
    (
        // Managed Instances take awsvpc and host only: the shared template follows
        // `env.network_mode` (awsvpc here), so the base env stays valid.
        "managed instances with the shared template",
        BASE_CAPACITY,
        "  capacity:\n    managed_instances:\n      instance_types: [m6i.2xlarge]\n      instances: {min: 0, max: 2}\n      infrastructure_role: arn:aws:iam::1:role/ecsInfra\n      instance_profile: arn:aws:iam::1:instance-profile/ecsInstance\n",
        &[],
    ),
    (
        "managed instances size the placement by their max",
        BASE_CAPACITY,
        "  capacity:\n    managed_instances:\n      instance_types: [t3.medium]\n      instances: {max: 1}\n      infrastructure_role: r\n      instance_profile: p\n",
        &[("capacity-rolling-headroom", 12, 24)],
    ),
    (
        "managed instances with an unknown type",
        BASE_CAPACITY,
        "  capacity:\n    managed_instances: {instance_types: [m6i.2xlarge, m6i.2xlarg], instances: {max: 2}, infrastructure_role: r, instance_profile: p}\n",
        &[("unknown-instance-type", 10, 55)],
    ),
    (
        "managed instances plus instances",
        BASE_CAPACITY,
        "  capacity:\n    instances: 2\n    managed_instances: {instance_types: [m6i.2xlarge], instances: {max: 2}, infrastructure_role: r, instance_profile: p}\n",
        &[("conflicting-fields", 10, 5)],
    ),
    (
        "misspelt managed instances field",
        BASE_CAPACITY,
        "  capacity:\n    managed_instances: {instance_type: [m6i.2xlarge], instances: {max: 2}, infrastructure_role: r, instance_profile: p}\n",
        &[("unknown-field", 10, 25)],
    ),
    (
        // ECS Managed Instances have no instance floor: a minimum AWS never sees is refused
        // (issue 23 item 10), at the value.
        "managed instances with a minimum",
        BASE_CAPACITY,
        "  capacity:\n    managed_instances: {instance_types: [m6i.2xlarge], instances: {min: 2, max: 4}, infrastructure_role: r, instance_profile: p}\n",
        &[("invalid-value", 10, 73)],
    ),
    (
        "managed instances with a max of 0",
        BASE_CAPACITY,
        "  capacity:\n    managed_instances: {instance_types: [m6i.2xlarge], instances: {max: 0}, infrastructure_role: r, instance_profile: p}\n",
        &[("invalid-value", 10, 73)],
    ),
    (
        "an existing capacity provider",
        BASE_CAPACITY,
        "  capacity: {provider: shared-asg, instance_type: m6i.2xlarge, instances: 2}\n",
        &[],
    ),
    (
        "a provider without its size",
        BASE_CAPACITY,
        "  capacity: {provider: shared-asg}\n",
        &[("missing-field", 9, 13), ("missing-field", 9, 13)],
    ),
    (
        "storage throughput",
        "    version: 3.6.0\n",
        "    version: 3.6.0\n    throughput: {cluster_mb_s: 500, storage_mb_s: 100}\n",
        &[("kafka-storage-throughput", 20, 32)],
    ),
    (
        "no storage throughput",
        "    version: 3.6.0\n",
        "    version: 3.6.0\n    throughput: {cluster_mb_s: 500, storage_mb_s: 0}\n",
        &[("kafka-storage-throughput", 20, 51)],
    ),
    (
        "unknown instance type",
        "m6i.2xlarge",
        "m6i.2xlarg",
        &[("unknown-instance-type", 9, 51)],
    ),
    (
        "secret in environment",
        "    cpu: 128\n",
        "    cpu: 128\n    environment: {DB_PASSWORD: hunter2}\n",
        &[("secret-in-environment", 30, 32)],
    ),
    (
        "unbounded metaspace",
        "{xmx: 700, metaspace: 88, max_metaspace: 128}",
        "{xmx: 700}",
        &[("metaspace-unbounded", 30, 16)],
    ),
    (
        "duplicate resource name",
        "{id: test-db-reader}",
        "{id: test-db}",
        &[("duplicate-name", 12, 18)],
    ),
    (
        "min isr above replication",
        "{default.replication.factor: 2}",
        "{default.replication.factor: 2, min.insync.replicas: 3}",
        &[("min-isr-exceeds-replication", 20, 70)],
    ),
];

#[test]
fn every_error_kind_and_lint_is_reported_at_its_position() {
    let mut failures = Vec::new();
    for (case, from, to, expected) in CASES {
        let (code, diags, stdout) = check(&env_with(from, to), &[]);
        let got: Vec<(&str, u64, u64)> = diags
            .iter()
            .map(|(c, l, col)| (c.as_str(), *l, *col))
            .collect();
        let has_error = got.iter().any(|(c, _, _)| {
            !c.contains("soft-limit") && !c.contains("headroom") && !c.contains("unbounded")
        });
        let expected_code = if has_error { 1 } else { 0 };
        if got != *expected || code != expected_code {
            failures.push(format!("{case}: expected {expected:?} (exit {expected_code}), got {got:?} (exit {code})\n{stdout}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Host ports come from the rendered task definition: with a fixed host port (the OMB
/// worker template, host mode, port 8080) one task per instance fits, and a rolling
/// deployment at maximumPercent 200 finds no free port.
#[test]
fn fixed_host_ports_limit_tasks_to_one_per_instance() {
    let host = BASE_ENV.replace("task-defs/folio-module.yaml", "task-defs/omb-worker.yaml");
    let (code, diags, stdout) = check(&host, &[]);
    assert_eq!(
        (code, diags),
        (0, vec![("capacity-rolling-headroom".to_string(), 9, 90)]),
        "{stdout}"
    );
    assert!(
        stdout.contains("is already using a port required by your task"),
        "{stdout}"
    );
    assert!(stdout.contains("4 x m6i.2xlarge (2 more)"), "{stdout}");
    let three = host.replace("    count: 2\n", "    count: 3\n");
    let (code, diags, stdout) = check(&three, &[]);
    assert_eq!(
        (code, diags),
        (1, vec![("capacity-exceeded".to_string(), 9, 90)]),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 of 3 tasks cannot be placed on 2 x m6i.2xlarge"),
        "{stdout}"
    );
}

/// The issue's example: the 144-service env on the seeds' 10 m6i.2xlarge does not fit, and
/// validate says by how much.
#[test]
fn perf_144_on_ten_m6i_2xlarge_reports_the_shortfall() {
    let out = Test::new()
        .args(["validate", "--format", "json"])
        .args([repo().join("envs/perf-144.yaml").display().to_string()])
        .args([
            "--set",
            "ecs.capacity.instance_type=m6i.2xlarge",
            "--set",
            "ecs.capacity.instances=10",
        ])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        diagnostics(&out),
        vec![("capacity-exceeded".to_string(), 1, 1)]
    );
    assert!(
        out.stdout
            .contains("23 of 144 tasks cannot be placed on 10 x m6i.2xlarge"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("all tasks fit on 11 x m6i.2xlarge (1 more)"),
        "{}",
        out.stdout
    );
}

#[test]
fn rw_split_needs_a_reader() {
    let text = env_with("  readers: [{id: test-db-reader}]\n", "")
        .replace("    cpu: 128\n", "    cpu: 128\n    rw_split: true\n");
    let (code, diags, _) = check(&text, &[]);
    assert_eq!(code, 1);
    assert_eq!(diags, vec![("rw-split-without-reader".to_string(), 29, 15)]);
}

#[test]
fn report_000_appendix_replication_factor_is_caught() {
    let out = Test::new()
        .args(["validate", "--format", "json"])
        .args([repo()
            .join("tests/fixtures/qcp1-appendix-kraft.yaml")
            .display()
            .to_string()])
        .run();
    assert_eq!(out.code, 1);
    assert_eq!(
        diagnostics(&out),
        vec![("replication-factor-exceeds-brokers".to_string(), 25, 35)]
    );
}

#[test]
fn all_errors_are_reported_at_once() {
    let text = env_with("    count: 2\n", "    count: two\n")
        .replace("    kafka: main\n", "    kafka: mian\n")
        .replace("env: test", "env: BAD");
    let (code, diags, _) = check(&text, &[]);
    assert_eq!(code, 1);
    let codes: Vec<&str> = diags.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(
        codes,
        vec!["invalid-name", "wrong-type"],
        "decode errors stop lints but not each other"
    );
}

#[test]
fn extends_merges_and_detects_cycles_and_missing_files() {
    let child = "extends: base.yaml\nenv: child\nservices:\n  mod-users:\n    count: 1\n";
    let out = Test::new()
        .file("base.yaml", BASE_ENV)
        .file("child.yaml", child)
        .args(["render", "child.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["env"], "child");
    assert_eq!(doc["services"]["mod-users"]["desiredCount"], 1);
    assert_eq!(
        doc["task_definitions"]["mod-users"]["family"],
        "child-mod-users"
    );

    let out = Test::new()
        .file("a.yaml", "extends: b.yaml\nenv: a\n")
        .file("b.yaml", "extends: a.yaml\nenv: b\n")
        .args(["validate", "a.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1);
    assert_eq!(
        diagnostics(&out),
        vec![("extends-cycle".to_string(), 1, 10)]
    );

    let out = Test::new()
        .file("a.yaml", "extends: nope.yaml\nenv: a\n")
        .args(["validate", "a.yaml", "--format", "json"])
        .run();
    assert_eq!(
        diagnostics(&out),
        vec![("file-not-found".to_string(), 1, 10)]
    );
}

#[test]
fn set_overrides_are_type_checked_and_point_at_the_argument() {
    let (code, diags, _) = check(BASE_ENV, &["--set", "services.mod-users.count=lots"]);
    assert_eq!((code, diags), (1, vec![("wrong-type".to_string(), 1, 1)]));
    let (code, diags, _) = check(BASE_ENV, &["--set", "services.mod-user.count=2"]);
    assert_eq!(
        (code, diags),
        (1, vec![("unknown-reference".to_string(), 1, 1)])
    );
    // The misspelt field, in the argument (issue 35: it pointed at the value).
    let (code, diags, _) = check(BASE_ENV, &["--set", "kafka.main.brokr=4"]);
    assert_eq!(
        (code, diags),
        (1, vec![("unknown-field".to_string(), 1, 12)])
    );
    let (code, diags, _) = check(BASE_ENV, &["--set", "kafka.main.brokers=3"]);
    assert_eq!(
        (code, diags),
        (1, vec![("brokers-not-multiple-of-zones".to_string(), 1, 1)])
    );
    let (code, _, _) = check(BASE_ENV, &["--set", "services.*.log_level=warn"]);
    assert_eq!(code, 0);
}

/// A template that fixes `networkMode: bridge` cannot run on Managed Instances: the error
/// points at the service's template line.
#[test]
fn a_bridge_template_on_managed_instances_is_an_error_at_the_template() {
    let shared = std::fs::read_to_string(repo().join("task-defs/folio-module.yaml"))
        .expect("the shared template");
    assert!(shared.contains("{{ env.network_mode | tojson }}"));
    let bridge = shared.replace("{{ env.network_mode | tojson }}", "bridge");
    let text = env_with(
        BASE_CAPACITY,
        "  capacity:\n    managed_instances:\n      instance_types: [m6i.2xlarge]\n      instances: {min: 0, max: 2}\n      infrastructure_role: arn:aws:iam::1:role/ecsInfra\n      instance_profile: arn:aws:iam::1:instance-profile/ecsInstance\n",
    )
    .replace("task-defs/folio-module.yaml", "task-defs/bridge.yaml");
    let out = Test::new()
        .file("env.yaml", &text)
        .file("task-defs/bridge.yaml", &bridge)
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        diagnostics(&out),
        vec![("network-mode-unsupported".to_string(), 28, 15)]
    );
}

/// A template validated for EC2 only cannot run on Managed Instances (ECS refuses to place
/// it there): the error points at the service's template line.
#[test]
fn an_ec2_only_template_on_managed_instances_is_an_error_at_the_template() {
    let shared = std::fs::read_to_string(repo().join("task-defs/folio-module.yaml"))
        .expect("the shared template");
    assert!(shared.contains("requiresCompatibilities: [{{ env.compatibility | tojson }}]"));
    let ec2 = shared.replace("{{ env.compatibility | tojson }}", "EC2");
    let text = BASE_ENV.replace("task-defs/folio-module.yaml", "task-defs/ec2.yaml");
    let out = Test::new()
        .file("env.yaml", &text)
        .file("task-defs/ec2.yaml", &ec2)
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        diagnostics(&out),
        vec![("task-definition-not-managed-instances".to_string(), 23, 15)]
    );
}

/// In awsvpc mode a hostPort other than the container port is refused by ECS: the error
/// points at the template's `hostPort`.
#[test]
fn an_awsvpc_host_port_other_than_the_container_port_is_an_error_at_it() {
    let shared = std::fs::read_to_string(repo().join("task-defs/folio-module.yaml"))
        .expect("the shared template");
    let mapped = shared.replace(
        "      - containerPort: {{ service.port }}",
        "      - containerPort: {{ service.port }}\n        hostPort: 9090",
    );
    assert_ne!(mapped, shared);
    let text = BASE_ENV.replace("task-defs/folio-module.yaml", "task-defs/mapped.yaml");
    let out = Test::new()
        .file("env.yaml", &text)
        .file("task-defs/mapped.yaml", &mapped)
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    let found = diagnostics(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "host-port-mismatch");
}

#[test]
fn template_errors_point_into_the_template() {
    let text = BASE_ENV.replace("task-defs/folio-module.yaml", "task-defs/bad.yaml");
    let out = Test::new()
        .file("env.yaml", &text)
        .file(
            "task-defs/bad.yaml",
            "family: x\ncontainerDefinitions:\n  - name: {{ service.nmae }}\n",
        )
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1);
    assert_eq!(
        diagnostics(&out),
        vec![("template-render".to_string(), 3, 14)]
    );

    let out = Test::new()
        .file("env.yaml", &text)
        .file("task-defs/bad.yaml", "family: {{ env.name \n")
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    assert_eq!(diagnostics(&out)[0].0, "template-syntax");
}

#[test]
fn the_human_format_quotes_the_line_with_a_caret_and_a_hint() {
    let out = Test::new()
        .file("env.yaml", &env_with("    cpu: 128\n", "    cpus: 128\n"))
        .args(["validate", "env.yaml"])
        .run();
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(out.stderr);
}

/// A playbook that is valid but for one line.
const PLAYBOOK: &str = "\
name: pb
env: env.yaml
matrix:
  level:
    info: {set: {services.mod-users.log_level: info}}
    warn: {set: {services.mod-users.log_level: warn}}
  users:
    u1: {vars: {users: 1}}
    u5: {vars: {users: 5}}
steps:
  - run: sh -c \"jmeter -Jusers=${users} -l ${RESULTS_DIR}/r.jtl\"
    timeout: 1h
teardown: always
report: {baseline: {level: info}}
";

#[test]
fn playbook_errors_point_at_the_playbook() {
    let cases: &[Case] = &[
        ("valid", "", "", &[]),
        (
            "unknown baseline axis",
            "{baseline: {level: info}}",
            "{baseline: {levl: info}}",
            &[("unknown-reference", 14, 21)],
        ),
        (
            "unknown baseline variant",
            "{baseline: {level: info}}",
            "{baseline: {level: inf}}",
            &[("unknown-reference", 14, 28)],
        ),
        (
            // At the misspelt segment, not the start of the path (issue 35).
            "set path typo",
            "services.mod-users.log_level: warn",
            "services.mod-users.log_levl: warn",
            &[("unknown-field", 6, 37)],
        ),
        (
            "set value of the wrong type",
            "log_level: warn}",
            "log_level: 3}",
            &[("wrong-type", 6, 48)],
        ),
        (
            "unknown service in set",
            "{services.mod-users.log_level: warn}",
            "{services.mod-userz.log_level: warn}",
            &[("unknown-reference", 6, 18)],
        ),
        (
            "undefined variable",
            "-Jusers=${users}",
            "-Jusers=${user}",
            &[("unknown-variable", 11, 10)],
        ),
        (
            "bad teardown",
            "teardown: always",
            "teardown: sometimes",
            &[("invalid-value", 13, 11)],
        ),
        (
            "bad step",
            "  - run: sh",
            "  - rum: sh",
            &[("invalid-step", 11, 5)],
        ),
        (
            "unknown variant in exclude",
            "teardown: always",
            "teardown: always\nexclude: [{users: u7}]",
            &[("unknown-reference", 14, 19)],
        ),
        (
            "metric period not a multiple of 60 s",
            "teardown: always",
            "teardown: always\ncollect: {period: 90s}",
            &[("invalid-value", 14, 19)],
        ),
        (
            "unknown axis in exclude",
            "teardown: always",
            "teardown: always\nexclude: [{user: u5}]",
            &[("unknown-reference", 14, 12)],
        ),
    ];
    let mut failures = Vec::new();
    for (case, from, to, expected) in cases {
        let text = if from.is_empty() {
            PLAYBOOK.to_string()
        } else {
            PLAYBOOK.replacen(from, to, 1)
        };
        let out = Test::new()
            .file("env.yaml", BASE_ENV)
            .file("pb.yaml", &text)
            .args(["validate", "pb.yaml", "--format", "json"])
            .run();
        let got = diagnostics(&out);
        let got: Vec<(&str, u64, u64)> = got
            .iter()
            .map(|(c, l, col)| (c.as_str(), *l, *col))
            .collect();
        let expected_code = if expected.is_empty() { 0 } else { 1 };
        if got != *expected || out.code != expected_code {
            failures.push(format!(
                "{case}: expected {expected:?}, got {got:?} (exit {})\n{}",
                out.code, out.stdout
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_committed_env_and_playbook_validates() {
    let mut files: Vec<String> = Vec::new();
    for dir in ["envs", "playbooks"] {
        for entry in std::fs::read_dir(repo().join(dir)).expect("dir") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(format!(
                    "{dir}/{}",
                    path.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let out = Test::new()
        .in_repo()
        .args(["validate"])
        .args(files.clone())
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for f in &files {
        assert!(
            out.stdout.contains(&format!("{f}: ok")),
            "{f} not ok:\n{}",
            out.stdout
        );
    }
}

#[test]
fn zipped_axes_need_equal_lengths() {
    let text = PLAYBOOK
        .replace(
            "    u5: {vars: {users: 5}}\n",
            "    u5: {vars: {users: 5}}\n    u9: {vars: {users: 9}}\n",
        )
        .replace(
            "teardown: always",
            "teardown: always\nzip: [[level, users]]",
        );
    let out = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", &text)
        .args(["validate", "pb.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1);
    assert_eq!(
        diagnostics(&out),
        vec![("zip-length-mismatch".to_string(), 15, 15)]
    );
}

#[test]
fn strict_tolerates_only_the_allowed_warning_codes() {
    // A soft-limit warning plus a metaspace warning: allowing one code leaves the other failing.
    // Without max_metaspace the sum uses metaspace: 860 + 88 + 64 = 1012 > soft 1000.
    let text = env_with("{xmx: 700,", "{xmx: 860,")
        .replace("metaspace: 88, max_metaspace: 128}", "metaspace: 88}");
    let run = |extra: &[&str]| {
        Test::new()
            .file("env.yaml", &text)
            .args(["validate", "env.yaml", "--strict"])
            .args(extra.iter().copied())
            .run()
    };
    let strict = run(&[]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    let codes: Vec<String> = diagnostics(&run(&["--format", "json"]))
        .into_iter()
        .map(|d| d.0)
        .collect();
    assert_eq!(codes, ["jvm-exceeds-soft-limit", "metaspace-unbounded"]);

    let one = run(&["--allow", "jvm-exceeds-soft-limit"]);
    assert_eq!(one.code, 1, "{}", one.stdout);
    assert!(
        one.stdout
            .contains("2 warning(s) (1 allowed) (--strict: warnings fail)"),
        "{}",
        one.stdout
    );

    let both = run(&[
        "--allow",
        "jvm-exceeds-soft-limit",
        "--allow",
        "metaspace-unbounded",
    ]);
    assert_eq!(both.code, 0, "{}\n{}", both.stdout, both.stderr);
    // Still printed: allowing a finding does not hide it.
    assert!(
        both.stderr.contains("warning[jvm-exceeds-soft-limit]"),
        "{}",
        both.stderr
    );

    // A misspelt or stale allowance is reported and tolerates nothing.
    let typo = run(&["--allow", "jvm-exceeds-soft-limt", "--format", "json"]);
    assert_eq!(typo.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&typo.stdout).expect("json");
    assert_eq!(
        doc["unused_allow"],
        serde_json::json!(["jvm-exceeds-soft-limt"])
    );
    assert_eq!(doc["allowed_warnings"], 0);
}

#[test]
fn an_allowance_never_tolerates_an_error() {
    let text = env_with("{xmx: 700,", "{xmx: 990,");
    let out = Test::new()
        .file("env.yaml", &text)
        .args([
            "validate",
            "env.yaml",
            "--strict",
            "--allow",
            "jvm-exceeds-hard-limit",
        ])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
}

/// On Managed Instances every awsvpc task takes one of the instance's network interfaces:
/// BASE_ENV's two m6i.2xlarge hold six such tasks however small, so seven are refused with
/// the reason and ECS's event, and the instance count that holds them.
#[test]
fn awsvpc_tasks_beyond_the_network_interfaces_do_not_fit() {
    let seven = BASE_ENV.replace("    count: 2\n", "    count: 7\n");
    let (code, diags, stdout) = check(&seven, &[]);
    assert_eq!(
        (code, diags),
        (1, vec![("capacity-exceeded".to_string(), 9, 90)]),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 of 7 tasks cannot be placed on 2 x m6i.2xlarge")
            && stdout.contains("awsvpc tasks take a network interface each, 3 per m6i.2xlarge")
            && stdout.contains(r#"encountered error \"RESOURCE:ENI\""#),
        "{stdout}"
    );
}

/// Issue 26 item 10: a typo under `services.defaults`, or in a `--set services.*` path, is
/// one error at the place it was written, not one per service (2 typos gave "12 errors").
#[test]
fn a_typo_in_the_defaults_or_a_wildcard_set_is_one_error() {
    let env = BASE_ENV.replace(
        "  defaults:\n",
        "  defaults:\n    lgo_level: warn\n    memry: {hard: 1}\n",
    );
    let env = env.replace(
        "  mod-users:\n",
        "  mod-inventory:\n    image: folioorg/mod-inventory:20.0.0\n    count: 1\n    memory: {hard: 1024, soft: 1000}\n    cpu: 128\n  mod-users:\n",
    );
    let out = Test::new()
        .file("env.yaml", &env)
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    let found = diagnostics(&out);
    let unknown: Vec<_> = found
        .iter()
        .filter(|(c, _, _)| c == "unknown-field")
        .collect();
    assert_eq!(unknown.len(), 2, "{found:?}\n{}", out.stderr);

    let out = Test::new()
        .file("env.yaml", &env)
        .args([
            "validate",
            "env.yaml",
            "--set",
            "services.*.lgo_level=warn",
            "--format",
            "json",
        ])
        .run();
    let found = diagnostics(&out);
    let unknown = found
        .iter()
        .filter(|(c, _, _)| c == "unknown-field")
        .count();
    // `memry` in the file, and the --set path once (it replaces the file's `lgo_level`).
    assert_eq!(unknown, 2, "{found:?}\n{}", out.stderr);
}

/// Issue 35: a `--set` typo's caret pointed at the value (`warn`), not at the misspelt key;
/// a path naming nothing points at the path.
#[test]
fn a_set_typo_points_at_its_key() {
    let cases: [(&str, (&str, u64, u64)); 3] = [
        ("services.*.log_levl=warn", ("unknown-field", 1, 12)),
        (" kafka.main.versoin=3.6.0", ("unknown-field", 1, 13)),
        (
            "services.mod-userz.log_level=warn",
            ("unknown-reference", 1, 1),
        ),
    ];
    for (set, (code, line, column)) in cases {
        let out = Test::new()
            .file("env.yaml", BASE_ENV)
            .args(["validate", "env.yaml", "--format", "json", "--set", set])
            .run();
        assert_eq!(
            diagnostics(&out),
            vec![(code.to_string(), line, column)],
            "--set {set}: {}",
            out.stdout
        );
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
        assert_eq!(doc["diagnostics"][0]["file"], "--set", "{}", out.stdout);
    }
}

/// Issue 35: a template named by an env named by a playbook was
/// `playbooks/../envs/../task-defs/x.yaml` in every message; it is `task-defs/x.yaml`.
#[test]
fn paths_named_through_other_files_read_without_detours() {
    let env = BASE_ENV.replace(
        "template: task-defs/folio-module.yaml",
        "template: ../task-defs/broken.yaml",
    );
    let out = Test::new()
        .file("envs/e.yaml", &env)
        .file("task-defs/broken.yaml", "family: {{ env }\n")
        .file(
            "playbooks/pb.yaml",
            &PLAYBOOK.replace("env: env.yaml", "env: ../envs/e.yaml"),
        )
        .args(["matrix", "plan", "playbooks/pb.yaml"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("task-defs/broken.yaml"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("../"), "{}", out.stderr);
}
