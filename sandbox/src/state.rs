//! The emulated world: every resource of every service, behind one mutex in the server.
//!
//! State machines are evaluated lazily: each service keeps absolute virtual deadlines and
//! `settle(now)` applies every transition that is due before a request reads or changes it.

use crate::config::DurationProfile;
use crate::faults::FaultConfig;
use crate::{cloudwatch, ecs, kafka, logs, rds, secretsmanager};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct World {
    pub ecs: ecs::EcsState,
    pub rds: rds::RdsState,
    pub kafka: kafka::KafkaState,
    pub cloudwatch: cloudwatch::CloudWatchState,
    pub secrets: secretsmanager::SecretsState,
    pub logs: logs::LogsState,
    /// What the account offers (versions, classes); tests change it via the control API.
    pub catalogue: crate::catalogue::Catalogue,
}

/// What a handler needs besides the world.
pub struct Ctx<'a> {
    /// Virtual now, seconds since the Unix epoch.
    pub now: f64,
    pub region: &'a str,
    pub account: &'a str,
    pub profile: &'a DurationProfile,
    pub faults: &'a FaultConfig,
}

impl Ctx<'_> {
    pub fn arn(&self, service: &str, resource: &str) -> String {
        format!(
            "arn:aws:{service}:{}:{}:{resource}",
            self.region, self.account
        )
    }
}

impl World {
    /// Applies every transition due at `now` in every service.
    pub fn settle(&mut self, ctx: &Ctx<'_>) {
        self.ecs.settle(ctx);
        self.rds.settle(ctx);
        self.kafka.settle(ctx);
    }
}

/// The persisted form: the world plus virtual now, so time continues where it stopped.
#[derive(Serialize, Deserialize)]
struct Snapshot {
    now: f64,
    world: World,
}

pub fn state_file(dir: &Path) -> PathBuf {
    dir.join("world.json")
}

/// Where a scaled clock resumes from a saved world: never before the saved time (what the
/// world holds happened then: creation tags, leases, a stopped instance's 7-day restart),
/// and never behind the wall clock, so a sandbox left for a day comes back a day later, as
/// an account would, and a run's times are never older than when it really ran. A manual
/// clock (tests) resumes at the saved time: only the test moves it.
///
/// The clock can still be ahead of the wall clock: each command's waits pass at the time
/// scale (an apply's 31 simulated minutes take seconds), and going back would undo them.
/// So times a sandbox run shows are labelled simulated (docs/reports.md, "One clock per
/// run").
pub fn resume_at(saved: f64, wall: f64, manual: bool) -> f64 {
    if manual { saved } else { saved.max(wall) }
}

pub fn load(dir: &Path) -> Result<Option<(f64, World)>, crate::SandboxError> {
    let path = state_file(dir);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let snap: Snapshot = serde_json::from_slice(&bytes)
                .map_err(|e| crate::SandboxError::State(format!("{}: {e}", path.display())))?;
            Ok(Some((snap.now, snap.world)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::SandboxError::Io(path.display().to_string(), e)),
    }
}

#[derive(Serialize)]
struct SnapshotRef<'a> {
    now: f64,
    world: &'a World,
}

/// Writes atomically (temp file + rename) so a crash never leaves half a world. The world
/// holds what the account holds (parameter values, tags, the lock's leases in S3), so the
/// directory is the user's alone (0700) and the file too (0600), as envctl's own state is.
pub fn save(dir: &Path, now: f64, world: &World) -> Result<(), crate::SandboxError> {
    let bytes = serde_json::to_vec(&SnapshotRef { now, world })
        .map_err(|e| crate::SandboxError::State(e.to_string()))?;
    let path = state_file(dir);
    let tmp = dir.join("world.json.tmp");
    let io = |e| crate::SandboxError::Io(path.display().to_string(), e);
    private_dir(dir).map_err(io)?;
    let _ = std::fs::remove_file(&tmp);
    let mut file = private_file(&tmp).map_err(io)?;
    std::io::Write::write_all(&mut file, &bytes).map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(())
}

/// Creates `dir` (and its parents) 0700, and narrows it if it existed wider.
#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// A new file, 0600 from its creation (never briefly readable by others).
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
mod resume_tests {
    use super::resume_at;

    #[test]
    fn a_scaled_clock_resumes_at_the_later_of_the_saved_time_and_the_wall_clock() {
        // Saved a day ago: it resumes now, not a day behind.
        assert_eq!(resume_at(1_000.0, 87_400.0, false), 87_400.0);
        // Saved ahead (simulated waits): it never goes back.
        assert_eq!(resume_at(90_000.0, 87_400.0, false), 90_000.0);
        // A manual clock keeps the saved time.
        assert_eq!(resume_at(1_000.0, 87_400.0, true), 1_000.0);
    }
}
