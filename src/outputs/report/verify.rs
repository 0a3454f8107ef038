//! The text form of `--expect-*`: a per-flow table and the one-line verdict at the end.

use std::fmt::Write as _;

use super::text::counts;
use crate::common::error::shown;
use crate::model::{EcnExpect, Expectations, Verdict, VerifyKind, VerifyReport};

fn expectations_text(e: &Expectations) -> String {
    let mut parts = Vec::new();
    if let Some(d) = e.dscp {
        parts.push(format!("DSCP {d} (TOS {:#04x})", d << 2));
    }
    if let Some(p) = e.pcp {
        parts.push(format!("PCP {p}"));
    }
    if let Some(v) = e.vlan {
        parts.push(format!("VLAN {v}"));
    }
    if let Some(x) = e.ecn {
        parts.push(match x {
            EcnExpect::Ect => "ECN-capable".into(),
            EcnExpect::NotEct => "Not-ECT".into(),
        });
    }
    if let Some(d) = e.cnp_dscp {
        parts.push(format!("CNP DSCP {d}"));
    }
    if let Some(p) = e.cnp_pcp {
        parts.push(format!("CNP PCP {p}"));
    }
    parts.join(", ")
}

/// The text form: a per-flow table and the one-line verdict at the end.
pub fn render(v: &VerifyReport, file: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "roce-sniff verify: {}", shown(file));
    let _ = writeln!(
        o,
        "  expected on every RoCE frame: {}",
        expectations_text(&v.expectations)
    );
    let width = v
        .flows
        .iter()
        .map(|f| f.flow.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        o,
        "  {:<width$} {:<9} {:>8} {:>9} {:<12} {:<9} {:<12} {:<14} first violating frames",
        "flow", "kind", "checked", "violating", "DSCP seen", "PCP seen", "VLAN seen", "ECN seen"
    );
    for f in &v.flows {
        let frames = super::frame_list(&f.first_violating_frames);
        let row = format!(
            "  {:<width$} {:<9} {:>8} {:>9} {:<12} {:<9} {:<12} {:<14} {}",
            f.flow,
            f.kind.name(),
            if f.checked_against {
                f.checked.to_string()
            } else {
                "-".into()
            },
            if f.checked_against {
                f.violating.to_string()
            } else {
                "-".into()
            },
            counts(&f.seen["dscp"]),
            counts(&f.seen["pcp"]),
            counts(&f.seen["vlan"]),
            counts(&f.seen["ecn"]),
            frames
        );
        let _ = writeln!(o, "{}", row.trim_end());
        for x in &f.violations {
            let _ = writeln!(
                o,
                "  {:<width$}      {} frames with {} other than {}",
                "",
                x.count,
                x.field.name().to_uppercase(),
                x.expected
            );
        }
    }
    if v.flows
        .iter()
        .any(|f| f.kind == VerifyKind::Cnp && !f.checked_against)
    {
        let _ = writeln!(
            o,
            "  CNPs are not checked against the data expectations; use --expect-cnp-dscp / --expect-cnp-pcp"
        );
    }
    for u in &v.unverifiable {
        let _ = writeln!(
            o,
            "  cannot verify {}: {}",
            u.field.name().to_uppercase(),
            u.reason
        );
    }
    let _ = writeln!(o, "{}", verdict_line(v));
    o
}

/// The verdict in one line: PASS, FAIL or UNVERIFIABLE, with the numbers.
pub fn verdict_line(v: &VerifyReport) -> String {
    match v.verdict {
        Verdict::Pass => format!("PASS: {} RoCE frames checked, all match", v.checked),
        Verdict::Fail => format!(
            "FAIL: {} of {} RoCE frames do not match",
            v.violating, v.checked
        ),
        Verdict::NoRoce => "FAIL: no RoCE frames in this capture, nothing was verified (did the traffic run? A hardware RDMA NIC bypasses the kernel: capture on a mirror port, with ibdump, or with a libpcap that can open the RDMA device; Soft-RoCE shows on its netdev)".into(),
        Verdict::Unverifiable => format!(
            "UNVERIFIABLE: {} RoCE frames checked, no mismatch, but not every expectation can be checked from this capture",
            v.checked
        ),
    }
}

/// The expectations in words, for the HTML page.
pub fn expectations(e: &Expectations) -> String {
    expectations_text(e)
}
