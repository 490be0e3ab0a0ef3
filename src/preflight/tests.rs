use std::path::PathBuf;

use envctl_aws_model::placement::{AGENT_RESERVED_PORTS, HostPort};

use super::*;
use crate::compile::{Compiled, compile_env};
use crate::spec::Loader;

/// `env` is a name under envs/, or a path from the repository's root.
fn compiled(env: &str, sets: &[&str]) -> (Compiled, Loader) {
    let mut loader = Loader::new();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = if env.contains('/') {
        root.join(env)
    } else {
        root.join("envs").join(format!("{env}.yaml"))
    };
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match compile_env(&mut loader, &path, &sets) {
        Some(c) => (c, loader),
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

fn engine(version: &str, default: bool) -> EngineOffer {
    let major = version.split('.').next().unwrap_or(version);
    EngineOffer {
        version: version.into(),
        family: format!("postgres{major}"),
        default,
    }
}

/// An account that offers what pcp1 needs.
fn offer() -> Offer {
    Offer {
        kafka_versions: Some(vec![
            "3.6.0".into(),
            "3.7.x".into(),
            "3.7.x.kraft".into(),
            "3.8.x".into(),
            "3.8.x.kraft".into(),
        ]),
        engine_versions: Some(vec![
            engine("16.6", false),
            engine("16.8", true),
            engine("17.4", true),
        ]),
        orderable_classes: Some(vec!["db.r6g.xlarge".into(), "db.r6g.2xlarge".into()]),
        container_instances: None,
        running_tasks: Default::default(),
    }
}

/// (code, line) of every finding, rendered so a failure shows the whole message.
fn findings(env: &str, sets: &[&str], offer: &Offer) -> Vec<(String, usize)> {
    let (c, loader) = compiled(env, sets);
    let diags = check(&c.loaded.spec, &c.desired, offer);
    diags
        .records(&loader.sources)
        .into_iter()
        .map(|r| (r.code.to_string(), r.line as usize))
        .collect()
}

fn codes(f: &[(String, usize)]) -> Vec<&str> {
    f.iter().map(|(c, _)| c.as_str()).collect()
}

#[test]
fn pcp1_passes_against_an_account_that_offers_it() {
    assert_eq!(findings("pcp1", &[], &offer()), vec![]);
}

#[test]
fn a_kafka_version_the_account_does_not_offer_names_the_env_line_and_the_offered_ones() {
    let f = findings("pcp1", &["kafka.tenant.version=\"3.9.x\""], &offer());
    assert_eq!(codes(&f), vec!["preflight-kafka-version"]);
}

#[test]
fn a_deprecated_postgres_minor_is_refused_and_a_major_resolves_to_the_default() {
    let f = findings("pcp1", &["rds.writer.engine_version=\"16.3\""], &offer());
    assert_eq!(codes(&f), vec!["preflight-engine-version"]);
    assert_eq!(
        offer()
            .resolve_engine_version(Some("16"))
            .map(|o| o.version.as_str()),
        Some("16.8")
    );
    assert_eq!(
        offer()
            .resolve_engine_version(None)
            .map(|o| o.version.as_str()),
        Some("17.4")
    );
}

#[test]
fn a_class_not_orderable_is_reported_at_the_class() {
    let f = findings("pcp1", &["rds.writer.class=db.r5.large"], &offer());
    assert_eq!(codes(&f), vec!["preflight-instance-class"]);
}

#[test]
fn the_parameter_family_is_the_one_rds_reports_for_the_resolved_version() {
    // envctl derives postgres<major>; RDS's DescribeDBEngineVersions is the authority (a
    // derived family is not guaranteed to stay right, cloud-gov/aws-broker#283).
    let mut offer = offer();
    if let Some(v) = offer.engine_versions.as_mut() {
        for e in v.iter_mut() {
            e.family = format!("{}-next", e.family);
        }
    }
    let f = findings("pcp1", &[], &offer);
    assert_eq!(codes(&f), vec!["preflight-parameter-family"]);
}

#[test]
fn broker_storage_past_msk_limits_is_refused() {
    let f = findings("pcp1", &["kafka.tenant.storage_gb=20000"], &offer());
    assert_eq!(codes(&f), vec!["preflight-kafka-storage"]);
}

#[test]
fn subnets_must_cover_the_zones_brokers_and_rds_need() {
    let f = findings(
        "pcp1",
        &["network.subnets=[subnet-0a1b2c3d4e5f00001, subnet-0a1b2c3d4e5f00001]"],
        &offer(),
    );
    assert_eq!(codes(&f), vec!["preflight-subnets"]);
}

#[test]
fn role_and_secret_arns_are_checked_by_shape_region_and_account() {
    let f = findings(
        "pcp1",
        &["ecs.execution_role=arn:aws:iam::123:role/x"],
        &offer(),
    );
    assert_eq!(codes(&f), vec!["preflight-role-arn"]);
    let f = findings(
        "pcp1",
        &[
            "services.mod-users.secrets.DB_PASSWORD=arn:aws:secretsmanager:eu-west-1:123456789012:secret:x",
        ],
        &offer(),
    );
    assert_eq!(codes(&f), vec!["preflight-secret-region"]);
    let f = findings(
        "pcp1",
        &[
            "services.mod-users.secrets.DB_PASSWORD=arn:aws:secretsmanager:us-east-1:999999999999:secret:x",
        ],
        &offer(),
    );
    assert_eq!(codes(&f), vec!["preflight-secret-account"]);
    let f = findings(
        "pcp1",
        &["services.mod-users.secrets.DB_PASSWORD=pcp1/db-password"],
        &offer(),
    );
    assert_eq!(codes(&f), vec!["preflight-secret-arn"]);
}

/// `n` m6i.2xlarge container instances (pcp1's type) with `status` and, of each, `left`
/// (CPU units, MiB) remaining.
fn registered(n: usize, status: &str, left: Option<(i32, i32)>) -> Vec<InstanceCapacity> {
    registered_of("m6i.2xlarge", n, status, left)
}

/// `n` container instances of `instance_type`, as `registered` describes them; only the
/// agent's reserved ports are in use.
fn registered_of(
    instance_type: &str,
    n: usize,
    status: &str,
    left: Option<(i32, i32)>,
) -> Vec<InstanceCapacity> {
    let size = catalog::ec2_instance(instance_type).expect("a catalogue type");
    let (cpu, memory) = (size.cpu_units() as i32, size.task_memory_mib() as i32);
    let (remaining_cpu, remaining_memory) = left.unwrap_or((cpu, memory));
    (0..n)
        .map(|i| InstanceCapacity {
            arn: format!("arn:aws:ecs:us-east-1:123456789012:container-instance/pcp1-pvt/{i:032}"),
            status: status.into(),
            zone: Some(format!("us-east-1{}", ['a', 'b'][i % 2])),
            registered_cpu: cpu,
            registered_memory: memory,
            remaining_cpu,
            remaining_memory,
            ports_in_use: AGENT_RESERVED_PORTS.map(HostPort::tcp).into(),
        })
        .collect()
}

/// (code, line, message + hint) of each finding for pcp1.
/// pcp1 on instances registered by something else: the form preflight checks instances for.
const PCP1_ON_INSTANCES: &str = "tests/fixtures/pcp1-instances.yaml";

fn messages(offer: &Offer) -> Vec<(String, usize, String)> {
    messages_of(PCP1_ON_INSTANCES, offer)
}

/// (code, line, message + hint) of each finding for `env`.
fn messages_of(env: &str, offer: &Offer) -> Vec<(String, usize, String)> {
    let (c, loader) = compiled(env, &[]);
    check(&c.loaded.spec, &c.desired, offer)
        .records(&loader.sources)
        .into_iter()
        .map(|r| {
            let text = format!("{} / {}", r.message, r.hint.clone().unwrap_or_default());
            (r.code.to_string(), r.line as usize, text)
        })
        .collect()
}

fn with_instances(instances: Vec<InstanceCapacity>) -> Offer {
    Offer {
        container_instances: Some(instances),
        ..offer()
    }
}

#[test]
fn enough_registered_instances_with_room_pass() {
    assert_eq!(
        messages(&with_instances(registered(10, "ACTIVE", None))),
        vec![]
    );
}

#[test]
fn fewer_active_instances_than_the_env_asks_for_is_an_error_at_its_instances_line() {
    let mut instances = registered(9, "ACTIVE", None);
    // A draining instance takes no new tasks: it does not count.
    instances.extend(registered(1, "DRAINING", None));
    let found = messages(&with_instances(instances));
    let (code, line, text) = &found[0];
    assert_eq!(
        (code.as_str(), *line),
        ("preflight-capacity-instances", 8),
        "{found:?}"
    );
    assert!(
        text.contains("9 ACTIVE") && text.contains("asks for 10"),
        "{text}"
    );
    assert!(text.contains("register 1 more m6i.2xlarge"), "{text}");
}

/// The text of `found`'s one finding, asserted to be `preflight-capacity-remaining` at the
/// env's `instances` line `line`.
fn only_remaining_room_finding(found: &[(String, usize, String)], line: usize) -> &str {
    assert_eq!(found.len(), 1, "{found:?}");
    let (code, at, text) = &found[0];
    assert_eq!(
        (code.as_str(), *at),
        ("preflight-capacity-remaining", line),
        "{text}"
    );
    text
}

#[test]
fn instances_registered_but_full_name_the_services_that_do_not_fit() {
    // Ten instances, each with all its CPU but 1 GiB left: other workloads hold the rest.
    let found = messages(&with_instances(registered(
        10,
        "ACTIVE",
        Some((8192, 1024)),
    )));
    let text = only_remaining_room_finding(&found, 8);
    assert!(text.contains("insufficient memory"), "{text}");
    assert!(text.contains("mod-inventory-storage"), "{text}");
    assert!(text.contains("10 registered; all tasks fit on"), "{text}");
    assert!(text.contains("has insufficient memory available"), "{text}");
}

/// On an env that already runs, its own tasks are out of the instances' remaining
/// resources: they are not placed a second time (a full cluster running exactly the env
/// passes), and only the tasks still to start must fit.
#[test]
fn tasks_the_env_already_runs_are_not_placed_twice() {
    let (c, _) = compiled(PCP1_ON_INSTANCES, &[]);
    let full = registered(10, "ACTIVE", Some((8192, 1024)));
    let mut offer = with_instances(full);
    offer.running_tasks = c
        .desired
        .services
        .iter()
        .map(|(name, s)| (name.clone(), s.desired_count))
        .collect();
    assert_eq!(messages(&offer), vec![], "every task already runs");

    // One service scaled up beyond what runs: its new tasks must still fit, and do not.
    let (name, _) = c
        .desired
        .services
        .iter()
        .max_by_key(|(_, s)| s.desired_count)
        .expect("pcp1 has services");
    offer.running_tasks.insert(name.clone(), 0);
    let found = messages(&offer);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].2.contains(name.as_str()), "{found:?}");
}

