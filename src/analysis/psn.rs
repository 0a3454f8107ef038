//! PSN bookkeeping of one request stream (the requests a QP sends on a flow).
//!
//! 24-bit sequence numbers compared modulo 2^24 with a window of 2^23. Arrivals are classified
//! against the next expected PSN:
//! - ahead: a gap; the skipped PSNs become holes (missing until something fills them);
//! - behind and in a hole: filled late, either by a retransmission (after a NAK, or after the
//!   stream was idle for a retransmission timeout) or by reordering (out of order);
//! - behind and not in a hole (seen before): a retransmission when a NAK covers it, when it is
//!   part of a go-back-N replay, or when the stream was idle for a timeout; otherwise a duplicate.
//!
//! A READ request consumes as many PSNs as responses it asks for: exactly ceil(len/MTU) when the
//! path MTU is known, otherwise the next request may be anywhere from 1 to ceil(len/256) PSNs on.

use roce_parsers::Psn;

use super::notes::ResendCause;

use crate::model::PsnCounts;

/// Most holes tracked individually; beyond, skipped PSNs are only counted.
const MAX_HOLES: usize = 1024;
/// Ranges listed in the report.
const MISSING_RANGES_SHOWN: usize = 8;
/// A repeated PSN after this much silence on the stream is a timeout retransmission, not a
/// duplicate (a mirror port duplicates within nanoseconds; RC timeouts are far longer).
pub const RETRANSMIT_IDLE_NS: u64 = 100_000;
/// Smallest path MTU: bounds how many responses a READ of unknown MTU can ask for.
const MIN_MTU: u32 = 256;

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

#[derive(Debug, Clone, Default)]
pub struct PsnTracker {
    expected: Option<Psn>,
    /// (PSN, DMA length) of the previous request when it was a READ of unknown response count.
    open_read: Option<(Psn, u32)>,
    /// Skipped ranges (start, length) in the order they appeared.
    holes: Vec<(Psn, u32)>,
    /// Skipped PSNs that did not fit in `holes`.
    untracked_missing: u64,
    replay: Option<Replay>,
    /// PSN from the latest NAK (sequence error) or RNR NAK for this stream, not yet acted on.
    nak_from: Option<Psn>,
    last_ts: u64,
    /// Anomalies: none on most streams.
    counts: crate::rare::Rare<PsnCounts>,
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
    /// again, the counts stay; PSNs still missing from the old connection stay missing.
    pub fn restart(&mut self) {
        self.untracked_missing += self.holes.iter().map(|&(_, l)| u64::from(l)).sum::<u64>();
        *self = PsnTracker {
            untracked_missing: self.untracked_missing,
            counts: std::mem::take(&mut self.counts),
            ..PsnTracker::default()
        };
    }

    /// Whether `psn` went by: behind the next expected PSN and in no hole.
    pub fn saw(&self, psn: Psn) -> bool {
        let behind = self
            .expected
            .is_some_and(|e| (-(1 << 22)..0).contains(&(psn - e)));
        behind
            && !self
                .holes
                .iter()
                .any(|&(s, l)| (0..l as i32).contains(&(psn - s)))
    }

    /// The responder asked for a resend from `psn` (NAK sequence error or RNR NAK).
    pub fn nak(&mut self, psn: Psn) {
        self.nak_from = Some(psn);
    }

