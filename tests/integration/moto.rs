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

use crate::{BASE_CAPACITY, BASE_ENV, Test};

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

/// envctl's clients pointed at an endpoint on loopback (moto or the sandbox).
async fn clients_at(endpoint: &str) -> Clients {
    Clients::connect(&Connection {
        region: "us-east-1".into(),
        profile: None,
        endpoint_url: Some(endpoint.to_string()),
        sandbox: true,
        no_sdk_retries: false,
    })
    .await
}

/// BASE_ENV without Kafka: an ECS cluster and service, an RDS writer, reader and group.
/// On instances registered elsewhere: moto implements CreateCapacityProvider for Auto
/// Scaling group providers only.
fn env_without_kafka() -> String {
    let start = BASE_ENV.find("kafka:\n").expect("kafka section");
    let end = BASE_ENV.find("services:\n").expect("services section");
    format!("{}{}", &BASE_ENV[..start], &BASE_ENV[end..])
        .replace("    kafka: main\n", "")
        .replace(
            BASE_CAPACITY,
            "  capacity: {instance_type: m6i.2xlarge, instances: 2}\n",
        )
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
    let clients = clients_at(&server.endpoint).await;
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
    // The parameter group, the writer, its reader, the awslogs group the task definitions
    // name and the load engines' (envctl creates them: the execution role need not), the
    // cluster and the service.
    assert_eq!(
        planned.plan.changes().count(),
        7,
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

/// What the capacity wait (and preflight) read of registered container instances, against
/// moto's own RegisterContainerInstance: ACTIVE status, the zone from the
/// `ecs.availability-zone` attribute, registered and remaining CPU and memory, and the
/// agent's reserved ports as in use. moto sizes instances itself (4096 CPU units, 7482 MiB,
/// whatever the type) and places no tasks, so remaining equals registered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_container_instances_read_as_the_capacity_wait_sees_them_against_moto() {
    if moto_server::require_moto().is_none() {
        return;
    }
    let server = moto_server::start_moto().await;
    let clients = clients_at(&server.endpoint).await;
    let tags = std::collections::BTreeMap::new();
    envctl::aws::ecs::create_cluster(&clients.ecs, "c", &tags)
        .await
        .expect("cluster");
    for zone in ["us-east-1a", "us-east-1b"] {
        let run = moto_ec2(
            &server.endpoint,
            &format!("Action=RunInstances&ImageId=ami-12c6146b&MinCount=1&MaxCount=1&InstanceType=m6i.2xlarge&Placement.AvailabilityZone={zone}"),
        )
        .await;
        let instance = xml_value(&run, "instanceId");
        let document = serde_json::json!({"instanceId": instance, "availabilityZone": zone});
        clients
            .ecs
            .register_container_instance()
            .cluster("c")
            .instance_identity_document(document.to_string())
            .send()
            .await
            .expect("RegisterContainerInstance");
    }
    let read = envctl::aws::ecs::cluster_capacity(&clients.ecs, "c")
        .await
        .expect("read");
    assert_eq!(read.len(), 2);
    let mut zones: Vec<String> = read.iter().filter_map(|i| i.zone.clone()).collect();
    zones.sort();
    assert_eq!(zones, vec!["us-east-1a", "us-east-1b"]);
    for i in &read {
        assert_eq!(i.status, "ACTIVE");
        assert_eq!((i.registered_cpu, i.registered_memory), (4096, 7482));
        assert_eq!((i.remaining_cpu, i.remaining_memory), (4096, 7482));
        let placed = envctl::preflight::as_placed(i);
        assert_eq!((placed.used_cpu, placed.used_memory_mib), (0, 0));
        let ports: Vec<u16> = i.ports_in_use.iter().map(|p| p.port).collect();
        for agent in [22, 2375, 2376, 51678, 51679] {
            assert!(ports.contains(&agent), "{ports:?}");
        }
    }
}

/// The lock's S3 calls, step by step, as outcomes: the same script against the sandbox and
/// against moto must read the same, and as S3 documents it.
async fn conditional_write_script(s3: &aws_sdk_s3::Client) -> Vec<String> {
    use envctl::aws::s3::{self, Conditional};
    let (bucket, key) = ("ci-locks", "envctl/test.lock.json");
    s3.create_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("bucket");
    let show = |c: Result<Conditional, envctl::aws::AwsError>| match c {
        Ok(Conditional::Done { .. }) => "done".to_string(),
        Ok(Conditional::PreconditionFailed) => "412".to_string(),
        Ok(Conditional::Missing) => "404".to_string(),
        Err(e) => format!("error {e}"),
    };
    let etag = |c: &Result<Conditional, envctl::aws::AwsError>| match c {
        Ok(Conditional::Done { etag }) => etag.clone(),
        _ => String::new(),
    };
    let mut out = Vec::new();
    let first = s3::put_if_absent(s3, bucket, key, b"{\"v\":1}".to_vec()).await;
    let v1 = etag(&first);
    out.push(format!("create: {}", show(first)));
    let again = s3::put_if_absent(s3, bucket, key, b"{\"v\":2}".to_vec()).await;
    out.push(format!("create again: {}", show(again)));
    let renewed = s3::put_if_match(s3, bucket, key, &v1, b"{\"v\":3}".to_vec()).await;
    let v3 = etag(&renewed);
    out.push(format!("renew: {}", show(renewed)));
    let stale = s3::put_if_match(s3, bucket, key, &v1, b"{\"v\":4}".to_vec()).await;
    out.push(format!("renew with the old etag: {}", show(stale)));
    let head = s3::head(s3, bucket, key).await.expect("head");
    out.push(format!(
        "head is the renewed version: {}",
        head.as_deref() == Some(v3.as_str())
    ));
    let got = s3::get(s3, bucket, key)
        .await
        .expect("get")
        .expect("object");
    out.push(format!(
        "get: {} {}",
        String::from_utf8_lossy(&got.body),
        got.etag == v3
    ));
    let stale_delete = s3::delete_if_match(s3, bucket, key, &v1).await;
    out.push(format!("delete with the old etag: {}", show(stale_delete)));
    let delete = s3::delete_if_match(s3, bucket, key, &v3).await;
    out.push(format!("delete: {}", show(delete)));
    out.push(format!(
        "head after delete: {:?}",
        s3::head(s3, bucket, key).await.expect("head")
    ));
    let gone = s3::delete_if_match(s3, bucket, key, &v3).await;
    out.push(format!("delete a missing key: {}", show(gone)));
    let renew_gone = s3::put_if_match(s3, bucket, key, &v3, b"{}".to_vec()).await;
    out.push(format!("renew a missing key: {}", show(renew_gone)));
    out
}

/// The lock itself on each store: a second holder is refused, naming the first; unlock
/// refuses another run's lease and breaks the named one.
async fn lock_script(s3: &aws_sdk_s3::Client) -> Vec<String> {
    use envctl::lock::{Holder, LockError, LockLocation};
    let location = LockLocation::parse_url("s3://ci-locks/envctl/").expect("url");
    let store = envctl::lock::store_at(&location, s3);
    let holder = |run: &str| Holder {
        owner: format!("{run}@ci"),
        host: format!("{run}-host"),
        pid: 1,
        run_id: run.to_string(),
    };
    let ttl = Duration::from_secs(600);
    let mut out = Vec::new();
    let first = store
        .acquire("qcp1", &holder("r1"), ttl)
        .await
        .expect("r1 locks");
    match store.acquire("qcp1", &holder("r2"), ttl).await {
        Err(LockError::Held { holder, .. }) => {
            out.push(format!("r2 refused, held by {}", holder.run_id))
        }
        other => out.push(format!("r2: unexpected {other:?}")),
    }
    let mut first = first;
    out.push(format!("r1 renews: {:?}", first.renew(ttl).await.is_ok()));
    match store.force_unlock("qcp1", "r9").await {
        Err(LockError::OtherRun { holder, .. }) => {
            out.push(format!("unlock r9 refused, held by {}", holder.run_id))
        }
        other => out.push(format!("unlock r9: unexpected {other:?}")),
    }
    let broken = store.force_unlock("qcp1", "r1").await;
    out.push(format!("unlock r1: {:?}", broken.map(|l| l.run_id).ok()));
    match first.renew(ttl).await {
        // Deleted by unlock (Broken), or already taken by r2 (Lost): the lease is gone.
        Err(LockError::Lost { .. } | LockError::Broken { .. }) => {
            out.push("r1 renewal: lost".into())
        }
        other => out.push(format!("r1 renewal: unexpected {other:?}")),
    }
    let second = store
        .acquire("qcp1", &holder("r2"), ttl)
        .await
        .expect("r2 locks once it is free");
    out.push(format!("r2 holds: {}", second.lease().run_id));
    second.release().await.expect("release");
    out.push(format!(
        "after release: {:?}",
        envctl::aws::s3::head(s3, "ci-locks", "envctl/qcp1.lock.json")
            .await
            .expect("head")
    ));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_conditional_writes_and_the_lock_agree_between_the_sandbox_and_moto() {
    if moto_server::require_moto().is_none() {
        return;
    }
    let server = moto_server::start_moto().await;
    let sandbox = envctl_sandbox::Sandbox::start(envctl_sandbox::SandboxConfig::default())
        .await
        .expect("sandbox");
    let on_moto = clients_at(&server.endpoint).await.s3;
    let on_sandbox = clients_at(&sandbox.endpoint_url()).await.s3;
    let expected = vec![
        "create: done",
        "create again: 412",
        "renew: done",
        "renew with the old etag: 412",
        "head is the renewed version: true",
        "get: {\"v\":3} true",
        "delete with the old etag: 412",
        "delete: done",
        "head after delete: None",
        "delete a missing key: 404",
        "renew a missing key: 404",
    ];
    assert_eq!(conditional_write_script(&on_moto).await, expected, "moto");
    assert_eq!(
        conditional_write_script(&on_sandbox).await,
        expected,
        "sandbox"
    );
    let expected = vec![
        "r2 refused, held by r1",
        "r1 renews: true",
        "unlock r9 refused, held by r1",
        "unlock r1: Some(\"r1\")",
        "r1 renewal: lost",
        "r2 holds: r2",
        "after release: None",
    ];
    assert_eq!(lock_script(&on_moto).await, expected, "moto");
    assert_eq!(lock_script(&on_sandbox).await, expected, "sandbox");
}
