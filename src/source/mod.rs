//! Where records come from: capture files and standard input (`file`), or a live interface
//! (`live`). Both hand out batches of records in capture order through the same callback, so
//! the pipeline and its sinks do not know which one they are fed by.

pub mod batch;
pub mod blocks;
pub mod file;
pub mod framing;
pub mod live;
pub mod mapped;
pub mod merge;
pub mod origins;
pub mod pace;

use std::io;

use roce_parsers::capture::Record;

use crate::common::error::Error;
use crate::model::{LiveStats, WarningKind};

/// What is read from files: one capture, or several read as one.
pub enum Input {
    One(file::FileSource),
    Merged(merge::MergedFiles),
}

impl Input {
    /// One file as it is, several merged by time.
    pub fn of_files(mut files: Vec<file::FileSource>) -> Input {
        if files.len() == 1 {
            Input::One(files.remove(0))
        } else {
            Input::Merged(merge::MergedFiles::new(files))
        }
    }

    /// The name in messages and in the report.
    pub fn name(&self) -> String {
        match self {
            Input::One(f) => f.name.clone(),
            Input::Merged(m) => m.names.join(" + "),
        }
    }

    /// The file names when several are merged (per-frame output says which each frame is
    /// from), else none.
    pub fn names(&self) -> Vec<String> {
        match self {
            Input::One(_) => Vec::new(),
            Input::Merged(m) => m.names.clone(),
        }
    }

    /// The input files, in input order (`Record::input`).
    pub fn paths(&self) -> Vec<String> {
        match self {
            Input::One(f) => vec![f.name.clone()],
            Input::Merged(m) => m.names.clone(),
        }
    }

    /// Reads every record, calling `consume` with batches in capture order; a failure of
    /// `consume` is an output error.
    pub fn for_each_batch(
        self,
        consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<SourceEnd, Error> {
        self.read(consume).and_then(consumed)
    }

    /// `for_each_batch`, but a failure of `consume` ends the read with what it learned
    /// handed back beside the failure (`FileSource::read`).
    pub fn read(
        self,
        consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<(SourceEnd, io::Result<()>), Error> {
        match self {
            Input::One(f) => f.read(consume),
            Input::Merged(m) => m.read(consume),
        }
    }
}

/// The end of a read whose consumer did not fail; else the consumer's failure.
pub fn consumed((end, consumed): (SourceEnd, io::Result<()>)) -> Result<SourceEnd, Error> {
    consumed.map_err(consumer_failed)?;
    Ok(end)
}

/// A consumer's failure: its output's.
pub fn consumer_failed(source: io::Error) -> Error {
    Error::Output {
        path: "<output>".into(),
        source,
    }
}

/// What a source learned by the end of its read, besides its records.
#[derive(Debug, Default)]
pub struct SourceEnd {
    pub format: Option<&'static str>,
    pub snaplen: u32,
    /// Damage or loss met while reading: each becomes a warning.
    pub problems: Vec<SourceProblem>,
    /// Live capture only: the interface and the kernel's counters.
    pub live: Option<LiveStats>,
    /// Several files merged: the file of each frame.
    pub origins: Option<origins::FrameOrigins>,
    /// A selection on a file: what it read.
    pub selection: Option<crate::model::SelectionStats>,
}

impl SourceEnd {
    /// Why a live capture's device stopped it (the interface disappeared), if it did: the
    /// run fails once its report and outputs are written, so that a service manager restarts
    /// the monitor.
    pub fn device_failure(&self) -> Option<&str> {
        self.problems
            .iter()
            .find(|p| p.kind == WarningKind::CaptureStopped)
            .map(|p| p.message.as_str())
    }

    /// An output failed (`consumed`'s error, kept by the sink): the read stopped there.
    /// `what`: "capture" or "reading".
    pub fn output_failed(&mut self, what: &str, e: &io::Error) {
        self.problems.push(SourceProblem {
            kind: WarningKind::OutputFailed,
            message: format!("{what} stopped: {e}"),
            hint: "everything before it is analysed".into(),
        });
    }
}

#[derive(Debug)]
pub struct SourceProblem {
    pub kind: WarningKind,
    /// What the report keeps.
    pub message: String,
    /// What the printed warning adds for this run.
    pub hint: String,
}

pub use crate::model::{KernelCounters, SourceStatus};
