//! PSN bookkeeping of one request stream (the requests a QP sends on a flow).
//!
//! 24-bit sequence numbers compared modulo 2^24 with a window of 2^23. Arrivals are classified
//! against the next expected PSN:
//! - ahead: a gap (counted as it happens); the skipped PSNs become holes, judged later;
//! - behind and in a hole: filled late, either by a retransmission (after a NAK, after the
//!   stream was idle for a retransmission timeout, or in a go-back-N replay) or by reordering;
//! - behind and not in a hole (seen before): a retransmission when a NAK covers it, when it is
//!   part of a go-back-N replay, or when the stream was idle for a timeout; otherwise a duplicate.
//!
//! One classifier of skipped PSNs, as Wireshark's TCP analysis has one verdict per segment
//! ("previous segment not captured", "ACKed segment that wasn't captured"). Each PSN a gap
//! skipped is, by the first evidence that comes:
//! - *damaged*: a frame with a bad ICRC carried it (a NIC drops such a frame);
//! - *missed by the capture*: the other end acknowledged it before any captured resend of it
//!   (an ACK, atomic ACK or READ response at or after it, a sequence NAK naming a later PSN, an
//!   RNR NAK at or after it): in RC a responder never acknowledges past a PSN it did not
//!   receive, so the network delivered it and the capture point did not see it;
//! - *lost*: a sequence NAK named it, or a resend filled it (`recovered`);
//! - *reordered*: captured later with neither (`out_of_order`);
//! - *missing*: otherwise. A hole whose flow's ACK allowance has run out since a request asked
//!   for an ACK after it is settled as lost, so that a verdict once told (a live event) is
//!   never taken back by evidence that comes later: an acknowledgement past it no longer makes
//!   it missed by the capture. Its resend may still come (a receiver slow to NAK): then it is
//!   lost and recovered, no longer missing, and the loss stands.
//!
//! A go-back replay whose NAK the capture missed is still a replay: hole fillers followed by a
//! PSN seen before are resends, not reordering and duplicates.
//!
//! A sequence NAK naming a PSN E the capture has not seen yet is evidence on its own: the
//! responder received every PSN before E (those the capture did not see it missed), lost E,
//! and received at least one request after E (its trigger, which the capture missed too). When
//! E's resend comes next, E counts as a gap lost and recovered, the trigger as missed, and the
//! PSN after E, which the requester had sent before the NAK, as resent when it comes again.
//!
//! A READ request consumes as many PSNs as responses it asks for: exactly ceil(len/MTU) when the
//! path MTU is known, otherwise the next request may be anywhere from 1 to ceil(len/256) PSNs on.

use roce_parsers::Psn;

use super::flow::Evidence;
use super::notes::ResendCause;

use crate::common::rare::Rare;
use crate::model::PsnCounts;

/// Most holes tracked individually; beyond, skipped PSNs are only counted (missing).
const MAX_HOLES: usize = 1024;
/// Ranges listed in the report.
const MISSING_RANGES_SHOWN: usize = 8;
/// A repeated PSN after this much silence on the stream is a timeout retransmission, not a
/// duplicate (a mirror port duplicates within nanoseconds; RC timeouts are far longer).
pub const RETRANSMIT_IDLE_NS: u64 = 100_000;
/// Smallest path MTU: bounds how many responses a READ of unknown MTU can ask for.
const MIN_MTU: u32 = 256;
/// PSNs of bad-ICRC frames remembered per stream (a burst of corruption is a few frames).
const DAMAGED_KEPT: usize = 8;
/// Holes settled as missing kept for their resend (the latest; a resend follows its NAK
/// within a few round trips).
const SETTLED_KEPT: usize = 64;

/// When a verdict is made: while the flow and the capture run, at the capture's time (PSNs
/// within their ACK allowance are pending), or at the end of the flow or the capture (at its
/// time: a PSN still within its allowance then is unsettled, neither lost nor missed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Running(u64),
    End(u64),
}

impl At {
    pub fn time(self) -> u64 {
        match self {
            At::Running(t) | At::End(t) => t,
        }
    }

    /// The time a running judgement is made at; None at the end.
    pub fn running(self) -> Option<u64> {
        match self {
            At::Running(t) => Some(t),
            At::End(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    InOrder,
    /// Ahead of the expected PSN by this many.
    Gap(u32),
    OutOfOrder,
    Duplicate,
    Retransmitted,
}

#[derive(Debug, Clone, Copy)]
struct Replay {
    /// Last PSN sent before the go-back: the replay is over once PSNs pass it.
    until: Psn,
    /// What started it.
    cause: ResendCause,
}

/// PSNs one gap skipped, not judged yet.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hole {
    start: Psn,
    len: u32,
    /// The frame whose arrival skipped them.
    frame: u64,
    /// A sequence NAK named its first PSN: lost (a resend fills it, or it stays missing).
    named: bool,
    /// RC, XRC or RD: an acknowledgement or a resend may still tell its fate. UC and UD
    /// gaps stay missing once the capture ends.
    reliable: bool,
    /// When the first request asking for an ACK went by after the gap: the flow's ACK
    /// allowance runs from then.
    asked_at: Option<u64>,
    /// The flow's ACK allowance when the gap was seen.
    allowance_ns: u64,
    /// When the gap was seen: a filler's lateness runs from then.
    at: u64,
}

impl Hole {
    fn contains(&self, psn: Psn) -> bool {
        (0..self.len as i32).contains(&(psn - self.start))
    }

    fn range(&self) -> [u32; 2] {
        [self.start.value(), (self.start + (self.len - 1)).value()]
    }

    /// Whether its allowance ran out by `now`: it is missing, whatever comes later.
    fn settles_by(&self, now: u64) -> bool {
        !self.named
            && self
                .asked_at
                .is_some_and(|t| now > t.saturating_add(self.allowance_ns))
    }

    /// Whether its fate is told `at`: a NAK named it, or its allowance ran out (at the end,
    /// counted from the gap where no request asked for an ACK after it). Otherwise it is
    /// pending while the capture runs, and unsettled at the end.
    fn judged(&self, at: At) -> bool {
        self.named
            || match at {
                At::Running(now) => self.settles_by(now),
                At::End(_) if !self.reliable => true,
                At::End(end) => {
                    end > self
                        .asked_at
                        .unwrap_or(self.at)
                        .saturating_add(self.allowance_ns)
                }
            }
    }
}

/// Hole fillers that no NAK, replay or timeout explains: reordered, unless the next request
/// goes on right behind them with a PSN seen before (a replay whose NAK was not captured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fillers {
    /// The first PSN filled.
    pub first: Psn,
    /// The PSN right after the last filled.
    next: Psn,
    /// The fillers' frames, and the frames of the gaps that made their holes.
    pub frames: Vec<u64>,
    gap_frames: Vec<u64>,
    pub count: u64,
    /// How late the fillers came: the deepest behind the highest PSN seen, and the longest
    /// after their gap.
    lateness: Lateness,
}

/// How late reordered PSNs came.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Lateness {
    /// PSNs behind the highest seen when it came.
    depth: u64,
    /// Since the gap that skipped it.
    delay_ns: u64,
}

