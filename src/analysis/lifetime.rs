//! Flow lifetime (`--flow-timeout`): a connection idle for the timeout, both its directions
//! (ACKs, NAKs and CNPs keep the data flow they answer alive), ends. Its report entry is made
//! then, from its state then; its state is freed, and a QP used again later starts a new flow.
//!
//! Open flows stay in one dense vector (the per-packet lookups index it): an ended flow is
//! swap-removed and the one moved into its place renumbered wherever an index of it is kept
//! (the key index, its peer, the per-host data lists). Everything outside the analysis names
//! flows by `Flow::id`, which never changes.

use super::flow::{Flow, FlowEvidence, FlowKey};
use super::flow_table::Chunked;
use super::report_build::At;
use super::Analyzer;
use std::sync::Arc;

use crate::model::{FlowEnded, FlowReport};

/// What is kept of the ended flows for the report at the end (with `-r`: every flow is
/// listed): each one's report entry, numbered by its own id, and what findings need of it.
#[derive(Debug, Clone, Default)]
pub struct KeptFlows {
    pub reports: Chunked<FlowReport>,
    pub evidence: Chunked<FlowEvidence>,
}

/// What the outputs take of the flows that end (`Analyzer::tell_ended`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndedParts {
    /// Each flow's report entry, numbered by its own id.
    pub reports: bool,
    /// Each flow's final counters.
    pub counters: bool,
}

/// Noteworthy flows ended since the last evaluation of the findings at which they are
/// evaluated at once, before the second is out: a churn of lossy QPs keeps the memory of the
/// flows it has open, and every one of them is told.
const RECENT_ENDED_MAX: usize = 1_024;
/// Idle flows are looked for this often, as a fraction of the timeout...
const SWEEPS_PER_TIMEOUT: u64 = 8;
/// ...and at least once a second.
const MAX_SWEEP_INTERVAL_NS: u64 = 1_000_000_000;

impl Analyzer {
    /// Whether the connection of flow `i` (it and its peer) has been idle longer than the
    /// timeout at `now`.
    #[inline]
    fn connection_idle(&self, i: usize, now: u64, timeout: u64) -> bool {
        let idle = |f: &Flow| now.saturating_sub(f.active_ts()) > timeout;
        idle(&self.flows[i]) && self.flows[i].peer.is_none_or(|j| idle(&self.flows[j]))
    }

    /// Ends the connection of flow `i` when it has been idle too long at `now`; whether it did.
    /// Inlined: every packet asks, and its flow is almost always active.
    #[inline]
    pub(super) fn end_if_idle(&mut self, i: usize, now: u64) -> bool {
        match self.cfg.flow_timeout_ns {
            Some(t) if self.connection_idle(i, now, t) => {
                self.end_connection(i, now);
                true
            }
            _ => false,
        }
    }

    /// Ends every connection idle longer than the timeout at `now` (a packet's time, or the
    /// wall clock on an idle live link). Inlined to the check every packet makes: a sweep is
    /// due once per eighth of the timeout.
    #[inline]
    pub fn sweep(&mut self, now: u64) {
        if self.cfg.flow_timeout_ns.is_some() && now >= self.next_sweep_ns {
            self.sweep_now(now);
        }
    }

    #[cold]
    fn sweep_now(&mut self, now: u64) {
        let Some(timeout) = self.cfg.flow_timeout_ns else {
            return;
        };
        let interval = (timeout / SWEEPS_PER_TIMEOUT).clamp(1, MAX_SWEEP_INTERVAL_NS);
        self.next_sweep_ns = now.saturating_add(interval);
        let idle: Vec<FlowKey> = (0..self.flows.len())
            .filter(|&i| self.connection_idle(i, now, timeout))
            .map(|i| self.flows[i].key)
            .collect();
        for key in idle {
            // Indices move as flows leave; a flow already gone ended with its peer.
            if let Some(&i) = self.index.get(&key) {
                self.end_connection(i, now);
            }
        }
        if !self.cfg.keep_ended {
            self.forget_idle_hosts(now, timeout);
        }
    }

