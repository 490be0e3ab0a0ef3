//! Resources with the env's names that envctl did not create: created here through the SDK
//! (no envctl tags), they must survive `apply`, `destroy` and `gc` untouched, and `plan` /
//! `apply` must refuse before any mutating call.
use envctl::converge::{
    ApplyOptions, ConvergeError, apply, gc_desired, plan, plan_destroy, plan_gc,
};
use envctl::plan::{DiffOptions, PlanError};

use crate::apply::{World, compiled};

/// The kinds of resource whose name can collide in `envs/pcp1.yaml`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Foreign {
    /// `pcp1-pvt` with a service `mod-users` running `pcp1-mod-users:1`, both someone
    /// else's.
    EcsCluster,
    /// `pcp1-db`.
    DbInstance,
    /// `pcp1-msk-tenant`.
    MskCluster,
}

const TD_FAMILY: &str = "other-team-users";

pub(crate) async fn create_foreign(world: &World, kind: Foreign) {
    let clients = &world.session.clients;
    let other = |k: &str, v: &str| aws_sdk_ecs::types::Tag::builder().key(k).value(v).build();
    match kind {
        Foreign::EcsCluster => {
            clients
                .ecs
                .create_cluster()
                .cluster_name("pcp1-pvt")
                .tags(other("team", "someone-else"))
                .send()
                .await
                .expect("foreign cluster");
            clients
                .ecs
                .register_task_definition()
                .family(TD_FAMILY)
                .container_definitions(
                    aws_sdk_ecs::types::ContainerDefinition::builder()
                        .name("app")
                        .image("nginx:1")
                        .memory(512)
                        .build(),
                )
                .send()
                .await
                .expect("foreign revision");
            clients
                .ecs
                .create_service()
                .cluster("pcp1-pvt")
                .service_name("mod-users")
                .task_definition(format!("{TD_FAMILY}:1"))
                .desired_count(1)
                .send()
                .await
                .expect("foreign service");
        }
        Foreign::DbInstance => {
            clients
                .rds
                .create_db_instance()
                .db_instance_identifier("pcp1-db")
                .db_instance_class("db.r6g.large")
                .engine("postgres")
                .allocated_storage(100)
                .master_username("other")
                .master_user_password("not-envctls")
                .send()
                .await
                .expect("foreign DB");
        }
        Foreign::MskCluster => {
            use aws_sdk_kafka::types::{BrokerNodeGroupInfo, ProvisionedRequest};
            clients
                .kafka
                .create_cluster_v2()
                .cluster_name("pcp1-msk-tenant")
                .provisioned(
                    ProvisionedRequest::builder()
                        .broker_node_group_info(
                            BrokerNodeGroupInfo::builder()
                                .instance_type("kafka.m5.large")
                                .client_subnets("subnet-a")
                                .client_subnets("subnet-b")
                                .build(),
                        )
                        .kafka_version("3.6.0")
                        .number_of_broker_nodes(2)
                        .build(),
                )
                .send()
                .await
                .expect("foreign MSK cluster");
        }
    }
}

