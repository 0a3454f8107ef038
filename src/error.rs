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
                io::ErrorKind::NotFound => write!(f, "{path}: no such file"),
                io::ErrorKind::PermissionDenied => write!(f, "{path}: permission denied"),
                io::ErrorKind::IsADirectory => {
                    write!(f, "{path}: is a directory, not a capture file")
                }
                _ => write!(f, "{path}: {source}"),
            },
            Error::Capture { path, source } => write!(f, "{path}: {source}"),
            Error::Output { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Usage(msg) | Error::Live(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

/// Whether an I/O error means the reader of our output went away (`| head`): not an error.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}
