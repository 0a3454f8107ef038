//! The Prometheus figures of a capture (`--metrics`): counters of frames, flows, per-QP PSN
//! loss, retransmissions, NAKs, CE and CNPs, PFC pause per source and priority, findings, and
//! an ACK RTT histogram, in the text exposition format. Rebuilt from the analysis state about
//! once a second on the analysis thread; the HTTP server only hands out the latest text.
//!
//! Cardinality is bounded: at most `max_qps` QPs have series of their own. A QP beyond them
//! counts in the series labelled `src="other",dst="other",qp="other"`; when the table is full
//! and a new QP comes, the least recently seen QP gives up its series if it has been idle for
//! `EVICT_IDLE_NS`, and a series that comes back starts from 0 (Prometheus takes that as a
//! counter reset). A QP's series also leaves when its flow ends (`--flow-timeout`), after one
//! last update shows its final counts.
//!
//! A count is shown in one series only, once: `other` takes what QPs counted while they had no
//! series of their own, never what a series showed. So `sum(rate(...))` and `sum(increase(...))`
//! over the QP series count every packet once, also over a window in which QPs left (moving a
//! leaving QP's counts into `other` counted them twice there). While no QP has left, the sums of
//! the series also equal the totals.
//!
//! Every finding code has its series from the start, at 0 for each severity (and each rise of
//! severity): a series born at 1 is a first sample Prometheus's `increase()` does not count, so
//! an alert on a finding's first raise would never fire.

pub mod http;
pub mod publish;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::decode::FrameCounts;
use crate::model::{
    Figures, FlowCounters, FlowLabel, PfcFigures, Severity, SourceStatus, DROPPABLE, RTT_BOUNDS_NS,
};

/// A flow's label with its addresses as they are: what a QP's series is named by.
type QpKey = FlowLabel<std::net::IpAddr>;

/// A tracked QP idle this long (capture time) makes room for a new one.
pub const EVICT_IDLE_NS: u64 = 1_000_000_000;

/// What the metrics count of a QP: its counters, less what a series already showed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QpCounts {
    packets: u64,
    bytes: u64,
    gaps: u64,
    /// PSNs lost on the network (resent, or missing), not those the capture missed.
    lost: u64,
    retx: u64,
    ce: u64,
    cnps: u64,
    /// NAKs by code, as `FlowCounters::naks`.
    naks: [u64; 6],
}

const NAK_CODES: [&str; 6] = [
    "psn_sequence_error",
    "rnr",
    "remote_access_error",
    "remote_operational_error",
    "invalid_request",
    "other",
];

impl From<&FlowCounters> for QpCounts {
    fn from(f: &FlowCounters) -> Self {
        QpCounts {
            packets: f.packets,
            bytes: f.bytes,
            gaps: f.gaps,
            lost: f.lost,
            retx: f.retransmitted,
            ce: f.ce,
            cnps: f.cnps,
            naks: f.naks,
        }
    }
}

impl QpCounts {
    fn minus(self, o: QpCounts) -> QpCounts {
        let mut naks = [0; 6];
        for (i, n) in naks.iter_mut().enumerate() {
            *n = self.naks[i].saturating_sub(o.naks[i]);
        }
        QpCounts {
            packets: self.packets.saturating_sub(o.packets),
            bytes: self.bytes.saturating_sub(o.bytes),
            gaps: self.gaps.saturating_sub(o.gaps),
            lost: self.lost.saturating_sub(o.lost),
            retx: self.retx.saturating_sub(o.retx),
            ce: self.ce.saturating_sub(o.ce),
            cnps: self.cnps.saturating_sub(o.cnps),
            naks,
        }
    }

    pub fn plus(&mut self, o: QpCounts) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.gaps += o.gaps;
        self.lost += o.lost;
        self.retx += o.retx;
        self.ce += o.ce;
        self.cnps += o.cnps;
        for (a, b) in self.naks.iter_mut().zip(o.naks) {
            *a += b;
        }
    }
}

/// A per-QP counter family: its name, help and the count it shows.
type Family = (&'static str, &'static str, fn(&QpCounts) -> u64);

