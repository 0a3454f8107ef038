//! Findings as they first hold, for the outputs that tell them while a capture runs (the
//! `--events` stream and the rolling Parquet dataset's `findings` parts): evaluated on the
//! traffic seen so far at every second of capture time (packet timestamps, so a file gives
//! the same findings at any speed and any --threads), and once more at the end. An idle live
//! link's clock (wall time) also ends a second, once.

use std::collections::HashSet;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::decode::FrameCounts;
use crate::model::Finding;
use crate::summary::PacketSummary;

/// Findings are evaluated this often, in capture time.
pub const EVALUATE_EVERY_NS: u64 = 1_000_000_000;

#[derive(Default)]
pub struct FindingWatch {
    /// Findings already told: by code and flow (a capture-wide finding by its code).
    told: HashSet<(&'static str, Option<String>)>,
    next_evaluation_ns: Option<u64>,
    /// The frames so far, for the capture-wide findings of an evaluation.
    counts: FrameCounts,
}

/// Findings that first hold at `ts_ns`.
pub struct NewFindings {
    pub ts_ns: u64,
    pub findings: Vec<Finding>,
}

impl FindingWatch {
    /// Called before `s` is analysed: when `s` starts a new second of capture time, the
    /// findings of what came before it are evaluated; those not told before are returned.
    pub fn frame(&mut self, s: &PacketSummary, an: &mut Analyzer) -> Option<NewFindings> {
        let new = match self.next_evaluation_ns {
            None => {
                self.next_evaluation_ns = Some(s.ts_ns + EVALUATE_EVERY_NS);
                None
            }
            Some(next) if s.ts_ns >= next => {
                // The next second after this frame (a quiet stretch has nothing to tell).
                self.next_evaluation_ns = Some(s.ts_ns + EVALUATE_EVERY_NS);
                self.evaluate(an)
            }
            Some(_) => None,
        };
        self.counts.add(s);
        new
    }

    /// The capture's clock moved to `now` with no frame (an idle live link): what came before
    /// is evaluated once when a second has passed, so that the last burst's findings are told
    /// without waiting for the next frame.
    pub fn clock(&mut self, now: u64, an: &mut Analyzer) -> Option<NewFindings> {
        let next = self.next_evaluation_ns?;
        if now < next {
            return None;
        }
        // Nothing new until a frame comes; the first one starts the next second.
        self.next_evaluation_ns = None;
        self.evaluate(an)
    }

    /// Evaluates the findings of the traffic so far, the flows that ended since the last
    /// evaluation included (then forgotten); those not told before are returned.
    pub fn evaluate(&mut self, an: &mut Analyzer) -> Option<NewFindings> {
        let meta = CaptureMeta {
            file: String::new(),
            format: None,
            snaplen: 0,
            counts: self.counts.clone(),
            warnings: Vec::new(),
            selection: None,
        };
        let findings = an.findings_now(&meta);
        an.forget_recent_ended();
        self.untold(an.last_ts(), &findings)
    }

    /// The findings of `findings` not told yet, now told (the final report's at the end).
    pub fn untold(&mut self, ts_ns: u64, findings: &[Finding]) -> Option<NewFindings> {
        let new: Vec<Finding> = findings
            .iter()
            .filter(|f| self.told.insert((f.code.name(), f.flow.clone())))
            .cloned()
            .collect();
        (!new.is_empty()).then_some(NewFindings {
            ts_ns,
            findings: new,
        })
    }
}
