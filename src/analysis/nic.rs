//! How the two NICs of a data flow react to loss and congestion, from the flow's own packets:
//! its receiver's NAK and CNP generation, its sender's resends and its rate after CNPs. What
//! Lumina measures with a switch that injects drops and marks, from any capture that holds both
//! directions. Kept from a flow's first gap, NAK, CE mark or CNP (`Flow::nic`), never before:
//! most flows never need it. Folded per host by `hosts`.

use std::collections::VecDeque;

use roce_parsers::Psn;

use super::latency::Samples;

/// The resend policy that NAK episodes showed: `go_back_n`, `selective` or `mixed`, None when
/// none could tell (the names of `hosts[].as_sender.resend_policy`).
pub fn resend_policy(go_back_n: u64, selective: u64) -> Option<&'static str> {
    match (go_back_n, selective) {
        (0, 0) => None,
        (_, 0) => Some("go_back_n"),
        (0, _) => Some("selective"),
        _ => Some("mixed"),
    }
}

/// The window a rate is measured over, before and after a CNP.
pub const RATE_WINDOW_NS: u64 = 100_000;
/// Ratios are kept in `Samples` (integers) in millionths.
pub const RATIO_UNIT: f64 = 1e6;
/// Requests remembered for the NAK generation time: the NAKed PSN's last send and the request
/// after it must still be among them when the NAK comes.
const REQUESTS_KEPT: usize = 1024;
/// Packets remembered for the rate before a CNP: 100 us of 1 KB frames at 100 Gb/s fit.
const RATE_PACKETS_KEPT: usize = 2048;
/// CNPs from the first judged one to the one the rate after is taken at.
const REACTION_CNPS: u32 = 10;
/// Packets in the 100 us before a CNP for its sender to count as sending back to back, and
/// for a rate measured there to be compared with the rate after.
const BACK_TO_BACK_MIN_PACKETS: usize = 10;
const RATE_MIN_PACKETS: usize = BACK_TO_BACK_MIN_PACKETS;
/// NAK frames kept per flow as a finding's evidence.
const NAK_FRAMES_KEPT: usize = 5;

/// What a data flow shows of its NICs' reactions, once it showed loss or congestion.
#[derive(Debug, Clone, Default)]
pub struct NicSigns {
    /// Requests since the first gap or NAK: (PSN, time).
    requests: Option<VecDeque<(Psn, u64)>>,
    /// The latest NAK (sequence or RNR) for the flow's requests.
    last_nak: Option<u64>,
    /// The first CE-marked packet, and the first CNP at or after it.
    pub first_ce: Option<u64>,
    pub first_cnp: Option<u64>,
    pub nak_generation: Samples,
    /// Frames of the first NAKs measured.
    pub nak_frames: Vec<u64>,
    /// The first CE mark since the latest CNP.
    ce_since_cnp: Option<u64>,
    last_cnp: Option<u64>,
    pub cnp_generation: Samples,
    pub cnp_interval: Samples,
    /// The resend a sequence NAK asked for, watched to tell go-back-N from selective.
    resend: Option<ResendWatch>,
    pub go_back_n: u64,
    pub selective: u64,
    /// Sequence NAKs, and the PSNs resent after them (before the next).
    pub nak_episodes: u64,
    pub resent_psns: u64,
    rate: Option<RateHistory>,
    /// Rate over the 100 us after an episode's first CNP over the 100 us before, in
    /// millionths.
    rate_cut: Samples,
    reaction: CnpReaction,
}

crate::empty!(NicSigns);

#[derive(Debug, Clone, Copy)]
struct ResendWatch {
    naked: Psn,
    /// The highest PSN sent when the NAK came.
    highest: Psn,
    resent: bool,
}

/// The data flow's packets of the latest 100 us, from its first CE mark or CNP on.
#[derive(Debug, Clone, Default)]
struct RateHistory {
    /// The earliest time the packets cover.
    since: u64,
    packets: VecDeque<(u64, u32)>,
    /// Bytes sent since the history started.
    sent: u64,
    /// An episode's first CNP whose 100 us after are being counted: (time, bytes in the
    /// 100 us before, `sent` at it).
    after: Option<(u64, u64, u64)>,
}

/// The 100 us before a CNP, as the history shows them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Before {
    bytes: u64,
    packets: usize,
    /// No gap between the packets longer than 4x their median gap: sending back to back.
    back_to_back: bool,
}