impl Lateness {
    fn max(self, o: Lateness) -> Lateness {
        Lateness {
            depth: self.depth.max(o.depth),
            delay_ns: self.delay_ns.max(o.delay_ns),
        }
    }
}

/// A sequence NAK that named a PSN the capture had not seen yet.
#[derive(Debug, Clone, Copy, PartialEq)]
struct NakAhead {
    psn: Psn,
    frame: u64,
}

/// What a stream rarely needs: the holes and what became of them, damaged PSNs, fillers.
#[derive(Debug, Clone, Default, PartialEq)]
struct Skipped {
    holes: Vec<Hole>,
    /// PSNs settled as missing before the end (their allowance ran out), and their first
    /// ranges.
    settled: u64,
    settled_ranges: Vec<[u32; 2]>,
    /// The latest holes settled, what of them no resend filled yet.
    settled_holes: Vec<Hole>,
    /// Skipped PSNs that did not fit in `holes` (and those of an older connection).
    untracked: u64,
    /// PSNs of bad-ICRC frames ahead of the sequence: a gap that covers one counts it damaged.
    damaged_ahead: Vec<Psn>,
    /// PSNs of bad-ICRC frames taken in the sequence: their next arrival is a resend.
    damaged_taken: Vec<Psn>,
    fillers: Option<Fillers>,
    /// The lateness of the fillers settled as reordered.
    reordered: Lateness,
    /// Fillers just found to be resends, for the caller (`take_late_resends`).
    late: Option<Fillers>,
    /// A sequence NAK ahead of the sequence, until the next request at or past its PSN.
    nak_ahead: Option<NakAhead>,
    /// The frame of the NAK whose PSN the latest request resent, lost before the capture saw
    /// it (`take_unseen_loss`).
    unseen_loss: Option<u64>,
    /// Frames of the gaps whose PSNs were judged lost or missing, and missed by the capture.
    lost_at: Evidence,
    missed_at: Evidence,
    /// Frames of the gaps judged missed by the latest acknowledgement (`take_newly_missed`).
    newly_missed: Vec<u64>,
}

crate::empty!(Skipped);

impl Skipped {
    /// The fillers so far were reordered: their lateness counts.
    fn settle_fillers(&mut self) {
        if let Some(f) = self.fillers.take() {
            self.reordered = self.reordered.max(f.lateness);
        }
    }
}

/// Takes `psn` out of the hole of `holes` that holds it, splitting the hole around it: the
/// hole it was in, or None.
fn take_from(holes: &mut Vec<Hole>, psn: Psn) -> Option<Hole> {
    let i = holes.iter().position(|h| h.contains(psn))?;
    let h = holes[i];
    let offset = (psn - h.start) as u32;
    let before = Hole { len: offset, ..h };
    let after = Hole {
        start: psn + 1,
        len: h.len - offset - 1,
        ..h
    };
    match (before.len > 0, after.len > 0) {
        (true, true) => {
            holes[i] = before;
            holes.insert(i + 1, after);
        }
        (true, false) => holes[i] = before,
        (false, true) => holes[i] = after,
        (false, false) => {
            holes.remove(i);
        }
    }
    Some(h)
}

/// `ranges` ([first, last] PSNs) without `psn`: the range holding it split around it.
fn remove_psn(ranges: &mut Vec<[u32; 2]>, psn: Psn) {
    let holds = |&&[first, last]: &&[u32; 2]| {
        let first = Psn::new(first);
        (0..=Psn::new(last) - first).contains(&(psn - first))
    };
    let Some(i) = ranges.iter().position(|r| holds(&r)) else {
        return;
    };
    let [first, last] = ranges.remove(i);
    let before = [first, psn.prev().value()];
    let after = [(psn + 1).value(), last];
    let parts = [
        (psn.value() != first).then_some(before),
        (psn.value() != last).then_some(after),
    ];
    for (k, part) in parts.into_iter().flatten().enumerate() {
        ranges.insert(i + k, part);
    }
}

#[derive(Debug, Clone, Default)]
pub struct PsnTracker {
    expected: Option<Psn>,
    /// (PSN, DMA length) of the previous request when it was a READ of unknown response count.
    open_read: Option<(Psn, u32)>,
    replay: Option<Replay>,
    /// PSN from the latest NAK (sequence error) or RNR NAK for this stream, not yet acted on.
    nak_from: Option<Psn>,
    last_ts: u64,
    /// Anomalies: none on most streams.
    counts: Rare<PsnCounts>,
    skipped: Rare<Skipped>,
}

impl PsnTracker {
    pub fn expected(&self) -> Option<Psn> {
        self.expected
    }

    /// What started the go-back the latest resend belongs to.
    pub fn resend_cause(&self) -> Option<ResendCause> {
        self.replay.map(|r| r.cause)
    }

    /// A new connection took over this QP (RDMA-CM announced it): the PSN history starts
    /// again, the counts stay; PSNs still unjudged from the old connection are missing.
    pub fn restart(&mut self) {
        let mut skipped = std::mem::take(&mut self.skipped);
        if let Some(s) = skipped.get_mut() {
            s.untracked += s.holes.drain(..).map(|h| u64::from(h.len)).sum::<u64>();
            s.damaged_ahead.clear();
            s.damaged_taken.clear();
            s.fillers = None;
            s.nak_ahead = None;
        }
        *self = PsnTracker {
            counts: std::mem::take(&mut self.counts),
            skipped,
            ..PsnTracker::default()
        };
    }

    /// Whether `psn` went by whole: behind the next expected PSN, in no hole, and not carried
    /// by a frame with a bad ICRC (whose NAK that explains).
    pub fn saw(&self, psn: Psn) -> bool {
        let behind = self
            .expected
            .is_some_and(|e| (-(1 << 22)..0).contains(&(psn - e)));
        let s = &*self.skipped;
        // A hole settled as missing before its NAK came (a slow receiver) was not seen either.
        let settled = s.settled_ranges.iter().any(|&[first, last]| {
            let first = Psn::new(first);
            (0..=Psn::new(last) - first).contains(&(psn - first))
        });
        behind
            && !s.holes.iter().any(|h| h.contains(psn))
            && !settled
            && !s.damaged_taken.contains(&psn)
    }

    /// The responder asked for a resend from `psn` (NAK sequence error or RNR NAK).
    pub fn nak(&mut self, psn: Psn) {
        self.nak_from = Some(psn);
    }

