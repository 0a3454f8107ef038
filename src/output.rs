//! Where results go: a file or standard output, opened before the long work starts so that a
//! bad path fails early.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use crate::error::Error;

/// Where JSON goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Stdout,
    File(PathBuf),
}

/// Output buffered in large blocks; `Send`, so a sink may write while frames are decoded.
pub type Writer = Box<dyn Write + Send>;

pub fn open(out: Option<&Output>) -> Result<Writer, Error> {
    match out {
        Some(Output::File(path)) => {
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
pub fn name(out: Option<&Output>) -> PathBuf {
    match out {
        Some(Output::File(path)) => path.clone(),
        _ => PathBuf::from("<stdout>"),
    }
}
