//! The report as `--json` and the report directory's `report.json` write it: serde_json's
//! pretty form of the model, into a buffer (serde writes token by token: a dynamic call each
//! through an unbuffered writer).

use std::io::{self, Write};

use crate::model::Report;

/// Writes `report` as pretty JSON, followed by nothing (the caller ends the line).
pub fn write_pretty(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    let mut buffered = io::BufWriter::with_capacity(256 << 10, out);
    serde_json::to_writer_pretty(&mut buffered, report).map_err(io::Error::from)?;
    buffered.flush()
}
