//! Errors that end a run (exit code 2). Per-frame problems are not errors: they are counted.

use std::fmt;
use std::io;
use std::path::PathBuf;

use roce_parsers::capture::CaptureError;

#[derive(Debug)]
pub enum Error {
    /// Opening or reading an input failed.
    Input { path: String, source: io::Error },
    /// The input is not a capture we can frame.
    Capture { path: String, source: CaptureError },
    /// Writing an output failed (other than a closed pipe).
    Output { path: PathBuf, source: io::Error },
    /// Flags that cannot work together, or a bad value.
    Usage(String),
    /// Live capture could not start or went wrong; the message carries the hint.
    Live(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input { path, source } => match source.kind() {
                io::ErrorKind::NotFound => write!(f, "{}: no such file", shown(path)),
                io::ErrorKind::IsADirectory => {
                    write!(f, "{}: is a directory, not a capture file", shown(path))
                }
                _ => write!(f, "{}: {}", shown(path), describe(source)),
            },
            Error::Capture { path, source } => write!(f, "{}: {source}", shown(path)),
            Error::Output { path, source } => {
                let path = path.to_string_lossy();
                write!(f, "{}: {}", shown(&path), describe(source))
            }
            Error::Usage(msg) | Error::Live(msg) => f.write_str(msg),
        }
    }
}

/// An I/O error in words, the same way for every path: no "(os error N)".
pub fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::IsADirectory => "is a directory".into(),
        io::ErrorKind::NotADirectory => "a part of the path is not a directory".into(),
        io::ErrorKind::StorageFull => "no space left on the device".into(),
        io::ErrorKind::BrokenPipe => "its reader went away (broken pipe)".into(),
        _ => {
            let text = e.to_string();
            match text.find(" (os error") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
    }
}

/// A name as printed in messages and reports: control characters escaped, so that a file
/// name cannot forge a line of output (a PASS verdict, say).
pub fn shown(name: &str) -> String {
    if !name.chars().any(char::is_control) {
        return name.to_string();
    }
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl std::error::Error for Error {}

/// Whether an I/O error means the reader of our output went away (`| head`): not an error.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}
