//! The apply and destroy paths against moto, an independent implementation of the AWS APIs
//! (for ECS and RDS; MSK configurations are beyond what moto serves).
use std::sync::Arc;
use std::time::Duration;

use envctl::aws::{Clients, Connection};
use envctl::converge::{ApplyOptions, apply, plan, plan_destroy};
use envctl::exec::RealClock;
use envctl::plan::DiffOptions;
use envctl::session::Session;

#[path = "../support/moto.rs"]
mod moto_server;

use crate::{BASE_ENV, Test};

/// One EC2 Query call to moto (moto routes by the credential scope of the Authorization
/// header and does not check signatures); returns the response body.
async fn moto_ec2(endpoint: &str, params: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect moto");
    let body = format!("{params}&Version=2016-11-15");
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nAuthorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    raw
}

fn xml_value(xml: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let start = xml.find(&open).map(|i| i + open.len()).expect(tag);
    let end = xml[start..].find('<').expect("closing tag") + start;
    xml[start..end].to_string()
}

/// A VPC with two subnets in two zones: CreateDBSubnetGroup checks its subnets exist.
async fn moto_subnets(endpoint: &str) -> Vec<String> {
    let vpc = xml_value(
        &moto_ec2(endpoint, "Action=CreateVpc&CidrBlock=10.0.0.0%2F16").await,
        "vpcId",
    );
    let mut subnets = Vec::new();
    for (cidr, zone) in [
        ("10.0.1.0%2F24", "us-east-1a"),
        ("10.0.2.0%2F24", "us-east-1b"),
    ] {
        let out = moto_ec2(
            endpoint,
            &format!("Action=CreateSubnet&VpcId={vpc}&CidrBlock={cidr}&AvailabilityZone={zone}"),
        )
        .await;
        subnets.push(xml_value(&out, "subnetId"));
    }
    subnets
}

/// BASE_ENV without Kafka: an ECS cluster and service, an RDS writer, reader and group.
fn env_without_kafka() -> String {
    let start = BASE_ENV.find("kafka:\n").expect("kafka section");
    let end = BASE_ENV.find("services:\n").expect("services section");
    format!("{}{}", &BASE_ENV[..start], &BASE_ENV[end..]).replace("    kafka: main\n", "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_replan_and_destroy_against_moto() {
    if moto_server::require_moto().is_none() {
        return;
    }
    let server = moto_server::start_moto().await;
    let subnets = moto_subnets(&server.endpoint).await;
    let test = Test::new().file("env.yaml", &env_without_kafka());
    let mut loader = envctl::spec::Loader::new();
    // moto registers services but never places tasks (there are no container instances),
    // so the service runs zero tasks; everything else is exercised as against AWS.
    let c = match envctl::compile::compile_env(
        &mut loader,
        &test.path().join("env.yaml"),
        &[
            "services.*.count=0".to_string(),
            format!("network.subnets=[{}]", subnets.join(", ")),
        ],
    ) {
        Some(c) => c,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    };
    let clients = Clients::connect(&Connection {
        region: "us-east-1".into(),
        profile: None,
        endpoint_url: Some(server.endpoint.clone()),
        sandbox: true,
        no_sdk_retries: false,
    })
    .await;
    let session = Session::new(clients, Arc::new(RealClock), None);
    let state = tempfile::tempdir().unwrap();
    let mut options = ApplyOptions::new("moto", state.path());
    options.polls.ecs = (Duration::from_millis(200), Duration::from_millis(500));
    options.polls.ecs_deployment_first = Duration::from_millis(200);
    options.polls.delete_first.ecs_service = Duration::from_millis(200);
    options.polls.delete_first.msk_cluster = Duration::from_millis(200);
    options.polls.delete_first.db_instance = Duration::from_millis(200);
    options.polls.rds = (Duration::from_millis(200), Duration::from_millis(500));
    options.deadlines.ecs_deployment = Duration::from_secs(60);
    options.deadlines.rds_create = Duration::from_secs(60);
    options.deadlines.rds_delete = Duration::from_secs(60);
    options.deadlines.ecs_delete = Duration::from_secs(60);

    let planned = plan(&session, &c.desired, state.path(), &DiffOptions::default())
        .await
        .expect("plan against moto");
    assert_eq!(
        planned.plan.changes().count(),
        5,
        "{:#?}",
        planned.plan.actions
    );
    let report = apply(&session, &c.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());

    let planned = plan(&session, &c.desired, state.path(), &DiffOptions::default())
        .await
        .expect("replan");
    let left: Vec<_> = planned
        .plan
        .changes()
        .map(|a| (a.id.to_string(), a.changes.clone()))
        .collect();
    assert!(
        left.is_empty(),
        "no phantom diffs against moto either: {left:#?}"
    );

    let planned = plan_destroy(&session, &c.desired, state.path())
        .await
        .expect("destroy plan");
    let report = apply(&session, &c.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());
    let planned = plan_destroy(&session, &c.desired, state.path())
        .await
        .expect("destroy plan");
    let left: Vec<_> = planned.plan.changes().map(|a| a.id.to_string()).collect();
    assert!(left.is_empty(), "{left:?}");
}