/// A QP with a series of its own: what its flow had counted when the series started, and
/// when it was last seen.
#[derive(Debug, Clone, Copy)]
struct Tracked {
    key: QpKey,
    base: QpCounts,
    last_ts: u64,
    /// Its flow ended: the next update shows its final counts, then the series leaves.
    ended: bool,
}

/// The figures and the QP table between two updates.
pub struct Metrics {
    max_qps: usize,
    /// Per open flow (by `Flow::id`): the counts already accounted for (in a QP series or in
    /// `other`).
    seen: FxHashMap<u64, QpCounts>,
    /// Per flow id: its series, when it has one.
    tracked: FxHashMap<u64, Tracked>,
    other: QpCounts,
    findings: HashMap<(&'static str, &'static str), u64>,
    /// Rises of findings told before, by (code, from, to), each flow counted.
    escalations: BTreeMap<(&'static str, Severity, Severity), u64>,
    /// Records each output dropped so far, by kind (`DROPPABLE`'s order).
    records_dropped: [u64; DROPPABLE.len()],
    /// The text of the last update, findings apart.
    body: String,
}

impl Metrics {
    pub fn new(max_qps: usize) -> Self {
        Metrics {
            max_qps,
            seen: FxHashMap::default(),
            tracked: FxHashMap::default(),
            other: QpCounts::default(),
            findings: HashMap::new(),
            escalations: BTreeMap::new(),
            records_dropped: [0; DROPPABLE.len()],
            body: String::new(),
        }
    }

    /// The findings of the finished report, each flow of a grouped finding counted, each at
    /// the severity it was first told with: a finding that rose counts at its first severity
    /// here and its rise in the escalations, as while the capture ran.
    pub fn report_findings(&mut self, findings: &[crate::model::Finding]) {
        self.findings.clear();
        for f in findings {
            self.count(f, f.group.as_ref().map_or(1, |g| g.flows));
        }
        // The highest rises first: info to warning, then warning to critical, is undone from
        // critical back to info.
        let mut rises: Vec<_> = self.escalations.iter().collect();
        rises.sort_by_key(|&(&(code, from, to), _)| (to, from, code));
        for (&(code, from, to), &n) in rises {
            if let Some(now) = self.findings.get_mut(&(code, to.name())) {
                let moved = n.min(*now);
                *now -= moved;
                *self.findings.entry((code, from.name())).or_default() += moved;
            }
        }
    }

    /// Counts finding `f` `n` times.
    fn count(&mut self, f: &crate::model::Finding, n: u64) {
        *self
            .findings
            .entry((f.code.name(), f.severity.name()))
            .or_default() += n;
    }

    /// The exposition text: the last update's figures and the findings now.
    pub fn text(&self) -> String {
        let mut o = self.body.clone();
        self.write_findings(&mut o);
        o
    }

    /// Findings that first held while the capture runs, as the events tell them (each once
    /// by code and flow: the watch sees to that), or the final report's not told before:
    /// each counts the flows it told of first (a group's flows told before on their own are
    /// not counted twice).
    pub fn findings_told(&mut self, told: &[crate::model::Told]) {
        for t in told {
            self.count(&t.finding, t.first_told);
        }
    }

    /// Findings told before whose severity rose: each counted once per rise, by the flows
    /// that rose (a finding's first count stays at the severity it was first told with).
    pub fn findings_escalated(&mut self, rose: &[crate::model::Escalation]) {
        for e in rose {
            let key = (e.finding.code.name(), e.from, e.finding.severity);
            *self.escalations.entry(key).or_default() += e.flows;
        }
    }

    /// A flow ended with these counts: what it counted since the last update goes to its
    /// series, which the next update shows and then drops; a flow without a series adds it to
    /// `other`.
    pub fn flow_ended(&mut self, last: &FlowCounters) {
        let (id, last) = (last.id, QpCounts::from(last));
        match self.tracked.get_mut(&id) {
            Some(t) => {
                t.ended = true;
                self.seen.insert(id, last);
            }
            None => {
                let seen = self.seen.remove(&id).unwrap_or_default();
                self.other.plus(last.minus(seen));
            }
        }
    }