    /// A live monitor forgets, as it forgets ended flows, what it keeps per host and QP beyond
    /// flows: UD senders' PSN sequences, RDMA-CM requests and the pairs they taught, once idle
    /// for the timeout (a CM request once that, and twice the time it has to be answered and a
    /// second more, have passed).
    /// With `-r` they stay: the report covers the whole file.
    fn forget_idle_hosts(&mut self, now: u64, timeout: u64) {
        let recent = |ts: u64| ts.saturating_add(timeout) > now;
        self.ud_senders.forget_idle(now, timeout);
        self.cm_pairs.retain(|_, (_, _, learned)| recent(*learned));
        // A request is kept past the time its sender waits, twice over and a second more: its
        // resend (or its lack of answer) is then seen by an evaluation (once a second) before
        // it is forgotten.
        self.cm_requests.retain(|_, r| {
            let wait = r.answer_within_ns.max(super::CM_GRACE_NS);
            let keep = timeout.max(2 * wait + 1_000_000_000);
            r.first_ts.saturating_add(keep) > now
        });
    }

    /// Ends flow `i` and its peer at `now`: their report entries are made, their state leaves.
    pub(super) fn end_connection(&mut self, i: usize, now: u64) {
        // A connection is a flow and its peer: no vector for two (a churn ends a hundred
        // thousand connections a second).
        let peer = self.flows[i].peer;
        let pair = [i, peer.unwrap_or(i)];
        let members = &pair[..1 + usize::from(peer.is_some())];
        // Entries and evidence only for who needs them: a live monitor without events makes
        // none, except for the noteworthy flows its findings still have to see.
        let (keep, report) = (
            self.cfg.keep_ended,
            self.cfg.keep_ended || self.ended_reports(),
        );
        let recent: [bool; 2] =
            std::array::from_fn(|k| members.get(k).is_some_and(|&m| self.wants_recent(m)));
        if !keep && !report && recent == [false; 2] {
            // No entry to make: nothing to build or move (most ended flows of a live churn).
            for flow in self.remove_members(members, now).into_iter().flatten() {
                self.ended_one(flow, None, None, now);
            }
            return;
        }
        let entries: [_; 2] = std::array::from_fn(|k| match members.get(k) {
            Some(&m) => (
                (report || recent[k]).then(|| self.flow_report(&self.flows[m], At::End(now))),
                (keep || recent[k]).then(|| self.flow_evidence(m, At::End(now))),
                recent[k],
            ),
            None => (None, None, false),
        });
        // Each flow with its own entry, in member order.
        let flows = self.remove_members(members, now);
        for (flow, entry) in flows.into_iter().flatten().zip(entries) {
            let (report, evidence) = match entry {
                (Some(r), Some(e), true) => (self.keep_recent(r, e), None),
                (report, evidence, _) => (report, evidence),
            };
            self.ended_one(flow, report, evidence, now);
        }
    }

    /// Takes the members of a connection (one flow or two) out of the open flows, in member
    /// order.
    fn remove_members(&mut self, members: &[usize], now: u64) -> [Option<Box<Flow>>; 2] {
        for &m in members {
            self.note_ending(m, now);
            self.flows[m].peer = None;
        }
        // The higher index leaves first, so that removing it does not move the other.
        let higher_first = if members.len() == 2 && members[1] > members[0] {
            [1, 0]
        } else {
            [0, 1]
        };
        let mut flows: [Option<Box<Flow>>; 2] = [None, None];
        for k in higher_first.into_iter().filter(|&k| k < members.len()) {
            flows[k] = Some(self.remove_flow(members[k]));
        }
        flows
    }

    /// Whether flow `m`, ending, goes to the recently ended flows: a noteworthy one, when they
    /// are kept.
    fn wants_recent(&self, m: usize) -> bool {
        self.recent_ended.is_some() && self.flows[m].noteworthy()
    }

    /// Keeps an ended flow's entry and evidence for the next evaluation of the findings; the
    /// entry's copy for the outputs that tell the flow's end. (Only a live capture keeps
    /// recent flows: nothing goes to `kept`.)
    fn keep_recent(&mut self, r: FlowReport, e: FlowEvidence) -> Option<FlowReport> {
        let report = self.ended_reports().then(|| r.clone());
        if let Some(recent) = self.recent_ended.as_mut() {
            recent.reports.push(r);
            recent.evidence.push(e);
        }
        report
    }

