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
//! Every finding code has its series from the start, at 0 for each severity: a series born at 1
//! is a first sample Prometheus's `increase()` does not count, so an alert on a finding's first
//! raise would never fire.

pub mod http;
pub mod publish;

use std::collections::HashMap;
use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::decode::FrameCounts;
use crate::model::{
    Figures, FlowCounters, FlowLabel, PfcFigures, SourceStatus, DROPPABLE, RTT_BOUNDS_NS,
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

    fn plus(&mut self, o: QpCounts) {
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
            records_dropped: [0; DROPPABLE.len()],
            body: String::new(),
        }
    }

    /// The findings of the finished report, each flow of a grouped finding counted.
    pub fn report_findings(&mut self, findings: &[crate::model::Finding]) {
        self.findings.clear();
        for f in findings {
            self.count(f, f.group.as_ref().map_or(1, |g| g.flows));
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
        use crate::model::{FindingCode, Severity};
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
    }
}

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
mod tests {
    use super::*;
    use crate::analysis::testing::analysed;
    use crate::analysis::Analyzer;
    use crate::model::SourceStatus;

    /// `name{labels} value` lines of `family`, as (labels, value).
    fn series(text: &str, family: &str) -> Vec<(String, f64)> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{family}{{")))
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').unwrap();
                (k[family.len()..].to_string(), v.parse().unwrap())
            })
            .collect()
    }

    /// PSNs the other end acknowledged are the capture's misses, not the QP's loss: QP 0x100
    /// of diagnose/capture_missed.pcap has 3 gaps and lost nothing; 0x104 lost its gap.
    #[test]
    fn psns_lost_leave_out_what_the_capture_missed() {
        let (an, counts) = analysed("diagnose/capture_missed.pcap");
        let mut m = Metrics::new(1000);
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let text = m.text();
        let lost = series(&text, "roce_sniff_qp_psns_lost_total");
        let of = |qp: &str| {
            lost.iter()
                .find(|(k, _)| k.contains(&format!("qp=\"{qp}\"")))
                .map(|(_, v)| *v)
        };
        assert_eq!(of("0x000100"), Some(0.0), "{text}");
        assert_eq!(of("0x000104"), Some(1.0), "{text}");
        assert!(
            text.contains("roce_sniff_capture_missed_psns_total 5\n"),
            "{text}"
        );
    }

    #[test]
    fn qp_series_are_bounded_and_always_add_up_to_the_totals() {
        let (an, counts) = analysed("sample.pcap");
        let total_packets: u64 = an.flows().iter().map(|f| f.packets).sum();
        for max in [1000, 3] {
            let mut m = Metrics::new(max);
            m.update(&counts, &an.figures(), &SourceStatus::default());
            let text = m.text();
            let packets = series(&text, "roce_sniff_qp_packets_total");
            // Each QP of its own up to the bound, plus `other`.
            assert_eq!(packets.len(), an.flows().len().min(max) + 1, "{text}");
            let sum: f64 = packets.iter().map(|(_, v)| v).sum();
            assert_eq!(sum as u64, total_packets);
            let other = packets
                .iter()
                .find(|(k, _)| k.contains("qp=\"other\""))
                .unwrap();
            assert_eq!(other.1 > 0.0, max < an.flows().len(), "{max}: {other:?}");
            let gaps: f64 = series(&text, "roce_sniff_qp_psn_gaps_total")
                .iter()
                .map(|(_, v)| v)
                .sum();
            assert_eq!(gaps as u64, an.totals.psn_gaps);
        }
        let mut m = Metrics::new(1000);
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let text = m.text();
        assert!(text.contains(
            "roce_sniff_qp_psn_gaps_total{src=\"10.0.0.5\",dst=\"10.0.0.2\",qp=\"0x000213\",vlan=\"100\"} 1"
        ), "{text}");
        assert!(text.contains("roce_sniff_frames_total{kind=\"roce\"} 13822"));
        assert!(text.contains("roce_sniff_frames_total{kind=\"pfc\"} 801"));
        assert!(text.contains(
            "roce_sniff_pfc_pause_frames_total{source=\"02:00:00:00:00:5e\",priority=\"3\"} 200"
        ), "{text}");
        // The report's one storm, on priority 4; none where priority 3 was paused.
        assert!(
            text.contains(
                "roce_sniff_pfc_storms_total{source=\"02:00:00:00:00:5f\",priority=\"4\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "roce_sniff_pfc_storms_total{source=\"02:00:00:00:00:5e\",priority=\"3\"} 0"
            ),
            "{text}"
        );
        // The histogram counts every RTT, cumulatively.
        let buckets = series(&text, "roce_sniff_ack_rtt_seconds_bucket");
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1));
        assert_eq!(buckets.last().unwrap().1 as u64, an.totals.ack_rtt.count);
        // A second update with nothing new changes no counter.
        m.update(&counts, &an.figures(), &SourceStatus::default());
        assert_eq!(m.text(), text);
    }

    /// What Prometheus's `increase()` adds up over every series of `family` it ever scraped:
    /// each series' rises, a fall being a counter reset (a series that came back from 0).
    #[derive(Default)]
    struct Scraped {
        last: HashMap<String, f64>,
        /// Counted by series before they were reset.
        before_resets: f64,
    }

    impl Scraped {
        fn scrape(&mut self, text: &str, family: &str) {
            for (labels, v) in series(text, family) {
                let last = self.last.entry(labels).or_default();
                if v < *last {
                    self.before_resets += *last;
                }
                *last = v;
            }
        }

        fn counted(&self) -> f64 {
            self.before_resets + self.last.values().sum::<f64>()
        }
    }

    #[test]
    fn the_series_of_ended_flows_leave_and_every_count_shows_in_one_series_once() {
        every_count_shows_in_one_series_once(false);
    }

    /// The ended flows' counts merged, as the update thread takes them once it fell behind:
    /// no packet is lost or counted twice.
    #[test]
    fn merged_ended_flows_count_every_packet_once() {
        every_count_shows_in_one_series_once(true);
    }

    fn every_count_shows_in_one_series_once(merged: bool) {
        use crate::analysis::AnalysisConfig;
        use roce_testgen::churn::{write_churn, ChurnConfig};
        let cfg = ChurnConfig {
            qps: 2_000,
            ..ChurnConfig::default()
        };
        let mut data = Vec::new();
        write_churn(&mut data, cfg).unwrap();
        let mut an = Analyzer::new(AnalysisConfig {
            flow_timeout_ns: Some(1_000_000),
            keep_ended: false,
            ..AnalysisConfig::default()
        });
        an.tell_ended(crate::analysis::lifetime::EndedParts {
            reports: false,
            counters: true,
        });
        let mut m = Metrics::new(50);
        let (mut scraped, mut ended) = (Scraped::default(), 0);
        let (an, counts) = crate::analysis::testing::feed(&data, an, |an, counts| {
            let (mut sum, mut ids) = (QpCounts::default(), Vec::new());
            for e in an.take_ended() {
                let c = e.counters.expect("asked for");
                if merged {
                    sum.plus(QpCounts::from(&c));
                    ids.push(c.id);
                } else {
                    m.flow_ended(&c);
                }
                ended += 1;
            }
            if merged {
                m.flows_ended_merged(sum, &ids);
            }
            if counts.frames % 1000 == 0 {
                m.update(counts, &an.figures(), &SourceStatus::default());
                let text = m.text();
                scraped.scrape(&text, "roce_sniff_qp_packets_total");
                // Open flows have series of their own, and the flows that ended since the
                // last update one last time (and `other`).
                let series = series(&text, "roce_sniff_qp_packets_total").len();
                assert!(series <= (an.flow_count() + ended).min(50) + 1, "{series}");
                ended = 0;
            }
        });
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let text = m.text();
        scraped.scrape(&text, "roce_sniff_qp_packets_total");
        // Each packet counted once over all the series scraped: the leaving QPs' counts did
        // not move into `other` as well.
        assert_eq!(scraped.counted() as u64, counts.roce);
        assert!(an.flows_ended() > cfg.flows() / 2);
        // Ended flows leave after their last update: open flows and `other` stay.
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let left = series(&m.text(), "roce_sniff_qp_packets_total").len();
        assert!(left <= an.flow_count().min(50) + 1, "{left}");
        assert!(text.contains(&format!(
            "roce_sniff_flows_ended_total {}",
            an.flows_ended()
        )));
        assert!(text.contains(&format!("roce_sniff_flows_active {}", an.flow_count())));
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

    #[test]
    fn every_finding_code_has_its_series_from_the_start() {
        let mut m = Metrics::new(10);
        let zero = m.text();
        let findings = series(&zero, "roce_sniff_findings_total");
        assert_eq!(findings.len(), crate::model::FindingCode::ALL.len() * 3);
        assert!(findings.iter().all(|(_, v)| *v == 0.0));
        // The findings as the events tell them, and the final report's again at the end:
        // each (code, flow) counted once.
        let finding = |code, flow: Option<&str>| crate::model::Finding {
            severity: crate::model::Severity::Critical,
            code,
            message: String::new(),
            cause: String::new(),
            flow: flow.map(String::from),
            count: 1,
            frames: Vec::new(),
            frame_refs: Vec::new(),
            group: None,
            grouped_flows: Vec::new(),
        };
        let storm = |flow| finding(crate::model::FindingCode::PfcStorm, flow);
        let mut watch = crate::analysis::watch::FindingWatch::default();
        let mut tell = |m: &mut Metrics, findings: &[crate::model::Finding]| {
            let told = watch.untold(0, findings);
            m.findings_told(&told.map_or(Vec::new(), |t| t.told().collect()));
        };
        tell(&mut m, &[storm(None), storm(Some("a"))]);
        tell(&mut m, &[storm(None), storm(Some("a")), storm(Some("b"))]);
        // A loss first on one flow, then grouped with two more: three flows, not four.
        let loss = |flow| finding(crate::model::FindingCode::PsnLoss, flow);
        tell(&mut m, &[loss(Some("a"))]);
        let group = crate::model::Finding {
            group: Some(crate::model::FindingGroup {
                flows: 3,
                worst: Vec::new(),
            }),
            grouped_flows: vec!["a".into(), "b".into(), "c".into()],
            ..loss(None)
        };
        tell(&mut m, std::slice::from_ref(&group));
        tell(&mut m, &[group, loss(Some("b"))]);
        let text = m.text();
        assert!(
            text.contains("roce_sniff_findings_total{code=\"pfc_storm\",severity=\"critical\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("roce_sniff_findings_total{code=\"psn_loss\",severity=\"critical\"} 3"),
            "{text}"
        );
        assert_eq!(
            series(&text, "roce_sniff_findings_total").len(),
            findings.len()
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
