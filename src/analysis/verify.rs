//! `--expect-*`: proof that the configured QoS reaches the wire. Every RoCE frame (data and
//! ACKs) is checked against the data expectations, every CNP against the CNP expectations; the
//! result is a per-flow table, a verdict and an exit code. A check the capture cannot support
//! (PCP on a capture without any VLAN tag, a Linux cooked capture, a VLAN sub-interface) makes
//! the verdict UNVERIFIABLE, never PASS; so does a capture without RoCE.

use std::collections::{BTreeMap, HashMap};

use roce_parsers::link::{is_cooked, LINKTYPE_ETHERNET};
use roce_parsers::{Opcode, TrafficClass};

use crate::analysis::flow::{FlowKey, EVIDENCE_FRAMES};
use crate::decode::summary::{PacketSummary, Payload};
use crate::model::{
    EcnExpect, Expectations, Field, FieldViolation, FlowVerify, Seen, Unverifiable, Verdict,
    VerifyKind, VerifyReport,
};

#[derive(Debug, Clone, Default)]
struct FlowCheck {
    checked: u64,
    violating: u64,
    seen_dscp: BTreeMap<Seen, u64>,
    seen_pcp: BTreeMap<Seen, u64>,
    seen_vlan: BTreeMap<Seen, u64>,
    seen_ecn: BTreeMap<Seen, u64>,
    /// Per field: count and first frames.
    violations: BTreeMap<Field, (u64, Vec<u64>)>,
    first_violating: Vec<u64>,
}

/// Where the frames came from, for what it implies about VLAN tags.
#[derive(Debug, Clone, Default)]
pub struct CaptureContext {
    /// A live capture on a VLAN sub-interface: the kernel strips the tag.
    pub vlan_subinterface: Option<String>,
}

pub struct Verifier {
    exp: Expectations,
    flows: HashMap<(FlowKey, VerifyKind), FlowCheck>,
    roce: u64,
    tagged: u64,
    linktypes: BTreeMap<u32, u64>,
}