    /// Flows ended since the findings were last evaluated are kept for that evaluation, when
    /// the findings are evaluated every `evaluated_every_ns` (capture time). Only a live
    /// capture needs it (`keep_ended` keeps every flow anyway), and only with a flow timeout
    /// under two intervals: a flow idle longer has been evaluated after its last frame.
    pub fn keep_recent_ended(&mut self, evaluated_every_ns: u64) {
        let short = self
            .cfg
            .flow_timeout_ns
            .is_some_and(|t| t < evaluated_every_ns.saturating_mul(2));
        if short && !self.cfg.keep_ended {
            self.recent_ended.get_or_insert_with(KeptFlows::default);
        }
    }

    /// Whether ended flows leave (a live capture), not kept for the report (`-r`).
    pub fn frees_ended_flows(&self) -> bool {
        !self.cfg.keep_ended
    }

    /// Whether flows ended since the findings were last evaluated are waiting for it.
    pub fn has_recent_ended(&self) -> bool {
        self.recent_ended
            .as_ref()
            .is_some_and(|r| !r.reports.is_empty())
    }

    /// Whether so many noteworthy flows ended since the findings were last evaluated that
    /// they should be evaluated now (a live capture's watch does so at the next frame).
    pub fn recent_ended_full(&self) -> bool {
        self.recent_ended
            .as_ref()
            .is_some_and(|r| r.reports.len() >= RECENT_ENDED_MAX)
    }

    /// The findings were evaluated: the flows ended so far were seen.
    pub fn findings_evaluated(&mut self) {
        if let Some(r) = self.recent_ended.as_mut() {
            *r = KeptFlows::default();
        }
        self.kept_evaluated = self.kept.reports.len();
    }

    /// Flow `flow`, out of the open flows, ended at `now` with its entry and evidence.
    fn ended_one(
        &mut self,
        flow: Box<Flow>,
        mut report: Option<FlowReport>,
        evidence: Option<FlowEvidence>,
        now: u64,
    ) {
        self.flows_ended += 1;
        self.fold_ended_samples(&flow, now);
        if let Some(e) = evidence {
            // The entry itself when no output tells the flow's end; a copy when one does.
            let kept = if self.tell_ended.is_some() {
                report.clone()
            } else {
                report.take()
            };
            self.kept
                .reports
                .push(kept.expect("kept flows have entries"));
            self.kept.evidence.push(e);
        }
        if let Some(parts) = self.tell_ended {
            self.ended.push(FlowEnded {
                id: flow.id,
                ended_ns: now,
                report: report.map(Arc::new),
                counters: parts.counters.then(|| flow.counters(At::End(now))),
            });
        }
    }

