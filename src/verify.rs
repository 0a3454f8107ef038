//! `--expect-*`: proof that the configured QoS reaches the wire. Every RoCE frame (data and
//! ACKs) is checked against the data expectations, every CNP against the CNP expectations; the
//! result is a per-flow table, a verdict and an exit code. A check the capture cannot support
//! (PCP on a capture without any VLAN tag, a Linux cooked capture, a VLAN sub-interface) makes
//! the verdict UNVERIFIABLE, never PASS; so does a capture without RoCE.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use roce_parsers::link::{LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2};
use roce_parsers::Opcode;
use serde::Serialize;

use crate::analysis::flow::{FlowKey, EVIDENCE_FRAMES};
use crate::packets::ecn_name;
use crate::report::text::counts;
use crate::summary::{PacketSummary, Payload};

/// ECN expectation: ECN-capable (ECT(0), ECT(1) or CE) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnExpect {
    Ect,
    NotEct,
}

impl EcnExpect {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "ect" => Ok(EcnExpect::Ect),
            "not-ect" | "not_ect" | "notect" => Ok(EcnExpect::NotEct),
            _ => Err(format!("`{s}`: --expect-ecn takes `ect` or `not-ect`")),
        }
    }

    fn matches(self, ecn: u8) -> bool {
        match self {
            EcnExpect::Ect => ecn != 0,
            EcnExpect::NotEct => ecn == 0,
        }
    }
}

/// What the frames must carry. `None` means not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Expectations {
    pub dscp: Option<u8>,
    pub pcp: Option<u8>,
    pub vlan: Option<u16>,
    pub ecn: Option<EcnExpect>,
    pub cnp_dscp: Option<u8>,
    pub cnp_pcp: Option<u8>,
}

impl Expectations {
    pub fn any(&self) -> bool {
        self.data_any() || self.cnp_any()
    }

    fn data_any(&self) -> bool {
        self.dscp.is_some() || self.pcp.is_some() || self.vlan.is_some() || self.ecn.is_some()
    }

