//! The sink of the report mode: every frame goes to the analysis and, with `--expect-*`, to
//! the verification; at the end both produce their part of the report model.

use std::io;

use roce_parsers::capture::Record;
use roce_parsers::DecodeOptions;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::verify::{CaptureContext, Verifier};
use crate::analysis::watch::{FindingWatch, NewFindings, Told};
use crate::analysis::{AnalysisConfig, Analyzer};
use crate::common::error::Error;
use crate::decode::summary::PacketSummary;
use crate::decode::{summarize, FrameCounts};
use crate::model::{Expectations, Finding, FlowCounters, PlotData, Report};
use crate::outputs::events::EventWriter;
use crate::outputs::parquet::Exporter;
use crate::pipeline::{Position, Sink};
use crate::source::origins::FrameOrigins;

pub struct ReportSink {
    analyzer: Analyzer,
    verifier: Option<Verifier>,
    decode: DecodeOptions,
    /// `--parquet` and `--events`.
    out: Outputs,
    /// Findings as they first hold, for the events and a rolling export.
    watch: Option<FindingWatch>,
    /// `--metrics`: the final counts of flows that ended since the metrics last took them.
    ended_for_metrics: Option<Vec<FlowCounters>>,
    /// The findings that first held since the last `take_told_findings` (for the metrics and
    /// the live view: the findings the events tell).
    told_findings: Option<Vec<Told>>,
}

/// The outputs written while the capture runs, and the first of them that failed (a full
/// disk): that one is written no more, the capture stops, and the report is still made.
#[derive(Default)]
struct Outputs {
    /// `--parquet`: every frame and the report's tables.
    exporter: Option<Exporter>,
    /// `--events`: findings as they first hold, flows as they end.
    events: Option<EventWriter>,
    failed: Option<Error>,
}

impl Outputs {
    /// `--events` failed: it is closed, and the error kept for the end of the run.
    fn events_failed(&mut self, source: io::Error) {
        self.events = None;
        self.failed.get_or_insert(Error::Output {
            path: "--events".into(),
            source,
        });
    }

    /// `--parquet` failed: as `events_failed`.
    fn export_failed(&mut self, e: Error) {
        self.exporter = None;
        self.failed.get_or_insert(e);
    }

    /// Writes to the events, if on; their failure is kept (`events_failed`).
    fn write_events(&mut self, write: impl FnOnce(&mut EventWriter) -> io::Result<()>) {
        if let Some(Err(e)) = self.events.as_mut().map(write) {
            self.events_failed(e);
        }
    }

    /// Writes to the Parquet export, if on; its failure is kept (`export_failed`).
    fn write_export(&mut self, write: impl FnOnce(&mut Exporter) -> Result<(), Error>) {
        if let Some(Err(e)) = self.exporter.as_mut().map(write) {
            self.export_failed(e);
        }
    }

    /// Findings that first hold, to the outputs that tell them.
    fn tell_outputs(&mut self, new: &NewFindings) {
        self.write_events(|e| e.findings(new.ts_ns, &new.findings));
        self.write_export(|x| x.findings(new.ts_ns, &new.findings));
    }

    /// Whether the capture goes on: an error, naming the output, once one failed (the
    /// capture stops; the frames it already handed over are still analysed).
    fn go_on(&self) -> io::Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(e) => {
                let kind = match e {
                    Error::Output { source, .. } => source.kind(),
                    _ => io::ErrorKind::Other,
                };
                Err(io::Error::new(kind, e.to_string()))
            }
        }
    }
}

impl ReportSink {
    pub fn new(analysis: AnalysisConfig, expect: Expectations, decode: DecodeOptions) -> Self {
        ReportSink {
            analyzer: Analyzer::new(analysis),
            verifier: expect.any().then(|| Verifier::new(expect)),
            decode,
            out: Outputs::default(),
            watch: None,
            ended_for_metrics: None,
            told_findings: None,
        }
    }

    /// Whether an output failed while the capture ran (`SinkEnd::failed` tells which).
    pub fn has_failed(&self) -> bool {
        self.out.failed.is_some()
    }

    /// The kernel's drop counters rose: a `drops` event.
    pub fn tell_drops(&mut self, now: u64, dropped: u64, if_dropped: u64) -> io::Result<()> {
        self.out.write_events(|e| e.drops(now, dropped, if_dropped));
        self.out.go_on()
    }