    /// Takes flow `i` out of the open flows, renumbering the flow moved into its place.
    fn remove_flow(&mut self, i: usize) -> Box<Flow> {
        let key = self.flows[i].key;
        self.index.remove(&key);
        self.forget_data_flow(i);
        let flow = self.flows.swap_remove(i);
        if let Some(open) = &self.open_flows {
            open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        let slot = self.rate_slots.swap_remove(i);
        if slot != super::NO_RATE {
            self.rate_pool.give_back(slot);
        }
        let moved_from = self.flows.len();
        if i < moved_from {
            let moved = &self.flows[i];
            let (key, peer, id) = (moved.key, moved.peer, moved.id);
            self.index.insert(key, i);
            if let Some(p) = peer {
                self.flows[p].peer = Some(i);
            }
            if let Some(list) = self.data_by_hosts.get_mut(&(key.src, key.dst)) {
                list.renumber(id, i);
            }
        }
        flow
    }

    /// Removes flow `i` from the data flows by host pair.
    fn forget_data_flow(&mut self, i: usize) {
        let hosts = (self.flows[i].key.src, self.flows[i].key.dst);
        if let Some(list) = self.data_by_hosts.get_mut(&hosts) {
            list.remove(self.flows[i].id);
            if list.is_empty() {
                self.data_by_hosts.remove(&hosts);
            }
        }
    }

    /// The plots' RTT distribution keeps the samples of flows that ended.
    /// What the capture-wide figures keep of a flow that ended at `end`: the PSNs the capture
    /// missed on it and those left unsettled, and its ACK RTT samples for the plots.
    pub(super) fn fold_ended_samples(&mut self, flow: &Flow, end: u64) {
        self.state.unsettled += flow.unsettled(end).map_or(0, |u| u.psns);
        let missed = flow.capture_missed(At::End(end));
        if missed > 0 {
            self.state.missed.psns += missed;
            self.state.missed.flows += 1;
            self.state.missed.data_psns += flow.data_psns(missed);
        }
        self.hosts.fold(flow, end);
        if self.timelines.is_some() {
            for &ns in flow.ack_rtt.kept() {
                self.ended_rtt.push(ns);
            }
        }
    }

    /// Keeps the flows that end for `take_ended` (else they are dropped as they end), with
    /// the `parts` an output takes.
    pub fn tell_ended(&mut self, parts: EndedParts) {
        self.tell_ended = Some(parts);
    }

    /// Whether an output takes the report entries of the flows that end.
    fn ended_reports(&self) -> bool {
        self.tell_ended.is_some_and(|p| p.reports)
    }

    /// The ids of the flows open now.
    pub fn open_ids(&self) -> Vec<usize> {
        self.flows.iter().map(|f| f.id as usize).collect()
    }

    /// The flows that ended since the last call, oldest first (their state is freed with them).
    pub fn take_ended(&mut self) -> Vec<FlowEnded> {
        std::mem::take(&mut self.ended)
    }

    /// Whether flows ended since the last `take_ended`.
    pub fn has_ended(&self) -> bool {
        !self.ended.is_empty()
    }

    /// Flows ended over the run so far.
    pub fn flows_ended(&self) -> u64 {
        self.flows_ended
    }

    /// Flows seen over the run so far, open or ended.
    pub fn flows_seen(&self) -> u64 {
        self.next_flow_id
    }
}

#[cfg(test)]
mod tests {
    use roce_parsers::link::LINKTYPE_ETHERNET;
    use roce_testgen::churn::{write_churn, ChurnConfig};
    use roce_testgen::diagnose::{reconnections, Step};
    use roce_testgen::writer::pcap_bytes;
    use roce_testgen::{FrameSpec, Net, PcapFlavor, PcapWriter, RoceSpec};

    use super::super::testing::scenario;
    use super::super::{AnalysisConfig, Analyzer};
    use super::EndedParts;
    use crate::analysis::report_build::CaptureMeta;

    const MS: u64 = 1_000_000;

    /// Feeds a capture held in memory; `each` sees the analyzer after every frame. With the
    /// frame counts, in the meta a report needs.
    fn feed(
        data: &[u8],
        cfg: AnalysisConfig,
        mut each: impl FnMut(&mut Analyzer),
    ) -> (Analyzer, CaptureMeta) {
        let an = Analyzer::new(cfg);
        let (an, counts) = crate::analysis::testing::feed(data, an, |an, _| each(an));
        let meta = CaptureMeta {
            counts,
            ..CaptureMeta::default()
        };
        (an, meta)
    }

    fn with_timeout(ns: u64, keep_ended: bool) -> AnalysisConfig {
        AnalysisConfig {
            flow_timeout_ns: Some(ns),
            keep_ended,
            max_flows: 1_000_000,
            ..AnalysisConfig::default()
        }
    }

    fn churn(qps: u32) -> (Vec<u8>, ChurnConfig) {
        let cfg = ChurnConfig {
            qps,
            concurrent: 8,
            ..ChurnConfig::default()
        };
        let mut out = Vec::new();
        write_churn(&mut out, cfg).unwrap();
        (out, cfg)
    }

