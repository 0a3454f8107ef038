//! Live capture's display: a snapshot of the analysis state taken about once a second
//! (`snapshot`), drawn as a full-screen view when standard output is a terminal (`view`,
//! `terminal`), or as status lines on standard error (`status`). The display never holds up
//! the capture: it reads snapshots, never the analyzer.

pub mod hint;
pub mod screen;
pub mod snapshot;
pub mod status;
pub mod terminal;
pub mod view;