/// kafka-omb's OMB workers run in host mode on port 8080, one per instance of its five.
/// Another task already holds 8080 on one instance: CPU and memory are plenty everywhere,
/// but one worker has no instance left whose port is free.
#[test]
fn a_host_port_in_use_on_an_instance_keeps_a_host_mode_task_off_it() {
    let mut instances = registered_of("c6i.4xlarge", 5, "ACTIVE", None);
    assert_eq!(
        messages_of("kafka-omb", &with_instances(instances.clone())),
        vec![]
    );
    instances[2].ports_in_use.insert(HostPort::tcp(8080));
    let found = messages_of("kafka-omb", &with_instances(instances.clone()));
    let text = only_remaining_room_finding(&found, 16);
    assert!(text.starts_with("1 of 5 tasks do not fit"), "{text}");
    assert!(
        text.contains("omb-worker 1 of 5, host port taken"),
        "{text}"
    );
    assert!(text.contains("5 registered; all tasks fit on 6"), "{text}");
    assert!(
        text.contains("is already using a port required by your task"),
        "{text}"
    );

    // The same port over UDP is another port: the workers map 8080/tcp.
    instances[2].ports_in_use.remove(&HostPort::tcp(8080));
    instances[2].ports_in_use.insert(HostPort::udp(8080));
    assert_eq!(messages_of("kafka-omb", &with_instances(instances)), vec![]);
}