    #[test]
    fn a_live_monitor_forgets_idle_ud_senders_and_cm_requests_as_it_forgets_flows() {
        for (name, kept) in [
            ("lossless_class_polluted", "UD sender"),
            ("cm_unanswered", "CM request"),
            ("qp_reused", "CM pair"),
        ] {
            let data = scenario(name);
            let held =
                |an: &Analyzer| an.ud_senders.len() + an.cm_requests.len() + an.cm_pairs.len();
            for keep_ended in [false, true] {
                let (mut an, _) = feed(&data, with_timeout(100 * MS, keep_ended), |_| {});
                assert!(held(&an) > 0, "{name}: no {kept} to forget");
                // Later than the timeout and than a CM request is kept (its wait twice, 1 s more).
                let later = an.last_ts() + 10_000 * MS;
                an.sweep(later);
                // With -r (keep_ended) the report covers the whole file: nothing is forgotten.
                assert_eq!(
                    held(&an) == 0,
                    !keep_ended,
                    "{name}: {kept}, keep_ended {keep_ended}"
                );
            }
        }
    }

    #[test]
    fn a_live_churn_keeps_only_the_flows_active_within_the_timeout() {
        let (data, cfg) = churn(5_000);
        let (mut most_open, mut told) = (0, Vec::new());
        let (mut an, meta) = feed(&data, with_timeout(MS, false), |an| {
            most_open = most_open.max(an.flow_count());
            told.extend(an.take_ended().into_iter().map(|e| e.id));
        });
        an.tell_ended(EndedParts {
            reports: true,
            counters: false,
        });
        // 1 ms of a 300,000 frames/s churn of 4-frame QPs: ~150 flows; never the 10,000.
        assert!(most_open < 400, "{most_open} flows open at once");
        let open = an.flow_count() as u64;
        assert_eq!(an.flows_ended() + open, cfg.flows());
        assert_eq!(an.flows_seen(), cfg.flows());
        // A live report covers the open flows, its totals the whole run.
        let report = an.finish(meta);
        assert_eq!(report.flows.len() as u64, open);
        assert_eq!(report.capture.flows as u64, cfg.flows());
        assert_eq!(report.capture.flows_ended, cfg.flows() - open);
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        // Without tell_ended the analyzer keeps nothing of them.
        assert!(told.is_empty());
    }

    const BOTH: EndedParts = EndedParts {
        reports: true,
        counters: true,
    };

    #[test]
    fn an_ended_flow_is_told_with_its_own_entry_whichever_index_its_peer_has() {
        let (data, cfg) = churn(2_000);
        let mut analyzer = Analyzer::new(with_timeout(MS, false));
        analyzer.tell_ended(BOTH);
        let mut told = 0;
        let (mut an, _) = crate::analysis::testing::feed(&data, analyzer, |an, _| {
            for e in an.take_ended() {
                let entry = e.report.as_ref().expect("asked for entries");
                let last = e.counters.expect("asked for counters");
                assert_eq!(entry.id as u64, e.id + 1, "flow {}", last.flow);
                assert_eq!(last.id, e.id);
                assert_eq!((entry.dqpn, entry.packets), (last.flow.dqpn, last.packets));
                told += 1;
            }
        });
        an.sweep(an.last_ts() + 1_000 * MS);
        told += an.take_ended().len();
        assert_eq!(told as u64, cfg.flows());
        // A sweep meets the lower index of a pair first; a QP used again after the timeout
        // may be either. The ACK flow (index 1) ends the connection here.
        let (one, _) = churn(1);
        let mut an = Analyzer::new(with_timeout(MS, false));
        an.tell_ended(BOTH);
        let (mut an, _) = crate::analysis::testing::feed(&one, an, |_, _| {});
        assert_eq!(an.flow_count(), 2);
        assert_eq!(an.flows[1].peer, Some(0));
        an.end_connection(1, an.last_ts() + 1_000 * MS);
        for e in an.take_ended() {
            let entry = e.report.as_ref().expect("asked for entries");
            assert_eq!(entry.id as u64, e.id + 1);
            assert_eq!(entry.dqpn, e.counters.unwrap().flow.dqpn);
        }
    }

