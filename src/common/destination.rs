//! Where results go (a file or standard output), opened before the long work starts so that
//! a bad path fails early; and the rules of a report directory.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::common::error::Error;

/// Where an output goes: standard output, or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

/// Output buffered in large blocks; `Send`, so a sink may write while frames are decoded.
pub type Writer = Box<dyn Write + Send>;

pub fn open(out: Option<&Destination>) -> Result<Writer, Error> {
    match out {
        Some(Destination::File(path)) => {
            let f = File::create(path).map_err(|source| Error::Output {
                path: path.clone(),
                source,
            })?;
            Ok(Box::new(BufWriter::with_capacity(1 << 20, f)))
        }
        _ => Ok(Box::new(BufWriter::with_capacity(1 << 20, io::stdout()))),
    }
}

/// The name of an output in error messages.
pub fn name(out: Option<&Destination>) -> PathBuf {
    match out {
        Some(Destination::File(path)) => path.clone(),
        _ => PathBuf::from("<stdout>"),
    }
}

/// Whether two paths name the same file (same device and inode), however spelled or linked.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Refuses an output that is one of the inputs: opening it for writing would truncate the
/// capture before a single frame was read.
pub fn refuse_input(out: &std::path::Path, inputs: &[&str]) -> Result<(), Error> {
    for input in inputs.iter().filter(|i| **i != "-") {
        if same_file(out, std::path::Path::new(input)) {
            return Err(Error::Usage(format!(
                "{}: this is the capture being read; writing to it would destroy it",
                crate::common::error::shown(&out.to_string_lossy())
            )));
        }
    }
    Ok(())
}

/// The file that marks a directory as one a roce-sniff report was written into: a later report
/// may replace the report's files there, and nothing else.
pub const REPORT_MARKER: &str = ".roce-sniff-report";

/// Checks, before any work, that a report may go into `dir`, whose files are named `writes`:
/// a new directory (its parent must exist, as for --json=FILE; `reports/`, the default's, is
/// made), an empty one, or one that holds a roce-sniff report (the marker; or, from versions
/// before it, only report files that read as roce-sniff's). A user's own files are never
/// replaced, and a report never goes into a directory being read (`input_dirs`): its files
/// would be read as captures. Nothing is made here: a run that fails leaves nothing behind.
pub fn check_report_dir(
    dir: &Path,
    writes: &[String],
    input_dirs: &[PathBuf],
) -> Result<(), Error> {
    let refuse = |why: String| {
        Err(Error::Usage(format!(
            "{}: {why}",
            crate::common::error::shown(&dir.to_string_lossy())
        )))
    };
    let err = |source| Error::Output {
        path: dir.to_path_buf(),
        source,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "exists and is not a directory",
        )));
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let default_parent = parent.is_some_and(|p| p == Path::new("reports"));
    if !dir.exists() && parent.is_some_and(|p| !p.is_dir()) && !default_parent {
        return Err(err(io::Error::from(io::ErrorKind::NotFound)));
    }
    if let Some(input) = input_dirs.iter().find(|input| is_within(dir, input)) {
        return refuse(format!(
            "the report would go inside {}, a directory being read (its files would be read as captures); give a directory outside it",
            crate::common::error::shown(&input.to_string_lossy())
        ));
    }
    if !dir.is_dir() {
        return Ok(());
    }
    let entries: Vec<String> = std::fs::read_dir(dir)
        .map_err(err)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    let marked = entries.iter().any(|e| e == REPORT_MARKER);
    let foreign: Vec<&String> = entries
        .iter()
        .filter(|e| !marked && !earlier_report_file(dir, e, writes))
        .collect();
    if !foreign.is_empty() {
        let shown: Vec<&str> = foreign.iter().take(3).map(|s| s.as_str()).collect();
        let more = foreign.len().saturating_sub(shown.len());
        return refuse(format!(
            "holds files roce-sniff did not write ({}{}): a report goes into a new or empty directory, or one that holds a roce-sniff report",
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        ));
    }
    stderr_line!(
        "roce-sniff: replacing the report in {}",
        crate::common::error::shown(&dir.to_string_lossy())
    );
    Ok(())
}

/// Whether `dir` is `input` or lies inside it, however spelled (a missing `dir` by where its
/// parent is).
fn is_within(dir: &Path, input: &Path) -> bool {
    let Ok(input) = input.canonicalize() else {
        return false;
    };
    let resolved = dir.canonicalize().or_else(|_| {
        let name = dir.file_name().ok_or(io::ErrorKind::NotFound)?;
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        // The default's `reports/` may not exist yet: resolved from where it would be.
        let base = match parent.canonicalize() {
            Ok(p) => p,
            Err(_) => std::env::current_dir()?.join(parent),
        };
        Ok::<PathBuf, io::Error>(base.join(name))
    });
    resolved.is_ok_and(|d| d.starts_with(&input))
}

/// Whether `name` in `dir`, a directory without the marker, is a file an earlier version's
/// report wrote: one of the names a report writes, and, for a text file, starting as a
/// roce-sniff report's does (a user's own `index.html` does not).
fn earlier_report_file(dir: &Path, name: &str, writes: &[String]) -> bool {
    if !writes.iter().any(|w| w == name) {
        return false;
    }
    let path = dir.join(name);
    let mut head = Vec::new();
    let read = File::open(&path).and_then(|f| f.take(1024).read_to_end(&mut head));
    if read.is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    match Path::new(name).extension().and_then(|e| e.to_str()) {
        Some("json") => head.contains("\"schema\"") && head.contains("\"roce-sniff."),
        Some("txt") => head.starts_with("roce-sniff "),
        Some("html") => head.contains("<title>roce-sniff"),
        Some("csv") => {
            head.starts_with("flow_id,flow,bin_start_s,") || head.starts_with("bin_start_s,source,")
        }
        // Plots: their names are the report's.
        _ => true,
    }
}

/// Makes the report directory, when the report is written, and marks it as a report's.
pub fn make_report_dir(dir: &Path) -> Result<(), Error> {
    let err = |source| Error::Output {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    std::fs::write(
        dir.join(REPORT_MARKER),
        "A roce-sniff report: a later report may replace the files it wrote here.\n",
    )
    .map_err(err)
}
