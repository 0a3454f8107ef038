//! What the live view and the status lines draw: a snapshot of the analysis state, taken on
//! the analysis thread about once a second and handed to the display, which never touches
//! the analyzer itself.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use crate::decode::FrameCounts;
use crate::model::{
    DroppedRecords, Figures, FiguresNow, FlowCounters, KernelCounters, SourceStatus,
};

/// QP rows a snapshot carries (the most troubled, busiest or largest first, as the view
/// sorts): a screen shows a few dozen; scrolling reaches these.
pub const ROWS_KEPT: usize = 500;
/// Findings the view lists, newest first.
pub const FINDINGS_KEPT: usize = 200;

/// How the QP table is ordered: `s` in the view cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    #[default]
    Trouble,
    Rate,
    Packets,
}

impl SortBy {
    pub fn next(self) -> Self {
        match self {
            SortBy::Trouble => SortBy::Rate,
            SortBy::Rate => SortBy::Packets,
            SortBy::Packets => SortBy::Trouble,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SortBy::Trouble => "trouble",
            SortBy::Rate => "rate",
            SortBy::Packets => "packets",
        }
    }
}

/// One QP (flow) with its running totals.
#[derive(Debug, Clone, PartialEq)]
pub struct QpRow {
    /// The report's flow label: `10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100`.
    pub label: String,
    pub packets: u64,
    pub bytes: u64,
    /// Bits per second over the last interval.
    pub bps: f64,
    pub gaps: u64,
    pub retx: u64,
    pub naks: u64,
    pub ce: u64,
    pub cnps: u64,
    pub rtt_p50_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
}

impl QpRow {
    /// Loss, resends and NAKs weigh most, then CE without its CNPs.
    pub fn trouble(&self) -> u64 {
        (self.gaps + self.retx + self.naks) * 1000 + self.ce.saturating_sub(self.cnps)
    }
}

/// PFC of one priority from one source MAC.
#[derive(Debug, Clone, PartialEq)]
pub struct PfcRow {
    pub priority: u8,
    pub source: String,
    /// A priority RoCE uses.
    pub roce: bool,
    pub xoff: u64,
    pub paused_ns: u64,
    /// Share of the last interval paused, 0 to 1.
    pub paused_share: f64,
    pub storms: u64,
}

/// A finding as it first holds while the capture runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFinding {
    /// Seconds into the capture.
    pub at_s: u64,
    /// The report's finding code.
    pub code: &'static str,
    pub text: String,
    /// The label of the flow the text names, if it names one: the view shortens it first.
    pub flow: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub interface: String,
    pub filter: String,
    pub elapsed: Duration,
    pub frames: u64,
    pub bytes: u64,
    pub roce: u64,
    pub pfc_frames: u64,
    /// Frames per second and bits per second over the last interval.
    pub fps: f64,
    pub bps: f64,
    pub kernel: Option<KernelCounters>,
    /// Flows open now, and seen over the run (with a flow timeout most may have ended).
    pub flows: usize,
    pub flows_seen: u64,
    pub psn_gaps: u64,
    pub retransmitted: u64,
    pub ce: u64,
    pub cnps: u64,
    /// PSNs the capture missed (the other end acknowledged them): figures are lower bounds.
    pub capture_missed: u64,
    /// Records the outputs could not keep up with and dropped.
    pub records_dropped: u64,
    pub sort: SortBy,
    pub qps: Vec<QpRow>,
    pub pfc: Vec<PfcRow>,
    /// Newest first (the newest `FINDINGS_KEPT`).
    pub findings: Vec<LiveFinding>,
    /// Every finding raised so far.
    pub findings_raised: usize,
}