    #[test]
    fn every_flow_of_a_churn_is_reported_once_with_or_without_a_timeout() {
        let (data, cfg) = churn(2_000);
        let (ended, meta) = feed(&data, with_timeout(MS, true), |_| {});
        let (never, _) = feed(&data, AnalysisConfig::default(), |_| {});
        assert!(ended.flows_ended() > cfg.flows() / 2);
        let a = ended.finish(meta.clone());
        let b = never.finish(meta);
        assert_eq!(a.flows.len() as u64, cfg.flows());
        let ids: std::collections::BTreeSet<usize> = a.flows.iter().map(|f| f.id).collect();
        assert_eq!(ids.len() as u64, cfg.flows());
        // The same entries, in the same order, as when every flow lasts the whole run.
        let strip = |r: &crate::model::Report| -> Vec<String> {
            r.flows
                .iter()
                .map(|f| serde_json::to_string(f).unwrap())
                .collect()
        };
        assert_eq!(strip(&a), strip(&b));
        assert!(
            a.findings.is_empty() && b.findings.is_empty(),
            "{:?}",
            a.findings
        );
    }

    /// QP 0x100 from host 1 to 2: WRITEs at the times given (ms), and ACKs at others.
    fn writes_and_acks(writes_ms: &[u64], acks_ms: &[u64]) -> Vec<u8> {
        let a = [0x02, 0, 0, 0, 0, 1];
        let b = [0x02, 0, 0, 0, 0, 2];
        let net = Net::v4([10, 0, 0, 1], [10, 0, 0, 2], 0x6a);
        let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
        for (k, &t) in writes_ms.iter().enumerate() {
            let s = RoceSpec::new(0x0a, 0x100, k as u32)
                .ackreq()
                .payload(64)
                .reth(0x1000, 1, 64);
            frames.push((
                t,
                roce_testgen::frames::rocev2(&FrameSpec::new(a, b), net, 50000, &s),
            ));
        }
        for &t in acks_ms {
            let psn = writes_ms.iter().filter(|&&w| w < t).count() as u32 - 1;
            let s = RoceSpec::new(0x11, 0x200, psn).aeth(0x1f, psn + 1);
            let rev = FrameSpec::new(b, a);
            frames.push((
                t,
                roce_testgen::frames::rocev2(&rev, net.reversed(), 50000, &s),
            ));
        }
        frames.sort_by_key(|f| f.0);
        let mut w = PcapWriter::new(Vec::new(), PcapFlavor::NANO_LE, 1, 65535).unwrap();
        for (t, f) in frames {
            w.write(1_700_000_000_000_000_000 + t * MS, &f).unwrap();
        }
        w.into_inner()
    }

    #[test]
    fn a_qp_used_again_after_the_timeout_is_a_new_flow() {
        let data = writes_and_acks(&[0, 20], &[1, 21]);
        let (an, meta) = feed(&data, with_timeout(5 * MS, true), |_| {});
        assert_eq!((an.flows_seen(), an.flows_ended()), (4, 2));
        let r = an.finish(meta);
        assert_eq!(r.flows.len(), 4);
        assert!(r.flows.iter().all(|f| f.packets == 1 && f.peer.is_some()));
        // The later connection's data flow starts afresh: no PSN gap from 0 to 1.
        assert!(r.flows.iter().all(|f| f.psn.gaps == 0));
        let (never, _) = feed(&data, AnalysisConfig::default(), |_| {});
        assert_eq!(never.flows_seen(), 2);
    }

    #[test]
    fn the_acks_of_the_other_direction_keep_a_connection_alive() {
        // Requests 8 ms apart, an ACK 4 ms after each: neither direction alone is busy
        // enough for a 5 ms timeout, the connection is.
        let data = writes_and_acks(&[0, 8, 16], &[4, 12, 20]);
        let (mut an, _) = feed(&data, with_timeout(5 * MS, true), |_| {});
        assert_eq!((an.flows_seen(), an.flows_ended()), (2, 0));
        // Idle 9 ms at 29 ms: the whole connection ends, both flows.
        an.sweep(1_700_000_000_000_000_000 + 29 * MS);
        assert_eq!((an.flow_count(), an.flows_ended()), (0, 2));
    }

