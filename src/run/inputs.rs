//! The capture files of the -r arguments: a directory's captures, each opened for reading.

use std::io::{self, IsTerminal};

use crate::common::error::Error;
use crate::source::file::{FileSource, ReadMethod};
use crate::source::Input;

/// Files at least this large get a progress bar (on a terminal).
pub(super) const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// The capture files of the -r arguments: a directory stands for the files in it (sorted by
/// name, as a rotated set is numbered).
pub(super) fn expand_directories(paths: &[String]) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for p in paths {
        let dir = std::path::Path::new(p);
        if p == "-" || !dir.is_dir() {
            out.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Input {
            path: p.clone(),
            source,
        })?;
        let mut files: Vec<String> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.is_file())
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        files.sort();
        files.retain(|f| match not_a_capture(f) {
            Some(why) => {
                stderr_line!(
                    "roce-sniff: warning: {}: {why}; skipped",
                    crate::common::error::shown(f)
                );
                false
            }
            None => true,
        });
        if files.is_empty() {
            return Err(Error::Usage(format!(
                "{}: a directory with no capture files",
                crate::common::error::shown(p)
            )));
        }
        out.extend(files);
    }
    if out.iter().filter(|p| *p == "-").count() > 0 && out.len() > 1 {
        return Err(Error::Usage(
            "standard input (-r -) is read alone, not with other files".into(),
        ));
    }
    Ok(out)
}

/// Why a file found in a directory is not read as a capture: not one at all (a README, the
/// report of an earlier run), or one with no frame yet (empty, or only its header: tcpdump is
/// still writing it). None for a capture, and for a compressed file (told when read).
pub(super) fn not_a_capture(path: &str) -> Option<String> {
    use roce_parsers::capture::{CaptureParser, Next};
    use std::io::Read as _;
    const HEAD: u64 = 64 << 10;
    let mut head = Vec::new();
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    io::Read::take(file, HEAD).read_to_end(&mut head).ok()?;
    if head.is_empty() {
        return Some("an empty file".into());
    }
    if head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return None;
    }
    let (mut parser, mut at) = match CaptureParser::new(&head) {
        Ok(p) => p,
        Err(e) => return Some(e.to_string()),
    };
    if parser.format() == roce_parsers::capture::Format::Erf {
        let whole = len <= head.len() as u64;
        if let Some(Err(e)) = roce_parsers::capture::erf_verdict(&head, whole) {
            return Some(e.to_string());
        }
    }
    loop {
        match parser.next(&head[at..], at as u64) {
            Ok(Next::Record(..)) => return None,
            Ok(Next::Skip(used)) => at += used,
            // A head cut inside a record: a frame is on its way.
            Ok(Next::Incomplete { .. }) if len > head.len() as u64 || at < head.len() => {
                return None
            }
            Ok(Next::Incomplete { .. }) => return Some("a capture with no frame yet".into()),
            Err(_) => return None,
        }
    }
}

/// One capture, or several read as one.
pub(super) fn open_inputs(paths: &[String], read: ReadMethod) -> Result<Input, Error> {
    if let [one] = paths {
        return Ok(Input::One(open_file(one, read)?));
    }
    let files = paths
        .iter()
        .map(|p| Ok(FileSource::open(p, read)?.stop_on(crate::common::signals::flag())))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Input::of_files(files))
}

/// A capture file (or `-`), with a progress bar for large files on a terminal.
pub(super) fn open_file(path: &str, read: ReadMethod) -> Result<FileSource, Error> {
    let source = FileSource::open(path, read)?.stop_on(crate::common::signals::flag());
    match source.size.filter(|&s| s >= PROGRESS_MIN_BYTES) {
        Some(size) if io::stderr().is_terminal() => {
            let bar = indicatif::ProgressBar::new(size);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
                )
                .expect("static template"),
            );
            Ok(source.with_progress(bar))
        }
        _ => Ok(source),
    }
}
