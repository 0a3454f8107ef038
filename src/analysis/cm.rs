//! RDMA-CM as the analysis uses it: a REQ and its REP pair the two directions of a connection
//! (and give the path MTU); a REP also starts the PSN history of QPs a new connection reuses;
//! REQs nobody answered and REJs with their reasons are findings.

use std::collections::HashMap;
use std::net::IpAddr;

use roce_parsers::{CmMessage, Qpn};

use super::flow::FlowKey;
use super::{Analyzer, PairingMethod};

/// CM requests remembered; a capture of a connection storm keeps the first.
const MAX_CM_REQUESTS: usize = 100_000;

/// A connection request seen on the wire, and what came of it.
#[derive(Debug, Clone)]
pub struct CmRequest {
    pub qpn: Qpn,
    pub first_frame: u64,
    pub first_ts: u64,
    /// Times it was sent (the CM resends a REQ nobody answers).
    pub sent: u32,
    pub answer: Option<CmAnswer>,
    /// How long its sender waits for the answer before sending it again (the REQ's Remote CM
    /// Response Timeout).
    pub answer_within_ns: u64,
    pub setup: CmSetup,
}

/// What a connection's RDMA-CM request set up for both its QPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmSetup {
    pub path_mtu: Option<u32>,
    /// Transport retries (0-7) before the QP gives up on a request no ACK answers.
    pub retry_count: u8,
    /// Resends (0-7; 7 for ever) after RNR NAKs before it gives up.
    pub rnr_retry_count: u8,
    /// The Local ACK Timeout's exponent: a request no ACK answered is resent after 4.096 us x
    /// 2^this (0: never).
    pub local_ack_timeout: u8,
}

impl CmSetup {
    /// The time a requester waits for an ACK before it resends, when one is set.
    pub fn ack_timeout_ns(&self) -> Option<u64> {
        (self.local_ack_timeout > 0).then(|| response_wait_ns(self.local_ack_timeout))
    }
}

/// Why a request counts as unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unanswered {
    /// Its sender resent it (it had timed out already), or the capture went on past the time
    /// its sender waits for the answer (and `CM_GRACE_NS`) without one.
    TimedOut,
    /// The capture ended more than `CM_GRACE_NS` after it but before its sender's own timeout:
    /// the answer may have come after the capture. Told only at the end, as information.
    CaptureEndedFirst,
}

impl CmRequest {
    /// Whether, and why, it went unanswered by `now`. While the capture runs (`running`) only
    /// once its sender's own wait is over: a passive side that takes 200 ms to accept has not
    /// left the request unanswered. At the end, one older than `CM_GRACE_NS` is told too, as
    /// the capture ending first.
    pub fn unanswered_by(&self, now: u64, running: bool) -> Option<Unanswered> {
        let waited = |ns: u64| self.first_ts.saturating_add(ns) < now;
        if self.answer.is_some() {
            None
        } else if self.sent > 1 || waited(self.answer_within_ns.max(super::CM_GRACE_NS)) {
            Some(Unanswered::TimedOut)
        } else if !running && waited(super::CM_GRACE_NS) {
            Some(Unanswered::CaptureEndedFirst)
        } else {
            None
        }
    }
}

