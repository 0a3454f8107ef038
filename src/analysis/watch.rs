//! Findings as they first hold, for the outputs that tell them while a capture runs (the
//! `--events` stream and the rolling Parquet dataset's `findings` parts): evaluated on the
//! traffic seen so far at every second of capture time (packet timestamps, so a file gives
//! the same findings at any speed and any --threads), and once more at the end. An idle live
//! link's clock (wall time) also ends a second, once.

use std::collections::{HashMap, HashSet};

use crate::analysis::findings;
use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::decode::summary::PacketSummary;
use crate::decode::FrameCounts;
use crate::model::Finding;
pub use crate::model::{NewFindings, Told};

/// Findings are evaluated this often, in capture time.
pub const EVALUATE_EVERY_NS: u64 = 1_000_000_000;

#[derive(Default)]
pub struct FindingWatch {
    /// Findings already told, by code and what they tell of (each flow of a group told too).
    /// A live capture forgets the flows that ended: a QP used again is a new flow, with
    /// findings of its own.
    told: HashSet<(&'static str, Subject)>,
    /// The size of `told` at which the ended flows are forgotten.
    forget_at: usize,
    next_evaluation_ns: Option<u64>,
}

/// What a finding is told of, with its code: the same code may hold of several.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Subject {
    /// A flow, by its label (a finding of one flow, or each flow of a group).
    Flow(String),
    /// A finding of no flow, by the first frame that shows it: two sources pausing one
    /// priority are two findings of one code, each with its own first frame.
    FirstFrame(u64),
    /// A finding of no flow and no frame, or a group naming no flows: once per code.
    Code,
}

impl Subject {
    fn of(f: &Finding) -> Subject {
        match (&f.flow, f.frames.first()) {
            (Some(label), _) => Subject::Flow(label.clone()),
            (None, Some(&frame)) if f.group.is_none() => Subject::FirstFrame(frame),
            (None, _) => Subject::Code,
        }
    }
}

/// A live capture's told flows are forgotten when `told` grows past this many more entries
/// than it held after the last time.
const FORGET_SLACK: usize = 1_024;

impl FindingWatch {
    /// Called before `s` is analysed: when `s` starts a new second of capture time, the
    /// findings of what came before it are evaluated; those not told before are returned.
    /// `before` counts the frames before `s` (called only for an evaluation).
    pub fn frame(
        &mut self,
        s: &PacketSummary,
        an: &mut Analyzer,
        before: impl FnOnce() -> FrameCounts,
    ) -> Option<NewFindings> {
        match self.next_evaluation_ns {
            None => {
                self.next_evaluation_ns = Some(s.ts_ns + EVALUATE_EVERY_NS);
                None
            }
            Some(next) if s.ts_ns >= next => {
                // The next second after this frame (a quiet stretch has nothing to tell).
                self.next_evaluation_ns = Some(s.ts_ns + EVALUATE_EVERY_NS);
                self.evaluate(an, before())
            }
            // Noteworthy flows end faster than a second would hold them (a live churn of lossy
            // QPs): evaluated now, the second going on.
            Some(_) if an.recent_ended_full() => self.evaluate(an, before()),
            Some(_) => None,
        }
    }

    /// The capture's clock moved to `now` with no frame (an idle live link): what came before
    /// is evaluated once when a second has passed, so that the last burst's findings are told
    /// without waiting for the next frame.
    /// `counted`: the frames so far.
    pub fn clock(
        &mut self,
        now: u64,
        an: &mut Analyzer,
        counted: &FrameCounts,
    ) -> Option<NewFindings> {
        let next = self.next_evaluation_ns?;
        if now < next {
            return an
                .recent_ended_full()
                .then(|| self.evaluate(an, counted.clone()))
                .flatten();
        }
        // Nothing new until a frame comes; the first one starts the next second.
        self.next_evaluation_ns = None;
        self.evaluate(an, counted.clone())
    }