    #[test]
    fn the_noteworthy_flows_ended_wait_for_the_findings_and_say_when_they_are_many() {
        // Every QP of a churn without ACKs leaves a request unanswered: noteworthy.
        let cfg = ChurnConfig {
            qps: 3_000,
            acks: false,
            concurrent: 8,
            ..ChurnConfig::default()
        };
        let mut data = Vec::new();
        write_churn(&mut data, cfg).unwrap();
        let mut an = Analyzer::new(with_timeout(MS, false));
        an.keep_recent_ended(1_000 * MS);
        let (mut an, _) = crate::analysis::testing::feed(&data, an, |_, _| {});
        // No watch evaluated them (the report sink's watch does when they are this many):
        // every one waits.
        let held = an.recent_ended.as_ref().map_or(0, |r| r.reports.len());
        assert!(an.flows_ended() > 2_000, "{}", an.flows_ended());
        assert_eq!(held as u64, an.flows_ended());
        assert!(an.recent_ended_full());
        an.findings_evaluated();
        assert!(!an.has_recent_ended() && !an.recent_ended_full());
        // -r keeps every ended flow in the report anyway: nothing kept twice.
        let mut kept = Analyzer::new(with_timeout(MS, true));
        kept.keep_recent_ended(1_000 * MS);
        let (kept, _) = crate::analysis::testing::feed(&data, kept, |_, _| {});
        assert!(kept.recent_ended.is_none());
        // A timeout of two intervals or more: every flow was evaluated after its last frame.
        let mut long = Analyzer::new(with_timeout(2 * MS, false));
        long.keep_recent_ended(MS);
        assert!(long.recent_ended.is_none());
    }

    /// Flows each name the other as peer, or neither names one: ending a connection and
    /// renumbering the flows that move rely on it.
    fn peers_not_mutual(an: &Analyzer) -> Vec<String> {
        (0..an.flows.len())
            .filter_map(|i| {
                let j = an.flows[i].peer?;
                let back = an.flows.get(j).and_then(|g| g.peer);
                (back != Some(i)).then(|| format!("flow {i} names {j}, which names {back:?}"))
            })
            .collect()
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let hosts = (1u8..=3, 1u8..=3).prop_filter("two hosts", |(a, p)| a != p);
        let qps = (
            prop::sample::select(vec![0x400u32, 0x401]),
            prop::sample::select(vec![0x100u32, 0x101]),
        );
        prop_oneof![
            (hosts.clone(), qps.clone()).prop_map(|((a, p), (a_qp, p_qp))| Step::Connect {
                a,
                p,
                a_qp,
                p_qp
            }),
            (hosts, qps, 1u32..4).prop_map(|((a, p), (a_qp, p_qp), n)| Step::Write {
                a,
                p,
                a_qp,
                p_qp,
                n
            }),
            (0u64..3_000).prop_map(Step::Idle),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1024,
            failure_persistence: None,
            ..Default::default()
        })]

        /// QPs connected, connected anew to other QPs (either way round), used and left idle,
        /// with flow timeouts short against the gaps, live and as with -r: after every frame,
        /// peers are mutual (a QP connected anew to another left a stale peer, and ending it
        /// panicked or named a bystander).
        #[test]
        fn peers_stay_mutual_as_qps_are_connected_anew(
            steps in proptest::collection::vec(step(), 1..24),
            timeout_us in proptest::sample::select(vec![100u64, 1_000, 60_000_000]),
            keep_ended: bool,
        ) {
            let frames = reconnections(&steps);
            let data = pcap_bytes(&frames, PcapFlavor::NANO_LE, LINKTYPE_ETHERNET, 65535);
            let mut wrong = Vec::new();
            let (an, _) = feed(&data, with_timeout(timeout_us * 1_000, keep_ended), |an| {
                if wrong.is_empty() {
                    wrong = peers_not_mutual(an);
                }
            });
            proptest::prop_assert_eq!(wrong, Vec::<String>::new());
            proptest::prop_assert_eq!(peers_not_mutual(&an), Vec::<String>::new());
        }
    }
}