impl RateHistory {
    fn sent(&mut self, ts: u64, len: u32, rate_cut: &mut Samples) {
        if let Some((cnp, before, at)) = self.after {
            if ts >= cnp + RATE_WINDOW_NS {
                rate_cut.add(ratio_millionths(self.sent - at, before));
                self.after = None;
            }
        }
        self.sent += u64::from(len);
        self.packets.push_back((ts, len));
        let oldest = ts.saturating_sub(RATE_WINDOW_NS);
        while self.packets.front().is_some_and(|&(t, _)| t < oldest) {
            self.packets.pop_front();
        }
        if self.packets.len() > RATE_PACKETS_KEPT {
            self.packets.pop_front();
            self.since = self.since.max(self.packets.front().map_or(ts, |p| p.0));
        }
    }

    /// The 100 us before `t`, when the history covers all of them and a packet was sent.
    fn before(&self, t: u64) -> Option<Before> {
        let start = t.checked_sub(RATE_WINDOW_NS)?;
        if self.since > start {
            return None;
        }
        let (mut times, mut bytes) = (Vec::new(), 0);
        for &(ts, len) in self.packets.iter().filter(|p| (start..t).contains(&p.0)) {
            times.push(ts);
            bytes += u64::from(len);
        }
        if times.is_empty() {
            return None;
        }
        Some(Before {
            bytes,
            packets: times.len(),
            back_to_back: back_to_back(&times),
        })
    }
}

/// Whether packets at `times` (in order), of 100 us, were sent back to back: no gap longer
/// than 4x the median gap, and at least 10 of them. A sender that paces a packet every 20 us
/// evenly is held back by its application, not by a rate limiter a CNP could cut.
fn back_to_back(times: &[u64]) -> bool {
    let mut gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    if times.len() < BACK_TO_BACK_MIN_PACKETS {
        return false;
    }
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    gaps.last().is_some_and(|&max| max <= 4 * median)
}

fn ratio_millionths(after: u64, before: u64) -> u64 {
    (after as f64 / before.max(1) as f64 * RATIO_UNIT).round() as u64
}

/// How the sender's rate went from a CNP that the history covers 100 us before (the first
/// judged) to the 10th after it, and the CNPs it received in all.
#[derive(Debug, Clone, Default)]
struct CnpReaction {
    cnps: u64,
    first_cnp: Option<u64>,
    last_cnp: u64,
    judged: Option<Judged>,
}

#[derive(Debug, Clone)]
struct Judged {
    from: u64,
    frames: [u64; 2],
    before: Before,
    sent_at: u64,
    cnps: u32,
    /// Rate from the first judged CNP to the 10th over the rate in the 100 us before it.
    ratio: Option<f64>,
}

/// What `cnp_without_slowdown` judges of a flow's sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CnpResponse {
    pub cnps: u64,
    pub span_ns: u64,
    /// Rate from the judged CNP to the 10th after it, over the rate before it.
    pub ratio: f64,
    pub back_to_back: bool,
    /// Bytes per second in the 100 us before the judged CNP.
    pub rate_before: f64,
    /// The judged CNP's frame and the 10th's.
    pub frames: [u64; 2],
}

impl NicSigns {
    /// A packet of the flow (its sender's), `len` bytes on the wire. Cold: most flows have
    /// no signs, and inlined into the per-packet path it slowed every flow's packets.
    #[cold]
    pub fn sent(&mut self, ts: u64, len: u32) {
        if let Some(h) = self.rate.as_mut() {
            h.sent(ts, len, &mut self.rate_cut);
        }
    }

    /// An RNR NAK for the flow's requests.
    pub fn rnr_nak(&mut self, ts: u64) {
        self.last_nak = Some(ts);
    }

    /// The latest NAK for the flow's requests.
    pub fn last_nak(&self) -> Option<u64> {
        self.last_nak
    }

    /// A CE-marked packet of the flow.
    pub fn ce(&mut self, ts: u64) {
        self.ce_since_cnp.get_or_insert(ts);
        self.first_ce.get_or_insert(ts);
        self.start_rate_history(ts);
    }

    fn start_rate_history(&mut self, ts: u64) {
        self.rate.get_or_insert_with(|| RateHistory {
            since: ts,
            ..RateHistory::default()
        });
    }

