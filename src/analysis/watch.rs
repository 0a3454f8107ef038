//! Findings as they first hold, for the outputs that tell them while a capture runs (the
//! `--events` stream and the rolling Parquet dataset's `findings` parts): evaluated on the
//! traffic seen so far at every second of capture time (packet timestamps, so a file gives
//! the same findings at any speed and any --threads), and once more at the end. An idle live
//! link's clock (wall time) also ends a second, once.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use crate::analysis::findings;
use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::decode::summary::PacketSummary;
use crate::decode::FrameCounts;
use crate::model::{Escalation, Finding, Severity};
pub use crate::model::{NewFindings, Told};

/// Findings are evaluated this often, in capture time.
pub const EVALUATE_EVERY_NS: u64 = 1_000_000_000;

#[derive(Default)]
pub struct FindingWatch {
    /// Findings already told, by code and what they tell of (each flow of a group told too),
    /// with the severity last told: a finding whose severity rises is told again.
    /// A live capture forgets the flows that ended: a QP used again is a new flow, with
    /// findings of its own.
    told: HashMap<(&'static str, Subject), Severity>,
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
            self.told.retain(|(_, subject), _| match subject {
                Subject::Flow(l) => open.contains(l),
                _ => true,
            });
            self.forget_at = self.told.len() * 2 + FORGET_SLACK;
        } else if an.has_recent_ended() {
            let ended = an.recent_ended_labels();
            self.told.retain(|(_, subject), _| match subject {
                Subject::Flow(l) => !ended.contains(l),
                _ => true,
            });
        }
    }

    /// The findings of `findings` not told yet, now told, and those told before at a lesser
    /// severity (escalated). Each flow's finding is told once, and again each time its
    /// severity rises; more than 5 flows of one code first told together are told as one group
    /// of those flows (a churn of lossy QPs is told every second it brings new ones, not once
    /// a run), as are more than 5 rising together from one severity to another. A finding of
    /// no flow is told once by its first frame, or once per code without one; a group made
    /// before (the report's, at the end) when it holds of flows not told yet (its severity is
    /// its worst flow's, so it tells no rise of the others).
    pub fn untold(&mut self, ts_ns: u64, findings: &[Finding]) -> Option<NewFindings> {
        let mut new = Vec::new();
        let mut rose: Vec<(Severity, Finding)> = Vec::new();
        // A group made before: the flows of it told now.
        let mut made_before: HashMap<&'static str, u64> = HashMap::new();
        // The worst first, as the report ranks them: of two flows of one label (a QP used
        // again), the finding told is the worse.
        let mut ranked: Vec<&Finding> = findings.iter().collect();
        ranked.sort_by(|a, b| a.severity.cmp(&b.severity).then(b.count.cmp(&a.count)));
        for f in ranked {
            let code = f.code.name();
            let heard = match (&f.flow, &f.group) {
                (Some(label), _) => self.hear((code, Subject::Flow(label.clone())), f.severity),
                (None, Some(_)) if !f.grouped_flows.is_empty() => {
                    let first = f
                        .grouped_flows
                        .iter()
                        .filter(|l| self.first_of((code, Subject::Flow(l.to_string())), f.severity))
                        .count() as u64;
                    made_before.insert(code, first);
                    if first > 0 {
                        Heard::First
                    } else {
                        Heard::Before
                    }
                }
                _ => self.hear((code, Subject::of(f)), f.severity),
            };
            match heard {
                Heard::First => new.push(f.clone()),
                Heard::Rose(from) => rose.push((from, f.clone())),
                Heard::Before => {}
            }
        }
        if new.is_empty() && rose.is_empty() {
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
            escalated: escalations(rose),
        })
    }

    /// Finding `key` heard at `severity`: first, risen from the severity last told, or told.
    fn hear(&mut self, key: (&'static str, Subject), severity: Severity) -> Heard {
        match self.told.entry(key) {
            Entry::Vacant(v) => {
                v.insert(severity);
                Heard::First
            }
            // Critical ranks first: a severity that ranks before the one told is higher.
            Entry::Occupied(mut o) if severity < *o.get() => Heard::Rose(o.insert(severity)),
            Entry::Occupied(_) => Heard::Before,
        }
    }

    /// Whether `key` (a flow of a group made before, at `severity`) is told for the first
    /// time.
    fn first_of(&mut self, key: (&'static str, Subject), severity: Severity) -> bool {
        match self.told.entry(key) {
            Entry::Vacant(v) => {
                v.insert(severity);
                true
            }
            Entry::Occupied(_) => false,
        }
    }
}

/// What `untold` made of a finding.
enum Heard {
    First,
    /// Told before at this lesser severity.
    Rose(Severity),
    Before,
}

/// The findings that rose, grouped as new ones are, apart for each step (from, to): the
/// highest severity reached first.
fn escalations(rose: Vec<(Severity, Finding)>) -> Vec<Escalation> {
    let mut by_step: BTreeMap<(Severity, Severity), Vec<Finding>> = BTreeMap::new();
    for (from, f) in rose {
        by_step.entry((f.severity, from)).or_default().push(f);
    }
    by_step
        .into_iter()
        .flat_map(|((_, from), list)| {
            findings::grouped(list)
                .into_iter()
                .map(move |finding| Escalation {
                    flows: finding.group.as_ref().map_or(1, |g| g.flows),
                    finding,
                    from,
                })
        })
        .collect()
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

    /// (code, from, to, flows) of each rise told.
    fn rises_of(
        watch: &mut FindingWatch,
        findings: &[Finding],
    ) -> Vec<(&'static str, Severity, Severity, u64)> {
        watch.untold(0, findings).map_or(Vec::new(), |n| {
            n.escalated
                .iter()
                .map(|e| (e.finding.code.name(), e.from, e.finding.severity, e.flows))
                .collect()
        })
    }

    fn at(severity: Severity, f: Finding) -> Finding {
        Finding { severity, ..f }
    }

    #[test]
    fn a_finding_whose_severity_rises_is_told_once_for_each_rise() {
        use Severity::{Critical, Info, Warning};
        let mut w = FindingWatch::default();
        // An incast (no flow, no frame): information first, told once.
        let incast = |s| {
            at(
                s,
                Finding {
                    code: FindingCode::Incast,
                    ..finding(None, &[], 4)
                },
            )
        };
        assert_eq!(told(&mut w, &[incast(Info)]), 1);
        assert_eq!(rises_of(&mut w, &[incast(Info)]), []);
        // Evidence grew: a warning, told as a rise, not as a new finding; then critical.
        let rose = w.untold(0, &[incast(Warning)]).expect("the rise told");
        assert!(rose.findings.is_empty());
        assert_eq!(rose.escalated.len(), 1);
        assert_eq!((rose.escalated[0].from, rose.escalated[0].flows), (Info, 1));
        assert_eq!(rose.escalated[0].finding.severity, Warning);
        assert_eq!(rises_of(&mut w, &[incast(Warning)]), []);
        assert_eq!(
            rises_of(&mut w, &[incast(Critical)]),
            [("incast", Warning, Critical, 1)]
        );
        // Lower again: nothing is told (a rise only).
        assert!(w.untold(0, &[incast(Info)]).is_none());
        // Of a flow, by its flow; a new finding and a rise told together.
        let a = |s| at(s, finding(Some("a"), &[1], 1));
        assert_eq!(told(&mut w, &[a(Info)]), 1);
        let both = w
            .untold(0, &[a(Warning), finding(Some("b"), &[2], 1)])
            .unwrap();
        assert_eq!(both.findings.len(), 1);
        assert_eq!(both.findings[0].flow.as_deref(), Some("b"));
        assert_eq!(both.escalated[0].finding.flow.as_deref(), Some("a"));
    }

    #[test]
    fn flows_rising_together_are_grouped_by_their_step() {
        use Severity::{Critical, Info, Warning};
        let mut w = FindingWatch::default();
        let mut first: Vec<Finding> = lossy(0..9).into_iter().map(|f| at(Warning, f)).collect();
        first[8].severity = Info;
        told_of(&mut w, &first);
        // Seven rise from warning to critical, and the one told as information too.
        let mut now: Vec<Finding> = lossy(0..9);
        now[7].severity = Warning;
        assert_eq!(
            rises_of(&mut w, &now),
            [
                ("psn_loss", Warning, Critical, 7),
                ("psn_loss", Info, Critical, 1)
            ]
        );
        // A group made before (the report's at the end) tells its new flows only: its
        // severity is its worst flow's, no rise of the others.
        let report = findings::grouped(lossy(0..12));
        let end = w.untold(0, &report).unwrap();
        assert_eq!(end.first_told, [3]);
        assert!(end.escalated.is_empty());
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
