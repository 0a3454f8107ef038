//! `--parquet DIR`: the capture as Parquet tables that DuckDB and Spark query, one dataset for
//! many captures: `DIR/<table>/capture=<name>/part-<N>.parquet` (Hive partitioning), tables
//! `packets`, `flows`, `timeline`, `pfc`, `findings` (docs/parquet.md describes them).
//!
//! A capture file is written whole when it ends (`whole`: flows named by their report id); a
//! capture that runs for long, with `--rotate`, as a set of parts every interval (`rolling`:
//! flows named by their own id).

mod bins;
mod rolling;
mod rows;
mod table;
mod whole;

use std::path::{Path, PathBuf};

use crate::analysis::Analyzer;
use crate::common::error::Error;
use crate::decode::summary::PacketSummary;
use crate::model::{Finding, FlowReport, Report};
use rolling::RollingExport;
use whole::WholeExport;

/// The version of the tables' layout (docs/parquet.md), in every file's key-value metadata
/// (`roce_sniff_schema`).
pub const PARQUET_SCHEMA: &str = "roce-sniff.parquet/1";

/// The tables, each a directory of the dataset.
pub const TABLES: [&str; 5] = ["packets", "flows", "timeline", "pfc", "findings"];

/// Default width of the timeline and PFC bins: 1 ms.
pub const DEFAULT_BIN_NS: u64 = 1_000_000;

/// Where a capture's tables go, and its name in the dataset.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    pub dir: PathBuf,
    pub capture: String,
    pub bin_ns: u64,
    /// `--rotate`: a set of parts every this many nanoseconds of capture time.
    pub rotate_ns: Option<u64>,
    /// Add to the capture's partition (a live capture) instead of replacing it (a file).
    pub append: bool,
}

impl ExportConfig {
    fn partition(&self, table: &str) -> PathBuf {
        self.dir
            .join(table)
            .join(format!("capture={}", self.capture))
    }

    fn table_path(&self, table: &str) -> PathBuf {
        self.part_path(table, 0)
    }

    fn part_path(&self, table: &str, part: usize) -> PathBuf {
        self.partition(table).join(format!("part-{part}.parquet"))
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// Removes the capture's partition of every table (it is written again).
fn remove_partitions(cfg: &ExportConfig) -> Result<(), Error> {
    for table in TABLES {
        let partition = cfg.partition(table);
        if partition.exists() {
            std::fs::remove_dir_all(&partition).map_err(io_err(&partition))?;
        }
    }
    Ok(())
}

/// The export as frames are analysed.
pub enum Exporter {
    Whole(Box<WholeExport>),
    Rolling(Box<RollingExport>),
}

impl Exporter {
    pub fn new(cfg: ExportConfig) -> Result<Exporter, Error> {
        Ok(match cfg.rotate_ns {
            None => Exporter::Whole(Box::new(WholeExport::new(cfg)?)),
            Some(every) => Exporter::Rolling(Box::new(RollingExport::new(cfg, every)?)),
        })
    }

    /// Whether the export needs the report entry of every flow that ends.
    pub fn wants_ended_reports(&self) -> bool {
        matches!(self, Exporter::Rolling(_))
    }

    /// Before a frame at `now` is analysed (or the clock moved to `now` on an idle link): a
    /// rolling export ends the interval `now` left.
    pub fn clock(&mut self, now: u64, an: &Analyzer) -> Result<(), Error> {
        if let Exporter::Rolling(r) = self {
            if r.rotation_due(now) {
                return r.rotate(now, an);
            }
        }
        Ok(())
    }

    /// One frame, just fed to `an` (made to `keep_closed_pauses`): what the analysis made of
    /// it, and the PFC pauses it ended.
    pub fn frame(&mut self, p: &PacketSummary, an: &mut Analyzer) -> Result<(), Error> {
        let o = an.last_outcome();
        match self {
            Exporter::Whole(w) => w.frame(p, o)?,
            Exporter::Rolling(r) => r.frame(p, o)?,
        }
        for (key, iv) in an.take_closed_pauses() {
            match self {
                Exporter::Whole(w) => w.pause_closed(key, iv),
                Exporter::Rolling(r) => r.pause_closed(key, iv),
            }
        }
        Ok(())
    }

    /// Flow `id` ended; `flow` its report entry when the analysis made one.
    pub fn flow_ended(&mut self, id: usize, flow: Option<FlowReport>) -> Result<(), Error> {
        match self {
            Exporter::Whole(w) => w.flow_ended(id),
            Exporter::Rolling(r) => r.flow_ended(id, flow),
        }
    }

    /// Findings that first held at `ts_ns` (the whole export takes the report's at the end).
    pub fn findings(&mut self, ts_ns: u64, findings: &[Finding]) -> Result<(), Error> {
        match self {
            Exporter::Whole(_) => Ok(()),
            Exporter::Rolling(r) => r.findings(ts_ns, findings),
        }
    }

    /// Writes what is left. `order[i]` is the `Flow::id` of the report's flow `i+1`, `open`
    /// the ids of the flows still open; `pauses` the PFC pauses the end of the analysis closed.
    pub fn finish(
        self,
        report: &Report,
        order: &[usize],
        open: &[usize],
        pauses: &[crate::model::SourcePause],
    ) -> Result<(), Error> {
        match self {
            Exporter::Whole(w) => w.finish(report, order, pauses),
            Exporter::Rolling(r) => r.finish(report, order, open, pauses),
        }
    }
}
