//! How the two NICs of a data flow react to loss and congestion, from the flow's own packets:
//! its receiver's NAK and CNP generation, its sender's resends and its rate after CNPs. What
//! Lumina measures with a switch that injects drops and marks, from any capture that holds both
//! directions. Kept from a flow's first gap, NAK, CE mark or CNP (`Flow::nic`), never before:
//! most flows never need it. Folded per host by `hosts`.

use std::collections::VecDeque;

use roce_parsers::Psn;

use super::latency::Samples;
use crate::model::RateCutUnmeasured;

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

/// The shortest window a rate is measured over, before and after a CNP.
pub const RATE_WINDOW_NS: u64 = 100_000;
/// Ratios are kept in `Samples` (integers) in millionths.
pub const RATIO_UNIT: f64 = 1e6;
/// Requests remembered for the NAK generation time: the NAKed PSN's last send and the request
/// after it must still be among them when the NAK comes.
const REQUESTS_KEPT: usize = 1024;
/// CNPs from the first judged one to the one the rate after is taken at.
const REACTION_CNPS: u32 = 10;
/// Packets in the 100 us before a CNP for its sender to count as sending back to back, and
/// for a rate measured there to be compared with the rate after.
const BACK_TO_BACK_MIN_PACKETS: u64 = 10;
const RATE_MIN_PACKETS: u64 = BACK_TO_BACK_MIN_PACKETS;
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
    /// Sequence NAKs whose generation could not be timed: the capture saw no request past
    /// the NAKed PSN's last send before them (the loss was after the capture point).
    pub nak_generation_untimed: u64,
    /// Frames of the first NAKs measured.
    pub nak_frames: Vec<u64>,
    /// The first CE mark since the latest CNP.
    ce_since_cnp: Option<u64>,
    last_cnp: Option<u64>,
    pub cnp_generation: Samples,
    /// CNPs with no CE mark seen since the one before (marked after the capture point).
    pub cnp_generation_untimed: u64,
    pub cnp_interval: Samples,
    /// The resend a sequence NAK asked for, watched to tell go-back-N from selective.
    resend: Option<ResendWatch>,
    pub go_back_n: u64,
    pub selective: u64,
    /// Sequence NAKs, and the PSNs resent after them (before the next).
    pub nak_episodes: u64,
    pub resent_psns: u64,
    /// Bytes the flow sent since its first sign.
    sent: u64,
    /// An episode's first CNP whose 100 us after are being counted.
    after: Option<AfterCnp>,
    /// Rate over the 100 us after an episode's first CNP over the 100 us before, in
    /// millionths.
    rate_cut: Samples,
    /// The CNPs whose rate cut could not be measured, by why.
    rate_cut_unmeasured: RateCutUnmeasured,
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

/// An episode's first CNP whose window after it is being counted.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AfterCnp {
    at: u64,
    window_ns: u64,
    /// Bytes per nanosecond in the window before it.
    rate_before: f64,
    /// `NicSigns::sent` at it.
    sent_at: u64,
}

/// The windows a rate before and after a CNP is measured over, the shortest first: the first
/// that holds 10 of the sender's packets before the CNP is taken (100 us for a sender of a
/// packet a microsecond, 10 ms for one of a packet a millisecond).
const WINDOWS_NS: [u64; 3] = [RATE_WINDOW_NS, 10 * RATE_WINDOW_NS, 100 * RATE_WINDOW_NS];
/// Bins per window, and bins kept: a window's, the CNP's own, and 5 for a CNP that the
/// capture shows up to half a window after the sender's later packets.
const WINDOW_BINS: u64 = 10;
const RING_BINS: usize = 16;

/// A flow's recent rate: its sender's packets and bytes in bins of a tenth of each window
/// (10 us, 100 us, 1 ms), the latest 16 of each. Kept for every flow from its 10th packet
/// (`RatePool`, 320 bytes a flow), so that the window before a flow's first CNP is known
/// though nothing marked it then.
#[derive(Debug, Clone, Copy, Default)]
pub struct RateRing {
    /// The time of the first packet counted: a window that began before it is not known.
    since: u64,
    scales: [Bins; WINDOWS_NS.len()],
}

