//! An append-only journal of mutating AWS calls, so a run killed halfway (Ctrl-C, a lost CI
//! runner) leaves a record of what it may have changed.
//!
//! `<state dir>/journal/<env>.jsonl` gets one JSON line per event: an `intent` line, synced
//! to disk *before* each mutating call, then `done` or `failed`. An intent with no outcome is
//! a call whose effect is unknown: the next run must observe that resource before acting on
//! it ([`JournalRead::in_flight`]). The journal is an audit trail and a hint, not the source of
//! truth; live state is observed from AWS on every run.
//!
//! Secrets never reach the file: entries carry resource keys and operation names, never
//! request or response bodies (task definitions hold environment variables and secret ARNs).
//! `message` is for outcomes and error texts; callers must not put request content there.
//!
//! Each `record` does a blocking write and fsync, a few milliseconds; mutating calls are
//! rate-limited to a few per second, so this is noise next to them.
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::private_file;

use serde::{Deserialize, Serialize};

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// About to send the call.
    Intent,
    Done,
    Failed,
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Seconds since the Unix epoch, from the executor's clock.
    pub time: f64,
    pub run_id: String,
    /// The model's stable key, e.g. `ecs/service/mod-users`.
    pub resource: String,
    /// The AWS API name, e.g. `UpdateService`.
    pub operation: String,
    pub phase: Phase,
    /// An outcome or error text; never request content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("journal {}, line {line}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("environment name `{0}` cannot name a journal file")]
    InvalidEnv(String),
}

/// An open journal; share it as `Arc<Journal>` between the executor's tasks.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    /// Values never to write, even inside an error text that quotes them (an AWS message
    /// can echo a request value): the run's secrets, set with [`Journal::scrub`].
    secrets: Mutex<Vec<String>>,
}

/// What a journal holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JournalRead {
    pub entries: Vec<Entry>,
    /// The last line was cut off (the process died mid-write) and was ignored.
    pub torn_tail: bool,
}

impl JournalRead {
    /// Intents with no later `done`/`failed` for the same run, resource and operation: calls
    /// whose effect is unknown.
    pub fn in_flight(&self) -> Vec<&Entry> {
        let mut open: Vec<&Entry> = Vec::new();
        for entry in &self.entries {
            let same = |e: &&Entry| {
                e.run_id == entry.run_id
                    && e.resource == entry.resource
                    && e.operation == entry.operation
            };
            match entry.phase {
                Phase::Intent => open.push(entry),
                Phase::Done | Phase::Failed => {
                    if let Some(i) = open.iter().position(same) {
                        open.remove(i);
                    }
                }
            }
        }
        open
    }
}