    /// Records a request. `consumes` is the PSNs it uses (ceil(len/MTU) for a READ of known
    /// MTU, else 1); `read_len` is the DMA length of a READ whose MTU is unknown. `reliable`
    /// is false for UC/UD, which never retransmit.
    pub fn request(
        &mut self,
        psn: Psn,
        ts: u64,
        consumes: u32,
        read_len: Option<u32>,
        reliable: bool,
    ) -> Arrival {
        let idle_ns = ts.saturating_sub(self.last_ts);
        let idle = idle_ns >= RETRANSMIT_IDLE_NS && self.last_ts != 0;
        self.last_ts = ts;
        let open_read = self.open_read.take();
        let Some(expected) = self.expected else {
            self.advance(psn, consumes, read_len);
            return Arrival::InOrder;
        };
        if let Some(r) = self.replay {
            if psn > r.until {
                self.replay = None;
            }
        }
        let d = psn - expected;
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
            self.add_hole(expected, d as u32);
            self.advance(psn, consumes, read_len);
            return Arrival::Gap(d as u32);
        }
        // Behind the expected PSN.
        let filled = self.fill_hole(psn);
        if !reliable {
            return if filled {
                self.counts.out_of_order += 1;
                Arrival::OutOfOrder
            } else {
                self.counts.duplicates += 1;
                Arrival::Duplicate
            };
        }
        let in_replay = self.replay.is_some();
        let nak_covers = self.nak_from.filter(|&n| psn >= n && psn < expected);
        if in_replay || nak_covers.is_some() || idle {
            if !in_replay {
                let cause = match nak_covers {
                    Some(n) => ResendCause::Nak {
                        from_psn: n.value(),
                    },
                    None => ResendCause::Timeout { idle_ns },
                };
                self.replay = Some(Replay {
                    until: expected.prev(),
                    cause,
                });
                self.nak_from = None;
            }
            self.counts.retransmitted += 1;
            if filled {
                self.counts.recovered += 1;
            }
            Arrival::Retransmitted
        } else if filled {
            self.counts.out_of_order += 1;
            Arrival::OutOfOrder
        } else {
            self.counts.duplicates += 1;
            Arrival::Duplicate
        }
    }

    fn advance(&mut self, psn: Psn, consumes: u32, read_len: Option<u32>) {
        self.expected = Some(psn + consumes.max(1));
        self.open_read = read_len.map(|len| (psn, len));
    }

    fn add_hole(&mut self, start: Psn, len: u32) {
        if self.holes.len() < MAX_HOLES {
            self.holes.push((start, len));
        } else {
            self.untracked_missing += u64::from(len);
        }
    }

    /// Removes `psn` from the hole that holds it; false if no hole does.
    fn fill_hole(&mut self, psn: Psn) -> bool {
        let Some(i) = self
            .holes
            .iter()
            .position(|&(s, l)| (0..l as i32).contains(&(psn - s)))
        else {
            return false;
        };
        let (start, len) = self.holes[i];
        let offset = (psn - start) as u32;
        let before = (start, offset);
        let after = (psn + 1, len - offset - 1);
        match (before.1 > 0, after.1 > 0) {
            (true, true) => {
                self.holes[i] = before;
                self.holes.insert(i + 1, after);
            }
            (true, false) => self.holes[i] = before,
            (false, true) => self.holes[i] = after,
            (false, false) => {
                self.holes.remove(i);
            }
        }
        true
    }

    /// Final counts: holes still open are the missing PSNs.
    pub fn finish(&self) -> PsnCounts {
        let mut c = (*self.counts).clone();
        c.missing =
            self.untracked_missing + self.holes.iter().map(|&(_, l)| u64::from(l)).sum::<u64>();
        c.missing_ranges = self
            .holes
            .iter()
            .take(MISSING_RANGES_SHOWN)
            .map(|&(s, l)| [s.value(), (s + (l - 1)).value()])
            .collect();
        c
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

/// READ responses on a flow: within one READ the PSNs run consecutively.
#[derive(Debug, Clone, Default)]
pub struct ResponseTracker {
    next: Option<Psn>,
    pub gaps: u64,
    pub missing: u64,
}

impl ResponseTracker {
    /// `first` is true for READ Response First/Only (a new READ starts), `last` for Last/Only.
    /// A new connection: responses start afresh, the counts stay.
    pub fn restart(&mut self) {
        self.next = None;
    }

    pub fn response(&mut self, psn: Psn, first: bool, last: bool) {
        if !first {
            if let Some(n) = self.next {
                let d = psn - n;
                if d > 0 {
                    self.gaps += 1;
                    self.missing += d as u64;
                }
            }
        }
        self.next = if last { None } else { Some(psn + 1) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(t: &mut PsnTracker, psns: &[u32]) -> Vec<Arrival> {
        psns.iter()
            .enumerate()
            .map(|(i, &p)| t.request(Psn::new(p), 1_000 + i as u64 * 10, 1, None, true))
            .collect()
    }

    #[test]
    fn wrap_is_not_a_gap() {
        let mut t = PsnTracker::default();
        let a = feed(&mut t, &[0xfffffd, 0xfffffe, 0xffffff, 0, 1]);
        assert!(a.iter().all(|&x| x == Arrival::InOrder));
        assert_eq!(t.finish(), PsnCounts::default());
    }

    #[test]
    fn gap_then_nak_then_go_back_n() {
        let mut t = PsnTracker::default();
        feed(&mut t, &[10, 11, 12, 14, 15]);
        t.nak(Psn::new(13));
        let a: Vec<_> = [13, 14, 15, 16]
            .iter()
            .map(|&p| t.request(Psn::new(p), 5_000, 1, None, true))
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
        let c = t.finish();
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
        let c = t.finish();
        assert_eq!(
            (c.gaps, c.out_of_order, c.duplicates, c.missing),
            (2, 1, 1, 3)
        );
        assert_eq!(c.missing_ranges, vec![[6, 8]]);
    }

    #[test]
    fn timeout_retransmission_after_idle() {
        let mut t = PsnTracker::default();
        t.request(Psn::new(1), 1_000, 1, None, true);
        t.request(Psn::new(2), 1_100, 1, None, true);
        assert_eq!(
            t.request(Psn::new(2), 1_100 + RETRANSMIT_IDLE_NS, 1, None, true),
            Arrival::Retransmitted
        );
        // Unreliable transports never retransmit: the same is a duplicate.
        let mut u = PsnTracker::default();
        u.request(Psn::new(1), 1_000, 1, None, false);
        assert_eq!(
            u.request(Psn::new(1), 1_000_000, 1, None, false),
            Arrival::Duplicate
        );
    }

    #[test]
    fn read_requests_advance_by_their_responses() {
        let mut t = PsnTracker::default();
        // MTU known: 4096 bytes at MTU 1024 is 4 PSNs.
        t.request(Psn::new(100), 1, 4, None, true);
        assert_eq!(t.request(Psn::new(104), 2, 1, None, true), Arrival::InOrder);
        // MTU unknown: anything up to ceil(len/256) is fine, beyond is a gap.
        t.request(Psn::new(105), 3, 1, Some(2048), true);
        assert_eq!(t.request(Psn::new(109), 4, 1, None, true), Arrival::InOrder);
        t.request(Psn::new(110), 5, 1, Some(512), true);
        assert_eq!(t.request(Psn::new(115), 6, 1, None, true), Arrival::Gap(4));
    }

    #[test]
    fn read_response_gaps() {
        let mut r = ResponseTracker::default();
        r.response(Psn::new(10), true, false);
        r.response(Psn::new(11), false, false);
        r.response(Psn::new(13), false, true);
        r.response(Psn::new(20), true, true);
        assert_eq!((r.gaps, r.missing), (1, 1));
    }
}
