//! The sink of the report mode: every frame goes to the analysis and, with `--expect-*`, to
//! the verification; at the end both produce their part of the report model.

use std::io;
use std::sync::Arc;

use roce_parsers::capture::Record;
use roce_parsers::DecodeOptions;

use crate::analysis::lifetime::EndedParts;
use crate::analysis::report_build::CaptureMeta;
use crate::analysis::shards::Shards;
use crate::analysis::verify::{CaptureContext, Verifier};
use crate::analysis::watch::{FindingWatch, NewFindings};
use crate::analysis::{AnalysisConfig, Analyzer};
use crate::common::error::Error;
use crate::decode::summary::PacketSummary;
use crate::decode::{summarize, FrameCounts};
use crate::model::{
    DroppedRecords, Expectations, Finding, FrameDone, PlotData, Report, SourceStatus,
};
use crate::outputs::{CaptureEnd, Output, Tick, Wants};
use crate::pipeline::{Position, Sink};
use crate::source::origins::FrameOrigins;

pub struct ReportSink {
    analyzer: Analyzer,
    /// The analysis split into shards (`in_shards`), merged into `analyzer` at the end.
    shards: Option<Shards>,
    verifier: Option<Verifier>,
    decode: DecodeOptions,
    /// The outputs written while the capture runs (`--events`, `--parquet`, `--metrics`, the
    /// live screen), and what they want together.
    outputs: Outputs,
    wants: Wants,
    /// Findings as they first hold, when an output tells them.
    watch: Option<FindingWatch>,
    /// Records the outputs dropped (a live capture that outpaced them): they count, the
    /// others tell.
    dropped: Arc<DroppedRecords>,
    /// The flows that end get report entries (`offer_entries`).
    entries_offered: bool,
}

/// The outputs in the order they were added, and the first error one met (a full disk): the
/// output that failed is written no more, the capture stops, and the report is still made.
#[derive(Default)]
struct Outputs {
    list: Vec<Box<dyn Output>>,
    failed: Option<Error>,
}