    /// Records a request. `consumes` is the PSNs it uses (ceil(len/MTU) for a READ of known
    /// MTU, else 1); `read_len` is the DMA length of a READ whose MTU is unknown. `reliable`
    /// is false for UC/UD, which never retransmit. `ack_req`: it asks for an ACK; `frame`: its
    /// frame number; `allowance`: the flow's ACK allowance now, asked for only on a gap.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &mut self,
        psn: Psn,
        ts: u64,
        consumes: u32,
        read_len: Option<u32>,
        reliable: bool,
        ack_req: bool,
        frame: u64,
        allowance: impl FnOnce() -> u64,
    ) -> Arrival {
        let idle_ns = ts.saturating_sub(self.last_ts);
        let idle = idle_ns >= RETRANSMIT_IDLE_NS && self.last_ts != 0;
        self.last_ts = ts;
        let open_read = self.open_read.take();
        let Some(expected) = self.expected else {
            self.advance(psn, consumes, read_len);
            return Arrival::InOrder;
        };
        self.settle(ts);
        if let Some(r) = self.replay {
            if psn > r.until {
                self.replay = None;
            }
        }
        let d = psn - expected;
        if let Some(ahead) = self.skipped.get_mut().and_then(|s| s.nak_ahead.take()) {
            if let Some(a) = self.after_nak_ahead(ahead, psn, consumes, expected) {
                return a;
            }
        }
        if d >= 0 && self.skipped.is_set() {
            if let Some(s) = self.skipped.get_mut() {
                // A new request after fillers: they were reordered.
                s.settle_fillers();
                if ack_req {
                    for h in s.holes.iter_mut().filter(|h| h.asked_at.is_none()) {
                        h.asked_at = Some(ts);
                    }
                }
            }
        }
        if d == 0 {
            self.advance(psn, consumes, read_len);
            return Arrival::InOrder;
        }
        if d > 0 {
            // After a READ of unknown MTU, a jump of up to its largest response count is not loss.
            if let Some((read_psn, len)) = open_read {
                let max_responses = len.div_ceil(MIN_MTU).max(1);
                let jump = psn - read_psn;
                if jump > 0 && jump as u32 <= max_responses {
                    self.advance(psn, consumes, read_len);
                    return Arrival::InOrder;
                }
            }
            self.counts.gaps += 1;
            let hole = Hole {
                start: expected,
                len: d as u32,
                frame,
                named: false,
                reliable,
                asked_at: ack_req.then_some(ts),
                allowance_ns: allowance(),
                at: ts,
            };
            self.add_hole(hole);
            self.advance(psn, consumes, read_len);
            if let Some(ahead) = self.skipped.get_mut().and_then(|s| s.nak_ahead.take()) {
                self.nak_evidence(ahead.psn, ts, true, ahead.frame);
            }
            return Arrival::Gap(d as u32);
        }
        self.behind(psn, ts, frame, reliable, expected, idle_ns, idle)
    }

    /// The first request at or past the PSN E of a sequence NAK that came before the capture
    /// saw E (`ahead`). E itself: its resend (see the module's doc), the arrival. Past E: an
    /// ordinary gap, whose hole the NAK then judges as it would have (None).
    #[cold]
    fn after_nak_ahead(
        &mut self,
        ahead: NakAhead,
        psn: Psn,
        consumes: u32,
        expected: Psn,
    ) -> Option<Arrival> {
        let before = ahead.psn - expected;
        let d = psn - expected;
        if before < 0 {
            return None;
        }
        if d < before {
            self.skipped.nak_ahead = Some(ahead);
            return None;
        }
        if d > before {
            // Judged once the gap is open (`request`).
            self.skipped.nak_ahead = Some(ahead);
            return None;
        }
        // Received by the responder unseen: the PSNs before E and the NAK's trigger.
        let missed = before as u64 + 1;
        let c = &mut *self.counts;
        c.gaps += 1;
        c.capture_missed += missed;
        c.retransmitted += 1;
        c.recovered += 1;
        let s = &mut *self.skipped;
        s.lost_at.add_once(ahead.frame);
        s.missed_at.add_once(ahead.frame);
        s.unseen_loss = Some(ahead.frame);
        self.advance(psn, consumes, None);
        let trigger = psn + consumes.max(1);
        self.expected = Some(trigger + 1);
        self.start_replay(
            trigger + 1,
            ResendCause::Nak {
                from_psn: psn.value(),
            },
        );
        Some(Arrival::Retransmitted)
    }

    /// The frame of the NAK whose PSN the latest request resent, when the capture had not seen
    /// that PSN before (a gap it could not see open): the NAK is the gap's evidence.
    #[inline]
    pub fn take_unseen_loss(&mut self) -> Option<u64> {
        self.skipped.get_mut().and_then(|s| s.unseen_loss.take())
    }

    /// The highest PSN the requester had sent when the responder NAKed `naked`: the highest
    /// seen, or, when the NAK names a PSN not seen yet, the one after it (the NAK's trigger,
    /// which the capture missed).
    pub fn highest_sent_before_nak(&self, naked: Psn) -> Option<Psn> {
        let highest = self.expected?.prev();
        Some(if highest - naked < 0 {
            naked + 1
        } else {
            highest
        })
    }

    /// A request behind the expected PSN: a resend, a filler, or a duplicate.
    #[allow(clippy::too_many_arguments)]
    fn behind(
        &mut self,
        psn: Psn,
        ts: u64,
        frame: u64,
        reliable: bool,
        expected: Psn,
        idle_ns: u64,
        idle: bool,
    ) -> Arrival {
        let filled = self.fill_hole(psn);
        // How late a filler came: behind the highest PSN seen (the one before `expected`).
        let lateness = |at: u64| Lateness {
            depth: (expected - psn - 1).max(0) as u64,
            delay_ns: ts.saturating_sub(at),
        };
        let filled_lateness = filled.map(|(_, at)| lateness(at));
        let filled = filled.map(|(gap_frame, _)| gap_frame);
        if !reliable {
            return if let Some(late) = filled_lateness {
                self.counts.out_of_order += 1;
                let s = &mut *self.skipped;
                s.reordered = s.reordered.max(late);
                Arrival::OutOfOrder
            } else {
                self.counts.duplicates += 1;
                Arrival::Duplicate
            };
        }
        let in_replay = self.replay.is_some();
        let nak_covers = self.nak_from.filter(|&n| psn >= n && psn < expected);
        let damaged = self.take_damaged_taken(psn);
        if in_replay || nak_covers.is_some() || idle || damaged {
            if !in_replay {
                let cause = match nak_covers {
                    Some(n) => ResendCause::Nak {
                        from_psn: n.value(),
                    },
                    None if damaged => ResendCause::Damaged { psn: psn.value() },
                    None => ResendCause::Timeout { idle_ns },
                };
                self.start_replay(expected, cause);
            }
            self.counts.retransmitted += 1;
            if let Some(gap_frame) = filled.or_else(|| self.recover_settled(psn)) {
                self.counts.recovered += 1;
                self.skipped.lost_at.add_once(gap_frame);
            }
            if let Some(s) = self.skipped.get_mut() {
                s.settle_fillers();
            }
            return Arrival::Retransmitted;
        }
        if let (Some(gap_frame), Some(late)) = (filled, filled_lateness) {
            self.counts.out_of_order += 1;
            let s = &mut *self.skipped;
            match s.fillers.as_mut().filter(|f| f.next == psn) {
                Some(f) => f.count += 1,
                None => {
                    s.settle_fillers();
                    s.fillers = Some(Fillers {
                        first: psn,
                        next: psn,
                        count: 1,
                        ..Fillers::default()
                    })
                }
            }
            let f = s.fillers.as_mut().expect("just set");
            f.lateness = f.lateness.max(late);
            f.next = psn + 1;
            f.frames.push(frame);
            f.gap_frames.push(gap_frame);
            return Arrival::OutOfOrder;
        }
        // Right behind fillers, a PSN seen before: the fillers began a go-back replay whose
        // NAK the capture did not see.
        let fillers = self.skipped.get_mut().and_then(|s| s.fillers.take());
        let (replayed, reordered) = match fillers {
            Some(f) if f.next == psn => (Some(f), None),
            other => (None, other),
        };
        if let (Some(f), Some(s)) = (reordered, self.skipped.get_mut()) {
            s.reordered = s.reordered.max(f.lateness);
        }
        if let Some(f) = replayed {
            let c = &mut *self.counts;
            c.out_of_order -= f.count;
            c.retransmitted += f.count + 1;
            c.recovered += f.count;
            for &g in &f.gap_frames {
                self.skipped.lost_at.add_once(g);
            }
            self.start_replay(
                expected,
                ResendCause::Unseen {
                    from_psn: f.first.value(),
                },
            );
            self.skipped.late = Some(f);
            return Arrival::Retransmitted;
        }
        self.counts.duplicates += 1;
        Arrival::Duplicate
    }

    fn start_replay(&mut self, expected: Psn, cause: ResendCause) {
        self.replay = Some(Replay {
            until: expected.prev(),
            cause,
        });
        self.nak_from = None;
    }

    /// Fillers found to be resends at the latest request (they were counted out of order):
    /// their frames and the PSN the replay went back to.
    #[inline]
    pub fn take_late_resends(&mut self) -> Option<Fillers> {
        self.skipped.get_mut().and_then(|s| s.late.take())
    }

    /// A request with a bad ICRC (a NIC drops it): it moves no state, except that one whose
    /// PSN is the next expected takes its place in the sequence (no gap; damaged), and its
    /// next arrival is a resend. One ahead is remembered: a later gap over it counts it
    /// damaged, not missing. Whether it took its place.
    pub fn damaged(&mut self, psn: Psn, consumes: u32) -> bool {
        let Some(expected) = self.expected else {
            return false;
        };
        let d = psn - expected;
        if d == 0 {
            self.counts.damaged += 1;
            self.advance(psn, consumes, None);
            let s = &mut *self.skipped;
            if s.damaged_taken.len() == DAMAGED_KEPT {
                s.damaged_taken.remove(0);
            }
            s.damaged_taken.push(psn);
            return true;
        }
        if d > 0 {
            let s = &mut *self.skipped;
            if s.damaged_ahead.len() < DAMAGED_KEPT && !s.damaged_ahead.contains(&psn) {
                s.damaged_ahead.push(psn);
            }
        } else if self.fill_hole(psn).is_some() {
            self.counts.damaged += 1;
        }
        false
    }

    fn take_damaged_taken(&mut self, psn: Psn) -> bool {
        let Some(s) = self.skipped.get_mut() else {
            return false;
        };
        match s.damaged_taken.iter().position(|&p| p == psn) {
            Some(i) => {
                s.damaged_taken.remove(i);
                true
            }
            None => false,
        }
    }

    /// The other end acknowledged every request up to `psn` (an ACK, an atomic ACK, a READ
    /// response) at `ts`. Unjudged PSNs up to it were delivered: missed by the capture (or,
    /// named by a NAK before, resent where the capture did not see it). An ACK beyond the
    /// highest PSN sent is no evidence. The PSNs newly judged missed.
    #[inline]
    pub fn acknowledged(&mut self, psn: Psn, ts: u64) -> u64 {
        if !self.skipped.is_set() {
            return 0;
        }
        self.received_before(psn + 1, ts)
    }

    /// A NAK at `psn` at `ts` (frame `frame`) from a responder paired for certain: a sequence
    /// NAK (`sequence`) says every PSN before it was received and names it lost (with the rest
    /// of its hole, which the requester resends with it); one naming a PSN not seen yet is
    /// judged at the next request (see the module's doc). An RNR or error NAK says `psn` was
    /// received too. The PSNs newly judged missed.
    pub fn nak_evidence(&mut self, psn: Psn, ts: u64, sequence: bool, frame: u64) -> u64 {
        if !sequence {
            return self.received_before(psn + 1, ts);
        }
        if self.expected.is_some_and(|e| psn - e >= 0) {
            self.skipped.nak_ahead = Some(NakAhead { psn, frame });
            return 0;
        }
        let missed = self.received_before(psn, ts);
        if let Some(s) = self.skipped.get_mut() {
            if let Some(i) = s.holes.iter().position(|h| h.contains(psn)) {
                let h = s.holes[i];
                let before = (psn - h.start) as u32;
                if before > 0 {
                    // Not reached: `received_before` judged the PSNs before it.
                    s.holes[i].len = before;
                    s.holes.insert(
                        i + 1,
                        Hole {
                            start: psn,
                            len: h.len - before,
                            named: true,
                            ..h
                        },
                    );
                } else {
                    s.holes[i].named = true;
                }
            }
        }
        missed
    }

    /// Judges the unjudged PSNs before `end` as received by the other end at `ts`.
    #[cold]
    fn received_before(&mut self, end: Psn, ts: u64) -> u64 {
        let Some(expected) = self.expected else {
            return 0;
        };
        if !self.skipped.is_set() || self.skipped.holes.is_empty() || end - expected > 0 {
            return 0;
        }
        self.settle(ts);
        let s = &mut *self.skipped;
        let c = &mut *self.counts;
        let mut missed = 0;
        let mut i = 0;
        while i < s.holes.len() {
            let h = s.holes[i];
            let covered = (end - h.start).clamp(0, h.len as i32) as u32;
            if covered == 0 {
                i += 1;
                continue;
            }
            if h.named {
                // Lost, then resent where the capture did not see it.
                c.recovered += u64::from(covered);
                s.lost_at.add_once(h.frame);
            } else {
                c.capture_missed += u64::from(covered);
                missed += u64::from(covered);
                s.missed_at.add_once(h.frame);
                if s.newly_missed.last() != Some(&h.frame) {
                    s.newly_missed.push(h.frame);
                }
            }
            if covered == h.len {
                s.holes.remove(i);
            } else {
                s.holes[i].start = h.start + covered;
                s.holes[i].len -= covered;
                i += 1;
            }
        }
        missed
    }

    /// The frames of the gaps the latest acknowledgement judged missed by the capture.
    #[inline]
    pub fn take_newly_missed(&mut self) -> Vec<u64> {
        self.skipped
            .get_mut()
            .map(|s| std::mem::take(&mut s.newly_missed))
            .unwrap_or_default()
    }

    /// Settles as missing the holes whose allowance ran out by `now`. Inlined to the check
    /// every request makes: most streams have no hole.
    #[inline]
    fn settle(&mut self, now: u64) {
        if self.skipped.is_set() {
            self.settle_holes(now);
        }
    }

    #[cold]
    fn settle_holes(&mut self, now: u64) {
        let Some(s) = self.skipped.get_mut() else {
            return;
        };
        if !s.holes.iter().any(|h| h.settles_by(now)) {
            return;
        }
        let mut kept = Vec::with_capacity(s.holes.len());
        for h in std::mem::take(&mut s.holes) {
            if h.settles_by(now) {
                s.settled += u64::from(h.len);
                if s.settled_ranges.len() < MISSING_RANGES_SHOWN {
                    s.settled_ranges.push(h.range());
                }
                s.lost_at.add_once(h.frame);
                if s.settled_holes.len() == SETTLED_KEPT {
                    s.settled_holes.remove(0);
                }
                s.settled_holes.push(h);
            } else {
                kept.push(h);
            }
        }
        s.holes = kept;
    }

    fn advance(&mut self, psn: Psn, consumes: u32, read_len: Option<u32>) {
        self.expected = Some(psn + consumes.max(1));
        self.open_read = read_len.map(|len| (psn, len));
    }

    /// A new hole, less the PSNs bad-ICRC frames carried (damaged, not missing).
    fn add_hole(&mut self, hole: Hole) {
        let s = &mut *self.skipped;
        let c = &mut *self.counts;
        let mut damaged: Vec<u32> = Vec::new();
        s.damaged_ahead.retain(|&p| {
            let inside = hole.contains(p);
            if inside {
                damaged.push((p - hole.start) as u32);
            }
            !inside
        });
        damaged.sort_unstable();
        c.damaged += damaged.len() as u64;
        let mut from = 0;
        for cut in damaged.into_iter().chain([hole.len]) {
            if cut > from {
                let part = Hole {
                    start: hole.start + from,
                    len: cut - from,
                    ..hole
                };
                if s.holes.len() < MAX_HOLES {
                    s.holes.push(part);
                } else {
                    s.untracked += u64::from(part.len);
                }
            }
            from = cut + 1;
        }
    }

    /// Fills `psn` in its hole: the frame and the time of the gap that made it, or None if no
    /// hole holds it.
    fn fill_hole(&mut self, psn: Psn) -> Option<(u64, u64)> {
        let s = self.skipped.get_mut()?;
        take_from(&mut s.holes, psn).map(|h| (h.frame, h.at))
    }

    /// A resend of `psn`, settled as missing before it came: lost and recovered after all. The
    /// frame of the gap that skipped it, or None if no settled hole kept holds it.
    fn recover_settled(&mut self, psn: Psn) -> Option<u64> {
        let s = self.skipped.get_mut()?;
        let h = take_from(&mut s.settled_holes, psn)?;
        s.settled -= 1;
        remove_psn(&mut s.settled_ranges, psn);
        Some(h.frame)
    }

    /// Holes judged missing in a report made `at`: those named by a NAK or past their
    /// allowance (the others are pending while the capture runs, the ACK that shows the
    /// capture missed them may be on its way, and unsettled at the end).
    fn missing_holes(&self, at: At) -> impl Iterator<Item = &Hole> + '_ {
        self.skipped.holes.iter().filter(move |h| h.judged(at))
    }

    /// PSNs whose fate a report made at the end (`End`) cannot tell: skipped, and the capture
    /// ended before their acknowledgement was due. None while the capture runs.
    fn unsettled_holes(&self, at: At) -> impl Iterator<Item = &Hole> + '_ {
        let end = matches!(at, At::End(_));
        self.skipped
            .holes
            .iter()
            .filter(move |h| end && !h.judged(at))
    }

    /// The PSNs a report made at the end cannot judge, and how long before `end` the gap
    /// that skipped the latest of them came: (PSNs, ns, frame of that gap).
    pub fn unsettled(&self, end: u64) -> Option<(u64, u64, u64)> {
        let at = At::End(end);
        let psns: u64 = self.unsettled_holes(at).map(|h| u64::from(h.len)).sum();
        let latest = self.unsettled_holes(at).max_by_key(|h| h.at)?;
        Some((psns, end.saturating_sub(latest.at), latest.frame))
    }

    /// The counts in a report made `at`: holes not judged by then are pending (running) or
    /// unsettled (at the end), neither missing nor missed (see `missing_holes`).
    pub fn finish(&self, at: At) -> PsnCounts {
        let mut c = (*self.counts).clone();
        let s = &*self.skipped;
        c.missing = s.untracked
            + s.settled
            + self
                .missing_holes(at)
                .map(|h| u64::from(h.len))
                .sum::<u64>();
        c.unsettled = self.unsettled_holes(at).map(|h| u64::from(h.len)).sum();
        c.missing_ranges = s
            .settled_ranges
            .iter()
            .copied()
            .chain(self.missing_holes(at).map(Hole::range))
            .take(MISSING_RANGES_SHOWN)
            .collect();
        // Fillers not settled yet count as reordered, as `out_of_order` counts them.
        let late = s
            .fillers
            .as_ref()
            .map_or(s.reordered, |f| s.reordered.max(f.lateness));
        c.out_of_order_depth_max = late.depth;
        c.out_of_order_delay_max_us = late.delay_ns as f64 / 1e3;
        c
    }

    /// PSNs the network lost as judged at `now` (recovered by a resend, or missing): a count
    /// that only grows as the capture runs.
    pub fn lost_by(&self, now: u64) -> u64 {
        let s = &*self.skipped;
        let missing: u64 = self
            .missing_holes(At::Running(now))
            .map(|h| u64::from(h.len))
            .sum();
        self.counts.recovered + s.untracked + s.settled + missing
    }

    /// PSNs the capture missed so far.
    pub fn capture_missed(&self) -> u64 {
        self.counts.capture_missed
    }

    /// The frames of the gaps judged lost or missing `at`, and of those the capture missed:
    /// the evidence of `psn_loss` and `capture_missed`.
    pub fn verdict_frames(&self, at: At) -> (Evidence, Evidence) {
        let s = &*self.skipped;
        let mut lost = s.lost_at.clone();
        for h in self.missing_holes(at) {
            lost.add_once(h.frame);
        }
        (lost, s.missed_at.clone())
    }
}

