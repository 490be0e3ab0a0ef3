//! Import of a hand-made world: the written env, compiled, renders exactly the live task
//! definitions (less the plain-text secret it refuses to copy).
use std::collections::BTreeMap;

use super::*;
use crate::model::live::LiveCluster;
use crate::model::{ContainerDefinition, LogConfiguration, PortMapping, SecretRef};
use crate::spec::deferred::{Deferred, Outputs};

fn container(
    name: &str,
    image: &str,
    soft: Option<u32>,
    env: &[(&str, &str)],
) -> ContainerDefinition {
    ContainerDefinition {
        name: name.into(),
        image: image.into(),
        cpu: 256,
        memory: if soft.is_some() { 1024 } else { 2048 },
        memory_reservation: soft,
        essential: true,
        port_mappings: vec![PortMapping {
            container_port: 8081,
            host_port: 0,
            protocol: "tcp".into(),
        }],
        environment: env
            .iter()
            .map(|(k, v)| (k.to_string(), Deferred::literal(*v)))
            .collect(),
        secrets: vec![SecretRef {
            name: "DB_USERNAME".into(),
            value_from: crate::spec::deferred::Deferred::literal(
                "arn:aws:secretsmanager:eu-west-1:1:secret:demo/user",
            ),
        }],
        log_configuration: Some(LogConfiguration {
            log_driver: "awslogs".into(),
            options: BTreeMap::from([
                ("awslogs-group".into(), "/ecs/demo".into()),
                ("awslogs-stream-prefix".into(), name.into()),
            ]),
        }),
    }
}

/// Name, image, soft memory, variables beyond ENV and REGION_NAME, with a sidecar.
type Shape<'a> = (&'a str, &'a str, Option<u32>, Vec<(&'a str, &'a str)>, bool);

fn world() -> ImportedWorld {
    let java = "-Xmx700m -XX:MetaspaceSize=88m -XX:MaxMetaspaceSize=128m";
    let shaped: [Shape; 4] = [
        (
            "api",
            "org/api:1.0",
            Some(900),
            vec![("LOG_LEVEL", "WARN"), ("JAVA_OPTIONS", java)],
            false,
        ),
        (
            "web",
            "org/web:2.0",
            Some(900),
            vec![("LOG_LEVEL", "INFO"), ("JAVA_OPTIONS", java)],
            false,
        ),
        (
            "batch",
            "org/batch",
            None,
            vec![
                ("LOG_LEVEL", "INFO"),
                ("JAVA_OPTS", "-Xmx2g"),
                ("DB_PASSWORD", "hunter2"),
            ],
            false,
        ),
        (
            "proxy",
            "org/proxy:3",
            Some(900),
            vec![("LOG_LEVEL", "INFO"), ("JAVA_OPTIONS", java)],
            true,
        ),
    ];
    let mut services = Vec::new();
    let mut task_definitions = BTreeMap::new();
    for (name, image, soft, extra, sidecar) in shaped {
        // Template markers and quotes in a shared name and value must come out as they are.
        let mut env = vec![
            ("ENV", "demo"),
            ("REGION_NAME", "eu"),
            ("ODD{{KEY", "x}}y {% z %}\n\"q\" {#"),
        ];
        env.extend(extra);
        let mut containers = vec![container(name, image, soft, &env)];
        if sidecar {
            containers.push(container(
                "envoy",
                "envoyproxy/envoy:v1",
                Some(100),
                &[("X", "{{ y }}")],
            ));
        }
        let arn = format!("arn:aws:ecs:eu-west-1:1:task-definition/demo-{name}:3");
        task_definitions.insert(
            arn.clone(),
            TaskDefinition {
                family: format!("demo-{name}"),
                network_mode: "bridge".into(),
                requires_compatibilities: vec!["EC2".into()],
                task_role_arn: None,
                execution_role_arn: Some("arn:aws:iam::1:role/demo-exec".into()),
                container_definitions: containers,
            },
        );
        services.push(LiveService {
            name: name.into(),
            arn: format!("arn:aws:ecs:eu-west-1:1:service/demo-pvt/{name}"),
            status: "ACTIVE".into(),
            desired_count: if name == "batch" { 1 } else { 2 },
            running_count: 2,
            task_definition: arn,
            deployments: vec![],
            events: vec![],
            tags: BTreeMap::new(),
            problems: Vec::new(),
            placement: None,
        });
    }
    ImportedWorld {
        region: "eu-west-1".into(),
        cluster: LiveCluster {
            name: "demo-pvt".into(),
            arn: "arn:aws:ecs:eu-west-1:1:cluster/demo-pvt".into(),
            status: "ACTIVE".into(),
            tags: BTreeMap::from([("team".into(), "perf".into())]),
            capacity_providers: Vec::new(),
        },
        services,
        task_definitions,
        kafka: vec![],
        db: None,
        capacity_providers: Vec::new(),
    }
}