    /// Evaluates the findings of the traffic so far, the flows that ended since the last
    /// evaluation included (then forgotten); those not told before are returned. `counts`:
    /// the frames so far.
    pub fn evaluate(&mut self, an: &mut Analyzer, counts: FrameCounts) -> Option<NewFindings> {
        let meta = CaptureMeta {
            file: String::new(),
            format: None,
            snaplen: 0,
            counts,
            warnings: Vec::new(),
            selection: None,
        };
        self.evaluate_with(an, &meta, false)
    }

    /// The last evaluation, at the capture's end, with what the end knows of it (`meta`: its
    /// warnings, such as a file cut short, which findings' causes name).
    pub fn evaluate_at_end(
        &mut self,
        an: &mut Analyzer,
        meta: &CaptureMeta,
    ) -> Option<NewFindings> {
        self.evaluate_with(an, meta, true)
    }

    fn evaluate_with(
        &mut self,
        an: &mut Analyzer,
        meta: &CaptureMeta,
        at_end: bool,
    ) -> Option<NewFindings> {
        let findings = an.findings_now(meta, at_end);
        let new = self.untold(an.last_ts(), &findings);
        self.forget_ended_flows(an);
        an.findings_evaluated();
        new
    }

    /// A live capture (ended flows freed) forgets what was told of the flows that ended, so
    /// that a QP used again has its own findings told and `told` stays as large as the open
    /// flows, not as the whole run: those just ended at once (the noteworthy ones, which
    /// findings name), every flow no longer open when `told` has doubled.
    fn forget_ended_flows(&mut self, an: &Analyzer) {
        if !an.frees_ended_flows() {
            return;
        }
        if self.told.len() >= self.forget_at {
            let open = an.open_flow_labels();
            self.told.retain(|(_, subject)| match subject {
                Subject::Flow(l) => open.contains(l),
                _ => true,
            });
            self.forget_at = self.told.len() * 2 + FORGET_SLACK;
        } else if an.has_recent_ended() {
            let ended = an.recent_ended_labels();
            self.told.retain(|(_, subject)| match subject {
                Subject::Flow(l) => !ended.contains(l),
                _ => true,
            });
        }
    }