impl Outputs {
    /// Hands something to every output; one that fails leaves the list.
    fn each(&mut self, mut hand: impl FnMut(&mut dyn Output) -> Result<(), Error>) {
        let failed = &mut self.failed;
        self.list.retain_mut(|o| match hand(o.as_mut()) {
            Ok(()) => true,
            Err(e) => {
                failed.get_or_insert(e);
                false
            }
        });
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
            shards: None,
            verifier: expect.any().then(|| Verifier::new(expect)),
            decode,
            outputs: Outputs::default(),
            wants: Wants::default(),
            watch: None,
            dropped: Arc::default(),
            entries_offered: true,
        }
    }

    /// Where the outputs count the records they drop.
    pub fn dropped(&self) -> Arc<DroppedRecords> {
        Arc::clone(&self.dropped)
    }

    /// Writes `output` too as the capture runs; the analysis builds what it wants.
    pub fn with_output(mut self, output: Box<dyn Output>) -> Self {
        self.wants = self.wants | output.wants();
        self.outputs.list.push(output);
        let wants = self.wants;
        if wants.ended_pauses {
            self.analyzer.keep_closed_pauses();
        }
        if wants.findings {
            // Flows that end between two evaluations are evaluated too.
            self.watch.get_or_insert_with(FindingWatch::default);
            self.analyzer
                .keep_recent_ended(crate::analysis::watch::EVALUATE_EVERY_NS);
        }
        if wants.any_ended() {
            self.analyzer.tell_ended(EndedParts {
                reports: wants.ended_reports,
                counters: wants.ended_counters,
            });
        }
        self
    }

    /// Runs the analysis in `n` shards side by side, when nothing reads it while the capture
    /// runs (no output written with the capture, no frame notes): the report is the same for
    /// any number. Outputs are added before.
    pub fn in_shards(mut self, n: usize) -> Self {
        let cfg = *self.analyzer.config();
        let read_while_running = !self.outputs.list.is_empty() || self.watch.is_some();
        if n > 1 && !read_while_running && cfg.keep_ended && !cfg.notes {
            self.shards = Some(Shards::new(cfg, n));
        }
        self
    }

    /// Whether an output failed while the capture ran (`SinkEnd::failed` tells which).
    pub fn has_failed(&self) -> bool {
        self.outputs.failed.is_some()
    }

    /// A live capture took a batch (`counts`: every frame so far; `source`: what the capture
    /// tells of itself): the outputs see the state now.
    pub fn tick(&mut self, counts: &FrameCounts, source: &SourceStatus) -> io::Result<()> {
        let tick = Tick {
            wall_ns: crate::common::clock::now_ns(),
            counts,
            source,
            analysis: &self.analyzer,
            dropped: &self.dropped,
        };
        self.outputs.each(|o| o.tick(&tick));
        self.outputs.go_on()
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
        let an = &self.analyzer;
        self.outputs.each(|o| o.clock(now, an));
        self.outputs.each(|o| o.flush());
        self.outputs.go_on()
    }

    /// Whether the flows that end in the next chunk get report entries: only when an output
    /// that takes them has room (a live capture's outputs that fell behind would drop them;
    /// making them cost the analysis a third of its time on a churn).
    fn offer_entries(&mut self) {
        if !self.wants.ended_reports {
            return;
        }
        let room = self
            .outputs
            .list
            .iter()
            .any(|o| o.wants().ended_reports && o.has_room());
        if room != self.entries_offered {
            self.entries_offered = room;
            self.analyzer.tell_ended(EndedParts {
                reports: room,
                counters: self.wants.ended_counters,
            });
        }
    }

    /// Hands the flows that just ended to the outputs.
    fn tell_ended(&mut self) {
        if !self.analyzer.has_ended() {
            return;
        }
        for ended in self.analyzer.take_ended() {
            self.outputs.each(|o| o.flow_ended(&ended));
        }
    }

    /// Findings that first hold, to the outputs.
    fn tell_findings(&mut self, new: &NewFindings) {
        self.outputs.each(|o| o.findings(new));
    }

    /// The analysis so far (the sink's tests).
    #[cfg(test)]
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// The frame notes for `--annotate`, once every frame is fed.
    pub fn take_notes(&mut self) -> Option<crate::analysis::notes::Notes> {
        self.analyzer.take_notes()
    }

    /// Ends the analysis, the verification and the outputs: the report, and what the plots
    /// need when timelines were collected. `origins`: several files read as one, so that
    /// findings name their frames in them too; `source`: what the capture told of itself last.
    pub fn finish(
        mut self,
        meta: CaptureMeta,
        ctx: &CaptureContext,
        origins: Option<&FrameOrigins>,
        source: &SourceStatus,
    ) -> Result<SinkEnd, Error> {
        if let Some(shards) = self.shards.take() {
            self.analyzer = shards.merged();
        }
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
        let figures = self.wants.final_figures.then(|| self.analyzer.figures());
        let counts = meta.counts.clone();
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
            self.outputs.each(|o| o.findings(new));
        }
        let capture_end = CaptureEnd {
            report: &report,
            order: &end.order,
            open_ids: &end.open_ids,
            pauses: &end.pauses,
            last_ts,
            counts: &counts,
            source,
            figures: figures.as_ref(),
            dropped: &self.dropped,
        };
        for output in std::mem::take(&mut self.outputs.list) {
            if let Err(e) = output.finish(&capture_end) {
                self.outputs.failed.get_or_insert(e);
            }
        }
        Ok(SinkEnd {
            report,
            plots: end.plots,
            failed: self.outputs.failed,
        })
    }
}

/// What the end of a capture makes: the report, and what the plots need when timelines were
/// collected.
pub struct SinkEnd {
    pub report: Report,
    pub plots: Option<PlotData>,
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

impl ReportSink {
    /// What the analysis made of frame `s`, just fed, to the outputs.
    fn frame_done(&mut self, s: &PacketSummary) {
        if self.outputs.list.is_empty() {
            return;
        }
        let pauses_ended = match self.wants.ended_pauses {
            true => self.analyzer.take_closed_pauses(),
            false => Vec::new(),
        };
        let done = FrameDone {
            outcome: self.analyzer.last_outcome(),
            pauses_ended: &pauses_ended,
        };
        self.outputs.each(|o| o.frame(s, &done));
    }
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
        if let Some(shards) = self.shards.as_mut() {
            shards.feed(chunk);
            if let Some(v) = self.verifier.as_mut() {
                chunk.iter().for_each(|s| v.feed(s));
            }
            return Ok(());
        }
        self.offer_entries();
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
            let an = &self.analyzer;
            self.outputs.each(|o| o.clock(s.ts_ns, an));
            self.analyzer.feed(s);
            self.tell_ended();
            if let Some(v) = self.verifier.as_mut() {
                v.feed(s);
            }
            self.frame_done(s);
        }
        self.outputs.each(|o| o.flush());
        self.outputs.go_on()
    }
}

