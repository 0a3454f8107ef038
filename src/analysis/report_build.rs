//! Turning the analyzer's state into the `Report`.

use std::collections::BTreeMap;

use roce_parsers::link::linktype_name;
use roce_parsers::Opcode;

use super::flow::Flow;
use super::pfc::PauseTracker;
use super::timeline::Bin;
use super::{findings, Analyzer, CNP_WINDOW_NS};
use crate::decode::DecodeCounts;
use crate::packets::{ecn_name, Mac};
use crate::report::{
    CaptureReport, FlowReport, NakReport, PauseReport, PfcReport, PriorityReport, Report, SCHEMA,
};

/// What the reader and decoder know about the file, beyond the packets.
#[derive(Debug, Clone, Default)]
pub struct CaptureMeta {
    pub file: String,
    pub format: Option<&'static str>,
    pub snaplen: u32,
    pub decode: DecodeCounts,
    pub warnings: Vec<String>,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn opcode_name(op: u8) -> String {
    let o = Opcode(op);
    if o.is_known() {
        o.name().to_string()
    } else {
        format!("UNKNOWN_0x{op:02x}")
    }
}

/// A number to sort flows by: the more trouble, the higher.
fn trouble(f: &FlowReport) -> u64 {
    (f.psn.missing + f.psn.recovered) * 10_000
        + f.psn.gaps * 100
        + f.psn.retransmitted * 10
        + f.psn.duplicates
        + f.psn.out_of_order
        + f.naks.total() * 100
        + f.ce_without_cnp * 10
        + f.ce
        + f.icrc_bad * 100
        + f.oversize * 100
}

impl Analyzer {
    fn flow_report(&self, f: &Flow, last_ts: u64) -> FlowReport {
        let mut pcp = BTreeMap::new();
        for (i, &n) in f.pcp.iter().enumerate() {
            if n > 0 {
                let k = if i == 8 {
                    "untagged".to_string()
                } else {
                    i.to_string()
                };
                pcp.insert(k, n);
            }
        }
        let dscp = f
            .dscp
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (i.to_string(), n))
            .collect();
        let ecn = f
            .ecn
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (ecn_name(i as u8).to_string(), n))
            .collect();
        let opcodes = f
            .opcodes
            .iter()
            .map(|(&op, &n)| (opcode_name(op), n))
            .collect();
        let duration_ns = f.last_ts - f.first_ts;
        let gbps = if duration_ns > 0 {
            f.bytes as f64 * 8.0 / duration_ns as f64
        } else {
            0.0
        };
        // CE marks still waiting for a CNP when the capture ended count only if their window
        // ended inside the capture.
        let late_unanswered = f
            .ce_pending
            .iter()
            .filter(|&&(ts, _)| ts + CNP_WINDOW_NS <= last_ts)
            .count() as u64;
        let n = &f.naks;
        FlowReport {
            id: 0,
            src: f.key.src.to_string(),
            dst: f.key.dst.to_string(),
            dqpn: f.key.dqpn,
            vlan: f.key.vlan,
            transport: f.transport.map(|t| t.name()),
            role: if f.is_data() {
                "data"
            } else if f.cnps_sent > 0 && f.cnps_sent == f.packets {
                "cnp"
            } else {
                "responses"
            },
            packets: f.packets,
            bytes: f.bytes,
            payload_bytes: f.payload_bytes,
            requests: f.requests,
            messages: f.messages,
            first_frame: f.first_frame,
            first_ts: secs(f.first_ts),
            last_ts: secs(f.last_ts),
            duration_us: duration_ns as f64 / 1e3,
            gbps,
            path_mtu: f
                .path_mtu
                .or_else(|| f.peer.and_then(|j| self.flows[j].path_mtu)),
            pcp,
            dscp,
            ecn,
            opcodes,
            psn: if f.transport == Some(roce_parsers::Transport::Ud) {
                f.ud_psn.clone()
            } else {
                f.req.finish()
            },
            loss_frames: f.loss.frames.clone(),
            retransmit_frames: f.retrans.frames.clone(),
            read_response_gaps: f.read_resp.gaps,
            acks: f.acks,
            naks: NakReport {
                psn_sequence_error: n.psn_sequence_error.count,
                invalid_request: n.invalid_request.count,
                remote_access_error: n.remote_access_error.count,
                remote_operational_error: n.remote_operational_error.count,
                invalid_rd_request: n.invalid_rd_request.count,
                other: n.other.count,
                rnr: n.rnr.count,
            },
            read_responses: f.read_responses,
            cnps: f.cnps.count,
            cnps_sent: f.cnps_sent,
            ce: f.ce.count,
            ce_without_cnp: f.ce_unanswered.count + late_unanswered,
            ce_to_cnp_us: match (f.first_ce_ts, f.first_cnp_ts) {
                (Some(ce), Some(cnp)) => Some((cnp - ce) as f64 / 1e3),
                _ => None,
            },
            ack_rtt_us: f.ack_rtt.summary(),
            read_latency_us: f.read_latency.summary(),
            icrc_bad: f.icrc_bad.count,
            oversize: f.oversize.count,
            peer: f.peer.map(|j| self.flows[j].key.to_string()),
            paired_by: f.paired_by,
        }
    }

    fn pause_report(&self, t: &PauseTracker) -> (f64, f64) {
        (t.paused_ns as f64 / 1e3, t.longest_ns as f64 / 1e3)
    }

    /// Ends the analysis and builds the report.
    pub fn finish(self, meta: CaptureMeta) -> Report {
        self.finish_with_plots(meta).0
    }

    /// Ends the analysis; with timelines enabled, also returns what the plots need.
    pub fn finish_with_plots(mut self, meta: CaptureMeta) -> (Report, Option<PlotData>) {
        let cfg = self.cfg;
        for t in self.pfc.values_mut().chain(self.pause.values_mut()) {
            t.finish(&cfg.pfc);
        }
        let c = &self.counts;
        let last_ts = c.last_ts;
        let mut flows: Vec<(FlowReport, &Flow)> = self
            .flows
            .iter()
            .map(|f| (self.flow_report(f, last_ts), f))
            .collect();
        flows.sort_by(|(a, fa), (b, fb)| {
            trouble(b)
                .cmp(&trouble(a))
                .then(b.bytes.cmp(&a.bytes))
                .then(fa.first_frame.cmp(&fb.first_frame))
        });
        let roce_priorities: Vec<u8> = (0..8u8)
            .filter(|&p| c.roce_pcp[usize::from(p)] > 0)
            .collect();
        let priorities: Vec<PriorityReport> = self
            .pfc
            .iter()
            .map(|(&(mac, prio), t)| {
                let (pause_us, longest) = self.pause_report(t);
                PriorityReport {
                    priority: prio,
                    source: Mac(mac).to_string(),
                    roce: roce_priorities.contains(&prio),
                    xoff: t.xoff,
                    xon: t.xon,
                    pause_quanta: t.quanta,
                    pause_us,
                    longest_pause_us: longest,
                    storms: t.storms(),
                    storms_total: t.storms_total(),
                    first_frame: t.first_frame,
                }
            })
            .collect();
        let pause_8023x: Vec<PauseReport> = self
            .pause
            .iter()
            .map(|(&mac, t)| {
                let (pause_us, longest) = self.pause_report(t);
                PauseReport {
                    source: Mac(mac).to_string(),
                    frames: t.xoff + t.xon,
                    xon: t.xon,
                    pause_quanta: t.quanta,
                    pause_us,
                    longest_pause_us: longest,
                    storms: t.storms(),
                    first_frame: t.first_frame,
                }
            })
            .collect();
        let duration_ns = c.first_ts.map_or(0, |f| c.last_ts - f);
        let capture = CaptureReport {
            file: meta.file.clone(),
            format: meta.format,
            link_types: c
                .linktypes
                .iter()
                .map(|(&lt, &n)| (format!("{} ({lt})", linktype_name(lt)), n))
                .collect(),
            snaplen: meta.snaplen,
            packets: c.packets,
            bytes: c.bytes,
            roce_packets: c.roce,
            rocev1_packets: c.rocev1,
            ib_packets: c.ib,
            pfc_frames: c.pfc,
            pause_frames: c.pause,
            malformed: meta.decode.malformed,
            malformed_by_layer: meta.decode.malformed_by_layer.clone(),
            unsupported_link_type: meta.decode.unsupported_linktype,
            truncated: c.truncated,
            icrc_ok: c.icrc_ok,
            icrc_bad: c.icrc_bad,
            icrc_unchecked: c.icrc_unchecked,
            first_ts: c.first_ts.map(secs),
            last_ts: c.first_ts.map(|_| secs(c.last_ts)),
            first_ts_ns: c.first_ts,
            duration_s: secs(duration_ns),
            flows: self.flows.len(),
            flows_untracked_packets: c.flows_untracked_packets,
            cnps_unattributed: c.cnps_unattributed,
            warnings: meta.warnings.clone(),
            live: None,
        };
        let findings = findings::find(
            &self,
            &flows,
            &capture,
            &priorities,
            &pause_8023x,
            &roce_priorities,
        );
        let order: Vec<usize> = flows.iter().map(|(_, f)| self.index[&f.key]).collect();
        let mut flow_reports: Vec<FlowReport> = flows.into_iter().map(|(r, _)| r).collect();
        for (i, f) in flow_reports.iter_mut().enumerate() {
            f.id = i + 1;
        }
        let plots = self.plot_data(&order, &flow_reports, &roce_priorities);
        let report = Report {
            schema: SCHEMA,
            capture,
            flows: flow_reports,
            pfc: PfcReport {
                link_gbps: cfg.pfc.link_gbps,
                storm_ms: cfg.pfc.storm_ns as f64 / 1e6,
                storm_fps: cfg.pfc.storm_fps,
                roce_priorities,
                priorities,
                pause_8023x,
            },
            findings,
            verify: None,
        };
        (report, plots)
    }

    fn plot_data(
        &mut self,
        order: &[usize],
        flows: &[FlowReport],
        roce_priorities: &[u8],
    ) -> Option<PlotData> {
        let mut t = self.timelines.take()?;
        let start_ns = t.start_ns()?;
        let end_ns = self.counts.last_ts;
        if self.cfg.bin_ns.is_none() {
            t.coarsen_to(end_ns, AUTO_BINS);
        }
        let bins = ((end_ns - start_ns) / t.width_ns()) as usize + 1;
        let pad = |s: &[Bin]| {
            let mut v = s.to_vec();
            v.resize(bins, Bin::default());
            v
        };
        let series = order
            .iter()
            .zip(flows)
            .filter(|(&fi, _)| !t.flow(fi).is_empty())
            .map(|(&fi, r)| FlowSeries {
                id: r.id,
                name: flow_label(r),
                data: r.role == "data",
                bins: pad(t.flow(fi)),
            })
            .collect();
        let mut pfc_rows: Vec<PfcRow> = self
            .pfc
            .iter()
            .map(|(&(mac, prio), tr)| PfcRow {
                label: format!("p{prio} from {}", Mac(mac)),
                priority: Some(prio),
                source: Mac(mac).to_string(),
                roce: roce_priorities.contains(&prio),
                intervals: tr.intervals().to_vec(),
                storms: tr.storm_spans(),
            })
            .collect();
        pfc_rows.extend(self.pause.iter().map(|(&mac, tr)| PfcRow {
            label: format!("802.3x from {}", Mac(mac)),
            priority: None,
            source: Mac(mac).to_string(),
            roce: true,
            intervals: tr.intervals().to_vec(),
            storms: tr.storm_spans(),
        }));
        let mut rtt_us: Vec<f64> = self
            .flows
            .iter()
            .flat_map(|f| f.ack_rtt.kept().iter().map(|&ns| ns as f64 / 1e3))
            .collect();
        rtt_us.sort_by(f64::total_cmp);
        Some(PlotData {
            start_ns,
            end_ns,
            bin_ns: t.width_ns(),
            bins,
            flows: series,
            other: t.has_other().then(|| pad(t.other())),
            pfc: pfc_rows,
            rtt_us,
        })
    }
}

