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
                crate::error::shown(&out.to_string_lossy())
            )));
        }
    }
    Ok(())
}

/// Makes the report directory before the work starts, so that a path that cannot be one
/// fails at once; says so when an earlier report there is about to be replaced.
pub fn prepare_report_dir(dir: &std::path::Path, inputs: &[&str]) -> Result<(), Error> {
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
    std::fs::create_dir_all(dir).map_err(err)?;
    for name in crate::report::dir::FILES {
        refuse_input(&dir.join(name), inputs)?;
    }
    if dir.join("index.html").exists() {
        stderr_line!(
            "roce-sniff: replacing the report in {}",
            crate::error::shown(&dir.to_string_lossy())
        );
    }
    Ok(())
}
