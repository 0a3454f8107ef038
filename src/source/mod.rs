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

/// Files named in full up to this many; beyond, the directory, the count and the first and
/// last (a rotated set of 98 files made a 3,447-character title).
const NAMED_IN_FULL: usize = 3;

/// The name of several files read as one: `a.pcap + b.pcap`, or for a longer set
/// `DIR/: 98 files, first.pcap ... last.pcap`.
fn several(names: &[String]) -> String {
    if names.len() <= NAMED_IN_FULL {
        return names.join(" + ");
    }
    let path = |n: &String| std::path::Path::new(n).to_path_buf();
    let parent = |n: &String| path(n).parent().map(std::path::Path::to_path_buf);
    let file = |n: &String| {
        path(n)
            .file_name()
            .map_or(n.clone(), |f| f.to_string_lossy().into_owned())
    };
    let (first, last) = (&names[0], &names[names.len() - 1]);
    let same_dir = parent(first).filter(|d| names.iter().all(|n| parent(n).as_ref() == Some(d)));
    match same_dir {
        Some(dir) if !dir.as_os_str().is_empty() => format!(
            "{}/: {} files, {} ... {}",
            dir.display(),
            names.len(),
            file(first),
            file(last)
        ),
        _ => format!("{} files, {first} ... {last}", names.len()),
    }
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
            Input::Merged(m) => several(&m.names),
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
    /// The regions of the input that could not be read as records.
    pub damaged: crate::model::CaptureDamage,
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_set_of_files_is_named_by_its_directory_count_and_ends() {
        let names: Vec<String> = (0..98).map(|i| format!("caps/rot-{i:03}.pcap")).collect();
        assert_eq!(
            super::several(&names),
            "caps/: 98 files, rot-000.pcap ... rot-097.pcap"
        );
        let three: Vec<String> = ["a.pcap", "b.pcap", "c.pcap"].map(String::from).to_vec();
        assert_eq!(super::several(&three), "a.pcap + b.pcap + c.pcap");
        let mixed: Vec<String> = ["x/a.pcap", "y/b.pcap", "x/c.pcap", "x/d.pcap"]
            .map(String::from)
            .to_vec();
        assert_eq!(super::several(&mixed), "4 files, x/a.pcap ... x/d.pcap");
    }
}