    /// The analysis tells the flows that end, with their report entries when an output
    /// writes them (events, a rolling export).
    fn want_ended(&mut self) {
        let reports = self.out.events.is_some()
            || self
                .out
                .exporter
                .as_ref()
                .is_some_and(Exporter::wants_ended_reports);
        if reports {
            self.watch();
        }
        self.analyzer.tell_ended(reports);
    }

    /// Keeps the final counts of ended flows for the metrics (`take_ended_for_metrics`), and
    /// the findings as they first hold: the metrics count the findings the events tell.
    pub fn with_metrics(mut self) -> Self {
        self.ended_for_metrics = Some(Vec::new());
        self.want_ended();
        self.keep_told_findings()
    }

    /// Evaluates the findings as the capture runs and keeps those that first hold for
    /// `take_told_findings` (the metrics, the live view).
    pub fn keep_told_findings(mut self) -> Self {
        self.told_findings.get_or_insert_with(Vec::new);
        self.watch();
        self
    }

    /// Evaluates the findings as the capture runs, the flows that end between two
    /// evaluations included.
    fn watch(&mut self) {
        self.watch.get_or_insert_with(FindingWatch::default);
        self.analyzer
            .keep_recent_ended(crate::analysis::watch::EVALUATE_EVERY_NS);
    }