    /// Flows `ids` ended, having counted `last` together (their counts merged while the
    /// update thread fell behind): what they counted since the last update goes to `other`,
    /// and a tracked one's series shows what it showed last before it leaves.
    pub fn flows_ended_merged(&mut self, last: QpCounts, ids: &[u64]) {
        let mut seen = QpCounts::default();
        for id in ids {
            let counted = match self.tracked.get_mut(id) {
                Some(t) => {
                    t.ended = true;
                    self.seen.get(id).copied()
                }
                None => self.seen.remove(id),
            };
            seen.plus(counted.unwrap_or_default());
        }
        self.other.plus(last.minus(seen));
    }

    /// The records the outputs dropped so far; the next update shows them.
    pub fn records_dropped(&mut self, dropped: [u64; DROPPABLE.len()]) {
        self.records_dropped = dropped;
    }

    /// Takes in the state now; `text` then gives it.
    pub fn update(&mut self, counts: &FrameCounts, figures: &Figures, source: &SourceStatus) {
        self.account(&figures.flows, figures.now);
        let mut o = String::with_capacity(4096 + self.tracked.len() * 1200);
        self.write_totals(&mut o, counts, figures, source);
        self.write_qps(&mut o);
        write_pfc(&mut o, &figures.pfc);
        write_rtt(&mut o, figures);
        self.body = o;
        // The series of ended flows showed their final counts: they leave.
        let seen = &mut self.seen;
        self.tracked.retain(|id, t| {
            if t.ended {
                seen.remove(id);
            }
            !t.ended
        });
    }

    /// Takes in what every flow counted since the last update: into its series, or `other`.
    fn account(&mut self, flows: &[FlowCounters], now: u64) {
        // Once no tracked QP is idle enough to make room, none is for the rest of this update.
        let mut room = true;
        for f in flows {
            let now_counts = QpCounts::from(f);
            let seen = self.seen.entry(f.id).or_default();
            let delta = now_counts.minus(*seen);
            if delta == QpCounts::default() {
                continue;
            }
            *seen = now_counts;
            if let Some(t) = self.tracked.get_mut(&f.id) {
                t.last_ts = f.last_ts;
                continue;
            }
            let never_seen = now_counts == delta;
            if self.tracked.len() >= self.max_qps {
                room = room && self.make_room(now);
                if !room {
                    self.other.plus(delta);
                    continue;
                }
            }
            // A new QP's series holds all it counted; one that comes back starts from 0.
            let base = if never_seen {
                QpCounts::default()
            } else {
                self.other.plus(delta);
                now_counts
            };
            let t = Tracked {
                key: f.flow,
                base,
                last_ts: f.last_ts,
                ended: false,
            };
            self.tracked.insert(f.id, t);
        }
    }

    /// Frees the series of the least recently seen QP when it has been idle long enough. What
    /// it showed stays in its series (Prometheus keeps it); what it counts from now on goes to
    /// `other` until it has a series again. An ended flow's series leaves after this update
    /// anyway.
    fn make_room(&mut self, now: u64) -> bool {
        let Some((&id, t)) = self
            .tracked
            .iter()
            .filter(|(_, t)| !t.ended)
            .min_by_key(|(&id, t)| (t.last_ts, id))
        else {
            return false;
        };
        if now.saturating_sub(t.last_ts) < EVICT_IDLE_NS {
            return false;
        }
        self.tracked.remove(&id);
        true
    }