fn options() -> ImportOptions {
    ImportOptions {
        env: "demo".into(),
        owner: Some("ptf".into()),
        capacity: Some(("m6i.2xlarge".into(), 2)),
        template_dir: "../task-defs".into(),
    }
}

#[test]
fn the_written_env_renders_the_live_definitions() {
    let world = world();
    let imported = import(&world, &options());
    let yaml = &imported.env_yaml;
    assert_eq!(
        imported.templates.len(),
        2,
        "{yaml}{:#?}",
        imported.templates
    );
    // Defaults hold what three of four share; the fourth says what it lacks.
    assert!(
        yaml.contains("    memory: {hard: 1024, soft: 900}\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("    memory: {hard: 2048, soft: null}\n"),
        "{yaml}"
    );
    assert!(yaml.contains("    jvm: null\n"), "{yaml}");
    assert!(yaml.contains("    log_level: warn\n"), "{yaml}");
    assert!(yaml.contains("      JAVA_OPTS: \"-Xmx2g\"\n"), "{yaml}");
    assert!(yaml.contains("tags:\n  team: perf\n"), "{yaml}");
    for text in std::iter::once(yaml).chain(imported.templates.iter().map(|(_, t)| t)) {
        assert!(
            !text.contains("hunter2"),
            "a secret value was written:\n{text}"
        );
    }
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("`DB_PASSWORD` looks like a secret"))
    );
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("proxy: 1 more container"))
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let envs = dir.path().join("envs");
    let task_defs = dir.path().join("task-defs");
    std::fs::create_dir_all(&envs).expect("envs");
    std::fs::create_dir_all(&task_defs).expect("task-defs");
    for (name, text) in &imported.templates {
        std::fs::write(task_defs.join(name), text).expect("template");
    }
    let path = envs.join("demo.yaml");
    std::fs::write(&path, yaml).expect("env");
    let mut loader = crate::spec::Loader::with_root(Some(dir.path().to_path_buf()));
    let compiled = crate::compile::compile_env(&mut loader, &path, &[]);
    let rendered = loader.diagnostics.render(&loader.sources);
    let Some(compiled) = compiled else {
        panic!("{rendered}\n{yaml}");
    };
    assert!(!loader.diagnostics.has_errors(), "{rendered}");
    for live in &world.services {
        let desired = &compiled.desired.services[&live.name];
        assert_eq!(desired.desired_count, live.desired_count);
        let mut expected = world.task_definitions[&live.task_definition].clone();
        expected.container_definitions[0]
            .environment
            .remove("DB_PASSWORD");
        let got = desired
            .task_definition
            .resolve(&Outputs::new())
            .unwrap_or_else(|r| panic!("unresolved {r:?}"));
        assert_eq!(got, expected, "{}", live.name);
    }
}

#[test]
fn a_parked_service_is_imported_with_its_remembered_count() {
    let mut world = world();
    for s in &mut world.services {
        s.tags
            .insert(PARKED_COUNT_TAG.into(), s.desired_count.to_string());
        s.desired_count = 0;
    }
    let yaml = import(&world, &options()).env_yaml;
    assert!(yaml.contains("    count: 2\n"), "{yaml}");
    assert!(!yaml.contains("count: 0"), "{yaml}");
}
