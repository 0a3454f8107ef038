//! Connections that go wrong: requests nobody acknowledged (an MTU black hole, a QP that ran
//! out of retries), NAKs for packets the capture saw arrive, RDMA-CM requests unanswered or
//! rejected.

use std::collections::BTreeMap;
use std::net::IpAddr;

use roce_parsers::mad::reject_reason_name;

use super::finding;
use crate::analysis::cm::{CmAnswer, CmRequest, CmRequests, Unanswered};
use crate::analysis::flow::{Evidence, FlowEvidence};
use crate::analysis::IcmpKey;
use crate::common::units::{duration_ns as duration, duration_us};
use crate::common::words::plural;
use crate::model::FlowLabel;
use crate::model::{Finding, FindingCode, FlowReport, Severity};

/// The transport retry count's largest value (3 bits in the QP's attributes): a PSN resent this
/// often before the QP falls silent ran out of retries.
const RETRY_LIMIT: u32 = 7;
/// An RNR Retry Count of 7 retries for ever.
const RNR_FOR_EVER: u8 = 7;

/// RC requests that asked for an ACK and got none, the capture's last moments left out.
pub(super) fn unacknowledged_requests(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    let u = &f.troubles.unacknowledged;
    // A capture of one direction (a mirror of a port's ingress) shows no ACK at all: silence
    // there says nothing.
    let reverse_seen = r.peer.is_some()
        || r.acks > 0
        || r.feedback.naks.total() > 0
        || r.feedback.read_responses > 0;
    if u.requests.count == 0 || !reverse_seen {
        return;
    }
    let mut message = format!(
        "{} on {} asked for an ACK and none came (requests of the capture's last {} left out)",
        plural(u.requests.count, "request"),
        r.label(),
        u.allowance.describe()
    );
    let mut cause = "the requests or their ACKs were lost after the capture point, or the responder stopped answering (its QP in the error state)".to_string();
    let mut severity = Severity::Warning;
    if let (Some(min), Some(acked)) = (u.min_len, u.acked_max_len) {
        if min > acked {
            message.push_str(&format!(
                "; every one carries more ({min} bytes or more) than the largest acknowledged ({acked} bytes)"
            ));
            cause = "an MTU black hole: a hop on the path has a smaller MTU than the QP's path MTU and drops the larger packets without a word; set the path MTU (or the interface MTU) to what every hop carries".into();
        }
    }
    // RNR NAKs answered the resends: the RNR Retry Count the connection's RDMA-CM request set
    // (7 retries for ever) is what ran out, not the transport retries.
    let rnr = f.troubles.naks.rnr.count;
    let cm = f.cm.as_deref();
    let rnr_retries_out = cm
        .map(|c| c.rnr_retry_count)
        .filter(|&n| n < RNR_FOR_EVER && rnr > u64::from(n));
    // The retry count the connection's RDMA-CM request set, else the largest there is.
    let (limit, set_by) = match cm.map(|c| c.retry_count) {
        Some(n) => (
            u32::from(n).max(1),
            ", the retry count its RDMA-CM request set",
        ),
        None => (RETRY_LIMIT, ""),
    };
    if let Some(n) = rnr_retries_out {
        message.push_str(&format!(
            "; the responder refused it with an RNR NAK {} before the QP fell silent",
            plural(rnr, "time")
        ));
        cause = format!(
            "the requester's RNR retries ran out ({n} resends after RNR NAKs, the RNR Retry Count its RDMA-CM request set): the QP went to the error state and its work requests failed with an RNR-retry-exceeded error; the responder's application does not post receives in time"
        );
        severity = Severity::Critical;
    } else if let Some((psn, n)) = u.retry.filter(|&(_, n)| n >= limit) {
        // How far apart, against the ACK timeout RDMA-CM set: a NIC that resends much sooner
        // or later than it was told shows here.
        let set = cm.and_then(|c| c.ack_timeout_ns());
        let apart = match (r.recovery.timeout_interval_us.p50, set) {
            (Some(us), Some(set)) => format!(
                ", {} apart (the Local ACK Timeout its RDMA-CM request set: {}),",
                duration_us(us),
                duration(set)
            ),
            (Some(us), None) => format!(", {} apart,", duration_us(us)),
            _ => String::new(),
        };
        message.push_str(&format!(
            "; PSN {} was resent {n} times{apart} before the QP fell silent",
            psn.value()
        ));
        cause = format!(
            "the requester's transport retries ran out ({limit} resends without an ACK{set_by}): the QP went to the error state and its work requests failed with a retry-exceeded error; {cause}"
        );
        severity = Severity::Critical;
    }
    out.push(finding(
        severity,
        FindingCode::UnacknowledgedRequests,
        message,
        &cause,
        Some(r.label()),
        u.requests.count,
        u.requests.frames.clone(),
    ));
}