    /// The findings that first held since the last call.
    pub fn take_told_findings(&mut self) -> Vec<Told> {
        self.told_findings
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The flows that ended since the last call: their final counts.
    pub fn take_ended_for_metrics(&mut self) -> Vec<FlowCounters> {
        self.ended_for_metrics
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The capture's clock moved to `now` with no frame (an idle live link): connections idle
    /// longer than the flow timeout end.
    pub fn advance_clock(&mut self, now: u64, counted: &FrameCounts) -> io::Result<()> {
        self.analyzer.sweep(now);
        self.tell_ended();
        if let Some(new) = self
            .watch
            .as_mut()
            .and_then(|w| w.clock(now, &mut self.analyzer, counted))
        {
            self.tell_findings(&new);
        }
        self.out.write_export(|x| x.clock(now, &self.analyzer));
        self.out.write_events(EventWriter::flush);
        self.out.go_on()
    }

    /// Hands the flows that just ended to the outputs that tell them.
    fn tell_ended(&mut self) {
        if !self.analyzer.has_ended() {
            return;
        }
        for mut e in self.analyzer.take_ended() {
            if let Some(r) = &e.report {
                self.out.write_events(|ev| ev.flow_end(e.ended_ns, r));
            }
            // The entry is the export's now: the events are done with it.
            let (id, report) = (e.flow.id as usize, e.report.take());
            self.out.write_export(|x| x.flow_ended(id, report));
            if let Some(m) = self.ended_for_metrics.as_mut() {
                m.push(e.flow.counters(None));
            }
        }
    }

    /// Findings that first hold, to the outputs that tell them and the metrics.
    fn tell_findings(&mut self, new: &NewFindings) {
        self.out.tell_outputs(new);
        if let Some(m) = self.told_findings.as_mut() {
            m.extend(new.told());
        }
    }

    /// Writes the events of the capture too.
    pub fn with_events(mut self, events: EventWriter) -> Self {
        self.out.events = Some(events);
        self.want_ended();
        self
    }

    /// Exports the capture as Parquet tables too.
    pub fn with_export(mut self, exporter: Exporter) -> Self {
        self.out.exporter = Some(exporter);
        self.analyzer.keep_closed_pauses();
        self.want_ended();
        self
    }

    /// The analysis so far (live status view).
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// The frame notes for `--annotate`, once every frame is fed.
    pub fn take_notes(&mut self) -> Option<crate::analysis::notes::Notes> {
        self.analyzer.take_notes()
    }

    /// Ends the analysis and the verification: the report, and what the plots need when
    /// timelines were collected.
    /// `origins`: several files read as one, so that findings name their frames in them too.
    pub fn finish(
        mut self,
        meta: CaptureMeta,
        ctx: &CaptureContext,
        origins: Option<&FrameOrigins>,
    ) -> Result<SinkEnd, Error> {
        let last_ts = meta.counts.last_ts;
        // The flows not evaluated yet (open, or ended since the last evaluation), as every
        // second evaluates them: each flow's findings are told as flows first told together
        // are, grouped among themselves. (Live, the report at the end covers the open flows
        // only.) The report's findings on every flow then tell what is left.
        let new = self
            .watch
            .as_mut()
            .and_then(|w| w.evaluate_at_end(&mut self.analyzer, &meta));
        if let Some(mut new) = new {
            if let Some(o) = origins {
                add_frame_refs(&mut new.findings, o);
            }
            // An output that fails is kept in `failed`: the report is made all the same.
            self.tell_findings(&new);
        }
        let mut told_at_end = self.take_told_findings();
        let end = self.analyzer.finish_all(meta);
        let mut report = end.report;
        if let Some(o) = origins {
            add_frame_refs(&mut report.findings, o);
        }
        report.verify = self.verifier.take().map(|v| v.finish(ctx));
        let last = self
            .watch
            .as_mut()
            .and_then(|w| w.untold(last_ts, &report.findings));
        if let Some(new) = &last {
            self.out.tell_outputs(new);
            told_at_end.extend(new.told());
        }
        if let Some(mut e) = self.out.events.take() {
            if let Err(err) = e.finish(&report, &end.order, &end.open_ids, last_ts) {
                self.out.events_failed(err);
            }
        }
        if let Some(e) = self.out.exporter.take() {
            if let Err(err) = e.finish(&report, &end.order, &end.open_ids, &end.pauses) {
                self.out.export_failed(err);
            }
        }
        Ok(SinkEnd {
            report,
            plots: end.plots,
            told_at_end,
            failed: self.out.failed,
        })
    }
}

/// What the end of a capture makes: the report, what the plots need when timelines were
/// collected, and the findings first told at the end (for the metrics' last figures).
pub struct SinkEnd {
    pub report: Report,
    pub plots: Option<PlotData>,
    pub told_at_end: Vec<Told>,
    /// An output that failed (`--events`, `--parquet`): the report is whole, the run fails.
    pub failed: Option<Error>,
}

/// Each finding's frames (and its group members') named in their own files.
fn add_frame_refs(findings: &mut [Finding], origins: &FrameOrigins) {
    for f in findings {
        f.frame_refs = origins.frame_refs(&f.frames);
        for m in f.group.iter_mut().flat_map(|g| g.worst.iter_mut()) {
            m.frame_refs = origins.frame_refs(&m.frames);
        }
    }
}

/// `counted` and then `frames`.
fn counted_through(counted: &FrameCounts, frames: &[PacketSummary]) -> FrameCounts {
    let mut counts = counted.clone();
    for s in frames {
        counts.add(s);
    }
    counts
}

impl Sink for ReportSink {
    type Chunk = Vec<PacketSummary>;
    type Decoder = DecodeOptions;

    fn decoder(&self) -> DecodeOptions {
        self.decode
    }

    fn chunk(frames: usize) -> Vec<PacketSummary> {
        Vec::with_capacity(frames)
    }

    fn decode_into(
        options: &DecodeOptions,
        _at: Position,
        record: &Record<'_>,
        chunk: &mut Vec<PacketSummary>,
    ) {
        chunk.push(summarize(record.frame, record, *options));
    }

    fn summaries(chunk: &Vec<PacketSummary>) -> &[PacketSummary] {
        chunk
    }

    fn clear(chunk: &mut Vec<PacketSummary>) {
        chunk.clear();
    }

    /// Every frame of the chunk is analysed, even after an output failed: the capture stops
    /// at the error returned, and the report covers every frame counted.
    fn consume(&mut self, chunk: &mut Vec<PacketSummary>, counted: &FrameCounts) -> io::Result<()> {
        for (k, s) in chunk.iter().enumerate() {
            // The frames before `s`, counted only when findings are evaluated (rarely).
            let before = || counted_through(counted, &chunk[..k]);
            if let Some(new) = self
                .watch
                .as_mut()
                .and_then(|w| w.frame(s, &mut self.analyzer, before))
            {
                self.tell_findings(&new);
            }
            self.out.write_export(|x| x.clock(s.ts_ns, &self.analyzer));
            self.analyzer.feed(s);
            self.tell_ended();
            if let Some(v) = self.verifier.as_mut() {
                v.feed(s);
            }
            let an = &mut self.analyzer;
            self.out.write_export(|x| x.frame(s, an));
        }
        self.out.write_events(EventWriter::flush);
        self.out.go_on()
    }
}

#[cfg(test)]
mod tests {
    use roce_testgen::{FrameSpec, Net, PcapFlavor, PcapWriter, RoceSpec};

    use roce_parsers::capture::{CaptureParser, Next};

    use super::*;
    use crate::analysis::AnalysisConfig;

    const MS: u64 = 1_000_000;
    const T0: u64 = 1_700_000_000_000_000_000;

    /// RDMA WRITEs of QP `qp` (host 1 to 2) with these PSNs at these times (ms).
    fn writes(qp: u32, sent: &[(u32, u64)]) -> Vec<(u64, Vec<u8>)> {
        let (a, b) = ([0x02, 0, 0, 0, 0, 1], [0x02, 0, 0, 0, 0, 2]);
        let net = Net::v4([10, 0, 0, 1], [10, 0, 0, 2], 0x6a);
        sent.iter()
            .map(|&(psn, ms)| {
                let s = RoceSpec::new(0x0a, qp, psn).payload(64).reth(0x1000, 1, 64);
                let frame = roce_testgen::frames::rocev2(&FrameSpec::new(a, b), net, 50000, &s);
                (T0 + ms * MS, frame)
            })
            .collect()
    }

    /// Feeds `frames` to `sink` one at a time, as a capture would.
    fn run(sink: &mut ReportSink, mut frames: Vec<(u64, Vec<u8>)>) -> CaptureMeta {
        frames.sort_by_key(|f| f.0);
        let mut w = PcapWriter::new(Vec::new(), PcapFlavor::NANO_LE, 1, 65535).unwrap();
        for (t, f) in &frames {
            w.write(*t, f).unwrap();
        }
        feed_capture(sink, &w.into_inner())
    }

    /// Feeds the frames of the pcap `data` to `sink` one at a time.
    fn feed_capture(sink: &mut ReportSink, data: &[u8]) -> CaptureMeta {
        let (mut parser, mut at) = CaptureParser::new(data).unwrap();
        let mut meta = CaptureMeta::default();
        while let Next::Record(rec, used) = parser.next(&data[at..], at as u64).unwrap() {
            let s = summarize(meta.counts.frames + 1, &rec, DecodeOptions::default());
            sink.consume(&mut vec![s], &meta.counts).unwrap();
            meta.counts.add(&s);
            at += used;
        }
        meta
    }

    #[test]
    fn a_live_churn_of_lossy_qps_tells_every_one_within_its_second() {
        // 3,000 QPs, each losing a request, all ended within the capture's first 40 ms by a
        // 1 ms timeout: the noteworthy flows ended are evaluated each time 1,024 wait (before,
        // those beyond 1,024 a second were never evaluated), and the memory holds no more.
        use roce_testgen::churn::{write_churn, ChurnConfig};
        let churn = ChurnConfig {
            qps: 3_000,
            lossy_every: 1,
            ..ChurnConfig::default()
        };
        let mut data = Vec::new();
        write_churn(&mut data, churn).unwrap();
        let cfg = AnalysisConfig {
            flow_timeout_ns: Some(MS),
            keep_ended: false,
            ..AnalysisConfig::default()
        };
        let mut sink =
            ReportSink::new(cfg, Default::default(), Default::default()).keep_told_findings();
        let meta = feed_capture(&mut sink, &data);
        assert!(sink.analyzer().flows_ended() > 5_000);
        assert!(!sink.analyzer().recent_ended_full());
        let mut told = sink.take_told_findings();
        let during = told.len();
        // The rest (ended since the last evaluation, or open) is told at the end.
        let ctx = crate::analysis::verify::CaptureContext::default();
        told.extend(sink.finish(meta, &ctx, None).unwrap().told_at_end);
        let loss: Vec<u64> = told
            .iter()
            .filter(|t| t.finding.code == crate::model::FindingCode::PsnLoss)
            .map(|t| t.first_told)
            .collect();
        assert!(during >= 2, "{loss:?}");
        assert_eq!(loss.iter().sum::<u64>(), 3_000, "{loss:?}");
    }

    /// QP 0x100 loses PSN 2 and is idle after 4 ms, while QP 0x101 runs on for 1.4 s: fed
    /// to a sink watching its findings with a 5 ms flow timeout (`keep_ended`: as `-r`).
    fn lossy_qp_ends_while_another_runs_on(keep_ended: bool) -> (ReportSink, CaptureMeta) {
        let mut frames = writes(0x100, &[(0, 0), (1, 1), (3, 3), (4, 4)]);
        let busy: Vec<(u32, u64)> = (0..700).map(|k| (k, 10 + 2 * k as u64)).collect();
        frames.extend(writes(0x101, &busy));
        let cfg = AnalysisConfig {
            flow_timeout_ns: Some(5 * MS),
            keep_ended,
            ..AnalysisConfig::default()
        };
        let mut sink =
            ReportSink::new(cfg, Default::default(), Default::default()).keep_told_findings();
        let meta = run(&mut sink, frames);
        (sink, meta)
    }

    #[test]
    fn a_live_flow_that_ends_between_two_evaluations_has_its_findings_told() {
        // QP 0x100 loses PSN 2 and is idle after 4 ms: a 5 ms timeout ends it long before
        // the first evaluation, a second into the capture, while QP 0x101 runs on.
        let (mut sink, _) = lossy_qp_ends_while_another_runs_on(false);
        assert_eq!(sink.analyzer().flows_ended(), 1, "QP 0x100 ended");
        let told = sink.take_told_findings();
        let lost = told
            .iter()
            .map(|t| &t.finding)
            .find(|f| f.code == crate::model::FindingCode::PsnLoss)
            .unwrap_or_else(|| panic!("psn_loss not told: {told:?}"));
        assert_eq!(
            lost.flow.as_deref(),
            Some("10.0.0.1 > 10.0.0.2 qp 0x000100")
        );
        // Seen once, then forgotten: the ended flow's state is not held on.
        assert!(!sink.analyzer().has_recent_ended());
    }

    #[test]
    fn with_r_an_ended_flow_is_evaluated_once_after_it_ended_not_every_second() {
        // -r keeps every ended flow for the report. QP 0x100 loses PSN 2 and ends after
        // 9 ms; the evaluation at 1 s tells its loss, and the next ones look at it no more
        // (every kept flow evaluated every second made `-r --events` quadratic).
        let (mut sink, meta) = lossy_qp_ends_while_another_runs_on(true);
        let is_loss = |f: &Finding| f.code == crate::model::FindingCode::PsnLoss;
        let told = sink.take_told_findings();
        assert!(told.iter().any(|t| is_loss(&t.finding)), "{told:?}");
        let again = sink.analyzer().findings_now(&meta, false);
        assert!(!again.iter().any(is_loss), "{again:?}");
    }

    #[test]
    fn a_qp_used_again_live_has_its_findings_told_again() {
        // QP 0x100 loses a PSN, ends, and comes back at 1.5 s (a new flow) losing another:
        // each flow's loss is told. QP 0x101 keeps the capture busy.
        let mut frames = writes(0x100, &[(0, 0), (1, 1), (3, 3)]);
        frames.extend(writes(0x100, &[(10, 1_500), (11, 1_501), (13, 1_503)]));
        let busy: Vec<(u32, u64)> = (0..1_500).map(|k| (k, 10 + 2 * k as u64)).collect();
        frames.extend(writes(0x101, &busy));
        let told_losses = |keep_ended| {
            let cfg = AnalysisConfig {
                flow_timeout_ns: Some(5 * MS),
                keep_ended,
                ..AnalysisConfig::default()
            };
            let mut sink =
                ReportSink::new(cfg, Default::default(), Default::default()).keep_told_findings();
            run(&mut sink, frames.clone());
            let told = sink.take_told_findings();
            told.iter()
                .filter(|t| t.finding.code == crate::model::FindingCode::PsnLoss)
                .map(|t| t.finding.flow.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        let label = "10.0.0.1 > 10.0.0.2 qp 0x000100".to_string();
        assert_eq!(told_losses(false), vec![label.clone(), label.clone()]);
        // -r: both flows stay in the report under one label; told once, as before.
        assert_eq!(told_losses(true), vec![label]);
    }
}