/// The packet of a flow from which on its rate is kept: a flow of fewer packets cannot show
/// 10 in a window before a CNP, and most short flows never take a ring.
pub const RATE_KEPT_FROM_PACKET: u64 = RATE_MIN_PACKETS;

/// The open flows' rate rings, by slot: a flow takes one at its 10th packet and gives it back
/// when it ends, so that 100,000 open flows of a few packets hold none.
#[derive(Debug, Clone, Default)]
pub struct RatePool {
    rings: super::flow_table::Chunked<RateRing>,
    free: Vec<u32>,
}

impl RatePool {
    /// A ring counting from `ts` on: its slot.
    pub fn take(&mut self, ts: u64) -> u32 {
        let ring = RateRing {
            since: ts,
            ..RateRing::default()
        };
        match self.free.pop() {
            Some(slot) => {
                self.rings[slot as usize] = ring;
                slot
            }
            None => {
                self.rings.push(ring);
                (self.rings.len() - 1) as u32
            }
        }
    }

    pub fn give_back(&mut self, slot: u32) {
        self.free.push(slot);
    }

    pub fn ring(&mut self, slot: u32) -> &mut RateRing {
        &mut self.rings[slot as usize]
    }

    /// Rings in use.
    pub fn in_use(&self) -> usize {
        self.rings.len() - self.free.len()
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Bins {
    /// The bin of the latest packet (time / bin width).
    latest: u64,
    /// Saturating: a count is only compared with 10 and 0.
    packets: [u16; RING_BINS],
    bytes: [u32; RING_BINS],
}

/// The window before a CNP, as the ring shows it: the 10 bins before the CNP's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Before {
    bytes: u64,
    packets: u64,
    window_ns: u64,
    /// A packet in each tenth of the window, at least 10 in all: sending back to back.
    back_to_back: bool,
}

impl Before {
    /// Bytes per nanosecond.
    fn rate(&self) -> f64 {
        self.bytes as f64 / self.window_ns as f64
    }
}

/// Why the rate before a CNP is not known, at the longest window that could not tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotMeasured {
    /// Fewer than 10 of the sender's packets in it.
    FewPackets,
    /// It began before the capture (or its segment).
    CaptureStart,
    /// It began before the flow's rate was kept: the QP had just started.
    FlowStart,
    /// The CNP came more than half a window behind the sender's latest packet.
    OutOfOrder,
}

impl RateRing {
    /// A packet of the flow's sender, `len` bytes on the wire.
    #[inline]
    pub fn add(&mut self, ts: u64, len: u32) {
        for (bins, window) in self.scales.iter_mut().zip(WINDOWS_NS) {
            bins.add(ts / (window / WINDOW_BINS), len);
        }
    }

    /// The shortest window before `t` holding 10 of the sender's packets, the capture having
    /// begun at `capture_start`; or why the longest holds none worth a rate.
    pub fn before(&self, t: u64, capture_start: u64) -> Result<Before, NotMeasured> {
        let mut why = NotMeasured::FewPackets;
        for (bins, window) in self.scales.iter().zip(WINDOWS_NS) {
            match bins.before(t, window, (capture_start, self.since)) {
                Ok(b) if b.packets >= RATE_MIN_PACKETS => return Ok(b),
                Ok(_) => why = NotMeasured::FewPackets,
                Err(e) => why = e,
            }
        }
        Err(why)
    }
}

/// Why the rate before a CNP at `t` is unknown for a flow that has no ring (fewer than 10
/// packets so far), as `RateRing::before` would say it at its longest window.
pub fn before_without_ring(t: u64, capture_start: u64) -> NotMeasured {
    let longest = WINDOWS_NS[WINDOWS_NS.len() - 1];
    if t < capture_start + longest + longest / WINDOW_BINS {
        NotMeasured::CaptureStart
    } else {
        NotMeasured::FewPackets
    }
}