/// PSN-sequence NAKs for PSNs the capture saw go by: lost after the capture point.
pub(super) fn nak_without_gap(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    let n = &f.troubles.nak_without_gap;
    if n.count == 0 {
        return;
    }
    out.push(finding(
        Severity::Warning,
        FindingCode::NakWithoutGap,
        format!(
            "{} for {} asked for PSNs this capture saw go by",
            plural(n.count, "sequence NAK"),
            r.label()
        ),
        "the packets were lost after the capture point: on a later hop, or in the receiver's NIC (out of buffers, PCIe back-pressure); capture nearer the receiver to see where",
        Some(r.label()),
        n.count,
        n.frames.clone(),
    ));
}

/// RDMA-CM requests without a reply by `now`, and rejections.
pub(super) fn cm_findings(requests: &CmRequests, now: u64, running: bool, out: &mut Vec<Finding>) {
    let mut unanswered: BTreeMap<(IpAddr, IpAddr, Unanswered), UnansweredGroup> = BTreeMap::new();
    // (active, passive, reason) -> (rejections, first REJ frame)
    let mut rejected: BTreeMap<(IpAddr, IpAddr, u16), (u64, u64)> = BTreeMap::new();
    for (&(active, passive, _), r) in requests {
        if let Some(why) = r.unanswered_by(now, running) {
            unanswered
                .entry((active, passive, why))
                .or_default()
                .add(r, now);
        } else if let Some(CmAnswer::Reject { reason, frame }) = r.answer {
            let e = rejected
                .entry((active, passive, reason))
                .or_insert((0, u64::MAX));
            e.0 += 1;
            e.1 = e.1.min(frame);
        }
    }
    for ((active, passive, why), g) in unanswered {
        out.push(g.finding(active, passive, why));
    }
    for ((active, passive, reason), (n, frame)) in rejected {
        out.push(finding(
            Severity::Warning,
            FindingCode::CmRejected,
            format!(
                "{} from {active} to {passive} rejected: {} (reason {reason})",
                plural(n, "RDMA-CM connection"),
                reject_reason_name(reason)
            ),
            "the passive side refused the connection: reason 8 means no listener on that port (the server is not running or listens elsewhere), 28 that the application rejected it, others a parameter it cannot accept",
            None,
            n,
            vec![frame],
        ));
    }
}

/// The requests from one host to another that went unanswered for one reason.
#[derive(Default)]
struct UnansweredGroup {
    requests: u64,
    sent: u64,
    first_frame: Option<u64>,
    /// The least time from a request to the capture's end, and the longest its sender waits.
    least_left_ns: Option<u64>,
    longest_wait_ns: u64,
}

impl UnansweredGroup {
    fn add(&mut self, r: &CmRequest, now: u64) {
        self.requests += 1;
        self.sent += u64::from(r.sent);
        self.first_frame = Some(
            self.first_frame
                .map_or(r.first_frame, |f| f.min(r.first_frame)),
        );
        let left = now.saturating_sub(r.first_ts);
        self.least_left_ns = Some(self.least_left_ns.map_or(left, |l| l.min(left)));
        self.longest_wait_ns = self.longest_wait_ns.max(r.answer_within_ns);
    }