impl PsnCounts {
    /// Counts an arrival judged by a tracker shared with other flows (UD senders): gaps are
    /// missing PSNs that nobody resends.
    pub fn record(&mut self, a: Arrival) {
        match a {
            Arrival::Gap(n) => {
                self.gaps += 1;
                self.missing += u64::from(n);
            }
            Arrival::Duplicate => self.duplicates += 1,
            Arrival::OutOfOrder => {
                self.out_of_order += 1;
                self.missing = self.missing.saturating_sub(1);
            }
            Arrival::Retransmitted | Arrival::InOrder => {}
        }
    }
}

/// A gap in the READ responses of one READ, not judged yet.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ResponseGap {
    psns: u64,
    ts: u64,
    allowance_ns: u64,
}

/// READ responses on a flow: within one READ the PSNs run consecutively. A response the
/// capture missed leaves a gap that a later response reached the requester past; it is
/// *missed* when no READ re-issue followed within the flow's ACK allowance, *lost* (the
/// requester must re-read) when one did. Without a pairing of the two directions that is
/// certain, nothing tells the re-issues apart: the gap is lost.
#[derive(Debug, Clone, Default)]
pub struct ResponseTracker {
    next: Option<Psn>,
    /// Gaps judged lost, and their PSNs.
    pub gaps: u64,
    pub missing: u64,
    /// PSNs judged missed by the capture.
    pub missed: u64,
    /// READ responses the flow carried.
    pub carried: u64,
    pending: Vec<ResponseGap>,
}

