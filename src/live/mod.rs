//! Live capture's display: a snapshot of the analysis state taken about once a second
//! (`snapshot`), drawn as a full-screen view when standard output is a terminal (`view`,
//! `terminal`), or as status lines on standard error (`status`). The display never holds up
//! the capture: it reads snapshots, never the analyzer.

pub mod snapshot;

/// The wall clock in ns since the epoch (a live capture's packet times are on it).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
pub mod status;
pub mod terminal;
pub mod units;
pub mod view;