    /// A request with PSN `psn`; `gap_from` the first PSN it skipped, `resent` whether it is
    /// a resend.
    #[cold]
    pub fn request(&mut self, psn: Psn, ts: u64, gap_from: Option<Psn>, resent: bool) {
        if let Some(first_missing) = gap_from {
            if self.requests.is_none() {
                // The request before the gap: where the NAK's clock is known to start after.
                self.requests = Some(VecDeque::from([(first_missing.prev(), ts)]));
            }
        }
        if let Some(q) = self.requests.as_mut() {
            if q.len() == REQUESTS_KEPT {
                q.pop_front();
            }
            q.push_back((psn, ts));
        }
        if resent && self.nak_episodes > 0 {
            self.resent_psns += 1;
        }
        self.watch_resend(psn);
    }

    /// Tells go-back-N from selective by the request after the NAKed PSN's resend.
    fn watch_resend(&mut self, psn: Psn) {
        let Some(w) = self.resend.as_mut() else {
            return;
        };
        if !w.resent {
            w.resent = psn == w.naked;
            return;
        }
        if psn - w.naked == 1 {
            self.go_back_n += 1;
        } else if psn - w.highest > 0 {
            self.selective += 1;
        }
        self.resend = None;
    }

    /// A sequence-error NAK for `psn` at `ts` (frame `frame`), when the highest PSN sent was
    /// `highest`.
    pub fn sequence_nak(&mut self, psn: Psn, ts: u64, frame: u64, highest: Option<Psn>) {
        self.nak_episodes += 1;
        self.last_nak = Some(ts);
        match self.requests.as_ref() {
            Some(q) => {
                if let Some(from) = first_beyond_last_send(q, psn) {
                    self.nak_generation.add(ts.saturating_sub(from));
                    if self.nak_frames.len() < NAK_FRAMES_KEPT {
                        self.nak_frames.push(frame);
                    }
                }
            }
            None => self.requests = Some(VecDeque::new()),
        }
        // Judged only with something in flight after the NAKed PSN.
        self.resend = highest.filter(|&h| h - psn > 0).map(|highest| ResendWatch {
            naked: psn,
            highest,
            resent: false,
        });
    }

    /// A CNP for the flow at `ts` (frame `frame`).
    pub fn cnp(&mut self, ts: u64, frame: u64) {
        if self.first_ce.is_some_and(|ce| ce <= ts) && self.first_cnp.is_none() {
            self.first_cnp = Some(ts);
        }
        if let Some(ce) = self.ce_since_cnp.take() {
            self.cnp_generation.add(ts.saturating_sub(ce));
            if let Some(last) = self.last_cnp {
                self.cnp_interval.add(ts.saturating_sub(last));
            }
        }
        let episode = self
            .last_cnp
            .is_none_or(|last| ts.saturating_sub(last) >= RATE_WINDOW_NS);
        self.last_cnp = Some(ts);
        self.start_rate_history(ts);
        let h = self.rate.as_mut().expect("started");
        let before = h.before(ts);
        if episode {
            // Fewer packets than that in the 100 us before make no rate worth a ratio (a
            // sender of a packet every 100 us shows 0 or 2 after).
            h.after = before
                .filter(|b| b.packets >= RATE_MIN_PACKETS)
                .map(|b| (ts, b.bytes, h.sent));
        }
        let sent = h.sent;
        let r = &mut self.reaction;
        r.cnps += 1;
        r.first_cnp.get_or_insert(ts);
        r.last_cnp = ts;
        match r.judged.as_mut() {
            None => {
                r.judged = before.map(|before| Judged {
                    from: ts,
                    frames: [frame; 2],
                    before,
                    sent_at: sent,
                    cnps: 1,
                    ratio: None,
                })
            }
            Some(j) if j.ratio.is_none() => {
                j.cnps += 1;
                if j.cnps == REACTION_CNPS {
                    j.frames[1] = frame;
                    let rate = (sent - j.sent_at) as f64 / ts.saturating_sub(j.from).max(1) as f64;
                    let rate_before = j.before.bytes as f64 / RATE_WINDOW_NS as f64;
                    j.ratio = Some(rate / rate_before);
                }
            }
            Some(_) => {}
        }
    }

    /// The rate cuts after CNPs at `now`: an episode whose 100 us after have passed counts
    /// though no packet came after them.
    pub fn rate_cuts(&self, now: u64) -> Samples {
        let mut cuts = self.rate_cut.clone();
        if let Some(h) = self.rate.as_ref() {
            if let Some((_, before, at)) = h.after.filter(|a| now >= a.0 + RATE_WINDOW_NS) {
                cuts.add(ratio_millionths(h.sent - at, before));
            }
        }
        cuts
    }