#[cfg(test)]
mod tests {
    use roce_testgen::{FrameSpec, Net, PcapFlavor, PcapWriter, RoceSpec};

    use roce_parsers::capture::{CaptureParser, Next};

    use super::*;
    use crate::analysis::AnalysisConfig;
    use crate::model::Told;

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

    /// An output that keeps the findings told, for the test to read.
    #[derive(Clone, Default)]
    struct ToldLog(std::sync::Arc<std::sync::Mutex<Vec<Told>>>);

    impl ToldLog {
        fn output(&self) -> Box<dyn Output> {
            Box::new(self.clone())
        }

        fn take(&self) -> Vec<Told> {
            std::mem::take(&mut self.0.lock().unwrap())
        }
    }

    impl Output for ToldLog {
        fn wants(&self) -> Wants {
            Wants {
                findings: true,
                ..Wants::default()
            }
        }

        fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
            self.0.lock().unwrap().extend(new.told());
            Ok(())
        }
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

    /// One flow's end as an output saw it: (own id, label, first and last frame times in s).
    type Ended = (usize, String, f64, f64);

    /// An output that keeps every flow's end: as the flows end, and those still open when
    /// the capture ends.
    #[derive(Clone, Default)]
    struct EndLog(std::sync::Arc<std::sync::Mutex<Vec<Ended>>>);

    impl EndLog {
        fn add(&self, id: usize, f: &crate::model::FlowReport) {
            let end = (id, f.label(), f.first_ts, f.last_ts);
            self.0.lock().unwrap().push(end);
        }
    }

    impl Output for EndLog {
        fn wants(&self) -> Wants {
            Wants {
                ended_flows: true,
                ended_reports: true,
                ..Wants::default()
            }
        }

        fn flow_ended(&mut self, ended: &crate::model::FlowEnded) -> Result<(), Error> {
            let f = ended.report.as_ref().expect("entries asked for");
            assert_eq!(f.id as u64, ended.id + 1);
            self.add(ended.id as usize, f);
            Ok(())
        }

        fn finish(self: Box<Self>, end: &CaptureEnd<'_>) -> Result<(), Error> {
            for (id, f) in end.report.still_open(end.order, end.open_ids) {
                self.add(id, f);
            }
            Ok(())
        }
    }