/// Takes snapshots: keeps what rates and "first raised" need between two of them.
pub struct Snapshots {
    interface: String,
    filter: String,
    started: std::time::Instant,
    last_at: Option<std::time::Instant>,
    last_frames: u64,
    last_bytes: u64,
    /// Per open flow (by `Flow::id`: indexes move as flows end): bytes at the last snapshot.
    last_flow_bytes: rustc_hash::FxHashMap<u64, u64>,
    /// Per (source, priority): paused time at the last snapshot.
    last_paused: std::collections::HashMap<(String, u8), u64>,
    /// The notes of the capture itself raised (nothing seen yet, kernel drops), each once.
    raised: HashSet<(u64, &'static str)>,
    /// The newest `FINDINGS_KEPT` findings, oldest first: a monitor left running for weeks
    /// keeps what the view can show, not every finding of the run.
    pub(crate) findings: VecDeque<LiveFinding>,
    /// Findings raised over the run.
    findings_raised: usize,
}

impl Snapshots {
    pub fn new(interface: &str, filter: &str) -> Self {
        Snapshots {
            interface: interface.into(),
            filter: filter.into(),
            started: std::time::Instant::now(),
            last_at: None,
            last_frames: 0,
            last_bytes: 0,
            last_flow_bytes: Default::default(),
            last_paused: Default::default(),
            raised: HashSet::new(),
            findings: VecDeque::new(),
            findings_raised: 0,
        }
    }

    /// The state now, its QP table ordered by `sort`; ACK round trips are asked for the
    /// rows kept only.
    pub fn take(
        &mut self,
        counts: &FrameCounts,
        analysis: &dyn FiguresNow,
        source: &SourceStatus,
        dropped: &DroppedRecords,
        sort: SortBy,
    ) -> Snapshot {
        let figures = &analysis.figures();
        let now = std::time::Instant::now();
        let secs = self
            .last_at
            .map_or(now - self.started, |t| now - t)
            .as_secs_f64()
            .max(1e-3);
        let elapsed = now - self.started;
        let flows = &figures.flows;
        let before = std::mem::take(&mut self.last_flow_bytes);
        let mut rows: Vec<(usize, QpRow)> = flows
            .iter()
            .enumerate()
            .map(|(i, f)| (i, row(f, before.get(&f.id).copied().unwrap_or(0), secs)))
            .collect();
        self.last_flow_bytes = flows.iter().map(|f| (f.id, f.bytes)).collect();
        order(&mut rows, sort);
        rows.truncate(ROWS_KEPT);
        let ids: Vec<u64> = rows.iter().map(|&(i, _)| flows[i].id).collect();
        let qps = rows
            .into_iter()
            .zip(analysis.ack_rtt_of(&ids))
            .map(|((i, mut r), s)| {
                (r.rtt_p50_us, r.rtt_p99_us) = (s.p50, s.p99);
                r.label = flows[i].flow.to_string();
                r
            })
            .collect();
        let pfc = self.pfc_rows(figures, secs);
        self.note_drops(elapsed, source.kernel);
        let records_dropped = dropped.total();
        if records_dropped > 0 {
            self.note_records_dropped(elapsed, dropped);
        }
        let t = figures.totals;
        let snap = Snapshot {
            interface: self.interface.clone(),
            filter: self.filter.clone(),
            elapsed,
            frames: counts.frames,
            bytes: counts.bytes,
            roce: counts.roce,
            pfc_frames: counts.pfc,
            fps: (counts.frames - self.last_frames) as f64 / secs,
            bps: (counts.bytes - self.last_bytes) as f64 * 8.0 / secs,
            kernel: source.kernel,
            flows: flows.len(),
            flows_seen: figures.flows_seen,
            psn_gaps: t.psn_gaps,
            retransmitted: t.retransmitted,
            ce: t.ce,
            cnps: t.cnps,
            capture_missed: figures.capture_missed,
            records_dropped,
            sort,
            qps,
            pfc,
            findings: self.findings.iter().rev().cloned().collect(),
            findings_raised: self.findings_raised,
        };
        self.last_at = Some(now);
        self.last_frames = counts.frames;
        self.last_bytes = counts.bytes;
        snap
    }

