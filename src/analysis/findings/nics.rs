//! How NICs react to loss and congestion: a receiver slow to NAK a gap, a sender that does not
//! slow down when CNPs tell it to.

use super::finding;
use crate::analysis::flow::FlowEvidence;
use crate::common::units::{bit_rate, duration_ns as duration, duration_us};
use crate::common::words::plural;
use crate::model::{Finding, FindingCode, FlowReport, HostReport, Severity};

/// Sequence NAKs a receiver must have sent to be judged slow.
const SLOW_NAK_MIN_NAKS: u64 = 3;
/// A NAK later than this (median) is slow, where NICs of the ConnectX class NAK within
/// microseconds...
const SLOW_NAK_US: f64 = 100.0;
/// ...and later than this many ACK round trips (a capture beside the sender adds one).
const SLOW_NAK_RTTS: f64 = 10.0;

/// CNPs, over at least this long, a sender must have received for a QP to be judged...
const NO_SLOWDOWN_MIN_CNPS: u64 = 10;
const NO_SLOWDOWN_MIN_SPAN_NS: u64 = 500_000;
/// ...and the share of its rate before the first that it kept through the 10th.
const NO_SLOWDOWN_KEPT: f64 = 0.9;

/// Receivers whose NAK generation's median is above 100 us and 10 ACK round trips.
pub(super) fn slow_nak(hosts: &[HostReport], out: &mut Vec<Finding>) {
    for h in hosts {
        let r = &h.as_receiver;
        let (Some(p50), n) = (r.nak_generation_us.p50, r.nak_generation_us.count) else {
            continue;
        };
        let rtt = r.ack_rtt_us.p50;
        let limit = rtt.map_or(SLOW_NAK_US, |rtt| SLOW_NAK_US.max(SLOW_NAK_RTTS * rtt));
        if n < SLOW_NAK_MIN_NAKS || p50 <= limit {
            continue;
        }
        let against = match rtt {
            Some(rtt) => format!(
                ", {:.0}x its ACK round trip ({})",
                p50 / rtt,
                duration_us(rtt)
            ),
            None => String::new(),
        };
        out.push(finding(
            Severity::Warning,
            FindingCode::SlowNak,
            format!(
                "{} took {} to NAK a gap (median of {}){against}",
                h.ip,
                duration_us(p50),
                plural(n, "sequence NAK")
            ),
            "the receiver's NIC is slow to generate NAKs: NICs of the ConnectX class NAK an out-of-sequence packet within microseconds, and every recovery waits this long; look at its firmware and its out-of-sequence handling. A capture beside the sender adds the path's round trip to this time: compare it with the ACK round trip",
            None,
            n,
            r.nak_frames.clone(),
        ));
    }
}

/// A sender that kept 90% of its rate through 10 CNPs for a QP, sending back to back before.
pub(super) fn cnp_without_slowdown(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    let Some(c) = f.cnp_response.as_deref() else {
        return;
    };
    let judged =
        c.cnps >= NO_SLOWDOWN_MIN_CNPS && c.span_ns >= NO_SLOWDOWN_MIN_SPAN_NS && c.back_to_back;
    if !judged || c.ratio < NO_SLOWDOWN_KEPT {
        return;
    }
    out.push(finding(
        Severity::Warning,
        FindingCode::CnpWithoutSlowdown,
        format!(
            "the sender of {} kept {:.0}% of its rate ({}) through 10 CNPs ({} over {})",
            r.label(),
            c.ratio * 100.0,
            bit_rate(c.rate_before * 8.0),
            plural(c.cnps, "CNP"),
            duration(c.span_ns)
        ),
        "DCQCN's reaction point cuts a QP's rate at each CNP: on this sender it is off or misconfigured for the QP's priority (e.g. /sys/class/net/IFACE/ecn/roce_rp/enable/PRIO on ConnectX, or a rate limiter that ignores CNPs), so congestion persists and the switch's queue grows toward PFC and loss",
        Some(r.label()),
        c.cnps,
        c.frames.to_vec(),
    ));
}
