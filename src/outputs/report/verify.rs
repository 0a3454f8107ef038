//! The text form of `--expect-*`: a per-flow table and the one-line verdict at the end.

use std::fmt::Write as _;

use super::text::{counts, wrap_into, wrap_items};
use crate::common::error::shown;
use crate::common::paint::{AnsiColor, Paint, Style};
use crate::common::words::plural;
use crate::model::{CaptureDamage, EcnExpect, Expectations, Verdict, VerifyKind, VerifyReport};

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

/// The text form: a few lines per flow, within 80 columns, and the one-line verdict at the
/// end (its first word coloured on a terminal).
pub fn render(v: &VerifyReport, file: &str, paint: Paint) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "roce-sniff verify: {}", shown(file));
    wrap_into(
        &mut o,
        "  expected on every RoCE frame: ",
        "    ",
        &expectations_text(&v.expectations),
    );
    const INDENT: &str = "       ";
    for f in &v.flows {
        let checked = if f.checked_against {
            format!(
                "{}: {} checked, {} violating",
                f.kind.name(),
                f.checked,
                f.violating
            )
        } else {
            format!("{}: not checked", f.kind.name())
        };
        wrap_items(&mut o, "  ", INDENT, [f.flow.clone(), checked].into_iter());
        let seen = ["dscp", "pcp", "vlan", "ecn"]
            .into_iter()
            .map(|k| format!("{} {}", k.to_uppercase(), counts(&f.seen[k])));
        wrap_items(&mut o, &format!("{INDENT}seen: "), INDENT, seen);
        for x in &f.violations {
            let _ = writeln!(
                o,
                "{INDENT}{} with {} other than {}",
                plural(x.count, "frame"),
                x.field.name().to_uppercase(),
                x.expected
            );
        }
        if !f.first_violating_frames.is_empty() {
            let frames = super::frame_list(&f.first_violating_frames);
            wrap_into(
                &mut o,
                &format!("{INDENT}first violating frames: "),
                INDENT,
                &frames,
            );
        }
    }
    if v.flows
        .iter()
        .any(|f| f.kind == VerifyKind::Cnp && !f.checked_against)
    {
        wrap_into(
            &mut o,
            "  ",
            "  ",
            "CNPs are not checked against the data expectations; use --expect-cnp-dscp / --expect-cnp-pcp",
        );
    }
    for u in &v.unverifiable {
        let line = format!(
            "cannot verify {}: {}",
            u.field.name().to_uppercase(),
            u.reason
        );
        wrap_into(&mut o, "  ", "    ", &line);
    }
    if let Some(d) = v.damaged.as_ref().filter(|_| !verdict_names_damage(v)) {
        wrap_into(
            &mut o,
            "  ",
            "    ",
            &format!("cannot verify every frame: {d}"),
        );
    }
    let start = o.len();
    wrap_into(&mut o, "", "  ", &verdict_line(v));
    let word = match v.verdict {
        Verdict::Pass => ("PASS", AnsiColor::Green),
        Verdict::Fail | Verdict::NoRoce => ("FAIL", AnsiColor::Red),
        Verdict::Unverifiable => ("UNVERIFIABLE", AnsiColor::Yellow),
    };
    let style = Style::new().fg_color(Some(word.1.into())).bold();
    paint.at(&mut o, start..start + word.0.len(), style);
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
        Verdict::Unverifiable => match v.damaged.as_ref().filter(|_| verdict_names_damage(v)) {
            Some(d) => format!(
                "UNVERIFIABLE: {} RoCE frames checked, no mismatch, but {d}",
                v.checked
            ),
            None => unverifiable(v),
        },
    }
}

/// Whether the verdict line is UNVERIFIABLE for the damage alone, and says so.
pub fn verdict_names_damage(v: &VerifyReport) -> bool {
    v.verdict == Verdict::Unverifiable
        && v.damaged.is_some()
        && v.unverifiable.is_empty()
        && v.checked > 0
}

fn unverifiable(v: &VerifyReport) -> String {
    format!(
        "UNVERIFIABLE: {} RoCE frames checked, no mismatch, but not every expectation can be checked from this capture",
        v.checked
    )
}

/// What a damaged capture leaves unchecked, naming its regions.
pub fn damage_text(d: &CaptureDamage) -> String {
    format!(
        "the capture is damaged: {}; frames there were not checked",
        super::damage_summary(d)
    )
}

/// The expectations in words, for the HTML page.
pub fn expectations(e: &Expectations) -> String {
    expectations_text(e)
}