impl Bins {
    #[inline]
    fn add(&mut self, bin: u64, len: u32) {
        if bin > self.latest {
            self.advance(bin);
        } else if self.latest - bin >= RING_BINS as u64 {
            return;
        }
        let i = bin as usize % RING_BINS;
        self.packets[i] = self.packets[i].saturating_add(1);
        self.bytes[i] = self.bytes[i].saturating_add(len);
    }

    /// Empties the bins after the latest up to `bin`, which becomes the latest.
    fn advance(&mut self, bin: u64) {
        let stale = (bin - self.latest).min(RING_BINS as u64);
        for k in 1..=stale {
            let i = (self.latest + k) as usize % RING_BINS;
            self.packets[i] = 0;
            self.bytes[i] = 0;
        }
        self.latest = bin;
    }

    /// The `window` before the bin of `t`. The part of its own bin before `t` is left out:
    /// the bins that count are whole, and a packet at the CNP's time or after it (but seen
    /// before it) is not counted as before.
    fn before(
        &self,
        t: u64,
        window: u64,
        (capture_start, since): (u64, u64),
    ) -> Result<Before, NotMeasured> {
        let bin_ns = window / WINDOW_BINS;
        let cnp_bin = t / bin_ns;
        let first = cnp_bin
            .checked_sub(WINDOW_BINS)
            .ok_or(NotMeasured::CaptureStart)?;
        if first * bin_ns < capture_start {
            return Err(NotMeasured::CaptureStart);
        }
        if first * bin_ns < since {
            return Err(NotMeasured::FlowStart);
        }
        if self.latest >= first + RING_BINS as u64 {
            return Err(NotMeasured::OutOfOrder);
        }
        let (mut packets, mut bytes, mut every_bin) = (0, 0, true);
        for bin in first..cnp_bin {
            // Bins after the latest packet's are empty, whatever they held before.
            let (n, b) = if bin > self.latest {
                (0, 0)
            } else {
                let i = bin as usize % RING_BINS;
                (u64::from(self.packets[i]), u64::from(self.bytes[i]))
            };
            packets += n;
            bytes += b;
            every_bin &= n > 0;
        }
        Ok(Before {
            bytes,
            packets,
            window_ns: window,
            back_to_back: every_bin && packets >= BACK_TO_BACK_MIN_PACKETS,
        })
    }
}