    fn cnp_any(&self) -> bool {
        self.cnp_dscp.is_some() || self.cnp_pcp.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Dscp,
    Pcp,
    Vlan,
    Ecn,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Dscp => "dscp",
            Field::Pcp => "pcp",
            Field::Vlan => "vlan",
            Field::Ecn => "ecn",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct FlowCheck {
    checked: u64,
    violating: u64,
    seen_dscp: BTreeMap<String, u64>,
    seen_pcp: BTreeMap<String, u64>,
    seen_vlan: BTreeMap<String, u64>,
    seen_ecn: BTreeMap<String, u64>,
    /// Per field: count and first frames.
    violations: BTreeMap<Field, (u64, Vec<u64>)>,
    first_violating: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldViolation {
    pub field: Field,
    pub expected: String,
    pub count: u64,
    pub first_frames: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowVerify {
    pub flow: String,
    pub src: String,
    pub dst: String,
    pub dqpn: u32,
    pub vlan: Option<u16>,
    /// "data" (data and ACK frames) or "cnp".
    pub kind: &'static str,
    /// Whether this flow's frames were checked (CNPs are not without CNP expectations).
    pub checked_against: bool,
    pub checked: u64,
    pub violating: u64,
    pub seen: BTreeMap<&'static str, BTreeMap<String, u64>>,
    pub violations: Vec<FieldViolation>,
    pub first_violating_frames: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Unverifiable {
    pub field: Field,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VerifyReport {
    /// True only when every checked frame matched and every check could be made.
    pub passed: bool,
    /// PASS, FAIL, UNVERIFIABLE, or NO_ROCE.
    pub verdict: &'static str,
    pub expectations: Expectations,
    /// Frames checked, and frames that violate at least one expectation.
    pub checked: u64,
    pub violating: u64,
    pub unverifiable: Vec<Unverifiable>,
    pub flows: Vec<FlowVerify>,
}

/// Where the frames came from, for what it implies about VLAN tags.
#[derive(Debug, Clone, Default)]
pub struct CaptureContext {
    /// A live capture on a VLAN sub-interface: the kernel strips the tag.
    pub vlan_subinterface: Option<String>,
}

pub struct Verifier {
    exp: Expectations,
    flows: HashMap<(FlowKey, bool), FlowCheck>,
    roce: u64,
    tagged: u64,
    linktypes: BTreeMap<u32, u64>,
}

fn bump(map: &mut BTreeMap<String, u64>, key: String) {
    *map.entry(key).or_default() += 1;
}

impl Verifier {
    pub fn new(exp: Expectations) -> Self {
        Verifier {
            exp,
            flows: HashMap::new(),
            roce: 0,
            tagged: 0,
            linktypes: BTreeMap::new(),
        }
    }

    pub fn feed(&mut self, p: &PacketSummary) {
        let Payload::Roce(r) = &p.payload else { return };
        let Some((src, dst)) = p.addrs else { return };
        self.roce += 1;
        *self.linktypes.entry(p.linktype).or_default() += 1;
        if p.vlan.is_some() {
            self.tagged += 1;
        }
        let is_cnp = r.opcode == Opcode::CNP;
        let key = FlowKey {
            src,
            dst,
            dqpn: r.dqpn,
            vlan: p.vlan.map(|v| v.0),
        };
        let check = self.flows.entry((key, is_cnp)).or_default();
        let tc = p.tclass.unwrap_or(0);
        bump(&mut check.seen_dscp, (tc >> 2).to_string());
        bump(&mut check.seen_ecn, ecn_name(tc).to_string());
        bump(
            &mut check.seen_pcp,
            p.vlan.map_or("untagged".into(), |(_, pcp)| pcp.to_string()),
        );
        bump(
            &mut check.seen_vlan,
            p.vlan.map_or("untagged".into(), |(vid, _)| vid.to_string()),
        );
        let (dscp, pcp, vlan, ecn) = if is_cnp {
            (self.exp.cnp_dscp, self.exp.cnp_pcp, None, None)
        } else {
            (self.exp.dscp, self.exp.pcp, self.exp.vlan, self.exp.ecn)
        };
        if dscp.is_none() && pcp.is_none() && vlan.is_none() && ecn.is_none() {
            return;
        }
        check.checked += 1;
        let mut bad = false;
        let mut violate = |field: Field| {
            let v = check.violations.entry(field).or_default();
            v.0 += 1;
            if v.1.len() < EVIDENCE_FRAMES {
                v.1.push(p.frame_no);
            }
            bad = true;
        };
        if dscp.is_some_and(|d| d != tc >> 2) {
            violate(Field::Dscp);
        }
        if ecn.is_some_and(|e| !e.matches(tc & 3)) {
            violate(Field::Ecn);
        }
        if pcp.is_some_and(|want| p.vlan.is_none_or(|(_, pcp)| pcp != want)) {
            violate(Field::Pcp);
        }
        if vlan.is_some_and(|want| p.vlan.is_none_or(|(vid, _)| vid != want)) {
            violate(Field::Vlan);
        }
        if bad {
            check.violating += 1;
            if check.first_violating.len() < EVIDENCE_FRAMES {
                check.first_violating.push(p.frame_no);
            }
        }
    }

    /// Why a PCP/VLAN check cannot be made from this capture, if it cannot.
    fn vlan_visibility(&self, ctx: &CaptureContext) -> Option<String> {
        if let Some(iface) = &ctx.vlan_subinterface {
            return Some(format!(
                "the capture runs on the VLAN sub-interface {iface}, whose tags the kernel strips; capture on the parent interface (or a mirror port) to see PCP and VLAN"
            ));
        }
        if self.tagged > 0 {
            return None;
        }
        let cooked = self
            .linktypes
            .keys()
            .any(|lt| matches!(*lt, LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2));
        if cooked {
            return Some("this is a Linux cooked capture (tcpdump -i any) without VLAN tags; capture on the interface itself (the parent of any VLAN sub-interface) to see PCP and VLAN".into());
        }
        if !self.linktypes.contains_key(&LINKTYPE_ETHERNET) {
            return Some(
                "frames of this link type carry no Ethernet header, so no VLAN tag".into(),
            );
        }
        Some("no RoCE frame in this capture carries a VLAN tag: either the traffic is untagged or the capture point stripped the tags (a VLAN sub-interface); capture on the parent interface or a mirror port to tell".into())
    }

    pub fn finish(self, ctx: &CaptureContext) -> VerifyReport {
        let exp = self.exp;
        let mut unverifiable = Vec::new();
        if let Some(reason) = self.vlan_visibility(ctx).filter(|_| self.roce > 0) {
            for (field, asked) in [
                (Field::Pcp, exp.pcp.is_some() || exp.cnp_pcp.is_some()),
                (Field::Vlan, exp.vlan.is_some()),
            ] {
                if asked {
                    unverifiable.push(Unverifiable {
                        field,
                        reason: reason.clone(),
                    });
                }
            }
        }
        let cannot: Vec<Field> = unverifiable.iter().map(|u| u.field).collect();
        let expected = |field: Field, cnp: bool| -> Option<String> {
            match (field, cnp) {
                (Field::Dscp, false) => exp.dscp.map(|d| d.to_string()),
                (Field::Dscp, true) => exp.cnp_dscp.map(|d| d.to_string()),
                (Field::Pcp, false) => exp.pcp.map(|d| d.to_string()),
                (Field::Pcp, true) => exp.cnp_pcp.map(|d| d.to_string()),
                (Field::Vlan, false) => exp.vlan.map(|d| d.to_string()),
                (Field::Ecn, false) => exp.ecn.map(|e| match e {
                    EcnExpect::Ect => "ect".into(),
                    EcnExpect::NotEct => "not-ect".into(),
                }),
                _ => None,
            }
        };
        let mut flows: Vec<FlowVerify> = self
            .flows
            .into_iter()
            .map(|((key, cnp), c)| {
                // Violations of a field the capture cannot show are not counted as violations.
                let violations: Vec<FieldViolation> = c
                    .violations
                    .iter()
                    .filter(|(f, _)| !cannot.contains(f))
                    .map(|(&field, (count, frames))| FieldViolation {
                        field,
                        expected: expected(field, cnp).unwrap_or_default(),
                        count: *count,
                        first_frames: frames.clone(),
                    })
                    .collect();
                let violating = if violations.is_empty() {
                    0
                } else {
                    c.violating
                };
                let mut seen = BTreeMap::new();
                seen.insert(Field::Dscp.name(), c.seen_dscp);
                seen.insert(Field::Ecn.name(), c.seen_ecn);
                seen.insert(Field::Pcp.name(), c.seen_pcp);
                seen.insert(Field::Vlan.name(), c.seen_vlan);
                FlowVerify {
                    flow: key.to_string(),
                    src: key.src.to_string(),
                    dst: key.dst.to_string(),
                    dqpn: key.dqpn,
                    vlan: key.vlan,
                    kind: if cnp { "cnp" } else { "data" },
                    checked_against: c.checked > 0,
                    checked: c.checked,
                    violating,
                    seen,
                    first_violating_frames: if violations.is_empty() {
                        vec![]
                    } else {
                        c.first_violating
                    },
                    violations,
                }
            })
            .collect();
        flows.sort_by(|a, b| {
            b.violating
                .cmp(&a.violating)
                .then((a.kind == "cnp").cmp(&(b.kind == "cnp")))
                .then(a.flow.cmp(&b.flow))
        });
        let checked: u64 = flows.iter().map(|f| f.checked).sum();
        let violating: u64 = flows.iter().map(|f| f.violating).sum();
        let verdict = if self.roce == 0 {
            "NO_ROCE"
        } else if violating > 0 {
            "FAIL"
        } else if !unverifiable.is_empty() || checked == 0 {
            "UNVERIFIABLE"
        } else {
            "PASS"
        };
        VerifyReport {
            passed: verdict == "PASS",
            verdict,
            expectations: exp,
            checked,
            violating,
            unverifiable,
            flows,
        }
    }
}

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
    let _ = writeln!(o, "roce-sniff verify: {file}");
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
        "  {:<width$} {:<4} {:>8} {:>9} {:<12} {:<9} {:<12} {:<14} first violating frames",
        "flow", "kind", "checked", "violating", "DSCP seen", "PCP seen", "VLAN seen", "ECN seen"
    );
    for f in &v.flows {
        let frames: Vec<String> = f
            .first_violating_frames
            .iter()
            .map(u64::to_string)
            .collect();
        let row = format!(
            "  {:<width$} {:<4} {:>8} {:>9} {:<12} {:<9} {:<12} {:<14} {}",
            f.flow,
            f.kind,
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
            frames.join(", ")
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
        .any(|f| f.kind == "cnp" && !f.checked_against)
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
    let line = match v.verdict {
        "PASS" => format!("PASS: {} RoCE frames checked, all match", v.checked),
        "FAIL" => format!(
            "FAIL: {} of {} RoCE frames do not match",
            v.violating, v.checked
        ),
        "NO_ROCE" => "FAIL: no RoCE frames in this capture, nothing was verified (RDMA NICs bypass the kernel: capture on a mirror port, with ibdump, or with a libpcap that can open the RDMA device)".into(),
        _ => format!(
            "UNVERIFIABLE: {} RoCE frames checked, no mismatch, but not every expectation can be checked from this capture",
            v.checked
        ),
    };
    let _ = writeln!(o, "{line}");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::RoceSummary;
    use roce_parsers::IcrcStatus;

    fn frame(n: u64, vlan: Option<(u16, u8)>, tclass: u8) -> PacketSummary {
        PacketSummary {
            frame_no: n,
            ts_ns: n,
            len: 100,
            caplen: 100,
            linktype: LINKTYPE_ETHERNET,
            src_mac: None,
            addrs: Some(([10, 0, 0, 1].into(), [10, 0, 0, 2].into())),
            vlan,
            tclass: Some(tclass),
            malformed: false,
            error: None,
            payload: Payload::Roce(RoceSummary {
                opcode: Opcode(0x04),
                dqpn: 0x11,
                psn: n as u32,
                ackreq: false,
                fecn: false,
                becn: false,
                aeth: None,
                dma_len: None,
                sqpn: None,
                payload_len: 10,
                icrc: IcrcStatus::Ok,
                v1: false,
                ib: false,
                cm: None,
            }),
        }
    }

    #[test]
    fn a_vlan_subinterface_makes_pcp_unverifiable() {
        let exp = Expectations {
            dscp: Some(26),
            pcp: Some(3),
            ..Expectations::default()
        };
        let mut v = Verifier::new(exp);
        v.feed(&frame(1, None, 0x68));
        let ctx = CaptureContext {
            vlan_subinterface: Some("eth0.100".into()),
        };
        let r = v.finish(&ctx);
        assert_eq!(r.verdict, "UNVERIFIABLE");
        assert!(!r.passed);
        assert_eq!(
            r.violating, 0,
            "an untagged frame on a sub-interface is not a PCP violation"
        );
        assert!(r.unverifiable[0].reason.contains("eth0.100"));
    }

    #[test]
    fn tags_seen_elsewhere_make_untagged_frames_violations() {
        let mut v = Verifier::new(Expectations {
            pcp: Some(3),
            ..Expectations::default()
        });
        v.feed(&frame(1, Some((100, 3)), 0x68));
        v.feed(&frame(2, None, 0x68));
        let r = v.finish(&CaptureContext::default());
        assert_eq!((r.verdict, r.checked, r.violating), ("FAIL", 2, 1));
    }
}
