//! Progress that remembers every event, so tests can assert what the executor reported.
use std::sync::Mutex;

use super::progress::{Finish, Progress, Summary};

/// One reported event, with owned text.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Planned(usize),
    Started {
        resource: String,
        what: String,
    },
    Status {
        resource: String,
        text: String,
    },
    Detail {
        resource: String,
        text: String,
    },
    Finished {
        resource: String,
        finish: Finish,
        text: String,
    },
    Summary(Summary),
}

#[derive(Debug, Default)]
pub struct RecordingProgress {
    events: Mutex<Vec<Event>>,
}

impl RecordingProgress {
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything reported so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }

    fn push(&self, event: Event) {
        self.lock().push(event);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Progress for RecordingProgress {
    fn planned(&self, total: usize) {
        self.push(Event::Planned(total));
    }

    fn started(&self, resource: &str, what: &str) {
        self.push(Event::Started {
            resource: resource.into(),
            what: what.into(),
        });
    }

    fn status(&self, resource: &str, text: &str) {
        self.push(Event::Status {
            resource: resource.into(),
            text: text.into(),
        });
    }

    fn detail(&self, resource: &str, text: &str) {
        self.push(Event::Detail {
            resource: resource.into(),
            text: text.into(),
        });
    }

    fn finished(&self, resource: &str, finish: Finish, text: &str) {
        self.push(Event::Finished {
            resource: resource.into(),
            finish,
            text: text.into(),
        });
    }

    fn summary(&self, summary: &Summary) {
        self.push(Event::Summary(*summary));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_kept_in_order() {
        let recording = RecordingProgress::new();
        let progress: &dyn Progress = &recording;
        progress.planned(1);
        progress.started("rds/instance/qcp1-db", "modify: class");
        progress.status("rds/instance/qcp1-db", "modifying");
        progress.finished("rds/instance/qcp1-db", Finish::Failed, "timed out");
        assert_eq!(
            recording.events(),
            vec![
                Event::Planned(1),
                Event::Started {
                    resource: "rds/instance/qcp1-db".into(),
                    what: "modify: class".into()
                },
                Event::Status {
                    resource: "rds/instance/qcp1-db".into(),
                    text: "modifying".into()
                },
                Event::Finished {
                    resource: "rds/instance/qcp1-db".into(),
                    finish: Finish::Failed,
                    text: "timed out".into()
                },
            ]
        );
    }
}
