//! `envctl render`: what would be sent to AWS for the seed environments, pinned as snapshots.
use crate::Test;

fn render(args: &[&str]) -> String {
    let out = Test::new()
        .in_repo()
        .args(["render"])
        .args(args.iter().copied())
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

#[test]
fn pcp1_fqm_manager_task_definition_has_the_reader_endpoint_as_a_reference() {
    let text = render(&[
        "envs/pcp1.yaml",
        "--service",
        "mod-fqm-manager",
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let c = &doc["containerDefinitions"][0];
    assert_eq!(c["memory"], 1024);
    assert_eq!(c["memoryReservation"], 896);
    assert_eq!(c["cpu"], 128);
    let env: Vec<(String, String)> = c["environment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(
        get("JAVA_OPTIONS"),
        Some("-Xmx768m -XX:MetaspaceSize=88m -XX:MaxMetaspaceSize=128m")
    );
    assert_eq!(get("DB_HOST_READER"), Some("${rds.reader.address}"));
    assert_eq!(get("DB_PORT_READER"), Some("${rds.reader.port}"));
    let mut names: Vec<&String> = env.iter().map(|(n, _)| n).collect();
    let sorted = {
        let mut s = names.clone();
        s.sort();
        s
    };
    assert_eq!(names, sorted, "environment is sorted");
    names.dedup();
    assert_eq!(names.len(), env.len());
}

#[test]
fn rw_split_off_means_no_reader_variables() {
    let text = render(&[
        "envs/pcp1.yaml",
        "--service",
        "mod-users",
        "--format",
        "json",
    ]);
    assert!(!text.contains("DB_HOST_READER"), "{text}");
    let text = render(&[
        "envs/pcp1.yaml",
        "--service",
        "mod-users",
        "--format",
        "json",
        "--set",
        "services.mod-users.rw_split=true",
    ]);
    assert!(text.contains("DB_HOST_READER"), "{text}");
}

#[test]
fn seed_environments_render_as_pinned() {
    for env in ["pcp1", "qcp1", "data-export"] {
        let text = render(&[&format!("envs/{env}.yaml"), "--format", "yaml"]);
        insta::assert_snapshot!(format!("render_{env}"), text);
    }
}

#[test]
fn kraft_clusters_get_the_kraft_version_suffix() {
    let text = render(&["envs/qcp1.yaml", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        doc["kafka_clusters"]["kraft"]["provisioned"]["kafkaVersion"],
        "3.8.x.kraft"
    );
    assert_eq!(
        doc["kafka_clusters"]["main"]["provisioned"]["kafkaVersion"],
        "3.8.x"
    );
    assert_eq!(
        doc["kafka_configurations"]["main"]["serverProperties"],
        "auto.create.topics.enable=true\ndefault.replication.factor=2\nlog.retention.minutes=480\n"
    );
}

#[test]
fn secrets_are_references_never_values() {
    let text = render(&["envs/qcp1.yaml", "--format", "json"]);
    // The shipped envs read the RDS-managed master secret: a reference until apply.
    assert!(text.contains("\"valueFrom\": \"${rds.writer.master_secret_arn}:password::\""));
    // The writer's MasterUserPassword is a reference to envctl's secret, and nothing
    // else carries a password value.
    assert!(text.contains(
        "\"MasterUserPassword\": \"{{resolve:secretsmanager:envctl-qcp1-db-master:SecretString:password}}\""
    ));
    assert!(
        !text
            .to_lowercase()
            .replace("\"masteruserpassword\": \"{{resolve:secretsmanager:", "")
            .contains("password\": \""),
        "no inline password value"
    );
}