    fn write_totals(
        &self,
        o: &mut String,
        c: &FrameCounts,
        figures: &Figures,
        source: &SourceStatus,
    ) {
        header(o, "roce_sniff_frames_total", "counter", "Frames captured, by kind: roce (RoCEv2, RoCEv1, InfiniBand), pfc (802.1Qbb), pause (802.3x), other.");
        let other = c.frames.saturating_sub(c.roce + c.pfc + c.pause);
        for (kind, n) in [
            ("roce", c.roce),
            ("pfc", c.pfc),
            ("pause", c.pause),
            ("other", other),
        ] {
            let _ = writeln!(o, "roce_sniff_frames_total{{kind=\"{kind}\"}} {n}");
        }
        header(
            o,
            "roce_sniff_dropped_frames_total",
            "counter",
            "Frames the kernel or the interface dropped before the capture got them.",
        );
        let dropped = source.kernel.map_or(0, |k| k.dropped + k.if_dropped);
        let _ = writeln!(o, "roce_sniff_dropped_frames_total {dropped}");
        header(
            o,
            "roce_sniff_output_dropped_total",
            "counter",
            "Records an output could not keep up with and dropped, by output and kind (the capture and the report are whole).",
        );
        for ((output, kind), n) in DROPPABLE.iter().zip(self.records_dropped) {
            let _ = writeln!(
                o,
                "roce_sniff_output_dropped_total{{output=\"{output}\",kind=\"{kind}\"}} {n}"
            );
        }
        header(
            o,
            "roce_sniff_capture_missed_psns_total",
            "counter",
            "PSNs the capture missed: skipped PSNs the other end acknowledged, so the network delivered them.",
        );
        let missed = figures.capture_missed;
        let _ = writeln!(o, "roce_sniff_capture_missed_psns_total {missed}");
        header(
            o,
            "roce_sniff_flows_active",
            "gauge",
            "Flows (source, destination, destination QP, VLAN) open now.",
        );
        let _ = writeln!(o, "roce_sniff_flows_active {}", figures.flows.len());
        header(
            o,
            "roce_sniff_flows_ended_total",
            "counter",
            "Flows ended: idle longer than --flow-timeout (both directions).",
        );
        let _ = writeln!(o, "roce_sniff_flows_ended_total {}", figures.flows_ended);
        header(o, "roce_sniff_metrics_qps", "gauge", "QPs with series of their own (at most --metrics-max-qps); the rest count in qp=\"other\".");
        let _ = writeln!(o, "roce_sniff_metrics_qps {}", self.tracked.len());
    }