    fn finding(&self, active: IpAddr, passive: IpAddr, why: Unanswered) -> Finding {
        let requests = plural(self.requests, "RDMA-CM connection request");
        let frames = self.first_frame.into_iter().collect();
        match why {
            Unanswered::TimedOut => finding(
                Severity::Warning,
                FindingCode::CmUnanswered,
                format!(
                    "{requests} from {active} to {passive} got no reply (sent {})",
                    plural(self.sent, "time")
                ),
                "the passive side never answered: it is unreachable at that address (a wrong GID or IP, a VLAN or route that does not lead there), the MADs are lost, or nothing runs its CM; the active side gets RDMA_CM_EVENT_UNREACHABLE",
                None,
                self.requests,
                frames,
            ),
            Unanswered::CaptureEndedFirst => finding(
                Severity::Info,
                FindingCode::CmUnanswered,
                format!(
                    "{requests} from {active} to {passive} got no reply before the capture ended, {} after {}; {} for the answer before sending again",
                    duration(self.least_left_ns.unwrap_or(0)),
                    if self.requests == 1 { "it" } else { "the last" },
                    if self.requests == 1 {
                        format!("its sender waits {}", duration(self.longest_wait_ns))
                    } else {
                        format!("their senders wait up to {}", duration(self.longest_wait_ns))
                    }
                ),
                "the reply may have come after the capture stopped (a passive side that accepts slowly); capture past the sender's timeout to tell: a request sent again, or never answered, then shows as unanswered",
                None,
                self.requests,
                frames,
            ),
        }
    }
}

/// ICMP errors quoting RoCE packets: unreachable, too big for a hop, TTL exceeded.
pub(super) fn icmp_unreachable(errors: &BTreeMap<IcmpKey, Evidence>, out: &mut Vec<Finding>) {
    for (k, ev) in errors {
        let e = roce_parsers::IcmpError {
            v6: k.v6,
            icmp_type: k.icmp_type,
            code: k.code,
            mtu: k.mtu,
            src: k.src,
            dst: k.dst,
            dqpn: k.dqpn,
            psn: None,
        };
        let about = match k.dqpn {
            Some(dqpn) => FlowLabel {
                src: k.src,
                dst: k.dst,
                dqpn,
                vlan: None,
            }
            .to_string(),
            None => format!("{} > {}", k.src, k.dst),
        };
        let mut message = format!(
            "{} {} from {} about RoCE {about}",
            plural(ev.count, "ICMP error"),
            e.name(),
            k.reporter
        );
        let cause = match k.mtu {
            Some(mtu) => {
                message.push_str(&format!(": next-hop MTU {mtu}"));
                "a hop's MTU is smaller than the RoCE packets, which are sent with DF and never fragmented: they are dropped there (an MTU black hole); lower the QP's path MTU below the hop's, or raise the hop's MTU"
            }
            None if matches!((k.v6, k.icmp_type), (false, 11) | (true, 3)) => {
                "the packets' TTL ran out on the path: a routing loop, or a TTL set too low"
            }
            None => {
                "a router or the destination could not deliver the packets: no route or neighbour entry for the destination, an ACL, or the host is down"
            }
        };
        out.push(finding(
            Severity::Warning,
            FindingCode::IcmpUnreachable,
            message,
            cause,
            None,
            ev.count,
            ev.frames.clone(),
        ));
    }
}

/// Requests sent with PSNs that a pending READ's responses use.
pub(super) fn read_range_violation(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    let v = &f.troubles.read_range_violation;
    if v.count == 0 {
        return;
    }
    out.push(finding(
        Severity::Critical,
        FindingCode::ReadRangeViolation,
        format!(
            "{} on {} used PSNs reserved for the responses of a READ",
            plural(v.count, "request"),
            r.label()
        ),
        "a READ of n packets takes n PSNs, and the next request must follow them; a requester that reuses them breaks the protocol (a NIC or driver bug, or a software RoCE stack miscounting the READ's responses): the responder NAKs or drops them",
        Some(r.label()),
        v.count,
        v.frames.clone(),
    ));
}
