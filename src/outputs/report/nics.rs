//! The NICs table of the text and HTML reports: one row per host of `hosts[]`, the same columns
//! in both, each timing as its median and, in brackets, how many samples.

use crate::common::units::duration_us;
use crate::common::words::plural;
use crate::model::{HostReport, LatencySummary, SenderReport};

/// The columns: (heading, what the cell holds).
pub const COLUMNS: [(&str, &str); 13] = [
    ("host", "address"),
    ("MACs", "its own, or a router's"),
    (
        "NAK gen",
        "as receiver: first request past a lost PSN to its NAK, p50 (NAKs); none: NAKs of a loss the capture did not see",
    ),
    (
        "CNP gen",
        "as receiver: first CE mark since the last CNP to the next CNP, p50 (CNPs); none: CNPs after no CE mark the capture saw",
    ),
    ("CNP every", "as receiver: CNP pacing under CE marks, p50"),
    ("ACK RTT", "as receiver, for reference, p50"),
    ("NAK->resend", "as sender: sequence NAK to resend, p50"),
    ("RNR wait", "as sender: RNR NAK to resend, p50"),
    (
        "timeout",
        "as sender: silence before a resend no NAK asked for, p50",
    ),
    (
        "resends",
        "as sender: go-back-N or selective (episodes judged)",
    ),
    ("PSNs/NAK", "as sender: PSNs resent per sequence NAK"),
    (
        "rate after CNP",
        "as sender: rate 100 us after a CNP over 100 us before, p50 (episodes); none: the CNPs unmeasured, by why",
    ),
    ("set by RDMA-CM", "retries, RNR retries, local ACK timeout"),
];

/// Hosts listed; the JSON report has them all.
pub const ROWS: usize = 50;

/// The cells of one host's row, in `COLUMNS` order.
pub fn cells(h: &HostReport) -> [String; 13] {
    let (r, s) = (&h.as_receiver, &h.as_sender);
    let policy = match s.resend_policy {
        Some(p) => format!(
            "{} ({}/{})",
            p.replace('_', "-"),
            s.resend_policy_counts.go_back_n,
            s.resend_policy_counts.selective
        ),
        None => "-".into(),
    };
    let cm = s.cm.map_or("-".into(), |c| {
        format!(
            "{} / {} / {}",
            c.retry_count,
            c.rnr_retry_count,
            c.local_ack_timeout_us.map_or("none".into(), duration_us)
        )
    });
    [
        h.ip.clone(),
        if h.macs.is_empty() {
            "-".into()
        } else {
            h.macs.join(" ")
        },
        timing_or_untimed(
            &r.nak_generation_us,
            r.nak_generation_untimed,
            "NAK",
            "loss unseen",
        ),
        timing_or_untimed(
            &r.cnp_generation_us,
            r.cnp_generation_untimed,
            "CNP",
            "CE unseen",
        ),
        median(&r.cnp_interval_us),
        median(&r.ack_rtt_us),
        median(&s.nak_to_retransmit_us),
        median(&s.rnr_wait_us),
        median(&s.timeout_resend_us),
        policy,
        s.resend_amplification
            .map_or("-".into(), |a| format!("{a:.1}")),
        rate_after_cnp(s),
        cm,
    ]
}

/// Whether a host shows anything of its NIC's reactions (beyond round trips and MACs).
pub fn reacted(h: &HostReport) -> bool {
    let (r, s) = (&h.as_receiver, &h.as_sender);
    [
        &r.nak_generation_us,
        &r.cnp_generation_us,
        &s.nak_to_retransmit_us,
        &s.rnr_wait_us,
        &s.timeout_resend_us,
        &s.rate_cut_after_cnp,
    ]
    .iter()
    .any(|t| t.count > 0)
        || s.resend_policy.is_some()
        || s.rate_cut_after_cnp_unmeasured.total() > 0
        || r.nak_generation_untimed > 0
        || r.cnp_generation_untimed > 0
}

/// A timing, or where none was timed, how many `what`s could not be and `why`.
fn timing_or_untimed(t: &LatencySummary, untimed: u64, what: &str, why: &str) -> String {
    match (t.count, untimed) {
        (0, 0) => "-".into(),
        (0, untimed) => format!("none: {}, {why}", plural(untimed, what)),
        _ => timing(t),
    }
}

/// The median rate cut and how many episodes, or why none was measured for the CNPs the
/// host received.
fn rate_after_cnp(s: &SenderReport) -> String {
    let cut = &s.rate_cut_after_cnp;
    match cut.p50 {
        Some(p) => format!("{p:.2} ({})", cut.count),
        None => {
            let why = s.rate_cut_after_cnp_unmeasured.reasons();
            if why.is_empty() {
                "-".into()
            } else {
                format!("none: {}", why.join(", "))
            }
        }
    }
}

/// The hosts in the order the table lists them: those that reacted first, then by address.
pub fn ordered(hosts: &[HostReport]) -> Vec<&HostReport> {
    let mut v: Vec<&HostReport> = hosts.iter().collect();
    v.sort_by_key(|h| !reacted(h));
    v
}

fn median(t: &LatencySummary) -> String {
    t.p50.map_or("-".into(), number)
}

fn timing(t: &LatencySummary) -> String {
    t.p50
        .map_or("-".into(), |p| format!("{} ({})", number(p), t.count))
}

fn number(us: f64) -> String {
    duration_us(us)
}