    /// What `cnp_without_slowdown` judges, once 10 CNPs from the first judged one came.
    pub fn cnp_response(&self) -> Option<CnpResponse> {
        let r = &self.reaction;
        let j = r.judged.as_ref()?;
        Some(CnpResponse {
            cnps: r.cnps,
            span_ns: r.last_cnp.saturating_sub(r.first_cnp?),
            ratio: j.ratio?,
            back_to_back: j.before.back_to_back,
            rate_before: j.before.bytes as f64 / RATE_WINDOW_NS as f64 * 1e9,
            frames: j.frames,
        })
    }
}

/// The first request with a PSN beyond `naked` since `naked` was last sent (or since the
/// requests before it, when the capture never saw it), among `requests`, oldest first.
fn first_beyond_last_send(requests: &VecDeque<(Psn, u64)>, naked: Psn) -> Option<u64> {
    let mut first = None;
    for &(psn, ts) in requests.iter().rev() {
        if psn - naked <= 0 {
            return first;
        }
        first = Some(ts);
    }
    // The requests kept do not reach back to the NAKed PSN's last send.
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    fn psn(v: u32) -> Psn {
        Psn::new(v)
    }

    #[test]
    fn nak_generation_runs_from_the_first_request_past_the_naked_psns_last_send() {
        // The capture missed PSN 5: the gap shows at 6.
        let mut n = NicSigns::default();
        n.request(psn(6), 10 * US, Some(psn(5)), false);
        n.request(psn(7), 11 * US, None, false);
        n.sequence_nak(psn(5), 12 * US, 40, Some(psn(7)));
        assert_eq!(n.nak_generation.kept(), [2 * US]);
        // The resend of 5 and 6 (go-back-N); 5 lost again after the capture point: its NAK's
        // clock starts at the resent 6, not at the first 6.
        n.request(psn(5), 20 * US, None, true);
        n.request(psn(6), 21 * US, None, true);
        n.sequence_nak(psn(5), 24 * US, 41, Some(psn(7)));
        assert_eq!(n.nak_generation.kept(), [2 * US, 3 * US]);
        assert_eq!(n.go_back_n, 1);
        assert_eq!(n.nak_frames, [40, 41]);
    }

    #[test]
    fn a_resend_is_go_back_n_or_selective_by_the_request_after_it() {
        let mut n = NicSigns::default();
        n.request(psn(11), 0, Some(psn(10)), false);
        for p in 12..=20 {
            n.request(psn(p), 0, None, false);
        }
        n.sequence_nak(psn(10), US, 1, Some(psn(20)));
        n.request(psn(10), 2 * US, None, true);
        n.request(psn(21), 3 * US, None, false);
        assert_eq!((n.go_back_n, n.selective), (0, 1));
        assert_eq!(n.resent_psns, 1);
        // Nothing in flight after the NAKed PSN: not judged.
        n.sequence_nak(psn(21), 4 * US, 2, Some(psn(21)));
        n.request(psn(21), 5 * US, None, true);
        n.request(psn(22), 6 * US, None, false);
        assert_eq!((n.go_back_n, n.selective), (0, 1));
    }

    #[test]
    fn cnp_generation_and_interval_count_only_where_a_ce_mark_came() {
        let mut n = NicSigns::default();
        n.ce(0);
        n.ce(US);
        n.cnp(4 * US, 0);
        n.cnp(10 * US, 0); // no CE mark since the last: neither
        n.ce(50 * US);
        n.cnp(54 * US, 0);
        assert_eq!(n.cnp_generation.kept(), [4 * US, 4 * US]);
        assert_eq!(n.cnp_interval.kept(), [44 * US]);
    }

    #[test]
    fn the_rate_after_an_episodes_first_cnp_is_compared_with_the_rate_before() {
        let mut n = NicSigns::default();
        n.ce(0);
        // 1 KB every microsecond, then half as often after the CNP at 150 us.
        for t in 0..150 {
            n.sent(t * US, 1000);
        }
        n.cnp(150 * US, 0);
        for t in (150..400).step_by(2) {
            n.sent(t * US, 1000);
        }
        let cuts = n.rate_cuts(400 * US).summary_in(RATIO_UNIT);
        assert_eq!(cuts.count, 1);
        assert!((cuts.p50.unwrap() - 0.5).abs() < 0.02, "{cuts:?}");
        assert!(back_to_back(&(0..10).collect::<Vec<u64>>()));
        assert!(!back_to_back(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 30]));
        // Even, but a packet every 20 us: paced by the application.
        assert!(!back_to_back(&[0, 20, 40, 60, 80]));
    }
}
