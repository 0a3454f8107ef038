//! Values in, bytes out: the report's renderers (text, JSON, HTML, plots, the report
//! directory, the correlation's), the Parquet dataset, the `--events` stream, the Prometheus
//! metrics and their HTTP server, the live view and status lines, the annotated copy, and the
//! per-frame printer.

pub mod annotate;
pub mod events;
pub mod live;
pub mod metrics;
pub mod packets;
pub mod parquet;
pub mod report;

use crate::common::error::Error;
use crate::decode::summary::PacketSummary;
use crate::decode::FrameCounts;
use crate::model::{
    DroppedRecords, Figures, FiguresNow, FlowEnded, FrameDone, NewFindings, Report, SourcePause,
    SourceStatus,
};

/// An output written while a capture runs. The run's sink hands each output in its list the
/// values it said it wants, and knows none by name. A method that fails stops that output (it
/// is written no more) and the capture; the report is made all the same.
pub trait Output: Send {
    /// What it takes: the analysis builds only what some output wants.
    fn wants(&self) -> Wants;

    /// The capture's clock reached `now`: before each frame, and on an idle live link.
    fn clock(&mut self, _now: u64, _analysis: &dyn FiguresNow) -> Result<(), Error> {
        Ok(())
    }

    /// One frame, just analysed.
    fn frame(&mut self, _p: &PacketSummary, _done: &FrameDone<'_>) -> Result<(), Error> {
        Ok(())
    }

    /// A flow ended before the capture did.
    fn flow_ended(&mut self, _ended: &FlowEnded) -> Result<(), Error> {
        Ok(())
    }

    /// Findings that first hold.
    fn findings(&mut self, _new: &NewFindings) -> Result<(), Error> {
        Ok(())
    }

    /// After each batch of frames (a live capture's come at least every 50 ms): written lines
    /// go out.
    fn flush(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// A live capture took a batch (empty on an idle link): the state of the capture now.
    fn tick(&mut self, _tick: &Tick<'_>) -> Result<(), Error> {
        Ok(())
    }

    /// Whether the output has room now for the entries of the flows that end. A live
    /// output that fell behind (its queue full) has none: when no output has, the analysis
    /// makes no entries, and the outputs count the flows they were told of without one as
    /// dropped.
    fn has_room(&self) -> bool {
        true
    }

    /// The capture ended: the report, and what the outputs have not been told yet.
    fn finish(self: Box<Self>, _end: &CaptureEnd<'_>) -> Result<(), Error> {
        Ok(())
    }
}

/// What an output takes beyond the frames' outcomes; the union of the list's is what the
/// analysis builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wants {
    /// The flows that end (their ids and times).
    pub ended_flows: bool,
    /// With the report entry of each.
    pub ended_reports: bool,
    /// With the final counters of each.
    pub ended_counters: bool,
    /// The PFC pauses each frame ended.
    pub ended_pauses: bool,
    /// The findings as they first hold (evaluated about once a second of capture time).
    pub findings: bool,
    /// The figures at the end of the capture.
    pub final_figures: bool,
}

impl std::ops::BitOr for Wants {
    type Output = Wants;

    fn bitor(self, o: Wants) -> Wants {
        Wants {
            ended_flows: self.ended_flows || o.ended_flows,
            ended_reports: self.ended_reports || o.ended_reports,
            ended_counters: self.ended_counters || o.ended_counters,
            ended_pauses: self.ended_pauses || o.ended_pauses,
            findings: self.findings || o.findings,
            final_figures: self.final_figures || o.final_figures,
        }
    }
}

impl Wants {
    /// Whether the flows that end are told at all.
    pub fn any_ended(&self) -> bool {
        self.ended_flows || self.ended_reports || self.ended_counters
    }
}

/// A live capture's state after a batch.
pub struct Tick<'a> {
    /// The wall clock now (ns since the epoch).
    pub wall_ns: u64,
    pub counts: &'a FrameCounts,
    pub source: &'a SourceStatus,
    pub analysis: &'a dyn FiguresNow,
    /// Records the outputs dropped so far (a live capture that outpaced them).
    pub dropped: &'a DroppedRecords,
}

/// The end of a capture, as the outputs see it.
pub struct CaptureEnd<'a> {
    pub report: &'a Report,
    /// `order[i]`: the flow id of report flow `i + 1`.
    pub order: &'a [usize],
    /// The ids of the flows still open at the end.
    pub open_ids: &'a [usize],
    /// The PFC pauses the end of the analysis closed.
    pub pauses: &'a [SourcePause],
    /// The capture's last frame time.
    pub last_ts: u64,
    pub counts: &'a FrameCounts,
    pub source: &'a SourceStatus,
    /// The figures just before the end, when an output wants them (`Wants::final_figures`).
    pub figures: Option<&'a Figures>,
    /// Records the outputs dropped over the run.
    pub dropped: &'a DroppedRecords,
}