/// Bins the automatic choice aims below.
const AUTO_BINS: usize = 500;

fn flow_label(r: &FlowReport) -> String {
    let mut s = format!("#{} {} > {} qp {:#x}", r.id, r.src, r.dst, r.dqpn);
    if let Some(v) = r.vlan {
        s.push_str(&format!(" vlan {v}"));
    }
    s
}

/// What the plots and timelines of a report directory are drawn from.
#[derive(Debug, Clone)]
pub struct PlotData {
    pub start_ns: u64,
    pub end_ns: u64,
    pub bin_ns: u64,
    pub bins: usize,
    /// Flows in report order (by `id`), each padded to `bins`.
    pub flows: Vec<FlowSeries>,
    /// Flows beyond the timeline cap, summed.
    pub other: Option<Vec<Bin>>,
    pub pfc: Vec<PfcRow>,
    /// ACK round-trip samples of all flows, sorted, in microseconds.
    pub rtt_us: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct FlowSeries {
    pub id: usize,
    pub name: String,
    /// Whether the flow carries requests (data).
    pub data: bool,
    pub bins: Vec<Bin>,
}

#[derive(Debug, Clone)]
pub struct PfcRow {
    pub label: String,
    /// None for 802.3x PAUSE (all priorities).
    pub priority: Option<u8>,
    pub source: String,
    pub roce: bool,
    pub intervals: Vec<(u64, u64)>,
    pub storms: Vec<(u64, u64)>,
}