/// The foreign resource still exists and still carries no envctl tag.
pub(crate) async fn assert_untouched(world: &World, kind: Foreign) {
    let clients = &world.session.clients;
    let tags = match kind {
        Foreign::EcsCluster => {
            let services = envctl::aws::ecs::describe_services(
                &clients.ecs,
                "pcp1-pvt",
                &["mod-users".to_string()],
            )
            .await
            .expect("describe");
            let service = services
                .iter()
                .find(|s| s.status == "ACTIVE")
                .expect("the foreign service is still there");
            assert!(
                service.task_definition.ends_with(&format!("{TD_FAMILY}:1")),
                "{}",
                service.task_definition
            );
            assert!(service.tags.keys().all(|k| !k.starts_with("envctl:")));
            envctl::aws::ecs::describe_cluster(&clients.ecs, "pcp1-pvt")
                .await
                .expect("describe")
                .filter(|c| c.status == "ACTIVE")
                .expect("the foreign cluster is still there")
                .tags
        }
        Foreign::DbInstance => {
            envctl::aws::rds::describe_instance(&clients.rds, "pcp1-db")
                .await
                .expect("describe")
                .expect("the foreign DB is still there")
                .tags
        }
        Foreign::MskCluster => {
            envctl::aws::kafka::list_clusters(&clients.kafka)
                .await
                .expect("list")
                .into_iter()
                .find(|k| k.name == "pcp1-msk-tenant")
                .expect("the foreign MSK cluster is still there")
                .tags
        }
    };
    assert!(
        tags.keys().all(|k| !k.starts_with("envctl:")),
        "{kind:?} was tagged: {tags:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_resource_with_the_envs_name_is_a_conflict_and_survives_apply_destroy_and_gc() {
    for kind in [
        Foreign::EcsCluster,
        Foreign::DbInstance,
        Foreign::MskCluster,
    ] {
        let world = World::new().await;
        let c = compiled("pcp1", &[]);
        create_foreign(&world, kind).await;
        world.sandbox().reset_stats();

        // plan and apply (which plans first) refuse, before any mutating call.
        let refused = plan(
            &world.session,
            &c.desired,
            &world.state_dir(),
            &DiffOptions::default(),
        )
        .await;
        let conflicts = match refused {
            Err(ConvergeError::Plan(PlanError::Conflicts(conflicts))) => conflicts,
            Err(e) => panic!("{kind:?}: {e}"),
            Ok(p) => panic!(
                "{kind:?}: planned {:#?}",
                p.plan.changes().collect::<Vec<_>>()
            ),
        };
        let message = PlanError::Conflicts(conflicts.clone()).to_string();
        assert!(message.contains("rename"), "{message}");
        assert!(message.contains("--adopt"), "{message}");
        let named = match kind {
            Foreign::EcsCluster => "ecs/cluster",
            Foreign::DbInstance => "rds/instance/pcp1-db",
            Foreign::MskCluster => "kafka/cluster/tenant",
        };
        assert!(message.contains(named), "{kind:?}: {message}");
        assert_eq!(world.mutating_calls(), 0, "{kind:?}");

        // destroy deletes only what the env owns: here, nothing.
        let destroy = plan_destroy(&world.session, &c.desired, &world.state_dir())
            .await
            .expect("destroy plans");
        let report = world.apply(&c.desired, destroy, "destroy").await;
        assert!(report.succeeded(), "{}", report.render());

        // gc deletes only what carries envctl's tags.
        let planned = plan_gc(&world.session, |t| {
            t.get("envctl:tool").map(String::as_str) == Some("envctl")
        })
        .await
        .expect("inventory");
        let report = apply(
            &world.session,
            &gc_desired("us-east-1"),
            planned,
            &ApplyOptions::new("gc", world.state_dir()),
        )
        .await
        .expect("a valid plan");
        assert!(report.succeeded(), "{}", report.render());

        assert_eq!(world.mutating_calls(), 0, "{kind:?}");
        assert_untouched(&world, kind).await;
    }
}

/// Through the binary: `plan` and `apply --yes` exit 1 naming the foreign DB and the two
/// ways out, and create nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_to_plan_or_apply_over_a_foreign_db() {
    use envctl::aws::{Clients, Connection};
    let sandbox = envctl_sandbox::Sandbox::start(envctl_sandbox::SandboxConfig::default())
        .await
        .expect("sandbox starts");
    let clients = Clients::connect(&Connection {
        region: "us-east-1".into(),
        profile: None,
        endpoint_url: Some(sandbox.endpoint_url()),
        sandbox: true,
        no_sdk_retries: false,
    })
    .await;
    clients
        .rds
        .create_db_instance()
        .db_instance_identifier("test-db")
        .db_instance_class("db.r6g.large")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("other")
        .master_user_password("not-envctls")
        .send()
        .await
        .expect("foreign DB");
    sandbox.reset_stats();
    let endpoint = sandbox.endpoint_url();
    for command in ["plan", "apply"] {
        let mut args = vec![command, "env.yaml", "--endpoint-url", &endpoint];
        if command == "apply" {
            args.push("--yes");
        }
        let out = tokio::task::block_in_place(|| {
            crate::Test::new()
                .file("env.yaml", crate::BASE_ENV)
                .args(args.clone())
                .env("AWS_ACCESS_KEY_ID", Some("sandbox"))
                .env("AWS_SECRET_ACCESS_KEY", Some("sandbox"))
                .env("AWS_EC2_METADATA_DISABLED", Some("true"))
                .env("AWS_PROFILE", None)
                .run()
        });
        assert_eq!(out.code, 1, "{command}: {}\n{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("rds/instance/test-db")
                && out.stderr.contains("rename")
                && out.stderr.contains("--adopt"),
            "{command}: {}",
            out.stderr
        );
    }
    assert_eq!(sandbox.stats().mutating_calls(), 0);
}

/// A revision in one of the env's families that someone else registered (no envctl tags)
/// and runs in a service of their own: `destroy` deregisters only the env's revisions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_deletes_only_the_revisions_the_env_registered() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let ecs = &world.session.clients.ecs;
    let foreign = ecs
        .register_task_definition()
        .family("pcp1-mod-users")
        .container_definitions(
            aws_sdk_ecs::types::ContainerDefinition::builder()
                .name("app")
                .image("nginx:1")
                .memory(512)
                .build(),
        )
        .send()
        .await
        .expect("foreign revision")
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("an ARN")
        .to_string();
    ecs.create_service()
        .cluster("pcp1-pvt")
        .service_name("reports")
        .task_definition(&foreign)
        .desired_count(1)
        .send()
        .await
        .expect("foreign service");
    let destroy = plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("destroy plans");
    world.sandbox().reset_stats();
    let report = world.apply(&c.desired, destroy, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    // One revision per service of the env, each registered by envctl; not the foreign one.
    assert_eq!(
        world
            .sandbox()
            .stats()
            .get("ecs", "DeregisterTaskDefinition")
            .count,
        c.desired.services.len() as u64
    );
    let td = ecs
        .describe_task_definition()
        .task_definition(&foreign)
        .send()
        .await
        .expect("the foreign revision is still there");
    assert_eq!(
        td.task_definition()
            .and_then(|t| t.status())
            .map(|s| s.as_str()),
        Some("ACTIVE")
    );
}

/// Issue 26 item 13: the sandbox's world under the state dir is as private as the rest of
/// it (docs/ownership.md): `.envctl/sandbox/` 0700, `world.json` 0600, even when the
/// directory existed wider.
#[test]
fn the_sandbox_world_is_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let test = crate::Test::new().file("env.yaml", crate::BASE_ENV);
    std::fs::create_dir_all(test.path().join(".envctl/sandbox")).unwrap();
    let wide = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(test.path().join(".envctl/sandbox"), wide).unwrap();
    let (out, dir) = test
        .args(["plan", "env.yaml", "--sandbox"])
        .run_keeping_files();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sandbox = dir.path().join(".envctl/sandbox");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sandbox), 0o700);
    assert_eq!(mode(&sandbox.join("world.json")), 0o600);
}