/// What a flow's READ response gaps were judged in a report: gaps lost, PSNs the capture
/// missed, PSNs unsettled at the end, and how long before the end the latest of those gaps
/// came.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseVerdicts {
    pub gaps: u64,
    pub missed: u64,
    pub unsettled: u64,
    pub unsettled_after_ns: Option<u64>,
}

/// Response gaps waiting for their verdict at once (a capture missing many at once keeps the
/// first; the rest are judged lost).
const PENDING_RESPONSE_GAPS: usize = 64;

impl ResponseTracker {
    /// A new connection: responses start afresh, the counts stay.
    pub fn restart(&mut self) {
        self.next = None;
    }

    /// A READ response at `ts`: `first` is true for READ Response First/Only (a new READ
    /// starts), `last` for Last/Only. `judged` when its gaps can be judged (a pairing that is
    /// certain), with the flow's ACK allowance. The PSNs judged missed now.
    pub fn response(
        &mut self,
        psn: Psn,
        first: bool,
        last: bool,
        ts: u64,
        judged: Option<u64>,
    ) -> u64 {
        let missed = self.settle(ts);
        self.carried += 1;
        if !first {
            if let Some(n) = self.next {
                let d = psn - n;
                if d > 0 {
                    match judged {
                        Some(allowance_ns) if self.pending.len() < PENDING_RESPONSE_GAPS => {
                            self.pending.push(ResponseGap {
                                psns: d as u64,
                                ts,
                                allowance_ns,
                            })
                        }
                        _ => {
                            self.gaps += 1;
                            self.missing += d as u64;
                        }
                    }
                }
            }
        }
        self.next = if last { None } else { Some(psn + 1) };
        missed
    }