    fn write_qps(&self, o: &mut String) {
        let mut rows: Vec<(String, QpCounts)> = self
            .tracked
            .iter()
            .map(|(id, t)| {
                let seen = self.seen.get(id).copied().unwrap_or_default();
                (qp_labels(&t.key), seen.minus(t.base))
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.push((
            "src=\"other\",dst=\"other\",qp=\"other\"".into(),
            self.other,
        ));
        let families: [Family; 7] = [
            (
                "roce_sniff_qp_packets_total",
                "RoCE packets of a QP (flow).",
                |q| q.packets,
            ),
            (
                "roce_sniff_qp_bytes_total",
                "Bytes on the wire of a QP.",
                |q| q.bytes,
            ),
            (
                "roce_sniff_qp_psn_gaps_total",
                "PSN gaps seen on arrival on a QP (loss, or packets the capture missed).",
                |q| q.gaps,
            ),
            (
                "roce_sniff_qp_psns_lost_total",
                "PSNs of a QP lost on the network: resent or never seen, not those the other end acknowledged (missed by the capture); counted once judged (an ACK allowance after the gap).",
                |q| q.lost,
            ),
            (
                "roce_sniff_qp_retransmitted_total",
                "Retransmitted packets of a QP.",
                |q| q.retx,
            ),
            (
                "roce_sniff_qp_ce_total",
                "CE-marked packets of a QP.",
                |q| q.ce,
            ),
            (
                "roce_sniff_qp_cnps_total",
                "CNPs that came back for a QP's data.",
                |q| q.cnps,
            ),
        ];
        for (name, help, value) in families {
            header(o, name, "counter", help);
            for (labels, q) in &rows {
                let _ = writeln!(o, "{name}{{{labels}}} {}", value(q));
            }
        }
        header(
            o,
            "roce_sniff_qp_naks_total",
            "counter",
            "NAKs that came back for a QP's requests, by code.",
        );
        for (labels, q) in &rows {
            for (code, n) in NAK_CODES.iter().zip(q.naks) {
                let _ = writeln!(
                    o,
                    "roce_sniff_qp_naks_total{{{labels},code=\"{code}\"}} {n}"
                );
            }
        }
    }

    fn write_findings(&self, o: &mut String) {
        header(
            o,
            "roce_sniff_findings_total",
            "counter",
            "Findings raised while the capture ran, by code and severity.",
        );
        use crate::model::FindingCode;
        let every = FindingCode::ALL
            .iter()
            .flat_map(|c| Severity::ALL.map(|s| (c.name(), s.name())));
        let mut rows: std::collections::BTreeMap<_, u64> = every.map(|k| (k, 0)).collect();
        rows.extend(self.findings.iter().map(|(&k, &n)| (k, n)));
        for ((code, severity), n) in rows {
            let _ = writeln!(
                o,
                "roce_sniff_findings_total{{code=\"{code}\",severity=\"{severity}\"}} {n}"
            );
        }
        header(
            o,
            "roce_sniff_finding_escalations_total",
            "counter",
            "Findings told before whose severity rose as evidence grew, by code and the severities from and to (findings_total counts each at the severity first told).",
        );
        let rises = FindingCode::ALL
            .iter()
            .flat_map(|c| RISES.map(|(from, to)| (c.name(), from.name(), to.name())));
        let mut rows: std::collections::BTreeMap<_, u64> = rises.map(|k| (k, 0)).collect();
        for (&(code, from, to), &n) in &self.escalations {
            rows.insert((code, from.name(), to.name()), n);
        }
        for ((code, from, to), n) in rows {
            let _ = writeln!(
                o,
                "roce_sniff_finding_escalations_total{{code=\"{code}\",from=\"{from}\",to=\"{to}\"}} {n}"
            );
        }
    }
}

/// The rises a finding's severity can take (from, to): each has its series from the start.
const RISES: [(Severity, Severity); 3] = {
    use Severity::{Critical, Info, Warning};
    [(Info, Warning), (Info, Critical), (Warning, Critical)]
};

fn header(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `src="10.0.0.5",dst="10.0.0.2",qp="0x000213",vlan="100"` (no vlan when untagged).
fn qp_labels(k: &QpKey) -> String {
    let mut s = format!(
        "src=\"{}\",dst=\"{}\",qp=\"0x{:06x}\"",
        escape(&k.src.to_string()),
        escape(&k.dst.to_string()),
        k.dqpn
    );
    if let Some(v) = k.vlan {
        let _ = write!(s, ",vlan=\"{v}\"");
    }
    s
}

fn write_pfc(o: &mut String, pfc: &[PfcFigures]) {
    let rows: Vec<(String, u64, u64, u64)> = pfc
        .iter()
        .map(|p| {
            (
                format!("source=\"{}\",priority=\"{}\"", p.source, p.priority),
                p.xoff,
                p.paused_ns,
                p.storms,
            )
        })
        .collect();
    header(
        o,
        "roce_sniff_pfc_pause_frames_total",
        "counter",
        "PFC XOFF frames, by source MAC and priority.",
    );
    for (labels, xoff, _, _) in &rows {
        let _ = writeln!(o, "roce_sniff_pfc_pause_frames_total{{{labels}}} {xoff}");
    }
    header(
        o,
        "roce_sniff_pfc_paused_seconds_total",
        "counter",
        "Time paused by PFC (at --link-speed), by source MAC and priority.",
    );
    for (labels, _, ns, _) in &rows {
        let _ = writeln!(
            o,
            "roce_sniff_pfc_paused_seconds_total{{{labels}}} {}",
            *ns as f64 / 1e9
        );
    }
    // The pfc_storm finding is told once per source and priority; this counts every storm,
    // so that an alert fires for each, however long the monitor runs.
    header(
        o,
        "roce_sniff_pfc_storms_total",
        "counter",
        "PFC storms (--storm-ms of continuous pause, or of pauses faster than --storm-fps), \
         by source MAC and priority; a storm counts from when it qualifies.",
    );
    for (labels, _, _, storms) in &rows {
        let _ = writeln!(o, "roce_sniff_pfc_storms_total{{{labels}}} {storms}");
    }
}

fn write_rtt(o: &mut String, figures: &Figures) {
    let h = figures.totals.ack_rtt;
    header(
        o,
        "roce_sniff_ack_rtt_seconds",
        "histogram",
        "Round trip from a request asking for an ACK to the ACK, as the capture point sees it.",
    );
    let mut cumulative = 0;
    for (bound, n) in RTT_BOUNDS_NS.iter().zip(h.buckets) {
        cumulative += n;
        let _ = writeln!(
            o,
            "roce_sniff_ack_rtt_seconds_bucket{{le=\"{}\"}} {cumulative}",
            *bound as f64 / 1e9
        );
    }
    let _ = writeln!(
        o,
        "roce_sniff_ack_rtt_seconds_bucket{{le=\"+Inf\"}} {}",
        h.count
    );
    let _ = writeln!(
        o,
        "roce_sniff_ack_rtt_seconds_sum {}",
        h.sum_ns as f64 / 1e9
    );
    let _ = writeln!(o, "roce_sniff_ack_rtt_seconds_count {}", h.count);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::SourceStatus;

    /// `name{labels} value` lines of `family`, as (labels, value).
    pub(crate) fn series(text: &str, family: &str) -> Vec<(String, f64)> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{family}{{")))
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').unwrap();
                (k[family.len()..].to_string(), v.parse().unwrap())
            })
            .collect()
    }

    /// Each (output, kind) an output may drop has its series from the start at 0, then the
    /// count the ledger holds at the update.
    #[test]
    fn records_dropped_show_by_output_and_kind() {
        let family = "roce_sniff_output_dropped_total";
        let mut m = Metrics::new(10);
        m.update(
            &Default::default(),
            &Default::default(),
            &SourceStatus::default(),
        );
        let zero = series(&m.text(), family);
        assert_eq!(zero.len(), DROPPABLE.len());
        assert!(zero.iter().all(|(_, v)| *v == 0.0));
        let d = crate::model::DroppedRecords::default();
        d.add("events", "flow_end", 7);
        d.add("parquet", "timeline", 3);
        m.records_dropped(d.by_kind());
        m.update(
            &Default::default(),
            &Default::default(),
            &SourceStatus::default(),
        );
        let text = m.text();
        assert!(text.contains(&format!(
            "{family}{{output=\"events\",kind=\"flow_end\"}} 7"
        )));
        assert!(text.contains(&format!(
            "{family}{{output=\"parquet\",kind=\"timeline\"}} 3"
        )));
        assert!(text.contains(&format!(
            "{family}{{output=\"parquet\",kind=\"packets\"}} 0"
        )));
    }

    /// A finding told as information that rose to a warning, then to critical: counted once
    /// at the severity first told, each rise by its step; every step of every code is there
    /// from the start at 0. The report at the end of a file, where the finding stands at
    /// critical, counts it the same way.
    #[test]
    fn a_rise_counts_in_the_escalations_and_the_finding_stays_at_its_first_severity() {
        use crate::model::{testing, Escalation, FindingCode, Severity, Told};
        let incast = |s| testing::finding(s, FindingCode::Incast, None);
        let rise = |from, to| Escalation {
            finding: incast(to),
            from,
            flows: 1,
        };
        let findings = |m: &Metrics| series(&m.text(), "roce_sniff_findings_total");
        let rises = |m: &Metrics| series(&m.text(), "roce_sniff_finding_escalations_total");
        let of = |rows: &[(String, f64)], labels: &str| {
            rows.iter()
                .find(|(k, _)| k == labels)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("no series {labels}"))
        };
        let mut m = Metrics::new(10);
        assert_eq!(rises(&m).len(), 3 * FindingCode::ALL.len());
        assert!(rises(&m).iter().all(|(_, v)| *v == 0.0));
        m.findings_told(&[Told {
            finding: incast(Severity::Info),
            first_told: 1,
        }]);
        m.findings_escalated(&[rise(Severity::Info, Severity::Warning)]);
        m.findings_escalated(&[rise(Severity::Warning, Severity::Critical)]);
        let live = m.text();
        for report in [false, true] {
            if report {
                m.report_findings(&[incast(Severity::Critical)]);
                assert_eq!(m.text(), live, "the report's findings count as told");
            }
            let f = findings(&m);
            assert_eq!(of(&f, "{code=\"incast\",severity=\"info\"}"), 1.0);
            assert_eq!(of(&f, "{code=\"incast\",severity=\"warning\"}"), 0.0);
            assert_eq!(of(&f, "{code=\"incast\",severity=\"critical\"}"), 0.0);
            let r = rises(&m);
            assert_eq!(
                of(&r, "{code=\"incast\",from=\"info\",to=\"warning\"}"),
                1.0
            );
            assert_eq!(
                of(&r, "{code=\"incast\",from=\"warning\",to=\"critical\"}"),
                1.0
            );
            assert_eq!(
                of(&r, "{code=\"incast\",from=\"info\",to=\"critical\"}"),
                0.0
            );
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