/// The Remote CM Response Timeout's wait: 4.096 us x 2^`exponent`.
fn response_wait_ns(exponent: u8) -> u64 {
    4_096u64 << exponent.min(31)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmAnswer {
    Reply,
    Reject { reason: u16, frame: u64 },
}

/// The outcome of every CM request: by (active side, passive side, communication ID).
pub type CmRequests = HashMap<(IpAddr, IpAddr, u32), CmRequest>;

/// Where a CM message was seen.
pub struct CmContext {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub vlan: Option<u16>,
    pub frame_no: u64,
    pub ts: u64,
}

impl Analyzer {
    pub(super) fn cm_message(&mut self, msg: CmMessage, at: CmContext) {
        match msg {
            CmMessage::Request {
                comm_id,
                qpn,
                path_mtu,
                response_timeout,
                retry_count,
                rnr_retry_count,
                local_ack_timeout,
                ..
            } => {
                let full = self.cm_requests.len() >= MAX_CM_REQUESTS;
                let key = (at.src, at.dst, comm_id);
                if let Some(r) = self.cm_requests.get_mut(&key) {
                    r.sent += 1;
                } else if !full {
                    self.cm_requests.insert(
                        key,
                        CmRequest {
                            qpn,
                            first_frame: at.frame_no,
                            first_ts: at.ts,
                            sent: 1,
                            answer: None,
                            answer_within_ns: response_wait_ns(response_timeout),
                            setup: CmSetup {
                                path_mtu,
                                retry_count,
                                rnr_retry_count,
                                local_ack_timeout,
                            },
                        },
                    );
                }
            }
            CmMessage::Reply {
                remote_comm_id,
                qpn,
                ..
            } => self.cm_reply(remote_comm_id, qpn, &at),
            CmMessage::Reject {
                remote_comm_id,
                rejected,
                reason,
                ..
            } => {
                // A REJ of a REQ goes from the passive side back to the active side.
                if rejected != 0 {
                    return;
                }
                if let Some(r) = self.cm_requests.get_mut(&(at.dst, at.src, remote_comm_id)) {
                    r.answer = Some(CmAnswer::Reject {
                        reason,
                        frame: at.frame_no,
                    });
                }
            }
        }
    }

    /// A REP (from the passive side, `at.src`) pairs the connection's two flows; flows that
    /// already ran on these QPs belonged to an older connection and start a new PSN history.
    fn cm_reply(&mut self, remote_comm_id: u32, qpn: Qpn, at: &CmContext) {
        let Some(req) = self.cm_requests.get_mut(&(at.dst, at.src, remote_comm_id)) else {
            return;
        };
        let first_answer = req.answer.is_none();
        req.answer = Some(CmAnswer::Reply);
        let (active_qpn, setup) = (req.qpn, req.setup);
        let to_passive = FlowKey {
            src: at.dst,
            dst: at.src,
            dqpn: qpn,
            vlan: at.vlan,
        };
        let to_active = FlowKey {
            src: at.src,
            dst: at.dst,
            dqpn: active_qpn,
            vlan: at.vlan,
        };
        self.cm_pairs.insert(to_passive, (to_active, setup, at.ts));
        self.cm_pairs.insert(to_active, (to_passive, setup, at.ts));
        for key in [to_passive, to_active] {
            if let Some(&i) = self.index.get(&key) {
                if first_answer {
                    self.flows[i].new_connection();
                }
                self.flows[i].cm_setup(setup);
            }
        }
        if let (Some(&a), Some(&b)) = (self.index.get(&to_passive), self.index.get(&to_active)) {
            self.pair(a, b, PairingMethod::RdmaCm);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(first_ts: u64, exponent: u8) -> CmRequest {
        CmRequest {
            qpn: Qpn(0x400),
            first_frame: 1,
            first_ts,
            sent: 1,
            answer: None,
            answer_within_ns: response_wait_ns(exponent),
            setup: CmSetup {
                path_mtu: None,
                retry_count: 7,
                rnr_retry_count: 7,
                local_ack_timeout: 14,
            },
        }
    }

    #[test]
    fn a_request_waits_as_long_as_its_sender_while_the_capture_runs() {
        const MS: u64 = 1_000_000;
        use Unanswered::*;
        // rdma_cm's REQ: its sender waits 4.3 s for the answer.
        let r = request(0, 20);
        assert_eq!(r.answer_within_ns, 4_294_967_296);
        assert_eq!(r.unanswered_by(200 * MS, true), None);
        assert_eq!(r.unanswered_by(4_300 * MS, true), Some(TimedOut));
        // At the capture's end, 50 ms without an answer is told, as the capture ending
        // before the sender's own timeout; past that timeout, as timed out.
        assert_eq!(r.unanswered_by(200 * MS, false), Some(CaptureEndedFirst));
        assert_eq!(r.unanswered_by(40 * MS, false), None);
        assert_eq!(r.unanswered_by(4_300 * MS, false), Some(TimedOut));
        // A short timeout leaves the 50 ms floor; a resent request timed out already.
        assert_eq!(request(0, 0).unanswered_by(40 * MS, true), None);
        assert_eq!(request(0, 0).unanswered_by(60 * MS, false), Some(TimedOut));
        let resent = CmRequest {
            sent: 2,
            ..request(0, 20)
        };
        assert_eq!(resent.unanswered_by(MS, true), Some(TimedOut));
        let answered = CmRequest {
            answer: Some(CmAnswer::Reply),
            ..request(0, 20)
        };
        assert_eq!(answered.unanswered_by(10_000 * MS, false), None);
    }
}
