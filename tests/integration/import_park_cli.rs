//! `envctl import`, `park`, `unpark` and `status` through the binary against the embedded
//! sandbox (its world kept in the test's state dir between commands).
use crate::{Output, Test, repo};

fn envctl(dir: &std::path::Path, args: &[&str]) -> Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("envctl runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn workspace(envs: &[&str]) -> Test {
    let test = Test::new();
    let dir = test.path().join("envs");
    std::fs::create_dir_all(&dir).expect("envs");
    for name in envs {
        let file = format!("{name}.yaml");
        std::fs::copy(repo().join("envs").join(&file), dir.join(&file)).expect("copy env");
    }
    test
}

/// Virtual seconds per real second: an MSK create (25 min) takes well under a second.
const FAST: &str = "20000";

fn ok(out: &Output, what: &str) {
    assert_eq!(out.code, 0, "{what}\n{}\n{}", out.stdout, out.stderr);
}

#[test]
fn import_writes_an_env_that_plans_no_changes_and_never_overwrites() {
    let test = workspace(&["data-export"]);
    let dir = test.path();
    let out = envctl(
        dir,
        &[
            "apply",
            "envs/data-export.yaml",
            "--sandbox",
            "--yes",
            "--time-scale",
            FAST,
        ],
    );
    ok(&out, "apply");
    let import = [
        "import",
        "--cluster",
        "data-export-pvt",
        "--rds",
        "data-export-db-reader",
        "--capacity",
        "m5.large:12",
        "--out",
        "imported/data-export.yaml",
        "--sandbox",
    ];
    let out = envctl(dir, &import);
    ok(&out, "import");
    assert!(
        out.stdout.contains("Imported 5 services (1 template)"),
        "{}",
        out.stdout
    );
    let text = std::fs::read_to_string(dir.join("imported/data-export.yaml")).expect("env");
    // A reader named on the command line brings its writer; R/W split is not used here.
    assert!(text.contains("id: data-export-db\n"), "{text}");
    assert!(text.contains("- {id: data-export-db-reader}"), "{text}");
    assert!(
        text.contains("template: \"../task-defs/data-export.yaml\""),
        "{text}"
    );
    assert!(dir.join("task-defs/data-export.yaml").exists());
    // The cluster's Managed Instances provider (envctl's own) is expressed from
    // DescribeCapacityProviders, --capacity's count as its budget: no note about it.
    assert!(
        text.contains("capacity: {managed_instances: {instance_types: [")
            && text.contains("instances: {min: 0, max: 12}"),
        "{text}"
    );
    assert!(
        !out.stdout
            .contains("ecs capacity provider envctl-data-export-pvt"),
        "{}",
        out.stdout
    );

    let out = envctl(
        dir,
        &[
            "plan",
            "imported/data-export.yaml",
            "--sandbox",
            "--detailed-exitcode",
        ],
    );
    ok(&out, "plan of the imported env");

    let out = envctl(dir, &import);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains("exists; pass --force"),
        "{}",
        out.stderr
    );
}

#[test]
fn import_refuses_bad_arguments_and_missing_resources() {
    let test = workspace(&[]);
    let dir = test.path();
    let out = envctl(
        dir,
        &[
            "import",
            "--cluster",
            "x",
            "--capacity",
            "m6i",
            "--out",
            "e.yaml",
            "--region",
            "us-east-1",
        ],
    );
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("TYPE:COUNT"), "{}", out.stderr);
    let out = envctl(
        dir,
        &[
            "import",
            "--cluster",
            "nope",
            "--capacity",
            "m6i.large:1",
            "--out",
            "e.yaml",
            "--sandbox",
            "--region",
            "us-east-1",
        ],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no active ECS cluster"),
        "{}",
        out.stderr
    );
    assert!(!dir.join("e.yaml").exists());
}

#[test]
fn park_status_unpark_through_the_cli() {
    let test = workspace(&["qcp1"]);
    let dir = test.path();
    let env = "envs/qcp1.yaml";
    ok(
        &envctl(
            dir,
            &["apply", env, "--sandbox", "--yes", "--time-scale", FAST],
        ),
        "apply",
    );
    let out = envctl(
        dir,
        &["park", env, "--sandbox", "--yes", "--time-scale", FAST],
    );
    ok(&out, "park");
    for said in [
        "stop  rds/instance/qcp1-db (RDS starts a stopped instance again after 7 days",
        "MSK ptf-mobius-testing2: MSK clusters cannot be stopped",
        "scale in  ECS Managed Instances provider envctl-qcp1-pvt (envctl's)",
        "parking saves about $177/day",
        "Parked.",
    ] {
        assert!(out.stdout.contains(said), "{said}\n{}", out.stdout);
    }
    // Every call journaled: intent, then done.
    let journal = std::fs::read_to_string(dir.join(".envctl/journal/qcp1.jsonl")).expect("journal");
    for op in ["TagResource", "UpdateService", "StopDBInstance"] {
        assert!(
            journal.contains(&format!("\"operation\":\"{op}\",\"phase\":\"done\"")),
            "{op}\n{journal}"
        );
    }
    let out = envctl(dir, &["status", env, "--sandbox", "--time-scale", FAST]);
    ok(&out, "status");
    assert!(
        out.stdout.contains("PARKED: 26 of 26 services at 0"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("DRIFT"), "{}", out.stdout);

    let out = envctl(
        dir,
        &["park", env, "--sandbox", "--yes", "--time-scale", FAST],
    );
    ok(&out, "park again");
    assert!(out.stdout.contains("Nothing to do."), "{}", out.stdout);

    let out = envctl(
        dir,
        &["unpark", env, "--sandbox", "--yes", "--time-scale", FAST],
    );
    ok(&out, "unpark");
    assert!(out.stdout.contains("Unparked."), "{}", out.stdout);
    let out = envctl(
        dir,
        &[
            "plan",
            env,
            "--sandbox",
            "--detailed-exitcode",
            "--time-scale",
            FAST,
        ],
    );
    ok(&out, "plan after unpark");
}
