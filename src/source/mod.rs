//! Where records come from: capture files and standard input (`file`), or a live interface
//! (`live`). Both hand out batches of records in capture order through the same callback, so
//! the pipeline and its sinks do not know which one they are fed by.

pub mod file;
pub mod live;

use crate::model::{LiveStats, WarningKind};

/// What a source learned by the end of its read, besides its records.
#[derive(Debug, Default)]
pub struct SourceEnd {
    pub format: Option<&'static str>,
    pub snaplen: u32,
    /// Damage or loss met while reading: each becomes a warning.
    pub problems: Vec<SourceProblem>,
    /// Live capture only: the interface and the kernel's counters.
    pub live: Option<LiveStats>,
}

#[derive(Debug)]
pub struct SourceProblem {
    pub kind: WarningKind,
    /// What the report keeps.
    pub message: String,
    /// What the printed warning adds for this run.
    pub hint: String,
}

/// What a source tells with each batch: its time resolution, and counters while it runs (the
/// live status view).
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceStatus {
    /// Timestamps finer than microseconds: times are shown to the nanosecond.
    pub nanosecond_times: bool,
    /// Frames the kernel or the interface dropped so far, when known.
    pub capture_drops: Option<u64>,
}