/// The rate of `bytes` over the window `a` counts after its CNP, over the rate before, in
/// millionths.
fn ratio_millionths(bytes: u64, a: &AfterCnp) -> u64 {
    let rate = bytes as f64 / a.window_ns as f64;
    (rate / a.rate_before.max(f64::MIN_POSITIVE) * RATIO_UNIT).round() as u64
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
        self.close_after(ts);
        self.sent += u64::from(len);
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
        match self
            .requests
            .as_ref()
            .and_then(|q| first_beyond_last_send(q, psn))
        {
            Some(from) => {
                self.nak_generation.add(ts.saturating_sub(from));
                if self.nak_frames.len() < NAK_FRAMES_KEPT {
                    self.nak_frames.push(frame);
                }
            }
            None => self.nak_generation_untimed += 1,
        }
        self.requests.get_or_insert_with(VecDeque::new);
        // Judged only with something in flight after the NAKed PSN.
        self.resend = highest.filter(|&h| h - psn > 0).map(|highest| ResendWatch {
            naked: psn,
            highest,
            resent: false,
        });
    }

    /// A CNP for the flow at `ts` (frame `frame`), the flow's rate history showing `before`
    /// of the 100 us before it.
    pub fn cnp(&mut self, ts: u64, frame: u64, before: Result<Before, NotMeasured>) {
        if self.first_ce.is_some_and(|ce| ce <= ts) && self.first_cnp.is_none() {
            self.first_cnp = Some(ts);
        }
        match self.ce_since_cnp.take() {
            Some(ce) => {
                self.cnp_generation.add(ts.saturating_sub(ce));
                if let Some(last) = self.last_cnp {
                    self.cnp_interval.add(ts.saturating_sub(last));
                }
            }
            None => self.cnp_generation_untimed += 1,
        }
        self.close_after(ts);
        // A CNP within the window of the one before (the window this one's rate would be
        // measured over) is measured with it; an episode's window after is never cut short.
        let window = before.map_or(RATE_WINDOW_NS, |b| b.window_ns);
        let episode = self.after.is_none()
            && self
                .last_cnp
                .is_none_or(|last| ts.saturating_sub(last) >= window);
        self.last_cnp = Some(ts);
        if episode {
            self.start_episode(ts, before);
        } else {
            self.rate_cut_unmeasured.within_window += 1;
        }
        let sent = self.sent;
        let before = before.ok();
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
                    j.ratio = Some(rate / j.before.rate().max(f64::MIN_POSITIVE));
                }
            }
            Some(_) => {}
        }
    }

    /// The rate cut of the episode whose window after ended by `ts`.
    fn close_after(&mut self, ts: u64) {
        if let Some(a) = self.after.filter(|a| ts >= a.at + a.window_ns) {
            self.rate_cut
                .add(ratio_millionths(self.sent - a.sent_at, &a));
            self.after = None;
        }
    }

    /// An episode's first CNP: the window after it is counted where the rate before is known
    /// from enough packets (a sender of a packet every 100 us shows 0 or 2 in 100 us after).
    fn start_episode(&mut self, ts: u64, before: Result<Before, NotMeasured>) {
        let unmeasured = &mut self.rate_cut_unmeasured;
        match before {
            Err(NotMeasured::FewPackets) => unmeasured.few_packets_before += 1,
            Err(NotMeasured::CaptureStart) => unmeasured.capture_start += 1,
            Err(NotMeasured::FlowStart) => unmeasured.flow_start += 1,
            Err(NotMeasured::OutOfOrder) => unmeasured.out_of_order += 1,
            Ok(b) => {
                self.after = Some(AfterCnp {
                    at: ts,
                    window_ns: b.window_ns,
                    rate_before: b.rate(),
                    sent_at: self.sent,
                })
            }
        }
    }

    /// The rate cuts after CNPs at `now`, and the CNPs not measured: an episode whose 100 us
    /// after have passed counts though no packet came after them, one whose 100 us after
    /// the capture did not reach is not measured.
    pub fn rate_cuts(&self, now: u64) -> (Samples, RateCutUnmeasured) {
        let (mut cuts, mut unmeasured) = (self.rate_cut.clone(), self.rate_cut_unmeasured);
        if let Some(a) = self.after {
            if now >= a.at + a.window_ns {
                cuts.add(ratio_millionths(self.sent - a.sent_at, &a));
            } else {
                unmeasured.capture_end += 1;
            }
        }
        (cuts, unmeasured)
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
            rate_before: j.before.rate() * 1e9,
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
        let unknown = Err(NotMeasured::CaptureStart);
        n.ce(0);
        n.ce(US);
        n.cnp(4 * US, 0, unknown);
        n.cnp(10 * US, 0, unknown); // no CE mark since the last: neither
        n.ce(50 * US);
        n.cnp(54 * US, 0, unknown);
        assert_eq!(n.cnp_generation.kept(), [4 * US, 4 * US]);
        assert_eq!(n.cnp_interval.kept(), [44 * US]);
    }

    /// A flow's sender, as the analysis keeps it: its rate ring from its first packet, its
    /// signs from the first CE mark.
    #[derive(Default)]
    struct Sender {
        ring: RateRing,
        nic: Option<NicSigns>,
    }

    impl Sender {
        fn send(&mut self, ts: u64, len: u32, ce: bool) {
            if ce {
                self.nic.get_or_insert_with(NicSigns::default).ce(ts);
            }
            if let Some(n) = self.nic.as_mut() {
                n.sent(ts, len);
            }
            self.ring.add(ts, len);
        }

        fn cnp(&mut self, ts: u64) {
            let before = self.ring.before(ts, 0);
            self.nic
                .get_or_insert_with(NicSigns::default)
                .cnp(ts, 0, before);
        }
    }

    /// Issue #65, item 3: the history began at the first CE mark, so the 100 us before a
    /// first CNP that came microseconds after it were unknown, and the rate before was taken
    /// at a later CNP, after the cut.
    #[test]
    fn the_rate_before_the_first_cnp_is_known_though_ce_marks_began_just_before_it() {
        let mut s = Sender::default();
        // 1 KB a microsecond, marked from 148 us on; half as often after the CNP at 150 us.
        for t in 0..150 {
            s.send(t * US, 1000, t >= 148);
        }
        s.cnp(150 * US);
        for t in (150..400).step_by(2) {
            s.send(t * US, 1000, true);
        }
        let nic = s.nic.unwrap();
        let (cuts, unmeasured) = nic.rate_cuts(400 * US);
        let cuts = cuts.summary_in(RATIO_UNIT);
        assert_eq!(cuts.count, 1);
        assert!((cuts.p50.unwrap() - 0.5).abs() < 0.02, "{cuts:?}");
        assert_eq!(unmeasured, RateCutUnmeasured::default());
    }

    #[test]
    fn the_rate_before_the_10th_cnp_is_the_first_cnps_before() {
        let mut s = Sender::default();
        for t in 0..150 {
            s.send(t * US, 1000, t >= 148);
        }
        // CNPs every 20 us from 150 us on; the sender halves at the first and stays there.
        for t in (150..800).step_by(2) {
            if (t - 150) % 20 == 0 && t < 150 + 20 * 12 {
                s.cnp(t * US);
            }
            s.send(t * US, 1000, true);
        }
        let nic = s.nic.unwrap();
        let response = nic.cnp_response().expect("10 CNPs");
        assert!((response.ratio - 0.5).abs() < 0.02, "{response:?}");
        assert!(response.back_to_back);
        assert!((response.rate_before - 1e9).abs() < 0.02e9, "{response:?}");
        let (_, unmeasured) = nic.rate_cuts(800 * US);
        assert_eq!(unmeasured.within_window, 11);
    }

    #[test]
    fn why_a_rate_cut_is_not_measured() {
        const MS: u64 = 1000 * US;
        let mut s = Sender::default();
        // The capture began 50 us before the first CNP.
        for t in 0..50 {
            s.send(t * US, 1000, true);
        }
        s.cnp(50 * US);
        // A packet every 2 ms for 30 ms: 5 in the longest window before the next.
        for t in (1..31).step_by(2) {
            s.send(t * MS, 1000, true);
        }
        s.cnp(31 * MS);
        // A packet a microsecond: measured over 100 us, then a CNP within them, and the
        // capture ends 60 us after the episode began.
        for t in 0..250 {
            s.send(31 * MS + t * US, 1000, true);
        }
        s.cnp(31 * MS + 250 * US);
        s.cnp(31 * MS + 300 * US);
        let (cuts, unmeasured) = s.nic.unwrap().rate_cuts(31 * MS + 310 * US);
        assert_eq!(cuts.count(), 0);
        let expected = RateCutUnmeasured {
            flow_start: 0,
            capture_start: 1,
            few_packets_before: 1,
            within_window: 1,
            capture_end: 1,
            out_of_order: 0,
        };
        assert_eq!(unmeasured, expected);
    }

    #[test]
    fn the_ring_counts_the_latest_bins_and_tells_back_to_back_from_paced() {
        // The 100 us window.
        let window = |times: &[u64], t: u64| {
            let mut ring = RateRing::default();
            for &ts in times {
                ring.add(ts * US, 100);
            }
            ring.scales[0].before(t * US, RATE_WINDOW_NS, (0, 0))
        };
        // A packet a microsecond: 100 in the 100 us before 1000 us.
        let b = window(&(0..=1000).collect::<Vec<_>>(), 1000).unwrap();
        assert_eq!((b.packets, b.bytes), (100, 10_000));
        assert!(b.back_to_back);
        // Mid-bin: the 100 us before the CNP's bin.
        let b = window(&(0..1005).collect::<Vec<_>>(), 1005).unwrap();
        assert_eq!(b.packets, 100);
        // Even, but a packet every 20 us: paced by the application.
        let paced: Vec<u64> = (0..50).map(|k| k * 20).collect();
        assert!(!window(&paced, 1000).unwrap().back_to_back);
        // A burst of 20 then silence.
        let burst: Vec<u64> = (900..920).collect();
        let b = window(&burst, 1000).unwrap();
        assert_eq!(b.packets, 20);
        assert!(!b.back_to_back);
        // Bins the ring moved past are not counted again: nothing in the 100 us before
        // 2000 us, though the bins once held packets.
        assert_eq!(window(&burst, 2000).unwrap().packets, 0);
        // The window began before the capture; the CNP came 60 us behind the latest packet.
        assert_eq!(window(&[0], 50), Err(NotMeasured::CaptureStart));
        assert_eq!(window(&[1000], 940), Err(NotMeasured::OutOfOrder));
        // Up to 50 us behind is still counted: 900 to 949 us.
        assert_eq!(
            window(&(900..1000).collect::<Vec<_>>(), 950)
                .unwrap()
                .packets,
            50
        );
    }

    #[test]
    fn the_shortest_window_with_10_packets_before_the_cnp_is_taken() {
        let ring = |gap_us: u64, until_us: u64| {
            let mut ring = RateRing::default();
            for t in (0..until_us).step_by(gap_us as usize) {
                ring.add(t * US, 1000);
            }
            ring
        };
        let b = ring(1, 20_000).before(20_000 * US, 0).unwrap();
        assert_eq!((b.window_ns, b.packets), (RATE_WINDOW_NS, 100));
        // A packet every 100 us: 10 in the 1 ms before.
        let b = ring(100, 20_000).before(20_000 * US, 0).unwrap();
        assert_eq!((b.window_ns, b.packets), (1_000_000, 10));
        assert!(b.back_to_back);
        let b = ring(1000, 20_000).before(20_000 * US, 0).unwrap();
        assert_eq!((b.window_ns, b.packets), (10_000_000, 10));
        // A packet every 2 ms: too few in the longest window.
        assert_eq!(
            ring(2000, 20_000).before(20_000 * US, 0),
            Err(NotMeasured::FewPackets)
        );
        // 500 us into the capture: the 1 ms window began before it.
        assert_eq!(
            ring(100, 500).before(500 * US, 0),
            Err(NotMeasured::CaptureStart)
        );
    }

    /// The sample capture's senders: a packet every 100 us, CNPs 400 us apart in runs; the
    /// rate is measured over 1 ms, once a run.
    #[test]
    fn a_slow_sender_halving_at_cnps_is_measured_over_a_longer_window() {
        let mut s = Sender::default();
        for t in (0..50_000).step_by(100) {
            s.send(t * US, 4000, false);
        }
        for t in (50_000..60_000).step_by(200) {
            if (t - 50_000) % 400 == 0 {
                s.cnp(t * US);
            }
            s.send(t * US, 4000, true);
        }
        let (cuts, unmeasured) = s.nic.unwrap().rate_cuts(60_000 * US);
        let cuts = cuts.summary_in(RATIO_UNIT);
        assert_eq!(cuts.count, 1, "{unmeasured:?}");
        assert!((cuts.p50.unwrap() - 0.5).abs() < 0.02, "{cuts:?}");
        assert_eq!(unmeasured.within_window, 24);
    }

    #[test]
    fn a_ring_given_back_is_taken_again_empty_and_counting_from_its_new_start() {
        let mut pool = RatePool::default();
        let (a, b) = (pool.take(0), pool.take(0));
        for t in 0..200 {
            pool.ring(a).add(t * US, 100);
        }
        assert_eq!(pool.in_use(), 2);
        pool.give_back(a);
        assert_eq!(pool.in_use(), 1);
        let c = pool.take(50_000 * US);
        assert_eq!((c, pool.in_use()), (a, 2));
        // Nothing of the flow before; a window reaching before its start is not known.
        assert_eq!(
            pool.ring(c).before(50_000 * US, 0),
            Err(NotMeasured::FlowStart)
        );
        assert_ne!(b, c);
    }

    #[test]
    fn a_flows_rate_ring_stays_small() {
        assert!(std::mem::size_of::<RateRing>() <= 320);
    }
}