    /// The findings of `findings` not told yet, now told. Each flow's finding is told once;
    /// more than 5 flows of one code first told together are told as one group of those flows
    /// (a churn of lossy QPs is told every second it brings new ones, not once a run). A
    /// finding of no flow is told once by its first frame, or once per code without one; a
    /// group made before (the report's, at the end) when it holds of flows not told yet.
    pub fn untold(&mut self, ts_ns: u64, findings: &[Finding]) -> Option<NewFindings> {
        let mut new = Vec::new();
        // A group made before: the flows of it told now.
        let mut made_before: HashMap<&'static str, u64> = HashMap::new();
        // The worst first, as the report ranks them: of two flows of one label (a QP used
        // again), the finding told is the worse.
        let mut ranked: Vec<&Finding> = findings.iter().collect();
        ranked.sort_by(|a, b| a.severity.cmp(&b.severity).then(b.count.cmp(&a.count)));
        for f in ranked {
            let code = f.code.name();
            let first = match (&f.flow, &f.group) {
                (Some(label), _) => self.told.insert((code, Subject::Flow(label.clone()))),
                (None, Some(_)) if !f.grouped_flows.is_empty() => {
                    let first = f
                        .grouped_flows
                        .iter()
                        .filter(|l| self.told.insert((code, Subject::Flow(l.to_string()))))
                        .count() as u64;
                    made_before.insert(code, first);
                    first > 0
                }
                _ => self.told.insert((code, Subject::of(f))),
            };
            if first {
                new.push(f.clone());
            }
        }
        if new.is_empty() {
            return None;
        }
        // Grouped and ranked as the report's findings are.
        let findings = findings::grouped(new);
        let first_told = findings
            .iter()
            .map(|f| match &f.group {
                Some(g) => made_before.get(f.code.name()).copied().unwrap_or(g.flows),
                None => 1,
            })
            .collect();
        Some(NewFindings {
            ts_ns,
            findings,
            first_told,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FindingCode, Severity};

    fn finding(flow: Option<&str>, frames: &[u64], count: u64) -> Finding {
        Finding {
            severity: Severity::Warning,
            code: FindingCode::PfcPauseRocePriority,
            message: format!("{count} XOFF"),
            cause: String::new(),
            flow: flow.map(String::from),
            count,
            frames: frames.to_vec(),
            frame_refs: Vec::new(),
            group: None,
            grouped_flows: Vec::new(),
        }
    }

    fn lossy(flows: std::ops::Range<u32>) -> Vec<Finding> {
        flows
            .map(|n| Finding {
                code: FindingCode::PsnLoss,
                severity: Severity::Critical,
                ..finding(Some(&format!("qp {n}")), &[u64::from(n)], 1)
            })
            .collect()
    }

    /// (code, flows it groups or 1, flows first told) of each finding told.
    fn told_of(watch: &mut FindingWatch, findings: &[Finding]) -> Vec<(&'static str, u64, u64)> {
        watch.untold(0, findings).map_or(Vec::new(), |n| {
            n.told()
                .map(|t| {
                    let flows = t.finding.group.as_ref().map_or(1, |g| g.flows);
                    (t.finding.code.name(), flows, t.first_told)
                })
                .collect()
        })
    }

    #[test]
    fn flows_first_told_together_are_grouped_among_themselves_every_time() {
        // A churn of lossy QPs: each second brings new ones, each told once. Before, the
        // first group was told and every later one taken for it: one event a run.
        let mut w = FindingWatch::default();
        assert_eq!(told_of(&mut w, &lossy(0..6)), [("psn_loss", 6, 6)]);
        // The same flows, still open, and 7 new: a group of the 7.
        assert_eq!(told_of(&mut w, &lossy(0..13)), [("psn_loss", 7, 7)]);
        assert_eq!(told_of(&mut w, &lossy(0..13)), []);
        // Few new ones are told each on its own, the most severe first.
        let mut mixed = lossy(13..15);
        mixed.push(finding(Some("qp 0"), &[1], 3));
        assert_eq!(
            told_of(&mut w, &mixed),
            [
                ("psn_loss", 1, 1),
                ("psn_loss", 1, 1),
                ("pfc_pause_roce_priority", 1, 1)
            ]
        );
        // A group made before (the report's at the end) is told for its flows not told yet.
        let report = findings::grouped(lossy(0..20));
        assert_eq!(told_of(&mut w, &report), [("psn_loss", 20, 5)]);
        assert_eq!(told_of(&mut w, &report), []);
    }

    fn told(watch: &mut FindingWatch, findings: &[Finding]) -> usize {
        watch.untold(0, findings).map_or(0, |n| n.findings.len())
    }

    #[test]
    fn each_finding_is_told_once_by_its_flow_or_its_first_frame() {
        let mut w = FindingWatch::default();
        // Two sources pausing one priority: two findings of no flow, each told.
        assert_eq!(told(&mut w, &[finding(None, &[10], 5)]), 1);
        assert_eq!(
            told(&mut w, &[finding(None, &[10], 9), finding(None, &[40], 1)]),
            1
        );
        // Their figures grow: told already.
        assert_eq!(
            told(&mut w, &[finding(None, &[10], 20), finding(None, &[40], 7)]),
            0
        );
        // Of no frame: once per code. Of a flow: once per flow.
        assert_eq!(told(&mut w, &[finding(None, &[], 1)]), 1);
        assert_eq!(told(&mut w, &[finding(None, &[], 2)]), 0);
        assert_eq!(told(&mut w, &[finding(Some("a"), &[10], 1)]), 1);
        assert_eq!(told(&mut w, &[finding(Some("a"), &[11], 2)]), 0);
    }
}
