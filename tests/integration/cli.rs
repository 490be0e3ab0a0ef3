//! The AWS-facing commands through the binary, against the embedded sandbox (its world kept
//! in the test's state dir between commands, as `--sandbox` does for users).
use crate::{Output, Test, repo};

/// Runs envctl in a temp dir holding copies of envs/ and task-defs/.
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

fn workspace() -> Test {
    let test = Test::new();
    let envs = test.path().join("envs");
    std::fs::create_dir_all(&envs).expect("envs");
    for name in ["pcp1.yaml", "data-export.yaml"] {
        std::fs::copy(repo().join("envs").join(name), envs.join(name)).expect("copy env");
    }
    test
}

/// Virtual seconds per real second: an MSK create (25 min) takes well under a second.
const FAST: &str = "20000";

#[test]
fn plan_apply_replan_saved_plan_and_destroy() {
    let test = workspace();
    let dir = test.path();
    let env = "envs/data-export.yaml";

    let out = envctl(dir, &["plan", env, "--sandbox", "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("to create"), "{}", out.stdout);

    let out = envctl(dir, &["apply", env, "--sandbox", "--time-scale", FAST]);
    assert_eq!(out.code, 1, "refuses without --yes when nobody can answer");
    assert!(out.stderr.contains("--yes"), "{}", out.stderr);

    let out = envctl(
        dir,
        &["apply", env, "--sandbox", "--yes", "--time-scale", FAST],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("12 of 12 resources done"),
        "{}",
        out.stdout
    );
    // Progress goes to stderr as timestamped lines when it is not a terminal; services that
    // finish close together share one line (`ecs/service: 2 done (mod-data-export, ...)`),
    // so the service is named either way.
    assert!(
        out.stderr.lines().any(|l| l.contains("] ecs/service")
            && l.contains("mod-data-export")
            && l.contains("done")),
        "{}",
        out.stderr
    );
    assert!(dir.join(".envctl/journal/data-export.jsonl").exists());

    let out = envctl(dir, &["plan", env, "--sandbox", "--detailed-exitcode"]);
    assert_eq!(out.code, 0, "converged: {}", out.stdout);

    let out = envctl(
        dir,
        &[
            "plan",
            env,
            "--sandbox",
            "--set",
            "services.mod-data-export.log_level=warn",
            "--out",
            "warn.plan.json",
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).expect("plan JSON");
    assert_eq!(plan["schema_version"], 2);
    let changes: Vec<&serde_json::Value> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] != "no-op")
        .collect();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["resource"], "ecs/service/mod-data-export");
    assert_eq!(changes[0]["changes"][0]["field"], "LOG_LEVEL");

    // A saved plan is applied as planned: a --set beside it is refused, not ignored
    // (issue 26 item 12).
    let out = envctl(
        dir,
        &[
            "apply",
            "warn.plan.json",
            "--sandbox",
            "--set",
            "services.mod-data-export.log_level=debug",
        ],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("--set cannot change a saved plan")
            && out
                .stderr
                .contains("services.mod-data-export.log_level=warn"),
        "{}",
        out.stderr
    );
    let out = envctl(
        dir,
        &["apply", "warn.plan.json", "--sandbox", "--time-scale", FAST],
    );
    assert_eq!(
        out.code, 0,
        "a saved plan needs no confirmation: {}\n{}",
        out.stdout, out.stderr
    );
    let out = envctl(
        dir,
        &["apply", "warn.plan.json", "--sandbox", "--time-scale", FAST],
    );
    assert_eq!(
        out.code, 1,
        "the live state changed since the plan was saved"
    );
    assert!(out.stderr.contains("changed since"), "{}", out.stderr);

    let out = envctl(dir, &["status", env, "--sandbox"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("mod-data-export") && out.stdout.contains("DRIFT"),
        "the spec says info, AWS runs warn: {}",
        out.stdout
    );

    let out = envctl(
        dir,
        &["destroy", env, "--sandbox", "--yes", "--time-scale", FAST],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let out = envctl(dir, &["destroy", env, "--sandbox", "--yes"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("Nothing to destroy"),
        "nothing left to delete: {}",
        out.stdout
    );
}

#[test]
fn a_second_apply_on_a_locked_environment_fails_fast_naming_the_holder() {
    let test = workspace();
    let dir = test.path();
    std::fs::create_dir_all(dir.join(".envctl/locks")).unwrap();
    let far = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 3600.0;
    // A live lease held by this test process (its pid is alive).
    let lease = serde_json::json!({
        "env": "pcp1", "owner": "alice@ci-runner", "host": "ci-runner", "pid": std::process::id(),
        "run_id": "pcp1-run-1", "acquired_at": far - 3600.0, "expires_at": far
    });
    std::fs::write(dir.join(".envctl/locks/pcp1.json"), lease.to_string()).unwrap();
    let out = envctl(dir, &["apply", "envs/pcp1.yaml", "--sandbox", "--yes"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("alice@ci-runner") && out.stderr.contains("pcp1-run-1"),
        "{}",
        out.stderr
    );
}

#[test]
fn gc_collects_expired_resources_and_only_those() {
    let test = workspace();
    let dir = test.path();
    // data-export expires one second after creation; pcp1 lives 48 hours.
    let out = envctl(
        dir,
        &[
            "apply",
            "envs/data-export.yaml",
            "--sandbox",
            "--yes",
            "--time-scale",
            FAST,
            "--set",
            "ttl=1s",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = envctl(
        dir,
        &[
            "apply",
            "envs/pcp1.yaml",
            "--sandbox",
            "--yes",
            "--time-scale",
            FAST,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = envctl(
        dir,
        &[
            "gc",
            "--expired",
            "--sandbox",
            "--yes",
            "--time-scale",
            FAST,
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("data-export-pvt") && !out.stdout.contains("pcp1"),
        "{}",
        out.stdout
    );
    let out = envctl(
        dir,
        &["plan", "envs/pcp1.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert_eq!(out.code, 0, "pcp1 is untouched: {}", out.stdout);
    let out = envctl(dir, &["gc", "--expired", "--sandbox", "--yes"]);
    assert!(out.stdout.contains("Nothing to collect"), "{}", out.stdout);
}

/// Issue 26 item 8: a usage error exits 64, not clap's 2, which `plan --detailed-exitcode`
/// uses for "changes pending"; help and version still exit 0.
#[test]
fn usage_errors_have_their_own_exit_code() {
    let test = workspace();
    let dir = test.path();
    let env = "envs/data-export.yaml";
    for args in [
        &["plan", env, "--sandbox", "--detailed-exitcod"][..],
        &["plan"][..],
        &["apply", env, "--lock-ttl", "soon"][..],
        &["frobnicate"][..],
    ] {
        let out = envctl(dir, args);
        assert_eq!(out.code, 64, "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with("error:"), "{args:?}: {}", out.stderr);
    }
    for args in [&["--help"][..], &["--version"][..], &["plan", "--help"][..]] {
        let out = envctl(dir, args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    // And 2 still means changes.
    let out = envctl(dir, &["plan", env, "--sandbox", "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
}

/// Issue 26 items 10 and 11: a sandbox apply's durations say they are simulated (14 real
/// seconds printed as "done in 28m 51s" read as real), and counts take their number
/// ("1 services" before).
#[test]
fn sandbox_durations_are_labelled_simulated_and_counts_are_singular() {
    let test = workspace();
    let dir = test.path();
    let env = "envs/data-export.yaml";
    let out = envctl(
        dir,
        &["apply", env, "--sandbox", "--yes", "--time-scale", FAST],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains(" (simulated), "), "{text}");
    assert!(
        text.contains(" simulated\n"),
        "the progress summary: {text}"
    );
    std::fs::write(dir.join("one.yaml"), crate::BASE_ENV).expect("write");
    let out = envctl(dir, &["validate", "one.yaml"]);
    assert!(
        out.stdout
            .contains("1 service, 1 Kafka cluster, 2 RDS instances"),
        "{}",
        out.stdout
    );
}

/// Issue 26 item 10: commands other than `validate` count the env's lint warnings and say
/// how to see them, instead of reprinting every one (about 50 lines for qcp1).
#[test]
fn other_commands_count_the_lint_warnings_validate_shows() {
    let test = workspace();
    let dir = test.path();
    let env = "envs/data-export.yaml";
    let validate = envctl(dir, &["validate", env]);
    assert!(
        validate.stderr.contains("warning[jvm-exceeds-soft-limit]"),
        "{}",
        validate.stderr
    );
    let out = envctl(dir, &["plan", env, "--sandbox"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning["), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "1 lint warning in {env} (jvm-exceeds-soft-limit): `envctl validate {env}` shows it"
        )),
        "{}",
        out.stderr
    );
}

/// Issue 35: unreachable AWS was 70 silent seconds before `dispatch failure ... (gave up
/// after 8 attempts)`. The first failed attempt is said at once, with what failed and that
/// envctl retries; the test stops the command once it has said so.
#[test]
fn unreachable_aws_says_it_retries_after_the_first_failed_attempt() {
    use std::io::{BufRead, BufReader};
    let test = workspace();
    // A port nothing listens on: every call is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(["status", "envs/pcp1.yaml", "--endpoint-url"])
        .arg(format!("http://127.0.0.1:{port}"))
        .current_dir(test.path())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("envctl starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    let mut retrying = None;
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if line.starts_with("retrying ") {
            retrying = Some(line);
            break;
        }
        seen.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    let line = retrying.unwrap_or_else(|| panic!("no retry line before the end: {seen:?}"));
    assert!(line.contains("(2/8, in "), "{line}");
    assert!(
        line.contains("Connection refused") || line.contains("dispatch failure"),
        "{line}"
    );
}

/// Issue 35: `schema --out .envctl/...` made `.envctl/` 0755; envctl's state directory is
/// private (0700) wherever envctl makes it. A directory that exists keeps its mode.
#[test]
fn schema_out_makes_the_state_directory_private() {
    use std::os::unix::fs::PermissionsExt;
    let test = Test::new();
    let out = envctl(
        test.path(),
        &["schema", "env", "--out", ".envctl/env.schema.json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&test.path().join(".envctl")), 0o700);
    let docs = test.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::set_permissions(&docs, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = envctl(
        test.path(),
        &["schema", "env", "--out", "docs/env.schema.json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(mode(&docs), 0o755);
}