fn bump(map: &mut BTreeMap<Seen, u64>, key: Seen) {
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
        let kind = if r.opcode == Opcode::CNP {
            VerifyKind::Cnp
        } else if r.opcode.is_request() {
            VerifyKind::Data
        } else {
            VerifyKind::Responses
        };
        let key = FlowKey {
            src,
            dst,
            dqpn: r.dqpn,
            vlan: p.vlan.map(|v| v.0),
        };
        let check = self.flows.entry((key, kind)).or_default();
        let tc = p.tclass.unwrap_or(TrafficClass(0));
        bump(&mut check.seen_dscp, Seen::Value(tc.dscp().into()));
        bump(&mut check.seen_ecn, Seen::Name(tc.ecn().name()));
        let untagged = Seen::Name("untagged");
        bump(
            &mut check.seen_pcp,
            p.vlan.map_or(untagged, |(_, pcp)| Seen::Value(pcp.into())),
        );
        bump(
            &mut check.seen_vlan,
            p.vlan.map_or(untagged, |(vid, _)| Seen::Value(vid)),
        );
        let (dscp, pcp, vlan, ecn) = if kind == VerifyKind::Cnp {
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
        if dscp.is_some_and(|d| d != tc.dscp()) {
            violate(Field::Dscp);
        }
        if ecn.is_some_and(|e| !e.matches(tc.ecn().bits())) {
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
        let cooked = self.linktypes.keys().any(|&lt| is_cooked(lt));
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

    /// The checks this capture cannot support (PCP and VLAN without visible tags).
    fn unverifiable(&self, ctx: &CaptureContext) -> Vec<Unverifiable> {
        let exp = &self.exp;
        let Some(reason) = self.vlan_visibility(ctx).filter(|_| self.roce > 0) else {
            return Vec::new();
        };
        [
            (Field::Pcp, exp.pcp.is_some() || exp.cnp_pcp.is_some()),
            (Field::Vlan, exp.vlan.is_some()),
        ]
        .into_iter()
        .filter(|&(_, asked)| asked)
        .map(|(field, _)| Unverifiable {
            field,
            reason: reason.clone(),
        })
        .collect()
    }

    pub fn finish(self, ctx: &CaptureContext) -> VerifyReport {
        let exp = self.exp;
        let unverifiable = self.unverifiable(ctx);
        let cannot: Vec<Field> = unverifiable.iter().map(|u| u.field).collect();
        let mut flows: Vec<FlowVerify> = self
            .flows
            .into_iter()
            .map(|((key, kind), c)| flow_verify(&exp, &cannot, key, kind, c))
            .collect();
        flows.sort_by(|a, b| {
            b.violating
                .cmp(&a.violating)
                .then(a.kind.cmp(&b.kind))
                .then(a.flow.cmp(&b.flow))
        });
        let checked: u64 = flows.iter().map(|f| f.checked).sum();
        let violating: u64 = flows.iter().map(|f| f.violating).sum();
        let verdict = if self.roce == 0 {
            Verdict::NoRoce
        } else if violating > 0 {
            Verdict::Fail
        } else if !unverifiable.is_empty() || checked == 0 {
            Verdict::Unverifiable
        } else {
            Verdict::Pass
        };
        VerifyReport {
            passed: verdict == Verdict::Pass,
            verdict,
            expectations: exp,
            checked,
            violating,
            unverifiable,
            flows,
            damaged: None,
        }
    }
}

/// What `field` was expected to be on frames of `kind`, as shown in the report.
fn expected(exp: &Expectations, field: Field, kind: VerifyKind) -> Option<String> {
    let cnp = kind == VerifyKind::Cnp;
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
}

/// One flow's row; violations of a field the capture cannot show (`cannot`) do not count.
fn flow_verify(
    exp: &Expectations,
    cannot: &[Field],
    key: FlowKey,
    kind: VerifyKind,
    c: FlowCheck,
) -> FlowVerify {
    let violations: Vec<FieldViolation> = c
        .violations
        .iter()
        .filter(|(f, _)| !cannot.contains(f))
        .map(|(&field, (count, frames))| FieldViolation {
            field,
            expected: expected(exp, field, kind).unwrap_or_default(),
            count: *count,
            first_frames: frames.clone(),
        })
        .collect();
    let any = !violations.is_empty();
    let seen = BTreeMap::from([
        (Field::Dscp.name(), c.seen_dscp),
        (Field::Ecn.name(), c.seen_ecn),
        (Field::Pcp.name(), c.seen_pcp),
        (Field::Vlan.name(), c.seen_vlan),
    ]);
    FlowVerify {
        flow: key.to_string(),
        src: key.src.to_string(),
        dst: key.dst.to_string(),
        dqpn: key.dqpn.0,
        vlan: key.vlan,
        kind,
        checked_against: c.checked > 0,
        checked: c.checked,
        violating: if any { c.violating } else { 0 },
        seen,
        first_violating_frames: if any { c.first_violating } else { vec![] },
        violations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::summary::RoceSummary;
    use roce_parsers::IcrcStatus;

    fn frame(n: u64, vlan: Option<(u16, u8)>, tclass: u8) -> PacketSummary {
        PacketSummary {
            frame_no: n,
            ts_ns: n,
            point: 0,
            file: 0,
            len: 100,
            caplen: 100,
            linktype: LINKTYPE_ETHERNET,
            src_mac: None,
            dst_mac: None,
            addrs: Some(([10, 0, 0, 1].into(), [10, 0, 0, 2].into())),
            vlan,
            tclass: Some(TrafficClass(tclass)),
            malformed: false,
            truncation: None,
            mirror: None,
            mirror_clock_off_epoch: false,
            link: 0,
            error: None,
            payload: Payload::Roce(RoceSummary {
                opcode: Opcode(0x04),
                dqpn: roce_parsers::Qpn(0x11),
                psn: roce_parsers::Psn::new(n as u32),
                ackreq: false,
                fecn: false,
                becn: false,
                aeth: None,
                reth_target: None,
                sport: 0,
                flow_label: 0,
                dma_len: None,
                sqpn: None,
                payload_len: 10,
                icrc: IcrcStatus::Ok,
                v1: false,
                ib: false,
                cm: None,
                identity: n,
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
        assert_eq!(r.verdict, Verdict::Unverifiable);
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
        assert_eq!((r.verdict, r.checked, r.violating), (Verdict::Fail, 2, 1));
    }
}
