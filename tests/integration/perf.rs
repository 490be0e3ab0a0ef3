//! Regression tests of envctl's performance figures that are deterministic: AWS call
//! counts and simulated seconds on the simulated sandbox, for the 144-service
//! envs/perf-144.yaml. Wall and CPU times are only printed, by `cargo bench --bench perf`
//! (docs/performance.md); the measurements themselves are shared with it.
use envctl::model::DesiredState;

#[allow(dead_code)]
#[path = "../../benches/support/perf_env.rs"]
mod perf_env;
#[allow(dead_code)]
#[path = "../../benches/support/perf_measure.rs"]
mod perf_measure;

use perf_measure::{
    TERRAFORM_PARALLELISM, Timeline, apply_bound_secs, apply_ecs_phase, compile, converged,
    mutating_ops, per_resource_refresh, plan_calls, repo, switch_calls, task_start_secs,
};

fn perf_144(sets: &[&str]) -> DesiredState {
    compile(&repo().join("envs/perf-144.yaml"), sets).desired
}

/// Issue 26 item 14: the benchmark's generated envs must stay valid as validate and the
/// sandbox grow stricter (Kafka 2.8.0 past end of support, postgres `16.3`, a task-defs
/// symlink outside the project all broke `cargo bench --bench perf`), and the shipped
/// perf-144 must be what the generator writes, so that fixing one fixes both.
#[test]
fn the_generated_perf_envs_compile_and_perf_144_is_generated() {
    let dir = tempfile::tempdir().expect("a temp dir");
    for n in [144, 1_000] {
        let path =
            perf_measure::write_env(dir.path(), &format!("perf-{n}"), &perf_env::perf_env(n))
                .expect("write the env");
        let compiled = compile(&path, &[]);
        assert_eq!(compiled.desired.services.len(), n);
    }
    let shipped = std::fs::read_to_string(repo().join("envs/perf-144.yaml")).expect("perf-144");
    assert_eq!(
        shipped,
        perf_env::perf_env(144),
        "envs/perf-144.yaml differs from `cargo run --example gen_perf_env -- 144`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_of_144_services_reads_in_batches_not_per_resource() {
    let desired = perf_144(&[]);
    let world = converged(&desired, false).await;
    let (stats, planned) = plan_calls(&world, &desired).await;
    assert!(!planned.plan.has_changes(), "the env is converged");
    // plan_calls_144: ListServices by 100, DescribeServices by 10, one call per data store
    // kind (the writer's master secret and the two awslogs groups, the services' and the
    // load engines', each with its tags included: 5 of 30); immutable things from the cache.
    assert!(
        stats.total() <= 31,
        "plan_calls_144 = {}: {:?}",
        stats.total(),
        stats.operations
    );

    world.sandbox().reset_stats();
    let issued = per_resource_refresh(
        &world.session,
        &desired.cluster.name,
        &planned.live,
        TERRAFORM_PARALLELISM,
    )
    .await
    .expect("the reference refresh");
    let counted = world.sandbox().stats().total();
    assert_eq!(counted, issued, "every call issued reached the sandbox");
    // plan_calls_per_resource_144: 144 services + 144 task definitions + 1 MSK cluster
    // + 2 DB instances.
    assert!(counted >= 288, "plan_calls_per_resource_144 = {counted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_one_services_log_level_in_144_is_two_mutating_calls() {
    let desired = perf_144(&[]);
    let world = converged(&desired, true).await;
    let after = perf_144(&["services.mod-perf-0000.log_level=warn"]);
    let stats = switch_calls(&world, &after).await;
    // switch_calls_one_service: one RegisterTaskDefinition, one UpdateService.
    assert_eq!(stats.mutating_calls(), 2, "{:?}", mutating_ops(&stats));
}

/// The scheduler holds a participant guard through its first launch pass (without it, the
/// simulated clock jumped once the first service slept, before the other 143 launched: 7
/// failures in 30 under load, 173 s and 213 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_apply_of_144_services_is_within_5_percent_of_the_token_bucket_bound() {
    let desired = perf_144(&[]);
    let (report, log, started) = apply_ecs_phase(&desired).await;
    let bound = apply_bound_secs(desired.services.len() as u64, task_start_secs());
    assert_eq!(bound, 164.0, "124 s of registrations + a 40 s task start");
    let timeline = Timeline::of(&log, started);
    // apply_sim_s_144 <= 1.05 * apply_bound_s_144.
    assert!(
        report.elapsed_secs <= 1.05 * bound,
        "apply_sim_s_144 = {:.1} s, bound {bound:.1} s: {}; {}",
        report.elapsed_secs,
        timeline.render(),
        perf_measure::launches(&report)
    );
    // apply_describe_calls_144: the deployment waits share their looks, up to ten services
    // per DescribeServices. Before, each wait sent its own: 144 probes (159 calls with the
    // plan's reads).
    // The plan's reads come before the first CreateService, the deployment probes after.
    let first_create = log
        .iter()
        .position(|r| r.operation == "CreateService")
        .unwrap_or(log.len());
    let is_describe = |r: &&envctl_sandbox::RequestRecord| {
        r.service == "ecs" && r.operation == "DescribeServices"
    };
    let describes = log.iter().filter(is_describe).count();
    let probes: Vec<f64> = log[first_create..]
        .iter()
        .filter(is_describe)
        .map(|r| r.at)
        .collect();
    let mut rounds = probes.clone();
    rounds.dedup_by(|a, b| (*a - *b).abs() < 1.0);
    let services = desired.services.len();
    eprintln!(
        "apply_sim_s_144 = {:.1}, apply_describe_calls_144 = {} ({} probes in {} rounds)",
        report.elapsed_secs,
        describes,
        probes.len(),
        rounds.len()
    );
    assert_eq!(
        describes - probes.len(),
        services.div_ceil(10),
        "the plan reads ten services per call"
    );
    assert!(
        probes.len() <= 2 * services.div_ceil(10),
        "{} deployment probes in {} rounds",
        probes.len(),
        rounds.len()
    );
}

/// Destroy at the limit: billable resources first (services, then MSK and RDS as soon as
/// the services are gone), task-definition clean-up beside the data stores' deletion, known
/// revisions without listing them, ten per DeleteTaskDefinitions. Before: 1,124 simulated s
/// (services drained in waves of 64 in-flight actions; a DeleteTaskDefinitions per family,
/// 289 ListTaskDefinitions) against a bound of 739 s and an estimate of 721 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destroy_of_144_services_is_within_10_percent_of_its_bound_and_its_estimate() {
    let desired = perf_144(&[]);
    let (report, stats, estimate) = perf_measure::destroy_run(&desired).await;
    let services = desired.services.len() as u64;
    let bound = perf_measure::destroy_bound_secs(services);
    let sim = report.elapsed_secs;
    // destroy_sim_s_144 <= 1.1 * destroy_bound_s_144.
    assert!(
        sim <= 1.1 * bound,
        "destroy_sim_s_144 = {sim:.1} s, bound {bound:.1} s: {:?}",
        perf_measure::mutating_ops(&stats)
    );
    // destroy_estimate_s_144 within 10% of destroy_sim_s_144.
    assert!(
        (estimate - sim).abs() <= 0.1 * sim,
        "estimate {estimate:.1} s, simulated {sim:.1} s"
    );
    assert_eq!(stats.get("ecs", "DeregisterTaskDefinition").count, services);
    assert_eq!(
        stats.get("ecs", "DeleteTaskDefinitions").count,
        services.div_ceil(10)
    );
    assert_eq!(stats.get("ecs", "ListTaskDefinitions").count, 0);
    // The deletion waits share their looks too: 144 DescribeServices when each sent its own.
    let describes = stats.get("ecs", "DescribeServices").count;
    eprintln!("destroy_sim_s_144 = {sim:.1}, DescribeServices = {describes}");
    assert!(describes <= 2 * services.div_ceil(10), "{describes}");
}