    fn pfc_rows(&mut self, figures: &Figures, secs: f64) -> Vec<PfcRow> {
        figures
            .pfc
            .iter()
            .map(|p| {
                let source = p.source.to_string();
                let before = self
                    .last_paused
                    .insert((source.clone(), p.priority), p.paused_ns)
                    .unwrap_or(0);
                PfcRow {
                    priority: p.priority,
                    source,
                    roce: p.roce,
                    xoff: p.xoff,
                    paused_ns: p.paused_ns,
                    paused_share: ((p.paused_ns - before) as f64 / (secs * 1e9)).min(1.0),
                    storms: p.storms,
                }
            })
            .collect()
    }

    /// A note of the capture itself (`no_roce`: nothing seen yet) among the findings.
    pub fn note(&mut self, code: &'static str, text: &str) {
        self.raise(
            (u64::MAX - 9, code),
            self.started.elapsed(),
            text.to_string(),
        );
    }

    fn raise(&mut self, key: (u64, &'static str), elapsed: Duration, text: String) {
        if self.raised.insert(key) {
            self.push_finding(LiveFinding {
                at_s: elapsed.as_secs(),
                code: key.1,
                text,
                flow: None,
            });
        }
    }

    fn push_finding(&mut self, f: LiveFinding) {
        if self.findings.len() == FINDINGS_KEPT {
            self.findings.pop_front();
        }
        self.findings.push_back(f);
        self.findings_raised += 1;
    }

    /// Findings that first held (as `--events` tells them, ranked as the report ranks them):
    /// shown newest first, each once; those told together in the report's order.
    pub fn findings_told(&mut self, told: &[crate::model::Told]) {
        let at_s = self.started.elapsed().as_secs();
        for f in told.iter().rev().map(|t| &t.finding) {
            self.push_finding(LiveFinding {
                at_s,
                code: f.code.name(),
                text: f.message.clone(),
                flow: f.flow.clone(),
            });
        }
    }

    /// The kernel's drops, once they start: the capture itself is damaged.
    fn note_drops(&mut self, elapsed: Duration, kernel: Option<KernelCounters>) {
        if let Some(k) = kernel.filter(|k| k.dropped + k.if_dropped > 0) {
            self.raise(
                (u64::MAX - 8, "capture_damaged"),
                elapsed,
                format!(
                    "the capture dropped frames ({} for lack of buffer, {} at the interface)",
                    k.dropped, k.if_dropped
                ),
            );
        }
    }
}

impl Snapshots {
    /// The outputs' drops, once they start: the capture is whole, an output lacks records.
    fn note_records_dropped(&mut self, elapsed: Duration, dropped: &DroppedRecords) {
        if let Some(w) = dropped.warning() {
            self.raise((u64::MAX - 9, "records_dropped"), elapsed, w);
        }
    }
}

/// A flow's row; its label is written for the rows kept only. What came back for a data
/// flow (NAKs, CNPs) is counted on it, as in the report.
fn row(f: &FlowCounters, bytes_before: u64, secs: f64) -> QpRow {
    QpRow {
        label: String::new(),
        packets: f.packets,
        bytes: f.bytes,
        bps: f.bytes.saturating_sub(bytes_before) as f64 * 8.0 / secs,
        gaps: f.gaps,
        retx: f.retransmitted,
        naks: f.all_naks(),
        ce: f.ce,
        cnps: f.cnps,
        rtt_p50_us: None,
        rtt_p99_us: None,
    }
}

/// Orders rows by `sort`, ties by flow order.
pub fn order(rows: &mut [(usize, QpRow)], sort: SortBy) {
    match sort {
        SortBy::Trouble => rows.sort_by(|a, b| {
            b.1.trouble()
                .cmp(&a.1.trouble())
                .then(b.1.bps.total_cmp(&a.1.bps))
                .then(a.0.cmp(&b.0))
        }),
        SortBy::Rate => rows.sort_by(|a, b| b.1.bps.total_cmp(&a.1.bps).then(a.0.cmp(&b.0))),
        SortBy::Packets => rows.sort_by(|a, b| b.1.packets.cmp(&a.1.packets).then(a.0.cmp(&b.0))),
    }
}
