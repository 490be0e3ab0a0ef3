//! `envctl workload`: the demo workload of sandbox runs. It is a real load, not a stub: it
//! drives the sandbox's ECS API (DescribeServices on the env's cluster) from concurrent
//! users and writes what happened as a JMeter CSV result file, which `report` reads like any
//! JMeter run. Against AWS, playbooks run their real workload (JMeter) instead.
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;

use super::common;
use crate::aws::ecs;
use crate::cli::WorkloadArgs;

/// JMeter's default CSV columns (jmeter.properties `jmeter.save.saveservice.*` defaults).
const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

pub fn run(args: WorkloadArgs) -> anyhow::Result<ExitCode> {
    let cluster = std::env::var("ECS_CLUSTER").unwrap_or_else(|_| "default".into());
    let rt = common::runtime()?;
    rt.block_on(async {
        // The default chain and AWS_ENDPOINT_URL (the sandbox sets it for the workload).
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await;
        let ecs = aws_sdk_ecs::Client::new(&config);
        let demo = vec!["envctl-demo".to_string()];
        let rows = Arc::new(Mutex::new(Vec::<String>::new()));
        // The export model of report 004: memory grows with the records exported.
        if let Some(service) = &args.oom_service {
            let described = ecs::describe_services(&ecs, &cluster, std::slice::from_ref(service)).await.context("reading the service")?;
            let arn = described.first().map(|s| s.task_definition.clone()).filter(|a| !a.is_empty()).context("the service is not running")?;
            let td = ecs::describe_task_definition(&ecs, &arn).await.context("reading its task definition")?;
            let hard = td.container_definitions.first().map(|c| c.memory).unwrap_or(0);
            let needed = args.base_mib + args.records as f64 / 1e6 * args.mib_per_million;
            eprintln!("export of {} records needs ~{needed:.0} MiB; {service} may use {hard} MiB", args.records);
            if needed > f64::from(hard) {
                write_jtl(&args, &[format!("{},{},{},500,OutOfMemory,export 1-1,text,false,container killed: needs {needed:.0} MiB of {hard},0,0,1,1,,0,0,0", now_ms(), 0, args.label.first().map(String::as_str).unwrap_or("Export"))])?;
                eprintln!("{service} ran out of memory (modelled): exit 137");
                return Ok(ExitCode::from(137));
            }
        }
        let deadline = Instant::now() + Duration::from_secs_f64(args.duration.max(0.0));
        let mut users = tokio::task::JoinSet::new();
        for user in 1..=args.users.max(1) {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            let rows = rows.clone();
            let demo = demo.clone();
            let labels = args.label.clone();
            let think = Duration::from_millis(args.think_ms);
            let all = args.users.max(1);
            users.spawn(async move {
                let mut n = 0usize;
                while Instant::now() < deadline {
                    let label = &labels[n % labels.len().max(1)];
                    n += 1;
                    let start = now_ms();
                    let t = Instant::now();
                    let result = ecs::describe_services(&ecs, &cluster, &demo).await;
                    let elapsed = t.elapsed().as_millis();
                    let (code, ok, msg) = match &result {
                        Ok(_) => ("200", true, String::new()),
                        Err(e) => ("500", false, e.to_string().replace([',', '\n'], " ")),
                    };
                    if let Ok(mut rows) = rows.lock() {
                        rows.push(format!("{start},{elapsed},{label},{code},{},Users 1-{user},text,{ok},{msg},0,0,{all},{all},,{elapsed},0,0", if ok { "OK" } else { "Error" }));
                    }
                    tokio::time::sleep(think).await;
                }
            });
        }
        while users.join_next().await.is_some() {}
        let rows = rows.lock().map(|r| r.clone()).unwrap_or_default();
        write_jtl(&args, &rows)?;
        eprintln!("{} samples by {} users written to {}", rows.len(), args.users, args.jtl.display());
        Ok(ExitCode::SUCCESS)
    })
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn write_jtl(args: &WorkloadArgs, rows: &[String]) -> anyhow::Result<()> {
    if let Some(dir) = args.jtl.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(&args.jtl)
        .with_context(|| format!("writing {}", args.jtl.display()))?;
    writeln!(f, "{HEADER}")?;
    for r in rows {
        writeln!(f, "{r}")?;
    }
    Ok(())
}