impl Journal {
    /// Opens (creating if needed) the journal of `env` under `state_dir` (normally `.envctl/`)
    /// for appending. A line torn by an earlier crash is completed if it holds a whole entry
    /// and cut off otherwise, so every line before ours stays readable.
    pub fn open(state_dir: &Path, env: &str) -> Result<Self, JournalError> {
        let path = journal_path(state_dir, env)?;
        let io = |source| JournalError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            private_file::create_dir_all(dir).map_err(io)?;
        }
        let mut file = private_file::options()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io)?;
        repair_tail(&mut file).map_err(io)?;
        Ok(Self {
            path,
            file: Mutex::new(file),
            secrets: Mutex::new(Vec::new()),
        })
    }

    /// Adds values that a message must never show (masked as `***` and a short hash).
    pub fn scrub(&self, secrets: impl IntoIterator<Item = String>) {
        let mut known = self.secrets.lock().unwrap_or_else(|p| p.into_inner());
        known.extend(secrets);
        known.sort();
        known.dedup();
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry` as one line and syncs it to disk before returning.
    /// A message is masked first: the known secrets, and any secret recognisable by its
    /// shape (a URL's password, a `-D...password=` option).
    pub fn record(&self, entry: &Entry) -> Result<(), JournalError> {
        let masked;
        let entry = match &entry.message {
            Some(message) => {
                let secrets = self.secrets.lock().unwrap_or_else(|p| p.into_inner());
                masked = Entry {
                    message: Some(crate::redact::scrub(message, &secrets)),
                    ..entry.clone()
                };
                &masked
            }
            None => entry,
        };
        let mut line = serde_json::to_string(entry).map_err(|e| JournalError::Io {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        line.push('\n');
        // A poisoned lock means a writer panicked between calls; the file itself is fine.
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|source| JournalError::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Reads the journal of `env`; a missing journal reads as empty.
    pub fn read_all(state_dir: &Path, env: &str) -> Result<JournalRead, JournalError> {
        let path = journal_path(state_dir, env)?;
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(JournalRead::default()),
            Err(source) => return Err(JournalError::Io { path, source }),
        };
        parse(&path, &text)
    }
}

fn journal_path(state_dir: &Path, env: &str) -> Result<PathBuf, JournalError> {
    if env.is_empty() || env.starts_with('.') || env.contains(['/', '\\']) {
        return Err(JournalError::InvalidEnv(env.to_string()));
    }
    Ok(state_dir.join("journal").join(format!("{env}.jsonl")))
}

fn parse(path: &Path, text: &str) -> Result<JournalRead, JournalError> {
    let mut read = JournalRead::default();
    let (complete, tail) = match text.rfind('\n') {
        Some(end) => (&text[..end], &text[end + 1..]),
        None => ("", text),
    };
    for (i, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry = serde_json::from_str(line).map_err(|e| JournalError::Corrupt {
            path: path.to_path_buf(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        read.entries.push(entry);
    }
    if !tail.trim().is_empty() {
        match serde_json::from_str(tail) {
            Ok(entry) => read.entries.push(entry),
            Err(_) => read.torn_tail = true,
        }
    }
    Ok(read)
}

/// Makes the file end with a newline: completes a whole last entry, cuts off a torn one.
fn repair_tail(file: &mut File) -> io::Result<()> {
    let mut text = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut text)?;
    if text.is_empty() || text.ends_with(b"\n") {
        return Ok(());
    }
    let start = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if serde_json::from_slice::<Entry>(&text[start..]).is_ok() {
        file.write_all(b"\n")?;
    } else {
        file.set_len(start as u64)?;
    }
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(time: f64, resource: &str, operation: &str, phase: Phase) -> Entry {
        Entry {
            time,
            run_id: "r1".into(),
            resource: resource.into(),
            operation: operation.into(),
            phase,
            message: None,
        }
    }

    fn sample() -> Vec<Entry> {
        vec![
            entry(1.0, "ecs/service/mod-users", "UpdateService", Phase::Intent),
            Entry {
                message: Some("deployment ecs-svc/123".into()),
                ..entry(2.0, "ecs/service/mod-users", "UpdateService", Phase::Done)
            },
            entry(
                3.0,
                "rds/instance/qcp1-db",
                "ModifyDBInstance",
                Phase::Intent,
            ),
        ]
    }

    #[test]
    fn entries_are_appended_one_json_line_each_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path(), "qcp1").unwrap();
        for e in sample() {
            journal.record(&e).unwrap();
        }
        assert_eq!(journal.path(), dir.path().join("journal/qcp1.jsonl"));
        let text = fs::read_to_string(journal.path()).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with('\n'));
        assert_eq!(
            text.lines().next(),
            Some(
                r#"{"time":1.0,"run_id":"r1","resource":"ecs/service/mod-users","operation":"UpdateService","phase":"intent"}"#
            )
        );
        let read = Journal::read_all(dir.path(), "qcp1").unwrap();
        assert_eq!(
            read,
            JournalRead {
                entries: sample(),
                torn_tail: false
            }
        );
    }

    #[test]
    fn an_error_text_quoting_a_secret_is_written_masked() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path(), "qcp1").unwrap();
        journal.scrub(["hunter22".to_string()]);
        journal
            .record(&Entry {
                time: 1.0,
                run_id: "r1".into(),
                resource: "ecs/service/mod-users".into(),
                operation: "RegisterTaskDefinition".into(),
                phase: Phase::Failed,
                message: Some(
                    "ClientException: bad value hunter22 in DB_PASSWD; postgres://u:pw99@db".into(),
                ),
            })
            .unwrap();
        let text = fs::read_to_string(journal.path()).unwrap();
        assert!(!text.contains("hunter22"), "{text}");
        assert!(!text.contains("pw99"), "{text}");
        assert!(text.contains(&crate::redact::mask("hunter22")), "{text}");
        assert!(
            text.contains("DB_PASSWD"),
            "the rest of the message stays: {text}"
        );
    }

    #[test]
    fn reopening_appends_after_earlier_runs() {
        let dir = tempfile::tempdir().unwrap();
        let all = sample();
        Journal::open(dir.path(), "qcp1")
            .unwrap()
            .record(&all[0])
            .unwrap();
        let journal = Journal::open(dir.path(), "qcp1").unwrap();
        journal.record(&all[1]).unwrap();
        journal.record(&all[2]).unwrap();
        assert_eq!(Journal::read_all(dir.path(), "qcp1").unwrap().entries, all);
    }

    #[test]
    fn a_line_torn_by_a_crash_is_skipped_then_cut_off_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let all = sample();
        let journal = Journal::open(dir.path(), "qcp1").unwrap();
        journal.record(&all[0]).unwrap();
        let path = journal.path().to_path_buf();
        drop(journal);
        let mut text = fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"time":2.0,"run_id":"r1","reso"#);
        fs::write(&path, &text).unwrap();

        let read = Journal::read_all(dir.path(), "qcp1").unwrap();
        assert_eq!(read.entries, vec![all[0].clone()]);
        assert!(read.torn_tail);

        let journal = Journal::open(dir.path(), "qcp1").unwrap();
        journal.record(&all[1]).unwrap();
        let read = Journal::read_all(dir.path(), "qcp1").unwrap();
        assert_eq!(read.entries, vec![all[0].clone(), all[1].clone()]);
        assert!(!read.torn_tail);
    }

    #[test]
    fn a_whole_entry_missing_only_its_newline_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let all = sample();
        let path = dir.path().join("journal/qcp1.jsonl");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, serde_json::to_string(&all[0]).unwrap()).unwrap();
        assert_eq!(
            Journal::read_all(dir.path(), "qcp1").unwrap().entries,
            vec![all[0].clone()]
        );
        let journal = Journal::open(dir.path(), "qcp1").unwrap();
        journal.record(&all[1]).unwrap();
        assert_eq!(
            Journal::read_all(dir.path(), "qcp1").unwrap().entries,
            all[..2].to_vec()
        );
    }

    #[test]
    fn damage_before_the_last_line_is_an_error_with_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal/qcp1.jsonl");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let good = serde_json::to_string(&sample()[0]).unwrap();
        fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
        match Journal::read_all(dir.path(), "qcp1") {
            Err(JournalError::Corrupt { line, .. }) => assert_eq!(line, 2),
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_journal_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Journal::read_all(dir.path(), "qcp1").unwrap(),
            JournalRead::default()
        );
        assert!(matches!(
            Journal::open(dir.path(), "../etc"),
            Err(JournalError::InvalidEnv(_))
        ));
    }

    #[test]
    fn intents_without_an_outcome_are_in_flight() {
        let mut entries = sample();
        entries.push(entry(
            4.0,
            "ecs/service/mod-orders",
            "CreateService",
            Phase::Intent,
        ));
        entries.push(entry(
            5.0,
            "ecs/service/mod-orders",
            "CreateService",
            Phase::Failed,
        ));
        let read = JournalRead {
            entries,
            torn_tail: false,
        };
        let open: Vec<_> = read
            .in_flight()
            .iter()
            .map(|e| e.resource.as_str())
            .collect();
        assert_eq!(open, vec!["rds/instance/qcp1-db"]);
    }

    #[test]
    fn an_entry_serializes_only_keys_and_names() {
        // Guards the no-secrets rule: a new field must be a deliberate change to this list.
        let value = serde_json::to_value(Entry {
            message: Some("ok".into()),
            ..sample()[0].clone()
        })
        .unwrap();
        let mut keys: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            vec![
                "message",
                "operation",
                "phase",
                "resource",
                "run_id",
                "time"
            ]
        );
    }
}