    /// The requester issued a READ again at `ts`: the gaps still pending were lost.
    pub fn reissued(&mut self, ts: u64) -> u64 {
        let missed = self.settle(ts);
        for g in self.pending.drain(..) {
            self.gaps += 1;
            self.missing += g.psns;
        }
        missed
    }

    /// Whether a response at `psn` (`first`: of a new READ) leaves a gap.
    pub fn gap_at(&self, psn: Psn, first: bool) -> bool {
        !first && self.next.is_some_and(|n| psn - n > 0)
    }

    /// Whether gaps wait for their verdict.
    pub fn pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Gaps whose allowance ran out by `now` with no re-issue: missed. Their PSNs.
    fn settle(&mut self, now: u64) -> u64 {
        let before = self.missed;
        self.pending.retain(|g| {
            let due = now > g.ts.saturating_add(g.allowance_ns);
            if due {
                self.missed += g.psns;
            }
            !due
        });
        self.missed - before
    }

    /// (gaps lost, PSNs missed by the capture, PSNs unsettled) in a report made `at`: a gap
    /// still pending is missed once its allowance ran out; before, it is left out while the
    /// capture runs, and unsettled at the end (no re-issue was due yet).
    pub fn judged(&self, at: At) -> ResponseVerdicts {
        let mut v = ResponseVerdicts {
            gaps: self.gaps,
            missed: self.missed,
            ..ResponseVerdicts::default()
        };
        for g in &self.pending {
            if at.time() > g.ts.saturating_add(g.allowance_ns) {
                v.missed += g.psns;
            } else if let At::End(end) = at {
                v.unsettled += g.psns;
                let after = end.saturating_sub(g.ts);
                v.unsettled_after_ns = Some(v.unsettled_after_ns.map_or(after, |a| a.min(after)));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWANCE: u64 = 50_000;
    /// A capture end long after every test's gaps: each is judged.
    const END: At = At::End(u64::MAX / 2);

    fn req(t: &mut PsnTracker, p: u32, ts: u64) -> Arrival {
        t.request(Psn::new(p), ts, 1, None, true, true, u64::from(p), || {
            ALLOWANCE
        })
    }

    fn feed(t: &mut PsnTracker, psns: &[u32]) -> Vec<Arrival> {
        psns.iter()
            .enumerate()
            .map(|(i, &p)| req(t, p, 1_000 + i as u64 * 10))
            .collect()
    }

    #[test]
    fn wrap_is_not_a_gap() {
        let mut t = PsnTracker::default();
        let a = feed(&mut t, &[0xfffffd, 0xfffffe, 0xffffff, 0, 1]);
        assert!(a.iter().all(|&x| x == Arrival::InOrder));
        assert_eq!(t.finish(END), PsnCounts::default());
    }

    #[test]
    fn gap_then_nak_then_go_back_n() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[10, 11, 12, 14, 15]);
        t.nak(Psn::new(13));
        let a: Vec<_> = [13, 14, 15, 16]
            .iter()
            .map(|&p| req(&mut t, p, 5_000))
            .collect();
        assert_eq!(
            a,
            [
                Arrival::Retransmitted,
                Arrival::Retransmitted,
                Arrival::Retransmitted,
                Arrival::InOrder
            ]
        );
        let c = t.finish(END);
        assert_eq!(
            (c.gaps, c.missing, c.retransmitted, c.duplicates),
            (1, 0, 3, 0)
        );
    }

    #[test]
    fn reorder_duplicate_and_missing() {
        let mut t = PsnTracker::default();
        let a = feed(&mut t, &[1, 2, 4, 3, 5, 5, 9, 10]);
        assert_eq!(a[2], Arrival::Gap(1));
        assert_eq!(a[3], Arrival::OutOfOrder);
        assert_eq!(a[5], Arrival::Duplicate);
        assert_eq!(a[6], Arrival::Gap(3));
        let c = t.finish(END);
        assert_eq!(
            (c.gaps, c.out_of_order, c.duplicates, c.missing),
            (2, 1, 1, 3)
        );
        assert_eq!(c.missing_ranges, vec![[6, 8]]);
        // 3 came 1 PSN behind the highest seen (4), 10 ns after 4 skipped it.
        assert_eq!(
            (c.out_of_order_depth_max, c.out_of_order_delay_max_us),
            (1, 0.01)
        );
    }

    /// How late reordered PSNs came: the deepest and the latest, over runs of fillers.
    #[test]
    fn reordering_depth_and_delay() {
        let mut t = PsnTracker::default();
        // 10 after 11, 12, 13 (3 deep, 30 ns after its gap); then 21 and 22 after 23 (2 deep).
        let psns = [
            9, 11, 12, 13, 10, 14, 15, 16, 17, 18, 19, 20, 23, 21, 22, 24,
        ];
        let a = feed(&mut t, &psns);
        assert_eq!(
            (a[4], a[13], a[14]),
            (
                Arrival::OutOfOrder,
                Arrival::OutOfOrder,
                Arrival::OutOfOrder
            )
        );
        let c = t.finish(END);
        assert_eq!((c.out_of_order, c.missing, c.retransmitted), (3, 0, 0));
        assert_eq!(c.out_of_order_depth_max, 3);
        assert!((c.out_of_order_delay_max_us - 0.03).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn timeout_retransmission_after_idle() {
        let mut t = PsnTracker::default();
        req(&mut t, 1, 1_000);
        req(&mut t, 2, 1_100);
        assert_eq!(
            req(&mut t, 2, 1_100 + RETRANSMIT_IDLE_NS),
            Arrival::Retransmitted
        );
        // Unreliable transports never retransmit: the same is a duplicate.
        let mut u = PsnTracker::default();
        u.request(Psn::new(1), 1_000, 1, None, false, false, 1, || 0);
        assert_eq!(
            u.request(Psn::new(1), 1_000_000, 1, None, false, false, 2, || 0),
            Arrival::Duplicate
        );
    }

    #[test]
    fn read_requests_advance_by_their_responses() {
        let mut t = PsnTracker::default();
        let r = |t: &mut PsnTracker, p, ts, consumes, len| {
            t.request(Psn::new(p), ts, consumes, len, true, true, 0, || 0)
        };
        // MTU known: 4096 bytes at MTU 1024 is 4 PSNs.
        r(&mut t, 100, 1, 4, None);
        assert_eq!(r(&mut t, 104, 2, 1, None), Arrival::InOrder);
        // MTU unknown: anything up to ceil(len/256) is fine, beyond is a gap.
        r(&mut t, 105, 3, 1, Some(2048));
        assert_eq!(r(&mut t, 109, 4, 1, None), Arrival::InOrder);
        r(&mut t, 110, 5, 1, Some(512));
        assert_eq!(r(&mut t, 115, 6, 1, None), Arrival::Gap(4));
    }

    /// The capture missed data frames the responder acknowledged: missed, not missing; a
    /// later gap nobody acknowledges stays missing.
    #[test]
    fn an_ack_past_a_hole_says_the_capture_missed_it() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[1, 2, 5, 6]);
        assert_eq!(t.acknowledged(Psn::new(6), 1_100), 2);
        // An ACK beyond the highest PSN sent is no evidence.
        feed(&mut t, &[7, 9]);
        assert_eq!(t.acknowledged(Psn::new(20), 1_200), 0);
        let c = t.finish(END);
        assert_eq!((c.gaps, c.capture_missed, c.missing), (2, 2, 1));
        assert_eq!(c.missing_ranges, vec![[8, 8]]);
        let (lost, missed) = t.verdict_frames(END);
        assert_eq!((lost.frames, missed.frames), (vec![9], vec![5]));
    }

    /// A sequence NAK names its PSN lost and says the ones before it arrived; the resend that
    /// fills a named hole recovers it. An RNR NAK says its own PSN arrived too.
    #[test]
    fn a_nak_judges_the_psns_before_it_received_and_names_its_own_lost() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[1, 4, 5]);
        assert_eq!(t.nak_evidence(Psn::new(3), 1_100, true, 0), 1);
        t.nak(Psn::new(3));
        assert_eq!(req(&mut t, 3, 2_000), Arrival::Retransmitted);
        let c = t.finish(END);
        assert_eq!((c.capture_missed, c.recovered, c.missing), (1, 1, 0));
        let mut r = PsnTracker::default();
        feed(&mut r, &[1, 4, 5]);
        assert_eq!(r.nak_evidence(Psn::new(3), 1_100, false, 0), 2);
        assert_eq!(r.finish(END).missing, 0);
    }

    /// Fillers followed by a PSN seen before: a go-back replay whose NAK was not captured.
    /// Fillers followed by new data: reordering.
    #[test]
    fn a_replay_whose_nak_was_not_captured_is_resends_not_duplicates() {
        let mut t = PsnTracker::default();
        let a = feed(&mut t, &[1, 2, 4, 5, 3, 4, 5, 6]);
        assert_eq!(a[4], Arrival::OutOfOrder, "judged so on arrival");
        assert_eq!(
            &a[5..],
            [
                Arrival::Retransmitted,
                Arrival::Retransmitted,
                Arrival::InOrder
            ]
        );
        let late = t.take_late_resends().expect("the filler was a resend");
        assert_eq!(
            (late.first, late.count, late.frames.clone()),
            (Psn::new(3), 1, vec![3])
        );
        let c = t.finish(END);
        assert_eq!(
            (
                c.out_of_order,
                c.duplicates,
                c.retransmitted,
                c.recovered,
                c.missing
            ),
            (0, 0, 3, 1, 0)
        );
        // The filler was a resend, not reordering: no lateness.
        assert_eq!(
            (c.out_of_order_depth_max, c.out_of_order_delay_max_us),
            (0, 0.0)
        );
        let mut r = PsnTracker::default();
        let a = feed(&mut r, &[1, 2, 4, 3, 5, 6]);
        assert_eq!(a[3], Arrival::OutOfOrder);
        assert!(r.take_late_resends().is_none());
        assert_eq!(r.finish(END).out_of_order, 1);
    }

    /// A hole settles as missing once the allowance ran out after a request asked for an ACK:
    /// an ACK after that does not take the verdict back. While the capture runs, a younger
    /// hole is pending: not missing yet.
    /// A sequence NAK naming `naked` before the capture saw it, then `after` and an ACK of
    /// `acked`: the counts.
    fn nak_ahead_of(seen: &[u32], naked: u32, after: &[u32], acked: u32) -> PsnCounts {
        let mut t = PsnTracker::default();
        feed(&mut t, seen);
        assert_eq!(t.nak_evidence(Psn::new(naked), 1_000_000, true, 99), 0);
        t.nak(Psn::new(naked));
        for (i, &p) in after.iter().enumerate() {
            req(&mut t, p, 1_000_100 + i as u64);
        }
        t.acknowledged(Psn::new(acked), 1_010_000);
        t.finish(END)
    }

    #[test]
    fn a_nak_ahead_of_the_capture_proves_its_psn_lost_and_its_trigger_missed() {
        // Go-back-N from 3: 3 lost, 4 (sent before the NAK) resent, 5 and 6 new.
        let c = nak_ahead_of(&[0, 1, 2], 3, &[3, 4, 5, 6], 6);
        assert_eq!((c.gaps, c.recovered, c.capture_missed), (1, 1, 1));
        assert_eq!((c.retransmitted, c.missing, c.duplicates), (2, 0, 0));
        // The NAK names 3 with 2 unseen: 2 was received (missed), and so was the trigger.
        let c = nak_ahead_of(&[0, 1], 3, &[3, 4, 5], 5);
        assert_eq!((c.gaps, c.recovered, c.capture_missed), (1, 1, 2));
        assert_eq!(c.retransmitted, 2);
        // Selective repeat: 3 alone, then 8. 4 to 7 were sent before the NAK and received:
        // the ACK past them says the capture missed them (the trigger among them).
        let c = nak_ahead_of(&[0, 1, 2], 3, &[3, 8], 8);
        assert_eq!((c.gaps, c.recovered, c.capture_missed), (2, 1, 4));
        assert_eq!((c.retransmitted, c.missing), (1, 0));
    }

    #[test]
    fn a_nak_ahead_then_a_later_psn_is_an_ordinary_gap_with_its_psn_named() {
        // The mirror put the NAK before 4 and 5: the gap opened by 4 holds 3, named lost.
        let c = nak_ahead_of(&[0, 1, 2], 3, &[4, 5, 3], 5);
        assert_eq!((c.gaps, c.recovered, c.capture_missed), (1, 1, 0));
        assert_eq!((c.retransmitted, c.missing, c.out_of_order), (1, 0, 0));
    }

    #[test]
    fn a_hole_the_capture_ended_within_its_allowance_is_unsettled() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[0, 1, 4]);
        // The gap at 1_020 asked for an ACK: due by 1_020 + ALLOWANCE.
        let c = t.finish(At::End(1_020 + ALLOWANCE));
        assert_eq!((c.unsettled, c.missing), (2, 0));
        assert_eq!(t.unsettled(1_020 + ALLOWANCE), Some((2, ALLOWANCE, 4)));
        let c = t.finish(At::End(1_021 + ALLOWANCE));
        assert_eq!((c.unsettled, c.missing), (0, 2));
        assert_eq!(t.unsettled(1_021 + ALLOWANCE), None);
        // While the capture runs it is pending: neither.
        let c = t.finish(At::Running(1_020));
        assert_eq!((c.unsettled, c.missing), (0, 0));
        // Named by a NAK it is lost, whenever the capture ends.
        t.nak_evidence(Psn::new(2), 1_030, true, 9);
        assert_eq!(t.finish(At::End(1_030)).missing, 2);
    }

    #[test]
    fn a_hole_past_its_allowance_is_missing_for_good() {
        let mut t = PsnTracker::default();
        req(&mut t, 1, 1_000);
        req(&mut t, 3, 2_000);
        assert_eq!(
            t.finish(At::Running(2_000 + ALLOWANCE)).missing,
            0,
            "pending"
        );
        assert_eq!(t.lost_by(2_000 + ALLOWANCE), 0);
        assert_eq!(t.finish(END).missing, 1, "at the end");
        assert_eq!(t.lost_by(2_001 + ALLOWANCE), 1);
        assert_eq!(t.acknowledged(Psn::new(3), 3_000 + ALLOWANCE), 0);
        let c = t.finish(END);
        assert_eq!((c.missing, c.capture_missed), (1, 0));
        assert_eq!(c.missing_ranges, vec![[2, 2]]);
    }

    /// A receiver slow to NAK: the holes settle as lost before the NAK names them, and the
    /// resends that follow recover them. The loss stands (it only grows); "never seen" is
    /// what no resend came for.
    #[test]
    fn a_resend_after_its_hole_settled_recovers_it() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[1, 2]);
        assert_eq!(req(&mut t, 6, 2_000), Arrival::Gap(3));
        let later = 3_000 + ALLOWANCE;
        req(&mut t, 7, later);
        assert_eq!(t.lost_by(later), 3, "settled");
        assert_eq!(t.finish(At::Running(later)).missing_ranges, vec![[3, 5]]);
        t.nak(Psn::new(3));
        assert_eq!(req(&mut t, 3, later + 10), Arrival::Retransmitted);
        assert_eq!(req(&mut t, 5, later + 20), Arrival::Retransmitted);
        let c = t.finish(END);
        assert_eq!((c.recovered, c.missing), (2, 1));
        assert_eq!(c.missing_ranges, vec![[4, 4]]);
        assert_eq!(t.lost_by(later + 20), 3, "the loss stands");
        assert!(t.saw(Psn::new(3)) && !t.saw(Psn::new(4)));
    }

    #[test]
    fn ranges_lose_a_psn_by_splitting() {
        let mut r = vec![[3, 5], [9, 9], [20, 22]];
        remove_psn(&mut r, Psn::new(4));
        assert_eq!(r, vec![[3, 3], [5, 5], [9, 9], [20, 22]]);
        remove_psn(&mut r, Psn::new(9));
        remove_psn(&mut r, Psn::new(20));
        remove_psn(&mut r, Psn::new(100));
        assert_eq!(r, vec![[3, 3], [5, 5], [21, 22]]);
    }

    /// A bad-ICRC frame whose PSN is the next expected takes its place (no gap); one ahead
    /// is damaged when a gap covers it; its resend is a retransmission.
    #[test]
    fn bad_icrc_frames_are_damaged_not_gaps() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[1, 2]);
        for p in 3..8 {
            assert!(t.damaged(Psn::new(p), 1));
        }
        assert_eq!(req(&mut t, 8, 2_000), Arrival::InOrder);
        assert!(!t.damaged(Psn::new(10), 1));
        assert_eq!(req(&mut t, 11, 2_100), Arrival::Gap(2));
        let c = t.finish(END);
        assert_eq!((c.gaps, c.damaged, c.missing), (1, 6, 1));
        assert_eq!(req(&mut t, 3, 2_200), Arrival::Retransmitted);
    }

    #[test]
    fn read_response_gaps_missed_or_lost() {
        let mut r = ResponseTracker::default();
        r.response(Psn::new(10), true, false, 0, None);
        r.response(Psn::new(11), false, false, 1, None);
        r.response(Psn::new(13), false, true, 2, None);
        r.response(Psn::new(20), true, true, 3, None);
        assert_eq!((r.gaps, r.missing), (1, 1));
        // Judged: no re-issue within the allowance: missed.
        let mut m = ResponseTracker::default();
        m.response(Psn::new(10), true, false, 0, Some(100));
        m.response(Psn::new(12), false, true, 10, Some(100));
        let v = |gaps, missed, unsettled, unsettled_after_ns| ResponseVerdicts {
            gaps,
            missed,
            unsettled,
            unsettled_after_ns,
        };
        assert_eq!(m.judged(At::Running(50)), v(0, 0, 0, None), "pending");
        // The capture ended 40 ns after the gap, before a re-issue was due: unsettled.
        let at_end = v(0, 0, 1, Some(40));
        assert_eq!(m.judged(At::End(50)), at_end, "unsettled at the end");
        assert_eq!(m.judged(At::Running(200)), v(0, 1, 0, None));
        assert_eq!(m.judged(At::End(200)), v(0, 1, 0, None));
        assert_eq!(m.response(Psn::new(20), true, true, 200, Some(100)), 1);
        // A re-issue within the allowance: lost.
        let mut l = ResponseTracker::default();
        l.response(Psn::new(10), true, false, 0, Some(100));
        l.response(Psn::new(12), false, true, 10, Some(100));
        l.reissued(60);
        assert_eq!(l.judged(At::End(500)), v(1, 0, 0, None));
    }
}
