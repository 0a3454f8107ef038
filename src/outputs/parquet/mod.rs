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
use std::sync::Arc;

use super::{CaptureEnd, Output, Wants};
use crate::common::error::Error;
use crate::common::queue::WhenFull;
use crate::decode::summary::PacketSummary;
use crate::model::{DroppedRecords, FiguresNow, FlowEnded, FrameDone, NewFindings};
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
    /// The export `cfg` asks for. A rolling one writes its parts on a thread of its own;
    /// `when_full`: what a row that finds its queue full does (live: dropped and counted in
    /// `dropped`; a file: it waits).
    pub fn new(
        cfg: ExportConfig,
        when_full: WhenFull,
        dropped: Arc<DroppedRecords>,
    ) -> Result<Exporter, Error> {
        Ok(match cfg.rotate_ns {
            None => Exporter::Whole(Box::new(WholeExport::new(cfg)?)),
            Some(every) => Exporter::Rolling(Box::new(RollingExport::new(
                cfg, every, when_full, dropped,
            )?)),
        })
    }
}

impl Output for Exporter {
    /// The paused time of the PFC bins needs every pause as it ends; the flows that end close
    /// their timeline bins. A rolling export writes ended flows and findings as they come; a
    /// whole one takes the report's at the end.
    fn wants(&self) -> Wants {
        let rolling = matches!(self, Exporter::Rolling(_));
        Wants {
            ended_flows: true,
            ended_reports: rolling,
            ended_pauses: true,
            findings: rolling,
            ..Wants::default()
        }
    }

    /// A rolling export ends the interval `now` left.
    fn clock(&mut self, now: u64, analysis: &dyn FiguresNow) -> Result<(), Error> {
        if let Exporter::Rolling(r) = self {
            if r.rotation_due(now) {
                return r.rotate(now, &analysis.pauses_in_force(), analysis.flows_seen());
            }
        }
        Ok(())
    }

    fn frame(&mut self, p: &PacketSummary, done: &FrameDone<'_>) -> Result<(), Error> {
        match self {
            Exporter::Whole(w) => w.frame(p, done.outcome)?,
            Exporter::Rolling(r) => r.frame(p, done.outcome)?,
        }
        for &(key, iv) in done.pauses_ended {
            match self {
                Exporter::Whole(w) => w.pause_closed(key, iv),
                Exporter::Rolling(r) => r.pause_closed(key, iv),
            }
        }
        Ok(())
    }

    fn has_room(&self) -> bool {
        match self {
            Exporter::Whole(_) => true,
            Exporter::Rolling(r) => r.has_room(),
        }
    }

    fn flow_ended(&mut self, ended: &FlowEnded) -> Result<(), Error> {
        let id = ended.id as usize;
        match self {
            Exporter::Whole(w) => w.flow_ended(id),
            Exporter::Rolling(r) => r.flow_ended(id, ended.report.clone()),
        }
    }

    fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
        match self {
            Exporter::Whole(_) => Ok(()),
            Exporter::Rolling(r) => r.findings(new.ts_ns, &new.findings),
        }
    }

    fn finish(self: Box<Self>, end: &CaptureEnd<'_>) -> Result<(), Error> {
        match *self {
            Exporter::Whole(w) => w.finish(end.report, end.order, end.pauses),
            Exporter::Rolling(r) => r.finish(end.report, end.order, end.open_ids, end.pauses),
        }
    }
}