    /// A live churn whose link falls silent, longer than the flow timeout, every 997 frames
    /// (a replay at top speed stalled so: the same QP written twice as a flow_end, once for
    /// the frames before the silence and once for those after). Fed as a live capture feeds
    /// it, the idle link's clock moving during the silences: every flow ends exactly once, by
    /// the timeout or open at the end, and a QP with frames on both sides of a silence is two
    /// flows, each with its own id: a lifetime that ended after idling past the timeout, and
    /// one begun by its next frame. A key's lifetimes never overlap.
    #[test]
    fn a_silence_past_the_timeout_ends_each_flow_once_and_the_late_frames_begin_another() {
        use roce_testgen::churn::{write_churn, ChurnConfig};
        let churn = ChurnConfig {
            qps: 1_500,
            concurrent: 8,
            lossy_every: 10,
            silence_every: 997,
            silence_ns: 3 * MS,
            ..ChurnConfig::default()
        };
        let mut data = Vec::new();
        write_churn(&mut data, churn).unwrap();
        let cfg = AnalysisConfig {
            flow_timeout_ns: Some(MS),
            keep_ended: false,
            ..AnalysisConfig::default()
        };
        let log = EndLog::default();
        let mut sink = ReportSink::new(cfg, Default::default(), Default::default())
            .with_output(Box::new(log.clone()));
        let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
        let mut meta = CaptureMeta::default();
        while let Next::Record(rec, used) = parser.next(&data[at..], at as u64).unwrap() {
            let s = summarize(meta.counts.frames + 1, &rec, DecodeOptions::default());
            // An idle live link: its clock moves with no frame, short of the next frame.
            let last = meta.counts.last_ts;
            if last > 0 && s.ts_ns > last + MS {
                sink.advance_clock((last + s.ts_ns) / 2, &meta.counts)
                    .unwrap();
            }
            sink.consume(&mut vec![s], &meta.counts).unwrap();
            meta.counts.add(&s);
            at += used;
        }
        let seen = sink.analyzer().flows_seen() as usize;
        let ctx = crate::analysis::verify::CaptureContext::default();
        sink.finish(meta, &ctx, None, &Default::default()).unwrap();
        let mut ends = log.0.lock().unwrap().clone();
        ends.sort_by_key(|e| e.0);
        let ids: Vec<usize> = ends.iter().map(|e| e.0).collect();
        assert_eq!(ids, (0..seen).collect::<Vec<_>>(), "each flow ends once");
        let mut by_key: std::collections::BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
        for (_, label, first, last) in &ends {
            by_key.entry(label).or_default().push((*first, *last));
        }
        let timeout_s = 1e-3;
        let mut split = 0;
        for (label, lives) in &mut by_key {
            lives.sort_by(|a, b| a.0.total_cmp(&b.0));
            split += lives.len() - 1;
            for w in lives.windows(2) {
                assert!(w[1].0 - w[0].1 > timeout_s, "{label}: {lives:?}");
            }
        }
        // The silences split QPs in flight (their requests on both sides): more flows than
        // the churn's own, the extra ones second lifetimes of keys seen before.
        assert!(split > 10, "{split} keys in two lifetimes");
        assert_eq!(seen as u64, churn.flows() + split as u64);
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
        let log = ToldLog::default();
        let cfg = AnalysisConfig {
            flow_timeout_ns: Some(MS),
            keep_ended: false,
            ..AnalysisConfig::default()
        };
        let mut sink =
            ReportSink::new(cfg, Default::default(), Default::default()).with_output(log.output());
        let meta = feed_capture(&mut sink, &data);
        assert!(sink.analyzer().flows_ended() > 5_000);
        assert!(!sink.analyzer().recent_ended_full());
        let during = log.take();
        // The rest (ended since the last evaluation, or open) is told at the end.
        let ctx = crate::analysis::verify::CaptureContext::default();
        sink.finish(meta, &ctx, None, &Default::default()).unwrap();
        let told = [during.clone(), log.take()].concat();
        let loss: Vec<u64> = told
            .iter()
            .filter(|t| t.finding.code == crate::model::FindingCode::PsnLoss)
            .map(|t| t.first_told)
            .collect();
        assert!(during.len() >= 2, "{loss:?}");
        assert_eq!(loss.iter().sum::<u64>(), 3_000, "{loss:?}");
    }

    /// QP 0x100 loses PSN 2 and is idle after 4 ms, while QP 0x101 runs on for 1.4 s: fed
    /// to a sink watching its findings with a 5 ms flow timeout (`keep_ended`: as `-r`).
    fn lossy_qp_ends_while_another_runs_on(keep_ended: bool) -> (ReportSink, CaptureMeta, ToldLog) {
        let mut frames = writes(0x100, &[(0, 0), (1, 1), (3, 3), (4, 4)]);
        let busy: Vec<(u32, u64)> = (0..700).map(|k| (k, 10 + 2 * k as u64)).collect();
        frames.extend(writes(0x101, &busy));
        let cfg = AnalysisConfig {
            flow_timeout_ns: Some(5 * MS),
            keep_ended,
            ..AnalysisConfig::default()
        };
        let log = ToldLog::default();
        let mut sink =
            ReportSink::new(cfg, Default::default(), Default::default()).with_output(log.output());
        let meta = run(&mut sink, frames);
        (sink, meta, log)
    }

    #[test]
    fn a_live_flow_that_ends_between_two_evaluations_has_its_findings_told() {
        // QP 0x100 loses PSN 2 and is idle after 4 ms: a 5 ms timeout ends it long before
        // the first evaluation, a second into the capture, while QP 0x101 runs on.
        let (sink, _, log) = lossy_qp_ends_while_another_runs_on(false);
        assert_eq!(sink.analyzer().flows_ended(), 1, "QP 0x100 ended");
        let told = log.take();
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
        let (sink, meta, log) = lossy_qp_ends_while_another_runs_on(true);
        let is_loss = |f: &Finding| f.code == crate::model::FindingCode::PsnLoss;
        let told = log.take();
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
            let log = ToldLog::default();
            let mut sink = ReportSink::new(cfg, Default::default(), Default::default())
                .with_output(log.output());
            run(&mut sink, frames.clone());
            let told = log.take();
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
